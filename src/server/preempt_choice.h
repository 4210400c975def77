/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_choice.h - the victim choice (preempt.h, pure) on the running
 * server's state, one rule for the preempt verb and its explanation
 * (POST /debug/preempt): victims' priorities from the scheduler's Pods or
 * the pod watch, PodDisruptionBudget violations from the watched budgets,
 * and the namespace quota the preemptor must still pass once the victims
 * are gone. Decodes and answers nothing.
 */
#ifndef GX_PREEMPT_CHOICE_H
#define GX_PREEMPT_CHOICE_H

#include "extender.h"
#include "preempt.h"
#include "service.h"

/**
 * Choose victims for @pod on one node: @in says what the call says about
 * it (ctx, request, priority, snapshot node, the scheduler's victims); its
 * priority lookup and PDB count are set here on a copy: the priorities of
 * @full's Pods (the scheduler's full victims, NULL for meta victims), else
 * of the pods the watch shows bound to @node_name and running; the
 * violations of the watched budgets once they are listed, else none. Then
 * a node where @pod's namespace quota would still refuse it is dropped
 * (GX_PDROP_QUOTA), so nobody is evicted for nothing. Fills @c on GX_OK;
 * GX_ENOMEM or GX_EINVAL from gx_preempt_choose.
 */
enum gx_err gx_preempt_choice_on(const struct gx_app *app, const struct gx_pod *pod,
                                 const char *node_name, const struct gx_ext_node_victims *full,
                                 const struct gx_preempt_input *in,
                                 struct gx_preempt_choice *c) GX_WUR;

#endif
