/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_verb.c - the preempt verb (see preempt_verb.h). The victim
 * choice itself is preempt.c's (pure); this file decodes, looks
 * priorities up, builds the answer and records a hold for every node
 * answered with victims of ours (preempt_holds.c).
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
#include "pdb.h"
#include "preempt.h"
#include "preempt_holds.h"
#include "quota.h"
#include "reconcile.h"
#include "reply.h"
#include "sync.h"

/* What the priority lookup of one node sees. */
struct prio_src {
    const struct gx_app *app;
    const char *node;
    const struct gx_ext_node_victims *nv; /* full Pods carry their priority */
};

static bool
prio_of(void *arg, const char *uid, int32_t *prio)
{
    const struct prio_src *s = arg;

    for (size_t i = 0; s->nv != NULL && i < s->nv->n_pods; i++) {
        const struct gx_ext_victim *p = &s->nv->pods[i];
        if (p->has_priority && strcmp(p->uid, uid) == 0) {
            *prio = p->priority;
            return true;
        }
    }
    /*
     * Only pods the watch shows bound here and running: a tenant whose pod
     * is gone, elsewhere or still being bound is not a pod the scheduler has
     * on this node, and naming it would fail the whole preemption.
     */
    return gx_recon_priority(s->app, uid, s->node, prio);
}

/*
 * PodDisruptionBudget violations of evicting @uids (pdb.h), from the
 * watched budgets and the pods' labels the pod watch keeps. A pod we have
 * no labels of matches no budget. Out of memory counts every pod, so a
 * set is never chosen for looking cheap.
 */
static int64_t
pdb_count(void *arg, const char *const *uids, size_t n)
{
    const struct prio_src *s = arg;
    struct gx_pdb_pod *pods = n > 0 ? calloc(n, sizeof(*pods)) : NULL;
    size_t k = 0, out = 0;
    enum gx_err rc;

    if (n == 0) {
        return 0;
    }
    if (pods == NULL) {
        return (int64_t)n;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gx_pdb_pod *p = gx_recon_pdb_pod(s->app, uids[i]);
        if (p != NULL) {
            pods[k++] = *p;
        }
    }
    rc = gx_pdbs_violations(s->app->sync.pdbs, pods, k, &out);
    free(pods);
    return rc == GX_OK ? (int64_t)out : (int64_t)n;
}

/* The budget count when the budgets are known (their watch listed), else none. */
static gx_preempt_pdb_fn
pdb_counter(const struct gx_app *app)
{
    return gx_pdbs_synced(app->sync.pdbs) ? pdb_count : NULL;
}

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
 * The namespace quota (quota.h, applied by filter after the verdict) once
 * the victims of @c are gone: only victims of the preemptor's own namespace
 * give quota back. A node where it would still refuse the preemptor is
 * dropped, so nobody is evicted for nothing. Cannot fail.
 */
static void
apply_quota(const struct gx_decide_ctx *ctx, const struct gx_pod *pod, const struct gx_podreq *req,
            const struct gx_node *node, struct gx_preempt_choice *c)
{
    const struct gx_ledger_node *e;
    struct gx_quota_check q;

    if (!c->keep || node == NULL) {
        return;
    }
    gx_quota_check_begin(ctx, pod->namespace, pod->uid, req, &q);
    if (!q.on) {
        return;
    }
    e = gx_ledger_node(ctx->ledger, node->name);
    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        const struct gx_tenant *t = &e->tenants[i];
        char ns[256];
        bool victim = false;

        for (size_t k = 0; k < c->n_victims && !victim && !c->unchanged; k++) {
            victim = strcmp(c->victims[k], t->uid) == 0;
        }
        gx_quota_tenant_ns(t, ns, sizeof(ns));
        if (victim && strcmp(ns, pod->namespace) == 0) {
            q.have.milli -= gx_quota_tenant_milli(ctx->cfg, ctx->snap, node->name, t);
            q.have.memory_mib -= t->memory_mib;
            q.have.tenants--;
        }
    }
    if (!gx_quota_check_node(&q, ctx, req, node)) {
        c->keep = false;
        c->drop = GX_PDROP_QUOTA;
        c->reason = GX_REASON_QUOTA;
    }
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
        struct prio_src ps = {app, nv->node, args.meta ? NULL : nv};
        struct gx_preempt_input in = {
            .ctx = &ctx,
            .req = &req,
            .priority = args.pod.has_priority ? args.pod.priority : 0,
            .node = node,
            .priority_of = prio_of,
            .arg = &ps,
            .sched = sched,
            .n_sched = nv->n_pods,
            .sched_pdb = nv->pdb,
            .pdb_count = pdb_counter(app),
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
        } else if (gx_preempt_choose(&in, c) != GX_OK) {
            gx_reply_error(&app->metrics, r, GX_VERB_PREEMPT, 500, "out of memory");
            goto out;
        }
        apply_quota(&ctx, &args.pod, &req, node, c);
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
    struct prio_src ps = {app, NULL, NULL};
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
            .priority_of = prio_of,
            .arg = &ps,
            .pdb_count = pdb_counter(app),
        };

        if (n->gpu_count <= 0) {
            continue;
        }
        ps.node = n->name;
        if ((rc = gx_preempt_choose(&in, c)) != GX_OK) {
            break;
        }
        apply_quota(&ctx, &pod, &req, n, c);
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
