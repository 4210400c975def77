/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ksched.h - what kube-scheduler itself does around the extender, as its
 * in-tree plugins compute it (Kubernetes v1.37 pkg/scheduler/framework/
 * plugins/noderesources): the NodeResourcesFit filter (CPU, memory, GPU
 * count), its LeastAllocated / MostAllocated score, the
 * NodeResourcesBalancedAllocation score, the extender's score scaling and
 * the share of nodes it scores. Used by the simulator; integer arithmetic
 * as in Go so totals and ties match. Pure, no I/O.
 */
#ifndef GX_KSCHED_H
#define GX_KSCHED_H

#include "common.h"

enum gx_ksched_strategy { GX_KS_LEAST_ALLOCATED, GX_KS_MOST_ALLOCATED };

/** The parts of a KubeSchedulerConfiguration profile the simulation honours. */
struct gx_ksched_profile {
    enum gx_ksched_strategy strategy; /* NodeResourcesFit scoringStrategy.type */
    int fit_weight;                   /* plugin weight of NodeResourcesFit, 1 */
    int balanced_weight;              /* NodeResourcesBalancedAllocation, 1; 0 = disabled */
    int gpu_weight;         /* weight of the GPU resource in Fit's scoring resources, 0 = none */
    int extender_weight;    /* extenders[].weight, 5 */
    int pct_nodes_to_score; /* percentageOfNodesToScore, 0 = adaptive, 100 = all */
};

/** A default profile: LeastAllocated, weights 1/1, no GPU resource, extender weight 5. */
void gx_ksched_profile_default(struct gx_ksched_profile *p);

/**
 * Requests of one pod (or sums on a node): CPU milli, memory bytes, whole
 * GPUs (nvidia.com/gpu) and time-slicing replicas (nvidia.com/gpu.shared,
 * only without the extender: with it, shares ask for a resource the
 * scheduler ignores).
 */
struct gx_ksched_res {
    int64_t cpu_milli;
    int64_t mem_bytes;
    int64_t gpus;
    int64_t shared;
};

/** One node as the scheduler's cache holds it. */
struct gx_ksched_node {
    struct gx_ksched_res alloc;     /* allocatable */
    struct gx_ksched_res requested; /* sum of the pods' requests */
    struct gx_ksched_res nonzero;   /* same with the scheduler's defaults for zero requests */
};

/** The pod's requests with kube-scheduler's non-zero defaults (100m CPU, 200Mi). */
void gx_ksched_nonzero(const struct gx_ksched_res *pod, struct gx_ksched_res *out);

/** NodeResourcesFit filter: true when @pod fits @n's free CPU, memory and GPUs. */
bool gx_ksched_fits(const struct gx_ksched_node *n, const struct gx_ksched_res *pod);

/** Account @pod on @n (after a bind). Cannot fail. */
void gx_ksched_add(struct gx_ksched_node *n, const struct gx_ksched_res *pod);

/** Take @pod off @n (it was deleted): the inverse of gx_ksched_add. Cannot fail. */
void gx_ksched_remove(struct gx_ksched_node *n, const struct gx_ksched_res *pod);

/** NodeResourcesFit score, 0..100, under @p's strategy. */
int64_t gx_ksched_fit_score(const struct gx_ksched_profile *p, const struct gx_ksched_node *n,
                            const struct gx_ksched_res *pod);

/** NodeResourcesBalancedAllocation score, 0..100 (CPU and memory). */
int64_t gx_ksched_balanced_score(const struct gx_ksched_node *n, const struct gx_ksched_res *pod);

/** Weighted in-tree total of one node: fit x fit_weight + balanced x balanced_weight. */
int64_t gx_ksched_plugins_score(const struct gx_ksched_profile *p, const struct gx_ksched_node *n,
                                const struct gx_ksched_res *pod);

/** What an extender's 0..10 score adds: score x weight x (100 / 10). */
int64_t gx_ksched_extender_points(const struct gx_ksched_profile *p, int64_t score);

/** How many feasible nodes the scheduler looks for among @n_nodes before it scores. */
size_t gx_ksched_nodes_to_find(const struct gx_ksched_profile *p, size_t n_nodes);

#endif
