/* SPDX-License-Identifier: Apache-2.0 */
/* histo.c - a latency histogram with fixed buckets. */
#include "histo.h"

const double gx_histo_bounds[GX_HISTO_BUCKETS] = {
    0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,     0.1,     0.25,   0.5,     1.0,    2.5,   5.0,    10.0,  30.0};

void
gx_histo_observe(struct gx_histo *h, double seconds)
{
    size_t i;

    for (i = 0; i < GX_HISTO_BUCKETS - 1 && seconds > gx_histo_bounds[i]; i++) {
        ;
    }
    if (seconds > gx_histo_bounds[GX_HISTO_BUCKETS - 1]) {
        i = GX_HISTO_BUCKETS; /* only in +Inf */
    }
    if (i < GX_HISTO_BUCKETS) {
        h->bucket[i]++;
    }
    h->count++;
    h->sum += seconds;
}
