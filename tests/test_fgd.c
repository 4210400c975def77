/* SPDX-License-Identifier: Apache-2.0 */
/* test_fgd.c - typical-pod model and the FGD fragmentation of a node. */
#include "gx_test.h"

#include "fgd.h"

#include <math.h>
#include <string.h>

GX_SUITE(fgd);

static const struct gx_fgd_shape HALF = {
    .cpu_milli = 1000, .mem_mib = 1024, .gpus = 1, .milli = 500};
static const struct gx_fgd_shape WHOLE2 = {
    .cpu_milli = 1000, .mem_mib = 1024, .gpus = 2, .milli = 1000};

/* A node with 64 CPUs, 256 GiB and @n cards with @free milli free each. */
static struct gx_fgd_node
node(int n, const int *free)
{
    struct gx_fgd_node x = {.cpu_milli = 64000, .mem_mib = 262144, .n_cards = n};

    memcpy(x.free, free, (size_t)n * sizeof(int));
    return x;
}

Test(fgd, share_cannot_use_cards_with_less_than_its_share)
{
    struct gx_fgd_model m;
    const int free[4] = {1000, 300, 600, 0};
    struct gx_fgd_node n = node(4, free);

    gx_fgd_model_init(&m, 1000);
    gx_fgd_observe(&m, &HALF);
    cr_assert_float_eq(gx_fgd_frag(&m, &n), 300.0, 1e-9);
}

Test(fgd, whole_cards_need_wholly_free_ones)
{
    struct gx_fgd_model m;
    const int one_free[3] = {1000, 300, 600};
    const int two_free[3] = {1000, 1000, 600};
    struct gx_fgd_node a = node(3, one_free), b = node(3, two_free);

    gx_fgd_model_init(&m, 1000);
    gx_fgd_observe(&m, &WHOLE2);
    cr_assert_float_eq(gx_fgd_frag(&m, &a), 1900.0, 1e-9, "fewer than 2 free: all is lost");
    cr_assert_float_eq(gx_fgd_frag(&m, &b), 600.0, 1e-9, "only the partly used card");
}

Test(fgd, no_cpu_left_makes_all_gpu_fragment)
{
    struct gx_fgd_model m;
    const int free[2] = {1000, 1000};
    struct gx_fgd_node n = node(2, free);

    gx_fgd_model_init(&m, 1000);
    gx_fgd_observe(&m, &HALF);
    n.cpu_milli = 500;
    cr_assert_float_eq(gx_fgd_frag(&m, &n), 2000.0, 1e-9);
}

Test(fgd, delta_equals_frag_after_minus_before)
{
    struct gx_fgd_model m;
    const int free[4] = {1000, 700, 400, 1000};
    struct gx_fgd_node n = node(4, free), after;
    const struct gx_fgd_shape pod = {.cpu_milli = 63500, .mem_mib = 10, .gpus = 1, .milli = 300};
    int card = 1;

    gx_fgd_model_init(&m, 50);
    gx_fgd_observe(&m, &HALF);
    gx_fgd_observe(&m, &WHOLE2);
    gx_fgd_observe(&m, &HALF);
    after = n;
    after.free[1] -= 300;
    after.cpu_milli -= 63500;
    after.mem_mib -= 10;
    cr_assert_float_eq(gx_fgd_delta(&m, &n, &pod, &card),
                       gx_fgd_frag(&m, &after) - gx_fgd_frag(&m, &n), 1e-9);
}

Test(fgd, packing_a_share_onto_a_used_card_beats_breaking_a_whole_one)
{
    struct gx_fgd_model m;
    const int free[3] = {1000, 1000, 600};
    struct gx_fgd_node n = node(3, free);
    const struct gx_fgd_shape pod = {.cpu_milli = 100, .mem_mib = 10, .gpus = 1, .milli = 500};
    int used = 2, whole = 0;

    gx_fgd_model_init(&m, 1000);
    gx_fgd_observe(&m, &HALF);
    gx_fgd_observe(&m, &WHOLE2);
    cr_assert_lt(gx_fgd_delta(&m, &n, &pod, &used), gx_fgd_delta(&m, &n, &pod, &whole));
}

Test(fgd, old_shapes_decay_and_the_table_is_bounded)
{
    struct gx_fgd_model m;
    struct gx_fgd_shape s = HALF;

    gx_fgd_model_init(&m, 10);
    gx_fgd_observe(&m, &WHOLE2);
    for (int i = 0; i < 10; i++) {
        gx_fgd_observe(&m, &HALF);
    }
    /* ten newer observations, each weighing more than the one before, outweigh the old one */
    cr_assert_eq(m.n, 2);
    cr_assert(m.weight[0] < m.weight[1] / 5.0);
    for (int i = 0; i < 3 * GX_FGD_MAX_SHAPES; i++) {
        s.cpu_milli = 1000 + i;
        gx_fgd_observe(&m, &s);
    }
    cr_assert_eq(m.n, GX_FGD_MAX_SHAPES);
    cr_assert(m.total > 0 && isfinite(m.total));
}

Test(fgd, cpu_pods_count_only_when_their_cpu_is_gone)
{
    struct gx_fgd_model m;
    const struct gx_fgd_shape cpu = {.cpu_milli = 8000, .mem_mib = 1024};
    const struct gx_fgd_shape gpu = {.cpu_milli = 4000, .mem_mib = 1024, .gpus = 1, .milli = 1000};
    const int free[2] = {1000, 1000};
    struct gx_fgd_node n = node(2, free);
    int card = 0;

    gx_fgd_model_init(&m, 10);
    gx_fgd_observe(&m, &cpu);
    cr_assert_eq(m.n, 1);
    cr_assert_float_eq(gx_fgd_frag(&m, &n), 0.0, 1e-9, "a CPU pod that fits strands nothing");
    n.cpu_milli = 10000;
    /* taking 4 of the last 10 CPUs leaves 6: the CPU pod no longer fits, the last card is lost */
    cr_assert_float_eq(gx_fgd_delta(&m, &n, &gpu, &card), 1000.0, 1e-9);
}

/* No gaps counted, gaps open from @min_open up on every node. */
static struct gx_fgd_gaps
open_from(int min_open)
{
    struct gx_fgd_gaps g;

    memset(&g, 0, sizeof(g));
    g.n_where = 1;
    g.min_share[0] = min_open;
    return g;
}

Test(fgd, gaps_count_only_partly_used_cards)
{
    struct gx_fgd_gaps g = open_from(1);
    const int free[6] = {1000, 0, 300, 300, 999, 1};
    struct gx_fgd_node n = node(6, free);

    gx_fgd_gaps_add(&g, &n);
    gx_fgd_gaps_add(&g, &n);
    cr_assert_eq(g.count[300], 4);
    cr_assert_eq(g.count[999], 2);
    cr_assert_eq(g.count[1], 2);
    cr_assert_eq(g.count[0], 0, "a full card is no gap");
    gx_fgd_gaps_clear(&g);
    cr_assert_eq(g.count[300], 0);
    cr_assert_eq(g.min_share[0], 1, "clearing keeps the smallest shares");
}

Test(fgd, min_open_is_the_smallest_typical_share)
{
    struct gx_fgd_model m;
    struct gx_fgd_gaps g;
    const struct gx_fgd_shape small = {.cpu_milli = 1000, .gpus = 1, .milli = 120};

    memset(&g, 0, sizeof(g));
    gx_fgd_model_init(&m, 1000);
    cr_assert(gx_fgd_gaps_shares(&g, &m), "the first shares taken are a change");
    cr_assert_eq(gx_fgd_min_open(&g, 0), GX_FGD_CARD, "no shares: no gap is open");
    cr_assert_not(gx_fgd_gaps_shares(&g, NULL), "no model: no shares, as before");
    gx_fgd_observe(&m, &WHOLE2);
    gx_fgd_observe(&m, &HALF);
    cr_assert(gx_fgd_gaps_shares(&g, &m));
    cr_assert_eq(gx_fgd_min_open(&g, 0), 500);
    cr_assert_not(gx_fgd_gaps_shares(&g, &m), "nothing new learned: no change");
    gx_fgd_observe(&m, &small);
    cr_assert(gx_fgd_gaps_shares(&g, &m));
    cr_assert_eq(gx_fgd_min_open(&g, 0), 120);
}

/*
 * A pinned typical share opens gaps only on the nodes it may run on: a node
 * barring its class keeps the smallest share of the pods that may come.
 */
Test(fgd, a_pinned_share_opens_gaps_only_where_it_may_run)
{
    struct gx_fgd_model m;
    struct gx_fgd_gaps g;
    struct gx_fgd_shape pinned = HALF;
    const int free[2] = {100, 500};
    struct gx_fgd_node allowed = node(2, free), barred = node(2, free);
    int t4;

    memset(&g, 0, sizeof(g));
    gx_fgd_model_init(&m, 1000);
    t4 = gx_fgd_where_class(&m, "nvidia.com/gpu.product in (Tesla-T4)");
    cr_assert_eq(t4, 1);
    pinned.milli = 100;
    pinned.where = t4;
    gx_fgd_observe(&m, &HALF);
    gx_fgd_observe(&m, &pinned);
    cr_assert(gx_fgd_gaps_shares(&g, &m));
    barred.barred = 1u << t4;
    cr_assert_eq(gx_fgd_min_open(&g, allowed.barred), 100);
    cr_assert_eq(gx_fgd_min_open(&g, barred.barred), 500, "only the unpinned half may come");
    gx_fgd_gaps_add(&g, &allowed);
    gx_fgd_gaps_add(&g, &barred);
    cr_assert_eq(g.count[500], 2);
    cr_assert_eq(g.count[100], 1, "the barred node's 100 is a full card");
    /* leaving 100: a new gap of a common size where the pinned share may come, none where not */
    cr_assert_float_eq(gx_fgd_gap_cost(&g, allowed.barred, 500, 400), 3.0 - 3.0, 1e-9);
    cr_assert_float_eq(gx_fgd_gap_cost(&g, barred.barred, 500, 400), -3.0, 1e-9);
}

/* Gaps open from @min_open up, three cards with 500 free. */
static struct gx_fgd_gaps
three_500s(int min_open)
{
    struct gx_fgd_gaps g = open_from(min_open);

    g.count[500] = 3;
    return g;
}

/* Sum of squares: fill the gap size many cards have, leave one few have. */
Test(fgd, gap_cost_prefers_filling_common_gaps)
{
    struct gx_fgd_gaps g = three_500s(100);

    g.count[700] = 1;
    /* 200 into a 500 gap: 300 gains a card (0 -> 1), 500 loses one (3 -> 2) */
    cr_assert_float_eq(gx_fgd_gap_cost(&g, 0, 500, 200), 1.0 - 5.0, 1e-9);
    /* 200 into the lone 700 gap leaves the common 500 size: 500 grows to 4, 700 empties */
    cr_assert_float_eq(gx_fgd_gap_cost(&g, 0, 700, 200), 7.0 - 1.0, 1e-9);
    /* a fresh card is no gap before; 800 left is one after */
    cr_assert_float_eq(gx_fgd_gap_cost(&g, 0, 1000, 200), 1.0, 1e-9);
    cr_assert_float_eq(gx_fgd_gap_cost(&g, 0, 500, 500), -5.0, 1e-9, "a card filled up is no gap");
}

/* A gap below the smallest typical share can never be filled: it is not counted. */
Test(fgd, gaps_below_the_smallest_share_are_closed)
{
    struct gx_fgd_gaps g = three_500s(250);

    g.count[50] = 40;
    cr_assert_float_eq(gx_fgd_gap_cost(&g, 0, 500, 450), -5.0, 1e-9, "leaving 50 costs nothing");
    cr_assert_float_eq(gx_fgd_gap_cost(&g, 0, 50, 50), 0.0, 1e-9, "a closed gap is no gain either");
    g.min_share[0] = 50;
    cr_assert_float_eq(gx_fgd_gap_cost(&g, 0, 500, 450), 81.0 - 5.0, 1e-9);
}

/* A typical pod the node's labels bar can use none of it (FGD's "no access"). */
Test(fgd, a_barred_typical_pod_counts_all_free_capacity_as_fragment)
{
    struct gx_fgd_model m;
    const int free[2] = {1000, 1000};
    struct gx_fgd_node n = node(2, free);
    struct gx_fgd_shape pinned = HALF;
    const int card = 0;

    gx_fgd_model_init(&m, 1000);
    pinned.where = gx_fgd_where_class(&m, "nvidia.com/gpu.product in Tesla-T4");
    cr_assert_eq(pinned.where, 1);
    gx_fgd_observe(&m, &pinned);
    cr_assert_float_eq(gx_fgd_frag(&m, &n), 0.0, 1e-9, "may run here: two cards take halves");
    n.barred = 1u << pinned.where;
    cr_assert_float_eq(gx_fgd_frag(&m, &n), 2000.0, 1e-9);
    cr_assert_float_eq(gx_fgd_delta(&m, &n, &HALF, &card), -500.0, 1e-9,
                       "what a pod takes there is taken from no typical pod");
}

Test(fgd, where_classes_are_shared_by_one_rule_and_reused_when_no_shape_has_them)
{
    struct gx_fgd_model m;
    char key[64];
    struct gx_fgd_shape s = HALF;

    gx_fgd_model_init(&m, 1);
    cr_assert_eq(gx_fgd_where_class(&m, ""), 0, "no rule: any node");
    cr_assert_eq(gx_fgd_where_class(&m, "a in x"), 1);
    cr_assert_eq(gx_fgd_where_class(&m, "a in x"), 1, "the same rule, the same class");
    s.where = 1;
    gx_fgd_observe(&m, &s);
    for (int i = 2; i < GX_FGD_MAX_WHERE; i++) {
        (void)snprintf(key, sizeof(key), "a in v%d", i);
        cr_assert_eq(gx_fgd_where_class(&m, key), i);
    }
    /* the table is full: a class no shape uses is taken, the one in use is kept */
    cr_assert_eq(gx_fgd_where_class(&m, "b in y"), 2);
    cr_assert_str_eq(m.where[1], "a in x");
    for (int i = 3; i < GX_FGD_MAX_WHERE; i++) {
        s.where = i;
        gx_fgd_observe(&m, &s);
    }
    s.where = 2;
    gx_fgd_observe(&m, &s);
    cr_assert_eq(gx_fgd_where_class(&m, "c in z"), 0, "every class in use: counted as any node");
}

/* A random request shape: CPU-only, a share or whole cards; pinned to class 1 or 2 at times. */
static struct gx_fgd_shape
random_shape(unsigned *seed)
{
    struct gx_fgd_shape t = {.cpu_milli = rand_r(seed) % 48000, .mem_mib = rand_r(seed) % 200000};
    int kind = rand_r(seed) % 3;

    t.gpus = kind == 0 ? 0 : kind == 1 ? 1 : 1 << (rand_r(seed) % 4);
    t.milli = kind == 0 ? 0 : kind == 1 ? 1 + rand_r(seed) % 999 : GX_FGD_CARD;
    t.where = rand_r(seed) % 4 == 0 ? 1 + rand_r(seed) % 2 : 0;
    return t;
}

/*
 * gx_fgd_share_deltas is gx_fgd_delta asked of every card, summed another
 * way: on random models (more shapes than the table holds, so slots are
 * reused) and random nodes, each card's value is the same.
 */
Test(fgd, share_deltas_equal_the_delta_of_each_card)
{
    static struct gx_fgd_model m;
    unsigned seed = 7;

    for (int round = 0; round < 40; round++) {
        gx_fgd_model_init(&m, 50);
        (void)gx_fgd_where_class(&m, "a");
        (void)gx_fgd_where_class(&m, "b");
        for (int i = 0; i < 100 + round * 10; i++) {
            struct gx_fgd_shape t = random_shape(&seed);
            gx_fgd_observe(&m, &t);
        }
        for (size_t j = 1; j < m.n; j++) {
            cr_assert_leq(m.shape[m.by_milli[j - 1]].milli, m.shape[m.by_milli[j]].milli);
        }
        for (int k = 0; k < 20; k++) {
            struct gx_fgd_node n = {.cpu_milli = rand_r(&seed) % 64000,
                                    .mem_mib = k % 5 == 0 ? -1 : rand_r(&seed) % 262144,
                                    .n_cards = 1 + rand_r(&seed) % 8,
                                    .barred = (uint32_t)(rand_r(&seed) % 4) << 1};
            struct gx_fgd_shape s = {.cpu_milli = rand_r(&seed) % 16000,
                                     .mem_mib = rand_r(&seed) % 65536,
                                     .gpus = 1,
                                     .milli = 1 + rand_r(&seed) % 999};
            double out[GX_FGD_MAX_CARDS];

            for (int c = 0; c < n.n_cards; c++) {
                int r = rand_r(&seed) % 3;
                n.free[c] = r == 0 ? GX_FGD_CARD : r == 1 ? 0 : rand_r(&seed) % GX_FGD_CARD;
            }
            gx_fgd_share_deltas(&m, &n, &s, out);
            for (int c = 0; c < n.n_cards; c++) {
                double want = gx_fgd_delta(&m, &n, &s, &c);
                cr_assert_float_eq(out[c], want, 1e-6 * (1.0 + fabs(want)),
                                   "round %d node %d card %d: %f, not %f", round, k, c, out[c],
                                   want);
            }
        }
    }
}

/* A pod asking more CPU than the node has left leaves none: not an unknown amount that fits all. */
Test(fgd, taking_more_cpu_than_is_left_leaves_none)
{
    struct gx_fgd_model m;
    const struct gx_fgd_shape one = {.cpu_milli = 500, .gpus = 1, .milli = GX_FGD_CARD};
    const struct gx_fgd_shape greedy = {.cpu_milli = 2000, .gpus = 1, .milli = 500};
    const int free[2] = {1000, 1000};
    struct gx_fgd_node n = node(2, free);
    int card = 0;

    n.cpu_milli = 1000;
    gx_fgd_model_init(&m, 1000);
    gx_fgd_observe(&m, &one);
    cr_assert_float_eq(gx_fgd_delta(&m, &n, &greedy, &card), 1500.0, 1e-9,
                       "the one-card pod no longer fits: all 1500 left is lost to it");
}
