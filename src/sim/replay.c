/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.c - the time-based replay (replay.h).
 *
 * Arrivals: the trace's own timestamps load the 1,213-node cluster to at
 * most 1 % (its 8,152 pods are a sample spread over 149 days), so the
 * replay keeps what a pod is (requests, duration = deletion - creation)
 * and draws when it comes: a seeded Poisson process whose rate makes the
 * offered load (requested milli-GPU alive in steady state) o->load x the
 * capacity. The first pass takes every trace pod once in a shuffled
 * order, later arrivals draw pods with replacement (the tuning of sim.c).
 *
 * Utilization model, per pod, from a hash of (seed, arrival): s is its
 * share of a card (gpu_milli / 1000, 1 per card for whole GPUs).
 *  - steady pods (1 - ramp_frac): level s x U(0.2, 1.0), so the mean is
 *    bounded by the share, as a user sizes a request;
 *  - ramping pods (ramp_frac): start at 0.1 s and rise linearly over
 *    U(10, 40) minutes to s x U(1.0, 1.5), then stay: a training job
 *    warming up or an inference service taking traffic. Time-slicing does
 *    not cap a pod at its share, so these can outgrow it; they are what a
 *    trend (deriv) sees coming and what the measured headroom rule guards.
 *  - noise: +-0.1 s (triangular) per sample; demand is clamped to
 *    [0, s] for steady pods and [0, min(1, 1.5 s)] for ramping ones.
 * A card's true utilization is min(100, 100 x sum of its tenants' demand);
 * it is over-admitted when that sum passes 1. The extender sees the
 * sample taken lag_s earlier (dcgm-exporter interval + Prometheus scrape +
 * refresh), and pods placed after that sample are not in it yet.
 *
 * Queue: a pod that fits nowhere waits in FIFO order; a departure retries
 * the waiting pods the freed node now passes the filters for (kube-
 * scheduler's queueing hint on a pod deletion: no other node changed since
 * their failed cycle, so a cycle that cannot use this node fails again),
 * a sample that shows a busy card cooled does the same for that card's
 * node (the extender pokes the pods it refused, server/requeue.h), and
 * every pod is retried flush_s after its last attempt
 * (podMaxInUnschedulablePodsDuration, 5 min).
 */
#include "replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "score.h"
#include "snapshot.h"

/* Samples kept per card: the 5-minute deriv window plus the lag. */
#define RING 16
/* Samples of the deriv window: 5 minutes of 30-second samples. */
#define TREND_SAMPLES 10

enum pstate { P_WAIT, P_RUN, P_DONE, P_GAVE_UP };

/* One arrival. */
struct rpod {
    const struct gx_trace_pod *p;
    int64_t arrive_s, dur_s, placed_s, tried_s;
    struct gx_sim_placed at;
    double share, level, start, ramp_s; /* utilization model (ramp_s 0: steady) */
    uint64_t key;                       /* noise stream */
    enum pstate state;
    size_t run_pos; /* index in the running set */
};

struct rstate {
    const struct gx_replay_opts *o;
    const struct gx_sim_trace *t;
    struct gx_sim_live *live;
    struct gx_snapshot *snap;
    uint64_t seed;
    struct rpod *pods;
    size_t n_pods;
    size_t *running, n_running; /* pods holding cards or CPU */
    size_t *heap, n_heap;       /* departures: running pods by end time */
    size_t *wait, n_wait;       /* FIFO of waiting pods */
    size_t *card_base;          /* first global card of node i */
    size_t n_cards;
    double *demand;      /* per card, at the current sample */
    uint16_t *tenants;   /* per card, at the current sample */
    float (*ring)[RING]; /* per card: true utilization % of the last samples */
    bool *ever_over;     /* per card */
    bool *cooled;        /* per node: a busy card cooled at the sample just shown */
    int64_t grid;        /* samples taken */
    int64_t n_measured;  /* samples after the warm-up */
    int64_t seen_grid;   /* the sample the snapshot shows, -1 none */
    double alloc_sum, util_sum;
    struct gx_replay_result *res;
};

void
gx_replay_opts_default(struct gx_replay_opts *o, const struct gx_config *cfg)
{
    memset(o, 0, sizeof(*o));
    gx_sim_opts_default(&o->sim, cfg);
    o->load = 1.0;
    o->horizon_s = INT64_C(7200);
    o->warmup_s = 3600;
    o->sample_s = 30;
    o->lag_s = 30;
    o->poke_cooled = true;
    o->flush_s = 300;
    o->ramp_frac = 0.3;
}

/* Uniform in [0, 1) from the stream at *@s. */
static double
unif(uint64_t *s)
{
    return (double)(gx_sim_rng(s) >> 11) * 0x1.0p-53;
}

/* Duration of trace pod @p: at least a second. */
static int64_t
duration_of(const struct gx_trace_pod *p)
{
    int64_t d = p->deletion_s - p->creation_s;

    return d < 1 ? 1 : d;
}

/* Set the utilization model of arrival @k. */
static void
model_pod(const struct rstate *st, size_t k, struct rpod *rp)
{
    uint64_t s = st->seed ^ (UINT64_C(0xA0761D6478BD642F) * (k + 1));
    const struct gx_trace_pod *p = rp->p;

    rp->share = p->num_gpu == 1 && p->gpu_milli < 1000 ? p->gpu_milli / 1000.0 : 1.0;
    rp->key = gx_sim_rng(&s);
    if (unif(&s) < st->o->ramp_frac) {
        rp->start = 0.1 * rp->share;
        rp->level = rp->share * (1.0 + 0.5 * unif(&s));
        rp->ramp_s = 600.0 + 1800.0 * unif(&s);
    } else {
        rp->level = rp->share * (0.2 + 0.8 * unif(&s));
        rp->start = rp->level;
        rp->ramp_s = 0.0;
    }
}

/* True demand of @rp per card it holds at sample @g (time @t). */
static double
demand_of(const struct rpod *rp, int64_t g, int64_t t)
{
    uint64_t s = rp->key ^ (UINT64_C(0xE7037ED1A0B428DB) * (uint64_t)(g + 1));
    double v = rp->level, cap = rp->ramp_s > 0.0 ? fmin(1.0, 1.5 * rp->share) : rp->share;
    double up = (double)(t - rp->placed_s);

    if (rp->ramp_s > 0.0 && up < rp->ramp_s) {
        v = rp->start + (rp->level - rp->start) * (up < 0 ? 0.0 : up / rp->ramp_s);
    }
    v += 0.1 * rp->share * (unif(&s) + unif(&s) - 1.0);
    return v < 0.0 ? 0.0 : v > cap ? cap : v;
}

/* Arrivals: Poisson at the rate of the offered load, trace pods shuffled then drawn. */
static enum gx_err
build_arrivals(struct rstate *st, struct gx_why *why)
{
    const struct gx_sim_trace *t = st->t;
    uint64_t s = st->seed;
    double work = 0.0, rate, now = 0.0;
    int64_t cap_milli = 0, alloc = 0, h = st->o->horizon_s;
    size_t n = 0, room = 1024, *order = malloc(t->n_pods * sizeof(*order));

    gx_sim_live_alloc(st->live, &alloc, &cap_milli);
    st->pods = calloc(room, sizeof(*st->pods));
    if (order == NULL || st->pods == NULL) {
        free(order);
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < t->n_pods; i++) {
        int64_t d = duration_of(&t->pods[i]);
        if (t->pods[i].creation_s < 0 || t->pods[i].deletion_s < 0) {
            gx_why_set(why, "pod %.64s has no creation_time/deletion_time", t->pods[i].name);
            free(order);
            return GX_EINVAL;
        }
        work += (double)gx_trace_pod_milli(&t->pods[i]) * (double)(d < h ? d : h);
        order[i] = i;
    }
    if (work <= 0.0) {
        gx_why_set(why, "the pods ask for no GPU");
        free(order);
        return GX_EINVAL;
    }
    for (size_t i = t->n_pods; i > 1; i--) {
        size_t j = (size_t)(gx_sim_rng(&s) % i), x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    /* steady state: rate x mean(milli x duration) = load x capacity */
    rate = st->o->load * (double)cap_milli / (work / (double)t->n_pods);
    for (;;) {
        now += -log(1.0 - unif(&s)) / rate;
        if (now >= (double)h) {
            break;
        }
        if (n == room) {
            struct rpod *np = realloc(st->pods, room * 2 * sizeof(*np));
            if (np == NULL) {
                free(order);
                return GX_ENOMEM;
            }
            memset(np + room, 0, room * sizeof(*np));
            st->pods = np;
            room *= 2;
        }
        st->pods[n] = (struct rpod){
            .p = &t->pods[n < t->n_pods ? order[n] : (size_t)(gx_sim_rng(&s) % t->n_pods)],
            .arrive_s = (int64_t)now,
            .placed_s = -1,
            .state = P_WAIT};
        st->pods[n].dur_s = duration_of(st->pods[n].p);
        model_pod(st, n, &st->pods[n]);
        n++;
    }
    free(order);
    st->n_pods = n;
    return GX_OK;
}

/* Departure heap on end time (placed + duration). */
static int64_t
end_of(const struct rstate *st, size_t k)
{
    return st->pods[k].placed_s + st->pods[k].dur_s;
}

static void
heap_swap(struct rstate *st, size_t a, size_t b)
{
    size_t x = st->heap[a];

    st->heap[a] = st->heap[b];
    st->heap[b] = x;
}

static void
heap_push(struct rstate *st, size_t k)
{
    size_t i = st->n_heap++;

    st->heap[i] = k;
    while (i > 0 && end_of(st, st->heap[(i - 1) / 2]) > end_of(st, st->heap[i])) {
        heap_swap(st, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static size_t
heap_pop(struct rstate *st)
{
    size_t top = st->heap[0], i = 0;

    st->heap[0] = st->heap[--st->n_heap];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < st->n_heap && end_of(st, st->heap[l]) < end_of(st, st->heap[m])) {
            m = l;
        }
        if (r < st->n_heap && end_of(st, st->heap[r]) < end_of(st, st->heap[m])) {
            m = r;
        }
        if (m == i) {
            return top;
        }
        heap_swap(st, i, m);
        i = m;
    }
}

/*
 * Show the extender the newest sample it can see at @t: each card's true
 * utilization lag_s ago and, with o->trend, its least-squares slope over
 * the 5 minutes before it (deriv(...[5m])), in % per second.
 */
static void
show_metrics(struct rstate *st, int64_t t)
{
    int64_t g = (t - st->o->lag_s) / st->o->sample_s;
    double xm = (TREND_SAMPLES - 1) / 2.0, sxx = 0.0;
    struct gx_decide_ctx ctx = {.cfg = st->o->sim.cfg,
                                .snap = st->snap,
                                .ledger = gx_sim_live_ledger(st->live),
                                .now_ms = GX_SIM_NOW_MS};
    bool waiting = st->o->poke_cooled && st->n_wait > 0; /* else the states need not be read */

    if (t < st->o->lag_s || g >= st->grid || g == st->seen_grid) {
        return;
    }
    st->seen_grid = g;
    for (int j = 0; j < TREND_SAMPLES; j++) {
        sxx += (j - xm) * (j - xm);
    }
    for (size_t i = 0; i < st->snap->n_nodes; i++) {
        struct gx_node *node = &st->snap->nodes[i];
        st->cooled[i] = false;
        for (size_t c = 0; c < node->n_cards; c++) {
            const float *ring = st->ring[st->card_base[i] + c];
            struct gx_card *card = &node->cards[c];
            bool busy = waiting && gx_score_card_state(&ctx, node, card) == GX_CARD_BUSY;
            card->v[GX_SIG_UTIL] = ring[g % RING];
            card->at_ms[GX_SIG_UTIL] = GX_SIM_NOW_MS - st->o->lag_s * 1000;
            if (st->o->trend && g >= TREND_SAMPLES - 1) {
                double sxy = 0.0;
                for (int j = 0; j < TREND_SAMPLES; j++) {
                    sxy += (j - xm) * ring[(g - TREND_SAMPLES + 1 + j) % RING];
                }
                card->v[GX_SIG_UTIL_TREND] = sxy / sxx / (double)st->o->sample_s;
                card->at_ms[GX_SIG_UTIL_TREND] = card->at_ms[GX_SIG_UTIL];
            }
            st->cooled[i] |= busy && gx_score_card_state(&ctx, node, card) != GX_CARD_BUSY;
        }
    }
}

/* Global card index of card @c of node @i. */
static size_t
card_of(const struct rstate *st, long i, int c)
{
    return st->card_base[i] + (size_t)c;
}

/* One scheduling cycle for waiting pod @k at @t; true when placed. */
static bool
attempt(struct rstate *st, size_t k, int64_t t)
{
    struct rpod *rp = &st->pods[k];

    show_metrics(st, t);
    rp->tried_s = t;
    if (!gx_sim_live_place(st->live, rp->p, &rp->at)) {
        return false;
    }
    if (t < rp->arrive_s) {
        st->res->order_errs++;
    }
    rp->state = P_RUN;
    rp->placed_s = t;
    rp->run_pos = st->n_running;
    st->running[st->n_running++] = k;
    heap_push(st, k);
    return true;
}

/*
 * Retry the waiting pods in FIFO order: all (@node < 0) or those @node
 * passes in-tree. Returns how many were placed.
 */
static size_t
retry(struct rstate *st, int64_t t, long node, bool due_only)
{
    size_t keep = 0, n = st->n_wait;

    for (size_t j = 0; j < st->n_wait; j++) {
        size_t k = st->wait[j];
        bool go = due_only ? t - st->pods[k].tried_s >= st->o->flush_s
                           : gx_sim_live_fits(st->live, st->pods[k].p, (size_t)node);
        if (!go || !attempt(st, k, t)) {
            st->wait[keep++] = k;
        }
    }
    st->n_wait = keep;
    return n - keep;
}

/* The sample @t shows: the nodes where a busy card cooled get their waiters back. */
static void
show_and_poke(struct rstate *st, int64_t t)
{
    int64_t seen = st->seen_grid;

    show_metrics(st, t);
    for (size_t i = 0; seen != st->seen_grid && st->n_wait > 0 && i < st->snap->n_nodes; i++) {
        if (st->cooled[i]) {
            st->res->cooled_placed += retry(st, t, (long)i, false);
        }
    }
}

/* The earliest departure leaves at @t. */
static void
depart(struct rstate *st, int64_t t)
{
    size_t k = heap_pop(st), last;
    struct rpod *rp = &st->pods[k];

    if (t < rp->placed_s || rp->placed_s < rp->arrive_s) {
        st->res->order_errs++;
    }
    gx_sim_live_leave(st->live, rp->p, &rp->at);
    rp->state = P_DONE;
    last = st->running[--st->n_running];
    st->running[rp->run_pos] = last;
    st->pods[last].run_pos = rp->run_pos;
}

/* Take sample @g at time @t: true demand per card, and the measures. */
static void
sample(struct rstate *st, int64_t t)
{
    int64_t g = st->grid++, alloc = 0, cap = 0;
    double minutes = (double)st->o->sample_s / 60.0, util = 0.0;
    double hot = st->o->sim.cfg->max_utilization_pct;
    bool measure = t >= st->o->warmup_s;

    memset(st->demand, 0, st->n_cards * sizeof(*st->demand));
    memset(st->tenants, 0, st->n_cards * sizeof(*st->tenants));
    for (size_t j = 0; j < st->n_running; j++) {
        const struct rpod *rp = &st->pods[st->running[j]];
        double d = rp->at.n_cards > 0 ? demand_of(rp, g, t) : 0.0;
        for (int c = 0; c < rp->at.n_cards; c++) {
            size_t at = card_of(st, rp->at.node, rp->at.cards[c]);
            st->demand[at] += d;
            st->tenants[at]++;
        }
    }
    for (size_t c = 0; c < st->n_cards; c++) {
        double u = fmin(100.0, 100.0 * st->demand[c]);
        st->ring[c][g % RING] = (float)u;
        if (!measure) {
            continue;
        }
        util += u;
        st->res->hot_card_min += u > hot ? minutes : 0.0;
        st->res->hot_shared_card_min += u > hot && st->tenants[c] > 1 ? minutes : 0.0;
        if (st->demand[c] > 1.0 + 1e-9) {
            st->res->over_card_min += minutes;
            st->ever_over[c] = true;
        }
    }
    if (measure) {
        gx_sim_live_alloc(st->live, &alloc, &cap);
        st->alloc_sum += 100.0 * (double)alloc / (double)cap;
        st->util_sum += util / (double)st->n_cards;
        st->n_measured++;
    }
}

/* Run the events until the horizon, then let every placed pod leave. */
static void
run_events(struct rstate *st)
{
    size_t next = 0;
    int64_t h = st->o->horizon_s;

    for (;;) {
        int64_t ts = st->grid * st->o->sample_s;
        int64_t ta = next < st->n_pods ? st->pods[next].arrive_s : INT64_MAX;
        int64_t td = st->n_heap > 0 ? end_of(st, st->heap[0]) : INT64_MAX;

        if (ts < h && ts <= ta && ts <= td) {
            sample(st, ts);
            show_and_poke(st, ts);
            retry(st, ts, -1, true);
        } else if (td != INT64_MAX && td <= ta && (td < ts || ts >= h)) {
            long node = st->pods[st->heap[0]].at.node;
            depart(st, td);
            if (td < h) {
                retry(st, td, node, false);
            }
        } else if (ta != INT64_MAX && ta < h) {
            if (!attempt(st, next, ta)) {
                st->wait[st->n_wait++] = next;
            }
            next++;
        } else {
            return;
        }
    }
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Tenants left in the ledger (gx_ledger_each callback). */
static void
count_left(void *ctx, const struct gx_ledger_node *n)
{
    *(size_t *)ctx += n->n_tenants;
}

/* Pending times, never placed, and the time means. */
static enum gx_err
summarize(struct rstate *st)
{
    struct gx_replay_result *res = st->res;
    double *w = malloc((st->n_pods ? st->n_pods : 1) * sizeof(*w)), sum = 0.0;
    size_t n = 0;

    if (w == NULL) {
        return GX_ENOMEM;
    }
    for (size_t k = 0; k < st->n_pods; k++) {
        const struct rpod *rp = &st->pods[k];
        int64_t until = rp->placed_s >= 0 ? rp->placed_s : st->o->horizon_s;
        if (rp->arrive_s < st->o->warmup_s) {
            continue;
        }
        w[n] = (double)(until - rp->arrive_s);
        sum += w[n++];
        res->placed += rp->placed_s >= 0;
        res->never_placed += rp->placed_s < 0;
    }
    qsort(w, n, sizeof(*w), cmp_double);
    res->arrived = n;
    res->pending_mean_s = n ? sum / (double)n : 0.0;
    res->pending_p95_s = n ? w[(n * 95) / 100] : 0.0;
    free(w);
    for (size_t c = 0; c < st->n_cards; c++) {
        res->over_cards += st->ever_over[c];
    }
    res->alloc_pct = st->n_measured ? st->alloc_sum / (double)st->n_measured : 0.0;
    res->util_pct = st->n_measured ? st->util_sum / (double)st->n_measured : 0.0;
    res->ledger_errs = gx_sim_live_errors(st->live);
    gx_ledger_each(gx_sim_live_ledger(st->live), count_left, &res->ledger_left);
    return GX_OK;
}

/* Per-card arrays and the queue arrays. */
static enum gx_err
alloc_state(struct rstate *st)
{
    size_t n = st->snap->n_nodes, np = st->n_pods ? st->n_pods : 1;

    st->card_base = calloc(n ? n : 1, sizeof(*st->card_base));
    for (size_t i = 0; st->card_base != NULL && i < n; i++) {
        st->card_base[i] = st->n_cards;
        st->n_cards += st->snap->nodes[i].n_cards;
    }
    st->demand = calloc(st->n_cards + 1, sizeof(*st->demand));
    st->ring = calloc(st->n_cards + 1, sizeof(*st->ring));
    st->ever_over = calloc(st->n_cards + 1, sizeof(*st->ever_over));
    st->tenants = calloc(st->n_cards + 1, sizeof(*st->tenants));
    st->cooled = calloc(n ? n : 1, sizeof(*st->cooled));
    st->running = calloc(np, sizeof(size_t));
    st->heap = calloc(np, sizeof(size_t));
    st->wait = calloc(np, sizeof(size_t));
    if (st->card_base == NULL || st->demand == NULL || st->ring == NULL || st->ever_over == NULL ||
        st->tenants == NULL || st->cooled == NULL || st->running == NULL || st->heap == NULL ||
        st->wait == NULL) {
        return GX_ENOMEM;
    }
    return GX_OK;
}

static void
free_state(struct rstate *st)
{
    gx_sim_live_free(st->live);
    free(st->pods);
    free(st->running);
    free(st->heap);
    free(st->wait);
    free(st->card_base);
    free(st->demand);
    free(st->ring);
    free(st->ever_over);
    free(st->tenants);
    free(st->cooled);
}

enum gx_err
gx_replay_run(const struct gx_replay_opts *o, const struct gx_sim_trace *t, uint64_t seed,
              struct gx_replay_result *out, struct gx_why *why)
{
    struct rstate st = {.o = o, .t = t, .seed = seed, .seen_grid = -1, .res = out};
    enum gx_err rc;

    memset(out, 0, sizeof(*out));
    out->seed = seed;
    if (o->sample_s < 1 || o->horizon_s < 1 || o->load <= 0.0 || o->lag_s < 0 || o->warmup_s < 0 ||
        o->warmup_s >= o->horizon_s) {
        gx_why_set(why, "replay: sample, horizon and load must be positive, warm-up < horizon");
        return GX_EINVAL;
    }
    if ((rc = gx_sim_live_new(&o->sim, t, seed, &st.live, why)) == GX_OK) {
        st.snap = gx_sim_live_snapshot(st.live);
        rc = build_arrivals(&st, why);
    }
    if (rc == GX_OK && (rc = alloc_state(&st)) == GX_OK) {
        run_events(&st);
        rc = summarize(&st);
    }
    free_state(&st);
    return rc;
}

void
gx_replay_mean(const struct gx_replay_result *r, size_t n, struct gx_replay_result *mean)
{
    double k = n ? (double)n : 1.0;

    memset(mean, 0, sizeof(*mean));
    for (size_t i = 0; i < n; i++) {
        mean->arrived += r[i].arrived;
        mean->placed += r[i].placed;
        mean->never_placed += r[i].never_placed;
        mean->pending_mean_s += r[i].pending_mean_s / k;
        mean->pending_p95_s += r[i].pending_p95_s / k;
        mean->hot_card_min += r[i].hot_card_min / k;
        mean->hot_shared_card_min += r[i].hot_shared_card_min / k;
        mean->over_card_min += r[i].over_card_min / k;
        mean->over_cards += r[i].over_cards;
        mean->alloc_pct += r[i].alloc_pct / k;
        mean->util_pct += r[i].util_pct / k;
        mean->ledger_errs += r[i].ledger_errs;
        mean->ledger_left += r[i].ledger_left;
        mean->order_errs += r[i].order_errs;
        mean->cooled_placed += r[i].cooled_placed;
    }
    mean->arrived /= n ? n : 1;
    mean->placed /= n ? n : 1;
    mean->never_placed /= n ? n : 1;
    mean->over_cards /= n ? n : 1;
    mean->cooled_placed /= n ? n : 1;
}
