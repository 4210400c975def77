/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases.c - Lease compare-and-swap and the periodic Lease list. Each
 * update is a small state machine: GET -> mutate -> PUT/POST -> done, with
 * 409 sending it back to GET after a short jittered pause. The in-memory
 * ledger is only a cache of the Leases: it is overwritten with the Lease's
 * tenants before every mutate, and with what was written after every
 * successful write.
 */
#include "gx/leases.h"

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "gx/buf.h"
#include "gx/log.h"

#define LEASE_LABEL "gpu-extender.io/ledger"
#define TENANTS_ANNOTATION "gpu-extender.io/tenants"
#define NODE_ANNOTATION "gpu-extender.io/node"
#define LEASE_PREFIX "gpu-extender-"
#define NAME_MAX_LEN 253
#define LEASE_BODY_CAP ((size_t)4 << 20)

struct op {
    struct gx_leases *ls;
    struct op *prev, *next;
    char node[256];
    char name[NAME_MAX_LEN + 1];
    char rv[64];
    bool exists;
    int attempts;
    int64_t deadline_ms;
    gx_leases_mutate_cb mutate;
    gx_leases_done_cb done;
    void *ctx;
    struct gx_httpc_xfer *xfer;
    struct event *retry;
    struct gx_tenant *orig; /* the Lease's tenants as read */
    size_t n_orig;
    struct gx_tenant *wrote; /* what this attempt writes */
    size_t n_wrote;
};

struct gx_leases {
    struct event_base *base;
    struct gx_kube *kube;
    const struct gx_config *cfg;
    struct gx_ledger *ledger;
    struct gx_metrics *m;
    struct op *ops;
    struct event *sync_timer;
    struct gx_httpc_xfer *list_xfer;
    bool synced;
    uint64_t rng;
};

void
gx_leases_name(const char *node, char *out, size_t n)
{
    size_t len = strlen(node);

    if (sizeof(LEASE_PREFIX) - 1 + len <= NAME_MAX_LEN) {
        (void)snprintf(out, n, LEASE_PREFIX "%s", node);
        return;
    }
    /* Too long for an object name: keep a prefix and make it unique with a hash. */
    (void)snprintf(out, n, LEASE_PREFIX "%.200s-%016llx", node,
                   (unsigned long long)gx_hash(node, len));
}

static void
op_free(struct op *o)
{
    struct gx_leases *ls = o->ls;

    if (o->prev != NULL) {
        o->prev->next = o->next;
    } else {
        ls->ops = o->next;
    }
    if (o->next != NULL) {
        o->next->prev = o->prev;
    }
    gx_kube_cancel(o->ls->kube, o->xfer);
    if (o->retry != NULL) {
        event_free(o->retry);
    }
    free(o->orig);
    free(o->wrote);
    free(o);
}

static void
op_finish(struct op *o, enum gx_err rc, const char *why)
{
    gx_leases_done_cb done = o->done;
    void *ctx = o->ctx;

    o->xfer = NULL;
    op_free(o);
    done(ctx, rc, why);
}

/*
 * Make the cache hold @t for @node: a uid the cache places on another node
 * moved (its old Lease will say so when next read).
 */
static void
cache_set(struct gx_ledger *l, const char *node, const struct gx_tenant *t, size_t n,
          const char *rv)
{
    for (size_t i = 0; i < n; i++) {
        const struct gx_ledger_node *held = gx_ledger_find_pod(l, t[i].uid);
        if (held != NULL && strcmp(held->node, node) != 0) {
            (void)gx_ledger_release(l, t[i].uid);
        }
    }
    if (gx_ledger_set_node(l, node, t, n, rv) != GX_OK) {
        gx_warn("ledger lease holds inconsistent tenants, ignoring it", "node=%s", node);
    }
}

/* Copy the cache's tenants of @node into a heap array. */
static enum gx_err
cache_copy(const struct gx_ledger *l, const char *node, struct gx_tenant **t, size_t *n)
{
    const struct gx_ledger_node *e = gx_ledger_node(l, node);

    *t = NULL;
    *n = 0;
    if (e == NULL || e->n_tenants == 0) {
        return GX_OK;
    }
    *t = malloc(e->n_tenants * sizeof(**t));
    if (*t == NULL) {
        return GX_ENOMEM;
    }
    memcpy(*t, e->tenants, e->n_tenants * sizeof(**t));
    *n = e->n_tenants;
    return GX_OK;
}

/* Pull resourceVersion and tenants out of a Lease object. */
static enum gx_err
lease_decode(const cJSON *lease, char *rv, size_t rvlen, struct gx_tenant **t, size_t *n,
             const char **node, struct gx_why *why)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(lease, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    const cJSON *ten = cJSON_GetObjectItemCaseSensitive(ann, TENANTS_ANNOTATION);
    const cJSON *nd = cJSON_GetObjectItemCaseSensitive(ann, NODE_ANNOTATION);

    if (!cJSON_IsString(v) || strlen(v->valuestring) >= rvlen) {
        gx_why_set(why, "lease without a usable metadata.resourceVersion");
        return GX_EPARSE;
    }
    (void)snprintf(rv, rvlen, "%s", v->valuestring);
    if (node != NULL) {
        *node = cJSON_IsString(nd) ? nd->valuestring : NULL;
    }
    *t = NULL;
    *n = 0;
    if (ten == NULL) {
        return GX_OK;
    }
    if (!cJSON_IsString(ten)) {
        gx_why_set(why, "annotation " TENANTS_ANNOTATION " must be a string");
        return GX_EPARSE;
    }
    return gx_ledger_node_decode(ten->valuestring, strlen(ten->valuestring), t, n, why);
}

static enum gx_err
lease_encode(const struct op *o, const struct gx_ledger_node *e, struct gx_buf *out)
{
    struct gx_ledger_node empty = {0};
    struct gx_buf tenants;
    enum gx_err rc;

    gx_buf_init(&tenants, LEASE_BODY_CAP);
    rc = gx_ledger_node_encode(e != NULL ? e : &empty, &tenants);
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
                              "\"metadata\":{\"name\":");
    }
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, o->name, strlen(o->name));
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"namespace\":");
    }
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, o->ls->cfg->kube_namespace,
                                 strlen(o->ls->cfg->kube_namespace));
    }
    if (rc == GX_OK && o->exists) {
        rc = gx_buf_addf(out, ",\"resourceVersion\":\"%s\"", o->rv);
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"labels\":{\"" LEASE_LABEL "\":\"true\","
                              "\"app.kubernetes.io/managed-by\":\"gpu-extender\"},"
                              "\"annotations\":{\"" NODE_ANNOTATION "\":");
    }
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, o->node, strlen(o->node));
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"" TENANTS_ANNOTATION "\":");
    }
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, tenants.data ? tenants.data : "", tenants.len);
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, "}},\"spec\":{\"holderIdentity\":\"gpu-extender\"}}");
    }
    gx_buf_release(&tenants);
    return rc;
}

static long
op_timeout(const struct op *o)
{
    int64_t left = o->deadline_ms - gx_mono_ms();
    int64_t cap = (int64_t)o->ls->cfg->kube_timeout_s * 1000;

    if (left > cap) {
        left = cap;
    }
    return left < 50 ? 50 : (long)left;
}

static void op_get(struct op *o);

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    op_get(arg);
}

/* A lost race: read again after a short random pause, if attempts and time remain. */
static void
op_retry(struct op *o, const char *why)
{
    struct gx_leases *ls = o->ls;
    struct timeval tv = {0, 0};

    if (o->attempts >= ls->cfg->ledger_cas_retries || gx_mono_ms() + 100 >= o->deadline_ms) {
        op_finish(o, GX_ECONFLICT, why);
        return;
    }
    tv.tv_usec = (suseconds_t)(gx_rand_next(&ls->rng) % (uint64_t)(5000 * o->attempts + 1));
    if (o->retry == NULL) {
        o->retry = evtimer_new(ls->base, retry_cb, o);
    }
    if (o->retry == NULL || evtimer_add(o->retry, &tv) != 0) {
        op_finish(o, GX_ENOMEM, "out of memory");
    }
}

static void
put_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct op *o = ctx;
    struct gx_leases *ls = o->ls;
    char rv[64], msg[300], what[240];
    cJSON *j;

    o->xfer = NULL;
    if (rc == GX_OK && (status == 200 || status == 201)) {
        struct gx_tenant *t = NULL;
        size_t n = 0;
        j = cJSON_ParseWithLength(body, len);
        if (j != NULL && lease_decode(j, rv, sizeof(rv), &t, &n, NULL, NULL) == GX_OK) {
            cache_set(ls->ledger, o->node, o->wrote, o->n_wrote, rv);
        }
        free(t);
        cJSON_Delete(j);
        op_finish(o, GX_OK, "");
        return;
    }
    /* Not written: the cache goes back to what the Lease held. */
    cache_set(ls->ledger, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
    if (rc == GX_OK && status == 409) {
        ls->m->cas_conflicts++;
        ls->m->up_errors[GX_UP_KUBERNETES][GX_UPERR_CONFLICT]++;
        op_retry(o, "the ledger lease kept changing (compare-and-swap conflicts)");
        return;
    }
    ls->m->up_errors[GX_UP_KUBERNETES][rc == GX_ETIMEDOUT ? GX_UPERR_TIMEOUT : GX_UPERR_HTTP]++;
    gx_kobj_failure_text(rc, status, body, len, what, sizeof(what));
    (void)snprintf(msg, sizeof(msg), "cannot write the ledger lease: %s", what);
    op_finish(o, rc == GX_OK ? GX_EUPSTREAM : rc, msg);
}

/* The Lease's tenants are in the cache: let the caller change them, then write. */
static void
op_apply(struct op *o)
{
    struct gx_leases *ls = o->ls;
    struct gx_why why = {{0}};
    struct gx_buf body;
    char path[512];
    bool write = true;
    enum gx_err rc;

    cache_set(ls->ledger, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
    rc = o->mutate(o->ctx, ls->ledger, o->node, &write, &why);
    if (rc != GX_OK || !write) {
        if (rc != GX_OK) {
            cache_set(ls->ledger, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
        }
        op_finish(o, rc, why.text);
        return;
    }
    free(o->wrote);
    if (cache_copy(ls->ledger, o->node, &o->wrote, &o->n_wrote) != GX_OK) {
        op_finish(o, GX_ENOMEM, "out of memory");
        return;
    }
    gx_buf_init(&body, LEASE_BODY_CAP);
    if (lease_encode(o, gx_ledger_node(ls->ledger, o->node), &body) != GX_OK) {
        gx_buf_release(&body);
        cache_set(ls->ledger, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
        op_finish(o, GX_ETOOBIG, "the ledger lease would be too large");
        return;
    }
    if (o->exists) {
        (void)snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
                       ls->cfg->kube_namespace, o->name);
    } else {
        (void)snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                       ls->cfg->kube_namespace);
    }
    ls->m->up_requests[GX_UP_KUBERNETES]++;
    o->xfer = gx_kube_request(ls->kube, o->exists ? "PUT" : "POST", path, body.data, body.len,
                              "application/json", op_timeout(o), put_done, o);
    gx_buf_release(&body);
    if (o->xfer == NULL) {
        cache_set(ls->ledger, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
        op_finish(o, GX_ENOMEM, "cannot start the lease write");
    }
}

static void
get_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct op *o = ctx;
    struct gx_why why = {{0}};
    char msg[300], what[240];
    cJSON *j;

    o->xfer = NULL;
    free(o->orig);
    o->orig = NULL;
    o->n_orig = 0;
    if (rc == GX_OK && status == 404) {
        o->exists = false;
        o->rv[0] = '\0';
        op_apply(o);
        return;
    }
    if (rc != GX_OK || status != 200) {
        o->ls->m
            ->up_errors[GX_UP_KUBERNETES][rc == GX_ETIMEDOUT ? GX_UPERR_TIMEOUT : GX_UPERR_HTTP]++;
        gx_kobj_failure_text(rc, status, body, len, what, sizeof(what));
        (void)snprintf(msg, sizeof(msg), "cannot read the ledger lease: %s", what);
        if (rc == GX_OK && status >= 500) {
            op_retry(o, msg);
        } else {
            op_finish(o, rc == GX_OK ? GX_EUPSTREAM : rc, msg);
        }
        return;
    }
    j = cJSON_ParseWithLength(body, len);
    if (j == NULL ||
        lease_decode(j, o->rv, sizeof(o->rv), &o->orig, &o->n_orig, NULL, &why) != GX_OK) {
        cJSON_Delete(j);
        o->ls->m->up_errors[GX_UP_KUBERNETES][GX_UPERR_PARSE]++;
        (void)snprintf(msg, sizeof(msg), "unreadable ledger lease: %s",
                       why.text[0] ? why.text : "not JSON");
        op_finish(o, GX_EPARSE, msg);
        return;
    }
    cJSON_Delete(j);
    o->exists = true;
    op_apply(o);
}

static void
op_get(struct op *o)
{
    char path[512];

    o->attempts++;
    (void)snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s",
                   o->ls->cfg->kube_namespace, o->name);
    o->ls->m->up_requests[GX_UP_KUBERNETES]++;
    o->xfer = gx_kube_request(o->ls->kube, "GET", path, NULL, 0, NULL, op_timeout(o), get_done, o);
    if (o->xfer == NULL) {
        op_finish(o, GX_ENOMEM, "cannot start the lease read");
    }
}

bool
gx_leases_update(struct gx_leases *ls, const char *node, int64_t deadline_ms,
                 gx_leases_mutate_cb mutate, gx_leases_done_cb done, void *ctx)
{
    struct op *o;

    if (strlen(node) >= sizeof(o->node)) {
        return false;
    }
    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        return false;
    }
    o->ls = ls;
    (void)snprintf(o->node, sizeof(o->node), "%s", node);
    gx_leases_name(node, o->name, sizeof(o->name));
    o->deadline_ms = deadline_ms;
    o->mutate = mutate;
    o->done = done;
    o->ctx = ctx;
    o->next = ls->ops;
    if (ls->ops != NULL) {
        ls->ops->prev = o;
    }
    ls->ops = o;
    op_get(o);
    return true;
}

/* ---- the periodic list ---- */

struct seen_nodes {
    cJSON *items;
    struct gx_ledger *l;
    const char *stale[4096];
    size_t n_stale;
};

static bool
listed(const cJSON *items, const char *node)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, items)
    {
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
        const cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
        const cJSON *nd = cJSON_GetObjectItemCaseSensitive(ann, NODE_ANNOTATION);
        if (cJSON_IsString(nd) && strcmp(nd->valuestring, node) == 0) {
            return true;
        }
    }
    return false;
}

static void
collect_stale(void *ctx, const struct gx_ledger_node *n)
{
    struct seen_nodes *s = ctx;

    if (n->n_tenants > 0 && !listed(s->items, n->node) && s->n_stale < GX_ARRAY_LEN(s->stale)) {
        s->stale[s->n_stale++] = n->node;
    }
}

/* True when an update of @node is in flight: its own result will refresh the cache. */
static bool
busy(const struct gx_leases *ls, const char *node)
{
    for (const struct op *o = ls->ops; o != NULL; o = o->next) {
        if (strcmp(o->node, node) == 0) {
            return true;
        }
    }
    return false;
}

static void
arm_sync(struct gx_leases *ls)
{
    struct timeval tv = {ls->cfg->ledger_sync_s, 0};

    (void)evtimer_add(ls->sync_timer, &tv);
}

static void
list_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_leases *ls = ctx;
    struct seen_nodes s = {.l = ls->ledger};
    const cJSON *it;
    cJSON *j;

    ls->list_xfer = NULL;
    j = rc == GX_OK && status == 200 ? cJSON_ParseWithLength(body, len) : NULL;
    s.items = cJSON_GetObjectItemCaseSensitive(j, "items");
    if (!cJSON_IsArray(s.items)) {
        char what[240], q[300];
        ls->m->up_errors[GX_UP_KUBERNETES][rc != GX_OK     ? GX_UPERR_CONNECT
                                           : status == 200 ? GX_UPERR_PARSE
                                                           : GX_UPERR_HTTP]++;
        if (rc == GX_OK && status == 200) {
            (void)snprintf(what, sizeof(what), "HTTP 200 but not a LeaseList");
        } else {
            gx_kobj_failure_text(rc, status, body, len, what, sizeof(what));
        }
        gx_warn("cannot list ledger leases, keeping the cached ledger", "status=%ld error=%s",
                status, gx_log_quote(q, sizeof(q), what));
        cJSON_Delete(j);
        arm_sync(ls);
        return;
    }
    cJSON_ArrayForEach(it, s.items)
    {
        struct gx_tenant *t = NULL;
        size_t n = 0;
        const char *node = NULL;
        char rv[64];
        struct gx_why why = {{0}};

        if (lease_decode(it, rv, sizeof(rv), &t, &n, &node, &why) == GX_OK && node != NULL &&
            !busy(ls, node)) {
            cache_set(ls->ledger, node, t, n, rv);
        }
        free(t);
    }
    /* A Lease that disappeared takes its tenants with it. */
    gx_ledger_each(ls->ledger, collect_stale, &s);
    for (size_t i = 0; i < s.n_stale; i++) {
        if (!busy(ls, s.stale[i])) {
            cache_set(ls->ledger, s.stale[i], NULL, 0, NULL);
        }
    }
    cJSON_Delete(j);
    if (!ls->synced) {
        gx_info("ledger synced from leases", "namespace=%s", ls->cfg->kube_namespace);
    }
    ls->synced = true;
    arm_sync(ls);
}

static void
sync_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_leases *ls = arg;
    char path[512];

    (void)fd;
    (void)what;
    if (ls->list_xfer != NULL) {
        return;
    }
    (void)snprintf(path, sizeof(path),
                   "/apis/coordination.k8s.io/v1/namespaces/%s/leases?labelSelector=%s%%3Dtrue",
                   ls->cfg->kube_namespace, "gpu-extender.io%2Fledger");
    ls->m->up_requests[GX_UP_KUBERNETES]++;
    ls->list_xfer = gx_kube_request(ls->kube, "GET", path, NULL, 0, NULL, 0, list_done, ls);
    if (ls->list_xfer == NULL) {
        arm_sync(ls);
    }
}

struct gx_leases *
gx_leases_new(struct event_base *base, struct gx_kube *kube, const struct gx_config *cfg,
              struct gx_ledger *ledger, struct gx_metrics *m)
{
    struct gx_leases *ls = calloc(1, sizeof(*ls));
    struct timeval now = {0, 0};

    if (ls == NULL) {
        return NULL;
    }
    ls->base = base;
    ls->kube = kube;
    ls->cfg = cfg;
    ls->ledger = ledger;
    ls->m = m;
    ls->rng = (uint64_t)gx_mono_ms() * 2654435761u | 1;
    ls->sync_timer = evtimer_new(base, sync_cb, ls);
    if (ls->sync_timer == NULL) {
        free(ls);
        return NULL;
    }
    (void)evtimer_add(ls->sync_timer, &now);
    return ls;
}

void
gx_leases_free(struct gx_leases *ls)
{
    if (ls == NULL) {
        return;
    }
    for (struct op *o = ls->ops, *next; o != NULL; o = next) {
        next = o->next;
        op_free(o);
    }
    gx_kube_cancel(ls->kube, ls->list_xfer);
    if (ls->sync_timer != NULL) {
        event_free(ls->sync_timer);
    }
    free(ls);
}

void
gx_leases_set_config(struct gx_leases *ls, const struct gx_config *cfg)
{
    ls->cfg = cfg;
}

bool
gx_leases_synced(const struct gx_leases *ls)
{
    return ls->synced;
}
