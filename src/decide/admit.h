/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admit.h - bind planning and reconcile verdicts: what bind books in the
 * ledger for a pod on a node, what it writes on the pod, and what the
 * reconciler does with a tenant given what the pod watch showed. Pure
 * functions of config x snapshot x ledger x pod x the time passed in; no
 * I/O. The shell (bind.c, reconcile.c) carries the results to the API
 * server.
 */
#ifndef GX_ADMIT_H
#define GX_ADMIT_H

#include "ledger.h"
#include "score.h"

/** The outcome of planning a bind of one pod to one node. */
struct gx_admit_plan {
    bool changed;           /* the ledger was changed: a new reservation */
    bool renewed;           /* the ledger was changed: the pod's booking here got a new stamp */
    int64_t booking;        /* stamp of the pod's booking (its release undoes this one only) */
    int cards[GX_MAX_PICK]; /* card indexes the pod holds on the node */
    int n_cards;            /* 0 when the device plugin picks the card */
};

/** The pod a bind is for. */
struct gx_admit_pod {
    const char *uid, *ns, *name;
    const struct gx_podreq *req;
};

/**
 * Decide @pod on @node against @ctx (whose ledger is ignored) and book it
 * in @l, the truth for that node, at @ctx->now_ms. Already there: the
 * booking is renewed (gx_ledger_renew, a retried bind takes it over) and
 * @out names its cards. Cannot fit, or the pod holds GPUs on
 * another node: GX_ECONFLICT with the user-facing reason in @why.
 */
enum gx_err gx_admit_reserve(const struct gx_decide_ctx *ctx, struct gx_ledger *l, const char *node,
                             const struct gx_admit_pod *pod, struct gx_admit_plan *out,
                             struct gx_why *why) GX_WUR;

/**
 * As gx_admit_reserve, but book exactly the tenants @t[0..n) (uid @pod's,
 * as gx_admit_reserve booked them on another ledger: a gang member's
 * tentative booking, gang.h) instead of choosing cards again; they are
 * stamped @ctx->now_ms. The quota is checked as gx_admit_reserve checks
 * it. GX_ECONFLICT when a planned card has no room left in @l (the caller
 * may then decide anew with gx_admit_reserve), GX_EINVAL for no tenant.
 */
enum gx_err gx_admit_reserve_as(const struct gx_decide_ctx *ctx, struct gx_ledger *l,
                                const char *node, const struct gx_admit_pod *pod,
                                const struct gx_tenant *t, size_t n, struct gx_admit_plan *out,
                                struct gx_why *why) GX_WUR;

/** The slots of each card of snapshot node @sn (NULL: none) into @slots (at most @cap). */
size_t gx_admit_slots(const struct gx_config *cfg, const struct gx_node *sn, int *slots,
                      size_t cap);

/** Annotation values of a bind: comma-joined card UUIDs and indexes. */
struct gx_admit_notes {
    char uuids[2048]; /* a card's index where no dcgm-exporter series named its UUID */
    char index[256];
    char slices[16]; /* time slices of an annotation-driven share, "" for any other pod */
};

/** Fill @out for @plan of a pod asking @req on snapshot node @node (may be NULL). */
void gx_admit_notes(const struct gx_node *node, const struct gx_podreq *req,
                    const struct gx_admit_plan *plan, struct gx_admit_notes *out);

/**
 * The Binding of pod @ns/@name (@uid) to @node that also sets the pod's
 * assignment annotations: the API server applies both in one write, so a
 * bound pod's annotations always name cards of its own node. @notes NULL
 * for a pod holding no cards. GX_ENOMEM.
 */
enum gx_err gx_admit_binding(const struct gx_config *cfg, const char *ns, const char *name,
                             const char *uid, const char *node, const struct gx_admit_notes *notes,
                             struct gx_buf *out) GX_WUR;

/** A managed pod as the pod watch last showed it, or as a direct read found it. */
struct gx_admit_seen {
    const char *node; /* spec.nodeName, "" while pending */
    bool finished;    /* Succeeded, Failed or being deleted */
    bool gone;        /* a direct read found no such pod (404, or another uid under its name) */
    int64_t read_ms;  /* wall ms the direct read started; 0: the watch's view */
};

/*
 * GX_FIX_CONFIRM: the pod is missing from the watch's view, which may lag
 * the API server by seconds under load: read the pod itself, then decide
 * again with what the read found.
 */
enum gx_admit_fix { GX_FIX_NONE, GX_FIX_RELEASE, GX_FIX_BOUND, GX_FIX_CONFIRM };

/** Where a pod's own booking stands, for the filter and the bind of that pod. */
struct gx_admit_held {
    const char *node; /* the node it is booked on (borrowed from the ledger), NULL: none */
    bool in_flight;   /* a Binding to that node may still land (gx_admit_in_flight) */
};

/** Pod @uid's booking in @l at @now_ms (wall ms): one ledger lookup per request. */
void gx_admit_held_of(const struct gx_config *cfg, const struct gx_ledger *l, const char *uid,
                      int64_t now_ms, struct gx_admit_held *out);

/**
 * The filter's verdict on @node for a pod whose booking is @h: GX_REASON_NONE
 * with *keep when the booking is on @node (bind takes it over, whatever the
 * pod's own booking leaves free); GX_REASON_BOOKED_ELSEWHERE when it is on
 * another node and a Binding there may still land; otherwise false (decide
 * as usual: no booking, or one old enough to move).
 */
bool gx_admit_held_verdict(const struct gx_admit_held *h, const char *node, bool *keep,
                           enum gx_reason *reason);

/**
 * True when a booking stamped @booking may still belong to a bind in
 * flight at @now_ms (wall ms): younger than two bind deadlines, so a
 * Binding that timed out may yet be applied. Such a booking is neither
 * settled by the reconciler nor moved to another node by a retried bind.
 */
bool gx_admit_in_flight(const struct gx_config *cfg, int64_t booking, int64_t now_ms);

/**
 * What the reconciler does with tenant @t of @node at @now_ms, given the
 * pod the watch shows (@seen NULL: not among the managed pods) or a direct
 * read found. Young tenants may belong to a bind in flight and are left
 * alone unless the pod is finished or bound elsewhere. Absence from the
 * view is never evidence (GX_FIX_CONFIRM); a read counts as evidence only
 * when it started after the booking (a bind deadline of slack for the
 * replicas' clocks): a booking is never released on the strength of a
 * picture older than itself.
 */
enum gx_admit_fix gx_admit_fix(const struct gx_config *cfg, const char *node,
                               const struct gx_tenant *t, const struct gx_admit_seen *seen,
                               int64_t now_ms);

#endif
