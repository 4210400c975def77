/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile.h - the managed pods as the pod watch shows them, and the
 * ledger kept true to them: a pod deleted or finished frees its cards on
 * the watch event; a periodic pass (the safety net for missed events and
 * crashed binds) releases or marks bound whatever the watch contradicts.
 */
#ifndef GX_RECONCILE_H
#define GX_RECONCILE_H

#include "kube.h"
#include "pdb.h"
#include "service.h"

/** Start the periodic reconcile over app->leases (live mode). GX_ENOMEM. */
enum gx_err gx_recon_start(struct gx_app *app) GX_WUR;

/** Restart the wait for the next pass with app->cfg's interval (after a reload changed it). */
void gx_recon_retime(struct gx_app *app);

/** Stop the timer and free the pod view. */
void gx_recon_stop(struct gx_app *app);

/** A pod watch event (a gx_kube_cbs.pod_event). */
void gx_recon_pod_event(void *app, enum gx_watch_type type, const struct gx_pod *pod);

/** A full pod list (a gx_kube_cbs.pods_listed). */
void gx_recon_pods_listed(void *app, const struct gx_pod *pods, size_t n);

/**
 * Priority of managed pod @uid as the watch showed it, when the watch shows
 * it bound to @node and not finished (a pod the scheduler has on that node,
 * so one it accepts as a victim there); false otherwise.
 */
bool gx_recon_priority(const struct gx_app *app, const char *uid, const char *node, int32_t *prio);

/** Namespace, name and labels of managed pod @uid, for PodDisruptionBudgets; NULL when unknown. */
const struct gx_pdb_pod *gx_recon_pdb_pod(const struct gx_app *app, const char *uid);

/** True once the first pod list arrived. */
bool gx_recon_synced(const struct gx_app *app);

#endif
