/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_verb.h - POST {prefix}/preempt: ExtenderPreemptionArgs in,
 * ExtenderPreemptionResult out, victims on one card per candidate node.
 * Every node answered with victims of ours gets a hold for the preemptor
 * (preempt_holds.h); the explanation of the choice is preempt_explain.h's.
 */
#ifndef GX_PREEMPT_VERB_H
#define GX_PREEMPT_VERB_H

#include "service.h"

/** Answer one preempt call (the route's handler). */
void gx_preempt_handle(struct gx_app *app, struct gx_http_req *r);

#endif
