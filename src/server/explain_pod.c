/* SPDX-License-Identifier: Apache-2.0 */
/*
 * explain_pod.c - "why is my pod pending?": a Pod object decided against
 * the current snapshot and ledger, for `explain` and /debug/explain.
 */
#include "explain_pod.h"

#include <stdio.h>

#include "explain.h"
#include "kobj.h"
#include "podreq.h"
#include "sync.h"

enum gx_err
gx_explain_pod(struct gx_app *app, const char *pod_json, size_t len, bool json, struct gx_buf *out,
               struct gx_why *why)
{
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_podreq req;
    struct gx_decide_ctx ctx;
    char name[600];
    enum gx_err rc;

    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_pod(pod_json, len, app->cfg->max_json_depth, &a, &pod, why);
    if (rc == GX_OK) {
        rc = gx_podreq_parse(app->cfg, &pod, &req, why);
    }
    if (rc == GX_OK) {
        (void)snprintf(name, sizeof(name), "%s/%s", pod.namespace, pod.name);
        gx_sync_decide_ctx(app, &ctx);
        rc = json ? gx_explain_json(&ctx, &req, name, out) : gx_explain_text(&ctx, &req, name, out);
    }
    gx_arena_release(&a);
    return rc;
}
