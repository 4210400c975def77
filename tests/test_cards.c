/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cards.c - the ledger per card in /metrics (only booked or claimed
 * cards, capped, the rest counted) and in GET /debug/cards (every card,
 * its tenants, booked against measured).
 */
#include "gx_test.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "cards.h"
#include "explain.h"
#include "metrics.h"

GX_SUITE(cards);

#define NOW INT64_C(1700000000000)

struct world {
    struct gx_config *cfg;
    struct gx_snapshot snap;
    struct gx_node node;
    struct gx_card cards[3];
    struct gx_ledger *ledger;
};

static void
world_init(struct world *w, int max_cards)
{
    static const char *const uu[3] = {"GPU-0", "GPU-1", "GPU-2"};

    memset(w, 0, sizeof(*w));
    cr_assert_eq(gx_config_default(&w->cfg), GX_OK);
    w->cfg->metrics_max_cards = max_cards;
    for (int i = 0; i < 3; i++) {
        struct gx_card *c = &w->cards[i];
        c->index = i;
        c->uuid = uu[i];
        c->v[GX_SIG_UTIL] = 42;
        c->v[GX_SIG_MEM_USED] = 1000;
        for (int s = 0; s < GX_SIG_COUNT; s++) {
            c->at_ms[s] = NOW - 1000;
        }
    }
    w->cards[2].claim = "ml/train";
    w->node.name = "node-\"a\"";
    w->node.product = "NVIDIA-A100";
    w->node.gpu_count = 3;
    w->node.replicas = 4;
    w->node.cards = w->cards;
    w->node.n_cards = 3;
    w->snap.nodes = &w->node;
    w->snap.n_nodes = 1;
    w->ledger = gx_ledger_new();
}

static void
world_free(struct world *w)
{
    gx_ledger_free(w->ledger);
    gx_config_free(w->cfg);
}

static void
book(struct world *w, const char *pod, const char *uid, int card, int slices, int64_t mib)
{
    static const int slots[3] = {4, 4, 4};
    struct gx_tenant t;

    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "%s", pod);
    t.card = card;
    t.slices = slices;
    t.memory_mib = mib;
    t.util_pct = -1;
    t.state = GX_TENANT_BOUND;
    t.since_ms = NOW;
    cr_assert_eq(gx_ledger_add(w->ledger, w->node.name, &t, 1, slots, 3), GX_OK);
}

static char *
metrics(struct world *w)
{
    struct gx_buf b;

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_cards_metrics(w->cfg, &w->snap, w->ledger, &b), GX_OK);
    return gx_buf_take(&b, NULL);
}

Test(cards, only_booked_or_claimed_cards_have_series)
{
    struct world w;
    char *m;

    world_init(&w, 100);
    book(&w, "ml/a", "u1", 0, 1, 4096);
    book(&w, "web/b", "u2", 0, 2, 0);
    m = metrics(&w);
    cr_assert_not_null(strstr(m, "gpu_extender_card_booked_share{node=\"node-\\\"a\\\"\",gpu=\"0\","
                                 "UUID=\"GPU-0\"} 0.75\n"),
                       "%s", m);
    cr_assert_not_null(strstr(m, "gpu_extender_card_booked_memory_bytes{node=\"node-\\\"a\\\"\","
                                 "gpu=\"0\",UUID=\"GPU-0\"} 4294967296\n"),
                       "4 GiB in bytes: %s", m);
    cr_assert_not_null(strstr(m, "gpu_extender_card_tenants{node=\"node-\\\"a\\\"\",gpu=\"0\","
                                 "UUID=\"GPU-0\"} 2\n"));
    cr_assert_null(strstr(m, "UUID=\"GPU-1\""), "an idle card has no series");
    cr_assert_not_null(strstr(m, "gpu_extender_card_dra_claimed{node=\"node-\\\"a\\\"\",gpu=\"2\","
                                 "UUID=\"GPU-2\"} 1\n"),
                       "a claimed card is shown");
    cr_assert_not_null(strstr(m, "gpu_extender_dra_claimed_cards 1\n"));
    cr_assert_not_null(strstr(m, "gpu_extender_card_series_dropped 0\n"));
    cr_assert_not_null(
        strstr(m, "gpu_extender_namespace_booked_milli_gpus{tenant_namespace=\"ml\"} 250\n"));
    cr_assert_not_null(strstr(
        m, "gpu_extender_namespace_booked_memory_bytes{tenant_namespace=\"ml\"} 4294967296\n"));
    cr_assert_null(strstr(m, "gpu_extender_namespace_quota_milli_gpus{"), "no quota, no series");
    free(m);
    world_free(&w);
}

Test(cards, the_cap_counts_what_it_leaves_out)
{
    struct world w;
    char *m;

    world_init(&w, 1);
    book(&w, "ml/a", "u1", 0, 1, 0);
    m = metrics(&w);
    cr_assert_not_null(strstr(m, "UUID=\"GPU-0\""));
    cr_assert_null(strstr(m, "UUID=\"GPU-2\""), "over the cap");
    cr_assert_not_null(strstr(m, "gpu_extender_card_series_dropped 1\n"));
    cr_assert_not_null(strstr(m, "gpu_extender_dra_claimed_cards 1\n"), "totals are not capped");
    free(m);
    world_free(&w);
}

Test(cards, debug_json_names_the_pods_on_each_card)
{
    struct world w;
    struct gx_buf b;
    cJSON *j, *cards, *c0, *t0;

    world_init(&w, 100);
    book(&w, "ml/a", "u1", 0, 1, 4096);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_cards_json(w.cfg, &w.snap, w.ledger, NOW, &b), GX_OK);
    j = cJSON_ParseWithLength(b.data, b.len);
    cr_assert_not_null(j, "%.*s", (int)b.len, b.data);
    cards = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "nodes"), 0), "cards");
    cr_assert_eq(cJSON_GetArraySize(cards), 3, "every card, idle ones too");
    c0 = cJSON_GetArrayItem(cards, 0);
    cr_assert_eq(cJSON_GetObjectItem(c0, "booked_share")->valuedouble, 0.25);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c0, "measured"), "util_pct")->valuedouble,
                 42);
    t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(c0, "tenants"), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(t0, "pod")->valuestring, "ml/a");
    cr_assert_eq(cJSON_GetObjectItem(t0, "share_milli")->valuedouble, 250);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cards, 2), "dra_claim")->valuestring,
                     "ml/train");
    cr_assert_str_eq(cJSON_GetObjectItem(
                         cJSON_GetArrayItem(cJSON_GetObjectItem(j, "namespaces"), 0), "namespace")
                         ->valuestring,
                     "ml");
    cJSON_Delete(j);
    gx_buf_release(&b);
    world_free(&w);
}

/* The number after "@name " in the exposition text @m; -1 when absent. */
static double
sample(const char *m, const char *name)
{
    const char *at = strstr(m, name);

    return at != NULL ? strtod(at + strlen(name), NULL) : -1;
}

/*
 * Issue 22: explain showed "slots 3/4", /debug/cards booked_share 0.97 and
 * /metrics ledger_slots_used 4 for one full card. All three now read
 * gx_cards_booking.
 */
Test(cards, explain_cards_and_metrics_agree_on_a_full_card)
{
    static const int slots[3] = {4, 4, 4};
    struct world w;
    struct gx_tenant t;
    struct gx_decide_ctx ctx;
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .util_pct = -1};
    struct gx_metrics mx;
    struct gx_metrics_gauges g;
    struct gx_buf ex, cj, mt;
    cJSON *edoc, *cdoc;
    const cJSON *ecard, *ccard;

    world_init(&w, 100);
    book(&w, "ml/a", "u1", 0, 3, 0);
    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "u2");
    (void)snprintf(t.pod, sizeof(t.pod), "ml/b");
    t.card = 0;
    t.slices = 1;
    t.milli = 220;
    t.util_pct = -1;
    t.state = GX_TENANT_BOUND;
    cr_assert_eq(gx_ledger_add(w.ledger, w.node.name, &t, 1, slots, 3), GX_OK);
    ctx = (struct gx_decide_ctx){.cfg = w.cfg, .snap = &w.snap, .ledger = w.ledger, .now_ms = NOW};
    gx_buf_init(&ex, 1 << 20);
    gx_buf_init(&cj, 1 << 20);
    gx_buf_init(&mt, 1 << 20);
    cr_assert_eq(gx_explain_json(&ctx, &req, "ml/c", NULL, &ex), GX_OK);
    cr_assert_eq(gx_cards_json(w.cfg, &w.snap, w.ledger, NOW, &cj), GX_OK);
    memset(&g, 0, sizeof(g));
    gx_metrics_init(&mx);
    gx_cards_slots(w.cfg, &w.snap, w.ledger, &g.ledger_slots_used, &g.ledger_slots_total);
    cr_assert_eq(gx_metrics_render(&mx, &g, &mt), GX_OK);
    cr_assert_eq(gx_cards_metrics(w.cfg, &w.snap, w.ledger, &mt), GX_OK);

    edoc = cJSON_Parse(ex.data);
    cdoc = cJSON_Parse(cj.data);
    cr_assert(edoc != NULL && cdoc != NULL);
    ecard = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(edoc, "nodes"), 0), "cards"), 0);
    ccard = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cdoc, "nodes"), 0), "cards"), 0);
    /* the card is full: 3 slices and 220 milli-GPU (one more slot) of 4 slots */
    cr_expect_eq(cJSON_GetObjectItem(ecard, "slots_used")->valueint, 4);
    cr_expect_eq(cJSON_GetObjectItem(ccard, "slots_used")->valueint, 4);
    /* the claimed card 2 is full too: 4 + 4 of 12 */
    cr_expect_eq(sample(mt.data, "\ngpu_extender_ledger_slots_used "), 8, "%s", mt.data);
    cr_expect_eq(sample(mt.data, "\ngpu_extender_ledger_slots_total "), 12);
    cr_expect_float_eq(cJSON_GetObjectItem(ecard, "booked_share")->valuedouble, 0.97, 1e-9);
    cr_expect_float_eq(cJSON_GetObjectItem(ccard, "booked_share")->valuedouble, 0.97, 1e-9);
    cr_expect_float_eq(sample(mt.data, "gpu_extender_card_booked_share{node=\"node-\\\"a\\\"\","
                                       "gpu=\"0\",UUID=\"GPU-0\"} "),
                       0.97, 1e-9, "%s", mt.data);
    /* one key, one meaning: the count is tenant_count, the list tenants */
    cr_expect_eq(cJSON_GetObjectItem(ecard, "tenant_count")->valueint, 2);
    cr_expect(cJSON_IsArray(cJSON_GetObjectItem(ecard, "tenants")));
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ecard, "tenants")), 2);
    cJSON_Delete(edoc);
    cJSON_Delete(cdoc);
    gx_buf_release(&ex);
    gx_buf_release(&cj);
    gx_buf_release(&mt);
    world_free(&w);
}
