/* SPDX-License-Identifier: Apache-2.0 */
/* explain_pod.h - a Pod object explained against the current snapshot. */
#ifndef GX_EXPLAIN_POD_H
#define GX_EXPLAIN_POD_H

#include <stdbool.h>

#include "buf.h"
#include "service.h"

/**
 * Explain a pod (JSON text of a Pod object) against the current snapshot:
 * a text table, or JSON when @json. GX_EINVAL with @why for a bad pod.
 */
enum gx_err gx_explain_pod(struct gx_app *app, const char *pod_json, size_t len, bool json,
                           struct gx_buf *out, struct gx_why *why) GX_WUR;

#endif
