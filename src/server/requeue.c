/* SPDX-License-Identifier: Apache-2.0 */
/* requeue.c - poke the pods refused for capacity once some frees (see requeue.h). */
#include "requeue.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kwrite.h"
#include "log.h"
#include "waiters.h"

#define REQUEUE_ANNOTATION "gpu-extender.io/requeued-at"
#define WAITERS_MAX 2048
#define POKES_PER_TICK 32  /* a slow API server gets a bounded number of patches a second */
#define WAIT_TTL_MS 600000 /* a pod refused 10 minutes ago has been retried or is gone */

/* A patch in flight. */
struct gx_poke {
    struct gx_app *app;
    LIST_ENTRY(gx_poke) link;
    struct gx_httpc_xfer *xfer;
};

static void
poke_free(struct gx_poke *p)
{
    LIST_REMOVE(p, link);
    gx_kube_cancel(p->app->sync.kube, p->xfer);
    free(p);
}

static void
poke_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_poke *p = ctx;

    (void)body;
    (void)len;
    p->xfer = NULL;
    if (rc == GX_OK && status == 200) {
        p->app->metrics.requeue_pokes++;
    } /* else: gone (404) or refused; the pod's next refusal notes it again */
    poke_free(p);
}

/* Patch @w's annotation: a pod update kube-scheduler requeues the pod for. */
static void
poke(struct gx_app *app, const struct gx_waiter *w, int64_t now_ms)
{
    char path[700], stamp[32];
    struct gx_kv ann = {REQUEUE_ANNOTATION, stamp};
    struct gx_kmeta m = {.annotations = &ann, .n_annotations = 1};
    struct gx_poke *p;
    struct gx_buf b;

    (void)snprintf(stamp, sizeof(stamp), "%lld", (long long)now_ms);
    (void)gx_kwrite_pod_path(path, sizeof(path), w->ns, w->name, "");
    p = calloc(1, sizeof(*p));
    gx_buf_init(&b, 4096);
    if (p == NULL || gx_kwrite_meta_patch(&b, &m) != GX_OK) {
        free(p);
        gx_buf_release(&b);
        return;
    }
    p->app = app;
    LIST_INSERT_HEAD(&app->requeue.pokes, p, link);
    p->xfer = gx_kube_request(app->sync.kube, "PATCH", path, b.data, b.len,
                              "application/merge-patch+json", 0, poke_done, p);
    gx_buf_release(&b);
    if (p->xfer == NULL) {
        poke_free(p);
    }
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;
    struct timeval tv = {1, 0};
    struct gx_waiter w[POKES_PER_TICK];
    int64_t tenants = 0, now = gx_wall_ms();
    size_t n = 0;
    bool freed, cooled;

    (void)fd;
    (void)what;
    gx_ledger_totals(app->ledger, NULL, &tenants);
    /* fewer tenants than a second ago (a booking went), or a busy card cooled */
    freed = tenants < app->requeue.tenants;
    cooled = app->requeue.cooled != app->requeue.cooled_seen;
    if ((freed || cooled) && app->sync.kube != NULL) {
        n = gx_waiters_take(app->requeue.waiters, now, WAIT_TTL_MS, w, POKES_PER_TICK);
    }
    if (n > 0) {
        gx_info("capacity freed, requeueing pods refused for it", "pods=%zu waiting=%zu cause=%s",
                n, gx_waiters_count(app->requeue.waiters),
                freed && cooled ? "booking,cooled"
                : freed         ? "booking"
                                : "cooled");
    }
    app->requeue.cooled_seen = app->requeue.cooled;
    for (size_t i = 0; i < n; i++) {
        poke(app, &w[i], now);
    }
    app->requeue.tenants = tenants;
    (void)evtimer_add(app->requeue.timer, &tv);
}

enum gx_err
gx_requeue_start(struct gx_app *app)
{
    struct timeval tv = {1, 0};

    LIST_INIT(&app->requeue.pokes);
    app->requeue.waiters = gx_waiters_new(WAITERS_MAX);
    app->requeue.timer = evtimer_new(app->base, tick_cb, app);
    if (app->requeue.waiters == NULL || app->requeue.timer == NULL) {
        return GX_ENOMEM;
    }
    (void)evtimer_add(app->requeue.timer, &tv);
    return GX_OK;
}

void
gx_requeue_stop(struct gx_app *app)
{
    if (app->requeue.timer != NULL) {
        event_free(app->requeue.timer);
        app->requeue.timer = NULL;
    }
    for (struct gx_poke *p = LIST_FIRST(&app->requeue.pokes), *next; p != NULL; p = next) {
        next = LIST_NEXT(p, link);
        poke_free(p);
    }
    gx_waiters_free(app->requeue.waiters);
    app->requeue.waiters = NULL;
}

void
gx_requeue_wait(struct gx_app *app, const struct gx_pod *pod)
{
    gx_waiters_add(app->requeue.waiters, pod->uid, pod->namespace, pod->name, gx_wall_ms());
}

bool
gx_requeue_waiting(const struct gx_app *app)
{
    return app->requeue.waiters != NULL && gx_waiters_count(app->requeue.waiters) > 0;
}

void
gx_requeue_cooled(struct gx_app *app, size_t n)
{
    app->requeue.cooled += n;
}

void
gx_requeue_done(struct gx_app *app, const char *uid)
{
    gx_waiters_del(app->requeue.waiters, uid);
}
