/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim.c - the experiment of the trace replay (sim.h). It follows the FGD
 * paper's simulator: pods sorted by name, shuffled, tuned to a multiple of
 * the GPU capacity by drawing more pods with replacement, arriving one at
 * a time and never leaving. Each pod goes through one scheduling cycle
 * (sim_place.c) on the run's cluster (sim_model.c), or waits for its gang
 * to complete (--gangs, sim_gang.c); this file records the allocation and
 * fragmentation rates against the arrived workload.
 *
 * The sim keeps its own per-card account of requested milli-GPU for those
 * rates (what the pods asked, not what the ledger rounded them to), so
 * rounding losses show up as lost allocation. The --json and SVG outputs
 * are sim_report.c's.
 */
#include "sim_int.h"

#include <stdlib.h>
#include <string.h>

void
gx_sim_opts_default(struct gx_sim_opts *o, const struct gx_config *cfg)
{
    memset(o, 0, sizeof(*o));
    o->cfg = cfg;
    gx_ksched_profile_default(&o->profile);
    gx_ksched_profile_default(&o->cpu_profile);
    o->mode = GX_SIM_EXTENDER;
    o->tune = 1.3;
    o->shuffle = true;
    o->replicas = 4;
}

static int
name_cmp(const void *a, const void *b, const struct gx_trace_pod *pods)
{
    return strcmp(pods[*(const size_t *)a].name, pods[*(const size_t *)b].name);
}

/* Sort @idx by pod name (insertion of runs is too slow; a merge sort keeps it stable). */
static void
sort_by_name(size_t *idx, size_t *tmp, size_t n, const struct gx_trace_pod *pods)
{
    if (n < 2) {
        return;
    }
    sort_by_name(idx, tmp, n / 2, pods);
    sort_by_name(idx + n / 2, tmp, n - n / 2, pods);
    for (size_t i = 0, a = 0, b = n / 2; i < n; i++) {
        if (b >= n || (a < n / 2 && name_cmp(&idx[a], &idx[b], pods) <= 0)) {
            tmp[i] = idx[a++];
        } else {
            tmp[i] = idx[b++];
        }
    }
    memcpy(idx, tmp, n * sizeof(*idx));
}

/* The arrival order: sorted by name, shuffled, then tuned (sim.h). */
static enum gx_err
build_order(struct gx_sim_state *r)
{
    const struct gx_sim_trace *t = r->t;
    size_t cap = t->n_pods * 2 + 16, n = t->n_pods;
    size_t *idx = malloc(cap * sizeof(*idx)), *tmp = malloc(cap * sizeof(*tmp));
    int64_t total = 0, limit = (int64_t)(r->o->tune * (double)r->capacity);

    if (idx == NULL || tmp == NULL) {
        free(idx);
        free(tmp);
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        idx[i] = i;
        total += gx_trace_pod_milli(&t->pods[i]);
    }
    if (r->o->tune > 0 && total == 0) {
        /* drawing more pods would never reach the target: refuse, do not loop */
        free(idx);
        free(tmp);
        return GX_EINVAL;
    }
    sort_by_name(idx, tmp, n, t->pods);
    for (size_t i = n; r->o->shuffle && i > 1; i--) {
        size_t j = gx_sim_rng_below(&r->rng, i), x = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = x;
    }
    while (r->o->tune > 0 && t->n_pods > 0) {
        size_t j = gx_sim_rng_below(&r->rng, t->n_pods);
        int64_t m = gx_trace_pod_milli(&t->pods[j]);
        if (total + m > limit) {
            break;
        }
        if (n == cap) {
            size_t *ni = realloc(idx, cap * 2 * sizeof(*idx));
            if (ni == NULL) {
                free(idx);
                free(tmp);
                return GX_ENOMEM;
            }
            idx = ni;
            cap *= 2;
        }
        idx[n++] = j;
        total += m;
    }
    free(tmp);
    r->order = idx;
    r->n_order = n;
    return GX_OK;
}

/* Free resources of node @s for the fragmentation model. */
static void
fgd_node_of(const struct gx_sim_node *s, struct gx_fgd_node *f)
{
    f->cpu_milli = s->ks.alloc.cpu_milli - s->ks.requested.cpu_milli;
    f->mem_mib = (s->ks.alloc.mem_bytes - s->ks.requested.mem_bytes) / (INT64_C(1024) * 1024);
    f->n_cards = s->n_cards;
    memcpy(f->free, s->free, sizeof(f->free));
}

/* Cluster fragmentation in milli-GPU under the workload's typical pods. */
static double
cluster_frag(const struct gx_sim_state *r)
{
    struct gx_fgd_node f;
    double sum = 0.0;

    for (size_t i = 0; i < r->n; i++) {
        fgd_node_of(&r->nodes[i], &f);
        sum += gx_fgd_frag(&r->truth, &f);
    }
    return sum;
}

/* Record every step the arrived workload has reached. */
static void
record(const struct gx_sim_state *r, size_t *step, struct gx_sim_result *out, bool final)
{
    while (*step < GX_SIM_STEPS &&
           (final || (double)r->arrived * 100.0 >= (double)*step * (double)r->capacity)) {
        out->alloc_pct[*step] = 100.0 * (double)r->allocated / (double)r->capacity;
        out->frag_pct[*step] = 100.0 * cluster_frag(r) / (double)r->capacity;
        (*step)++;
    }
}

/* Cards booked past their capacity, for the invariant check. */
static int64_t
over_cards(const struct gx_sim_state *r)
{
    int64_t n = 0;

    for (size_t i = 0; i < r->n; i++) {
        for (int c = 0; c < r->nodes[i].n_cards; c++) {
            n += r->nodes[i].booked[c] > GX_FGD_CARD;
        }
    }
    return n;
}

enum gx_err
gx_sim_run(const struct gx_sim_opts *o, const struct gx_sim_trace *t, uint64_t seed,
           gx_sim_progress_cb cb, void *cb_ctx, struct gx_sim_result *out, struct gx_why *why)
{
    struct gx_sim_state r;
    struct gx_sim_gang_run g;
    size_t step = 0;
    enum gx_err rc;

    memset(out, 0, sizeof(*out));
    if ((rc = gx_sim_state_init(&r, o, t, seed, why)) != GX_OK) {
        goto out;
    }
    if ((rc = build_order(&r)) != GX_OK) {
        if (rc == GX_EINVAL) {
            gx_why_set(why,
                       "no pod of the trace asks for a GPU: nothing to tune to %.2f x the "
                       "GPU capacity (--tune 0 replays the pods as they are)",
                       o->tune);
        }
        goto out;
    }
    for (size_t k = 0; k < r.n_order; k++) {
        struct gx_fgd_shape sh = gx_sim_shape_of(&t->pods[r.order[k]]);
        gx_fgd_observe(&r.truth, &sh);
    }
    record(&r, &step, out, false);
    gx_sim_gang_start(&g, &o->gangs, seed);
    for (size_t k = 0; k < r.n_order; k++) {
        const struct gx_trace_pod *p = &t->pods[r.order[k]];

        if (!gx_sim_gang_arrive(&r, &g, p, out) && !gx_sim_schedule_one(&r, p)) {
            out->failed++;
        }
        if (step <= 100) { /* 100 % not reached before this pod */
            out->gangs_100 = out->gangs;
            out->gangs_failed_100 = out->gangs_failed;
        }
        r.arrived += gx_trace_pod_milli(p);
        record(&r, &step, out, false);
        if (cb != NULL && (k + 1) % 1024 == 0) {
            cb(cb_ctx, k + 1, r.n_order);
        }
    }
    gx_sim_gang_flush(&r, &g, out);
    record(&r, &step, out, true);
    out->seed = seed;
    out->pods = r.n_order;
    out->capacity_milli = r.capacity;
    out->over_cards = over_cards(&r);
    out->ledger_errs = r.ledger_errs;
    rc = GX_OK;
out:
    gx_sim_state_release(&r);
    return rc;
}

void
gx_sim_mean(const struct gx_sim_result *r, size_t n, struct gx_sim_result *mean)
{
    memset(mean, 0, sizeof(*mean));
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < GX_SIM_STEPS; i++) {
            mean->alloc_pct[i] += r[k].alloc_pct[i] / (double)n;
            mean->frag_pct[i] += r[k].frag_pct[i] / (double)n;
        }
        mean->pods += r[k].pods;
        mean->failed += r[k].failed;
        mean->over_cards += r[k].over_cards;
        mean->ledger_errs += r[k].ledger_errs;
        mean->gangs += r[k].gangs;
        mean->gangs_placed += r[k].gangs_placed;
        mean->gangs_failed += r[k].gangs_failed;
        mean->gangs_partial += r[k].gangs_partial;
        mean->gangs_100 += r[k].gangs_100;
        mean->gangs_failed_100 += r[k].gangs_failed_100;
        mean->capacity_milli = r[k].capacity_milli;
    }
}
