/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases_cas.c - Lease compare-and-swap in rounds, one node at a time.
 *
 * Updates of one node queue while a round for that node is in flight; the
 * next round takes every queued update at once (a group commit): GET the
 * Lease, apply each update's mutate in order on the cache, PUT once (POST
 * when the Lease does not exist), then tell each update its result. A
 * round right behind this process's own write skips the GET: it knows what
 * that write left, and the watch showed nothing newer (q->known); a write
 * it missed costs a 409 and the read after all.
 * Another writer's change (409), or a call that failed in a way worth
 * another try (gx_kobj_retryable: a write that may have landed), sends a
 * round back to GET, after a short jittered pause, within the updates'
 * retries and deadlines. Started one GET per update, a burst of binds on
 * one node made this process conflict with itself: a third of the binds
 * failed.
 *
 * An update whose mutate fails is taken out of the round and its changes
 * are undone; one with nothing to write ends with the round's read. A
 * round's calls time out at its latest deadline, and an update out of time
 * does not join one (op_late): timed out at the earliest, one update near
 * its end failed every other update of its round with it. The
 * callbacks run once the round's state is consistent, so one may queue a
 * new update of the same node (it goes into the next round).
 */
#include "leases_int.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "kwrite.h"
#include "log.h"

struct lease_op {
    TAILQ_ENTRY(lease_op) link;
    int64_t due_ms; /* a deferred update starts no round before this (0: at once) */
    int64_t deadline_ms;
    gx_leases_mutate_cb mutate;
    gx_leases_done_cb done;
    void *ctx;
    enum gx_err rc; /* the result, once it has one */
    char why[300];
};

TAILQ_HEAD(lease_ops, lease_op);

/* One node's queue: the updates waiting and the round in flight. */
struct gx_lease_q {
    struct gx_leases *ls;
    LIST_ENTRY(gx_lease_q) link;
    char node[256];
    char name[GX_LEASE_NAME_MAX + 1];
    struct lease_ops waiting, round;
    char rv[64]; /* of the Lease as the round sees it (read, or left by our write) */
    bool exists;
    bool known;        /* orig and rv are what our last write left: the next round needs no read */
    bool missed;       /* the watch brought a newer Lease while the round was in flight */
    bool seen_unknown; /* ... one whose version it could not tell (a relist without it) */
    char seen_rv[64];  /* the newest version the watch brought while the round was in flight */
    int attempts;
    struct gx_httpc_xfer *xfer;
    /* the pause before a round reads again, or the wait for a deferred update */
    struct event *retry;
    struct gx_tenant *orig; /* the Lease's tenants as read */
    size_t n_orig;
    struct gx_tenant *wrote; /* what the round writes */
    size_t n_wrote;
};

static void q_get(struct gx_lease_q *q);

/* @a is a later version than @b (one that cannot be compared counts as later). */
static bool
rv_newer(const char *a, const char *b)
{
    return strcmp(a, b) != 0 && !gx_rv_older(a, b);
}

/* Forget what the watch brought during the round: what follows is newer. */
static void
seen_reset(struct gx_lease_q *q)
{
    q->missed = false;
    q->seen_unknown = false;
    q->seen_rv[0] = '\0';
}
static void q_kick(struct gx_lease_q *q, bool waited);

static struct gx_lease_q *
q_find(struct gx_leases *ls, const char *node)
{
    for (struct gx_lease_q *q = LIST_FIRST(&ls->queues); q != NULL; q = LIST_NEXT(q, link)) {
        if (strcmp(q->node, node) == 0) {
            return q;
        }
    }
    return NULL;
}

static void
ops_free(struct lease_ops *ops)
{
    struct lease_op *o;

    while ((o = TAILQ_FIRST(ops)) != NULL) {
        TAILQ_REMOVE(ops, o, link);
        free(o);
    }
}

/* Free @q and its updates without calling back. */
static void
q_free(struct gx_lease_q *q)
{
    LIST_REMOVE(q, link);
    gx_kube_cancel(q->ls->kube, q->xfer);
    if (q->retry != NULL) {
        event_free(q->retry);
    }
    ops_free(&q->waiting);
    ops_free(&q->round);
    free(q->orig);
    free(q->wrote);
    free(q);
}

/* Move @o from the round to @out with result @rc. */
static void
op_end(struct gx_lease_q *q, struct lease_op *o, struct lease_ops *out, enum gx_err rc,
       const char *why)
{
    TAILQ_REMOVE(&q->round, o, link);
    o->rc = rc;
    (void)snprintf(o->why, sizeof(o->why), "%s", why != NULL ? why : "");
    TAILQ_INSERT_TAIL(out, o, link);
}

/* Call back every update of @ended and free it; the queues are consistent by now. */
static void
ops_report(struct lease_ops *ended)
{
    struct lease_op *o;

    while ((o = TAILQ_FIRST(ended)) != NULL) {
        TAILQ_REMOVE(ended, o, link);
        o->done(o->ctx, o->rc, o->why);
        free(o);
    }
}

static enum gx_err
refresh_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    (void)ctx;
    (void)l;
    (void)node;
    (void)why;
    *write = false;
    return GX_OK;
}

static void
refresh_done(void *ctx, enum gx_err rc, const char *why)
{
    (void)ctx;
    (void)rc;
    (void)why;
}

/*
 * The round ends with @rc for every update still in it. A write the watch
 * showed meanwhile may be newer than this round's picture: one more round
 * reads the Lease (an update that writes nothing) unless one is queued.
 */
static void
q_end(struct gx_lease_q *q, enum gx_err rc, const char *why)
{
    struct lease_ops ended = TAILQ_HEAD_INITIALIZER(ended);
    struct gx_leases *ls = q->ls;

    TAILQ_INIT(&ended);
    while (!TAILQ_EMPTY(&q->round)) {
        op_end(q, TAILQ_FIRST(&q->round), &ended, rc, why);
    }
    q->xfer = NULL;
    if (q->missed || rc != GX_OK) {
        q->known = false; /* the next round reads the Lease */
    }
    if (q->missed && TAILQ_EMPTY(&q->waiting)) {
        /* not queued (ENOMEM): the next resync brings the Lease */
        (void)gx_leases_update(ls, q->node, gx_mono_ms() + (int64_t)ls->cfg->kube_timeout_s * 1000,
                               refresh_mutate, refresh_done, NULL);
    }
    seen_reset(q);
    ops_report(&ended); /* may queue updates of this node: the next round takes them */
    q_kick(q, true);
}

/* @o has too little time left to join a round, or to go on with one after a conflict. */
static bool
op_late(const struct lease_op *o, int64_t now)
{
    return o->deadline_ms - now < 100;
}

/* End with @rc every update of the round that has no time left (op_late), or all when @spent. */
static void
q_drop_late(struct gx_lease_q *q, bool spent, enum gx_err rc, const char *why,
            struct lease_ops *ended)
{
    int64_t now = gx_mono_ms();

    for (struct lease_op *o = TAILQ_FIRST(&q->round), *next; o != NULL; o = next) {
        next = TAILQ_NEXT(o, link);
        if (spent || op_late(o, now)) {
            op_end(q, o, ended, rc, why);
        }
    }
}

/*
 * The request timeout of the round: its latest deadline, within
 * kube.timeout_s. An update may hear its result after its own deadline;
 * its caller decides what a late result is worth (bind gives up).
 */
static long
q_timeout(const struct gx_lease_q *q)
{
    int64_t cap = (int64_t)q->ls->cfg->kube_timeout_s * 1000, now = gx_mono_ms(), left = 0;

    for (const struct lease_op *o = TAILQ_FIRST(&q->round); o != NULL; o = TAILQ_NEXT(o, link)) {
        if (o->deadline_ms - now > left) {
            left = o->deadline_ms - now;
        }
    }
    left = left < cap ? left : cap;
    return left < 50 ? 50 : (long)left;
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_lease_q *q = arg;

    (void)fd;
    (void)what;
    if (!TAILQ_EMPTY(&q->round)) {
        q_get(q); /* a round's pause ended */
    } else {
        q_kick(q, false); /* a deferred update is due */
    }
}

/* Arm @q's timer in @us microseconds; false without memory. */
static bool
q_timer(struct gx_lease_q *q, int64_t us)
{
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};

    if (q->retry == NULL) {
        q->retry = evtimer_new(q->ls->base, retry_cb, q);
    }
    return q->retry != NULL && evtimer_add(q->retry, &tv) == 0;
}

/*
 * Another writer won, or a call failed in a way worth another try: read
 * again after a short random pause. Updates out of time or retries end
 * with @rc and @why; the rest go on.
 */
static void
q_retry(struct gx_lease_q *q, enum gx_err rc, const char *why)
{
    struct lease_ops ended = TAILQ_HEAD_INITIALIZER(ended);
    struct gx_leases *ls = q->ls;
    int64_t pause_us;

    TAILQ_INIT(&ended);
    q_drop_late(q, q->attempts >= ls->cfg->ledger_cas_retries, rc, why, &ended);
    q->xfer = NULL;
    if (TAILQ_EMPTY(&q->round)) {
        q_end(q, rc, why); /* reports nothing more; starts the next round */
        ops_report(&ended);
        return;
    }
    /*
     * After another writer's 409, at once but for a few ms of jitter; after
     * a failed call (a 5xx, 429 or broken connection: the API server may be
     * overloaded) a longer jittered pause, so retries do not add to the load
     * that failed them (out of time, the updates end as op_late says).
     */
    pause_us = (rc == GX_ECONFLICT ? 5000 : 200000) * (int64_t)q->attempts;
    pause_us = (int64_t)(gx_rand_next(&ls->rng) % (uint64_t)(pause_us + 1));
    if (!q_timer(q, pause_us)) {
        q_end(q, GX_ENOMEM, "out of memory");
    }
    ops_report(&ended);
}

/* The watch brought nothing newer than @rv, which our write left. */
static bool
q_seen_nothing_newer(const struct gx_lease_q *q, const char *rv)
{
    return !q->seen_unknown && (q->seen_rv[0] == '\0' || !rv_newer(q->seen_rv, rv));
}

/*
 * Our write of the round landed as version @rv: the next round starts from
 * what it wrote, unless the watch showed a newer version meanwhile (an
 * event of this very write is not one).
 */
static void
q_wrote(struct gx_lease_q *q, const char *rv)
{
    free(q->orig);
    q->orig = q->wrote;
    q->n_orig = q->n_wrote;
    q->wrote = NULL;
    q->n_wrote = 0;
    q->exists = true;
    (void)snprintf(q->rv, sizeof(q->rv), "%s", rv);
    if (q_seen_nothing_newer(q, rv)) {
        seen_reset(q);
    }
    q->known = !q->missed;
}

static void
put_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_lease_q *q = ctx;
    struct gx_leases *ls = q->ls;
    char rv[64], msg[300], what[240];

    q->xfer = NULL;
    q->known = false; /* until q_wrote knows what this write left */
    if (rc == GX_OK && (status == 200 || status == 201)) {
        struct gx_tenant *t = NULL;
        size_t n = 0;
        if (gx_leases_decode_json(ls, body, len, rv, sizeof(rv), &t, &n, NULL) == GX_OK) {
            gx_leases_cache_set(ls, q->node, q->wrote, q->n_wrote, rv);
            q_wrote(q, rv);
        }
        free(t);
        q_end(q, GX_OK, "");
        return;
    }
    /* Not written: the cache goes back to what the Lease held. */
    gx_leases_cache_set(ls, q->node, q->orig, q->n_orig, q->exists ? q->rv : NULL);
    if (rc == GX_OK && status == 409) {
        ls->st->cas_conflicts++;
        ls->st->errors[GX_UPERR_CONFLICT]++;
        (void)snprintf(msg, sizeof(msg),
                       "the ledger lease of %.100s kept changing (compare-and-swap conflicts)",
                       q->node);
        q_retry(q, GX_ECONFLICT, msg);
        return;
    }
    ls->st->errors[rc == GX_ETIMEDOUT ? GX_UPERR_TIMEOUT : GX_UPERR_HTTP]++;
    /* a write that timed out or failed with a 5xx may have landed: the Lease tells, not a guess */
    q->missed = true;
    gx_kobj_failure_text(rc, status, body, len, what, sizeof(what));
    (void)snprintf(msg, sizeof(msg), "cannot write the ledger lease of %.100s: %.160s", q->node,
                   what);
    if (gx_kobj_retryable(rc, status)) {
        /*
         * Read it again and let the updates decide on what it holds: a
         * write that landed shows each its own booking (taken over, as a
         * retried bind does). Ended here, one lost answer failed every bind
         * of the round under a faulty API server.
         */
        q_retry(q, rc == GX_OK ? GX_EUPSTREAM : rc, msg);
        return;
    }
    q_end(q, rc == GX_OK ? GX_EUPSTREAM : rc, msg);
}

/*
 * Apply every update of the round in order on the Lease's tenants (in the
 * cache). A failed mutate is undone and its update leaves the round; so
 * does one with nothing to write. Returns the updates that ended.
 */
static void
q_mutate(struct gx_lease_q *q, struct lease_ops *ended)
{
    struct gx_leases *ls = q->ls;

    /* the truth alone: a hold of a bind in flight is never written by another update */
    gx_leases_cache_truth(ls, q->node, q->orig, q->n_orig, q->exists ? q->rv : NULL);
    for (struct lease_op *o = TAILQ_FIRST(&q->round), *next; o != NULL; o = next) {
        struct gx_why why = {{0}};
        struct gx_tenant *before = NULL;
        size_t n_before = 0;
        bool write = true;
        enum gx_err rc;

        next = TAILQ_NEXT(o, link);
        if (gx_leases_cache_copy(ls->ledger, q->node, &before, &n_before) != GX_OK) {
            op_end(q, o, ended, GX_ENOMEM, "out of memory");
            continue;
        }
        rc = o->mutate(o->ctx, ls->ledger, q->node, &write, &why);
        if (rc != GX_OK) {
            gx_leases_cache_truth(ls, q->node, before, n_before, q->exists ? q->rv : NULL);
            op_end(q, o, ended, rc, why.text);
        } else if (!write) {
            op_end(q, o, ended, GX_OK, "");
        }
        free(before);
    }
}

/* Write what the round's updates made of the Lease. */
static void
q_write(struct gx_lease_q *q)
{
    struct gx_leases *ls = q->ls;
    struct gx_buf body;
    char path[512];

    free(q->wrote);
    if (gx_leases_cache_copy(ls->ledger, q->node, &q->wrote, &q->n_wrote) != GX_OK) {
        q->wrote = NULL;
        gx_leases_cache_set(ls, q->node, q->orig, q->n_orig, q->exists ? q->rv : NULL);
        q_end(q, GX_ENOMEM, "out of memory");
        return;
    }
    gx_buf_init(&body, GX_LEASE_BODY_CAP);
    if (gx_leases_encode(q->name, ls->cfg->kube_namespace, q->node, q->exists ? q->rv : NULL,
                         gx_ledger_node(ls->ledger, q->node), &body) != GX_OK) {
        gx_buf_release(&body);
        gx_leases_cache_set(ls, q->node, q->orig, q->n_orig, q->exists ? q->rv : NULL);
        q_end(q, GX_ETOOBIG, "the ledger lease would be too large");
        return;
    }
    gx_kwrite_lease_path(path, sizeof(path), ls->cfg->kube_namespace, q->exists ? q->name : "");
    ls->st->requests++;
    q->xfer = gx_kube_request(ls->kube, q->exists ? "PUT" : "POST", path, body.data, body.len,
                              "application/json", q_timeout(q), put_done, q);
    gx_buf_release(&body);
    if (q->xfer == NULL) {
        gx_leases_cache_set(ls, q->node, q->orig, q->n_orig, q->exists ? q->rv : NULL);
        q_end(q, GX_ENOMEM, "cannot start the lease write");
        return;
    }
    gx_leases_show_holds(ls, q->node); /* while the write is on its way */
}

/* The Lease's tenants are read: apply the round, write if anything changed. */
static void
q_apply(struct gx_lease_q *q)
{
    struct lease_ops ended = TAILQ_HEAD_INITIALIZER(ended);

    TAILQ_INIT(&ended);
    q_mutate(q, &ended);
    if (TAILQ_EMPTY(&q->round)) {
        gx_leases_show_holds(q->ls, q->node);
        q_end(q, GX_OK, "");
    } else {
        q_write(q);
    }
    ops_report(&ended);
}

static void
get_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_lease_q *q = ctx;
    struct gx_why why = {{0}};
    char msg[300], what[240];

    q->xfer = NULL;
    free(q->orig);
    q->orig = NULL;
    q->n_orig = 0;
    if (rc == GX_OK && status == 404) {
        q->exists = false;
        q->rv[0] = '\0';
        q_apply(q);
        return;
    }
    if (rc != GX_OK || status != 200) {
        q->ls->st->errors[rc == GX_ETIMEDOUT ? GX_UPERR_TIMEOUT : GX_UPERR_HTTP]++;
        gx_kobj_failure_text(rc, status, body, len, what, sizeof(what));
        (void)snprintf(msg, sizeof(msg), "cannot read the ledger lease of %.100s: %.160s", q->node,
                       what);
        if (gx_kobj_retryable(rc, status)) {
            q_retry(q, rc == GX_OK ? GX_EUPSTREAM : rc, msg);
        } else {
            q_end(q, rc == GX_OK ? GX_EUPSTREAM : rc, msg);
        }
        return;
    }
    if (gx_leases_decode_json(q->ls, body, len, q->rv, sizeof(q->rv), &q->orig, &q->n_orig, &why) !=
        GX_OK) {
        q->ls->st->errors[GX_UPERR_PARSE]++;
        (void)snprintf(msg, sizeof(msg), "unreadable ledger lease of %.100s: %.160s", q->node,
                       why.text[0] ? why.text : "not JSON");
        q_end(q, GX_EPARSE, msg);
        return;
    }
    q->exists = true;
    q_apply(q);
}

static void
q_get(struct gx_lease_q *q)
{
    char path[512];

    q->attempts++;
    q->known = false;
    seen_reset(q); /* this read is newer than anything the watch showed so far */
    gx_kwrite_lease_path(path, sizeof(path), q->ls->cfg->kube_namespace, q->name);
    q->ls->st->requests++;
    q->xfer = gx_kube_request(q->ls->kube, "GET", path, NULL, 0, NULL, q_timeout(q), get_done, q);
    if (q->xfer == NULL) {
        q_end(q, GX_ENOMEM, "cannot start the lease read");
    }
}

/*
 * Start the next round when none is in flight; free an idle queue. After
 * @waited (a round ended), updates too late for a round end first.
 */
static void
q_kick(struct gx_lease_q *q, bool waited)
{
    struct lease_ops ended = TAILQ_HEAD_INITIALIZER(ended);
    int64_t due, now = gx_mono_ms();

    TAILQ_INIT(&ended);
    if (!TAILQ_EMPTY(&q->round) || q->xfer != NULL) {
        return;
    }
    if (TAILQ_EMPTY(&q->waiting)) {
        q_free(q);
        return;
    }
    /* deferred updates alone wait until the first is due; any other update takes them along */
    due = INT64_MAX;
    for (struct lease_op *o = TAILQ_FIRST(&q->waiting); o != NULL; o = TAILQ_NEXT(o, link)) {
        due = o->due_ms < due ? o->due_ms : due;
    }
    if (due > now && q_timer(q, (due - now) * 1000)) {
        return;
    }
    if (q->retry != NULL) {
        (void)evtimer_del(q->retry);
    }
    TAILQ_CONCAT(&q->round, &q->waiting, link);
    q->attempts = 0;
    if (waited) {
        q_drop_late(q, false, GX_ETIMEDOUT, "no time left to write the ledger lease", &ended);
    }
    if (TAILQ_EMPTY(&q->round)) {
        q_end(q, GX_OK, ""); /* reports nothing more; starts the next round */
    } else if (q->known) {
        q->attempts++;
        q_apply(q); /* on what our last write left (q_wrote) */
    } else {
        q_get(q);
    }
    ops_report(&ended);
}

bool
gx_leases_update(struct gx_leases *ls, const char *node, int64_t deadline_ms,
                 gx_leases_mutate_cb mutate, gx_leases_done_cb done, void *ctx)
{
    return gx_leases_update_after(ls, node, 0, deadline_ms, mutate, done, ctx);
}

bool
gx_leases_update_after(struct gx_leases *ls, const char *node, int64_t delay_ms,
                       int64_t deadline_ms, gx_leases_mutate_cb mutate, gx_leases_done_cb done,
                       void *ctx)
{
    struct gx_lease_q *q;
    struct lease_op *o;

    if (strlen(node) >= sizeof(q->node)) {
        return false;
    }
    q = q_find(ls, node);
    if (q == NULL) {
        q = calloc(1, sizeof(*q));
        if (q == NULL) {
            return false;
        }
        q->ls = ls;
        (void)snprintf(q->node, sizeof(q->node), "%s", node);
        gx_leases_name(node, q->name, sizeof(q->name));
        TAILQ_INIT(&q->waiting);
        TAILQ_INIT(&q->round);
        LIST_INSERT_HEAD(&ls->queues, q, link);
    }
    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        q_kick(q, false); /* frees a queue made just now */
        return false;
    }
    o->due_ms = delay_ms > 0 ? gx_mono_ms() + delay_ms : 0;
    o->deadline_ms = deadline_ms;
    o->mutate = mutate;
    o->done = done;
    o->ctx = ctx;
    TAILQ_INSERT_TAIL(&q->waiting, o, link);
    q_kick(q, false); /* a round of this update alone: late or not, it harms no other */
    return true;
}

bool
gx_leases_busy(struct gx_leases *ls, const char *node, const char *rv)
{
    struct gx_lease_q *q = q_find(ls, node);
    bool newer;

    if (q == NULL) {
        return false;
    }
    newer = rv == NULL || rv_newer(rv, q->rv);
    if (newer) {
        q->known = false; /* another writer's, or our write in flight: the next round reads */
    }
    /* deferred updates alone change nothing yet: the watch may refresh the cache */
    if (TAILQ_EMPTY(&q->round) && q->xfer == NULL) {
        return false;
    }
    if (newer) {
        q->missed = true;
        q->seen_unknown |= rv == NULL;
        if (rv != NULL && (q->seen_rv[0] == '\0' || rv_newer(rv, q->seen_rv))) {
            (void)snprintf(q->seen_rv, sizeof(q->seen_rv), "%s", rv);
        }
    }
    return true;
}

void
gx_leases_cancel_all(struct gx_leases *ls)
{
    for (struct gx_lease_q *q = LIST_FIRST(&ls->queues), *next; q != NULL; q = next) {
        next = LIST_NEXT(q, link);
        q_free(q);
    }
}
