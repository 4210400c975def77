/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app.c - the running extender. Everything here runs on the event-loop
 * thread, so state needs no locks: a snapshot is replaced whole between two
 * requests, and a config likewise.
 */
#include "gx/app.h"
#include "app_int.h"

#include <event2/event.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gx/arena.h"
#include "gx/dcgm.h"
#include "gx/explain.h"
#include "gx/extender.h"
#include "gx/http.h"
#include "gx/httpc.h"
#include "gx/kube.h"
#include "gx/kobj.h"
#include "gx/ledger.h"
#include "gx/log.h"
#include "gx/metrics.h"
#include "gx/podreq.h"
#include "gx/promsrc.h"
#include "gx/score.h"
#include "gx/snapshot.h"
#include "gx/vcache.h"

/* Shortest interval between two malloc_trim calls after snapshot rebuilds. */
#define TRIM_EVERY_MS 10000

static bool
stamp_changed(const char *path, struct file_stamp *st)
{
    struct stat s;

    if (stat(path, &s) != 0) {
        return false;
    }
    if (s.st_mtime == st->mtime && s.st_size == st->size && s.st_ino == st->ino) {
        return false;
    }
    st->mtime = s.st_mtime;
    st->size = s.st_size;
    st->ino = s.st_ino;
    return true;
}

static void
upstream_error(struct gx_app *app, enum gx_upstream u, enum gx_upkind k)
{
    app->metrics.up_errors[u][k]++;
}

/* Load the NodeList file into a fresh arena; old nodes stay on error. */
static enum gx_err
load_nodes_file(struct gx_app *app, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    struct gx_arena a;
    struct gx_node_info *nodes = NULL;
    size_t n = 0, len = 0;
    const char *rv = NULL;
    char *text = NULL;
    enum gx_err rc;

    app->metrics.up_requests[GX_UP_FILES]++;
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
    gx_arena_release(&app->nodes_arena);
    app->nodes_arena = a;
    app->nodes = nodes;
    app->n_nodes = n;
    return GX_OK;
}

static enum gx_err
load_metrics_file(struct gx_app *app, size_t i, struct gx_why *why)
{
    const char *path = app->cfg->metrics_files[i];
    enum gx_err rc;

    app->metrics.up_requests[GX_UP_FILES]++;
    rc = gx_mstore_load_file(app->mstore, app->cfg, (int)i, path, FILE_CAP, gx_wall_ms(), why);
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
app_trim_heap(int64_t now_ms)
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

/* Rebuild the snapshot from the current sources and swap it in. */
enum gx_err
app_rebuild_snapshot(struct gx_app *app)
{
    struct gx_snapshot *snap = NULL;
    int64_t now = gx_wall_ms();
    const struct gx_node_info *nodes = app->nodes;
    size_t n_nodes = app->n_nodes;
    bool synced = app->kube != NULL && gx_kube_nodes_synced(app->kube);
    enum gx_err rc;

    if (app->kube != NULL) {
        nodes = gx_kube_nodes(app->kube, &n_nodes);
    }
    rc = gx_snapshot_build(app->cfg, nodes, n_nodes, app->mstore, now, &snap);
    if (rc != GX_OK) {
        gx_error("snapshot build failed, keeping the previous one", "error=\"%s\"",
                 gx_strerror(rc));
        return rc;
    }
    snap->generation = ++app->generation;
    snap->nodes_ms = app->metrics.up_last_success_ms[app->kube ? GX_UP_KUBERNETES : GX_UP_FILES];
    snap->metrics_ms = app->metrics.up_last_success_ms[app->prom ? GX_UP_PROMETHEUS : GX_UP_FILES];
    gx_snapshot_free(app->snap);
    app->snap = snap;
    app->snap_has_api_nodes = synced;
    app_trim_heap(now);
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
        (stamp_changed(cfg->nodes_file, &app->nodes_stamp) || force)) {
        first = load_nodes_file(app, why);
    }
    for (size_t i = 0; i < cfg->n_metrics_files; i++) {
        rc = load_metrics_file(app, i, first == GX_OK ? why : NULL);
        if (rc != GX_OK && first == GX_OK) {
            first = rc;
        }
    }
    if (first == GX_OK) {
        app->metrics.up_syncs[GX_UP_FILES]++;
        app->metrics.up_last_success_ms[GX_UP_FILES] = gx_wall_ms();
    }
    rc = app_rebuild_snapshot(app);
    return first != GX_OK ? first : rc;
}

static enum gx_err
reset_sources(struct gx_app *app, struct gx_why *why)
{
    gx_mstore_free(app->mstore);
    app->mstore = gx_mstore_new();
    if (app->mstore == NULL) {
        return GX_ENOMEM;
    }
    memset(&app->nodes_stamp, 0, sizeof(app->nodes_stamp));
    return refresh_files(app, true, why);
}

/* ---- request handling ---- */

void
app_respond_json(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb, int status,
                 struct gx_buf *body)
{
    double secs = (double)(gx_mono_ms() - gx_http_start_ms(r)) / 1000.0;

    gx_metrics_request(&app->metrics, verb, status, secs);
    gx_http_respond(r, status, "application/json", body);
}

void
app_respond_error(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb, int status,
                  const char *msg)
{
    struct gx_buf b;
    char q[300];

    gx_buf_init(&b, 4096);
    gx_warn("request rejected", "req=%llu status=%d method=%s path=%s peer=%s error=%s",
            (unsigned long long)gx_http_id(r), status, gx_http_method(r), gx_http_path(r),
            gx_http_peer(r), gx_log_quote(q, sizeof(q), msg));
    if (gx_ext_encode_http_error(&b, status, msg) != GX_OK) {
        gx_buf_reset(&b);
    }
    app_respond_json(app, r, verb, status, &b);
}

static struct pod_seen *
pod_slot(struct gx_app *app, const char *uid)
{
    return &app->pods[gx_hash(uid, strlen(uid)) % POD_CACHE_SLOTS];
}

void
app_remember_pod(struct gx_app *app, const struct gx_pod *pod, const struct gx_podreq *req)
{
    struct pod_seen *s;

    if (pod->uid[0] == '\0' || strlen(pod->uid) >= GX_UID_MAX) {
        return;
    }
    s = pod_slot(app, pod->uid);
    (void)snprintf(s->uid, sizeof(s->uid), "%s", pod->uid);
    (void)snprintf(s->pod, sizeof(s->pod), "%s/%s", pod->namespace, pod->name);
    s->req = *req;
    s->seen_ms = gx_mono_ms();
}

const struct pod_seen *
app_recall_pod(struct gx_app *app, const char *uid)
{
    const struct pod_seen *s = pod_slot(app, uid);

    if (strcmp(s->uid, uid) != 0 || gx_mono_ms() - s->seen_ms > (int64_t)POD_CACHE_TTL_MS) {
        return NULL;
    }
    return s;
}

void
app_decide_ctx(struct gx_app *app, struct gx_decide_ctx *ctx)
{
    ctx->cfg = app->cfg;
    ctx->snap = app->snap;
    ctx->ledger = app->ledger;
    ctx->now_ms = gx_wall_ms();
}

/*
 * The app's verdict cache, created on first use; NULL when that allocation
 * fails, which gx_vcache_decide treats as "compute every verdict".
 */
static struct gx_vcache *
app_vcache(struct gx_app *app)
{
    if (app->vcache == NULL) {
        app->vcache = gx_vcache_new();
    }
    return app->vcache;
}

/*
 * Decode ExtenderArgs and classify the pod. On a request the extender
 * cannot honour (bad annotations) *bad is set: every node is then rejected
 * with a reason the user sees, rather than failing the call.
 */
static bool
decode_scheduling_call(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb,
                       struct gx_ext_args *args, struct gx_podreq *req, bool *bad)
{
    struct gx_why why = {{0}};
    size_t len;
    const char *body = gx_http_body(r, &len);
    enum gx_err rc;

    rc = gx_ext_decode_args(body, len, app->cfg->max_json_depth, args, &why);
    if (rc != GX_OK) {
        app_respond_error(app, r, verb, 400, why.text);
        return false;
    }
    *bad = gx_podreq_parse(app->cfg, &args->pod, req, &why) != GX_OK;
    if (*bad) {
        char q[300];
        gx_warn("invalid GPU request, rejecting every node", "req=%llu pod=%s/%s error=%s",
                (unsigned long long)gx_http_id(r), args->pod.namespace, args->pod.name,
                gx_log_quote(q, sizeof(q), why.text));
    }
    return true;
}

static void
log_decision(struct gx_http_req *r, const char *verb, const struct gx_pod *pod,
             const struct gx_ext_node *n, const struct gx_vshort *v)
{
    if (!gx_log_enabled(GX_LOG_DEBUG)) {
        return;
    }
    gx_debug("decision", "req=%llu verb=%s pod=%s/%s node=%s keep=%d reason=\"%s\" score=%d",
             (unsigned long long)gx_http_id(r), verb, pod->namespace, pod->name, n->name, v->keep,
             gx_reason_text(v->reason), v->score);
}

static void
handle_filter(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_ext_args args;
    struct gx_podreq req;
    struct gx_ext_filter_verdict *fv = NULL;
    struct gx_decide_ctx ctx;
    struct gx_vcache *vc;
    struct gx_buf out;
    bool bad = false;

    if (!decode_scheduling_call(app, r, GX_VERB_FILTER, &args, &req, &bad)) {
        return;
    }
    gx_buf_init(&out, (size_t)1 << 30);
    fv = calloc(args.n_nodes ? args.n_nodes : 1, sizeof(*fv));
    if (fv == NULL) {
        gx_ext_args_release(&args);
        app_respond_error(app, r, GX_VERB_FILTER, 500, "out of memory");
        return;
    }
    if (!bad) {
        app_remember_pod(app, &args.pod, &req);
    }
    app_decide_ctx(app, &ctx);
    vc = app_vcache(app);
    for (size_t i = 0; i < args.n_nodes; i++) {
        struct gx_vshort v;
        const struct gx_ext_node *n = &args.nodes[i];

        if (bad) {
            memset(&v, 0, sizeof(v));
            v.reason = GX_REASON_BAD_REQUEST;
        } else {
            gx_vcache_decide(vc, &ctx, &req, gx_snapshot_find(app->snap, n->name, n->name_len), &v);
        }
        fv[i].keep = v.keep;
        fv[i].reason = gx_reason_text(v.reason);
        fv[i].unresolvable = !v.keep && gx_reason_unresolvable(v.reason);
        if (v.keep) {
            app->metrics.nodes_kept++;
        } else {
            app->metrics.rejections[v.reason]++;
        }
        log_decision(r, "filter", &args.pod, n, &v);
    }
    {
        size_t len;
        const char *body = gx_http_body(r, &len);
        if (gx_ext_encode_filter(&out, body, &args, fv) != GX_OK) {
            gx_buf_release(&out);
            free(fv);
            gx_ext_args_release(&args);
            app_respond_error(app, r, GX_VERB_FILTER, 500, "cannot encode the filter result");
            return;
        }
    }
    free(fv);
    gx_ext_args_release(&args);
    app_respond_json(app, r, GX_VERB_FILTER, 200, &out);
}

static void
handle_prioritize(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_ext_args args;
    struct gx_podreq req;
    struct gx_decide_ctx ctx;
    struct gx_vcache *vc;
    struct gx_buf out;
    int *scores;
    bool bad = false;

    if (!decode_scheduling_call(app, r, GX_VERB_PRIORITIZE, &args, &req, &bad)) {
        return;
    }
    scores = calloc(args.n_nodes ? args.n_nodes : 1, sizeof(*scores));
    if (scores == NULL) {
        gx_ext_args_release(&args);
        app_respond_error(app, r, GX_VERB_PRIORITIZE, 500, "out of memory");
        return;
    }
    app_decide_ctx(app, &ctx);
    vc = app_vcache(app);
    for (size_t i = 0; i < args.n_nodes && !bad; i++) {
        struct gx_vshort v;
        const struct gx_ext_node *n = &args.nodes[i];

        gx_vcache_decide(vc, &ctx, &req, gx_snapshot_find(app->snap, n->name, n->name_len), &v);
        scores[i] = v.keep ? v.score : 0;
        log_decision(r, "prioritize", &args.pod, n, &v);
    }
    gx_buf_init(&out, (size_t)64 << 20);
    if (gx_ext_encode_prioritize(&out, &args, scores) != GX_OK) {
        gx_buf_release(&out);
        free(scores);
        gx_ext_args_release(&args);
        app_respond_error(app, r, GX_VERB_PRIORITIZE, 500, "cannot encode the priority list");
        return;
    }
    free(scores);
    gx_ext_args_release(&args);
    app_respond_json(app, r, GX_VERB_PRIORITIZE, 200, &out);
}

/* Ready once every configured source has synced: nodes, managed pods and the ledger. */
static bool
app_ready(const struct gx_app *app)
{
    if (app->snap == NULL || app->draining) {
        return false;
    }
    if (app->kube == NULL) {
        return true;
    }
    /* The snapshot itself must hold the API server's nodes, not just the node store. */
    return app->snap_has_api_nodes && app->pods_synced && app->leases != NULL &&
           gx_leases_synced(app->leases);
}

static void
handle_text(struct gx_app *app, struct gx_http_req *r, int status, const char *ctype,
            const char *text)
{
    struct gx_buf b;

    gx_buf_init(&b, 1 << 20);
    if (gx_buf_adds(&b, text) != GX_OK) {
        gx_buf_reset(&b);
    }
    app_respond_json(app, r, GX_VERB_OTHER, status, &b);
    (void)ctype;
}

static void
handle_version(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_buf b;

    gx_buf_init(&b, 4096);
    if (gx_buf_addf(&b, "{\"version\":\"%s\",\"config_hash\":\"%016llx\",\"config_path\":",
                    GX_VERSION, (unsigned long long)app->cfg->hash) != GX_OK ||
        gx_buf_add_json_str(&b, app->config_path, strlen(app->config_path)) != GX_OK ||
        gx_buf_addf(&b, ",\"snapshot_generation\":%llu}", (unsigned long long)app->generation) !=
            GX_OK) {
        gx_buf_reset(&b);
    }
    app_respond_json(app, r, GX_VERB_OTHER, 200, &b);
}

static void
snapshot_counts(const struct gx_snapshot *s, struct gx_metrics_gauges *g,
                const struct gx_config *cfg)
{
    for (size_t i = 0; s != NULL && i < s->n_nodes; i++) {
        const struct gx_node *n = &s->nodes[i];
        g->snapshot_nodes++;
        if (n->n_cards == 0) {
            continue;
        }
        g->snapshot_gpu_nodes++;
        g->snapshot_cards += (int64_t)n->n_cards;
        g->ledger_slots_total +=
            (int64_t)n->n_cards * gx_config_card_slots(cfg, n->product, n->replicas);
    }
}

static void
handle_metrics(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_metrics_gauges g;
    struct gx_buf b;
    double secs = (double)(gx_mono_ms() - gx_http_start_ms(r)) / 1000.0;

    memset(&g, 0, sizeof(g));
    g.ready = app_ready(app);
    g.now_ms = gx_wall_ms();
    g.inflight = (int64_t)gx_http_inflight(app->http);
    snapshot_counts(app->snap, &g, app->cfg);
    gx_ledger_totals(app->ledger, &g.ledger_slots_used, &g.ledger_tenants);
    gx_metrics_request(&app->metrics, GX_VERB_OTHER, 200, secs);
    gx_buf_init(&b, (size_t)16 << 20);
    if (gx_metrics_render(&app->metrics, &g, &b) != GX_OK) {
        gx_buf_reset(&b);
    }
    gx_http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
}

static void
handle_explain(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_why why = {{0}};
    struct gx_buf out;
    size_t len;
    const char *body = gx_http_body(r, &len);
    const char *fmt = gx_http_query(r, "format");
    bool json = fmt == NULL || strcmp(fmt, "text") != 0;

    gx_buf_init(&out, (size_t)64 << 20);
    if (gx_app_explain(app, body, len, json, &out, &why) != GX_OK) {
        gx_buf_release(&out);
        app_respond_error(app, r, GX_VERB_OTHER, 400, why.text);
        return;
    }
    if (json) {
        app_respond_json(app, r, GX_VERB_OTHER, 200, &out);
        return;
    }
    gx_metrics_request(&app->metrics, GX_VERB_OTHER, 200,
                       (double)(gx_mono_ms() - gx_http_start_ms(r)) / 1000.0);
    gx_http_respond(r, 200, "text/plain; charset=utf-8", &out);
}

/* Routes: verbs under the prefix, operational endpoints at the root. */
static void
handle(void *ctx, struct gx_http_req *r)
{
    struct gx_app *app = ctx;
    const char *path = gx_http_path(r), *method = gx_http_method(r);
    const char *prefix = app->cfg->url_prefix;
    size_t plen = strlen(prefix);
    bool post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
    const char *verb =
        strncmp(path, prefix, plen) == 0 && path[plen] == '/' ? path + plen + 1 : NULL;
    enum gx_verb v = GX_VERB_OTHER;

    if (verb != NULL) {
        v = strcmp(verb, "filter") == 0       ? GX_VERB_FILTER
            : strcmp(verb, "prioritize") == 0 ? GX_VERB_PRIORITIZE
            : strcmp(verb, "bind") == 0       ? GX_VERB_BIND
                                              : GX_VERB_OTHER;
    }
    if (v != GX_VERB_OTHER) {
        if (!post) {
            app_respond_error(app, r, v, 405, "method not allowed: use POST");
        } else if (gx_http_too_big(r)) {
            app_respond_error(app, r, v, 413, "request body exceeds server.max_body_bytes");
        } else if (v == GX_VERB_FILTER) {
            handle_filter(app, r);
        } else if (v == GX_VERB_PRIORITIZE) {
            handle_prioritize(app, r);
        } else {
            app_handle_bind(app, r);
        }
        return;
    }
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
        strcmp(path, "/version") == 0 || strcmp(path, "/metrics") == 0) {
        if (!get && strcmp(method, "HEAD") != 0) {
            app_respond_error(app, r, GX_VERB_OTHER, 405, "method not allowed: use GET");
        } else if (strcmp(path, "/healthz") == 0) {
            handle_text(app, r, 200, "application/json", "{\"status\":\"ok\"}");
        } else if (strcmp(path, "/readyz") == 0) {
            handle_text(app, r, app_ready(app) ? 200 : 503, "application/json",
                        app_ready(app) ? "{\"status\":\"ready\"}" : "{\"status\":\"not ready\"}");
        } else if (strcmp(path, "/version") == 0) {
            handle_version(app, r);
        } else {
            handle_metrics(app, r);
        }
        return;
    }
    if (app->cfg->debug_endpoints && strcmp(path, "/debug/explain") == 0) {
        if (!post) {
            app_respond_error(app, r, GX_VERB_OTHER, 405, "method not allowed: use POST");
        } else if (gx_http_too_big(r)) {
            app_respond_error(app, r, GX_VERB_OTHER, 413,
                              "request body exceeds server.max_body_bytes");
        } else {
            handle_explain(app, r);
        }
        return;
    }
    app_respond_error(app, r, GX_VERB_OTHER, 404, "not found");
}

/* ---- timers ---- */

static void
arm(struct event *ev, int seconds)
{
    struct timeval tv = {seconds, 0};

    (void)evtimer_add(ev, &tv);
}

static void
rebuild_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;

    (void)fd;
    (void)what;
    app->rebuild_pending = false;
    (void)app_rebuild_snapshot(app);
}

/* Coalesce bursts of source changes (a relist, a watch storm) into one rebuild. */
static void
schedule_rebuild(void *ctx)
{
    struct gx_app *app = ctx;
    struct timeval tv = {0, 50000};

    if (app->rebuild_pending || app->rebuild_timer == NULL) {
        return;
    }
    app->rebuild_pending = true;
    (void)evtimer_add(app->rebuild_timer, &tv);
}

static enum gx_err
start_live_sources(struct gx_app *app, struct gx_why *why)
{
    static const struct gx_kube_cbs cbs = {
        .nodes_changed = schedule_rebuild,
        .pod_event = app_pod_event,
        .pods_listed = app_pods_listed,
    };
    const struct gx_config *cfg = app->cfg;

    if (cfg->prom_url == NULL && !cfg->kube_enabled) {
        return GX_OK;
    }
    app->httpc = gx_httpc_new(app->base);
    app->rebuild_timer = evtimer_new(app->base, rebuild_cb, app);
    if (app->httpc == NULL || app->rebuild_timer == NULL) {
        return GX_ENOMEM;
    }
    if (cfg->prom_insecure) {
        gx_warn("TLS verification of Prometheus is OFF (prometheus.insecure_skip_verify)", NULL);
    }
    if (cfg->prom_url != NULL) {
        app->prom = gx_promsrc_new(app->base, app->httpc, cfg, app->mstore, &app->metrics,
                                   schedule_rebuild, app);
        if (app->prom == NULL) {
            return GX_ENOMEM;
        }
    }
    if (cfg->kube_enabled) {
        app->kube = gx_kube_new(app->base, app->httpc, cfg, &app->metrics, &cbs, app, why);
        if (app->kube == NULL) {
            return GX_EINVAL;
        }
        if (app_start_ledger(app) != GX_OK) {
            return GX_ENOMEM;
        }
    }
    return GX_OK;
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
    arm(app->refresh_timer, app->cfg->files_refresh_s);
}

void
gx_app_reload(struct gx_app *app)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {{0}};
    char changed[256], q[300];

    app->metrics.last_reload_ms = gx_wall_ms();
    if (gx_config_load(app->config_path, &cfg, &why) != GX_OK) {
        app->metrics.reloads_failed++;
        app->metrics.last_reload_ok = false;
        gx_error("config rejected, keeping the last good config", "path=%s error=%s",
                 app->config_path, gx_log_quote(q, sizeof(q), why.text));
        return;
    }
    app->metrics.reloads_ok++;
    app->metrics.last_reload_ok = true;
    if (cfg->hash == app->cfg->hash) {
        gx_config_free(cfg);
        return;
    }
    if (gx_config_restart_keys_changed(app->cfg, cfg, changed, sizeof(changed))) {
        gx_warn("config keys changed that apply only after a restart; keeping their running "
                "values",
                "keys=%s", changed);
        if (gx_config_keep_restart_keys(cfg, app->cfg) != GX_OK) {
            gx_config_free(cfg);
            return;
        }
    }
    if (app->prom != NULL) {
        gx_promsrc_set_config(app->prom, cfg);
    }
    if (app->kube != NULL) {
        gx_kube_set_config(app->kube, cfg);
    }
    if (app->leases != NULL) {
        gx_leases_set_config(app->leases, cfg);
    }
    gx_config_free(app->cfg);
    app->cfg = cfg;
    app->metrics.config_hash = cfg->hash;
    gx_log_set_level((enum gx_log_level)cfg->log_level);
    if (app->http != NULL) {
        gx_http_set_max_body(app->http, cfg->max_body_bytes);
    }
    (void)app_rebuild_snapshot(app);
    gx_info("config reloaded", "path=%s hash=%016llx", app->config_path,
            (unsigned long long)cfg->hash);
}

static void tls_rotate(struct gx_app *app);

static void
reload_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;

    (void)fd;
    (void)what;
    if (stamp_changed(app->config_path, &app->config_stamp)) {
        gx_app_reload(app);
    }
    if (app->cfg->tls_cert_file != NULL && !app->draining) {
        /* evaluate both: each call records the file's new stamp */
        bool cert = stamp_changed(app->cfg->tls_cert_file, &app->cert_stamp);
        bool key = stamp_changed(app->cfg->tls_key_file, &app->key_stamp);
        if (cert || key) {
            tls_rotate(app);
        }
    }
    if (app->http_old != NULL && gx_http_inflight(app->http_old) == 0) {
        gx_http_free(app->http_old);
        app->http_old = NULL;
    }
    arm(app->reload_timer, 1);
}

static void
drain_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;
    struct timeval tv = {0, 20000};

    (void)fd;
    (void)what;
    /*
     * Requests already on their way over open keep-alive connections get a
     * short window to arrive before an idle server counts as drained.
     */
    if ((gx_http_inflight(app->http) == 0 && gx_mono_ms() >= app->drain_quiet_ms) ||
        gx_mono_ms() >= app->drain_deadline_ms) {
        gx_info("shutdown complete", "unanswered=%zu", gx_http_inflight(app->http));
        (void)event_base_loopexit(app->base, NULL);
        return;
    }
    (void)evtimer_add(app->drain_timer, &tv);
}

void
gx_app_shutdown(struct gx_app *app)
{
    if (app->draining) {
        return;
    }
    app->draining = true;
    gx_info("shutting down, draining in-flight requests", "inflight=%zu grace_s=%d",
            app->http ? gx_http_inflight(app->http) : 0, app->cfg->shutdown_grace_s);
    if (app->http == NULL) {
        (void)event_base_loopexit(app->base, NULL);
        return;
    }
    gx_http_quiesce(app->http);
    app->drain_deadline_ms = gx_mono_ms() + (int64_t)app->cfg->shutdown_grace_s * 1000;
    app->drain_quiet_ms = gx_mono_ms() + DRAIN_MIN_MS;
    drain_cb(-1, 0, app);
}

/* ---- lifecycle ---- */

enum gx_err
gx_app_new(struct event_base *base, const char *config_path, struct gx_app **out,
           struct gx_why *why)
{
    struct gx_app *app = calloc(1, sizeof(*app));
    enum gx_err rc;

    if (app == NULL) {
        return GX_ENOMEM;
    }
    app->base = base;
    gx_arena_init(&app->nodes_arena, 0);
    gx_metrics_init(&app->metrics);
    app->config_path = gx_strndup(config_path, strlen(config_path));
    app->ledger = gx_ledger_new();
    app->pods = calloc(POD_CACHE_SLOTS, sizeof(*app->pods));
    if (app->config_path == NULL || app->ledger == NULL || app->pods == NULL) {
        rc = GX_ENOMEM;
        goto fail;
    }
    rc = gx_config_load(config_path, &app->cfg, why);
    if (rc != GX_OK) {
        goto fail;
    }
    (void)stamp_changed(config_path, &app->config_stamp);
    app->metrics.last_reload_ok = true;
    app->metrics.last_reload_ms = gx_wall_ms();
    app->metrics.config_hash = app->cfg->hash;
    gx_log_set_level((enum gx_log_level)app->cfg->log_level);
    rc = reset_sources(app, why);
    if (rc != GX_OK) {
        goto fail;
    }
    *out = app;
    return GX_OK;
fail:
    gx_app_free(app);
    return rc;
}

/*
 * Start an HTTP server on @port with the configured TLS files (read now).
 * With TLS the socket is SO_REUSEPORT, so a successor can take over the
 * port when the certificate is rotated while this one drains.
 */
static enum gx_err
start_http(struct gx_app *app, int port, struct gx_http **out, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    struct gx_http_opts o = {
        .address = cfg->listen_address,
        .port = port,
        .max_body = cfg->max_body_bytes,
        .conn_timeout_s = cfg->connection_timeout_s,
        .reuse_port = cfg->tls_cert_file != NULL,
    };
    char *cert = NULL, *key = NULL;
    size_t len = 0;
    enum gx_err rc = GX_OK;

    if (cfg->tls_cert_file != NULL) {
        (void)stamp_changed(cfg->tls_cert_file, &app->cert_stamp);
        (void)stamp_changed(cfg->tls_key_file, &app->key_stamp);
        rc = gx_read_file(cfg->tls_cert_file, 1 << 20, &cert, &len);
        if (rc == GX_OK) {
            rc = gx_read_file(cfg->tls_key_file, 1 << 20, &key, &len);
        }
        if (rc != GX_OK) {
            gx_why_set(why, "server.tls_*: cannot read %s: %s",
                       cert ? cfg->tls_key_file : cfg->tls_cert_file, gx_strerror(rc));
        }
        o.tls_cert = cert;
        o.tls_key = key;
    }
    if (rc == GX_OK) {
        rc = gx_http_start(app->base, &o, handle, app, out, why);
    }
    free(cert);
    if (key != NULL) {
        memset(key, 0, len);
        free(key);
    }
    return rc;
}

/* The certificate or key file changed (a Secret update): serve with the new pair. */
static void
tls_rotate(struct gx_app *app)
{
    struct gx_http *fresh = NULL;
    struct gx_why why = {{0}};
    char q[300];

    if (start_http(app, gx_http_port(app->http), &fresh, &why) != GX_OK) {
        gx_error("cannot load the new TLS certificate, keeping the current one", "error=%s",
                 gx_log_quote(q, sizeof(q), why.text));
        return;
    }
    gx_http_free(app->http_old);
    gx_http_quiesce(app->http);
    app->http_old = app->http;
    app->http = fresh;
    gx_info("TLS certificate reloaded", "cert=%s", app->cfg->tls_cert_file);
}

enum gx_err
gx_app_listen(struct gx_app *app, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    enum gx_err rc;

    if ((rc = start_http(app, cfg->port, &app->http, why)) != GX_OK) {
        return rc;
    }
    if (cfg->tls_cert_file == NULL && cfg->listen_address != NULL &&
        strcmp(cfg->listen_address, "127.0.0.1") != 0 && strcmp(cfg->listen_address, "::1") != 0) {
        gx_info("serving plain HTTP; set server.tls_cert_file/tls_key_file for HTTPS", NULL);
    }
    if ((rc = start_live_sources(app, why)) != GX_OK) {
        return rc;
    }
    app->refresh_timer = evtimer_new(app->base, refresh_cb, app);
    app->reload_timer = evtimer_new(app->base, reload_cb, app);
    app->drain_timer = evtimer_new(app->base, drain_cb, app);
    if (app->refresh_timer == NULL || app->reload_timer == NULL || app->drain_timer == NULL) {
        return GX_ENOMEM;
    }
    arm(app->refresh_timer, cfg->files_refresh_s);
    arm(app->reload_timer, 1);
    gx_info("listening", "address=%s port=%d prefix=%s tls=%s", cfg->listen_address,
            gx_http_port(app->http), cfg->url_prefix, cfg->tls_cert_file != NULL ? "on" : "off");
    return GX_OK;
}

int
gx_app_port(const struct gx_app *app)
{
    return app->http ? gx_http_port(app->http) : -1;
}

void
gx_app_free(struct gx_app *app)
{
    if (app == NULL) {
        return;
    }
    if (app->refresh_timer != NULL) {
        event_free(app->refresh_timer);
    }
    if (app->reload_timer != NULL) {
        event_free(app->reload_timer);
    }
    if (app->drain_timer != NULL) {
        event_free(app->drain_timer);
    }
    app_stop_ledger(app);
    gx_http_free(app->http_old);
    gx_http_free(app->http);
    gx_promsrc_free(app->prom);
    gx_kube_free(app->kube);
    gx_httpc_free(app->httpc);
    if (app->rebuild_timer != NULL) {
        event_free(app->rebuild_timer);
    }
    gx_vcache_free(app->vcache);
    gx_snapshot_free(app->snap);
    gx_mstore_free(app->mstore);
    gx_ledger_free(app->ledger);
    gx_config_free(app->cfg);
    gx_arena_release(&app->nodes_arena);
    free(app->config_path);
    free(app->pods);
    free(app);
}

enum gx_err
gx_app_explain(struct gx_app *app, const char *pod_json, size_t len, bool json, struct gx_buf *out,
               struct gx_why *why)
{
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_podreq req;
    struct gx_decide_ctx ctx;
    char name[300];
    enum gx_err rc;

    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_pod(pod_json, len, app->cfg->max_json_depth, &a, &pod, why);
    if (rc == GX_OK) {
        rc = gx_podreq_parse(app->cfg, &pod, &req, why);
    }
    if (rc == GX_OK) {
        (void)snprintf(name, sizeof(name), "%s/%s", pod.namespace, pod.name);
        app_decide_ctx(app, &ctx);
        rc = json ? gx_explain_json(&ctx, &req, name, out) : gx_explain_text(&ctx, &req, name, out);
    }
    gx_arena_release(&a);
    return rc;
}
