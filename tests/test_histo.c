/* SPDX-License-Identifier: Apache-2.0 */
/* test_histo.c - the latency histogram: bucket edges, +Inf, count and sum. */
#include "gx_test.h"

#include <string.h>

#include "histo.h"

GX_SUITE(histo);

Test(histo, an_observation_lands_in_the_first_bucket_that_holds_it)
{
    struct gx_histo h;

    memset(&h, 0, sizeof(h));
    gx_histo_observe(&h, 0.00001);  /* below the first bound */
    gx_histo_observe(&h, 0.000025); /* on a bound: that bucket (le is inclusive) */
    gx_histo_observe(&h, 0.000026); /* just above: the next one */
    gx_histo_observe(&h, 30.0);     /* the last bound */
    cr_assert_eq(h.bucket[0], 2);
    cr_assert_eq(h.bucket[1], 1);
    cr_assert_eq(h.bucket[GX_HISTO_BUCKETS - 1], 1);
    cr_assert_eq(h.count, 4);
}

Test(histo, past_the_last_bound_only_count_and_sum_move)
{
    struct gx_histo h;
    uint64_t in_buckets = 0;

    memset(&h, 0, sizeof(h));
    gx_histo_observe(&h, 31.0);
    for (size_t i = 0; i < GX_HISTO_BUCKETS; i++) {
        in_buckets += h.bucket[i];
    }
    cr_assert_eq(in_buckets, 0, "only +Inf holds it");
    cr_assert_eq(h.count, 1);
    cr_assert_float_eq(h.sum, 31.0, 1e-9);
}

Test(histo, bounds_reach_from_tens_of_microseconds_to_the_longest_bind_deadline)
{
    cr_assert_leq(gx_histo_bounds[0], 0.00005, "a sub-millisecond filter gets a bucket of its own");
    cr_assert_geq(gx_histo_bounds[GX_HISTO_BUCKETS - 1], 30.0, "ledger.bind_deadline_ms max");
    for (size_t i = 1; i < GX_HISTO_BUCKETS; i++) {
        cr_assert_gt(gx_histo_bounds[i], gx_histo_bounds[i - 1]);
    }
}
