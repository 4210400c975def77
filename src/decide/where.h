/* SPDX-License-Identifier: Apache-2.0 */
/*
 * where.h - where a pod may run by node labels, as a rule one can keep:
 * label selector requirements matched against a value (PodDisruptionBudget
 * selectors and node selectors alike), and a pod's node selection (struct
 * gx_where) written as a canonical key that the fgd model stores with a
 * typical pod and later asks of any node. Pure, no I/O.
 */
#ifndef GX_WHERE_H
#define GX_WHERE_H

#include "config.h"
#include "kobj.h"
#include "snapshot.h"

/** Room for a where key; a pod's rule that does not fit counts as "any node". */
#define GX_WHERE_KEY_MAX 256

/** True when the label value @v (NULL: no such label) meets requirement @x. */
bool gx_sel_expr_matches(const struct gx_sel_expr *x, const char *v);

/**
 * The canonical key of @w into @buf (@n bytes): "" when @w allows any node,
 * one text for every spelling of one rule (order of terms, requirements
 * and values; the node selector folded into every term). False, with ""
 * in @buf, when the rule does not fit @n or holds an invalid operator.
 */
bool gx_where_key(const struct gx_where *w, char *buf, size_t n);

/**
 * True when @node may take a pod whose where key is @key: one term all of
 * whose requirements the node's labels meet. A requirement on a label the
 * snapshot does not keep under @cfg (gx_snapshot_label_kept) counts as met:
 * what cannot be seen does not bar a node.
 */
bool gx_where_key_allows(const struct gx_config *cfg, const char *key, const struct gx_node *node);

#endif
