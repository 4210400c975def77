/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vcache.c - verdict cache per snapshot node (see vcache.h for when an
 * entry dies). Each cached request shape has a column of entries indexed
 * by the node's position in snap->nodes, so a lookup costs no hashing;
 * every shape is forgotten whenever the snapshot, config or ledger it was
 * filled for changes. No I/O.
 */
#include "vcache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One node's cached verdict for one request shape. */
struct vc_entry {
    uint64_t ledger_version; /* gx_ledger_version when computed */
    int64_t made_ms;         /* ctx->now_ms when computed */
    int64_t until_ms;        /* last ctx->now_ms at which it is still valid */
    bool used;
    struct gx_vshort v;
};

/* A request shape and its column: one entry per snapshot node, in node order. */
struct vc_shape {
    struct gx_podreq req;
    bool used;
    uint64_t last_use; /* vc->tick of its last lookup, for eviction */
    struct vc_entry *col;
    /* no entry of the column was made before a change of its node up to this version */
    uint64_t synced_lv;
};

struct gx_vcache {
    /* what the table was filled for */
    const struct gx_snapshot *snap;
    uint64_t generation;
    const struct gx_config *cfg;
    uint64_t cfg_hash;
    const struct gx_ledger *ledger;

    struct vc_shape shapes[GX_VCACHE_SHAPES];
    size_t last;           /* the shape of the last lookup: the next usually asks it again */
    uint64_t tick;         /* lookups of a shape, for eviction */
    size_t n_nodes;        /* nodes the columns were allocated for */
    uint64_t hits, misses; /* since gx_vcache_new */
};

struct gx_vcache *
gx_vcache_new(void)
{
    return calloc(1, sizeof(struct gx_vcache));
}

static void
vc_drop_columns(struct gx_vcache *vc)
{
    for (size_t i = 0; i < GX_VCACHE_SHAPES; i++) {
        free(vc->shapes[i].col);
        memset(&vc->shapes[i], 0, sizeof(vc->shapes[i]));
    }
}

void
gx_vcache_free(struct gx_vcache *vc)
{
    if (vc == NULL) {
        return;
    }
    vc_drop_columns(vc);
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
 * Make the table fit @ctx: forget every shape when the snapshot, config or
 * ledger changed (a column is cleared when a shape takes it, and freed
 * when the node count changed). Cannot fail.
 */
static void
vc_bind(struct gx_vcache *vc, const struct gx_decide_ctx *ctx)
{
    const struct gx_snapshot *snap = ctx->snap;

    if (vc->snap == snap && vc->generation == snap->generation && vc->cfg == ctx->cfg &&
        vc->cfg_hash == ctx->cfg->hash && vc->ledger == ctx->ledger) {
        return;
    }
    if (vc->n_nodes != snap->n_nodes) {
        vc_drop_columns(vc);
        vc->n_nodes = snap->n_nodes;
    }
    for (size_t i = 0; i < GX_VCACHE_SHAPES; i++) {
        vc->shapes[i].used = false;
    }
    vc->snap = snap;
    vc->generation = snap->generation;
    vc->cfg = ctx->cfg;
    vc->cfg_hash = ctx->cfg->hash;
    vc->ledger = ctx->ledger;
}

/*
 * The gang a verdict depends on: only gang-distinct-cards and gang-same-numa
 * read it (gx_score_dctx_gang). Without them the members of every gang share
 * one column: a column per gang made each group's first member decide every
 * node afresh.
 */
static uint64_t
verdict_gang(const struct gx_podreq *r)
{
    return r->apart || r->same_numa ? r->gang : 0;
}

/* True when @a and @b are decided alike (every field read; -0 and 0 alike). */
static bool
req_same(const struct gx_podreq *a, const struct gx_podreq *b)
{
    return a->kind == b->kind && a->gpus == b->gpus && a->slices == b->slices &&
           a->milli == b->milli && a->cpu_milli == b->cpu_milli && a->mem_mib == b->mem_mib &&
           a->memory_mib == b->memory_mib && a->device_plugin == b->device_plugin &&
           verdict_gang(a) == verdict_gang(b) && a->apart == b->apart &&
           a->same_numa == b->same_numa &&
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

/* True when entry @e (of @req's shape) still answers on @node at ctx->now_ms. */
static bool
vc_live(const struct vc_entry *e, const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
        uint64_t ledger_version)
{
    if (!e->used || ctx->now_ms < e->made_ms || ctx->now_ms > e->until_ms) {
        return false;
    }
    if (ledger_version == e->ledger_version) {
        return true; /* nothing in the ledger changed at all */
    }
    if (ctx->gaps != NULL && gx_score_reads_cluster(ctx->cfg, req)) {
        return false; /* the gap term counts every node's cards */
    }
    return true; /* its node did not change: vc_sync dropped the entries of those that did */
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

/*
 * The column of @req's shape, made (evicting the least recently asked
 * shape) when it has none; NULL when it cannot be allocated.
 */
static struct vc_shape *
vc_column(struct gx_vcache *vc, const struct gx_podreq *req, uint64_t lv)
{
    struct vc_shape *sh = &vc->shapes[vc->last], *victim = NULL;

    if (!sh->used || !req_same(&sh->req, req)) {
        sh = NULL;
        for (size_t i = 0; i < GX_VCACHE_SHAPES; i++) {
            struct vc_shape *c = &vc->shapes[i];
            if (c->used && req_same(&c->req, req)) {
                sh = c;
                break;
            }
            if (victim == NULL || !c->used || (victim->used && c->last_use < victim->last_use)) {
                victim = c;
            }
        }
    }
    if (sh == NULL) {
        sh = victim;
        if (sh->col == NULL) {
            sh->col = malloc((vc->n_nodes ? vc->n_nodes : 1) * sizeof(*sh->col));
            if (sh->col == NULL) {
                return NULL;
            }
        }
        memset(sh->col, 0, vc->n_nodes * sizeof(*sh->col));
        sh->req = *req;
        sh->used = true;
        sh->synced_lv = lv;
    }
    sh->last_use = ++vc->tick;
    vc->last = (size_t)(sh - vc->shapes);
    return sh;
}

struct vc_drop {
    const struct gx_snapshot *snap;
    struct vc_entry *col;
};

/* Ledger node @node changed: its entry goes (gx_ledger_changed_since). */
static void
vc_drop_node(void *arg, const char *node)
{
    struct vc_drop *d = arg;
    const struct gx_node *n = gx_snapshot_find(d->snap, node, strlen(node));

    if (n != NULL) {
        d->col[n - d->snap->nodes].used = false;
    }
}

/*
 * Drop the entries of @sh whose node changed in the ledger since the last
 * call, or all of them when the ledger no longer says which: the
 * alternative, looking up every node's ledger entry on every call, was a
 * quarter of a gang member's filter at 5,000 nodes (its names' cache misses).
 */
static void
vc_sync(struct gx_vcache *vc, struct vc_shape *sh, const struct gx_decide_ctx *ctx, uint64_t lv)
{
    struct vc_drop d = {ctx->snap, sh->col};

    if (sh->synced_lv != lv &&
        !gx_ledger_changed_since(ctx->ledger, sh->synced_lv, vc_drop_node, &d)) {
        memset(sh->col, 0, vc->n_nodes * sizeof(*sh->col));
    }
    sh->synced_lv = lv;
}

/* Decide @req on @node through @col (NULL: compute without the cache). */
static void
vc_decide(struct gx_vcache *vc, struct vc_entry *col, const struct gx_decide_ctx *ctx,
          const struct gx_podreq *req, const struct gx_node *node, uint64_t lv,
          struct gx_vshort *out)
{
    struct gx_verdict v;
    struct vc_entry *e;

    if (col == NULL || node == NULL || node < ctx->snap->nodes ||
        node >= ctx->snap->nodes + ctx->snap->n_nodes) {
        gx_score_node(ctx, req, node, &v);
        vc_short(&v, out);
        return;
    }
    e = &col[node - ctx->snap->nodes];
    if (vc_live(e, ctx, req, lv)) {
        vc->hits++;
        *out = e->v;
        return;
    }
    vc->misses++;
    gx_score_node(ctx, req, node, &v);
    vc_short(&v, out);
    e->ledger_version = lv;
    e->made_ms = ctx->now_ms;
    e->until_ms = vc_until(ctx->cfg, node, ctx->now_ms);
    e->used = true;
    e->v = *out;
}

/* The column for @req under @ctx, or NULL when the cache cannot serve. */
static struct vc_entry *
vc_prepare(struct gx_vcache *vc, const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
           uint64_t lv)
{
    struct vc_shape *sh;

    if (vc == NULL || req == NULL || ctx->snap == NULL) {
        return NULL;
    }
    vc_bind(vc, ctx);
    if ((sh = vc_column(vc, req, lv)) == NULL) {
        return NULL;
    }
    vc_sync(vc, sh, ctx, lv);
    return sh->col;
}

void
gx_vcache_decide(struct gx_vcache *vc, const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
                 const struct gx_node *node, struct gx_vshort *out)
{
    gx_vcache_decide_all(vc, ctx, req, &node, 1, out);
}

void
gx_vcache_decide_all(struct gx_vcache *vc, const struct gx_decide_ctx *ctx,
                     const struct gx_podreq *req, const struct gx_node *const *nodes, size_t n,
                     struct gx_vshort *out)
{
    uint64_t lv = gx_ledger_version(ctx->ledger);
    struct vc_entry *col = vc_prepare(vc, ctx, req, lv);

    for (size_t i = 0; i < n; i++) {
        vc_decide(vc, col, ctx, req, nodes[i], lv, &out[i]);
    }
}

bool
gx_vcache_decide_booked(const struct gx_decide_ctx *ctx, const struct gx_ledger *booked,
                        const struct gx_podreq *req, const struct gx_node *node,
                        struct gx_vshort *out)
{
    struct gx_decide_ctx here = gx_decide_ctx_on(ctx, booked);
    struct gx_verdict v, plain;

    gx_score_node(&here, req, node, &v);
    vc_short(&v, out);
    if (v.keep) {
        return false;
    }
    out->score = 0;
    out->exact = 0.0;
    gx_score_node(ctx, req, node, &plain);
    return plain.keep;
}
