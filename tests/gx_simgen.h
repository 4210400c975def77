/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gx_simgen.h - the small generated openb-like cluster and workload that
 * test_sim and test_replay run the simulator on, and the config helper
 * they share.
 */
#ifndef GX_SIMGEN_H
#define GX_SIMGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sim.h"

struct gx_simgen {
    int n_nodes, n_pods;
    uint32_t seed;
    const int *milli; /* the pods' GPU requests, drawn from: 0 CPU-only, < 1000 a share */
    size_t n_milli;
    const int64_t *dur; /* durations in s, drawn from; NULL: no times */
    size_t n_dur;
    bool one_model; /* every node T4; else T4 and G2 alternate */
};

/*
 * Fill @nodes[n_nodes] (every third one 8 GPUs / 96 CPUs, the others
 * 2 / 32) and @pods[n_pods] (2..9 CPUs, 4..16 GiB, a request of @g->milli;
 * with @g->dur one arrival every 100 s) deterministically from @g->seed.
 */
struct gx_sim_trace gx_simgen_trace(const struct gx_simgen *g, struct gx_trace_node *nodes,
                                    struct gx_trace_pod *pods);

/** Nodes and pods of the mixed trace (gx_simgen_mixed). */
#define GX_SIMGEN_MIXED_NODES 48
#define GX_SIMGEN_MIXED_PODS 150

/*
 * test_sim's trace into @nodes[GX_SIMGEN_MIXED_NODES] and
 * @pods[GX_SIMGEN_MIXED_PODS]: 8- and 2-GPU nodes of two models (192
 * cards); shares, whole GPUs (1, 2 and 8) and CPU pods asking about 1.1x
 * the cards, tuning adds the rest.
 */
struct gx_sim_trace gx_simgen_mixed(struct gx_trace_node *nodes, struct gx_trace_pod *pods);

/* @json parsed as a config over the defaults; the test fails if it does not parse. */
struct gx_config *gx_simgen_config(const char *json);

#endif
