/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bgwrite.h - Lease writes nobody waits for: mark a tenant bound after its
 * Binding, release it after a failed bind or a deleted pod. Each owns a copy
 * of its arguments; a failure is logged and left to the reconciler.
 */
#ifndef GX_BGWRITE_H
#define GX_BGWRITE_H

#include "service.h"

enum gx_bg_kind { GX_BG_BOUND, GX_BG_RELEASE };

/** Start a background write of @kind for pod @uid on @node (dropped on ENOMEM). */
void gx_bg_write(struct gx_app *app, enum gx_bg_kind kind, const char *node, const char *uid);

/** Release pod @uid on @node in ledger @l; *write when that changed it. A gx_leases_mutate_cb. */
enum gx_err gx_bg_release_mutate(void *uid, struct gx_ledger *l, const char *node, bool *write,
                                 struct gx_why *why);

/** Drop every write in flight (the Lease store was freed first). */
void gx_bg_clear(struct gx_app *app);

#endif
