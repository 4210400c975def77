/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "gx_test.h"
#include "nameidx.h"

GX_SUITE(nameidx);

Test(nameidx, finds_positions_and_nothing_else)
{
    struct gx_nameidx x;

    cr_assert_eq(gx_nameidx_init(&x, 3), GX_OK);
    cr_assert_eq(gx_nameidx_find(&x, "a", 1), GX_NAMEIDX_NONE);
    cr_assert_eq(gx_nameidx_add(&x, "gpu-node-a", 10), GX_OK);
    cr_assert_eq(gx_nameidx_add(&x, "gpu-node-b", 10), GX_OK);
    cr_assert_eq(gx_nameidx_find(&x, "gpu-node-a", 10), 0);
    cr_assert_eq(gx_nameidx_find(&x, "gpu-node-b", 10), 1);
    cr_assert_eq(gx_nameidx_find(&x, "gpu-node-b", 9), GX_NAMEIDX_NONE, "a prefix is not a name");
    cr_assert_eq(gx_nameidx_find(&x, "gpu-node-bb", 11), GX_NAMEIDX_NONE);
    cr_assert_eq(gx_nameidx_find(&x, "", 0), GX_NAMEIDX_NONE);
    gx_nameidx_release(&x);
}

Test(nameidx, the_last_of_two_equal_names_wins_and_max_is_kept)
{
    struct gx_nameidx x;

    cr_assert_eq(gx_nameidx_init(&x, 2), GX_OK);
    cr_assert_eq(gx_nameidx_add(&x, "n", 1), GX_OK);
    cr_assert_eq(gx_nameidx_add(&x, "n", 1), GX_OK);
    cr_assert_eq(gx_nameidx_find(&x, "n", 1), 1);
    cr_assert_eq(gx_nameidx_add(&x, "m", 1), GX_ETOOBIG);
    cr_assert_eq(gx_nameidx_find(&x, "m", 1), GX_NAMEIDX_NONE);
    gx_nameidx_release(&x);
}

Test(nameidx, empty_and_released_indexes_find_nothing)
{
    struct gx_nameidx x;
    struct gx_nameidx_probe p = {"a", 1, 0};
    uint32_t out = 7;

    cr_assert_eq(gx_nameidx_init(&x, 0), GX_OK);
    cr_assert_eq(gx_nameidx_add(&x, "a", 1), GX_ETOOBIG);
    cr_assert_eq(gx_nameidx_find(&x, "a", 1), GX_NAMEIDX_NONE);
    gx_nameidx_release(&x);
    cr_assert_eq(gx_nameidx_find(&x, "a", 1), GX_NAMEIDX_NONE);
    gx_nameidx_find_many(&x, &p, 1, &out);
    cr_assert_eq(out, GX_NAMEIDX_NONE);
}

/* Thousands of names of every length around the 8-byte step, looked up one by one and in a batch.
 */
Test(nameidx, find_many_agrees_with_find_on_thousands_of_names)
{
    enum { N = 6000, Q = 2 * N };
    static char names[Q][40];
    static struct gx_nameidx_probe p[Q];
    static uint32_t out[Q];
    struct gx_nameidx x;

    for (int i = 0; i < Q; i++) {
        /* lengths 1..33: every tail length of the hash's 8-byte loop */
        int len = snprintf(names[i], sizeof(names[i]), "%x-%.*s", i, i % 31,
                           "abcdefghijklmnopqrstuvwxyz0123456789");
        p[i].name = names[i];
        p[i].len = (size_t)len;
    }
    cr_assert_eq(gx_nameidx_init(&x, N), GX_OK);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(gx_nameidx_add(&x, p[i].name, p[i].len), GX_OK);
    }
    gx_nameidx_find_many(&x, p, Q, out);
    for (int i = 0; i < Q; i++) {
        uint32_t want = i < N ? (uint32_t)i : GX_NAMEIDX_NONE;
        cr_assert_eq(out[i], want, "%s", names[i]);
        cr_assert_eq(gx_nameidx_find(&x, p[i].name, p[i].len), want, "%s", names[i]);
    }
    gx_nameidx_release(&x);
}
