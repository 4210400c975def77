/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes.c - a static table of routes and the handlers behind them. The
 * handlers decode, call the decision code and answer through reply.c.
 */
#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "admit.h"
#include "bind.h"
#include "explain.h"
#include "explain_pod.h"
#include "forward.h"
#include "gang_filter.h"
#include "holds.h"
#include "leader.h"
#include "extender.h"
#include "cards.h"
#include "log.h"
#include "podsum.h"
#include "quota.h"
#include "vcache.h"
#include "preempt_explain.h"
#include "preempt_holds.h"
#include "preempt_verb.h"
#include "ready.h"
#include "reply.h"
#include "requeue.h"
#include "seen.h"
#include "sync.h"

/* The reason of every node for a request the extender cannot honour: the cause, in the event. */
struct bad_request {
    bool bad;
    char reason[300]; /* "invalid GPU request: gpu-extender.io/time-slices must be ..." */
};

/*
 * Decode ExtenderArgs and classify the pod. On a request the extender
 * cannot honour (bad annotations) @bad is set: every node is then rejected
 * with a reason the user sees, naming the cause, rather than failing the call.
 */
static bool
decode_scheduling_call(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb,
                       struct gx_ext_args *args, struct gx_podreq *req, struct bad_request *bad)
{
    struct gx_why why = {{0}};
    size_t len;
    const char *body = gx_http_body(r, &len);
    enum gx_err rc;

    rc = gx_ext_decode_args(body, len, app->cfg->max_json_depth, args, &why);
    if (rc != GX_OK) {
        gx_reply_error(&app->metrics, r, verb, 400, why.text);
        return false;
    }
    bad->bad = gx_podreq_parse(app->cfg, &args->pod, req, &why) != GX_OK;
    if (bad->bad) {
        char q[300], p[700];

        (void)snprintf(bad->reason, sizeof(bad->reason), "%s: %s",
                       gx_reason_text(GX_REASON_BAD_REQUEST), why.text);
        gx_warn("invalid GPU request, rejecting every node", "req=%llu pod=%s error=%s",
                (unsigned long long)gx_http_id(r),
                gx_log_quote_pod(p, sizeof(p), args->pod.namespace, args->pod.name),
                gx_log_quote(q, sizeof(q), why.text));
    }
    return true;
}

/* Each node of a filter or prioritize call: its snapshot node (NULL when unknown), its verdict. */
struct call_nodes {
    const struct gx_node **sn;
    struct gx_vshort *v;
};

static void
call_nodes_free(struct call_nodes *cn)
{
    free(cn->sn);
    free(cn->v);
}

/*
 * decode_scheduling_call, then a zeroed array of one @elem-sized entry per
 * node, and @cn for every node; NULL once @r is answered (bad body, or out
 * of memory).
 */
static void *
decode_call(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb, struct gx_ext_args *args,
            struct gx_podreq *req, struct bad_request *bad, size_t elem, struct call_nodes *cn)
{
    size_t n;
    void *per_node;

    if (!decode_scheduling_call(app, r, verb, args, req, bad)) {
        return NULL;
    }
    n = args->n_nodes ? args->n_nodes : 1;
    per_node = calloc(n, elem);
    /* written whole below and by verdicts(): no need to clear them */
    cn->sn = malloc(n * sizeof(const struct gx_node *));
    cn->v = malloc(n * sizeof(*cn->v));
    if (per_node == NULL || cn->sn == NULL || cn->v == NULL) {
        free(per_node);
        call_nodes_free(cn);
        gx_ext_args_release(args);
        gx_reply_error(&app->metrics, r, verb, 500, "out of memory");
        return NULL;
    }
    gx_snapshot_find_all(app->sync.snap, args->nodes, args->n_nodes, cn->sn);
    return per_node;
}

/* Answer with the encoded @out, or a 500 saying @what when encoding (@rc) failed. */
static void
reply_encoded(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb, enum gx_err rc,
              struct gx_buf *out, const char *what)
{
    if (rc != GX_OK) {
        gx_buf_release(out);
        gx_reply_error(&app->metrics, r, verb, 500, what);
        return;
    }
    gx_reply_json(&app->metrics, r, verb, 200, out);
}

/* Log one node's decision; the caller asks gx_log_enabled(GX_LOG_DEBUG) once per call. */
static void
log_decision(struct gx_http_req *r, const char *verb, const struct gx_pod *pod,
             const struct gx_ext_node *n, const struct gx_vshort *v)
{
    char qp[700], qn[300];

    gx_debug("decision", "req=%llu verb=%s pod=%s node=%s keep=%d reason=\"%s\" score=%d",
             (unsigned long long)gx_http_id(r), verb,
             gx_log_quote_pod(qp, sizeof(qp), pod->namespace, pod->name),
             gx_log_quote(qn, sizeof(qn), n->name), v->keep, gx_reason_text(v->reason), v->score);
}

/* The verdict cache, created on first use; NULL means "compute every verdict". */
static struct gx_vcache *
vcache(struct gx_app *app)
{
    if (app->vcache == NULL) {
        app->vcache = gx_vcache_new();
    }
    return app->vcache;
}

/* The verdict of each of @n nodes for @req (a rejection for a request the extender cannot honour).
 */
static void
verdicts(struct gx_app *app, const struct gx_decide_ctx *ctx, const struct gx_podreq *req, bool bad,
         size_t n, struct call_nodes *cn)
{
    if (bad) {
        for (size_t i = 0; i < n; i++) {
            memset(&cn->v[i], 0, sizeof(cn->v[i]));
            cn->v[i].reason = GX_REASON_BAD_REQUEST;
        }
        return;
    }
    gx_vcache_decide_all(vcache(app), ctx, req, cn->sn, n, cn->v);
}

/*
 * filter.shortlist_nodes: keep only the best of the nodes that fit (gx_score_shortlist),
 * the node the pod's own booking is on always among them. kube-scheduler scores and
 * calls prioritize with what filter keeps, so a short list spares it that work for
 * every node the pod would not go to anyway.
 */
static void
shortlist(struct gx_app *app, const struct gx_ext_args *args, const char *held, struct gx_vshort *v)
{
    const struct gx_config *cfg = app->cfg;
    size_t n = args->n_nodes;
    double *exact;

    if (cfg->shortlist_nodes <= 0 || n <= (size_t)cfg->shortlist_nodes ||
        (exact = malloc(2 * n * sizeof(*exact))) == NULL) {
        return; /* without memory: every node that fits, a longer answer but a right one */
    }
    for (size_t i = 0; i < n; i++) {
        bool mine = held != NULL && v[i].keep && strcmp(args->nodes[i].name, held) == 0;
        exact[i] = mine ? HUGE_VAL : gx_score_shortlist_key(v[i].keep, v[i].exact);
    }
    if (gx_score_shortlist(exact, n, (size_t)cfg->shortlist_nodes, exact + n, &app->shortlist_rng) >
        0) {
        for (size_t i = 0; i < n; i++) {
            if (v[i].keep && exact[i] < 0.0) {
                v[i].keep = false;
                v[i].reason = GX_REASON_SHORTLIST;
            }
        }
    }
    free(exact);
}

static void
filter_now(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_ext_args args;
    struct gx_podreq req;
    struct gx_ext_filter_verdict *fv;
    struct call_nodes cn;
    struct gx_decide_ctx ctx;
    struct gx_quota_check qc;
    struct gx_admit_held held;
    struct gx_gang_call gang;
    struct gx_buf out;
    size_t len, kept = 0, lifts = 0;
    const char *body = gx_http_body(r, &len);
    struct bad_request bad = {0};
    int64_t now_ms;
    bool holding, holds, debug = gx_log_enabled(GX_LOG_DEBUG);

    fv = decode_call(app, r, GX_VERB_FILTER, &args, &req, &bad, sizeof(*fv), &cn);
    if (fv == NULL) {
        return;
    }
    now_ms = gx_mono_ms(); /* once per request: the holds are checked for every node */
    if (!bad.bad) {
        gx_seen_put(app->seen, &args.pod, &req, now_ms);
        gx_score_learn(app->cfg, &app->fgd, &req, &args.pod.where);
    }
    gx_sync_decide_ctx(app, &ctx);
    gx_quota_check_begin(&ctx, args.pod.namespace, args.pod.uid, bad.bad ? NULL : &req, &qc);
    gx_admit_held_of(app->cfg, ctx.ledger, bad.bad ? NULL : args.pod.uid, gx_wall_ms(), &held);
    verdicts(app, &ctx, &req, bad.bad, args.n_nodes, &cn);
    /* what can overrule a verdict, asked once: most requests meet none of it */
    holding = !bad.bad && held.node != NULL;
    holds = !bad.bad && gx_holds_any(app->holds);
    gx_gang_call_begin(app, &args.pod, &req, bad.bad, true, &gang);
    for (size_t i = 0; i < args.n_nodes; i++) {
        struct gx_vshort *v = &cn.v[i];
        /* the pod's own booking first: bind takes it over, so its node fits whatever it holds */
        bool mine =
            holding && gx_admit_held_verdict(&held, args.nodes[i].name, &v->keep, &v->reason);

        if (!mine && holds) {
            (void)gx_preempt_hold_verdict(app, &ctx, &args.pod, &req, args.nodes[i].name, now_ms,
                                          v);
        }
        /* a node something else already refused stays refused */
        if (!mine && v->keep && gang.any) {
            (void)gx_gang_node_verdict(app, &gang, &ctx, &args.pod, &req, args.nodes[i].name, v);
        }
        /* after the cached verdict: quota depends on every node's bookings, not this one's */
        if (!mine && v->keep && qc.on && !gx_quota_check_node(&qc, &ctx, &req, cn.sn[i])) {
            v->keep = false;
            v->reason = GX_REASON_QUOTA;
        }
    }
    /* a gang member keeps one node, the one its cards are booked on for the group (gang.h) */
    gx_gang_filter_pin(app, &gang, &ctx, &args.pod, &req, args.nodes, cn.v, args.n_nodes,
                       holding ? held.node : NULL);
    if (!bad.bad) {
        shortlist(app, &args, holding ? held.node : NULL, cn.v);
    }
    for (size_t i = 0; i < args.n_nodes; i++) {
        struct gx_vshort v = cn.v[i];

        fv[i].keep = v.keep;
        fv[i].reason = bad.bad ? bad.reason : gx_reason_text(v.reason);
        fv[i].unresolvable = !v.keep && gx_reason_unresolvable(v.reason);
        fv[i].unlisted = !v.keep && !bad.bad && gx_reason_unlisted(v.reason);
        kept += v.keep;
        lifts += !v.keep && gx_reason_lifts(v.reason);
        if (v.keep) {
            app->metrics.nodes_kept++;
        } else {
            app->metrics.rejections[v.reason]++;
        }
        if (debug) {
            log_decision(r, "filter", &args.pod, &args.nodes[i], &v);
        }
    }
    /* no node fits, and a booking that goes or a card that cools would let one (requeue.h) */
    if (!bad.bad && app->leases != NULL && kept == 0 && lifts > 0) {
        gx_requeue_wait(app, &args.pod);
    }
    gx_buf_init(&out, (size_t)1 << 30);
    reply_encoded(app, r, GX_VERB_FILTER, gx_ext_encode_filter(&out, body, &args, fv), &out,
                  "cannot encode the filter result");
    free(fv);
    call_nodes_free(&cn);
    gx_ext_args_release(&args);
}

/* A filter call held while binds wait at the gate (gate.h: paced jobs). */
struct paced_filter {
    LIST_ENTRY(paced_filter) link;
    struct gx_gate_job job;
    struct gx_app *app;
    struct gx_http_req *r;
};

static void
paced_filter_start(void *ctx)
{
    struct paced_filter *pf = ctx;

    LIST_REMOVE(pf, link);
    filter_now(pf->app, pf->r);
    free(pf);
}

/*
 * Backpressure: kube-scheduler runs one cycle at a time, so a filter answered
 * only once no bind waits for its place keeps it from scheduling faster than
 * the API server takes the binds; unpaced, the binds queued and were shed.
 * Never longer than a bind itself may wait.
 */
static void
handle_filter(struct gx_app *app, struct gx_http_req *r)
{
    struct paced_filter *pf = calloc(1, sizeof(*pf));

    if (pf == NULL) {
        filter_now(app, r);
        return;
    }
    pf->app = app;
    pf->r = r;
    pf->job = (struct gx_gate_job){.start_by_ms = gx_mono_ms() + app->cfg->bind_deadline_ms / 2,
                                   .start = paced_filter_start,
                                   .ctx = pf};
    LIST_INSERT_HEAD(&app->paced, pf, link);
    if (!gx_gate_pace(&app->bind_gate, &pf->job)) {
        app->metrics.filters_paced++;
    }
}

void
gx_routes_cancel(struct gx_app *app)
{
    struct paced_filter *pf;

    while ((pf = LIST_FIRST(&app->paced)) != NULL) {
        gx_gate_leave(&app->bind_gate, &pf->job);
        LIST_REMOVE(pf, link);
        free(pf);
    }
}

static void
handle_prioritize(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_ext_args args;
    struct gx_podreq req;
    struct gx_decide_ctx ctx;
    struct gx_admit_held held;
    struct gx_gang_call gang;
    struct gx_buf out;
    double *exact;
    int *scores;
    struct call_nodes cn;
    struct bad_request bad = {0};
    size_t len;
    const char *body = gx_http_body(r, &len);
    bool debug = gx_log_enabled(GX_LOG_DEBUG);

    scores = decode_call(app, r, GX_VERB_PRIORITIZE, &args, &req, &bad, sizeof(*scores), &cn);
    if (scores == NULL) {
        return;
    }
    /* the exact scores only when the answer is relative; without memory for them, rounded */
    exact =
        app->cfg->relative_scores ? calloc(args.n_nodes ? args.n_nodes : 1, sizeof(*exact)) : NULL;
    gx_sync_decide_ctx(app, &ctx);
    gx_admit_held_of(app->cfg, ctx.ledger, bad.bad ? NULL : args.pod.uid, gx_wall_ms(), &held);
    if (!bad.bad) {
        verdicts(app, &ctx, &req, false, args.n_nodes, &cn);
    }
    gx_gang_call_begin(app, &args.pod, &req, bad.bad, false, &gang);
    for (size_t i = 0; i < args.n_nodes && !bad.bad; i++) {
        struct gx_vshort v = cn.v[i];

        if (held.node != NULL && strcmp(held.node, args.nodes[i].name) == 0) {
            /* the node the pod holds GPUs on: its bind reuses them */
            v.keep = true;
            v.score = 10;
            v.exact = 10.0;
        } else if (v.keep && gang.any) {
            /* the cards a gang member's bind comes for are not this pod's to score */
            (void)gx_gang_node_verdict(app, &gang, &ctx, &args.pod, &req, args.nodes[i].name, &v);
        }
        scores[i] = v.keep ? v.score : 0;
        if (exact != NULL) {
            exact[i] = !v.keep ? -1.0 : v.exact < 0.0 ? 0.0 : v.exact;
        }
        if (debug) {
            log_decision(r, "prioritize", &args.pod, &args.nodes[i], &v);
        }
    }
    if (exact != NULL && !bad.bad) {
        gx_score_relative(exact, args.n_nodes, scores);
    }
    free(exact);
    gx_buf_init(&out, (size_t)64 << 20);
    reply_encoded(app, r, GX_VERB_PRIORITIZE, gx_ext_encode_prioritize(&out, body, &args, scores),
                  &out, "cannot encode the priority list");
    free(scores);
    call_nodes_free(&cn);
    gx_ext_args_release(&args);
}

static void
handle_bind(struct gx_app *app, struct gx_http_req *r)
{
    gx_bind_handle(app, r);
}

static void
handle_preempt(struct gx_app *app, struct gx_http_req *r)
{
    gx_preempt_handle(app, r);
}

static void
handle_healthz(struct gx_app *app, struct gx_http_req *r)
{
    gx_reply_jsontext(&app->metrics, r, 200, "{\"status\":\"ok\"}");
}

static void
handle_readyz(struct gx_app *app, struct gx_http_req *r)
{
    bool ready = gx_ready(app);

    gx_reply_jsontext(&app->metrics, r, ready ? 200 : 503,
                      ready ? "{\"status\":\"ready\"}" : "{\"status\":\"not ready\"}");
}

static void
handle_version(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_buf b;

    gx_buf_init(&b, 4096);
    if (gx_buf_addf(&b, "{\"version\":\"%s\",\"config_hash\":\"%016llx\",\"config_path\":",
                    GX_VERSION, (unsigned long long)app->cfg->hash) != GX_OK ||
        gx_buf_add_json_str(&b, app->config_path, strlen(app->config_path)) != GX_OK ||
        gx_buf_addf(&b, ",\"snapshot_generation\":%llu}",
                    (unsigned long long)app->sync.generation) != GX_OK) {
        gx_buf_reset(&b);
    }
    gx_reply_json(&app->metrics, r, GX_VERB_OTHER, 200, &b);
}

static void
snapshot_counts(const struct gx_snapshot *s, struct gx_metrics_gauges *g)
{
    for (size_t i = 0; s != NULL && i < s->n_nodes; i++) {
        const struct gx_node *n = &s->nodes[i];
        g->snapshot_nodes++;
        if (n->n_cards == 0) {
            continue;
        }
        g->snapshot_gpu_nodes++;
        g->snapshot_cards += (int64_t)n->n_cards;
    }
}

/* The HTTP server's budget, connections and the log rate limit, for /metrics. */
static void
http_gauges(const struct gx_http *h, struct gx_metrics_gauges *g)
{
    struct gx_http_stats hs;

    gx_http_get_stats(h, &hs);
    g->inflight_bytes = (int64_t)hs.held;
    g->inflight_bytes_peak = (int64_t)hs.held_peak;
    g->inflight_budget = (int64_t)hs.budget;
    g->connections = (int64_t)hs.connections;
    g->refused_budget = hs.refused_budget;
    g->peer_closed = hs.peer_closed;
    g->log_suppressed = gx_log_suppressed_total();
}

/* What the all-pods watch counts, for /metrics (zeros without it). */
static void
other_pods(const struct gx_podsum *p, struct gx_metrics_gauges *g)
{
    size_t n;

    gx_podsum_totals(p, &n, &g->other_cpu_milli, &g->other_mem_bytes);
    g->other_pods = (int64_t)n;
}

static void
handle_metrics(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_metrics_gauges g;
    struct gx_buf b;

    memset(&g, 0, sizeof(g));
    g.ready = gx_ready(app);
    g.now_ms = gx_wall_ms();
    g.inflight = (int64_t)gx_http_inflight(app->http);
    http_gauges(app->http, &g);
    snapshot_counts(app->sync.snap, &g);
    gx_cards_slots(app->cfg, app->sync.snap, app->ledger, &g.ledger_slots_used,
                   &g.ledger_slots_total);
    gx_ledger_totals(app->ledger, NULL, &g.ledger_tenants);
    g.gang_bookings = (int64_t)gx_gang_held(app);
    g.binds_running = (int64_t)app->bind_gate.running;
    g.binds_waiting = (int64_t)app->bind_gate.n_waiting;
    g.binds_window = (int64_t)app->bind_gate.window;
    g.binds_shown = app->leases != NULL ? (int64_t)gx_leases_holds(app->leases) : 0;
    g.leader = gx_leader_leading(app) ? 1 : 0;
    other_pods(app->sync.podsum, &g);
    /* counted before rendering, so this scrape shows itself */
    gx_metrics_request(&app->metrics, GX_VERB_OTHER, 200, gx_http_elapsed_s(r));
    gx_buf_init(&b, (size_t)16 << 20);
    if (gx_metrics_render(&app->metrics, &g, &b) != GX_OK ||
        gx_cards_metrics(app->cfg, app->sync.snap, app->ledger, &b) != GX_OK) {
        gx_buf_reset(&b);
    }
    gx_http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
}

/* GET /debug/cards: which pod holds which card, booked against measured. */
static void
handle_cards(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_buf out;

    gx_buf_init(&out, (size_t)64 << 20);
    if (gx_cards_json(app->cfg, app->sync.snap, app->ledger, gx_wall_ms(), &out) != GX_OK) {
        gx_buf_release(&out);
        gx_reply_error(&app->metrics, r, GX_VERB_OTHER, 500, "cannot render the cards");
        return;
    }
    gx_reply_json(&app->metrics, r, GX_VERB_OTHER, 200, &out);
}

typedef enum gx_err (*explain_fn)(struct gx_app *app, const char *body, size_t len, bool json,
                                  struct gx_buf *out, struct gx_why *why);

/* Answer a debug explain: JSON, or text with ?format=text; 400 with the reason. */
static void
reply_explained(struct gx_app *app, struct gx_http_req *r, explain_fn explain)
{
    struct gx_why why = {{0}};
    struct gx_buf out;
    size_t len;
    const char *body = gx_http_body(r, &len);
    const char *fmt = gx_http_query(r, "format");
    bool json = fmt == NULL || strcmp(fmt, "text") != 0;

    gx_buf_init(&out, (size_t)64 << 20);
    if (explain(app, body, len, json, &out, &why) != GX_OK) {
        gx_buf_release(&out);
        gx_reply_error(&app->metrics, r, GX_VERB_OTHER, 400, why.text);
        return;
    }
    gx_reply_body(&app->metrics, r, GX_VERB_OTHER, 200,
                  json ? "application/json" : "text/plain; charset=utf-8", &out);
}

static void
handle_explain(struct gx_app *app, struct gx_http_req *r)
{
    reply_explained(app, r, gx_explain_pod);
}

static void
handle_preempt_explain(struct gx_app *app, struct gx_http_req *r)
{
    reply_explained(app, r, gx_preempt_explain);
}

enum where { AT_ROOT, UNDER_PREFIX };

/* One route: where its path is, what it answers, how it is counted and who may call it. */
struct route {
    enum where where;
    const char *path;
    bool post;   /* POST; else GET or HEAD */
    bool debug;  /* only with server.debug_endpoints */
    bool leader; /* answered by the leader replica (replicas.forward, forward.h) */
    enum gx_verb verb;
    void (*handler)(struct gx_app *app, struct gx_http_req *r);
};

static const struct route routes[] = {
    {UNDER_PREFIX, "/filter", true, false, true, GX_VERB_FILTER, handle_filter},
    {UNDER_PREFIX, "/prioritize", true, false, true, GX_VERB_PRIORITIZE, handle_prioritize},
    {UNDER_PREFIX, "/bind", true, false, true, GX_VERB_BIND, handle_bind},
    {UNDER_PREFIX, "/preempt", true, false, true, GX_VERB_PREEMPT, handle_preempt},
    {AT_ROOT, "/healthz", false, false, false, GX_VERB_OTHER, handle_healthz},
    {AT_ROOT, "/readyz", false, false, false, GX_VERB_OTHER, handle_readyz},
    {AT_ROOT, "/version", false, false, false, GX_VERB_OTHER, handle_version},
    {AT_ROOT, "/metrics", false, false, false, GX_VERB_OTHER, handle_metrics},
    /* what filter and preempt would answer: the leader's, which sees every bind in flight */
    {AT_ROOT, "/debug/explain", true, true, true, GX_VERB_OTHER, handle_explain},
    {AT_ROOT, "/debug/preempt", true, true, true, GX_VERB_OTHER, handle_preempt_explain},
    {AT_ROOT, "/debug/cards", false, true, false, GX_VERB_OTHER, handle_cards},
};

/* True when @path is route @rt's under @prefix. */
static bool
matches(const struct route *rt, const char *path, const char *prefix)
{
    size_t plen = strlen(prefix);

    if (rt->where == UNDER_PREFIX) {
        if (strncmp(path, prefix, plen) != 0) {
            return false;
        }
        path += plen;
    }
    return strcmp(path, rt->path) == 0;
}

void
gx_routes_handle(void *ctx, struct gx_http_req *r)
{
    struct gx_app *app = ctx;
    const char *path = gx_http_path(r), *method = gx_http_method(r);
    bool post = strcmp(method, "POST") == 0;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;

    for (size_t i = 0; i < GX_ARRAY_LEN(routes); i++) {
        const struct route *rt = &routes[i];

        if (!matches(rt, path, app->cfg->url_prefix) || (rt->debug && !app->cfg->debug_endpoints)) {
            continue;
        }
        if (rt->post ? !post : !get) {
            gx_reply_error(&app->metrics, r, rt->verb, 405,
                           rt->post ? "method not allowed: use POST"
                                    : "method not allowed: use GET");
        } else if (rt->post && gx_http_too_big(r)) {
            gx_reply_error(&app->metrics, r, rt->verb, 413,
                           "request body exceeds server.max_body_bytes");
        } else if (!rt->leader || !gx_forward(app, r, rt->verb, rt->handler)) {
            rt->handler(app, r);
        }
        return;
    }
    gx_reply_error(&app->metrics, r, GX_VERB_OTHER, 404, "not found");
}
