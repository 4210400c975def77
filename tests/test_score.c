/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_score.c - the filter verdict and the score of score.c and
 * score_parts.c: reasons, the checks that need no card, CPU pods, label
 * and weighted parts, relative scores. The card choice is
 * test_score_pick.c's, a card's state test_score_card.c's, fgd
 * test_score_fgd.c's.
 */
#include "gx_scoreworld.h"

GX_SUITE(score);

Test(score, reason_texts_names_and_resolvability)
{
    static const struct {
        enum gx_reason r;
        const char *text, *name;
        bool unresolvable;
    } want[] = {
        {GX_REASON_UNKNOWN_NODE, "node unknown to gpu-extender", "unknown_node", true},
        {GX_REASON_NOT_READY, "node not ready", "not_ready", false},
        {GX_REASON_NO_GPUS, "node has no GPUs", "no_gpus", true},
        {GX_REASON_TOO_FEW_GPUS, "too few usable GPUs", "too_few_gpus", true},
        {GX_REASON_UNHEALTHY, "GPU unhealthy", "unhealthy", false},
        {GX_REASON_BUSY, "GPU utilization above limit", "busy", false},
        {GX_REASON_NO_SLOT, "no GPU time slot available", "no_slot", false},
        {GX_REASON_NO_MEMORY, "insufficient GPU memory", "no_memory", false},
        {GX_REASON_STALE, "GPU metrics stale", "stale", false},
        {GX_REASON_SHARING_MISMATCH, "GPU sharing mode does not match the request",
         "sharing_mismatch", true},
        {GX_REASON_BAD_REQUEST, "invalid GPU request", "bad_request", true},
        {GX_REASON_SHORTLIST, "better nodes kept", "shortlist", false},
    };

    cr_assert_str_eq(gx_reason_text(GX_REASON_NONE), "");
    for (size_t i = 0; i < GX_ARRAY_LEN(want); i++) {
        cr_assert_str_eq(gx_reason_text(want[i].r), want[i].text);
        cr_assert_str_eq(gx_reason_name(want[i].r), want[i].name);
        cr_assert_eq(gx_reason_unresolvable(want[i].r), want[i].unresolvable, "%s", want[i].name);
    }
}

Test(score, only_nodes_the_pod_fits_are_left_unlisted)
{
    for (int r = GX_REASON_NONE; r < GX_REASON_COUNT; r++) {
        cr_expect_eq(gx_reason_unlisted((enum gx_reason)r),
                     r == GX_REASON_GANG_PINNED || r == GX_REASON_SHORTLIST, "%s",
                     gx_reason_name((enum gx_reason)r));
    }
}

Test(score, cpu_pod_keeps_every_node_and_prefers_cpu_nodes)
{
    struct world w;
    struct gx_podreq r = req_none();
    struct gx_node cpu;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    memset(&cpu, 0, sizeof(cpu));
    cpu.name = "cpu-1";
    cpu.ready = true;
    gx_score_node(&w.ctx, &r, NULL, &v);
    cr_assert(v.keep);
    cr_assert_eq(v.score, 10);
    gx_score_node(&w.ctx, &r, &cpu, &v);
    cr_assert(v.keep);
    cr_assert_eq(v.score, 10);
    gx_score_node(&w.ctx, &r, &w.node, &v);
    cr_assert(v.keep);
    cr_assert_eq(v.score, 0);
    w.cfg.prefer_cpu_nodes_for_cpu_pods = false;
    gx_score_node(&w.ctx, &r, &w.node, &v);
    cr_assert_eq(v.score, 5);
    gx_score_node(&w.ctx, &r, &cpu, &v);
    cr_assert_eq(v.score, 5);
    world_free(&w);
}

Test(score, gpu_pod_rejects_unknown_cpu_and_not_ready_nodes)
{
    struct world w;
    struct gx_podreq r = req_excl(1);
    struct gx_node cpu;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    gx_score_node(&w.ctx, &r, NULL, &v);
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_UNKNOWN_NODE);
    memset(&cpu, 0, sizeof(cpu));
    cpu.name = "cpu-1";
    cpu.ready = true;
    gx_score_node(&w.ctx, &r, &cpu, &v);
    cr_assert_eq(v.reason, GX_REASON_NO_GPUS);
    r = req_shared(1, 0, -1);
    gx_score_node(&w.ctx, &r, &cpu, &v);
    cr_assert_eq(v.reason, GX_REASON_NO_GPUS);
    w.node.ready = false;
    cr_assert_eq(decide(&w, r).reason, GX_REASON_NOT_READY);
    w.node.ready = true;
    w.node.unschedulable = true;
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_NOT_READY);
    w.node.unschedulable = false;
    cr_assert(decide(&w, req_excl(1)).keep);
    world_free(&w);
}

Test(score, rejects_malformed_requests)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    cr_assert_eq(decide(&w, req_excl(0)).reason, GX_REASON_BAD_REQUEST);
    cr_assert_eq(decide(&w, req_shared(0, 0, -1)).reason, GX_REASON_BAD_REQUEST);
    cr_assert_eq(decide(&w, req_shared(1, -1, -1)).reason, GX_REASON_BAD_REQUEST);
    cr_assert_eq(decide(&w, req_shared(1, 0, 250)).reason, GX_REASON_BAD_REQUEST);
    gx_score_node(&w.ctx, NULL, &w.node, &v);
    cr_assert_eq(v.reason, GX_REASON_BAD_REQUEST);
    cr_assert(gx_reason_unresolvable(v.reason));
    world_free(&w);
}

/* True when @a and @b are the same verdict, field by field (padding is not part of it). */
static bool
verdict_eq(const struct gx_verdict *a, const struct gx_verdict *b)
{
    const struct gx_score_parts *p = &a->parts, *q = &b->parts;

    if (a->keep != b->keep || a->reason != b->reason || a->score != b->score ||
        a->score_exact != b->score_exact || a->n_cards != b->n_cards ||
        a->device_plugin != b->device_plugin || a->usable_cards != b->usable_cards) {
        return false;
    }
    if (p->util != q->util || p->memory != q->memory || p->temp != q->temp ||
        p->labels != q->labels || p->fit != q->fit || p->trend != q->trend ||
        p->metrics_neutral != q->metrics_neutral) {
        return false;
    }
    for (int i = 0; i < a->n_cards; i++) {
        if (a->cards[i] != b->cards[i]) {
            return false;
        }
    }
    return true;
}

Test(score, empty_ledger_entry_decides_like_no_entry)
{
    struct world w;
    struct gx_verdict a, b;

    world_init(&w, "gpu-1", 2);
    w.cards[1].v[GX_SIG_UTIL] = 50;
    a = decide(&w, req_shared(2, 1000, -1));
    book(&w, "x", 0, false, 2, 1000);
    b = decide(&w, req_shared(2, 1000, -1));
    cr_assert(b.keep);
    cr_assert_float_eq(b.parts.fit, 2.0 / 4.0, 1e-9); /* binpack joins the used card */
    cr_assert_eq(gx_ledger_release(w.ledger, "x"), 1);
    b = decide(&w, req_shared(2, 1000, -1));
    cr_assert_not_null(gx_ledger_node(w.ledger, "gpu-1"));
    cr_assert(verdict_eq(&a, &b));
    world_free(&w);
}

Test(score, label_rules_in_and_gt)
{
    struct world w;
    struct gx_kv labels[2] = {{"nvidia.com/gpu.family", "ampere"},
                              {"nvidia.com/gpu.memory", "40960"}};
    char *fam[] = {"ampere", "hopper"};
    struct gx_label_rule rules[2];
    struct gx_verdict v;

    world_init(&w, "gpu-1", 1);
    memset(rules, 0, sizeof(rules));
    rules[0].label = "nvidia.com/gpu.family";
    rules[0].op = GX_OP_IN;
    rules[0].values = fam;
    rules[0].n_values = 2;
    rules[0].weight = 60;
    rules[1].label = "nvidia.com/gpu.memory";
    rules[1].op = GX_OP_GT;
    rules[1].number = 32000;
    rules[1].weight = 40;
    w.cfg.label_rules = rules;
    w.cfg.n_label_rules = 2;
    w.cfg.w_util = w.cfg.w_memory = w.cfg.w_temp = w.cfg.w_fit = 0;
    w.node.labels = labels;
    w.node.n_labels = 2;
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert_float_eq(v.parts.labels, 1.0, 1e-9);
    cr_assert_eq(v.score, 10);
    labels[1].value = "lots"; /* not a number: Gt does not match */
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert_float_eq(v.parts.labels, 0.5 + 60.0 / 200.0, 1e-9);
    cr_assert_eq(v.score, 8);
    labels[0].value = "volta";
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert_float_eq(v.parts.labels, 0.5, 1e-9);
    cr_assert_eq(v.score, 5);
    rules[0].op = GX_OP_NOT_IN;
    rules[0].weight = -100;
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert_float_eq(v.parts.labels, 0.5 - 100.0 / 280.0, 1e-9);
    world_free(&w);
}

Test(score, weights_combine_parts_and_zero_weights_give_five)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 1);
    w.cfg.w_memory = w.cfg.w_temp = w.cfg.w_labels = w.cfg.w_fit = 0;
    w.cards[0].v[GX_SIG_UTIL] = 30;
    v = decide(&w, req_excl(1));
    cr_assert_float_eq(v.parts.util, 0.7, 1e-9);
    cr_assert_eq(v.score, 7);
    w.cfg.w_util = 0;
    cr_assert_eq(decide(&w, req_excl(1)).score, 5);
    world_free(&w);
}

Test(score, relative_scores_give_ten_to_the_best_node_only)
{
    const double exact[] = {4.2, 4.25, -1.0, 3.0, 4.25, 3.6};
    int out[GX_ARRAY_LEN(exact)];

    gx_score_relative(exact, GX_ARRAY_LEN(exact), out);
    cr_assert_eq(out[1], 10, "the best");
    cr_assert_eq(out[4], 10, "a tie with the best is the best");
    cr_assert_eq(out[2], 0, "a dropped node");
    cr_assert_eq(out[3], 0, "the worst kept node");
    cr_assert_eq(out[0], 8, "9 x (4.2 - 3) / 1.25 rounded down");
    cr_assert_eq(out[5], 4, "9 x 0.6 / 1.25 rounded down");
}

Test(score, relative_scores_of_equal_or_single_nodes_are_ten)
{
    const double same[] = {2.0, 2.0, 2.0};
    const double one[] = {0.0};
    const double none[] = {-1.0, -1.0};
    int out[3];

    gx_score_relative(same, 3, out);
    cr_assert(out[0] == 10 && out[1] == 10 && out[2] == 10);
    gx_score_relative(one, 1, out);
    cr_assert_eq(out[0], 10);
    gx_score_relative(none, 2, out);
    cr_assert(out[0] == 0 && out[1] == 0);
    gx_score_relative(NULL, 0, out); /* an empty call touches nothing */
}

Test(score, a_shortlist_keeps_the_best_and_draws_among_equals_at_the_cut)
{
    const double in[] = {4.0, 9.0, -1.0, 7.0, 7.0, 2.0, 7.0, 9.5};
    double exact[GX_ARRAY_LEN(in)], scratch[GX_ARRAY_LEN(in)];
    int kept[GX_ARRAY_LEN(in)] = {0};
    uint64_t rng = 11;

    for (int round = 0; round < 300; round++) {
        memcpy(exact, in, sizeof(in));
        cr_assert_eq(gx_score_shortlist(exact, GX_ARRAY_LEN(in), 4, scratch, &rng), 3);
        for (size_t i = 0; i < GX_ARRAY_LEN(in); i++) {
            kept[i] += exact[i] >= 0.0;
        }
        cr_assert_eq((exact[3] >= 0.0) + (exact[4] >= 0.0) + (exact[6] >= 0.0), 2,
                     "two of the three 7s");
    }
    cr_assert(kept[1] == 300 && kept[7] == 300, "the two best always");
    cr_assert(kept[0] == 0 && kept[2] == 0 && kept[5] == 0, "the worse and the dropped never");
    for (size_t i = 3; i <= 6; i += i == 4 ? 2 : 1) {
        /* 2 of 3 places: 200 of 300 expected; not the call order */
        cr_assert(kept[i] > 150 && kept[i] < 250, "a 7 kept %d times of 300", kept[i]);
    }
}

Test(score, a_shortlist_no_shorter_than_the_call_keeps_every_node)
{
    double exact[] = {1.0, -1.0, 3.0};
    double scratch[3];
    uint64_t rng = 1;

    cr_assert_eq(gx_score_shortlist(exact, 3, 0, scratch, &rng), 0, "0: no shortlist");
    cr_assert_eq(gx_score_shortlist(exact, 3, 2, scratch, &rng), 0, "two kept, two wanted");
    cr_assert(exact[0] == 1.0 && exact[1] == -1.0 && exact[2] == 3.0);
    cr_assert_eq(gx_score_shortlist(exact, 3, 1, scratch, &rng), 1);
    cr_assert(exact[0] == -1.0 && exact[2] == 3.0, "the best one left");
}

/* Without a random stream (explain): every score equal to the cut is kept, only those below go. */
Test(score, a_shortlist_without_a_draw_keeps_every_tie_at_the_cut)
{
    double exact[] = {2.0, 5.0, 2.0, -1.0, 1.0, 2.0};
    double scratch[6];

    cr_assert_eq(gx_score_shortlist(exact, 6, 2, scratch, NULL), 1, "only the 1.0 goes");
    cr_assert(exact[0] == 2.0 && exact[1] == 5.0 && exact[2] == 2.0 && exact[5] == 2.0,
              "the three tied at the cut stay");
    cr_assert(exact[3] == -1.0 && exact[4] == -1.0);
    cr_assert_float_eq(gx_score_shortlist_key(false, 4.0), -1.0, 0.0, "refused: dropped");
    cr_assert_float_eq(gx_score_shortlist_key(true, -0.5), 0.0, 0.0, "kept: never negative");
}

/* Against sorting: every score above the k-th best kept, none below, k kept in all. */
Test(score, a_shortlist_keeps_what_sorting_would)
{
    enum { N = 300 };
    double exact[N], copy[N], scratch[N];
    uint64_t s = 7, rng = 3;

    for (int round = 0; round < 200; round++) {
        size_t k = (size_t)(round % 40) + 1, kept = 0, fit = 0;
        double sorted[N], cut;
        for (size_t i = 0; i < N; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            /* few distinct values: many ties, some dropped nodes */
            exact[i] = (double)((s >> 33) % 12) - 2.0;
            exact[i] = exact[i] < 0.0 ? -1.0 : exact[i];
            copy[i] = exact[i];
            if (exact[i] >= 0.0) {
                sorted[fit++] = exact[i];
            }
        }
        /* the k-th best by insertion sort, descending */
        for (size_t i = 1; i < fit; i++) {
            for (size_t j = i; j > 0 && sorted[j - 1] < sorted[j]; j--) {
                double t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        }
        cut = sorted[k - 1];
        (void)gx_score_shortlist(exact, N, k, scratch, &rng);
        for (size_t i = 0; i < N; i++) {
            if (copy[i] > cut) {
                cr_assert(exact[i] >= 0.0, "round %d: node %zu above the cut kept", round, i);
            } else if (copy[i] < cut) {
                cr_assert(exact[i] < 0.0, "round %d: node %zu below the cut dropped", round, i);
            }
            kept += exact[i] >= 0.0;
        }
        cr_assert_eq(kept, k, "round %d: %zu kept", round, kept);
    }
}

Test(score, trend_part_scores_the_slope_only_with_its_weight)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 1);
    w.cards[0].v[GX_SIG_UTIL_TREND] = 0.1; /* rising 6 points a minute */
    v = decide(&w, req_excl(1));
    cr_assert_float_eq(v.parts.trend, 0.0, 1e-9, "0.5 - 0.1 x 600 / 100, clamped");
    cr_assert_float_eq(v.score_exact,
                       10.0 *
                           (20 * 0.95 + 20 * v.parts.memory + 20 * v.parts.temp +
                            20 * v.parts.labels + 20 * v.parts.fit) /
                           100.0,
                       1e-9, "weight 0: the trend is not in the score");
    w.cfg.w_util = w.cfg.w_memory = w.cfg.w_temp = w.cfg.w_labels = w.cfg.w_fit = 0;
    w.cfg.w_trend = 10;
    cr_assert_eq(decide(&w, req_excl(1)).score, 0, "rising fast");
    w.cards[0].v[GX_SIG_UTIL_TREND] = -0.05;
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert_float_eq(v.parts.trend, 0.8, 1e-9);
    cr_assert_eq(v.score, 8, "falling 3 points a minute");
    w.cards[0].at_ms[GX_SIG_UTIL_TREND] = 0; /* no slope known */
    cr_assert_eq(decide(&w, req_excl(1)).score, 5, "unknown is neutral");
    world_free(&w);
}
