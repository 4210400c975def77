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
    int64_t pass_ms;
    struct gx_gang_barrier b;
    LIST_HEAD(gx_gang_waiters, gx_gang_waiter) waiting;
    size_t members; /* binds joined and not yet left */
    size_t calling; /* > 0 while its waiters are called: not freed under them */
    struct event *timer;
    bool timed_out;
};

/* Free @gb once its timer ran and no bind is left in it. */
static void
maybe_free(struct gx_gang_bind *gb)
{
    if (gb->members > 0 || gb->calling > 0 || !gb->timed_out) {
        return;
    }
    LIST_REMOVE(gb, link);
    event_free(gb->timer);
    free(gb);
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

/* An open barrier fails: count it, say so, fail its waiting members. */
static void
fail(struct gx_gang_bind *gb, const char *why)
{
    if (!gx_barrier_fail(&gb->b)) {
        return;
    }
    gb->app->metrics.gang_binds_failed++;
    gx_warn("gang bind failed before any Binding, every member's bind fails",
            "group=%s why=\"%s\" planned=%zu reserved=%zu", gb->key, why, gb->b.expected,
            gb->b.reserved);
    release(gb, false);
}

static void
timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_gang_bind *gb = arg;

    (void)fd;
    (void)what;
    gb->timed_out = true;
    gb->calling++; /* fail() may end the last member: free only below */
    fail(gb, "not every member's reservation landed in half a bind deadline");
    gb->calling--;
    maybe_free(gb);
}

static struct gx_gang_bind *
find(struct gx_app *app, const char *key, int64_t pass_ms)
{
    struct gx_gang_bind *gb = LIST_FIRST(&app->gang_binds);

    while (gb != NULL && (gb->pass_ms != pass_ms || strcmp(gb->key, key) != 0)) {
        gb = LIST_NEXT(gb, link);
    }
    return gb;
}

static struct gx_gang_bind *
make(struct gx_app *app, const char *key, int64_t pass_ms, size_t expected)
{
    struct gx_gang_bind *gb = calloc(1, sizeof(*gb));
    int64_t ms = app->cfg->bind_deadline_ms / 2;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    if (gb == NULL || (gb->timer = evtimer_new(app->base, timeout_cb, gb)) == NULL) {
        free(gb);
        return NULL;
    }
    gb->app = app;
    (void)snprintf(gb->key, sizeof(gb->key), "%s", key);
    gb->pass_ms = pass_ms;
    gb->b.expected = expected;
    LIST_INIT(&gb->waiting);
    (void)evtimer_add(gb->timer, &tv);
    LIST_INSERT_HEAD(&app->gang_binds, gb, link);
    return gb;
}

void
gx_gang_bind_join(struct gx_app *app, const char *uid, struct gx_gang_waiter *w, gx_gang_go_cb go,
                  void *ctx)
{
    char key[GX_GANG_KEY_MAX];
    int64_t pass_ms = 0;
    size_t planned = gx_gang_group_of(app->gang, uid, gx_mono_ms(), key, sizeof(key), &pass_ms);
    struct gx_gang_bind *gb;

    memset(w, 0, sizeof(*w));
    if (planned < 2) {
        return; /* a gang of one planned here waits for nobody */
    }
    gb = find(app, key, pass_ms);
    if (gb == NULL && (gb = make(app, key, pass_ms, planned)) == NULL) {
        gx_warn("cannot keep the gang's binds together, binding the member alone", "group=%s", key);
        return;
    }
    w->gb = gb;
    w->go = go;
    w->ctx = ctx;
    gb->members++;
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
    gb->members--;
    maybe_free(gb);
}

void
gx_gang_binds_free(struct gx_app *app)
{
    struct gx_gang_bind *gb;

    while ((gb = LIST_FIRST(&app->gang_binds)) != NULL) {
        LIST_REMOVE(gb, link);
        event_free(gb->timer);
        free(gb);
    }
}
