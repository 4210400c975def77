/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_explain.c - the explain table and JSON agree with gx_score_node on a
 * hand-built snapshot (no snapshot/config module code involved).
 */
#include "gx_test.h"

#include "explain.h"

#include <cjson/cJSON.h>
#include <string.h>

GX_SUITE(explain);

#define NOW INT64_C(1700000000000)
#define N_NODES 4

struct world {
    struct gx_config *defaults; /* gx_config_default(): owns what cfg borrows */
    struct gx_config cfg;       /* the shipped defaults and the overrides below */
    struct gx_snapshot snap;
    struct gx_node nodes[N_NODES];
    struct gx_card cards[N_NODES][2];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
};

/* An idle card sampled a second ago. */
static void
card_set(struct gx_card *c, int index, const char *uuid, double util, double used, double temp)
{
    memset(c, 0, sizeof(*c));
    c->index = index;
    c->uuid = uuid;
    c->numa = -1;
    c->v[GX_SIG_UTIL] = util;
    c->v[GX_SIG_MEM_USED] = used;
    c->v[GX_SIG_MEM_FREE] = 24564 - used;
    c->v[GX_SIG_TEMP] = temp;
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        c->at_ms[s] = NOW - 1000;
    }
}

/*
 * Four nodes: "gpu-a" (2 cards, one shared tenant), "gpu-b" (2 cards, both
 * full), "gpu-hot" (one hot card), "cpu-1" (no GPUs).
 */
static void
world_init(struct world *w)
{
    static const char *const names[N_NODES] = {"gpu-a", "gpu-b", "gpu-hot", "cpu-1"};
    static const int counts[N_NODES] = {2, 2, 1, 0};
    const int slots[2] = {4, 4};
    struct gx_tenant t;

    memset(w, 0, sizeof(*w));
    cr_assert_eq(gx_config_default(&w->defaults), GX_OK);
    w->cfg = *w->defaults;
    w->cfg.policy = GX_POLICY_BINPACK;
    w->cfg.w_util = w->cfg.w_memory = w->cfg.w_temp = w->cfg.w_labels = w->cfg.w_fit = 20;
    for (int i = 0; i < N_NODES; i++) {
        struct gx_node *n = &w->nodes[i];
        n->name = names[i];
        n->product = "NVIDIA-L4";
        n->gpu_count = counts[i];
        n->gpu_memory_mib = counts[i] ? 24564 : 0;
        n->replicas = 1;
        n->ready = true;
        n->cards = w->cards[i];
        n->n_cards = (size_t)counts[i];
        for (int c = 0; c < counts[i]; c++) {
            card_set(&w->cards[i][c], c, c ? "GPU-bbbb" : "GPU-aaaa", 10, 400, 45);
        }
    }
    w->cards[2][0].v[GX_SIG_TEMP] = 93;
    w->snap.nodes = w->nodes;
    w->snap.n_nodes = N_NODES;
    w->ledger = gx_ledger_new();
    cr_assert_not_null(w->ledger);
    memset(&t, 0, sizeof(t));
    t.util_pct = -1;
    t.slices = 1;
    t.memory_mib = 6144;
    (void)snprintf(t.uid, sizeof(t.uid), "u-a");
    cr_assert_eq(gx_ledger_add(w->ledger, "gpu-a", &t, 1, slots, 2), GX_OK);
    t.slices = 4;
    t.memory_mib = 0;
    for (int c = 0; c < 2; c++) {
        (void)snprintf(t.uid, sizeof(t.uid), "u-b%d", c);
        t.card = c;
        cr_assert_eq(gx_ledger_add(w->ledger, "gpu-b", &t, 1, slots, 2), GX_OK);
    }
    memset(&t, 0, sizeof(t));
    t.util_pct = -1;
    t.exclusive = true;
    t.card = 1;
    (void)snprintf(t.uid, sizeof(t.uid), "u-ex");
    cr_assert_eq(gx_ledger_add(w->ledger, "gpu-a", &t, 1, slots, 2), GX_OK);
    w->ctx.cfg = &w->cfg;
    w->ctx.snap = &w->snap;
    w->ctx.ledger = w->ledger;
    w->ctx.now_ms = NOW;
}

static void
world_free(struct world *w)
{
    gx_ledger_free(w->ledger);
    gx_config_free(w->defaults);
}

/* The line of @text starting with @prefix (copied into @line), or false. */
static bool
find_line(const char *text, const char *prefix, char *line, size_t n)
{
    const char *p = text;

    while (p != NULL && *p != '\0') {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            if (len >= n) {
                len = n - 1;
            }
            memcpy(line, p, len);
            line[len] = '\0';
            return true;
        }
        p = end != NULL ? end + 1 : NULL;
    }
    return false;
}

Test(explain, text_rows_match_score_verdicts)
{
    struct world w;
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .memory_mib = 6144, .util_pct = -1};
    struct gx_buf b;
    const char *prev = NULL;

    world_init(&w);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_explain_text(&w.ctx, &req, "ml/trainer", NULL, &b), GX_OK);
    cr_assert(strncmp(b.data, "pod ml/trainer: shared 1 slice, memory 6144 MiB\n",
                      strlen("pod ml/trainer: shared 1 slice, memory 6144 MiB\n")) == 0,
              "%s", b.data);
    cr_assert_not_null(strstr(b.data, "NODE"));
    cr_assert_not_null(strstr(b.data, "VERDICT"));
    for (size_t i = 0; i < w.snap.n_nodes; i++) {
        struct gx_verdict v;
        char line[512];
        const char *at;

        gx_score_node(&w.ctx, &req, &w.nodes[i], &v);
        cr_assert(find_line(b.data, w.nodes[i].name, line, sizeof(line)), "no row for %s",
                  w.nodes[i].name);
        cr_assert_not_null(strstr(line, v.keep ? " fit " : " reject "), "%s", line);
        if (!v.keep) {
            cr_assert_not_null(strstr(line, gx_reason_text(v.reason)), "%s", line);
        }
        /* rows follow snapshot order */
        at = strstr(b.data, line);
        cr_assert(prev == NULL || at > prev);
        prev = at;
    }
    /* the verdicts themselves: a, b full, hot, no GPUs */
    cr_assert_not_null(strstr(b.data, "no GPU time slot available"));
    cr_assert_not_null(strstr(b.data, "GPU unhealthy"));
    cr_assert_not_null(strstr(b.data, "node has no GPUs"));
    cr_assert_not_null(
        strstr(b.data, "  card 0 GPU-aaaa util 10% mem 400/24564 MiB temp 45C slots 1/4 share "
                       "0.25 booked 6144 MiB tenants 1 [chosen]\n"),
        "%s", b.data);
    /* a whole-GPU holder takes every slot */
    cr_assert_not_null(strstr(b.data, "slots 4/4 share 1.00 booked 0 MiB tenants 1 [exclusive]\n"),
                       "%s", b.data);
    /* a card that cannot take work says why */
    cr_assert_not_null(strstr(b.data, "[unusable: hot]"), "%s", b.data);
    gx_buf_release(&b);
    world_free(&w);
}

Test(explain, describes_exclusive_and_cpu_requests)
{
    struct world w;
    struct gx_podreq ex = {.kind = GX_REQ_EXCLUSIVE, .gpus = 2, .util_pct = -1};
    struct gx_podreq none = {.kind = GX_REQ_NONE, .util_pct = -1};
    struct gx_buf b;
    char line[512];

    world_init(&w);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_explain_text(&w.ctx, &ex, "ns/big", NULL, &b), GX_OK);
    cr_assert(find_line(b.data, "pod ns/big: exclusive 2 GPUs", line, sizeof(line)));
    cr_assert(find_line(b.data, "gpu-hot", line, sizeof(line)));
    cr_assert_not_null(strstr(line, "too few usable GPUs"), "%s", line);
    gx_buf_reset(&b);
    cr_assert_eq(gx_explain_text(&w.ctx, &none, "ns/cpu", NULL, &b), GX_OK);
    cr_assert(find_line(b.data, "pod ns/cpu: no GPU request", line, sizeof(line)));
    cr_assert(find_line(b.data, "cpu-1", line, sizeof(line)));
    cr_assert_not_null(strstr(line, " fit "), "%s", line);
    cr_assert_not_null(strstr(line, " 10 "), "%s", line);
    gx_buf_release(&b);
    world_free(&w);
}

Test(explain, json_carries_the_same_verdicts)
{
    struct world w;
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .memory_mib = 6144, .util_pct = 20};
    struct gx_buf b;
    cJSON *doc, *nodes;

    world_init(&w);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_explain_json(&w.ctx, &req, "ml/<trainer>", NULL, &b), GX_OK);
    doc = cJSON_ParseWithLength(b.data, b.len);
    cr_assert_not_null(doc, "%s", b.data);
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "pod")->valuestring, "ml/<trainer>");
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "request"), "kind")->valuestring,
                     "shared");
    nodes = cJSON_GetObjectItem(doc, "nodes");
    cr_assert_eq(cJSON_GetArraySize(nodes), N_NODES);
    for (int i = 0; i < N_NODES; i++) {
        const cJSON *n = cJSON_GetArrayItem(nodes, i);
        const cJSON *cards = cJSON_GetObjectItem(n, "cards");
        struct gx_verdict v;

        gx_score_node(&w.ctx, &req, &w.nodes[i], &v);
        cr_assert_str_eq(cJSON_GetObjectItem(n, "node")->valuestring, w.nodes[i].name);
        cr_assert_str_eq(cJSON_GetObjectItem(n, "verdict")->valuestring, v.keep ? "fit" : "reject");
        cr_assert_str_eq(cJSON_GetObjectItem(n, "reason")->valuestring, gx_reason_text(v.reason));
        cr_assert_str_eq(cJSON_GetObjectItem(n, "reason_name")->valuestring,
                         gx_reason_name(v.reason));
        if (v.keep) {
            cr_assert_eq(cJSON_GetObjectItem(n, "score")->valueint, v.score);
        } else {
            cr_assert(cJSON_IsNull(cJSON_GetObjectItem(n, "score")));
        }
        cr_assert_eq((size_t)cJSON_GetArraySize(cards), w.nodes[i].n_cards);
        cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(n, "cards_chosen")), v.n_cards);
    }
    {
        const cJSON *a0 =
            cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 0), "cards"), 0);
        cr_assert_eq(cJSON_GetObjectItem(a0, "slots")->valueint, 4);
        cr_assert_eq(cJSON_GetObjectItem(a0, "slices_used")->valueint, 1);
        cr_assert_eq(cJSON_GetObjectItem(a0, "booked_mib")->valueint, 6144);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(a0, "chosen")));
        cr_assert_str_eq(cJSON_GetObjectItem(a0, "state")->valuestring, "ok");
    }
    cJSON_Delete(doc);
    gx_buf_release(&b);
    world_free(&w);
}

/*
 * filter.shortlist_nodes 1 with two nodes that fit: explain shows the worse
 * one left out as filter would leave it out, in text and JSON.
 */
Test(explain, shows_the_nodes_a_shortlist_leaves_out)
{
    struct world w;
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .memory_mib = 1024, .util_pct = 5};
    struct gx_verdict va, vh;
    struct gx_buf b;
    char line[512];
    cJSON *doc, *nodes;
    const char *worse;

    world_init(&w);
    w.cards[2][0].v[GX_SIG_TEMP] = 45; /* gpu-hot cools down: it fits too */
    w.cfg.shortlist_nodes = 1;
    gx_score_node(&w.ctx, &req, &w.nodes[0], &va);
    gx_score_node(&w.ctx, &req, &w.nodes[2], &vh);
    cr_assert(va.keep && vh.keep, "both fit");
    cr_assert_neq(va.score_exact, vh.score_exact, "the test needs a better and a worse node");
    worse = va.score_exact < vh.score_exact ? "gpu-a" : "gpu-hot";

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_explain_text(&w.ctx, &req, "ml/x", NULL, &b), GX_OK);
    cr_assert(find_line(b.data, worse, line, sizeof(line)), "%s", b.data);
    cr_assert_not_null(strstr(line, "reject"), "%s", line);
    cr_assert_not_null(strstr(line, gx_reason_text(GX_REASON_SHORTLIST)), "%s", line);
    cr_assert(
        find_line(b.data, strcmp(worse, "gpu-a") == 0 ? "gpu-hot" : "gpu-a", line, sizeof(line)));
    cr_assert_not_null(strstr(line, "fit"), "%s", line);

    gx_buf_reset(&b);
    cr_assert_eq(gx_explain_json(&w.ctx, &req, "ml/x", NULL, &b), GX_OK);
    doc = cJSON_ParseWithLength(b.data, b.len);
    cr_assert_not_null(doc);
    nodes = cJSON_GetObjectItem(doc, "nodes");
    for (int i = 0; i < N_NODES; i++) {
        const cJSON *n = cJSON_GetArrayItem(nodes, i);
        if (strcmp(cJSON_GetObjectItem(n, "node")->valuestring, worse) == 0) {
            cr_assert_str_eq(cJSON_GetObjectItem(n, "reason_name")->valuestring, "shortlist");
            cr_assert_str_eq(cJSON_GetObjectItem(n, "verdict")->valuestring, "reject");
        }
    }
    cJSON_Delete(doc);
    gx_buf_release(&b);
    world_free(&w);
}

Test(explain, leaves_buffer_unchanged_when_too_small)
{
    struct world w;
    struct gx_podreq req = {.kind = GX_REQ_EXCLUSIVE, .gpus = 1, .util_pct = -1};
    struct gx_buf b;

    world_init(&w);
    gx_buf_init(&b, 64);
    cr_assert_eq(gx_buf_adds(&b, "keep"), GX_OK);
    cr_assert_eq(gx_explain_text(&w.ctx, &req, "ns/p", NULL, &b), GX_ETOOBIG);
    cr_assert_str_eq(b.data, "keep");
    cr_assert_eq(gx_explain_json(&w.ctx, &req, "ns/p", NULL, &b), GX_ETOOBIG);
    cr_assert_str_eq(b.data, "keep");
    cr_assert_eq(b.len, 4);
    gx_buf_release(&b);
    world_free(&w);
}

Test(explain, says_the_source_and_the_warnings)
{
    struct world w;
    struct gx_podreq req = {.kind = GX_REQ_NONE, .util_pct = -1};
    const char *warn[] = {"first \"warning\"", "second"};
    struct gx_explain_notes notes = {"Deployment ml/web: its pod template", warn, 2};
    struct gx_buf b;
    cJSON *doc;

    world_init(&w);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_explain_text(&w.ctx, &req, "ml/web", &notes, &b), GX_OK);
    cr_expect_not_null(strstr(b.data, "\nsource: Deployment ml/web: its pod template\n"), "%s",
                       b.data);
    cr_expect_not_null(strstr(b.data, "\nwarning: first \"warning\"\nwarning: second\n"), "%s",
                       b.data);
    gx_buf_reset(&b);
    cr_assert_eq(gx_explain_json(&w.ctx, &req, "ml/web", &notes, &b), GX_OK);
    doc = cJSON_ParseWithLength(b.data, b.len);
    cr_assert_not_null(doc, "%s", b.data);
    cr_expect_str_eq(cJSON_GetObjectItem(doc, "source")->valuestring,
                     "Deployment ml/web: its pod template");
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "warnings")), 2);
    cr_expect_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "warnings"), 0)->valuestring,
                     "first \"warning\"");
    cJSON_Delete(doc);
    gx_buf_reset(&b);
    cr_assert_eq(gx_explain_json(&w.ctx, &req, "ml/web", NULL, &b), GX_OK);
    cr_expect_not_null(strstr(b.data, "\"source\":null,\"warnings\":[]"), "%s", b.data);
    gx_buf_release(&b);
    world_free(&w);
}
