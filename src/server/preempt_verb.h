/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_verb.h - POST {prefix}/preempt (ExtenderPreemptionArgs in,
 * ExtenderPreemptionResult out) and its explanation (POST /debug/preempt).
 * Every node answered with victims of ours gets a hold for the preemptor
 * (preempt_holds.h).
 */
#ifndef GX_PREEMPT_VERB_H
#define GX_PREEMPT_VERB_H

#include "service.h"

/** Answer one preempt call (the route's handler). */
void gx_preempt_handle(struct gx_app *app, struct gx_http_req *r);

/**
 * POST /debug/preempt: for the Pod JSON @pod_json, what the preempt verb
 * answers on every GPU node of the snapshot when the scheduler names no
 * victim (the hidden-resource case), as text or JSON into @out. Errors
 * (a Pod that does not decode, an invalid GPU request) fill @why.
 */
enum gx_err gx_preempt_explain(struct gx_app *app, const char *pod_json, size_t len, bool json,
                               struct gx_buf *out, struct gx_why *why) GX_WUR;

#endif
