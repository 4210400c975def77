/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app_bind.c - bind and the ledger reconciler.
 *
 * File mode (no API server): bind records the assignment in the in-process
 * ledger and answers at once.
 *
 * Live mode: the MHD connection stays suspended while the bind runs as a
 * chain of API calls, each bounded by ledger.bind_deadline_ms:
 *   [GET pod, when filter did not see it here]
 *   -> reserve: compare-and-swap the node's Lease (idempotent per pod UID)
 *   -> PATCH the pod: assignment annotations + managed label
 *   -> POST the Binding (409 with the pod already on this node = success)
 *   -> answer; mark the tenant bound in the Lease in the background.
 * A failure after the reservation releases it again. A crash anywhere
 * leaves at worst a reservation the reconciler releases (or marks bound)
 * once it is older than two bind deadlines.
 */
#include <cjson/cJSON.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "app_int.h"
#include "gx/extender.h"
#include "gx/kobj.h"
#include "gx/log.h"

enum bind_step { STEP_POD, STEP_MOVE, STEP_RESERVE, STEP_PATCH, STEP_BINDING, STEP_RELEASE };

struct bind_op {
    struct gx_app *app;
    struct bind_op *prev, *next;
    struct gx_http_req *r;
    char ns[256], name[256], uid[GX_UID_MAX], node[256], other[256];
    struct gx_podreq req;
    enum bind_step step;
    int64_t deadline_ms;
    struct gx_httpc_xfer *xfer;
    int cards[GX_MAX_PICK];
    int n_cards;
    bool reserved; /* this op wrote the reservation (undo on failure) */
    char error[256];
};

static void
bind_answer(struct gx_app *app, struct gx_http_req *r, enum gx_bind_outcome o, const char *err)
{
    struct gx_buf out;

    app->metrics.binds[o]++;
    gx_buf_init(&out, 4096);
    if (gx_ext_encode_bind_result(&out, err) != GX_OK) {
        gx_buf_reset(&out);
    }
    app_respond_json(app, r, GX_VERB_BIND, 200, &out);
}

/* Turn a verdict into ledger tenants of pod @uid; returns how many. */
static size_t
tenants_for(const char *uid, const char *ns, const char *name, const struct gx_podreq *req,
            const struct gx_verdict *v, struct gx_tenant *t)
{
    size_t n = 0;
    int count = v->device_plugin || v->n_cards == 0 ? 1 : v->n_cards;

    if (req->kind == GX_REQ_NONE) {
        return 0;
    }
    for (int i = 0; i < count && i < GX_MAX_PICK; i++, n++) {
        memset(&t[n], 0, sizeof(t[n]));
        (void)snprintf(t[n].uid, sizeof(t[n].uid), "%s", uid);
        (void)snprintf(t[n].pod, sizeof(t[n].pod), "%s/%s", ns, name);
        t[n].card = v->device_plugin || v->n_cards == 0 ? GX_CARD_ANY : v->cards[i];
        t[n].exclusive = req->kind == GX_REQ_EXCLUSIVE && !v->device_plugin;
        t[n].slices = req->kind == GX_REQ_SHARED ? req->slices
                      : v->device_plugin         ? (int)req->gpus
                                                 : 0;
        t[n].memory_mib = req->kind == GX_REQ_SHARED ? req->memory_mib : 0;
        t[n].util_pct = req->kind == GX_REQ_SHARED ? req->util_pct : -1;
        t[n].state = GX_TENANT_RESERVED;
        t[n].since_ms = gx_wall_ms();
    }
    return n;
}

/*
 * Decide and record the pod on @node in @l (the truth for that node).
 * Already there: nothing to do. Cannot fit: @why holds the user-facing reason.
 */
static enum gx_err
reserve(struct gx_app *app, struct gx_ledger *l, const char *node, const char *uid, const char *ns,
        const char *name, const struct gx_podreq *req, int *cards, int *n_cards, bool *changed,
        struct gx_why *why)
{
    const struct gx_ledger_node *held = gx_ledger_find_pod(l, uid);
    const struct gx_node *sn = gx_snapshot_find(app->snap, node, strlen(node));
    struct gx_decide_ctx ctx;
    struct gx_verdict v;
    struct gx_tenant t[GX_MAX_PICK];
    int slots[256];
    size_t n, n_slots = 0;
    enum gx_err rc;

    *changed = false;
    *n_cards = 0;
    if (held != NULL && strcmp(held->node, node) == 0) {
        for (size_t i = 0; i < held->n_tenants && *n_cards < GX_MAX_PICK; i++) {
            if (strcmp(held->tenants[i].uid, uid) == 0 && held->tenants[i].card >= 0) {
                cards[(*n_cards)++] = held->tenants[i].card;
            }
        }
        return GX_OK;
    }
    if (held != NULL) {
        gx_why_set(why, "pod already holds GPUs on node %s", held->node);
        return GX_ECONFLICT;
    }
    app_decide_ctx(app, &ctx);
    ctx.ledger = l;
    gx_score_node(&ctx, req, sn, &v);
    if (req->kind != GX_REQ_NONE && !v.keep) {
        gx_why_set(why, "cannot bind to %s: %s", node, gx_reason_text(v.reason));
        return GX_ECONFLICT;
    }
    n = tenants_for(uid, ns, name, req, &v, t);
    if (n == 0) {
        return GX_OK;
    }
    for (; sn != NULL && n_slots < sn->n_cards && n_slots < GX_ARRAY_LEN(slots); n_slots++) {
        slots[n_slots] = gx_config_card_slots(app->cfg, sn->product, sn->replicas);
    }
    rc = gx_ledger_add(l, node, t, n, slots, n_slots);
    if (rc != GX_OK) {
        gx_why_set(why, "cannot reserve GPUs on %s: %s", node,
                   rc == GX_ECONFLICT ? gx_reason_text(GX_REASON_NO_SLOT) : gx_strerror(rc));
        return rc;
    }
    for (int i = 0; i < v.n_cards && i < GX_MAX_PICK; i++) {
        cards[i] = v.cards[i];
    }
    *n_cards = v.device_plugin ? 0 : v.n_cards;
    *changed = true;
    return GX_OK;
}

/* ---- file mode ---- */

static void
bind_local(struct gx_app *app, struct gx_http_req *r, const struct gx_ext_bind_args *b)
{
    const struct pod_seen *seen = app_recall_pod(app, b->pod_uid);
    struct gx_why why = {{0}};
    int cards[GX_MAX_PICK], n_cards = 0;
    bool changed = false;
    char msg[300];

    if (seen == NULL) {
        (void)snprintf(msg, sizeof(msg),
                       "pod %s/%s was not seen by filter on this extender, retry scheduling",
                       b->pod_namespace, b->pod_name);
        bind_answer(app, r, GX_BIND_ERROR, msg);
        return;
    }
    if (reserve(app, app->ledger, b->node, b->pod_uid, b->pod_namespace, b->pod_name, &seen->req,
                cards, &n_cards, &changed, &why) != GX_OK) {
        bind_answer(app, r, GX_BIND_REJECTED, why.text);
        return;
    }
    if (changed && gx_ledger_mark_bound(app->ledger, b->pod_uid) != GX_OK) {
        bind_answer(app, r, GX_BIND_ERROR, "ledger lost the reservation");
        return;
    }
    if (changed) {
        gx_info("pod bound", "req=%llu pod=%s/%s node=%s cards=%d",
                (unsigned long long)gx_http_id(r), b->pod_namespace, b->pod_name, b->node, n_cards);
    }
    bind_answer(app, r, changed ? GX_BIND_OK : GX_BIND_REPEAT, "");
}

/* ---- live mode ---- */

static void
op_free(struct bind_op *op)
{
    struct gx_app *app = op->app;

    if (op->prev != NULL) {
        op->prev->next = op->next;
    } else {
        app->binds = op->next;
    }
    if (op->next != NULL) {
        op->next->prev = op->prev;
    }
    gx_kube_cancel(op->app->kube, op->xfer);
    free(op);
}

static long
op_timeout(const struct bind_op *op)
{
    int64_t left = op->deadline_ms - gx_mono_ms();

    return left < 50 ? 50 : (long)left;
}

static void
op_done(struct bind_op *op, enum gx_bind_outcome o)
{
    struct gx_app *app = op->app;

    if (o == GX_BIND_OK || o == GX_BIND_REPEAT) {
        gx_info(o == GX_BIND_OK ? "pod bound" : "pod already bound here (retried bind)",
                "req=%llu pod=%s/%s node=%s cards=%d", (unsigned long long)gx_http_id(op->r),
                op->ns, op->name, op->node, op->n_cards);
    } else {
        gx_warn("bind failed", "req=%llu pod=%s/%s node=%s error=\"%s\"",
                (unsigned long long)gx_http_id(op->r), op->ns, op->name, op->node, op->error);
    }
    bind_answer(app, op->r, o, o == GX_BIND_OK || o == GX_BIND_REPEAT ? "" : op->error);
    op->r = NULL;
}

static enum gx_err
release_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    const char *uid = ctx;
    const struct gx_ledger_node *held = gx_ledger_find_pod(l, uid);

    (void)why;
    *write = held != NULL && strcmp(held->node, node) == 0 && gx_ledger_release(l, uid) > 0;
    return GX_OK;
}

static enum gx_err
bound_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    const char *uid = ctx;
    const struct gx_ledger_node *held = gx_ledger_find_pod(l, uid);

    (void)why;
    *write = false;
    if (held == NULL || strcmp(held->node, node) != 0) {
        return GX_OK;
    }
    for (size_t i = 0; i < held->n_tenants; i++) {
        if (strcmp(held->tenants[i].uid, uid) == 0 &&
            held->tenants[i].state == GX_TENANT_RESERVED) {
            *write = true;
        }
    }
    return *write ? gx_ledger_mark_bound(l, uid) : GX_OK;
}

/*
 * Background Lease update owning a copy of the pod UID. The UID is the first
 * member: the mutate callbacks read ctx as the UID string.
 */
struct bg {
    char uid[GX_UID_MAX];
    char node[256];
    struct gx_app *app;
    struct bg *prev, *next;
};

static void
bg_unlink_free(struct bg *b)
{
    if (b->prev != NULL) {
        b->prev->next = b->next;
    } else {
        b->app->bgs = b->next;
    }
    if (b->next != NULL) {
        b->next->prev = b->prev;
    }
    free(b);
}

static void
bg_done(void *ctx, enum gx_err rc, const char *why)
{
    struct bg *b = ctx;

    if (rc != GX_OK) {
        gx_warn("background ledger update failed; the reconciler will retry",
                "node=%s uid=%s error=\"%s\"", b->node, b->uid, why);
    }
    bg_unlink_free(b);
}

static void
bg_update(struct gx_app *app, const char *node, const char *uid, gx_leases_mutate_cb mutate)
{
    struct bg *b = calloc(1, sizeof(*b));

    if (b == NULL) {
        return;
    }
    (void)snprintf(b->uid, sizeof(b->uid), "%s", uid);
    (void)snprintf(b->node, sizeof(b->node), "%s", node);
    b->app = app;
    b->next = app->bgs;
    if (app->bgs != NULL) {
        app->bgs->prev = b;
    }
    app->bgs = b;
    if (!gx_leases_update(app->leases, node,
                          gx_mono_ms() + (int64_t)app->cfg->ledger_reconcile_s * 1000, mutate,
                          bg_done, b)) {
        bg_unlink_free(b);
    }
}

/* Fail the bind: undo our reservation (in the background) and answer. */
static void
op_fail(struct bind_op *op, const char *fmt, const char *detail)
{
    (void)snprintf(op->error, sizeof(op->error), fmt, detail);
    if (op->reserved) {
        bg_update(op->app, op->node, op->uid, release_mutate);
    }
    op_done(op, GX_BIND_ERROR);
    op_free(op);
}

static void op_reserve(struct bind_op *op);

static void
bound_pod_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;
    struct gx_arena a;
    struct gx_pod pod;
    bool ours;

    op->xfer = NULL;
    gx_arena_init(&a, 0);
    ours = rc == GX_OK && status == 200 &&
           gx_kobj_decode_pod(body, len, op->app->cfg->max_json_depth, &a, &pod, NULL) == GX_OK &&
           strcmp(pod.uid, op->uid) == 0 && pod.node_name != NULL &&
           strcmp(pod.node_name, op->node) == 0;
    gx_arena_release(&a);
    if (!ours) {
        op_fail(op, "%s", "the pod is already bound to another node");
        return;
    }
    if (op->req.kind != GX_REQ_NONE) {
        bg_update(op->app, op->node, op->uid, bound_mutate);
    }
    op_done(op, GX_BIND_REPEAT);
    op_free(op);
}

static void
binding_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;
    char detail[160], path[600];

    (void)body;
    (void)len;
    op->xfer = NULL;
    if (rc == GX_OK && (status == 200 || status == 201)) {
        if (op->req.kind != GX_REQ_NONE) {
            bg_update(op->app, op->node, op->uid, bound_mutate);
        }
        op_done(op, GX_BIND_OK);
        op_free(op);
        return;
    }
    if (rc == GX_OK && status == 409) {
        /* Already bound: fine if to this node (a retried bind whose Binding landed). */
        (void)snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", op->ns, op->name);
        op->xfer = gx_kube_request(op->app->kube, "GET", path, NULL, 0, NULL, op_timeout(op),
                                   bound_pod_done, op);
        if (op->xfer == NULL) {
            op_fail(op, "%s", "cannot start the pod read");
        }
        return;
    }
    (void)snprintf(detail, sizeof(detail), "%s, HTTP %ld", gx_strerror(rc), status);
    op_fail(op, "cannot create the binding: %s", detail);
}

static void
op_binding(struct bind_op *op)
{
    struct gx_buf b;
    char path[600];

    gx_buf_init(&b, 8192);
    if (gx_buf_adds(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":") ||
        gx_buf_add_json_str(&b, op->name, strlen(op->name)) || gx_buf_adds(&b, ",\"namespace\":") ||
        gx_buf_add_json_str(&b, op->ns, strlen(op->ns)) || gx_buf_adds(&b, ",\"uid\":") ||
        gx_buf_add_json_str(&b, op->uid, strlen(op->uid)) ||
        gx_buf_adds(&b, "},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":") ||
        gx_buf_add_json_str(&b, op->node, strlen(op->node)) || gx_buf_adds(&b, "}}")) {
        gx_buf_release(&b);
        op_fail(op, "%s", "cannot encode the binding");
        return;
    }
    op->step = STEP_BINDING;
    (void)snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", op->ns, op->name);
    op->xfer = gx_kube_request(op->app->kube, "POST", path, b.data, b.len, "application/json",
                               op_timeout(op), binding_done, op);
    gx_buf_release(&b);
    if (op->xfer == NULL) {
        op_fail(op, "%s", "cannot start the binding request");
    }
}

static void
patch_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;
    char detail[160];

    (void)body;
    (void)len;
    op->xfer = NULL;
    if (rc == GX_OK && status == 200) {
        op_binding(op);
        return;
    }
    (void)snprintf(detail, sizeof(detail), "%s, HTTP %ld", gx_strerror(rc), status);
    op_fail(op, "cannot annotate the pod: %s", detail);
}

/* Comma-joined card UUIDs (index when unknown) and indexes. */
static void
assignment(const struct bind_op *op, char *uuids, size_t nu, char *idx, size_t ni)
{
    const struct gx_node *sn = gx_snapshot_find(op->app->snap, op->node, strlen(op->node));
    size_t ou = 0, oi = 0;

    uuids[0] = idx[0] = '\0';
    for (int i = 0; i < op->n_cards; i++) {
        int c = op->cards[i];
        const char *uuid = sn != NULL && (size_t)c < sn->n_cards ? sn->cards[c].uuid : NULL;
        int w;

        if (uuid != NULL) {
            w = snprintf(uuids + ou, nu - ou, "%s%s", i ? "," : "", uuid);
        } else {
            w = snprintf(uuids + ou, nu - ou, "%s%d", i ? "," : "", c);
        }
        ou += w > 0 && (size_t)w < nu - ou ? (size_t)w : 0;
        w = snprintf(idx + oi, ni - oi, "%s%d", i ? "," : "", c);
        oi += w > 0 && (size_t)w < ni - oi ? (size_t)w : 0;
    }
}

static void
op_patch(struct bind_op *op)
{
    const struct gx_config *cfg = op->app->cfg;
    char uuids[2048], idx[256], slices[16], path[600];
    struct gx_buf b;
    bool fail;

    assignment(op, uuids, sizeof(uuids), idx, sizeof(idx));
    (void)snprintf(slices, sizeof(slices), "%d",
                   op->req.kind == GX_REQ_SHARED ? op->req.slices : 0);
    gx_buf_init(&b, 16384);
    fail = gx_buf_adds(&b, "{\"metadata\":{\"labels\":{") ||
           gx_buf_add_json_str(&b, cfg->managed_label, strlen(cfg->managed_label)) ||
           gx_buf_adds(&b, ":\"true\"},\"annotations\":{");
    if (!fail && op->n_cards > 0) {
        fail = gx_buf_add_json_str(&b, cfg->ann_uuids, strlen(cfg->ann_uuids)) ||
               gx_buf_adds(&b, ":") || gx_buf_add_json_str(&b, uuids, strlen(uuids)) ||
               gx_buf_adds(&b, ",") ||
               gx_buf_add_json_str(&b, cfg->ann_index, strlen(cfg->ann_index)) ||
               gx_buf_adds(&b, ":") || gx_buf_add_json_str(&b, idx, strlen(idx)) ||
               gx_buf_adds(&b, ",");
    }
    if (!fail) {
        fail = gx_buf_add_json_str(&b, cfg->ann_slices, strlen(cfg->ann_slices)) ||
               gx_buf_adds(&b, ":") || gx_buf_add_json_str(&b, slices, strlen(slices)) ||
               gx_buf_adds(&b, "}}}");
    }
    if (fail) {
        gx_buf_release(&b);
        op_fail(op, "%s", "cannot encode the pod patch");
        return;
    }
    op->step = STEP_PATCH;
    (void)snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", op->ns, op->name);
    op->xfer = gx_kube_request(op->app->kube, "PATCH", path, b.data, b.len,
                               "application/merge-patch+json", op_timeout(op), patch_done, op);
    gx_buf_release(&b);
    if (op->xfer == NULL) {
        op_fail(op, "%s", "cannot start the pod patch");
    }
}

static enum gx_err
reserve_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct bind_op *op = ctx;

    return reserve(op->app, l, node, op->uid, op->ns, op->name, &op->req, op->cards, &op->n_cards,
                   write, why);
}

static void
reserve_done(void *ctx, enum gx_err rc, const char *why)
{
    struct bind_op *op = ctx;

    if (rc != GX_OK) {
        (void)snprintf(op->error, sizeof(op->error), "%s", why[0] ? why : gx_strerror(rc));
        op_done(op, rc == GX_ECONFLICT ? GX_BIND_REJECTED : GX_BIND_ERROR);
        op_free(op);
        return;
    }
    op->reserved = true;
    op_patch(op);
}

static void
move_done(void *ctx, enum gx_err rc, const char *why)
{
    struct bind_op *op = ctx;

    if (rc != GX_OK) {
        (void)snprintf(op->error, sizeof(op->error), "cannot release the old reservation: %s", why);
        op_done(op, GX_BIND_ERROR);
        op_free(op);
        return;
    }
    op_reserve(op);
}

static enum gx_err
move_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct bind_op *op = ctx;

    return release_mutate(op->uid, l, node, write, why);
}

static void
op_reserve(struct bind_op *op)
{
    const struct gx_ledger_node *held = gx_ledger_find_pod(op->app->ledger, op->uid);

    /* A reservation left on another node (a bind that failed there) moves here. */
    if (held != NULL && strcmp(held->node, op->node) != 0 && op->step != STEP_MOVE) {
        op->step = STEP_MOVE;
        (void)snprintf(op->other, sizeof(op->other), "%s", held->node);
        if (!gx_leases_update(op->app->leases, op->other, op->deadline_ms, move_mutate, move_done,
                              op)) {
            op_fail(op, "%s", "cannot start the ledger update");
        }
        return;
    }
    op->step = STEP_RESERVE;
    if (!gx_leases_update(op->app->leases, op->node, op->deadline_ms, reserve_mutate, reserve_done,
                          op)) {
        op_fail(op, "%s", "cannot start the ledger update");
    }
}

static void
pod_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_why why = {{0}};
    char detail[300];

    op->xfer = NULL;
    if (rc != GX_OK || status != 200) {
        (void)snprintf(detail, sizeof(detail), "%s, HTTP %ld", gx_strerror(rc), status);
        op_fail(op, "cannot read the pod: %s", detail);
        return;
    }
    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_pod(body, len, op->app->cfg->max_json_depth, &a, &pod, &why);
    if (rc == GX_OK && strcmp(pod.uid, op->uid) != 0) {
        gx_why_set(&why, "the pod was replaced (uid %s)", pod.uid);
        rc = GX_ECONFLICT;
    }
    if (rc == GX_OK) {
        rc = gx_podreq_parse(op->app->cfg, &pod, &op->req, &why);
    }
    gx_arena_release(&a);
    if (rc != GX_OK) {
        op_fail(op, "%s", why.text);
        return;
    }
    if (op->req.kind == GX_REQ_NONE) {
        op_binding(op);
    } else {
        op_reserve(op);
    }
}

static void
bind_live(struct gx_app *app, struct gx_http_req *r, const struct gx_ext_bind_args *b)
{
    struct bind_op *op = calloc(1, sizeof(*op));
    const struct pod_seen *seen;
    char path[600];

    if (op == NULL || strlen(b->pod_uid) >= sizeof(op->uid) ||
        strlen(b->pod_namespace) >= sizeof(op->ns) || strlen(b->pod_name) >= sizeof(op->name) ||
        strlen(b->node) >= sizeof(op->node)) {
        free(op);
        bind_answer(app, r, GX_BIND_ERROR, "bind arguments too long");
        return;
    }
    op->app = app;
    op->r = r;
    (void)snprintf(op->ns, sizeof(op->ns), "%s", b->pod_namespace);
    (void)snprintf(op->name, sizeof(op->name), "%s", b->pod_name);
    (void)snprintf(op->uid, sizeof(op->uid), "%s", b->pod_uid);
    (void)snprintf(op->node, sizeof(op->node), "%s", b->node);
    op->deadline_ms = gx_http_start_ms(r) + app->cfg->bind_deadline_ms;
    op->next = app->binds;
    if (app->binds != NULL) {
        app->binds->prev = op;
    }
    app->binds = op;
    seen = app_recall_pod(app, op->uid);
    if (seen != NULL) {
        op->req = seen->req;
        if (op->req.kind == GX_REQ_NONE) {
            op_binding(op);
        } else {
            op_reserve(op);
        }
        return;
    }
    /* Filter ran on another replica: the pod itself tells what it asks for. */
    op->step = STEP_POD;
    (void)snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", op->ns, op->name);
    op->xfer = gx_kube_request(app->kube, "GET", path, NULL, 0, NULL, op_timeout(op), pod_done, op);
    if (op->xfer == NULL) {
        op_fail(op, "%s", "cannot start the pod read");
    }
}

void
app_handle_bind(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_ext_bind_args b;
    struct gx_why why = {{0}};
    size_t len;
    const char *body = gx_http_body(r, &len);

    if (gx_ext_decode_bind(body, len, app->cfg->max_json_depth, &b, &why) != GX_OK) {
        app_respond_error(app, r, GX_VERB_BIND, 400, why.text);
        return;
    }
    if (app->leases != NULL) {
        bind_live(app, r, &b);
    } else {
        bind_local(app, r, &b);
    }
    gx_ext_bind_args_release(&b);
}

/* ---- managed pods and the reconciler ---- */

static bool
pod_finished(const struct gx_pod *pod)
{
    return pod->deleting || strcmp(pod->phase, "Succeeded") == 0 ||
           strcmp(pod->phase, "Failed") == 0;
}

static void
pod_state_put(struct gx_app *app, const struct gx_pod *pod)
{
    struct pod_state *ps;
    size_t len = strlen(pod->uid);

    if (len == 0 || len >= GX_UID_MAX) {
        return;
    }
    ps = gx_strmap_get(&app->pod_states, pod->uid, len);
    if (ps == NULL) {
        ps = calloc(1, sizeof(*ps));
        if (ps == NULL) {
            return;
        }
        memcpy(ps->uid, pod->uid, len + 1);
        if (gx_strmap_put(&app->pod_states, ps->uid, len, ps) != GX_OK) {
            free(ps);
            return;
        }
    }
    (void)snprintf(ps->node, sizeof(ps->node), "%s", pod->node_name ? pod->node_name : "");
    ps->finished = pod_finished(pod);
}

static void
pod_states_clear(struct gx_app *app)
{
    size_t pos = 0;
    void *v;

    while ((v = gx_strmap_next(&app->pod_states, &pos, NULL, NULL)) != NULL) {
        free(v);
    }
    gx_strmap_release(&app->pod_states);
}

void
app_pod_event(void *ctx, enum gx_watch_type type, const struct gx_pod *pod)
{
    struct gx_app *app = ctx;

    if (type == GX_WATCH_DELETED) {
        free(gx_strmap_del(&app->pod_states, pod->uid, strlen(pod->uid)));
    } else if (type == GX_WATCH_ADDED || type == GX_WATCH_MODIFIED) {
        pod_state_put(app, pod);
    }
}

void
app_pods_listed(void *ctx, const struct gx_pod *pods, size_t n)
{
    struct gx_app *app = ctx;

    pod_states_clear(app);
    for (size_t i = 0; i < n; i++) {
        pod_state_put(app, &pods[i]);
    }
    if (!app->pods_synced) {
        gx_info("managed pods synced", "pods=%zu", n);
    }
    app->pods_synced = true;
}

enum tenant_fix { FIX_NONE, FIX_RELEASE, FIX_BOUND };

/* What the reconciler does with tenant @t of @node, from the managed pods seen. */
static enum tenant_fix
tenant_fix(const struct gx_app *app, const char *node, const struct gx_tenant *t, int64_t now)
{
    const struct pod_state *ps = gx_strmap_get(&app->pod_states, t->uid, strlen(t->uid));
    /* Younger tenants may belong to a bind in flight or to watch events on their way. */
    bool settled = now - t->since_ms > 2 * (int64_t)app->cfg->bind_deadline_ms;

    if (ps != NULL && ps->finished) {
        return FIX_RELEASE;
    }
    if (ps != NULL && ps->node[0] != '\0') {
        return strcmp(ps->node, node) != 0
                   ? FIX_RELEASE
                   : (t->state == GX_TENANT_RESERVED ? FIX_BOUND : FIX_NONE);
    }
    if (!settled) {
        return FIX_NONE;
    }
    if (t->state == GX_TENANT_BOUND) {
        return ps == NULL ? FIX_RELEASE : FIX_NONE;
    }
    /* Reserved, never bound: released after the TTL (a pending pod's retried bind re-reserves). */
    return now - t->since_ms > (int64_t)app->cfg->reservation_ttl_s * 1000 ||
                   (ps == NULL && now - t->since_ms > 4 * (int64_t)app->cfg->bind_deadline_ms)
               ? FIX_RELEASE
               : FIX_NONE;
}

static enum gx_err
reconcile_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct gx_app *app = ctx;
    const struct gx_ledger_node *e = gx_ledger_node(l, node);
    char uids[64][GX_UID_MAX];
    enum tenant_fix fixes[64];
    size_t n = 0;
    int64_t now = gx_wall_ms();

    (void)why;
    *write = false;
    for (size_t i = 0; e != NULL && i < e->n_tenants && n < GX_ARRAY_LEN(uids); i++) {
        enum tenant_fix f = tenant_fix(app, node, &e->tenants[i], now);
        if (f == FIX_NONE) {
            continue;
        }
        (void)snprintf(uids[n], sizeof(uids[n]), "%s", e->tenants[i].uid);
        fixes[n++] = f;
    }
    for (size_t i = 0; i < n; i++) {
        if (fixes[i] == FIX_RELEASE && gx_ledger_release(l, uids[i]) > 0) {
            gx_info("ledger released a tenant", "node=%s uid=%s", node, uids[i]);
            *write = true;
        } else if (fixes[i] == FIX_BOUND && gx_ledger_mark_bound(l, uids[i]) == GX_OK) {
            *write = true;
        }
    }
    return GX_OK;
}

static void
reconcile_done(void *ctx, enum gx_err rc, const char *why)
{
    (void)ctx;
    if (rc != GX_OK) {
        gx_warn("ledger reconcile of a node failed, retrying next round", "error=\"%s\"", why);
    }
}

struct reconcile_scan {
    struct gx_app *app;
    int64_t now;
    char nodes[256][256];
    size_t n;
};

static void
scan_node(void *ctx, const struct gx_ledger_node *e)
{
    struct reconcile_scan *s = ctx;

    for (size_t i = 0; i < e->n_tenants && s->n < GX_ARRAY_LEN(s->nodes); i++) {
        if (tenant_fix(s->app, e->node, &e->tenants[i], s->now) != FIX_NONE) {
            (void)snprintf(s->nodes[s->n++], sizeof(s->nodes[0]), "%s", e->node);
            return;
        }
    }
}

static void
reconcile_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;
    struct reconcile_scan *s;
    struct timeval tv = {app->cfg->ledger_reconcile_s, 0};

    (void)fd;
    (void)what;
    s = calloc(1, sizeof(*s));
    if (s != NULL && app->pods_synced && gx_leases_synced(app->leases)) {
        s->app = app;
        s->now = gx_wall_ms();
        gx_ledger_each(app->ledger, scan_node, s);
        for (size_t i = 0; i < s->n; i++) {
            (void)gx_leases_update(app->leases, s->nodes[i],
                                   gx_mono_ms() + (int64_t)app->cfg->ledger_reconcile_s * 1000,
                                   reconcile_mutate, reconcile_done, app);
        }
    }
    free(s);
    (void)evtimer_add(app->reconcile_timer, &tv);
}

enum gx_err
app_start_ledger(struct gx_app *app)
{
    struct timeval tv = {app->cfg->ledger_reconcile_s, 0};

    gx_strmap_init(&app->pod_states);
    app->leases = gx_leases_new(app->base, app->kube, app->cfg, app->ledger, &app->metrics);
    app->reconcile_timer = evtimer_new(app->base, reconcile_cb, app);
    if (app->leases == NULL || app->reconcile_timer == NULL) {
        return GX_ENOMEM;
    }
    (void)evtimer_add(app->reconcile_timer, &tv);
    return GX_OK;
}

void
app_stop_ledger(struct gx_app *app)
{
    struct bind_op *op, *op_next;
    struct bg *b, *b_next;

    for (op = app->binds; op != NULL; op = op_next) {
        op_next = op->next;
        op_free(op);
    }
    gx_leases_free(app->leases); /* cancels every update without callbacks */
    app->leases = NULL;
    for (b = app->bgs; b != NULL; b = b_next) {
        b_next = b->next;
        bg_unlink_free(b);
    }
    if (app->reconcile_timer != NULL) {
        event_free(app->reconcile_timer);
    }
    app->reconcile_timer = NULL;
    pod_states_clear(app);
}
