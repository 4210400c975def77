/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score_card.c - the state of one card as every decision sees it: whether
 * its samples are fresh, whether it can take work (claimed, hot, XID, busy,
 * stale), its memory and its ledger usage, and the one walk over a node's
 * cards that the card choice makes (score_pick.c). Pure: reads the config,
 * the snapshot node, the ledger entry and the time it is given.
 *
 * Metric freshness is decided here rather than borrowed from snapshot.c so
 * that the decision has no dependency beyond the structs it reads. It does
 * not choose cards or score them.
 */
#include "score_int.h"

#include <math.h>
#include <string.h>

/*
 * The oldest time a sample of signal @sig may have been taken at to be
 * fresh at @now_ms. With sample_fresh this is the one freshness rule:
 * now - at <= max_age  <=>  at >= now - max_age, so a decision computes
 * the bound once per signal and compares once per sample.
 */
static int64_t
fresh_since(const struct gx_config *cfg, size_t sig, int64_t now_ms)
{
    return now_ms - (int64_t)cfg->max_age_s[sig] * 1000;
}

/* True when sample @sig of @card was taken, is known and was taken at @since or later. */
static bool
sample_fresh(const struct gx_card *card, size_t sig, int64_t since)
{
    return card->at_ms[sig] != 0 && card->at_ms[sig] >= since && !isnan(card->v[sig]);
}

bool
gx_score_fresh(const struct gx_decide_ctx *ctx, const struct gx_card *card, enum gx_signal sig)
{
    if ((unsigned)sig >= GX_SIG_COUNT) {
        return false;
    }
    return sample_fresh(card, sig, fresh_since(ctx->cfg, sig, ctx->now_ms));
}

void
gx_score_dctx_init(struct gx_score_dctx *d, const struct gx_decide_ctx *ctx,
                   const struct gx_node *node)
{
    const struct gx_ledger_node *ln = gx_ledger_node(ctx->ledger, node->name);

    d->ctx = ctx;
    d->cfg = ctx->cfg;
    if (ln != NULL && ln->n_tenants == 0 && ln->untracked_cpu_milli == 0 &&
        ln->untracked_mem_mib == 0) {
        ln = NULL;
    }
    gx_score_dctx_ledger(d, ln, gx_score_node_cards(node));
    for (size_t s = 0; s < GX_SIG_COUNT; s++) {
        d->oldest[s] = fresh_since(ctx->cfg, s, ctx->now_ms);
    }
    d->apart = 0;
    d->numa = -1;
}

void
gx_score_dctx_ledger(struct gx_score_dctx *d, const struct gx_ledger_node *ln, size_t cards)
{
    d->ln = ln;
    d->n_usage = 0;
    if (ln != NULL) {
        d->n_usage = (int)(cards < GX_SCORE_USAGE_CARDS ? cards : GX_SCORE_USAGE_CARDS);
        gx_ledger_entry_cards_usage(ln, d->usage, d->n_usage);
    }
}

void
gx_score_dctx_gang(struct gx_score_dctx *d, const struct gx_podreq *req, const struct gx_node *node)
{
    size_t n = gx_score_node_cards(node);

    d->apart = req->apart ? req->gang : 0;
    for (size_t i = 0; req->same_numa && d->numa < 0 && i < n; i++) {
        const struct gx_card *c = &node->cards[i];
        if (c->numa >= 0 && gx_ledger_entry_card_gang(d->ln, c->index, req->gang)) {
            d->numa = c->numa;
        }
    }
}

/* The gang rule's verdict on a healthy @card (gx_score_dctx_gang): NONE when it allows it. */
static enum gx_reason
gang_health(const struct gx_score_dctx *d, const struct gx_card *card)
{
    if (d->numa >= 0 && card->numa >= 0 && card->numa != d->numa) {
        return GX_REASON_GANG_NUMA;
    }
    if (gx_ledger_entry_card_gang(d->ln, card->index, d->apart)) {
        return GX_REASON_GANG_APART;
    }
    return GX_REASON_NONE;
}

/* Freshness of every signal of @card as a GX_FRESH() mask. */
static unsigned
card_fresh(const struct gx_score_dctx *d, const struct gx_card *card)
{
    unsigned m = 0;

    for (size_t s = 0; s < GX_SIG_COUNT; s++) {
        if (sample_fresh(card, s, d->oldest[s])) {
            m |= GX_FRESH(s);
        }
    }
    return m;
}

/* True when XID @xid is listed in metrics ignored_xids. */
static bool
xid_ignored(const struct gx_config *cfg, int xid)
{
    for (size_t i = 0; i < cfg->n_ignored_xids; i++) {
        if (cfg->ignored_xids[i] == xid) {
            return true;
        }
    }
    return false;
}

/*
 * State of @card (freshness mask @f), the one health rule: CLAIMED (held
 * through DRA), then HOT, then XID (a fresh non-ignored XID), then BUSY
 * (fresh utilization over the limit, only when @check_busy), then STALE (a
 * util/temp/xid sample missing or old under on_stale=reject), else OK.
 */
static enum gx_card_state
card_state(const struct gx_score_dctx *d, const struct gx_card *card, unsigned f, bool check_busy)
{
    const struct gx_config *cfg = d->cfg;
    bool uf = (f & GX_FRESH(GX_SIG_UTIL)) != 0;
    bool tf = (f & GX_FRESH(GX_SIG_TEMP)) != 0;
    bool xf = (f & GX_FRESH(GX_SIG_XID)) != 0;

    /* Held through DRA: taken as if booked whole, whatever its health. */
    if (card->claim != NULL) {
        return GX_CARD_CLAIMED;
    }
    if (tf && card->v[GX_SIG_TEMP] > cfg->max_temperature_c) {
        return GX_CARD_HOT;
    }
    if (xf && card->v[GX_SIG_XID] != 0.0 && !xid_ignored(cfg, (int)card->v[GX_SIG_XID])) {
        return GX_CARD_XID;
    }
    if (check_busy && uf && card->v[GX_SIG_UTIL] > cfg->max_utilization_pct) {
        return GX_CARD_BUSY;
    }
    if (cfg->on_stale == GX_STALE_REJECT && (!uf || !tf || !xf)) {
        return GX_CARD_STALE;
    }
    return GX_CARD_OK;
}

/* The filter reason of a card state. */
static enum gx_reason
card_health(const struct gx_score_dctx *d, const struct gx_card *card, unsigned f, bool check_busy)
{
    static const enum gx_reason reason[GX_CARD_COUNT] = {
        [GX_CARD_OK] = GX_REASON_NONE,       [GX_CARD_HOT] = GX_REASON_UNHEALTHY,
        [GX_CARD_XID] = GX_REASON_UNHEALTHY, [GX_CARD_BUSY] = GX_REASON_BUSY,
        [GX_CARD_STALE] = GX_REASON_STALE,   [GX_CARD_CLAIMED] = GX_REASON_NO_SLOT,
    };

    return reason[card_state(d, card, f, check_busy)];
}

enum gx_card_state
gx_score_card_state(const struct gx_decide_ctx *ctx, const struct gx_node *node,
                    const struct gx_card *card)
{
    struct gx_score_dctx d;

    gx_score_dctx_init(&d, ctx, node);
    return card_state(&d, card, card_fresh(&d, card), true);
}

/* @card's namesake (same index) on @node, or NULL. */
static const struct gx_card *
card_at(const struct gx_node *node, int index)
{
    for (size_t i = 0; i < gx_score_node_cards(node); i++) {
        if (node->cards[i].index == index) {
            return &node->cards[i];
        }
    }
    return NULL;
}

size_t
gx_score_cards_cooled(const struct gx_decide_ctx *before, const struct gx_decide_ctx *after)
{
    struct gx_score_dctx b, a;
    size_t n = 0;

    for (size_t i = 0; i < after->snap->n_nodes; i++) {
        const struct gx_node *an = &after->snap->nodes[i];
        const struct gx_node *bn = gx_snapshot_find(before->snap, an->name, strlen(an->name));
        if (bn == NULL) {
            continue;
        }
        gx_score_dctx_init(&b, before, bn);
        gx_score_dctx_init(&a, after, an);
        for (size_t c = 0; c < gx_score_node_cards(an); c++) {
            const struct gx_card *ac = &an->cards[c], *bc = card_at(bn, ac->index);
            n += bc != NULL && card_state(&b, bc, card_fresh(&b, bc), true) == GX_CARD_BUSY &&
                 card_state(&a, ac, card_fresh(&a, ac), true) != GX_CARD_BUSY;
        }
    }
    return n;
}

const char *
gx_card_state_text(enum gx_card_state s)
{
    static const char *const text[GX_CARD_COUNT] = {
        [GX_CARD_OK] = "ok",     [GX_CARD_HOT] = "hot",     [GX_CARD_XID] = "xid",
        [GX_CARD_BUSY] = "busy", [GX_CARD_STALE] = "stale", [GX_CARD_CLAIMED] = "claimed",
    };

    return (unsigned)s < GX_CARD_COUNT ? text[s] : "ok";
}

int64_t
gx_score_card_memory(const struct gx_node *node, const struct gx_card *card, unsigned f)
{
    const unsigned both = GX_FRESH(GX_SIG_MEM_USED) | GX_FRESH(GX_SIG_MEM_FREE);

    if (node->gpu_memory_mib > 0) {
        return node->gpu_memory_mib;
    }
    if ((f & both) == both) {
        return (int64_t)(card->v[GX_SIG_MEM_USED] + card->v[GX_SIG_MEM_FREE]);
    }
    return 0;
}

int64_t
gx_score_card_booked(const struct gx_card *card, unsigned f, const struct gx_card_usage *u)
{
    int64_t booked = u->memory_mib;

    if ((f & GX_FRESH(GX_SIG_MEM_USED)) && card->v[GX_SIG_MEM_USED] > (double)booked) {
        booked = (int64_t)card->v[GX_SIG_MEM_USED];
    }
    return booked;
}

size_t
gx_score_node_cards(const struct gx_node *node)
{
    size_t n = node->n_cards;

    if (node->gpu_count >= 0 && (size_t)node->gpu_count < n) {
        n = (size_t)node->gpu_count;
    }
    return node->cards != NULL ? n : 0;
}

void
gx_score_usage(const struct gx_score_dctx *d, const struct gx_card *card, struct gx_card_usage *u)
{
    if (d->ln == NULL) {
        memset(u, 0, sizeof(*u));
    } else if (card->index >= 0 && card->index < d->n_usage) {
        *u = d->usage[card->index];
    } else {
        gx_ledger_entry_card_usage(d->ln, card->index, u);
    }
}

void
gx_score_walk_init(struct gx_score_walk *w, const struct gx_score_dctx *d,
                   const struct gx_node *node, bool check_busy, size_t max)
{
    size_t n = gx_score_node_cards(node);

    memset(w, 0, sizeof(*w));
    w->d = d;
    w->node = node;
    w->check_busy = check_busy;
    w->n = n < max ? n : max;
}

bool
gx_score_walk_next(struct gx_score_walk *w)
{
    if (w->next >= w->n) {
        return false;
    }
    w->pos = w->next++;
    w->card = &w->node->cards[w->pos];
    w->fresh = card_fresh(w->d, w->card);
    w->health = card_health(w->d, w->card, w->fresh, w->check_busy);
    if (w->health == GX_REASON_NONE) {
        w->health = gang_health(w->d, w->card);
    }
    /* a card that cannot take work is not looked at further: its usage is not read */
    if (w->health == GX_REASON_NONE) {
        gx_score_usage(w->d, w->card, &w->usage);
    } else {
        memset(&w->usage, 0, sizeof(w->usage));
    }
    return true;
}
