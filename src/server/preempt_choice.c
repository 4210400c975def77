/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_choice.c - the victim choice on the running server
 * (preempt_choice.h): the priority and budget lookups gx_preempt_choose
 * calls back, and the namespace quota applied to its choice. The choice
 * itself is preempt.c's (pure).
 */
#include "preempt_choice.h"

#include <stdlib.h>
#include <string.h>

#include "pdb.h"
#include "quota.h"
#include "reconcile.h"

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

enum gx_err
gx_preempt_choice_on(const struct gx_app *app, const struct gx_pod *pod, const char *node_name,
                     const struct gx_ext_node_victims *full, const struct gx_preempt_input *in,
                     struct gx_preempt_choice *c)
{
    struct prio_src ps = {app, node_name, full};
    struct gx_preempt_input here = *in;
    enum gx_err rc;

    here.priority_of = prio_of;
    here.arg = &ps;
    here.pdb_count = pdb_counter(app);
    if ((rc = gx_preempt_choose(&here, c)) != GX_OK) {
        return rc;
    }
    apply_quota(in->ctx, pod, in->req, in->node, c);
    return GX_OK;
}
