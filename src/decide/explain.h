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

/** What explain says before its table (all borrowed; the struct may be NULL: nothing). */
struct gx_explain_notes {
    const char *source;          /* what was explained, when not a Pod ("Deployment ns/x ...") */
    const char *const *warnings; /* why the pod may never reach the extender, one a line */
    size_t n_warnings;
};

/**
 * Explain @req against every node of the snapshot as an aligned text table,
 * after a "source:" line and one "warning:" line each of @notes.
 */
enum gx_err gx_explain_text(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
                            const char *pod_name, const struct gx_explain_notes *notes,
                            struct gx_buf *out) GX_WUR;

/**
 * The same as a JSON document {"pod":..,"source":..,"warnings":[..],
 * "request":{..},"nodes":[{..}]} ("source" null for a Pod).
 */
enum gx_err gx_explain_json(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
                            const char *pod_name, const struct gx_explain_notes *notes,
                            struct gx_buf *out) GX_WUR;

#endif
