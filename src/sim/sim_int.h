/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_int.h - the state of one simulated run and the calls the files of the
 * trace replay (sim.h) share: sim_model.c builds the cluster and models the
 * pods, sim_place.c runs one scheduling cycle, sim.c the experiment around
 * the cycles, sim_live.c the pod-by-pod API, sim_gang.c the gangs. Never
 * included outside them.
 */
#ifndef GX_SIM_INT_H
#define GX_SIM_INT_H

#include "fgd.h"
#include "podreq.h"
#include "score.h"
#include "sim.h"

/** Cards one trace node may have (the snapshot keeps up to this many). */
#define GX_SIM_MAX_CARDS GX_FGD_MAX_CARDS

/** One node of the run: the scheduler's view, the sim's account and the snapshot node. */
struct gx_sim_node {
    struct gx_ksched_node ks;
    const struct gx_node *node; /* in the snapshot */
    const char *model;          /* trace model (gpu_spec matches against it) */
    int n_cards;
    int free[GX_SIM_MAX_CARDS];       /* milli-GPU not requested yet */
    int64_t booked[GX_SIM_MAX_CARDS]; /* milli booked, may pass 1000 under count-only */
    int replicas[GX_SIM_MAX_CARDS];   /* count-only: time-slicing replicas in use */
    int64_t other_cpu, other_mem;     /* CPU-only pods' requests */
};

/** Everything one seed owns. */
struct gx_sim_state {
    const struct gx_sim_opts *o;
    const struct gx_sim_trace *t;
    struct gx_snapshot *snap;
    struct gx_ledger *ledger;
    struct gx_sim_node *nodes;
    size_t n;
    size_t *order; /* trace pod index per arrival (gx_sim_run only) */
    size_t n_order;
    uint64_t rng;              /* the seeded stream (gx_sim_rng) */
    struct gx_fgd_model seen;  /* the extender's typical pods, learned as pods arrive */
    struct gx_fgd_model truth; /* the workload's, for the fragmentation rate */
    size_t *feasible;
    double *exact;              /* per feasible node: the extender's score, negative = dropped */
    double *scratch;            /* per node: gx_score_shortlist's */
    int *ext;                   /* per feasible node: its 0..10 answer */
    struct gx_score_gaps *gaps; /* the extender's gap counts (its cache, as the server's) */
    size_t start;               /* kube-scheduler's nextStartNodeIndex */
    int64_t capacity, allocated, arrived;
    int64_t ledger_errs;
    uint64_t uid;
    struct gx_sim_placed last; /* the last pod placed (the live API reads it) */
};

/**
 * Set up @r for @o, @t's nodes and @seed: the snapshot as GFD and the
 * kubelet publish the nodes, the scheduler's and the sim's view of each,
 * an empty ledger. GX_EINVAL with @why for a trace the model cannot hold
 * (sim.h), GX_ENOMEM. Release @r with gx_sim_state_release on any result.
 */
enum gx_err gx_sim_state_init(struct gx_sim_state *r, const struct gx_sim_opts *o,
                              const struct gx_sim_trace *t, uint64_t seed,
                              struct gx_why *why) GX_WUR;

/** Free what @r owns (not @r). Cannot fail. */
void gx_sim_state_release(struct gx_sim_state *r);

/** Uniform in [0, @n) (@n > 0) from the stream at *@state. */
size_t gx_sim_rng_below(uint64_t *state, size_t n);

/** True when a trace pod is a share of one card. */
bool gx_sim_is_share(const struct gx_trace_pod *p);

/** The pod's shape for the fragmentation model. */
struct gx_fgd_shape gx_sim_shape_of(const struct gx_trace_pod *p);

/** A trace pod's node affinity, and the storage it points into. */
struct gx_sim_where {
    struct gx_where where;
    struct gx_sel_term term;
    struct gx_sel_expr expr;
    const char *values[16];
    char buf[GX_TRACE_SPEC_MAX];
};

/**
 * Where @p may run as its pod would say it: required node affinity on
 * nvidia.com/gpu.product In its gpu_spec's models (none without one).
 */
void gx_sim_where_of(const struct gx_trace_pod *p, struct gx_sim_where *w);

/** What the scheduler's NodeResourcesFit counts for @p in run @r. */
struct gx_ksched_res gx_sim_ks_request(const struct gx_sim_state *r, const struct gx_trace_pod *p);

/** In-tree filters: NodeResourcesFit and NodeAffinity on the product (gpu_spec). */
bool gx_sim_intree_fits(const struct gx_sim_node *s, const struct gx_trace_pod *p,
                        const struct gx_ksched_res *q);

/** Classify @p as a user would write it, through gx_podreq_parse (its result). */
enum gx_err gx_sim_classify(const struct gx_sim_state *r, const struct gx_trace_pod *p,
                            struct gx_podreq *req) GX_WUR;

/** The decision context the extender has in run @r (borrows from @r). */
struct gx_decide_ctx gx_sim_decide_ctx(const struct gx_sim_state *r);

/**
 * One scheduling cycle for @p: filters, scores, the extender's answer, the
 * card choice booked as bind books it; r->last says where it went. False
 * when it fits nowhere.
 */
bool gx_sim_schedule_one(struct gx_sim_state *r, const struct gx_trace_pod *p);

/** gx_sim_schedule_one, and where @p went into *@at (untouched when false). */
bool gx_sim_place(struct gx_sim_state *r, const struct gx_trace_pod *p, struct gx_sim_placed *at);

/**
 * Give back what gx_sim_place took for @p at @at: its requests, cards and
 * ledger booking (a pod leaving, or a gang rolled back). Cannot fail; a
 * booking the ledger no longer holds counts in r->ledger_errs.
 */
void gx_sim_unplace(struct gx_sim_state *r, const struct gx_trace_pod *p,
                    const struct gx_sim_placed *at);

/**
 * A gang, all or nothing: gx_sim_place for @p[0..n) in order; when one
 * fits nowhere, gx_sim_unplace every member placed, set every @at[i].node
 * to -1 and return false.
 */
bool gx_sim_place_gang(struct gx_sim_state *r, const struct gx_trace_pod *const *p, size_t n,
                       struct gx_sim_placed *at);

/** The gang being formed in a run (gx_sim_run), members in arrival order. */
struct gx_sim_gang_run {
    const struct gx_sim_gangs *spec;
    const struct gx_trace_pod *members[GX_SIM_GANG_MAX];
    struct gx_sim_placed at[GX_SIM_GANG_MAX];
    size_t n, want;
    uint64_t rng; /* the sizes' stream, apart from the scheduler's */
};

/** An empty gang for @spec, sizes drawn from a stream seeded by @seed. Cannot fail. */
void gx_sim_gang_start(struct gx_sim_gang_run *g, const struct gx_sim_gangs *spec, uint64_t seed);

/**
 * @p arrives: false when it is no gang member (the caller schedules it
 * alone); else it joins the gang, which is scheduled when complete, its
 * outcome counted in @out (a failed gang's pods in out->failed).
 */
bool gx_sim_gang_arrive(struct gx_sim_state *r, struct gx_sim_gang_run *g,
                        const struct gx_trace_pod *p, struct gx_sim_result *out);

/** Schedule the members still waiting (the last, smaller gang). */
void gx_sim_gang_flush(struct gx_sim_state *r, struct gx_sim_gang_run *g,
                       struct gx_sim_result *out);

#endif
