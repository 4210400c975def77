/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vcache.c - verdict cache per snapshot node (see vcache.h for when an
 * entry dies). The table is one flat array of GX_VCACHE_WAYS entries per
 * snapshot node, indexed by the node's position in snap->nodes, so a
 * lookup costs no hashing; it is cleared whenever the snapshot, config or
 * ledger it was filled for changes. No I/O.
 */
#include "vcache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct vc_entry {
    struct gx_podreq req;
    uint64_t ledger_version; /* gx_ledger_version when computed */
    int64_t made_ms;         /* ctx->now_ms when computed */
    int64_t until_ms;        /* last ctx->now_ms at which it is still valid */
    bool used;
    struct gx_vshort v;
};

struct gx_vcache {
    /* what the table was filled for */
    const struct gx_snapshot *snap;
    uint64_t generation;
    const struct gx_config *cfg;
    uint64_t cfg_hash;
    const struct gx_ledger *ledger;

    struct vc_entry *e;    /* n_nodes * GX_VCACHE_WAYS */
    unsigned char *next;   /* per node: the way to replace next */
    size_t n_nodes;        /* nodes the table was allocated for */
    uint64_t hits, misses; /* since gx_vcache_new */
};

struct gx_vcache *
gx_vcache_new(void)
{
    return calloc(1, sizeof(struct gx_vcache));
}

void
gx_vcache_free(struct gx_vcache *vc)
{
    if (vc == NULL) {
        return;
    }
    free(vc->e);
    free(vc->next);
    free(vc);
}

void
gx_vcache_stats(const struct gx_vcache *vc, uint64_t *hits, uint64_t *misses)
{
    if (hits != NULL) {
        *hits = vc != NULL ? vc->hits : 0;
    }
    if (misses != NULL) {
        *misses = vc != NULL ? vc->misses : 0;
    }
}

/*
 * Make the table fit @ctx: empty it (and size it for the snapshot) when the
 * snapshot, config or ledger changed. False when it cannot be allocated;
 * the cache is then empty and unbound, and callers compute without it.
 */
static bool
vc_bind(struct gx_vcache *vc, const struct gx_decide_ctx *ctx)
{
    const struct gx_snapshot *snap = ctx->snap;
    size_t n = snap->n_nodes;

    if (vc->snap == snap && vc->generation == snap->generation && vc->cfg == ctx->cfg &&
        vc->cfg_hash == ctx->cfg->hash && vc->ledger == ctx->ledger && vc->e != NULL) {
        return true;
    }
    vc->snap = NULL;
    if (vc->e == NULL || vc->n_nodes != n) {
        free(vc->e);
        free(vc->next);
        vc->n_nodes = 0;
        vc->e = calloc(n ? n * GX_VCACHE_WAYS : 1, sizeof(*vc->e));
        vc->next = calloc(n ? n : 1, 1);
        if (vc->e == NULL || vc->next == NULL) {
            free(vc->e);
            free(vc->next);
            vc->e = NULL;
            vc->next = NULL;
            return false;
        }
        vc->n_nodes = n;
    } else {
        memset(vc->e, 0, n * GX_VCACHE_WAYS * sizeof(*vc->e));
        memset(vc->next, 0, n);
    }
    vc->snap = snap;
    vc->generation = snap->generation;
    vc->cfg = ctx->cfg;
    vc->cfg_hash = ctx->cfg->hash;
    vc->ledger = ctx->ledger;
    return true;
}

/* True when @a and @b ask for the same thing (every field; -0 and 0 decide alike). */
static bool
req_same(const struct gx_podreq *a, const struct gx_podreq *b)
{
    return a->kind == b->kind && a->gpus == b->gpus && a->slices == b->slices &&
           a->milli == b->milli && a->cpu_milli == b->cpu_milli && a->mem_mib == b->mem_mib &&
           a->memory_mib == b->memory_mib && a->device_plugin == b->device_plugin &&
           (a->util_pct == b->util_pct || (isnan(a->util_pct) && isnan(b->util_pct)));
}

/*
 * Last moment (ms, inclusive) at which every sample of @node that is fresh
 * at @now is still fresh, capped at @now + GX_VCACHE_TTL_MS. A sample that
 * is stale at @now stays stale as time goes forward.
 */
static int64_t
vc_until(const struct gx_config *cfg, const struct gx_node *node, int64_t now)
{
    int64_t until = now + GX_VCACHE_TTL_MS, age[GX_SIG_COUNT];

    for (size_t s = 0; s < GX_SIG_COUNT; s++) {
        age[s] = (int64_t)cfg->max_age_s[s] * 1000;
    }
    for (size_t i = 0; node->cards != NULL && i < node->n_cards; i++) {
        const struct gx_card *c = &node->cards[i];
        for (size_t s = 0; s < GX_SIG_COUNT; s++) {
            int64_t last = c->at_ms[s] + age[s];
            if (last < until && last >= now && c->at_ms[s] != 0) {
                until = last;
            }
        }
    }
    return until;
}

/* True when entry @e still answers @req on @node at ctx->now_ms. */
static bool
vc_live(const struct vc_entry *e, const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
        const struct gx_node *node, uint64_t ledger_version)
{
    const struct gx_ledger_node *ln;

    if (!e->used || ctx->now_ms < e->made_ms || ctx->now_ms > e->until_ms ||
        !req_same(&e->req, req)) {
        return false;
    }
    if (ledger_version == e->ledger_version) {
        return true; /* nothing in the ledger changed at all */
    }
    if (ctx->gaps != NULL && gx_score_reads_cluster(ctx->cfg, req)) {
        return false; /* the gap term counts every node's cards */
    }
    /* an entry created or changed since has a version above the one we saw */
    ln = gx_ledger_node(ctx->ledger, node->name);
    return ln == NULL || ln->version <= e->ledger_version;
}

/* Copy the answer fields of @v into @out. */
static void
vc_short(const struct gx_verdict *v, struct gx_vshort *out)
{
    out->keep = v->keep;
    out->reason = v->reason;
    out->score = v->score;
    out->exact = v->score_exact;
}

void
gx_vcache_decide(struct gx_vcache *vc, const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
                 const struct gx_node *node, struct gx_vshort *out)
{
    struct gx_verdict v;
    struct vc_entry *ways, *slot = NULL;
    uint64_t lv;
    size_t idx;

    if (vc == NULL || node == NULL || req == NULL || ctx->snap == NULL || node < ctx->snap->nodes ||
        node >= ctx->snap->nodes + ctx->snap->n_nodes || !vc_bind(vc, ctx)) {
        gx_score_node(ctx, req, node, &v);
        vc_short(&v, out);
        return;
    }
    idx = (size_t)(node - ctx->snap->nodes);
    ways = &vc->e[idx * GX_VCACHE_WAYS];
    lv = gx_ledger_version(ctx->ledger);
    for (size_t w = 0; w < GX_VCACHE_WAYS; w++) {
        if (vc_live(&ways[w], ctx, req, node, lv)) {
            vc->hits++;
            *out = ways[w].v;
            return;
        }
        if (slot == NULL && ways[w].used && req_same(&ways[w].req, req)) {
            slot = &ways[w]; /* a dead entry of this shape: reuse its way */
        }
    }
    vc->misses++;
    gx_score_node(ctx, req, node, &v);
    vc_short(&v, out);
    if (slot == NULL) {
        slot = &ways[vc->next[idx]];
        vc->next[idx] = (unsigned char)((vc->next[idx] + 1) % GX_VCACHE_WAYS);
    }
    slot->req = *req;
    slot->ledger_version = lv;
    slot->made_ms = ctx->now_ms;
    slot->until_ms = vc_until(ctx->cfg, node, ctx->now_ms);
    slot->used = true;
    slot->v = *out;
}
