/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ksched.c - kube-scheduler's in-tree fit and scores, checked against
 * the expectations of Kubernetes' own tests (least_allocated_test.go,
 * most_allocated_test.go, balanced_allocation_test.go) where they apply.
 */
#include "gx_test.h"

#include "ksched.h"

GX_SUITE(ksched);

#define MI (INT64_C(1024) * 1024)

/* A node with @cpu milli and @mem bytes allocatable, 4 GPUs, and @rc/@rm requested. */
static struct gx_ksched_node
node(int64_t cpu, int64_t mem, int64_t rc, int64_t rm)
{
    struct gx_ksched_node n = {.alloc = {.cpu_milli = cpu, .mem_bytes = mem, .gpus = 4}};
    struct gx_ksched_res used = {.cpu_milli = rc, .mem_bytes = rm};

    if (rc > 0 || rm > 0) {
        gx_ksched_add(&n, &used);
    }
    return n;
}

Test(ksched, least_allocated_matches_kubernetes_example)
{
    /* least_allocated_test.go: 4000m/10000 node, pod 3000m/5000 -> (25 + 50) / 2 = 37 */
    struct gx_ksched_profile p;
    struct gx_ksched_node n = node(4000, 10000, 0, 0);
    struct gx_ksched_res pod = {.cpu_milli = 3000, .mem_bytes = 5000};

    gx_ksched_profile_default(&p);
    cr_assert_eq(gx_ksched_fit_score(&p, &n, &pod), 37);
}

Test(ksched, most_allocated_matches_kubernetes_example)
{
    /* most_allocated_test.go: same node and pod -> (75 + 50) / 2 = 62 */
    struct gx_ksched_profile p;
    struct gx_ksched_node n = node(4000, 10000, 0, 0);
    struct gx_ksched_res pod = {.cpu_milli = 3000, .mem_bytes = 5000};

    gx_ksched_profile_default(&p);
    p.strategy = GX_KS_MOST_ALLOCATED;
    cr_assert_eq(gx_ksched_fit_score(&p, &n, &pod), 62);
}

Test(ksched, zero_requests_count_as_defaults_in_fit_score)
{
    struct gx_ksched_profile p;
    struct gx_ksched_node n = node(1000, 1000 * MI, 0, 0);
    struct gx_ksched_res pod = {0};

    gx_ksched_profile_default(&p);
    p.strategy = GX_KS_MOST_ALLOCATED;
    /* 100m of 1000m = 10, 200Mi of 1000Mi = 20 -> 15 */
    cr_assert_eq(gx_ksched_fit_score(&p, &n, &pod), 15);
    cr_assert_eq(gx_ksched_balanced_score(&n, &pod), 0, "best-effort pods score 0");
}

Test(ksched, gpu_weight_adds_the_gpu_resource)
{
    struct gx_ksched_profile p;
    struct gx_ksched_node n = node(4000, 4000 * MI, 0, 0);
    struct gx_ksched_res pod = {.cpu_milli = 1000, .mem_bytes = 1000 * MI, .gpus = 4};

    gx_ksched_profile_default(&p);
    p.strategy = GX_KS_MOST_ALLOCATED;
    cr_assert_eq(gx_ksched_fit_score(&p, &n, &pod), 25);
    p.gpu_weight = 2;
    cr_assert_eq(gx_ksched_fit_score(&p, &n, &pod), (25 + 25 + 200) / 4);
}

Test(ksched, balanced_scores_the_change_of_balance)
{
    /* empty 4000m/10000 node, pod 3000m/5000: with 0.75/0.5 -> 87, without 0/0 -> 100 */
    struct gx_ksched_node n = node(4000, 10000, 0, 0);
    struct gx_ksched_res pod = {.cpu_milli = 3000, .mem_bytes = 5000};

    cr_assert_eq(gx_ksched_balanced_score(&n, &pod), 50 + (50 + 87 - 100) / 2);
}

Test(ksched, fit_filter_checks_cpu_memory_gpus_and_replicas)
{
    struct gx_ksched_node n = node(4000, 8 * MI, 3000, 0);
    struct gx_ksched_res ok = {.cpu_milli = 1000, .mem_bytes = 8 * MI, .gpus = 4};
    struct gx_ksched_res cpu = {.cpu_milli = 1001};
    struct gx_ksched_res gpu = {.gpus = 5};
    struct gx_ksched_res rep = {.shared = 1};

    cr_assert(gx_ksched_fits(&n, &ok));
    cr_assert_not(gx_ksched_fits(&n, &cpu));
    cr_assert_not(gx_ksched_fits(&n, &gpu));
    cr_assert_not(gx_ksched_fits(&n, &rep), "no replicas advertised");
    n.alloc.shared = 1;
    cr_assert(gx_ksched_fits(&n, &rep));
    gx_ksched_add(&n, &rep);
    cr_assert_not(gx_ksched_fits(&n, &rep));
}

Test(ksched, extender_points_and_nodes_to_find)
{
    struct gx_ksched_profile p;

    gx_ksched_profile_default(&p);
    cr_assert_eq(gx_ksched_extender_points(&p, 7), 350);
    cr_assert_eq(gx_ksched_nodes_to_find(&p, 50), 50);
    /* 1213 nodes: 50 - 1213/125 = 41 % -> 497 */
    cr_assert_eq(gx_ksched_nodes_to_find(&p, 1213), 497);
    cr_assert_eq(gx_ksched_nodes_to_find(&p, 200), 100, "at least 100 nodes");
    p.pct_nodes_to_score = 100;
    cr_assert_eq(gx_ksched_nodes_to_find(&p, 1213), 1213);
}
