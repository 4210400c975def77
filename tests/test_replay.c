/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_replay.c - the time-based replay on a small generated cluster:
 * invariants (nobody leaves before arriving, the ledger is empty once every
 * pod left, every arrival is placed or counted as never placed), seeds
 * reproducible, load and the utilization model acting as documented, and
 * the live API of sim.h it drives (place and leave give everything back).
 */
#include "gx_simgen.h"
#include "gx_test.h"

#include "ledger.h"
#include "replay.h"

#include <stdio.h>
#include <string.h>

GX_SUITE(replay);

#define N_NODES 24
#define N_PODS 120

static struct gx_trace_node nodes[N_NODES];
static struct gx_trace_pod pods[N_PODS];

/* 8 x 8 + 16 x 2 = 96 cards; shares, whole GPUs and CPU pods lasting 1 min .. 2 h. */
static struct gx_sim_trace
gen_trace(bool times)
{
    static const int milli[] = {250, 500, 1000, 750, 300, 1000, 0, 500, 2000, 4000};
    static const int64_t dur[] = {60, 300, 900, 1800, 3600, 7200};
    const struct gx_simgen g = {.n_nodes = N_NODES,
                                .n_pods = N_PODS,
                                .seed = 4242,
                                .milli = milli,
                                .n_milli = GX_ARRAY_LEN(milli),
                                .dur = times ? dur : NULL,
                                .n_dur = GX_ARRAY_LEN(dur),
                                .one_model = true};

    return gx_simgen_trace(&g, nodes, pods);
}

static void
run(const struct gx_replay_opts *o, uint64_t seed, struct gx_replay_result *r)
{
    struct gx_sim_trace t = gen_trace(true);
    struct gx_why why = {{0}};

    cr_assert_eq(gx_replay_run(o, &t, seed, r, &why), GX_OK, "%s", why.text);
}

/* The invariants every run must keep. */
static void
assert_invariants(const struct gx_replay_result *r)
{
    cr_assert_gt(r->arrived, N_PODS, "more arrivals than trace pods over 2 h at load 1.2");
    cr_assert_eq(r->order_errs, 0, "no pod placed before it arrived or gone before placed");
    cr_assert_eq(r->ledger_errs, 0, "the ledger accepts every booking and release");
    cr_assert_eq(r->ledger_left, 0, "the ledger is empty once every pod left");
    cr_assert_leq(r->never_placed, r->arrived - r->placed);
    cr_assert_eq(r->placed + r->never_placed, r->arrived, "placed or still waiting at the end");
    cr_assert_geq(r->pending_p95_s, 0.0);
    cr_assert_leq(r->alloc_pct, 100.0);
    cr_assert_leq(r->util_pct, 100.0);
    cr_assert_leq(r->hot_shared_card_min, r->hot_card_min, "shared cards' hot minutes are hot");
}

Test(replay, extender_and_count_only_keep_the_invariants)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_replay_opts o;
    struct gx_replay_result r;

    gx_replay_opts_default(&o, cfg);
    o.load = 1.2;
    run(&o, 1, &r);
    assert_invariants(&r);
    cr_assert_gt(r.alloc_pct, 20.0, "the cluster is loaded: %.1f", r.alloc_pct);
    o.sim.mode = GX_SIM_COUNT_ONLY;
    run(&o, 1, &r);
    assert_invariants(&r);
    gx_config_free(cfg);
}

Test(replay, seeds_are_reproducible_and_differ)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_replay_opts o;
    struct gx_replay_result a, b, c;

    gx_replay_opts_default(&o, cfg);
    run(&o, 5, &a);
    run(&o, 5, &b);
    run(&o, 6, &c);
    cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "same seed, same run");
    cr_assert(a.arrived != c.arrived || a.hot_card_min != c.hot_card_min, "seeds differ");
    gx_config_free(cfg);
}

Test(replay, more_load_waits_longer)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_replay_opts o;
    struct gx_replay_result lo, hi;

    gx_replay_opts_default(&o, cfg);
    o.load = 0.3;
    run(&o, 2, &lo);
    o.load = 2.5;
    run(&o, 2, &hi);
    cr_assert_gt(hi.pending_mean_s, lo.pending_mean_s, "%.1f vs %.1f s", hi.pending_mean_s,
                 lo.pending_mean_s);
    cr_assert_gt(hi.never_placed, 0, "2.5x the capacity cannot all be placed");
    cr_assert_gt(hi.alloc_pct, lo.alloc_pct);
    gx_config_free(cfg);
}

Test(replay, demand_within_shares_never_over_admits_under_the_ledger)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_replay_opts o;
    struct gx_replay_result ext, cnt;

    gx_replay_opts_default(&o, cfg);
    o.load = 1.5;
    o.ramp_frac = 0.0; /* every pod stays within its share */
    run(&o, 3, &ext);
    o.sim.mode = GX_SIM_COUNT_ONLY;
    run(&o, 3, &cnt);
    cr_assert_eq(ext.over_cards, 0, "the ledger never books past the card");
    cr_assert_gt(cnt.over_cards, 0, "time-slicing replicas promise more than a card has");
    gx_config_free(cfg);
}

/* Whole GPUs only (1, 2, 4 cards), 10 min .. 2 h: cards run hot with one tenant. */
static struct gx_sim_trace
whole_gpu_trace(void)
{
    static const int whole[] = {1000, 2000, 4000};
    static const int64_t dur[] = {600, 3600, 7200};
    const struct gx_simgen g = {.n_nodes = N_NODES,
                                .n_pods = N_PODS,
                                .seed = 4242,
                                .milli = whole,
                                .n_milli = GX_ARRAY_LEN(whole),
                                .dur = dur,
                                .n_dur = GX_ARRAY_LEN(dur),
                                .one_model = true};

    return gx_simgen_trace(&g, nodes, pods);
}

Test(replay, a_card_hot_with_two_tenants_counts_as_shared)
{
    struct gx_sim_trace t = whole_gpu_trace();
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_replay_opts o;
    struct gx_replay_result r, cnt;
    struct gx_why why = {{0}};

    gx_replay_opts_default(&o, cfg);
    o.load = 1.2;
    cr_assert_eq(gx_replay_run(&o, &t, 7, &r, &why), GX_OK, "%s", why.text);
    cr_assert_gt(r.hot_card_min, 0.0, "whole GPUs run hot on their own");
    cr_assert_eq(r.hot_shared_card_min, 0.0, "no card has two tenants");
    run(&o, 7, &r); /* with shares */
    o.sim.mode = GX_SIM_COUNT_ONLY;
    run(&o, 7, &cnt);
    cr_assert_gt(cnt.hot_shared_card_min, r.hot_shared_card_min,
                 "replicas stack shares on busy cards: %.0f against %.0f card-min",
                 cnt.hot_shared_card_min, r.hot_shared_card_min);
    gx_config_free(cfg);
}

Test(replay, the_trend_signal_changes_decisions_only_with_its_weight)
{
    struct gx_config *off = gx_simgen_config("{}");
    struct gx_config *on = gx_simgen_config("{\"score\":{\"weights\":{\"trend\":20}}}");
    struct gx_replay_opts o;
    struct gx_replay_result a, b, c;

    gx_replay_opts_default(&o, off);
    o.load = 1.2;
    o.ramp_frac = 0.6;
    run(&o, 4, &a);
    o.trend = true;
    run(&o, 4, &b);
    cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "weight 0: the slope is fed but not used");
    o.sim.cfg = on;
    run(&o, 4, &c);
    cr_assert_neq(memcmp(&a, &c, sizeof(a)), 0, "weight 20: decisions change");
    gx_config_free(off);
    gx_config_free(on);
}

Test(replay, a_trace_without_times_is_an_error)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_replay_opts o;
    struct gx_replay_result r;
    struct gx_sim_trace t = gen_trace(false);
    struct gx_why why = {{0}};

    gx_replay_opts_default(&o, cfg);
    cr_assert_eq(gx_replay_run(&o, &t, 1, &r, &why), GX_EINVAL);
    cr_assert(strstr(why.text, "creation_time") != NULL, "%s", why.text);
    o.load = 0.0;
    t = gen_trace(true);
    cr_assert_eq(gx_replay_run(&o, &t, 1, &r, &why), GX_EINVAL);
    gx_config_free(cfg);
}

/* Tenants in the ledger (gx_ledger_each callback). */
static void
count_tenants(void *ctx, const struct gx_ledger_node *n)
{
    *(size_t *)ctx += n->n_tenants;
}

Test(replay, live_place_and_leave_give_everything_back)
{
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_sim_trace t = gen_trace(true);
    struct gx_sim_opts o;
    struct gx_sim_live *l = NULL;
    struct gx_sim_placed at[N_PODS];
    bool placed[N_PODS];
    struct gx_why why = {{0}};
    int64_t alloc = -1, cap = 0;
    size_t tenants = 0, n_placed = 0;

    gx_sim_opts_default(&o, cfg);
    cr_assert_eq(gx_sim_live_new(&o, &t, 9, &l, &why), GX_OK, "%s", why.text);
    for (int i = 0; i < N_PODS; i++) {
        placed[i] = gx_sim_live_place(l, &pods[i], &at[i]);
        n_placed += placed[i];
        if (placed[i] && pods[i].num_gpu > 0) {
            cr_assert(at[i].booked, "a GPU pod is booked in the ledger");
            cr_assert_eq(at[i].n_cards, pods[i].num_gpu);
        }
    }
    gx_ledger_each(gx_sim_live_ledger(l), count_tenants, &tenants);
    gx_sim_live_alloc(l, &alloc, &cap);
    cr_assert_gt(tenants, 0);
    cr_assert_gt(alloc, 0);
    cr_assert_lt(n_placed, N_PODS, "the trace asks more than 96 cards");
    for (int i = N_PODS - 1; i >= 0; i--) {
        if (placed[i]) {
            gx_sim_live_leave(l, &pods[i], &at[i]);
        }
    }
    tenants = 0;
    gx_ledger_each(gx_sim_live_ledger(l), count_tenants, &tenants);
    gx_sim_live_alloc(l, &alloc, &cap);
    cr_assert_eq(tenants, 0, "every booking released");
    cr_assert_eq(alloc, 0, "every card free again");
    cr_assert_eq(cap, 96 * 1000);
    cr_assert_eq(gx_sim_live_errors(l), 0);
    for (int i = 0; i < N_PODS; i++) {
        cr_assert(gx_sim_live_fits(l, &pods[i], 0), "an empty 8-GPU node fits any pod");
    }
    gx_sim_live_free(l);
    gx_config_free(cfg);
}

Test(replay, a_busy_card_that_cools_brings_its_waiters_back)
{
    struct gx_sim_trace t = whole_gpu_trace();
    struct gx_config *cfg = gx_simgen_config("{}");
    struct gx_replay_opts o;
    struct gx_replay_result on, off;
    struct gx_why why = {{0}};

    gx_replay_opts_default(&o, cfg);
    cr_assert(o.poke_cooled, "the extender pokes: the replay models it by default");
    o.load = 1.2; /* whole GPUs wait, and a freed card shows its tenant's last sample */
    cr_assert_eq(gx_replay_run(&o, &t, 7, &on, &why), GX_OK, "%s", why.text);
    cr_assert_eq(on.order_errs + on.ledger_errs + on.ledger_left, 0);
    cr_assert_gt(on.cooled_placed, 0, "a pod refused on a busy card placed once it cooled");
    o.poke_cooled = false;
    cr_assert_eq(gx_replay_run(&o, &t, 7, &off, &why), GX_OK, "%s", why.text);
    cr_assert_eq(off.order_errs + off.ledger_errs + off.ledger_left, 0);
    cr_assert_eq(off.cooled_placed, 0);
    cr_assert_lt(on.pending_mean_s, off.pending_mean_s, "%.1f s against %.1f s", on.pending_mean_s,
                 off.pending_mean_s);
    gx_config_free(cfg);
}
