/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sim_gang.c - gangs in the trace replay (src/sim/sim_gang.c): the
 * --gangs spec, which arrivals form gangs and of what size, a gang placed
 * all or nothing (a failed one leaves the ledger and the cluster as they
 * were), and no gang partially bound in whole runs.
 */
#include "gx_simgen.h"
#include "gx_test.h"

#include "ledger.h"
#include "sim.h"

#include <stdio.h>
#include <string.h>

GX_SUITE(sim_gang);

#define N_NODES GX_SIMGEN_MIXED_NODES

/* test_sim's mixed trace (shares, whole GPUs of 1, 2 and 8, CPU pods), or two_nodes' cluster */
static struct gx_trace_node nodes[N_NODES];
static struct gx_trace_pod pods[GX_SIMGEN_MIXED_PODS];

/* A pod of @gpus whole GPUs, or of a share when @milli < 1000. */
static struct gx_trace_pod
pod_of(const char *name, int gpus, int milli)
{
    struct gx_trace_pod p = {.cpu_milli = 1000, .memory_mib = 1024, .num_gpu = gpus};

    (void)snprintf(p.name, sizeof(p.name), "%s", name);
    p.gpu_milli = gpus == 0 ? 0 : milli;
    p.creation_s = p.deletion_s = -1;
    return p;
}

Test(sim_gang, spec_gives_sizes_and_the_class_of_pods)
{
    struct gx_sim_gangs g;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_sim_gangs_parse("2,4,8", &g, &why), GX_OK, "%s", why.text);
    cr_assert_eq(g.n_sizes, 3);
    cr_assert(g.sizes[0] == 2 && g.sizes[1] == 4 && g.sizes[2] == 8);
    cr_assert_eq(g.pods, GX_SIM_GANG_WHOLE, "whole GPUs when the class is left out");
    cr_assert_eq(gx_sim_gangs_parse("3:multi", &g, &why), GX_OK);
    cr_assert(g.n_sizes == 1 && g.sizes[0] == 3 && g.pods == GX_SIM_GANG_MULTI);
    cr_assert_eq(gx_sim_gangs_parse("64:gpu", &g, &why), GX_OK);
    cr_assert(g.sizes[0] == 64 && g.pods == GX_SIM_GANG_GPU);
}

Test(sim_gang, spec_refuses_what_is_not_one_and_says_why)
{
    static const char *const bad[] = {
        "",    "1", "65",        "2,", ",2", "2:",    "2:x", "-2",     "2 4",
        "2;4", "x", "2:whole,4", "+2", " 2", "2,1,4", "0x2", "2:gpus", "2,3,4,5,6,7,8,9,10"};
    struct gx_sim_gangs g = {.n_sizes = 99};

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        struct gx_why why = {{0}};
        cr_assert_eq(gx_sim_gangs_parse(bad[i], &g, &why), GX_EINVAL, "'%s'", bad[i]);
        cr_assert(strstr(why.text, "gang") != NULL, "'%s': %s", bad[i], why.text);
        cr_assert_eq(g.n_sizes, 99, "'%s': nothing written on failure", bad[i]);
    }
}

Test(sim_gang, class_picks_the_members)
{
    const struct gx_trace_pod share = pod_of("s", 1, 500), one = pod_of("o", 1, 1000),
                              two = pod_of("t", 2, 1000), cpu = pod_of("c", 0, 0);
    const struct gx_sim_gangs whole = {.pods = GX_SIM_GANG_WHOLE},
                              multi = {.pods = GX_SIM_GANG_MULTI}, gpu = {.pods = GX_SIM_GANG_GPU};

    cr_assert(!gx_sim_gang_member(&whole, &share) && gx_sim_gang_member(&whole, &one) &&
              gx_sim_gang_member(&whole, &two) && !gx_sim_gang_member(&whole, &cpu));
    cr_assert(!gx_sim_gang_member(&multi, &share) && !gx_sim_gang_member(&multi, &one) &&
              gx_sim_gang_member(&multi, &two) && !gx_sim_gang_member(&multi, &cpu));
    cr_assert(gx_sim_gang_member(&gpu, &share) && gx_sim_gang_member(&gpu, &one) &&
              gx_sim_gang_member(&gpu, &two) && !gx_sim_gang_member(&gpu, &cpu));
}

/* One seed of the generated trace as it is (no tuning, no shuffle) under @spec ("" none). */
static struct gx_sim_result
run_as_is(const char *spec, enum gx_sim_mode mode, double tune)
{
    struct gx_config *cfg = gx_simgen_config("{\"sharing\":{\"default_slots\":4}}");
    struct gx_sim_trace t = gx_simgen_mixed(nodes, pods);
    struct gx_sim_opts o;
    struct gx_sim_result r;
    struct gx_why why = {{0}};

    gx_sim_opts_default(&o, cfg);
    o.mode = mode;
    o.tune = tune;
    o.shuffle = tune > 0;
    if (spec[0] != '\0') {
        cr_assert_eq(gx_sim_gangs_parse(spec, &o.gangs, &why), GX_OK, "%s", why.text);
    }
    cr_assert_eq(gx_sim_run(&o, &t, 3, NULL, NULL, &r, &why), GX_OK, "%s", why.text);
    gx_config_free(cfg);
    return r;
}

Test(sim_gang, arrivals_of_the_class_are_cut_into_gangs_of_the_given_size)
{
    struct gx_sim_trace t = gx_simgen_mixed(nodes, pods);
    const struct gx_sim_gangs whole = {.pods = GX_SIM_GANG_WHOLE};
    struct gx_sim_result alone = run_as_is("", GX_SIM_EXTENDER, 0), three, mixed;
    size_t members = 0;

    for (size_t i = 0; i < t.n_pods; i++) {
        members += gx_sim_gang_member(&whole, &t.pods[i]);
    }
    cr_assert_gt(members, 10);
    three = run_as_is("3", GX_SIM_EXTENDER, 0);
    cr_assert_eq(three.gangs, (members + 2) / 3, "%zu members in gangs of 3: %zu", members,
                 three.gangs);
    cr_assert_eq(three.gangs, three.gangs_placed + three.gangs_failed);
    mixed = run_as_is("2,4", GX_SIM_EXTENDER, 0);
    cr_assert(mixed.gangs > (members + 3) / 4 && mixed.gangs < members / 2,
              "sizes 2 and 4 both drawn: %zu gangs of %zu members", mixed.gangs, members);
    cr_assert_eq(alone.gangs, 0, "no spec, no gang");
    cr_assert_eq(three.pods, alone.pods, "the same workload as pod by pod");
}

/* Every ledger entry with a tenant, encoded, into @out: the ledger's content for a comparison. */
static void
dump_ledger(const struct gx_ledger *l, struct gx_buf *out)
{
    gx_buf_reset(out);
    for (size_t i = 0; i < N_NODES; i++) {
        const struct gx_ledger_node *e = gx_ledger_node(l, nodes[i].name);
        if (e != NULL && e->n_tenants > 0) {
            cr_assert_eq(gx_buf_addf(out, "%s=", e->node), GX_OK);
            cr_assert_eq(gx_ledger_node_encode(e, out), GX_OK);
        }
    }
}

/* Two 8-GPU nodes, one share booked on the first: the cluster the gangs below land on. */
static struct gx_sim_live *
two_nodes(struct gx_sim_opts *o, struct gx_sim_trace *t)
{
    static const struct gx_trace_pod share = {
        .name = "share", .cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = 500};
    struct gx_sim_live *l = NULL;
    struct gx_sim_placed at;
    struct gx_why why = {{0}};

    for (int i = 0; i < 2; i++) {
        nodes[i] = (struct gx_trace_node){.cpu_milli = 96000, .memory_mib = 786432, .gpus = 8};
        (void)snprintf(nodes[i].name, sizeof(nodes[i].name), "node-%02d", i);
        (void)snprintf(nodes[i].model, sizeof(nodes[i].model), "T4");
    }
    *t = (struct gx_sim_trace){.nodes = nodes, .n_nodes = 2};
    cr_assert_eq(gx_sim_live_new(o, t, 1, &l, &why), GX_OK, "%s", why.text);
    cr_assert(gx_sim_live_place(l, &share, &at));
    return l;
}

Test(sim_gang, a_gang_that_cannot_fit_leaves_the_ledger_and_the_cluster_as_before)
{
    struct gx_config *cfg = gx_simgen_config("{\"sharing\":{\"default_slots\":4}}");
    struct gx_trace_pod m[3] = {pod_of("a", 4, 1000), pod_of("b", 4, 1000), pod_of("c", 8, 1000)};
    const struct gx_trace_pod *gang[3] = {&m[0], &m[1], &m[2]};
    struct gx_sim_placed at[3];
    struct gx_sim_opts o;
    struct gx_sim_trace t;
    struct gx_sim_live *l;
    struct gx_buf before, after;
    int64_t alloc0, alloc1, cap;

    gx_sim_opts_default(&o, cfg);
    l = two_nodes(&o, &t);
    gx_buf_init(&before, 1 << 20);
    gx_buf_init(&after, 1 << 20);
    dump_ledger(gx_sim_live_ledger(l), &before);
    gx_sim_live_alloc(l, &alloc0, &cap);
    /* 4 + 4 fit beside the share, then 8 whole cards are left on no node */
    cr_assert_not(gx_sim_live_place_gang(l, gang, 3, at));
    dump_ledger(gx_sim_live_ledger(l), &after);
    gx_sim_live_alloc(l, &alloc1, &cap);
    cr_assert_str_eq(after.data, before.data, "no booking of the gang left");
    cr_assert_eq(alloc1, alloc0, "no card of the gang left taken");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(at[i].node, -1, "member %d reported unplaced", i);
    }
    cr_assert_eq(gx_sim_live_errors(l), 0);
    /* the rollback gave everything back: the two 4-GPU members alone now fit */
    cr_assert(gx_sim_live_place_gang(l, gang, 2, at));
    dump_ledger(gx_sim_live_ledger(l), &after);
    cr_assert(strstr(after.data, "pod\":\"sim/a\"") != NULL && strstr(after.data, "sim/b") != NULL,
              "%s", after.data);
    gx_buf_release(&before);
    gx_buf_release(&after);
    gx_sim_live_free(l);
    gx_config_free(cfg);
}

Test(sim_gang, runs_leave_no_gang_partially_bound)
{
    static const char *const specs[] = {"2,4,8", "2,3:gpu", "2:multi"};
    static const enum gx_sim_mode modes[] = {GX_SIM_EXTENDER, GX_SIM_COUNT_ONLY, GX_SIM_RANDOM};

    for (size_t s = 0; s < GX_ARRAY_LEN(specs); s++) {
        for (size_t k = 0; k < GX_ARRAY_LEN(modes); k++) {
            struct gx_sim_result r = run_as_is(specs[s], modes[k], 1.3);
            cr_assert_eq(r.gangs_partial, 0, "%s mode %zu", specs[s], k);
            cr_assert_gt(r.gangs_failed, 0, "%s mode %zu: rollbacks ran", specs[s], k);
            cr_assert_gt(r.gangs_placed, 0, "%s mode %zu", specs[s], k);
            /* a failed gang's pods count as failed; only the last gang may have one */
            cr_assert_geq(r.failed + 1, r.gangs_failed * 2);
            cr_assert_eq(r.ledger_errs, 0, "%s mode %zu", specs[s], k);
            cr_assert(r.gangs_100 <= r.gangs && r.gangs_failed_100 <= r.gangs_failed);
        }
    }
}

Test(sim_gang, json_reports_the_gangs_of_a_series_with_them)
{
    struct gx_sim_result r[2] = {{.seed = 1, .gangs = 10, .gangs_placed = 7, .gangs_failed = 3},
                                 {.seed = 2, .gangs = 4, .gangs_placed = 4}};
    struct gx_sim_series s[2] = {{.trace = "t", .policy = "fgd", .runs = r, .n_runs = 2},
                                 {.trace = "t", .policy = "fgd", .runs = r, .n_runs = 2}};
    struct gx_buf b;

    s[1].gangs = "2,4";
    r[1].gangs_100 = r[1].gangs_failed_100 = 1;
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_sim_json(s, 2, &b), GX_OK);
    cr_assert(strstr(b.data, "\"pods\":0},{\"policy\"") != NULL, "no gangs key without a spec");
    cr_assert(strstr(b.data, "\"pods\":0,\"gangs\":{\"spec\":\"2,4\",\"total\":14,\"placed\":11,"
                             "\"failed\":3,\"partially_bound\":0,\"total_at_100\":1,"
                             "\"failed_at_100\":1}}]}\n") != NULL,
              "%s", b.data + b.len - 160);
    gx_buf_release(&b);
}
