/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ready.c - readiness: every configured source has synced. Above sync and
 * reconcile, so neither has to ask the other.
 */
#include "ready.h"

#include "dra.h"
#include "leases.h"
#include "podsum.h"
#include "reconcile.h"

bool
gx_ready(const struct gx_app *app)
{
    if (app->sync.snap == NULL || app->draining) {
        return false;
    }
    if (app->sync.kube == NULL) {
        return true;
    }
    /* The snapshot itself must hold the API server's nodes, not just the node store. */
    return app->sync.snap_has_api_nodes && gx_recon_synced(app) && app->leases != NULL &&
           gx_leases_synced(app->leases) &&
           (app->sync.dra == NULL || gx_dra_synced(app->sync.dra)) &&
           (app->sync.podsum == NULL || gx_podsum_synced(app->sync.podsum));
}
