/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score_parts.c - what prioritize scores: the metric parts of a card
 * (utilization, memory, temperature and trend headroom), the label part, the
 * weighted 0..10 score and the scores of one prioritize call relative to its
 * best node. Pure arithmetic on the structs it is given.
 *
 * Label lookup is linear here rather than borrowed from snapshot.c so that
 * the decision has no dependency beyond the structs it reads. The fit part
 * is the card choice's (score_pick.c), fgd's fit score_fgd.c's.
 */
#include "score_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Seconds ahead the trend part projects the utilization slope (about a pod's warm-up). */
#define TREND_HORIZON_S 600.0

/* Exact scores this close to the best are the best (same inputs, other order of sums). */
#define RELATIVE_TIE 1e-9

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

double
gx_score_labels_part(const struct gx_config *cfg, const struct gx_node *node)
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
        return GX_SCORE_NEUTRAL;
    }
    return gx_score_clamp01(0.5 + sum / (2.0 * total));
}

double
gx_score_weighted_exact(const struct gx_config *cfg, const struct gx_score_parts *p)
{
    const double w[] = {cfg->w_util,   cfg->w_memory, cfg->w_temp,
                        cfg->w_labels, cfg->w_fit,    cfg->w_trend};
    const double v[] = {p->util, p->memory, p->temp, p->labels, p->fit, p->trend};
    double sum = 0.0, wsum = 0.0;

    for (size_t i = 0; i < GX_ARRAY_LEN(w); i++) {
        if (w[i] <= 0.0) {
            continue;
        }
        sum += w[i] * gx_score_clamp01(v[i]);
        wsum += w[i];
    }
    return wsum == 0.0 ? 5.0 : 10.0 * sum / wsum;
}

int
gx_score_weighted(double exact)
{
    long s = lround(exact);

    return s < 0 ? 0 : s > 10 ? 10 : (int)s;
}

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

static void
swap_d(double *a, size_t i, size_t j)
{
    double t = a[i];

    a[i] = a[j];
    a[j] = t;
}

/* The @k-th largest of @a[0..n) (1 <= k <= n), reordering @a: quickselect, three-way. */
static double
kth_largest(double *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n, want = k - 1;

    for (;;) {
        double pivot = a[lo + (hi - lo) / 2];
        size_t lt = lo, i = lo, gt = hi;

        /* [lo, lt) above the pivot, [lt, gt) equal to it, [gt, hi) below */
        while (i < gt) {
            if (a[i] > pivot) {
                swap_d(a, lt++, i++);
            } else if (a[i] < pivot) {
                swap_d(a, i, --gt);
            } else {
                i++;
            }
        }
        if (want < lt) {
            hi = lt;
        } else if (want < gt) {
            return pivot;
        } else {
            lo = gt;
        }
    }
}

size_t
gx_score_shortlist(double *exact, size_t n, size_t k, double *scratch, uint64_t *rng)
{
    size_t m = 0, above = 0, ties = 0, take, dropped = 0;
    double cut;

    for (size_t i = 0; i < n; i++) {
        if (exact[i] >= 0.0) {
            scratch[m++] = exact[i];
        }
    }
    if (k == 0 || m <= k) {
        return 0;
    }
    cut = kth_largest(scratch, m, k);
    for (size_t i = 0; i < n; i++) {
        above += exact[i] > cut;
        ties += exact[i] == cut;
    }
    /*
     * The k - above places left go to scores equal to the cut, a uniform
     * choice (selection sampling) as kube-scheduler's among equal totals: in
     * call order, which repeats from cycle to cycle at 100 % of nodes to
     * score, a burst piled its binds onto the same few nodes.
     */
    take = k - above;
    for (size_t i = 0; i < n; i++) {
        if (exact[i] < 0.0 || exact[i] > cut) {
            continue;
        }
        if (exact[i] == cut && rng == NULL) {
            continue;
        }
        if (exact[i] == cut && gx_rand_next(rng) % ties-- < take) {
            take--;
            continue;
        }
        exact[i] = -1.0;
        dropped++;
    }
    return dropped;
}

void
gx_score_card_parts(const struct gx_score_dctx *d, const struct gx_node *node,
                    const struct gx_card *card, unsigned f, const struct gx_card_usage *u,
                    struct gx_score_parts *p)
{
    const struct gx_config *cfg = d->cfg;
    int64_t total = gx_score_card_memory(node, card, f);
    bool used_fresh = (f & GX_FRESH(GX_SIG_MEM_USED)) != 0;

    if (f & GX_FRESH(GX_SIG_UTIL)) {
        p->util += gx_score_clamp01(1.0 - card->v[GX_SIG_UTIL] / 100.0);
    } else {
        p->util += GX_SCORE_NEUTRAL;
        p->metrics_neutral = true;
    }
    /* trend: 0.5 flat, 0 when the slope adds TREND_HORIZON_S x slope >= 50 points */
    if (f & GX_FRESH(GX_SIG_UTIL_TREND)) {
        p->trend += gx_score_clamp01(0.5 - card->v[GX_SIG_UTIL_TREND] * TREND_HORIZON_S / 100.0);
    } else {
        p->trend += GX_SCORE_NEUTRAL;
    }
    if (total > 0 && (used_fresh || u->memory_mib > 0)) {
        p->memory +=
            gx_score_clamp01((double)(total - gx_score_card_booked(card, f, u)) / (double)total);
    } else {
        p->memory += GX_SCORE_NEUTRAL;
        p->metrics_neutral = true;
    }
    if ((f & GX_FRESH(GX_SIG_TEMP)) && cfg->max_temperature_c > 0) {
        p->temp += gx_score_clamp01((cfg->max_temperature_c - card->v[GX_SIG_TEMP]) /
                                    cfg->max_temperature_c);
    } else {
        p->temp += GX_SCORE_NEUTRAL;
        p->metrics_neutral = true;
    }
}
