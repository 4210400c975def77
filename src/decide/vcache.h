/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vcache.h - a bounded cache of filter/prioritize verdicts per snapshot
 * node. A decision is a pure function of config x snapshot x the node's
 * ledger entry x pod request x time, so an answer computed by
 * gx_score_node may be reused while none of those changed:
 *   - config and snapshot: the cache empties itself when ctx->cfg (pointer
 *     or hash), ctx->ledger or ctx->snap (pointer or generation) differs
 *     from what it was filled for;
 *   - ledger: an entry remembers gx_ledger_version at computation and is
 *     dead once the node's ledger entry has a newer version (any add,
 *     release, expire, mark_bound or set_node on that node);
 *   - time: an entry lives until the first moment one of the node's fresh
 *     metric samples would turn stale, at most GX_VCACHE_TTL_MS, and never
 *     when the clock went back before its computation.
 * GX_VCACHE_SHAPES request shapes are kept, each with one entry per
 * snapshot node in node order (a 5,000-node column is 200 kB: it stays in
 * the caches, where per-node ways of every shape did not); the least
 * recently asked shape makes room for a new one.
 * No I/O; not thread-safe (one event loop owns it).
 */
#ifndef GX_VCACHE_H
#define GX_VCACHE_H

#include "score.h"

/** Request shapes cached at once. */
#define GX_VCACHE_SHAPES 16

/** Longest life of a cached verdict, in ms. */
#define GX_VCACHE_TTL_MS 1000

/** The part of a verdict filter and prioritize answer with. */
struct gx_vshort {
    bool keep;
    enum gx_reason reason; /* NONE when keep */
    int score;             /* 0..10, only when keep */
    double exact;          /* the score before rounding (score.relative) */
};

struct gx_vcache;

/** New empty cache; NULL on ENOMEM. Its per-node table is allocated on first use. */
struct gx_vcache *gx_vcache_new(void);

/** Free; NULL is a no-op. */
void gx_vcache_free(struct gx_vcache *vc);

/**
 * Decide @req on @node like gx_score_node(@ctx, @req, @node) and return its
 * keep/reason/score, from the cache when a live entry exists. @node must be
 * NULL or a node of ctx->snap; otherwise, with @vc NULL, or when the table
 * cannot be allocated, the verdict is computed without the cache. Cannot
 * fail.
 */
void gx_vcache_decide(struct gx_vcache *vc, const struct gx_decide_ctx *ctx,
                      const struct gx_podreq *req, const struct gx_node *node,
                      struct gx_vshort *out);

/** gx_vcache_decide for each of @n nodes (out[i] for nodes[i]), the shape looked up once. */
void gx_vcache_decide_all(struct gx_vcache *vc, const struct gx_decide_ctx *ctx,
                          const struct gx_podreq *req, const struct gx_node *const *nodes, size_t n,
                          struct gx_vshort *out);

/**
 * Decide @req on snapshot node @node against @booked, a scratch ledger with
 * bookings @ctx's ledger does not hold (a preemptor's hold, gang members'
 * tentative bookings), into @out, uncached. True when @booked turned it: a
 * rejection @ctx's own ledger would not give.
 */
bool gx_vcache_decide_booked(const struct gx_decide_ctx *ctx, const struct gx_ledger *booked,
                             const struct gx_podreq *req, const struct gx_node *node,
                             struct gx_vshort *out);

/** Lookups answered from the cache and computed, since gx_vcache_new (for tests and metrics). */
void gx_vcache_stats(const struct gx_vcache *vc, uint64_t *hits, uint64_t *misses);

#endif
