/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bgwrite.c - background Lease writes (see bgwrite.h).
 */
#include "bgwrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/*
 * How long a tenant's mark as bound waits for a Lease round of its node to
 * join: about the time kube-scheduler takes to place the next few pods there
 * in a burst, and far inside every grace the reconciler gives a reservation
 * (two bind deadlines).
 */
#define BOUND_DEFER_MS 1000

struct bgwrite {
    char uid[GX_UID_MAX];
    char node[256];
    int64_t booking; /* a release: the stamp of the booking it undoes */
    LIST_ENTRY(bgwrite) link;
};

bool
gx_bg_release_booking(struct gx_ledger *l, const char *node, const char *uid, int64_t booking)
{
    const struct gx_ledger_node *held = gx_ledger_find_pod(l, uid);

    return held != NULL && strcmp(held->node, node) == 0 &&
           gx_ledger_release_booking(l, uid, booking) > 0;
}

static enum gx_err
release_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    const struct bgwrite *b = ctx;

    (void)why;
    *write = gx_bg_release_booking(l, node, b->uid, b->booking);
    return GX_OK;
}

static enum gx_err
bound_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    const char *uid = ((const struct bgwrite *)ctx)->uid;
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

static void
bg_done(void *ctx, enum gx_err rc, const char *why)
{
    struct bgwrite *b = ctx;

    if (rc != GX_OK) {
        gx_warn("background ledger update failed; the reconciler will retry",
                "node=%s uid=%s error=\"%s\"", b->node, b->uid, why);
    }
    LIST_REMOVE(b, link);
    free(b);
}

/* Start a write of @kind for @uid on @node (a release: of booking @booking). */
static void
bg_start(struct gx_app *app, enum gx_bg_kind kind, const char *node, const char *uid,
         int64_t booking)
{
    struct bgwrite *b = calloc(1, sizeof(*b));
    int64_t deadline = gx_mono_ms() + (int64_t)app->cfg->ledger_reconcile_s * 1000;

    if (b == NULL || app->leases == NULL) {
        free(b);
        return;
    }
    (void)snprintf(b->uid, sizeof(b->uid), "%s", uid);
    (void)snprintf(b->node, sizeof(b->node), "%s", node);
    b->booking = booking;
    LIST_INSERT_HEAD(&app->bgs, b, link);
    /*
     * A mark waits a moment for the node's next Lease round: in a burst the
     * binds that follow on the node carry it, one write less per pod. A
     * release goes at once: the capacity it frees is waited for.
     */
    if (!gx_leases_update_after(app->leases, node, kind == GX_BG_BOUND ? BOUND_DEFER_MS : 0,
                                deadline, kind == GX_BG_BOUND ? bound_mutate : release_mutate,
                                bg_done, b)) {
        LIST_REMOVE(b, link);
        free(b);
    }
}

void
gx_bg_write(struct gx_app *app, enum gx_bg_kind kind, const char *node, const char *uid)
{
    bg_start(app, kind, node, uid, GX_BOOKING_ANY);
}

void
gx_bg_release(struct gx_app *app, const char *node, const char *uid, int64_t booking)
{
    bg_start(app, GX_BG_RELEASE, node, uid, booking);
}

void
gx_bg_clear(struct gx_app *app)
{
    struct bgwrite *b;

    while ((b = LIST_FIRST(&app->bgs)) != NULL) {
        LIST_REMOVE(b, link);
        free(b);
    }
}
