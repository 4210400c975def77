/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_quota.c - per-namespace quotas: limits from the config, usage from
 * the ledger (a whole card 1000, a slice 1000/slots, a milli share its
 * milli), the one check filter, bind and explain apply, and bind refusing
 * a pod its namespace has no room for.
 */
#include "gx_test.h"

#include <string.h>

#include "admit.h"
#include "quota.h"

GX_SUITE(quota);

#define NOW INT64_C(1700000000000)

static struct gx_config *
config(const char *json)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_config_parse(json, strlen(json), "/", &cfg, &why), GX_OK, "%s", why.text);
    return cfg;
}

static const char QUOTAS[] = "{\"sharing\":{\"default_slots\":4},\"quotas\":{"
                             "\"default_milli_gpus\":2000,\"default_memory_mib\":0,"
                             "\"milli_gpus\":{\"ml\":1500,\"none\":0},"
                             "\"memory_mib\":{\"ml\":8192}}}";

struct world {
    struct gx_config *cfg;
    struct gx_snapshot snap;
    struct gx_node nodes[2];
    struct gx_card cards[2][2];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
};

static void
world_init(struct world *w, const char *json)
{
    static const char *const names[2] = {"node-a", "node-b"};

    memset(w, 0, sizeof(*w));
    w->cfg = config(json);
    for (int n = 0; n < 2; n++) {
        for (int i = 0; i < 2; i++) {
            struct gx_card *c = &w->cards[n][i];
            c->index = i;
            c->uuid = n == 0 ? (i == 0 ? "GPU-a0" : "GPU-a1") : (i == 0 ? "GPU-b0" : "GPU-b1");
            c->numa = -1;
            c->v[GX_SIG_UTIL] = 1;
            c->v[GX_SIG_MEM_USED] = 0;
            c->v[GX_SIG_MEM_FREE] = 24000;
            c->v[GX_SIG_TEMP] = 40;
            for (int s = 0; s < GX_SIG_COUNT; s++) {
                c->at_ms[s] = NOW - 1000;
            }
        }
        w->nodes[n].name = names[n];
        w->nodes[n].product = "NVIDIA-A100";
        w->nodes[n].gpu_count = 2;
        w->nodes[n].gpu_memory_mib = 24564;
        w->nodes[n].replicas = 1;
        w->nodes[n].alloc_gpu = 2;
        w->nodes[n].ready = true;
        w->nodes[n].cards = w->cards[n];
        w->nodes[n].n_cards = 2;
    }
    gx_arena_init(&w->snap.arena, 0);
    w->snap.nodes = w->nodes;
    w->snap.n_nodes = 2;
    cr_assert_eq(gx_snapshot_index(&w->snap), GX_OK);
    w->ledger = gx_ledger_new();
    w->ctx.cfg = w->cfg;
    w->ctx.snap = &w->snap;
    w->ctx.ledger = w->ledger;
    w->ctx.now_ms = NOW;
}

static void
world_free(struct world *w)
{
    gx_ledger_free(w->ledger);
    gx_nameidx_release(&w->snap.names);
    gx_arena_release(&w->snap.arena);
    gx_config_free(w->cfg);
}

/* Book pod @pod (@uid) on (@node, @card): whole, @slices slices or @milli milli, @mib MiB. */
static void
book(struct world *w, const char *node, const char *pod, const char *uid, int card, bool whole,
     int slices, int milli, int64_t mib)
{
    static const int slots[2] = {4, 4};
    struct gx_tenant t;

    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "%s", pod);
    t.card = card;
    t.exclusive = whole;
    t.slices = slices;
    t.milli = milli;
    t.memory_mib = mib;
    t.util_pct = -1;
    t.since_ms = NOW;
    cr_assert_eq(gx_ledger_add(w->ledger, node, &t, 1, slots, 2), GX_OK);
}

Test(quota, limits_come_from_the_namespace_row_else_the_default)
{
    struct gx_config *cfg = config(QUOTAS);
    struct gx_quota_limit lim;

    gx_quota_limits(cfg, "ml", &lim);
    cr_assert_eq(lim.milli, 1500);
    cr_assert_eq(lim.memory_mib, 8192);
    gx_quota_limits(cfg, "other", &lim);
    cr_assert_eq(lim.milli, 2000, "the default");
    cr_assert_eq(lim.memory_mib, -1, "no limit");
    cr_assert(gx_quota_limited(&lim));
    gx_quota_limits(cfg, "none", &lim);
    cr_assert_eq(lim.milli, 0, "0 forbids");
    gx_config_free(cfg);

    cfg = config("{}");
    gx_quota_limits(cfg, "ml", &lim);
    cr_assert_not(gx_quota_limited(&lim), "no quotas by default");
    gx_config_free(cfg);
}

Test(quota, the_config_rejects_a_bad_quota)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {{0}};
    const char *bad = "{\"quotas\":{\"milli_gpus\":{\"ml\":-5}}}";

    cr_assert_neq(gx_config_parse(bad, strlen(bad), "/", &cfg, &why), GX_OK);
    cr_assert_not_null(strstr(why.text, "quotas.milli_gpus"), "%s", why.text);
}

Test(quota, usage_sums_every_tenant_of_the_namespace_over_nodes)
{
    struct world w;
    struct gx_quota_use u;

    world_init(&w, QUOTAS);
    book(&w, "node-a", "ml/train", "u1", 0, true, 0, 0, 0);
    book(&w, "node-a", "ml/infer", "u2", 1, false, 1, 0, 4096);
    book(&w, "node-b", "ml/tiny", "u3", 0, false, 0, 300, 1024);
    book(&w, "node-b", "web/ui", "u4", 1, false, 2, 0, 2048);
    book(&w, "node-b", "mlops/x", "u5", 1, false, 1, 0, 0);
    gx_quota_usage(w.cfg, &w.snap, w.ledger, "ml", NULL, &u);
    cr_assert_eq(u.milli, 1000 + 250 + 300, "a card, a slice of 4, a milli share");
    cr_assert_eq(u.memory_mib, 4096 + 1024);
    cr_assert_eq(u.tenants, 3, "\"mlops\" is another namespace");
    gx_quota_usage(w.cfg, &w.snap, w.ledger, "ml", "u1", &u);
    cr_assert_eq(u.milli, 550, "a pod bound again is not counted twice");
    world_free(&w);
}

Test(quota, a_request_fits_only_within_both_limits)
{
    struct world w;
    struct gx_quota_check q;
    struct gx_podreq one_slice = {.kind = GX_REQ_SHARED, .slices = 1, .util_pct = -1};
    struct gx_podreq big_mem = {
        .kind = GX_REQ_SHARED, .slices = 1, .memory_mib = 4096, .util_pct = -1};
    struct gx_podreq whole = {.kind = GX_REQ_EXCLUSIVE, .gpus = 1, .util_pct = -1};
    struct gx_podreq none = {.kind = GX_REQ_NONE, .util_pct = -1};

    world_init(&w, QUOTAS);
    book(&w, "node-a", "ml/train", "u1", 0, true, 0, 0, 0);
    book(&w, "node-a", "ml/infer", "u2", 1, false, 1, 0, 6144);
    gx_quota_check_begin(&w.ctx, "ml", "new", &one_slice, &q);
    cr_assert(q.on);
    cr_assert(gx_quota_check_node(&q, &w.ctx, &one_slice, &w.nodes[1]), "1250 + 250 <= 1500");
    gx_quota_check_begin(&w.ctx, "ml", "new", &whole, &q);
    cr_assert_not(gx_quota_check_node(&q, &w.ctx, &whole, &w.nodes[1]), "1250 + 1000 > 1500");
    gx_quota_check_begin(&w.ctx, "ml", "new", &big_mem, &q);
    cr_assert_not(gx_quota_check_node(&q, &w.ctx, &big_mem, &w.nodes[1]), "6144 + 4096 > 8192");
    gx_quota_check_begin(&w.ctx, "ml", "new", &none, &q);
    cr_assert_not(q.on, "a pod without GPUs is never limited");
    gx_quota_check_begin(&w.ctx, "ml", "new", NULL, &q);
    cr_assert_not(q.on, "an invalid request has its own reason");
    gx_quota_check_begin(&w.ctx, "none", "new", &one_slice, &q);
    cr_assert_not(gx_quota_check_node(&q, &w.ctx, &one_slice, &w.nodes[1]), "0 forbids");
    world_free(&w);
}

Test(quota, bind_refuses_a_pod_its_namespace_has_no_room_for)
{
    struct world w;
    struct gx_podreq whole = {.kind = GX_REQ_EXCLUSIVE, .gpus = 1, .util_pct = -1};
    struct gx_podreq slice = {.kind = GX_REQ_SHARED, .slices = 1, .util_pct = -1};
    struct gx_admit_pod p1 = {"new-1", "ml", "big", &whole};
    struct gx_admit_pod p2 = {"new-2", "ml", "small", &slice};
    struct gx_admit_plan plan;
    struct gx_why why = {{0}};

    world_init(&w, QUOTAS);
    w.cfg->memory_reserve_mib = 512;
    book(&w, "node-a", "ml/train", "u1", 0, true, 0, 0, 0);
    cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "node-b", &p1, &plan, &why), GX_ECONFLICT);
    cr_assert_str_eq(why.text, "cannot bind to node-b: namespace GPU share quota exceeded");
    cr_assert_null(gx_ledger_find_pod(w.ledger, "new-1"), "nothing booked");
    cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "node-b", &p2, &plan, &why), GX_OK, "%s",
                 why.text);
    cr_assert(plan.changed);
    world_free(&w);
}

Test(quota, the_reason_is_named_and_left_to_preemption)
{
    cr_assert_str_eq(gx_reason_text(GX_REASON_QUOTA), "namespace GPU share quota exceeded");
    cr_assert_str_eq(gx_reason_name(GX_REASON_QUOTA), "quota");
    cr_assert_not(gx_reason_unresolvable(GX_REASON_QUOTA),
                  "victims of the same namespace can make room");
}

struct seen {
    char ns[4][32];
    int64_t milli[4], lim[4];
    int n;
};

static void
each_cb(void *ctx, const char *ns, const struct gx_quota_use *use, const struct gx_quota_limit *lim)
{
    struct seen *s = ctx;

    (void)snprintf(s->ns[s->n], sizeof(s->ns[0]), "%s", ns);
    s->milli[s->n] = use->milli;
    s->lim[s->n] = lim->milli;
    s->n++;
}

Test(quota, each_namespace_in_name_order_within_the_cap)
{
    struct world w;
    struct seen s = {0};
    size_t dropped = 99;

    world_init(&w, QUOTAS);
    book(&w, "node-b", "web/ui", "u4", 1, false, 2, 0, 0);
    book(&w, "node-a", "ml/train", "u1", 0, true, 0, 0, 0);
    book(&w, "node-b", "batch/j", "u5", 0, false, 1, 0, 0);
    cr_assert_eq(gx_quota_each(w.cfg, &w.snap, w.ledger, 2, each_cb, &s, &dropped), GX_OK);
    cr_assert_eq(s.n, 2);
    cr_assert_str_eq(s.ns[0], "batch");
    cr_assert_str_eq(s.ns[1], "ml");
    cr_assert_eq(s.milli[1], 1000);
    cr_assert_eq(s.lim[1], 1500);
    cr_assert_eq(dropped, 1, "web is over the cap");
    world_free(&w);
}
