/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score_fgd.c - the decision's side of the fgd policy: the shape fgd sees of
 * a request, learning the typical pods, fgd's view of a node, the idle-node
 * cost, the cluster's gap counts and the gap term, and the fit part of a
 * fragmentation change. fgd.c holds the model and its arithmetic; this file
 * turns the config, snapshot and ledger into its inputs. Pure: the gap
 * counts are kept in the caller's struct gx_score_gaps.
 */
#include "score_int.h"

#include <stdlib.h>
#include <string.h>

#include "where.h"

_Static_assert(GX_WHERE_KEY_MAX <= GX_FGD_WHERE_LEN, "a where key fits the fgd model's table");

void
gx_score_fgd_shape(const struct gx_config *cfg, const struct gx_podreq *req, int slots,
                   struct gx_fgd_shape *out)
{
    memset(out, 0, sizeof(*out));
    out->cpu_milli = req->cpu_milli;
    out->mem_mib = req->mem_mib;
    if (req->kind == GX_REQ_EXCLUSIVE) {
        out->gpus = (int)(req->gpus > GX_FGD_MAX_CARDS ? GX_FGD_MAX_CARDS : req->gpus);
        out->milli = GX_FGD_CARD;
    } else if (req->kind == GX_REQ_SHARED) {
        out->gpus = 1;
        out->milli = gx_score_share_milli(cfg, req, slots);
    }
}

int
gx_score_share_milli(const struct gx_config *cfg, const struct gx_podreq *req, int slots)
{
    struct gx_card_usage u = {.slices = req->slices};
    int milli =
        req->milli > 0 ? gx_config_share_milli(cfg, req->milli) : gx_ledger_share_used(&u, slots);

    return milli > GX_FGD_CARD ? GX_FGD_CARD : milli;
}

void
gx_score_learn(const struct gx_config *cfg, struct gx_fgd_model *m, const struct gx_podreq *req,
               const struct gx_where *where)
{
    char key[GX_WHERE_KEY_MAX];
    struct gx_fgd_shape sh;

    if (m->inc <= 0.0 || m->half_life != cfg->fgd_half_life) {
        gx_fgd_model_tune(m, cfg->fgd_half_life);
    }
    gx_score_fgd_shape(cfg, req, gx_config_card_slots(cfg, "", 1), &sh);
    /* a rule too long to keep counts as "any node": the shape is learned as before */
    if (where != NULL && gx_where_key(where, key, sizeof(key))) {
        sh.where = gx_fgd_where_class(m, key);
    }
    gx_fgd_observe(m, &sh);
}

bool
gx_score_fgd_on(const struct gx_score_dctx *d)
{
    return d->cfg->policy == GX_POLICY_FGD && d->ctx->fgd != NULL && d->ctx->fgd->total > 0.0;
}

/* The where classes of the model whose typical pods may not run on @node (fgd.h). */
static uint32_t
barred_classes(const struct gx_score_dctx *d, const struct gx_node *node)
{
    const struct gx_fgd_model *m = d->ctx->fgd;
    uint32_t barred = 0;

    for (int c = 1; m != NULL && c < m->n_where; c++) {
        if (!gx_where_key_allows(d->cfg, m->where[c], node)) {
            barred |= 1u << c;
        }
    }
    return barred;
}

/* @f's host and cards: what fgd reads of a node, but for where its pods may run. */
static void
node_free(const struct gx_score_dctx *d, const struct gx_node *node, int slots,
          struct gx_fgd_node *f)
{
    int64_t cpu = 0, mem = 0;
    size_t n = gx_score_node_cards(node);

    gx_ledger_entry_host(d->ln, &cpu, &mem);
    /* unknown (or no) allocatable: the host side is not judged, only the cards */
    f->cpu_milli = node->alloc_cpu_milli <= 0 ? -1 : node->alloc_cpu_milli - cpu;
    f->mem_mib = node->alloc_mem_mib <= 0 ? -1 : node->alloc_mem_mib - mem;
    f->n_cards = (int)(n < GX_FGD_MAX_CARDS ? n : GX_FGD_MAX_CARDS);
    for (int c = 0; c < f->n_cards; c++) {
        struct gx_card_usage u;
        int used;

        gx_score_usage(d, &node->cards[c], &u);
        used = u.exclusive ? GX_CARD_MILLI : gx_ledger_share_used(&u, slots);
        f->free[c] = used >= GX_CARD_MILLI ? 0 : GX_CARD_MILLI - used;
    }
    f->barred = 0;
}

/*
 * barred_classes through the cache of @d's context: a where key is text, and
 * a node's answer holds while the snapshot and the model's classes do.
 */
static uint32_t
barred_cached(const struct gx_score_dctx *d, const struct gx_node *node)
{
    const struct gx_decide_ctx *ctx = d->ctx;
    struct gx_score_gaps *g = ctx->gaps;
    size_t i;

    if (ctx->fgd == NULL || ctx->fgd->n_where <= 1) {
        return 0;
    }
    if (g == NULL || ctx->snap == NULL || node < ctx->snap->nodes ||
        node >= ctx->snap->nodes + ctx->snap->n_nodes) {
        return barred_classes(d, node);
    }
    i = (size_t)(node - ctx->snap->nodes) % GX_SCORE_BARRED_CACHE;
    if (g->barred[i].node != node || g->barred[i].generation != ctx->snap->generation ||
        g->barred[i].where_gen != ctx->fgd->where_gen) {
        g->barred[i].node = node;
        g->barred[i].generation = ctx->snap->generation;
        g->barred[i].where_gen = ctx->fgd->where_gen;
        g->barred[i].barred = barred_classes(d, node);
    }
    return g->barred[i].barred;
}

void
gx_score_fgd_node(const struct gx_score_dctx *d, const struct gx_node *node, int slots,
                  struct gx_fgd_node *f)
{
    node_free(d, node, slots, f);
    f->barred = barred_cached(d, node);
}

/* Cards of the cluster each where class of @m may use, and all cards, into @g. */
static void
class_cards(const struct gx_score_dctx *d, const struct gx_fgd_model *m, struct gx_score_gaps *g)
{
    const struct gx_snapshot *snap = d->ctx->snap;

    memset(g->class_cards, 0, sizeof(g->class_cards));
    g->all_cards = 0;
    for (size_t i = 0; i < snap->n_nodes; i++) {
        const struct gx_node *node = &snap->nodes[i];
        int64_t n = (int64_t)gx_score_node_cards(node);
        uint32_t barred = barred_cached(d, node);
        g->all_cards += n;
        for (int c = 1; c < m->n_where; c++) {
            g->class_cards[c] += (barred >> c & 1u) ? 0 : n;
        }
    }
}

/*
 * Each where class's share of the typical GPU demand into @g, and its
 * scarcity: that share over the class's share of the cluster's cards.
 */
static void
scarcity(const struct gx_fgd_model *m, struct gx_score_gaps *g)
{
    double demand[GX_FGD_MAX_WHERE] = {0}, total = 0.0;

    for (size_t i = 0; i < m->n; i++) {
        const struct gx_fgd_shape *t = &m->shape[i];
        double milli = t->gpus > 0 ? m->weight[i] * t->gpus * t->milli : 0.0;
        total += milli;
        demand[t->where] += milli;
    }
    for (int c = 0; c < GX_FGD_MAX_WHERE; c++) {
        g->demand[c] = total > 0.0 ? demand[c] / total : c == 0 ? 1.0 : 0.0;
    }
    g->scarce[0] = 0.0; /* a pod that may run anywhere is never short of nodes */
    for (int c = 1; c < GX_FGD_MAX_WHERE; c++) {
        g->scarce[c] = c < m->n_where && g->class_cards[c] > 0
                           ? g->demand[c] / ((double)g->class_cards[c] / (double)g->all_cards)
                           : 0.0;
    }
}

/*
 * The where classes' demand and scarcity in @d's cache: the cards each class may use
 * are counted again when the snapshot or the classes change (a walk of every
 * node), the demand when the typical pods do (a walk of the table).
 */
static struct gx_score_gaps *
scarcity_of(const struct gx_score_dctx *d)
{
    const struct gx_decide_ctx *ctx = d->ctx;
    struct gx_score_gaps *g = ctx->gaps;
    bool cards = g->scarce_snap != ctx->snap || g->scarce_generation != ctx->snap->generation ||
                 g->scarce_fgd != ctx->fgd || g->scarce_where_gen != ctx->fgd->where_gen;

    if (cards) {
        class_cards(d, ctx->fgd, g);
        g->scarce_snap = ctx->snap;
        g->scarce_generation = ctx->snap->generation;
        g->scarce_where_gen = ctx->fgd->where_gen;
    }
    if (cards || g->scarce_fgd != ctx->fgd || g->scarce_observed != ctx->fgd->observed) {
        scarcity(ctx->fgd, g);
        g->scarce_fgd = ctx->fgd;
        g->scarce_observed = ctx->fgd->observed;
    }
    return g;
}

/*
 * What fgd charges, in milli-GPU of fragmentation, for a placement on a node
 * with no card in use: score.fgd_idle_card_milli per card of it, times the
 * share of the typical GPU demand that may run there. Pods then go to nodes
 * already in use unless that strands more, and idle nodes (the big ones
 * most, and those more typical pods may use) stay whole for the pods that
 * need one (docs/scheduling-quality.md).
 */
double
gx_score_idle_node_cost(const struct gx_score_dctx *d, const struct gx_fgd_node *f)
{
    const struct gx_decide_ctx *ctx = d->ctx;
    double may = 1.0;

    for (int c = 0; c < f->n_cards; c++) {
        if (f->free[c] < GX_CARD_MILLI) {
            return 0.0;
        }
    }
    if (ctx->gaps != NULL && ctx->fgd != NULL && ctx->fgd->n_where > 1 && ctx->snap != NULL) {
        const double *demand = scarcity_of(d)->demand;

        may = demand[0];
        for (int k = 1; k < ctx->fgd->n_where; k++) {
            may += (f->barred >> k & 1u) ? 0.0 : demand[k];
        }
    }
    return (double)d->cfg->fgd_idle_card_milli * f->n_cards * may;
}

double
gx_score_where_cost(const struct gx_score_dctx *d, const struct gx_fgd_node *f, int taken)
{
    const struct gx_decide_ctx *ctx = d->ctx;
    const double *scarce;
    double sum = 0.0;

    if (ctx->gaps == NULL || ctx->fgd == NULL || ctx->fgd->n_where <= 1 || ctx->snap == NULL) {
        return 0.0;
    }
    scarce = scarcity_of(d)->scarce;
    for (int k = 1; k < ctx->fgd->n_where; k++) {
        sum += (f->barred >> k & 1u) ? 0.0 : scarce[k];
    }
    return sum * taken;
}

struct gaps_walk {
    const struct gx_decide_ctx *ctx;
    struct gx_score_gaps *c;
    uint64_t since; /* count again only the entries changed after this ledger version */
};

/*
 * Count the gaps of ledger entry @ln's node again (nodes without tenants
 * have none): what it added before out, what it adds now in.
 */
static void
gaps_add_node(void *arg, const struct gx_ledger_node *ln)
{
    struct gaps_walk *w = arg;
    struct gx_score_gaps *c = w->c;
    const struct gx_node *node;
    /* all gx_score_fgd_node reads */
    struct gx_score_dctx d = {.ctx = w->ctx, .cfg = w->ctx->cfg};
    struct gx_fgd_node f = {0}, *was = NULL;
    size_t at;

    if (ln->version <= w->since ||
        (node = gx_snapshot_find(w->ctx->snap, ln->node, strlen(ln->node))) == NULL) {
        return;
    }
    at = (size_t)(node - w->ctx->snap->nodes);
    if (at < c->n_counted) {
        was = &c->counted[at];
        gx_fgd_gaps_sub(&c->gaps, was);
    }
    if (ln->n_tenants > 0) {
        gx_score_dctx_ledger(&d, ln, gx_score_node_cards(node));
        gx_score_fgd_node(&d, node, gx_config_card_slots(d.cfg, node->product, node->replicas), &f);
        gx_fgd_gaps_add(&c->gaps, &f);
    }
    if (was != NULL) {
        *was = f;
    }
}

/* Start counting afresh: no node counted, room to remember each of @n (none on ENOMEM). */
static void
gaps_restart(struct gx_score_gaps *c, size_t n)
{
    gx_fgd_gaps_clear(&c->gaps);
    if (n > c->n_counted || c->counted == NULL) {
        free(c->counted);
        c->counted = calloc(n > 0 ? n : 1, sizeof(*c->counted));
        c->n_counted = c->counted != NULL ? n : 0;
    } else {
        memset(c->counted, 0, c->n_counted * sizeof(*c->counted));
    }
}

void
gx_score_gaps_release(struct gx_score_gaps *g)
{
    if (g != NULL) {
        free(g->counted);
        g->counted = NULL;
        g->n_counted = 0;
        g->valid = false;
    }
}

/*
 * The cluster's gaps for the gap term (NULL: off), counted again when the
 * snapshot, the ledger or the config changed, or a where class's smallest
 * typical share did; only the entries changed since when the ledger's
 * version alone moved; the cards only with the snapshot.
 */
const struct gx_score_gaps *
gx_score_gaps_of(const struct gx_score_dctx *d)
{
    const struct gx_decide_ctx *ctx = d->ctx;
    struct gx_score_gaps *c = ctx->gaps;
    uint64_t lv = gx_ledger_version(ctx->ledger);
    bool new_snap, all;

    if (c == NULL || d->cfg->fgd_gap_milli <= 0 || ctx->snap == NULL) {
        return NULL;
    }
    new_snap = !c->valid || c->snap != ctx->snap || c->generation != ctx->snap->generation;
    all = new_snap || c->ledger != ctx->ledger || c->cfg != d->cfg || c->cfg_hash != d->cfg->hash ||
          c->n_counted < ctx->snap->n_nodes;
    if (all || c->fgd != ctx->fgd || c->observed != ctx->fgd->observed) {
        all = gx_fgd_gaps_shares(&c->gaps, ctx->fgd) || all;
        c->fgd = ctx->fgd;
        c->observed = ctx->fgd->observed;
    }
    if (new_snap) {
        c->cards = 0;
        for (size_t i = 0; i < ctx->snap->n_nodes; i++) {
            c->cards += (int64_t)gx_score_node_cards(&ctx->snap->nodes[i]);
        }
        c->snap = ctx->snap;
        c->generation = ctx->snap->generation;
    }
    if (all || c->ledger_version != lv) {
        struct gaps_walk w = {.ctx = ctx, .c = c, .since = all ? 0 : c->ledger_version};

        if (all) {
            gaps_restart(c, ctx->snap->n_nodes);
        }
        gx_ledger_each(ctx->ledger, gaps_add_node, &w);
        c->ledger = ctx->ledger;
        c->ledger_version = lv;
        c->cfg = d->cfg;
        c->cfg_hash = d->cfg->hash;
        c->valid = true;
    }
    return c->cards > 0 ? c : NULL;
}

/* Hash of what gx_fgd_share_deltas reads of node @f and share @sh. */
static uint64_t
memo_hash(const struct gx_fgd_node *f, const struct gx_fgd_shape *sh)
{
    int64_t key[7 + GX_FGD_MAX_CARDS] = {f->cpu_milli,  f->mem_mib,  f->n_cards, f->barred,
                                         sh->cpu_milli, sh->mem_mib, sh->milli};
    int n = f->n_cards < GX_FGD_MAX_CARDS ? f->n_cards : GX_FGD_MAX_CARDS;

    for (int c = 0; c < n; c++) {
        key[7 + c] = f->free[c];
    }
    return gx_hash_mem(key, (size_t)(7 + n) * sizeof(key[0]));
}

static bool
memo_same(const struct gx_score_delta_memo *e, const struct gx_fgd_node *f,
          const struct gx_fgd_shape *sh)
{
    const struct gx_fgd_node *n = &e->node;

    return n->cpu_milli == f->cpu_milli && n->mem_mib == f->mem_mib && n->n_cards == f->n_cards &&
           n->barred == f->barred &&
           memcmp(n->free, f->free, (size_t)f->n_cards * sizeof(f->free[0])) == 0 &&
           e->shape.cpu_milli == sh->cpu_milli && e->shape.mem_mib == sh->mem_mib &&
           e->shape.milli == sh->milli;
}

void
gx_score_share_deltas(const struct gx_score_dctx *d, const struct gx_fgd_node *f,
                      const struct gx_fgd_shape *sh, double *out)
{
    struct gx_score_gaps *c = d->ctx->gaps;
    const struct gx_fgd_model *m = d->ctx->fgd;
    struct gx_score_delta_memo *e;
    uint64_t h;

    if (c == NULL || m == NULL || f->n_cards > GX_FGD_MAX_CARDS) {
        gx_fgd_share_deltas(m, f, sh, out);
        return;
    }
    /* a new generation when the typical pods changed: every kept answer is stale at once */
    if (c->memo_gen == 0 || c->memo_fgd != m || c->memo_observed != m->observed ||
        c->memo_where_gen != m->where_gen) {
        c->memo_gen++;
        c->memo_fgd = m;
        c->memo_observed = m->observed;
        c->memo_where_gen = m->where_gen;
    }
    h = memo_hash(f, sh);
    e = &c->memo[h % GX_SCORE_DELTA_MEMO];
    if (e->gen == c->memo_gen && e->hash == h && memo_same(e, f, sh)) {
        memcpy(out, e->out, (size_t)f->n_cards * sizeof(*out));
        return;
    }
    gx_fgd_share_deltas(m, f, sh, out);
    e->hash = h;
    e->gen = c->memo_gen;
    e->node = *f;
    e->shape = *sh;
    memcpy(e->out, out, (size_t)f->n_cards * sizeof(*out));
}

/*
 * What fgd's gap term charges, in milli-GPU, for a share taking @take of a
 * card with @free free: score.fgd_gap_milli per unit of the change of the
 * sum of squares of the cluster's gap counts (fgd.h), per 1,000 cards of
 * the cluster (a count grows with the cluster, a fragment does not). fgd
 * alone fills each card as tightly as the typical pods suggest and piles the
 * leftovers up in a few sizes; the term keeps every size a share fills on offer.
 */
double
gx_score_gap_cost(const struct gx_score_dctx *d, const struct gx_score_gaps *g,
                  const struct gx_fgd_node *f, int pos, int take)
{
    if (g == NULL || pos < 0 || pos >= f->n_cards) {
        return 0.0;
    }
    return d->cfg->fgd_gap_milli * gx_fgd_gap_cost(&g->gaps, f->barred, f->free[pos], take) *
           1000.0 / (double)g->cards;
}

struct gx_decide_ctx
gx_decide_ctx_on(const struct gx_decide_ctx *ctx, const struct gx_ledger *l)
{
    struct gx_decide_ctx c = *ctx;

    if (l != ctx->ledger) {
        c.gaps = NULL;
    }
    c.ledger = l;
    return c;
}

bool
gx_score_reads_cluster(const struct gx_config *cfg, const struct gx_podreq *req)
{
    return cfg->policy == GX_POLICY_FGD && cfg->fgd_gap_milli > 0 && req != NULL &&
           req->kind == GX_REQ_SHARED;
}

/*
 * Fit part of a fragmentation change @delta (milli-GPU, negative = less
 * fragmentation): 0.5 for no change, one card's worth either way spans the
 * whole 0..1, so one score point is 100 milli of expected lost capacity.
 */
double
gx_score_fgd_fit(double delta)
{
    return gx_score_clamp01(0.5 - delta / (2.0 * GX_FGD_CARD));
}

double
gx_score_fgd_delta(const struct gx_score_dctx *d, const struct gx_podreq *req,
                   const struct gx_node *node, const int *pos)
{
    int slots = gx_config_card_slots(d->cfg, node->product, node->replicas);
    struct gx_fgd_node f;
    struct gx_fgd_shape sh;

    gx_score_fgd_node(d, node, slots, &f);
    gx_score_fgd_shape(d->cfg, req, slots, &sh);
    return gx_fgd_delta(d->ctx->fgd, &f, &sh, pos) + gx_score_idle_node_cost(d, &f) +
           gx_score_where_cost(d, &f, sh.gpus * sh.milli);
}
