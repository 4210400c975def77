/* SPDX-License-Identifier: Apache-2.0 */
/* test_elect.c - the leader Lease's rule: who answers, who forwards. */
#include "gx_test.h"

#include "elect.h"

GX_SUITE(elect);

#define A "http://10.0.0.1:8888"
#define B "http://10.0.0.2:8888"
#define LEASE 10000

Test(elect, without_a_lease_a_replica_takes_it_and_leads_once_written)
{
    struct gx_elect e;

    gx_elect_init(&e);
    cr_assert_eq(gx_elect_observe(&e, A, "", "", 1000, LEASE), GX_ELECT_TAKE);
    cr_assert_not(gx_elect_leading(&e, A, 1000, LEASE), "not before the write lands");
    cr_assert_null(gx_elect_leader(&e, A, 1000, LEASE), "nobody to forward to: answer itself");
    gx_elect_written(&e, A, "5", 1200);
    cr_assert(gx_elect_leading(&e, A, 1200, LEASE));
    cr_assert_null(gx_elect_leader(&e, A, 1200, LEASE), "the leader forwards to nobody");
    cr_assert_eq(gx_elect_observe(&e, A, "5", A, 3000, LEASE), GX_ELECT_RENEW);
}

Test(elect, a_follower_forwards_while_the_leader_keeps_writing)
{
    struct gx_elect e;

    gx_elect_init(&e);
    cr_assert_eq(gx_elect_observe(&e, B, "5", A, 1000, LEASE), GX_ELECT_FOLLOW);
    cr_assert_str_eq(gx_elect_leader(&e, B, 1000, LEASE), A);
    cr_assert_not(gx_elect_leading(&e, B, 1000, LEASE));
    /* renewed every few seconds: each change restarts the count */
    cr_assert_eq(gx_elect_observe(&e, B, "6", A, 9000, LEASE), GX_ELECT_FOLLOW);
    cr_assert_eq(gx_elect_observe(&e, B, "7", A, 18000, LEASE), GX_ELECT_FOLLOW);
    cr_assert_str_eq(gx_elect_leader(&e, B, 27000, LEASE), A);
}

Test(elect, a_lease_that_stops_changing_is_taken_after_a_period_of_the_followers_own_time)
{
    struct gx_elect e;

    gx_elect_init(&e);
    cr_assert_eq(gx_elect_observe(&e, B, "5", A, 1000, LEASE), GX_ELECT_FOLLOW);
    cr_assert_eq(gx_elect_observe(&e, B, "5", A, 10999, LEASE), GX_ELECT_FOLLOW);
    cr_assert_str_eq(gx_elect_leader(&e, B, 10999, LEASE), A);
    cr_assert_null(gx_elect_leader(&e, B, 11000, LEASE), "gone quiet: answer itself");
    cr_assert_eq(gx_elect_observe(&e, B, "5", A, 11000, LEASE), GX_ELECT_TAKE);
    gx_elect_written(&e, B, "8", 11100);
    cr_assert(gx_elect_leading(&e, B, 11100, LEASE));
    cr_assert_eq(gx_elect_observe(&e, B, "8", B, 13000, LEASE), GX_ELECT_RENEW);
}

Test(elect, a_leader_whose_writes_stop_landing_steps_down)
{
    struct gx_elect e;

    gx_elect_init(&e);
    gx_elect_written(&e, A, "5", 1000);
    cr_assert(gx_elect_leading(&e, A, 10999, LEASE));
    cr_assert_not(gx_elect_leading(&e, A, 11000, LEASE), "a follower may take it now");
}

Test(elect, a_leader_that_lost_the_lease_follows_the_new_holder)
{
    struct gx_elect e;

    gx_elect_init(&e);
    gx_elect_written(&e, A, "5", 1000);
    cr_assert_eq(gx_elect_observe(&e, A, "9", B, 4000, LEASE), GX_ELECT_FOLLOW);
    cr_assert_not(gx_elect_leading(&e, A, 4000, LEASE));
    cr_assert_str_eq(gx_elect_leader(&e, A, 4000, LEASE), B);
}

Test(elect, a_restarted_leader_at_the_same_address_renews_at_once)
{
    struct gx_elect e;

    gx_elect_init(&e);
    cr_assert_eq(gx_elect_observe(&e, A, "5", A, 1000, LEASE), GX_ELECT_RENEW);
}

Test(elect, a_lease_released_by_its_holder_is_taken_at_once)
{
    struct gx_elect e;

    gx_elect_init(&e);
    cr_assert_eq(gx_elect_observe(&e, B, "5", A, 1000, LEASE), GX_ELECT_FOLLOW);
    cr_assert_eq(gx_elect_observe(&e, B, "6", "", 2000, LEASE), GX_ELECT_TAKE);
    cr_assert_null(gx_elect_leader(&e, B, 2000, LEASE));
}
