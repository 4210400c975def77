/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_vcache.c - the verdict cache answers exactly what gx_score_node
 * answers: under random requests, ledger changes and clock steps, and at
 * each invalidation edge (ledger change of one node, sample turning stale,
 * one-second cap, clock going back, new snapshot or config).
 */
#include "gx_test.h"

#include "vcache.h"

#include <math.h>
#include <string.h>

GX_SUITE(vcache);

#define NOW INT64_C(1700000000000)
#define N_NODES 6
#define N_CARDS 4

static const char *const NAMES[N_NODES] = {"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"};

struct world {
    struct gx_config *defaults; /* gx_config_default(): owns what cfg borrows */
    struct gx_config cfg;       /* the shipped defaults and the overrides of world_init */
    struct gx_snapshot snap;
    struct gx_node nodes[N_NODES];
    struct gx_card cards[N_NODES][N_CARDS];
    struct gx_ledger *ledger;
    struct gx_vcache *vc;
    struct gx_decide_ctx ctx;
};

/* Card @i with idle, cool, fresh samples taken at @at. */
static void
card_init(struct gx_card *c, int i, int64_t at)
{
    memset(c, 0, sizeof(*c));
    c->index = i;
    c->numa = i / 2;
    c->v[GX_SIG_UTIL] = 5;
    c->v[GX_SIG_MEM_USED] = 100;
    c->v[GX_SIG_MEM_FREE] = 24000;
    c->v[GX_SIG_TEMP] = 40;
    c->v[GX_SIG_POWER] = 60;
    c->v[GX_SIG_XID] = 0;
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        c->at_ms[s] = at;
    }
}

/* A snapshot of N_NODES ready nodes of N_CARDS fresh cards, an empty ledger and a cache. */
static void
world_init(struct world *w)
{
    memset(w, 0, sizeof(*w));
    cr_assert_eq(gx_config_default(&w->defaults), GX_OK);
    w->cfg = *w->defaults;
    /* stale samples reject, binpack with the five weights alike; hash as a parsed config has */
    w->cfg.on_stale = GX_STALE_REJECT;
    w->cfg.policy = GX_POLICY_BINPACK;
    w->cfg.w_util = w->cfg.w_memory = w->cfg.w_temp = w->cfg.w_labels = w->cfg.w_fit = 20;
    w->cfg.hash = 1;
    for (int n = 0; n < N_NODES; n++) {
        struct gx_node *node = &w->nodes[n];
        for (int i = 0; i < N_CARDS; i++) {
            card_init(&w->cards[n][i], i, NOW - 1000);
        }
        node->name = NAMES[n];
        node->product = "";
        node->gpu_count = N_CARDS;
        node->gpu_memory_mib = 24100;
        node->replicas = 1;
        node->ready = true;
        node->cards = w->cards[n];
        node->n_cards = N_CARDS;
    }
    w->snap.nodes = w->nodes;
    w->snap.n_nodes = N_NODES;
    w->snap.generation = 1;
    cr_assert_eq(gx_snapshot_index(&w->snap), GX_OK); /* gx_snapshot_find, for the gap term */
    w->ledger = gx_ledger_new();
    w->vc = gx_vcache_new();
    cr_assert_not_null(w->ledger);
    cr_assert_not_null(w->vc);
    w->ctx.cfg = &w->cfg;
    w->ctx.snap = &w->snap;
    w->ctx.ledger = w->ledger;
    w->ctx.now_ms = NOW;
}

static void
world_free(struct world *w)
{
    gx_vcache_free(w->vc);
    gx_ledger_free(w->ledger);
    gx_nameidx_release(&w->snap.names);
    gx_config_free(w->defaults);
}

/* The cached answer for @r on node @n, checked against gx_score_node. */
static struct gx_vshort
decide(struct world *w, struct gx_podreq r, int n)
{
    struct gx_vshort got;
    struct gx_verdict want;

    gx_vcache_decide(w->vc, &w->ctx, &r, &w->nodes[n], &got);
    gx_score_node(&w->ctx, &r, &w->nodes[n], &want);
    cr_assert_eq(got.keep, want.keep, "node %d keep", n);
    cr_assert_eq(got.reason, want.reason, "node %d reason", n);
    if (want.keep) {
        cr_assert_eq(got.score, want.score, "node %d score", n);
    }
    return got;
}

static uint64_t
hits(const struct world *w)
{
    uint64_t h = 0;

    gx_vcache_stats(w->vc, &h, NULL);
    return h;
}

static uint64_t
misses(const struct world *w)
{
    uint64_t m = 0;

    gx_vcache_stats(w->vc, NULL, &m);
    return m;
}

static struct gx_podreq
req_excl(int64_t gpus)
{
    struct gx_podreq r = {.kind = GX_REQ_EXCLUSIVE, .gpus = gpus, .util_pct = -1};
    return r;
}

static struct gx_podreq
req_shared(int slices, int64_t mem)
{
    struct gx_podreq r = {
        .kind = GX_REQ_SHARED, .slices = slices, .memory_mib = mem, .util_pct = -1};
    return r;
}

/* One tenant of @uid on @card. */
static struct gx_tenant
tenant(const char *uid, int card, bool exclusive, int slices, int64_t now)
{
    struct gx_tenant t;

    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "default/%s", uid);
    t.card = card;
    t.exclusive = exclusive;
    t.slices = exclusive ? 0 : slices;
    t.memory_mib = exclusive ? 0 : 4096;
    t.util_pct = -1;
    t.since_ms = now;
    return t;
}

static uint64_t
next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

Test(vcache, random_requests_match_gx_score_node)
{
    static const int slots[N_CARDS] = {4, 4, 4, 4};
    struct world w;
    uint64_t s = 0x2545f4914f6cdd1dULL;
    int kept = 0, rejected = 0;

    world_init(&w);
    for (int op = 0; op < 20000; op++) {
        uint64_t k = next(&s) % 100;
        char uid[16];

        (void)snprintf(uid, sizeof(uid), "u%d", (int)(next(&s) % 12));
        if (k < 8) {
            struct gx_tenant t = tenant(uid, (int)(next(&s) % N_CARDS), next(&s) % 3 == 0,
                                        (int)(next(&s) % 2) + 1, w.ctx.now_ms);
            enum gx_err rc =
                gx_ledger_add(w.ledger, NAMES[next(&s) % N_NODES], &t, 1, slots, N_CARDS);
            cr_assert(rc == GX_OK || rc == GX_ECONFLICT);
        } else if (k < 12) {
            (void)gx_ledger_release(w.ledger, uid);
        } else if (k < 14) {
            enum gx_err rc = gx_ledger_mark_bound(w.ledger, uid);
            cr_assert(rc == GX_OK || rc == GX_ENOTFOUND);
        } else if (k < 15) {
            (void)gx_ledger_expire(w.ledger, w.ctx.now_ms, 5000);
        } else if (k < 16) {
            cr_assert_eq(gx_ledger_set_node(w.ledger, NAMES[next(&s) % N_NODES], NULL, 0, NULL),
                         GX_OK);
        } else if (k < 22) {
            /* time moves on (sometimes a lot, rarely backwards) */
            uint64_t step = next(&s) % 10;
            w.ctx.now_ms += step < 7   ? (int64_t)(next(&s) % 400)
                            : step < 9 ? (int64_t)(next(&s) % 20000)
                                       : -(int64_t)(next(&s) % 3000);
        } else if (k < 24) {
            /* a new snapshot with new samples on one card */
            struct gx_card *c = &w.cards[next(&s) % N_NODES][next(&s) % N_CARDS];
            c->v[GX_SIG_UTIL] = (double)(next(&s) % 100);
            c->v[GX_SIG_TEMP] = (double)(next(&s) % 95);
            for (int g = 0; g < GX_SIG_COUNT; g++) {
                c->at_ms[g] = w.ctx.now_ms - (int64_t)(next(&s) % 70000);
            }
            /* most rebuilds also bring fresh samples for the other cards */
            for (int n = 0; n < N_NODES && next(&s) % 4 != 0; n++) {
                for (int i = 0; i < N_CARDS; i++) {
                    for (int g = 0; g < GX_SIG_COUNT; g++) {
                        w.cards[n][i].at_ms[g] = w.ctx.now_ms - (int64_t)(next(&s) % 5000);
                    }
                }
            }
            w.snap.generation++;
        } else {
            struct gx_podreq r;
            switch (next(&s) % 4) {
            case 0:
                r = req_excl(1);
                break;
            case 1:
                r = req_excl(2);
                break;
            case 2:
                r = req_shared(1, 6144);
                break;
            default:
                r = req_shared(2, 0);
                r.device_plugin = next(&s) % 2 == 0;
                break;
            }
            if (decide(&w, r, (int)(next(&s) % N_NODES)).keep) {
                kept++;
            } else {
                rejected++;
            }
        }
    }
    /* both outcomes and both paths through the cache were exercised */
    cr_assert_gt(kept, 3000);
    cr_assert_gt(rejected, 1000);
    cr_assert_gt(hits(&w), 3000);
    cr_assert_gt(misses(&w), 3000);
    world_free(&w);
}

Test(vcache, bind_on_a_node_invalidates_only_that_node)
{
    static const int slots[N_CARDS] = {4, 4, 4, 4};
    struct world w;
    struct gx_tenant t[N_CARDS];
    uint64_t h;

    world_init(&w);
    for (int n = 0; n < N_NODES; n++) {
        cr_assert(decide(&w, req_excl(4), n).keep);
    }
    cr_assert_eq(misses(&w), N_NODES);
    for (int i = 0; i < N_CARDS; i++) {
        t[i] = tenant("pod-a", i, i == 0, 1, NOW);
    }
    cr_assert_eq(gx_ledger_add(w.ledger, "gpu-2", t, 1, slots, N_CARDS), GX_OK);
    h = hits(&w);
    /* gpu-2 lost a card at once; every other node is still answered from the cache */
    cr_assert_eq(decide(&w, req_excl(4), 2).reason, GX_REASON_NO_SLOT);
    cr_assert_eq(hits(&w), h);
    for (int n = 0; n < N_NODES; n++) {
        if (n != 2) {
            cr_assert(decide(&w, req_excl(4), n).keep);
        }
    }
    cr_assert_eq(hits(&w), h + N_NODES - 1);
    /* release gives the card back, again without waiting */
    cr_assert_eq(gx_ledger_release(w.ledger, "pod-a"), 1);
    cr_assert(decide(&w, req_excl(4), 2).keep);
    /* a first booking on a node the ledger never saw also invalidates */
    cr_assert(decide(&w, req_excl(4), 5).keep);
    cr_assert_eq(gx_ledger_add(w.ledger, "gpu-5", &t[0], 1, slots, N_CARDS), GX_OK);
    cr_assert_not(decide(&w, req_excl(4), 5).keep);
    world_free(&w);
}

Test(vcache, shared_booking_and_mark_bound_invalidate)
{
    static const int slots[N_CARDS] = {4, 4, 4, 4};
    struct world w;
    struct gx_tenant t = tenant("pod-s", 0, false, 2, NOW);
    uint64_t m;

    world_init(&w);
    w.nodes[0].n_cards = 1;
    w.nodes[0].gpu_count = 1;
    cr_assert(decide(&w, req_shared(3, 0), 0).keep);
    cr_assert_eq(gx_ledger_add(w.ledger, "gpu-0", &t, 1, slots, N_CARDS), GX_OK);
    cr_assert_eq(decide(&w, req_shared(3, 0), 0).reason, GX_REASON_NO_SLOT);
    m = misses(&w);
    cr_assert_eq(gx_ledger_mark_bound(w.ledger, "pod-s"), GX_OK);
    cr_assert_not(decide(&w, req_shared(3, 0), 0).keep);
    cr_assert_eq(misses(&w), m + 1);
    world_free(&w);
}

/* The gang options change the verdict on the same ledger: they are part of the shape. */
Test(vcache, gang_options_are_part_of_the_shape)
{
    static const int slots[N_CARDS] = {4, 4, 4, 4};
    struct world w;
    struct gx_tenant t = tenant("member", 0, false, 1, NOW);
    struct gx_podreq apart = req_shared(1, 0), other;

    world_init(&w);
    w.nodes[0].n_cards = 1;
    w.nodes[0].gpu_count = 1;
    t.gang = apart.gang = 7;
    cr_assert_eq(gx_ledger_add(w.ledger, "gpu-0", &t, 1, slots, N_CARDS), GX_OK);
    cr_assert(decide(&w, apart, 0).keep, "a member without the option shares the card");
    apart.apart = true;
    cr_assert_eq(decide(&w, apart, 0).reason, GX_REASON_GANG_APART);
    other = apart;
    other.gang = 8;
    cr_assert(decide(&w, other, 0).keep, "another gang's member");
    world_free(&w);
}

/* Without the options the gang decides nothing: members of every gang share one column. */
Test(vcache, members_of_gangs_without_options_share_a_column)
{
    struct world w;
    struct gx_podreq a = req_shared(1, 0), b = req_shared(1, 0);
    uint64_t m;

    world_init(&w);
    a.gang = 7;
    b.gang = 8;
    cr_assert(decide(&w, a, 0).keep);
    m = misses(&w);
    cr_assert(decide(&w, b, 0).keep);
    cr_assert_eq(misses(&w), m, "another gang's member is answered from the cache");
    b.same_numa = true;
    (void)decide(&w, b, 0);
    cr_assert_eq(misses(&w), m + 1, "with an option its gang is part of the shape");
    world_free(&w);
}

/* Under fgd's gap term a share's score reads every node's cards: a booking anywhere ends it. */
Test(vcache, gap_term_share_entries_die_on_a_booking_anywhere)
{
    static const int slots[N_CARDS] = {4, 4, 4, 4};
    const struct gx_fgd_shape typical = {.gpus = 1, .milli = 300};
    struct world w;
    struct gx_fgd_model m;
    struct gx_score_gaps gaps;
    struct gx_podreq share = req_shared(1, 0);
    struct gx_tenant t = tenant("pod-s", 0, false, 1, NOW);
    struct gx_tenant x = tenant("pod-x", 1, true, 0, NOW);
    struct gx_vshort before, after;
    uint64_t h;

    world_init(&w);
    w.cfg.policy = GX_POLICY_FGD;
    w.cfg.fgd_gap_milli = 8;
    gx_fgd_model_init(&m, 100);
    gx_fgd_observe(&m, &typical);
    memset(&gaps, 0, sizeof(gaps));
    w.ctx.fgd = &m;
    w.ctx.gaps = &gaps;
    share.milli = 300;
    t.milli = 300;
    before = decide(&w, share, 0);
    h = hits(&w);
    cr_assert_eq(decide(&w, share, 0).score, before.score);
    cr_assert_eq(hits(&w), h + 1, "nothing changed: answered from the cache");
    cr_assert_eq(gx_ledger_add(w.ledger, "gpu-1", &t, 1, slots, N_CARDS), GX_OK);
    after = decide(&w, share, 0); /* decide() checks it against gx_score_node */
    cr_assert_eq(hits(&w), h + 1, "gpu-1 changed: gpu-0's share answer is computed again");
    cr_assert_lt(after.exact, before.exact, "a second card with 700 free costs more");
    cr_assert(decide(&w, req_excl(1), 0).keep);
    h = hits(&w);
    cr_assert_eq(gx_ledger_add(w.ledger, "gpu-2", &x, 1, slots, N_CARDS), GX_OK);
    cr_assert(decide(&w, req_excl(1), 0).keep);
    cr_assert_eq(hits(&w), h + 1, "a whole card does not read the other nodes");
    gx_score_gaps_release(&gaps);
    world_free(&w);
}

Test(vcache, entry_dies_when_a_sample_turns_stale)
{
    struct world w;

    world_init(&w);
    /* the util sample of card 3 on gpu-1 is fresh until NOW + 500 inclusive */
    w.cards[1][3].at_ms[GX_SIG_UTIL] = NOW - 59500;
    cr_assert(decide(&w, req_excl(4), 1).keep);
    w.ctx.now_ms = NOW + 500;
    cr_assert(decide(&w, req_excl(4), 1).keep);
    cr_assert_eq(hits(&w), 1);
    w.ctx.now_ms = NOW + 501;
    cr_assert_eq(decide(&w, req_excl(4), 1).reason, GX_REASON_STALE);
    cr_assert_eq(misses(&w), 2);
    world_free(&w);
}

Test(vcache, entry_lives_at_most_one_second)
{
    struct world w;

    world_init(&w);
    cr_assert(decide(&w, req_excl(1), 0).keep);
    w.ctx.now_ms = NOW + GX_VCACHE_TTL_MS;
    cr_assert(decide(&w, req_excl(1), 0).keep);
    cr_assert_eq(hits(&w), 1);
    w.ctx.now_ms = NOW + GX_VCACHE_TTL_MS + 1;
    cr_assert(decide(&w, req_excl(1), 0).keep);
    cr_assert_eq(misses(&w), 2);
    world_free(&w);
}

Test(vcache, clock_going_back_misses)
{
    struct world w;

    world_init(&w);
    /* stale at NOW; a clock stepped back makes the sample fresh again */
    w.cards[0][0].at_ms[GX_SIG_TEMP] = NOW - 61000;
    cr_assert_eq(decide(&w, req_excl(4), 0).reason, GX_REASON_STALE);
    w.ctx.now_ms = NOW - 2000;
    cr_assert(decide(&w, req_excl(4), 0).keep);
    cr_assert_eq(hits(&w), 0);
    world_free(&w);
}

Test(vcache, new_snapshot_or_config_empties_the_cache)
{
    struct world w;

    world_init(&w);
    cr_assert(decide(&w, req_excl(1), 3).keep);
    for (int i = 0; i < N_CARDS; i++) {
        w.cards[3][i].v[GX_SIG_TEMP] = 95;
    }
    /* a rebuilt snapshot carries a new generation */
    w.snap.generation++;
    cr_assert_eq(decide(&w, req_excl(1), 3).reason, GX_REASON_UNHEALTHY);
    w.cfg.max_temperature_c = 100;
    w.cfg.hash++;
    cr_assert(decide(&w, req_excl(1), 3).keep);
    cr_assert_eq(hits(&w), 0);
    cr_assert_eq(misses(&w), 3);
    world_free(&w);
}

Test(vcache, keeps_the_most_recently_asked_shapes)
{
    struct world w;
    struct gx_podreq shapes[GX_VCACHE_SHAPES + 1];

    world_init(&w);
    for (int i = 0; i <= GX_VCACHE_SHAPES; i++) {
        shapes[i] = req_shared(1, 1024 * (i + 1));
    }
    for (int i = 0; i < GX_VCACHE_SHAPES; i++) {
        (void)decide(&w, shapes[i], 0);
    }
    for (int i = 0; i < GX_VCACHE_SHAPES; i++) {
        (void)decide(&w, shapes[i], 0);
    }
    cr_assert_eq(hits(&w), GX_VCACHE_SHAPES);
    /* shape 0 asked again is the most recent; one more shape evicts shape 1 only */
    (void)decide(&w, shapes[0], 0);
    (void)decide(&w, shapes[GX_VCACHE_SHAPES], 0);
    cr_assert_eq(misses(&w), GX_VCACHE_SHAPES + 1);
    (void)decide(&w, shapes[1], 0);
    cr_assert_eq(misses(&w), GX_VCACHE_SHAPES + 2);
    (void)decide(&w, shapes[GX_VCACHE_SHAPES], 0);
    (void)decide(&w, shapes[0], 0);
    (void)decide(&w, shapes[3], 0);
    cr_assert_eq(hits(&w), GX_VCACHE_SHAPES + 4);
    world_free(&w);
}

Test(vcache, unknown_or_foreign_nodes_and_null_cache_are_computed)
{
    struct world w;
    struct gx_node foreign;
    struct gx_podreq r = req_excl(1);
    struct gx_vshort v;

    world_init(&w);
    gx_vcache_decide(w.vc, &w.ctx, &r, NULL, &v);
    cr_assert_eq(v.reason, GX_REASON_UNKNOWN_NODE);
    foreign = w.nodes[0];
    foreign.ready = false;
    gx_vcache_decide(w.vc, &w.ctx, &r, &foreign, &v);
    cr_assert_eq(v.reason, GX_REASON_NOT_READY);
    gx_vcache_decide(NULL, &w.ctx, &r, &w.nodes[0], &v);
    cr_assert(v.keep);
    cr_assert_eq(hits(&w) + misses(&w), 0);
    world_free(&w);
}

/* Every node's verdict for 4 whole GPUs cached, then one card of @node booked whole. */
static void
cache_all_then_book(struct world *w, const char *node)
{
    static const int slots[N_CARDS] = {4, 4, 4, 4};
    struct gx_tenant t = tenant("pod-a", 0, true, 0, NOW);

    world_init(w);
    for (int n = 0; n < N_NODES; n++) {
        cr_assert(decide(w, req_excl(4), n).keep);
    }
    cr_assert_eq(gx_ledger_add(w->ledger, node, &t, 1, slots, N_CARDS), GX_OK);
}

Test(vcache, a_shape_asked_again_sees_the_bookings_made_meanwhile)
{
    struct world w;
    uint64_t m;

    cache_all_then_book(&w, "gpu-3");
    for (int n = 0; n < N_NODES; n++) {
        (void)decide(&w, req_excl(1), n); /* another shape's column syncs, this one waits */
    }
    m = misses(&w);
    cr_assert_not(decide(&w, req_excl(4), 3).keep);
    cr_assert_eq(misses(&w), m + 1);
    cr_assert(decide(&w, req_excl(4), 1).keep);
    cr_assert_eq(misses(&w), m + 1, "a node that did not change is still answered from the cache");
    world_free(&w);
}

Test(vcache, more_changes_than_the_ledger_remembers_decide_every_node_again)
{
    static const int slots[N_CARDS] = {4, 4, 4, 4};
    struct world w;
    uint64_t m;

    cache_all_then_book(&w, "gpu-4");
    for (int i = 0; i < GX_LEDGER_CHANGES; i++) {
        struct gx_tenant u = tenant("pod-b", 1, true, 0, NOW);
        cr_assert_eq(gx_ledger_add(w.ledger, "gpu-0", &u, 1, slots, N_CARDS), GX_OK);
        cr_assert_eq(gx_ledger_release(w.ledger, "pod-b"), 1);
    }
    m = misses(&w);
    for (int n = 0; n < N_NODES; n++) {
        cr_assert_eq(decide(&w, req_excl(4), n).keep, n != 4, "node %d", n);
    }
    cr_assert_eq(misses(&w), m + N_NODES);
    world_free(&w);
}
