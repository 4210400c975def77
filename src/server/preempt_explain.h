/* SPDX-License-Identifier: Apache-2.0 */
/* preempt_explain.h - POST /debug/preempt: the preempt verb's choice explained per GPU node. */
#ifndef GX_PREEMPT_EXPLAIN_H
#define GX_PREEMPT_EXPLAIN_H

#include <stdbool.h>

#include "buf.h"
#include "service.h"

/**
 * POST /debug/preempt: for the Pod JSON @pod_json, what the preempt verb
 * answers on every GPU node of the snapshot when the scheduler names no
 * victim (the hidden-resource case), as text or JSON into @out. Errors
 * (a Pod that does not decode, an invalid GPU request) fill @why.
 */
enum gx_err gx_preempt_explain(struct gx_app *app, const char *pod_json, size_t len, bool json,
                               struct gx_buf *out, struct gx_why *why) GX_WUR;

#endif
