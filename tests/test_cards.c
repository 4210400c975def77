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
