/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases.h - the durable ledger: one coordination.k8s.io/v1 Lease per GPU
 * node in the extender's namespace ("gpu-extender-<node>", label
 * gpu-extender.io/ledger=true) whose annotation gpu-extender.io/tenants
 * holds that node's tenants (gx_ledger_node_encode). Every change is a
 * compare-and-swap: GET the Lease (or start from what this process's own
 * last write left, leases_cas.c), apply the change to the in-memory ledger
 * (which first takes the Lease's tenants as the truth), PUT it back with
 * that resourceVersion (POST when it does not exist); 409 Conflict
 * re-reads and retries, a bounded number of times and within a deadline.
 * No time-based locks: any number of replicas can write.
 *
 * Also lists, then watches, the Leases into the in-memory ledger (kube's
 * stream rules; a relist every ledger.sync_interval_s as resync), so
 * filter and prioritize see another replica's booking milliseconds after
 * its write.
 */
#ifndef GX_LEASES_H
#define GX_LEASES_H

#include "config.h"
#include "kube.h"
#include "ledger.h"

struct event_base;
struct gx_leases;

/**
 * Apply a change to node @node in @l, which holds the Lease's current
 * tenants. Set *write to false when nothing needs writing. A non-OK return
 * aborts the update with that code and @why.
 */
typedef enum gx_err (*gx_leases_mutate_cb)(void *ctx, struct gx_ledger *l, const char *node,
                                           bool *write, struct gx_why *why);

/** The end of an update: GX_OK once written (or nothing to write). */
typedef void (*gx_leases_done_cb)(void *ctx, enum gx_err rc, const char *why);

/**
 * Keep @ledger (borrowed) in step with the Leases through @kube (borrowed).
 * NULL on ENOMEM.
 */
struct gx_leases *gx_leases_new(struct event_base *base, struct gx_kube *kube,
                                const struct gx_config *cfg, struct gx_ledger *ledger,
                                struct gx_upstats *st);

/** Cancel every update (no callbacks) and free; NULL is a no-op. */
void gx_leases_free(struct gx_leases *ls);

/** Use a new config. */
void gx_leases_set_config(struct gx_leases *ls, const struct gx_config *cfg);

/** True after the first complete list of the Leases (the watch's first list). */
bool gx_leases_synced(const struct gx_leases *ls);

/**
 * Compare-and-swap node @node's Lease: @mutate runs on every attempt;
 * @done is called once, before @deadline_ms (monotonic) at the latest.
 * Returns false if the update could not start (then @done is not called).
 */
bool gx_leases_update(struct gx_leases *ls, const char *node, int64_t deadline_ms,
                      gx_leases_mutate_cb mutate, gx_leases_done_cb done, void *ctx);

/**
 * gx_leases_update, deferred: the update starts no round of its own for
 * @delay_ms, but goes with any round of @node that starts before. Writes
 * nobody waits for (a tenant marked bound) so share one compare-and-swap
 * with the binds that follow them on the node.
 */
bool gx_leases_update_after(struct gx_leases *ls, const char *node, int64_t delay_ms,
                            int64_t deadline_ms, gx_leases_mutate_cb mutate, gx_leases_done_cb done,
                            void *ctx);

/**
 * Move up to @max suspect nodes into @out: nodes whose Lease may still book
 * a pod that another Lease books too (the cache holds a pod on one node
 * only). The reconciler reconciles their Leases. Returns the count.
 */
size_t gx_leases_take_suspects(struct gx_leases *ls, char (*out)[256], size_t max);

/**
 * Show the booking pod @uid has in the cache on @node (the caller just made
 * it there) to every decision until gx_leases_unhold, across the Lease
 * writes and watch events that replace the node's tenants in the cache: a
 * bind in flight, so the filters of the pods kube-scheduler schedules while
 * it binds this one see its cards. A hold is never written to a Lease.
 */
void gx_leases_hold(struct gx_leases *ls, const char *node, const char *uid);

/**
 * Stop showing @uid's hold. Unless @booked (the bind's own Lease write holds
 * the pod now, and the cache with it), the booking it showed leaves the cache.
 */
void gx_leases_unhold(struct gx_leases *ls, const char *uid, bool booked);

/** Holds shown now: one per bind in flight at most. */
size_t gx_leases_holds(const struct gx_leases *ls);

/** Lease name of @node into @out (size @n): "gpu-extender-<node>", hashed when too long. */
void gx_leases_name(const char *node, char *out, size_t n);

#endif
