/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt.c - victim choice for the preempt verb (see preempt.h). The
 * search works on "units" (one pod, or for whole-card requests one card
 * with every pod on it) and never judges a fit itself: each candidate set
 * is tried with gx_score_node against a scratch ledger entry without it.
 *
 * Per group of units (one card, the whole node, or the cards of the node):
 *  1. the lowest priority level p such that removing every unit of
 *     priority <= p makes the preemptor fit (none: the group has no set);
 *  2. reprieve, most important first (higher priority, then the units
 *     whose eviction frees least, then the older), every unit whose
 *     return still fits, as kube-scheduler's own SelectVictimsOnNode does.
 * Fit is monotone in what is removed, so this finds the minimal highest
 * priority and an inclusion-minimal set. Fit calls per group <= 2 x units.
 *
 * Measured load is projected: a card left without any tenant is idle
 * (utilization 0, memory used 0, no workload pod); a card that keeps some
 * loses what the victims declared (memory) and are expected to use
 * (utilization: gx_score_expected_util, the rule admission counts them by),
 * never below 0. dcgm-exporter cannot attribute use per pod under
 * time-slicing, so these are the best estimate of what leaves with them.
 */
#include "preempt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Distinct pods of one node the search looks at. */
#define PE_MAX_UIDS 256
/* Share of an exclusive holder, above any slot count. */
#define PE_WHOLE_CARD 1000000
/* Card position of a pod on more than one card. */
#define PE_MULTI (-2)

static const char *const drop_names[GX_PDROP_COUNT] = {
    [GX_PDROP_NONE] = "none",
    [GX_PDROP_UNRESOLVABLE] = "unresolvable",
    [GX_PDROP_NO_VICTIMS] = "no_victims",
    [GX_PDROP_FITS] = "fits",
    [GX_PDROP_BAD_REQUEST] = "bad_request",
    [GX_PDROP_UNKNOWN_NODE] = "unknown_node",
    [GX_PDROP_QUOTA] = "quota",
    [GX_PDROP_UNDER_WAY] = "under_way",
};

const char *
gx_preempt_drop_name(enum gx_preempt_drop d)
{
    return (unsigned)d < GX_PDROP_COUNT ? drop_names[d] : "none";
}

/* One pod holding tenants on the node. */
struct pe_pod {
    const char *uid;
    int card;         /* its card, GX_CARD_ANY, or PE_MULTI */
    int share;        /* slots or milli it holds, for "frees least" */
    int32_t priority; /* valid when eligible */
    bool eligible;    /* known priority lower than the preemptor's */
    int64_t since_ms; /* earliest tenant since */
};

/* A set of pods removed together. */
struct pe_unit {
    size_t pods[GX_PREEMPT_MAX_VICTIMS];
    size_t n;
    int32_t priority; /* highest of its pods */
    int share;        /* sum of its pods' shares */
    int64_t since_ms; /* oldest of its pods */
    int card;         /* card of a one-pod unit's pod (may be GX_CARD_ANY) */
    bool whole;       /* a whole card with every pod on it */
};

/* The cost of a victim set; compared field by field. */
struct pe_cost {
    int64_t pdb;
    int32_t max_priority;
    size_t pods;
    int64_t prio_sum;
    int64_t oldest_since; /* larger is better: the victims are younger */
    int card;
};

/* Search state of one node. */
struct pe {
    const struct gx_preempt_input *in;
    const struct gx_ledger_node *ln;
    struct gx_ledger *scratch;
    struct gx_tenant *tenants; /* scratch copy without the removed pods */
    struct gx_card *cards;     /* projected cards */
    struct gx_node node;       /* the snapshot node over @cards */
    struct pe_pod pods[PE_MAX_UIDS];
    size_t n_pods;
    unsigned removed[PE_MAX_UIDS]; /* units that removed each pod */
    struct gx_verdict last;        /* verdict of the last fit call */
};

bool
gx_preempt_pdb_risk(const struct gx_preempt_input *in, const char *uid)
{
    if (in->sched_pdb <= 0) {
        return false;
    }
    for (size_t i = 0; i < in->n_sched; i++) {
        if (in->sched[i] != NULL && strcmp(in->sched[i], uid) == 0) {
            return true;
        }
    }
    return false;
}

/* Index of @uid in e->pods or PE_MAX_UIDS. */
static size_t
pod_index(const struct pe *e, const char *uid)
{
    for (size_t i = 0; i < e->n_pods; i++) {
        if (strcmp(e->pods[i].uid, uid) == 0) {
            return i;
        }
    }
    return PE_MAX_UIDS;
}

/* The distinct pods of the node's ledger entry, with priority and eligibility. */
static void
collect_pods(struct pe *e)
{
    const struct gx_preempt_input *in = e->in;

    for (size_t i = 0; e->ln != NULL && i < e->ln->n_tenants; i++) {
        const struct gx_tenant *t = &e->ln->tenants[i];
        size_t k = pod_index(e, t->uid);
        /* slices is a milli tenant's slot equivalent too (ledger.h): one unit for every share */
        int share = t->exclusive ? PE_WHOLE_CARD : t->slices;

        if (k < PE_MAX_UIDS) {
            struct pe_pod *p = &e->pods[k];
            if (p->card != t->card) {
                p->card = PE_MULTI;
            }
            p->share += share;
            if (t->since_ms < p->since_ms) {
                p->since_ms = t->since_ms;
            }
            continue;
        }
        if (e->n_pods == PE_MAX_UIDS) {
            continue; /* beyond the cap: stays, never a victim */
        }
        struct pe_pod *p = &e->pods[e->n_pods++];
        int32_t prio = 0;
        p->uid = t->uid;
        p->card = t->card;
        p->share = share;
        p->since_ms = t->since_ms;
        p->eligible = in->priority_of != NULL && in->priority_of(in->arg, t->uid, &prio) &&
                      prio < in->priority;
        p->priority = prio;
    }
}

/* Project the measured load of every card without the removed pods (see the file header). */
static void
project_cards(struct pe *e)
{
    const struct gx_node *src = e->in->node;
    const struct gx_config *cfg = e->in->ctx->cfg;
    int slots = gx_config_card_slots(cfg, src->product, src->replicas);

    for (size_t c = 0; c < src->n_cards; c++) {
        struct gx_card *card = &e->cards[c];
        double gone_mem = 0.0, gone_util = 0.0;
        size_t gone = 0, stay = 0;

        *card = src->cards[c];
        for (size_t i = 0; e->ln != NULL && i < e->ln->n_tenants; i++) {
            const struct gx_tenant *t = &e->ln->tenants[i];
            size_t k;
            if (t->card != card->index) {
                continue;
            }
            k = pod_index(e, t->uid);
            if (k < PE_MAX_UIDS && e->removed[k] > 0) {
                gone++;
                gone_mem += (double)t->memory_mib;
                if (!t->exclusive) {
                    gone_util +=
                        gx_score_expected_util(cfg, t->util_pct, gx_ledger_tenant_milli(t, slots));
                }
            } else {
                stay++;
            }
        }
        if (gone == 0) {
            continue;
        }
        if (stay == 0) {
            gone_mem = isnan(card->v[GX_SIG_MEM_USED]) ? 0.0 : card->v[GX_SIG_MEM_USED];
            gone_util = isnan(card->v[GX_SIG_UTIL]) ? 0.0 : card->v[GX_SIG_UTIL];
            card->pod = NULL;
        }
        if (!isnan(card->v[GX_SIG_UTIL])) {
            card->v[GX_SIG_UTIL] = fmax(0.0, card->v[GX_SIG_UTIL] - gone_util);
        }
        if (!isnan(card->v[GX_SIG_MEM_USED])) {
            double used = fmax(0.0, card->v[GX_SIG_MEM_USED] - gone_mem);
            if (!isnan(card->v[GX_SIG_MEM_FREE])) {
                card->v[GX_SIG_MEM_FREE] += card->v[GX_SIG_MEM_USED] - used;
            }
            card->v[GX_SIG_MEM_USED] = used;
        }
    }
}

/*
 * True when the preemptor fits the node with the removed pods gone, by
 * gx_score_node on the scratch entry; e->last holds the verdict.
 * *rc = GX_ENOMEM when the scratch entry cannot be written.
 */
static bool
fits(struct pe *e, enum gx_err *rc)
{
    struct gx_decide_ctx ctx;
    size_t n = 0;

    for (size_t i = 0; e->ln != NULL && i < e->ln->n_tenants; i++) {
        size_t k = pod_index(e, e->ln->tenants[i].uid);
        if (k < PE_MAX_UIDS && e->removed[k] > 0) {
            continue;
        }
        e->tenants[n++] = e->ln->tenants[i];
    }
    if (gx_ledger_set_node(e->scratch, e->node.name, e->tenants, n, NULL) != GX_OK) {
        *rc = GX_ENOMEM;
        return false;
    }
    project_cards(e);
    ctx = gx_decide_ctx_on(e->in->ctx, e->scratch);
    gx_score_node(&ctx, e->in->req, &e->node, &e->last);
    return e->last.keep;
}

static void
unit_set(struct pe *e, const struct pe_unit *u, bool remove)
{
    for (size_t i = 0; i < u->n; i++) {
        if (remove) {
            e->removed[u->pods[i]]++;
        } else if (e->removed[u->pods[i]] > 0) {
            e->removed[u->pods[i]]--;
        }
    }
}

/* Add pod @k to unit @u (once). */
static void
unit_add(struct pe *e, struct pe_unit *u, size_t k)
{
    const struct pe_pod *p = &e->pods[k];

    for (size_t i = 0; i < u->n; i++) {
        if (u->pods[i] == k) {
            return;
        }
    }
    if (u->n == GX_ARRAY_LEN(u->pods)) {
        return;
    }
    if (u->n == 0 || p->priority > u->priority) {
        u->priority = p->priority;
    }
    if (u->n == 0 || p->since_ms < u->since_ms) {
        u->since_ms = p->since_ms;
    }
    u->share += p->share;
    u->pods[u->n++] = k;
}

/* Priority ascending (the level search order). */
static int
by_priority(const struct pe_unit *a, const struct pe_unit *b)
{
    return a->priority < b->priority ? -1 : a->priority > b->priority ? 1 : 0;
}

/*
 * Most important first, for the reprieve: higher priority; then, for
 * whole cards, more pods (evicting the card with fewer pods is cheaper),
 * else the smaller share (evicting the bigger share frees more with fewer
 * pods); then the older.
 */
static int
by_importance(const struct pe_unit *a, const struct pe_unit *b)
{
    if (a->priority != b->priority) {
        return a->priority > b->priority ? -1 : 1;
    }
    if (a->whole && b->whole && a->n != b->n) {
        return a->n > b->n ? -1 : 1;
    }
    if (a->share != b->share) {
        return a->share < b->share ? -1 : 1;
    }
    if (a->since_ms != b->since_ms) {
        return a->since_ms < b->since_ms ? -1 : 1;
    }
    return 0;
}

/* Stable insertion sort of unit pointers (groups are small). */
static void
sort_units(struct pe_unit **v, size_t n, int (*cmp)(const struct pe_unit *, const struct pe_unit *))
{
    for (size_t i = 1; i < n; i++) {
        struct pe_unit *x = v[i];
        size_t j = i;
        while (j > 0 && cmp(v[j - 1], x) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/*
 * Known PDB violations of the pods removed now: the budgets' count when
 * pdb_count is set, else the scheduler's own victims it counted (capped at
 * its count when @cap).
 */
static int64_t
pdb_of(const struct pe *e, bool cap)
{
    const char *uids[PE_MAX_UIDS];
    size_t n = 0;
    int64_t risk = 0;

    for (size_t k = 0; k < e->n_pods; k++) {
        if (e->removed[k] == 0) {
            continue;
        }
        uids[n++] = e->pods[k].uid;
        risk += gx_preempt_pdb_risk(e->in, e->pods[k].uid) ? 1 : 0;
    }
    if (e->in->pdb_count != NULL) {
        return e->in->pdb_count(e->in->arg, uids, n);
    }
    return cap && risk > e->in->sched_pdb ? e->in->sched_pdb : risk;
}

/* Cost of the pods removed now. */
static void
cost_of(const struct pe *e, int card, struct pe_cost *c)
{
    bool first = true;

    memset(c, 0, sizeof(*c));
    c->card = card;
    for (size_t k = 0; k < e->n_pods; k++) {
        const struct pe_pod *p = &e->pods[k];
        if (e->removed[k] == 0) {
            continue;
        }
        c->pods++;
        c->prio_sum += p->priority;
        if (first || p->priority > c->max_priority) {
            c->max_priority = p->priority;
        }
        if (first || p->since_ms < c->oldest_since) {
            c->oldest_since = p->since_ms;
        }
        first = false;
    }
    c->pdb = pdb_of(e, false);
}

/* True when @a is cheaper than @b. */
static bool
cheaper(const struct pe_cost *a, const struct pe_cost *b)
{
    if (a->pdb != b->pdb) {
        return a->pdb < b->pdb;
    }
    if (a->max_priority != b->max_priority) {
        return a->max_priority < b->max_priority;
    }
    if (a->pods != b->pods) {
        return a->pods < b->pods;
    }
    if (a->prio_sum != b->prio_sum) {
        return a->prio_sum < b->prio_sum;
    }
    if (a->oldest_since != b->oldest_since) {
        return a->oldest_since > b->oldest_since;
    }
    return a->card < b->card;
}

/*
 * The search of one group (see the file header). On true the chosen pods
 * are the removed ones, e->last is their verdict and @cost their cost;
 * on false nothing is removed.
 */
static bool
search_group(struct pe *e, struct pe_unit *units, size_t n, int card, struct pe_cost *cost,
             enum gx_err *rc)
{
    struct pe_unit *order[PE_MAX_UIDS];
    size_t i = 0, taken;
    bool found = false;

    if (n == 0) {
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        order[k] = &units[k];
    }
    sort_units(order, n, by_priority);
    while (i < n && !found && *rc == GX_OK) {
        int32_t level = order[i]->priority;
        while (i < n && order[i]->priority == level) {
            unit_set(e, order[i++], true);
        }
        found = fits(e, rc);
    }
    taken = i;
    if (!found || *rc != GX_OK) {
        for (size_t k = 0; k < taken; k++) {
            unit_set(e, order[k], false);
        }
        return false;
    }
    sort_units(order, taken, by_importance);
    for (size_t k = 0; k < taken && *rc == GX_OK; k++) {
        unit_set(e, order[k], false);
        if (!fits(e, rc)) {
            unit_set(e, order[k], true);
        }
    }
    if (!fits(e, rc)) {
        return false; /* cannot happen: the set fitted before its last reprieve failed */
    }
    cost_of(e, card, cost);
    return true;
}

/* Units of one pod each: the eligible pods on @card (or on any card when @card is GX_CARD_ANY). */
static size_t
pod_units(struct pe *e, int card, bool any, struct pe_unit *units)
{
    size_t n = 0;

    for (size_t k = 0; k < e->n_pods; k++) {
        const struct pe_pod *p = &e->pods[k];
        if (!p->eligible || (!any && p->card != card)) {
            continue;
        }
        memset(&units[n], 0, sizeof(units[n]));
        units[n].card = p->card;
        unit_add(e, &units[n], k);
        n++;
    }
    return n;
}

/* Units of whole cards: every card whose every pod is eligible. */
static size_t
card_units(struct pe *e, struct pe_unit *units)
{
    size_t n = 0;

    for (size_t c = 0; c < e->in->node->n_cards && n < PE_MAX_UIDS; c++) {
        int idx = e->in->node->cards[c].index;
        struct pe_unit *u = &units[n];
        bool ok = true;

        memset(u, 0, sizeof(*u));
        u->card = idx;
        u->whole = true;
        for (size_t i = 0; e->ln != NULL && i < e->ln->n_tenants && ok; i++) {
            const struct gx_tenant *t = &e->ln->tenants[i];
            size_t k;
            if (t->card != idx) {
                continue;
            }
            k = pod_index(e, t->uid);
            ok = k < PE_MAX_UIDS && e->pods[k].eligible;
            if (ok) {
                unit_add(e, u, k);
            }
        }
        if (ok && u->n > 0) {
            n++;
        }
    }
    return n;
}

/* Record the removed pods and the verdict's cards in @out. */
static void
take_choice(const struct pe *e, const struct pe_cost *cost, struct gx_preempt_choice *out)
{
    out->keep = true;
    out->n_victims = 0;
    for (size_t k = 0; k < e->n_pods && out->n_victims < GX_PREEMPT_MAX_VICTIMS; k++) {
        if (e->removed[k] == 0) {
            continue;
        }
        memcpy(out->victims[out->n_victims++], e->pods[k].uid, strlen(e->pods[k].uid) + 1);
    }
    out->n_cards = e->last.n_cards;
    memcpy(out->cards, e->last.cards, sizeof(out->cards));
    out->pdb = pdb_of(e, true);
    out->max_priority = cost->max_priority;
}

/* True when evicting tenants may change verdict reason @r. */
static bool
resolvable(enum gx_reason r)
{
    return r == GX_REASON_NO_SLOT || r == GX_REASON_NO_MEMORY || r == GX_REASON_BUSY;
}

/* The search over the groups of the request's kind. */
static enum gx_err
search(struct pe *e, bool device_plugin, struct gx_preempt_choice *out)
{
    const struct gx_node *node = e->in->node;
    struct pe_unit *units = calloc(PE_MAX_UIDS, sizeof(*units));
    struct pe_cost best, cost;
    unsigned best_removed[PE_MAX_UIDS];
    struct gx_verdict best_verdict;
    bool have = false;
    enum gx_err rc = GX_OK;
    size_t n;

    if (units == NULL) {
        return GX_ENOMEM;
    }
    if (device_plugin || e->in->req->kind == GX_REQ_EXCLUSIVE) {
        n = device_plugin ? pod_units(e, 0, true, units) : card_units(e, units);
        have = search_group(e, units, n, -1, &best, &rc);
        memcpy(best_removed, e->removed, sizeof(best_removed));
        best_verdict = e->last;
    } else {
        for (size_t c = 0; c < node->n_cards && rc == GX_OK; c++) {
            n = pod_units(e, node->cards[c].index, false, units);
            if (!search_group(e, units, n, node->cards[c].index, &cost, &rc)) {
                continue;
            }
            if (!have || cheaper(&cost, &best)) {
                have = true;
                best = cost;
                memcpy(best_removed, e->removed, sizeof(best_removed));
                best_verdict = e->last;
            }
            memset(e->removed, 0, sizeof(e->removed));
        }
    }
    if (rc == GX_OK && have) {
        memcpy(e->removed, best_removed, sizeof(e->removed));
        e->last = best_verdict;
        take_choice(e, &best, out);
    } else if (rc == GX_OK) {
        out->drop = GX_PDROP_NO_VICTIMS;
    }
    free(units);
    return rc;
}

enum gx_err
gx_preempt_choose(const struct gx_preempt_input *in, struct gx_preempt_choice *out)
{
    struct gx_verdict pre;
    struct pe *e = NULL;
    enum gx_err rc = GX_OK;

    if (in == NULL || out == NULL || in->ctx == NULL || in->req == NULL) {
        return GX_EINVAL;
    }
    memset(out, 0, sizeof(*out));
    if (in->node == NULL) {
        out->drop = GX_PDROP_UNKNOWN_NODE;
        out->reason = GX_REASON_UNKNOWN_NODE;
        return GX_OK;
    }
    gx_score_node(in->ctx, in->req, in->node, &pre);
    out->reason = pre.reason;
    if (pre.keep) {
        /* the GPUs are not what stops it: the scheduler's own set stands */
        out->keep = in->n_sched > 0;
        out->unchanged = out->keep;
        out->drop = out->keep ? GX_PDROP_NONE : GX_PDROP_FITS;
        out->n_cards = pre.n_cards;
        memcpy(out->cards, pre.cards, sizeof(out->cards));
        out->pdb = in->sched_pdb;
        return GX_OK;
    }
    if (pre.reason == GX_REASON_BAD_REQUEST) {
        out->drop = GX_PDROP_BAD_REQUEST;
        return GX_OK;
    }
    if (!resolvable(pre.reason)) {
        out->drop = GX_PDROP_UNRESOLVABLE;
        return GX_OK;
    }
    rc = GX_ENOMEM;
    if ((e = calloc(1, sizeof(*e))) == NULL) {
        goto out;
    }
    e->in = in;
    e->ln = gx_ledger_node(in->ctx->ledger, in->node->name);
    e->node = *in->node;
    if ((e->scratch = gx_ledger_new()) == NULL ||
        (e->ln != NULL && e->ln->n_tenants > 0 &&
         (e->tenants = calloc(e->ln->n_tenants, sizeof(*e->tenants))) == NULL) ||
        (in->node->n_cards > 0 &&
         (e->cards = calloc(in->node->n_cards, sizeof(*e->cards))) == NULL)) {
        goto out;
    }
    e->node.cards = e->cards;
    collect_pods(e);
    rc = search(e, pre.device_plugin, out);
out:
    if (e != NULL) {
        gx_ledger_free(e->scratch);
        free(e->tenants);
        free(e->cards);
        free(e);
    }
    return rc;
}
