/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim.h - replay a cluster trace through the real decision code, the way a
 * deployment runs it: kube-scheduler's in-tree fit and scores (ksched),
 * the extender's filter and prioritize score (gx_score_node) added with
 * the extender weight, the highest total wins (ties by the seeded RNG),
 * then bind's card choice booked in the ledger (gx_ledger_add). Pods are
 * classified by gx_podreq_parse from Pod structs built like the pods users
 * write. No decision rule lives here; only the scheduler's pipeline and the
 * experiment's bookkeeping (allocation and fragmentation rates).
 * Pure: no I/O, no clock; the caller reads files and writes results.
 */
#ifndef GX_SIM_H
#define GX_SIM_H

#include "buf.h"
#include "config.h"
#include "ksched.h"
#include "trace.h"

struct gx_snapshot;
struct gx_ledger;

/** The clock every simulated decision reads (metric ages are relative to it). */
#define GX_SIM_NOW_MS INT64_C(1700000000000)

/** Points of the arrived-workload axis: 0..130 % in steps of 1 %. */
#define GX_SIM_STEPS 131
/** Cards one placement may hold (GX_MAX_PICK of score.h). */
#define GX_SIM_MAX_PICK 16

/** Pods one gang may have. */
#define GX_SIM_GANG_MAX 64
/** Sizes one --gangs spec may list. */
#define GX_SIM_GANG_SIZES 8

/** Which arrivals --gangs groups into gangs. */
enum gx_sim_gang_pods {
    GX_SIM_GANG_WHOLE, /* pods of whole GPUs (no share): data-parallel workers */
    GX_SIM_GANG_MULTI, /* pods of 2 GPUs or more only */
    GX_SIM_GANG_GPU    /* every GPU pod, shares included */
};

/**
 * The --gangs grouping (sim_gang.c): the arrivals of class @pods, in
 * arrival order, are cut into gangs, each the next n of them with n drawn
 * uniformly from @sizes by a stream of its own (the arrival order stays the
 * pod-by-pod run's). A gang is scheduled when its last member arrives, all
 * or nothing; the last one may be smaller. Other pods are scheduled alone.
 */
struct gx_sim_gangs {
    int sizes[GX_SIM_GANG_SIZES];
    size_t n_sizes; /* 0: no gangs */
    enum gx_sim_gang_pods pods;
};

/**
 * Parse "SIZE[,SIZE...][:whole|multi|gpu]" (sizes 2..GX_SIM_GANG_MAX; class
 * whole when left out) into *@out. GX_EINVAL with @why for anything else.
 */
enum gx_err gx_sim_gangs_parse(const char *spec, struct gx_sim_gangs *out,
                               struct gx_why *why) GX_WUR;

/** True when @p belongs to the class @g groups. Cannot fail. */
bool gx_sim_gang_member(const struct gx_sim_gangs *g, const struct gx_trace_pod *p);

enum gx_sim_mode {
    GX_SIM_EXTENDER,   /* kube-scheduler + gpu-extender under cfg (its score.policy) */
    GX_SIM_COUNT_ONLY, /* kube-scheduler + NVIDIA device plugin, no extender */
    GX_SIM_RANDOM      /* any node that fits, card as the extender picks it */
};

struct gx_sim_opts {
    const struct gx_config *cfg;      /* extender config (borrowed) */
    struct gx_ksched_profile profile; /* the scheduler around it (the gpu-scheduler's) */
    struct gx_ksched_profile
        cpu_profile; /* default-scheduler's, for pods the extender never sees */
    enum gx_sim_mode mode;
    double tune;        /* append random pods up to tune x GPU capacity; <= 0: as is */
    bool shuffle;       /* shuffle the pods (the published runs do) */
    bool exact_score;   /* add the unrounded extender score (measures the 0..10 cost) */
    bool share_slices;  /* ask shares as time slices (rounded up) instead of gpu-milli */
    bool sees_all_pods; /* the extender learns CPU-only pods' requests (gx_ledger_set_untracked) */
    bool cpu_pods_too;  /* CPU-only pods go through the extender as well (empty managedResources) */
    int replicas;       /* count-only: time-slicing replicas per card */
    struct gx_sim_gangs gangs; /* all-or-nothing jobs; n_sizes 0: pod by pod */
};

/** Defaults: extender, default profile, tune 1.3, shuffled, 4 replicas. */
void gx_sim_opts_default(struct gx_sim_opts *o, const struct gx_config *cfg);

/** Result of one seed. */
struct gx_sim_result {
    uint64_t seed;
    double alloc_pct[GX_SIM_STEPS]; /* allocated / capacity when arrived reaches i % */
    double frag_pct[GX_SIM_STEPS];  /* fragmented / capacity at the same points */
    size_t pods;                    /* pods arrived (after tuning) */
    size_t failed;                  /* pods that fit nowhere */
    int64_t capacity_milli;
    int64_t over_cards;  /* cards booked past 1000 milli at the end (count-only over-admits) */
    int64_t ledger_errs; /* ledger refused a booking the decision made (must stay 0) */
    size_t gangs, gangs_placed, gangs_failed; /* --gangs: attempts and outcomes */
    size_t gangs_partial; /* gangs left with some members held, not all (must stay 0) */
    size_t gangs_100, gangs_failed_100; /* attempts and failures before 100 % arrived */
};

/** The trace of one run: nodes and pods, borrowed. */
struct gx_sim_trace {
    const struct gx_trace_node *nodes;
    size_t n_nodes;
    const struct gx_trace_pod *pods;
    size_t n_pods;
};

/** Called every 1024 pods: (ctx, pods done, pods total). May be NULL. */
typedef void (*gx_sim_progress_cb)(void *ctx, size_t done, size_t total);

/**
 * Run one seed. GX_EINVAL with @why for a trace the model cannot hold (a
 * node with more cards than the snapshot keeps, no GPU capacity); GX_ENOMEM.
 */
enum gx_err gx_sim_run(const struct gx_sim_opts *o, const struct gx_sim_trace *t, uint64_t seed,
                       gx_sim_progress_cb cb, void *cb_ctx, struct gx_sim_result *out,
                       struct gx_why *why) GX_WUR;

/** Mean over @n results into @mean (pods, failed and the counts of gangs are sums). */
void gx_sim_mean(const struct gx_sim_result *r, size_t n, struct gx_sim_result *mean);

/** One policy's line of a report: its name and the seeds' results. */
struct gx_sim_series {
    const char *trace;
    const char *policy;
    const struct gx_sim_result *runs;
    size_t n_runs;
    const char *gangs; /* the --gangs spec, NULL: pod by pod */
};

/**
 * The --json document of the @n series @s, the same shape for one policy or
 * several: {"trace","seeds","arrived_pct","series":[{"policy","alloc_pct",
 * "frag_pct","failed_pods","pods"}...]}; a series with gangs adds
 * "gangs":{"spec","total","placed","failed","partially_bound","total_at_100",
 * "failed_at_100"} (the last two: gangs scheduled before 100 % arrived).
 * The series share trace and seeds (@s[0]'s are written); alloc and frag
 * are means over the seeds, the counts sums.
 */
enum gx_err gx_sim_json(const struct gx_sim_series *s, size_t n, struct gx_buf *out) GX_WUR;

/**
 * An SVG plot of allocation against arrived workload, y from 0 to 100 %, one
 * line per series; the legend gives each series' allocation at 100 %
 * arrived and the number of seeds the curves are the mean of.
 */
enum gx_err gx_sim_svg(const struct gx_sim_series *s, size_t n, struct gx_buf *out) GX_WUR;

/**
 * A progress report within a seed, "seed 42: 12,288/32,416 pods", into @out
 * (@n bytes, NUL-terminated, cut to fit). Cannot fail.
 */
void gx_sim_progress_text(char *out, size_t n, uint64_t seed, size_t done, size_t total);

/*
 * The same pipeline driven pod by pod, with departures (the time replay of
 * replay.h): a run's cluster without the experiment around it.
 */
struct gx_sim_live;

/** Where one pod went: snapshot node index, cards, and its ledger booking. */
struct gx_sim_placed {
    long node; /* -1: not placed */
    int cards[GX_SIM_MAX_PICK];
    int n_cards;
    bool booked;    /* the ledger holds it under uid "u<uid>" */
    bool untracked; /* its requests went to the ledger as a pod it does not hold */
    uint64_t uid;
};

/** A run's cluster for @t's nodes (pods unused). You own *out (gx_sim_live_free). */
enum gx_err gx_sim_live_new(const struct gx_sim_opts *o, const struct gx_sim_trace *t,
                            uint64_t seed, struct gx_sim_live **out, struct gx_why *why) GX_WUR;

/** One scheduling cycle for @p; false when it fits nowhere (*out untouched). */
bool gx_sim_live_place(struct gx_sim_live *l, const struct gx_trace_pod *p,
                       struct gx_sim_placed *out);

/**
 * A gang, all or nothing: place @p[0..n) one by one as gx_sim_live_place
 * does; when one fits nowhere, give back every member placed (as
 * gx_sim_live_leave) and return false with every @at[i].node -1.
 */
bool gx_sim_live_place_gang(struct gx_sim_live *l, const struct gx_trace_pod *const *p, size_t n,
                            struct gx_sim_placed *at);

/** @p leaves: its requests, cards and ledger booking are given back. Cannot fail. */
void gx_sim_live_leave(struct gx_sim_live *l, const struct gx_trace_pod *p,
                       const struct gx_sim_placed *at);

/**
 * The filters alone (in-tree, then the extender's) for @p on node @i: after
 * a failed cycle only a node that changed can take the pod (a queueing hint).
 */
bool gx_sim_live_fits(struct gx_sim_live *l, const struct gx_trace_pod *p, size_t i);

/** The snapshot the decisions read; the caller may set card metrics between cycles. */
struct gx_snapshot *gx_sim_live_snapshot(struct gx_sim_live *l);

/** The ledger bind books into. */
const struct gx_ledger *gx_sim_live_ledger(const struct gx_sim_live *l);

/** Allocated milli-GPU now (what the cards give) and the capacity. */
void gx_sim_live_alloc(const struct gx_sim_live *l, int64_t *allocated, int64_t *capacity);

/** Ledger refusals so far (must stay 0). */
int64_t gx_sim_live_errors(const struct gx_sim_live *l);

void gx_sim_live_free(struct gx_sim_live *l);

/** The simulations' seeded RNG (splitmix64): next value of the stream at *@state. */
uint64_t gx_sim_rng(uint64_t *state);

#endif
