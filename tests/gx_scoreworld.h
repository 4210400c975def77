/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gx_scoreworld.h - the hand-built world the score tests decide in: one
 * ready GPU node of idle, cool cards with fresh samples, the shipped
 * config defaults (binpack, weights alike), an empty ledger and requests of each kind. Plain
 * structs, so these tests depend on the score and ledger modules only.
 */
#ifndef GX_SCOREWORLD_H
#define GX_SCOREWORLD_H

#include "gx_test.h"

#include "score.h"

#include <string.h>

#define NOW INT64_C(1700000000000)
#define CARD_MIB 24564
#define MAX_CARDS 8

struct world {
    struct gx_config *defaults; /* gx_config_default(): owns what cfg borrows */
    struct gx_config cfg;       /* the shipped defaults and the overrides of world_init */
    struct gx_node node;
    struct gx_card cards[MAX_CARDS];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
};

/* A card with every signal sampled one second ago. */
static inline void
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
static inline void
world_init(struct world *w, const char *name, int n)
{
    memset(w, 0, sizeof(*w));
    cr_assert_eq(gx_config_default(&w->defaults), GX_OK);
    w->cfg = *w->defaults;
    /* binpack, the five weights alike: a test switches policy or weights where it says so */
    w->cfg.policy = GX_POLICY_BINPACK;
    w->cfg.w_util = w->cfg.w_memory = w->cfg.w_temp = w->cfg.w_labels = w->cfg.w_fit = 20;
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

static inline void
world_free(struct world *w)
{
    gx_ledger_free(w->ledger);
    gx_config_free(w->defaults);
}

/* Book @slices slices and @mem MiB on card @card of the world's node for pod @uid of @gang. */
static inline void
book_gang(struct world *w, const char *uid, int card, bool exclusive, int slices, int64_t mem,
          uint64_t gang)
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
    t.gang = gang;
    cr_assert_eq(gx_ledger_add(w->ledger, w->node.name, &t, 1, slots, MAX_CARDS), GX_OK);
}

/* Book @slices slices and @mem MiB on card @card of the world's node for pod @uid. */
static inline void
book(struct world *w, const char *uid, int card, bool exclusive, int slices, int64_t mem)
{
    book_gang(w, uid, card, exclusive, slices, mem, 0);
}

static inline struct gx_podreq
req_none(void)
{
    struct gx_podreq r = {.kind = GX_REQ_NONE, .util_pct = -1};
    return r;
}

static inline struct gx_podreq
req_excl(int64_t gpus)
{
    struct gx_podreq r = {.kind = GX_REQ_EXCLUSIVE, .gpus = gpus, .util_pct = -1};
    return r;
}

static inline struct gx_podreq
req_shared(int slices, int64_t mem, double util)
{
    struct gx_podreq r = {
        .kind = GX_REQ_SHARED, .slices = slices, .memory_mib = mem, .util_pct = util};
    return r;
}

/* Verdict for @r on the world's node. */
static inline struct gx_verdict
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

#endif
