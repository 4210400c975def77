/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gang_bind.c - the shell of the gang barrier (gang_bind.h): finds or
 * makes a group's barrier, keeps its waiting binds, runs its timer, logs
 * and counts. What the barrier decides is gang.c's (gx_barrier_*).
 */
#include "gang_bind.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct gx_gang_bind {
    LIST_ENTRY(gx_gang_bind) link;
    struct gx_app *app;
    char key[GX_GANG_KEY_MAX];
    struct gx_gang_barrier b;
    LIST_HEAD(gx_gang_waiters, gx_gang_waiter) waiting;
    size_t joined;  /* binds joined and not yet left */
    size_t calling; /* > 0 while its waiters are called: not freed under them */
    struct event *timer;
    bool expired; /* its timer ran after it went or failed: freed once no bind is left in it */
};

/* Free @gb, off its list already. */
static void
destroy(struct gx_gang_bind *gb)
{
    if (gb->timer != NULL) {
        event_free(gb->timer);
    }
    gx_barrier_release(&gb->b);
    free(gb);
}

/* Free @gb once it expired and no bind is left in it. */
static void
maybe_free(struct gx_gang_bind *gb)
{
    if (gb->joined == 0 && gb->calling == 0 && gb->expired) {
        LIST_REMOVE(gb, link);
        destroy(gb);
    }
}

/* (Re)arm @gb's timer to fire in @ms. */
static void
arm(struct gx_gang_bind *gb, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    (void)evtimer_add(gb->timer, &tv);
}

/* Take @w off its barrier's waiting list, if it is on it. */
static void
unwait(struct gx_gang_waiter *w)
{
    if (w->waiting) {
        LIST_REMOVE(w, link);
        w->waiting = false;
    }
}

/* Call every waiting member's go with @ok; each may leave (and end its bind) inside. */
static void
release(struct gx_gang_bind *gb, bool ok)
{
    struct gx_gang_waiter *w;

    gb->calling++;
    while ((w = LIST_FIRST(&gb->waiting)) != NULL) {
        unwait(w);
        w->go(w->ctx, ok);
    }
    gb->calling--;
    maybe_free(gb);
}

/*
 * An open barrier fails: count it, say so, fail its waiting members. Its
 * members' entries go (the retry plans afresh), and it stays a bind
 * deadline: the binds of its members still to come fail on arrival, and
 * the group's next barrier waits for its members too (gang.h).
 */
static void
fail(struct gx_gang_bind *gb, const char *why)
{
    if (!gx_barrier_fail(&gb->b)) {
        return;
    }
    gb->app->metrics.gang_binds_failed++;
    gx_warn("gang bind failed before any Binding, every member's bind fails",
            "group=%s why=\"%s\" members=%zu reserved=%zu absent=%zu", gb->key, why, gb->b.expected,
            gb->b.reserved, gx_barrier_absent(&gb->b));
    (void)gx_gang_drop_members(gb->app->gang, &gb->b);
    arm(gb, gb->app->cfg->bind_deadline_ms);
    release(gb, false);
}

static void
timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_gang_bind *gb = arg;

    (void)fd;
    (void)what;
    if (gb->b.state == GX_BARRIER_OPEN) {
        fail(gb, "not every member's reservation landed in half a bind deadline");
        return;
    }
    gb->expired = true;
    maybe_free(gb);
}

/*
 * The barrier waiting for pod @uid's bind, or NULL: an open one, or one
 * that failed while the pod holds no entry (@planned false: it was not
 * planned again since).
 */
static struct gx_gang_bind *
expecting(struct gx_app *app, const char *uid, bool planned)
{
    struct gx_gang_bind *gb = LIST_FIRST(&app->gang_binds);

    while (gb != NULL &&
           !(gx_barrier_expects(&gb->b, uid) && (gb->b.state == GX_BARRIER_OPEN || !planned))) {
        gb = LIST_NEXT(gb, link);
    }
    return gb;
}

/* Group @key's barrier in @state (the newest failed one for GX_BARRIER_FAILED), or NULL. */
static struct gx_gang_bind *
group_barrier(struct gx_app *app, const char *key, enum gx_barrier_state state)
{
    struct gx_gang_bind *gb = LIST_FIRST(&app->gang_binds);

    /* made at the list's head: the first found is the newest */
    while (gb != NULL && (gb->b.state != state || strcmp(gb->key, key) != 0)) {
        gb = LIST_NEXT(gb, link);
    }
    return gb;
}

/* A barrier of group @key made by pod @uid's bind (gx_barrier_plan); NULL: it binds alone. */
static struct gx_gang_bind *
make(struct gx_app *app, const char *key, const char *uid, int64_t now_ms)
{
    struct gx_gang_bind *gb = calloc(1, sizeof(*gb));
    struct gx_gang_bind *failed = group_barrier(app, key, GX_BARRIER_FAILED);

    if (gb == NULL) {
        return NULL;
    }
    if (gx_barrier_plan(&gb->b, app->gang, key, uid, failed != NULL ? &failed->b : NULL, now_ms) !=
            GX_OK ||
        (gb->timer = evtimer_new(app->base, timeout_cb, gb)) == NULL) {
        gx_warn("cannot keep the gang's binds together, binding the member alone", "group=%s", key);
        destroy(gb);
        return NULL;
    }
    if (gb->b.n < 2) {
        destroy(gb); /* a gang of one planned here, none failed just before: waits for nobody */
        return NULL;
    }
    gb->app = app;
    (void)snprintf(gb->key, sizeof(gb->key), "%s", key);
    LIST_INIT(&gb->waiting);
    arm(gb, app->cfg->bind_deadline_ms / 2);
    LIST_INSERT_HEAD(&app->gang_binds, gb, link);
    return gb;
}

/* The barrier pod @uid's bind joins, made when it is the first; NULL: it binds alone. */
static struct gx_gang_bind *
barrier_of(struct gx_app *app, const char *uid)
{
    char key[GX_GANG_KEY_MAX];
    int64_t now_ms = gx_mono_ms();
    bool planned = gx_gang_group_of(app->gang, uid, now_ms, key, sizeof(key)) > 0;
    struct gx_gang_bind *gb = expecting(app, uid, planned);

    if (gb != NULL) {
        return gb;
    }
    if (!planned && !gx_gang_group_key(app->gang, uid, now_ms, key, sizeof(key))) {
        return NULL; /* no filter here planned it as a gang member */
    }
    gb = group_barrier(app, key, GX_BARRIER_OPEN);
    return gb != NULL ? gb : make(app, key, uid, now_ms);
}

bool
gx_gang_bind_join(struct gx_app *app, const char *uid, struct gx_gang_waiter *w, gx_gang_go_cb go,
                  void *ctx)
{
    struct gx_gang_bind *gb = barrier_of(app, uid);

    memset(w, 0, sizeof(*w));
    if (gb == NULL) {
        return true;
    }
    if (gx_barrier_arrive(&gb->b, uid) != GX_OK) {
        gx_warn("cannot keep the gang's binds together, binding the member alone", "group=%s",
                gb->key);
        return true;
    }
    w->gb = gb;
    w->go = go;
    w->ctx = ctx;
    gb->joined++;
    return gb->b.state != GX_BARRIER_FAILED;
}

enum gx_barrier_state
gx_gang_bind_reserved(struct gx_gang_waiter *w)
{
    enum gx_barrier_state st;

    if (w->gb == NULL) {
        return GX_BARRIER_GO;
    }
    st = gx_barrier_reserved(&w->gb->b);
    if (st == GX_BARRIER_OPEN) {
        LIST_INSERT_HEAD(&w->gb->waiting, w, link);
        w->waiting = true;
    } else if (st == GX_BARRIER_GO && !LIST_EMPTY(&w->gb->waiting)) {
        gx_debug("every gang member's reservation landed, the Bindings go", "group=%s members=%zu",
                 w->gb->key, w->gb->b.expected);
        release(w->gb, true);
    }
    return st;
}

void
gx_gang_bind_failed(struct gx_gang_waiter *w)
{
    if (w->gb == NULL) {
        return;
    }
    unwait(w); /* it fails on its own: not called back */
    fail(w->gb, "a member's bind failed before its Binding");
}

void
gx_gang_bind_leave(struct gx_gang_waiter *w)
{
    struct gx_gang_bind *gb = w->gb;

    if (gb == NULL) {
        return;
    }
    unwait(w);
    w->gb = NULL;
    gb->joined--;
    maybe_free(gb);
}

void
gx_gang_binds_free(struct gx_app *app)
{
    struct gx_gang_bind *gb;

    while ((gb = LIST_FIRST(&app->gang_binds)) != NULL) {
        LIST_REMOVE(gb, link);
        destroy(gb);
    }
}
