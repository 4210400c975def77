/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases.c - Lease compare-and-swap and the Lease watch. Each update is a
 * small state machine: GET -> mutate -> PUT/POST -> done, with 409 sending
 * it back to GET after a short jittered pause. The in-memory ledger is only
 * a cache of the Leases: it is overwritten with the Lease's tenants before
 * every mutate, with what was written after every successful write, and
 * with every Lease the watch delivers (kube.c's stream: list, then watch,
 * 410 relist, reconnect with backoff), so one replica's filter sees
 * another's bookings as soon as the API server has them. A relist every
 * ledger.sync_interval_s is the resync. Lease JSON is decoded by kobj.
 */
#include "leases_int.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "buf.h"
#include "kwrite.h"
#include "log.h"
#include "strmap.h"

#define LEASE_LABEL "gpu-extender.io/ledger"
#define TENANTS_ANNOTATION "gpu-extender.io/tenants"
#define NODE_ANNOTATION "gpu-extender.io/node"
#define LEASE_PREFIX "gpu-extender-"
#define NAME_MAX_LEN 253
#define LEASE_BODY_CAP ((size_t)4 << 20)

struct op {
    struct gx_leases *ls;
    LIST_ENTRY(op) link;
    char node[256];
    char name[NAME_MAX_LEN + 1];
    char rv[64];
    bool exists;
    bool missed; /* the watch brought this node's Lease while in flight: read it again after */
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
    struct gx_upstats *st;
    LIST_HEAD(op_list, op) ops;
    struct event *sync_timer;
    int sync_s; /* ledger.sync_interval_s of the config in use */
    struct gx_kube_watch *watch;
    bool synced;
    uint64_t rng;
    char suspects[64][256]; /* nodes whose Lease may book a pod the cache places elsewhere */
    size_t n_suspects;
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
    LIST_REMOVE(o, link);
    gx_kube_cancel(o->ls->kube, o->xfer);
    if (o->retry != NULL) {
        event_free(o->retry);
    }
    free(o->orig);
    free(o->wrote);
    free(o);
}

static void refresh(struct gx_leases *ls, const char *node);

static void
op_finish(struct op *o, enum gx_err rc, const char *why)
{
    gx_leases_done_cb done = o->done;
    void *ctx = o->ctx;
    struct gx_leases *ls = o->ls;
    bool missed = o->missed;
    char node[sizeof(o->node)];

    (void)snprintf(node, sizeof(node), "%s", o->node);
    o->xfer = NULL;
    op_free(o);
    done(ctx, rc, why);
    /*
     * Another replica's write reached the watch while this update was in
     * flight, and this update's result may be older than it: read the Lease
     * once more rather than keep an old picture until the next resync.
     */
    if (missed) {
        refresh(ls, node);
    }
}

/* Remember @node: its Lease may still book a pod the cache now places elsewhere. */
static void
suspect(struct gx_leases *ls, const char *node)
{
    for (size_t i = 0; i < ls->n_suspects; i++) {
        if (strcmp(ls->suspects[i], node) == 0) {
            return;
        }
    }
    if (ls->n_suspects < GX_ARRAY_LEN(ls->suspects) && strlen(node) < sizeof(ls->suspects[0])) {
        (void)snprintf(ls->suspects[ls->n_suspects++], sizeof(ls->suspects[0]), "%s", node);
    }
}

/*
 * Make the cache hold @t for @node. A uid the cache places on another node
 * moves; that node becomes a suspect: its Lease may book the pod too (a
 * write that timed out but landed, two replicas racing), and only a
 * reconcile of that Lease can tell which booking is the pod's.
 */
static void
cache_set(struct gx_leases *ls, const char *node, const struct gx_tenant *t, size_t n,
          const char *rv)
{
    struct gx_ledger *l = ls->ledger;

    for (size_t i = 0; i < n; i++) {
        const struct gx_ledger_node *held = gx_ledger_find_pod(l, t[i].uid);
        if (held != NULL && strcmp(held->node, node) != 0) {
            suspect(ls, held->node);
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

enum gx_err
gx_leases_decode(const struct gx_lease *lease, char *rv, size_t rvlen, struct gx_tenant **t,
                 size_t *n, const char **node, struct gx_why *why)
{
    const char *ten = gx_kv_get(lease->annotations, lease->n_annotations, TENANTS_ANNOTATION);
    const char *v = lease->resource_version;

    if (v == NULL || v[0] == '\0' || strlen(v) >= rvlen) {
        gx_why_set(why, "lease without a usable metadata.resourceVersion");
        return GX_EPARSE;
    }
    if (ten != NULL) {
        enum gx_err rc = gx_ledger_node_decode(ten, strlen(ten), t, n, why);
        if (rc != GX_OK) {
            return rc;
        }
    } else {
        *t = NULL;
        *n = 0;
    }
    (void)snprintf(rv, rvlen, "%s", v);
    if (node != NULL) {
        *node = gx_kv_get(lease->annotations, lease->n_annotations, NODE_ANNOTATION);
    }
    return GX_OK;
}

/* gx_leases_decode of a Lease's JSON text. */
static enum gx_err
lease_decode_json(const struct gx_leases *ls, const char *body, size_t len, char *rv, size_t rvlen,
                  struct gx_tenant **t, size_t *n, struct gx_why *why)
{
    struct gx_arena a;
    struct gx_lease lease;
    enum gx_err rc;

    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_lease(body, len, ls->cfg->max_json_depth > 0 ? ls->cfg->max_json_depth : 64,
                              &a, &lease, why);
    if (rc == GX_OK) {
        rc = gx_leases_decode(&lease, rv, rvlen, t, n, NULL, why);
    }
    gx_arena_release(&a);
    return rc;
}

enum gx_err
gx_leases_encode(const char *name, const char *namespace, const char *node, const char *rv,
                 const struct gx_ledger_node *e, struct gx_buf *out)
{
    struct gx_ledger_node empty = {0};
    struct gx_buf tenants;
    enum gx_err rc;

    gx_buf_init(&tenants, LEASE_BODY_CAP);
    rc = gx_ledger_node_encode(e != NULL ? e : &empty, &tenants);
    if (rc == GX_OK) {
        struct gx_kv labels[] = {{LEASE_LABEL, "true"},
                                 {"app.kubernetes.io/managed-by", "gpu-extender"}};
        struct gx_kv ann[] = {{NODE_ANNOTATION, node},
                              {TENANTS_ANNOTATION, tenants.data != NULL ? tenants.data : ""}};
        struct gx_kmeta m = {.name = name,
                             .namespace = namespace,
                             .resource_version = rv,
                             .labels = labels,
                             .n_labels = 2,
                             .annotations = ann,
                             .n_annotations = 2};

        rc = gx_kwrite_lease(out, &m, "gpu-extender");
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

    o->xfer = NULL;
    if (rc == GX_OK && (status == 200 || status == 201)) {
        struct gx_tenant *t = NULL;
        size_t n = 0;
        if (lease_decode_json(ls, body, len, rv, sizeof(rv), &t, &n, NULL) == GX_OK) {
            cache_set(ls, o->node, o->wrote, o->n_wrote, rv);
        }
        free(t);
        op_finish(o, GX_OK, "");
        return;
    }
    /* Not written: the cache goes back to what the Lease held. */
    cache_set(ls, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
    if (rc == GX_OK && status == 409) {
        ls->st->cas_conflicts++;
        ls->st->errors[GX_UPERR_CONFLICT]++;
        op_retry(o, "the ledger lease kept changing (compare-and-swap conflicts)");
        return;
    }
    ls->st->errors[rc == GX_ETIMEDOUT ? GX_UPERR_TIMEOUT : GX_UPERR_HTTP]++;
    /* a write that timed out or failed with a 5xx may have landed: the Lease tells, not a guess */
    o->missed = true;
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

    cache_set(ls, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
    rc = o->mutate(o->ctx, ls->ledger, o->node, &write, &why);
    if (rc != GX_OK || !write) {
        if (rc != GX_OK) {
            cache_set(ls, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
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
    if (gx_leases_encode(o->name, ls->cfg->kube_namespace, o->node, o->exists ? o->rv : NULL,
                         gx_ledger_node(ls->ledger, o->node), &body) != GX_OK) {
        gx_buf_release(&body);
        cache_set(ls, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
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
    ls->st->requests++;
    o->xfer = gx_kube_request(ls->kube, o->exists ? "PUT" : "POST", path, body.data, body.len,
                              "application/json", op_timeout(o), put_done, o);
    gx_buf_release(&body);
    if (o->xfer == NULL) {
        cache_set(ls, o->node, o->orig, o->n_orig, o->exists ? o->rv : NULL);
        op_finish(o, GX_ENOMEM, "cannot start the lease write");
    }
}

static void
get_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct op *o = ctx;
    struct gx_why why = {{0}};
    char msg[300], what[240];

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
        o->ls->st->errors[rc == GX_ETIMEDOUT ? GX_UPERR_TIMEOUT : GX_UPERR_HTTP]++;
        gx_kobj_failure_text(rc, status, body, len, what, sizeof(what));
        (void)snprintf(msg, sizeof(msg), "cannot read the ledger lease: %s", what);
        if (rc == GX_OK && status >= 500) {
            op_retry(o, msg);
        } else {
            op_finish(o, rc == GX_OK ? GX_EUPSTREAM : rc, msg);
        }
        return;
    }
    if (lease_decode_json(o->ls, body, len, o->rv, sizeof(o->rv), &o->orig, &o->n_orig, &why) !=
        GX_OK) {
        o->ls->st->errors[GX_UPERR_PARSE]++;
        (void)snprintf(msg, sizeof(msg), "unreadable ledger lease: %s",
                       why.text[0] ? why.text : "not JSON");
        op_finish(o, GX_EPARSE, msg);
        return;
    }
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
    o->ls->st->requests++;
    o->xfer = gx_kube_request(o->ls->kube, "GET", path, NULL, 0, NULL, op_timeout(o), get_done, o);
    if (o->xfer == NULL) {
        op_finish(o, GX_ENOMEM, "cannot start the lease read");
    }
}

size_t
gx_leases_take_suspects(struct gx_leases *ls, char (*out)[256], size_t max)
{
    size_t n = ls->n_suspects < max ? ls->n_suspects : max;

    memcpy(out, ls->suspects, n * sizeof(ls->suspects[0]));
    /* any left over stay for the next pass */
    memmove(ls->suspects, ls->suspects + n, (ls->n_suspects - n) * sizeof(ls->suspects[0]));
    ls->n_suspects -= n;
    return n;
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
    LIST_INSERT_HEAD(&ls->ops, o, link);
    op_get(o);
    return true;
}

/* ---- the watch ---- */

/*
 * True when an update of @node is in flight: its own result will refresh
 * the cache, and it is told to read the Lease again when it ends.
 */
static bool
busy(struct gx_leases *ls, const char *node)
{
    struct op *o;
    bool any = false;

    LIST_FOREACH(o, &ls->ops, link)
    {
        if (strcmp(o->node, node) == 0) {
            o->missed = true;
            any = true;
        }
    }
    return any;
}

/* A refresh is an update that writes nothing: GET puts the Lease in the cache. */
static enum gx_err
refresh_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    (void)ctx;
    (void)l;
    (void)node;
    (void)why;
    *write = false;
    return GX_OK;
}

static void
refresh_done(void *ctx, enum gx_err rc, const char *why)
{
    (void)ctx;
    (void)rc;
    (void)why;
}

static void
refresh(struct gx_leases *ls, const char *node)
{
    int64_t deadline = gx_mono_ms() + (int64_t)ls->cfg->kube_timeout_s * 1000;

    /* not started (ENOMEM): the next resync brings the Lease */
    (void)gx_leases_update(ls, node, deadline, refresh_mutate, refresh_done, NULL);
}

/* Make the cache hold what @lease says about its node (unless busy). */
static void
apply_lease(struct gx_leases *ls, const struct gx_lease *lease, bool deleted)
{
    struct gx_why why = {{0}};
    struct gx_tenant *t = NULL;
    const char *node = gx_kv_get(lease->annotations, lease->n_annotations, NODE_ANNOTATION);
    size_t n = 0;
    char rv[64];

    if (node == NULL || busy(ls, node)) {
        return;
    }
    if (deleted) {
        cache_set(ls, node, NULL, 0, NULL);
        return;
    }
    if (gx_leases_decode(lease, rv, sizeof(rv), &t, &n, NULL, &why) != GX_OK) {
        char q[300];
        gx_warn("ledger lease does not decode, ignoring it", "lease=%s error=%s", lease->name,
                gx_log_quote(q, sizeof(q), why.text));
        return;
    }
    cache_set(ls, node, t, n, rv);
    free(t);
}

struct stale_ctx {
    struct gx_strmap listed; /* node -> the list's Lease */
    const char **stale;
    size_t n_stale, cap;
};

static void
collect_stale(void *ctx, const struct gx_ledger_node *n)
{
    struct stale_ctx *s = ctx;

    if (n->n_tenants == 0 || gx_strmap_get(&s->listed, n->node, strlen(n->node)) != NULL) {
        return;
    }
    if (s->n_stale == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        const char **grown = realloc(s->stale, cap * sizeof(*grown));
        if (grown == NULL) {
            return; /* the next resync drops it */
        }
        s->stale = grown;
        s->cap = cap;
    }
    s->stale[s->n_stale++] = n->node;
}

/* A (re)list: every Lease is the truth for its node; a node without a Lease has no tenants. */
static void
listed_cb(void *ctx, const void *items, size_t n)
{
    struct gx_leases *ls = ctx;
    const struct gx_lease *leases = items;
    struct stale_ctx s = {0};
    bool complete = true;

    gx_strmap_init(&s.listed);
    for (size_t i = 0; i < n; i++) {
        const char *node =
            gx_kv_get(leases[i].annotations, leases[i].n_annotations, NODE_ANNOTATION);
        apply_lease(ls, &leases[i], false);
        if (node != NULL &&
            gx_strmap_put(&s.listed, node, strlen(node), (void *)&leases[i]) != GX_OK) {
            complete = false; /* cannot tell stale from listed: drop nothing this time */
        }
    }
    if (complete) {
        gx_ledger_each(ls->ledger, collect_stale, &s);
    }
    for (size_t i = 0; i < s.n_stale; i++) {
        if (!busy(ls, s.stale[i])) {
            cache_set(ls, s.stale[i], NULL, 0, NULL);
        }
    }
    free(s.stale);
    gx_strmap_release(&s.listed);
    if (!ls->synced) {
        gx_info("ledger synced from leases", "namespace=%s leases=%zu", ls->cfg->kube_namespace, n);
    }
    ls->synced = true;
}

static void
event_cb(void *ctx, const struct gx_watch_event *ev)
{
    struct gx_leases *ls = ctx;

    apply_lease(ls, &ev->obj.lease, ev->type == GX_WATCH_DELETED);
}

static void
arm_sync(struct gx_leases *ls)
{
    struct timeval tv = {ls->cfg->ledger_sync_s, 0};

    (void)evtimer_add(ls->sync_timer, &tv);
}

/* The resync: a full list every ledger.sync_interval_s, then the watch resumes. */
static void
sync_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_leases *ls = arg;

    (void)fd;
    (void)what;
    gx_kube_watch_relist(ls->watch);
    arm_sync(ls);
}

struct gx_leases *
gx_leases_new(struct event_base *base, struct gx_kube *kube, const struct gx_config *cfg,
              struct gx_ledger *ledger, struct gx_upstats *st)
{
    static const struct gx_kube_watch_cbs cbs = {.listed = listed_cb, .event = event_cb};
    struct gx_leases *ls = calloc(1, sizeof(*ls));
    char path[512], sel[128];

    if (ls == NULL) {
        return NULL;
    }
    LIST_INIT(&ls->ops);
    ls->base = base;
    ls->kube = kube;
    ls->cfg = cfg;
    ls->sync_s = cfg->ledger_sync_s;
    ls->ledger = ledger;
    ls->st = st;
    ls->rng = (uint64_t)gx_mono_ms() * 2654435761u | 1;
    (void)snprintf(path, sizeof(path), "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                   cfg->kube_namespace);
    (void)snprintf(sel, sizeof(sel), "%s=true", LEASE_LABEL);
    ls->sync_timer = evtimer_new(base, sync_cb, ls);
    if (ls->sync_timer != NULL) {
        ls->watch = gx_kube_watch_new(kube, GX_KIND_LEASE, "leases", path, sel, &cbs, ls);
    }
    if (ls->watch == NULL) {
        gx_leases_free(ls);
        return NULL;
    }
    arm_sync(ls);
    return ls;
}

void
gx_leases_free(struct gx_leases *ls)
{
    if (ls == NULL) {
        return;
    }
    for (struct op *o = LIST_FIRST(&ls->ops), *next; o != NULL; o = next) {
        next = LIST_NEXT(o, link);
        op_free(o);
    }
    gx_kube_watch_free(ls->watch);
    if (ls->sync_timer != NULL) {
        event_free(ls->sync_timer);
    }
    free(ls);
}

void
gx_leases_set_config(struct gx_leases *ls, const struct gx_config *cfg)
{
    int old_sync_s = ls->sync_s; /* the old config may be freed already */

    ls->cfg = cfg;
    ls->sync_s = cfg->ledger_sync_s;
    /*
     * The wait for the next resync was armed with the old interval: a change
     * from 3600 s to 5 s would otherwise apply an hour later.
     */
    if (cfg->ledger_sync_s != old_sync_s && ls->sync_timer != NULL &&
        evtimer_pending(ls->sync_timer, NULL)) {
        (void)evtimer_del(ls->sync_timer);
        arm_sync(ls);
    }
}

bool
gx_leases_synced(const struct gx_leases *ls)
{
    return ls->synced;
}
