/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube.c - list+watch of nodes and managed pods against the API server, as
 * client-go's reflector does it: list, then watch from the list's
 * resourceVersion; every event advances it; a 410 Gone (as an HTTP status
 * or an ERROR event) or a line that does not decode means relist; a
 * dropped stream reconnects after an exponential backoff with jitter; a
 * watch the server ends normally is resumed at once.
 *
 * libcurl forbids adding or removing transfers from inside its callbacks,
 * and the owner's callbacks may start requests, so the stream data
 * callback only copies bytes into an inbox; the lines are decoded and
 * applied from a deferred libevent callback (or from the done callback,
 * which libcurl does not call from inside itself).
 *
 * Nodes live in a map of entries. Entries from a list share the list's
 * arena (reference counted); an entry from a watch event owns the event's
 * arena. A list is applied only after it decoded completely, so the node
 * set is never half a list. Pods are not stored; they go to the owner.
 *
 * Why one file: a single reflector state machine serves every watched
 * kind (nodes, managed pods, Leases, DRA objects) and shares its connection,
 * credentials and backoff with the one-shot requests; split, the stream
 * struct would be shared between files.
 */
#include "kube_int.h"

#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "buf.h"
#include "lines.h"
#include "log.h"
#include "strmap.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_TOKEN_MAX 7936         /* fits the client's 8 KiB header buffer */
#define KUBE_INBOX_SLACK (8u << 20) /* what one socket read burst may add */
#define KUBE_SHORT_WATCH_MS 1000    /* an empty watch shorter than this backs off */
#define KUBE_EVENT_CHUNK 8192       /* arena chunk of one watch event */
#define KUBE_URL_MAX (64u << 10)
#define KUBE_ABSENT_RETRY_MS 60000 /* a resource the server does not serve: look again */

/* Entries of one node list share its arena; it dies with the last of them. */
struct list_arena {
    struct gx_arena a;
    size_t refs;
};

struct node_entry {
    struct gx_node_info info;
    struct gx_arena *own;    /* the watch event's arena, or NULL */
    struct list_arena *list; /* the list arena the info lives in, or NULL */
};

enum stream_state { ST_IDLE, ST_WAIT, ST_LIST, ST_WATCH };

/* What a stream does after a list, a watch or an aborted watch. */
enum next_step { NEXT_WATCH_NOW, NEXT_WATCH_BACKOFF, NEXT_LIST_NOW, NEXT_LIST_BACKOFF };

/* Why processing the inbox stopped early. */
enum verdict { V_OK, V_GONE, V_PARSE, V_ERROR_EVENT, V_NOMEM };

struct stream {
    struct gx_kube *k;
    struct gx_kube_watch *w; /* the owner's watch, NULL for nodes and pods */
    enum gx_kind kind;
    const char *name; /* "nodes", "pods", ...: log text */
    char *path;       /* of the collection: "/api/v1/nodes" */
    enum stream_state state;
    bool relist;      /* the next start is a list (else a watch) */
    bool want_relist; /* relist once the current transfer is out of the way */
    struct gx_httpc_xfer *xfer;
    struct event *timer;
    struct event *defer;
    struct gx_buf inbox; /* received watch bytes not yet split */
    struct gx_lines lines;
    char *rv;            /* last resourceVersion seen, NULL before a list */
    char *selector;      /* label selector of the applied list, NULL: none */
    char *list_selector; /* selector of the list in flight */
    int64_t backoff_ms;
    int64_t watch_start_ms;
    uint64_t watch_events;
    bool changed; /* nodes changed while processing the inbox */
};

/* A watch of another kind for an owner (gx_kube_watch_new). */
struct gx_kube_watch {
    struct stream s;
    char *name;
    char *selector; /* fixed label selector, NULL: none */
    char *fields;   /* fixed field selector, NULL: none */
    struct gx_kube_watch_cbs cbs;
    void *ctx;
    bool absent; /* the last list answered 404 (logged once) */
    LIST_ENTRY(gx_kube_watch) link;
};

/* A one-shot request started by gx_kube_request. */
struct req_rec {
    struct gx_kube *k;
    LIST_ENTRY(req_rec) link;
    struct gx_httpc_xfer *xfer;
    gx_kube_done_cb done;
    void *ctx;
};

struct gx_kube {
    struct event_base *base;
    struct gx_httpc *http;
    const struct gx_config *cfg;
    struct gx_upstats *st;
    struct gx_kube_cbs cbs;
    void *ctx;
    LIST_HEAD(watch_list, gx_kube_watch) watches;
    char *base_url;
    bool in_cluster;

    /* bearer token cache, re-read when the file's identity changes */
    char *token;
    char *token_path;
    struct stat token_st;
    bool token_warned;

    struct stream nodes, pods;
    struct gx_strmap store; /* node name -> struct node_entry */
    struct gx_node_info *arr;
    size_t n_arr;
    bool arr_dirty;
    bool synced;
    uint64_t lists;
    uint64_t rng;
    LIST_HEAD(req_list, req_rec) reqs;
};

static void stream_next(struct stream *s, enum next_step step);
static void start_list(struct stream *s);
static void start_watch(struct stream *s);

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

static int
max_depth(const struct gx_kube *k)
{
    return k->cfg->max_json_depth > 0 ? k->cfg->max_json_depth : 64;
}

static long
request_timeout_ms(const struct gx_kube *k)
{
    return (long)(k->cfg->kube_timeout_s > 0 ? k->cfg->kube_timeout_s : 10) * 1000;
}

static size_t
max_list_bytes(const struct gx_kube *k)
{
    return k->cfg->kube_max_list_bytes > 0 ? k->cfg->kube_max_list_bytes : (size_t)1 << 30;
}

static size_t
max_event_bytes(const struct gx_kube *k)
{
    return k->cfg->kube_max_event_bytes > 0 ? k->cfg->kube_max_event_bytes : (size_t)16 << 20;
}

static int
watch_timeout_s(const struct gx_kube *k)
{
    return k->cfg->kube_watch_timeout_s > 0 ? k->cfg->kube_watch_timeout_s : 300;
}

/* Count one failure of @kind against the API server. */
static void
count_error(struct gx_kube *k, enum gx_upkind kind)
{
    k->st->errors[kind]++;
}

static void
mark_success(struct gx_kube *k)
{
    k->st->last_success_ms = gx_wall_ms();
}

/* Replace *@slot with a copy of @s (NULL or "" clear it). False on ENOMEM (unchanged). */
static bool
set_str(char **slot, const char *s)
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

static bool
str_eq(const char *a, const char *b)
{
    if (a == NULL || a[0] == '\0') {
        return b == NULL || b[0] == '\0';
    }
    return b != NULL && strcmp(a, b) == 0;
}

/* ---- connection: token and auth ---- */

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
    if (!set_str(&k->token_path, path)) {
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

/* Fill @auth for one request (the token is borrowed from @k until the next refresh). */
static void
fill_auth(struct gx_kube *k, struct gx_httpc_auth *auth)
{
    token_refresh(k);
    memset(auth, 0, sizeof(*auth));
    auth->bearer_token = k->token != NULL && k->token[0] != '\0' ? k->token : NULL;
    auth->ca_file = ca_file(k);
    auth->insecure = k->cfg->kube_insecure;
}

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

/* ---- node store ---- */

static void
list_arena_unref(struct list_arena *la)
{
    if (la == NULL || --la->refs > 0) {
        return;
    }
    gx_arena_release(&la->a);
    free(la);
}

static void
entry_free(struct node_entry *e)
{
    if (e == NULL) {
        return;
    }
    if (e->own != NULL) {
        gx_arena_release(e->own);
        free(e->own);
    }
    list_arena_unref(e->list);
    free(e);
}

/* Free every entry of @map and its table. */
static void
store_clear(struct gx_strmap *map)
{
    size_t pos = 0;
    const char *key;
    size_t klen;
    struct node_entry *e;

    while ((e = gx_strmap_next(map, &pos, &key, &klen)) != NULL) {
        entry_free(e);
    }
    gx_strmap_release(map);
}

/* Insert @e into @map, freeing the entry it replaces. GX_ENOMEM leaves @e to the caller. */
static enum gx_err
store_put(struct gx_strmap *map, struct node_entry *e)
{
    size_t len = strlen(e->info.name);
    struct node_entry *old = gx_strmap_del(map, e->info.name, len);
    enum gx_err rc = gx_strmap_put(map, e->info.name, len, e);

    entry_free(old);
    return rc;
}

/*
 * Decode a NodeList and, only when all of it decoded and fit, make it the
 * whole node set. *@rv receives a heap copy of the list's resourceVersion.
 */
static enum gx_err
apply_node_list(struct gx_kube *k, const char *body, size_t len, char **rv, struct gx_why *why)
{
    struct list_arena *la = calloc(1, sizeof(*la));
    struct gx_strmap map;
    struct gx_node_info *nodes = NULL;
    const char *list_rv = NULL;
    size_t n = 0;
    char *rv_copy = NULL;
    enum gx_err rc;

    gx_strmap_init(&map);
    if (la == NULL) {
        return GX_ENOMEM;
    }
    gx_arena_init(&la->a, 0);
    la->refs = 1; /* held by this function until the end */
    rc = gx_kobj_decode_node_list(body, len, max_depth(k), &la->a, &nodes, &n, &list_rv, why);
    if (rc != GX_OK) {
        goto out;
    }
    rv_copy = gx_strndup(list_rv != NULL ? list_rv : "", list_rv != NULL ? strlen(list_rv) : 0);
    if (rv_copy == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct node_entry *e;

        if (nodes[i].name == NULL || nodes[i].name[0] == '\0') {
            continue;
        }
        e = calloc(1, sizeof(*e));
        if (e == NULL) {
            rc = GX_ENOMEM;
            goto out;
        }
        e->info = nodes[i];
        e->list = la;
        la->refs++;
        if ((rc = store_put(&map, e)) != GX_OK) {
            entry_free(e);
            goto out;
        }
    }
    store_clear(&k->store);
    k->store = map;
    gx_strmap_init(&map);
    k->arr_dirty = true;
    *rv = rv_copy;
    rv_copy = NULL;
out:
    store_clear(&map);
    free(rv_copy);
    list_arena_unref(la);
    return rc;
}

/* Apply one node watch event; takes @a (the event's arena) in every case. */
static enum gx_err
apply_node_event(struct gx_kube *k, const struct gx_watch_event *ev, struct gx_arena *a)
{
    const char *name = ev->obj.node.name;
    struct node_entry *e;
    enum gx_err rc;

    if (name == NULL || name[0] == '\0') {
        gx_arena_release(a);
        free(a);
        return GX_OK;
    }
    if (ev->type == GX_WATCH_DELETED) {
        e = gx_strmap_del(&k->store, name, strlen(name));
        if (e != NULL) {
            entry_free(e);
            k->arr_dirty = true;
        }
        gx_arena_release(a);
        free(a);
        return e != NULL ? GX_OK : GX_ENOTFOUND;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        gx_arena_release(a);
        free(a);
        return GX_ENOMEM;
    }
    e->info = ev->obj.node;
    e->own = a;
    rc = store_put(&k->store, e);
    if (rc != GX_OK) {
        entry_free(e);
    }
    k->arr_dirty = true;
    return rc;
}

static int
node_cmp(const void *a, const void *b)
{
    const struct gx_node_info *x = a, *y = b;

    return strcmp(x->name, y->name);
}

/* ---- URLs ---- */

static enum gx_err
add_escaped(struct gx_buf *b, const char *s)
{
    size_t n = strlen(s) * 3 + 1;
    char *esc = malloc(n);
    enum gx_err rc;

    if (esc == NULL) {
        return GX_ENOMEM;
    }
    rc = gx_httpc_escape(s, esc, n) ? gx_buf_adds(b, esc) : GX_ETOOBIG;
    free(esc);
    return rc;
}

/* The label selector the next list of @s uses (heap copy in *out, NULL: none). */
static enum gx_err
current_selector(const struct stream *s, char **out)
{
    const struct gx_config *cfg = s->k->cfg;
    struct gx_buf b;

    *out = NULL;
    if (s->w != NULL) {
        if (s->w->selector != NULL) {
            *out = gx_strndup(s->w->selector, strlen(s->w->selector));
            return *out != NULL ? GX_OK : GX_ENOMEM;
        }
        return GX_OK;
    }
    if (s->kind == GX_KIND_NODE) {
        if (cfg->kube_node_selector == NULL || cfg->kube_node_selector[0] == '\0') {
            return GX_OK;
        }
        *out = gx_strndup(cfg->kube_node_selector, strlen(cfg->kube_node_selector));
        return *out != NULL ? GX_OK : GX_ENOMEM;
    }
    gx_buf_init(&b, KUBE_URL_MAX);
    if (gx_buf_addf(&b, "%s=true",
                    cfg->managed_label != NULL ? cfg->managed_label : "gpu-extender.io/managed") !=
        GX_OK) {
        gx_buf_release(&b);
        return GX_ENOMEM;
    }
    *out = gx_buf_take(&b, NULL);
    return GX_OK;
}

/* Build the list (@watch false) or watch URL of @s into @b. */
static enum gx_err
stream_url(const struct stream *s, bool watch, struct gx_buf *b)
{
    const struct gx_kube *k = s->k;
    const char *sel = watch ? s->selector : s->list_selector;
    enum gx_err rc;
    char sep = '?';

    rc = gx_buf_addf(b, "%s%s", k->base_url, s->path);
    if (rc == GX_OK && watch) {
        rc = gx_buf_addf(b, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d",
                         watch_timeout_s(k));
        sep = '&';
        if (rc == GX_OK && s->rv != NULL && s->rv[0] != '\0') {
            rc = gx_buf_adds(b, "&resourceVersion=");
            if (rc == GX_OK) {
                rc = add_escaped(b, s->rv);
            }
        }
    }
    if (rc == GX_OK && sel != NULL && sel[0] != '\0') {
        rc = gx_buf_addf(b, "%clabelSelector=", sep);
        sep = '&';
        if (rc == GX_OK) {
            rc = add_escaped(b, sel);
        }
    }
    if (rc == GX_OK && s->w != NULL && s->w->fields != NULL) {
        rc = gx_buf_addf(b, "%cfieldSelector=", sep);
        if (rc == GX_OK) {
            rc = add_escaped(b, s->w->fields);
        }
    }
    return rc;
}

/* ---- streams: scheduling ---- */

static void
stream_schedule(struct stream *s, int64_t delay_ms)
{
    struct timeval tv;

    if (delay_ms < 0) {
        delay_ms = 0;
    }
    tv.tv_sec = (time_t)(delay_ms / 1000);
    tv.tv_usec = (suseconds_t)((delay_ms % 1000) * 1000);
    s->state = ST_WAIT;
    (void)evtimer_add(s->timer, &tv);
}

static int64_t
stream_backoff(struct stream *s)
{
    int64_t d = s->backoff_ms;

    s->backoff_ms = gx_backoff_next(d, GX_KUBE_BACKOFF_START_MS, GX_KUBE_BACKOFF_MAX_MS);
    return gx_jitter(d, GX_KUBE_JITTER_PCT, &s->k->rng);
}

/* Decide and arm what @s does next. */
static void
stream_next(struct stream *s, enum next_step step)
{
    bool list = step == NEXT_LIST_NOW || step == NEXT_LIST_BACKOFF || s->want_relist;
    bool now = step == NEXT_WATCH_NOW || step == NEXT_LIST_NOW;

    /* Relisting at once after a watch that died young would spin against a sick server. */
    if (step == NEXT_LIST_NOW && s->watch_events == 0 &&
        gx_mono_ms() - s->watch_start_ms < KUBE_SHORT_WATCH_MS) {
        now = false;
    }
    s->relist = list;
    s->want_relist = false;
    stream_schedule(s, now ? 0 : stream_backoff(s));
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct stream *s = arg;

    (void)fd;
    (void)what;
    if (s->relist || s->rv == NULL) {
        start_list(s);
    } else {
        start_watch(s);
    }
}

/* Stop the transfer of @s (never called from inside a libcurl callback). */
static void
stream_stop(struct stream *s)
{
    if (s->xfer != NULL) {
        gx_httpc_cancel(s->xfer);
        s->xfer = NULL;
    }
    (void)event_del(s->defer);
    (void)evtimer_del(s->timer);
    gx_buf_reset(&s->inbox);
    gx_lines_reset(&s->lines);
    s->state = ST_IDLE;
}

static void
log_failure(const struct stream *s, const char *what, enum gx_upkind kind, const char *detail)
{
    char q[300];

    gx_warn("kubernetes request failed, retrying", "resource=%s op=%s kind=%s error=%s", s->name,
            what, gx_upkind_name(kind), gx_log_quote(q, sizeof(q), detail ? detail : ""));
}

/* ---- lists ---- */

/* Decode a PodList into @a; *@rv receives a heap copy of its resourceVersion. */
static enum gx_err
decode_pod_list(struct gx_kube *k, const char *body, size_t len, struct gx_arena *a,
                struct gx_pod **pods, size_t *n, char **rv, struct gx_why *why)
{
    const char *list_rv = NULL;
    char *copy;
    enum gx_err rc;

    rc = gx_kobj_decode_pod_list(body, len, max_depth(k), a, pods, n, &list_rv, why);
    if (rc != GX_OK) {
        return rc;
    }
    copy = gx_strndup(list_rv != NULL ? list_rv : "", list_rv != NULL ? strlen(list_rv) : 0);
    if (copy == NULL) {
        return GX_ENOMEM;
    }
    *rv = copy;
    return GX_OK;
}

/* A list ended: apply it and watch from its resourceVersion, or back off and relist. */
static void
list_done_cb(void *ctx, const struct gx_httpc_result *res)
{
    struct stream *s = ctx;
    struct gx_kube *k = s->k;
    struct gx_why why = {{0}};
    struct gx_arena pod_arena;
    struct gx_pod *pods = NULL;
    void *items = NULL;
    size_t n_pods = 0;
    enum gx_upkind kind = GX_UPERR_OTHER;
    char *rv = NULL;
    char detail[320];
    enum gx_err rc = GX_EUPSTREAM;

    s->xfer = NULL;
    gx_arena_init(&pod_arena, 0);
    gx_histo_observe(&k->st->duration, res->seconds);
    if (res->rc != GX_OK) {
        kind = res->kind;
        (void)snprintf(detail, sizeof(detail), "%s", res->error ? res->error : "");
        goto out;
    }
    if (s->w != NULL && (res->status == 404 || (res->status == 403 && s->w->cbs.absent != NULL))) {
        /* Not served (no DRA API on this server), or not ours to read: not an error. */
        if (!s->w->absent && s->w->cbs.absent != NULL) {
            s->w->cbs.absent(s->w->ctx, res->status); /* the owner says what it means, once */
        } else if (!s->w->absent) {
            gx_info("kubernetes resource not served, looking again later", "resource=%s retry_s=%d",
                    s->name, KUBE_ABSENT_RETRY_MS / 1000);
        }
        s->w->absent = true;
        gx_arena_release(&pod_arena);
        s->relist = true;
        stream_schedule(s, KUBE_ABSENT_RETRY_MS);
        return;
    }
    if (res->status < 200 || res->status >= 300) {
        kind = res->status == 410 ? GX_UPERR_GONE : GX_UPERR_HTTP;
        (void)snprintf(detail, sizeof(detail), "HTTP %ld: %.200s", res->status, res->body);
        goto out;
    }
    if (s->w != NULL) {
        const char *list_rv = NULL;
        rc = gx_kobj_decode_list(res->body, res->body_len, s->kind, max_depth(k), &pod_arena,
                                 &items, &n_pods, &list_rv, &why);
        if (rc == GX_OK && (rv = gx_strndup(list_rv != NULL ? list_rv : "",
                                            list_rv != NULL ? strlen(list_rv) : 0)) == NULL) {
            rc = GX_ENOMEM;
        }
    } else if (s->kind == GX_KIND_NODE) {
        rc = apply_node_list(k, res->body, res->body_len, &rv, &why);
    } else {
        rc = decode_pod_list(k, res->body, res->body_len, &pod_arena, &pods, &n_pods, &rv, &why);
    }
    if (rc != GX_OK) {
        kind = rc == GX_ENOMEM ? GX_UPERR_OTHER : GX_UPERR_PARSE;
        (void)snprintf(detail, sizeof(detail), "%s: %s", gx_strerror(rc), why.text);
        goto out;
    }
    free(s->rv);
    s->rv = rv;
    free(s->selector);
    s->selector = s->list_selector;
    s->list_selector = NULL;
    s->backoff_ms = GX_KUBE_BACKOFF_START_MS;
    k->lists++;
    k->st->syncs++;
    mark_success(k);
    if (s->w != NULL) {
        if (s->w->absent) {
            gx_info("kubernetes resource served again", "resource=%s", s->name);
        }
        s->w->absent = false;
        gx_debug("kubernetes objects listed", "resource=%s items=%zu resource_version=%s", s->name,
                 n_pods, s->rv);
        s->w->cbs.listed(s->w->ctx, items, n_pods);
    } else if (s->kind == GX_KIND_NODE) {
        k->synced = true;
        gx_info("kubernetes nodes listed", "nodes=%zu resource_version=%s", k->store.count, s->rv);
        if (k->cbs.nodes_changed != NULL) {
            k->cbs.nodes_changed(k->ctx);
        }
    } else {
        gx_info("kubernetes managed pods listed", "pods=%zu resource_version=%s", n_pods, s->rv);
        if (k->cbs.pods_listed != NULL) {
            k->cbs.pods_listed(k->ctx, pods, n_pods);
        }
    }
out:
    gx_arena_release(&pod_arena);
    if (rc != GX_OK) {
        count_error(k, kind);
        log_failure(s, "list", kind, detail);
        stream_next(s, NEXT_LIST_BACKOFF);
    } else if (s->want_relist) {
        start_list(s);
    } else {
        start_watch(s);
    }
}

/* Start a list of @s; failing to start counts as an error and backs off. */
static void
start_list(struct stream *s)
{
    struct gx_kube *k = s->k;
    struct gx_httpc_auth auth;
    struct gx_httpc_req req = {
        .method = "GET",
        .auth = &auth,
        .timeout_ms = request_timeout_ms(k),
        .max_body = max_list_bytes(k),
    };
    struct gx_buf url;

    s->state = ST_LIST;
    s->want_relist = false;
    free(s->list_selector);
    gx_buf_init(&url, KUBE_URL_MAX);
    if (current_selector(s, &s->list_selector) != GX_OK || stream_url(s, false, &url) != GX_OK) {
        goto fail;
    }
    fill_auth(k, &auth);
    req.url = url.data;
    s->xfer = gx_httpc_start(k->http, &req, list_done_cb, NULL, s);
    if (s->xfer == NULL) {
        goto fail;
    }
    k->st->requests++;
    gx_buf_release(&url);
    return;
fail:
    gx_buf_release(&url);
    count_error(k, GX_UPERR_OTHER);
    log_failure(s, "list", GX_UPERR_OTHER, "cannot start the request");
    stream_next(s, NEXT_LIST_BACKOFF);
}

/* ---- watches ---- */

static void
set_rv(struct stream *s, const char *rv)
{
    if (rv != NULL && rv[0] != '\0' && !str_eq(s->rv, rv)) {
        (void)set_str(&s->rv, rv);
    }
}

struct line_ctx {
    struct stream *s;
    enum verdict verdict;
    bool applied;
};

/* Decode and apply one event line; a non-OK return stops the stream. */
static enum gx_err
line_cb(void *arg, const char *line, size_t len)
{
    struct line_ctx *lc = arg;
    struct stream *s = lc->s;
    struct gx_kube *k = s->k;
    struct gx_watch_event ev;
    struct gx_why why = {{0}};
    struct gx_arena *a = malloc(sizeof(*a));
    char q[300];
    enum gx_err rc;

    if (a == NULL) {
        lc->verdict = V_NOMEM;
        return GX_ENOMEM;
    }
    gx_arena_init(a, KUBE_EVENT_CHUNK);
    rc = gx_kobj_decode_event(line, len, s->kind, max_depth(k), a, &ev, &why);
    if (rc != GX_OK) {
        gx_arena_release(a);
        free(a);
        gx_warn("kubernetes watch event does not decode, relisting", "resource=%s error=%s",
                s->name, gx_log_quote(q, sizeof(q), why.text));
        lc->verdict = V_PARSE;
        return rc;
    }
    switch (ev.type) {
    case GX_WATCH_ERROR:
        gx_warn("kubernetes watch error event, relisting", "resource=%s code=%d message=%s",
                s->name, ev.code, gx_log_quote(q, sizeof(q), ev.message ? ev.message : ""));
        lc->verdict = ev.code == 410 ? V_GONE : V_ERROR_EVENT;
        gx_arena_release(a);
        free(a);
        return GX_EUPSTREAM;
    case GX_WATCH_BOOKMARK:
        set_rv(s, ev.resource_version);
        gx_arena_release(a);
        free(a);
        break;
    default:
        set_rv(s, ev.resource_version);
        if (s->w != NULL) {
            s->w->cbs.event(s->w->ctx, &ev);
            gx_arena_release(a);
            free(a);
        } else if (s->kind == GX_KIND_NODE) {
            rc = apply_node_event(k, &ev, a); /* takes the arena */
            if (rc == GX_ENOMEM) {
                lc->verdict = V_NOMEM;
                return rc;
            }
            if (rc == GX_OK) {
                s->changed = true;
            }
        } else {
            if (k->cbs.pod_event != NULL) {
                k->cbs.pod_event(k->ctx, ev.type, &ev.obj.pod);
            }
            gx_arena_release(a);
            free(a);
        }
        break;
    }
    s->watch_events++;
    lc->applied = true;
    return GX_OK;
}

/*
 * Split and apply what the stream delivered so far. Events before a bad
 * line stay applied (each is a complete object); nothing after it is.
 */
static enum verdict
process_inbox(struct stream *s)
{
    struct gx_kube *k = s->k;
    struct line_ctx lc = {s, V_OK, false};
    enum gx_err rc;

    s->changed = false;
    if (s->inbox.len > 0) {
        rc = gx_lines_feed(&s->lines, s->inbox.data, s->inbox.len, line_cb, &lc);
        if (rc == GX_ETOOBIG && lc.verdict == V_OK) {
            gx_warn("kubernetes watch event too large, relisting", "resource=%s max_bytes=%zu",
                    s->name, max_event_bytes(k));
            lc.verdict = V_PARSE;
        }
    }
    /* A large burst should not pin its buffer for the life of the watch. */
    if (s->inbox.cap > ((size_t)1 << 20)) {
        gx_buf_release(&s->inbox);
    } else {
        gx_buf_reset(&s->inbox);
    }
    if (lc.applied) {
        mark_success(k);
    }
    if (s->changed && k->cbs.nodes_changed != NULL) {
        k->cbs.nodes_changed(k->ctx);
    }
    s->changed = false;
    return lc.verdict;
}

/* Account for an aborted watch and arm the relist. */
static void
handle_verdict(struct stream *s, enum verdict v)
{
    switch (v) {
    case V_GONE:
        count_error(s->k, GX_UPERR_GONE);
        stream_next(s, NEXT_LIST_NOW);
        break;
    case V_PARSE:
        count_error(s->k, GX_UPERR_PARSE);
        stream_next(s, NEXT_LIST_BACKOFF);
        break;
    case V_ERROR_EVENT:
        count_error(s->k, GX_UPERR_HTTP);
        stream_next(s, NEXT_LIST_BACKOFF);
        break;
    case V_NOMEM:
        count_error(s->k, GX_UPERR_OTHER);
        stream_next(s, NEXT_LIST_BACKOFF);
        break;
    case V_OK:
        break;
    }
}

/* Runs on the loop, outside libcurl: apply the inbox, abort the watch if it went bad. */
static void
defer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct stream *s = arg;
    enum verdict v;

    (void)fd;
    (void)what;
    if (s->state != ST_WATCH) {
        return;
    }
    v = process_inbox(s);
    if (v == V_OK && !s->want_relist) {
        return;
    }
    if (s->xfer != NULL) {
        gx_httpc_cancel(s->xfer);
        s->xfer = NULL;
    }
    gx_lines_reset(&s->lines);
    if (v != V_OK) {
        handle_verdict(s, v);
    } else {
        stream_next(s, NEXT_LIST_NOW);
    }
}

/* libcurl callback: only queue the bytes (no transfers may start or stop in here). */
static enum gx_err
watch_data_cb(void *ctx, const char *data, size_t len)
{
    struct stream *s = ctx;

    if (gx_buf_add(&s->inbox, data, len) != GX_OK) {
        return GX_ETOOBIG;
    }
    event_active(s->defer, EV_TIMEOUT, 0);
    return GX_OK;
}

static void
watch_done_cb(void *ctx, const struct gx_httpc_result *res)
{
    struct stream *s = ctx;
    struct gx_kube *k = s->k;
    char detail[320];
    enum verdict v;
    bool partial;

    s->xfer = NULL;
    (void)event_del(s->defer);
    /* Complete events that arrived before the end are valid whatever ended the stream. */
    v = process_inbox(s);
    partial = s->lines.pending.len > 0;
    gx_lines_reset(&s->lines);
    if (v != V_OK) {
        handle_verdict(s, v);
        return;
    }
    if (res->rc != GX_OK) {
        enum gx_upkind kind = res->rc == GX_ETOOBIG ? GX_UPERR_PARSE : res->kind;
        count_error(k, kind);
        log_failure(s, "watch", kind, res->error);
        stream_next(s, res->rc == GX_ETOOBIG ? NEXT_LIST_BACKOFF : NEXT_WATCH_BACKOFF);
        return;
    }
    if (res->status == 410) {
        count_error(k, GX_UPERR_GONE);
        gx_info("kubernetes watch expired, relisting", "resource=%s", s->name);
        stream_next(s, NEXT_LIST_NOW);
        return;
    }
    if (res->status < 200 || res->status >= 300) {
        (void)snprintf(detail, sizeof(detail), "HTTP %ld: %.200s", res->status, res->body);
        count_error(k, GX_UPERR_HTTP);
        log_failure(s, "watch", GX_UPERR_HTTP, detail);
        /* Server trouble passes; any other refusal means our position is no good. */
        stream_next(s, res->status >= 500 || res->status == 429 ? NEXT_WATCH_BACKOFF
                                                                : NEXT_LIST_BACKOFF);
        return;
    }
    if (partial) {
        count_error(k, GX_UPERR_CONNECT);
        log_failure(s, "watch", GX_UPERR_CONNECT, "stream ended inside an event");
        stream_next(s, NEXT_WATCH_BACKOFF);
        return;
    }
    mark_success(k);
    if (s->watch_events == 0 && gx_mono_ms() - s->watch_start_ms < KUBE_SHORT_WATCH_MS) {
        gx_debug("kubernetes watch ended at once, backing off", "resource=%s", s->name);
        stream_next(s, NEXT_WATCH_BACKOFF);
        return;
    }
    stream_next(s, NEXT_WATCH_NOW);
}

/* Start a watch of @s from its resourceVersion. */
static void
start_watch(struct stream *s)
{
    struct gx_kube *k = s->k;
    struct gx_httpc_auth auth;
    struct gx_httpc_req req = {
        .method = "GET",
        .auth = &auth,
        .stream = true,
        /* A server that never ends the watch is cut off well after timeoutSeconds. */
        .timeout_ms = ((long)watch_timeout_s(k) + 60) * 1000,
    };
    struct gx_buf url;

    s->state = ST_WATCH;
    s->watch_events = 0;
    s->watch_start_ms = gx_mono_ms();
    /* Fresh buffers: a reload may have changed the event cap. */
    gx_lines_release(&s->lines);
    gx_lines_init(&s->lines, max_event_bytes(k));
    gx_buf_release(&s->inbox);
    gx_buf_init(&s->inbox, max_event_bytes(k) + KUBE_INBOX_SLACK);
    gx_buf_init(&url, KUBE_URL_MAX);
    if (stream_url(s, true, &url) != GX_OK) {
        goto fail;
    }
    fill_auth(k, &auth);
    req.url = url.data;
    s->xfer = gx_httpc_start(k->http, &req, watch_done_cb, watch_data_cb, s);
    if (s->xfer == NULL) {
        goto fail;
    }
    k->st->requests++;
    gx_debug("kubernetes watch started", "resource=%s resource_version=%s", s->name,
             s->rv != NULL ? s->rv : "");
    gx_buf_release(&url);
    return;
fail:
    gx_buf_release(&url);
    count_error(k, GX_UPERR_OTHER);
    log_failure(s, "watch", GX_UPERR_OTHER, "cannot start the request");
    stream_next(s, NEXT_WATCH_BACKOFF);
}

/* Ask @s to relist (e.g. its selector changed), without touching libcurl from here. */
static void
stream_request_relist(struct stream *s)
{
    switch (s->state) {
    case ST_WAIT:
        s->relist = true;
        break;
    case ST_LIST:
        s->want_relist = true;
        break;
    case ST_WATCH:
        s->want_relist = true;
        event_active(s->defer, EV_TIMEOUT, 0);
        break;
    case ST_IDLE:
        break;
    }
}

static bool
stream_init(struct gx_kube *k, struct stream *s, enum gx_kind kind, const char *name,
            const char *path)
{
    s->k = k;
    s->kind = kind;
    s->name = name;
    s->path = gx_strndup(path, strlen(path));
    s->relist = true;
    s->backoff_ms = GX_KUBE_BACKOFF_START_MS;
    gx_buf_init(&s->inbox, max_event_bytes(k) + KUBE_INBOX_SLACK);
    gx_lines_init(&s->lines, max_event_bytes(k));
    s->timer = evtimer_new(k->base, timer_cb, s);
    s->defer = event_new(k->base, -1, 0, defer_cb, s);
    return s->path != NULL && s->timer != NULL && s->defer != NULL;
}

static void
stream_release(struct stream *s)
{
    if (s->k == NULL) {
        return;
    }
    if (s->timer != NULL && s->defer != NULL) {
        stream_stop(s);
    }
    if (s->timer != NULL) {
        event_free(s->timer);
    }
    if (s->defer != NULL) {
        event_free(s->defer);
    }
    gx_buf_release(&s->inbox);
    gx_lines_release(&s->lines);
    free(s->rv);
    free(s->selector);
    free(s->list_selector);
    free(s->path);
}

/* ---- public API ---- */

struct gx_kube *
gx_kube_new(struct event_base *base, struct gx_httpc *http, const struct gx_config *cfg,
            struct gx_upstats *st, const struct gx_kube_cbs *cbs, void *ctx, struct gx_why *why)
{
    struct gx_kube *k = calloc(1, sizeof(*k));
    const char *ca;
    int fd;

    if (k == NULL) {
        return NULL;
    }
    k->base = base;
    k->http = http;
    k->cfg = cfg;
    k->st = st;
    if (cbs != NULL) {
        k->cbs = *cbs;
    }
    k->ctx = ctx;
    k->rng = (uint64_t)gx_mono_ms() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)k;
    gx_strmap_init(&k->store);
    k->base_url = make_base_url(cfg, &k->in_cluster, why);
    if (k->base_url == NULL) {
        goto fail;
    }
    ca = ca_file(k);
    if (ca != NULL && !cfg->kube_insecure) {
        fd = open(ca, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            gx_why_set(why, "kubernetes.ca_file: cannot read %s", ca);
            goto fail;
        }
        (void)close(fd);
    }
    LIST_INIT(&k->watches);
    LIST_INIT(&k->reqs);
    if (!stream_init(k, &k->nodes, GX_KIND_NODE, "nodes", "/api/v1/nodes") ||
        !stream_init(k, &k->pods, GX_KIND_POD, "pods", "/api/v1/pods")) {
        gx_why_set(why, "out of memory");
        goto fail;
    }
    if (cfg->kube_insecure) {
        gx_warn("TLS verification of the API server is OFF (kubernetes.insecure_skip_verify)",
                "url=%s", k->base_url);
    }
    token_refresh(k);
    gx_info("kubernetes source started", "url=%s in_cluster=%s", k->base_url,
            k->in_cluster ? "true" : "false");
    stream_schedule(&k->nodes, 0);
    stream_schedule(&k->pods, 0);
    return k;
fail:
    gx_kube_free(k);
    return NULL;
}

void
gx_kube_free(struct gx_kube *k)
{
    struct req_rec *r;

    if (k == NULL) {
        return;
    }
    for (struct gx_kube_watch *w = LIST_FIRST(&k->watches), *next; w != NULL; w = next) {
        next = LIST_NEXT(w, link);
        gx_kube_watch_free(w);
    }
    stream_release(&k->nodes);
    stream_release(&k->pods);
    while ((r = LIST_FIRST(&k->reqs)) != NULL) {
        LIST_REMOVE(r, link);
        gx_httpc_cancel(r->xfer);
        free(r);
    }
    store_clear(&k->store);
    free(k->arr);
    free_secret(k->token);
    free(k->token_path);
    free(k->base_url);
    free(k);
}

void
gx_kube_set_config(struct gx_kube *k, const struct gx_config *cfg)
{
    struct stream *streams[2] = {&k->nodes, &k->pods};

    if (cfg->kube_insecure && !k->cfg->kube_insecure) {
        gx_warn("TLS verification of the API server is OFF (kubernetes.insecure_skip_verify)",
                NULL);
    }
    k->cfg = cfg;
    for (size_t i = 0; i < GX_ARRAY_LEN(streams); i++) {
        struct stream *s = streams[i];
        const char *applied = s->state == ST_LIST ? s->list_selector : s->selector;
        char *sel = NULL;

        if ((s->rv == NULL && s->state != ST_LIST) || current_selector(s, &sel) != GX_OK) {
            continue;
        }
        if (!str_eq(sel, applied)) {
            gx_info("kubernetes label selector changed, relisting", "resource=%s", s->name);
            stream_request_relist(s);
        }
        free(sel);
    }
}

bool
gx_kube_nodes_synced(const struct gx_kube *k)
{
    return k->synced;
}

const struct gx_node_info *
gx_kube_nodes(struct gx_kube *k, size_t *n)
{
    size_t pos = 0, i = 0, klen;
    const char *key;
    struct node_entry *e;

    if (k->arr_dirty) {
        struct gx_node_info *arr = NULL;

        if (k->store.count > 0) {
            arr = malloc(k->store.count * sizeof(*arr));
            if (arr == NULL) {
                /* The old array points into freed entries: show nothing rather than that. */
                *n = 0;
                return NULL;
            }
        }
        while ((e = gx_strmap_next(&k->store, &pos, &key, &klen)) != NULL && i < k->store.count) {
            arr[i++] = e->info;
        }
        if (i > 1) {
            qsort(arr, i, sizeof(*arr), node_cmp);
        }
        free(k->arr);
        k->arr = arr;
        k->n_arr = i;
        k->arr_dirty = false;
    }
    *n = k->n_arr;
    return k->arr;
}

uint64_t
gx_kube_lists(const struct gx_kube *k)
{
    return k->lists;
}

static void
req_unlink(struct gx_kube *k, struct req_rec *r)
{
    (void)k;
    LIST_REMOVE(r, link);
}

static void
request_done_cb(void *ctx, const struct gx_httpc_result *res)
{
    struct req_rec *r = ctx;
    struct gx_kube *k = r->k;
    gx_kube_done_cb done = r->done;
    void *dctx = r->ctx;

    req_unlink(k, r);
    free(r);
    gx_histo_observe(&k->st->duration, res->seconds);
    if (res->rc != GX_OK) {
        count_error(k, res->kind);
    } else if (res->status == 409) {
        count_error(k, GX_UPERR_CONFLICT);
    } else if (res->status == 410) {
        count_error(k, GX_UPERR_GONE);
    } else if (res->status < 200 || res->status >= 300) {
        count_error(k, GX_UPERR_HTTP);
    } else {
        mark_success(k);
    }
    if (done != NULL) {
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
        .timeout_ms = timeout_ms > 0 ? timeout_ms : request_timeout_ms(k),
        .max_body = max_list_bytes(k),
    };
    struct req_rec *r;
    struct gx_buf url;

    if (method == NULL || path == NULL || path[0] != '/') {
        return NULL;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return NULL;
    }
    gx_buf_init(&url, KUBE_URL_MAX);
    if (gx_buf_addf(&url, "%s%s", k->base_url, path) != GX_OK) {
        gx_buf_release(&url);
        free(r);
        return NULL;
    }
    fill_auth(k, &auth);
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
    struct req_rec *r;

    if (k == NULL || x == NULL) {
        return;
    }
    for (r = LIST_FIRST(&k->reqs); r != NULL; r = LIST_NEXT(r, link)) {
        if (r->xfer == x) {
            req_unlink(k, r);
            gx_httpc_cancel(x);
            free(r);
            return;
        }
    }
}

struct gx_kube_watch *
gx_kube_watch_new(struct gx_kube *k, enum gx_kind kind, const char *name, const char *path,
                  const char *label_selector, const struct gx_kube_watch_cbs *cbs, void *ctx)
{
    struct gx_kube_watch *w;

    if (path == NULL || path[0] != '/' || cbs == NULL || cbs->listed == NULL ||
        cbs->event == NULL) {
        return NULL;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    w->name = gx_strndup(name, strlen(name));
    w->cbs = *cbs;
    w->ctx = ctx;
    w->s.w = w;
    if (w->name == NULL ||
        (label_selector != NULL && label_selector[0] != '\0' &&
         (w->selector = gx_strndup(label_selector, strlen(label_selector))) == NULL) ||
        !stream_init(k, &w->s, kind, w->name, path)) {
        stream_release(&w->s);
        free(w->selector);
        free(w->name);
        free(w);
        return NULL;
    }
    LIST_INSERT_HEAD(&k->watches, w, link);
    stream_schedule(&w->s, 0);
    return w;
}

void
gx_kube_watch_free(struct gx_kube_watch *w)
{
    if (w == NULL) {
        return;
    }
    LIST_REMOVE(w, link);
    stream_release(&w->s);
    free(w->selector);
    free(w->fields);
    free(w->name);
    free(w);
}

void
gx_kube_watch_relist(struct gx_kube_watch *w)
{
    if (w != NULL && !w->absent) {
        stream_request_relist(&w->s);
    }
}

enum gx_err
gx_kube_watch_set_fields(struct gx_kube_watch *w, const char *field_selector)
{
    char *copy = gx_strndup(field_selector, strlen(field_selector));

    if (copy == NULL) {
        return GX_ENOMEM;
    }
    free(w->fields);
    w->fields = copy;
    return GX_OK;
}
