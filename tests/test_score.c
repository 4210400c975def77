/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_score.c - filter reasons, card choice and scores on hand-built nodes.
 * Config, snapshot nodes and requests are plain structs built here, so these
 * tests depend on the score and ledger modules only.
 */
#include "gx_test.h"

#include "score.h"

#include <math.h>
#include <string.h>

GX_SUITE(score);

#define NOW INT64_C(1700000000000)
#define CARD_MIB 24564
#define MAX_CARDS 8

struct world {
    struct gx_config cfg;
    struct gx_node node;
    struct gx_card cards[MAX_CARDS];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
};

/* Defaults as documented in config.h. */
static void
cfg_init(struct gx_config *c)
{
    memset(c, 0, sizeof(*c));
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        c->max_age_s[s] = 60;
    }
    c->on_stale = GX_STALE_IGNORE;
    c->max_temperature_c = 85;
    c->max_utilization_pct = 90;
    c->default_slots = 4;
    c->oversubscription = 1.0;
    c->memory_reserve_mib = 512;
    c->util_ceiling_pct = 100;
    c->default_slices = 1;
    c->reservation_ttl_s = 300;
    c->policy = GX_POLICY_BINPACK;
    c->w_util = c->w_memory = c->w_temp = c->w_labels = c->w_fit = 20;
    c->prefer_cpu_nodes_for_cpu_pods = true;
}

/* A card with every signal sampled one second ago. */
static void
card_set(struct gx_card *c, int index, double util, double mem_used, double temp)
{
    memset(c, 0, sizeof(*c));
    c->index = index;
    c->uuid = "GPU-test";
    c->numa = -1;
    c->v[GX_SIG_UTIL] = util;
    c->v[GX_SIG_MEM_USED] = mem_used;
    c->v[GX_SIG_MEM_FREE] = CARD_MIB - mem_used;
    c->v[GX_SIG_TEMP] = temp;
    c->v[GX_SIG_POWER] = 100;
    c->v[GX_SIG_XID] = 0;
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        c->at_ms[s] = NOW - 1000;
    }
}

/* A ready GPU node named @name with @n idle, cool cards. */
static void
world_init(struct world *w, const char *name, int n)
{
    memset(w, 0, sizeof(*w));
    cfg_init(&w->cfg);
    for (int i = 0; i < n; i++) {
        card_set(&w->cards[i], i, 5, 300, 40);
    }
    w->node.name = name;
    w->node.product = "NVIDIA-A100-SXM4-40GB";
    w->node.gpu_count = n;
    w->node.gpu_memory_mib = CARD_MIB;
    w->node.replicas = 1;
    w->node.sharing = GX_SHARING_NONE;
    w->node.alloc_gpu = n;
    w->node.ready = true;
    w->node.cards = w->cards;
    w->node.n_cards = (size_t)n;
    w->ledger = gx_ledger_new();
    cr_assert_not_null(w->ledger);
    w->ctx.cfg = &w->cfg;
    w->ctx.ledger = w->ledger;
    w->ctx.now_ms = NOW;
}

static void
world_free(struct world *w)
{
    gx_ledger_free(w->ledger);
}

/* Book @slices slices and @mem MiB on card @card of the world's node for pod @uid. */
static void
book(struct world *w, const char *uid, int card, bool exclusive, int slices, int64_t mem)
{
    int slots[MAX_CARDS];
    struct gx_tenant t;

    for (int i = 0; i < MAX_CARDS; i++) {
        slots[i] = gx_config_card_slots(&w->cfg, w->node.product, w->node.replicas);
    }
    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    t.card = card;
    t.exclusive = exclusive;
    t.slices = slices;
    t.memory_mib = mem;
    t.util_pct = -1;
    t.since_ms = NOW;
    cr_assert_eq(gx_ledger_add(w->ledger, w->node.name, &t, 1, slots, MAX_CARDS), GX_OK);
}

static struct gx_podreq
req_none(void)
{
    struct gx_podreq r = {.kind = GX_REQ_NONE, .util_pct = -1};
    return r;
}

static struct gx_podreq
req_excl(int64_t gpus)
{
    struct gx_podreq r = {.kind = GX_REQ_EXCLUSIVE, .gpus = gpus, .util_pct = -1};
    return r;
}

static struct gx_podreq
req_shared(int slices, int64_t mem, double util)
{
    struct gx_podreq r = {
        .kind = GX_REQ_SHARED, .slices = slices, .memory_mib = mem, .util_pct = util};
    return r;
}

/* Verdict for @r on the world's node. */
static struct gx_verdict
decide(struct world *w, struct gx_podreq r)
{
    struct gx_verdict v;

    gx_score_node(&w->ctx, &r, &w->node, &v);
    if (v.keep) {
        cr_assert_geq(v.score, 0);
        cr_assert_leq(v.score, 10);
    }
    return v;
}

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
    };

    cr_assert_str_eq(gx_reason_text(GX_REASON_NONE), "");
    for (size_t i = 0; i < GX_ARRAY_LEN(want); i++) {
        cr_assert_str_eq(gx_reason_text(want[i].r), want[i].text);
        cr_assert_str_eq(gx_reason_name(want[i].r), want[i].name);
        cr_assert_eq(gx_reason_unresolvable(want[i].r), want[i].unresolvable, "%s", want[i].name);
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

Test(score, exclusive_skips_card_with_xid_error)
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

Test(score, hot_card_is_unhealthy_for_every_request)
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

Test(score, busy_card_is_rejected)
{
    struct world w;

    world_init(&w, "gpu-1", 1);
    w.cards[0].v[GX_SIG_UTIL] = 97;
    cr_assert_eq(decide(&w, req_excl(1)).reason, GX_REASON_BUSY);
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_BUSY);
    cr_assert_str_eq(gx_reason_text(decide(&w, req_excl(1)).reason), "GPU utilization above limit");
    world_free(&w);
}

Test(score, exclusive_treats_untracked_memory_use_as_busy)
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

Test(score, exclusive_skips_cards_held_in_the_ledger)
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

Test(score, stale_metrics_scored_neutral_under_ignore)
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

Test(score, stale_metrics_rejected_under_reject)
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

/* The reason names what decides: cards merely taken, not one other card's XID. */
Test(score, taken_cards_not_one_sick_card_decide_the_reason)
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

Test(score, card_state_names_why_a_card_is_unusable)
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

Test(score, full_slots_reject_with_time_slot_reason)
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

Test(score, card_held_exclusively_has_no_slot_for_shared_pods)
{
    struct world w;

    world_init(&w, "gpu-1", 1);
    book(&w, "ex", 0, true, 0, 0);
    cr_assert_eq(decide(&w, req_shared(1, 0, -1)).reason, GX_REASON_NO_SLOT);
    world_free(&w);
}

/* A device-plugin pod dcgm-exporter sees on a card we never booked owns that card. */
Test(score, card_with_unbooked_workload_has_no_slot_on_unshared_node)
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

Test(score, memory_uses_max_of_booked_and_measured)
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

Test(score, reason_comes_from_the_card_that_got_furthest)
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

Test(score, util_ceiling_counts_declared_and_expected_load)
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

Test(score, exclusive_on_time_sliced_node_needs_physical_cards)
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

Test(score, device_plugin_shared_needs_time_sliced_node)
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

Test(score, device_plugin_blames_sick_cards_only_when_they_would_help)
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

Test(score, binpack_fills_used_card_and_spread_picks_empty_one)
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

Test(score, binpack_prefers_node_left_without_fragments)
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

Test(score, exclusive_picks_the_idlest_cards)
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

Test(score, exclusive_keeps_numa_groups_together)
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

Test(score, numa_groups_tie_to_the_lower_id_and_skip_unknown)
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

Test(score, sample_exactly_max_age_old_is_fresh)
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
Test(score, freshness_edge_is_the_same_for_every_reader)
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
Test(score, filter_admits_exactly_the_slots_bind_allows)
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

Test(score, scores_stay_in_range_on_random_nodes)
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
Test(score, milli_share_fits_by_milli_and_packs_under_binpack)
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
Test(score, fgd_picks_the_card_that_strands_least)
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
Test(score, fgd_scores_cpu_pods_by_the_gpus_they_strand)
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
Test(score, fgd_charges_a_placement_on_an_idle_node)
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

/*
 * score.fgd_gap_milli: of two cards fgd finds alike, a share goes to the one
 * that leaves a gap size few cards of the cluster have. gpu-2's four cards
 * all have 300 free; the 300-milli share would leave 300 on gpu-1's card 0
 * (a fifth such gap) or 400 on card 1 (the only one).
 */
Test(score, fgd_gap_term_leaves_a_gap_size_few_cards_have)
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
    memset(&snap, 0, sizeof(snap));
    gx_strmap_init(&snap.by_name);
    for (int i = 0; i < 4; i++) {
        card_set(&other[i], i, 5, 300, 40);
        book_on(&w, "gpu-2", i == 0 ? "c0" : i == 1 ? "c1" : i == 2 ? "c2" : "c3", i, 700);
    }
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(gx_strmap_put(&snap.by_name, nodes[i].name, strlen(nodes[i].name), &nodes[i]),
                     GX_OK);
    }
    snap.nodes = nodes;
    snap.n_nodes = 2;
    snap.generation = 1;
    memset(&gaps, 0, sizeof(gaps));
    w.ctx.snap = &snap;
    w.ctx.gaps = &gaps;
    r.milli = 300;

    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert_eq(v.cards[0], 0, "off: fgd ties (both gaps take the typical pod), binpack decides");
    w.cfg.fgd_gap_milli = 1;
    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 1, "400 left is a rare gap, 300 a common one");
    cr_assert_float_eq(v.parts.fit, 0.5, 1e-9, "400: one gap size traded for another, no cost");
    cr_assert_eq(gaps.gaps.count[300], 4);
    cr_assert_eq(gaps.cards, 6);
    cr_assert_eq(gaps.gaps.min_open, 100, "the smallest typical share");

    book_on(&w, "gpu-2", "c4", 0, 300); /* gpu-2's card 0 is full now: 300 is no longer common */
    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert_eq(gaps.gaps.count[300], 3, "counted again after the ledger changed");
    w.ctx.gaps = NULL;
    gx_score_node(&w.ctx, &r, &nodes[0], &v);
    cr_assert_eq(v.cards[0], 0, "no counts: no term");
    gx_strmap_release(&snap.by_name);
    world_free(&w);
}

/* A decision on a scratch ledger goes without the gap counts of the real one. */
Test(score, decide_ctx_on_another_ledger_drops_the_gap_counts)
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
