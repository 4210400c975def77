/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expo.h - parser of the Prometheus text exposition format (what
 * dcgm-exporter serves on /metrics): HELP/TYPE/comments skipped, samples
 * with optional labels (escapes \\ \" \n), trailing comma, value in Go
 * ParseFloat syntax (NaN, +Inf, exponents), optional timestamp in ms.
 * Lenient about dcgm-exporter's unescaped label values where unambiguous.
 * No I/O, no allocation beyond a scratch buffer freed before return.
 */
#ifndef GX_EXPO_H
#define GX_EXPO_H

#include "series.h"

/** Max labels per sample; a sample with more is an error. */
#define GX_EXPO_MAX_LABELS 64

/**
 * Parse @len bytes of @text, calling @cb for each sample. GX_EPARSE with
 * "line N: reason" in @why on malformed input; a callback error stops the
 * parse and is returned.
 */
enum gx_err gx_expo_parse(const char *text, size_t len, gx_series_cb cb, void *ctx,
                          struct gx_why *why) GX_WUR;

#endif
