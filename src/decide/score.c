/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score.c - filter verdict, score and card choice for one node. Pure: reads
 * the config, one snapshot node, the ledger and the clock it is given; no
 * I/O and no allocation.
 *
 * Metric freshness and label lookup are computed here rather than borrowed
 * from snapshot.c so that the decision has no dependency beyond the structs
 * it reads; the slots of a card are config.c's one rule (gx_config_card_slots).
 *
 * Two policies about what we did not place (peers.md section 3: pods landing
 * on cards filled by processes the scheduler did not see):
 *  - exclusive: a card with no ledger tenant whose fresh measured memory use
 *    exceeds sharing.memory_reserve_mib, or on which dcgm-exporter reports a
 *    workload pod, is in use by someone else and counts as BUSY;
 *  - shared: booked memory is max(ledger reservations, measured use) and the
 *    utilization headroom is max(measured, declared) + expected; on a node
 *    without device-plugin sharing a card showing a workload pod we did not
 *    book is held by the device plugin and has no slot.
 *
 * Why one file: filter, prioritize and the card choice at bind are one
 * decision per (pod, node); the health, slot, memory and fit rules they
 * share are static here so that nothing outside can call half of it.
 */
#include "score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Neutral part value used for unknown metrics. */
#define NEUTRAL 0.5
/* Seconds ahead the trend part projects the utilization slope (about a pod's warm-up). */
#define TREND_HORIZON_S 600.0

/* Stages a card passes for a shared request; the furthest one names the reason. */
enum stage { ST_HEALTH, ST_SLOTS, ST_MEMORY, ST_UTIL, ST_PASS };

static const struct {
    const char *text;
    const char *name;
    bool unresolvable;
} reasons[GX_REASON_COUNT] = {
    [GX_REASON_NONE] = {"", "none", false},
    [GX_REASON_UNKNOWN_NODE] = {"node unknown to gpu-extender", "unknown_node", true},
    [GX_REASON_NOT_READY] = {"node not ready", "not_ready", false},
    [GX_REASON_NO_GPUS] = {"node has no GPUs", "no_gpus", true},
    [GX_REASON_TOO_FEW_GPUS] = {"too few usable GPUs", "too_few_gpus", true},
    [GX_REASON_UNHEALTHY] = {"GPU unhealthy", "unhealthy", false},
    [GX_REASON_BUSY] = {"GPU utilization above limit", "busy", false},
    [GX_REASON_NO_SLOT] = {"no GPU time slot available", "no_slot", false},
    [GX_REASON_NO_MEMORY] = {"insufficient GPU memory", "no_memory", false},
    [GX_REASON_STALE] = {"GPU metrics stale", "stale", false},
    [GX_REASON_SHARING_MISMATCH] = {"GPU sharing mode does not match the request",
                                    "sharing_mismatch", true},
    [GX_REASON_BAD_REQUEST] = {"invalid GPU request", "bad_request", true},
    /* preemption can free quota only with victims of the same namespace: the preempt verb's call */
    [GX_REASON_QUOTA] = {"namespace GPU share quota exceeded", "quota", false},
};

const char *
gx_reason_text(enum gx_reason r)
{
    if ((unsigned)r >= GX_REASON_COUNT) {
        return "";
    }
    return reasons[r].text;
}

const char *
gx_reason_name(enum gx_reason r)
{
    if ((unsigned)r >= GX_REASON_COUNT) {
        return "none";
    }
    return reasons[r].name;
}

bool
gx_reason_unresolvable(enum gx_reason r)
{
    if ((unsigned)r >= GX_REASON_COUNT) {
        return false;
    }
    return reasons[r].unresolvable;
}

bool
gx_score_fresh(const struct gx_decide_ctx *ctx, const struct gx_card *card, enum gx_signal sig)
{
    int64_t age;

    if ((unsigned)sig >= GX_SIG_COUNT || card->at_ms[sig] == 0 || isnan(card->v[sig])) {
        return false;
    }
    age = ctx->now_ms - card->at_ms[sig];
    return age <= (int64_t)ctx->cfg->max_age_s[sig] * 1000;
}

/* Value of label @key on @node or NULL (linear: label lists are short). */
static const char *
node_label(const struct gx_node *node, const char *key)
{
    for (size_t i = 0; i < node->n_labels; i++) {
        if (node->labels[i].key != NULL && strcmp(node->labels[i].key, key) == 0) {
            return node->labels[i].value != NULL ? node->labels[i].value : "";
        }
    }
    return NULL;
}

/* @v limited to 0..1. */
static double
clamp01(double v)
{
    if (!(v > 0.0)) {
        return 0.0;
    }
    return v > 1.0 ? 1.0 : v;
}

/* True when @s is entirely a finite number; stores it in @out. */
static bool
parse_number(const char *s, double *out)
{
    char *end = NULL;
    double d;

    if (s == NULL || s[0] == '\0') {
        return false;
    }
    d = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(d)) {
        return false;
    }
    *out = d;
    return true;
}

/* True when label rule @r matches @node. */
static bool
rule_matches(const struct gx_label_rule *r, const struct gx_node *node)
{
    const char *v = node_label(node, r->label);
    double d;

    switch (r->op) {
    case GX_OP_EXISTS:
        return v != NULL;
    case GX_OP_DOES_NOT_EXIST:
        return v == NULL;
    case GX_OP_IN:
    case GX_OP_NOT_IN: {
        bool in = false;
        for (size_t i = 0; v != NULL && i < r->n_values && !in; i++) {
            in = r->values[i] != NULL && strcmp(r->values[i], v) == 0;
        }
        return r->op == GX_OP_IN ? in : !in;
    }
    case GX_OP_GT:
        return parse_number(v, &d) && d > r->number;
    case GX_OP_LT:
        return parse_number(v, &d) && d < r->number;
    }
    return false;
}

/* Label part: 0.5 + matched weights / (2 * total |weight|); 0.5 without rules. */
static double
labels_part(const struct gx_config *cfg, const struct gx_node *node)
{
    double sum = 0.0, total = 0.0;

    for (size_t i = 0; i < cfg->n_label_rules; i++) {
        const struct gx_label_rule *r = &cfg->label_rules[i];
        total += fabs((double)r->weight);
        if (rule_matches(r, node)) {
            sum += r->weight;
        }
    }
    if (total == 0.0) {
        return NEUTRAL;
    }
    return clamp01(0.5 + sum / (2.0 * total));
}

/* Weighted score of @p under the config weights, 0..10 unrounded (5 when all weights are 0). */
static double
weighted_exact(const struct gx_config *cfg, const struct gx_score_parts *p)
{
    const double w[] = {cfg->w_util,   cfg->w_memory, cfg->w_temp,
                        cfg->w_labels, cfg->w_fit,    cfg->w_trend};
    const double v[] = {p->util, p->memory, p->temp, p->labels, p->fit, p->trend};
    double sum = 0.0, wsum = 0.0;

    for (size_t i = 0; i < GX_ARRAY_LEN(w); i++) {
        if (w[i] <= 0.0) {
            continue;
        }
        sum += w[i] * clamp01(v[i]);
        wsum += w[i];
    }
    return wsum == 0.0 ? 5.0 : 10.0 * sum / wsum;
}

/* The 0..10 integer kube-scheduler receives. */
static int
weighted_score(double exact)
{
    long s = lround(exact);

    return s < 0 ? 0 : s > 10 ? 10 : (int)s;
}

/* Exact scores this close to the best are the best (same inputs, other order of sums). */
#define RELATIVE_TIE 1e-9

void
gx_score_relative(const double *exact, size_t n, int *out)
{
    double lo = 0.0, hi = 0.0;
    bool any = false;

    for (size_t i = 0; i < n; i++) {
        if (exact[i] >= 0.0) {
            lo = !any || exact[i] < lo ? exact[i] : lo;
            hi = !any || exact[i] > hi ? exact[i] : hi;
            any = true;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (exact[i] < 0.0) {
            out[i] = 0;
        } else if (exact[i] >= hi - RELATIVE_TIE) {
            out[i] = 10;
        } else {
            int s = (int)(9.0 * (exact[i] - lo) / (hi - lo));
            out[i] = s < 0 ? 0 : s > 9 ? 9 : s;
        }
    }
}

/* Bit of signal @sig in a card's freshness mask (card_fresh). */
#define FRESH(sig) (1u << (unsigned)(sig))

/*
 * What one decision on one node reads besides the request: the context,
 * the node's ledger entry (looked up once, NULL when it holds no tenants)
 * and per signal the oldest sample time still fresh at ctx->now_ms.
 */
struct dctx {
    const struct gx_decide_ctx *ctx;
    const struct gx_config *cfg;
    const struct gx_ledger_node *ln;
    int64_t oldest[GX_SIG_COUNT];
};

/* A usable card of an exclusive pick: position, idleness key and freshness mask. */
struct pick {
    int pos;
    double key;
    unsigned fresh;
};

/* Cards of one NUMA node among the usable ones. */
struct numa_group {
    int numa;
    size_t count;
};

/* Fill @d for deciding on @node under @ctx. Cannot fail. */
static void
dctx_init(struct dctx *d, const struct gx_decide_ctx *ctx, const struct gx_node *node)
{
    d->ctx = ctx;
    d->cfg = ctx->cfg;
    d->ln = gx_ledger_node(ctx->ledger, node->name);
    if (d->ln != NULL && d->ln->n_tenants == 0 && d->ln->untracked_cpu_milli == 0 &&
        d->ln->untracked_mem_mib == 0) {
        d->ln = NULL;
    }
    /* now - at <= max_age  <=>  at >= now - max_age: one compare per sample */
    for (size_t s = 0; s < GX_SIG_COUNT; s++) {
        d->oldest[s] = ctx->now_ms - (int64_t)ctx->cfg->max_age_s[s] * 1000;
    }
}

/* Freshness of every signal of @card as a FRESH() mask; same rule as gx_score_fresh. */
static unsigned
card_fresh(const struct dctx *d, const struct gx_card *card)
{
    unsigned m = 0;

    for (size_t s = 0; s < GX_SIG_COUNT; s++) {
        if (card->at_ms[s] != 0 && card->at_ms[s] >= d->oldest[s] && !isnan(card->v[s])) {
            m |= FRESH(s);
        }
    }
    return m;
}

/* True when XID @xid is listed in metrics ignored_xids. */
static bool
xid_ignored(const struct gx_config *cfg, int xid)
{
    for (size_t i = 0; i < cfg->n_ignored_xids; i++) {
        if (cfg->ignored_xids[i] == xid) {
            return true;
        }
    }
    return false;
}

/*
 * State of @card (freshness mask @f), the one health rule: CLAIMED (held
 * through DRA), then HOT, then XID (a fresh non-ignored XID), then BUSY
 * (fresh utilization over the limit, only when @check_busy), then STALE (a
 * util/temp/xid sample missing or old under on_stale=reject), else OK.
 */
static enum gx_card_state
card_state(const struct dctx *d, const struct gx_card *card, unsigned f, bool check_busy)
{
    const struct gx_config *cfg = d->cfg;
    bool uf = (f & FRESH(GX_SIG_UTIL)) != 0;
    bool tf = (f & FRESH(GX_SIG_TEMP)) != 0;
    bool xf = (f & FRESH(GX_SIG_XID)) != 0;

    /* Held through DRA: taken as if booked whole, whatever its health. */
    if (card->claim != NULL) {
        return GX_CARD_CLAIMED;
    }
    if (tf && card->v[GX_SIG_TEMP] > cfg->max_temperature_c) {
        return GX_CARD_HOT;
    }
    if (xf && card->v[GX_SIG_XID] != 0.0 && !xid_ignored(cfg, (int)card->v[GX_SIG_XID])) {
        return GX_CARD_XID;
    }
    if (check_busy && uf && card->v[GX_SIG_UTIL] > cfg->max_utilization_pct) {
        return GX_CARD_BUSY;
    }
    if (cfg->on_stale == GX_STALE_REJECT && (!uf || !tf || !xf)) {
        return GX_CARD_STALE;
    }
    return GX_CARD_OK;
}

/* The filter reason of a card state. */
static enum gx_reason
card_health(const struct dctx *d, const struct gx_card *card, unsigned f, bool check_busy)
{
    static const enum gx_reason reason[GX_CARD_COUNT] = {
        [GX_CARD_OK] = GX_REASON_NONE,       [GX_CARD_HOT] = GX_REASON_UNHEALTHY,
        [GX_CARD_XID] = GX_REASON_UNHEALTHY, [GX_CARD_BUSY] = GX_REASON_BUSY,
        [GX_CARD_STALE] = GX_REASON_STALE,   [GX_CARD_CLAIMED] = GX_REASON_NO_SLOT,
    };

    return reason[card_state(d, card, f, check_busy)];
}

enum gx_card_state
gx_score_card_state(const struct gx_decide_ctx *ctx, const struct gx_node *node,
                    const struct gx_card *card)
{
    struct dctx d;

    dctx_init(&d, ctx, node);
    return card_state(&d, card, card_fresh(&d, card), true);
}

const char *
gx_card_state_text(enum gx_card_state s)
{
    static const char *const text[GX_CARD_COUNT] = {
        [GX_CARD_OK] = "ok",     [GX_CARD_HOT] = "hot",     [GX_CARD_XID] = "xid",
        [GX_CARD_BUSY] = "busy", [GX_CARD_STALE] = "stale", [GX_CARD_CLAIMED] = "claimed",
    };

    return (unsigned)s < GX_CARD_COUNT ? text[s] : "ok";
}

/* Per-card memory size in MiB: node label, else used + free when both fresh, else 0. */
static int64_t
card_memory(const struct gx_node *node, const struct gx_card *card, unsigned f)
{
    const unsigned both = FRESH(GX_SIG_MEM_USED) | FRESH(GX_SIG_MEM_FREE);

    if (node->gpu_memory_mib > 0) {
        return node->gpu_memory_mib;
    }
    if ((f & both) == both) {
        return (int64_t)(card->v[GX_SIG_MEM_USED] + card->v[GX_SIG_MEM_FREE]);
    }
    return 0;
}

/* Memory booked on a card: max(ledger reservations, fresh measured use). */
static int64_t
card_booked(const struct gx_card *card, unsigned f, const struct gx_card_usage *u)
{
    int64_t booked = u->memory_mib;

    if ((f & FRESH(GX_SIG_MEM_USED)) && card->v[GX_SIG_MEM_USED] > (double)booked) {
        booked = (int64_t)card->v[GX_SIG_MEM_USED];
    }
    return booked;
}

/* Add the metric parts of one card to @p (sums; the caller divides). */
static void
card_parts(const struct dctx *d, const struct gx_node *node, const struct gx_card *card, unsigned f,
           const struct gx_card_usage *u, struct gx_score_parts *p)
{
    const struct gx_config *cfg = d->cfg;
    int64_t total = card_memory(node, card, f);
    bool used_fresh = (f & FRESH(GX_SIG_MEM_USED)) != 0;

    if (f & FRESH(GX_SIG_UTIL)) {
        p->util += clamp01(1.0 - card->v[GX_SIG_UTIL] / 100.0);
    } else {
        p->util += NEUTRAL;
        p->metrics_neutral = true;
    }
    /* trend: 0.5 flat, 0 when the slope adds TREND_HORIZON_S x slope >= 50 points */
    if (f & FRESH(GX_SIG_UTIL_TREND)) {
        p->trend += clamp01(0.5 - card->v[GX_SIG_UTIL_TREND] * TREND_HORIZON_S / 100.0);
    } else {
        p->trend += NEUTRAL;
    }
    if (total > 0 && (used_fresh || u->memory_mib > 0)) {
        p->memory += clamp01((double)(total - card_booked(card, f, u)) / (double)total);
    } else {
        p->memory += NEUTRAL;
        p->metrics_neutral = true;
    }
    if ((f & FRESH(GX_SIG_TEMP)) && cfg->max_temperature_c > 0) {
        p->temp +=
            clamp01((cfg->max_temperature_c - card->v[GX_SIG_TEMP]) / cfg->max_temperature_c);
    } else {
        p->temp += NEUTRAL;
        p->metrics_neutral = true;
    }
}

/* Number of cards of @node we can look at. */
static size_t
node_cards(const struct gx_node *node)
{
    size_t n = node->n_cards;

    if (node->gpu_count >= 0 && (size_t)node->gpu_count < n) {
        n = (size_t)node->gpu_count;
    }
    return node->cards != NULL ? n : 0;
}

/* Ledger usage of @card: all zero when the node holds no tenants. */
static void
usage_of(const struct dctx *d, const struct gx_card *card, struct gx_card_usage *u)
{
    if (d->ln == NULL) {
        memset(u, 0, sizeof(*u));
        return;
    }
    gx_ledger_entry_card_usage(d->ln, card->index, u);
}

/* Idleness key for ordering exclusive picks: lower is better. */
static double
idle_key(const struct gx_card *card, unsigned f)
{
    double util = (f & FRESH(GX_SIG_UTIL)) ? card->v[GX_SIG_UTIL] : 50.0;
    double temp = (f & FRESH(GX_SIG_TEMP)) ? card->v[GX_SIG_TEMP] : 50.0;

    /* utilization dominates; temperature breaks ties */
    return util * 1000.0 + temp;
}

/* Sort @a[0..n) by idleness key, then position. Insertion sort: n <= cards. */
static void
sort_idle(struct pick *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct pick x = a[i];
        size_t j = i;
        while (j > 0) {
            if (a[j - 1].key < x.key || (a[j - 1].key == x.key && a[j - 1].pos < x.pos)) {
                break;
            }
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/*
 * The reason that decides when only @usable of @want cards are usable, from
 * the count of cards each reason took (@took): among the reasons whose cards
 * alone would have made room (all of them when none would), the one that
 * took the most cards, ties to the more specific (UNHEALTHY > BUSY > STALE >
 * NO_SLOT); TOO_FEW_GPUS when none took any. Seven taken cards and one with
 * an XID make "no slot", not "unhealthy".
 */
static enum gx_reason
deciding_reason(const size_t took[GX_REASON_COUNT], size_t usable, size_t want)
{
    static const enum gx_reason order[] = {GX_REASON_UNHEALTHY, GX_REASON_BUSY, GX_REASON_STALE,
                                           GX_REASON_NO_SLOT};
    enum gx_reason best = GX_REASON_TOO_FEW_GPUS;
    size_t best_n = 0;
    bool any_enough = false;

    for (size_t i = 0; i < GX_ARRAY_LEN(order); i++) {
        any_enough = any_enough || (took[order[i]] > 0 && usable + took[order[i]] >= want);
    }
    for (size_t i = 0; i < GX_ARRAY_LEN(order); i++) {
        size_t n = took[order[i]];
        if (n > best_n && (!any_enough || usable + n >= want)) {
            best = order[i];
            best_n = n;
        }
    }
    return best;
}

/*
 * NUMA node to take @want cards from among the usable @a[0..n): binpack the
 * smallest group that fits, spread the largest, ties to the lower NUMA id.
 * False when no known NUMA node has @want usable cards.
 */
static bool
pick_numa(const struct gx_config *cfg, const struct gx_node *node, const struct pick *a, size_t n,
          size_t want, int *group)
{
    struct numa_group g[256];
    const struct numa_group *end;
    size_t n_groups = 0, best_count = 0;
    bool have = false;
    int best = 0;

    if (n > GX_ARRAY_LEN(g)) {
        n = GX_ARRAY_LEN(g);
    }
    /* one pass: count the usable cards of each known NUMA node (few distinct ids) */
    for (size_t i = 0; i < n; i++) {
        int numa = node->cards[a[i].pos].numa;
        size_t k = 0;

        if (numa < 0) {
            continue;
        }
        while (k < n_groups && g[k].numa != numa) {
            k++;
        }
        if (k == n_groups) {
            g[n_groups++] = (struct numa_group){.numa = numa, .count = 1};
        } else {
            g[k].count++;
        }
    }
    end = g + n_groups;
    for (const struct numa_group *x = g; x < end; x++) {
        bool better;

        if (x->count < want) {
            continue;
        }
        if (cfg->policy != GX_POLICY_SPREAD) {
            better = x->count < best_count || (x->count == best_count && x->numa < best);
        } else {
            better = x->count > best_count || (x->count == best_count && x->numa < best);
        }
        if (!have || better) {
            have = true;
            best = x->numa;
            best_count = x->count;
        }
    }
    if (have) {
        *group = best;
    }
    return have;
}

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
        struct gx_card_usage u = {.slices = req->slices};
        out->gpus = 1;
        out->milli = req->milli > 0 ? gx_config_share_milli(cfg, req->milli)
                                    : gx_ledger_share_used(&u, slots);
        if (out->milli > GX_FGD_CARD) {
            out->milli = GX_FGD_CARD;
        }
    }
}

void
gx_score_learn(const struct gx_config *cfg, struct gx_fgd_model *m, const struct gx_podreq *req)
{
    struct gx_fgd_shape sh;

    if (m->inc <= 0.0 || m->half_life != cfg->fgd_half_life) {
        gx_fgd_model_tune(m, cfg->fgd_half_life);
    }
    gx_score_fgd_shape(cfg, req, gx_config_card_slots(cfg, "", 1), &sh);
    gx_fgd_observe(m, &sh);
}

/* True when the fgd policy can judge: configured and typical pods learned. */
static bool
fgd_on(const struct dctx *d)
{
    return d->cfg->policy == GX_POLICY_FGD && d->ctx->fgd != NULL && d->ctx->fgd->total > 0.0;
}

/* FGD's view of @node: CPU and memory left after the booked pods, each card's free milli. */
static void
fgd_node(const struct dctx *d, const struct gx_node *node, int slots, struct gx_fgd_node *f)
{
    int64_t cpu = 0, mem = 0;
    size_t n = node_cards(node);

    gx_ledger_entry_host(d->ln, &cpu, &mem);
    /* unknown (or no) allocatable: the host side is not judged, only the cards */
    f->cpu_milli = node->alloc_cpu_milli <= 0 ? -1 : node->alloc_cpu_milli - cpu;
    f->mem_mib = node->alloc_mem_mib <= 0 ? -1 : node->alloc_mem_mib - mem;
    f->n_cards = (int)(n < GX_FGD_MAX_CARDS ? n : GX_FGD_MAX_CARDS);
    for (int c = 0; c < f->n_cards; c++) {
        struct gx_card_usage u;
        int used;

        usage_of(d, &node->cards[c], &u);
        used = u.exclusive ? GX_CARD_MILLI : gx_ledger_share_used(&u, slots);
        f->free[c] = used >= GX_CARD_MILLI ? 0 : GX_CARD_MILLI - used;
    }
}

/*
 * What fgd charges, in milli-GPU of fragmentation, for a placement on a node
 * with no card in use: score.fgd_idle_card_milli per card of it. Pods then go
 * to nodes already in use unless that strands more, and idle nodes (the big
 * ones most) stay whole for the pods that need one (docs/scheduling-quality.md).
 */
static double
idle_node_cost(const struct dctx *d, const struct gx_fgd_node *f)
{
    for (int c = 0; c < f->n_cards; c++) {
        if (f->free[c] < GX_CARD_MILLI) {
            return 0.0;
        }
    }
    return (double)d->cfg->fgd_idle_card_milli * f->n_cards;
}

struct gaps_walk {
    const struct gx_decide_ctx *ctx;
    struct gx_fgd_gaps *gaps;
};

/* Count the gaps of ledger entry @ln's node (nodes without tenants have none). */
static void
gaps_add_node(void *arg, const struct gx_ledger_node *ln)
{
    struct gaps_walk *w = arg;
    const struct gx_node *node;
    struct dctx d = {.ctx = w->ctx, .cfg = w->ctx->cfg, .ln = ln}; /* all fgd_node reads */
    struct gx_fgd_node f;

    if (ln->n_tenants == 0 ||
        (node = gx_snapshot_find(w->ctx->snap, ln->node, strlen(ln->node))) == NULL) {
        return;
    }
    fgd_node(&d, node, gx_config_card_slots(d.cfg, node->product, node->replicas), &f);
    gx_fgd_gaps_add(w->gaps, &f);
}

/*
 * The cluster's gaps for the gap term (NULL: off), counted again only when
 * the ledger, snapshot or config changed; the cards only with the snapshot.
 */
static const struct gx_score_gaps *
gaps_of(const struct dctx *d)
{
    const struct gx_decide_ctx *ctx = d->ctx;
    struct gx_score_gaps *c = ctx->gaps;
    uint64_t lv = gx_ledger_version(ctx->ledger);
    bool new_snap, stale;

    if (c == NULL || d->cfg->fgd_gap_milli <= 0 || ctx->snap == NULL) {
        return NULL;
    }
    new_snap = !c->valid || c->snap != ctx->snap || c->generation != ctx->snap->generation;
    stale = new_snap || c->ledger != ctx->ledger || c->ledger_version != lv || c->cfg != d->cfg ||
            c->cfg_hash != d->cfg->hash;
    if (new_snap) {
        c->cards = 0;
        for (size_t i = 0; i < ctx->snap->n_nodes; i++) {
            c->cards += (int64_t)node_cards(&ctx->snap->nodes[i]);
        }
        c->snap = ctx->snap;
        c->generation = ctx->snap->generation;
    }
    if (stale) {
        struct gaps_walk w = {.ctx = ctx, .gaps = &c->gaps};

        gx_fgd_gaps_clear(&c->gaps);
        gx_ledger_each(ctx->ledger, gaps_add_node, &w);
        c->ledger = ctx->ledger;
        c->ledger_version = lv;
        c->cfg = d->cfg;
        c->cfg_hash = d->cfg->hash;
        c->valid = true;
    }
    if (stale || c->fgd != ctx->fgd || c->observed != ctx->fgd->observed) {
        c->gaps.min_open = gx_fgd_min_share(ctx->fgd);
        c->fgd = ctx->fgd;
        c->observed = ctx->fgd->observed;
    }
    return c->cards > 0 ? c : NULL;
}

/*
 * What fgd's gap term charges, in milli-GPU, for a share taking @take of a
 * card with @free free: score.fgd_gap_milli per unit of the change of the
 * sum of squares of the cluster's gap counts (fgd.h), per 1,000 cards of
 * the cluster (a count grows with the cluster, a fragment does not). fgd
 * alone fills each card as tightly as the typical pods suggest and piles the
 * leftovers up in a few sizes; the term keeps every size a share fills on offer.
 */
static double
gap_cost(const struct dctx *d, const struct gx_score_gaps *g, int free, int take)
{
    if (g == NULL) {
        return 0.0;
    }
    return d->cfg->fgd_gap_milli * gx_fgd_gap_cost(&g->gaps, free, take) * 1000.0 /
           (double)g->cards;
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
static double
fgd_fit(double delta)
{
    return clamp01(0.5 - delta / (2.0 * GX_FGD_CARD));
}

/* FGD change of placing @req on cards at positions @pos[0..) of @node, idle-node cost included. */
static double
fgd_delta(const struct dctx *d, const struct gx_podreq *req, const struct gx_node *node,
          const int *pos)
{
    int slots = gx_config_card_slots(d->cfg, node->product, node->replicas);
    struct gx_fgd_node f;
    struct gx_fgd_shape sh;

    fgd_node(d, node, slots, &f);
    gx_score_fgd_shape(d->cfg, req, slots, &sh);
    return gx_fgd_delta(d->ctx->fgd, &f, &sh, pos) + idle_node_cost(d, &f);
}

/* Exclusive request on a node whose cards are not time-sliced: pick whole cards. */
static void
decide_exclusive(const struct dctx *d, const struct gx_podreq *req, const struct gx_node *node,
                 struct gx_verdict *out)
{
    const struct gx_config *cfg = d->cfg;
    const struct gx_card_usage none = {0};
    size_t n = node_cards(node), want = (size_t)req->gpus, usable = 0, picked = 0;
    struct pick ok[256];
    const struct pick *sel[GX_MAX_PICK];
    size_t took[GX_REASON_COUNT] = {0};
    int group = 0, first_numa = -1;
    bool have_group, mixed_numa = false;
    struct gx_score_parts p = {0};

    if (n > GX_ARRAY_LEN(ok)) {
        n = GX_ARRAY_LEN(ok);
    }
    if (want > GX_MAX_PICK) {
        out->reason = GX_REASON_BAD_REQUEST;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct gx_card *c = &node->cards[i];
        unsigned f = card_fresh(d, c);
        enum gx_reason r = card_health(d, c, f, true);

        if (r == GX_REASON_NONE && d->ln != NULL) {
            struct gx_card_usage u;
            usage_of(d, c, &u);
            if (u.tenants > 0 || u.slices > 0 || u.exclusive) {
                r = GX_REASON_NO_SLOT;
            }
        }
        if (r == GX_REASON_NONE && ((c->pod != NULL && c->pod[0] != '\0') ||
                                    ((f & FRESH(GX_SIG_MEM_USED)) &&
                                     c->v[GX_SIG_MEM_USED] > (double)cfg->memory_reserve_mib))) {
            r = GX_REASON_BUSY; /* in use by something we did not place */
        }
        if (r != GX_REASON_NONE) {
            took[r]++;
            continue;
        }
        ok[usable].pos = (int)i;
        ok[usable].key = idle_key(c, f);
        ok[usable].fresh = f;
        usable++;
    }
    out->usable_cards = (int)usable;
    if (usable < want) {
        out->reason = deciding_reason(took, usable, want);
        return;
    }
    sort_idle(ok, usable);
    have_group = pick_numa(cfg, node, ok, usable, want, &group);
    for (size_t i = 0; i < usable && picked < want; i++) {
        if (!have_group || node->cards[ok[i].pos].numa == group) {
            sel[picked++] = &ok[i];
        }
    }
    /* a usable card has no tenant, so its ledger usage is all zero */
    for (size_t i = 0; i < picked; i++) {
        const struct gx_card *c = &node->cards[sel[i]->pos];
        card_parts(d, node, c, sel[i]->fresh, &none, &p);
        if (i == 0) {
            first_numa = c->numa;
        } else if (c->numa >= 0 && first_numa >= 0 && c->numa != first_numa) {
            mixed_numa = true;
        }
        out->cards[i] = c->index;
    }
    out->n_cards = (int)picked;
    p.util /= (double)picked;
    p.trend /= (double)picked;
    p.memory /= (double)picked;
    p.temp /= (double)picked;
    /* fewer whole cards left free after the pick = less fragmentation under binpack */
    p.fit = 1.0 - (double)(usable - picked) / (double)node->gpu_count;
    if (cfg->policy == GX_POLICY_SPREAD) {
        p.fit = 1.0 - p.fit;
    } else if (fgd_on(d)) {
        int pos[GX_MAX_PICK];
        for (size_t i = 0; i < picked; i++) {
            pos[i] = sel[i]->pos;
        }
        p.fit = fgd_fit(fgd_delta(d, req, node, pos));
    }
    if (mixed_numa) {
        p.fit *= 0.5;
    }
    out->parts = p;
    out->keep = true;
}

/* Slots the ledger holds on the node (an exclusive holder takes a whole card's slots). */
static int64_t
node_used_slots(const struct dctx *d, int slots)
{
    const struct gx_ledger_node *ln = d->ln;
    int64_t used = 0;

    for (size_t i = 0; ln != NULL && i < ln->n_tenants; i++) {
        used += ln->tenants[i].exclusive ? slots : ln->tenants[i].slices;
    }
    return used;
}

/* Memory and utilization headroom of @card for @req: NONE, NO_MEMORY or BUSY. */
static enum gx_reason
card_headroom(const struct dctx *d, const struct gx_podreq *req, const struct gx_node *node,
              const struct gx_card *card, unsigned f, const struct gx_card_usage *u)
{
    const struct gx_config *cfg = d->cfg;
    int64_t total = card_memory(node, card, f);
    int64_t asked = req->kind == GX_REQ_SHARED && req->memory_mib > 0 ? req->memory_mib : 0;
    double load = u->util_pct;
    double expect = req->kind == GX_REQ_SHARED && req->util_pct > 0 ? req->util_pct : 0.0;

    /* unknown card memory: the rule cannot be evaluated and is skipped */
    if (total > 0 && card_booked(card, f, u) + asked > total - cfg->memory_reserve_mib) {
        return GX_REASON_NO_MEMORY;
    }
    if (f & FRESH(GX_SIG_UTIL)) {
        if (card->v[GX_SIG_UTIL] > cfg->max_utilization_pct) {
            return GX_REASON_BUSY;
        }
        if (card->v[GX_SIG_UTIL] > load) {
            load = card->v[GX_SIG_UTIL];
        }
    }
    if (load + expect > cfg->util_ceiling_pct) {
        return GX_REASON_BUSY;
    }
    return GX_REASON_NONE;
}

/* Stage a failing reason belongs to, for "furthest through the checks". */
static enum stage
reason_stage(enum gx_reason r)
{
    switch (r) {
    case GX_REASON_NO_SLOT:
        return ST_SLOTS;
    case GX_REASON_NO_MEMORY:
        return ST_MEMORY;
    case GX_REASON_BUSY:
        return ST_UTIL;
    case GX_REASON_NONE:
        return ST_PASS;
    default:
        return ST_HEALTH;
    }
}

/* True when @a is a better (further, or more specific at the same stage) failure than @b. */
static bool
further(enum gx_reason a, enum gx_reason b)
{
    if (b == GX_REASON_NONE) {
        return true;
    }
    if (reason_stage(a) != reason_stage(b)) {
        return reason_stage(a) > reason_stage(b);
    }
    return a == GX_REASON_UNHEALTHY && b == GX_REASON_STALE;
}

/* Shared request the extender places itself: pick one card with a free slot and headroom. */
static void
decide_shared(const struct dctx *d, const struct gx_podreq *req, const struct gx_node *node,
              struct gx_verdict *out)
{
    const struct gx_config *cfg = d->cfg;
    int slots = gx_config_card_slots(cfg, node->product, node->replicas);
    size_t n = node_cards(node);
    enum gx_reason best_fail = GX_REASON_NONE;
    int best = -1, best_used = 0, candidates = 0, used;
    /* a milli share books milli; a slice share books slots (ledger.h's one rule) */
    int ask_milli = req->milli > 0 ? gx_config_share_milli(cfg, req->milli) : 0;
    int ask_slices = req->milli > 0 ? 0 : req->slices;
    int64_t best_free = 0;
    unsigned best_fresh = 0;
    struct gx_score_parts p = {0};
    struct gx_card_usage bu = {0};
    bool fgd = fgd_on(d);
    struct gx_fgd_node fn;
    struct gx_fgd_shape sh;
    const struct gx_score_gaps *gaps = NULL;
    double delta = 0.0, best_delta = 0.0;

    if (fgd) {
        fgd_node(d, node, slots, &fn);
        gx_score_fgd_shape(cfg, req, slots, &sh);
        gaps = gaps_of(d);
    }

    for (size_t i = 0; i < n; i++) {
        const struct gx_card *c = &node->cards[i];
        unsigned f = card_fresh(d, c);
        struct gx_card_usage u;
        enum gx_reason r = card_health(d, c, f, false);
        int64_t mem_free;
        bool better;

        usage_of(d, c, &u);
        if (r == GX_REASON_NONE && !gx_ledger_share_fits(&u, slots, ask_slices, ask_milli)) {
            r = GX_REASON_NO_SLOT;
        }
        /*
         * On a node without device-plugin sharing, a workload pod that
         * dcgm-exporter sees on a card we never booked holds that card
         * through the device plugin: it has no time slot for anyone else.
         */
        if (r == GX_REASON_NONE && node->sharing == GX_SHARING_NONE && u.tenants == 0 &&
            c->pod != NULL && c->pod[0] != '\0') {
            r = GX_REASON_NO_SLOT;
        }
        if (r == GX_REASON_NONE) {
            r = card_headroom(d, req, node, c, f, &u);
        }
        if (r != GX_REASON_NONE) {
            if (further(r, best_fail)) {
                best_fail = r;
            }
            continue;
        }
        candidates++;
        used = gx_ledger_share_used(&u, slots);
        mem_free = card_memory(node, c, f) - card_booked(c, f, &u);
        if (fgd) {
            int pos = (int)i;
            delta = gx_fgd_delta(d->ctx->fgd, &fn, &sh, &pos);
            if (pos < fn.n_cards) {
                delta += gap_cost(d, gaps, fn.free[pos], sh.milli);
            }
        }
        if (best < 0) {
            better = true;
        } else if (fgd && fabs(delta - best_delta) > 1e-9) {
            better = delta < best_delta; /* least fragmentation, then as binpack */
        } else if (cfg->policy != GX_POLICY_SPREAD) {
            better = used > best_used || (used == best_used && mem_free < best_free);
        } else {
            better = used < best_used || (used == best_used && mem_free > best_free);
        }
        if (better) {
            best = (int)i;
            best_used = used;
            best_delta = delta;
            best_free = mem_free;
            best_fresh = f;
            bu = u;
        }
    }
    out->usable_cards = candidates;
    if (best < 0) {
        out->reason = best_fail != GX_REASON_NONE ? best_fail : GX_REASON_NO_SLOT;
        return;
    }
    card_parts(d, node, &node->cards[best], best_fresh, &bu, &p);
    p.fit = (double)best_used / (double)GX_CARD_MILLI;
    if (cfg->policy == GX_POLICY_SPREAD) {
        p.fit = 1.0 - p.fit;
    } else if (fgd) {
        p.fit = fgd_fit(best_delta + idle_node_cost(d, &fn));
    }
    out->parts = p;
    out->cards[0] = node->cards[best].index;
    out->n_cards = 1;
    out->keep = true;
}

/*
 * Requests the device plugin places (res_shared, or whole GPUs on a
 * time-sliced node): admit per node on free slots over healthy cards, and
 * for shared pods require memory/utilization headroom on the best card.
 */
static void
decide_device_plugin(const struct dctx *d, const struct gx_podreq *req, const struct gx_node *node,
                     int64_t need, struct gx_verdict *out)
{
    const struct gx_config *cfg = d->cfg;
    int slots = gx_config_card_slots(cfg, node->product, node->replicas);
    size_t n = node_cards(node);
    int64_t total = 0, all = 0, used = node_used_slots(d, slots);
    enum gx_reason room_fail = GX_REASON_NONE;
    size_t sick[GX_REASON_COUNT] = {0};
    int healthy = 0, best = -1;
    int64_t best_free = 0;
    unsigned best_fresh = 0;
    struct gx_score_parts p = {0};
    struct gx_card_usage bu = {0};

    out->device_plugin = true;
    for (size_t i = 0; i < n; i++) {
        const struct gx_card *c = &node->cards[i];
        unsigned f = card_fresh(d, c);
        struct gx_card_usage u;
        enum gx_reason r = card_health(d, c, f, false);
        int64_t mem_free;

        all += slots;
        if (r != GX_REASON_NONE) {
            sick[r]++;
            continue;
        }
        healthy++;
        total += slots;
        usage_of(d, c, &u);
        if (req->kind != GX_REQ_SHARED) {
            card_parts(d, node, c, f, &u, &p);
            continue;
        }
        if (u.exclusive) {
            continue;
        }
        r = card_headroom(d, req, node, c, f, &u);
        if (r != GX_REASON_NONE) {
            /* BUSY got further through the checks than NO_MEMORY */
            if (r == GX_REASON_BUSY || room_fail == GX_REASON_NONE) {
                room_fail = r;
            }
            continue;
        }
        mem_free = card_memory(node, c, f) - card_booked(c, f, &u);
        if (best < 0 || mem_free > best_free) {
            best = (int)i;
            best_free = mem_free;
            best_fresh = f;
            bu = u;
        }
    }
    out->usable_cards = healthy;
    if (total - used < need) {
        /* blame the sick cards only when they would have made room */
        out->reason = healthy < (int)n && all - used >= need ? deciding_reason(sick, 0, 1)
                                                             : GX_REASON_NO_SLOT;
        return;
    }
    if (req->kind == GX_REQ_SHARED) {
        if (best < 0) {
            out->reason = room_fail != GX_REASON_NONE ? room_fail : GX_REASON_NO_SLOT;
            return;
        }
        card_parts(d, node, &node->cards[best], best_fresh, &bu, &p);
    } else {
        p.util /= healthy;
        p.trend /= healthy;
        p.memory /= healthy;
        p.temp /= healthy;
    }
    p.fit = total > 0 ? clamp01((double)(used + need) / (double)total) : 0.0;
    if (cfg->policy == GX_POLICY_SPREAD) {
        p.fit = 1.0 - p.fit;
    }
    out->parts = p;
    out->keep = true;
}

/*
 * A pod asking no GPU. Under fgd on a GPU node it scores by the GPU capacity
 * its CPU and memory would strand (a node whose cards are all taken loses
 * nothing); otherwise CPU nodes are preferred as configured.
 */
static void
decide_cpu_pod(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
               const struct gx_node *node, struct gx_verdict *out)
{
    const struct gx_config *cfg = ctx->cfg;
    bool cpu = node == NULL || node->gpu_count <= 0 || node_cards(node) == 0;
    struct dctx d;

    out->keep = true;
    out->parts.util = out->parts.memory = out->parts.temp = out->parts.fit = NEUTRAL;
    out->parts.trend = NEUTRAL;
    out->parts.labels = node != NULL ? labels_part(cfg, node) : NEUTRAL;
    out->score = cfg->prefer_cpu_nodes_for_cpu_pods ? (cpu ? 10 : 0) : 5;
    out->score_exact = out->score;
    if (cpu) {
        return;
    }
    dctx_init(&d, ctx, node);
    if (!fgd_on(&d)) {
        return;
    }
    out->parts.fit = fgd_fit(fgd_delta(&d, req, node, NULL));
    out->score_exact = 10.0 * out->parts.fit;
    out->score = weighted_score(out->score_exact);
}

/* True when @req is well formed for its kind. */
static bool
request_valid(const struct gx_podreq *req)
{
    switch (req->kind) {
    case GX_REQ_NONE:
        return true;
    case GX_REQ_EXCLUSIVE:
        return req->gpus >= 1;
    case GX_REQ_SHARED:
        return req->slices >= 1 && req->milli >= 0 && req->milli <= 1000 && req->memory_mib >= 0 &&
               !isnan(req->util_pct) && req->util_pct <= 100.0;
    }
    return false;
}

void
gx_score_node(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
              const struct gx_node *node, struct gx_verdict *out)
{
    const struct gx_config *cfg = ctx->cfg;
    struct dctx d;
    bool time_sliced;

    memset(out, 0, sizeof(*out));
    if (req == NULL || !request_valid(req)) {
        out->reason = GX_REASON_BAD_REQUEST;
        return;
    }
    if (req->kind == GX_REQ_NONE) {
        decide_cpu_pod(ctx, req, node, out);
        return;
    }
    if (node == NULL) {
        out->reason = GX_REASON_UNKNOWN_NODE;
        return;
    }
    /* permanent before transient: a CPU node that is also NotReady has no GPUs */
    if (node->gpu_count <= 0 || node_cards(node) == 0) {
        out->reason = GX_REASON_NO_GPUS;
        return;
    }
    if (!node->ready || node->unschedulable) {
        out->reason = GX_REASON_NOT_READY;
        return;
    }
    dctx_init(&d, ctx, node);
    time_sliced = node->sharing != GX_SHARING_NONE || node->replicas > 1;
    if (req->kind == GX_REQ_EXCLUSIVE) {
        /* N GPUs means N physical cards, whatever the node advertises in replicas */
        if (req->gpus > node->gpu_count) {
            out->reason = GX_REASON_TOO_FEW_GPUS;
            return;
        }
        if (time_sliced) {
            decide_device_plugin(&d, req, node, req->gpus, out);
        } else {
            decide_exclusive(&d, req, node, out);
        }
    } else if (req->device_plugin) {
        if (!time_sliced) {
            out->reason = GX_REASON_SHARING_MISMATCH;
            return;
        }
        decide_device_plugin(&d, req, node, req->slices, out);
    } else {
        decide_shared(&d, req, node, out);
    }
    if (!out->keep) {
        memset(&out->parts, 0, sizeof(out->parts));
        out->n_cards = 0;
        return;
    }
    out->parts.labels = labels_part(cfg, node);
    out->score_exact = weighted_exact(cfg, &out->parts);
    out->score = weighted_score(out->score_exact);
}
