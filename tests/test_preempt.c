/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_preempt.c - the preempt verb's victim choice on a hand-built node
 * (2 cards of 4 slots) with the time passed in, and its wire codec.
 */
#include "gx_test.h"

#include "extender.h"
#include "preempt.h"

#include <string.h>

GX_SUITE(preempt);
GX_SUITE(preempt_wire);

#define NOW INT64_C(1700000000000)
#define HIGH 1000

struct world {
    struct gx_config *defaults; /* gx_config_default(): owns what cfg borrows */
    struct gx_config cfg;       /* the shipped defaults and the overrides below */
    struct gx_snapshot snap;
    struct gx_node node;
    struct gx_card cards[2];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
    struct gx_tenant t[32];
    size_t n;
    struct {
        const char *uid;
        int32_t prio;
    } prio[32];
    size_t n_prio;
};

/* One world per test (criterion runs each in its own process): set up by .init. */
static struct world w;

static void
world_init(void)
{
    memset(&w, 0, sizeof(w));
    cr_assert_eq(gx_config_default(&w.defaults), GX_OK);
    w.cfg = *w.defaults;
    /* binpack on utilization and fit */
    w.cfg.policy = GX_POLICY_BINPACK;
    w.cfg.w_util = w.cfg.w_fit = 20;
    w.cfg.w_memory = w.cfg.w_temp = w.cfg.w_labels = 0;
    w.node.name = "gpu-a";
    w.node.product = "NVIDIA-L4";
    w.node.gpu_count = 2;
    w.node.gpu_memory_mib = 24564;
    w.node.replicas = 1;
    w.node.ready = true;
    w.node.cards = w.cards;
    w.node.n_cards = 2;
    for (int c = 0; c < 2; c++) {
        struct gx_card *k = &w.cards[c];
        k->index = c;
        k->numa = -1;
        for (int s = 0; s < GX_SIG_COUNT; s++) {
            k->v[s] = 0;
            k->at_ms[s] = NOW - 1000;
        }
        k->v[GX_SIG_MEM_FREE] = 24564;
    }
    w.snap.nodes = &w.node;
    w.snap.n_nodes = 1;
    cr_assert_eq(gx_snapshot_index(&w.snap), GX_OK);
    w.ledger = gx_ledger_new();
    cr_assert_not_null(w.ledger);
    w.ctx.cfg = &w.cfg;
    w.ctx.snap = &w.snap;
    w.ctx.ledger = w.ledger;
    w.ctx.now_ms = NOW;
}

static void
world_free(void)
{
    gx_ledger_free(w.ledger);
    gx_nameidx_release(&w.snap.names);
    gx_config_free(w.defaults);
}

/* A bound shared tenant @uid of @slices on @card, booked @age_s ago, of priority @prio. */
static void
tenant(const char *uid, int card, int slices, int age_s, int32_t prio)
{
    struct gx_tenant *t = &w.t[w.n++];

    memset(t, 0, sizeof(*t));
    (void)snprintf(t->uid, sizeof(t->uid), "%s", uid);
    (void)snprintf(t->pod, sizeof(t->pod), "ml/%s", uid);
    t->card = card;
    t->slices = slices;
    t->util_pct = -1;
    t->state = GX_TENANT_BOUND;
    t->since_ms = NOW - (int64_t)age_s * 1000;
    w.prio[w.n_prio].uid = t->uid;
    w.prio[w.n_prio++].prio = prio;
}

static void
commit(void)
{
    cr_assert_eq(gx_ledger_set_node(w.ledger, "gpu-a", w.t, w.n, NULL), GX_OK);
}

static bool
prio_of(void *arg, const char *uid, int32_t *prio)
{
    const struct world *wd = arg;

    for (size_t i = 0; i < wd->n_prio; i++) {
        if (strcmp(wd->prio[i].uid, uid) == 0) {
            *prio = wd->prio[i].prio;
            return true;
        }
    }
    return false;
}

/* The verb's input for @req, with the tenants added so far committed to the ledger. */
static struct gx_preempt_input
input(const struct gx_podreq *req)
{
    struct gx_preempt_input in = {
        .ctx = &w.ctx,
        .req = req,
        .priority = HIGH,
        .node = &w.node,
        .priority_of = prio_of,
        .arg = &w,
    };
    commit();
    return in;
}

/* gx_preempt_choose on @in, which must not fail. */
static void
choose(const struct gx_preempt_input *in, struct gx_preempt_choice *c)
{
    cr_assert_eq(gx_preempt_choose(in, c), GX_OK);
}

/* Victims of @c as one sorted comma-joined string. */
static const char *
victims(const struct gx_preempt_choice *c)
{
    static char out[1024];
    const char *v[GX_PREEMPT_MAX_VICTIMS];
    size_t at = 0;

    for (size_t i = 0; i < c->n_victims; i++) {
        v[i] = c->victims[i];
    }
    for (size_t i = 1; i < c->n_victims; i++) {
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    }
    out[0] = '\0';
    for (size_t i = 0; i < c->n_victims; i++) {
        at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%s", i ? "," : "", v[i]);
    }
    return out;
}

static const struct gx_podreq shared2 = {.kind = GX_REQ_SHARED, .slices = 2, .util_pct = -1};
static const struct gx_podreq shared4 = {.kind = GX_REQ_SHARED, .slices = 4, .util_pct = -1};
static const struct gx_podreq whole1 = {.kind = GX_REQ_EXCLUSIVE, .gpus = 1, .util_pct = -1};
static const struct gx_podreq whole2 = {.kind = GX_REQ_EXCLUSIVE, .gpus = 2, .util_pct = -1};

Test(preempt, fewer_pods_on_one_card_win, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    /* card 0: four 1-slot pods; card 1: two 2-slot pods; all low priority, all full */
    tenant("a0", 0, 1, 50, 100);
    tenant("a1", 0, 1, 40, 100);
    tenant("a2", 0, 1, 30, 100);
    tenant("a3", 0, 1, 20, 100);
    tenant("b0", 1, 2, 50, 100);
    tenant("b1", 1, 2, 10, 100);
    in = input(&shared2);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_not(c.unchanged);
    /* one pod frees two slots on card 1: the younger of the two */
    cr_assert_str_eq(victims(&c), "b1");
    cr_assert_eq(c.n_cards, 1);
    cr_assert_eq(c.cards[0], 1);
    cr_assert_eq(c.max_priority, 100);
    cr_assert_eq(c.pdb, 0);
}

Test(preempt, minimal_set_is_the_youngest_on_the_card, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    tenant("a0", 0, 1, 50, 100);
    tenant("a1", 0, 1, 40, 100);
    tenant("a2", 0, 1, 30, 100);
    tenant("a3", 0, 1, 20, 100);
    tenant("b0", 1, 1, 90, 100);
    tenant("b1", 1, 1, 80, 100);
    tenant("b2", 1, 1, 70, 100);
    tenant("b3", 1, 1, 60, 100);
    in = input(&shared2);
    choose(&in, &c);
    cr_assert(c.keep);
    /* two pods either way: card 0's are younger, and within it the two youngest */
    cr_assert_str_eq(victims(&c), "a2,a3");
    cr_assert_eq(c.cards[0], 0);
}

Test(preempt, lower_priority_beats_fewer_pods, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    tenant("big", 0, 4, 50, 500);
    tenant("s0", 1, 1, 50, 100);
    tenant("s1", 1, 1, 50, 100);
    tenant("s2", 1, 1, 50, 100);
    tenant("s3", 1, 1, 50, 100);
    in = input(&shared4);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_str_eq(victims(&c), "s0,s1,s2,s3");
    cr_assert_eq(c.cards[0], 1);
    cr_assert_eq(c.max_priority, 100);
}

Test(preempt, mixed_priorities_on_a_card_take_the_lowest_level_only, .init = world_init,
     .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    /* card 0: 2 slots at priority 100 and 2 at 900; card 1: an equal-priority holder */
    tenant("lo0", 0, 1, 50, 100);
    tenant("lo1", 0, 1, 50, 100);
    tenant("hi0", 0, 1, 50, 900);
    tenant("hi1", 0, 1, 50, 900);
    tenant("peer", 1, 4, 50, HIGH);
    in = input(&shared2);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_str_eq(victims(&c), "lo0,lo1");
    cr_assert_eq(c.max_priority, 100);
}

Test(preempt, no_single_card_can_be_freed, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    /* each card keeps one pod the preemptor may not evict: 3 slots at most free per card,
       6 on the node; 4 are asked on one card */
    tenant("keep0", 0, 1, 50, 2000);
    tenant("a1", 0, 1, 50, 100);
    tenant("a2", 0, 1, 50, 100);
    tenant("a3", 0, 1, 50, 100);
    tenant("keep1", 1, 1, 50, HIGH); /* equal priority: not a victim either */
    tenant("b1", 1, 1, 50, 100);
    tenant("b2", 1, 1, 50, 100);
    tenant("b3", 1, 1, 50, 100);
    in = input(&shared4);
    choose(&in, &c);
    cr_assert_not(c.keep);
    cr_assert_eq(c.drop, GX_PDROP_NO_VICTIMS);
    cr_assert_eq(c.reason, GX_REASON_NO_SLOT);
    cr_assert_eq(c.n_victims, 0);
}

Test(preempt, unknown_priority_is_never_a_victim, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    tenant("a0", 0, 4, 50, 100);
    tenant("b0", 1, 4, 50, 100);
    w.n_prio = 0; /* the pod view knows neither */
    in = input(&shared2);
    choose(&in, &c);
    cr_assert_not(c.keep);
    cr_assert_eq(c.drop, GX_PDROP_NO_VICTIMS);
}

Test(preempt, known_pdb_violations_are_avoided_and_counted, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;
    const char *sched[] = {"a0", "a1"};

    tenant("a0", 0, 2, 10, 100);
    tenant("a1", 0, 2, 10, 100);
    tenant("b0", 1, 2, 90, 300);
    tenant("b1", 1, 2, 90, 300);
    in = input(&shared2);
    in.sched = sched;
    in.n_sched = 2;
    in.sched_pdb = 1; /* the scheduler's set on card 0 breaks a budget */
    choose(&in, &c);
    cr_assert(c.keep);
    /* card 1 costs a higher priority, but no known violation */
    cr_assert_eq(c.cards[0], 1);
    cr_assert_eq(c.n_victims, 1);
    cr_assert_eq(c.pdb, 0);
    cr_assert(gx_preempt_pdb_risk(&in, "a0"));
    cr_assert_not(gx_preempt_pdb_risk(&in, "b0"));
    /* the only way is through the budget: counted, capped at the scheduler's count */
    w.prio[2].prio = w.prio[3].prio = 5000;
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_eq(c.cards[0], 0);
    cr_assert_eq(c.pdb, 1);
}

/* A budget protecting the pods whose UID starts with "b", allowing none of them to go. */
static int64_t
budget_b(void *arg, const char *const *uids, size_t n)
{
    int64_t v = 0;

    (void)arg;
    for (size_t i = 0; i < n; i++) {
        v += uids[i][0] == 'b' ? 1 : 0;
    }
    return v;
}

Test(preempt, watched_budgets_steer_the_choice_to_another_card, .init = world_init,
     .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    /* card 1 alone would win (one pod frees two slots); a budget protects it */
    tenant("a0", 0, 1, 50, 100);
    tenant("a1", 0, 1, 40, 100);
    tenant("a2", 0, 1, 30, 100);
    tenant("a3", 0, 1, 20, 100);
    tenant("b0", 1, 2, 50, 100);
    tenant("b1", 1, 2, 10, 100);
    in = input(&shared2);
    in.pdb_count = budget_b;
    in.sched_pdb = 7; /* the scheduler's count is ignored when the budgets are known */
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_eq(c.cards[0], 0);
    cr_assert_str_eq(victims(&c), "a2,a3", "the two youngest of card 0");
    cr_assert_eq(c.pdb, 0);
    /* card 0 is out of reach: the budget is broken, and the answer says so */
    w.prio[0].prio = w.prio[1].prio = w.prio[2].prio = w.prio[3].prio = 5000;
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_eq(c.cards[0], 1);
    cr_assert_str_eq(victims(&c), "b1");
    cr_assert_eq(c.pdb, 1);
}

Test(preempt, exclusive_frees_the_cheapest_whole_card, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    tenant("a0", 0, 1, 50, 100);
    tenant("a1", 0, 1, 50, 100);
    tenant("a2", 0, 1, 50, 100);
    tenant("b0", 1, 1, 50, 100);
    /* dcgm-exporter sees the shared workloads on both cards */
    w.cards[0].pod = "ml/a0";
    w.cards[1].pod = "ml/b0";
    w.cards[0].v[GX_SIG_MEM_USED] = w.cards[1].v[GX_SIG_MEM_USED] = 4000;
    w.cards[0].v[GX_SIG_UTIL] = w.cards[1].v[GX_SIG_UTIL] = 60;
    in = input(&whole1);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_str_eq(victims(&c), "b0");
    cr_assert_eq(c.n_cards, 1);
    cr_assert_eq(c.cards[0], 1);
    /* two cards: everything goes */
    in = input(&whole2);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_str_eq(victims(&c), "a0,a1,a2,b0");
    cr_assert_eq(c.n_cards, 2);
}

Test(preempt, exclusive_never_splits_a_card_with_a_protected_pod, .init = world_init,
     .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    tenant("a0", 0, 1, 50, 100);
    tenant("a1", 0, 1, 50, 5000);
    tenant("b0", 1, 1, 50, 100);
    tenant("b1", 1, 1, 50, 100);
    in = input(&whole1);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_str_eq(victims(&c), "b0,b1");
    cr_assert_eq(c.cards[0], 1);
    in = input(&whole2);
    choose(&in, &c);
    cr_assert_not(c.keep);
    cr_assert_eq(c.drop, GX_PDROP_NO_VICTIMS);
}

Test(preempt, measured_memory_leaves_with_the_victims, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .memory_mib = 8000, .util_pct = -1};

    /* slots are free everywhere, memory is not: 2 x 10 GiB declared and measured per card */
    tenant("a0", 0, 1, 50, 100);
    tenant("a1", 0, 1, 40, 100);
    tenant("b0", 1, 1, 50, 100);
    tenant("b1", 1, 1, 40, 100);
    for (size_t i = 0; i < w.n; i++) {
        w.t[i].memory_mib = 10000;
    }
    for (int k = 0; k < 2; k++) {
        w.cards[k].v[GX_SIG_MEM_USED] = 20000;
        w.cards[k].v[GX_SIG_MEM_FREE] = 4564;
    }
    in = input(&req);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_eq(c.reason, GX_REASON_NO_MEMORY);
    cr_assert_eq(c.n_victims, 1);
    cr_assert_str_eq(victims(&c), "a1");
}

/*
 * A victim without gpu-util takes its share of the measured load with it,
 * by the rule admission counts it by: evicting the 400-milli share frees
 * enough of a card measured at 95 % for a 300-milli one; the 300-milli
 * tenant of higher priority stays.
 */
Test(preempt, measured_load_leaves_with_the_victims_share, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .milli = 300, .util_pct = -1};

    tenant("low", 0, 1, 50, 0);
    tenant("high", 0, 1, 40, 1000);
    w.t[0].milli = 400;
    w.t[1].milli = 300;
    tenant("full", 1, 4, 50, 1000);
    w.cards[0].v[GX_SIG_UTIL] = 95;
    in = input(&req);
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_eq(c.reason, GX_REASON_BUSY, "%s", gx_reason_text(c.reason));
    cr_assert_str_eq(victims(&c), "low");
    /* switched off, an undeclared victim takes nothing: only emptying the card would help */
    w.cfg.expect_share_util = false;
    choose(&in, &c);
    cr_assert_not(c.keep, "%s", victims(&c));
}

Test(preempt, fitting_node_keeps_the_schedulers_set_or_is_dropped, .init = world_init,
     .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;
    const char *sched[] = {"cpu-pod"};

    tenant("a0", 0, 1, 50, 100);
    in = input(&shared2);
    choose(&in, &c);
    cr_assert_not(c.keep);
    cr_assert_eq(c.drop, GX_PDROP_FITS);
    /* the scheduler needs a CPU pod gone: its set stands, the GPUs are fine */
    in.sched = sched;
    in.n_sched = 1;
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert(c.unchanged);
    cr_assert_eq(c.n_victims, 0);
}

Test(preempt, device_plugin_shares_come_from_anywhere_on_the_node, .init = world_init,
     .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;
    struct gx_podreq req = {
        .kind = GX_REQ_SHARED, .slices = 2, .util_pct = -1, .device_plugin = true};

    /* time-slicing by the device plugin: 2 cards x 4 replicas, cards unknown to the ledger */
    w.node.replicas = 4;
    w.node.sharing = GX_SHARING_TIME_SLICING;
    for (int i = 0; i < 8; i++) {
        char uid[8];
        (void)snprintf(uid, sizeof(uid), "d%d", i);
        tenant(uid, GX_CARD_ANY, 1, 80 - i * 10, i == 7 ? 5000 : 100);
    }
    in = input(&req);
    choose(&in, &c);
    cr_assert(c.keep);
    /* the two youngest evictable ones (d7 outranks the preemptor) */
    cr_assert_str_eq(victims(&c), "d5,d6");
    cr_assert_eq(c.n_cards, 0, "the device plugin picks the card");
}

Test(preempt, nodes_eviction_cannot_help_are_dropped, .init = world_init, .fini = world_free)
{
    struct gx_preempt_choice c;
    struct gx_preempt_input in;

    tenant("a0", 0, 4, 50, 100);
    tenant("b0", 1, 4, 50, 100);
    in = input(&shared2);
    in.node = NULL;
    choose(&in, &c);
    cr_assert_not(c.keep);
    cr_assert_eq(c.drop, GX_PDROP_UNKNOWN_NODE);
    in = input(&shared2);
    w.node.ready = false;
    choose(&in, &c);
    cr_assert_not(c.keep);
    cr_assert_eq(c.drop, GX_PDROP_UNRESOLVABLE);
    cr_assert_eq(c.reason, GX_REASON_NOT_READY);
    w.node.ready = true;
    /* a card with an XID: the healthy card is the only candidate */
    w.cards[1].v[GX_SIG_XID] = 79;
    choose(&in, &c);
    cr_assert(c.keep);
    cr_assert_str_eq(victims(&c), "a0");
    cr_assert_str_eq(gx_preempt_drop_name(GX_PDROP_NO_VICTIMS), "no_victims");
    cr_assert_str_eq(gx_preempt_drop_name(GX_PDROP_QUOTA), "quota");
    cr_assert_str_eq(gx_preempt_drop_name(GX_PDROP_UNDER_WAY), "under_way");
}

/* ---- wire codec ---- */

#define POD                                                                                        \
    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u-p\"},\"spec\":{\"priority\":"  \
    "1000}}"

static enum gx_err
decode(const char *body, struct gx_ext_preempt_args *a, struct gx_why *why)
{
    return gx_ext_decode_preempt(body, strlen(body), 64, a, why);
}

Test(preempt_wire, meta_victims_decode)
{
    struct gx_ext_preempt_args a;
    struct gx_why why = {{0}};
    const char *body = "{\"Pod\":" POD ",\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":{"
                       "\"gpu-a\":{\"Pods\":[{\"UID\":\"v1\"},{\"UID\":\"v2\"}],"
                       "\"NumPDBViolations\":1},\"gpu-b\":null}}";

    cr_assert_eq(decode(body, &a, &why), GX_OK, "%s", why.text);
    cr_assert(a.meta);
    cr_assert(a.pod.has_priority);
    cr_assert_eq(a.pod.priority, 1000);
    cr_assert_eq(a.n_nodes, 2);
    cr_assert_str_eq(a.nodes[0].node, "gpu-a");
    cr_assert_eq(a.nodes[0].n_pods, 2);
    cr_assert_str_eq(a.nodes[0].pods[1].uid, "v2");
    cr_assert_eq(a.nodes[0].pdb, 1);
    cr_assert_str_eq(a.nodes[1].node, "gpu-b");
    cr_assert_eq(a.nodes[1].n_pods, 0);
    gx_ext_preempt_args_release(&a);
}

Test(preempt_wire, full_victims_carry_priority)
{
    struct gx_ext_preempt_args a;
    struct gx_why why = {{0}};
    const char *body =
        "{\"pod\":" POD ",\"NodeNameToMetaVictims\":null,\"NodeNameToVictims\":{\"gpu-a\":{"
        "\"Pods\":[{\"metadata\":{\"name\":\"v\",\"namespace\":\"ml\",\"uid\":\"v1\"},"
        "\"spec\":{\"priority\":100,\"containers\":[]}}],\"NumPDBViolations\":0}}}";

    cr_assert_eq(decode(body, &a, &why), GX_OK, "%s", why.text);
    cr_assert_not(a.meta);
    cr_assert_eq(a.n_nodes, 1);
    cr_assert_eq(a.nodes[0].n_pods, 1);
    cr_assert_str_eq(a.nodes[0].pods[0].uid, "v1");
    cr_assert(a.nodes[0].pods[0].has_priority);
    cr_assert_eq(a.nodes[0].pods[0].priority, 100);
    gx_ext_preempt_args_release(&a);
}

Test(preempt_wire, a_victim_the_scheduler_marked_is_known)
{
    struct gx_ext_preempt_args a;
    struct gx_why why = {{0}};
    const char *body =
        "{\"Pod\":{\"metadata\":{\"uid\":\"v\"},\"status\":{\"conditions\":[{\"type\":"
        "\"Ready\",\"status\":\"True\"},{\"type\":\"DisruptionTarget\",\"status\":\"True\","
        "\"reason\":\"PreemptionByScheduler\"}]}},\"NodeNameToMetaVictims\":{}}";

    cr_assert_eq(decode(body, &a, &why), GX_OK, "%s", why.text);
    cr_assert(a.pod.preempted);
    cr_assert_not(a.pod.has_priority);
    cr_assert_eq(a.n_nodes, 0);
    gx_ext_preempt_args_release(&a);
    /* evicted for another reason (a drain): not the scheduler's victim */
    body = "{\"Pod\":{\"status\":{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":"
           "\"True\",\"reason\":\"EvictionByEvictionAPI\"},7]}},\"NodeNameToMetaVictims\":{}}";
    cr_assert_eq(decode(body, &a, &why), GX_OK, "%s", why.text);
    cr_assert_not(a.pod.preempted);
    gx_ext_preempt_args_release(&a);
}

Test(preempt_wire, bad_input_is_refused_with_a_reason)
{
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"not json", ""},
        {"[]", "ExtenderPreemptionArgs must be a JSON object"},
        {"{\"NodeNameToMetaVictims\":{}}", "Pod is missing"},
        {"{\"Pod\":null,\"NodeNameToMetaVictims\":{}}", "Pod is null"},
        {"{\"Pod\":" POD ",\"NodeNameToVictims\":{},\"NodeNameToMetaVictims\":{}}",
         "both NodeNameToVictims and NodeNameToMetaVictims are set"},
        {"{\"Pod\":" POD "}", "neither NodeNameToVictims nor NodeNameToMetaVictims is set"},
        {"{\"Pod\":" POD ",\"NodeNameToMetaVictims\":[]}", "must be an object or null"},
        {"{\"Pod\":" POD ",\"NodeNameToMetaVictims\":{\"n\":{\"Pods\":[{\"UID\":7}]}}}",
         "UID must be a string"},
        {"{\"Pod\":" POD ",\"NodeNameToMetaVictims\":{\"n\":{\"Pods\":[{}]}}}", "has no UID"},
        {"{\"Pod\":" POD ",\"NodeNameToMetaVictims\":{\"n\":{\"NumPDBViolations\":\"1\"}}}",
         "NumPDBViolations must be an integer"},
        {"{\"Pod\":" POD ",\"NodeNameToMetaVictims\":{\"\":{}}}", "empty node name"},
        {"{\"Pod\":{\"spec\":{\"priority\":\"high\"}},\"NodeNameToMetaVictims\":{}}", "priority"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gx_ext_preempt_args a;
        struct gx_why why = {{0}};
        enum gx_err rc = decode(bad[i].body, &a, &why);
        cr_assert_neq(rc, GX_OK, "accepted %s", bad[i].body);
        cr_assert(strstr(why.text, bad[i].why) != NULL, "%s: why=%s", bad[i].body, why.text);
    }
}

Test(preempt_wire, result_encodes_exactly)
{
    struct gx_buf b;
    const char *u[] = {"v1", "v\"2"};
    struct gx_ext_meta_victims v[] = {{"gpu-a", u, 2, 0}, {"gpu-b", u, 1, 3}};

    gx_buf_init(&b, 4096);
    cr_assert_eq(gx_ext_encode_preempt(&b, v, 2), GX_OK);
    cr_assert_eq(gx_buf_add(&b, "", 1), GX_OK);
    cr_assert_str_eq(b.data, "{\"NodeNameToMetaVictims\":{\"gpu-a\":{\"Pods\":[{\"UID\":\"v1\"},"
                             "{\"UID\":\"v\\\"2\"}],\"NumPDBViolations\":0},\"gpu-b\":{\"Pods\":"
                             "[{\"UID\":\"v1\"}],\"NumPDBViolations\":3}}}");
    gx_buf_reset(&b);
    cr_assert_eq(gx_ext_encode_preempt(&b, NULL, 0), GX_OK);
    cr_assert_eq(gx_buf_add(&b, "", 1), GX_OK);
    cr_assert_str_eq(b.data, "{\"NodeNameToMetaVictims\":{}}");
    gx_buf_release(&b);
}
