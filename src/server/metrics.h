/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h - the extender's own Prometheus metrics, with a fixed and
 * bounded label set (verbs, reasons, upstreams, error kinds; never pods or
 * nodes). Counters and histograms are plain fields updated by the event
 * loop thread; gx_metrics_render writes the text exposition format.
 */
#ifndef GX_METRICS_H
#define GX_METRICS_H

#include "buf.h"
#include "common.h"
#include "httpc.h"
#include "preempt.h"
#include "score.h"

enum gx_verb {
    GX_VERB_FILTER,
    GX_VERB_PRIORITIZE,
    GX_VERB_BIND,
    GX_VERB_PREEMPT,
    GX_VERB_OTHER,
    GX_VERB_COUNT
};

/** Lowercase verb name ("filter"). */
const char *gx_verb_name(enum gx_verb v);

enum gx_upstream { GX_UP_PROMETHEUS, GX_UP_KUBERNETES, GX_UP_FILES, GX_UP_COUNT };

const char *gx_upstream_name(enum gx_upstream u);

enum gx_bind_outcome { GX_BIND_OK, GX_BIND_REPEAT, GX_BIND_REJECTED, GX_BIND_ERROR, GX_BIND_COUNT };

const char *gx_bind_outcome_name(enum gx_bind_outcome o);

#define GX_STATUS_CLASSES 4 /* 2xx, 4xx, 5xx, other */

struct gx_metrics {
    uint64_t requests[GX_VERB_COUNT][GX_STATUS_CLASSES];
    struct gx_histo duration[GX_VERB_COUNT];
    uint64_t nodes_kept;
    uint64_t rejections[GX_REASON_COUNT];
    uint64_t binds[GX_BIND_COUNT];
    /* preempt verb: calls decided, nodes answered and dropped, victims named, holds */
    uint64_t preempt_calls;
    uint64_t preempt_nodes_kept;
    uint64_t preempt_dropped[GX_PDROP_COUNT];
    uint64_t preempt_victims;
    uint64_t preempt_holds_activated;
    uint64_t preempt_hold_rejections; /* filter verdicts turned by a preemptor's hold */
    uint64_t gang_pins;               /* gang members' filters answered with one node */
    uint64_t gang_rejections;         /* verdicts turned by a gang member's tentative booking */
    uint64_t gang_binds_failed;       /* gangs whose binds all failed before any Binding */
    uint64_t requeue_pokes;           /* pods refused for capacity, requeued once it freed */
    uint64_t binds_shed;              /* binds never started: ledger.binds_in_flight were busy */
    uint64_t filters_paced;           /* filter calls that waited for binds waiting at the gate */
    uint64_t forwarded;               /* scheduling calls answered by the leader (forward.c) */
    uint64_t forward_fallbacks;       /* ... answered here: the leader could not be reached */
    struct gx_upstats up[GX_UP_COUNT];
    uint64_t reloads_ok, reloads_failed;
    bool last_reload_ok;
    int64_t last_reload_ms;
    uint64_t config_hash;
};

/** Zero every field. */
void gx_metrics_init(struct gx_metrics *m);

/** Count a finished request of @verb with HTTP @status taking @seconds. */
void gx_metrics_request(struct gx_metrics *m, enum gx_verb verb, int status, double seconds);

/** Gauges the owner computes at scrape time. */
struct gx_metrics_gauges {
    bool ready;
    int64_t now_ms;
    int64_t snapshot_nodes;
    int64_t snapshot_gpu_nodes;
    int64_t snapshot_cards;
    int64_t ledger_slots_used;
    int64_t ledger_slots_total;
    int64_t ledger_tenants;
    int64_t gang_bookings; /* gang members' tentative bookings held */
    int64_t binds_running; /* binds through the gate (ledger.binds_in_flight) */
    int64_t binds_waiting; /* binds waiting for a place in it */
    int64_t binds_window;  /* the places in force now (gate.h) */
    int64_t binds_shown;   /* binds whose booking the cache shows (gx_leases_hold) */
    int64_t leader;        /* 1: this replica holds the leader Lease (replicas.forward) */
    /* the all-pods watch (podsum): pods not managed by the extender, counted per node */
    int64_t other_pods;
    int64_t other_cpu_milli;
    int64_t other_mem_bytes;
    int64_t inflight;
    /* the HTTP server's memory budget (gx_http_get_stats) */
    int64_t inflight_bytes;      /* charged to requests in flight now */
    int64_t inflight_bytes_peak; /* most ever charged at once */
    int64_t inflight_budget;     /* server.max_inflight_bytes */
    int64_t connections;         /* open client connections */
    uint64_t refused_budget;     /* requests answered 503 by the budget */
    uint64_t peer_closed;        /* connections shut down because the client closed */
    uint64_t log_suppressed;     /* log lines held back by the rate limit */
};

/** Render every metric in the text exposition format (version 0.0.4). */
enum gx_err gx_metrics_render(const struct gx_metrics *m, const struct gx_metrics_gauges *g,
                              struct gx_buf *out) GX_WUR;

#endif
