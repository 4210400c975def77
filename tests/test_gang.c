/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gang.c - tentative bookings of gang members (gang.h) on two nodes of
 * 2 cards x 4 slots built from the score tests' world, the monotonic time
 * passed in: which node a member's filter keeps, how the entries of the
 * other members and groups turn verdicts, what starts a new pass, what
 * expires, and that the bind books exactly the planned cards.
 */
#include "gx_scoreworld.h"

#include "admit.h"
#include "gang.h"
#include "snapshot.h"

GX_SUITE(gang);

#define T0 INT64_C(5000) /* the monotonic clock the entries run on */
#define TTL INT64_C(1000)

/* Nodes gpu-a and gpu-b (the worlds' nodes) in one snapshot over one ledger. */
struct two {
    struct world a, b;
    struct gx_node nodes[2];
    struct gx_snapshot snap;
    struct gx_gang *g;
};

static struct two t;

static void
two_init_of(int cards)
{
    world_init(&t.a, "gpu-a", cards);
    world_init(&t.b, "gpu-b", cards);
    gx_ledger_free(t.b.ledger); /* one ledger for both nodes: book() on either world */
    t.b.ledger = t.a.ledger;
    t.nodes[0] = t.a.node;
    t.nodes[1] = t.b.node;
    t.snap.nodes = t.nodes;
    t.snap.n_nodes = 2;
    cr_assert_eq(gx_snapshot_index(&t.snap), GX_OK);
    t.a.ctx.snap = &t.snap;
    t.g = gx_gang_new();
    cr_assert_not_null(t.g);
}

static void
two_init(void)
{
    two_init_of(2);
}

static void
two_free(void)
{
    gx_gang_free(t.g);
    gx_nameidx_release(&t.snap.names);
    t.b.ledger = NULL;
    world_free(&t.b);
    world_free(&t.a);
}

TestSuite(gang_two, .init = two_init, .fini = two_free);

/* gpu-a keeps exactly one free share (card 0), gpu-b is empty. */
static void
one_share_left(void)
{
    book(&t.a, "other-0", 0, false, 3, 0);
    book(&t.a, "other-1", 1, false, 4, 0);
}

/* Member @uid of PodGroup ml/@group ("" for a pod of no group). */
static struct gx_pod
member(const char *uid, const char *group)
{
    return (struct gx_pod){.name = uid, .namespace = "ml", .uid = uid, .pod_group = group};
}

/* The verdict of @p (@r) on both nodes with the entries booked, then gx_gang_pin: its index. */
static size_t
filter(const struct gx_pod *p, struct gx_podreq r, int64_t now, struct gx_vshort v[2])
{
    for (size_t i = 0; i < 2; i++) {
        struct gx_verdict plain;

        gx_score_node(&t.a.ctx, &r, &t.nodes[i], &plain);
        v[i] = (struct gx_vshort){plain.keep, plain.reason, plain.score, plain.score_exact};
        (void)gx_gang_verdict(t.g, &t.a.ctx, p, &r, t.nodes[i].name, now, &v[i]);
    }
    return gx_gang_pin(v, 2, 2);
}

/* A member's whole filter: begin, decide, pin, record; the node it kept (NULL: none). */
static const char *
member_filter(const char *uid, const char *group, struct gx_podreq r, int64_t now)
{
    struct gx_pod p = member(uid, group);
    struct gx_vshort v[2];
    struct gx_why why = {{0}};
    char key[GX_GANG_KEY_MAX];
    size_t at;

    cr_assert(gx_gang_key(&p, key, sizeof(key)));
    (void)gx_gang_begin(t.g, key, uid, now);
    at = filter(&p, r, now, v);
    if (at == 2) {
        return NULL;
    }
    cr_assert_eq(gx_gang_put(t.g, &t.a.ctx, key, &p, &r, t.nodes[at].name, TTL, now, &why), GX_OK,
                 "%s", why.text);
    return t.nodes[at].name;
}

Test(gang, key_is_namespace_and_pod_group_of_members_only)
{
    struct gx_pod p = member("u1", "trainer");
    char key[GX_GANG_KEY_MAX], tiny[8];

    cr_assert(gx_gang_key(&p, key, sizeof(key)));
    cr_assert_str_eq(key, "ml/trainer");
    cr_assert_not(gx_gang_key(&p, tiny, sizeof(tiny)), "a key that does not fit is none");
    cr_assert_str_eq(tiny, "");
    p.pod_group = "";
    cr_assert_not(gx_gang_key(&p, key, sizeof(key)));
    p.pod_group = NULL;
    cr_assert_not(gx_gang_key(&p, key, sizeof(key)));
}

Test(gang, pin_keeps_the_best_first_node_and_rejects_the_other_feasible_ones)
{
    struct gx_vshort v[4] = {{true, GX_REASON_NONE, 5, 5.0},
                             {true, GX_REASON_NONE, 8, 8.0},
                             {false, GX_REASON_NO_SLOT, 0, 0.0},
                             {true, GX_REASON_NONE, 8, 8.0}};
    struct gx_vshort none[2] = {{false, GX_REASON_NO_SLOT, 0, 0.0},
                                {false, GX_REASON_BUSY, 0, 0.0}};

    struct gx_vshort held[3] = {{true, GX_REASON_NONE, 9, 9.0},
                                {true, GX_REASON_NONE, 2, 2.0},
                                {false, GX_REASON_NO_SLOT, 0, 0.0}};

    cr_assert_eq(gx_gang_pin(held, 3, 1), 1, "the node the pod holds a booking on, when kept");
    cr_assert(!held[0].keep && held[0].reason == GX_REASON_GANG_PINNED);
    cr_assert_eq(gx_gang_pin(held, 3, 2), 1, "not kept: the best of the others");
    cr_assert_eq(gx_gang_pin(v, 4, 4), 1, "highest score, first of a tie");
    cr_assert(v[1].keep);
    cr_assert(!v[0].keep && v[0].reason == GX_REASON_GANG_PINNED);
    cr_assert(!v[3].keep && v[3].reason == GX_REASON_GANG_PINNED);
    cr_assert_eq(v[2].reason, GX_REASON_NO_SLOT, "a rejection keeps its own reason");
    cr_assert_not(gx_reason_unresolvable(GX_REASON_GANG_PINNED), "the pod fits there");
    cr_assert_eq(gx_gang_pin(none, 2, 0), 2, "nothing kept: nothing pinned");
    cr_assert_eq(none[1].reason, GX_REASON_BUSY);
}

/* The double booking: one card has exactly one free share, another node has room. */
Test(gang_two, second_member_does_not_get_the_share_the_first_one_booked)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    const char *n1, *n2;

    one_share_left();
    n1 = member_filter("m1", "trainer", one, T0);
    cr_assert_str_eq(n1, "gpu-a", "binpack: the last free share first");
    n2 = member_filter("m2", "trainer", one, T0 + 1);
    cr_assert_not_null(n2, "gpu-b has room");
    cr_assert_str_eq(n2, "gpu-b", "m1's entry holds gpu-a's last share");
    cr_assert_eq(gx_gang_count(t.g, T0 + 1), 2);
}

Test(gang_two, entries_count_for_outsiders_and_other_groups_but_not_for_their_own_pod)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_pod outsider = member("x", ""), other = member("o1", "other"), m1;
    struct gx_vshort v;

    one_share_left();
    cr_assert_str_eq(member_filter("m1", "trainer", one, T0), "gpu-a");
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0, &v), GX_GANG_TURNED,
                 "an outsider would take the card the gang binds to next");
    cr_assert(!v.keep && v.reason == GX_REASON_NO_SLOT);
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &other, &one, "gpu-a", T0, &v), GX_GANG_TURNED);
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-b", T0, &v), GX_GANG_NONE,
                 "no entry on gpu-b");
    m1 = member("m1", "trainer");
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &m1, &one, "gpu-a", T0, &v), GX_GANG_NONE,
                 "its own entry is what its bind takes");
}

Test(gang_two, a_node_is_seen_as_held_from_the_entry_made_after_the_last_call)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_pod outsider = member("x", "");
    struct gx_vshort v;

    one_share_left();
    cr_assert_str_eq(member_filter("m1", "trainer", one, T0), "gpu-a");
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-b", T0, &v), GX_GANG_NONE,
                 "no entry on gpu-b yet");
    cr_assert_str_eq(member_filter("m2", "trainer", one, T0 + 1), "gpu-b");
    cr_assert_neq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-b", T0 + 1, &v),
                  GX_GANG_NONE, "m2's entry on gpu-b counts at once");
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0 + TTL + 1, &v),
                 GX_GANG_NONE, "m1's expired entry is dropped");
    cr_assert_neq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-b", T0 + TTL + 1, &v),
                  GX_GANG_NONE, "m2's, made later, still counts after the drop");
}

Test(gang_two, a_gang_that_fits_only_packed_is_packed)
{
    struct gx_podreq two = req_shared(2, 0, -1);
    const char *at[4];

    /* 4 cards x 4 slots, 8 taken, in halves: 4 members of 2 fit only on the free halves */
    book(&t.a, "o0", 0, false, 2, 0);
    book(&t.a, "o1", 1, false, 2, 0);
    book(&t.b, "o2", 0, false, 2, 0);
    book(&t.b, "o3", 1, false, 2, 0);
    for (int i = 0; i < 4; i++) {
        char uid[8];
        (void)snprintf(uid, sizeof(uid), "m%d", i);
        at[i] = member_filter(uid, "packed", two, T0 + i);
        cr_assert_not_null(at[i], "member %d fits on what the others left", i);
    }
    cr_assert_null(member_filter("m4", "packed", two, T0 + 4), "the fifth does not");
    cr_assert_eq(gx_gang_count(t.g, T0 + 4), 4, "a member that fits nowhere records nothing");
}

Test(gang_two, a_member_filtered_again_starts_a_new_pass_of_its_group_only)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    char key[GX_GANG_KEY_MAX];
    struct gx_pod m1 = member("m1", "trainer");

    cr_assert_not_null(member_filter("m1", "trainer", one, T0));
    cr_assert_not_null(member_filter("m2", "trainer", one, T0));
    cr_assert_not_null(member_filter("o1", "other", one, T0));
    cr_assert(gx_gang_key(&m1, key, sizeof(key)));
    cr_assert_eq(gx_gang_begin(t.g, key, "m3", T0), 0, "a member without an entry: same pass");
    cr_assert_eq(gx_gang_count(t.g, T0), 3);
    cr_assert_eq(gx_gang_begin(t.g, key, "m1", T0), 2, "m1 again: the pass starts over");
    cr_assert_eq(gx_gang_count(t.g, T0), 1, "the other group keeps its entry");
}

/*
 * A retry after backoff may try the members in another order, with some of
 * the last pass's entries expired and some not (e2e_gang_nofit in CI): m1,
 * still holding its old entry, came after m2 in the new pass and dropped the
 * new pass's entries, so m1 and m2 were both kept on node A. A pause since
 * the group's last entry starts the new pass instead, once.
 */
Test(gang_two, a_retry_in_another_order_keeps_one_member_per_node)
{
    struct gx_podreq whole = req_excl(2); /* a whole node each: two fit */
    int64_t retry = T0 + TTL + 1;         /* m0's entry expired, m1's not */
    const char *n2, *n0, *n1;

    cr_assert_not_null(member_filter("m0", "big", whole, T0));
    cr_assert_not_null(member_filter("m1", "big", whole, T0 + 2));
    cr_assert_null(member_filter("m2", "big", whole, T0 + 3), "two nodes, the third member fails");
    cr_assert_gt(retry - (T0 + 2), GX_GANG_PASS_GAP_MS);
    n2 = member_filter("m2", "big", whole, retry);
    n0 = member_filter("m0", "big", whole, retry + 1);
    n1 = member_filter("m1", "big", whole, retry + 2);
    cr_assert_not_null(n2);
    cr_assert_not_null(n0);
    cr_assert_null(n1, "no third node: m1 must not take m2's or m0's");
    cr_assert_str_neq(n2, n0);
    cr_assert_eq(gx_gang_count(t.g, retry + 2), 2);
}

Test(gang_two, a_group_counts_the_members_planned_and_knows_them_after_a_new_pass)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    char key[GX_GANG_KEY_MAX];

    cr_assert_not_null(member_filter("m1", "trainer", one, T0));
    cr_assert_not_null(member_filter("m2", "trainer", one, T0 + 1));
    cr_assert_not_null(member_filter("o1", "other", one, T0 + 1));
    cr_assert_eq(gx_gang_group_of(t.g, "m2", T0 + 2, key, sizeof(key)), 2);
    cr_assert_str_eq(key, "ml/trainer");
    cr_assert_eq(gx_gang_group_of(t.g, "x", T0 + 2, key, sizeof(key)), 0);
    cr_assert_str_eq(key, "");
    /* m1 filtered again: a new pass, m2's entry gone, but m2 is still known as a member */
    cr_assert_not_null(member_filter("m1", "trainer", one, T0 + 3));
    cr_assert_eq(gx_gang_group_of(t.g, "m1", T0 + 3, key, sizeof(key)), 1);
    cr_assert_eq(gx_gang_group_of(t.g, "m2", T0 + 3, key, sizeof(key)), 0, "no entry");
    cr_assert(gx_gang_group_key(t.g, "m2", T0 + 3, key, sizeof(key)));
    cr_assert_str_eq(key, "ml/trainer");
    cr_assert_not(gx_gang_group_key(t.g, "x", T0 + 3, key, sizeof(key)));
    cr_assert_not(gx_gang_group_key(t.g, "m2", T0 + 1 + TTL + 1, key, sizeof(key)), "forgotten");
    cr_assert_eq(gx_gang_group_of(t.g, "m1", T0 + 3 + TTL + 1, key, sizeof(key)), 0, "expired");
}

Test(gang, a_barrier_goes_when_every_member_reserved_and_fails_once)
{
    struct gx_gang_barrier b = {.expected = 3};

    cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_OPEN);
    cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_OPEN);
    cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_GO);
    cr_assert_not(gx_barrier_fail(&b), "a member failing after the Bindings went changes nothing");
    cr_assert_eq(b.state, GX_BARRIER_GO);

    b = (struct gx_gang_barrier){.expected = 3};
    cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_OPEN);
    cr_assert(gx_barrier_fail(&b), "a member failing while it is open fails it");
    cr_assert_not(gx_barrier_fail(&b), "once");
    cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_FAILED, "a late reservation fails too");
    cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_FAILED);
}

Test(gang_two, a_new_barrier_waits_for_the_group_and_the_gang_that_just_failed)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_gang_barrier failed = {0}, b = {0};

    cr_assert_not_null(member_filter("m1", "trainer", one, T0));
    cr_assert_not_null(member_filter("m2", "trainer", one, T0 + 1));
    cr_assert_not_null(member_filter("o1", "other", one, T0 + 1));
    cr_assert_eq(gx_barrier_plan(&failed, t.g, "ml/trainer", "m1", NULL, T0 + 2), GX_OK);
    cr_assert_eq(failed.n, 2, "m1 and m2, once each; not o1");
    cr_assert(gx_barrier_member(&failed, "m2"));
    cr_assert_not(gx_barrier_member(&failed, "o1"));
    cr_assert_eq(gx_barrier_arrive(&failed, "m1"), GX_OK);
    cr_assert(gx_barrier_expects(&failed, "m2"));
    cr_assert_not(gx_barrier_expects(&failed, "m1"), "arrived");
    cr_assert_eq(gx_barrier_absent(&failed), 1);
    cr_assert(gx_barrier_fail(&failed));
    cr_assert(gx_barrier_expects(&failed, "m2"), "a failed barrier still knows its late members");
    cr_assert_eq(gx_gang_drop_members(t.g, &failed), 2, "the failed gang's entries go");
    cr_assert_eq(gx_gang_count(t.g, T0 + 2), 1, "o1's stays");

    /* the retry plans m3 alone: its barrier waits for the failed gang's members too */
    cr_assert_not_null(member_filter("m3", "trainer", one, T0 + 3));
    cr_assert_eq(gx_barrier_plan(&b, t.g, "ml/trainer", "m2", &failed, T0 + 4), GX_OK);
    cr_assert_eq(b.n, 3, "m3, m1, m2");
    cr_assert_eq(b.expected, 3);
    cr_assert_eq(gx_barrier_arrive(&b, "m4"), GX_OK, "a member planned in no barrier joins");
    cr_assert_eq(b.expected, 4);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_OPEN);
    }
    cr_assert_eq(gx_barrier_reserved(&b), GX_BARRIER_GO);
    gx_barrier_release(&b);
    gx_barrier_release(&failed);
    cr_assert_eq(failed.n, 0);
}

Test(gang_two, entries_expire_after_their_ttl)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_pod outsider = member("x", "");
    struct gx_tenant planned[GX_MAX_PICK];
    struct gx_vshort v;

    one_share_left();
    cr_assert_str_eq(member_filter("m1", "trainer", one, T0), "gpu-a");
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0 + TTL, &v),
                 GX_GANG_TURNED, "held until its TTL");
    cr_assert_eq(gx_gang_planned(t.g, "m1", "gpu-a", T0 + TTL + 1, planned), 0);
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0 + TTL + 1, &v),
                 GX_GANG_NONE, "gone after it");
    cr_assert_eq(gx_gang_count(t.g, T0), 0, "and dropped on the way");
    cr_assert_not(gx_gang_any(t.g));
}

/* Bind 1-slice member @uid to gpu-a as bind.c does: the cards of its entry, booked in the ledger.
 */
static enum gx_err
bind_planned(const char *uid, struct gx_admit_plan *plan, struct gx_why *why)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_tenant planned[GX_MAX_PICK];
    struct gx_admit_pod ap = {uid, "ml", uid, &one};
    size_t n = gx_gang_planned(t.g, uid, "gpu-a", T0, planned);

    cr_assert_eq(n, 1, "one card planned for %s on gpu-a", uid);
    return gx_admit_reserve_as(&t.a.ctx, t.a.ledger, "gpu-a", &ap, planned, n, plan, why);
}

Test(gang_two, bind_books_exactly_the_planned_cards_and_the_entry_goes_with_it)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_tenant planned[GX_MAX_PICK];
    struct gx_admit_plan plan;
    struct gx_why why = {{0}};
    struct gx_pod outsider = member("x", "");
    struct gx_vshort v;

    /* m1 takes card 0's last share; m2 is planned on card 1 of the same node */
    book(&t.a, "other-0", 0, false, 3, 0);
    book(&t.a, "other-1", 1, false, 3, 0);
    book(&t.b, "full-0", 0, false, 4, 0);
    book(&t.b, "full-1", 1, false, 4, 0);
    cr_assert_str_eq(member_filter("m1", "trainer", one, T0), "gpu-a");
    cr_assert_str_eq(member_filter("m2", "trainer", one, T0), "gpu-a");
    cr_assert_eq(gx_gang_planned(t.g, "m2", "gpu-b", T0, planned), 0, "not bound there");
    /* m2 binds first: the plain planner would take card 0's last share, the entry card 1 */
    cr_assert_eq(bind_planned("m2", &plan, &why), GX_OK, "%s", why.text);
    cr_assert(plan.changed);
    cr_assert_eq(plan.n_cards, 1);
    cr_assert_eq(plan.cards[0], 1, "card 0 was m1's");
    cr_assert_eq(gx_ledger_booking(t.a.ledger, "m2"), NOW, "stamped at the bind");
    /* the ledger books m2 now: its entry adds nothing (the bind drops it), m1's still counts */
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0, &v), GX_GANG_TURNED);
    cr_assert_eq(gx_gang_count(t.g, T0), 2);
    cr_assert(gx_gang_drop(t.g, "m2"));
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0, &v), GX_GANG_TURNED);
    cr_assert(gx_gang_drop(t.g, "m1"));
    cr_assert_not(gx_gang_drop(t.g, "m1"));
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0, &v), GX_GANG_NONE);
}

Test(gang_two, a_member_still_booked_from_a_failed_bind_is_in_the_pass_without_cards)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_tenant planned[GX_MAX_PICK];
    struct gx_pod outsider = member("x", "");
    char key[GX_GANG_KEY_MAX];
    struct gx_vshort v;

    book(&t.a, "other-0", 0, false, 3, 0);
    book(&t.a, "m1", 0, false, 1, 0); /* its failed bind's booking, release not written yet */
    book(&t.a, "other-1", 1, false, 2, 0);
    book(&t.b, "full-0", 0, false, 4, 0);
    book(&t.b, "full-1", 1, false, 4, 0);
    cr_assert_str_eq(member_filter("m1", "trainer", one, T0), "gpu-a");
    cr_assert_not_null(member_filter("m2", "trainer", one, T0 + 1));
    cr_assert_eq(gx_gang_group_of(t.g, "m1", T0 + 2, key, sizeof(key)), 2,
                 "m1 is a member of the pass");
    cr_assert_eq(gx_gang_planned(t.g, "m1", "gpu-a", T0 + 2, planned), 0,
                 "its own booking holds its cards: the entry books none");
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0 + 2, &v),
                 GX_GANG_DECIDED, "m2's entry counts");
    cr_assert(v.keep, "card 1's last share is left for it");
}

Test(gang_two, a_planned_card_taken_meanwhile_is_a_conflict)
{
    struct gx_tenant planned[GX_MAX_PICK];
    struct gx_admit_plan plan;
    struct gx_why why = {{0}};

    one_share_left();
    cr_assert_str_eq(member_filter("m1", "trainer", req_shared(1, 0, -1), T0), "gpu-a");
    cr_assert_eq(gx_gang_planned(t.g, "m1", "gpu-a", T0, planned), 1);
    book(&t.a, "late", planned[0].card, false, 1, 0);
    cr_assert_eq(bind_planned("m1", &plan, &why), GX_ECONFLICT);
    cr_assert_not_null(strstr(why.text, "no GPU time slot available"), "%s", why.text);
    cr_assert_null(gx_ledger_find_pod(t.a.ledger, "m1"), "nothing booked");
}

/* Two nodes of 8 cards of 64 slots: room for more entries than a store keeps. */
static void
big_init(void)
{
    two_init_of(8);
    t.a.cfg.default_slots = 64;
}

TestSuite(gang_big, .init = big_init, .fini = two_free);

Test(gang_big, a_full_store_records_no_more_and_a_pod_asking_no_gpu_records_nothing)
{
    struct gx_podreq none = req_none(), one = req_shared(1, 0, -1);
    struct gx_why why = {{0}};
    struct gx_pod p;
    char uid[16];

    p = member("cpu", "big");
    cr_assert_eq(gx_gang_put(t.g, &t.a.ctx, "ml/big", &p, &none, "gpu-a", TTL, T0, &why), GX_OK);
    cr_assert_eq(gx_gang_count(t.g, T0), 0);
    for (int i = 0; i < GX_GANG_MAX; i++) {
        (void)snprintf(uid, sizeof(uid), "m%d", i);
        p = member(uid, "big");
        cr_assert_eq(gx_gang_put(t.g, &t.a.ctx, "ml/big", &p, &one, i % 2 ? "gpu-a" : "gpu-b", TTL,
                                 T0, &why),
                     GX_OK, "entry %d: %s", i, why.text);
    }
    p = member("late", "big");
    cr_assert_eq(gx_gang_put(t.g, &t.a.ctx, "ml/big", &p, &one, "gpu-a", TTL, T0, &why),
                 GX_ETOOBIG);
    cr_assert_eq(gx_gang_count(t.g, T0), GX_GANG_MAX);
    cr_assert_eq(gx_gang_begin(t.g, "ml/big", "m0", T0), GX_GANG_MAX, "a new pass drops them all");
}

/* @r as gx_podreq_parse makes it for a member of ml/@group with the two gang options. */
static struct gx_podreq
of_gang(struct gx_podreq r, const char *group, bool apart, bool same_numa)
{
    struct gx_pod p = member("any", group);
    char key[GX_GANG_KEY_MAX];

    cr_assert(gx_gang_key(&p, key, sizeof(key)));
    r.gang = gx_hash(key, strlen(key));
    r.apart = apart;
    r.same_numa = same_numa;
    return r;
}

/* Where member @uid's entry sits: "node/card", "" without one. */
static const char *
entry_at(const char *uid, char *buf, size_t cap)
{
    struct gx_tenant planned[GX_MAX_PICK];

    buf[0] = '\0';
    for (size_t i = 0; i < 2; i++) {
        if (gx_gang_planned(t.g, uid, t.nodes[i].name, T0 + 9, planned) == 1) {
            (void)snprintf(buf, cap, "%s/%d", t.nodes[i].name, planned[0].card);
        }
    }
    return buf;
}

/* Three 1-slice members <group>0..2 of ml/@group filtered in turn; where each entry sits into @at.
 */
static void
place_three(const char *group, bool apart, char at[3][32])
{
    struct gx_podreq r = of_gang(req_shared(1, 0, -1), group, apart, false);
    char uid[32];

    for (int i = 0; i < 3; i++) {
        (void)snprintf(uid, sizeof(uid), "%s%d", group, i);
        cr_assert_not_null(member_filter(uid, group, r, T0 + i), "%s fits", uid);
        (void)entry_at(uid, at[i], sizeof(at[i]));
    }
}

Test(gang_two, members_pack_onto_one_card_unless_they_ask_for_distinct_cards)
{
    char at[3][32];

    place_three("pack", false, at);
    cr_assert_str_eq(at[0], "gpu-a/0", "binpack");
    cr_assert_str_eq(at[1], at[0], "without the option the shares pack onto one card");
    cr_assert_str_eq(at[2], at[0]);
    place_three("apart", true, at);
    cr_assert_str_neq(at[0], at[1], "distinct cards: %s %s", at[0], at[1]);
    cr_assert_str_neq(at[0], at[2]);
    cr_assert_str_neq(at[1], at[2]);
}

Test(gang_two, a_bound_members_card_is_refused_and_the_reason_says_why)
{
    struct gx_podreq apart = of_gang(req_shared(1, 0, -1), "trainer", true, false);
    struct gx_podreq other = of_gang(req_shared(1, 0, -1), "other", true, false);
    struct gx_verdict v;
    char at[32];

    /* bound members of ml/trainer on card 0 of both nodes and card 1 of gpu-b */
    book_gang(&t.a, "b0", 0, false, 1, 0, apart.gang);
    book_gang(&t.b, "b1", 0, false, 1, 0, apart.gang);
    book_gang(&t.b, "b2", 1, false, 1, 0, apart.gang);
    cr_assert_str_eq(member_filter("m3", "trainer", apart, T0), "gpu-a");
    cr_assert_str_eq(entry_at("m3", at, sizeof(at)), "gpu-a/1", "the one card no member holds");
    gx_score_node(&t.a.ctx, &apart, &t.nodes[1], &v);
    cr_assert(!v.keep);
    cr_assert_eq(v.reason, GX_REASON_GANG_APART, "%s", gx_reason_text(v.reason));
    cr_assert_str_eq(gx_reason_text(v.reason), "GPU held by another member of the gang");
    cr_assert(gx_reason_lifts(v.reason), "a member that goes lets it in: requeued on a release");
    cr_assert_null(member_filter("m4", "trainer", apart, T0 + 1), "m3's entry holds the last one");
    gx_score_node(&t.a.ctx, &other, &t.nodes[1], &v);
    cr_assert(v.keep, "another gang's members may share those cards");
    apart.apart = false;
    gx_score_node(&t.a.ctx, &apart, &t.nodes[1], &v);
    cr_assert(v.keep, "and so may the gang's own without the option");
}

/* Two nodes of 4 cards; gpu-a's cards 0-1 on NUMA node 0, 2-3 on NUMA node 1. */
static void
four_init(void)
{
    two_init_of(4);
    for (int i = 0; i < 4; i++) {
        t.a.cards[i].numa = i / 2;
    }
}

TestSuite(gang_four, .init = four_init, .fini = two_free);

Test(gang_four, same_numa_keeps_a_nodes_members_on_the_numa_node_of_the_first)
{
    struct gx_podreq numa = of_gang(req_shared(1, 0, -1), "ddp", true, true);
    struct gx_podreq whole = of_gang(req_excl(1), "ddp", false, true);
    struct gx_verdict v;
    char at[32];

    book_gang(&t.a, "b0", 2, false, 1, 0, numa.gang); /* a bound member on NUMA node 1 */
    cr_assert_str_eq(member_filter("m1", "ddp", numa, T0), "gpu-a");
    cr_assert_str_eq(entry_at("m1", at, sizeof(at)), "gpu-a/3", "card 0 is on the other NUMA node");
    gx_score_node(&t.a.ctx, &whole, &t.nodes[0], &v);
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 3, "a whole card too: the free one of NUMA node 1");
    book(&t.a, "full", 3, false, 4, 0);
    gx_score_node(&t.a.ctx, &numa, &t.nodes[0], &v);
    cr_assert(!v.keep, "NUMA node 1 has no card left for the gang");
    cr_assert_eq(v.reason, GX_REASON_GANG_NUMA, "%s", gx_reason_text(v.reason));
    gx_score_node(&t.a.ctx, &numa, &t.nodes[1], &v);
    cr_assert(v.keep, "gpu-b holds no member: any card");
    numa.same_numa = false;
    gx_score_node(&t.a.ctx, &numa, &t.nodes[0], &v);
    cr_assert(v.keep);
    cr_assert_eq(v.cards[0], 0, "without the option: NUMA node 0's cards");
}

Test(gang_big, with_many_entries_a_node_is_seen_as_held_from_the_entry_made_after_the_last_call)
{
    struct gx_podreq one = req_shared(1, 0, -1);
    struct gx_pod p, outsider = member("x", "");
    struct gx_why why = {{0}};
    struct gx_vshort v;
    char uid[16];

    for (int i = 0; i < 12; i++) { /* more than are walked: the nodes' bits answer */
        (void)snprintf(uid, sizeof(uid), "m%d", i);
        p = member(uid, "big");
        cr_assert_eq(gx_gang_put(t.g, &t.a.ctx, "ml/big", &p, &one, "gpu-a", TTL, T0, &why), GX_OK,
                     "%s", why.text);
    }
    cr_assert_neq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-a", T0, &v), GX_GANG_NONE);
    cr_assert_eq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-b", T0, &v), GX_GANG_NONE,
                 "no entry on gpu-b");
    p = member("m12", "big");
    cr_assert_eq(gx_gang_put(t.g, &t.a.ctx, "ml/big", &p, &one, "gpu-b", TTL, T0, &why), GX_OK);
    cr_assert_neq(gx_gang_verdict(t.g, &t.a.ctx, &outsider, &one, "gpu-b", T0, &v), GX_GANG_NONE,
                  "the new entry on gpu-b counts at once");
}
