/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score_int.h - what the files of the score module share: the decision
 * context of one node, the walk over its cards, the score parts, the fgd
 * terms and the card choice per request kind. Never included by another
 * module; score.h is the module's interface.
 *
 * Each file calls only files to its right (scripts/layers.py fails a circle):
 *
 *   score.c ──▶ score_pick.c ──▶ score_fgd.c, score_parts.c ──▶ score_card.c
 */
#ifndef GX_SCORE_INT_H
#define GX_SCORE_INT_H

#include "score.h"

/** Part value of a metric that is unknown or stale: neither good nor bad. */
#define GX_SCORE_NEUTRAL 0.5

/** Bit of signal @sig in a card's freshness mask (struct gx_score_walk.fresh). */
#define GX_FRESH(sig) (1u << (unsigned)(sig))

/** @v limited to 0..1 (NaN is 0). */
static inline double
gx_score_clamp01(double v)
{
    if (!(v > 0.0)) {
        return 0.0;
    }
    return v > 1.0 ? 1.0 : v;
}

/*
 * score_card.c: the state of one card.
 */

/**
 * What one decision on one node reads besides the request: the context,
 * the node's ledger entry (looked up once, NULL when it holds no tenants)
 * and per signal the oldest sample time still fresh at ctx->now_ms.
 */
/** Cards of a node whose ledger usage a decision reads once, not once per look at a card. */
#define GX_SCORE_USAGE_CARDS 16

struct gx_score_dctx {
    const struct gx_decide_ctx *ctx;
    const struct gx_config *cfg;
    const struct gx_ledger_node *ln;
    struct gx_card_usage usage[GX_SCORE_USAGE_CARDS]; /* of ln's cards 0..n_usage-1 */
    int n_usage;
    int64_t oldest[GX_SIG_COUNT];
    uint64_t apart; /* refuse cards holding a member of this gang (gang-distinct-cards), 0 none */
    int numa;       /* refuse cards of a known NUMA node other than this one (gang-same-numa), -1 */
};

/** Fill @d for deciding on @node under @ctx (both borrowed). Cannot fail. */
void gx_score_dctx_init(struct gx_score_dctx *d, const struct gx_decide_ctx *ctx,
                        const struct gx_node *node);

/** Set @d's ledger entry to @ln (NULL: none) and read the usage of its first @cards cards. */
void gx_score_dctx_ledger(struct gx_score_dctx *d, const struct gx_ledger_node *ln, size_t cards);

/**
 * Set @d's gang rule for @req on @node: with gang-distinct-cards, cards
 * holding a tenant of its gang are refused; with gang-same-numa, once a
 * member holds a card of a known NUMA node here, cards of another known
 * NUMA node are. Only for cards the extender chooses. Cannot fail.
 */
void gx_score_dctx_gang(struct gx_score_dctx *d, const struct gx_podreq *req,
                        const struct gx_node *node);

/** Number of cards of @node a decision looks at: n_cards, at most gpu_count. */
size_t gx_score_node_cards(const struct gx_node *node);

/** Ledger usage of @card under @d: all zero when the node holds no tenants. */
void gx_score_usage(const struct gx_score_dctx *d, const struct gx_card *card,
                    struct gx_card_usage *u);

/** Per-card memory in MiB: the node's label, else used + free when both are fresh in @f, else 0. */
int64_t gx_score_card_memory(const struct gx_node *node, const struct gx_card *card, unsigned f);

/** Memory booked on @card: max(ledger reservations @u, measured use when fresh in @f). */
int64_t gx_score_card_booked(const struct gx_card *card, unsigned f, const struct gx_card_usage *u);

/**
 * The one walk over a node's cards every decision makes. After
 * gx_score_walk_init, each gx_score_walk_next that returns true describes
 * the next card: its position, its freshness mask, its health (the filter
 * reason of its state or of the gang rule, NONE when it can take work)
 * and, for a healthy card, its ledger usage (zero otherwise).
 */
struct gx_score_walk {
    const struct gx_score_dctx *d;
    const struct gx_node *node;
    size_t next, n;
    bool check_busy;
    size_t pos;                 /* the card: node->cards[pos] */
    const struct gx_card *card; /* borrowed from the node */
    unsigned fresh;             /* GX_FRESH() mask */
    enum gx_reason health;
    struct gx_card_usage usage;
};

/**
 * Walk the first gx_score_node_cards(@node) cards of @node, at most @max;
 * utilization over the limit makes a card BUSY only when @check_busy.
 */
void gx_score_walk_init(struct gx_score_walk *w, const struct gx_score_dctx *d,
                        const struct gx_node *node, bool check_busy, size_t max);

/** Step to the next card; false past the last one. */
bool gx_score_walk_next(struct gx_score_walk *w);

/*
 * score_fgd.c: the fgd policy's terms.
 */

/** True when the fgd policy can judge: configured and typical pods learned. */
bool gx_score_fgd_on(const struct gx_score_dctx *d);

/** FGD's view of @node: CPU and memory left after the booked pods, each card's free milli. */
void gx_score_fgd_node(const struct gx_score_dctx *d, const struct gx_node *node, int slots,
                       struct gx_fgd_node *f);

/** What fgd charges, in milli-GPU, for a placement on node @f when none of its cards is in use. */
double gx_score_idle_node_cost(const struct gx_score_dctx *d, const struct gx_fgd_node *f);

/**
 * What fgd charges, in milli-GPU, for taking @taken milli of node @f from
 * the typical pods pinned to the kinds of node it is (where classes): each
 * class that may run there charges its scarcity, its share of the typical
 * GPU demand over its share of the cluster's cards. 0 without classes.
 */
double gx_score_where_cost(const struct gx_score_dctx *d, const struct gx_fgd_node *f, int taken);

/** The cluster's gaps for the gap term, counted again only on change; NULL when it is off. */
const struct gx_score_gaps *gx_score_gaps_of(const struct gx_score_dctx *d);

/** What the gap term charges, in milli-GPU, for a share taking @take of card @pos of node @f. */
double gx_score_gap_cost(const struct gx_score_dctx *d, const struct gx_score_gaps *g,
                         const struct gx_fgd_node *f, int pos, int take);

/** gx_fgd_share_deltas of share @sh on node @f, kept for nodes in the same state (score.h). */
void gx_score_share_deltas(const struct gx_score_dctx *d, const struct gx_fgd_node *f,
                           const struct gx_fgd_shape *sh, double *out);

/** Fit part of a fragmentation change @delta in milli-GPU: 0.5 for none, lower when it grows. */
double gx_score_fgd_fit(double delta);

/** FGD change of placing @req on the cards at positions @pos of @node, idle-node cost included. */
double gx_score_fgd_delta(const struct gx_score_dctx *d, const struct gx_podreq *req,
                          const struct gx_node *node, const int *pos);

/*
 * score_parts.c: the parts of a score and their weighting.
 */

/** Label part of @node: 0.5 + matched weights / (2 * total |weight|); 0.5 without rules. */
double gx_score_labels_part(const struct gx_config *cfg, const struct gx_node *node);

/** Add the metric parts of @card (freshness @f, usage @u) to @p: sums, the caller divides. */
void gx_score_card_parts(const struct gx_score_dctx *d, const struct gx_node *node,
                         const struct gx_card *card, unsigned f, const struct gx_card_usage *u,
                         struct gx_score_parts *p);

/** Weighted score of @p under the config weights, 0..10 unrounded (5 when all weights are 0). */
double gx_score_weighted_exact(const struct gx_config *cfg, const struct gx_score_parts *p);

/** The 0..10 integer kube-scheduler receives for @exact. */
int gx_score_weighted(double exact);

/*
 * score_pick.c: the card choice per request kind. Each fills @out's keep,
 * reason, parts (labels aside), cards and usable_cards.
 */

/** Exclusive request on a node whose cards are not time-sliced: pick whole cards. */
void gx_score_decide_exclusive(const struct gx_score_dctx *d, const struct gx_podreq *req,
                               const struct gx_node *node, struct gx_verdict *out);

/** Shared request the extender places itself: pick one card with a free slot and headroom. */
void gx_score_decide_shared(const struct gx_score_dctx *d, const struct gx_podreq *req,
                            const struct gx_node *node, struct gx_verdict *out);

/** A request the device plugin places: admit on @need free slots over the healthy cards. */
void gx_score_decide_device_plugin(const struct gx_score_dctx *d, const struct gx_podreq *req,
                                   const struct gx_node *node, int64_t need,
                                   struct gx_verdict *out);

#endif
