/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile.c - managed-pod view and ledger reconcile (see reconcile.h).
 * The timer is re-armed at the end of its callback, so passes never overlap.
 * The pods by uid, their list and their events, are a gx_store.
 */
#include "reconcile.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgwrite.h"
#include "admit.h"
#include "kwrite.h"
#include "leader.h"
#include "log.h"

/* A managed pod as the watch last showed it. */
struct pod_state {
    char uid[GX_UID_MAX];
    char node[256];    /* spec.nodeName, "" while pending */
    bool finished;     /* Succeeded, Failed or being deleted */
    bool has_priority; /* spec.priority, for the preempt verb */
    int32_t priority;
    struct gx_arena meta; /* namespace, name and labels, for PodDisruptionBudgets */
    struct gx_pdb_pod pdb;
};

static void
pod_state_free(void *v)
{
    struct pod_state *ps = v;

    if (ps != NULL) {
        gx_arena_release(&ps->meta);
        free(ps);
    }
}

/* Copy what the budgets match on; on ENOMEM the pod matches no budget. */
static void
pod_state_meta(struct pod_state *ps, const struct gx_pod *pod)
{
    struct gx_kv *labels = NULL;
    struct gx_pdb_pod m = {0};

    size_t need = strlen(pod->namespace) + strlen(pod->name) + 64;

    for (size_t i = 0; i < pod->n_labels; i++) {
        need += sizeof(*labels) + strlen(pod->labels[i].key) + strlen(pod->labels[i].value) + 32;
    }
    /* one chunk sized to the pod: the default chunk would cost 64 KiB per pod */
    gx_arena_release(&ps->meta);
    gx_arena_init(&ps->meta, need);
    memset(&ps->pdb, 0, sizeof(ps->pdb));
    m.namespace = gx_arena_strdup(&ps->meta, pod->namespace);
    m.name = gx_arena_strdup(&ps->meta, pod->name);
    if (m.namespace == NULL || m.name == NULL ||
        (pod->n_labels > 0 &&
         (labels = gx_arena_alloc(&ps->meta, pod->n_labels * sizeof(*labels))) == NULL)) {
        return;
    }
    for (size_t i = 0; i < pod->n_labels; i++) {
        labels[i].key = gx_arena_strdup(&ps->meta, pod->labels[i].key);
        labels[i].value = gx_arena_strdup(&ps->meta, pod->labels[i].value);
        if (labels[i].key == NULL || labels[i].value == NULL) {
            return;
        }
    }
    m.labels = labels;
    m.n_labels = pod->n_labels;
    ps->pdb = m;
}

/* Add @pod to @pods or update its state in place; on ENOMEM the pod is not seen. */
static void
pod_state_put(struct gx_store *pods, const struct gx_pod *pod)
{
    struct pod_state *ps;
    size_t len = strlen(pod->uid);

    if (len == 0 || len >= GX_UID_MAX) {
        return;
    }
    ps = gx_store_get(pods, pod->uid);
    if (ps == NULL) {
        ps = calloc(1, sizeof(*ps));
        if (ps == NULL) {
            return;
        }
        memcpy(ps->uid, pod->uid, len + 1);
        gx_arena_init(&ps->meta, 64);
        if (gx_store_put(pods, ps->uid, ps) != GX_OK) {
            pod_state_free(ps);
            return;
        }
    }
    pod_state_meta(ps, pod);
    (void)snprintf(ps->node, sizeof(ps->node), "%s", pod->node_name ? pod->node_name : "");
    ps->finished = gx_pod_finished(pod);
    ps->has_priority = pod->has_priority;
    ps->priority = pod->priority;
}

bool
gx_recon_priority(const struct gx_app *app, const char *uid, const char *node, int32_t *prio)
{
    const struct pod_state *ps = gx_store_get(&app->recon.pods, uid);

    if (ps == NULL || !ps->has_priority || ps->finished || strcmp(ps->node, node) != 0) {
        return false;
    }
    *prio = ps->priority;
    return true;
}

const struct gx_pdb_pod *
gx_recon_pdb_pod(const struct gx_app *app, const char *uid)
{
    const struct pod_state *ps = gx_store_get(&app->recon.pods, uid);

    return ps != NULL && ps->pdb.name != NULL ? &ps->pdb : NULL;
}

/*
 * A replica that forwards to a leader leaves the Leases to it: both
 * reconciling the same nodes only lost compare-and-swaps to each other (the
 * follower's passes failed 18 times in a two-replica burst, and the
 * leader's own writes 20 times). It reconciles once it leads.
 */
static bool
reconciles(const struct gx_app *app)
{
    return gx_leader_url(app) == NULL;
}

/* A pod that is gone or finished frees what it holds now, not on the next pass. */
static void
release_now(struct gx_app *app, const char *uid)
{
    const struct gx_ledger_node *held = gx_ledger_find_pod(app->ledger, uid);

    if (held != NULL && reconciles(app)) {
        gx_info("pod gone, releasing its GPUs", "node=%s uid=%s", held->node, uid);
        gx_bg_write(app, GX_BG_RELEASE, held->node, uid);
    }
}

void
gx_recon_pod_event(void *ctx, enum gx_watch_type type, const struct gx_pod *pod)
{
    struct gx_app *app = ctx;

    if (type == GX_WATCH_DELETED) {
        (void)gx_store_del(&app->recon.pods, pod->uid);
        release_now(app, pod->uid);
    } else if (type == GX_WATCH_ADDED || type == GX_WATCH_MODIFIED) {
        pod_state_put(&app->recon.pods, pod);
        if (gx_pod_finished(pod)) {
            release_now(app, pod->uid);
        }
    }
}

void
gx_recon_pods_listed(void *ctx, const struct gx_pod *pods, size_t n)
{
    struct gx_app *app = ctx;
    struct gx_store list;

    gx_store_init(&list, pod_state_free);
    for (size_t i = 0; i < n; i++) {
        pod_state_put(&list, &pods[i]);
    }
    if (!gx_store_synced(&app->recon.pods)) {
        gx_info("managed pods synced", "pods=%zu", n);
    }
    gx_store_replace(&app->recon.pods, &list);
}

bool
gx_recon_synced(const struct gx_app *app)
{
    return gx_store_synced(&app->recon.pods);
}

/*
 * A pod missing from the view, read directly before its booking is judged:
 * under load the watch lags the API server by seconds, and absence from it
 * released bound pods' bookings under a slow API server.
 */
struct gx_recon_read {
    struct gx_app *app;
    LIST_ENTRY(gx_recon_read) link;
    char uid[GX_UID_MAX];
    char node[256];
    int64_t booking; /* the stamp judged: a booking renewed meanwhile is not this one */
    int64_t read_ms; /* wall ms the read started */
    struct gx_httpc_xfer *xfer;
};

/* At most this many reads in flight: a lagging view must not flood a slow API server. */
#define RECON_READS_MAX 32

static void
read_free(struct gx_recon_read *rr)
{
    LIST_REMOVE(rr, link);
    rr->app->recon.n_reads--;
    gx_kube_cancel(rr->app->sync.kube, rr->xfer);
    free(rr);
}

/* The tenant @uid holds on @node in the cache, when it is still the booking @booking. */
static const struct gx_tenant *
booked(const struct gx_app *app, const char *node, const char *uid, int64_t booking)
{
    const struct gx_ledger_node *e = gx_ledger_node(app->ledger, node);

    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        if (strcmp(e->tenants[i].uid, uid) == 0) {
            return gx_ledger_booking(app->ledger, uid) == booking ? &e->tenants[i] : NULL;
        }
    }
    return NULL;
}

/* Decide again with what the read found, and write the verdict in the background. */
static void
read_settle(struct gx_recon_read *rr, const struct gx_admit_seen *seen)
{
    struct gx_app *app = rr->app;
    const struct gx_tenant *t = booked(app, rr->node, rr->uid, rr->booking);
    enum gx_admit_fix f =
        t != NULL ? gx_admit_fix(app->cfg, rr->node, t, seen, gx_wall_ms()) : GX_FIX_NONE;

    if (f == GX_FIX_RELEASE) {
        gx_info("ledger released a tenant", "node=%s uid=%s read=%s", rr->node, rr->uid,
                seen->gone       ? "gone"
                : seen->finished ? "finished"
                : seen->node[0]  ? "elsewhere"
                                 : "pending");
        gx_bg_release(app, rr->node, rr->uid, rr->booking);
    } else if (f == GX_FIX_BOUND) {
        gx_bg_write(app, GX_BG_BOUND, rr->node, rr->uid);
    }
}

static void
read_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_recon_read *rr = ctx;
    struct gx_admit_seen seen = {.node = "", .read_ms = rr->read_ms};
    struct gx_arena a;
    struct gx_pod pod;

    rr->xfer = NULL;
    gx_arena_init(&a, 0);
    if (rc == GX_OK && status == 404) {
        seen.gone = true;
        read_settle(rr, &seen);
    } else if (rc == GX_OK && status == 200 &&
               gx_kobj_decode_pod(body, len, rr->app->cfg->max_json_depth, &a, &pod, NULL) ==
                   GX_OK) {
        seen.gone = strcmp(pod.uid, rr->uid) != 0; /* the name now holds another pod */
        seen.node = pod.node_name != NULL ? pod.node_name : "";
        seen.finished = gx_pod_finished(&pod);
        read_settle(rr, &seen);
    } /* else: unknown; the next pass asks again */
    gx_arena_release(&a);
    read_free(rr);
}

/* Read tenant @t's pod (once at a time per pod, RECON_READS_MAX at most). */
static void
read_start(struct gx_app *app, const char *node, const struct gx_tenant *t)
{
    struct gx_recon_read *rr;
    const char *slash = strchr(t->pod, '/');
    char path[700], ns[256];

    if (app->recon.n_reads >= RECON_READS_MAX || slash == NULL || app->sync.kube == NULL) {
        return;
    }
    LIST_FOREACH(rr, &app->recon.reads, link)
    {
        if (strcmp(rr->uid, t->uid) == 0) {
            return;
        }
    }
    rr = calloc(1, sizeof(*rr));
    if (rr == NULL) {
        return;
    }
    rr->app = app;
    (void)snprintf(rr->uid, sizeof(rr->uid), "%s", t->uid);
    (void)snprintf(rr->node, sizeof(rr->node), "%s", node);
    rr->booking = gx_ledger_booking(app->ledger, t->uid);
    rr->read_ms = gx_wall_ms();
    (void)snprintf(ns, sizeof(ns), "%.*s", (int)(slash - t->pod), t->pod);
    (void)gx_kwrite_pod_path(path, sizeof(path), ns, slash + 1, "");
    LIST_INSERT_HEAD(&app->recon.reads, rr, link);
    app->recon.n_reads++;
    rr->xfer = gx_kube_request(app->sync.kube, "GET", path, NULL, 0, NULL, 0, read_done, rr);
    if (rr->xfer == NULL) {
        read_free(rr);
    }
}

/* What to do with tenant @t of @node, from the pod view. */
static enum gx_admit_fix
fix_of(const struct gx_app *app, const char *node, const struct gx_tenant *t, int64_t now)
{
    const struct pod_state *ps = gx_store_get(&app->recon.pods, t->uid);
    struct gx_admit_seen seen = {.node = ""};

    if (ps != NULL) {
        seen.node = ps->node;
        seen.finished = ps->finished;
    }
    return gx_admit_fix(app->cfg, node, t, ps != NULL ? &seen : NULL, now);
}

static enum gx_err
reconcile_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct gx_app *app = ctx;
    const struct gx_ledger_node *e = gx_ledger_node(l, node);
    char uids[64][GX_UID_MAX];
    enum gx_admit_fix fixes[64];
    size_t n = 0;
    int64_t now = gx_wall_ms();

    (void)why;
    *write = false;
    for (size_t i = 0; e != NULL && i < e->n_tenants && n < GX_ARRAY_LEN(uids); i++) {
        enum gx_admit_fix f = fix_of(app, node, &e->tenants[i], now);
        if (f == GX_FIX_NONE || f == GX_FIX_CONFIRM) {
            continue;
        }
        (void)snprintf(uids[n], sizeof(uids[n]), "%s", e->tenants[i].uid);
        fixes[n++] = f;
    }
    /* apply after the scan: a release moves the tenants array */
    for (size_t i = 0; i < n; i++) {
        if (fixes[i] == GX_FIX_RELEASE && gx_ledger_release(l, uids[i]) > 0) {
            gx_info("ledger released a tenant", "node=%s uid=%s", node, uids[i]);
            *write = true;
        } else if (fixes[i] == GX_FIX_BOUND && gx_ledger_mark_bound(l, uids[i]) == GX_OK) {
            *write = true;
        }
    }
    return GX_OK;
}

static void
reconcile_done(void *ctx, enum gx_err rc, const char *why)
{
    (void)ctx;
    if (rc != GX_OK) {
        gx_warn("ledger reconcile of a node failed, retrying next round", "error=\"%s\"", why);
    }
}

/* Nodes with at least one tenant to fix; pods to read first. */
struct scan {
    struct gx_app *app;
    int64_t now;
    char nodes[256][256];
    size_t n;
};

static void
scan_node(void *ctx, const struct gx_ledger_node *e)
{
    struct scan *s = ctx;
    bool listed = false;

    for (size_t i = 0; i < e->n_tenants; i++) {
        enum gx_admit_fix f = fix_of(s->app, e->node, &e->tenants[i], s->now);
        if (f == GX_FIX_CONFIRM) {
            read_start(s->app, e->node, &e->tenants[i]);
        } else if (f != GX_FIX_NONE && !listed && s->n < GX_ARRAY_LEN(s->nodes)) {
            (void)snprintf(s->nodes[s->n++], sizeof(s->nodes[0]), "%s", e->node);
            listed = true;
        }
    }
}

static void
reconcile_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;
    struct timeval tv = {app->cfg->ledger_reconcile_s, 0};
    struct scan *s = calloc(1, sizeof(*s));

    (void)fd;
    (void)what;
    if (s != NULL && reconciles(app) && gx_store_synced(&app->recon.pods) &&
        gx_leases_synced(app->leases)) {
        s->app = app;
        s->now = gx_wall_ms();
        gx_ledger_each(app->ledger, scan_node, s);
        s->n +=
            gx_leases_take_suspects(app->leases, s->nodes + s->n, GX_ARRAY_LEN(s->nodes) - s->n);
        for (size_t i = 0; i < s->n; i++) {
            (void)gx_leases_update(app->leases, s->nodes[i],
                                   gx_mono_ms() + (int64_t)app->cfg->ledger_reconcile_s * 1000,
                                   reconcile_mutate, reconcile_done, app);
        }
    }
    free(s);
    (void)evtimer_add(app->recon.timer, &tv);
}

enum gx_err
gx_recon_start(struct gx_app *app)
{
    struct timeval tv = {app->cfg->ledger_reconcile_s, 0};

    gx_store_init(&app->recon.pods, pod_state_free);
    LIST_INIT(&app->recon.reads);
    app->recon.timer = evtimer_new(app->base, reconcile_cb, app);
    if (app->recon.timer == NULL) {
        return GX_ENOMEM;
    }
    (void)evtimer_add(app->recon.timer, &tv);
    return GX_OK;
}

void
gx_recon_retime(struct gx_app *app)
{
    struct timeval tv = {app->cfg->ledger_reconcile_s, 0};

    /* a pass waiting out the old period would keep it for up to an hour */
    if (app->recon.timer != NULL) {
        (void)evtimer_add(app->recon.timer, &tv);
    }
}

void
gx_recon_stop(struct gx_app *app)
{
    if (app->recon.timer != NULL) {
        event_free(app->recon.timer);
    }
    app->recon.timer = NULL;
    for (struct gx_recon_read *rr = LIST_FIRST(&app->recon.reads), *next; rr != NULL; rr = next) {
        next = LIST_NEXT(rr, link);
        read_free(rr);
    }
    gx_store_release(&app->recon.pods);
}
