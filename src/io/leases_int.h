/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases_int.h - what the three files of the leases module share: the state
 * (struct gx_leases), the Lease codec and the cache (leases_cache.c), and
 * the rounds' hooks for the watch (leases_cas.c). Included by the module's
 * own files and tests/test_leases.c only. The calls go one way:
 * leases.c -> leases_cas.c -> leases_cache.c.
 */
#ifndef GX_LEASES_INT_H
#define GX_LEASES_INT_H

#include <sys/queue.h>

#include "kobj.h"
#include "leases.h"

#define GX_LEASE_LABEL "gpu-extender.io/ledger"
#define GX_LEASE_TENANTS "gpu-extender.io/tenants"
#define GX_LEASE_NODE "gpu-extender.io/node"
#define GX_LEASE_NAME_MAX 253

struct gx_lease_q;

struct gx_leases {
    struct event_base *base;
    struct gx_kube *kube;
    const struct gx_config *cfg;
    struct gx_ledger *ledger;
    struct gx_upstats *st;
    LIST_HEAD(gx_lease_qs, gx_lease_q) queues; /* one per node with updates (leases_cas.c) */
    struct event *sync_timer;
    int sync_s; /* ledger.sync_interval_s of the config in use */
    struct gx_kube_watch *watch;
    bool synced;
    uint64_t rng;
    char suspects[64][256]; /* nodes whose Lease may book a pod the cache places elsewhere */
    size_t n_suspects;
    struct gx_lease_hold *holds; /* binds in flight shown in the cache (gx_leases_hold) */
    size_t n_holds, cap_holds;
};

/**
 * The ledger's view of a decoded Lease: its resourceVersion into @rv
 * (@rvlen), the tenants of its annotation as a heap array (*t, *n; you own
 * *t, NULL when it has none) and, when @node is not NULL, the node it
 * books (borrowed from @lease, NULL when the annotation is missing).
 * GX_EPARSE with @why when the resourceVersion is missing or too long or
 * the tenants do not decode; nothing is written then.
 */
enum gx_err gx_leases_decode(const struct gx_lease *lease, char *rv, size_t rvlen,
                             struct gx_tenant **t, size_t *n, const char **node,
                             struct gx_why *why) GX_WUR;

/** gx_leases_decode of a Lease's JSON text (the node is not returned). */
enum gx_err gx_leases_decode_json(const struct gx_leases *ls, const char *body, size_t len,
                                  char *rv, size_t rvlen, struct gx_tenant **t, size_t *n,
                                  struct gx_why *why) GX_WUR;

/**
 * Append the Lease object @name in @namespace for @node with the tenants of
 * @e (NULL: none) to @out; @rv (NULL: a new Lease) is the resourceVersion
 * the write is conditional on. Every string is JSON-escaped. GX_ETOOBIG
 * past the caps of @out or of the annotation.
 */
enum gx_err gx_leases_encode(const char *name, const char *namespace, const char *node,
                             const char *rv, const struct gx_ledger_node *e,
                             struct gx_buf *out) GX_WUR;

/** The cap of a Lease body, bytes. */
#define GX_LEASE_BODY_CAP ((size_t)4 << 20)

/**
 * Make the cache hold tenants @t (@n, borrowed) for @node at resourceVersion
 * @rv (NULL: no Lease): the one way the cache takes a Lease's truth. The
 * holds of binds in flight on @node are shown on top (gx_leases_hold).
 */
void gx_leases_cache_set(struct gx_leases *ls, const char *node, const struct gx_tenant *t,
                         size_t n, const char *rv);

/** gx_leases_cache_set without the holds: the truth a round's mutates start from. */
void gx_leases_cache_truth(struct gx_leases *ls, const char *node, const struct gx_tenant *t,
                           size_t n, const char *rv);

/** Show the holds of binds in flight on @node again, on top of what the cache holds. */
void gx_leases_show_holds(struct gx_leases *ls, const char *node);

/** Free the holds (the module is freed). */
void gx_leases_holds_free(struct gx_leases *ls);

/** Copy the cache's tenants of @node into a heap array (*t NULL when none; you own it). */
enum gx_err gx_leases_cache_copy(const struct gx_ledger *l, const char *node, struct gx_tenant **t,
                                 size_t *n) GX_WUR;

/**
 * True while a round of @node's updates is in flight: its own result will
 * refresh the cache, and when the watch shows version @rv (NULL: unknown)
 * newer than the round's, the next round reads the Lease again (the write
 * may postdate the round's picture). Deferred updates that wait for their
 * time do not count: no round works on the cache.
 */
bool gx_leases_busy(struct gx_leases *ls, const char *node, const char *rv);

/** Drop every queued and running update without calling back (the module is freed). */
void gx_leases_cancel_all(struct gx_leases *ls);

#endif
