/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cards.h - which pod is on which card: the ledger per card joined with the
 * snapshot (UUID, measured utilization and memory, DRA claim), rendered as
 * bounded /metrics series and as the JSON of GET /debug/cards, plus the
 * per-namespace usage against the quotas. Pure: config x snapshot x ledger
 * x the time passed in; writes only into the caller's buffer.
 *
 * Cardinality: per-card series exist only for cards that are booked in the
 * ledger or held by a DRA claim, the first server.metrics_max_cards of them
 * in snapshot (node name) order; the same cap bounds the namespace series.
 * What the cap leaves out is counted, never silently dropped.
 */
#ifndef GX_CARDS_H
#define GX_CARDS_H

#include "buf.h"
#include "config.h"
#include "ledger.h"
#include "snapshot.h"

/** What the ledger holds on one card, as explain, GET /debug/cards and /metrics show it. */
struct gx_card_booking {
    struct gx_card_usage u;
    int slots;      /* the card's time slots (gx_config_card_slots) */
    int slots_used; /* gx_ledger_slots_used; all of them under a DRA claim */
    double share;   /* booked share 0..1 (gx_ledger_share_used); 1 for a whole holder or a claim */
};

/** Fill @bk for @card of @node; @l may be NULL (nothing booked). Cannot fail. */
void gx_cards_booking(const struct gx_config *cfg, const struct gx_ledger *l,
                      const struct gx_node *node, const struct gx_card *card,
                      struct gx_card_booking *bk);

/**
 * Slots in use and slots in all over the cards of @snap (may be NULL), each
 * card's as gx_cards_booking counts them: the ledger_slots_* gauges. Cannot fail.
 */
void gx_cards_slots(const struct gx_config *cfg, const struct gx_snapshot *snap,
                    const struct gx_ledger *l, int64_t *used, int64_t *total);

/**
 * Append the gpu_extender_card_*, gpu_extender_dra_claimed_cards and
 * gpu_extender_namespace_* families (text exposition 0.0.4) to @out.
 * @snap and @l may be NULL. GX_ENOMEM/GX_ETOOBIG from @out.
 */
enum gx_err gx_cards_metrics(const struct gx_config *cfg, const struct gx_snapshot *snap,
                             const struct gx_ledger *l, struct gx_buf *out) GX_WUR;

/**
 * Append {"nodes":[{"node":..,"cards":[{..,"tenants":[..]}]}],
 * "namespaces":[..]} for every GPU card of @snap at @now_ms (measured values
 * only while fresh, else null) to @out. GX_ENOMEM/GX_ETOOBIG from @out.
 */
enum gx_err gx_cards_json(const struct gx_config *cfg, const struct gx_snapshot *snap,
                          const struct gx_ledger *l, int64_t now_ms, struct gx_buf *out) GX_WUR;

/**
 * Append "tenants":[{..}], the ledger entry @e's tenants of card @idx
 * (GX_CARD_ANY: of no card), as GET /debug/cards and explain show them.
 * @e may be NULL (none). Sticky on *@rc (buf.h).
 */
void gx_cards_put_tenants(struct gx_buf *b, enum gx_err *rc, const struct gx_config *cfg,
                          const struct gx_snapshot *snap, const struct gx_ledger_node *e, int idx);

#endif
