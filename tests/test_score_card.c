/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_score_card.c - a card's state as score_card.c decides it and every
 * decision reads it: XID, temperature, utilization, stale samples and the
 * one freshness rule at its edge.
 */
#include "gx_scoreworld.h"

#include <math.h>

GX_SUITE(score_card);

Test(score_card, exclusive_skips_card_with_xid_error)
{
    struct world w;
    struct gx_verdict v;
    int ignored[] = {43};

    world_init(&w, "gpu-1", 2);
    w.cards[0].v[GX_SIG_XID] = 79;
    v = decide(&w, req_excl(1));
    cr_assert(v.keep);
    cr_assert_eq(v.n_cards, 1);
    cr_assert_eq(v.cards[0], 1);
    cr_assert_eq(v.usable_cards, 1);
    v = decide(&w, req_excl(2));
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_UNHEALTHY);
    /* an ignored XID keeps the card usable */
    w.cfg.ignored_xids = ignored;
    w.cfg.n_ignored_xids = 1;
    w.cards[0].v[GX_SIG_XID] = 43;
    v = decide(&w, req_excl(2));
    cr_assert(v.keep);
    cr_assert_eq(v.n_cards, 2);
    world_free(&w);
}

Test(score_card, hot_card_is_unhealthy_for_every_request)
{
    struct world w;

    world_init(&w, "gpu-1", 1);
    w.cards[0].v[GX_SIG_TEMP] = 91;
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_UNHEALTHY);
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_UNHEALTHY);
    w.cards[0].v[GX_SIG_TEMP] = 84;
    cr_assert(decide(&w, req_shared(1, 0, -1)).keep);
    world_free(&w);
}

Test(score_card, busy_card_is_rejected)
{
    struct world w;

    world_init(&w, "gpu-1", 1);
    w.cards[0].v[GX_SIG_UTIL] = 97;
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_BUSY);
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_BUSY);
    cr_assert_str_eq(gx_reason_text(decide(&w, req_excl(1)).reason), "GPU utilization above limit");
    world_free(&w);
}

Test(score_card, stale_metrics_scored_neutral_under_ignore)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 1);
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        w.cards[0].at_ms[s] = NOW - 61000;
    }
    w.cards[0].v[GX_SIG_TEMP] = 99; /* old sample: the rule is skipped */
    v = decide(&w, req_shared(1, 0, -1));
    cr_assert(v.keep);
    cr_assert(v.parts.metrics_neutral);
    cr_assert_float_eq(v.parts.util, 0.5, 1e-9);
    cr_assert_float_eq(v.parts.temp, 0.5, 1e-9);
    v = decide(&w, req_excl(1));
    cr_assert(v.keep);
    cr_assert(v.parts.metrics_neutral);
    world_free(&w);
}

Test(score_card, stale_metrics_rejected_under_reject)
{
    struct world w;
    struct gx_verdict v;

    world_init(&w, "gpu-1", 2);
    w.cfg.on_stale = GX_STALE_REJECT;
    w.cards[0].at_ms[GX_SIG_UTIL] = 0; /* never sampled */
    v = decide(&w, req_excl(1));
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1);
    cr_assert_not(v.parts.metrics_neutral);
    w.cards[1].at_ms[GX_SIG_XID] = NOW - 120000;
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_STALE);
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_STALE);
    w.cards[1].v[GX_SIG_TEMP] = 95; /* unhealthy outranks stale */
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_UNHEALTHY);
    world_free(&w);
}

Test(score_card, card_state_names_why_a_card_is_unusable)
{
    struct world w;

    world_init(&w, "gpu-4", 4);
    w.cards[0].v[GX_SIG_TEMP] = 95;
    w.cards[1].v[GX_SIG_XID] = 13;
    w.cards[2].v[GX_SIG_UTIL] = 99;
    cr_assert_str_eq(gx_card_state_text(gx_score_card_state(&w.ctx, &w.node, &w.cards[0])), "hot");
    cr_assert_str_eq(gx_card_state_text(gx_score_card_state(&w.ctx, &w.node, &w.cards[1])), "xid");
    cr_assert_str_eq(gx_card_state_text(gx_score_card_state(&w.ctx, &w.node, &w.cards[2])), "busy");
    cr_assert_str_eq(gx_card_state_text(gx_score_card_state(&w.ctx, &w.node, &w.cards[3])), "ok");
    w.cfg.on_stale = GX_STALE_REJECT;
    w.cards[3].at_ms[GX_SIG_TEMP] = 0;
    cr_assert_eq(gx_score_card_state(&w.ctx, &w.node, &w.cards[3]), GX_CARD_STALE);
    world_free(&w);
}

Test(score_card, sample_exactly_max_age_old_is_fresh)
{
    struct world w;

    world_init(&w, "gpu-1", 1);
    w.cfg.on_stale = GX_STALE_REJECT;
    w.cfg.max_age_s[GX_SIG_TEMP] = 30;
    w.cards[0].at_ms[GX_SIG_TEMP] = NOW - 30000;
    cr_assert(gx_score_fresh(&w.ctx, &w.cards[0], GX_SIG_TEMP));
    cr_assert(decide(&w, req_excl(1)).keep);
    w.cards[0].at_ms[GX_SIG_TEMP] = NOW - 30001;
    cr_assert_not(gx_score_fresh(&w.ctx, &w.cards[0], GX_SIG_TEMP));
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_STALE);
    /* a NaN sample is never fresh, however recent */
    w.cards[0].at_ms[GX_SIG_TEMP] = NOW;
    w.cards[0].v[GX_SIG_TEMP] = NAN;
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_STALE);
    world_free(&w);
}

/* Every reader of freshness agrees at the max-age edge: explain's and each decision's. */
Test(score_card, freshness_edge_is_the_same_for_every_reader)
{
    struct world w;
    struct gx_podreq plugin = req_shared(1, 0, -1);

    plugin.device_plugin = true;
    world_init(&w, "ts-1", 1);
    w.node.sharing = GX_SHARING_TIME_SLICING;
    w.node.replicas = 2;
    w.cfg.on_stale = GX_STALE_REJECT;
    w.cfg.max_age_s[GX_SIG_XID] = 10;
    for (int64_t age = 9999; age <= 10001; age++) {
        bool fresh = age <= 10000;
        enum gx_reason want = fresh ? GX_REASON_NONE : GX_REASON_STALE;

        w.cards[0].at_ms[GX_SIG_XID] = NOW - age;
        cr_assert_eq(gx_score_fresh(&w.ctx, &w.cards[0], GX_SIG_XID), fresh, "age %lld",
                     (long long)age);
        cr_assert_eq(gx_score_card_state(&w.ctx, &w.node, &w.cards[0]),
                     fresh ? GX_CARD_OK : GX_CARD_STALE);
        cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, want);
        cr_assert_eq(decide(&w, plugin).reason, want);
        w.node.sharing = GX_SHARING_NONE;
        w.node.replicas = 1;
        cr_assert_eq(decide(&w, req_excl(1)).reason, want);
        w.node.sharing = GX_SHARING_TIME_SLICING;
        w.node.replicas = 2;
    }
    world_free(&w);
}

/* @w's node as a one-node snapshot in @snap, and @w's context deciding on it. */
static void
world_snapshot(struct world *w, struct gx_snapshot *snap)
{
    memset(snap, 0, sizeof(*snap));
    snap->nodes = &w->node;
    snap->n_nodes = 1;
    cr_assert_eq(gx_snapshot_index(snap), GX_OK);
    w->ctx.snap = snap;
}

Test(score_card, cooled_counts_the_cards_busy_before_and_not_after)
{
    struct world b, a, other;
    struct gx_snapshot sb, sa, so;

    world_init(&b, "gpu-4", 4);
    world_init(&a, "gpu-4", 4);
    world_init(&other, "gpu-5", 4);
    world_snapshot(&b, &sb);
    world_snapshot(&a, &sa);
    world_snapshot(&other, &so);
    b.cards[0].v[GX_SIG_UTIL] = 99; /* cools */
    b.cards[1].v[GX_SIG_UTIL] = 99; /* stays busy */
    a.cards[1].v[GX_SIG_UTIL] = 95;
    a.cards[2].v[GX_SIG_UTIL] = 99; /* heats: not a card that cooled */
    cr_assert_eq(gx_score_cards_cooled(&b.ctx, &a.ctx), 1);
    cr_assert_eq(gx_score_cards_cooled(&a.ctx, &b.ctx), 1, "card 2, the other way round");
    b.cards[3].v[GX_SIG_UTIL] = 99;
    a.cards[3].v[GX_SIG_TEMP] = 95;
    cr_assert_eq(gx_score_cards_cooled(&b.ctx, &a.ctx), 2, "cool but hot now: not busy");
    b.cards[3].at_ms[GX_SIG_UTIL] = NOW - 61000;
    cr_assert_eq(gx_score_cards_cooled(&b.ctx, &a.ctx), 1, "a stale sample was never busy");
    cr_assert_eq(gx_score_cards_cooled(&b.ctx, &other.ctx), 0, "another node matches nothing");
    a.cards[0].index = 7;
    cr_assert_eq(gx_score_cards_cooled(&b.ctx, &a.ctx), 0, "cards match by index");
    gx_nameidx_release(&sb.names);
    gx_nameidx_release(&sa.names);
    gx_nameidx_release(&so.names);
    world_free(&b);
    world_free(&a);
    world_free(&other);
}
