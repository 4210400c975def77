/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ledger.c - ledger invariants, lifecycle, Lease codec and a random-walk
 * property test, for ledger.c, ledger_usage.c and ledger_codec.c.
 *
 * Why one file: the codec is tested on what the bookkeeping booked (each
 * codec test round-trips a ledger entry, and the random walks re-read every
 * node's Lease as a restarted replica does), so the three files' tests share
 * the tenant builders and the walks' oracle.
 */
#include "gx_test.h"

#include "ledger.h"

#include <stdio.h>
#include <string.h>

GX_SUITE(ledger);

static const int SLOTS4[4] = {4, 4, 4, 4};

/* A tenant of @uid on @card. */
static struct gx_tenant
mk(const char *uid, int card, bool exclusive, int slices, int64_t mem, int64_t since)
{
    struct gx_tenant t;

    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "default/%s", uid);
    t.card = card;
    t.exclusive = exclusive;
    t.slices = slices;
    t.memory_mib = mem;
    t.util_pct = -1;
    t.state = GX_TENANT_RESERVED;
    t.since_ms = since;
    return t;
}

/* Add one tenant; returns the result code. */
static enum gx_err
add1(struct gx_ledger *l, const char *node, struct gx_tenant t)
{
    return gx_ledger_add(l, node, &t, 1, SLOTS4, 4);
}

/* Device-plugin tenants hold node slots, not a card; they survive the Lease codec. */
Test(ledger, device_plugin_tenants_use_card_any)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant *back = NULL;
    struct gx_buf b;
    size_t n = 0;
    int64_t slices = 0, tenants = 0;

    cr_assert_eq(add1(l, "gpu-c", mk("dp1", GX_CARD_ANY, false, 2, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "gpu-c", mk("dp2", GX_CARD_ANY, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "gpu-c", mk("ex", GX_CARD_ANY, true, 0, 0, 1)), GX_EINVAL);
    gx_ledger_totals(l, &slices, &tenants);
    cr_assert_eq(slices, 3);
    cr_assert_eq(tenants, 2);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_ledger_node_encode(gx_ledger_node(l, "gpu-c"), &b), GX_OK);
    cr_assert_eq(gx_ledger_node_decode(b.data, b.len, &back, &n, NULL), GX_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(back[0].card, GX_CARD_ANY);
    cr_assert_eq(gx_ledger_set_node(l, "gpu-c", back, n, "7"), GX_OK);
    free(back);
    gx_buf_release(&b);
    gx_ledger_free(l);
}

Test(ledger, rejects_second_tenant_when_slots_full)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_card_usage u;

    cr_assert_eq(add1(l, "n1", mk("a", 0, false, 3, 1000, 1)), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("b", 0, false, 2, 1000, 1)), GX_ECONFLICT);
    cr_assert_eq(add1(l, "n1", mk("c", 0, false, 1, 2000, 1)), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("d", 0, false, 1, 0, 1)), GX_ECONFLICT);
    gx_ledger_card_usage(l, "n1", 0, &u);
    cr_assert_eq(u.slices, 4);
    cr_assert_eq(u.memory_mib, 3000);
    cr_assert_eq(u.tenants, 2);
    cr_assert_not(u.exclusive);
    cr_assert_null(gx_ledger_find_pod(l, "b"));
    gx_ledger_free(l);
}

Test(ledger, scratch_copies_one_node_and_changes_apart_from_it)
{
    struct gx_ledger *l = gx_ledger_new(), *s, *none;

    cr_assert_eq(add1(l, "n1", mk("a", 0, false, 3, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "n2", mk("b", 0, false, 1, 0, 1)), GX_OK);
    s = gx_ledger_scratch(l, "n1");
    cr_assert_not_null(s);
    cr_assert_not_null(gx_ledger_find_pod(s, "a"));
    cr_assert_null(gx_ledger_find_pod(s, "b"), "only the node asked for");
    cr_assert_eq(add1(s, "n1", mk("c", 0, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(add1(s, "n1", mk("d", 0, false, 1, 0, 1)), GX_ECONFLICT, "a's slots copied");
    cr_assert_null(gx_ledger_find_pod(l, "c"), "the original is untouched");
    none = gx_ledger_scratch(l, "n3");
    cr_assert_not_null(none);
    cr_assert_eq(add1(none, "n3", mk("e", 0, false, 4, 0, 1)), GX_OK, "no entry: empty");
    gx_ledger_free(none);
    gx_ledger_free(s);
    gx_ledger_free(l);
}

Test(ledger, keeps_exclusive_and_shared_apart)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_card_usage u;

    cr_assert_eq(add1(l, "n1", mk("ex", 1, true, 0, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("sh", 1, false, 1, 0, 1)), GX_ECONFLICT);
    cr_assert_eq(add1(l, "n1", mk("ex2", 1, true, 0, 0, 1)), GX_ECONFLICT);
    cr_assert_eq(add1(l, "n1", mk("sh", 2, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("ex3", 2, true, 0, 0, 1)), GX_ECONFLICT);
    gx_ledger_card_usage(l, "n1", 1, &u);
    cr_assert(u.exclusive);
    cr_assert_eq(u.slices, 0);
    cr_assert_eq(u.tenants, 1);
    gx_ledger_free(l);
}

Test(ledger, rejects_uid_on_a_second_node)
{
    struct gx_ledger *l = gx_ledger_new();
    const struct gx_ledger_node *n;

    cr_assert_eq(add1(l, "n1", mk("pod-1", 0, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "n2", mk("pod-1", 0, false, 1, 0, 1)), GX_ECONFLICT);
    n = gx_ledger_find_pod(l, "pod-1");
    cr_assert_not_null(n);
    cr_assert_str_eq(n->node, "n1");
    cr_assert(gx_ledger_node(l, "n2") == NULL || gx_ledger_node(l, "n2")->n_tenants == 0);
    gx_ledger_free(l);
}

Test(ledger, re_adding_the_same_pod_is_idempotent)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant two[2] = {mk("p", 0, true, 0, 0, 5), mk("p", 3, true, 0, 0, 5)};
    struct gx_tenant other[2] = {mk("p", 0, true, 0, 0, 5), mk("p", 2, true, 0, 0, 5)};
    int64_t slices = -1, tenants = -1;

    cr_assert_eq(gx_ledger_add(l, "n1", two, 2, SLOTS4, 4), GX_OK);
    cr_assert_eq(gx_ledger_add(l, "n1", two, 2, SLOTS4, 4), GX_OK);
    cr_assert_eq(gx_ledger_node(l, "n1")->n_tenants, 2);
    /* same uid, different cards: not a retry but a conflicting assignment */
    cr_assert_eq(gx_ledger_add(l, "n1", other, 2, SLOTS4, 4), GX_ECONFLICT);
    cr_assert_eq(gx_ledger_add(l, "n1", two, 1, SLOTS4, 4), GX_ECONFLICT);
    gx_ledger_totals(l, &slices, &tenants);
    cr_assert_eq(tenants, 2);
    cr_assert_eq(slices, 0);
    gx_ledger_free(l);
}

Test(ledger, add_is_all_or_nothing)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant pair[2] = {mk("q", 0, false, 1, 0, 1), mk("q", 1, false, 1, 0, 1)};
    struct gx_card_usage u;

    cr_assert_eq(add1(l, "n1", mk("full", 1, false, 4, 0, 1)), GX_OK);
    cr_assert_eq(gx_ledger_add(l, "n1", pair, 2, SLOTS4, 4), GX_ECONFLICT);
    gx_ledger_card_usage(l, "n1", 0, &u);
    cr_assert_eq(u.tenants, 0);
    cr_assert_null(gx_ledger_find_pod(l, "q"));
    gx_ledger_free(l);
}

Test(ledger, rejects_malformed_tenants)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant dup[2] = {mk("d", 0, false, 1, 0, 1), mk("d", 0, false, 1, 0, 1)};
    struct gx_tenant mixed[2] = {mk("x", 0, false, 1, 0, 1), mk("y", 1, false, 1, 0, 1)};
    struct gx_tenant bad = mk("b", 0, false, 1, 0, 1);

    cr_assert_eq(add1(l, "n1", mk("a", 4, false, 1, 0, 1)), GX_EINVAL);
    cr_assert_eq(add1(l, "n1", mk("a", 0, false, 0, 0, 1)), GX_EINVAL);
    cr_assert_eq(add1(l, "n1", mk("", 0, false, 1, 0, 1)), GX_EINVAL);
    cr_assert_eq(add1(l, "n1", mk("a", 0, false, 1, -5, 1)), GX_EINVAL);
    cr_assert_eq(gx_ledger_add(l, "n1", dup, 2, SLOTS4, 4), GX_EINVAL);
    cr_assert_eq(gx_ledger_add(l, "n1", mixed, 2, SLOTS4, 4), GX_EINVAL);
    memset(bad.uid, 'u', sizeof(bad.uid)); /* not NUL-terminated */
    cr_assert_eq(add1(l, "n1", bad), GX_EINVAL);
    bad = mk("b", 0, false, 1, 0, 1);
    bad.util_pct = 150;
    cr_assert_eq(add1(l, "n1", bad), GX_EINVAL);
    cr_assert_eq(add1(l, "", mk("a", 0, false, 1, 0, 1)), GX_EINVAL);
    cr_assert(gx_ledger_node(l, "n1") == NULL || gx_ledger_node(l, "n1")->n_tenants == 0);
    gx_ledger_free(l);
}

Test(ledger, release_removes_every_tenant_of_the_pod)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant pair[2] = {mk("r", 0, false, 2, 100, 1), mk("r", 1, false, 2, 100, 1)};
    struct gx_card_usage u;

    cr_assert_eq(gx_ledger_add(l, "n1", pair, 2, SLOTS4, 4), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("s", 0, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(gx_ledger_release(l, "r"), 2);
    cr_assert_eq(gx_ledger_release(l, "r"), 0);
    cr_assert_null(gx_ledger_find_pod(l, "r"));
    gx_ledger_card_usage(l, "n1", 0, &u);
    cr_assert_eq(u.slices, 1);
    cr_assert_eq(u.tenants, 1);
    /* the slots are free again, and the uid may go elsewhere */
    cr_assert_eq(add1(l, "n2", mk("r", 0, false, 4, 0, 1)), GX_OK);
    cr_assert_str_eq(gx_ledger_find_pod(l, "r")->node, "n2");
    gx_ledger_free(l);
}

/* A release undoes the booking it was made for: a renewed (taken over) booking survives it. */
Test(ledger, a_release_of_an_old_booking_spares_the_renewed_one)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant pair[2] = {mk("r", 0, true, 0, 0, 50), mk("r", 1, true, 0, 0, 50)};
    uint64_t v;
    int64_t renewed;

    cr_assert_eq(gx_ledger_booking(l, "r"), GX_BOOKING_ANY);
    cr_assert_eq(gx_ledger_renew(l, "r", 70), GX_BOOKING_ANY, "nothing to take over");
    cr_assert_eq(gx_ledger_add(l, "n1", pair, 2, SLOTS4, 4), GX_OK);
    cr_assert_eq(gx_ledger_booking(l, "r"), 50);
    v = gx_ledger_version(l);
    renewed = gx_ledger_renew(l, "r", 70);
    cr_assert_eq(renewed, 70);
    cr_assert_gt(gx_ledger_version(l), v, "a renewal is a change to write");
    cr_assert_eq(gx_ledger_node(l, "n1")->tenants[1].since_ms, 70, "every tenant of the pod");
    /* a clock behind the old stamp still gives a new one */
    cr_assert_eq(gx_ledger_renew(l, "r", 10), 71);
    cr_assert_eq(gx_ledger_release_booking(l, "r", 50), 0, "the first attempt's release misses");
    cr_assert_eq(gx_ledger_release_booking(l, "r", renewed), 0);
    cr_assert_eq(gx_ledger_booking(l, "r"), 71);
    cr_assert_eq(gx_ledger_release_booking(l, "r", 71), 2, "the current attempt's release hits");
    cr_assert_eq(add1(l, "n1", mk("r", 0, true, 0, 0, 80)), GX_OK);
    cr_assert_eq(gx_ledger_release_booking(l, "r", GX_BOOKING_ANY), 1, "a gone pod's release");
    gx_ledger_free(l);
}

Test(ledger, expires_only_old_reservations)
{
    struct gx_ledger *l = gx_ledger_new();

    cr_assert_eq(add1(l, "n1", mk("old", 0, false, 1, 0, 1000)), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("new", 1, false, 1, 0, 250000)), GX_OK);
    cr_assert_eq(add1(l, "n2", mk("bound", 0, false, 1, 0, 1000)), GX_OK);
    cr_assert_eq(gx_ledger_mark_bound(l, "bound"), GX_OK);
    cr_assert_eq(gx_ledger_expire(l, 301000, 300000), 0); /* exactly the TTL: kept */
    cr_assert_eq(gx_ledger_expire(l, 301001, 300000), 1);
    cr_assert_null(gx_ledger_find_pod(l, "old"));
    cr_assert_not_null(gx_ledger_find_pod(l, "new"));
    cr_assert_not_null(gx_ledger_find_pod(l, "bound"));
    cr_assert_eq(gx_ledger_expire(l, 10000000, 300000), 1);
    cr_assert_null(gx_ledger_find_pod(l, "new"));
    cr_assert_not_null(gx_ledger_find_pod(l, "bound"));
    gx_ledger_free(l);
}

Test(ledger, mark_bound_flags_every_tenant)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant pair[2] = {mk("m", 2, true, 0, 0, 1), mk("m", 3, true, 0, 0, 1)};
    const struct gx_ledger_node *n;

    cr_assert_eq(gx_ledger_mark_bound(l, "m"), GX_ENOTFOUND);
    cr_assert_eq(gx_ledger_add(l, "n1", pair, 2, SLOTS4, 4), GX_OK);
    cr_assert_eq(gx_ledger_mark_bound(l, "m"), GX_OK);
    n = gx_ledger_node(l, "n1");
    cr_assert_eq(n->n_tenants, 2);
    cr_assert_eq(n->tenants[0].state, GX_TENANT_BOUND);
    cr_assert_eq(n->tenants[1].state, GX_TENANT_BOUND);
    gx_ledger_free(l);
}

Test(ledger, set_node_replaces_and_reindexes)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant lease[3] = {mk("x", 0, false, 1, 0, 1), mk("y", 0, false, 2, 0, 1),
                                 mk("y", 1, false, 1, 0, 1)};
    struct gx_tenant mix[2] = {mk("e", 0, true, 0, 0, 1), mk("f", 0, false, 1, 0, 1)};
    struct gx_tenant steal = mk("z", 0, false, 1, 0, 1);

    cr_assert_eq(add1(l, "n1", mk("gone", 0, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "n2", mk("z", 0, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(gx_ledger_set_node(l, "n1", lease, 3, "42"), GX_OK);
    cr_assert_null(gx_ledger_find_pod(l, "gone"));
    cr_assert_str_eq(gx_ledger_find_pod(l, "y")->node, "n1");
    cr_assert_str_eq(gx_ledger_node(l, "n1")->resource_version, "42");
    cr_assert_eq(gx_ledger_node(l, "n1")->n_tenants, 3);
    cr_assert_eq(gx_ledger_set_node(l, "n1", mix, 2, "43"), GX_ECONFLICT);
    cr_assert_eq(gx_ledger_set_node(l, "n1", &steal, 1, "44"), GX_ECONFLICT);
    cr_assert_str_eq(gx_ledger_node(l, "n1")->resource_version, "42");
    cr_assert_eq(gx_ledger_set_node(l, "n1", NULL, 0, NULL), GX_OK);
    cr_assert_null(gx_ledger_find_pod(l, "x"));
    cr_assert_null(gx_ledger_find_pod(l, "y"));
    cr_assert_eq(gx_ledger_node(l, "n1")->n_tenants, 0);
    gx_ledger_free(l);
}

/* Version of @node's entry (0 when it has none). */
static uint64_t
version_of(const struct gx_ledger *l, const char *node)
{
    const struct gx_ledger_node *n = gx_ledger_node(l, node);

    return n != NULL ? n->version : 0;
}

Test(ledger, every_mutation_bumps_only_its_nodes_version)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant lease = mk("l", 2, false, 1, 0, 1);
    uint64_t v1, v2, g;

    lease.state = GX_TENANT_BOUND;
    cr_assert_eq(gx_ledger_version(NULL), 0);
    cr_assert_eq(gx_ledger_version(l), 0);
    cr_assert_eq(add1(l, "n1", mk("a", 0, false, 1, 0, 1000)), GX_OK);
    cr_assert_eq(add1(l, "n2", mk("b", 0, false, 1, 0, 1000)), GX_OK);
    v1 = version_of(l, "n1");
    v2 = version_of(l, "n2");
    cr_assert_gt(v1, 0);
    cr_assert_gt(v2, v1);
    cr_assert_eq(gx_ledger_version(l), v2);

    /* each mutation of n1: n1 moves past the old ledger version, n2 stays */
    g = gx_ledger_version(l);
    cr_assert_eq(add1(l, "n1", mk("c", 1, false, 1, 0, 1000)), GX_OK);
    cr_assert_gt(version_of(l, "n1"), g);
    g = gx_ledger_version(l);
    cr_assert_eq(gx_ledger_mark_bound(l, "c"), GX_OK);
    cr_assert_gt(version_of(l, "n1"), g);
    g = gx_ledger_version(l);
    cr_assert_eq(gx_ledger_release(l, "c"), 1);
    cr_assert_gt(version_of(l, "n1"), g);
    g = gx_ledger_version(l);
    cr_assert_eq(gx_ledger_expire(l, 400000, 300000), 2);
    cr_assert_gt(version_of(l, "n1"), g);
    cr_assert_gt(version_of(l, "n2"), g); /* expire removed b from n2 too */
    g = gx_ledger_version(l);
    cr_assert_eq(gx_ledger_set_node(l, "n1", &lease, 1, "9"), GX_OK);
    cr_assert_gt(version_of(l, "n1"), g);
    cr_assert_leq(version_of(l, "n2"), g);

    /* calls that change nothing leave every version alone */
    g = gx_ledger_version(l);
    cr_assert_eq(add1(l, "n1", mk("d", 2, true, 0, 0, 1)), GX_ECONFLICT);
    cr_assert_eq(gx_ledger_mark_bound(l, "nobody"), GX_ENOTFOUND);
    cr_assert_eq(gx_ledger_release(l, "nobody"), 0);
    cr_assert_eq(gx_ledger_expire(l, 400000, 300000), 0);
    cr_assert_eq(gx_ledger_version(l), g);
    cr_assert_leq(version_of(l, "n1"), g);
    gx_ledger_free(l);
}

/* True when @a and @b are the same usage, field by field (padding is not part of it). */
static bool
usage_eq(const struct gx_card_usage *a, const struct gx_card_usage *b)
{
    return a->slices == b->slices && a->milli == b->milli && a->memory_mib == b->memory_mib &&
           a->util_pct == b->util_pct && a->tenants == b->tenants && a->exclusive == b->exclusive;
}

Test(ledger, entry_card_usage_matches_card_usage)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant pair[2] = {mk("p", 0, false, 2, 300, 1), mk("p", 1, true, 0, 0, 1)};
    const struct gx_ledger_node *e;
    struct gx_card_usage a, b;

    cr_assert_eq(gx_ledger_add(l, "n1", pair, 2, SLOTS4, 4), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("q", 0, false, 1, 200, 1)), GX_OK);
    e = gx_ledger_node(l, "n1");
    for (int card = -1; card < 4; card++) {
        gx_ledger_entry_card_usage(e, card, &a);
        gx_ledger_card_usage(l, "n1", card, &b);
        cr_assert(usage_eq(&a, &b), "card %d", card);
    }
    gx_ledger_entry_card_usage(e, 0, &a);
    cr_assert_eq(a.slices, 3);
    cr_assert_eq(a.memory_mib, 500);
    gx_ledger_entry_card_usage(e, 1, &a);
    cr_assert(a.exclusive);
    gx_ledger_entry_card_usage(NULL, 0, &a);
    cr_assert_eq(a.tenants, 0);
    cr_assert_eq(a.slices, 0);
    {
        struct gx_card_usage all[3]; /* card 2 holds nothing; a tenant on card 3 is past it */

        cr_assert_eq(add1(l, "n1", mk("r", 3, false, 1, 100, 1)), GX_OK);
        gx_ledger_entry_cards_usage(e = gx_ledger_node(l, "n1"), all, 3);
        for (int card = 0; card < 3; card++) {
            gx_ledger_entry_card_usage(e, card, &a);
            cr_assert(usage_eq(&all[card], &a), "one pass, card %d", card);
        }
        cr_assert_eq(all[0].tenants, 2);
    }
    gx_ledger_free(l);
}

/* Count callback for gx_ledger_each. */
static void
count_cb(void *ctx, const struct gx_ledger_node *n)
{
    size_t *c = ctx;
    *c += n->n_tenants;
}

Test(ledger, totals_and_each_agree_with_tenants)
{
    struct gx_ledger *l = gx_ledger_new();
    int64_t slices = 0, tenants = 0;
    size_t seen = 0;

    cr_assert_eq(add1(l, "n1", mk("a", 0, false, 3, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "n2", mk("b", 1, false, 2, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "n3", mk("c", 1, true, 0, 0, 1)), GX_OK);
    gx_ledger_totals(l, &slices, &tenants);
    cr_assert_eq(slices, 5);
    cr_assert_eq(tenants, 3);
    gx_ledger_each(l, count_cb, &seen);
    cr_assert_eq(seen, 3);
    gx_ledger_free(l);
}

Test(ledger, lease_codec_round_trips)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant a = mk("11111111-2222-3333-4444-555555555555", 1, false, 2, 6144, 0);
    struct gx_tenant *out = NULL;
    struct gx_buf b;
    struct gx_why why = {{0}};
    size_t n = 0;

    a.util_pct = 37.5;
    a.since_ms = 1700000000123;
    (void)snprintf(a.pod, sizeof(a.pod), "ml/\"quoted\" pod");
    cr_assert_eq(gx_ledger_add(l, "n1", &a, 1, SLOTS4, 4), GX_OK);
    cr_assert_eq(add1(l, "n1", mk("ex", 3, true, 0, 0, 77)), GX_OK);
    cr_assert_eq(gx_ledger_mark_bound(l, "ex"), GX_OK);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_ledger_node_encode(gx_ledger_node(l, "n1"), &b), GX_OK);
    cr_assert_not_null(strstr(b.data, "\"v\":1"));
    cr_assert_eq(gx_ledger_node_decode(b.data, b.len, &out, &n, &why), GX_OK, "%s", why.text);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(out[0].uid, a.uid);
    cr_assert_str_eq(out[0].pod, a.pod);
    cr_assert_eq(out[0].card, 1);
    cr_assert_eq(out[0].slices, 2);
    cr_assert_eq(out[0].memory_mib, 6144);
    cr_assert_float_eq(out[0].util_pct, 37.5, 1e-9);
    cr_assert_eq(out[0].since_ms, 1700000000123);
    cr_assert_eq(out[0].state, GX_TENANT_RESERVED);
    cr_assert(out[1].exclusive);
    cr_assert_eq(out[1].state, GX_TENANT_BOUND);
    cr_assert_eq(out[1].util_pct, -1);
    free(out);
    gx_buf_release(&b);
    gx_ledger_free(l);
}

Test(ledger, lease_decode_accepts_empty_and_rejects_bad_input)
{
    static const char *const bad[] = {
        "",
        "{",
        "[]",
        "{\"v\":2,\"tenants\":[]}",
        "{\"tenants\":[]}",
        "{\"v\":1,\"tenants\":{}}",
        "{\"v\":1,\"tenants\":[]} x",
        "{\"v\":1,\"tenants\":[1]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":\"0\",\"exclusive\":false,"
        "\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0.5,\"exclusive\":false,"
        "\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,\"exclusive\":0,"
        "\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,\"exclusive\":false,"
        "\"slices\":0,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,\"exclusive\":false,"
        "\"slices\":1,\"memory_mib\":-1,\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,\"exclusive\":false,"
        "\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"gone\",\"since_ms\":1}]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,\"exclusive\":false,"
        "\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"bound\"}]}",
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"uid\":\"v\",\"pod\":\"p\",\"card\":0,"
        "\"exclusive\":false,\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"bound\","
        "\"since_ms\":1}]}",
        /* an exclusive tenant on no card (found by fuzz_ledger: read, but never written) */
        "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":-1,\"exclusive\":true,"
        "\"slices\":0,\"memory_mib\":0,\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}",
    };
    const char *empty = "{\"v\":1,\"tenants\":[]}";
    struct gx_tenant *t = NULL;
    size_t n = 99;
    struct gx_why why = {{0}};
    struct gx_buf big;
    char uid[80];

    cr_assert_eq(gx_ledger_node_decode(empty, strlen(empty), &t, &n, &why), GX_OK);
    cr_assert_eq(n, 0);
    free(t);
    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        t = NULL;
        why.text[0] = '\0';
        cr_assert_neq(gx_ledger_node_decode(bad[i], strlen(bad[i]), &t, &n, &why), GX_OK,
                      "accepted %s", bad[i]);
        cr_assert_null(t);
        cr_assert_neq(why.text[0], '\0', "no reason for %s", bad[i]);
    }
    /* uid of GX_UID_MAX characters does not fit */
    memset(uid, 'a', GX_UID_MAX);
    uid[GX_UID_MAX] = '\0';
    gx_buf_init(&big, 1 << 22);
    cr_assert_eq(gx_buf_addf(&big,
                             "{\"v\":1,\"tenants\":[{\"uid\":\"%s\",\"pod\":\"p\",\"card\":0,"
                             "\"exclusive\":false,\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,"
                             "\"state\":\"bound\",\"since_ms\":1}]}",
                             uid),
                 GX_OK);
    cr_assert_eq(gx_ledger_node_decode(big.data, big.len, &t, &n, &why), GX_EPARSE);
    cr_assert_not_null(strstr(why.text, "uid"));
    /* more than 1024 tenants */
    gx_buf_reset(&big);
    cr_assert_eq(gx_buf_adds(&big, "{\"v\":1,\"tenants\":["), GX_OK);
    for (int i = 0; i < 1025; i++) {
        cr_assert_eq(gx_buf_addf(&big, "%s{}", i ? "," : ""), GX_OK);
    }
    cr_assert_eq(gx_buf_adds(&big, "]}"), GX_OK);
    cr_assert_eq(gx_ledger_node_decode(big.data, big.len, &t, &n, &why), GX_EPARSE);
    cr_assert_not_null(strstr(why.text, "1024"));
    gx_buf_release(&big);
}

/* ---- property test ---- */

#define P_NODES 3
#define P_CARDS 4
#define P_UIDS 40

static const char *const P_NODE_NAMES[P_NODES] = {"gpu-a", "gpu-b", "gpu-c"};
static const int P_SLOTS[P_CARDS] = {4, 3, 2, 1};

/* xorshift64* step. */
static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* Uniform-ish integer in [0, n). */
static int
pick(uint64_t *s, int n)
{
    return (int)(rnd(s) % (uint64_t)n);
}

/* Usage of (@n, @card) recomputed from the raw tenant array. */
static void
recount(const struct gx_ledger_node *n, int card, struct gx_card_usage *u)
{
    memset(u, 0, sizeof(*u));
    for (size_t i = 0; n != NULL && i < n->n_tenants; i++) {
        if (n->tenants[i].card != card) {
            continue;
        }
        u->tenants++;
        if (n->tenants[i].exclusive) {
            u->exclusive = true;
        } else {
            u->slices += n->tenants[i].slices;
        }
    }
}

/* What gx_ledger_add must answer for @t[0..k) on node @ni, from the raw tenants. */
static enum gx_err
oracle_add(const struct gx_ledger *l, int ni, const struct gx_tenant *t, size_t k)
{
    const struct gx_ledger_node *here = gx_ledger_node(l, P_NODE_NAMES[ni]);

    for (int j = 0; j < P_NODES; j++) {
        const struct gx_ledger_node *n = gx_ledger_node(l, P_NODE_NAMES[j]);
        size_t have = 0, match = 0;
        for (size_t i = 0; n != NULL && i < n->n_tenants; i++) {
            if (strcmp(n->tenants[i].uid, t[0].uid) != 0) {
                continue;
            }
            have++;
            for (size_t m = 0; m < k; m++) {
                match += n->tenants[i].card == t[m].card &&
                         n->tenants[i].exclusive == t[m].exclusive &&
                         n->tenants[i].slices == t[m].slices &&
                         n->tenants[i].memory_mib == t[m].memory_mib;
            }
        }
        if (have == 0) {
            continue;
        }
        return j == ni && have == k && match == k ? GX_OK : GX_ECONFLICT;
    }
    for (size_t m = 0; m < k; m++) {
        struct gx_card_usage u;
        recount(here, t[m].card, &u);
        if (t[m].exclusive ? u.tenants > 0
                           : u.exclusive || u.slices + t[m].slices > P_SLOTS[t[m].card]) {
            return GX_ECONFLICT;
        }
    }
    return GX_OK;
}

/* Check every invariant by recomputing from the tenants. */
static void
check_invariants(const struct gx_ledger *l, int64_t now, int64_t ttl, bool just_expired, int op)
{
    int64_t slices = 0, tenants = 0, got_slices, got_tenants;

    for (int j = 0; j < P_NODES; j++) {
        const struct gx_ledger_node *n = gx_ledger_node(l, P_NODE_NAMES[j]);
        for (int c = 0; c < P_CARDS; c++) {
            struct gx_card_usage want, got;
            recount(n, c, &want);
            gx_ledger_card_usage(l, P_NODE_NAMES[j], c, &got);
            cr_assert_leq(want.slices, P_SLOTS[c], "op %d: slots exceeded", op);
            cr_assert(!want.exclusive || want.tenants == 1, "op %d: exclusive mixed", op);
            cr_assert_eq(got.slices, want.slices, "op %d", op);
            cr_assert_eq(got.tenants, want.tenants, "op %d", op);
            cr_assert_eq(got.exclusive, want.exclusive, "op %d", op);
        }
        for (size_t i = 0; n != NULL && i < n->n_tenants; i++) {
            const struct gx_tenant *t = &n->tenants[i];
            cr_assert_eq(gx_ledger_find_pod(l, t->uid), n, "op %d: index of %s", op, t->uid);
            for (int k = 0; k < P_NODES; k++) {
                const struct gx_ledger_node *o = gx_ledger_node(l, P_NODE_NAMES[k]);
                for (size_t m = 0; k != j && o != NULL && m < o->n_tenants; m++) {
                    cr_assert_str_neq(o->tenants[m].uid, t->uid, "op %d: uid on two nodes", op);
                }
            }
            if (just_expired && t->state == GX_TENANT_RESERVED) {
                cr_assert_leq(now - t->since_ms, ttl, "op %d: stale reservation", op);
            }
            slices += t->exclusive ? 0 : t->slices;
            tenants++;
        }
    }
    for (int u = 0; u < P_UIDS; u++) {
        char uid[16];
        const struct gx_ledger_node *n;
        bool present = false;
        (void)snprintf(uid, sizeof(uid), "uid-%d", u);
        n = gx_ledger_find_pod(l, uid);
        for (size_t i = 0; n != NULL && i < n->n_tenants; i++) {
            present = present || strcmp(n->tenants[i].uid, uid) == 0;
        }
        cr_assert_eq(n != NULL, present, "op %d: index disagrees for %s", op, uid);
    }
    gx_ledger_totals(l, &got_slices, &got_tenants);
    cr_assert_eq(got_slices, slices, "op %d", op);
    cr_assert_eq(got_tenants, tenants, "op %d", op);
}

/* Encode and decode every node and compare with the live tenants. */
static void
check_codec(const struct gx_ledger *l)
{
    for (int j = 0; j < P_NODES; j++) {
        const struct gx_ledger_node *n = gx_ledger_node(l, P_NODE_NAMES[j]);
        struct gx_tenant *t = NULL;
        struct gx_buf b;
        size_t k = 0;
        struct gx_why why = {{0}};

        if (n == NULL) {
            continue;
        }
        gx_buf_init(&b, 1 << 20);
        cr_assert_eq(gx_ledger_node_encode(n, &b), GX_OK);
        cr_assert_eq(gx_ledger_node_decode(b.data, b.len, &t, &k, &why), GX_OK, "%s", why.text);
        cr_assert_eq(k, n->n_tenants);
        for (size_t i = 0; i < k; i++) {
            cr_assert_str_eq(t[i].uid, n->tenants[i].uid);
            cr_assert_eq(t[i].card, n->tenants[i].card);
            cr_assert_eq(t[i].slices, n->tenants[i].slices);
            cr_assert_eq(t[i].exclusive, n->tenants[i].exclusive);
            cr_assert_eq(t[i].state, n->tenants[i].state);
            cr_assert_eq(t[i].since_ms, n->tenants[i].since_ms);
        }
        free(t);
        gx_buf_release(&b);
    }
}

Test(ledger, random_operations_keep_every_invariant)
{
    struct gx_ledger *l = gx_ledger_new();
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    int64_t now = 1000000, ttl = 60000;
    int adds_ok = 0, adds_conflict = 0, released = 0, expired = 0;

    for (int op = 0; op < 10000; op++) {
        int kind = pick(&seed, 100);
        char uid[16];
        bool just_expired = false;

        now += pick(&seed, 20000);
        (void)snprintf(uid, sizeof(uid), "uid-%d", pick(&seed, P_UIDS));
        if (kind < 50) {
            struct gx_tenant t[2];
            int ni = pick(&seed, P_NODES);
            bool excl = pick(&seed, 4) == 0;
            size_t k = (size_t)pick(&seed, 2) + 1;
            int c0 = pick(&seed, P_CARDS);
            enum gx_err want, got;

            for (size_t m = 0; m < k; m++) {
                int slices = excl ? 0 : pick(&seed, 3) + 1;
                t[m] = mk(uid, (c0 + (int)m) % P_CARDS, excl, slices, (int64_t)1024 * slices, now);
            }
            want = oracle_add(l, ni, t, k);
            got = gx_ledger_add(l, P_NODE_NAMES[ni], t, k, P_SLOTS, P_CARDS);
            cr_assert_eq(got, want, "op %d: add %s returned %d, expected %d", op, uid, got, want);
            adds_ok += got == GX_OK;
            adds_conflict += got == GX_ECONFLICT;
        } else if (kind < 65) {
            enum gx_err rc = gx_ledger_mark_bound(l, uid);
            cr_assert_eq(rc, gx_ledger_find_pod(l, uid) != NULL ? GX_OK : GX_ENOTFOUND);
        } else if (kind < 85) {
            bool had = gx_ledger_find_pod(l, uid) != NULL;
            size_t r = gx_ledger_release(l, uid);
            cr_assert_eq(r > 0, had, "op %d", op);
            cr_assert_null(gx_ledger_find_pod(l, uid));
            released += (int)r;
        } else {
            expired += (int)gx_ledger_expire(l, now, ttl);
            just_expired = true;
        }
        check_invariants(l, now, ttl, just_expired, op);
        if (op % 500 == 0) {
            check_codec(l);
        }
    }
    /* the walk must have exercised both outcomes and every removal path */
    cr_assert_gt(adds_ok, 500);
    cr_assert_gt(adds_conflict, 500);
    cr_assert_gt(released, 100);
    cr_assert_gt(expired, 10);
    gx_ledger_free(l);
}

/* Rebuild a ledger from each node's Lease text, as a restarted replica does. */
static struct gx_ledger *
restart(const struct gx_ledger *l)
{
    struct gx_ledger *fresh = gx_ledger_new();

    for (int ni = 0; ni < P_NODES; ni++) {
        const struct gx_ledger_node *e = gx_ledger_node(l, P_NODE_NAMES[ni]);
        struct gx_tenant *t = NULL;
        struct gx_buf b;
        size_t n = 0;

        if (e == NULL) {
            continue;
        }
        gx_buf_init(&b, 1 << 20);
        cr_assert_eq(gx_ledger_node_encode(e, &b), GX_OK);
        cr_assert_eq(gx_ledger_node_decode(b.data, b.len, &t, &n, NULL), GX_OK);
        cr_assert_eq(gx_ledger_set_node(fresh, P_NODE_NAMES[ni], t, n, "1"), GX_OK);
        free(t);
        gx_buf_release(&b);
    }
    return fresh;
}

/*
 * Admit/bind/release/restart at random while pods come and go; a reconcile
 * (release every tenant whose pod is gone, expire old reservations) must
 * always leave exactly the live, admitted pods, within every card's slots.
 */
Test(ledger, random_walk_with_restarts_converges_after_reconcile)
{
    struct gx_ledger *l = gx_ledger_new();
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    bool live[P_UIDS] = {false};
    int64_t now = 1000000, ttl = 30000;
    int restarts = 0, reconciles = 0;

    for (int op = 0; op < 6000; op++) {
        int kind = pick(&seed, 100), u = pick(&seed, P_UIDS);
        char uid[16];

        now += pick(&seed, 5000);
        (void)snprintf(uid, sizeof(uid), "uid-%d", u);
        if (kind < 45) {
            struct gx_tenant t =
                mk(uid, pick(&seed, P_CARDS), pick(&seed, 5) == 0, pick(&seed, 2) + 1, 512, now);
            if (t.exclusive) {
                t.slices = 0;
            }
            enum gx_err rc;
            live[u] = true;
            rc = gx_ledger_add(l, P_NODE_NAMES[pick(&seed, P_NODES)], &t, 1, P_SLOTS, P_CARDS);
            cr_assert(rc == GX_OK || rc == GX_ECONFLICT, "op %d: add returned %d", op, rc);
        } else if (kind < 60) {
            if (gx_ledger_find_pod(l, uid) != NULL) {
                cr_assert_eq(gx_ledger_mark_bound(l, uid), GX_OK);
            }
        } else if (kind < 75) {
            live[u] = false; /* the pod is deleted; its tenants linger until reconcile */
        } else if (kind < 85) {
            struct gx_ledger *r = restart(l);
            int64_t s0, t0, s1, t1;
            gx_ledger_totals(l, &s0, &t0);
            gx_ledger_totals(r, &s1, &t1);
            cr_assert(s0 == s1 && t0 == t1, "op %d: restart changed the ledger", op);
            gx_ledger_free(l);
            l = r;
            restarts++;
        } else {
            /* reconcile: gone pods released, stale reservations expired */
            for (int i = 0; i < P_UIDS; i++) {
                char id[16];
                (void)snprintf(id, sizeof(id), "uid-%d", i);
                if (!live[i]) {
                    (void)gx_ledger_release(l, id);
                }
            }
            (void)gx_ledger_expire(l, now, ttl);
            reconciles++;
            for (int i = 0; i < P_UIDS; i++) {
                char id[16];
                (void)snprintf(id, sizeof(id), "uid-%d", i);
                if (!live[i]) {
                    cr_assert_null(gx_ledger_find_pod(l, id), "op %d: gone pod %s kept", op, id);
                }
            }
        }
        check_invariants(l, now, ttl, false, op);
    }
    cr_assert_gt(restarts, 100);
    cr_assert_gt(reconciles, 100);
    gx_ledger_free(l);
}

/* Milli and slice tenants share one card through one rule. */
Test(ledger, milli_and_slice_tenants_share_a_card)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant m = mk("m1", 0, false, 1, 0, 1);
    struct gx_card_usage u;

    m.milli = 600;
    cr_assert_eq(add1(l, "g", m), GX_OK);
    /* 600 milli + 1 slice of 4 (250) = 850: a second slice (1100) does not fit */
    cr_assert_eq(add1(l, "g", mk("s1", 0, false, 1, 0, 1)), GX_OK);
    cr_assert_eq(add1(l, "g", mk("s2", 0, false, 1, 0, 1)), GX_ECONFLICT);
    gx_ledger_card_usage(l, "g", 0, &u);
    cr_assert_eq(u.milli, 600, "a milli tenant counts by its milli only");
    cr_assert_eq(u.slices, 1);
    cr_assert_eq(gx_ledger_share_used(&u, 4), 850);
    cr_assert(gx_ledger_share_fits(&u, 4, 0, 150));
    cr_assert_not(gx_ledger_share_fits(&u, 4, 0, 151));
    m = mk("m2", 0, false, 1, 0, 1);
    m.milli = 151;
    cr_assert_eq(add1(l, "g", m), GX_ECONFLICT);
    m.milli = 150;
    cr_assert_eq(add1(l, "g", m), GX_OK);
    gx_ledger_free(l);
}

Test(ledger, slice_rule_is_unchanged_without_milli_tenants)
{
    struct gx_card_usage u = {.slices = 2};

    /* 3 slots: 3 x 333.3 must fill the card exactly, not overflow by rounding */
    cr_assert(gx_ledger_share_fits(&u, 3, 1, 0));
    cr_assert_not(gx_ledger_share_fits(&u, 3, 2, 0));
    u.slices = 63;
    cr_assert(gx_ledger_share_fits(&u, 64, 1, 0));
    cr_assert_not(gx_ledger_share_fits(&u, 64, 2, 0));
    u.exclusive = true;
    u.slices = 0;
    cr_assert_not(gx_ledger_share_fits(&u, 64, 1, 0));
}

/* @m booked alone, encoded as its Lease holds it (the text must contain @needle) and decoded. */
static struct gx_tenant
lease_round_trip(struct gx_tenant m, const char *needle)
{
    struct gx_ledger *l = gx_ledger_new();
    struct gx_tenant *back = NULL, out;
    struct gx_buf b;
    size_t n = 0;
    struct gx_why why = {{0}};

    cr_assert_eq(add1(l, "g", m), GX_OK);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_ledger_node_encode(gx_ledger_node(l, "g"), &b), GX_OK);
    cr_assert(strstr(b.data, needle) != NULL, "%s", b.data);
    cr_assert_eq(gx_ledger_node_decode(b.data, b.len, &back, &n, &why), GX_OK, "%s", why.text);
    cr_assert_eq(n, 1);
    out = back[0];
    free(back);
    gx_buf_release(&b);
    gx_ledger_free(l);
    return out;
}

Test(ledger, lease_codec_keeps_milli_and_reads_old_leases)
{
    struct gx_tenant m = mk("m1", 1, false, 2, 0, 1), *back = NULL;
    const char *old = "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,"
                      "\"exclusive\":false,\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,"
                      "\"state\":\"bound\",\"since_ms\":1}]}";
    const char *excl = "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,"
                       "\"milli\":5,\"exclusive\":true,\"slices\":0,\"memory_mib\":0,"
                       "\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}";
    size_t n = 0;
    struct gx_why why = {{0}};

    m.milli = 220;
    m = lease_round_trip(m, "\"milli\":220");
    cr_assert_eq(m.milli, 220);
    cr_assert_eq(m.slices, 2, "slot equivalent kept for older readers");
    cr_assert_eq(gx_ledger_node_decode(old, strlen(old), &back, &n, &why), GX_OK, "%s", why.text);
    cr_assert_eq(back[0].milli, 0, "a Lease from before milli holds slices");
    cr_assert_eq(back[0].slices, 1);
    cr_assert_eq(back[0].gang, 0, "and no gang");
    free(back);
    back = NULL;
    cr_assert_eq(gx_ledger_node_decode(excl, strlen(excl), &back, &n, &why), GX_EPARSE);
}

/* A gang member's tenant names its gang by id, 16 hex digits; any other pod's names none. */
Test(ledger, lease_codec_keeps_the_gang_id)
{
    struct gx_tenant m = mk("m1", 1, false, 1, 0, 1), *back = NULL;
    const char *bad = "{\"v\":1,\"tenants\":[{\"uid\":\"u\",\"pod\":\"p\",\"card\":0,"
                      "\"exclusive\":false,\"slices\":1,\"memory_mib\":0,\"util_pct\":-1,"
                      "\"state\":\"bound\",\"since_ms\":1,\"gang\":\"12\"}]}";
    size_t n = 0;
    struct gx_why why = {{0}};

    cr_assert_eq(lease_round_trip(m, "\"since_ms\"").gang, 0);
    m.gang = UINT64_C(0xf00dfeed00000001);
    cr_assert_eq(lease_round_trip(m, "\"gang\":\"f00dfeed00000001\"").gang, m.gang);
    cr_assert_eq(gx_ledger_node_decode(bad, strlen(bad), &back, &n, &why), GX_EPARSE);
    cr_assert(strstr(why.text, "gang") != NULL, "%s", why.text);
}

/* Appends each changed node's name to the string @arg (gx_ledger_changed_since). */
static void
collect(void *arg, const char *node)
{
    char *out = arg;

    (void)strncat(out, node, 255 - strlen(out));
    (void)strncat(out, " ", 255 - strlen(out));
}

Test(ledger, changed_since_names_each_change_until_it_forgets)
{
    struct gx_ledger *l = gx_ledger_new();
    char got[256] = "";
    uint64_t v0;

    cr_assert_eq(add1(l, "n1", mk("a", 0, false, 1, 0, 1000)), GX_OK);
    v0 = gx_ledger_version(l);
    cr_assert_eq(add1(l, "n2", mk("b", 0, false, 1, 0, 1000)), GX_OK); /* created, then added */
    cr_assert_eq(gx_ledger_release(l, "a"), 1);
    cr_assert(gx_ledger_changed_since(l, v0, collect, got));
    cr_assert_str_eq(got, "n2 n2 n1 ");
    got[0] = '\0';
    cr_assert(gx_ledger_changed_since(l, gx_ledger_version(l), collect, got));
    cr_assert_str_eq(got, "");
    /* more changes than it remembers: the caller must take everything as changed */
    for (int i = 0; i < GX_LEDGER_CHANGES; i++) {
        cr_assert_eq(add1(l, "n3", mk("c", 0, false, 1, 0, 1000)), GX_OK);
        cr_assert_eq(gx_ledger_release(l, "c"), 1);
    }
    cr_assert_not(gx_ledger_changed_since(l, v0, collect, got));
    cr_assert_str_eq(got, "");
    cr_assert(gx_ledger_changed_since(l, gx_ledger_version(l) - GX_LEDGER_CHANGES, collect, got));
    cr_assert_not(gx_ledger_changed_since(l, gx_ledger_version(l) + 1, collect, got));
    gx_ledger_free(l);
}
