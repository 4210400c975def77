/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_live.c - the trace replay driven pod by pod (the live API of sim.h,
 * for replay.c's time replay): one run's cluster and scheduling cycle
 * without the experiment around them, plus what the experiment never
 * needs: a pod leaving, and the filters alone for a queueing hint.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "ledger.h"

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
    uint64_t uid = l->r.uid;

    if (!gx_sim_schedule_one(&l->r, p)) {
        return false;
    }
    *out = l->r.last;
    out->booked = l->r.uid != uid; /* book() took a uid: the ledger holds the pod */
    out->uid = uid;
    return true;
}

void
gx_sim_live_leave(struct gx_sim_live *l, const struct gx_trace_pod *p,
                  const struct gx_sim_placed *at)
{
    struct gx_sim_state *r = &l->r;
    struct gx_sim_node *s = &r->nodes[at->node];
    struct gx_ksched_res q = gx_sim_ks_request(r, p);
    int milli = gx_sim_is_share(p) ? p->gpu_milli : GX_FGD_CARD;
    char uid[32];

    gx_ksched_remove(&s->ks, &q);
    for (int j = 0; j < at->n_cards; j++) {
        int c = at->cards[j], before = s->free[c];
        s->booked[c] -= milli;
        s->free[c] = s->booked[c] >= GX_FGD_CARD ? 0 : (int)(GX_FGD_CARD - s->booked[c]);
        r->allocated -= s->free[c] - before;
        if (r->o->mode == GX_SIM_COUNT_ONLY) {
            s->replicas[c] -= gx_sim_is_share(p) ? 1 : 1000; /* as plugin_cards counted it */
        }
    }
    if (at->booked) {
        (void)snprintf(uid, sizeof(uid), "u%llu", (unsigned long long)at->uid);
        if (gx_ledger_release(r->ledger, uid) == 0) {
            r->ledger_errs++;
        }
    }
    if (r->o->sees_all_pods && p->num_gpu == 0) {
        s->other_cpu -= p->cpu_milli;
        s->other_mem -= p->memory_mib;
        if (gx_ledger_set_untracked(r->ledger, s->node->name, s->other_cpu, s->other_mem) !=
            GX_OK) {
            r->ledger_errs++;
        }
    }
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
