/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes.h - the route table: the scheduling verbs under the URL prefix,
 * the operational endpoints at the root, and their handlers.
 */
#ifndef GX_ROUTES_H
#define GX_ROUTES_H

#include "service.h"

/** Route and answer @r (a gx_http_handler_cb; @app is the struct gx_app). */
void gx_routes_handle(void *app, struct gx_http_req *r);

/** Drop the filter calls still held by the binds' gate, unanswered (shutdown). */
void gx_routes_cancel(struct gx_app *app);

#endif
