/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_live.c - the trace replay driven pod by pod (the live API of sim.h,
 * for replay.c's time replay): one run's cluster and scheduling cycle
 * without the experiment around them, plus a pod leaving (the cycle's
 * inverse, sim_place.c) and the filters alone for a queueing hint.
 */
#include "sim_int.h"

#include <stdlib.h>

/* One run's state, the experiment left out. */
struct gx_sim_live {
    struct gx_sim_state r;
};

enum gx_err
gx_sim_live_new(const struct gx_sim_opts *o, const struct gx_sim_trace *t, uint64_t seed,
                struct gx_sim_live **out, struct gx_why *why)
{
    struct gx_sim_live *l = calloc(1, sizeof(*l));
    enum gx_err rc;

    *out = NULL;
    if (l == NULL) {
        return GX_ENOMEM;
    }
    if ((rc = gx_sim_state_init(&l->r, o, t, seed, why)) != GX_OK) {
        gx_sim_live_free(l);
        return rc;
    }
    *out = l;
    return GX_OK;
}

bool
gx_sim_live_place(struct gx_sim_live *l, const struct gx_trace_pod *p, struct gx_sim_placed *out)
{
    return gx_sim_place(&l->r, p, out);
}

bool
gx_sim_live_place_gang(struct gx_sim_live *l, const struct gx_trace_pod *const *p, size_t n,
                       struct gx_sim_placed *at)
{
    return gx_sim_place_gang(&l->r, p, n, at);
}

void
gx_sim_live_leave(struct gx_sim_live *l, const struct gx_trace_pod *p,
                  const struct gx_sim_placed *at)
{
    gx_sim_unplace(&l->r, p, at);
}

bool
gx_sim_live_fits(struct gx_sim_live *l, const struct gx_trace_pod *p, size_t i)
{
    struct gx_sim_state *r = &l->r;
    struct gx_ksched_res q = gx_sim_ks_request(r, p);
    struct gx_podreq req = {.kind = GX_REQ_NONE, .util_pct = -1};
    struct gx_decide_ctx ctx;
    struct gx_verdict v;

    if (i >= r->n || !gx_sim_intree_fits(&r->nodes[i], p, &q)) {
        return false;
    }
    if (r->o->mode == GX_SIM_COUNT_ONLY || (p->num_gpu == 0 && !r->o->cpu_pods_too)) {
        return true;
    }
    if (gx_sim_classify(r, p, &req) != GX_OK) {
        return false;
    }
    ctx = gx_sim_decide_ctx(r);
    gx_score_node(&ctx, &req, r->nodes[i].node, &v); /* the extender's filter */
    return v.keep;
}

struct gx_snapshot *
gx_sim_live_snapshot(struct gx_sim_live *l)
{
    return l->r.snap;
}

const struct gx_ledger *
gx_sim_live_ledger(const struct gx_sim_live *l)
{
    return l->r.ledger;
}

void
gx_sim_live_alloc(const struct gx_sim_live *l, int64_t *allocated, int64_t *capacity)
{
    *allocated = l->r.allocated;
    *capacity = l->r.capacity;
}

int64_t
gx_sim_live_errors(const struct gx_sim_live *l)
{
    return l->r.ledger_errs;
}

void
gx_sim_live_free(struct gx_sim_live *l)
{
    if (l != NULL) {
        gx_sim_state_release(&l->r);
        free(l);
    }
}
