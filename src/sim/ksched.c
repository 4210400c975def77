/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ksched.c - kube-scheduler's in-tree fit and scores, transcribed from
 * Kubernetes v1.37 (noderesources/{fit,least_allocated,most_allocated,
 * balanced_allocation,resource_allocation}.go and schedule_one.go). Kept
 * in Go's integer arithmetic: the totals decide ties, and ties are common.
 */
#include "ksched.h"

#include <math.h>

/* framework.MaxNodeScore and extenderv1.MaxExtenderPriority. */
#define MAX_NODE_SCORE 100
#define MAX_EXTENDER_PRIORITY 10
/* schedutil.DefaultMilliCPURequest and DefaultMemoryRequest. */
#define DEFAULT_MILLI_CPU 100
#define DEFAULT_MEMORY (INT64_C(200) * 1024 * 1024)
/* schedule_one.go: minFeasibleNodesToFind, minFeasibleNodesPercentageToFind. */
#define MIN_FEASIBLE_NODES 100
#define MIN_FEASIBLE_PERCENT 5

void
gx_ksched_profile_default(struct gx_ksched_profile *p)
{
    *p = (struct gx_ksched_profile){.strategy = GX_KS_LEAST_ALLOCATED,
                                    .fit_weight = 1,
                                    .balanced_weight = 1,
                                    .gpu_weight = 0,
                                    .extender_weight = 5,
                                    .pct_nodes_to_score = 0};
}

void
gx_ksched_nonzero(const struct gx_ksched_res *pod, struct gx_ksched_res *out)
{
    *out = *pod;
    if (out->cpu_milli == 0) {
        out->cpu_milli = DEFAULT_MILLI_CPU;
    }
    if (out->mem_bytes == 0) {
        out->mem_bytes = DEFAULT_MEMORY;
    }
}

bool
gx_ksched_fits(const struct gx_ksched_node *n, const struct gx_ksched_res *pod)
{
    /* fit.go fitsRequest: a resource the pod does not ask for is not checked */
    if (pod->cpu_milli > 0 && n->requested.cpu_milli + pod->cpu_milli > n->alloc.cpu_milli) {
        return false;
    }
    if (pod->mem_bytes > 0 && n->requested.mem_bytes + pod->mem_bytes > n->alloc.mem_bytes) {
        return false;
    }
    if (pod->gpus > 0 && n->requested.gpus + pod->gpus > n->alloc.gpus) {
        return false;
    }
    return pod->shared <= 0 || n->requested.shared + pod->shared <= n->alloc.shared;
}

/* Add (@sign 1) or take off (-1) @pod's requests on @n. */
static void
account(struct gx_ksched_node *n, const struct gx_ksched_res *pod, int64_t sign)
{
    struct gx_ksched_res nz;

    gx_ksched_nonzero(pod, &nz);
    n->requested.cpu_milli += sign * pod->cpu_milli;
    n->requested.mem_bytes += sign * pod->mem_bytes;
    n->requested.gpus += sign * pod->gpus;
    n->requested.shared += sign * pod->shared;
    n->nonzero.cpu_milli += sign * nz.cpu_milli;
    n->nonzero.mem_bytes += sign * nz.mem_bytes;
    n->nonzero.gpus += sign * pod->gpus;
    n->nonzero.shared += sign * pod->shared;
}

void
gx_ksched_add(struct gx_ksched_node *n, const struct gx_ksched_res *pod)
{
    account(n, pod, 1);
}

void
gx_ksched_remove(struct gx_ksched_node *n, const struct gx_ksched_res *pod)
{
    account(n, pod, -1);
}

/* leastRequestedScore / mostRequestedScore for one resource. */
static int64_t
resource_score(enum gx_ksched_strategy s, int64_t requested, int64_t capacity)
{
    if (capacity == 0) {
        return 0;
    }
    if (s == GX_KS_LEAST_ALLOCATED) {
        return requested > capacity ? 0 : ((capacity - requested) * MAX_NODE_SCORE) / capacity;
    }
    if (requested > capacity) {
        requested = capacity;
    }
    return (requested * MAX_NODE_SCORE) / capacity;
}

int64_t
gx_ksched_fit_score(const struct gx_ksched_profile *p, const struct gx_ksched_node *n,
                    const struct gx_ksched_res *pod)
{
    struct gx_ksched_res nz;
    const int64_t alloc[3] = {n->alloc.cpu_milli, n->alloc.mem_bytes, n->alloc.gpus};
    int64_t req[3];
    const int64_t weight[3] = {1, 1, p->gpu_weight};
    int64_t score = 0, wsum = 0;

    /* Fit scores on NonZeroRequested; extended resources use the plain sums */
    gx_ksched_nonzero(pod, &nz);
    req[0] = n->nonzero.cpu_milli + nz.cpu_milli;
    req[1] = n->nonzero.mem_bytes + nz.mem_bytes;
    req[2] = n->requested.gpus + pod->gpus;
    for (int i = 0; i < 3; i++) {
        if (alloc[i] == 0 || weight[i] == 0) {
            continue;
        }
        score += resource_score(p->strategy, req[i], alloc[i]) * weight[i];
        wsum += weight[i];
    }
    return wsum == 0 ? 0 : score / wsum;
}

/* balancedResourceScore: (1 - std of the CPU and memory fractions) x 100. */
static int64_t
balance(int64_t cpu, int64_t mem, const struct gx_ksched_res *alloc)
{
    double f[2];
    int k = 0;

    if (alloc->cpu_milli > 0) {
        f[k++] = fmin(1.0, (double)cpu / (double)alloc->cpu_milli);
    }
    if (alloc->mem_bytes > 0) {
        f[k++] = fmin(1.0, (double)mem / (double)alloc->mem_bytes);
    }
    if (k < 2) {
        return MAX_NODE_SCORE;
    }
    return (int64_t)((1.0 - fabs((f[0] - f[1]) / 2.0)) * (double)MAX_NODE_SCORE);
}

int64_t
gx_ksched_balanced_score(const struct gx_ksched_node *n, const struct gx_ksched_res *pod)
{
    int64_t with, without;

    /* isBestEffortPod: nothing requested of the scored resources */
    if (pod->cpu_milli == 0 && pod->mem_bytes == 0) {
        return 0;
    }
    with = balance(n->requested.cpu_milli + pod->cpu_milli, n->requested.mem_bytes + pod->mem_bytes,
                   &n->alloc);
    without = balance(n->requested.cpu_milli, n->requested.mem_bytes, &n->alloc);
    /* v1.37 scores the change of balance, brought back to 50..100 */
    return MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with - without) / 2;
}

int64_t
gx_ksched_plugins_score(const struct gx_ksched_profile *p, const struct gx_ksched_node *n,
                        const struct gx_ksched_res *pod)
{
    int64_t s = 0;

    if (p->fit_weight > 0) {
        s += gx_ksched_fit_score(p, n, pod) * p->fit_weight;
    }
    if (p->balanced_weight > 0) {
        s += gx_ksched_balanced_score(n, pod) * p->balanced_weight;
    }
    return s;
}

int64_t
gx_ksched_extender_points(const struct gx_ksched_profile *p, int64_t score)
{
    return score * p->extender_weight * (MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY);
}

size_t
gx_ksched_nodes_to_find(const struct gx_ksched_profile *p, size_t n_nodes)
{
    int64_t pct = p->pct_nodes_to_score, n;

    if (n_nodes < MIN_FEASIBLE_NODES) {
        return n_nodes;
    }
    if (pct <= 0) {
        pct = 50 - (int64_t)n_nodes / 125;
        if (pct < MIN_FEASIBLE_PERCENT) {
            pct = MIN_FEASIBLE_PERCENT;
        }
    }
    if (pct >= 100) {
        return n_nodes;
    }
    n = (int64_t)n_nodes * pct / 100;
    return n < MIN_FEASIBLE_NODES ? MIN_FEASIBLE_NODES : (size_t)n;
}
