/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_score_fgd.c - the fgd policy as score_fgd.c feeds it: the card that
 * strands least, CPU pods, the idle-node cost, the gap term and its counts.
 */
#include "gx_scoreworld.h"

#include "snapshot.h"
#include "strmap.h"

GX_SUITE(score_fgd);

/* Book @milli of card @card for pod @uid as a milli tenant. */
static void
book_on(struct world *w, const char *node, const char *uid, int card, int milli)
{
    int slots[MAX_CARDS];
    struct gx_tenant t;

    for (int i = 0; i < MAX_CARDS; i++) {
        slots[i] = gx_config_card_slots(&w->cfg, w->node.product, w->node.replicas);
    }
    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    t.card = card;
    t.slices = 1;
    t.milli = milli;
    t.util_pct = -1;
    t.since_ms = NOW;
    cr_assert_eq(gx_ledger_add(w->ledger, node, &t, 1, slots, MAX_CARDS), GX_OK);
}

static void
book_milli(struct world *w, const char *uid, int card, int milli)
{
    book_on(w, w->node.name, uid, card, milli);
}

/* fgd keeps room for the typical 300-milli pod where binpack fills the fuller card. */
Test(score_fgd, fgd_picks_the_card_that_strands_least)
{
    struct world w;
    struct gx_fgd_model m;
    const struct gx_fgd_shape typical = {.gpus = 1, .milli = 300};
    struct gx_podreq r = req_shared(1, 0, -1);
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    book_milli(&w, "a", 0, 300); /* 700 free */
    book_milli(&w, "b", 1, 550); /* 450 free */
    r.milli = 400;
    cr_assert_eq(decide(&w, r).cards[0], 1, "binpack: the fuller card");
    w.cfg.policy = GX_POLICY_FGD;
    cr_assert_eq(decide(&w, r).cards[0], 1, "no typical pods learned yet: as binpack");
    gx_fgd_model_init(&m, 100);
    gx_fgd_observe(&m, &typical);
    w.ctx.fgd = &m;
    v = decide(&w, r);
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 0, "700 -> 300 still takes a typical pod, 450 -> 50 does not");
    cr_assert_float_eq(v.parts.fit, 0.5, 1e-9, "no fragmentation change scores neutral");
    world_free(&w);
}

/* A 2-card node with 16 CPUs under fgd that has learned the one shape @typical. */
static void
fgd_world(struct world *w, struct gx_fgd_model *m, const struct gx_fgd_shape *typical)
{
    world_init(w, "gpu-1", 2);
    w->cfg.policy = GX_POLICY_FGD;
    w->node.alloc_cpu_milli = 16000;
    w->node.alloc_mem_mib = -1;
    gx_fgd_model_init(m, 100);
    gx_fgd_observe(m, typical);
    w->ctx.fgd = m;
}

/* Under fgd a CPU pod that would strand free cards scores below one that strands none. */
Test(score_fgd, fgd_scores_cpu_pods_by_the_gpus_they_strand)
{
    struct world w;
    struct gx_fgd_model m;
    const struct gx_fgd_shape typical = {.cpu_milli = 8000, .gpus = 1, .milli = 1000};
    struct gx_podreq cpu = req_none();
    struct gx_verdict v;

    fgd_world(&w, &m, &typical);
    cpu.cpu_milli = 4000; /* leaves 12 CPUs: the typical pod still fits */
    v = decide(&w, cpu);
    cr_assert_float_eq(v.parts.fit, 0.5, 1e-9);
    cpu.cpu_milli = 10000; /* leaves 6: both free cards are stranded */
    v = decide(&w, cpu);
    cr_assert_lt(v.parts.fit, 0.5);
    cr_assert_lt(v.score, 5);
    world_free(&w);
}

/* score.fgd_idle_card_milli: a node with no card in use costs that much per card. */
Test(score_fgd, fgd_charges_a_placement_on_an_idle_node)
{
    struct world w;
    struct gx_fgd_model m;
    const struct gx_fgd_shape typical = {.gpus = 1, .milli = 1000};
    struct gx_podreq whole = req_excl(1), cpu = req_none();
    double idle_whole, idle_cpu;

    fgd_world(&w, &m, &typical);
    cpu.cpu_milli = 1000;
    cr_assert_float_eq(decide(&w, whole).parts.fit, 0.5, 1e-9, "off: no change scores neutral");
    w.cfg.fgd_idle_card_milli = 100; /* 2 cards: 200 */
    idle_whole = decide(&w, whole).parts.fit;
    idle_cpu = decide(&w, cpu).parts.fit;
    cr_assert_float_eq(idle_whole, 0.4, 1e-9, "200 milli = 0.1 of the fit");
    cr_assert_float_eq(idle_cpu, 0.4, 1e-9, "a CPU pod pays it too");
    book_milli(&w, "a", 0, 100); /* the node is in use now */
    cr_assert_float_eq(decide(&w, whole).parts.fit, 0.5, 1e-9, "a node in use is not charged");
    cr_assert_gt(decide(&w, cpu).parts.fit, idle_cpu);
    world_free(&w);
}

/* @w decides on a snapshot of @nodes[0..2), with the cluster-wide counts kept in @gaps. */
static void
cluster_of_two(struct world *w, struct gx_snapshot *snap, struct gx_node *nodes,
               struct gx_score_gaps *gaps)
{
    memset(snap, 0, sizeof(*snap));
    snap->nodes = nodes;
    snap->n_nodes = 2;
    cr_assert_eq(gx_snapshot_index(snap), GX_OK);
    snap->generation = 1;
    memset(gaps, 0, sizeof(*gaps));
    w->ctx.snap = snap;
    w->ctx.gaps = gaps;
}

/*
 * score.fgd_gap_milli: of two cards fgd finds alike, a share goes to the one
 * that leaves a gap size few cards of the cluster have. gpu-2's four cards
 * all have 300 free; the 300-milli share would leave 300 on gpu-1's card 0
 * (a fifth such gap) or 400 on card 1 (the only one).
 */
Test(score_fgd, fgd_gap_term_leaves_a_gap_size_few_cards_have)
{
    struct world w;
    struct gx_fgd_model m;
    const struct gx_fgd_shape typical = {.gpus = 1, .milli = 100};
    struct gx_podreq r = req_shared(1, 0, -1);
    struct gx_score_gaps gaps;
    struct gx_snapshot snap;
    struct gx_node nodes[2];
    struct gx_card other[4];
    struct gx_verdict v;

    fgd_world(&w, &m, &typical);
    book_milli(&w, "a", 0, 400); /* 600 free */
    book_milli(&w, "b", 1, 300); /* 700 free */
    nodes[0] = w.node;
    nodes[1] = w.node;
    nodes[1].name = "gpu-2";
    nodes[1].cards = other;
    nodes[1].n_cards = 4;
    nodes[1].gpu_count = 4;
    for (int i = 0; i < 4; i++) {
        card_set(&other[i], i, 5, 300, 40);
        book_on(&w, "gpu-2", i == 0 ? "c0" : i == 1 ? "c1" : i == 2 ? "c2" : "c3", i, 700);
    }
    cluster_of_two(&w, &snap, nodes, &gaps);
    r.milli = 300;

    w.cfg.fgd_gap_milli = 0;
    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert_eq(v.cards[0], 0, "off: fgd ties (both gaps take the typical pod), binpack decides");
    w.cfg.fgd_gap_milli = 1;
    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1, "400 left is a rare gap, 300 a common one");
    cr_assert_float_eq(v.parts.fit, 0.5, 1e-9, "400: one gap size traded for another, no cost");
    cr_assert_eq(gaps.gaps.count[300], 4);
    cr_assert_eq(gaps.cards, 6);
    cr_assert_eq(gx_fgd_min_open(&gaps.gaps, 0), 100, "the smallest typical share");

    book_on(&w, "gpu-2", "c4", 0, 300); /* gpu-2's card 0 is full now: 300 is no longer common */
    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert_eq(gaps.gaps.count[300], 3, "counted again after the ledger changed");
    w.ctx.gaps = NULL;
    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert_eq(v.cards[0], 0, "no counts: no term");
    gx_score_gaps_release(&gaps);
    gx_nameidx_release(&snap.names);
    world_free(&w);
}

/* The gaps of nodes whose entry changed, counted again alone, equal a count from scratch. */
Test(score_fgd, gap_counts_kept_across_bookings_equal_a_count_from_scratch)
{
    struct world w;
    struct gx_fgd_model m;
    const struct gx_fgd_shape typical = {.gpus = 1, .milli = 100};
    struct gx_podreq r = req_shared(1, 0, -1);
    static struct gx_score_gaps kept, fresh; /* large: not on the stack */
    struct gx_snapshot snap;
    struct gx_node nodes[2];
    struct gx_verdict v;
    char uid[16];

    fgd_world(&w, &m, &typical);
    nodes[0] = w.node;
    nodes[1] = w.node;
    nodes[1].name = "gpu-2";
    cluster_of_two(&w, &snap, nodes, &kept);
    r.milli = 300;
    w.cfg.fgd_gap_milli = 1;
    for (int i = 0; i < 12; i++) {
        (void)snprintf(uid, sizeof(uid), "p%d", i);
        if (i % 4 == 3) { /* a booking goes: its node is counted again */
            (void)snprintf(uid, sizeof(uid), "p%d", i - 2);
            cr_assert_gt(gx_ledger_release(w.ledger, uid), 0);
        } else {
            book_on(&w, nodes[i % 2].name, uid, i % 2, 50 + 10 * i);
        }
        w.ctx.gaps = &kept;
        gx_score_node(&w.ctx, &r, &nodes[0], &v);
        memset(&fresh, 0, sizeof(fresh));
        w.ctx.gaps = &fresh;
        gx_score_node(&w.ctx, &r, &nodes[0], &v);
        cr_assert(memcmp(kept.gaps.count, fresh.gaps.count, sizeof(kept.gaps.count)) == 0,
                  "after step %d", i);
        gx_score_gaps_release(&fresh);
    }
    cr_assert_eq(kept.gaps.count[400], 1, "gpu-1's card 0 holds 600: one gap of 400");
    gx_score_gaps_release(&kept);
    gx_nameidx_release(&snap.names);
    world_free(&w);
}

/* A decision on a scratch ledger goes without the gap counts of the real one. */
Test(score_fgd, decide_ctx_on_another_ledger_drops_the_gap_counts)
{
    struct world w;
    struct gx_score_gaps gaps;
    struct gx_ledger *scratch = gx_ledger_new();
    struct gx_decide_ctx c;

    cr_assert_not_null(scratch);
    world_init(&w, "gpu-1", 2);
    memset(&gaps, 0, sizeof(gaps));
    w.ctx.gaps = &gaps;
    c = gx_decide_ctx_on(&w.ctx, w.ledger);
    cr_assert(c.gaps == &gaps && c.ledger == w.ledger, "the same ledger keeps them");
    c = gx_decide_ctx_on(&w.ctx, scratch);
    cr_assert(c.gaps == NULL && c.ledger == scratch);
    cr_assert(c.cfg == w.ctx.cfg && c.now_ms == w.ctx.now_ms, "the rest is the context's");
    gx_ledger_free(scratch);
    world_free(&w);
}

/* Two 2-card nodes under fgd, one labelled a T4, that learned one whole-GPU pod that may run
 * anywhere. */
struct t4_world {
    struct world w;
    struct gx_fgd_model m;
    struct gx_score_gaps gaps;
    struct gx_snapshot snap;
    struct gx_node nodes[2]; /* [0] no T4 label, [1] the T4 */
};

static const char *T4[] = {"Tesla-T4"};
static struct gx_sel_expr T4_EXPR = {"nvidia.com/gpu.product", GX_SEL_IN, T4, 1};
static struct gx_sel_term T4_TERM = {&T4_EXPR, 1};
static struct gx_kv T4_LABEL[] = {{"nvidia.com/gpu.product", "Tesla-T4"}};

static void
t4_world_init(struct t4_world *t)
{
    const struct gx_fgd_shape anywhere = {.gpus = 1, .milli = 1000};

    fgd_world(&t->w, &t->m, &anywhere);
    t->nodes[0] = t->w.node;
    t->nodes[1] = t->w.node;
    t->nodes[1].name = "gpu-t4";
    t->nodes[1].labels = T4_LABEL;
    t->nodes[1].n_labels = 1;
    cluster_of_two(&t->w, &t->snap, t->nodes, &t->gaps);
}

/* Learn one whole-GPU pod pinned to T4s: half the demand wants T4, half the cards have it. */
static void
t4_learn_pinned(struct t4_world *t)
{
    struct gx_podreq whole = req_excl(1);
    struct gx_where pin = {.terms = &T4_TERM, .n_terms = 1};

    gx_score_learn(&t->w.cfg, &t->m, &whole, &pin);
}

static void
t4_world_free(struct t4_world *t)
{
    gx_score_gaps_release(&t->gaps);
    gx_nameidx_release(&t->snap.names);
    world_free(&t->w);
}

/*
 * A typical pod pinned to one GPU model makes the nodes of that model dear
 * in proportion to how much of its kind of capacity it needs: a pod that may
 * run anywhere pays for taking it (gx_score_where_cost), and not on another
 * model's nodes.
 */
Test(score_fgd, capacity_a_pinned_typical_pod_needs_costs_other_pods_more)
{
    static struct t4_world t;
    struct gx_podreq whole = req_excl(1);
    struct gx_verdict on_t4, on_a100;

    t4_world_init(&t);
    gx_score_node(&t.w.ctx, &whole, &t.nodes[1], &on_t4);
    gx_score_node(&t.w.ctx, &whole, &t.nodes[0], &on_a100);
    cr_assert_float_eq(on_t4.parts.fit, on_a100.parts.fit, 1e-9, "no pinned pods: alike");
    t4_learn_pinned(&t);
    gx_score_node(&t.w.ctx, &whole, &t.nodes[1], &on_t4);
    gx_score_node(&t.w.ctx, &whole, &t.nodes[0], &on_a100);
    cr_assert_gt(on_a100.parts.fit, on_t4.parts.fit, "the T4 node is kept for the T4 pods");
    cr_assert_float_eq(t.gaps.scarce[1], 1.0, 0.01, "about half the demand on half of the cards");
    t4_world_free(&t);
}

/*
 * The idle-node charge counts the typical demand that may run on the node:
 * half the typical pods are pinned to T4s, so an idle node without T4s is
 * worth half as much to keep whole as the idle T4 node.
 */
Test(score_fgd, the_idle_charge_counts_the_typical_pods_that_may_run_there)
{
    static struct t4_world t;
    struct gx_podreq cpu = req_none();
    struct gx_verdict on_t4, on_a100;

    t4_world_init(&t);
    t.w.cfg.fgd_idle_card_milli = 100; /* 2 cards: 200 */
    cpu.cpu_milli = 1000;
    gx_score_node(&t.w.ctx, &cpu, &t.nodes[0], &on_a100);
    cr_assert_float_eq(on_a100.parts.fit, 0.4, 1e-9, "no pinned pods: the whole charge");
    t4_learn_pinned(&t);
    gx_score_node(&t.w.ctx, &cpu, &t.nodes[1], &on_t4);
    gx_score_node(&t.w.ctx, &cpu, &t.nodes[0], &on_a100);
    cr_assert_float_eq(on_t4.parts.fit, 0.4, 1e-9, "every typical pod may run on the T4 node");
    cr_assert_float_eq(on_a100.parts.fit, 0.45, 0.001, "half of them may run on the other");
    t4_world_free(&t);
}
