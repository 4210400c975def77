/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admit.c - bind planning and reconcile verdicts (see admit.h). Pure: the
 * clock comes in through the decision context or an argument.
 */
#include "admit.h"

#include <stdio.h>
#include <string.h>

#include "kwrite.h"
#include "quota.h"

/*
 * Slots a share holds: its slices, or for a milli share the slots that
 * cover it on a card of @slots slots, so readers that predate milli still
 * count it (the ledger itself counts a milli tenant by its milli only).
 */
static int
share_slices(const struct gx_podreq *req, int milli, int slots)
{
    int64_t n;

    if (milli <= 0) {
        return req->slices;
    }
    n = ((int64_t)milli * slots + GX_CARD_MILLI - 1) / GX_CARD_MILLI;
    return n < 1 ? 1 : (int)n;
}

/* Ledger tenants of @pod for verdict @v at @now_ms on cards of @slots slots; returns how many. */
static size_t
tenants_for(const struct gx_config *cfg, const struct gx_admit_pod *pod, const struct gx_verdict *v,
            int64_t now_ms, int slots, struct gx_tenant *t)
{
    const struct gx_podreq *req = pod->req;
    bool any_card = v->device_plugin || v->n_cards == 0;
    int count = any_card ? 1 : v->n_cards;
    int milli = req->kind == GX_REQ_SHARED && req->milli > 0 && !v->device_plugin
                    ? gx_config_share_milli(cfg, req->milli)
                    : 0;
    size_t n = 0;

    if (req->kind == GX_REQ_NONE) {
        return 0;
    }
    for (int i = 0; i < count && i < GX_MAX_PICK; i++, n++) {
        memset(&t[n], 0, sizeof(t[n]));
        (void)snprintf(t[n].uid, sizeof(t[n].uid), "%s", pod->uid);
        (void)snprintf(t[n].pod, sizeof(t[n].pod), "%s/%s", pod->ns, pod->name);
        t[n].card = any_card ? GX_CARD_ANY : v->cards[i];
        t[n].exclusive = req->kind == GX_REQ_EXCLUSIVE && !v->device_plugin;
        t[n].slices = req->kind == GX_REQ_SHARED ? share_slices(req, milli, slots)
                      : v->device_plugin         ? (int)req->gpus
                                                 : 0;
        t[n].milli = milli;
        /* the pod's host requests once per pod, so node sums count it once */
        t[n].cpu_milli = i == 0 ? req->cpu_milli : 0;
        t[n].host_mem_mib = i == 0 ? req->mem_mib : 0;
        t[n].memory_mib = req->kind == GX_REQ_SHARED ? req->memory_mib : 0;
        t[n].util_pct = req->kind == GX_REQ_SHARED ? req->util_pct : -1;
        t[n].state = GX_TENANT_RESERVED;
        t[n].since_ms = now_ms;
        t[n].gang = req->gang;
    }
    return n;
}

/* The cards @uid already holds in entry @held into @out. */
static void
held_cards(const struct gx_ledger_node *held, const char *uid, struct gx_admit_plan *out)
{
    for (size_t i = 0; i < held->n_tenants && out->n_cards < GX_MAX_PICK; i++) {
        if (strcmp(held->tenants[i].uid, uid) == 0 && held->tenants[i].card >= 0) {
            out->cards[out->n_cards++] = held->tenants[i].card;
        }
    }
}

/* The namespace quota against @ctx's ledger (the Lease's truth for this node, the cache for
 * others). */
static bool
quota_fits(const struct gx_decide_ctx *ctx, const struct gx_admit_pod *pod,
           const struct gx_node *sn)
{
    struct gx_quota_check q;

    gx_quota_check_begin(ctx, pod->ns, pod->uid, pod->req, &q);
    return gx_quota_check_node(&q, ctx, pod->req, sn);
}

size_t
gx_admit_slots(const struct gx_config *cfg, const struct gx_node *sn, int *slots, size_t cap)
{
    size_t n = 0;

    for (; sn != NULL && n < sn->n_cards && n < cap; n++) {
        slots[n] = gx_config_card_slots(cfg, sn->product, sn->replicas);
    }
    return n;
}

/*
 * The pod's booking already in @l: on @node it is taken over (true, GX_OK
 * in *rc); on another node GX_ECONFLICT. False when it holds nothing.
 */
static bool
reserve_held(const struct gx_decide_ctx *ctx, struct gx_ledger *l, const char *node,
             const struct gx_admit_pod *pod, struct gx_admit_plan *out, struct gx_why *why,
             enum gx_err *rc)
{
    const struct gx_ledger_node *held = gx_ledger_find_pod(l, pod->uid);

    memset(out, 0, sizeof(*out));
    out->booking = GX_BOOKING_ANY;
    if (held != NULL && strcmp(held->node, node) == 0) {
        held_cards(held, pod->uid, out);
        /* a retry takes the booking over, so a release queued by an earlier attempt misses it */
        out->booking = gx_ledger_renew(l, pod->uid, ctx->now_ms);
        out->renewed = true;
        *rc = GX_OK;
        return true;
    }
    if (held != NULL) {
        gx_why_set(why, "pod already holds GPUs on node %s", held->node);
        *rc = GX_ECONFLICT;
        return true;
    }
    return false;
}

/* Book tenants @t[0..n) of @pod on @node in @l (quota first) and fill @out but its cards. */
static enum gx_err
book(const struct gx_decide_ctx *here, struct gx_ledger *l, const char *node,
     const struct gx_admit_pod *pod, const struct gx_tenant *t, size_t n, struct gx_admit_plan *out,
     struct gx_why *why)
{
    const struct gx_node *sn = gx_snapshot_find(here->snap, node, strlen(node));
    int slots[256];
    size_t n_slots = gx_admit_slots(here->cfg, sn, slots, GX_ARRAY_LEN(slots));
    enum gx_err rc;

    if (!quota_fits(here, pod, sn)) {
        gx_why_set(why, "cannot bind to %s: %s", node, gx_reason_text(GX_REASON_QUOTA));
        return GX_ECONFLICT;
    }
    rc = gx_ledger_add(l, node, t, n, slots, n_slots);
    if (rc != GX_OK) {
        gx_why_set(why, "cannot reserve GPUs on %s: %s", node,
                   rc == GX_ECONFLICT ? gx_reason_text(GX_REASON_NO_SLOT) : gx_strerror(rc));
        return rc;
    }
    out->changed = true;
    out->booking = gx_ledger_booking(l, pod->uid);
    return GX_OK;
}

enum gx_err
gx_admit_reserve(const struct gx_decide_ctx *ctx, struct gx_ledger *l, const char *node,
                 const struct gx_admit_pod *pod, struct gx_admit_plan *out, struct gx_why *why)
{
    const struct gx_node *sn = gx_snapshot_find(ctx->snap, node, strlen(node));
    struct gx_decide_ctx here;
    struct gx_verdict v;
    struct gx_tenant t[GX_MAX_PICK];
    int slots[1];
    size_t n;
    enum gx_err rc;

    if (reserve_held(ctx, l, node, pod, out, why, &rc)) {
        return rc;
    }
    here = gx_decide_ctx_on(ctx, l);
    gx_score_node(&here, pod->req, sn, &v);
    if (pod->req->kind != GX_REQ_NONE && !v.keep) {
        gx_why_set(why, "cannot bind to %s: %s", node, gx_reason_text(v.reason));
        return GX_ECONFLICT;
    }
    n = tenants_for(ctx->cfg, pod, &v, ctx->now_ms,
                    gx_admit_slots(ctx->cfg, sn, slots, 1) > 0 ? slots[0] : 1, t);
    if (n == 0) {
        return GX_OK;
    }
    if ((rc = book(&here, l, node, pod, t, n, out, why)) != GX_OK) {
        return rc;
    }
    out->n_cards = v.device_plugin ? 0 : v.n_cards;
    memcpy(out->cards, v.cards, sizeof(out->cards));
    return GX_OK;
}

enum gx_err
gx_admit_reserve_as(const struct gx_decide_ctx *ctx, struct gx_ledger *l, const char *node,
                    const struct gx_admit_pod *pod, const struct gx_tenant *t, size_t n,
                    struct gx_admit_plan *out, struct gx_why *why)
{
    struct gx_tenant mine[GX_MAX_PICK];
    struct gx_decide_ctx here;
    enum gx_err rc;

    if (reserve_held(ctx, l, node, pod, out, why, &rc)) {
        return rc;
    }
    if (n == 0 || n > GX_MAX_PICK) {
        gx_why_set(why, "cannot reserve GPUs on %s: no cards planned", node);
        return GX_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        mine[i] = t[i];
        mine[i].state = GX_TENANT_RESERVED;
        mine[i].since_ms = ctx->now_ms;
    }
    here = gx_decide_ctx_on(ctx, l);
    if ((rc = book(&here, l, node, pod, mine, n, out, why)) != GX_OK) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (mine[i].card >= 0 && out->n_cards < GX_MAX_PICK) {
            out->cards[out->n_cards++] = mine[i].card;
        }
    }
    return GX_OK;
}

/* Append "," (unless first) and @s to @buf of @cap bytes at *@at; cut when full. */
static void
join(char *buf, size_t cap, size_t *at, bool first, const char *s)
{
    int w = snprintf(buf + *at, cap - *at, "%s%s", first ? "" : ",", s);

    if (w > 0 && (size_t)w < cap - *at) {
        *at += (size_t)w;
    } else {
        buf[*at] = '\0';
    }
}

void
gx_admit_notes(const struct gx_node *node, const struct gx_podreq *req,
               const struct gx_admit_plan *plan, struct gx_admit_notes *out)
{
    size_t ou = 0, oi = 0;

    out->uuids[0] = out->index[0] = '\0';
    for (int i = 0; i < plan->n_cards; i++) {
        int c = plan->cards[i];
        const char *uuid =
            node != NULL && c >= 0 && (size_t)c < node->n_cards ? node->cards[c].uuid : NULL;
        char num[16];

        (void)snprintf(num, sizeof(num), "%d", c);
        join(out->uuids, sizeof(out->uuids), &ou, i == 0, uuid != NULL ? uuid : num);
        join(out->index, sizeof(out->index), &oi, i == 0, num);
    }
    /*
     * The pod's own request annotation: written where it says what the pod
     * asked already. On a whole-GPU pod ("0") or a device-plugin share it
     * made the bound pod an invalid request that every later read refused.
     */
    out->slices[0] = '\0';
    if (req->kind == GX_REQ_SHARED && !req->device_plugin) {
        (void)snprintf(out->slices, sizeof(out->slices), "%d", req->slices);
    }
}

enum gx_err
gx_admit_binding(const struct gx_config *cfg, const char *ns, const char *name, const char *uid,
                 const char *node, const struct gx_admit_notes *notes, struct gx_buf *out)
{
    struct gx_kv ann[3];
    struct gx_kmeta m = {.name = name, .namespace = ns, .uid = uid, .annotations = ann};

    if (notes != NULL && notes->index[0] != '\0') {
        ann[m.n_annotations++] = (struct gx_kv){cfg->ann_uuids, notes->uuids};
        ann[m.n_annotations++] = (struct gx_kv){cfg->ann_index, notes->index};
    }
    if (notes != NULL && notes->slices[0] != '\0') {
        ann[m.n_annotations++] = (struct gx_kv){cfg->ann_slices, notes->slices};
    }
    return gx_kwrite_binding(out, &m, node);
}

bool
gx_admit_in_flight(const struct gx_config *cfg, int64_t booking, int64_t now_ms)
{
    return now_ms - booking <= 2 * (int64_t)cfg->bind_deadline_ms;
}

void
gx_admit_held_of(const struct gx_config *cfg, const struct gx_ledger *l, const char *uid,
                 int64_t now_ms, struct gx_admit_held *out)
{
    const struct gx_ledger_node *e =
        uid != NULL && uid[0] != '\0' ? gx_ledger_find_pod(l, uid) : NULL;

    out->node = e != NULL ? e->node : NULL;
    out->in_flight = e != NULL && gx_admit_in_flight(cfg, gx_ledger_booking(l, uid), now_ms);
}

bool
gx_admit_held_verdict(const struct gx_admit_held *h, const char *node, bool *keep,
                      enum gx_reason *reason)
{
    if (h->node == NULL) {
        return false;
    }
    if (strcmp(h->node, node) == 0) {
        *keep = true;
        *reason = GX_REASON_NONE;
        return true;
    }
    if (h->in_flight) {
        *keep = false;
        *reason = GX_REASON_BOOKED_ELSEWHERE;
        return true;
    }
    return false;
}

enum gx_admit_fix
gx_admit_fix(const struct gx_config *cfg, const char *node, const struct gx_tenant *t,
             const struct gx_admit_seen *seen, int64_t now_ms)
{
    int64_t age = now_ms - t->since_ms;
    /* Younger tenants may belong to a bind in flight or to watch events on their way. */
    bool settled = !gx_admit_in_flight(cfg, t->since_ms, now_ms);
    bool fresh = seen != NULL && seen->read_ms > t->since_ms + (int64_t)cfg->bind_deadline_ms;

    if (seen == NULL) {
        return settled ? GX_FIX_CONFIRM : GX_FIX_NONE;
    }
    if (seen->gone) {
        return fresh ? GX_FIX_RELEASE : GX_FIX_NONE;
    }
    if (seen->finished) {
        return GX_FIX_RELEASE;
    }
    if (seen->node[0] != '\0') {
        /* spec.nodeName is set once: another node is final, however old the picture */
        if (strcmp(seen->node, node) != 0) {
            return GX_FIX_RELEASE;
        }
        return t->state == GX_TENANT_RESERVED ? GX_FIX_BOUND : GX_FIX_NONE;
    }
    if (!settled) {
        return GX_FIX_NONE;
    }
    /*
     * Pending: after the TTL, or once a read newer than the booking shows the
     * pod still pending well after every Binding of it must have ended (a
     * pending pod's retried bind re-reserves).
     */
    if (age > (int64_t)cfg->reservation_ttl_s * 1000 ||
        (fresh && age > 4 * (int64_t)cfg->bind_deadline_ms)) {
        return GX_FIX_RELEASE;
    }
    return GX_FIX_NONE;
}
