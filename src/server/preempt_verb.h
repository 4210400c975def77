/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_verb.h - POST {prefix}/preempt (ExtenderPreemptionArgs in,
 * ExtenderPreemptionResult out) and the holds that keep a freed GPU share
 * for its preemptor while the victims terminate.
 *
 * A hold is recorded for every node the answer names (the scheduler picks
 * one of them afterwards). It becomes active when the pod watch shows one
 * of its victims marked by the scheduler (condition DisruptionTarget,
 * reason PreemptionByScheduler, patched just before the deletion): that is
 * the node the scheduler chose. A pod deleted for any other reason
 * activates nothing. An active hold books the preemptor's share, by the
 * bind planner's own rule (gx_admit_reserve on a scratch copy), in the
 * ledger view filter uses for every other pod, until the preemptor holds
 * GPUs in the ledger itself (its bind reserved them), the watch shows it
 * bound or gone, or sharing.reservation_ttl_s passes. Holds live in this
 * replica's memory only.
 */
#ifndef GX_PREEMPT_VERB_H
#define GX_PREEMPT_VERB_H

#include "score.h"
#include "vcache.h"
#include "service.h"

/** Answer one preempt call (the route's handler). */
void gx_preempt_handle(struct gx_app *app, struct gx_http_req *r);

/**
 * A managed-pod watch event for @pod, @gone when it is deleted, finished
 * or being deleted: a victim the scheduler marked preempted (its
 * DisruptionTarget condition, set before it deletes the pod) activates the
 * holds it is a victim of; a preemptor bound (spec.nodeName set) or gone
 * ends its holds.
 */
void gx_preempt_pod_event(struct gx_app *app, const struct gx_pod *pod, bool gone);

/**
 * When an active hold of another pod sits on node @node, decide @pod (@req) on
 * it with the hold booked and return true with the verdict in @v; false
 * (nothing written) when no hold applies: then it costs one test, so
 * filter calls it for every node. Expired or fulfilled holds are dropped on
 * the way.
 */
bool gx_preempt_hold_verdict(struct gx_app *app, const struct gx_decide_ctx *ctx,
                             const struct gx_pod *pod, const struct gx_podreq *req,
                             const char *node, struct gx_vshort *v);

/**
 * POST /debug/preempt: for the Pod JSON @pod_json, what the preempt verb
 * answers on every GPU node of the snapshot when the scheduler names no
 * victim (the hidden-resource case), as text or JSON into @out. Errors
 * (a Pod that does not decode, an invalid GPU request) fill @why.
 */
enum gx_err gx_preempt_explain(struct gx_app *app, const char *pod_json, size_t len, bool json,
                               struct gx_buf *out, struct gx_why *why) GX_WUR;

/** Free the holds (app teardown). */
void gx_preempt_holds_free(struct gx_app *app);

#endif
