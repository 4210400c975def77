/* SPDX-License-Identifier: Apache-2.0 */
/*
 * series.h - one sample of a Prometheus series, as produced by the text
 * exposition parser (expo) and the query API parser (prom). Everything a
 * gx_series points to is valid only during the callback that receives it.
 */
#ifndef GX_SERIES_H
#define GX_SERIES_H

#include "common.h"

struct gx_series {
    const char *name;           /* metric name, "" when the query dropped __name__ */
    const struct gx_kv *labels; /* excluding __name__ */
    size_t n_labels;
    double value;  /* NaN, +Inf, -Inf possible */
    int64_t ts_ms; /* sample time, 0 when the source gave none */
};

/** Receives each series; return non-OK to stop the parse with that code. */
typedef enum gx_err (*gx_series_cb)(void *ctx, const struct gx_series *s);

#endif
