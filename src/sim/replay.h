/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.h - the time-based replay (the second experiment of
 * docs/scheduling-quality.md): the trace's pods arrive over time, run for
 * their trace duration (deletion_time - creation_time) and leave, through
 * the simulator's pipeline (gx_sim_live: ksched around gx_score_node,
 * gx_admit_reserve and the ledger). A pod that fits nowhere waits and is
 * retried as kube-scheduler's queue does. Every pod has a synthetic GPU
 * utilization (seeded; the model is documented in replay.c and the doc);
 * the extender sees it per card as dcgm-exporter via Prometheus would
 * show it: sampled, and late by the scrape and refresh delay.
 * Pure: no I/O, no clock.
 */
#ifndef GX_REPLAY_H
#define GX_REPLAY_H

#include "sim.h"

struct gx_replay_opts {
    struct gx_sim_opts sim; /* pipeline, policy and profile (tune and shuffle unused) */
    double load;            /* offered GPU load: requested milli-GPU in steady state / capacity */
    int64_t horizon_s;      /* arrivals over [0, horizon) */
    int64_t warmup_s;       /* the measures cover [warmup, horizon): the cluster fills first */
    int64_t sample_s;       /* dcgm-exporter's collection interval: one utilization sample */
    int64_t lag_s;          /* how late the extender sees a sample (scrape + refresh) */
    int64_t flush_s;        /* an unschedulable pod is retried after this at the latest */
    double ramp_frac;       /* share of pods whose utilization ramps up after start */
    bool trend;             /* feed the utilization slope (deriv over 5 min) to the snapshot */
    bool poke_cooled;       /* a busy card that cools retries the waiters (server/requeue.h) */
};

/**
 * Defaults: load 1.0, 2 h measured over the second hour, samples every
 * 30 s seen 30 s late, flush 300 s, 30 % ramps, cooled cards poke.
 */
void gx_replay_opts_default(struct gx_replay_opts *o, const struct gx_config *cfg);

struct gx_replay_result {
    uint64_t seed;
    size_t arrived, placed, never_placed; /* of the pods arriving after the warm-up */
    double pending_mean_s;                /* never placed: pending until the horizon */
    double pending_p95_s;
    double hot_card_min; /* card-minutes with true utilization > filter.max_utilization_pct */
    double hot_shared_card_min; /* of those, on cards with two or more tenants */
    double over_card_min;       /* card-minutes with the tenants' true demand above the card */
    size_t over_cards;          /* cards over-admitted at least once */
    double alloc_pct;           /* time-mean GPU allocation (milli booked / capacity) */
    double util_pct;            /* time-mean true utilization of all cards */
    int64_t ledger_errs;        /* ledger refusals (must stay 0) */
    size_t ledger_left;         /* tenants in the ledger after every pod left (must be 0) */
    size_t order_errs;    /* a pod placed before it arrived or left before placed (must be 0) */
    size_t cooled_placed; /* pods placed by a retry a cooled card brought (all arrivals) */
};

/** Run one seed. GX_EINVAL with @why for a trace without times or GPUs; GX_ENOMEM. */
enum gx_err gx_replay_run(const struct gx_replay_opts *o, const struct gx_sim_trace *t,
                          uint64_t seed, struct gx_replay_result *out, struct gx_why *why) GX_WUR;

/** Mean of @n results (counts are means too). */
void gx_replay_mean(const struct gx_replay_result *r, size_t n, struct gx_replay_result *mean);

#endif
