/* SPDX-License-Identifier: Apache-2.0 */
/* explain_pod.h - a Pod object explained against the current snapshot. */
#ifndef GX_EXPLAIN_POD_H
#define GX_EXPLAIN_POD_H

#include <stdbool.h>

#include "buf.h"
#include "service.h"

/**
 * Explain a manifest (@len bytes of JSON or YAML) against the current
 * snapshot: a text table, or JSON when @json. The manifest is a Pod, or a
 * workload whose pod template is explained as a pod (said in the output);
 * of several documents the first such one is explained and the others are
 * named. Warnings (text lines, JSON "warnings") say when kube-scheduler
 * would never ask the extender about the pod. GX_EINVAL with @why for
 * another kind or a bad pod, GX_EPARSE for text neither JSON nor YAML.
 */
enum gx_err gx_explain_pod(struct gx_app *app, const char *text, size_t len, bool json,
                           struct gx_buf *out, struct gx_why *why) GX_WUR;

/**
 * GX_OK when @cfg holds a cluster to explain against offline (a nodes
 * file, no API server); else GX_EINVAL with @why pointing to --server URL.
 */
enum gx_err gx_explain_pod_offline(const struct gx_config *cfg, struct gx_why *why) GX_WUR;

#endif
