/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_holds.h - the shell of the shares held for preemptors: the
 * store in struct gx_app (app->holds, created on first use), the
 * monotonic clock read once per call and passed down, the log lines and
 * the counters. What a hold is and what it decides is holds.h's (pure).
 * Holds live in this replica's memory only.
 */
#ifndef GX_PREEMPT_HOLDS_H
#define GX_PREEMPT_HOLDS_H

#include "preempt.h"
#include "service.h"
#include "vcache.h"

/**
 * Hold the share freed on @node for @pod (@req), the victims of @c, for
 * sharing.reservation_ttl_s (gx_holds_put). A store that cannot be
 * allocated or is full holds nothing (a warning for the full one).
 */
void gx_preempt_hold_put(struct gx_app *app, const struct gx_pod *pod, const struct gx_podreq *req,
                         const char *node, const struct gx_preempt_choice *c);

/**
 * A managed-pod watch event for @pod, @gone when it is deleted, finished
 * or being deleted: a victim the scheduler marked preempted (its
 * DisruptionTarget condition, set before it deletes the pod) activates the
 * holds it is a victim of; a preemptor bound (spec.nodeName set) or gone
 * ends its holds (gx_holds_pod_event).
 */
void gx_preempt_pod_event(struct gx_app *app, const struct gx_pod *pod, bool gone);

/**
 * When an active hold of another pod sits on node @node, decide @pod (@req)
 * on it with the hold booked and return true with the verdict in @v; false
 * (nothing written) when no hold applies: then it returns at once, so
 * filter calls it for every node. @now_ms is gx_mono_ms() read once for
 * the whole request. Expired or fulfilled holds are dropped on the way.
 */
bool gx_preempt_hold_verdict(struct gx_app *app, const struct gx_decide_ctx *ctx,
                             const struct gx_pod *pod, const struct gx_podreq *req,
                             const char *node, int64_t now_ms, struct gx_vshort *v);

/** Free the holds (app teardown). */
void gx_preempt_holds_free(struct gx_app *app);

/** True when a preemption for pod @uid on @node is being carried out (gx_holds_under_way). */
bool gx_preempt_under_way(const struct gx_app *app, const char *uid, const char *node);

#endif
