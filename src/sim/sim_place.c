/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_place.c - one scheduling cycle of a simulated run (sim_int.h), as
 * ksched models kube-scheduler: the feasible nodes from its rotating start,
 * the in-tree scores plus the extender's prioritize answer (gx_score_node,
 * rounded as the server's handler rounds it), the highest total wins with
 * ties broken by the seeded RNG, then the cards booked as bind books them
 * (gx_admit_reserve) or, count-only, as the device plugin hands them out;
 * and the cycle's inverse, giving back all a placed pod took (gx_sim_unplace).
 * Places pods only: the cluster is sim_model.c's, the figures sim.c's.
 */
#include "sim_int.h"

#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "ledger.h"
#include "snapshot.h"

/* Feasible nodes the scheduler finds, from its rotating start (schedule_one.go). */
static size_t
find_feasible(struct gx_sim_state *r, const struct gx_trace_pod *p, const struct gx_ksched_res *q)
{
    size_t want = gx_ksched_nodes_to_find(&r->o->profile, r->n), found = 0, seen = 0;

    if (r->n == 0) {
        return 0;
    }

    while (seen < r->n && found < want) {
        size_t i = (r->start + seen) % r->n;
        seen++;
        if (gx_sim_intree_fits(&r->nodes[i], p, q)) {
            r->feasible[found++] = i;
        }
    }
    r->start = (r->start + seen) % r->n;
    return found;
}

/* Book pod @p on node @i as bind does (gx_admit_reserve decides again and books). */
static enum gx_err
book(struct gx_sim_state *r, size_t i, const struct gx_trace_pod *p, const struct gx_podreq *req,
     struct gx_admit_plan *plan)
{
    const struct gx_decide_ctx ctx = gx_sim_decide_ctx(r);
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
extender_scores(struct gx_sim_state *r, size_t n_feasible, const struct gx_podreq *req)
{
    const struct gx_decide_ctx ctx = gx_sim_decide_ctx(r);
    const struct gx_config *cfg = r->o->cfg;
    struct gx_verdict v;

    for (size_t k = 0; k < n_feasible; k++) {
        gx_score_node(&ctx, req, r->nodes[r->feasible[k]].node, &v);
        r->exact[k] = !v.keep ? -1.0 : v.score_exact < 0.0 ? 0.0 : v.score_exact;
        r->ext[k] = v.keep ? v.score : -1;
    }
    /* filter keeps the best filter.shortlist_nodes; prioritize sees only those */
    if (gx_score_shortlist(r->exact, n_feasible, (size_t)cfg->shortlist_nodes, r->scratch,
                           &r->rng) > 0) {
        for (size_t k = 0; k < n_feasible; k++) {
            r->ext[k] = r->exact[k] < 0.0 ? -1 : r->ext[k];
        }
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
choose(struct gx_sim_state *r, size_t n_feasible, const struct gx_podreq *req,
       const struct gx_ksched_res *q, struct gx_verdict *best)
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
        } else if (total == best_total && gx_sim_rng_below(&r->rng, ++ties) == 0) {
            pick = (long)i;
        }
    }
    memset(best, 0, sizeof(*best));
    if (pick >= 0 && ext) {
        const struct gx_decide_ctx ctx = gx_sim_decide_ctx(r);
        gx_score_node(&ctx, req, r->nodes[pick].node, best); /* the verdict bind decides again */
    }
    return pick;
}

/* Take @milli of card @c on @s in the sim's account. */
static void
take(struct gx_sim_node *s, int c, int milli)
{
    s->booked[c] += milli;
    s->free[c] -= milli < s->free[c] ? milli : s->free[c];
}

/* Account a placed pod on node @i, cards @cards[0..k). */
static void
place(struct gx_sim_state *r, size_t i, const struct gx_trace_pod *p, const struct gx_ksched_res *q,
      const int *cards, int k)
{
    struct gx_sim_node *s = &r->nodes[i];
    int before = 0;

    for (int c = 0; c < s->n_cards; c++) {
        before += s->free[c];
    }
    gx_ksched_add(&s->ks, q);
    for (int j = 0; j < k; j++) {
        take(s, cards[j], gx_sim_is_share(p) ? p->gpu_milli : GX_FGD_CARD);
    }
    for (int c = 0; c < s->n_cards; c++) {
        before -= s->free[c];
    }
    r->allocated += before; /* what the cards really gave */
    r->last.node = (long)i;
    r->last.untracked = false;
    r->last.n_cards = k;
    memcpy(r->last.cards, cards, sizeof(int) * (size_t)k);
}

/*
 * Device plugin, count-only: replicas go to the cards with the fewest in
 * use (the plugin spreads them); it never looks at milli-GPU, so a card
 * can be promised past its capacity (take() credits only what is left).
 */
static int
plugin_cards(struct gx_sim_node *s, const struct gx_trace_pod *p, int *cards)
{
    int k = gx_sim_is_share(p) ? 1 : p->num_gpu, per = gx_sim_is_share(p) ? 1 : 1000;
    bool used[GX_SIM_MAX_CARDS] = {false};

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
untracked(struct gx_sim_state *r, size_t i, const struct gx_trace_pod *p)
{
    struct gx_sim_node *s = &r->nodes[i];

    s->other_cpu += p->cpu_milli;
    s->other_mem += p->memory_mib;
    return gx_ledger_set_untracked(r->ledger, s->node->name, s->other_cpu, s->other_mem);
}

/* Schedule one pod; false when it fits nowhere. */
bool
gx_sim_schedule_one(struct gx_sim_state *r, const struct gx_trace_pod *p)
{
    struct gx_ksched_res q = gx_sim_ks_request(r, p);
    struct gx_podreq req = {.kind = GX_REQ_NONE, .util_pct = -1};
    struct gx_verdict v;
    size_t nf;
    long i;
    int cards[GX_MAX_PICK], k = 0;

    if (r->o->mode != GX_SIM_COUNT_ONLY && (p->num_gpu > 0 || r->o->cpu_pods_too)) {
        if (gx_sim_classify(r, p, &req) != GX_OK) {
            return false;
        }
    }
    if (req.kind != GX_REQ_NONE || r->o->cpu_pods_too) {
        struct gx_sim_where w;
        gx_sim_where_of(p, &w);
        gx_score_learn(r->o->cfg, &r->seen, &req, &w.where); /* as filter does */
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
    if (r->o->sees_all_pods && req.kind == GX_REQ_NONE) {
        r->last.untracked = true; /* (count-only: GPU pods too) what unplace gives back */
        if (untracked(r, (size_t)i, p) != GX_OK) {
            r->ledger_errs++;
        }
    }
    return true;
}

bool
gx_sim_place(struct gx_sim_state *r, const struct gx_trace_pod *p, struct gx_sim_placed *at)
{
    uint64_t uid = r->uid;

    if (!gx_sim_schedule_one(r, p)) {
        return false;
    }
    *at = r->last;
    at->booked = r->uid != uid; /* book() took a uid: the ledger holds the pod */
    at->uid = uid;
    return true;
}

void
gx_sim_unplace(struct gx_sim_state *r, const struct gx_trace_pod *p, const struct gx_sim_placed *at)
{
    struct gx_sim_node *s = &r->nodes[at->node];
    struct gx_ksched_res q = gx_sim_ks_request(r, p);
    int milli = gx_sim_is_share(p) ? p->gpu_milli : GX_FGD_CARD;
    char uid[32];

    gx_ksched_remove(&s->ks, &q);
    for (int j = 0; j < at->n_cards; j++) {
        int c = at->cards[j], before = s->free[c];
        s->booked[c] -= milli;
        s->free[c] = s->booked[c] >= GX_FGD_CARD ? 0 : (int)(GX_FGD_CARD - s->booked[c]);
        r->allocated -= s->free[c] - before;
        if (r->o->mode == GX_SIM_COUNT_ONLY) {
            s->replicas[c] -= gx_sim_is_share(p) ? 1 : 1000; /* as plugin_cards counted it */
        }
    }
    if (at->booked) {
        (void)snprintf(uid, sizeof(uid), "u%llu", (unsigned long long)at->uid);
        if (gx_ledger_release(r->ledger, uid) == 0) {
            r->ledger_errs++;
        }
    }
    if (at->untracked) {
        s->other_cpu -= p->cpu_milli;
        s->other_mem -= p->memory_mib;
        if (gx_ledger_set_untracked(r->ledger, s->node->name, s->other_cpu, s->other_mem) !=
            GX_OK) {
            r->ledger_errs++;
        }
    }
}
