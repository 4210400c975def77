/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_holds.c - the shares held for preemptors (holds.h) on two hand-built
 * nodes of 2 cards x 4 slots, with the monotonic time passed in: what
 * records, activates and ends a hold, and how an active one turns another
 * pod's verdict.
 */
#include "gx_test.h"

#include "holds.h"

#include <string.h>

GX_SUITE(holds);

#define NOW INT64_C(1700000000000) /* the wall clock of the decisions (metric ages) */
#define T0 INT64_C(5000)           /* the monotonic clock the holds run on */
#define TTL INT64_C(1000)

struct world {
    struct gx_config cfg;
    struct gx_snapshot snap;
    struct gx_node nodes[2];
    struct gx_card cards[2][2];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
    struct gx_holds *hs;
};

/* One world per test (criterion runs each in its own process): set up by .init. */
static struct world w;

static const struct gx_podreq shared2 = {.kind = GX_REQ_SHARED, .slices = 2, .util_pct = -1};
static const struct gx_podreq shared4 = {.kind = GX_REQ_SHARED, .slices = 4, .util_pct = -1};

static void
world_init(void)
{
    static const char *const names[] = {"gpu-a", "gpu-b"};

    memset(&w, 0, sizeof(w));
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        w.cfg.max_age_s[s] = 60;
    }
    w.cfg.max_temperature_c = 85;
    w.cfg.max_utilization_pct = 90;
    w.cfg.default_slots = 4;
    w.cfg.oversubscription = 1.0;
    w.cfg.memory_reserve_mib = 512;
    w.cfg.util_ceiling_pct = 100;
    w.cfg.bind_deadline_ms = 4000;
    w.cfg.reservation_ttl_s = 300;
    w.cfg.w_util = w.cfg.w_fit = 20;
    for (int n = 0; n < 2; n++) {
        struct gx_node *node = &w.nodes[n];
        node->name = names[n];
        node->product = "NVIDIA-L4";
        node->gpu_count = 2;
        node->gpu_memory_mib = 24564;
        node->replicas = 1;
        node->ready = true;
        node->cards = w.cards[n];
        node->n_cards = 2;
        for (int c = 0; c < 2; c++) {
            struct gx_card *k = &w.cards[n][c];
            k->index = c;
            k->numa = -1;
            for (int s = 0; s < GX_SIG_COUNT; s++) {
                k->at_ms[s] = NOW - 1000;
            }
            k->v[GX_SIG_MEM_FREE] = 24564;
        }
    }
    w.snap.nodes = w.nodes;
    w.snap.n_nodes = 2;
    cr_assert_eq(gx_snapshot_index(&w.snap), GX_OK);
    w.ledger = gx_ledger_new();
    cr_assert_not_null(w.ledger);
    w.ctx.cfg = &w.cfg;
    w.ctx.snap = &w.snap;
    w.ctx.ledger = w.ledger;
    w.ctx.now_ms = NOW;
    w.hs = gx_holds_new();
    cr_assert_not_null(w.hs);
}

static void
world_free(void)
{
    gx_holds_free(w.hs);
    gx_ledger_free(w.ledger);
    gx_nameidx_release(&w.snap.names);
}

/* Book @uid with @slices on card @card of @node in the ledger (a bound shared tenant). */
static void
book(const char *node, const char *uid, int card, int slices)
{
    static const int slots[] = {4, 4};
    struct gx_tenant t;

    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "ml/%s", uid);
    t.card = card;
    t.slices = slices;
    t.util_pct = -1;
    t.state = GX_TENANT_BOUND;
    t.since_ms = NOW - 1000;
    cr_assert_eq(gx_ledger_add(w.ledger, node, &t, 1, slots, 2), GX_OK);
}

/* A pending pod of namespace ml named and uid'd @uid. */
static struct gx_pod
pod(const char *uid)
{
    return (struct gx_pod){.name = uid, .namespace = "ml", .uid = uid};
}

/* Hold @req for preemptor @uid on @node, naming victim @victim, answered at @now. */
static void
put(const char *uid, const struct gx_podreq *req, const char *node, const char *victim, int64_t now)
{
    struct gx_preempt_choice c;
    struct gx_pod p = pod(uid);

    memset(&c, 0, sizeof(c));
    c.keep = true;
    (void)snprintf(c.victims[0], sizeof(c.victims[0]), "%s", victim);
    c.n_victims = 1;
    cr_assert_eq(gx_holds_put(w.hs, &p, req, node, &c, TTL, now), GX_OK);
}

/* The watch shows victim @uid marked by the scheduler at @now; true when a hold activated. */
static bool
mark(const char *uid, int64_t now, struct gx_hold_info *info)
{
    struct gx_pod p = pod(uid);
    struct gx_hold_info unused;

    p.preempted = true;
    p.node_name = "gpu-a";
    return gx_holds_pod_event(w.hs, &p, false, TTL, now, info != NULL ? info : &unused);
}

/* What the holds say on @node for pod @uid asking @req at @now. */
static enum gx_hold_outcome
verdict(const char *uid, const struct gx_podreq *req, const char *node, int64_t now,
        struct gx_vshort *v)
{
    struct gx_pod p = pod(uid);
    struct gx_vshort unused;

    return gx_holds_verdict(w.hs, &w.ctx, &p, req, node, now, v != NULL ? v : &unused);
}

/*
 * The scene of most tests: on gpu-a card 1 is full (w), card 0 was freed
 * by evicting victim v, and preemptor p holds 4 slots there; q asks 2.
 */
static void
scene(void)
{
    book("gpu-a", "w", 1, 4);
    put("p", &shared4, "gpu-a", "v", T0);
}

Test(holds, a_recorded_hold_applies_only_once_a_victim_is_marked, .init = world_init,
     .fini = world_free)
{
    struct gx_pod gone = pod("v");

    scene();
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_NONE);
    /* deleted for another reason (no DisruptionTarget condition): nothing activates */
    cr_assert_not(gx_holds_pod_event(w.hs, &gone, true, TTL, T0, &(struct gx_hold_info){0}));
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_NONE);
}

Test(holds, a_marked_victim_activates_the_hold_that_turns_another_pods_verdict, .init = world_init,
     .fini = world_free)
{
    struct gx_hold_info info = {0};
    struct gx_vshort v;

    scene();
    cr_assert(mark("v", T0 + 10, &info));
    cr_assert_str_eq(info.node, "gpu-a");
    cr_assert_str_eq(info.ns, "ml");
    cr_assert_str_eq(info.name, "p");
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0 + 20, &v), GX_HOLD_TURNED);
    cr_assert_not(v.keep);
    cr_assert_neq(v.reason, GX_REASON_NONE);
    cr_assert_eq(v.score, 0);
    /* the other node holds nothing */
    cr_assert_eq(verdict("q", &shared2, "gpu-b", T0 + 20, NULL), GX_HOLD_NONE);
    /* marked again (another watch event): already active, nothing new */
    cr_assert_not(mark("v", T0 + 30, NULL));
}

Test(holds, a_hold_with_room_for_both_decides_with_it_booked, .init = world_init,
     .fini = world_free)
{
    struct gx_vshort v;

    book("gpu-a", "w", 1, 4);
    put("p", &shared2, "gpu-a", "v", T0);
    cr_assert(mark("v", T0, NULL));
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, &v), GX_HOLD_DECIDED);
    cr_assert(v.keep);
    cr_assert_eq(v.reason, GX_REASON_NONE);
    /* a pod the node refuses even without the hold is decided, not turned */
    book("gpu-a", "x", 0, 2);
    cr_assert_eq(verdict("q", &shared4, "gpu-a", T0, &v), GX_HOLD_DECIDED);
    cr_assert_not(v.keep);
}

Test(holds, the_preemptor_is_not_held_against_itself, .init = world_init, .fini = world_free)
{
    scene();
    cr_assert(mark("v", T0, NULL));
    cr_assert_eq(verdict("p", &shared4, "gpu-a", T0, NULL), GX_HOLD_NONE);
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_TURNED);
}

Test(holds, an_active_hold_expires_by_time_and_is_dropped, .init = world_init, .fini = world_free)
{
    scene();
    cr_assert(mark("v", T0 + 500, NULL)); /* activation restarts the time to live */
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0 + 1500, NULL), GX_HOLD_TURNED);
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0 + 1501, NULL), GX_HOLD_NONE);
    /* dropped, not skipped: an earlier time does not bring it back */
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0 + 600, NULL), GX_HOLD_NONE);
}

Test(holds, a_preemption_is_under_way_only_for_its_preemptor_while_active, .init = world_init,
     .fini = world_free)
{
    scene();
    cr_assert_not(gx_holds_under_way(w.hs, "p", "gpu-a", T0), "answered, not carried out yet");
    cr_assert(mark("v", T0 + 500, NULL));
    cr_assert(gx_holds_under_way(w.hs, "p", "gpu-a", T0 + 600));
    cr_assert_not(gx_holds_under_way(w.hs, "q", "gpu-a", T0 + 600), "another pod's");
    cr_assert_not(gx_holds_under_way(w.hs, "p", "gpu-b", T0 + 600), "another node");
    cr_assert_not(gx_holds_under_way(w.hs, "p", "gpu-a", T0 + 1501), "expired");
    cr_assert_not(gx_holds_under_way(NULL, "p", "gpu-a", T0 + 600));
}

Test(holds, a_bound_preemptor_ends_its_holds, .init = world_init, .fini = world_free)
{
    struct gx_pod p = pod("p");
    struct gx_hold_info info;

    scene();
    cr_assert(mark("v", T0, NULL));
    /* still pending: an update changes nothing */
    cr_assert_not(gx_holds_pod_event(w.hs, &p, false, TTL, T0, &info));
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_TURNED);
    p.node_name = "gpu-a";
    cr_assert_not(gx_holds_pod_event(w.hs, &p, false, TTL, T0, &info));
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_NONE);
}

Test(holds, a_gone_preemptor_ends_its_holds, .init = world_init, .fini = world_free)
{
    struct gx_pod p = pod("p");
    struct gx_hold_info info;

    scene();
    cr_assert(mark("v", T0, NULL));
    cr_assert_not(gx_holds_pod_event(w.hs, &p, true, TTL, T0, &info));
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_NONE);
}

Test(holds, the_preemptors_own_booking_ends_the_hold, .init = world_init, .fini = world_free)
{
    scene();
    cr_assert(mark("v", T0, NULL));
    book("gpu-a", "p", 0, 4); /* its bind reserved the share */
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_NONE);
    cr_assert_eq(gx_ledger_release(w.ledger, "p"), 1);
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_NONE);
}

Test(holds, only_the_latest_answer_naming_a_victim_is_held, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_pod older = pod("p1");
    struct gx_hold_info info = {0};

    book("gpu-a", "w", 1, 4);
    /* p1 (deleted while pending, unseen) named v and v2; p2 was answered later with v */
    memset(&c, 0, sizeof(c));
    (void)snprintf(c.victims[0], sizeof(c.victims[0]), "v");
    (void)snprintf(c.victims[1], sizeof(c.victims[1]), "v2");
    c.n_victims = 2;
    cr_assert_eq(gx_holds_put(w.hs, &older, &shared4, "gpu-a", &c, TTL, T0), GX_OK);
    put("p2", &shared4, "gpu-a", "v", T0 + 1);
    cr_assert(mark("v", T0 + 2, &info));
    cr_assert_str_eq(info.name, "p2");
    /* p1's answer went with it: its other victim activates nothing */
    cr_assert_not(mark("v2", T0 + 3, NULL));
    cr_assert_eq(verdict("p1", &shared2, "gpu-a", T0 + 4, NULL), GX_HOLD_TURNED);
}

Test(holds, activation_drops_the_preemptors_other_candidates, .init = world_init,
     .fini = world_free)
{
    scene();
    put("p", &shared4, "gpu-b", "x", T0);
    cr_assert(mark("v", T0, NULL));
    cr_assert_not(mark("x", T0, NULL));
    cr_assert_eq(verdict("q", &shared4, "gpu-b", T0, NULL), GX_HOLD_NONE);
}

Test(holds, a_second_answer_for_the_same_node_replaces_the_first, .init = world_init,
     .fini = world_free)
{
    scene();
    put("p", &shared4, "gpu-a", "v-new", T0 + 1);
    cr_assert_not(mark("v", T0 + 2, NULL));
    cr_assert(mark("v-new", T0 + 2, NULL));
}

Test(holds, an_expired_inactive_hold_is_dropped_by_the_next_answer, .init = world_init,
     .fini = world_free)
{
    scene();
    put("p2", &shared2, "gpu-b", "x", T0 + TTL + 1);
    cr_assert_not(mark("v", T0 + TTL + 2, NULL));
}

Test(holds, an_expired_hold_left_in_place_is_still_activated, .init = world_init,
     .fini = world_free)
{
    scene();
    /* activation restarts its time to live, so a late mark still holds */
    cr_assert(mark("v", T0 + 5 * TTL, NULL));
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0 + 6 * TTL, NULL), GX_HOLD_TURNED);
}

Test(holds, a_hold_remembers_the_first_victims_only, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_pod p = pod("p");
    char last[32];

    memset(&c, 0, sizeof(c));
    for (size_t i = 0; i <= GX_HOLD_VICTIMS; i++) {
        (void)snprintf(c.victims[i], sizeof(c.victims[i]), "v%zu", i);
    }
    c.n_victims = GX_HOLD_VICTIMS + 1;
    cr_assert_eq(gx_holds_put(w.hs, &p, &shared2, "gpu-a", &c, TTL, T0), GX_OK);
    (void)snprintf(last, sizeof(last), "v%d", GX_HOLD_VICTIMS);
    cr_assert_not(mark(last, T0, NULL));
    (void)snprintf(last, sizeof(last), "v%d", GX_HOLD_VICTIMS - 1);
    cr_assert(mark(last, T0, NULL));
}

Test(holds, a_full_store_replaces_the_inactive_hold_expiring_first, .init = world_init,
     .fini = world_free)
{
    char uid[32], victim[32];

    for (int i = 0; i < GX_HOLDS_MAX; i++) {
        (void)snprintf(uid, sizeof(uid), "p%d", i);
        (void)snprintf(victim, sizeof(victim), "v%d", i);
        put(uid, &shared2, "gpu-a", victim, T0 + i);
    }
    put("late", &shared2, "gpu-a", "v-late", T0 + GX_HOLDS_MAX);
    cr_assert_not(mark("v0", T0 + GX_HOLDS_MAX, NULL)); /* p0's hold expired first: replaced */
    cr_assert(mark("v1", T0 + GX_HOLDS_MAX, NULL));
    cr_assert(mark("v-late", T0 + GX_HOLDS_MAX, NULL));
}

Test(holds, a_store_of_active_holds_refuses_a_new_one, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_pod p = pod("late");
    char uid[32], victim[32];

    for (int i = 0; i < GX_HOLDS_MAX; i++) {
        (void)snprintf(uid, sizeof(uid), "p%d", i);
        (void)snprintf(victim, sizeof(victim), "v%d", i);
        put(uid, &shared2, i % 2 ? "gpu-a" : "gpu-b", victim, T0);
        cr_assert(mark(victim, T0, NULL));
    }
    memset(&c, 0, sizeof(c));
    c.n_victims = 1;
    cr_assert_eq(gx_holds_put(w.hs, &p, &shared2, "gpu-a", &c, TTL, T0), GX_ETOOBIG);
    /* once they expire there is room again */
    cr_assert_eq(gx_holds_put(w.hs, &p, &shared2, "gpu-a", &c, TTL, T0 + TTL + 1), GX_OK);
}

Test(holds, no_store_and_unknown_nodes_hold_nothing, .init = world_init, .fini = world_free)
{
    struct gx_pod v = pod("v");
    struct gx_hold_info info;
    struct gx_vshort out;

    v.preempted = true;
    cr_assert_not(gx_holds_pod_event(NULL, &v, false, TTL, T0, &info));
    cr_assert_eq(gx_holds_verdict(NULL, &w.ctx, &v, &shared2, "gpu-a", T0, &out), GX_HOLD_NONE);
    scene();
    cr_assert(mark("v", T0, NULL));
    cr_assert_eq(verdict("q", &shared2, "gpu-z", T0, NULL), GX_HOLD_NONE);
}

Test(holds, ending_one_active_hold_keeps_the_others, .init = world_init, .fini = world_free)
{
    struct gx_pod p1 = pod("p1");
    struct gx_hold_info info;

    put("p1", &shared4, "gpu-a", "v1", T0);
    put("p2", &shared4, "gpu-b", "v2", T0);
    put("p3", &shared2, "gpu-a", "v3", T0);
    cr_assert(mark("v1", T0, NULL));
    cr_assert(mark("v3", T0, NULL));
    cr_assert(mark("v2", T0 + 1000, NULL));
    cr_assert_not(gx_holds_pod_event(w.hs, &p1, true, TTL, T0, &info)); /* p1 gone */
    cr_assert_not(gx_holds_under_way(w.hs, "p1", "gpu-a", T0));
    cr_assert(gx_holds_under_way(w.hs, "p3", "gpu-a", T0));
    cr_assert(gx_holds_under_way(w.hs, "p2", "gpu-b", T0));
    cr_assert_eq(verdict("q", &shared2, "gpu-b", T0, NULL), GX_HOLD_DECIDED);
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0, NULL), GX_HOLD_DECIDED);
    /* p3's hold expires first and goes while gpu-a is asked about; p2's stays */
    cr_assert_eq(verdict("q", &shared2, "gpu-a", T0 + TTL + 1, NULL), GX_HOLD_NONE);
    cr_assert_not(gx_holds_under_way(w.hs, "p3", "gpu-a", T0));
    cr_assert(gx_holds_under_way(w.hs, "p2", "gpu-b", T0 + TTL + 1));
    cr_assert(gx_holds_any(w.hs));
}
