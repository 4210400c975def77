/* SPDX-License-Identifier: Apache-2.0 */
/*
 * holds.h - the shares held for preemptors while their victims terminate,
 * as pure decisions on a store of holds: which answer records a hold,
 * which pod watch event activates or ends one, and how an active hold
 * turns the verdict of another pod. The time is the caller's monotonic
 * clock, passed in as @now_ms (as libuv's timers take the loop's time):
 * no clock, no I/O, no logging here. The server's shell
 * (preempt_holds.c) keeps the store, reads the clock, logs and counts.
 *
 * A hold is recorded for every node the preempt verb's answer names (the
 * scheduler picks one of them afterwards). It becomes active when the pod
 * watch shows one of its victims marked by the scheduler (condition
 * DisruptionTarget, reason PreemptionByScheduler, patched just before the
 * deletion): that is the node the scheduler chose. A pod deleted for any
 * other reason activates nothing. An active hold books the preemptor's
 * share, by the bind planner's own rule (gx_admit_reserve on a scratch
 * copy), in the ledger view filter uses for every other pod, until the
 * preemptor holds GPUs in the ledger itself (its bind reserved them), the
 * watch shows it bound or gone, or its time to live passes.
 *
 * Thread: the caller's; a store is not shared between threads.
 */
#ifndef GX_HOLDS_H
#define GX_HOLDS_H

#include "kobj.h"
#include "preempt.h"
#include "score.h"
#include "vcache.h"

/** Holds one store keeps; when full, a new one replaces the inactive hold expiring first. */
#define GX_HOLDS_MAX 128
/** Victims one hold remembers (the first ones of the answer). */
#define GX_HOLD_VICTIMS 16

struct gx_holds;

/** An empty store, or NULL out of memory. You own it: gx_holds_free. */
struct gx_holds *gx_holds_new(void);

/** Free @hs and every hold in it. NULL is a no-op. */
void gx_holds_free(struct gx_holds *hs);

/**
 * Record an inactive hold for @pod (its request @req) on node @node with
 * the victims of @c, expiring at @now_ms + @ttl_ms; it replaces the pod's
 * hold on that node. Expired holds met on the way are dropped. Everything
 * is copied. GX_ETOOBIG when every slot keeps an active hold (nothing is
 * recorded then).
 */
enum gx_err gx_holds_put(struct gx_holds *hs, const struct gx_pod *pod, const struct gx_podreq *req,
                         const char *node, const struct gx_preempt_choice *c, int64_t ttl_ms,
                         int64_t now_ms) GX_WUR;

/** Where gx_holds_pod_event activated a hold: borrowed from the store until it next changes. */
struct gx_hold_info {
    const char *node;
    const char *ns;
    const char *name; /* the preemptor */
};

/**
 * A managed-pod watch event for @pod, @gone when it is deleted, finished
 * or being deleted. A preemptor bound (spec.nodeName set) or gone ends its
 * holds. A victim the scheduler marked preempted activates the hold of the
 * latest answer naming it (expiring at @now_ms + @ttl_ms now) and drops
 * the preemptor's other inactive holds and the older answers naming that
 * victim: true then, with the hold described in @activated. False when
 * nothing was activated (@activated untouched). NULL @hs: no holds, false.
 */
bool gx_holds_pod_event(struct gx_holds *hs, const struct gx_pod *pod, bool gone, int64_t ttl_ms,
                        int64_t now_ms, struct gx_hold_info *activated);

/**
 * True when preemptor @uid holds an active, unexpired share on @node at
 * @now_ms: its victims there are being deleted. NULL @hs: false.
 */
bool gx_holds_under_way(const struct gx_holds *hs, const char *uid, const char *node,
                        int64_t now_ms);

/** True when some hold is active (gx_holds_verdict can decide anything). NULL @hs: false. */
bool gx_holds_any(const struct gx_holds *hs);

/** What gx_holds_verdict decided. */
enum gx_hold_outcome {
    GX_HOLD_NONE,    /* no hold of another pod applies: decide as usual, the verdict untouched */
    GX_HOLD_DECIDED, /* the verdict was decided with the active holds booked */
    GX_HOLD_TURNED   /* so decided, a rejection the node would not give without the holds */
};

/**
 * When active holds of pods other than @pod sit on node @node, decide
 * @pod (@req) there with them booked on a scratch copy of @ctx's ledger
 * entry of the node, into @v. Holds of the node found expired at @now_ms,
 * or whose preemptor the ledger already books, are dropped on the way.
 * With no active hold at all it returns at once (filter calls it for every
 * node); a node the snapshot does not have, or no memory for the scratch
 * ledger: GX_HOLD_NONE. NULL @hs: no holds.
 */
enum gx_hold_outcome gx_holds_verdict(struct gx_holds *hs, const struct gx_decide_ctx *ctx,
                                      const struct gx_pod *pod, const struct gx_podreq *req,
                                      const char *node, int64_t now_ms, struct gx_vshort *v);

#endif
