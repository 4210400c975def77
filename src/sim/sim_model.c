/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_model.c - the cluster and the pods of a simulated run (sim_int.h):
 * the snapshot built from the trace's nodes as GFD and the kubelet would
 * publish them, the scheduler's and the sim's account of every node, the
 * seeded RNG, and each trace pod seen as the scheduler counts it and as a
 * user writes it (gx_podreq_parse). No scheduling and no experiment here:
 * sim_place.c places the pods, sim.c runs the seeds.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj.h"
#include "ledger.h"
#include "snapshot.h"

/* splitmix64: small, fast, and the same stream on every platform. */
uint64_t
gx_sim_rng(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));

    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The modulo bias is below 2^-40 for trace sizes. */
size_t
gx_sim_rng_below(uint64_t *state, size_t n)
{
    return (size_t)(gx_sim_rng(state) % (uint64_t)n);
}

/* A label or allocatable entry. */
static struct gx_kv
kv(const char *k, const char *v)
{
    return (struct gx_kv){.key = k, .value = v};
}

/* Node objects for the snapshot, as GFD and the kubelet would publish them. */
static enum gx_err
build_snapshot(struct gx_sim_state *r, struct gx_why *why)
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
    rc = gx_snapshot_build(r->o->cfg, ni, t->n_nodes, NULL, GX_SIM_NOW_MS, &r->snap);
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
build_nodes(struct gx_sim_state *r, struct gx_why *why)
{
    const struct gx_sim_trace *t = r->t;

    r->n = t->n_nodes;
    r->nodes = calloc(r->n ? r->n : 1, sizeof(*r->nodes));
    r->feasible = calloc(r->n ? r->n : 1, sizeof(*r->feasible));
    r->exact = calloc(r->n ? r->n : 1, sizeof(*r->exact));
    r->scratch = calloc(r->n ? r->n : 1, sizeof(*r->scratch));
    r->ext = calloc(r->n ? r->n : 1, sizeof(*r->ext));
    r->gaps = calloc(1, sizeof(*r->gaps));
    if (r->nodes == NULL || r->feasible == NULL || r->exact == NULL || r->scratch == NULL ||
        r->ext == NULL || r->gaps == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct gx_trace_node *tn = &t->nodes[i];
        struct gx_sim_node *s = &r->nodes[i];

        if (tn->gpus > GX_SIM_MAX_CARDS) {
            gx_why_set(why, "node %.64s: %d GPUs, at most %d supported", tn->name, tn->gpus,
                       GX_SIM_MAX_CARDS);
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

enum gx_err
gx_sim_state_init(struct gx_sim_state *r, const struct gx_sim_opts *o, const struct gx_sim_trace *t,
                  uint64_t seed, struct gx_why *why)
{
    enum gx_err rc;

    *r = (struct gx_sim_state){.o = o, .t = t, .rng = seed};
    gx_fgd_model_init(&r->seen, o->cfg->fgd_half_life);
    gx_fgd_model_init(&r->truth, 1e30);
    if ((rc = build_snapshot(r, why)) != GX_OK || (rc = build_nodes(r, why)) != GX_OK) {
        return rc;
    }
    r->ledger = gx_ledger_new();
    return r->ledger != NULL ? GX_OK : GX_ENOMEM;
}

void
gx_sim_state_release(struct gx_sim_state *r)
{
    gx_snapshot_free(r->snap);
    gx_ledger_free(r->ledger);
    free(r->nodes);
    free(r->feasible);
    free(r->exact);
    free(r->scratch);
    free(r->ext);
    gx_score_gaps_release(r->gaps);
    free(r->gaps);
    free(r->order);
}

/* True when a trace pod is a share of one card. */
bool
gx_sim_is_share(const struct gx_trace_pod *p)
{
    return p->num_gpu == 1 && p->gpu_milli > 0 && p->gpu_milli < GX_FGD_CARD;
}

/* The pod's shape for the fragmentation model. */
struct gx_fgd_shape
gx_sim_shape_of(const struct gx_trace_pod *p)
{
    return (struct gx_fgd_shape){.cpu_milli = p->cpu_milli,
                                 .mem_mib = p->memory_mib,
                                 .gpus = p->num_gpu,
                                 .milli = p->num_gpu > 0 ? (int)gx_trace_pod_milli(p) /
                                                               (gx_sim_is_share(p) ? 1 : p->num_gpu)
                                                         : 0};
}

void
gx_sim_where_of(const struct gx_trace_pod *p, struct gx_sim_where *w)
{
    char *s;

    memset(w, 0, sizeof(*w));
    if (p->gpu_spec[0] == '\0') {
        return;
    }
    (void)snprintf(w->buf, sizeof(w->buf), "%s", p->gpu_spec);
    w->expr =
        (struct gx_sel_expr){.key = "nvidia.com/gpu.product", .op = GX_SEL_IN, .values = w->values};
    for (s = w->buf; s != NULL && w->expr.n_values < GX_ARRAY_LEN(w->values);) {
        char *bar = strchr(s, '|');
        w->values[w->expr.n_values++] = s;
        if (bar != NULL) {
            *bar++ = '\0';
        }
        s = bar;
    }
    w->term = (struct gx_sel_term){.exprs = &w->expr, .n_exprs = 1};
    w->where = (struct gx_where){.terms = &w->term, .n_terms = 1};
}

/* What the scheduler's NodeResourcesFit counts for @p. */
struct gx_ksched_res
gx_sim_ks_request(const struct gx_sim_state *r, const struct gx_trace_pod *p)
{
    struct gx_ksched_res q = {.cpu_milli = p->cpu_milli, .mem_bytes = p->memory_mib * 1024 * 1024};

    if (r->o->mode == GX_SIM_COUNT_ONLY && p->num_gpu > 0) {
        /* one time-slicing replica for a share, every replica of N cards for whole GPUs */
        q.shared = gx_sim_is_share(p) ? 1 : (int64_t)p->num_gpu * r->o->replicas;
    } else if (!gx_sim_is_share(p)) {
        q.gpus = p->num_gpu; /* with the extender a share asks an ignored resource */
    }
    return q;
}

/* In-tree filters: NodeResourcesFit and NodeAffinity on the product (gpu_spec). */
bool
gx_sim_intree_fits(const struct gx_sim_node *s, const struct gx_trace_pod *p,
                   const struct gx_ksched_res *q)
{
    if (p->gpu_spec[0] != '\0' && !gx_trace_spec_accepts(p->gpu_spec, s->model)) {
        return false;
    }
    return gx_ksched_fits(&s->ks, q);
}

/* Classify @p as a user would write it, through gx_podreq_parse. */
enum gx_err
gx_sim_classify(const struct gx_sim_state *r, const struct gx_trace_pod *p, struct gx_podreq *req)
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
    if (gx_sim_is_share(p) && !r->o->share_slices) {
        (void)snprintf(ann, sizeof(ann), "%d", p->gpu_milli);
        anns[0] = kv(cfg->ann_milli, ann);
        pod.n_annotations = 1;
    } else if (gx_sim_is_share(p)) {
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
struct gx_decide_ctx
gx_sim_decide_ctx(const struct gx_sim_state *r)
{
    return (struct gx_decide_ctx){.cfg = r->o->cfg,
                                  .snap = r->snap,
                                  .ledger = r->ledger,
                                  .now_ms = GX_SIM_NOW_MS,
                                  .fgd = &r->seen,
                                  .gaps = r->gaps};
}
