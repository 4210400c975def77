/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt.h - victim choice for the extender's preempt verb: on one
 * candidate node, the cheapest set of lower-priority ledger tenants whose
 * removal makes the preemptor fit by the rules filter applies. Fit is
 * never judged here: every candidate set is tried with gx_score_node on a
 * scratch copy of the node's ledger entry without the set (and the node's
 * measured load projected without it), so filter and preemption share one
 * rule. Pure: no I/O; time comes in through the decide context.
 *
 * Where victims may come from:
 *   shared request the extender places: tenants of ONE card;
 *   exclusive request on a node without time-slicing: whole cards, as few
 *     as possible (every tenant of a card goes);
 *   requests the device plugin places (cards unknown to us): any tenants of
 *     the node.
 * Cheapest, in this order: fewer known PDB violations, lower highest victim
 * priority, fewer pods, lower priority sum, younger oldest victim, lower
 * card index. A tenant whose priority is unknown or not lower than the
 * preemptor's is never a victim.
 */
#ifndef GX_PREEMPT_H
#define GX_PREEMPT_H

#include "ledger.h"
#include "podreq.h"
#include "score.h"

/* Most victims one node's answer carries (tenants of one node beyond this are not victims). */
#define GX_PREEMPT_MAX_VICTIMS 64

/** Why a candidate node is left out of the answer. */
enum gx_preempt_drop {
    GX_PDROP_NONE,
    GX_PDROP_UNRESOLVABLE, /* the verdict's reason is one no eviction changes (see .reason) */
    GX_PDROP_NO_VICTIMS,   /* no set of lower-priority pods on one card (or whole cards) fits */
    GX_PDROP_FITS,         /* fits without GPU victims and the scheduler named none */
    GX_PDROP_BAD_REQUEST,  /* the preemptor's GPU request cannot be honoured */
    GX_PDROP_UNKNOWN_NODE, /* not in the snapshot */
    GX_PDROP_QUOTA,        /* the namespace's GPU quota still refuses it after the eviction */
    GX_PDROP_UNDER_WAY,    /* its victims there are being deleted: it fits once they are gone */
    GX_PDROP_COUNT
};

/** Snake-case name for metrics labels and logs ("no_victims"). Static. */
const char *gx_preempt_drop_name(enum gx_preempt_drop d);

/** PodDisruptionBudget violations evicting pods @uids[0..n) causes (pdb.h). */
typedef int64_t (*gx_preempt_pdb_fn)(void *arg, const char *const *uids, size_t n);

/** What the preempt call says about one candidate node. */
struct gx_preempt_input {
    const struct gx_decide_ctx *ctx; /* ctx->ledger: the ledger view filter reads */
    const struct gx_podreq *req;     /* the preemptor's classified request */
    int32_t priority;                /* the preemptor's spec.priority */
    const struct gx_node *node;      /* snapshot node, NULL when unknown */
    /* Priority of pod @uid; false when unknown (then it is never a victim). */
    bool (*priority_of)(void *arg, const char *uid, int32_t *prio);
    void *arg;
    const char *const *sched; /* UIDs of the scheduler's own victims on this node */
    size_t n_sched;
    int64_t sched_pdb; /* their NumPDBViolations */
    /*
     * PodDisruptionBudget violations evicting pods @uids[0..n) causes (pdb.h),
     * with @arg; NULL when the budgets are not known (then only the
     * scheduler's count is: see gx_preempt_pdb_risk).
     */
    gx_preempt_pdb_fn pdb_count;
};

/** The choice for one node. */
struct gx_preempt_choice {
    bool keep;                 /* answer the node */
    bool unchanged;            /* fits without GPU victims: answer the scheduler's set as is */
    enum gx_preempt_drop drop; /* when !keep */
    enum gx_reason reason;     /* GX_PDROP_UNRESOLVABLE / NO_VICTIMS: the verdict before eviction */
    char victims[GX_PREEMPT_MAX_VICTIMS][GX_UID_MAX]; /* managed victims chosen */
    size_t n_victims;
    int cards[GX_MAX_PICK]; /* cards for the preemptor; none when the device plugin picks */
    int n_cards;
    int64_t pdb;          /* known PDB violations of the set */
    int32_t max_priority; /* highest victim priority */
};

/**
 * Choose for one node. Fills @out on GX_OK (a node with no set is GX_OK
 * with out->keep false). GX_ENOMEM (scratch copies), GX_EINVAL for a NULL
 * argument.
 */
enum gx_err gx_preempt_choose(const struct gx_preempt_input *in,
                              struct gx_preempt_choice *out) GX_WUR;

/**
 * Without pdb_count: true when pod @uid is one of @in's scheduler victims
 * that may violate a PodDisruptionBudget as far as anyone told us: the
 * scheduler counted violations for its set (sched_pdb > 0) and @uid is in
 * it; other pods count as no violation.
 */
bool gx_preempt_pdb_risk(const struct gx_preempt_input *in, const char *uid);

#endif
