/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fgd.c - typical-pod model and node fragmentation (FGD).
 *
 * For a typical pod m and a node n, the fragment is the free GPU capacity of
 * n that m cannot use: all of it when m may not run on n (its node affinity
 * bars n) or m's CPU or memory does not fit; for a
 * share of g milli, the free part of every card with less than g free; for
 * k whole cards, the free part of partly used cards, or all of it when fewer
 * than k cards are wholly free; for a CPU-only pod that fits, nothing (as
 * the FGD simulator counts CPU pods among the typical ones: a GPU pod that
 * takes the last CPU of a node with free cards strands them). The node's fragmentation is the
 * weighted mean over the model. Decay is done by growing the weight of each new observation rather
 * than shrinking all old ones (same ratios, O(1)).
 */
#include "fgd.h"

#include <math.h>
#include <string.h>

/* Renormalize the weights before they leave double's comfortable range. */
#define FGD_RESCALE 1e200

void
gx_fgd_model_init(struct gx_fgd_model *m, double half_life)
{
    memset(m, 0, sizeof(*m));
    gx_fgd_model_tune(m, half_life);
}

void
gx_fgd_model_tune(struct gx_fgd_model *m, double half_life)
{
    if (m->inc <= 0.0) {
        m->inc = 1.0;
    }
    m->half_life = half_life;
    m->decay = half_life >= 1.0 ? pow(2.0, -1.0 / half_life) : 0.5;
}

/* True when @a and @b are the same request. */
static bool
same_shape(const struct gx_fgd_shape *a, const struct gx_fgd_shape *b)
{
    return a->cpu_milli == b->cpu_milli && a->mem_mib == b->mem_mib && a->gpus == b->gpus &&
           a->milli == b->milli && a->where == b->where;
}

/* True when a typical pod uses where class @c. */
static bool
class_used(const struct gx_fgd_model *m, int c)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->shape[i].where == c) {
            return true;
        }
    }
    return false;
}

int
gx_fgd_where_class(struct gx_fgd_model *m, const char *key)
{
    int c;

    if (key == NULL || key[0] == '\0' || strlen(key) >= GX_FGD_WHERE_LEN) {
        return 0;
    }
    for (c = 1; c < m->n_where; c++) {
        if (strcmp(m->where[c], key) == 0) {
            return c;
        }
    }
    if (m->n_where < 1) {
        m->n_where = 1;
    }
    if (m->n_where < GX_FGD_MAX_WHERE) {
        c = m->n_where++;
    } else {
        for (c = 1; c < GX_FGD_MAX_WHERE && class_used(m, c); c++) {
            ;
        }
        if (c == GX_FGD_MAX_WHERE) {
            return 0;
        }
    }
    memcpy(m->where[c], key, strlen(key) + 1);
    m->where_gen++;
    return c;
}

/* Slot for @s: its own, a free one, or the lightest (forgotten). */
static size_t
slot_for(struct gx_fgd_model *m, const struct gx_fgd_shape *s, bool *fresh)
{
    size_t light = 0;

    *fresh = false;
    for (size_t i = 0; i < m->n; i++) {
        if (same_shape(&m->shape[i], s)) {
            return i;
        }
        if (m->weight[i] < m->weight[light]) {
            light = i;
        }
    }
    *fresh = true;
    if (m->n < GX_FGD_MAX_SHAPES) {
        return m->n++;
    }
    m->total -= m->weight[light];
    return light;
}

/* Shape @i of @m is new: move it to its place in m->by_milli (@appended: not in it yet). */
static void
sort_in(struct gx_fgd_model *m, size_t i, bool appended)
{
    size_t n = appended ? m->n - 1 : m->n, at = 0, to;

    while (at < n && m->by_milli[at] != i) {
        at++;
    }
    if (at < n) { /* a slot reused: out of its old place first */
        memmove(&m->by_milli[at], &m->by_milli[at + 1], (n - at - 1) * sizeof(m->by_milli[0]));
        n--;
    }
    for (to = 0; to < n && m->shape[m->by_milli[to]].milli <= m->shape[i].milli; to++) {
        ;
    }
    memmove(&m->by_milli[to + 1], &m->by_milli[to], (n - to) * sizeof(m->by_milli[0]));
    m->by_milli[to] = (uint16_t)i;
}

/* m->row from the table: after every change of a shape or a weight. */
static void
rows_sync(struct gx_fgd_model *m)
{
    for (size_t j = 0; j < m->n; j++) {
        const struct gx_fgd_shape *t = &m->shape[m->by_milli[j]];
        struct gx_fgd_row *r = &m->row[j];

        r->cpu_milli = t->cpu_milli;
        r->mem_mib = t->mem_mib;
        r->weight = m->weight[m->by_milli[j]];
        r->gpus = t->gpus;
        r->milli = t->milli;
        r->where_bit = t->where > 0 && t->where < GX_FGD_MAX_WHERE ? 1u << t->where : 0;
    }
}

void
gx_fgd_observe(struct gx_fgd_model *m, const struct gx_fgd_shape *s)
{
    bool fresh;
    size_t i;
    size_t had = m->n;

    i = slot_for(m, s, &fresh);
    if (fresh) {
        m->shape[i] = *s;
        m->weight[i] = 0.0;
        sort_in(m, i, m->n > had);
    }
    m->weight[i] += m->inc;
    m->total += m->inc;
    m->observed++;
    m->inc /= m->decay;
    if (m->inc > FGD_RESCALE) {
        for (size_t k = 0; k < m->n; k++) {
            m->weight[k] /= m->inc;
        }
        m->total /= m->inc;
        m->inc = 1.0;
    }
    rows_sync(m);
}

/* Aggregates of a node's cards: free total, wholly free cards, free on partly used ones. */
struct agg {
    int64_t free;
    int whole;
    int64_t partial;
};

static void
aggregate(const int *free, int n, struct agg *a)
{
    memset(a, 0, sizeof(*a));
    for (int c = 0; c < n; c++) {
        a->free += free[c];
        if (free[c] >= GX_FGD_CARD) {
            a->whole++;
        } else {
            a->partial += free[c];
        }
    }
}

/* True when @cpu_milli and @mem_mib fit the CPU and memory left (unknown amounts fit); 0/1. */
static int
host_fits(int64_t cpu_milli, int64_t mem_mib, int64_t cpu, int64_t mem)
{
    return ((cpu < 0) | (cpu_milli <= cpu)) & ((mem < 0) | (mem_mib <= mem));
}

/* True when shape @s may run on @n and fits the CPU and memory left. */
static bool
fits_host(const struct gx_fgd_shape *s, const struct gx_fgd_node *n, int64_t cpu, int64_t mem)
{
    if (s->where > 0 && s->where < GX_FGD_MAX_WHERE && ((n->barred >> s->where) & 1u) != 0) {
        return false;
    }
    return host_fits(s->cpu_milli, s->mem_mib, cpu, mem);
}

/* Free milli of one card a share of @g cannot use. */
static int64_t
share_waste(int free, int g)
{
    return free < g ? free : 0;
}

/* Fragment of one node state for shape @s. */
static double
shape_frag(const struct gx_fgd_shape *s, const int *free, int n, const struct agg *a, bool fit)
{
    int64_t w = 0;

    if (!fit) {
        return (double)a->free;
    }
    if (s->gpus <= 0) {
        return 0.0; /* a CPU pod that fits strands nothing */
    }
    if (s->gpus == 1 && s->milli < GX_FGD_CARD) {
        for (int c = 0; c < n; c++) {
            w += share_waste(free[c], s->milli);
        }
        return (double)w;
    }
    return a->whole >= s->gpus ? (double)a->partial : (double)a->free;
}

double
gx_fgd_frag(const struct gx_fgd_model *m, const struct gx_fgd_node *n)
{
    struct agg a;
    double sum = 0.0;
    int cards = n->n_cards < GX_FGD_MAX_CARDS ? n->n_cards : GX_FGD_MAX_CARDS;

    if (m == NULL || m->total <= 0.0) {
        return 0.0;
    }
    aggregate(n->free, cards, &a);
    for (size_t i = 0; i < m->n; i++) {
        bool fit = fits_host(&m->shape[i], n, n->cpu_milli, n->mem_mib);
        sum += m->weight[i] * shape_frag(&m->shape[i], n->free, cards, &a, fit);
    }
    return sum / m->total;
}

/* CPU or memory left after taking @used of @have: -1 stays unknown, none left is 0, not unknown. */
static int64_t
left(int64_t have, int64_t used)
{
    return have < 0 ? -1 : have > used ? have - used : 0;
}

double
gx_fgd_delta(const struct gx_fgd_model *m, const struct gx_fgd_node *n,
             const struct gx_fgd_shape *s, const int *cards)
{
    int after[GX_FGD_MAX_CARDS];
    int cn = n->n_cards < GX_FGD_MAX_CARDS ? n->n_cards : GX_FGD_MAX_CARDS;
    int k = s->gpus == 1 && s->milli < GX_FGD_CARD ? 1 : s->gpus;
    int64_t cpu_a = left(n->cpu_milli, s->cpu_milli), mem_a = left(n->mem_mib, s->mem_mib);
    struct agg ab, aa;
    double sum = 0.0;

    if (m == NULL || m->total <= 0.0) {
        return 0.0;
    }
    memcpy(after, n->free, (size_t)cn * sizeof(int));
    for (int i = 0; i < k && cards != NULL; i++) {
        if (cards[i] >= 0 && cards[i] < cn) {
            int take = k == 1 && s->gpus == 1 ? s->milli : GX_FGD_CARD;
            after[cards[i]] = after[cards[i]] > take ? after[cards[i]] - take : 0;
        }
    }
    aggregate(n->free, cn, &ab);
    aggregate(after, cn, &aa);
    for (size_t i = 0; i < m->n; i++) {
        const struct gx_fgd_shape *t = &m->shape[i];
        bool fb = fits_host(t, n, n->cpu_milli, n->mem_mib), fa = fits_host(t, n, cpu_a, mem_a);
        double d;

        if (fb && fa && t->gpus == 1 && t->milli < GX_FGD_CARD) {
            /* only the changed cards move a share's fragment */
            int64_t w = 0;
            for (int j = 0; j < k && cards != NULL; j++) {
                if (cards[j] >= 0 && cards[j] < cn) {
                    w += share_waste(after[cards[j]], t->milli) -
                         share_waste(n->free[cards[j]], t->milli);
                }
            }
            d = (double)w;
        } else {
            d = shape_frag(t, after, cn, &aa, fa) - shape_frag(t, n->free, cn, &ab, fb);
        }
        sum += m->weight[i] * d;
    }
    return sum / m->total;
}

/* Index of the first of @g[0..n) (ascending) above @v. */
static int
first_above(const int *g, int n, int v)
{
    int lo = 0, hi = n;

    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (g[mid] <= v) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The whole-card fragment of a node with aggregates @a for a pod of @gpus cards. */
static double
whole_frag(const struct agg *a, int gpus)
{
    return a->whole >= gpus ? (double)a->partial : (double)a->free;
}

/* @free[0..n) ascending into @sorted, and @pre[i] the sum of the i smallest. */
static void
sort_free(const int *free, int n, int *sorted, int64_t *pre)
{
    pre[0] = 0;
    for (int c = 0; c < n; c++) {
        int v = free[c], at = c;

        for (; at > 0 && sorted[at - 1] > v; at--) {
            sorted[at] = sorted[at - 1];
        }
        sorted[at] = v;
    }
    for (int c = 0; c < n; c++) {
        pre[c + 1] = pre[c] + sorted[c];
    }
}

/*
 * gx_fgd_delta of share @s on each card of @n in one pass over the typical
 * pods (the card choice asks it of every card). A typical pod that fits the
 * host before and after is summed by kind: shares by their milli (a share
 * of g loses the chosen card's free f -> a when g > f and gains a when
 * a < g <= f: prefix sums of the weights in ascending milli), whole cards
 * by their count, CPU pods not at all (they strand nothing either way).
 * Taking CPU and memory never makes a pod fit, so one that fits after fits
 * before. The rows ascend in milli, so a share's waste before (the free of
 * the cards below it) is read by a cursor over the node's sorted cards.
 */
void
gx_fgd_share_deltas(const struct gx_fgd_model *m, const struct gx_fgd_node *n,
                    const struct gx_fgd_shape *s, double *out)
{
    int cn = n->n_cards < GX_FGD_MAX_CARDS ? n->n_cards : GX_FGD_MAX_CARDS;
    int64_t cpu_a = left(n->cpu_milli, s->cpu_milli), mem_a = left(n->mem_mib, s->mem_mib);
    int after[GX_FGD_MAX_CARDS], g[GX_FGD_MAX_SHAPES], sorted[GX_FGD_MAX_CARDS], k = 0, below = 0;
    int64_t pre[GX_FGD_MAX_CARDS + 1];
    int kinds[GX_FGD_MAX_CARDS + 1], n_kinds = 0; /* the whole-card counts with weight */
    double cum[GX_FGD_MAX_SHAPES + 1], whole_w[GX_FGD_MAX_CARDS + 2] = {0};
    double gone_w = 0.0, gone_before = 0.0; /* typical pods with no room after: weight, fragment */
    double shares_w = 0.0; /* cum[k], in a register: the sum is the loop's longest chain */
    struct agg ab, aa[GX_FGD_MAX_CARDS];

    for (int c = 0; c < cn; c++) {
        out[c] = 0.0;
    }
    if (m == NULL || m->total <= 0.0) {
        return;
    }
    aggregate(n->free, cn, &ab);
    sort_free(n->free, cn, sorted, pre);
    for (int c = 0; c < cn; c++) {
        after[c] = n->free[c] > s->milli ? n->free[c] - s->milli : 0;
        aa[c] = ab;
        aa[c].free -= n->free[c] - after[c];
        aa[c].whole -= n->free[c] >= GX_FGD_CARD && after[c] < GX_FGD_CARD;
        aa[c].partial +=
            (after[c] < GX_FGD_CARD ? after[c] : 0) - (n->free[c] < GX_FGD_CARD ? n->free[c] : 0);
    }
    cum[0] = 0.0;
    /*
     * Whether a row fits is data the branch predictor cannot learn: it only
     * picks what to add, and a row that does not count adds an exact zero.
     * The kind of a row is in runs (the rows ascend in milli), so it may branch.
     */
    for (size_t j = 0; j < m->n; j++) {
        const struct gx_fgd_row *r = &m->row[j];
        int here = (r->where_bit & n->barred) == 0;
        int fa = here & host_fits(r->cpu_milli, r->mem_mib, cpu_a, mem_a),
            fb = here & host_fits(r->cpu_milli, r->mem_mib, n->cpu_milli, n->mem_mib);
        double before, gone = r->weight * (1 - fa); /* no room after: its fragment is all free */

        if (r->gpus == 1 && r->milli < GX_FGD_CARD) {
            while (below < cn && sorted[below] < r->milli) {
                below++;
            }
            before = (double)(fb ? pre[below] : ab.free);
            shares_w += r->weight * fa;
            g[k] = r->milli;
            cum[k + 1] = shares_w;
            k += fa;
        } else if (r->gpus > 0) {
            before = fb ? whole_frag(&ab, r->gpus) : (double)ab.free;
            whole_w[r->gpus <= GX_FGD_MAX_CARDS ? r->gpus : GX_FGD_MAX_CARDS + 1] += r->weight * fa;
        } else {
            before = fb ? 0.0 : (double)ab.free;
        }
        gone_w += gone;
        gone_before += gone * before;
    }
    for (int gpus = 1; gpus <= GX_FGD_MAX_CARDS + 1; gpus++) {
        if (whole_w[gpus] > 0.0) {
            kinds[n_kinds++] = gpus;
        }
    }
    for (int c = 0; c < cn; c++) {
        int f = n->free[c], a = after[c], above_f, above_a, same = 0;

        /* a card's answer depends on its free milli alone: cards alike share it */
        while (same < c && n->free[same] != f) {
            same++;
        }
        if (same < c) {
            out[c] = out[same];
            continue;
        }
        above_f = first_above(g, k, f);
        above_a = first_above(g, k, a);
        out[c] += (double)(a - f) * (cum[k] - cum[above_f]) +
                  (double)a * (cum[above_f] - cum[above_a]) + gone_w * (double)aa[c].free -
                  gone_before;
        for (int i = 0; i < n_kinds; i++) {
            out[c] +=
                whole_w[kinds[i]] * (whole_frag(&aa[c], kinds[i]) - whole_frag(&ab, kinds[i]));
        }
        out[c] /= m->total;
    }
}

void
gx_fgd_gaps_clear(struct gx_fgd_gaps *g)
{
    memset(g->count, 0, sizeof(g->count));
}

bool
gx_fgd_gaps_shares(struct gx_fgd_gaps *g, const struct gx_fgd_model *m)
{
    int min[GX_FGD_MAX_WHERE];
    int n_where = m != NULL && m->n_where > 1 ? m->n_where : 1;
    bool changed = n_where != g->n_where;

    for (int c = 0; c < GX_FGD_MAX_WHERE; c++) {
        min[c] = GX_FGD_CARD;
    }
    for (size_t i = 0; m != NULL && i < m->n; i++) {
        const struct gx_fgd_shape *t = &m->shape[i];
        int c = t->where > 0 && t->where < n_where ? t->where : 0;

        if (t->gpus == 1 && t->milli > 0 && t->milli < min[c]) {
            min[c] = t->milli;
        }
    }
    for (int c = 0; c < n_where; c++) {
        changed = changed || g->min_share[c] != min[c];
        g->min_share[c] = min[c];
    }
    g->n_where = n_where;
    return changed;
}

int
gx_fgd_min_open(const struct gx_fgd_gaps *g, uint32_t barred)
{
    int min = g->n_where > 0 ? g->min_share[0] : GX_FGD_CARD;

    for (int c = 1; c < g->n_where; c++) {
        if ((barred >> c & 1u) == 0 && g->min_share[c] < min) {
            min = g->min_share[c];
        }
    }
    return min;
}

/* True when a card with @free free is a gap some typical share may fill (@min_open and up). */
static bool
open_gap(int min_open, int free)
{
    return free >= min_open && free > 0 && free < GX_FGD_CARD;
}

/* Add @by (1 or -1) to the count of each open gap of node @n's cards. */
static void
gaps_count(struct gx_fgd_gaps *g, const struct gx_fgd_node *n, int by)
{
    int cards = n->n_cards < GX_FGD_MAX_CARDS ? n->n_cards : GX_FGD_MAX_CARDS;
    int min_open = gx_fgd_min_open(g, n->barred);

    for (int c = 0; c < cards; c++) {
        if (open_gap(min_open, n->free[c])) {
            g->count[n->free[c]] += by;
        }
    }
}

void
gx_fgd_gaps_add(struct gx_fgd_gaps *g, const struct gx_fgd_node *n)
{
    gaps_count(g, n, 1);
}

void
gx_fgd_gaps_sub(struct gx_fgd_gaps *g, const struct gx_fgd_node *n)
{
    gaps_count(g, n, -1);
}

double
gx_fgd_gap_cost(const struct gx_fgd_gaps *g, uint32_t barred, int free, int take)
{
    int left = free - take, min_open = gx_fgd_min_open(g, barred);
    double d = 0.0;

    if (open_gap(min_open, left)) {
        d += 2.0 * g->count[left] + 1.0; /* (N+1)^2 - N^2 */
    }
    if (open_gap(min_open, free)) {
        d -= 2.0 * g->count[free] - 1.0; /* (N-1)^2 - N^2 */
    }
    return d;
}
