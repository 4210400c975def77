/* SPDX-License-Identifier: Apache-2.0 */
/*
 * requeue.h - bring pods refused for capacity back to kube-scheduler when
 * the ledger frees capacity. kube-scheduler requeues a pod an extender
 * rejected only on a cluster event (v1.37: a pod or node change, an
 * assigned pod added or deleted), and a Lease write is none: after a burst,
 * pods refused while in-flight bookings held the cards waited for the
 * scheduler's 5-minute flush, as did pods refused while a card showed busy
 * (a departed tenant's last sample, say) once it cooled. When the ledger
 * holds fewer tenants than a second ago, or a busy card cooled since, the
 * pods the filter refused (decide/waiters.h) get an annotation,
 * gpu-extender.io/requeued-at: an update of the pod that requeues it at
 * once. Live mode only.
 */
#ifndef GX_REQUEUE_H
#define GX_REQUEUE_H

#include "service.h"

/** Start the once-a-second check (live mode). GX_ENOMEM. */
enum gx_err gx_requeue_start(struct gx_app *app) GX_WUR;

/** Stop it and drop the pods waiting and the patches in flight. */
void gx_requeue_stop(struct gx_app *app);

/** Filter refused @pod everywhere for capacity the ledger holds: poke it when some frees. */
void gx_requeue_wait(struct gx_app *app, const struct gx_pod *pod);

/** True while some pod waits (what a cooled card could lift is worth counting). */
bool gx_requeue_waiting(const struct gx_app *app);

/** @n busy cards cooled (sync.c, at a snapshot rebuild): poke at the next tick. */
void gx_requeue_cooled(struct gx_app *app, size_t n);

/** The pod is bound (or gone): stop waiting for it. */
void gx_requeue_done(struct gx_app *app, const char *uid);

#endif
