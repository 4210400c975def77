/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_score_pick.c - the card choice of score_pick.c, through
 * gx_score_node: exclusive picks (idlest, NUMA), shared slots, memory and
 * utilization headroom, the device plugin's slot count, binpack and spread,
 * and which reason names a node none of whose cards fit.
 */
#include "gx_scoreworld.h"

GX_SUITE(score_pick);

Test(score_pick, exclusive_treats_untracked_memory_use_as_busy)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    w.cards[0].v[GX_SIG_MEM_USED] = 9000; /* something we did not place */
    v = decide(&w, req_excl(1));
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1);
    w.cards[1].pod = "other/training-0";
    v = decide(&w, req_excl(1));
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_BUSY);
    world_free(&w);
}

Test(score_pick, exclusive_skips_cards_held_in_the_ledger)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 3);
    book(&w, "a", 0, true, 0, 0);
    book(&w, "b", 2, false, 1, 0);
    v = decide(&w, req_excl(1));
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1);
    v = decide(&w, req_excl(2));
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_NO_SLOT);
    cr_assert_not(gx_reason_unresolvable(v.reason));
    v = decide(&w, req_excl(4));
    cr_assert_eq(v.reason, GX_REASON_TOO_FEW_GPUS);
    cr_assert(gx_reason_unresolvable(v.reason));
    world_free(&w);
}

/* The reason names what decides: cards merely taken, not one other card's XID. */
Test(score_pick, taken_cards_not_one_sick_card_decide_the_reason)
{
    struct world w;

    world_init(&w, "gpu-8", 8);
    w.cards[0].v[GX_SIG_XID] = 13;
    for (int i = 1; i < 8; i++) {
        char uid[16];
        (void)snprintf(uid, sizeof(uid), "x%d", i);
        book(&w, uid, i, true, 0, 0);
    }
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_NO_SLOT);
    cr_assert_eq(decide(&w, req_excl(2)).reason, GX_REASON_NO_SLOT);
    world_free(&w);

    /* the sick card is what decides when the rest are free */
    world_init(&w, "gpu-2", 2);
    w.cards[0].v[GX_SIG_XID] = 13;
    cr_assert_eq(decide(&w, req_excl(2)).reason, GX_REASON_UNHEALTHY);
    world_free(&w);
}

Test(score_pick, full_slots_reject_with_time_slot_reason)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    book(&w, "a", 0, false, 4, 0);
    book(&w, "b", 1, false, 3, 0);
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1);
    v = decide(&w, req_shared(2, 0, -1));
    cr_assert_not(v.keep);
    cr_assert_str_eq(gx_reason_text(v.reason), "no GPU time slot available");
    book(&w, "c", 1, false, 1, 0);
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert_not(v.keep);
    cr_assert_str_eq(gx_reason_text(v.reason), "no GPU time slot available");
    cr_assert_eq(v.usable_cards, 0);
    world_free(&w);
}

/*
 * A share no card of the node could hold even empty: its own,
 * unresolvable reason, not a slot or memory shortage that waiting or a
 * victim would lift.
 */
Test(score_pick, a_share_no_empty_card_could_hold_never_fits)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2); /* 4 slots, 24,564 MiB cards, 512 MiB reserve */
    v = decide(&w, req_shared(5, 0, -1));
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_NEVER_FITS, "%s", gx_reason_text(v.reason));
    cr_assert(gx_reason_unresolvable(v.reason));
    cr_assert_not(gx_reason_lifts(v.reason),
                  "no booking that goes, no card that cools would let it in");
    v = decide(&w, req_shared(1, 24564 - 512 + 1, -1));
    cr_assert_eq(v.reason, GX_REASON_NEVER_FITS, "%s", gx_reason_text(v.reason));
    /* at the edge it fits an empty, idle card (one whose 300 MiB measured in use leave room) */
    w.cards[0].v[GX_SIG_UTIL] = 0;
    v = decide(&w, req_shared(4, 24564 - 512 - 300, -1));
    cr_assert(v.keep, "%s", gx_reason_text(v.reason));
    /* a full card is still a shortage, not a never */
    book(&w, "a", 0, false, 4, 0);
    book(&w, "b", 1, false, 4, 0);
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert_eq(v.reason, GX_REASON_NO_SLOT, "%s", gx_reason_text(v.reason));
    world_free(&w);
}

Test(score_pick, card_held_exclusively_has_no_slot_for_shared_pods)
{
    struct world w;

    world_init(&w, "gpu-1", 1);
    book(&w, "ex", 0, true, 0, 0);
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_NO_SLOT);
    world_free(&w);
}

/* A device-plugin pod dcgm-exporter sees on a card we never booked owns that card. */
Test(score_pick, card_with_unbooked_workload_has_no_slot_on_unshared_node)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    w.cards[0].pod = "vllm-llama3-8b-6c9d7f5b8-x2kqp";
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1);
    w.cards[1].pod = "sd-webui-5f6b8c7d9-q8wzl";
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_NO_SLOT);
    /* On a time-slicing node the labels are the device plugin's shared tenants. */
    w.node.sharing = GX_SHARING_TIME_SLICING;
    w.node.replicas = 4;
    cr_assert(decide(&w, req_shared(1, 0, -1)).keep);
    world_free(&w);
}

Test(score_pick, memory_uses_max_of_booked_and_measured)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 1);
    book(&w, "a", 0, false, 1, 16000);
    /* 16000 + 6144 = 22144 <= 24564 - 512 */
    v = decide(&w, req_shared(1, 6144, -1));
    cr_assert(v.keep);
    cr_assert_eq(decide(&w, req_shared(1, 8192, -1)).reason, GX_REASON_NO_MEMORY);
    /* measured use above the booking counts */
    w.cards[0].v[GX_SIG_MEM_USED] = 20000;
    cr_assert_eq(decide(&w, req_shared(1, 6144, -1)).reason, GX_REASON_NO_MEMORY);
    cr_assert(decide(&w, req_shared(1, 2048, -1)).keep);
    /* a card already past its usable memory takes no pod, even without an ask */
    w.cards[0].v[GX_SIG_MEM_USED] = 24300;
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_NO_MEMORY);
    world_free(&w);
}

Test(score_pick, reason_comes_from_the_card_that_got_furthest)
{
    struct world w;

    world_init(&w, "gpu-1", 3);
    w.cards[0].v[GX_SIG_TEMP] = 99;        /* unhealthy */
    book(&w, "full", 1, false, 4, 0);      /* no slot */
    w.cards[2].v[GX_SIG_MEM_USED] = 22000; /* no memory for 4 GiB */
    cr_assert_eq(decide(&w, req_shared(1, 4096, -1)).reason, GX_REASON_NO_MEMORY);
    w.cards[2].v[GX_SIG_MEM_USED] = 1000;
    w.cards[2].v[GX_SIG_UTIL] = 80; /* 80 + 30 > 100 */
    cr_assert_eq(decide(&w, req_shared(1, 4096, 30)).reason, GX_REASON_BUSY);
    cr_assert(decide(&w, req_shared(1, 4096, 20)).keep);
    world_free(&w);
}

/*
 * Issue 22's node: one card at 87 % of a 90 % limit, one busy with a pod the
 * scheduler did not place, one holding shares. What would have to change is
 * the two taken cards, not the load of the third: "no slot", not "busy".
 */
Test(score_pick, the_reason_that_kept_out_most_cards_decides)
{
    struct world w;

    world_init(&w, "gpu-1", 3);
    w.cfg.max_utilization_pct = 90;
    w.cfg.util_ceiling_pct = 100;
    w.cards[0].v[GX_SIG_UTIL] = 87; /* 87 + 20 expected > the ceiling */
    w.cards[1].pod = "vllm-llama3-8b-6c9d7f5b8-x2kqp";
    book(&w, "full", 2, false, 4, 0);
    cr_assert_eq(decide(&w, req_shared(1, 0, 20)).reason, GX_REASON_NO_SLOT);
    /* one taken card against the busy one: a tie, to the card that got furthest */
    w.cards[1].pod = NULL;
    w.cards[1].v[GX_SIG_TEMP] = 99;
    cr_assert_eq(decide(&w, req_shared(1, 0, 20)).reason, GX_REASON_BUSY);
    world_free(&w);
}

Test(score_pick, util_ceiling_counts_declared_and_expected_load)
{
    struct world w;
    struct gx_tenant t;
    int slots[1] = {4};

    world_init(&w, "gpu-1", 1);
    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "declared");
    t.slices = 1;
    t.util_pct = 70;
    cr_assert_eq(gx_ledger_add(w.ledger, "gpu-1", &t, 1, slots, 1), GX_OK);
    /* measured 5% but 70% already promised */
    cr_assert_eq(decide(&w, req_shared(1, 0, 40)).reason, GX_REASON_BUSY);
    cr_assert(decide(&w, req_shared(1, 0, 30)).keep);
    world_free(&w);
}

/*
 * A share that declares no gpu-util expects the share of the card it books:
 * measured load + that share must stay within the ceiling.
 */
Test(score_pick, an_undeclared_share_expects_its_share_of_the_card)
{
    struct world w;
    struct gx_podreq r = req_shared(1, 0, -1);

    world_init(&w, "gpu-1", 1); /* 4 slots */
    w.cards[0].v[GX_SIG_UTIL] = 45;
    r.milli = 700;
    cr_assert_eq(decide(&w, r).reason, GX_REASON_BUSY, "45 + 70 > 100");
    r.milli = 550;
    cr_assert(decide(&w, r).keep, "45 + 55 = 100");
    r.milli = 0;
    r.slices = 3;
    cr_assert_eq(decide(&w, r).reason, GX_REASON_BUSY, "3 slots of 4: 45 + 75 > 100");
    r.slices = 2;
    cr_assert(decide(&w, r).keep, "2 slots of 4: 45 + 50");
    /* a declared gpu-util, 0 included, is what the pod expects */
    r.slices = 3;
    r.util_pct = 0;
    cr_assert(decide(&w, r).keep);
    r.util_pct = -1;
    w.cfg.expect_share_util = false;
    cr_assert(decide(&w, r).keep, "switched off, only the busy threshold guards the card");
    w.cards[0].v[GX_SIG_UTIL] = 91;
    cr_assert_eq(decide(&w, r).reason, GX_REASON_BUSY);
    world_free(&w);
}

Test(score_pick, exclusive_on_time_sliced_node_needs_physical_cards)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "ts-1", 2);
    w.node.sharing = GX_SHARING_TIME_SLICING;
    w.node.replicas = 4;
    w.node.alloc_gpu = 8;
    v = decide(&w, req_excl(8));
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_TOO_FEW_GPUS);
    cr_assert(gx_reason_unresolvable(v.reason));
    v = decide(&w, req_excl(2));
    cr_assert(v.keep);
    cr_assert(v.device_plugin);
    cr_assert_eq(v.n_cards, 0);
    book(&w, "a", 0, false, 4, 0);
    book(&w, "b", 1, false, 3, 0);
    v = decide(&w, req_excl(2));
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_NO_SLOT);
    cr_assert(decide(&w, req_excl(1)).keep);
    world_free(&w);
}

Test(score_pick, device_plugin_shared_needs_time_sliced_node)
{
    struct world w;
    struct gx_podreq r = req_shared(1, 0, -1);
    struct gx_verdict v;

    r.device_plugin = true;
    world_init(&w, "plain-1", 2);
    v = decide(&w, r);
    cr_assert_eq(v.reason, GX_REASON_SHARING_MISMATCH);
    cr_assert(gx_reason_unresolvable(v.reason));
    w.node.sharing = GX_SHARING_TIME_SLICING;
    w.node.replicas = 2;
    v = decide(&w, r);
    cr_assert(v.keep);
    cr_assert(v.device_plugin);
    book(&w, "a", 0, false, 2, 0);
    book(&w, "b", 1, false, 2, 0);
    cr_assert_eq(decide(&w, r).reason, GX_REASON_NO_SLOT);
    world_free(&w);
}

Test(score_pick, device_plugin_blames_sick_cards_only_when_they_would_help)
{
    struct world w;
    struct gx_podreq r = req_shared(1, 0, -1);

    r.device_plugin = true;
    world_init(&w, "ts-1", 2);
    w.node.sharing = GX_SHARING_TIME_SLICING;
    w.node.replicas = 2;
    book(&w, "a", 0, false, 2, 0);
    w.cards[1].v[GX_SIG_XID] = 48;
    cr_assert_eq(decide(&w, r).reason, GX_REASON_UNHEALTHY);
    book(&w, "b", 1, false, 2, 0);
    cr_assert_eq(decide(&w, r).reason, GX_REASON_NO_SLOT);
    world_free(&w);
}

Test(score_pick, binpack_fills_used_card_and_spread_picks_empty_one)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 3);
    book(&w, "a", 1, false, 2, 2048);
    v = decide(&w, req_shared(1, 1024, -1));
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1);
    cr_assert_float_eq(v.parts.fit, 0.5, 1e-9);
    w.cfg.policy = GX_POLICY_SPREAD;
    v = decide(&w, req_shared(1, 1024, -1));
    cr_assert(v.keep);
    cr_assert_neq(v.cards[0], 1);
    cr_assert_float_eq(v.parts.fit, 1.0, 1e-9);
    /* spread breaks ties by free memory */
    w.cards[0].v[GX_SIG_MEM_USED] = 8000;
    cr_assert_eq(decide(&w, req_shared(1, 1024, -1)).cards[0], 2);
    world_free(&w);
}

Test(score_pick, binpack_prefers_node_left_without_fragments)
{
    struct world small, big;
    struct gx_verdict vs, vb;

    world_init(&small, "small", 2);
    world_init(&big, "big", 8);
    small.cfg.w_util = small.cfg.w_memory = small.cfg.w_temp = small.cfg.w_labels = 0;
    big.cfg = small.cfg;
    vs = decide(&small, req_excl(2));
    vb = decide(&big, req_excl(2));
    cr_assert(vs.keep && vb.keep);
    cr_assert_float_eq(vs.parts.fit, 1.0, 1e-9);
    cr_assert_float_eq(vb.parts.fit, 1.0 - 6.0 / 8.0, 1e-9);
    cr_assert_gt(vs.score, vb.score);
    small.cfg.policy = big.cfg.policy = GX_POLICY_SPREAD;
    vs = decide(&small, req_excl(2));
    vb = decide(&big, req_excl(2));
    cr_assert_lt(vs.score, vb.score);
    world_free(&small);
    world_free(&big);
}

Test(score_pick, exclusive_picks_the_idlest_cards)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 4);
    w.cards[0].v[GX_SIG_UTIL] = 12;
    w.cards[1].v[GX_SIG_UTIL] = 30;
    w.cards[2].v[GX_SIG_UTIL] = 0;
    w.cards[3].v[GX_SIG_UTIL] = 0;
    w.cards[3].v[GX_SIG_TEMP] = 60; /* same load, hotter */
    v = decide(&w, req_excl(1));
    cr_assert_eq(v.cards[0], 2);
    v = decide(&w, req_excl(3));
    cr_assert_eq(v.n_cards, 3);
    cr_assert_eq(v.cards[0], 2);
    cr_assert_eq(v.cards[1], 3);
    cr_assert_eq(v.cards[2], 0);
    world_free(&w);
}

Test(score_pick, exclusive_keeps_numa_groups_together)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 4);
    w.cards[0].numa = 0;
    w.cards[1].numa = 0;
    w.cards[2].numa = 1;
    w.cards[3].numa = 1;
    w.cards[0].v[GX_SIG_UTIL] = 0;
    w.cards[1].v[GX_SIG_UTIL] = 40;
    w.cards[2].v[GX_SIG_UTIL] = 10;
    w.cards[3].v[GX_SIG_UTIL] = 20;
    /* the two idlest cards (0, 2) sit on different NUMA nodes */
    v = decide(&w, req_excl(2));
    cr_assert(v.keep);
    cr_assert_eq(v.n_cards, 2);
    cr_assert_eq(w.cards[v.cards[0]].numa, w.cards[v.cards[1]].numa);
    cr_assert_float_eq(v.parts.fit, 1.0 - 2.0 / 4.0, 1e-9);
    /* binpack takes a lone card from the smaller group, keeping the pair whole */
    w.cards[2].v[GX_SIG_UTIL] = 99; /* busy */
    v = decide(&w, req_excl(1));
    cr_assert_eq(v.cards[0], 3);
    v = decide(&w, req_excl(2));
    cr_assert_eq(v.cards[0], 0);
    cr_assert_eq(v.cards[1], 1);
    /* spread takes it from the larger group */
    w.cfg.policy = GX_POLICY_SPREAD;
    v = decide(&w, req_excl(1));
    cr_assert_eq(v.cards[0], 0);
    /* no group fits 3: cards cross NUMA nodes and fit is halved */
    w.cfg.policy = GX_POLICY_BINPACK;
    v = decide(&w, req_excl(3));
    cr_assert(v.keep);
    cr_assert_float_eq(v.parts.fit, 0.5, 1e-9);
    world_free(&w);
}

Test(score_pick, numa_groups_tie_to_the_lower_id_and_skip_unknown)
{
    struct world w;
    struct gx_verdict v;
    static const int numa[8] = {5, -1, 3, 5, -1, 3, 7, 7};

    world_init(&w, "gpu-1", 8);
    for (int i = 0; i < 8; i++) {
        w.cards[i].numa = numa[i];
        w.cards[i].v[GX_SIG_UTIL] = 10.0 * (8 - i); /* idlest last */
    }
    /* groups 3, 5 and 7 hold two cards each: the tie goes to NUMA 3, idlest first */
    v = decide(&w, req_excl(2));
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 5);
    cr_assert_eq(v.cards[1], 2);
    cr_assert_float_eq(v.parts.fit, 1.0 - 6.0 / 8.0, 1e-9);
    /* a bigger group 7 wins under spread, the smaller ones under binpack */
    w.cards[1].numa = 7;
    w.cfg.policy = GX_POLICY_SPREAD;
    v = decide(&w, req_excl(2));
    cr_assert_eq(v.cards[0], 7);
    cr_assert_eq(v.cards[1], 6);
    w.cfg.policy = GX_POLICY_BINPACK;
    v = decide(&w, req_excl(3));
    cr_assert_eq(v.n_cards, 3);
    cr_assert_eq(v.cards[0], 7);
    cr_assert_eq(v.cards[1], 6);
    cr_assert_eq(v.cards[2], 1);
    /* cards with unknown NUMA are taken in idleness order when no group fits */
    v = decide(&w, req_excl(4));
    cr_assert_eq(v.cards[0], 7);
    cr_assert_eq(v.cards[3], 4);
    cr_assert_float_eq(v.parts.fit, 0.5 * (1.0 - 4.0 / 8.0), 1e-9);
    world_free(&w);
}

/* Shared pods filter keeps on one card of @w's node until it rejects one. */
static int
shared_admitted(struct world *w)
{
    char uid[32];
    int n = 0;

    for (;;) {
        struct gx_verdict v = decide(w, req_shared(1, 0, -1));
        if (!v.keep) {
            cr_assert_eq(v.reason, GX_REASON_NO_SLOT);
            return n;
        }
        (void)snprintf(uid, sizeof(uid), "uid-%d", n);
        book(w, uid, v.cards[0], false, 1, 0);
        n++;
        cr_assert_lt(n, 1000);
    }
}

/*
 * Filter and bind share one slot rule (gx_config_card_slots): GFD's -SHARED
 * product suffix and the rounding of oversubscription once decided filter
 * 4 and bind 2 (or 28 vs 29) slots.
 */
Test(score_pick, filter_admits_exactly_the_slots_bind_allows)
{
    struct world w;
    struct gx_product_slots ps = {"NVIDIA-L4", 2};

    world_init(&w, "gpu-1", 1);
    w.node.product = "NVIDIA-L4-SHARED";
    w.node.replicas = 4;
    w.cfg.product_slots = &ps;
    w.cfg.n_product_slots = 1;
    cr_assert_eq(shared_admitted(&w), 2);
    world_free(&w);

    world_init(&w, "gpu-1", 1);
    w.cfg.default_slots = 25;
    w.cfg.oversubscription = 1.16;
    cr_assert_eq(shared_admitted(&w), 29);
    world_free(&w);
}

Test(score_pick, scores_stay_in_range_on_random_nodes)
{
    struct world w;
    uint64_t s = 88172645463325252ULL;

    world_init(&w, "gpu-1", 4);
    for (int iter = 0; iter < 2000; iter++) {
        struct gx_verdict v;
        for (int c = 0; c < 4; c++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            card_set(&w.cards[c], c, (double)(s % 120), (double)(s % 30000), (double)(s % 100));
            w.cards[c].at_ms[GX_SIG_UTIL] = (s & 1) ? NOW : 0;
        }
        w.cfg.policy = (s & 2) ? GX_POLICY_SPREAD : GX_POLICY_BINPACK;
        v = decide(&w, (s & 4) ? req_excl((int64_t)(s % 4) + 1)
                               : req_shared((int)(s % 3) + 1, (int64_t)(s % 8000), -1));
        if (v.keep) {
            cr_assert(v.parts.util >= 0 && v.parts.util <= 1);
            cr_assert(v.parts.memory >= 0 && v.parts.memory <= 1);
            cr_assert(v.parts.temp >= 0 && v.parts.temp <= 1);
            cr_assert(v.parts.fit >= 0 && v.parts.fit <= 1);
        } else {
            cr_assert_neq(v.reason, GX_REASON_NONE);
        }
    }
    world_free(&w);
}

/* A milli share books its milli next to slice tenants under ledger.h's one rule. */
Test(score_pick, milli_share_fits_by_milli_and_packs_under_binpack)
{
    struct world w;
    struct gx_verdict v;
    struct gx_podreq r = req_shared(1, 0, -1);

    world_init(&w, "gpu-1", 2);
    book(&w, "a", 0, false, 3, 0); /* 750 of card 0 */
    r.milli = 250;
    v = decide(&w, r);
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 0, "binpack fills the used card to exactly 1000");
    r.milli = 251;
    v = decide(&w, r);
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1, "251 no longer fits card 0");
    book(&w, "b", 1, false, 4, 0);
    v = decide(&w, r);
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_NO_SLOT);
    r.milli = 1001;
    cr_assert_eq(decide(&w, r).reason, GX_REASON_BAD_REQUEST);
    world_free(&w);
}
