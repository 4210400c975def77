/* SPDX-License-Identifier: Apache-2.0 */
/* test_waiters.c - the pods waiting for capacity the ledger holds. */
#include "gx_test.h"

#include <string.h>

#include "waiters.h"

GX_SUITE(waiters);

Test(waiters, take_hands_out_the_oldest_first_and_forgets_them)
{
    struct gx_waiters *w = gx_waiters_new(8);
    struct gx_waiter out[8];

    gx_waiters_add(w, "u1", "ml", "a", 1000);
    gx_waiters_add(w, "u2", "ml", "b", 2000);
    gx_waiters_add(w, "u3", "ml", "c", 3000);
    cr_assert_eq(gx_waiters_take(w, 3500, 60000, out, 2), 2);
    cr_assert_str_eq(out[0].uid, "u1");
    cr_assert_str_eq(out[1].name, "b");
    cr_assert_eq(gx_waiters_count(w), 1);
    cr_assert_eq(gx_waiters_take(w, 3500, 60000, out, 8), 1);
    cr_assert_str_eq(out[0].uid, "u3");
    cr_assert_eq(gx_waiters_count(w), 0);
    gx_waiters_free(w);
}

Test(waiters, a_pod_refused_again_moves_to_the_back)
{
    struct gx_waiters *w = gx_waiters_new(8);
    struct gx_waiter out[8];

    gx_waiters_add(w, "u1", "ml", "a", 1000);
    gx_waiters_add(w, "u2", "ml", "b", 2000);
    gx_waiters_add(w, "u1", "ml", "a", 3000);
    cr_assert_eq(gx_waiters_count(w), 2, "one entry per pod");
    cr_assert_eq(gx_waiters_take(w, 3000, 60000, out, 1), 1);
    cr_assert_str_eq(out[0].uid, "u2");
    gx_waiters_free(w);
}

Test(waiters, old_refusals_are_dropped_not_poked)
{
    struct gx_waiters *w = gx_waiters_new(8);
    struct gx_waiter out[8];

    gx_waiters_add(w, "old", "ml", "a", 1000);
    gx_waiters_add(w, "new", "ml", "b", 50000);
    cr_assert_eq(gx_waiters_take(w, 70000, 30000, out, 8), 1);
    cr_assert_str_eq(out[0].uid, "new");
    cr_assert_eq(gx_waiters_count(w), 0, "the old one is gone too");
    gx_waiters_free(w);
}

Test(waiters, a_full_set_drops_its_oldest_and_del_forgets)
{
    struct gx_waiters *w = gx_waiters_new(2);
    struct gx_waiter out[4];

    gx_waiters_add(w, "u1", "ml", "a", 1);
    gx_waiters_add(w, "u2", "ml", "b", 2);
    gx_waiters_add(w, "u3", "ml", "c", 3);
    gx_waiters_del(w, "u3");
    gx_waiters_del(w, "nobody");
    cr_assert_eq(gx_waiters_take(w, 10, 1000, out, 4), 1);
    cr_assert_str_eq(out[0].uid, "u2");
    gx_waiters_add(w, "", "ml", "x", 10);
    cr_assert_eq(gx_waiters_count(w), 0, "a pod without a uid is not noted");
    gx_waiters_free(w);
}
