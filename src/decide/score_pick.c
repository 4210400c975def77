/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score_pick.c - the card choice of one node for each kind of request:
 * whole cards for an exclusive request (idlest first, one NUMA node), one
 * card for a share the extender places, and the per-node slot count for
 * what the device plugin places; and which filter reason names a node
 * whose cards cannot take the pod. Every choice walks the node's cards once
 * (gx_score_walk). Pure; score.c dispatches to it and adds the label part.
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
 */
#include "score_int.h"

#include <math.h>

/* Stages a card passes for a shared request; the furthest one names the reason. */
enum stage { ST_HEALTH, ST_SLOTS, ST_MEMORY, ST_UTIL, ST_PASS };

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

/* Idleness key for ordering exclusive picks: lower is better. */
static double
idle_key(const struct gx_card *card, unsigned f)
{
    double util = (f & GX_FRESH(GX_SIG_UTIL)) ? card->v[GX_SIG_UTIL] : 50.0;
    double temp = (f & GX_FRESH(GX_SIG_TEMP)) ? card->v[GX_SIG_TEMP] : 50.0;

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
 * GANG_APART > GANG_NUMA > NO_SLOT); TOO_FEW_GPUS when none took any. Seven taken cards and one
 * with an XID make "no slot", not "unhealthy".
 */
static enum gx_reason
deciding_reason(const size_t took[GX_REASON_COUNT], size_t usable, size_t want)
{
    static const enum gx_reason order[] = {GX_REASON_UNHEALTHY, GX_REASON_BUSY,
                                           GX_REASON_STALE,     GX_REASON_GANG_APART,
                                           GX_REASON_GANG_NUMA, GX_REASON_NO_SLOT};
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
gx_score_decide_exclusive(const struct gx_score_dctx *d, const struct gx_podreq *req,
                          const struct gx_node *node, struct gx_verdict *out)
{
    const struct gx_config *cfg = d->cfg;
    const struct gx_card_usage none = {0};
    size_t want = (size_t)req->gpus, usable = 0, picked = 0;
    struct pick ok[256];
    const struct pick *sel[GX_MAX_PICK];
    size_t took[GX_REASON_COUNT] = {0};
    int group = 0, first_numa = -1;
    bool have_group, mixed_numa = false;
    struct gx_score_parts p = {0};
    struct gx_score_walk w;

    if (want > GX_MAX_PICK) {
        out->reason = GX_REASON_BAD_REQUEST;
        return;
    }
    gx_score_walk_init(&w, d, node, true, GX_ARRAY_LEN(ok));
    while (gx_score_walk_next(&w)) {
        const struct gx_card *c = w.card;
        enum gx_reason r = w.health;

        if (r == GX_REASON_NONE &&
            (w.usage.tenants > 0 || w.usage.slices > 0 || w.usage.exclusive)) {
            r = GX_REASON_NO_SLOT;
        }
        if (r == GX_REASON_NONE && ((c->pod != NULL && c->pod[0] != '\0') ||
                                    ((w.fresh & GX_FRESH(GX_SIG_MEM_USED)) &&
                                     c->v[GX_SIG_MEM_USED] > (double)cfg->memory_reserve_mib))) {
            r = GX_REASON_BUSY; /* in use by something we did not place */
        }
        if (r != GX_REASON_NONE) {
            took[r]++;
            continue;
        }
        ok[usable].pos = (int)w.pos;
        ok[usable].key = idle_key(c, w.fresh);
        ok[usable].fresh = w.fresh;
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
        gx_score_card_parts(d, node, c, sel[i]->fresh, &none, &p);
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
    } else if (gx_score_fgd_on(d)) {
        int pos[GX_MAX_PICK];
        for (size_t i = 0; i < picked; i++) {
            pos[i] = sel[i]->pos;
        }
        p.fit = gx_score_fgd_fit(gx_score_fgd_delta(d, req, node, pos));
    }
    if (mixed_numa) {
        p.fit *= 0.5;
    }
    out->parts = p;
    out->keep = true;
}

/* Slots the ledger holds on the node (an exclusive holder takes a whole card's slots). */
static int64_t
node_used_slots(const struct gx_score_dctx *d, int slots)
{
    const struct gx_ledger_node *ln = d->ln;
    int64_t used = 0;

    for (size_t i = 0; ln != NULL && i < ln->n_tenants; i++) {
        used += ln->tenants[i].exclusive ? slots : ln->tenants[i].slices;
    }
    return used;
}

/*
 * Counting a share without gpu-util at its share of the card keeps a card
 * measured busy from taking it as if it cost nothing.
 */
double
gx_score_expected_util(const struct gx_config *cfg, double declared, int milli)
{
    if (declared >= 0) {
        return declared;
    }
    return cfg->expect_share_util ? (double)milli * 100.0 / GX_CARD_MILLI : 0.0;
}

/* What shared @req expects to add to a card of @slots slots; 0 for other requests. */
static double
expected_util(const struct gx_config *cfg, const struct gx_podreq *req, int slots)
{
    if (req->kind != GX_REQ_SHARED) {
        return 0.0;
    }
    return gx_score_expected_util(cfg, req->util_pct, gx_score_share_milli(cfg, req, slots));
}

/*
 * Memory and utilization headroom of @card for @req, which expects to add
 * @expect % (expected_util, once per node): NONE, NO_MEMORY or BUSY.
 */
static enum gx_reason
card_headroom(const struct gx_score_dctx *d, const struct gx_podreq *req,
              const struct gx_node *node, const struct gx_card *card, unsigned f,
              const struct gx_card_usage *u, double expect)
{
    const struct gx_config *cfg = d->cfg;
    int64_t total = gx_score_card_memory(node, card, f);
    int64_t asked = req->kind == GX_REQ_SHARED && req->memory_mib > 0 ? req->memory_mib : 0;
    double load = u->util_pct;

    /* unknown card memory: the rule cannot be evaluated and is skipped */
    if (total > 0 && gx_score_card_booked(card, f, u) + asked > total - cfg->memory_reserve_mib) {
        return GX_REASON_NO_MEMORY;
    }
    if (f & GX_FRESH(GX_SIG_UTIL)) {
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

/*
 * The reason no card took a share, from the count of cards each reason kept
 * out (@took): the one that kept out the most, ties to the card that got
 * furthest through the checks. Two cards holding shares and a third a little
 * too busy for the share's expected load make "no slot": the shares are what
 * would have to change, not the load of the one card.
 */
static enum gx_reason
shared_reason(const size_t took[GX_REASON_COUNT])
{
    enum gx_reason best = GX_REASON_NONE;

    for (int i = GX_REASON_NONE + 1; i < GX_REASON_COUNT; i++) {
        enum gx_reason r = (enum gx_reason)i;
        if (took[r] > 0 && (best == GX_REASON_NONE || took[r] > took[best] ||
                            (took[r] == took[best] && further(r, best)))) {
            best = r;
        }
    }
    return best != GX_REASON_NONE ? best : GX_REASON_NO_SLOT;
}

/*
 * True when no card of @node could hold the share even empty: more slots or
 * milli than a card has, or more declared memory than a card of the node's
 * size less the reserve. Such a pod waits forever and no victim helps.
 */
static bool
never_fits(const struct gx_config *cfg, const struct gx_podreq *req, const struct gx_node *node,
           int slots, int ask_slices, int ask_milli)
{
    static const struct gx_card_usage empty;

    if (!gx_ledger_share_fits(&empty, slots, ask_slices, ask_milli)) {
        return true;
    }
    return node->gpu_memory_mib > 0 && req->memory_mib > 0 &&
           req->memory_mib > node->gpu_memory_mib - cfg->memory_reserve_mib;
}

void
gx_score_decide_shared(const struct gx_score_dctx *d, const struct gx_podreq *req,
                       const struct gx_node *node, struct gx_verdict *out)
{
    const struct gx_config *cfg = d->cfg;
    int slots = gx_config_card_slots(cfg, node->product, node->replicas);
    size_t took[GX_REASON_COUNT] = {0};
    int best = -1, best_used = 0, candidates = 0, used;
    /* a milli share books milli; a slice share books slots (ledger.h's one rule) */
    int ask_milli = req->milli > 0 ? gx_config_share_milli(cfg, req->milli) : 0;
    int ask_slices = req->milli > 0 ? 0 : req->slices;
    double expect = expected_util(cfg, req, slots);
    int64_t best_free = 0;
    unsigned best_fresh = 0;
    struct gx_score_parts p = {0};
    struct gx_card_usage bu = {0};
    bool fgd = gx_score_fgd_on(d);
    struct gx_fgd_node fn;
    struct gx_fgd_shape sh;
    const struct gx_score_gaps *gaps = NULL;
    double delta = 0.0, best_delta = 0.0, deltas[GX_FGD_MAX_CARDS];
    struct gx_score_walk w;

    if (never_fits(cfg, req, node, slots, ask_slices, ask_milli)) {
        out->reason = GX_REASON_NEVER_FITS;
        return;
    }
    if (fgd) {
        gx_score_fgd_node(d, node, slots, &fn);
        gx_score_fgd_shape(cfg, req, slots, &sh);
        gx_score_share_deltas(d, &fn, &sh, deltas);
        gaps = gx_score_gaps_of(d);
    }

    gx_score_walk_init(&w, d, node, false, SIZE_MAX);
    while (gx_score_walk_next(&w)) {
        const struct gx_card *c = w.card;
        const struct gx_card_usage *u = &w.usage;
        enum gx_reason r = w.health;
        int64_t mem_free;
        bool better;

        if (r == GX_REASON_NONE && !gx_ledger_share_fits(u, slots, ask_slices, ask_milli)) {
            r = GX_REASON_NO_SLOT;
        }
        /*
         * On a node without device-plugin sharing, a workload pod that
         * dcgm-exporter sees on a card we never booked holds that card
         * through the device plugin: it has no time slot for anyone else.
         */
        if (r == GX_REASON_NONE && node->sharing == GX_SHARING_NONE && u->tenants == 0 &&
            c->pod != NULL && c->pod[0] != '\0') {
            r = GX_REASON_NO_SLOT;
        }
        if (r == GX_REASON_NONE) {
            r = card_headroom(d, req, node, c, w.fresh, u, expect);
        }
        if (r != GX_REASON_NONE) {
            took[r]++;
            continue;
        }
        candidates++;
        used = gx_ledger_share_used(u, slots);
        mem_free = gx_score_card_memory(node, c, w.fresh) - gx_score_card_booked(c, w.fresh, u);
        if (fgd) {
            int pos = (int)w.pos;
            delta = pos < fn.n_cards ? deltas[pos] : gx_fgd_delta(d->ctx->fgd, &fn, &sh, &pos);
            delta += gx_score_gap_cost(d, gaps, &fn, pos, sh.milli);
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
            best = (int)w.pos;
            best_used = used;
            best_delta = delta;
            best_free = mem_free;
            best_fresh = w.fresh;
            bu = *u;
        }
    }
    out->usable_cards = candidates;
    if (best < 0) {
        out->reason = shared_reason(took);
        return;
    }
    gx_score_card_parts(d, node, &node->cards[best], best_fresh, &bu, &p);
    p.fit = (double)best_used / (double)GX_CARD_MILLI;
    if (cfg->policy == GX_POLICY_SPREAD) {
        p.fit = 1.0 - p.fit;
    } else if (fgd) {
        p.fit = gx_score_fgd_fit(best_delta + gx_score_idle_node_cost(d, &fn) +
                                 gx_score_where_cost(d, &fn, sh.milli));
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
void
gx_score_decide_device_plugin(const struct gx_score_dctx *d, const struct gx_podreq *req,
                              const struct gx_node *node, int64_t need, struct gx_verdict *out)
{
    const struct gx_config *cfg = d->cfg;
    int slots = gx_config_card_slots(cfg, node->product, node->replicas);
    double expect = expected_util(cfg, req, slots);
    int64_t total = 0, all = 0, used = node_used_slots(d, slots);
    enum gx_reason room_fail = GX_REASON_NONE;
    size_t sick[GX_REASON_COUNT] = {0};
    int healthy = 0, best = -1;
    int64_t best_free = 0;
    unsigned best_fresh = 0;
    struct gx_score_parts p = {0};
    struct gx_card_usage bu = {0};
    struct gx_score_walk w;

    out->device_plugin = true;
    gx_score_walk_init(&w, d, node, false, SIZE_MAX);
    while (gx_score_walk_next(&w)) {
        const struct gx_card *c = w.card;
        enum gx_reason r = w.health;
        int64_t mem_free;

        all += slots;
        if (r != GX_REASON_NONE) {
            sick[r]++;
            continue;
        }
        healthy++;
        total += slots;
        if (req->kind != GX_REQ_SHARED) {
            gx_score_card_parts(d, node, c, w.fresh, &w.usage, &p);
            continue;
        }
        if (w.usage.exclusive) {
            continue;
        }
        r = card_headroom(d, req, node, c, w.fresh, &w.usage, expect);
        if (r != GX_REASON_NONE) {
            /* BUSY got further through the checks than NO_MEMORY */
            if (r == GX_REASON_BUSY || room_fail == GX_REASON_NONE) {
                room_fail = r;
            }
            continue;
        }
        mem_free =
            gx_score_card_memory(node, c, w.fresh) - gx_score_card_booked(c, w.fresh, &w.usage);
        if (best < 0 || mem_free > best_free) {
            best = (int)w.pos;
            best_free = mem_free;
            best_fresh = w.fresh;
            bu = w.usage;
        }
    }
    out->usable_cards = healthy;
    if (total - used < need) {
        /* blame the sick cards only when they would have made room */
        out->reason = healthy < (int)w.n && all - used >= need ? deciding_reason(sick, 0, 1)
                                                               : GX_REASON_NO_SLOT;
        return;
    }
    if (req->kind == GX_REQ_SHARED) {
        if (best < 0) {
            out->reason = room_fail != GX_REASON_NONE ? room_fail : GX_REASON_NO_SLOT;
            return;
        }
        gx_score_card_parts(d, node, &node->cards[best], best_fresh, &bu, &p);
    } else {
        p.util /= healthy;
        p.trend /= healthy;
        p.memory /= healthy;
        p.temp /= healthy;
    }
    p.fit = total > 0 ? gx_score_clamp01((double)(used + need) / (double)total) : 0.0;
    if (cfg->policy == GX_POLICY_SPREAD) {
        p.fit = 1.0 - p.fit;
    }
    out->parts = p;
    out->keep = true;
}
