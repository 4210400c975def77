/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c - fixed-shape counters and histograms and their text rendering. */
#include "metrics.h"

#include <string.h>

static const char *const verb_names[GX_VERB_COUNT] = {"filter", "prioritize", "bind", "preempt",
                                                      "other"};
static const char *const upstream_names[GX_UP_COUNT] = {"prometheus", "kubernetes", "files"};
static const char *const bind_names[GX_BIND_COUNT] = {"bound", "repeat", "rejected", "error"};
static const char *const class_names[GX_STATUS_CLASSES] = {"2xx", "4xx", "5xx", "other"};

const char *
gx_verb_name(enum gx_verb v)
{
    return verb_names[v];
}

const char *
gx_upstream_name(enum gx_upstream u)
{
    return upstream_names[u];
}

const char *
gx_bind_outcome_name(enum gx_bind_outcome o)
{
    return bind_names[o];
}

void
gx_metrics_init(struct gx_metrics *m)
{
    memset(m, 0, sizeof(*m));
}

void
gx_metrics_request(struct gx_metrics *m, enum gx_verb verb, int status, double seconds)
{
    int cls = status >= 200 && status < 300   ? 0
              : status >= 400 && status < 500 ? 1
              : status >= 500 && status < 600 ? 2
                                              : 3;

    m->requests[verb][cls]++;
    gx_histo_observe(&m->duration[verb], seconds);
}

static enum gx_err
render_histo(struct gx_buf *b, const char *name, const char *label, const char *value,
             const struct gx_histo *h)
{
    uint64_t cum = 0;
    enum gx_err rc = GX_OK;

    for (size_t i = 0; i < GX_HISTO_BUCKETS && rc == GX_OK; i++) {
        cum += h->bucket[i];
        rc = gx_buf_addf(b, "%s_bucket{%s=\"%s\",le=\"%g\"} %llu\n", name, label, value,
                         gx_histo_bounds[i], (unsigned long long)cum);
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(b,
                         "%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n%s_sum{%s=\"%s\"} %.9g\n"
                         "%s_count{%s=\"%s\"} %llu\n",
                         name, label, value, (unsigned long long)h->count, name, label, value,
                         h->sum, name, label, value, (unsigned long long)h->count);
    }
    return rc;
}

static enum gx_err
header(struct gx_buf *b, const char *name, const char *type, const char *help)
{
    return gx_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static enum gx_err
render_requests(const struct gx_metrics *m, struct gx_buf *b)
{
    enum gx_err rc;

    rc = header(b, "gpu_extender_requests_total", "counter",
                "Extender HTTP requests by verb and status class.");
    for (int v = 0; v < GX_VERB_COUNT && rc == GX_OK; v++) {
        for (int c = 0; c < GX_STATUS_CLASSES && rc == GX_OK; c++) {
            rc = gx_buf_addf(b, "gpu_extender_requests_total{verb=\"%s\",code=\"%s\"} %llu\n",
                             verb_names[v], class_names[c], (unsigned long long)m->requests[v][c]);
        }
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_request_duration_seconds", "histogram",
                    "Time to answer an extender request, by verb.");
    }
    for (int v = 0; v < GX_VERB_COUNT && rc == GX_OK; v++) {
        rc = render_histo(b, "gpu_extender_request_duration_seconds", "verb", verb_names[v],
                          &m->duration[v]);
    }
    return rc;
}

/* The preempt verb's counters. */
static enum gx_err
render_preempt(const struct gx_metrics *m, struct gx_buf *b)
{
    const struct {
        const char *name, *help;
        uint64_t v;
    } one[] = {
        {"gpu_extender_preempt_calls_total", "Preempt calls decided.", m->preempt_calls},
        {"gpu_extender_preempt_nodes_kept_total", "Candidate nodes answered with a victim set.",
         m->preempt_nodes_kept},
        {"gpu_extender_preempt_victims_total", "Victim pods named in preempt answers.",
         m->preempt_victims},
        {"gpu_extender_preempt_holds_activated_total",
         "Preemptions the scheduler carried out, whose freed GPU share is now held for the "
         "preemptor.",
         m->preempt_holds_activated},
        {"gpu_extender_preempt_hold_rejections_total",
         "Filter verdicts that rejected a node because a preemptor holds its freed share.",
         m->preempt_hold_rejections},
        {"gpu_extender_gang_pins_total",
         "Gang members' filters answered with one node, their cards booked for the group's "
         "cycle.",
         m->gang_pins},
        {"gpu_extender_gang_rejections_total",
         "Filter and prioritize verdicts that rejected a node because a gang member's tentative "
         "booking holds its cards.",
         m->gang_rejections},
        {"gpu_extender_gang_binds_failed_total",
         "Gangs whose binds all failed before any Binding, because a member's reservation "
         "failed or did not land in half a bind deadline.",
         m->gang_binds_failed},
        {"gpu_extender_requeue_pokes_total",
         "Pods refused for GPU capacity that the ledger held, requeued (annotated) once it "
         "freed.",
         m->requeue_pokes},
        {"gpu_extender_binds_shed_total",
         "Binds answered with an error before any API call: ledger.binds_in_flight binds were "
         "running until the bind had half its deadline left.",
         m->binds_shed},
        {"gpu_extender_filters_paced_total",
         "Filter calls answered only once no bind waited for its place among "
         "ledger.binds_in_flight (at most half a bind deadline later).",
         m->filters_paced},
        {"gpu_extender_forwarded_total",
         "Calls (filter, prioritize, bind, preempt, the debug explains) this replica forwarded "
         "to the leader replica and answered with its answer (replicas.forward).",
         m->forwarded},
        {"gpu_extender_forward_fallbacks_total",
         "Scheduling calls this replica answered itself because the leader replica could not "
         "be reached.",
         m->forward_fallbacks},
    };
    enum gx_err rc = GX_OK;

    for (size_t i = 0; i < GX_ARRAY_LEN(one) && rc == GX_OK; i++) {
        rc = header(b, one[i].name, "counter", one[i].help);
        if (rc == GX_OK) {
            rc = gx_buf_addf(b, "%s %llu\n", one[i].name, (unsigned long long)one[i].v);
        }
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_preempt_nodes_dropped_total", "counter",
                    "Candidate nodes left out of preempt answers, by reason.");
    }
    for (int d = 1; d < GX_PDROP_COUNT && rc == GX_OK; d++) {
        rc = gx_buf_addf(b, "gpu_extender_preempt_nodes_dropped_total{reason=\"%s\"} %llu\n",
                         gx_preempt_drop_name((enum gx_preempt_drop)d),
                         (unsigned long long)m->preempt_dropped[d]);
    }
    return rc;
}

static enum gx_err
render_decisions(const struct gx_metrics *m, struct gx_buf *b)
{
    enum gx_err rc;

    rc = header(b, "gpu_extender_filter_nodes_kept_total", "counter",
                "Nodes kept by filter decisions.");
    if (rc == GX_OK) {
        rc = gx_buf_addf(b, "gpu_extender_filter_nodes_kept_total %llu\n",
                         (unsigned long long)m->nodes_kept);
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_filter_rejections_total", "counter",
                    "Nodes rejected by filter decisions, by reason.");
    }
    for (int r = 1; r < GX_REASON_COUNT && rc == GX_OK; r++) {
        rc = gx_buf_addf(b, "gpu_extender_filter_rejections_total{reason=\"%s\"} %llu\n",
                         gx_reason_name((enum gx_reason)r), (unsigned long long)m->rejections[r]);
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_binds_total", "counter", "Bind requests by outcome.");
    }
    for (int o = 0; o < GX_BIND_COUNT && rc == GX_OK; o++) {
        rc = gx_buf_addf(b, "gpu_extender_binds_total{outcome=\"%s\"} %llu\n", bind_names[o],
                         (unsigned long long)m->binds[o]);
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_ledger_cas_conflicts_total", "counter",
                    "Ledger Lease updates that lost a compare-and-swap race (409).");
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(b, "gpu_extender_ledger_cas_conflicts_total %llu\n",
                         (unsigned long long)m->up[GX_UP_KUBERNETES].cas_conflicts);
    }
    if (rc == GX_OK) {
        rc = render_preempt(m, b);
    }
    return rc;
}

static enum gx_err
render_upstreams(const struct gx_metrics *m, int64_t now_ms, struct gx_buf *b)
{
    enum gx_err rc;

    rc = header(b, "gpu_extender_upstream_requests_total", "counter",
                "Requests to upstreams (Prometheus, API server, source files).");
    for (int u = 0; u < GX_UP_COUNT && rc == GX_OK; u++) {
        rc = gx_buf_addf(b, "gpu_extender_upstream_requests_total{upstream=\"%s\"} %llu\n",
                         upstream_names[u], (unsigned long long)m->up[u].requests);
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_upstream_errors_total", "counter",
                    "Upstream errors by upstream and kind.");
    }
    for (int u = 0; u < GX_UP_COUNT && rc == GX_OK; u++) {
        for (int k = 0; k < GX_UPERR_COUNT && rc == GX_OK; k++) {
            rc = gx_buf_addf(b,
                             "gpu_extender_upstream_errors_total{upstream=\"%s\",kind=\"%s\"} "
                             "%llu\n",
                             upstream_names[u], gx_upkind_name(k),
                             (unsigned long long)m->up[u].errors[k]);
        }
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_upstream_duration_seconds", "histogram",
                    "Upstream request durations.");
    }
    for (int u = 0; u < GX_UP_COUNT && rc == GX_OK; u++) {
        rc = render_histo(b, "gpu_extender_upstream_duration_seconds", "upstream",
                          upstream_names[u], &m->up[u].duration);
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_source_syncs_total", "counter",
                    "Successful syncs of each source.");
    }
    for (int u = 0; u < GX_UP_COUNT && rc == GX_OK; u++) {
        rc = gx_buf_addf(b, "gpu_extender_source_syncs_total{upstream=\"%s\"} %llu\n",
                         upstream_names[u], (unsigned long long)m->up[u].syncs);
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_source_age_seconds", "gauge",
                    "Seconds since each source last succeeded (-1: never).");
    }
    for (int u = 0; u < GX_UP_COUNT && rc == GX_OK; u++) {
        double age = m->up[u].last_success_ms == 0
                         ? -1.0
                         : (double)(now_ms - m->up[u].last_success_ms) / 1000.0;
        rc = gx_buf_addf(b, "gpu_extender_source_age_seconds{upstream=\"%s\"} %.3f\n",
                         upstream_names[u], age);
    }
    return rc;
}

static enum gx_err
gauge(struct gx_buf *b, const char *name, const char *help, double v)
{
    enum gx_err rc = header(b, name, "gauge", help);

    if (rc == GX_OK) {
        rc = gx_buf_addf(b, "%s %.17g\n", name, v);
    }
    return rc;
}

static enum gx_err
render_state(const struct gx_metrics *m, const struct gx_metrics_gauges *g, struct gx_buf *b)
{
    enum gx_err rc = GX_OK;
    const struct {
        const char *name, *help;
        double v;
    } rows[] = {
        {"gpu_extender_ready", "1 when the extender is ready to serve.", g->ready},
        {"gpu_extender_inflight_requests", "Requests being answered.", (double)g->inflight},
        {"gpu_extender_inflight_bytes",
         "Bytes charged to requests in flight (bodies and their replies).",
         (double)g->inflight_bytes},
        {"gpu_extender_inflight_bytes_peak", "Most bytes ever charged to requests in flight.",
         (double)g->inflight_bytes_peak},
        {"gpu_extender_inflight_budget_bytes", "server.max_inflight_bytes.",
         (double)g->inflight_budget},
        {"gpu_extender_http_connections", "Client connections open.", (double)g->connections},
        {"gpu_extender_snapshot_nodes", "Nodes in the current snapshot.",
         (double)g->snapshot_nodes},
        {"gpu_extender_snapshot_gpu_nodes", "Nodes with GPUs in the current snapshot.",
         (double)g->snapshot_gpu_nodes},
        {"gpu_extender_snapshot_cards", "GPU cards in the current snapshot.",
         (double)g->snapshot_cards},
        {"gpu_extender_ledger_slots_used", "Time slots held by shared tenants, all cards.",
         (double)g->ledger_slots_used},
        {"gpu_extender_ledger_slots_total", "Time slots of all shareable cards.",
         (double)g->ledger_slots_total},
        {"gpu_extender_ledger_tenants", "Tenants recorded in the ledger.",
         (double)g->ledger_tenants},
        {"gpu_extender_gang_bookings",
         "Tentative bookings of gang members held for their group's binds.",
         (double)g->gang_bookings},
        {"gpu_extender_binds_running", "Binds talking to the API server now.",
         (double)g->binds_running},
        {"gpu_extender_binds_window",
         "Binds allowed at once now: ledger.binds_in_flight, halved while binds run out of "
         "time.",
         (double)g->binds_window},
        {"gpu_extender_binds_waiting",
         "Binds waiting for one of the ledger.binds_in_flight places.", (double)g->binds_waiting},
        {"gpu_extender_binds_shown",
         "Binds in flight whose booking the cache shows to filters; never more than the binds "
         "running and waiting.",
         (double)g->binds_shown},
        {"gpu_extender_leader",
         "1 while this replica holds the leader Lease and the others forward to it "
         "(replicas.forward), else 0.",
         (double)g->leader},
        {"gpu_extender_other_pods",
         "Bound pods the extender does not manage whose requests it counts per node "
         "(kubernetes.watch_all_pods).",
         (double)g->other_pods},
        {"gpu_extender_other_pods_cpu_cores", "CPU those pods request, all nodes.",
         (double)g->other_cpu_milli / 1000.0},
        {"gpu_extender_other_pods_memory_bytes", "Memory those pods request, all nodes.",
         (double)g->other_mem_bytes},
        {"gpu_extender_config_last_reload_success",
         "1 if the last config (re)load succeeded, 0 if it was rejected.", m->last_reload_ok},
        {"gpu_extender_config_last_reload_timestamp_seconds",
         "Wall time of the last config (re)load attempt.", (double)m->last_reload_ms / 1000.0},
        {"gpu_extender_config_hash", "FNV-1a hash of the loaded config text (low 53 bits).",
         (double)(m->config_hash & ((1ULL << 53) - 1))},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(rows) && rc == GX_OK; i++) {
        rc = gauge(b, rows[i].name, rows[i].help, rows[i].v);
    }
    if (rc == GX_OK) {
        rc = header(b, "gpu_extender_config_reloads_total", "counter", "Config reloads by result.");
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(b,
                         "gpu_extender_config_reloads_total{result=\"success\"} %llu\n"
                         "gpu_extender_config_reloads_total{result=\"failure\"} %llu\n",
                         (unsigned long long)m->reloads_ok, (unsigned long long)m->reloads_failed);
    }
    {
        const struct {
            const char *name, *help;
            uint64_t v;
        } counters[] = {
            {"gpu_extender_requests_refused_budget_total",
             "Requests answered 503 because server.max_inflight_bytes was spent.",
             g->refused_budget},
            {"gpu_extender_http_connections_peer_closed_total",
             "Connections shut down at once because the client closed with a request unfinished.",
             g->peer_closed},
            {"gpu_extender_log_lines_suppressed_total",
             "Log lines not written by the per-message rate limit.", g->log_suppressed},
        };
        for (size_t i = 0; i < GX_ARRAY_LEN(counters) && rc == GX_OK; i++) {
            rc = header(b, counters[i].name, "counter", counters[i].help);
            if (rc == GX_OK) {
                rc = gx_buf_addf(b, "%s %llu\n", counters[i].name,
                                 (unsigned long long)counters[i].v);
            }
        }
    }
    return rc;
}

enum gx_err
gx_metrics_render(const struct gx_metrics *m, const struct gx_metrics_gauges *g, struct gx_buf *out)
{
    enum gx_err rc = render_requests(m, out);

    if (rc == GX_OK) {
        rc = render_decisions(m, out);
    }
    if (rc == GX_OK) {
        rc = render_upstreams(m, g->now_ms, out);
    }
    if (rc == GX_OK) {
        rc = render_state(m, g, out);
    }
    return rc;
}
