/* SPDX-License-Identifier: Apache-2.0 */
/*
 * promsrc.h - the Prometheus source: on a timer, one instant query per
 * signal (GET /api/v1/query) through the async client; each successful
 * answer replaces that signal's values in the metric store (series that
 * vanished become unknown); a failed one keeps the last good values, which
 * then age towards metrics.max_age_s. Failing rounds back off with jitter.
 * Never on the request path.
 */
#ifndef GX_PROMSRC_H
#define GX_PROMSRC_H

#include "config.h"
#include "dcgm.h"
#include "httpc.h"

struct event_base;
struct gx_promsrc;

/** The metric store source index used for Prometheus values. */
#define GX_PROMSRC_SOURCE 1000

/** Called after a round that changed the store. */
typedef void (*gx_promsrc_update_cb)(void *ctx);

/**
 * Start polling per @cfg (borrowed; replace with gx_promsrc_set_config).
 * @ms and @m are borrowed and must outlive the source. NULL on ENOMEM.
 */
struct gx_promsrc *gx_promsrc_new(struct event_base *base, struct gx_httpc *http,
                                  const struct gx_config *cfg, struct gx_mstore *ms,
                                  struct gx_upstats *st, gx_promsrc_update_cb cb, void *ctx);

/**
 * Use @cfg from the next round on (the previous config may already be
 * freed). A changed prometheus.interval_s, or a backoff after failed
 * rounds, re-arms the wait for the next round at the new interval.
 */
void gx_promsrc_set_config(struct gx_promsrc *p, const struct gx_config *cfg);

/** Start a round now (unless one is running). */
void gx_promsrc_poll_now(struct gx_promsrc *p);

/** Rounds completed with every query successful. */
uint64_t gx_promsrc_rounds_ok(const struct gx_promsrc *p);

/** Stop, cancel transfers and free; NULL is a no-op. */
void gx_promsrc_free(struct gx_promsrc *p);

#endif
