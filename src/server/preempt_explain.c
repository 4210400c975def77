/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_explain.c - POST /debug/preempt (preempt_explain.h): what the
 * preempt verb would answer for a Pod on every GPU node of the snapshot,
 * the scheduler naming no victim, by the verb's own choice
 * (gx_preempt_choice_on), as text or JSON. Answers no preempt call and
 * records no hold.
 */
#include "preempt_explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_choice.h"
#include "sync.h"

/* The "namespace/name" of tenant @uid in entry @e, or @uid. */
static const char *
tenant_name(const struct gx_ledger_node *e, const char *uid)
{
    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        if (strcmp(e->tenants[i].uid, uid) == 0 && e->tenants[i].pod[0] != '\0') {
            return e->tenants[i].pod;
        }
    }
    return uid;
}

/* One node of the explanation, text or JSON. */
static enum gx_err
explain_node(struct gx_buf *out, bool json, bool first, const struct gx_node *n,
             const struct gx_ledger_node *e, const struct gx_preempt_choice *c, bool fits)
{
    const char *state = fits ? "fits" : c->keep ? "evict" : "none";
    enum gx_err rc;

    if (!json) {
        rc = gx_buf_addf(out, "%-24s %-44s ", n->name, fits ? "-" : gx_reason_text(c->reason));
        if (rc == GX_OK && fits) {
            rc = gx_buf_addf(out, "fits now, nothing to evict\n");
        } else if (rc == GX_OK && !c->keep) {
            rc = gx_buf_addf(out, "no victims: %s\n", gx_preempt_drop_name(c->drop));
        } else if (rc == GX_OK) {
            rc = gx_buf_addf(out, "evict");
            for (size_t i = 0; i < c->n_victims && rc == GX_OK; i++) {
                rc = gx_buf_addf(out, "%s%s", i ? ", " : " ", tenant_name(e, c->victims[i]));
            }
            if (rc == GX_OK && c->n_cards > 0) {
                rc = gx_buf_addf(out, " (card %d%s)", c->cards[0], c->n_cards > 1 ? ", ..." : "");
            }
            if (rc == GX_OK) {
                rc = gx_buf_addf(out, "\n");
            }
        }
        return rc;
    }
    rc = gx_buf_addf(out, "%s{\"node\":", first ? "" : ",");
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, n->name, strlen(n->name));
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(out, ",\"preempt\":\"%s\",\"reason\":\"%s\",\"drop\":\"%s\",\"cards\":[",
                         state, fits ? "" : gx_reason_text(c->reason),
                         c->keep || fits ? "" : gx_preempt_drop_name(c->drop));
    }
    for (int i = 0; i < c->n_cards && c->keep && rc == GX_OK; i++) {
        rc = gx_buf_addf(out, "%s%d", i ? "," : "", c->cards[i]);
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(out, "],\"victims\":[");
    }
    for (size_t i = 0; i < c->n_victims && c->keep && rc == GX_OK; i++) {
        const char *pod = tenant_name(e, c->victims[i]);
        rc = gx_buf_addf(out, "%s{\"uid\":", i ? "," : "");
        if (rc == GX_OK) {
            rc = gx_buf_add_json_str(out, c->victims[i], strlen(c->victims[i]));
        }
        if (rc == GX_OK) {
            rc = gx_buf_addf(out, ",\"pod\":");
        }
        if (rc == GX_OK) {
            rc = gx_buf_add_json_str(out, pod, strlen(pod));
        }
        if (rc == GX_OK) {
            rc = gx_buf_addf(out, "}");
        }
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(out, "]}");
    }
    return rc;
}

enum gx_err
gx_preempt_explain(struct gx_app *app, const char *pod_json, size_t len, bool json,
                   struct gx_buf *out, struct gx_why *why)
{
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_podreq req;
    struct gx_decide_ctx ctx;
    struct gx_preempt_choice *c = NULL;
    const struct gx_snapshot *snap = app->sync.snap;
    char qp[700];
    bool first = true;
    enum gx_err rc;

    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_pod(pod_json, len, app->cfg->max_json_depth, &a, &pod, why);
    if (rc == GX_OK) {
        rc = gx_podreq_parse(app->cfg, &pod, &req, why);
    }
    if (rc == GX_OK && (c = malloc(sizeof(*c))) == NULL) {
        rc = GX_ENOMEM;
    }
    if (rc != GX_OK) {
        goto out;
    }
    gx_sync_decide_ctx(app, &ctx);
    (void)snprintf(qp, sizeof(qp), "%s/%s", pod.namespace, pod.name);
    if (json) {
        rc = gx_buf_addf(out, "{\"pod\":");
        if (rc == GX_OK) {
            rc = gx_buf_add_json_str(out, qp, strlen(qp));
        }
        if (rc == GX_OK) {
            rc = gx_buf_addf(out, ",\"priority\":%d,\"nodes\":[",
                             pod.has_priority ? (int)pod.priority : 0);
        }
    } else {
        rc = gx_buf_addf(out,
                         "preemption for %s (priority %d): what the preempt verb answers per "
                         "GPU node, the scheduler naming no victims\n%-24s %-44s %s\n",
                         qp, pod.has_priority ? (int)pod.priority : 0, "NODE", "REASON NOW",
                         "PREEMPT");
    }
    for (size_t i = 0; snap != NULL && i < snap->n_nodes && rc == GX_OK; i++) {
        const struct gx_node *n = &snap->nodes[i];
        struct gx_preempt_input in = {
            .ctx = &ctx,
            .req = &req,
            .priority = pod.has_priority ? pod.priority : 0,
            .node = n,
        };

        if (n->gpu_count <= 0) {
            continue;
        }
        if ((rc = gx_preempt_choice_on(app, &pod, n->name, NULL, &in, c)) != GX_OK) {
            break;
        }
        rc = explain_node(out, json, first, n, gx_ledger_node(ctx.ledger, n->name), c,
                          !c->keep && c->drop == GX_PDROP_FITS);
        first = false;
    }
    if (rc == GX_OK && json) {
        rc = gx_buf_addf(out, "]}");
    }
out:
    if (rc == GX_ENOMEM) {
        gx_why_set(why, "out of memory");
    }
    free(c);
    gx_arena_release(&a);
    return rc;
}
