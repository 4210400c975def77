/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom.h - parser of Prometheus HTTP API query responses
 * (/api/v1/query): {"status":"success","data":{"resultType":"vector",
 * "result":[{"metric":{..},"value":[ts,"v"]}]}}; matrix results use the
 * newest point of "values". Sample values are JSON strings parsed with
 * strtod ("NaN", "+Inf"). {"status":"error"} bodies become GX_EUPSTREAM
 * with "errorType: error" in @why. No I/O (the poller lives in promsrc).
 */
#ifndef GX_PROM_H
#define GX_PROM_H

#include "series.h"

/**
 * Parse a query response body, calling @cb per series (ts_ms from the
 * sample). Key order is never assumed. Errors: GX_EPARSE (malformed, wrong
 * types), GX_EUPSTREAM (status error), callback's code.
 */
enum gx_err gx_prom_parse_query(const char *body, size_t len, int max_depth, gx_series_cb cb,
                                void *ctx, struct gx_why *why) GX_WUR;

#endif
