/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim.c - the trace replay (sim.h). The experiment follows the FGD paper's
 * simulator: pods sorted by name, shuffled, tuned to a multiple of the GPU
 * capacity by drawing more pods with replacement, arriving one at a time
 * and never leaving. Each pod goes through the scheduler's pipeline as
 * ksched models it and, for GPU pods under the extender, through
 * gx_podreq_parse, gx_score_node and gx_ledger_add: the code the server runs.
 *
 * The sim keeps its own per-card account of requested milli-GPU for the
 * allocation and fragmentation rates (what the pods asked, not what the
 * ledger rounded them to), so rounding losses show up as lost allocation.
 *
 * Why one file: the replay loop, the experiment around it (tuning,
 * seeds, arrival curve) and its outputs are one pipeline over the same
 * per-run state.
 */
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "fgd.h"
#include "kobj.h"
#include "ledger.h"
#include "podreq.h"
#include "score.h"
#include "snapshot.h"

/* Time the decisions see: metrics never sampled, so no age matters. */
#define SIM_NOW_MS GX_SIM_NOW_MS
/* Cards one trace node may have (the snapshot keeps up to this many). */
#define SIM_MAX_CARDS GX_FGD_MAX_CARDS

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

/* splitmix64: small, fast, and the same stream on every platform. */
struct rng {
    uint64_t s;
};

static uint64_t
rng_next(struct rng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));

    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, n) (n > 0); the modulo bias is below 2^-40 for trace sizes. */
static size_t
rng_below(struct rng *r, size_t n)
{
    return (size_t)(rng_next(r) % (uint64_t)n);
}

/* One node of the run: the scheduler's view, the sim's account and the snapshot node. */
struct snode {
    struct gx_ksched_node ks;
    const struct gx_node *node; /* in the snapshot */
    const char *model;          /* trace model (gpu_spec matches against it) */
    int n_cards;
    int free[SIM_MAX_CARDS];       /* milli-GPU not requested yet */
    int64_t booked[SIM_MAX_CARDS]; /* milli booked, may pass 1000 under count-only */
    int replicas[SIM_MAX_CARDS];   /* count-only: time-slicing replicas in use */
    int64_t other_cpu, other_mem;  /* CPU-only pods' requests */
};

/* Everything one seed owns. */
struct run {
    const struct gx_sim_opts *o;
    const struct gx_sim_trace *t;
    struct gx_snapshot *snap;
    struct gx_ledger *ledger;
    struct snode *nodes;
    size_t n;
    size_t *order; /* trace pod index per arrival */
    size_t n_order;
    struct rng rng;
    struct gx_fgd_model seen;  /* the extender's typical pods, learned as pods arrive */
    struct gx_fgd_model truth; /* the workload's, for the fragmentation rate */
    size_t *feasible;
    double *exact;              /* per feasible node: the extender's score, negative = dropped */
    int *ext;                   /* per feasible node: its 0..10 answer */
    struct gx_score_gaps *gaps; /* the extender's gap counts (its cache, as the server's) */
    size_t start;               /* kube-scheduler's nextStartNodeIndex */
    int64_t capacity, allocated, arrived;
    int64_t ledger_errs;
    uint64_t uid;
    struct gx_sim_placed last; /* the last pod placed (the live API reads it) */
};

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
build_order(struct run *r)
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
    sort_by_name(idx, tmp, n, t->pods);
    for (size_t i = n; r->o->shuffle && i > 1; i--) {
        size_t j = rng_below(&r->rng, i), x = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = x;
    }
    while (r->o->tune > 0 && t->n_pods > 0) {
        size_t j = rng_below(&r->rng, t->n_pods);
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

/* A label or allocatable entry. */
static struct gx_kv
kv(const char *k, const char *v)
{
    return (struct gx_kv){.key = k, .value = v};
}

/* Node objects for the snapshot, as GFD and the kubelet would publish them. */
static enum gx_err
build_snapshot(struct run *r, struct gx_why *why)
{
    const struct gx_sim_trace *t = r->t;
    struct gx_node_info *ni = calloc(t->n_nodes ? t->n_nodes : 1, sizeof(*ni));
    struct gx_kv *kvs = calloc(t->n_nodes ? t->n_nodes * 5 : 1, sizeof(*kvs));
    char(*txt)[4][32] = calloc(t->n_nodes ? t->n_nodes : 1, sizeof(*txt));
    enum gx_err rc = GX_ENOMEM;

    if (ni == NULL || kvs == NULL || txt == NULL) {
        goto out;
    }
    for (size_t i = 0; i < t->n_nodes; i++) {
        const struct gx_trace_node *tn = &t->nodes[i];
        struct gx_kv *k = &kvs[i * 5];

        (void)snprintf(txt[i][0], sizeof(txt[i][0]), "%d", tn->gpus);
        (void)snprintf(txt[i][1], sizeof(txt[i][1]), "%lldm", (long long)tn->cpu_milli);
        (void)snprintf(txt[i][2], sizeof(txt[i][2]), "%lldMi", (long long)tn->memory_mib);
        k[0] = kv("nvidia.com/gpu.count", txt[i][0]); /* labels, sorted by key */
        k[1] = kv("nvidia.com/gpu.product", tn->model);
        k[2] = kv("cpu", txt[i][1]); /* allocatable */
        k[3] = kv("memory", txt[i][2]);
        k[4] = kv(r->o->cfg->res_gpu, txt[i][0]);
        ni[i] = (struct gx_node_info){.name = tn->name,
                                      .labels = k,
                                      .n_labels = 2,
                                      .allocatable = k + 2,
                                      .n_allocatable = 3,
                                      .ready = true};
    }
    rc = gx_snapshot_build(r->o->cfg, ni, t->n_nodes, NULL, SIM_NOW_MS, &r->snap);
    if (rc != GX_OK) {
        gx_why_set(why, "cannot build the cluster snapshot: %s", gx_strerror(rc));
    }
out:
    free(ni);
    free(kvs);
    free(txt);
    return rc;
}

/* The scheduler's and the sim's view of every node. */
static enum gx_err
build_nodes(struct run *r, struct gx_why *why)
{
    const struct gx_sim_trace *t = r->t;

    r->n = t->n_nodes;
    r->nodes = calloc(r->n ? r->n : 1, sizeof(*r->nodes));
    r->feasible = calloc(r->n ? r->n : 1, sizeof(*r->feasible));
    r->exact = calloc(r->n ? r->n : 1, sizeof(*r->exact));
    r->ext = calloc(r->n ? r->n : 1, sizeof(*r->ext));
    r->gaps = calloc(1, sizeof(*r->gaps));
    if (r->nodes == NULL || r->feasible == NULL || r->exact == NULL || r->ext == NULL ||
        r->gaps == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct gx_trace_node *tn = &t->nodes[i];
        struct snode *s = &r->nodes[i];

        if (tn->gpus > SIM_MAX_CARDS) {
            gx_why_set(why, "node %.64s: %d GPUs, at most %d supported", tn->name, tn->gpus,
                       SIM_MAX_CARDS);
            return GX_EINVAL;
        }
        s->node = &r->snap->nodes[i];
        s->model = tn->model;
        s->n_cards = tn->gpus;
        s->ks.alloc.cpu_milli = tn->cpu_milli;
        s->ks.alloc.mem_bytes = tn->memory_mib * 1024 * 1024;
        s->ks.alloc.gpus = tn->gpus;
        s->ks.alloc.shared = (int64_t)tn->gpus * r->o->replicas;
        for (int c = 0; c < tn->gpus; c++) {
            s->free[c] = GX_FGD_CARD;
        }
        r->capacity += (int64_t)tn->gpus * GX_FGD_CARD;
    }
    if (r->capacity == 0) {
        gx_why_set(why, "the nodes have no GPUs");
        return GX_EINVAL;
    }
    return GX_OK;
}

/* True when a trace pod is a share of one card. */
static bool
is_share(const struct gx_trace_pod *p)
{
    return p->num_gpu == 1 && p->gpu_milli > 0 && p->gpu_milli < GX_FGD_CARD;
}

/* The pod's shape for the fragmentation model. */
static struct gx_fgd_shape
shape_of(const struct gx_trace_pod *p)
{
    return (struct gx_fgd_shape){
        .cpu_milli = p->cpu_milli,
        .mem_mib = p->memory_mib,
        .gpus = p->num_gpu,
        .milli = p->num_gpu > 0 ? (int)gx_trace_pod_milli(p) / (is_share(p) ? 1 : p->num_gpu) : 0};
}

/* What the scheduler's NodeResourcesFit counts for @p. */
static struct gx_ksched_res
ks_request(const struct run *r, const struct gx_trace_pod *p)
{
    struct gx_ksched_res q = {.cpu_milli = p->cpu_milli, .mem_bytes = p->memory_mib * 1024 * 1024};

    if (r->o->mode == GX_SIM_COUNT_ONLY && p->num_gpu > 0) {
        /* one time-slicing replica for a share, every replica of N cards for whole GPUs */
        q.shared = is_share(p) ? 1 : (int64_t)p->num_gpu * r->o->replicas;
    } else if (!is_share(p)) {
        q.gpus = p->num_gpu; /* with the extender a share asks an ignored resource */
    }
    return q;
}

/* In-tree filters: NodeResourcesFit and NodeAffinity on the product (gpu_spec). */
static bool
intree_fits(const struct snode *s, const struct gx_trace_pod *p, const struct gx_ksched_res *q)
{
    if (p->gpu_spec[0] != '\0' && !gx_trace_spec_accepts(p->gpu_spec, s->model)) {
        return false;
    }
    return gx_ksched_fits(&s->ks, q);
}

/* Feasible nodes the scheduler finds, from its rotating start (schedule_one.go). */
static size_t
find_feasible(struct run *r, const struct gx_trace_pod *p, const struct gx_ksched_res *q)
{
    size_t want = gx_ksched_nodes_to_find(&r->o->profile, r->n), found = 0, seen = 0;

    if (r->n == 0) {
        return 0;
    }

    while (seen < r->n && found < want) {
        size_t i = (r->start + seen) % r->n;
        seen++;
        if (intree_fits(&r->nodes[i], p, q)) {
            r->feasible[found++] = i;
        }
    }
    r->start = (r->start + seen) % r->n;
    return found;
}

/* Classify @p as a user would write it, through gx_podreq_parse. */
static enum gx_err
classify(const struct run *r, const struct gx_trace_pod *p, struct gx_podreq *req)
{
    const struct gx_config *cfg = r->o->cfg;
    char cpu[32], mem[32], gpu[32], ann[32];
    struct gx_kv reqs[3], anns[1];
    struct gx_container c = {.name = "main", .requests = reqs, .n_requests = 2};
    struct gx_pod pod = {.name = p->name,
                         .namespace = "sim",
                         .uid = "",
                         .phase = "Pending",
                         .containers = &c,
                         .n_containers = 1,
                         .annotations = anns};
    struct gx_why why = {{0}};

    (void)snprintf(cpu, sizeof(cpu), "%lldm", (long long)p->cpu_milli);
    (void)snprintf(mem, sizeof(mem), "%lldMi", (long long)p->memory_mib);
    reqs[0] = kv("cpu", cpu);
    reqs[1] = kv("memory", mem);
    if (is_share(p) && !r->o->share_slices) {
        (void)snprintf(ann, sizeof(ann), "%d", p->gpu_milli);
        anns[0] = kv(cfg->ann_milli, ann);
        pod.n_annotations = 1;
    } else if (is_share(p)) {
        /* whole slots of the default size, rounded up: the only form before milli */
        int slots = gx_config_card_slots(cfg, "", 1);
        int slices = (int)(((int64_t)p->gpu_milli * slots + GX_FGD_CARD - 1) / GX_FGD_CARD);
        (void)snprintf(ann, sizeof(ann), "%d", slices < 1 ? 1 : slices);
        anns[0] = kv(cfg->ann_slices, ann);
        pod.n_annotations = 1;
    } else if (p->num_gpu > 0) {
        (void)snprintf(gpu, sizeof(gpu), "%d", p->num_gpu);
        reqs[2] = kv(cfg->res_gpu, gpu);
        c.n_requests = 3;
    }
    return gx_podreq_parse(cfg, &pod, req, &why);
}

/* The decision context the extender has in this run. */
static struct gx_decide_ctx
decide_ctx(const struct run *r)
{
    return (struct gx_decide_ctx){.cfg = r->o->cfg,
                                  .snap = r->snap,
                                  .ledger = r->ledger,
                                  .now_ms = SIM_NOW_MS,
                                  .fgd = &r->seen,
                                  .gaps = r->gaps};
}

/* Book pod @p on node @i as bind does (gx_admit_reserve decides again and books). */
static enum gx_err
book(struct run *r, size_t i, const struct gx_trace_pod *p, const struct gx_podreq *req,
     struct gx_admit_plan *plan)
{
    const struct gx_decide_ctx ctx = decide_ctx(r);
    char uid[32];
    const struct gx_admit_pod pod = {.uid = uid, .ns = "sim", .name = p->name, .req = req};
    struct gx_why why = {{0}};

    (void)snprintf(uid, sizeof(uid), "u%llu", (unsigned long long)r->uid++);
    return gx_admit_reserve(&ctx, r->ledger, r->nodes[i].node->name, &pod, plan, &why);
}

/*
 * The extender's prioritize answer for every feasible node, as the server's
 * handler makes it (rounded, or relative to the call's best: gx_score_relative),
 * into r->ext[k]; negative where its filter drops the node.
 */
static void
extender_scores(struct run *r, size_t n_feasible, const struct gx_podreq *req)
{
    const struct gx_decide_ctx ctx = decide_ctx(r);
    const struct gx_config *cfg = r->o->cfg;
    struct gx_verdict v;

    for (size_t k = 0; k < n_feasible; k++) {
        gx_score_node(&ctx, req, r->nodes[r->feasible[k]].node, &v);
        r->exact[k] = !v.keep ? -1.0 : v.score_exact < 0.0 ? 0.0 : v.score_exact;
        r->ext[k] = v.keep ? v.score : -1;
    }
    if (r->o->exact_score) {
        return;
    }
    if (cfg->relative_scores) {
        gx_score_relative(r->exact, n_feasible, r->ext);
    }
    for (size_t k = 0; k < n_feasible; k++) {
        r->exact[k] = r->exact[k] < 0.0 ? -1.0 : (double)r->ext[k];
    }
}

/*
 * Choose a node among the feasible ones; -1 when none passes. A pod the
 * extender does not see is scored by the default scheduler's profile.
 */
static long
choose(struct run *r, size_t n_feasible, const struct gx_podreq *req, const struct gx_ksched_res *q,
       struct gx_verdict *best)
{
    bool ext = req->kind != GX_REQ_NONE || r->o->cpu_pods_too;
    const struct gx_ksched_profile *prof = ext ? &r->o->profile : &r->o->cpu_profile;
    double best_total = 0.0;
    long pick = -1;
    size_t ties = 0;

    if (ext) {
        extender_scores(r, n_feasible, req);
    }
    for (size_t k = 0; k < n_feasible; k++) {
        size_t i = r->feasible[k];
        double total = (double)gx_ksched_plugins_score(prof, &r->nodes[i].ks, q);

        if (ext && r->exact[k] < 0.0) {
            continue;
        }
        if (ext) {
            total += r->exact[k] * (double)gx_ksched_extender_points(prof, 1);
        }
        if (r->o->mode == GX_SIM_RANDOM) {
            total = 0.0; /* every feasible node ties: uniform choice */
        }
        /* the scheduler breaks ties uniformly: reservoir sampling over the maxima */
        if (pick < 0 || total > best_total) {
            pick = (long)i;
            best_total = total;
            ties = 1;
        } else if (total == best_total && rng_below(&r->rng, ++ties) == 0) {
            pick = (long)i;
        }
    }
    memset(best, 0, sizeof(*best));
    if (pick >= 0 && ext) {
        const struct gx_decide_ctx ctx = decide_ctx(r);
        gx_score_node(&ctx, req, r->nodes[pick].node, best); /* the verdict bind decides again */
    }
    return pick;
}

/* Take @milli of card @c on @s in the sim's account. */
static void
take(struct snode *s, int c, int milli)
{
    s->booked[c] += milli;
    s->free[c] -= milli < s->free[c] ? milli : s->free[c];
}

/* Account a placed pod on node @i, cards @cards[0..k). */
static void
place(struct run *r, size_t i, const struct gx_trace_pod *p, const struct gx_ksched_res *q,
      const int *cards, int k)
{
    struct snode *s = &r->nodes[i];
    int before = 0;

    for (int c = 0; c < s->n_cards; c++) {
        before += s->free[c];
    }
    gx_ksched_add(&s->ks, q);
    for (int j = 0; j < k; j++) {
        take(s, cards[j], is_share(p) ? p->gpu_milli : GX_FGD_CARD);
    }
    for (int c = 0; c < s->n_cards; c++) {
        before -= s->free[c];
    }
    r->allocated += before; /* what the cards really gave */
    r->last.node = (long)i;
    r->last.n_cards = k;
    memcpy(r->last.cards, cards, sizeof(int) * (size_t)k);
}

/*
 * Device plugin, count-only: replicas go to the cards with the fewest in
 * use (the plugin spreads them); it never looks at milli-GPU, so a card
 * can be promised past its capacity (take() credits only what is left).
 */
static int
plugin_cards(struct snode *s, const struct gx_trace_pod *p, int *cards)
{
    int k = is_share(p) ? 1 : p->num_gpu, per = is_share(p) ? 1 : 1000;
    bool used[SIM_MAX_CARDS] = {false};

    if (k > s->n_cards || k > GX_MAX_PICK) {
        return 0;
    }
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int c = 0; c < s->n_cards; c++) {
            if (!used[c] && (best < 0 || s->replicas[c] < s->replicas[best])) {
                best = c;
            }
        }
        if (best < 0) {
            return 0;
        }
        used[best] = true;
        cards[j] = best;
    }
    /* a whole card counts as all its replicas, so shares avoid it */
    for (int j = 0; j < k; j++) {
        s->replicas[cards[j]] += per;
    }
    return k;
}

/* Tell the ledger what CPU-only pods now ask on node @i, as a pod watch of all pods would. */
static enum gx_err
untracked(struct run *r, size_t i, const struct gx_trace_pod *p)
{
    struct snode *s = &r->nodes[i];

    s->other_cpu += p->cpu_milli;
    s->other_mem += p->memory_mib;
    return gx_ledger_set_untracked(r->ledger, s->node->name, s->other_cpu, s->other_mem);
}

/* Schedule one pod; false when it fits nowhere. */
static bool
schedule_one(struct run *r, const struct gx_trace_pod *p)
{
    struct gx_ksched_res q = ks_request(r, p);
    struct gx_podreq req = {.kind = GX_REQ_NONE, .util_pct = -1};
    struct gx_verdict v;
    size_t nf;
    long i;
    int cards[GX_MAX_PICK], k = 0;

    if (r->o->mode != GX_SIM_COUNT_ONLY && (p->num_gpu > 0 || r->o->cpu_pods_too)) {
        if (classify(r, p, &req) != GX_OK) {
            return false;
        }
    }
    if (req.kind != GX_REQ_NONE || r->o->cpu_pods_too) {
        gx_score_learn(r->o->cfg, &r->seen, &req); /* as filter does */
    }
    nf = find_feasible(r, p, &q);
    memset(&v, 0, sizeof(v));
    i = choose(r, nf, &req, &q, &v);
    if (i < 0) {
        return false;
    }
    if (r->o->mode == GX_SIM_COUNT_ONLY && p->num_gpu > 0) {
        k = plugin_cards(&r->nodes[i], p, cards);
        if (k == 0) {
            return false; /* kubelet admission fails: the plugin has no such devices */
        }
    } else if (req.kind != GX_REQ_NONE) {
        struct gx_admit_plan plan;
        if (book(r, (size_t)i, p, &req, &plan) != GX_OK || plan.n_cards != v.n_cards) {
            r->ledger_errs++; /* prioritize and bind disagree: a bug, counted */
            return false;
        }
        k = plan.n_cards;
        memcpy(cards, plan.cards, sizeof(int) * (size_t)k);
    }
    place(r, (size_t)i, p, &q, cards, k);
    if (r->o->sees_all_pods && req.kind == GX_REQ_NONE && untracked(r, (size_t)i, p) != GX_OK) {
        r->ledger_errs++;
    }
    return true;
}

/* Free resources of node @s for the fragmentation model. */
static void
fgd_node_of(const struct snode *s, struct gx_fgd_node *f)
{
    f->cpu_milli = s->ks.alloc.cpu_milli - s->ks.requested.cpu_milli;
    f->mem_mib = (s->ks.alloc.mem_bytes - s->ks.requested.mem_bytes) / (INT64_C(1024) * 1024);
    f->n_cards = s->n_cards;
    memcpy(f->free, s->free, sizeof(f->free));
}

/* Cluster fragmentation in milli-GPU under the workload's typical pods. */
static double
cluster_frag(const struct run *r)
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
record(const struct run *r, size_t *step, struct gx_sim_result *out, bool final)
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
over_cards(const struct run *r)
{
    int64_t n = 0;

    for (size_t i = 0; i < r->n; i++) {
        for (int c = 0; c < r->nodes[i].n_cards; c++) {
            n += r->nodes[i].booked[c] > GX_FGD_CARD;
        }
    }
    return n;
}

static void
run_free(struct run *r)
{
    gx_snapshot_free(r->snap);
    gx_ledger_free(r->ledger);
    free(r->nodes);
    free(r->feasible);
    free(r->exact);
    free(r->ext);
    free(r->gaps);
    free(r->order);
}

enum gx_err
gx_sim_run(const struct gx_sim_opts *o, const struct gx_sim_trace *t, uint64_t seed,
           gx_sim_progress_cb cb, void *cb_ctx, struct gx_sim_result *out, struct gx_why *why)
{
    struct run r = {.o = o, .t = t, .rng = {seed}};
    size_t step = 0;
    enum gx_err rc;

    memset(out, 0, sizeof(*out));
    gx_fgd_model_init(&r.seen, o->cfg->fgd_half_life);
    gx_fgd_model_init(&r.truth, 1e30);
    if ((rc = build_snapshot(&r, why)) != GX_OK || (rc = build_nodes(&r, why)) != GX_OK ||
        (rc = build_order(&r)) != GX_OK) {
        goto out;
    }
    if ((r.ledger = gx_ledger_new()) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < r.n_order; k++) {
        struct gx_fgd_shape sh = shape_of(&t->pods[r.order[k]]);
        gx_fgd_observe(&r.truth, &sh);
    }
    record(&r, &step, out, false);
    for (size_t k = 0; k < r.n_order; k++) {
        const struct gx_trace_pod *p = &t->pods[r.order[k]];

        if (!schedule_one(&r, p)) {
            out->failed++;
        }
        r.arrived += gx_trace_pod_milli(p);
        record(&r, &step, out, false);
        if (cb != NULL && (k + 1) % 1024 == 0) {
            cb(cb_ctx, k + 1, r.n_order);
        }
    }
    record(&r, &step, out, true);
    out->seed = seed;
    out->pods = r.n_order;
    out->capacity_milli = r.capacity;
    out->over_cards = over_cards(&r);
    out->ledger_errs = r.ledger_errs;
    rc = GX_OK;
out:
    run_free(&r);
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
        mean->capacity_milli = r[k].capacity_milli;
    }
}

/* Append @v[0..n) as a JSON array of numbers with 2 decimals. */
static enum gx_err
json_array(struct gx_buf *b, const double *v, size_t n)
{
    enum gx_err rc = gx_buf_adds(b, "[");

    for (size_t i = 0; rc == GX_OK && i < n; i++) {
        rc = gx_buf_addf(b, "%s%.2f", i ? "," : "", v[i]);
    }
    return rc == GX_OK ? gx_buf_adds(b, "]") : rc;
}

enum gx_err
gx_sim_json(const struct gx_sim_series *s, struct gx_buf *out)
{
    struct gx_sim_result m;
    double arrived[GX_SIM_STEPS];
    enum gx_err rc;

    gx_sim_mean(s->runs, s->n_runs, &m);
    for (size_t i = 0; i < GX_SIM_STEPS; i++) {
        arrived[i] = (double)i;
    }
    rc = gx_buf_adds(out, "{\"trace\":");
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, s->trace, strlen(s->trace));
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"policy\":");
    }
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, s->policy, strlen(s->policy));
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"seeds\":[");
    }
    for (size_t k = 0; rc == GX_OK && k < s->n_runs; k++) {
        rc = gx_buf_addf(out, "%s%llu", k ? "," : "", (unsigned long long)s->runs[k].seed);
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, "],\"arrived_pct\":[");
    }
    for (size_t i = 0; rc == GX_OK && i < GX_SIM_STEPS; i++) {
        rc = gx_buf_addf(out, "%s%zu", i ? "," : "", i);
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, "],\"alloc_pct\":");
    }
    if (rc == GX_OK) {
        rc = json_array(out, m.alloc_pct, GX_SIM_STEPS);
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"frag_pct\":");
    }
    if (rc == GX_OK) {
        rc = json_array(out, m.frag_pct, GX_SIM_STEPS);
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(out, ",\"failed_pods\":%zu,\"pods\":%zu}\n", m.failed, m.pods);
    }
    (void)arrived;
    return rc;
}

/* SVG geometry: plot area inside margins, x 0..130 %, y from Y_LO to 100 %. */
#define SVG_W 720
#define SVG_H 440
#define SVG_L 60
#define SVG_R 180
#define SVG_T 30
#define SVG_B 50
#define Y_LO 50.0

static double
svg_x(double arrived)
{
    return SVG_L + arrived / 130.0 * (SVG_W - SVG_L - SVG_R);
}

static double
svg_y(double pct)
{
    double v = pct < Y_LO ? Y_LO : pct;
    return SVG_T + (100.0 - v) / (100.0 - Y_LO) * (SVG_H - SVG_T - SVG_B);
}

/* Axes, grid and labels. */
static enum gx_err
svg_axes(struct gx_buf *b, const char *trace)
{
    enum gx_err rc = gx_buf_addf(
        b,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
        "fill=\"white\"/>\n<text x=\"%d\" y=\"18\" font-size=\"14\">GPU allocation vs arrived "
        "workload: %.80s</text>\n",
        SVG_W, SVG_H, SVG_L, trace);

    for (int a = 0; rc == GX_OK && a <= 130; a += 10) {
        rc = gx_buf_addf(b,
                         "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                         "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
                         svg_x(a), SVG_T, svg_x(a), SVG_H - SVG_B, svg_x(a), SVG_H - SVG_B + 16, a);
    }
    for (int p = (int)Y_LO; rc == GX_OK && p <= 100; p += 5) {
        rc = gx_buf_addf(b,
                         "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                         "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n",
                         SVG_L, svg_y(p), SVG_W - SVG_R, svg_y(p), SVG_L - 6, svg_y(p) + 4, p);
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(b,
                         "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arrived workload (%% "
                         "of GPU capacity)</text>\n<text x=\"14\" y=\"%d\" transform=\"rotate(-90 "
                         "14 %d)\" text-anchor=\"middle\">GPU allocation (%%)</text>\n",
                         (SVG_W - SVG_R + SVG_L) / 2, SVG_H - 10, SVG_H / 2, SVG_H / 2);
    }
    return rc;
}

enum gx_err
gx_sim_svg(const struct gx_sim_series *s, size_t n, struct gx_buf *out)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    enum gx_err rc = svg_axes(out, n > 0 ? s[0].trace : "");

    for (size_t k = 0; rc == GX_OK && k < n; k++) {
        struct gx_sim_result m;
        const char *col = colors[k % GX_ARRAY_LEN(colors)];

        gx_sim_mean(s[k].runs, s[k].n_runs, &m);
        rc = gx_buf_addf(
            out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", col);
        for (size_t i = 0; rc == GX_OK && i < GX_SIM_STEPS; i++) {
            rc = gx_buf_addf(out, "%s%.1f,%.1f", i ? " " : "", svg_x((double)i),
                             svg_y(m.alloc_pct[i]));
        }
        if (rc == GX_OK) {
            rc = gx_buf_addf(out,
                             "\"/>\n<line x1=\"%d\" y1=\"%zu\" x2=\"%d\" y2=\"%zu\" stroke=\"%s\" "
                             "stroke-width=\"3\"/><text x=\"%d\" y=\"%zu\">%.40s %.2f%%</text>\n",
                             SVG_W - SVG_R + 10, SVG_T + 10 + 18 * k, SVG_W - SVG_R + 30,
                             SVG_T + 10 + 18 * k, col, SVG_W - SVG_R + 36, SVG_T + 14 + 18 * k,
                             s[k].policy, m.alloc_pct[100]);
        }
    }
    return rc == GX_OK ? gx_buf_adds(out, "</svg>\n") : rc;
}

/* The live API (sim.h): one run's state, the experiment left out. */
struct gx_sim_live {
    struct run r;
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
    l->r = (struct run){.o = o, .t = t, .rng = {seed}};
    gx_fgd_model_init(&l->r.seen, o->cfg->fgd_half_life);
    gx_fgd_model_init(&l->r.truth, 1e30);
    if ((rc = build_snapshot(&l->r, why)) != GX_OK || (rc = build_nodes(&l->r, why)) != GX_OK) {
        gx_sim_live_free(l);
        return rc;
    }
    if ((l->r.ledger = gx_ledger_new()) == NULL) {
        gx_sim_live_free(l);
        return GX_ENOMEM;
    }
    *out = l;
    return GX_OK;
}

bool
gx_sim_live_place(struct gx_sim_live *l, const struct gx_trace_pod *p, struct gx_sim_placed *out)
{
    uint64_t uid = l->r.uid;

    if (!schedule_one(&l->r, p)) {
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
    struct run *r = &l->r;
    struct snode *s = &r->nodes[at->node];
    struct gx_ksched_res q = ks_request(r, p);
    int milli = is_share(p) ? p->gpu_milli : GX_FGD_CARD;
    char uid[32];

    gx_ksched_remove(&s->ks, &q);
    for (int j = 0; j < at->n_cards; j++) {
        int c = at->cards[j], before = s->free[c];
        s->booked[c] -= milli;
        s->free[c] = s->booked[c] >= GX_FGD_CARD ? 0 : (int)(GX_FGD_CARD - s->booked[c]);
        r->allocated -= s->free[c] - before;
        if (r->o->mode == GX_SIM_COUNT_ONLY) {
            s->replicas[c] -= is_share(p) ? 1 : 1000; /* as plugin_cards counted it */
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
    struct run *r = &l->r;
    struct gx_ksched_res q = ks_request(r, p);
    struct gx_podreq req = {.kind = GX_REQ_NONE, .util_pct = -1};
    struct gx_decide_ctx ctx;
    struct gx_verdict v;

    if (i >= r->n || !intree_fits(&r->nodes[i], p, &q)) {
        return false;
    }
    if (r->o->mode == GX_SIM_COUNT_ONLY || (p->num_gpu == 0 && !r->o->cpu_pods_too)) {
        return true;
    }
    if (classify(r, p, &req) != GX_OK) {
        return false;
    }
    ctx = decide_ctx(r);
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
        run_free(&l->r);
        free(l);
    }
}

uint64_t
gx_sim_rng(uint64_t *state)
{
    struct rng r = {*state};
    uint64_t v = rng_next(&r);

    *state = r.s;
    return v;
}
