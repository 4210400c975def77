/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score.h - the decisions: filter (can this node take the pod now, and if
 * not, why), prioritize (0..10 and its parts) and the card choice bind
 * uses. Pure functions of config x snapshot x ledger x pod request x time;
 * no I/O, no allocation. Defined in score.c and score_*.c (score_int.h).
 */
#ifndef GX_SCORE_H
#define GX_SCORE_H

#include "config.h"
#include "fgd.h"
#include "ledger.h"
#include "podreq.h"
#include "snapshot.h"

/** Why a node was rejected. The strings are short and node-independent. */
enum gx_reason {
    GX_REASON_NONE,
    GX_REASON_UNKNOWN_NODE,     /* "node unknown to gpu-extender" */
    GX_REASON_NOT_READY,        /* "node not ready" */
    GX_REASON_NO_GPUS,          /* "node has no GPUs" */
    GX_REASON_TOO_FEW_GPUS,     /* "too few usable GPUs" */
    GX_REASON_UNHEALTHY,        /* "GPU unhealthy" */
    GX_REASON_BUSY,             /* "GPU utilization above limit" */
    GX_REASON_NO_SLOT,          /* "no GPU time slot available" */
    GX_REASON_NO_MEMORY,        /* "insufficient GPU memory" */
    GX_REASON_STALE,            /* "GPU metrics stale" */
    GX_REASON_SHARING_MISMATCH, /* "GPU sharing mode does not match the request" */
    GX_REASON_BAD_REQUEST,      /* "invalid GPU request" */
    GX_REASON_QUOTA,            /* "namespace GPU share quota exceeded" (quota.h) */
    GX_REASON_BOOKED_ELSEWHERE, /* "GPUs of this pod booked on another node" (admit.h) */
    GX_REASON_NEVER_FITS,       /* "request larger than any GPU of the node" */
    GX_REASON_GANG_PINNED,      /* "gang member placed on another node" (gang.h) */
    GX_REASON_GANG_APART,       /* "GPU held by another member of the gang" (podreq.h) */
    GX_REASON_GANG_NUMA,        /* "gang members on another NUMA node" (podreq.h) */
    GX_REASON_SHORTLIST,        /* "better nodes kept" (filter.shortlist_nodes) */
    GX_REASON_COUNT
};

/** The user-facing text of @r ("" for NONE). Static. */
const char *gx_reason_text(enum gx_reason r);

/** Snake-case name for metrics labels ("no_slot"). Static. */
const char *gx_reason_name(enum gx_reason r);

/** True when preemption cannot help (goes to FailedAndUnresolvableNodes). */
bool gx_reason_unresolvable(enum gx_reason r);

/**
 * True when a node rejected for @r is left out of the filter answer: a
 * node missing from NodeNames is dropped all the same (v1.37 extender.go),
 * and a pinned gang member listed 4,999 nodes, the larger part of the
 * call's cost on both sides at 5,000 nodes (docs/performance.md).
 */
bool gx_reason_unlisted(enum gx_reason r);

/**
 * True when @r lifts on a change the extender sees: a booking that goes
 * (the ledger) or a busy card that cools (the metrics). A pod refused
 * everywhere for such reasons waits for that change (server/requeue.h).
 */
bool gx_reason_lifts(enum gx_reason r);

#define GX_MAX_PICK 16

/** Parts of a score, each 0..1 before weighting, for explain. */
struct gx_score_parts {
    double util;   /* headroom of the chosen card(s) */
    double memory; /* free memory of the chosen card(s) */
    double temp;   /* thermal headroom */
    double labels; /* label rules: 0..1 (0.5 neutral) */
    double fit;    /* policy fit: binpack prefers used cards, spread empty ones; multi-GPU fit */
    double trend;  /* utilization slope: 0.5 flat, lower when rising (score.weights.trend) */
    bool metrics_neutral; /* stale/missing metrics scored neutral */
};

struct gx_verdict {
    bool keep;
    enum gx_reason reason;
    int score;          /* 0..10, only when keep */
    double score_exact; /* the same before rounding, for measuring what rounding costs */
    struct gx_score_parts parts;
    int cards[GX_MAX_PICK]; /* chosen card indexes (bind) */
    int n_cards;
    bool device_plugin; /* cards are chosen by the device plugin, not us */
    int usable_cards;   /* healthy, free cards considered */
};

/** Nodes whose where classes gx_score_gaps remembers (more share slots: recounted, not wrong). */
#define GX_SCORE_BARRED_CACHE 8192

/** Node states whose share deltas gx_score_gaps keeps for the typical pods of the moment. */
#define GX_SCORE_DELTA_MEMO 1024

/* gx_fgd_share_deltas of one node state for one share (score_fgd.c) */
struct gx_score_delta_memo {
    uint64_t hash, gen; /* gen 0: empty */
    struct gx_fgd_node node;
    struct gx_fgd_shape shape;
    double out[GX_FGD_MAX_CARDS];
};

/**
 * The cluster's gaps fgd's gap term reads (score.fgd_gap_milli): counted from
 * the snapshot and the ledger on first use, kept while neither changes, and
 * after a booking counted again only for the nodes whose entry changed; and
 * what else the fgd terms keep across the nodes of a call. The caller owns
 * it: zeroed is empty, gx_score_gaps_release frees what it holds.
 */
struct gx_score_gaps {
    struct gx_fgd_gaps gaps;
    const void *snap, *ledger, *cfg; /* what the counts are of */
    uint64_t generation, ledger_version, cfg_hash;
    const void *fgd;   /* the typical pods gaps.min_share is from, */
    uint64_t observed; /* after this many observations */
    int64_t cards;     /* of the snapshot's nodes */
    bool valid;
    /* the where classes' scarcity (score_fgd.c), of this snapshot and model state */
    double scarce[GX_FGD_MAX_WHERE];
    double demand[GX_FGD_MAX_WHERE]; /* each class's share of the typical GPU demand, 0..1 */
    int64_t class_cards[GX_FGD_MAX_WHERE], all_cards; /* cards each class may use; all */
    const void *scarce_snap, *scarce_fgd;
    uint64_t scarce_generation, scarce_where_gen, scarce_observed;
    /* each node's barred classes (fgd.h), by its index in the snapshot */
    struct {
        const void *node;
        uint64_t generation, where_gen;
        uint32_t barred;
    } barred[GX_SCORE_BARRED_CACHE];
    /* what each snapshot node added to gaps (n_cards 0: nothing), so a recount after a
       booking takes only the changed ledger entries out and in again */
    struct gx_fgd_node *counted;
    size_t n_counted;
    /* share deltas while the typical pods stay as they are: many nodes are in one state */
    struct gx_score_delta_memo memo[GX_SCORE_DELTA_MEMO];
    const void *memo_fgd;
    uint64_t memo_observed, memo_where_gen, memo_gen;
};

/** Free what @g holds and leave it empty; NULL is a no-op. */
void gx_score_gaps_release(struct gx_score_gaps *g);

struct gx_decide_ctx {
    const struct gx_config *cfg;
    const struct gx_snapshot *snap;
    const struct gx_ledger *ledger; /* may be NULL: nothing booked */
    int64_t now_ms;                 /* wall ms, for staleness */
    const struct gx_fgd_model *fgd; /* fgd policy: typical pods; NULL or empty: binpack */
    struct gx_score_gaps *gaps;     /* the gap term's counts; NULL: the term is off */
};

/**
 * True when the decision for @req on one node also reads the other nodes'
 * ledger entries (the gap term of a share under fgd): a cached verdict of
 * it is stale once anything in the ledger changes.
 */
bool gx_score_reads_cluster(const struct gx_config *cfg, const struct gx_podreq *req);

/**
 * @ctx deciding on ledger @l instead. On another ledger (a scratch one:
 * preempt, holds) the gap term is off: its counts are of ctx->ledger.
 */
struct gx_decide_ctx gx_decide_ctx_on(const struct gx_decide_ctx *ctx, const struct gx_ledger *l);

/**
 * Learn @req into @m, the typical pods of the fgd policy (filter calls
 * this once per pod it sees), with @where (may be NULL: any node), the
 * nodes the pod may run on. A zeroed @m is set up on first use; the
 * half-life follows cfg->fgd_half_life across reloads. Cannot fail.
 */
void gx_score_learn(const struct gx_config *cfg, struct gx_fgd_model *m,
                    const struct gx_podreq *req, const struct gx_where *where);

/**
 * The shape FGD sees of @req: its CPU and memory, whole cards, or its share
 * of one card in milli (slices of a card of @slots slots). Cannot fail.
 */
void gx_score_fgd_shape(const struct gx_config *cfg, const struct gx_podreq *req, int slots,
                        struct gx_fgd_shape *out);

/**
 * The milli of one card the shared @req books: its gpu-milli after
 * oversubscription, or its slices of a card of @slots slots; at most 1000.
 */
int gx_score_share_milli(const struct gx_config *cfg, const struct gx_podreq *req, int slots);

/**
 * Utilization, in percent, a share of @milli booked milli-GPU expects to add
 * to its card: its declared gpu-util @declared (-1 = none), else, with
 * sharing.expect_share_util, its share of the card. For requests and tenants
 * alike. Cannot fail.
 */
double gx_score_expected_util(const struct gx_config *cfg, double declared, int milli);

/**
 * Decide for one node: filter verdict, score and card choice. @node may be
 * NULL (unknown node). Cannot fail.
 */
void gx_score_node(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
                   const struct gx_node *node, struct gx_verdict *out);

/**
 * Scores of one prioritize call made relative to its best node: @out[i] is
 * 10 for the nodes whose @exact score (0..10) equals the best one, and 0..9
 * for the others by where they sit between the worst and the best; 0 where
 * @exact[i] is negative (a node filter drops). kube-scheduler picks the
 * highest total, so this keeps the exact score's choice that rounding to
 * 0..10 would lose. Cannot fail.
 */
void gx_score_relative(const double *exact, size_t n, int *out);

/**
 * Keep the @k best of one filter call's nodes (filter.shortlist_nodes): of
 * the @n @exact scores (negative: a node filter drops), every one outside
 * the @k highest is set to -1; of the scores equal to the cut, a uniform
 * choice drawn from *@rng fills the places left (@rng NULL: all of them
 * are kept, so only the nodes surely left out are dropped, as explain
 * shows them). @k 0 keeps all. Returns how many were dropped. Needs @n
 * doubles of @scratch. Cannot fail.
 */
size_t gx_score_shortlist(double *exact, size_t n, size_t k, double *scratch, uint64_t *rng);

/** A verdict's place in gx_score_shortlist's @exact: negative when filter drops the node. */
static inline double
gx_score_shortlist_key(bool keep, double exact)
{
    return !keep ? -1.0 : exact < 0.0 ? 0.0 : exact;
}

/** Why a card cannot take work, as explain shows it per card. */
enum gx_card_state {
    GX_CARD_OK,
    GX_CARD_HOT,     /* temperature over score.max_temperature_c */
    GX_CARD_XID,     /* a fresh XID error not in metrics.ignored_xids */
    GX_CARD_BUSY,    /* utilization over score.max_utilization_pct */
    GX_CARD_STALE,   /* metrics missing or old under on_stale=reject */
    GX_CARD_CLAIMED, /* allocated to a DRA ResourceClaim (card->claim) */
    GX_CARD_COUNT
};

/** State of @card of @node under the rule filter applies. Cannot fail. */
enum gx_card_state gx_score_card_state(const struct gx_decide_ctx *ctx, const struct gx_node *node,
                                       const struct gx_card *card);

/**
 * Cards BUSY under @before (its snapshot at its now_ms) that are not under
 * @after: matched by node name and card index; ledgers are not read.
 */
size_t gx_score_cards_cooled(const struct gx_decide_ctx *before, const struct gx_decide_ctx *after);

/** "ok", "hot", "xid", "busy", "stale" or "claimed". Static. */
const char *gx_card_state_text(enum gx_card_state s);

/** True when signal @sig of @card is known and younger than its max age at ctx->now_ms. */
bool gx_score_fresh(const struct gx_decide_ctx *ctx, const struct gx_card *card,
                    enum gx_signal sig);

#endif
