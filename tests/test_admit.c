/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_admit.c - bind planning, the Binding body and the reconcile verdicts
 * on a hand-built snapshot, with the time passed in.
 */
#include "gx_test.h"

#include "admit.h"
#include "kobj.h"
#include "podreq.h"

#include <cjson/cJSON.h>
#include <string.h>

GX_SUITE(admit);

#define NOW INT64_C(1700000000000)

struct world {
    struct gx_config *defaults; /* gx_config_default(): owns what cfg borrows */
    struct gx_config cfg;       /* the shipped defaults and the overrides below */
    struct gx_snapshot snap;
    struct gx_node nodes[2];
    struct gx_card cards[2][2];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
};

static void
world_init(struct world *w)
{
    static const char *const names[2] = {"gpu-a", "gpu-b"};

    memset(w, 0, sizeof(*w));
    cr_assert_eq(gx_config_default(&w->defaults), GX_OK);
    w->cfg = *w->defaults;
    /* two slots a card fill up in a few binds; binpack on utilization and fit */
    w->cfg.default_slots = 2;
    w->cfg.policy = GX_POLICY_BINPACK;
    w->cfg.w_util = w->cfg.w_fit = 20;
    w->cfg.w_memory = w->cfg.w_temp = w->cfg.w_labels = 0;
    for (int i = 0; i < 2; i++) {
        struct gx_node *n = &w->nodes[i];
        n->name = names[i];
        n->product = "NVIDIA-L4";
        n->gpu_count = 2;
        n->gpu_memory_mib = 24564;
        n->replicas = 1;
        n->ready = true;
        n->cards = w->cards[i];
        n->n_cards = 2;
        for (int c = 0; c < 2; c++) {
            struct gx_card *k = &w->cards[i][c];
            k->index = c;
            k->uuid = c == 0 ? "GPU-0000" : NULL; /* card 1: no dcgm series named it */
            k->numa = -1;
            for (int s = 0; s < GX_SIG_COUNT; s++) {
                k->v[s] = 0;
                k->at_ms[s] = NOW - 1000;
            }
            k->v[GX_SIG_MEM_FREE] = 24564;
        }
    }
    w->snap.nodes = w->nodes;
    w->snap.n_nodes = 2;
    cr_assert_eq(gx_snapshot_index(&w->snap), GX_OK);
    w->ledger = gx_ledger_new();
    cr_assert_not_null(w->ledger);
    w->ctx.cfg = &w->cfg;
    w->ctx.snap = &w->snap;
    w->ctx.now_ms = NOW;
}

static void
world_free(struct world *w)
{
    gx_ledger_free(w->ledger);
    gx_nameidx_release(&w->snap.names);
    gx_config_free(w->defaults);
}

static const struct gx_podreq shared1 = {.kind = GX_REQ_SHARED, .slices = 1, .util_pct = -1};
static const struct gx_podreq whole2 = {.kind = GX_REQ_EXCLUSIVE, .gpus = 2, .util_pct = -1};

/* A booking younger than two bind deadlines may still be bound by a Binding on its way. */
Test(admit, a_booking_is_in_flight_for_two_bind_deadlines)
{
    struct gx_config *cfg = NULL;

    cr_assert_eq(gx_config_default(&cfg), GX_OK);
    cfg->bind_deadline_ms = 1000;
    cr_assert(gx_admit_in_flight(cfg, NOW, NOW));
    cr_assert(gx_admit_in_flight(cfg, NOW, NOW + 2000));
    cr_assert_not(gx_admit_in_flight(cfg, NOW, NOW + 2001));
    gx_config_free(cfg);
}

Test(admit, reserve_books_once_and_repeats_idempotently)
{
    struct world w;
    struct gx_admit_pod pod = {"uid-1", "ml", "a", &shared1};
    struct gx_admit_plan p1, p2;
    struct gx_why why = {{0}};
    struct gx_card_usage u;

    world_init(&w);
    cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-a", &pod, &p1, &why), GX_OK, "%s",
                 why.text);
    cr_assert(p1.changed);
    cr_assert_eq(p1.n_cards, 1);
    gx_ledger_card_usage(w.ledger, "gpu-a", p1.cards[0], &u);
    cr_assert_eq(u.slices, 1);
    cr_assert_eq(gx_ledger_find_pod(w.ledger, "uid-1")->tenants[0].since_ms, NOW);
    cr_assert_eq(p1.booking, NOW);
    cr_assert_not(p1.renewed);
    /* a retried bind finds its own booking: same card, taken over with a new stamp */
    w.ctx.now_ms = NOW + 5;
    cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-a", &pod, &p2, &why), GX_OK);
    cr_assert_not(p2.changed);
    cr_assert(p2.renewed);
    cr_assert_eq(p2.booking, NOW + 5);
    cr_assert_eq(gx_ledger_booking(w.ledger, "uid-1"), NOW + 5);
    cr_assert_eq(p2.n_cards, 1);
    cr_assert_eq(p2.cards[0], p1.cards[0]);
    /* elsewhere it is refused while it holds GPUs here */
    cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-b", &pod, &p2, &why), GX_ECONFLICT);
    cr_assert_str_eq(why.text, "pod already holds GPUs on node gpu-a");
    world_free(&w);
}

/*
 * A reservation its own pod can use: the node fills up with the
 * pod's own booking, so the score refuses it there, yet the filter keeps
 * that node (bind takes the booking over) and refuses the others while a
 * Binding of the pod may still land.
 */
Test(admit, a_pods_own_booking_keeps_its_node_and_holds_off_the_others)
{
    struct world w;
    struct gx_admit_pod pod = {"uid-w", "ml", "w", &whole2};
    struct gx_admit_plan p;
    struct gx_admit_held h;
    struct gx_decide_ctx here;
    struct gx_verdict v;
    struct gx_why why = {{0}};
    enum gx_reason reason = GX_REASON_COUNT;
    bool keep = false;

    world_init(&w);
    cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-a", &pod, &p, &why), GX_OK, "%s",
                 why.text);
    here = gx_decide_ctx_on(&w.ctx, w.ledger);
    gx_score_node(&here, &whole2, &w.nodes[0], &v);
    cr_assert_not(v.keep, "the score counts the pod's own booking against it");
    gx_admit_held_of(&w.cfg, w.ledger, "uid-w", NOW + 10, &h);
    cr_assert_str_eq(h.node, "gpu-a");
    cr_assert(h.in_flight);
    cr_assert(gx_admit_held_verdict(&h, "gpu-a", &keep, &reason));
    cr_assert(keep);
    cr_assert_eq(reason, GX_REASON_NONE);
    cr_assert(gx_admit_held_verdict(&h, "gpu-b", &keep, &reason));
    cr_assert_not(keep);
    cr_assert_eq(reason, GX_REASON_BOOKED_ELSEWHERE);
    cr_assert(gx_reason_unresolvable(reason), "no victim changes it");
    /* settled: the booking may move, the other node is decided as usual */
    gx_admit_held_of(&w.cfg, w.ledger, "uid-w", NOW + 3 * (int64_t)w.cfg.bind_deadline_ms, &h);
    cr_assert_not(h.in_flight);
    cr_assert_not(gx_admit_held_verdict(&h, "gpu-b", &keep, &reason));
    /* another pod: nothing held */
    gx_admit_held_of(&w.cfg, w.ledger, "uid-other", NOW, &h);
    cr_assert_null(h.node);
    cr_assert_not(gx_admit_held_verdict(&h, "gpu-a", &keep, &reason));
    world_free(&w);
}

Test(admit, milli_share_books_milli_and_its_slot_equivalent)
{
    struct world w;
    struct gx_podreq req = shared1;
    struct gx_admit_pod pod = {"uid-m", "ml", "m", &req};
    struct gx_admit_plan p;
    struct gx_why why = {{0}};
    const struct gx_tenant *t;
    struct gx_card_usage u;

    world_init(&w);
    req.milli = 300;
    cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-a", &pod, &p, &why), GX_OK, "%s",
                 why.text);
    t = &gx_ledger_find_pod(w.ledger, "uid-m")->tenants[0];
    cr_assert_eq(t->milli, 300);
    cr_assert_eq(t->slices, (300 * gx_config_card_slots(&w.cfg, "", 1) + 999) / 1000);
    gx_ledger_card_usage(w.ledger, "gpu-a", p.cards[0], &u);
    cr_assert_eq(u.milli, 300);
    cr_assert_eq(u.slices, 0, "counted once, by its milli");
    world_free(&w);
}

Test(admit, reserve_refuses_what_filter_would_reject)
{
    struct world w;
    struct gx_admit_plan p;
    struct gx_why why = {{0}};
    char uid[16];

    world_init(&w);
    for (int i = 0; i < 4; i++) {
        struct gx_admit_pod pod = {uid, "ml", "s", &shared1};
        (void)snprintf(uid, sizeof(uid), "s-%d", i);
        cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-a", &pod, &p, &why), GX_OK);
    }
    {
        struct gx_admit_pod pod = {"s-4", "ml", "s", &shared1};
        cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-a", &pod, &p, &why), GX_ECONFLICT);
        cr_assert_str_eq(why.text, "cannot bind to gpu-a: no GPU time slot available");
    }
    {
        struct gx_admit_pod pod = {"x-1", "ml", "x", &whole2};
        cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "nowhere", &pod, &p, &why), GX_ECONFLICT);
        cr_assert_str_eq(why.text, "cannot bind to nowhere: node unknown to gpu-extender");
        cr_assert_eq(gx_admit_reserve(&w.ctx, w.ledger, "gpu-b", &pod, &p, &why), GX_OK);
        cr_assert_eq(p.n_cards, 2);
    }
    world_free(&w);
}

Test(admit, notes_name_uuids_and_fall_back_to_the_index)
{
    struct world w;
    struct gx_admit_plan p = {.changed = true, .cards = {0, 1}, .n_cards = 2};
    struct gx_admit_notes n;

    world_init(&w);
    gx_admit_notes(&w.nodes[0], &whole2, &p, &n);
    cr_assert_str_eq(n.uuids, "GPU-0000,1");
    cr_assert_str_eq(n.index, "0,1");
    cr_assert_str_eq(n.slices, ""); /* not a share: the pod asked for no time slices */
    p.n_cards = 1;
    p.cards[0] = 1;
    gx_admit_notes(&w.nodes[0], &shared1, &p, &n);
    cr_assert_str_eq(n.uuids, "1");
    cr_assert_str_eq(n.slices, "1");
    world_free(&w);
}

/* The annotations travel in the Binding, so the API server sets them with the node. */
Test(admit, binding_carries_node_and_annotations_in_one_object)
{
    struct world w;
    struct gx_admit_plan p = {.changed = true, .cards = {0}, .n_cards = 1};
    struct gx_admit_notes n;
    struct gx_buf b;
    cJSON *doc, *md, *ann;

    world_init(&w);
    gx_admit_notes(&w.nodes[0], &shared1, &p, &n);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_admit_binding(&w.cfg, "ml", "a\"b", "uid-1", "gpu-a", &n, &b), GX_OK);
    doc = cJSON_ParseWithLength(b.data, b.len);
    cr_assert_not_null(doc, "%s", b.data);
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "kind")->valuestring, "Binding");
    md = cJSON_GetObjectItem(doc, "metadata");
    cr_assert_str_eq(cJSON_GetObjectItem(md, "name")->valuestring, "a\"b");
    cr_assert_str_eq(cJSON_GetObjectItem(md, "uid")->valuestring, "uid-1");
    ann = cJSON_GetObjectItem(md, "annotations");
    cr_assert_str_eq(cJSON_GetObjectItem(ann, "gpu-extender.io/gpu-uuids")->valuestring,
                     "GPU-0000");
    cr_assert_str_eq(cJSON_GetObjectItem(ann, "gpu-extender.io/gpu-index")->valuestring, "0");
    cr_assert_str_eq(cJSON_GetObjectItem(ann, "gpu-extender.io/time-slices")->valuestring, "1");
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "target"), "name")->valuestring,
                     "gpu-a");
    cJSON_Delete(doc);

    /* a pod that holds no cards gets a plain Binding */
    gx_buf_reset(&b);
    cr_assert_eq(gx_admit_binding(&w.cfg, "ml", "cpu", "uid-2", "gpu-b", NULL, &b), GX_OK);
    doc = cJSON_ParseWithLength(b.data, b.len);
    cr_assert_not_null(doc, "%s", b.data);
    cr_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"), "annotations"));
    cJSON_Delete(doc);
    gx_buf_release(&b);
    world_free(&w);
}

/* @json_sq with single quotes for double ones, on the heap. */
static char *
dq(const char *json_sq)
{
    char *s = strdup(json_sq);

    cr_assert_not_null(s);
    for (char *p = s; *p != '\0'; p++) {
        *p = *p == '\'' ? '"' : *p;
    }
    return s;
}

/* Classify the pod of JSON @json; cr_assert that it is a valid request. */
static struct gx_podreq
classify(const struct gx_config *cfg, const char *json)
{
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_podreq r;
    struct gx_why why = {{0}};

    gx_arena_init(&a, 0);
    cr_assert_eq(gx_kobj_decode_pod(json, strlen(json), 64, &a, &pod, &why), GX_OK, "%s", json);
    cr_assert_eq(gx_podreq_parse(cfg, &pod, &r, &why), GX_OK, "%s: %s", json, why.text);
    gx_arena_release(&a);
    return r;
}

/*
 * The Binding's annotations land on the pod (the API server copies them):
 * read again, the bound pod asks for what it asked. A whole-GPU pod once
 * got time-slices "0" and every later read (a retried bind, explain)
 * refused it as time slices combined with whole GPUs.
 */
Test(admit, a_bound_pod_asks_for_what_it_asked)
{
    static const char *const pods[] = {
        "{'spec':{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}}",
        "{'metadata':{'annotations':{'gpu-extender.io/time-slices':'2'}},'spec':{'containers':"
        "[{'name':'a','resources':{'limits':{'gpu-extender.io/time-slice':'1'}}}]}}",
        "{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'300'}},'spec':{'containers':"
        "[{'name':'a','resources':{'limits':{'gpu-extender.io/time-slice':'1'}}}]}}",
        "{'spec':{'containers':[{'name':'a','resources':{'limits':{'gpu-extender.io/time-slice':"
        "'3'}}}]}}",
        "{'spec':{'containers':[{'name':'a','resources':{'limits':{'nvidia.com/gpu.shared':'2'}}}"
        "]}}",
    };
    struct world w;

    world_init(&w);
    for (size_t i = 0; i < GX_ARRAY_LEN(pods); i++) {
        char *json = dq(pods[i]), *bound;
        struct gx_podreq before = classify(&w.cfg, json), after;
        struct gx_admit_plan p = {.changed = true, .cards = {0, 1}};
        struct gx_admit_notes n;
        struct gx_buf b;
        cJSON *pod = cJSON_Parse(json), *binding, *md, *ann;

        /* the device plugin picks a share's card: the plan names none */
        p.n_cards = before.kind == GX_REQ_EXCLUSIVE ? (int)before.gpus : !before.device_plugin;
        gx_admit_notes(&w.nodes[0], &before, &p, &n);
        gx_buf_init(&b, 1 << 20);
        cr_assert_eq(gx_admit_binding(&w.cfg, "ml", "p", "uid-1", "gpu-a", &n, &b), GX_OK);
        binding = cJSON_ParseWithLength(b.data, b.len);
        cr_assert_not_null(binding, "%s", b.data);
        md = cJSON_GetObjectItem(pod, "metadata");
        if (md == NULL) {
            md = cJSON_AddObjectToObject(pod, "metadata");
        }
        if (cJSON_GetObjectItem(md, "annotations") == NULL) {
            cJSON_AddObjectToObject(md, "annotations");
        }
        ann = cJSON_GetObjectItem(cJSON_GetObjectItem(binding, "metadata"), "annotations");
        for (cJSON *a = ann != NULL ? ann->child : NULL; a != NULL; a = a->next) {
            cJSON *to = cJSON_GetObjectItem(md, "annotations");
            cJSON_DeleteItemFromObject(to, a->string);
            cJSON_AddStringToObject(to, a->string, a->valuestring);
        }
        bound = cJSON_PrintUnformatted(pod);
        after = classify(&w.cfg, bound);
        cr_assert_eq(after.kind, before.kind, "%s", bound);
        cr_assert_eq(after.gpus, before.gpus, "%s", bound);
        cr_assert_eq(after.slices, before.slices, "%s", bound);
        cr_assert_eq(after.milli, before.milli, "%s", bound);
        cr_assert_eq(after.device_plugin, before.device_plugin, "%s", bound);
        free(bound);
        cJSON_Delete(binding);
        cJSON_Delete(pod);
        gx_buf_release(&b);
        free(json);
    }
    world_free(&w);
}

Test(admit, reconcile_verdicts_follow_the_pod_watch)
{
    struct world w;
    struct gx_tenant t = {.state = GX_TENANT_RESERVED, .since_ms = NOW};
    struct gx_admit_seen pending = {.node = ""}, here = {.node = "gpu-a"},
                         there = {.node = "gpu-b"};
    struct gx_admit_seen done = {.node = "gpu-a", .finished = true};
    const int64_t settled = NOW + 9000, expired = NOW + 301000, young = NOW + 1000;

    world_init(&w);
    /* a finished pod or one bound elsewhere is released at any age */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &done, young), GX_FIX_RELEASE);
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &there, young), GX_FIX_RELEASE);
    /* bound here: the reservation is marked bound */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &here, young), GX_FIX_BOUND);
    /* young and unknown: maybe a bind in flight; settled and unknown: read the pod first */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, NULL, young), GX_FIX_NONE);
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, NULL, NOW + 17000), GX_FIX_CONFIRM);
    /* pending pods keep their reservation until the TTL */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &pending, settled), GX_FIX_NONE);
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &pending, expired), GX_FIX_RELEASE);
    t.state = GX_TENANT_BOUND;
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &here, settled), GX_FIX_NONE);
    /* the lost bookings under a slow API server: a view that lags is no evidence, bound or not */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, NULL, settled), GX_FIX_CONFIRM);
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, NULL, expired), GX_FIX_CONFIRM);
    world_free(&w);
}

/* What a direct read of the pod proves depends on when it started. */
Test(admit, only_a_read_newer_than_the_booking_releases_it)
{
    struct world w;
    struct gx_tenant t = {.state = GX_TENANT_BOUND, .since_ms = NOW};
    struct gx_admit_seen gone = {.node = "", .gone = true};
    struct gx_admit_seen pending = {.node = ""};
    const int64_t later = NOW + 20000;

    world_init(&w);
    gone.read_ms = NOW + w.cfg.bind_deadline_ms + 1; /* started after the booking */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &gone, later), GX_FIX_RELEASE);
    gone.read_ms = NOW + 100; /* too close to the booking: another replica's clock may lead */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &gone, later), GX_FIX_NONE);
    gone.read_ms = NOW - 5000; /* older than the booking */
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &gone, later), GX_FIX_NONE);
    /* a fresh read of a pod still pending long after its bind: the reservation goes */
    t.state = GX_TENANT_RESERVED;
    pending.read_ms = later - 10;
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &pending, later), GX_FIX_RELEASE);
    /* the same pod seen pending through the watch keeps it until the TTL */
    pending.read_ms = 0;
    cr_assert_eq(gx_admit_fix(&w.cfg, "gpu-a", &t, &pending, later), GX_FIX_NONE);
    world_free(&w);
}

/* xorshift for the walk below: fixed seeds, reproducible failures. */
static uint32_t
next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Every card of @w's nodes within its capacity, exclusive holders alone, each pod on one node. */
static void
check_invariants(const struct world *w, const struct gx_ledger *l)
{
    for (int n = 0; n < 2; n++) {
        for (int c = 0; c < 2; c++) {
            struct gx_card_usage u;
            gx_ledger_card_usage(l, w->nodes[n].name, c, &u);
            if (u.exclusive) {
                cr_assert_eq(u.tenants, 1, "%s card %d: exclusive holder not alone",
                             w->nodes[n].name, c);
                continue;
            }
            cr_assert_leq(gx_ledger_share_used(&u, w->cfg.default_slots), GX_CARD_MILLI,
                          "%s card %d over capacity", w->nodes[n].name, c);
        }
    }
}

/* The Leases as leases_cache.c keeps them: encode each node, decode into a fresh ledger. */
static struct gx_ledger *
restart(const struct world *w, struct gx_ledger *old)
{
    struct gx_ledger *fresh = gx_ledger_new();

    cr_assert_not_null(fresh);
    for (int n = 0; n < 2; n++) {
        const struct gx_ledger_node *e = gx_ledger_node(old, w->nodes[n].name);
        struct gx_buf b;
        struct gx_tenant *t = NULL;
        size_t k = 0;
        struct gx_why why = {{0}};

        if (e == NULL) {
            continue;
        }
        gx_buf_init(&b, 1 << 20);
        cr_assert_eq(gx_ledger_node_encode(e, &b), GX_OK);
        cr_assert_eq(gx_ledger_node_decode(b.data, b.len, &t, &k, &why), GX_OK, "%s", why.text);
        cr_assert_eq(gx_ledger_set_node(fresh, w->nodes[n].name, t, k, "1"), GX_OK);
        free(t);
        gx_buf_release(&b);
    }
    gx_ledger_free(old);
    return fresh;
}

/*
 * The property walk of what production calls: binds through gx_admit_reserve
 * (filter's rule inside), releases, and restarts through the Lease codec.
 * No card is ever over capacity, a retried bind never books twice, and a pod
 * never holds GPUs on two nodes.
 */
Test(admit, random_binds_releases_and_restarts_never_overbook)
{
    struct world w;
    struct gx_ledger *l;
    uint32_t seed = 42;
    char uids[24][16];
    int booked = 0, refused = 0, restarts = 0;

    world_init(&w);
    l = w.ledger;
    for (int i = 0; i < 24; i++) {
        (void)snprintf(uids[i], sizeof(uids[i]), "uid-%02d", i);
    }
    for (int step = 0; step < 3000; step++) {
        uint32_t r = next_rand(&seed);
        const char *uid = uids[r % 24];
        const char *node = w.nodes[(r >> 5) % 2].name;
        struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .util_pct = -1};
        struct gx_admit_pod pod = {uid, "ml", uid, &req};
        struct gx_admit_plan p1, p2;
        struct gx_why why = {{0}};
        const struct gx_ledger_node *held;

        switch ((r >> 8) % 8) {
        case 0:
            (void)gx_ledger_release(l, uid);
            break;
        case 1:
            l = restart(&w, l);
            restarts++;
            break;
        default:
            if ((r >> 12) % 4 == 0) {
                req.kind = GX_REQ_EXCLUSIVE;
                req.gpus = 1 + (int64_t)((r >> 14) % 2);
            } else if ((r >> 12) % 4 == 1) {
                req.milli = 100 + (int)((r >> 14) % 9) * 100;
            }
            w.ctx.ledger = l;
            held = gx_ledger_find_pod(l, uid);
            if (gx_admit_reserve(&w.ctx, l, node, &pod, &p1, &why) != GX_OK) {
                cr_assert_eq(gx_ledger_find_pod(l, uid), held, "a refused bind changed the ledger");
                refused++;
                break;
            }
            booked += p1.changed;
            /* the retry of the same bind is idempotent */
            cr_assert_eq(gx_admit_reserve(&w.ctx, l, node, &pod, &p2, &why), GX_OK);
            cr_assert_not(p2.changed, "step %d: a retried bind booked twice", step);
            cr_assert_str_eq(gx_ledger_find_pod(l, uid)->node, node);
            break;
        }
        check_invariants(&w, l);
    }
    /* the walk went through every path, not only the easy one */
    cr_assert_gt(booked, 100, "booked %d", booked);
    cr_assert_gt(refused, 200, "refused %d", refused);
    cr_assert_gt(restarts, 100, "restarts %d", restarts);
    w.ledger = l;
    world_free(&w);
}
