/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gang_filter.h - the shell of the gang members' tentative bookings: the
 * store in struct gx_app (app->gang, created on first use), the time to
 * live from gang.hold_ms, the log lines and the counters. What an entry is
 * and what it decides is gang.h's (pure). Entries live in this replica's
 * memory only: the Service pins a scheduler's calls to one replica
 * (sessionAffinity: ClientIP), and after a restart a member's bind is
 * admitted as any other pod's.
 */
#ifndef GX_GANG_FILTER_H
#define GX_GANG_FILTER_H

#include "extender.h"
#include "gang.h"
#include "service.h"
#include "vcache.h"

/** What one filter or prioritize call asks of the entries, settled once per call. */
struct gx_gang_call {
    bool member; /* a gang member asking GPUs (filter only): it is pinned to one node */
    bool any;    /* entries exist: every node goes through gx_gang_node_verdict */
    char key[GX_GANG_KEY_MAX];
    int64_t now_ms; /* gx_mono_ms() at the call */
};

/**
 * Settle @gc for a call about @pod (@req; @bad: a request the extender
 * cannot honour, nothing gang applies). A @filter of a member starts a new
 * pass over its group when it already holds an entry (gx_gang_begin).
 */
void gx_gang_call_begin(struct gx_app *app, const struct gx_pod *pod, const struct gx_podreq *req,
                        bool bad, bool filter, struct gx_gang_call *gc);

/**
 * With entries of other pods on @node, decide @pod (@req) there with them
 * booked into @v (true); false, nothing written, when none applies.
 */
bool gx_gang_node_verdict(struct gx_app *app, const struct gx_gang_call *gc,
                          const struct gx_decide_ctx *ctx, const struct gx_pod *pod,
                          const struct gx_podreq *req, const char *node, struct gx_vshort *v);

/**
 * For a member: keep only the best of the @n verdicts @v of @nodes (the
 * node @held, where the pod already holds a booking, when it is kept; NULL:
 * none), reject the other feasible ones (gx_gang_pin) and record the
 * member's entry on the kept node. A member that fits nowhere keeps its
 * rejections and records nothing; one whose entry cannot be recorded keeps
 * every verdict.
 */
void gx_gang_filter_pin(struct gx_app *app, const struct gx_gang_call *gc,
                        const struct gx_decide_ctx *ctx, const struct gx_pod *pod,
                        const struct gx_podreq *req, const struct gx_ext_node *nodes,
                        struct gx_vshort *v, size_t n, const char *held);

/** The tenants pod @uid's entry plans on @node into @t (gx_gang_planned): how many, 0 none. */
size_t gx_gang_bind_plan(struct gx_app *app, const char *uid, const char *node,
                         struct gx_tenant *t);

/** Pod @uid's own booking is written: its entry goes. */
void gx_gang_booked(struct gx_app *app, const char *uid);

/** Entries held now, for /metrics. */
size_t gx_gang_held(const struct gx_app *app);

/** Free the store (app teardown). */
void gx_gang_store_free(struct gx_app *app);

#endif
