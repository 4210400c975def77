/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sync.h - sources -> stores -> snapshot: the file sources (NodeList file,
 * dcgm-exporter pages) re-read on a timer, the live sources (Prometheus,
 * the API server) feeding their stores, and the snapshot rebuilt whole
 * (bursts of changes coalesced) and swapped in. Readiness is ready.c's.
 */
#ifndef GX_SYNC_H
#define GX_SYNC_H

#include "kube.h"
#include "score.h"
#include "service.h"

/** Load the file sources afresh and build the first snapshot. */
enum gx_err gx_sync_init(struct gx_app *app, struct gx_why *why) GX_WUR;

/**
 * Start the live sources the config names (their node and pod events go
 * to @cbs with the app as context) and the file refresh timer.
 */
enum gx_err gx_sync_start(struct gx_app *app, const struct gx_kube_cbs *cbs,
                          struct gx_why *why) GX_WUR;

/** A new config: hand it to the live sources. */
void gx_sync_set_config(struct gx_app *app);

/** Rebuild the snapshot now from the current stores. */
enum gx_err gx_sync_rebuild(struct gx_app *app);

/** Rebuild soon, once for a burst of changes (a gx_kube_cbs.nodes_changed). */
void gx_sync_schedule_rebuild(void *app);

/** The decision context for now. */
void gx_sync_decide_ctx(const struct gx_app *app, struct gx_decide_ctx *ctx);

/** Stop and free the sources and the snapshot. */
void gx_sync_free(struct gx_app *app);

#endif
