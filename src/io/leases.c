/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases.c - the Lease watch and the module's life. The in-memory ledger is
 * only a cache of the Leases (leases_cache.c): it takes the Lease's tenants
 * before every mutate and what was written after every write (the rounds,
 * leases_cas.c), and every Lease the watch delivers (kube.c's stream: list,
 * then watch, 410 relist, reconnect with backoff), so one replica's filter
 * sees another's bookings as soon as the API server has them. A relist
 * every ledger.sync_interval_s is the resync. Lease JSON is decoded by kobj.
 */
#include "leases_int.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "kwrite.h"
#include "log.h"
#include "strmap.h"

/* ---- the watch ---- */

/* Make the cache hold what @lease says about its node (unless busy or older). */
static void
apply_lease(struct gx_leases *ls, const struct gx_lease *lease, bool deleted)
{
    struct gx_why why = {{0}};
    struct gx_tenant *t = NULL;
    const char *node = gx_kv_get(lease->annotations, lease->n_annotations, GX_LEASE_NODE);
    const struct gx_ledger_node *cached;
    size_t n = 0;
    char rv[64];

    if (node == NULL || gx_leases_busy(ls, node, lease->resource_version)) {
        return;
    }
    cached = gx_ledger_node(ls->ledger, node);
    if (cached != NULL && gx_rv_older(lease->resource_version, cached->resource_version)) {
        return; /* a watch event behind our own write's answer: the cache is newer */
    }
    if (deleted) {
        gx_leases_cache_set(ls, node, NULL, 0, NULL);
        return;
    }
    if (gx_leases_decode(lease, rv, sizeof(rv), &t, &n, NULL, &why) != GX_OK) {
        char q[300];
        gx_warn("ledger lease does not decode, ignoring it", "lease=%s error=%s", lease->name,
                gx_log_quote(q, sizeof(q), why.text));
        return;
    }
    gx_leases_cache_set(ls, node, t, n, rv);
    free(t);
}

struct stale_ctx {
    struct gx_strmap listed; /* node -> the list's Lease */
    const char *list_rv;     /* the list is as of this version */
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
    /*
     * A Lease written after the list was taken is not in it: under load the
     * list answered half a second late and dropped the bookings of every
     * node first booked meanwhile, and filter admitted pods onto those
     * cards that bind then refused (e2e_burst_faults, quiet: 10-30 of 600).
     */
    if (gx_rv_older(s->list_rv, n->resource_version)) {
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
    struct stale_ctx s = {.list_rv = gx_kube_watch_rv(ls->watch)};
    bool complete = true;

    gx_strmap_init(&s.listed);
    for (size_t i = 0; i < n; i++) {
        const char *node = gx_kv_get(leases[i].annotations, leases[i].n_annotations, GX_LEASE_NODE);
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
        if (!gx_leases_busy(ls, s.stale[i], NULL)) {
            gx_leases_cache_set(ls, s.stale[i], NULL, 0, NULL);
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
    LIST_INIT(&ls->queues);
    ls->base = base;
    ls->kube = kube;
    ls->cfg = cfg;
    ls->sync_s = cfg->ledger_sync_s;
    ls->ledger = ledger;
    ls->st = st;
    ls->rng = (uint64_t)gx_mono_ms() * 2654435761u | 1;
    gx_kwrite_lease_path(path, sizeof(path), cfg->kube_namespace, "");
    (void)snprintf(sel, sizeof(sel), "%s=true", GX_LEASE_LABEL);
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
    gx_leases_cancel_all(ls);
    gx_leases_holds_free(ls);
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
