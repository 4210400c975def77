/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_requeue.c - the pokes (requeue.c) against a fake API server
 * (gx_fakehttp) that records the pod PATCHes: a pod waiting for capacity is
 * patched once a booking goes or a busy card cools, not while the ledger
 * only grows, and not once it is bound.
 */
#include "gx_test.h"

#include <event2/event.h>
#include <pthread.h>
#include <string.h>

#include "gx_fakekube.h"
#include "ledger.h"
#include "requeue.h"

GX_SUITE(requeue);

#define NODE "gpu-a"
#define WAITER_PATH "/api/v1/namespaces/ml/pods/waiter"

/* ---- the fake API server: counts the PATCHes of the waiting pod ---- */

struct fake {
    pthread_mutex_t mu;
    int patches;   /* of WAITER_PATH carrying the annotation */
    int elsewhere; /* any other PATCH */
};

static void
handle(void *ctx, int fd, const struct gx_fakehttp_req *r)
{
    struct fake *f = ctx;
    bool patch = strcmp(r->method, "PATCH") == 0;
    bool ours = patch && strcmp(r->target, WAITER_PATH) == 0 &&
                strstr(r->body, "\"gpu-extender.io/requeued-at\"") != NULL;

    pthread_mutex_lock(&f->mu);
    f->patches += ours;
    f->elsewhere += patch && !ours;
    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_respond(fd, ours ? 200 : 404,
                        ours ? "{\"kind\":\"Pod\"}" : "{\"kind\":\"Status\"}");
}

/* ---- the service's side ---- */

struct env {
    struct fake f;
    struct gx_fakehttp *srv;
    struct gx_app app;
};

static void
env_init(struct env *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->f.mu, NULL);
    e->srv = gx_fakehttp_start(handle, &e->f);
    gx_fakekube_app(&e->app, e->srv);
    e->app.ledger = gx_ledger_new();
    cr_assert_not_null(e->app.ledger);
    cr_assert_eq(gx_requeue_start(&e->app), GX_OK);
}

static void
env_fini(struct env *e)
{
    gx_requeue_stop(&e->app);
    gx_ledger_free(e->app.ledger);
    gx_fakekube_app_free(&e->app);
    gx_fakehttp_stop(e->srv);
    pthread_mutex_destroy(&e->f.mu);
}

/* Run the loop for @ms (the check runs once a second). */
static void
run_for(struct env *e, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    (void)event_base_loopexit(e->app.base, &tv);
    (void)event_base_dispatch(e->app.base);
}

static int
pokes(struct env *e)
{
    int n;

    pthread_mutex_lock(&e->f.mu);
    n = e->f.patches;
    cr_assert_eq(e->f.elsewhere, 0, "only the waiting pod is patched");
    pthread_mutex_unlock(&e->f.mu);
    return n;
}

static const int SLOTS[2] = {4, 4};

/* A whole card of NODE for @uid: card 0 for the first, 1 for the second. */
static void
book(struct env *e, const char *uid, int card)
{
    struct gx_tenant t = {.card = card,
                          .exclusive = true,
                          .state = GX_TENANT_BOUND,
                          .since_ms = gx_wall_ms(),
                          .util_pct = -1};

    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "ml/%s", uid);
    cr_assert_eq(gx_ledger_add(e->app.ledger, NODE, &t, 1, SLOTS, 2), GX_OK);
}

static void
wait_for_capacity(struct env *e)
{
    struct gx_pod pod = {.name = "waiter", .namespace = "ml", .uid = "uid-waiter"};

    gx_requeue_wait(&e->app, &pod);
}

Test(requeue, a_booking_that_goes_pokes_the_waiter_once)
{
    struct env e;

    env_init(&e);
    book(&e, "uid-a", 0);
    run_for(&e, 1200); /* the check has seen one tenant */
    wait_for_capacity(&e);
    book(&e, "uid-b", 1);
    run_for(&e, 1200);
    cr_assert_eq(pokes(&e), 0, "the ledger only grew: nothing freed");
    cr_assert_eq(gx_ledger_release(e.app.ledger, "uid-a"), 1);
    run_for(&e, 1500);
    cr_assert_eq(pokes(&e), 1, "a booking went: the waiter is patched");
    cr_assert_eq(e.app.metrics.requeue_pokes, 1);
    cr_assert_eq(gx_ledger_release(e.app.ledger, "uid-b"), 1);
    run_for(&e, 1500);
    cr_assert_eq(pokes(&e), 1, "poked once: it waits again only when refused again");
    env_fini(&e);
}

Test(requeue, a_bound_waiter_is_not_poked)
{
    struct env e;

    env_init(&e);
    book(&e, "uid-a", 0);
    run_for(&e, 1200);
    wait_for_capacity(&e);
    gx_requeue_done(&e.app, "uid-waiter");
    cr_assert_eq(gx_ledger_release(e.app.ledger, "uid-a"), 1);
    run_for(&e, 1500);
    cr_assert_eq(pokes(&e), 0);
    env_fini(&e);
}

Test(requeue, a_card_that_cools_pokes_the_waiter)
{
    struct env e;

    env_init(&e);
    cr_assert_not(gx_requeue_waiting(&e.app));
    wait_for_capacity(&e);
    cr_assert(gx_requeue_waiting(&e.app), "sync counts cooled cards only while a pod waits");
    run_for(&e, 1200);
    cr_assert_eq(pokes(&e), 0);
    gx_requeue_cooled(&e.app, 1); /* a rebuild found a busy card cooled */
    run_for(&e, 1500);
    cr_assert_eq(pokes(&e), 1, "no booking went, but a card cooled");
    cr_assert_not(gx_requeue_waiting(&e.app));
    env_fini(&e);
}
