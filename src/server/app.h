/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app.h - the running extender: owns the config, the sources, the current
 * snapshot, the ledger and the HTTP server, all on one libevent loop
 * (DESIGN.md section 2). Routes requests to the decision code, rebuilds the
 * snapshot when a source changes and reloads the config when its file
 * changes or on SIGHUP, keeping the last good config on any error.
 */
#ifndef GX_APP_H
#define GX_APP_H

#include "buf.h"
#include "common.h"
#include "config.h"

struct event_base;
struct gx_app;

/**
 * Load the config at @config_path and the file sources it names and build
 * the first snapshot. No socket is opened (see gx_app_listen). You own
 * *out (gx_app_free). Errors name the file and the reason in @why.
 */
enum gx_err gx_app_new(struct event_base *base, const char *config_path, struct gx_app **out,
                       struct gx_why *why) GX_WUR;

/** Free everything; NULL is a no-op. */
void gx_app_free(struct gx_app *app);

/** Start the HTTP server and the background timers. */
enum gx_err gx_app_listen(struct gx_app *app, struct gx_why *why) GX_WUR;

/** The bound HTTP port (after gx_app_listen). */
int gx_app_port(const struct gx_app *app);

/** Begin a graceful shutdown: stop accepting, drain, then exit the loop. */
void gx_app_shutdown(struct gx_app *app);

/** Reload the config now (as on SIGHUP). */
void gx_app_reload(struct gx_app *app);

#endif
