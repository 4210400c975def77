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

/**
 * Start a background write of @kind for pod @uid on @node (dropped on
 * ENOMEM); a release frees whatever booking the pod holds there (a pod
 * that is gone).
 */
void gx_bg_write(struct gx_app *app, enum gx_bg_kind kind, const char *node, const char *uid);

/**
 * Start a background release of the booking of @uid on @node stamped
 * @booking: a bind attempt undoing its own booking, which a later attempt
 * may have taken over (renewed) meanwhile, and then keeps.
 */
void gx_bg_release(struct gx_app *app, const char *node, const char *uid, int64_t booking);

/** The one release rule: free @uid's booking @booking on @node in @l; true when it did. */
bool gx_bg_release_booking(struct gx_ledger *l, const char *node, const char *uid, int64_t booking);

/** Drop every write in flight (the Lease store was freed first). */
void gx_bg_clear(struct gx_app *app);

#endif
