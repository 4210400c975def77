/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bgwrite.c - background Lease writes (see bgwrite.h).
 */
#include "bgwrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gx/log.h"

struct bgwrite {
    char uid[GX_UID_MAX]; /* first: the mutate callbacks read ctx as the UID */
    char node[256];
    LIST_ENTRY(bgwrite) link;
};

enum gx_err
gx_bg_release_mutate(void *uid, struct gx_ledger *l, const char *node, bool *write,
                     struct gx_why *why)
{
    const struct gx_ledger_node *held = gx_ledger_find_pod(l, uid);

    (void)why;
    *write = held != NULL && strcmp(held->node, node) == 0 && gx_ledger_release(l, uid) > 0;
    return GX_OK;
}

static enum gx_err
bound_mutate(void *uid, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
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

void
gx_bg_write(struct gx_app *app, enum gx_bg_kind kind, const char *node, const char *uid)
{
    struct bgwrite *b = calloc(1, sizeof(*b));
    int64_t deadline = gx_mono_ms() + (int64_t)app->cfg->ledger_reconcile_s * 1000;

    if (b == NULL || app->leases == NULL) {
        free(b);
        return;
    }
    (void)snprintf(b->uid, sizeof(b->uid), "%s", uid);
    (void)snprintf(b->node, sizeof(b->node), "%s", node);
    LIST_INSERT_HEAD(&app->bgs, b, link);
    if (!gx_leases_update(app->leases, node, deadline,
                          kind == GX_BG_BOUND ? bound_mutate : gx_bg_release_mutate, bg_done, b)) {
        LIST_REMOVE(b, link);
        free(b);
    }
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
