/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sync.c - sources to snapshot (see sync.h).
 */
#include "sync.h"

#include <event2/event.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "dra.h"
#include "httpc.h"
#include "log.h"
#include "pdb.h"
#include "podsum.h"
#include "promsrc.h"
#include "requeue.h"
#include "score.h"

#define FILE_CAP (256u << 20)
#define PAGE_WINDOW ((size_t)2 << 20)
/* Shortest interval between two malloc_trim calls after snapshot rebuilds. */
#define TRIM_EVERY_MS 10000

static void
upstream_error(struct gx_app *app, enum gx_upstream u, enum gx_upkind k)
{
    app->metrics.up[u].errors[k]++;
}

/* Load the NodeList file into a fresh arena; old nodes stay on error. */
static enum gx_err
load_nodes_file(struct gx_app *app, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    struct gx_sync *s = &app->sync;
    struct gx_arena a;
    struct gx_node_info *nodes = NULL;
    size_t n = 0, len = 0;
    const char *rv = NULL;
    char *text = NULL;
    enum gx_err rc;

    app->metrics.up[GX_UP_FILES].requests++;
    rc = gx_read_file(cfg->nodes_file, FILE_CAP, &text, &len);
    if (rc != GX_OK) {
        gx_why_set(why, "%s: %s", cfg->nodes_file, gx_strerror(rc));
        upstream_error(app, GX_UP_FILES, GX_UPERR_OTHER);
        return rc;
    }
    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_node_list(text, len, cfg->max_json_depth, &a, &nodes, &n, &rv, why);
    free(text);
    if (rc != GX_OK) {
        gx_why_prefix(why, "%s", cfg->nodes_file);
        gx_arena_release(&a);
        upstream_error(app, GX_UP_FILES, GX_UPERR_PARSE);
        return rc;
    }
    gx_arena_release(&s->nodes_arena);
    s->nodes_arena = a;
    s->nodes = nodes;
    s->n_nodes = n;
    return GX_OK;
}

static enum gx_err
feed_page(void *pg, const char *buf, size_t len, bool last, size_t *used, struct gx_why *why)
{
    return gx_page_feed(pg, buf, len, last, used, why);
}

/* Read a dcgm-exporter page file in 2 MiB windows: a page of any size costs its samples only. */
static enum gx_err
load_page_file(struct gx_mstore *ms, const struct gx_config *cfg, int source, const char *path,
               struct gx_why *why)
{
    struct gx_page *pg = gx_page_new(cfg, gx_wall_ms());
    enum gx_err rc = pg != NULL ? GX_OK : GX_ENOMEM;

    if (rc == GX_OK) {
        rc = gx_read_chunks(path, FILE_CAP, PAGE_WINDOW, feed_page, pg, why);
    }
    if (rc == GX_OK) {
        rc = gx_page_apply(pg, ms, source, why);
    }
    gx_page_free(pg);
    return rc;
}

static enum gx_err
load_metrics_file(struct gx_app *app, size_t i, struct gx_why *why)
{
    const char *path = app->cfg->metrics_files[i];
    enum gx_err rc;

    app->metrics.up[GX_UP_FILES].requests++;
    rc = load_page_file(app->sync.mstore, app->cfg, (int)i, path, why);
    if (rc != GX_OK) {
        gx_why_prefix(why, "%s", path);
        upstream_error(app, GX_UP_FILES, rc == GX_EPARSE ? GX_UPERR_PARSE : GX_UPERR_OTHER);
    }
    return rc;
}

/*
 * Give free heap pages back to the OS after a rebuild, at most once per
 * TRIM_EVERY_MS: reading the sources frees large buffers (a 5,000-node
 * dcgm-exporter page is 186 MiB) that glibc would otherwise keep resident.
 * Process-wide like the heap itself, hence a file-static clock.
 */
static void
trim_heap(int64_t now_ms)
{
#ifdef __GLIBC__
    static int64_t last_ms;

    if (last_ms != 0 && now_ms - last_ms < TRIM_EVERY_MS && now_ms >= last_ms) {
        return;
    }
    last_ms = now_ms;
    (void)malloc_trim(0);
#else
    (void)now_ms;
#endif
}

/* gx_snapshot_claim_fn over the DRA store. */
static const char *
claim_of(void *ctx, const char *node, const char *uuid)
{
    (void)node; /* UUIDs are unique cluster-wide */
    return gx_dra_claim_of(ctx, uuid);
}

/* Busy cards of @old that @snap shows cooled, for the pods waiting on them (requeue.h). */
static void
count_cooled(struct gx_app *app, const struct gx_snapshot *old, const struct gx_snapshot *snap)
{
    struct gx_decide_ctx before = {.cfg = app->cfg, .snap = old};
    struct gx_decide_ctx after = {.cfg = app->cfg, .snap = snap, .now_ms = snap->built_ms};

    if (old != NULL && gx_requeue_waiting(app)) {
        before.now_ms = old->built_ms;
        gx_requeue_cooled(app, gx_score_cards_cooled(&before, &after));
    }
}

enum gx_err
gx_sync_rebuild(struct gx_app *app)
{
    struct gx_sync *s = &app->sync;
    struct gx_snapshot *snap = NULL;
    int64_t now = gx_wall_ms();
    const struct gx_node_info *nodes = s->nodes;
    size_t n_nodes = s->n_nodes;
    bool synced = s->kube != NULL && gx_kube_nodes_synced(s->kube);
    enum gx_err rc;

    if (s->kube != NULL) {
        nodes = gx_kube_nodes(s->kube, &n_nodes);
    }
    rc = gx_snapshot_build(app->cfg, nodes, n_nodes, s->mstore, now, &snap);
    if (rc == GX_OK && s->dra != NULL &&
        (rc = gx_snapshot_mark_claimed(snap, claim_of, s->dra)) != GX_OK) {
        gx_snapshot_free(snap);
        snap = NULL;
    }
    if (rc != GX_OK || snap == NULL) {
        gx_error("snapshot build failed, keeping the previous one", "error=\"%s\"",
                 gx_strerror(rc));
        return rc != GX_OK ? rc : GX_ENOMEM;
    }
    snap->generation = ++s->generation;
    snap->nodes_ms = app->metrics.up[s->kube ? GX_UP_KUBERNETES : GX_UP_FILES].last_success_ms;
    snap->metrics_ms = app->metrics.up[s->prom ? GX_UP_PROMETHEUS : GX_UP_FILES].last_success_ms;
    count_cooled(app, s->snap, snap);
    gx_snapshot_free(s->snap);
    s->snap = snap;
    s->snap_has_api_nodes = synced;
    trim_heap(now);
    return GX_OK;
}

/*
 * Re-read the file sources: the node list when it changed (or @force), every
 * metrics page always, since reading a page is the observation that dates its
 * samples. A file that fails to load keeps its previous data; returns the
 * first error. The snapshot is rebuilt either way.
 */
static enum gx_err
refresh_files(struct gx_app *app, bool force, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    enum gx_err first = GX_OK, rc;

    if (cfg->nodes_file != NULL && !cfg->kube_enabled &&
        (gx_stamp_changed(cfg->nodes_file, &app->sync.nodes_stamp) || force)) {
        first = load_nodes_file(app, why);
    }
    for (size_t i = 0; i < cfg->n_metrics_files; i++) {
        rc = load_metrics_file(app, i, first == GX_OK ? why : NULL);
        if (rc != GX_OK && first == GX_OK) {
            first = rc;
        }
    }
    if (first == GX_OK) {
        app->metrics.up[GX_UP_FILES].syncs++;
        app->metrics.up[GX_UP_FILES].last_success_ms = gx_wall_ms();
    }
    rc = gx_sync_rebuild(app);
    return first != GX_OK ? first : rc;
}

enum gx_err
gx_sync_init(struct gx_app *app, struct gx_why *why)
{
    gx_arena_init(&app->sync.nodes_arena, 0);
    app->sync.mstore = gx_mstore_new();
    if (app->sync.mstore == NULL) {
        return GX_ENOMEM;
    }
    memset(&app->sync.nodes_stamp, 0, sizeof(app->sync.nodes_stamp));
    return refresh_files(app, true, why);
}

static void
arm(struct event *ev, int seconds)
{
    struct timeval tv = {seconds, 0};

    (void)evtimer_add(ev, &tv);
}

static void
refresh_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;
    struct gx_why why = {{0}};

    (void)fd;
    (void)what;
    if (refresh_files(app, false, &why) != GX_OK) {
        char q[300];
        gx_warn("source refresh failed, keeping previous data", "error=%s",
                gx_log_quote(q, sizeof(q), why.text));
    }
    arm(app->sync.refresh_timer, app->cfg->files_refresh_s);
}

static void
rebuild_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;

    (void)fd;
    (void)what;
    app->sync.rebuild_pending = false;
    (void)gx_sync_rebuild(app);
}

void
gx_sync_schedule_rebuild(void *ctx)
{
    struct gx_app *app = ctx;
    struct timeval tv = {0, 50000};

    if (app->sync.rebuild_pending || app->sync.rebuild_timer == NULL) {
        return;
    }
    app->sync.rebuild_pending = true;
    (void)evtimer_add(app->sync.rebuild_timer, &tv);
}

/* ---- the PodDisruptionBudget watch (policy/v1, all namespaces) ---- */

static void
pdbs_listed(void *ctx, const void *items, size_t n)
{
    struct gx_app *app = ctx;

    if (gx_pdbs_set(app->sync.pdbs, items, n) != GX_OK) {
        gx_warn("out of memory storing PodDisruptionBudgets, keeping the previous ones", NULL);
    } else if (!app->sync.pdbs_listed_once) {
        app->sync.pdbs_listed_once = true;
        gx_info("poddisruptionbudgets synced", "pdbs=%zu", n);
    }
}

static void
pdb_event(void *ctx, const struct gx_watch_event *ev)
{
    struct gx_app *app = ctx;

    if (gx_pdbs_put(app->sync.pdbs, &ev->obj.pdb, ev->type == GX_WATCH_DELETED) != GX_OK) {
        gx_warn("out of memory storing a PodDisruptionBudget", NULL);
    }
}

static void
pdbs_absent(void *ctx, long status)
{
    struct gx_app *app = ctx;

    if (status == 403) {
        gx_warn("not allowed to read PodDisruptionBudgets, preemption counts no PDB violation "
                "(grant list/watch poddisruptionbudgets, see manifests/extender/02-rbac.yaml)",
                NULL);
    } else {
        gx_info("the API server has no policy/v1 PodDisruptionBudgets", NULL);
    }
    gx_pdbs_absent(app->sync.pdbs);
}

/* Start the PDB watch; the preempt verb reads the store once it is synced. */
static enum gx_err
watch_pdbs(struct gx_app *app)
{
    static const struct gx_kube_watch_cbs cbs = {pdbs_listed, pdb_event, pdbs_absent};
    struct gx_sync *s = &app->sync;

    if ((s->pdbs = gx_pdbs_new()) == NULL) {
        return GX_ENOMEM;
    }
    s->w_pdbs = gx_kube_watch_new(s->kube, GX_KIND_PDB, "poddisruptionbudgets",
                                  "/apis/policy/v1/poddisruptionbudgets", NULL, &cbs, app);
    return s->w_pdbs != NULL ? GX_OK : GX_ENOMEM;
}

/* gx_podsum_cbs.is_tenant: a ledger tenant's requests are the ledger's already. */
static bool
is_tenant(void *ctx, const char *uid)
{
    const struct gx_app *app = ctx;

    return gx_ledger_find_pod(app->ledger, uid) != NULL;
}

/* gx_podsum_cbs.changed: decisions read the ledger, so the sums go there now. */
static void
podsum_changed(void *ctx)
{
    struct gx_app *app = ctx;

    if (gx_podsum_apply(app->sync.podsum, app->ledger) != GX_OK) {
        gx_warn("out of memory recording other pods' requests in the ledger, retrying on the next "
                "change",
                NULL);
    }
}

/* The watch of every bound pod (kubernetes.watch_all_pods). GX_ENOMEM. */
static enum gx_err
start_podsum(struct gx_app *app)
{
    static const struct gx_podsum_cbs cbs = {is_tenant, podsum_changed};
    struct gx_sync *s = &app->sync;

    s->podsum = gx_podsum_new(app->cfg->managed_label, &cbs, app);
    return s->podsum != NULL ? gx_podsum_watch(s->podsum, s->kube) : GX_ENOMEM;
}

enum gx_err
gx_sync_start(struct gx_app *app, const struct gx_kube_cbs *cbs, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    struct gx_sync *s = &app->sync;

    s->refresh_timer = evtimer_new(app->base, refresh_cb, app);
    if (s->refresh_timer == NULL) {
        return GX_ENOMEM;
    }
    arm(s->refresh_timer, cfg->files_refresh_s);
    if (cfg->prom_url == NULL && !cfg->kube_enabled) {
        return GX_OK;
    }
    s->httpc = gx_httpc_new(app->base);
    s->rebuild_timer = evtimer_new(app->base, rebuild_cb, app);
    if (s->httpc == NULL || s->rebuild_timer == NULL) {
        return GX_ENOMEM;
    }
    if (cfg->prom_insecure) {
        gx_warn("TLS verification of Prometheus is OFF (prometheus.insecure_skip_verify)", NULL);
    }
    if (cfg->prom_url != NULL) {
        s->prom = gx_promsrc_new(app->base, s->httpc, cfg, s->mstore,
                                 &app->metrics.up[GX_UP_PROMETHEUS], gx_sync_schedule_rebuild, app);
        if (s->prom == NULL) {
            return GX_ENOMEM;
        }
    }
    if (cfg->kube_enabled) {
        s->kube = gx_kube_new(app->base, s->httpc, cfg, &app->metrics.up[GX_UP_KUBERNETES], cbs,
                              app, why);
        if (s->kube == NULL) {
            return GX_EINVAL;
        }
        if (cfg->kube_watch_dra && ((s->dra = gx_dra_new(gx_sync_schedule_rebuild, app)) == NULL ||
                                    gx_dra_watch(s->dra, s->kube) != GX_OK)) {
            return GX_ENOMEM;
        }
        if (watch_pdbs(app) != GX_OK) {
            return GX_ENOMEM;
        }
        if (cfg->kube_watch_all_pods && start_podsum(app) != GX_OK) {
            return GX_ENOMEM;
        }
    }
    return GX_OK;
}

void
gx_sync_set_config(struct gx_app *app)
{
    if (app->sync.prom != NULL) {
        gx_promsrc_set_config(app->sync.prom, app->cfg);
    }
    if (app->sync.kube != NULL) {
        gx_kube_set_config(app->sync.kube, app->cfg);
    }
    if (app->sync.podsum != NULL &&
        gx_podsum_set_label(app->sync.podsum, app->cfg->managed_label) != GX_OK) {
        gx_warn("out of memory taking the new managed label for the all-pods watch", NULL);
    }
}

void
gx_sync_decide_ctx(const struct gx_app *app, struct gx_decide_ctx *ctx)
{
    ctx->cfg = app->cfg;
    ctx->snap = app->sync.snap;
    ctx->ledger = app->ledger;
    ctx->now_ms = gx_wall_ms();
    ctx->fgd = &app->fgd;
    ctx->gaps = app->gaps;
}

void
gx_sync_free(struct gx_app *app)
{
    struct gx_sync *s = &app->sync;

    if (s->refresh_timer != NULL) {
        event_free(s->refresh_timer);
    }
    gx_promsrc_free(s->prom);
    gx_dra_free(s->dra); /* its watches before the kube they run on */
    gx_kube_watch_free(s->w_pdbs);
    gx_pdbs_free(s->pdbs);
    gx_podsum_free(s->podsum);
    gx_kube_free(s->kube);
    gx_httpc_free(s->httpc);
    if (s->rebuild_timer != NULL) {
        event_free(s->rebuild_timer);
    }
    gx_snapshot_free(s->snap);
    gx_mstore_free(s->mstore);
    gx_arena_release(&s->nodes_arena);
    memset(s, 0, sizeof(*s));
}
