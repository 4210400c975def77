/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_verb.c - the preempt verb (see preempt_verb.h): decodes the
 * call, has the victims chosen per candidate node (preempt_choice.c over
 * preempt.c's pure choice), builds and logs the answer, and records a hold
 * for every node answered with victims of ours (preempt_holds.c).
 *
 * The answer per candidate node, as kube-scheduler v1.37.2 uses it
 * (pkg/scheduler/framework/preemption/preemption.go callExtenders and
 * extender.go convertToVictims): a node left out is no longer a
 * candidate; every UID must be a pod of that node in the scheduler's
 * cache (pods we chose come from our ledger of that node, so they are);
 * a node answered with no victim is an error, so such nodes are left out.
 * The scheduler's victims we do not manage (CPU pods, pods we never saw)
 * are kept as it chose them: it needed them for its own resources. Its
 * managed victims are replaced by our choice on one card.
 */
#include "preempt_verb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender.h"
#include "log.h"
#include "preempt_choice.h"
#include "preempt_holds.h"
#include "reply.h"
#include "sync.h"

/* True when @uid holds a tenant in ledger entry @e. */
static bool
is_tenant(const struct gx_ledger_node *e, const char *uid)
{
    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        if (strcmp(e->tenants[i].uid, uid) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * The UIDs answered for node @nv under choice @c, in arena memory: the
 * scheduler's set when unchanged, else its victims we do not manage plus
 * ours. *n = 0 when nothing would be evicted.
 */
static const char **
answer_uids(struct gx_arena *a, const struct gx_ledger_node *e,
            const struct gx_ext_node_victims *nv, const struct gx_preempt_choice *c, size_t *n)
{
    const char **uids = gx_arena_alloc(a, (nv->n_pods + c->n_victims + 1) * sizeof(*uids));
    size_t k = 0;

    *n = 0;
    if (uids == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < nv->n_pods; i++) {
        if (nv->pods[i].uid[0] != '\0' && (c->unchanged || !is_tenant(e, nv->pods[i].uid))) {
            uids[k++] = nv->pods[i].uid;
        }
    }
    for (size_t i = 0; !c->unchanged && i < c->n_victims; i++) {
        bool dup = false;
        for (size_t j = 0; j < k && !dup; j++) {
            dup = strcmp(uids[j], c->victims[i]) == 0;
        }
        if (!dup) {
            uids[k++] = gx_arena_strdup(a, c->victims[i]);
        }
    }
    for (size_t j = 0; j < k; j++) {
        if (uids[j] == NULL) {
            return NULL;
        }
    }
    *n = k;
    return uids;
}

static void
log_choice(const struct gx_ext_preempt_args *args, const char *node,
           const struct gx_preempt_choice *c, size_t n_answer, const char *const *uids)
{
    char victims[1024] = "", qp[700], qn[300];
    size_t at = 0;

    /* UIDs are the scheduler's or ours (safe); a long list is cut, never overrun */
    for (size_t i = 0; i < n_answer && at < sizeof(victims) - 1; i++) {
        int w = snprintf(victims + at, sizeof(victims) - at, "%s%s", i ? "," : "", uids[i]);
        at = w > 0 ? at + (size_t)w : sizeof(victims);
    }
    (void)gx_log_quote_pod(qp, sizeof(qp), args->pod.namespace, args->pod.name);
    (void)gx_log_quote(qn, sizeof(qn), node);
    if (c->keep) {
        gx_info("preempt node kept", "pod=%s node=%s card=%d unchanged=%d victims=%zu uids=%s", qp,
                qn, c->n_cards > 0 ? c->cards[0] : -1, c->unchanged, n_answer, victims);
    } else {
        gx_info("preempt node dropped", "pod=%s node=%s drop=%s reason=\"%s\"", qp, qn,
                gx_preempt_drop_name(c->drop), gx_reason_text(c->reason));
    }
}

void
gx_preempt_handle(struct gx_app *app, struct gx_http_req *r)
{
    struct gx_why why = {{0}};
    struct gx_ext_preempt_args args;
    struct gx_ext_meta_victims *ans = NULL;
    struct gx_preempt_choice *c = NULL;
    struct gx_decide_ctx ctx;
    struct gx_podreq req;
    struct gx_buf out;
    size_t len, n_ans = 0;
    const char *body = gx_http_body(r, &len);
    bool bad;
    enum gx_err rc;

    rc = gx_ext_decode_preempt(body, len, app->cfg->max_json_depth, &args, &why);
    if (rc != GX_OK) {
        gx_reply_error(&app->metrics, r, GX_VERB_PREEMPT, 400, why.text);
        return;
    }
    bad = gx_podreq_parse(app->cfg, &args.pod, &req, &why) != GX_OK;
    ans = calloc(args.n_nodes ? args.n_nodes : 1, sizeof(*ans));
    c = malloc(sizeof(*c));
    if (ans == NULL || c == NULL) {
        gx_reply_error(&app->metrics, r, GX_VERB_PREEMPT, 500, "out of memory");
        goto out;
    }
    app->metrics.preempt_calls++;
    gx_sync_decide_ctx(app, &ctx);
    for (size_t i = 0; i < args.n_nodes; i++) {
        const struct gx_ext_node_victims *nv = &args.nodes[i];
        const struct gx_node *node = gx_snapshot_find(app->sync.snap, nv->node, strlen(nv->node));
        const char **sched = gx_arena_alloc(&args.arena, (nv->n_pods + 1) * sizeof(*sched));
        struct gx_preempt_input in = {
            .ctx = &ctx,
            .req = &req,
            .priority = args.pod.has_priority ? args.pod.priority : 0,
            .node = node,
            .sched = sched,
            .n_sched = nv->n_pods,
            .sched_pdb = nv->pdb,
        };
        const char **uids = NULL;
        size_t n_uids = 0;

        if (sched == NULL) {
            gx_reply_error(&app->metrics, r, GX_VERB_PREEMPT, 500, "out of memory");
            goto out;
        }
        for (size_t k = 0; k < nv->n_pods; k++) {
            sched[k] = nv->pods[k].uid;
        }
        memset(c, 0, sizeof(*c));
        if (bad) {
            c->drop = GX_PDROP_BAD_REQUEST;
            c->reason = GX_REASON_BAD_REQUEST;
        } else if (gx_preempt_under_way(app, args.pod.uid, nv->node)) {
            /* v1.38's asynchronous preemption asked again 12 ms after evicting, took a second
             * victim */
            c->drop = GX_PDROP_UNDER_WAY;
        } else if (gx_preempt_choice_on(app, &args.pod, nv->node, args.meta ? NULL : nv, &in, c) !=
                   GX_OK) {
            gx_reply_error(&app->metrics, r, GX_VERB_PREEMPT, 500, "out of memory");
            goto out;
        }
        if (c->keep) {
            uids = answer_uids(&args.arena, gx_ledger_node(ctx.ledger, nv->node), nv, c, &n_uids);
            /* nothing to evict (or no memory to say it): v1.37.2 refuses a node with no victim */
            if (n_uids == 0) {
                c->keep = false;
                c->drop = GX_PDROP_NO_VICTIMS;
            }
        }
        log_choice(&args, nv->node, c, n_uids, uids);
        if (!c->keep) {
            app->metrics.preempt_dropped[c->drop]++;
            continue;
        }
        app->metrics.preempt_nodes_kept++;
        app->metrics.preempt_victims += n_uids;
        ans[n_ans].node = nv->node;
        ans[n_ans].uids = uids;
        ans[n_ans].n_uids = n_uids;
        ans[n_ans].pdb = c->pdb;
        n_ans++;
        if (!c->unchanged && c->n_victims > 0) {
            gx_preempt_hold_put(app, &args.pod, &req, nv->node, c);
        }
    }
    gx_buf_init(&out, (size_t)64 << 20);
    if (gx_ext_encode_preempt(&out, ans, n_ans) != GX_OK) {
        gx_buf_release(&out);
        gx_reply_error(&app->metrics, r, GX_VERB_PREEMPT, 500,
                       "cannot encode the preemption result");
    } else {
        gx_reply_json(&app->metrics, r, GX_VERB_PREEMPT, 200, &out);
    }
out:
    free(c);
    free(ans);
    gx_ext_preempt_args_release(&args);
}
