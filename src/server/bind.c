/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bind.c - the bind chain (see bind.h). One enum of states; op_enter() is
 * the only function that changes state and starts that state's call; each
 * completion decides the next state, success or failure.
 */
#include "bind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgwrite.h"
#include "admit.h"
#include "extender.h"
#include "gang_bind.h"
#include "gang_filter.h"
#include "gate.h"
#include "kube.h"
#include "kwrite.h"
#include "log.h"
#include "reply.h"
#include "requeue.h"
#include "seen.h"
#include "sync.h"

#define LABEL_TRIES 3 /* the label PATCH and two more tries (label_done) */

/* The states before the Lease has the booking come first (op_times counts them as its time). */
enum bind_state {
    BS_READ_POD,
    BS_MOVE_CHECK, /* a booking on another node: where is the pod before it moves? */
    BS_MOVE,
    BS_RESERVE,
    BS_GANG_WAIT, /* reserved; the other members' reservations are not all written yet */
    BS_LABEL,     /* the Lease is written; the label PATCH sent alongside it is not answered yet */
    BS_BINDING,
    BS_CHECK
};

struct bind_op {
    struct gx_app *app;
    LIST_ENTRY(bind_op) link;
    struct gx_http_req *r;
    struct gx_gate_job gate; /* app->bind_gate: ledger.binds_in_flight at once */
    char ns[256], name[256], uid[GX_UID_MAX], node[256], other[256];
    struct gx_podreq req;
    enum bind_state state;
    int64_t deadline_ms;
    int64_t begun_ms, reserved_ms; /* the gate let it in, the Lease had it (0: not yet) */
    struct gx_httpc_xfer *xfer;
    struct gx_admit_plan plan;
    struct gx_tenant gang[GX_MAX_PICK]; /* the cards a gang member's entry planned here */
    size_t n_gang;
    struct gx_gang_waiter gw; /* its gang's barrier, when this replica planned the gang */
    int64_t other_booking;    /* MOVE: stamp of the booking seen on @other */
    bool reserved;            /* this op wrote the reservation (undo on failure) */
    bool uncertain;       /* the Binding may have landed: never undo, let the pod's state decide */
    bool shown;           /* its booking is shown in the cache while it is written (hold) */
    bool req_known;       /* filter told what the pod asks for (else BS_READ_POD reads it) */
    int label_tries;      /* label PATCHes sent (LABEL_TRIES at most) */
    bool binding_retried; /* the Binding was sent again after the pod showed it had not landed */
    enum { LABEL_UNSENT, LABEL_SENT, LABEL_DONE, LABEL_FAILED } label;
    char label_error[300];
    char binding_error[300];
    char error[512];
};

static void op_enter(struct bind_op *op, enum bind_state st);
static void label_send(struct bind_op *op);

/* The pod of @op for the planner. */
static struct gx_admit_pod
op_pod(const struct bind_op *op)
{
    struct gx_admit_pod p = {op->uid, op->ns, op->name, &op->req};
    return p;
}

/*
 * Book @pod on @node in @l: a gang member with an entry on @node takes
 * exactly the cards the entry planned (the other members' entries were
 * planned around them); when one of them was taken meanwhile, or for any
 * other pod, the planner chooses as usual.
 */
static enum gx_err
reserve(const struct gx_decide_ctx *dc, struct gx_ledger *l, const char *node,
        const struct gx_admit_pod *pod, const struct gx_tenant *gang, size_t n_gang,
        struct gx_admit_plan *plan, struct gx_why *why)
{
    enum gx_err rc;

    if (n_gang > 0 &&
        (rc = gx_admit_reserve_as(dc, l, node, pod, gang, n_gang, plan, why)) != GX_ECONFLICT) {
        return rc;
    }
    return gx_admit_reserve(dc, l, node, pod, plan, why);
}

/* ---- file mode ---- */

static void
bind_local(struct gx_app *app, struct gx_http_req *r, const struct gx_ext_bind_args *b)
{
    const struct gx_seen_pod *seen = gx_seen_get(app->seen, b->pod_uid, gx_mono_ms());
    struct gx_why why = {{0}};
    struct gx_admit_pod pod = {b->pod_uid, b->pod_namespace, b->pod_name, NULL};
    struct gx_admit_plan plan;
    struct gx_decide_ctx ctx;
    struct gx_tenant gang[GX_MAX_PICK];
    size_t n_gang;
    char msg[300];

    if (seen == NULL) {
        (void)snprintf(msg, sizeof(msg),
                       "pod %s/%s was not seen by filter on this extender, retry scheduling",
                       b->pod_namespace, b->pod_name);
        gx_reply_bind(&app->metrics, r, GX_BIND_ERROR, msg);
        return;
    }
    pod.req = &seen->req;
    gx_sync_decide_ctx(app, &ctx);
    n_gang = gx_gang_bind_plan(app, b->pod_uid, b->node, gang);
    if (reserve(&ctx, app->ledger, b->node, &pod, gang, n_gang, &plan, &why) != GX_OK) {
        gx_reply_bind(&app->metrics, r, GX_BIND_REJECTED, why.text);
        return;
    }
    gx_gang_booked(app, b->pod_uid);
    if (plan.changed && gx_ledger_mark_bound(app->ledger, b->pod_uid) != GX_OK) {
        gx_reply_bind(&app->metrics, r, GX_BIND_ERROR, "ledger lost the reservation");
        return;
    }
    if (plan.changed) {
        char q[700], qn[300];
        gx_info("pod bound", "req=%llu pod=%s node=%s cards=%d", (unsigned long long)gx_http_id(r),
                gx_log_quote_pod(q, sizeof(q), b->pod_namespace, b->pod_name),
                gx_log_quote(qn, sizeof(qn), b->node), plan.n_cards);
    }
    gx_reply_bind(&app->metrics, r, plan.changed ? GX_BIND_OK : GX_BIND_REPEAT, "");
}

/* ---- live mode: ends ---- */

/* Stop showing the tentative booking of @op (gx_leases_hold); @booked: the Lease has it now. */
static void
op_unhold(struct bind_op *op, bool booked)
{
    if (op->shown) {
        gx_leases_unhold(op->app->leases, op->uid, booked);
        op->shown = false;
    }
}

static void
op_free(struct bind_op *op)
{
    op_unhold(op, false);
    gx_gate_leave(&op->app->bind_gate, &op->gate);
    gx_gang_bind_leave(&op->gw);
    LIST_REMOVE(op, link);
    gx_kube_cancel(op->app->sync.kube, op->xfer);
    free(op);
}

static long
op_timeout(const struct bind_op *op)
{
    int64_t left = op->deadline_ms - gx_mono_ms();
    /* finding out where a pod went is worth a little past the deadline: a guess loses bookings */
    int64_t floor = op->state == BS_CHECK || op->state == BS_MOVE_CHECK ? 500 : 50;

    return left < floor ? (long)floor : (long)left;
}

/* Where @op's time went, for its log line: waiting at the gate, the Lease round, the rest. */
static const char *
op_times(const struct bind_op *op, char *buf, size_t size)
{
    int64_t start = gx_http_start_ms(op->r), now = gx_mono_ms();
    int64_t begun = op->begun_ms ? op->begun_ms : now;
    /* a bind that ended before the Lease had it spent its time there, unless it never went */
    int64_t reserved = op->reserved_ms ? op->reserved_ms : op->state <= BS_RESERVE ? now : begun;

    (void)snprintf(buf, size, "ms=%lld gate_ms=%lld lease_ms=%lld", (long long)(now - start),
                   (long long)(begun - start), (long long)(reserved - begun));
    return buf;
}

/* Answer with outcome @o, then free @op. */
static void
op_finish(struct bind_op *op, enum gx_bind_outcome o)
{
    bool ok = o == GX_BIND_OK || o == GX_BIND_REPEAT;
    char q[600], qp[700], qn[300], t[96];

    if (ok) {
        gx_info(o == GX_BIND_OK ? "pod bound" : "pod already bound here (retried bind)",
                "req=%llu pod=%s node=%s cards=%d %s", (unsigned long long)gx_http_id(op->r),
                gx_log_quote_pod(qp, sizeof(qp), op->ns, op->name),
                gx_log_quote(qn, sizeof(qn), op->node), op->plan.n_cards,
                op_times(op, t, sizeof(t)));
        if (op->req.kind != GX_REQ_NONE) {
            gx_bg_write(op->app, GX_BG_BOUND, op->node, op->uid);
        }
        gx_requeue_done(op->app, op->uid);
    } else {
        gx_warn("bind failed", "req=%llu pod=%s node=%s error=%s %s",
                (unsigned long long)gx_http_id(op->r),
                gx_log_quote_pod(qp, sizeof(qp), op->ns, op->name),
                gx_log_quote(qn, sizeof(qn), op->node), gx_log_quote(q, sizeof(q), op->error),
                op_times(op, t, sizeof(t)));
        gx_gang_bind_failed(&op->gw); /* before any Binding: its gang fails whole */
    }
    if (op->gate.state == GX_GATE_RUNNING) {
        /* out of time: the API server is slower than this many binds at once allow */
        gx_gate_feedback(&op->app->bind_gate, !ok && gx_mono_ms() + 50 >= op->deadline_ms);
    }
    gx_reply_bind(&op->app->metrics, op->r, o, ok ? "" : op->error);
    op_free(op);
}

/* Fail the bind: undo our reservation (in the background) and answer. */
static void
op_fail(struct bind_op *op, enum gx_bind_outcome o, const char *what, const char *detail)
{
    (void)snprintf(op->error, sizeof(op->error), "%s%s%s", what, detail[0] ? ": " : "", detail);
    if (op->reserved) {
        /* only this attempt's booking: a retry that took it over keeps it */
        gx_bg_release(op->app, op->node, op->uid, op->plan.booking);
    }
    op_finish(op, o);
}

/* Fail after an API call of @what answered @status (or failed with @rc). */
static void
op_fail_call(struct bind_op *op, const char *what, enum gx_err rc, long status, const char *body,
             size_t len)
{
    char detail[300];

    gx_kobj_failure_text(rc, status, body, len, detail, sizeof(detail));
    op_fail(op, GX_BIND_ERROR, what, detail);
}

/* ---- live mode: completions ---- */

static void
read_pod_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_why why = {{0}};

    op->xfer = NULL;
    if (rc != GX_OK || status != 200) {
        op_fail_call(op, "cannot read the pod", rc, status, body, len);
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
        op_fail(op, GX_BIND_ERROR, why.text, "");
        return;
    }
    op_enter(op, op->req.kind == GX_REQ_NONE ? BS_BINDING : BS_RESERVE);
}

static enum gx_err
move_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct bind_op *op = ctx;

    (void)why;
    *write = gx_bg_release_booking(l, node, op->uid, op->other_booking);
    return GX_OK;
}

static void
move_done(void *ctx, enum gx_err rc, const char *why)
{
    struct bind_op *op = ctx;

    if (rc != GX_OK) {
        op_fail(op, GX_BIND_ERROR, "cannot release the old reservation", why);
        return;
    }
    op_enter(op, BS_RESERVE);
}

static enum gx_err
reserve_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct bind_op *op = ctx;
    struct gx_admit_pod pod = op_pod(op);
    struct gx_decide_ctx dc;
    enum gx_err rc;

    gx_sync_decide_ctx(op->app, &dc);
    rc = reserve(&dc, l, node, &pod, op->gang, op->n_gang, &op->plan, why);
    *write = op->plan.changed || op->plan.renewed;
    return rc;
}

/* A gang member's bind that fails because another member's did (gang_bind.h). */
#define GANG_FAILED                                                                                \
    "another member of the pod's gang could not be booked; the gang is tried again whole"

/* The reservation is written (and the gang's, for a member): label, then Binding. */
static void
after_reserve(struct bind_op *op)
{
    if (gx_mono_ms() >= op->deadline_ms) {
        /* a round carried it past its deadline: a Binding now could land after the answer */
        op_fail(op, GX_BIND_ERROR, "the ledger lease was written after the bind's deadline", "");
        return;
    }
    if (op->label == LABEL_UNSENT) {
        label_send(op);
    }
    if (op->label == LABEL_FAILED) {
        op_fail(op, GX_BIND_ERROR, "cannot label the pod", op->label_error);
    } else {
        op_enter(op, op->label == LABEL_DONE ? BS_BINDING : BS_LABEL);
    }
}

static void
reserve_done(void *ctx, enum gx_err rc, const char *why)
{
    struct bind_op *op = ctx;

    op_unhold(op, rc == GX_OK); /* the Lease has the booking now, or the bind fails */
    if (rc == GX_OK) {
        op->reserved_ms = gx_mono_ms();
        gx_gang_booked(op->app, op->uid); /* its own booking holds the cards from now on */
    }
    if (rc != GX_OK) {
        op_fail(op, rc == GX_ECONFLICT ? GX_BIND_REJECTED : GX_BIND_ERROR,
                why[0] ? why : gx_strerror(rc), "");
        return;
    }
    /* undo only a booking this attempt created: a renewed one may carry an earlier Binding */
    op->reserved = op->plan.changed;
    switch (gx_gang_bind_reserved(&op->gw)) {
    case GX_BARRIER_OPEN:
        /* its slot goes to the next bind: a gang larger than the window would wait for good */
        gx_gate_leave(&op->app->bind_gate, &op->gate);
        op->state = BS_GANG_WAIT;
        return;
    case GX_BARRIER_FAILED:
        op_fail(op, GX_BIND_ERROR, GANG_FAILED, "");
        return;
    case GX_BARRIER_GO:
        break;
    }
    after_reserve(op);
}

/* The gang barrier let @ctx go on (@ok), or failed its gang. */
static void
gang_go(void *ctx, bool ok)
{
    struct bind_op *op = ctx;

    if (!ok) {
        op_fail(op, GX_BIND_ERROR, GANG_FAILED, "");
        return;
    }
    after_reserve(op);
}

/*
 * The label PATCH runs alongside the Lease round (both must land before the
 * Binding, neither needs the other): one write less one after another in the
 * bind's deadline, the cause of most failed binds under a slow API server.
 * It goes once the cache shows the pod fits (show_booking), else once the
 * Lease has it.
 */
static void
label_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;

    op->xfer = NULL;
    if (rc == GX_OK && status == 200) {
        op->label = LABEL_DONE;
        if (op->state == BS_LABEL) {
            op_enter(op, BS_BINDING);
        }
        return;
    }
    /*
     * The merge patch is idempotent: tried again while half the bind's
     * deadline is left for it and the Binding. A failed bind costs
     * kube-scheduler a whole new attempt; with one retry, one bind in a
     * hundred and fifty failed here in a faulty burst (8 % of calls lost).
     */
    if (op->label_tries < LABEL_TRIES && gx_kobj_retryable(rc, status) &&
        op->deadline_ms - gx_mono_ms() >= op->app->cfg->bind_deadline_ms / 2) {
        label_send(op);
    } else {
        op->label = LABEL_FAILED;
        gx_kobj_failure_text(rc, status, body, len, op->label_error, sizeof(op->label_error));
    }
    /* while the Lease write is in flight, its end fails the bind */
    if (op->label == LABEL_FAILED && (op->state == BS_LABEL || op->state == BS_GANG_WAIT)) {
        op_fail(op, GX_BIND_ERROR, "cannot label the pod", op->label_error);
    }
}

static void
binding_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;

    op->xfer = NULL;
    if (rc == GX_OK && (status == 200 || status == 201)) {
        op_finish(op, GX_BIND_OK);
    } else if (rc == GX_OK && status == 409) {
        /* Already bound: fine if to this node (a retried bind whose Binding landed). */
        op_enter(op, BS_CHECK);
    } else if (rc != GX_OK || status >= 500) {
        /*
         * Unknown outcome: a timed-out or failed call may still be applied by
         * the API server, so the booking must stay until the pod shows where
         * it went (releasing it here over-admitted cards under bursts).
         */
        op->uncertain = true;
        gx_kobj_failure_text(rc, status, body, len, op->binding_error, sizeof(op->binding_error));
        op_enter(op, BS_CHECK);
    } else {
        op_fail_call(op, "cannot create the binding", rc, status, body, len);
    }
}

/* Where CHECK (or MOVE_CHECK) found the pod: unknown (the read failed), pending, here, elsewhere,
 * deleted. */
enum pod_where { PW_UNKNOWN, PW_PENDING, PW_HERE, PW_ELSEWHERE, PW_DELETED };

static enum pod_where
pod_where(const struct bind_op *op, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_arena a;
    struct gx_pod pod;
    enum pod_where w = PW_UNKNOWN;

    if (rc == GX_OK && status == 404) {
        return PW_DELETED; /* no pod of that name: no Binding of ours can land any more */
    }
    gx_arena_init(&a, 0);
    if (rc == GX_OK && status == 200 &&
        gx_kobj_decode_pod(body, len, op->app->cfg->max_json_depth, &a, &pod, NULL) == GX_OK) {
        if (strcmp(pod.uid, op->uid) != 0 ||
            (pod.node_name != NULL && strcmp(pod.node_name, op->node) != 0)) {
            w = PW_ELSEWHERE; /* replaced, or bound once and for all to another node */
        } else {
            w = pod.node_name != NULL ? PW_HERE : PW_PENDING;
        }
    }
    gx_arena_release(&a);
    return w;
}

static void
check_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;
    enum pod_where w;

    op->xfer = NULL;
    w = pod_where(op, rc, status, body, len);
    if (w == PW_HERE) {
        op_finish(op, op->uncertain ? GX_BIND_OK : GX_BIND_REPEAT);
    } else if (w == PW_PENDING && op->uncertain && !op->binding_retried &&
               op->deadline_ms - gx_mono_ms() >= op->app->cfg->bind_deadline_ms / 4) {
        /*
         * Not landed (a reset, or lost): once more to the same node while
         * time is left. Should the first still land, the second hears 409
         * and the pod shows it here; a failed bind costs a whole attempt.
         */
        op->binding_retried = true;
        op_enter(op, BS_BINDING);
    } else if (w == PW_ELSEWHERE) {
        op_fail(op, GX_BIND_ERROR, "the pod is already bound to another node", "");
    } else if (w == PW_DELETED) {
        op_fail(op, GX_BIND_ERROR, "the pod was deleted", "");
    } else {
        /*
         * Only a pod seen elsewhere or deleted frees the booking: one whose read failed
         * may be bound here already (a 409 after an earlier attempt's late
         * Binding). The reconciler marks it bound or releases it.
         */
        op->reserved = false;
        op_fail(op, GX_BIND_ERROR,
                op->uncertain ? "cannot create the binding (booking kept until the pod settles)"
                              : "the binding conflicted and the pod could not be read (booking "
                                "kept until the pod settles)",
                op->binding_error);
    }
}

/* Where the pod is decides whether its booking on the other node may move here. */
static void
move_check_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct bind_op *op = ctx;

    op->xfer = NULL;
    if (pod_where(op, rc, status, body, len) != PW_PENDING) {
        /* bound (there, most likely), replaced, deleted or unknown: the booking stays */
        op_fail(op, GX_BIND_ERROR, "the pod holds GPUs on another node and is not pending",
                op->other);
        return;
    }
    op_enter(op, BS_MOVE);
}

/*
 * Book @op in the cache at once and show it there until the Lease write ends
 * (gx_leases_hold): kube-scheduler schedules the next pod while it binds this
 * one, and a filter that did not see these cards admitted pod after pod onto
 * them, each refused at bind (394 failed attempts for 600 pods in a burst).
 * The Lease write decides again on the Lease's own tenants.
 */
static void
show_booking(struct bind_op *op)
{
    struct gx_admit_pod pod = op_pod(op);
    struct gx_admit_plan plan;
    struct gx_decide_ctx dc;
    struct gx_why why = {{0}};

    if (op->req.kind == GX_REQ_NONE || gx_ledger_find_pod(op->app->ledger, op->uid) != NULL) {
        return;
    }
    gx_sync_decide_ctx(op->app, &dc);
    if (reserve(&dc, op->app->ledger, op->node, &pod, op->gang, op->n_gang, &plan, &why) == GX_OK &&
        plan.changed) {
        gx_leases_hold(op->app->leases, op->node, op->uid);
        op->shown = true;
    }
}

/* ---- live mode: the one place state changes ---- */

/* Start an API call of @op; false when it cannot start. */
static bool
op_request(struct bind_op *op, const char *method, const char *sub, const struct gx_buf *body,
           const char *ctype, gx_kube_done_cb done)
{
    char path[720];
    long timeout = op_timeout(op);
    size_t n = gx_kwrite_pod_path(path, sizeof(path), op->ns, op->name, sub);

    /*
     * A write carries its deadline to the API server too (?timeout=), which
     * abandons it then: a Binding that timed out here cannot land minutes
     * later, so gx_admit_in_flight's window holds.
     */
    if (body != NULL && n < sizeof(path)) {
        (void)snprintf(path + n, sizeof(path) - n, "?timeout=%ldms", timeout);
    }
    op->xfer = gx_kube_request(op->app->sync.kube, method, path, body ? body->data : NULL,
                               body ? body->len : 0, ctype, timeout, done, op);
    return op->xfer != NULL;
}

/* op_request, or @op failed when it cannot start. */
static bool
op_call(struct bind_op *op, const char *method, const char *sub, const struct gx_buf *body,
        const char *ctype, gx_kube_done_cb done)
{
    if (!op_request(op, method, sub, body, ctype, done)) {
        op_fail(op, GX_BIND_ERROR, "cannot start the API request", method);
        return false;
    }
    return true;
}

/* Start a compare-and-swap of @node's Lease for @op. */
static void
op_lease(struct bind_op *op, const char *node, gx_leases_mutate_cb mutate, gx_leases_done_cb done)
{
    if (!gx_leases_update(op->app->leases, node, op->deadline_ms, mutate, done, op)) {
        op_fail(op, GX_BIND_ERROR, "cannot start the ledger update", "");
    }
}

/* The merge patch that marks the pod managed, so the pod watch sees it. */
static enum gx_err
label_patch(const struct gx_config *cfg, struct gx_buf *b)
{
    struct gx_kv label = {cfg->managed_label, "true"};
    struct gx_kmeta m = {.labels = &label, .n_labels = 1};

    return gx_kwrite_meta_patch(b, &m);
}

/* Send the label PATCH of @op; a failure to start is a failed label (label_done's rules). */
static void
label_send(struct bind_op *op)
{
    struct gx_buf b;

    op->label = LABEL_SENT;
    op->label_tries++;
    gx_buf_init(&b, 256);
    if (label_patch(op->app->cfg, &b) != GX_OK ||
        !op_request(op, "PATCH", "", &b, "application/merge-patch+json", label_done)) {
        op->label = LABEL_FAILED;
        (void)snprintf(op->label_error, sizeof(op->label_error), "cannot start the request");
    }
    gx_buf_release(&b);
}

/* The Binding of @op with the annotations of its plan. */
static enum gx_err
binding_body(const struct bind_op *op, struct gx_buf *b)
{
    const struct gx_node *sn = gx_snapshot_find(op->app->sync.snap, op->node, strlen(op->node));
    struct gx_admit_notes notes;

    gx_admit_notes(sn, &op->req, &op->plan, &notes);
    return gx_admit_binding(op->app->cfg, op->ns, op->name, op->uid, op->node,
                            op->req.kind != GX_REQ_NONE ? &notes : NULL, b);
}

static void
op_enter(struct bind_op *op, enum bind_state st)
{
    struct gx_admit_held held;
    enum bind_state prev = op->state;
    struct gx_buf b;

    op->state = st;
    switch (st) {
    case BS_READ_POD:
        (void)op_call(op, "GET", "", NULL, NULL, read_pod_done);
        return;
    case BS_MOVE_CHECK: /* entered through BS_RESERVE only */
        (void)op_call(op, "GET", "", NULL, NULL, move_check_done);
        return;
    case BS_MOVE: /* entered through BS_MOVE_CHECK only */
        op_lease(op, op->other, move_mutate, move_done);
        return;
    case BS_RESERVE:
        gx_admit_held_of(op->app->cfg, op->app->ledger, op->uid, gx_wall_ms(), &held);
        /* a reservation left on another node (a bind that failed there) moves here */
        if (prev != BS_MOVE && held.node != NULL && strcmp(held.node, op->node) != 0) {
            (void)snprintf(op->other, sizeof(op->other), "%s", held.node);
            op->other_booking = gx_ledger_booking(op->app->ledger, op->uid);
            if (held.in_flight) {
                /* a timed-out Binding there may still land: moving lost its booking (e2e_burst) */
                op_fail(op, GX_BIND_ERROR,
                        "an earlier bind of the pod to another node may still land", op->other);
                return;
            }
            op_enter(op, BS_MOVE_CHECK);
            return;
        }
        op->state = BS_RESERVE;
        show_booking(op);
        if (op->shown && op->label == LABEL_UNSENT) {
            label_send(op);
        }
        op_lease(op, op->node, reserve_mutate, reserve_done);
        return;
    case BS_GANG_WAIT: /* gang_go moves on */
    case BS_LABEL:     /* label_done moves on */
        return;
    case BS_BINDING:
        gx_buf_init(&b, 16384);
        if (binding_body(op, &b) != GX_OK) {
            gx_buf_release(&b);
            op_fail(op, GX_BIND_ERROR, "cannot encode the request", "out of memory");
            return;
        }
        (void)op_call(op, "POST", "/binding", &b, "application/json", binding_done);
        gx_buf_release(&b);
        return;
    case BS_CHECK:
        (void)op_call(op, "GET", "", NULL, NULL, check_done);
        return;
    }
}

/* The gate let @ctx in: its first call. */
static void
op_begin(void *ctx)
{
    struct bind_op *op = ctx;

    op->begun_ms = gx_mono_ms();
    if (!op->req_known) {
        /* filter ran on another replica: the pod itself tells what it asks for */
        op_enter(op, BS_READ_POD);
        return;
    }
    op_enter(op, op->req.kind == GX_REQ_NONE ? BS_BINDING : BS_RESERVE);
}

/* The gate shed @ctx: nothing was written, kube-scheduler tries the pod again. */
static void
op_shed(void *ctx)
{
    struct bind_op *op = ctx;

    op->app->metrics.binds_shed++;
    op_fail(op, GX_BIND_ERROR,
            "too many binds in flight on this extender (ledger.binds_in_flight), try again", "");
}

static void
bind_live(struct gx_app *app, struct gx_http_req *r, const struct gx_ext_bind_args *b)
{
    struct bind_op *op = calloc(1, sizeof(*op));
    const struct gx_seen_pod *seen;

    if (op == NULL || strlen(b->pod_uid) >= sizeof(op->uid) ||
        strlen(b->pod_namespace) >= sizeof(op->ns) || strlen(b->pod_name) >= sizeof(op->name) ||
        strlen(b->node) >= sizeof(op->node)) {
        free(op);
        gx_reply_bind(&app->metrics, r, GX_BIND_ERROR, "bind arguments too long");
        return;
    }
    op->app = app;
    op->r = r;
    (void)snprintf(op->ns, sizeof(op->ns), "%s", b->pod_namespace);
    (void)snprintf(op->name, sizeof(op->name), "%s", b->pod_name);
    (void)snprintf(op->uid, sizeof(op->uid), "%s", b->pod_uid);
    (void)snprintf(op->node, sizeof(op->node), "%s", b->node);
    op->deadline_ms = gx_http_start_ms(r) + app->cfg->bind_deadline_ms;
    op->n_gang = gx_gang_bind_plan(app, op->uid, op->node, op->gang);
    LIST_INSERT_HEAD(&app->binds, op, link);
    if (!gx_gang_bind_join(app, op->uid, &op->gw, gang_go, op)) {
        op_fail(op, GX_BIND_ERROR, GANG_FAILED, "");
        return;
    }
    seen = gx_seen_get(app->seen, op->uid, gx_mono_ms());
    if (seen != NULL) {
        op->req = seen->req;
        op->req_known = true;
        /* shown while it waits too: else filter admits the next pods onto these cards */
        show_booking(op);
    }
    /* begun with less than half its time left, a bind mostly times out halfway (gate.h) */
    op->gate = (struct gx_gate_job){.start_by_ms = op->deadline_ms - app->cfg->bind_deadline_ms / 2,
                                    .start = op_begin,
                                    .shed = op_shed,
                                    .ctx = op};
    gx_gate_enter(&app->bind_gate, &op->gate, (size_t)app->cfg->binds_in_flight);
}

void
gx_bind_handle(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_ext_bind_args b;
    struct gx_why why = {{0}};
    size_t len;
    const char *body = gx_http_body(r, &len);

    if (gx_ext_decode_bind(body, len, app->cfg->max_json_depth, &b, &why) != GX_OK) {
        gx_reply_error(&app->metrics, r, GX_VERB_BIND, 400, why.text);
        return;
    }
    if (app->leases != NULL) {
        bind_live(app, r, &b);
    } else {
        bind_local(app, r, &b);
    }
    gx_ext_bind_args_release(&b);
}

void
gx_bind_cancel_all(struct gx_app *app)
{
    for (struct bind_op *op = LIST_FIRST(&app->binds), *next; op != NULL; op = next) {
        next = LIST_NEXT(op, link);
        op_free(op);
    }
}
