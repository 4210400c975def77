/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dra.c - ResourceSlice / ResourceClaim decoding, the DRA store
 * (uuid -> claim, each device once, release on delete, lists replace), and
 * what decisions do with a claimed card (snapshot mark + score rule).
 */
#include "gx_test.h"

#include <string.h>

#include "dra.h"
#include "kobj.h"
#include "score.h"

GX_SUITE(dra);

#define NOW INT64_C(1700000000000)

static const char SLICES[] =
    "{\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[{"
    "\"metadata\":{\"name\":\"node-a-gpu.nvidia.com-x\",\"resourceVersion\":\"5\"},"
    "\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"node-a\","
    "\"pool\":{\"name\":\"node-a\",\"generation\":1,\"resourceSliceCount\":1},"
    "\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"GPU-aaa\"},"
    "\"index\":{\"int\":0}}},"
    "{\"name\":\"gpu-1\",\"attributes\":{\"gpu.nvidia.com/uuid\":{\"string\":\"GPU-bbb\"}}},"
    "{\"name\":\"nic-0\"}]}}]}";

static const char CLAIMS[] =
    "{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[{"
    "\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\",\"uid\":\"c1\","
    "\"resourceVersion\":\"8\"},"
    "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
    "\"driver\":\"gpu.nvidia.com\",\"pool\":\"node-a\",\"device\":\"gpu-1\"}]}},"
    "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"train-0\",\"uid\":\"p1\"},"
    "{\"resource\":\"pods\",\"name\":\"train-1\",\"uid\":\"p2\"}]}},"
    "{\"metadata\":{\"name\":\"pending\",\"namespace\":\"ml\"},\"spec\":{}}]}";

struct lists {
    struct gx_arena a;
    struct gx_rslice *slices;
    size_t n_slices;
    struct gx_rclaim *claims;
    size_t n_claims;
};

static void
lists_init(struct lists *l)
{
    struct gx_why why = {{0}};
    void *items = NULL;
    const char *rv = NULL;

    memset(l, 0, sizeof(*l));
    gx_arena_init(&l->a, 0);
    cr_assert_eq(gx_kobj_decode_list(SLICES, strlen(SLICES), GX_KIND_RESOURCE_SLICE, 64, &l->a,
                                     &items, &l->n_slices, &rv, &why),
                 GX_OK, "%s", why.text);
    l->slices = items;
    cr_assert_str_eq(rv, "7");
    cr_assert_eq(gx_kobj_decode_list(CLAIMS, strlen(CLAIMS), GX_KIND_RESOURCE_CLAIM, 64, &l->a,
                                     &items, &l->n_claims, &rv, &why),
                 GX_OK, "%s", why.text);
    l->claims = items;
}

Test(dra, slices_decode_devices_with_their_uuid_attribute)
{
    struct lists l;
    const struct gx_rslice *s;

    lists_init(&l);
    cr_assert_eq(l.n_slices, 1);
    s = &l.slices[0];
    cr_assert_str_eq(s->driver, "gpu.nvidia.com");
    cr_assert_str_eq(s->pool, "node-a");
    cr_assert_str_eq(s->node_name, "node-a");
    cr_assert_eq(s->n_devices, 3);
    cr_assert_str_eq(s->devices[0].uuid, "GPU-aaa", "unqualified attribute");
    cr_assert_str_eq(s->devices[1].uuid, "GPU-bbb", "domain-qualified attribute");
    cr_assert_null(s->devices[2].uuid, "a device without one");
    gx_arena_release(&l.a);
}

Test(dra, claims_decode_their_allocation_and_users)
{
    struct lists l;

    lists_init(&l);
    cr_assert_eq(l.n_claims, 2);
    cr_assert_str_eq(l.claims[0].namespace, "ml");
    cr_assert_eq(l.claims[0].n_results, 1);
    cr_assert_str_eq(l.claims[0].results[0].device, "gpu-1");
    cr_assert_eq(l.claims[0].n_reserved_for, 2);
    cr_assert_str_eq(l.claims[0].reserved_for[1], "train-1");
    cr_assert_eq(l.claims[1].n_results, 0, "an unallocated claim");
    gx_arena_release(&l.a);
}

Test(dra, wrong_types_name_the_field)
{
    static const char *const bad[] = {
        "{\"items\":[{\"spec\":{\"devices\":{}}}]}",
        "{\"items\":[{\"spec\":{\"devices\":[{\"name\":\"g\",\"attributes\":{\"uuid\":"
        "{\"string\":3}}}]}}]}",
        "{\"items\":[{\"spec\":{\"pool\":\"p\"}}]}",
    };
    static const char *const where[] = {"items[0].spec.devices", "attributes", "spec.pool"};
    struct gx_arena a;
    struct gx_why why = {{0}};
    void *items;
    size_t n;

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        gx_arena_init(&a, 0);
        cr_assert_eq(gx_kobj_decode_list(bad[i], strlen(bad[i]), GX_KIND_RESOURCE_SLICE, 64, &a,
                                         &items, &n, NULL, &why),
                     GX_EINVAL, "%s", bad[i]);
        cr_assert_not_null(strstr(why.text, where[i]), "%s", why.text);
        gx_arena_release(&a);
    }
    gx_arena_init(&a, 0);
    {
        const char *c =
            "{\"items\":[{\"status\":{\"allocation\":{\"devices\":{\"results\":[1]}}}}]}";
        cr_assert_eq(gx_kobj_decode_list(c, strlen(c), GX_KIND_RESOURCE_CLAIM, 64, &a, &items, &n,
                                         NULL, &why),
                     GX_EINVAL);
        cr_assert_not_null(strstr(why.text, "status.allocation.devices.results[0]"), "%s",
                           why.text);
    }
    gx_arena_release(&a);
}

Test(dra, a_watch_event_carries_a_claim)
{
    const char *ev = "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\","
                     "\"namespace\":\"ns\",\"resourceVersion\":\"12\"}}}";
    struct gx_arena a;
    struct gx_watch_event e;
    struct gx_why why = {{0}};

    gx_arena_init(&a, 0);
    cr_assert_eq(gx_kobj_decode_event(ev, strlen(ev), GX_KIND_RESOURCE_CLAIM, 64, &a, &e, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(e.type, GX_WATCH_DELETED);
    cr_assert_str_eq(e.resource_version, "12");
    cr_assert_str_eq(e.obj.claim.name, "c");
    gx_arena_release(&a);
}

static int changes;

static void
on_change(void *ctx)
{
    (void)ctx;
    changes++;
}

Test(dra, a_claimed_device_maps_its_uuid_to_the_claim)
{
    struct lists l;
    struct gx_dra *d = gx_dra_new(on_change, NULL);

    lists_init(&l);
    changes = 0;
    cr_assert_eq(gx_dra_set_slices(d, l.slices, l.n_slices), GX_OK);
    cr_assert_eq(gx_dra_set_claims(d, l.claims, l.n_claims), GX_OK);
    cr_assert_eq(changes, 2);
    cr_assert(gx_dra_synced(d));
    cr_assert_str_eq(gx_dra_claim_of(d, "GPU-bbb"), "ml/train");
    cr_assert_null(gx_dra_claim_of(d, "GPU-aaa"), "a published, unallocated device is free");
    cr_assert_null(gx_dra_claim_of(d, NULL));
    cr_assert_eq(gx_dra_claimed_devices(d), 1, "two pods share the claim: one device");
    gx_dra_free(d);
    gx_arena_release(&l.a);
}

Test(dra, a_device_in_two_claims_counts_once_and_frees_with_the_last)
{
    struct lists l;
    struct gx_dra *d = gx_dra_new(NULL, NULL);
    struct gx_rclaim second;

    lists_init(&l);
    cr_assert_eq(gx_dra_set_slices(d, l.slices, l.n_slices), GX_OK);
    cr_assert_eq(gx_dra_set_claims(d, l.claims, 1), GX_OK);
    second = l.claims[0];
    second.name = "infer";
    cr_assert_eq(gx_dra_put_claim(d, &second, false), GX_OK);
    cr_assert_eq(gx_dra_claimed_devices(d), 1);
    cr_assert_eq(gx_dra_put_claim(d, &l.claims[0], true), GX_OK);
    cr_assert_str_eq(gx_dra_claim_of(d, "GPU-bbb"), "ml/infer", "still held by the other");
    cr_assert_eq(gx_dra_put_claim(d, &second, true), GX_OK);
    cr_assert_null(gx_dra_claim_of(d, "GPU-bbb"), "released with the last claim");
    cr_assert_eq(gx_dra_claimed_devices(d), 0);
    gx_dra_free(d);
    gx_arena_release(&l.a);
}

Test(dra, a_deallocated_claim_or_a_removed_slice_frees_the_card)
{
    struct lists l;
    struct gx_dra *d = gx_dra_new(NULL, NULL);
    struct gx_rclaim dealloc;

    lists_init(&l);
    cr_assert_eq(gx_dra_set_slices(d, l.slices, l.n_slices), GX_OK);
    cr_assert_eq(gx_dra_set_claims(d, l.claims, l.n_claims), GX_OK);
    dealloc = l.claims[0];
    dealloc.n_results = 0;
    cr_assert_eq(gx_dra_put_claim(d, &dealloc, false), GX_OK, "MODIFIED without allocation");
    cr_assert_null(gx_dra_claim_of(d, "GPU-bbb"));
    cr_assert_eq(gx_dra_put_claim(d, &l.claims[0], false), GX_OK);
    cr_assert_not_null(gx_dra_claim_of(d, "GPU-bbb"));
    cr_assert_eq(gx_dra_put_slice(d, &l.slices[0], true), GX_OK);
    cr_assert_null(gx_dra_claim_of(d, "GPU-bbb"), "no slice names the device any more");
    cr_assert_eq(gx_dra_set_slices(d, l.slices, l.n_slices), GX_OK);
    cr_assert_not_null(gx_dra_claim_of(d, "GPU-bbb"), "a relist brings it back");
    cr_assert_eq(gx_dra_set_claims(d, NULL, 0), GX_OK);
    cr_assert_null(gx_dra_claim_of(d, "GPU-bbb"), "a relist without the claim frees it");
    gx_dra_free(d);
    gx_arena_release(&l.a);
}

/* ---- decisions ---- */

struct world {
    struct gx_config *defaults; /* gx_config_default(): owns what cfg borrows */
    struct gx_config cfg;       /* the shipped defaults and the overrides below */
    struct gx_snapshot snap;
    struct gx_node node;
    struct gx_card cards[2];
    struct gx_ledger *ledger;
    struct gx_decide_ctx ctx;
};

static void
world_init(struct world *w)
{
    memset(w, 0, sizeof(*w));
    cr_assert_eq(gx_config_default(&w->defaults), GX_OK);
    w->cfg = *w->defaults;
    w->cfg.policy = GX_POLICY_BINPACK;
    w->cfg.w_util = w->cfg.w_memory = w->cfg.w_temp = w->cfg.w_labels = w->cfg.w_fit = 20;
    for (int i = 0; i < 2; i++) {
        struct gx_card *c = &w->cards[i];
        c->index = i;
        c->uuid = i == 0 ? "GPU-aaa" : "GPU-bbb";
        c->numa = -1;
        c->v[GX_SIG_UTIL] = 5;
        c->v[GX_SIG_MEM_USED] = 300;
        c->v[GX_SIG_MEM_FREE] = 24000;
        c->v[GX_SIG_TEMP] = 40;
        for (int s = 0; s < GX_SIG_COUNT; s++) {
            c->at_ms[s] = NOW - 1000;
        }
    }
    w->node.name = "node-a";
    w->node.product = "NVIDIA-A100";
    w->node.gpu_count = 2;
    w->node.gpu_memory_mib = 24564;
    w->node.replicas = 1;
    w->node.alloc_gpu = 2;
    w->node.ready = true;
    w->node.cards = w->cards;
    w->node.n_cards = 2;
    gx_arena_init(&w->snap.arena, 0);
    w->snap.nodes = &w->node;
    w->snap.n_nodes = 1;
    w->ledger = gx_ledger_new();
    w->ctx.cfg = &w->cfg;
    w->ctx.snap = &w->snap;
    w->ctx.ledger = w->ledger;
    w->ctx.now_ms = NOW;
}

static void
world_free(struct world *w)
{
    gx_ledger_free(w->ledger);
    gx_arena_release(&w->snap.arena);
    gx_config_free(w->defaults);
}

static const char *
claim_cb(void *ctx, const char *node, const char *uuid)
{
    cr_assert_str_eq(node, "node-a");
    return gx_dra_claim_of(ctx, uuid);
}

/* The world with GPU-bbb claimed through a real store. */
static void
claim_card_1(struct world *w)
{
    struct lists l;
    struct gx_dra *d = gx_dra_new(NULL, NULL);

    lists_init(&l);
    cr_assert_eq(gx_dra_set_slices(d, l.slices, l.n_slices), GX_OK);
    cr_assert_eq(gx_dra_set_claims(d, l.claims, l.n_claims), GX_OK);
    cr_assert_eq(gx_snapshot_mark_claimed(&w->snap, claim_cb, d), GX_OK);
    gx_dra_free(d);
    gx_arena_release(&l.a);
}

Test(dra, a_claimed_card_is_marked_in_the_snapshot_and_shown_as_claimed)
{
    struct world w;

    world_init(&w);
    claim_card_1(&w);
    cr_assert_null(w.cards[0].claim);
    cr_assert_str_eq(w.cards[1].claim, "ml/train", "copied: the store is gone");
    cr_assert_eq(gx_score_card_state(&w.ctx, &w.node, &w.cards[1]), GX_CARD_CLAIMED);
    cr_assert_str_eq(gx_card_state_text(GX_CARD_CLAIMED), "claimed");
    world_free(&w);
}

Test(dra, filter_never_places_on_a_claimed_card)
{
    struct world w;
    struct gx_podreq two = {.kind = GX_REQ_EXCLUSIVE, .gpus = 2, .util_pct = -1};
    struct gx_podreq one = {.kind = GX_REQ_EXCLUSIVE, .gpus = 1, .util_pct = -1};
    struct gx_podreq shared = {.kind = GX_REQ_SHARED, .slices = 1, .util_pct = -1};
    struct gx_verdict v;

    world_init(&w);
    claim_card_1(&w);
    gx_score_node(&w.ctx, &two, &w.node, &v);
    cr_assert_not(v.keep, "two whole GPUs: only one is free");
    cr_assert_eq(v.reason, GX_REASON_NO_SLOT);
    gx_score_node(&w.ctx, &one, &w.node, &v);
    cr_assert(v.keep);
    cr_assert_eq(v.n_cards, 1);
    cr_assert_eq(v.cards[0], 0, "the free card");
    for (int i = 0; i < 8; i++) {
        gx_score_node(&w.ctx, &shared, &w.node, &v);
        cr_assert(v.keep);
        cr_assert_eq(v.cards[0], 0, "a time slice never lands on the claimed card");
    }
    w.cards[0].claim = "ml/other";
    gx_score_node(&w.ctx, &shared, &w.node, &v);
    cr_assert_not(v.keep);
    cr_assert_eq(v.reason, GX_REASON_NO_SLOT, "%s", gx_reason_text(v.reason));
    world_free(&w);
}
