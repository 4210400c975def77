/* SPDX-License-Identifier: Apache-2.0 */
/*
 * holds.c - the shares held for preemptors (holds.h): a fixed table of
 * holds, what records, activates and ends them, and the verdict of a node
 * with the active ones booked. Pure: the time comes in as @now_ms, and the
 * log lines and counters are the shell's (server/preempt_holds.c).
 */
#include "holds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "ledger.h"
#include "snapshot.h"

/* A share held for a preemptor on one node. */
struct hold {
    bool used, active;
    char uid[GX_UID_MAX];
    char ns[256], name[256];
    struct gx_podreq req;
    char node[256];
    char victims[GX_HOLD_VICTIMS][GX_UID_MAX];
    size_t n_victims;
    int64_t expires_ms; /* the caller's monotonic clock */
    uint64_t seq;       /* order of the answers */
};

struct gx_holds {
    struct hold h[GX_HOLDS_MAX];
    /* the active ones: a filter asks about every node, and the table is ~250 KB */
    struct hold *active[GX_HOLDS_MAX];
    size_t n_active;
    uint64_t seq;
};

struct gx_holds *
gx_holds_new(void)
{
    return calloc(1, sizeof(struct gx_holds));
}

void
gx_holds_free(struct gx_holds *hs)
{
    free(hs);
}

static void
hold_clear(struct gx_holds *hs, struct hold *h)
{
    for (size_t i = 0; h->active && i < hs->n_active; i++) {
        if (hs->active[i] == h) {
            hs->active[i] = hs->active[--hs->n_active];
            break;
        }
    }
    memset(h, 0, sizeof(*h));
}

enum gx_err
gx_holds_put(struct gx_holds *hs, const struct gx_pod *pod, const struct gx_podreq *req,
             const char *node, const struct gx_preempt_choice *c, int64_t ttl_ms, int64_t now_ms)
{
    struct hold *slot = NULL, *oldest = NULL;

    for (size_t i = 0; i < GX_HOLDS_MAX; i++) {
        struct hold *h = &hs->h[i];
        if (h->used && h->expires_ms < now_ms) {
            hold_clear(hs, h);
        }
        if (h->used && strcmp(h->uid, pod->uid) == 0 && strcmp(h->node, node) == 0) {
            slot = h;
            break;
        }
        if (!h->used && slot == NULL) {
            slot = h;
        }
        if (h->used && !h->active && (oldest == NULL || h->expires_ms < oldest->expires_ms)) {
            oldest = h;
        }
    }
    if (slot == NULL) {
        slot = oldest;
    }
    if (slot == NULL) {
        return GX_ETOOBIG;
    }
    hold_clear(hs, slot);
    slot->used = true;
    (void)snprintf(slot->uid, sizeof(slot->uid), "%s", pod->uid);
    (void)snprintf(slot->ns, sizeof(slot->ns), "%s", pod->namespace);
    (void)snprintf(slot->name, sizeof(slot->name), "%s", pod->name);
    (void)snprintf(slot->node, sizeof(slot->node), "%s", node);
    slot->req = *req;
    for (size_t i = 0; i < c->n_victims && slot->n_victims < GX_HOLD_VICTIMS; i++) {
        memcpy(slot->victims[slot->n_victims++], c->victims[i], GX_UID_MAX);
    }
    slot->expires_ms = now_ms + ttl_ms;
    slot->seq = ++hs->seq;
    return GX_OK;
}

static bool
names_victim(const struct hold *h, const char *uid)
{
    for (size_t k = 0; k < h->n_victims; k++) {
        if (strcmp(h->victims[k], uid) == 0) {
            return true;
        }
    }
    return false;
}

/* The hold of the latest answer naming victim @uid (active or not), or NULL. */
static struct hold *
hold_of_victim(struct gx_holds *hs, const char *uid)
{
    struct hold *best = NULL;

    for (size_t i = 0; i < GX_HOLDS_MAX; i++) {
        struct hold *h = &hs->h[i];
        if (h->used && (best == NULL || h->seq > best->seq) && names_victim(h, uid)) {
            best = h;
        }
    }
    return best;
}

bool
gx_holds_pod_event(struct gx_holds *hs, const struct gx_pod *pod, bool gone, int64_t ttl_ms,
                   int64_t now_ms, struct gx_hold_info *activated)
{
    struct hold *h;

    if (hs == NULL) {
        return false;
    }
    for (size_t i = 0; i < GX_HOLDS_MAX; i++) {
        h = &hs->h[i];
        if (h->used && strcmp(h->uid, pod->uid) == 0 && (gone || pod->node_name != NULL)) {
            hold_clear(hs, h); /* the preemptor is bound (its own booking holds) or gone */
        }
    }
    /*
     * The scheduler evicts for the preemptor it asked about last: only the
     * latest answer naming this victim is held, so an older answer (a
     * preemptor deleted while pending, whose deletion the managed-pod watch
     * never shows) cannot hold the share against it.
     */
    if (!pod->preempted || (h = hold_of_victim(hs, pod->uid)) == NULL || h->active) {
        return false;
    }
    h->active = true;
    hs->active[hs->n_active++] = h;
    h->expires_ms = now_ms + ttl_ms;
    /*
     * The scheduler chose this node: the preemptor's other candidates are
     * moot, and so are older answers naming this victim (it goes once).
     */
    for (size_t j = 0; j < GX_HOLDS_MAX; j++) {
        struct hold *o = &hs->h[j];
        if (o != h && o->used && !o->active &&
            (strcmp(o->uid, h->uid) == 0 || names_victim(o, pod->uid))) {
            hold_clear(hs, o);
        }
    }
    activated->node = h->node;
    activated->ns = h->ns;
    activated->name = h->name;
    return true;
}

bool
gx_holds_under_way(const struct gx_holds *hs, const char *uid, const char *node, int64_t now_ms)
{
    for (size_t i = 0; hs != NULL && i < hs->n_active; i++) {
        const struct hold *h = hs->active[i];
        if (h->expires_ms >= now_ms && strcmp(h->uid, uid) == 0 && strcmp(h->node, node) == 0) {
            return true;
        }
    }
    return false;
}

bool
gx_holds_any(const struct gx_holds *hs)
{
    return hs != NULL && hs->n_active > 0;
}

enum gx_hold_outcome
gx_holds_verdict(struct gx_holds *hs, const struct gx_decide_ctx *ctx, const struct gx_pod *pod,
                 const struct gx_podreq *req, const char *node_name, int64_t now_ms,
                 struct gx_vshort *v)
{
    struct hold *apply[GX_HOLDS_MAX];
    size_t n = 0;
    struct gx_ledger *scratch;
    const struct gx_node *node;
    bool turned;

    for (size_t i = 0; hs != NULL && i < hs->n_active;) {
        struct hold *h = hs->active[i];
        if (strcmp(h->node, node_name) != 0) {
            i++;
        } else if (h->expires_ms < now_ms || gx_ledger_find_pod(ctx->ledger, h->uid) != NULL) {
            hold_clear(hs, h); /* expired, or the preemptor's own bind booked it; i is the next */
        } else {
            if (strcmp(h->uid, pod->uid) != 0) {
                apply[n++] = h;
            }
            i++;
        }
    }
    if (n == 0 || (node = gx_snapshot_find(ctx->snap, node_name, strlen(node_name))) == NULL ||
        (scratch = gx_ledger_scratch(ctx->ledger, node->name)) == NULL) {
        return GX_HOLD_NONE;
    }
    for (size_t i = 0; i < n; i++) {
        struct gx_admit_pod ap = {apply[i]->uid, apply[i]->ns, apply[i]->name, &apply[i]->req};
        struct gx_admit_plan plan;
        struct gx_why why = {{0}};
        /* no room left: the victims still hold it, which holds it just as well */
        if (gx_admit_reserve(ctx, scratch, node->name, &ap, &plan, &why) != GX_OK) {
            continue;
        }
    }
    turned = gx_vcache_decide_booked(ctx, scratch, req, node, v);
    gx_ledger_free(scratch);
    return turned ? GX_HOLD_TURNED : GX_HOLD_DECIDED;
}
