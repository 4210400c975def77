/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sim.c - the trace replay on small generated clusters: invariants
 * (no card booked past its capacity, the ledger never refuses a decision,
 * allocation only grows and stays <= 100 %), baselines ordered as they
 * must be, and the JSON/SVG outputs.
 */
#include "gx_simgen.h"
#include "gx_test.h"

#include "sim.h"

#include <stdio.h>
#include <string.h>

GX_SUITE(sim);

#define N_PODS GX_SIMGEN_MIXED_PODS

static struct gx_trace_node nodes[GX_SIMGEN_MIXED_NODES];
static struct gx_trace_pod pods[N_PODS];

/* The mixed trace: 8-GPU and 2-GPU nodes of two models; shares, whole GPUs and CPU pods. */
static struct gx_sim_trace
gen_trace(void)
{
    return gx_simgen_mixed(nodes, pods);
}

/* Mean allocation at 100 % arrived over seeds 1..3 under @mode and @cfg. */
static double
alloc_at_100(const struct gx_config *cfg, enum gx_sim_mode mode, struct gx_sim_result *last)
{
    struct gx_sim_trace t = gen_trace();
    struct gx_sim_opts o;
    double sum = 0.0;

    gx_sim_opts_default(&o, cfg);
    o.mode = mode;
    o.replicas = 4;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct gx_why why = {{0}};
        cr_assert_eq(gx_sim_run(&o, &t, seed, NULL, NULL, last, &why), GX_OK, "%s", why.text);
        sum += last->alloc_pct[100];
    }
    return sum / 3.0;
}

Test(sim, extender_runs_keep_the_invariants)
{
    struct gx_config *cfg = gx_simgen_config("{\"sharing\":{\"default_slots\":4}}");
    struct gx_sim_result r;

    (void)alloc_at_100(cfg, GX_SIM_EXTENDER, &r);
    cr_assert_eq(r.over_cards, 0, "no card booked past 1000 milli");
    cr_assert_eq(r.ledger_errs, 0, "the ledger accepts every booking the decision made");
    cr_assert_gt(r.pods, N_PODS, "tuned to 1.3x capacity");
    cr_assert_gt(r.failed, 0, "130 %% cannot all fit");
    for (int i = 1; i < GX_SIM_STEPS; i++) {
        cr_assert_geq(r.alloc_pct[i], r.alloc_pct[i - 1]);
        cr_assert_leq(r.alloc_pct[i], 100.0);
        cr_assert_geq(r.frag_pct[i], 0.0);
    }
    gx_config_free(cfg);
}

Test(sim, seeds_are_reproducible_and_differ)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_sim_trace t = gen_trace();
    struct gx_sim_opts o;
    struct gx_sim_result a, b, c;
    struct gx_why why = {{0}};

    gx_sim_opts_default(&o, cfg);
    cr_assert_eq(gx_sim_run(&o, &t, 7, NULL, NULL, &a, &why), GX_OK);
    cr_assert_eq(gx_sim_run(&o, &t, 7, NULL, NULL, &b, &why), GX_OK);
    cr_assert_eq(gx_sim_run(&o, &t, 8, NULL, NULL, &c, &why), GX_OK);
    cr_assert_eq(memcmp(a.alloc_pct, b.alloc_pct, sizeof(a.alloc_pct)), 0);
    cr_assert_neq(memcmp(a.alloc_pct, c.alloc_pct, sizeof(a.alloc_pct)), 0);
    gx_config_free(cfg);
}

Test(sim, binpack_places_better_than_spread)
{
    struct gx_config *bin =
        gx_simgen_config("{\"sharing\":{\"default_slots\":4},\"score\":{\"policy\":\"binpack\"}}");
    struct gx_config *spr =
        gx_simgen_config("{\"sharing\":{\"default_slots\":4},\"score\":{\"policy\":\"spread\"}}");
    struct gx_sim_result r;
    double b = alloc_at_100(bin, GX_SIM_EXTENDER, &r);
    double s = alloc_at_100(spr, GX_SIM_EXTENDER, &r);

    cr_assert_gt(b, s, "binpack %.2f spread %.2f", b, s);
    gx_config_free(bin);
    gx_config_free(spr);
}

Test(sim, fgd_places_better_than_count_only_and_random)
{
    struct gx_config *cfg = gx_simgen_config("{\"score\":{\"policy\":\"fgd\",\"weights\":{"
                                             "\"utilization\":0,\"memory\":0,\"temperature\":0,"
                                             "\"labels\":0,\"fit\":1}}}");
    struct gx_sim_result r;
    double f = alloc_at_100(cfg, GX_SIM_EXTENDER, &r);
    double c = alloc_at_100(cfg, GX_SIM_COUNT_ONLY, &r);
    double x = alloc_at_100(cfg, GX_SIM_RANDOM, &r);

    cr_assert_geq(f, c, "fgd %.2f count-only %.2f", f, c);
    cr_assert_geq(f, x, "fgd %.2f random %.2f", f, x);
    gx_config_free(cfg);
}

Test(sim, count_only_over_admits_shared_cards)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_sim_result r;

    (void)alloc_at_100(cfg, GX_SIM_COUNT_ONLY, &r);
    cr_assert_gt(r.over_cards, 0, "replicas ignore milli-GPU");
    gx_config_free(cfg);
}

Test(sim, node_with_too_many_cards_is_refused)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_sim_trace t = gen_trace();
    struct gx_sim_opts o;
    struct gx_sim_result r;
    struct gx_why why = {{0}};

    nodes[3].gpus = 17;
    gx_sim_opts_default(&o, cfg);
    cr_assert_eq(gx_sim_run(&o, &t, 1, NULL, NULL, &r, &why), GX_EINVAL);
    cr_assert(strstr(why.text, "node-03") != NULL, "%s", why.text);
    gx_config_free(cfg);
}

/* Two seeds of a made-up run: 90 and 92 % at 100 % arrived, 3 of 20 pods failed. */
static void
two_seeds(struct gx_sim_result r[2])
{
    memset(r, 0, 2 * sizeof(*r));
    r[0].seed = 42;
    r[1].seed = 43;
    r[0].alloc_pct[100] = 90.0;
    r[1].alloc_pct[100] = 92.0;
    r[0].pods = r[1].pods = 10;
    r[1].failed = 3;
}

Test(sim, json_has_exactly_the_documented_keys)
{
    struct gx_sim_result r[2];
    struct gx_sim_series s = {.trace = "t", .policy = "binpack", .runs = r, .n_runs = 2};
    struct gx_buf b;

    two_seeds(r);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_sim_json(&s, 1, &b), GX_OK);
    cr_assert(strncmp(b.data, "{\"trace\":\"t\",\"seeds\":[42,43],\"arrived_pct\":[0,1,2,", 48) ==
                  0,
              "%.80s", b.data);
    cr_assert(strstr(b.data,
                     ",129,130],\"series\":[{\"policy\":\"binpack\",\"alloc_pct\":[0.00,") != NULL);
    cr_assert(strstr(b.data, ",91.00,") != NULL, "mean of the seeds");
    cr_assert(strstr(b.data, "\"failed_pods\":3,\"pods\":20}]}\n") != NULL, "%s",
              b.data + b.len - 40);
    gx_buf_release(&b);
}

/* One policy or several: the same document, one more entry in "series". */
Test(sim, json_has_one_shape_for_one_policy_or_several)
{
    struct gx_sim_result r[2];
    struct gx_sim_series s[2] = {{.trace = "t", .policy = "binpack", .runs = r, .n_runs = 2},
                                 {.trace = "t", .policy = "fgd", .runs = r, .n_runs = 2}};
    struct gx_buf one, two;
    const char *cut;

    two_seeds(r);
    gx_buf_init(&one, 1 << 20);
    gx_buf_init(&two, 1 << 20);
    cr_assert_eq(gx_sim_json(s, 1, &one), GX_OK);
    cr_assert_eq(gx_sim_json(s, 2, &two), GX_OK);
    cr_assert_eq(two.data[0], '{', "an object, not an array");
    cut = strstr(two.data, "},{\"policy\":\"fgd\",");
    cr_assert_not_null(cut, "the second policy is the next entry of series");
    cr_assert_eq(strncmp(one.data, two.data, (size_t)(cut - two.data) + 1), 0,
                 "the first policy's document is the start of both");
    cr_assert_str_eq(one.data + (cut - two.data) + 1, "]}\n");
    gx_buf_release(&one);
    gx_buf_release(&two);
}

/* The y of the polyline's point @i in @svg (points are "x,y" separated by blanks). */
static double
point_y(const char *svg, int i)
{
    const char *p = strstr(svg, "points=\"");
    double x = 0, y = -1;

    cr_assert_not_null(p);
    p += strlen("points=\"");
    for (int k = 0; k < i; k++) {
        p = strchr(p, ' ') + 1;
    }
    cr_assert_eq(sscanf(p, "%lf,%lf", &x, &y), 2);
    return y;
}

Test(sim, svg_starts_the_axis_at_zero_and_says_what_it_plots)
{
    struct gx_sim_result r[2];
    struct gx_sim_series s = {.trace = "t", .policy = "binpack", .runs = r, .n_runs = 2};
    struct gx_buf b;

    two_seeds(r);
    for (int i = 0; i < 100; i++) {
        r[0].alloc_pct[i] = r[1].alloc_pct[i] = i * 0.5;
    }
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_sim_svg(&s, 1, &b), GX_OK);
    cr_assert(strstr(b.data, "<polyline") != NULL && strstr(b.data, "</svg>") != NULL);
    cr_assert_gt(point_y(b.data, 0), point_y(b.data, 40) + 50.0,
                 "20 %% allocated is drawn well above 0 %%: the axis is not cut at 50 %%");
    cr_assert_gt(point_y(b.data, 40), point_y(b.data, 100) + 100.0);
    cr_assert(strstr(b.data, "text-anchor=\"end\">0</text>") != NULL, "a y tick at 0 %%");
    cr_assert(strstr(b.data, "GPU allocation at</text>") != NULL, "%s", b.data);
    cr_assert(strstr(b.data, "100 % arrived, mean</text>") != NULL);
    cr_assert(strstr(b.data, "of 2 seeds:</text>") != NULL);
    cr_assert(strstr(b.data, "binpack 91.00 %") != NULL);
    gx_buf_release(&b);
}

/*
 * Relative scores keep the exact score's choice: with no in-tree scores
 * beside the extender, a run answered relative to each call's best node
 * places exactly as a run adding the unrounded score, and unlike a run
 * answered with the rounded score.
 */
Test(sim, relative_scores_choose_as_the_exact_score_does)
{
    struct gx_config *rel = gx_simgen_config("{\"score\":{\"policy\":\"fgd\",\"relative\":true}}");
    struct gx_config *abs = gx_simgen_config("{\"score\":{\"policy\":\"fgd\"}}");
    struct gx_sim_trace t = gen_trace();
    struct gx_sim_opts o;
    struct gx_sim_result exact, relative, rounded;
    struct gx_why why = {{0}};

    gx_sim_opts_default(&o, abs);
    o.profile.fit_weight = o.profile.balanced_weight = 0;
    o.cpu_pods_too = o.sees_all_pods = true;
    o.exact_score = true;
    cr_assert_eq(gx_sim_run(&o, &t, 5, NULL, NULL, &exact, &why), GX_OK, "%s", why.text);
    o.exact_score = false;
    cr_assert_eq(gx_sim_run(&o, &t, 5, NULL, NULL, &rounded, &why), GX_OK, "%s", why.text);
    o.cfg = rel;
    cr_assert_eq(gx_sim_run(&o, &t, 5, NULL, NULL, &relative, &why), GX_OK, "%s", why.text);
    cr_assert_eq(memcmp(exact.alloc_pct, relative.alloc_pct, sizeof(exact.alloc_pct)), 0);
    cr_assert_eq(exact.failed, relative.failed);
    cr_assert_neq(memcmp(exact.alloc_pct, rounded.alloc_pct, sizeof(exact.alloc_pct)), 0,
                  "rounding to 0..10 changes choices on this cluster");
    gx_config_free(rel);
    gx_config_free(abs);
}

Test(sim, progress_text_groups_the_pod_counts)
{
    char s[64];

    gx_sim_progress_text(s, sizeof(s), 42, 12288, 32416);
    cr_assert_str_eq(s, "seed 42: 12,288/32,416 pods");
    gx_sim_progress_text(s, sizeof(s), 1, 0, 999);
    cr_assert_str_eq(s, "seed 1: 0/999 pods");
    gx_sim_progress_text(s, sizeof(s), 7, 1000, 1234567);
    cr_assert_str_eq(s, "seed 7: 1,000/1,234,567 pods");
    gx_sim_progress_text(s, 12, 7, 1000, 1234567);
    cr_assert_str_eq(s, "seed 7: 1,0", "cut to fit");
}

/* Tuning draws pods until the GPU demand reaches tune x capacity: with no GPU pod, never. */
Test(sim, a_trace_without_gpu_pods_is_refused_not_tuned_forever, .timeout = 10)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_sim_trace t = gen_trace();
    struct gx_trace_pod cpu[3];
    struct gx_sim_opts o;
    struct gx_sim_result r;
    struct gx_why why = {{0}};

    for (size_t i = 0; i < GX_ARRAY_LEN(cpu); i++) {
        cpu[i] = pods[0];
        cpu[i].num_gpu = 0;
        cpu[i].gpu_milli = 0;
    }
    t.pods = cpu;
    t.n_pods = GX_ARRAY_LEN(cpu);
    gx_sim_opts_default(&o, cfg);
    cr_assert_eq(gx_sim_run(&o, &t, 1, NULL, NULL, &r, &why), GX_EINVAL);
    cr_assert(strstr(why.text, "no pod of the trace asks for a GPU") != NULL, "%s", why.text);
    o.tune = 0;
    cr_assert_eq(gx_sim_run(&o, &t, 1, NULL, NULL, &r, &why), GX_OK, "%s", why.text);
    gx_config_free(cfg);
}
