/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube_client.c - the connection to the API server: where it is (the
 * configured URL, or in-cluster from KUBERNETES_SERVICE_HOST/PORT), the
 * bearer token (re-read when its file changes, as kubelet rotates projected
 * tokens; never logged), the CA bundle, the upstream error and success
 * accounting every request shares, and the authenticated one-shot requests
 * of gx_kube_request (Lease CAS, pod PATCH, Binding POST). Knows nothing of
 * lists, watches or nodes: kube_reflector.c builds those on top of this.
 */
#include "kube_int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_TOKEN_MAX 7936 /* fits the client's 8 KiB header buffer */

/* A one-shot request started by gx_kube_request. */
struct gx_kube_req {
    struct gx_kube *k;
    LIST_ENTRY(gx_kube_req) link;
    struct gx_httpc_xfer *xfer;
    gx_kube_done_cb done;
    void *ctx;
};

/* ---- small helpers ---- */

const char *
gx_kube_base_url(const struct gx_kube *k)
{
    return k->base_url;
}

/* Wipe and free a secret string; NULL is a no-op. */
static void
free_secret(char *s)
{
    if (s == NULL) {
        return;
    }
    explicit_bzero(s, strlen(s));
    free(s);
}

void
gx_kube_count_error(struct gx_kube *k, enum gx_upkind kind)
{
    k->st->errors[kind]++;
}

void
gx_kube_mark_success(struct gx_kube *k)
{
    k->st->last_success_ms = gx_wall_ms();
}

bool
gx_kube_set_str(char **slot, const char *s)
{
    char *d = NULL;

    if (s != NULL && s[0] != '\0') {
        d = gx_strndup(s, strlen(s));
        if (d == NULL) {
            return false;
        }
    }
    free(*slot);
    *slot = d;
    return true;
}

/* ---- token and auth ---- */

static const char *
token_file(const struct gx_kube *k)
{
    if (k->cfg->kube_token_file != NULL) {
        return k->cfg->kube_token_file;
    }
    return k->in_cluster ? KUBE_SA_DIR "/token" : NULL;
}

static const char *
ca_file(const struct gx_kube *k)
{
    if (k->cfg->kube_ca_file != NULL) {
        return k->cfg->kube_ca_file;
    }
    return k->in_cluster ? KUBE_SA_DIR "/ca.crt" : NULL;
}

static bool
same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Re-read the token when its file changed (kubelet rotates projected
 * tokens by swapping a symlink, so stat follows it). A file that cannot be
 * read keeps the previous token and is reported once.
 */
static void
token_refresh(struct gx_kube *k)
{
    const char *path = token_file(k);
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    enum gx_err rc;

    if (path == NULL) {
        free_secret(k->token);
        k->token = NULL;
        free(k->token_path);
        k->token_path = NULL;
        return;
    }
    if (stat(path, &st) != 0) {
        if (!k->token_warned) {
            gx_warn("cannot stat the API server token file, keeping the previous token", "path=%s",
                    path);
        }
        k->token_warned = true;
        return;
    }
    if (k->token != NULL && k->token_path != NULL && strcmp(k->token_path, path) == 0 &&
        same_file(&st, &k->token_st)) {
        return;
    }
    rc = gx_read_file(path, KUBE_TOKEN_MAX, &text, &len);
    if (rc != GX_OK) {
        if (!k->token_warned) {
            gx_warn("cannot read the API server token file, keeping the previous token",
                    "path=%s error=\"%s\"", path, gx_strerror(rc));
        }
        k->token_warned = true;
        return;
    }
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ' ||
                       text[len - 1] == '\t')) {
        text[--len] = '\0';
    }
    if (!gx_kube_set_str(&k->token_path, path)) {
        free_secret(text);
        return;
    }
    free_secret(k->token);
    k->token = text;
    k->token_st = st;
    if (k->token_warned) {
        gx_info("API server token file readable again", "path=%s", path);
    }
    k->token_warned = false;
}

void
gx_kube_fill_auth(struct gx_kube *k, struct gx_httpc_auth *auth)
{
    token_refresh(k);
    memset(auth, 0, sizeof(*auth));
    auth->bearer_token = k->token != NULL && k->token[0] != '\0' ? k->token : NULL;
    auth->ca_file = ca_file(k);
    auth->insecure = k->cfg->kube_insecure;
}

/* ---- the connection ---- */

/* The base URL from the config or the in-cluster environment; NULL with @why. */
static char *
make_base_url(const struct gx_config *cfg, bool *in_cluster, struct gx_why *why)
{
    const char *host, *port;
    struct gx_buf b;
    size_t len;

    gx_buf_init(&b, 4096);
    if (cfg->kube_url != NULL && cfg->kube_url[0] != '\0') {
        len = strlen(cfg->kube_url);
        while (len > 0 && cfg->kube_url[len - 1] == '/') {
            len--;
        }
        *in_cluster = false;
        if (gx_buf_add(&b, cfg->kube_url, len) != GX_OK) {
            gx_why_set(why, "kubernetes.url: too long");
            gx_buf_release(&b);
            return NULL;
        }
        return gx_buf_take(&b, NULL);
    }
    host = getenv("KUBERNETES_SERVICE_HOST");
    port = getenv("KUBERNETES_SERVICE_PORT");
    if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0') {
        gx_why_set(why, "kubernetes.url is not set and KUBERNETES_SERVICE_HOST/"
                        "KUBERNETES_SERVICE_PORT are missing (not running in a cluster)");
        return NULL;
    }
    *in_cluster = true;
    if (gx_buf_addf(&b, strchr(host, ':') != NULL ? "https://[%s]:%s" : "https://%s:%s", host,
                    port) != GX_OK) {
        gx_why_set(why, "KUBERNETES_SERVICE_HOST/PORT: too long");
        gx_buf_release(&b);
        return NULL;
    }
    return gx_buf_take(&b, NULL);
}

enum gx_err
gx_kube_conn_init(struct gx_kube *k, struct gx_why *why)
{
    const char *ca;

    LIST_INIT(&k->reqs);
    k->base_url = make_base_url(k->cfg, &k->in_cluster, why);
    if (k->base_url == NULL) {
        return GX_EINVAL;
    }
    ca = ca_file(k);
    if (!k->cfg->kube_insecure &&
        gx_config_check_readable("kubernetes.ca_file", ca, why) != GX_OK) {
        return GX_EINVAL;
    }
    return GX_OK;
}

void
gx_kube_conn_start(struct gx_kube *k)
{
    if (k->cfg->kube_insecure) {
        gx_warn("TLS verification of the API server is OFF (kubernetes.insecure_skip_verify)",
                "url=%s", k->base_url);
    }
    token_refresh(k);
    gx_info("kubernetes source started", "url=%s in_cluster=%s", k->base_url,
            k->in_cluster ? "true" : "false");
}

void
gx_kube_conn_release(struct gx_kube *k)
{
    struct gx_kube_req *r;

    while ((r = LIST_FIRST(&k->reqs)) != NULL) {
        LIST_REMOVE(r, link);
        gx_httpc_cancel(r->xfer);
        free(r);
    }
    free_secret(k->token);
    free(k->token_path);
    free(k->base_url);
}

/* ---- one-shot requests ---- */

static void
request_done_cb(void *ctx, const struct gx_httpc_result *res)
{
    struct gx_kube_req *r = ctx;
    struct gx_kube *k = r->k;
    gx_kube_done_cb done = r->done;
    void *dctx = r->ctx;

    LIST_REMOVE(r, link);
    free(r);
    gx_histo_observe(&k->st->duration, res->seconds);
    if (res->rc != GX_OK) {
        gx_kube_count_error(k, res->kind);
    } else if (res->status == 409) {
        gx_kube_count_error(k, GX_UPERR_CONFLICT);
    } else if (res->status == 410) {
        gx_kube_count_error(k, GX_UPERR_GONE);
    } else if (res->status < 200 || res->status >= 300) {
        gx_kube_count_error(k, GX_UPERR_HTTP);
    } else {
        gx_kube_mark_success(k);
    }
    if (done != NULL && res->rc != GX_OK) {
        /* no answer: the transport's words stand in for the body (gx_kobj_failure_text) */
        const char *why = res->error != NULL ? res->error : "";
        done(dctx, res->rc, 0, why, strlen(why));
    } else if (done != NULL) {
        done(dctx, res->rc, res->status, res->body, res->body_len);
    }
}

struct gx_httpc_xfer *
gx_kube_request(struct gx_kube *k, const char *method, const char *path, const char *body,
                size_t len, const char *content_type, long timeout_ms, gx_kube_done_cb done,
                void *ctx)
{
    struct gx_httpc_auth auth;
    struct gx_httpc_req req = {
        .method = method,
        .auth = &auth,
        .body = body,
        .body_len = body != NULL ? len : 0,
        .content_type = content_type,
        .timeout_ms = timeout_ms > 0 ? timeout_ms : gx_kube_request_timeout_ms(k),
        .max_body = gx_kube_max_list_bytes(k),
    };
    struct gx_kube_req *r;
    struct gx_buf url;

    if (method == NULL || path == NULL || path[0] != '/') {
        return NULL;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return NULL;
    }
    gx_buf_init(&url, GX_KUBE_URL_MAX);
    if (gx_buf_addf(&url, "%s%s", k->base_url, path) != GX_OK) {
        gx_buf_release(&url);
        free(r);
        return NULL;
    }
    gx_kube_fill_auth(k, &auth);
    req.url = url.data;
    r->k = k;
    r->done = done;
    r->ctx = ctx;
    r->xfer = gx_httpc_start(k->http, &req, request_done_cb, NULL, r);
    gx_buf_release(&url);
    if (r->xfer == NULL) {
        free(r);
        return NULL;
    }
    k->st->requests++;
    LIST_INSERT_HEAD(&k->reqs, r, link);
    return r->xfer;
}

void
gx_kube_cancel(struct gx_kube *k, struct gx_httpc_xfer *x)
{
    struct gx_kube_req *r;

    if (k == NULL || x == NULL) {
        return;
    }
    for (r = LIST_FIRST(&k->reqs); r != NULL; r = LIST_NEXT(r, link)) {
        if (r->xfer == x) {
            LIST_REMOVE(r, link);
            gx_httpc_cancel(x);
            free(r);
            return;
        }
    }
}
