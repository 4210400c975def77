/* SPDX-License-Identifier: Apache-2.0 */
/*
 * histo.h - a latency histogram with fixed buckets, filled by the clients
 * and the server alike and rendered by metrics.c.
 */
#ifndef GX_HISTO_H
#define GX_HISTO_H

#include <stddef.h>
#include <stdint.h>

#define GX_HISTO_BUCKETS 19

/**
 * A latency histogram in seconds with fixed buckets, 25 us .. 30 s: a filter
 * on a few hundred nodes takes well under a millisecond, a bind may run to
 * its deadline (ledger.bind_deadline_ms, at most 30 s).
 */
struct gx_histo {
    uint64_t bucket[GX_HISTO_BUCKETS]; /* non-cumulative counts */
    uint64_t count;
    double sum;
};

/** Bucket upper bounds in seconds, GX_HISTO_BUCKETS entries. */
extern const double gx_histo_bounds[GX_HISTO_BUCKETS];

/** Record one observation of @seconds. */
void gx_histo_observe(struct gx_histo *h, double seconds);

#endif
