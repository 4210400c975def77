/* SPDX-License-Identifier: Apache-2.0 */
/*
 * explain.h - "why is my pod pending?": one row per node with the verdict,
 * the reason, the score and its parts, plus per-card slots used/total and
 * memory booked/measured. Text for the CLI, JSON for /debug/explain. No I/O.
 */
#ifndef GX_EXPLAIN_H
#define GX_EXPLAIN_H

#include "buf.h"
#include "score.h"

/** Explain @req against every node of the snapshot as an aligned text table. */
enum gx_err gx_explain_text(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
                            const char *pod_name, struct gx_buf *out) GX_WUR;

/** The same as a JSON document {"pod":..,"request":{..},"nodes":[{..}]}. */
enum gx_err gx_explain_json(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
                            const char *pod_name, struct gx_buf *out) GX_WUR;

#endif
