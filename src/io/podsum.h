/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podsum.h - CPU and memory that pods the extender does not manage take on
 * each node, as kube-scheduler counts them, from a list+watch of every pod
 * bound to a node and not finished (field selector spec.nodeName!=,
 * status.phase!=Succeeded,status.phase!=Failed). A pod counts while it
 * is bound, not Succeeded or Failed (a terminating pod still counts, as in
 * kube-scheduler's cache), carries no managed label ("<label>=true") and is
 * no ledger tenant. Per pod only what a delete needs is kept (uid -> node,
 * CPU, memory); the per-node sums go to the ledger as its untracked amounts
 * (gx_ledger_set_untracked), which the fgd placement reads.
 *
 * The store is pure; gx_podsum_watch starts the watch through kube.
 * Loop thread only.
 */
#ifndef GX_PODSUM_H
#define GX_PODSUM_H

#include "kobj.h"
#include "ledger.h"

struct gx_kube;
struct gx_podsum;

/** Hooks of the store's owner; any may be NULL. */
struct gx_podsum_cbs {
    /** True when @uid is a ledger tenant (counted by the ledger already). */
    bool (*is_tenant)(void *ctx, const char *uid);
    /** A node's sum changed: gx_podsum_apply has work. */
    void (*changed)(void *ctx);
};

/** New empty store skipping pods with @managed_label=true; NULL on ENOMEM. @cbs copied. */
struct gx_podsum *gx_podsum_new(const char *managed_label, const struct gx_podsum_cbs *cbs,
                                void *ctx);

/** Stop the watch and free; NULL is a no-op. */
void gx_podsum_free(struct gx_podsum *p);

/** A new managed label (config reload): relists when it changed. GX_ENOMEM. */
enum gx_err gx_podsum_set_label(struct gx_podsum *p, const char *managed_label) GX_WUR;

/** Watch all bound pods through @k (borrowed; gx_podsum_free before gx_kube_free). GX_ENOMEM. */
enum gx_err gx_podsum_watch(struct gx_podsum *p, struct gx_kube *k) GX_WUR;

/**
 * Replace every pod with @pods[0..n) (a list). GX_ENOMEM leaves a partial
 * view (the watch relists).
 */
enum gx_err gx_podsum_set(struct gx_podsum *p, const struct gx_pod *pods, size_t n) GX_WUR;

/** Add, replace (@deleted false) or remove one pod. GX_ENOMEM. */
enum gx_err gx_podsum_put(struct gx_podsum *p, const struct gx_pod *pod, bool deleted) GX_WUR;

/** Sums of @node (false and zeros when no counted pod is on it). Memory in bytes. */
bool gx_podsum_node(const struct gx_podsum *p, const char *node, int64_t *cpu_milli,
                    int64_t *mem_bytes);

/** What is counted, all nodes: pods, CPU milli, memory bytes (zeros for NULL). */
void gx_podsum_totals(const struct gx_podsum *p, size_t *pods, int64_t *cpu_milli,
                      int64_t *mem_bytes);

/**
 * Give the ledger the sums of every node changed since the last call
 * (memory in MiB, rounded up). A node whose ledger update fails stays
 * pending. GX_ENOMEM when one did.
 */
enum gx_err gx_podsum_apply(struct gx_podsum *p, struct gx_ledger *l) GX_WUR;

/** True once a list arrived, or the server refused to list pods (403). */
bool gx_podsum_synced(const struct gx_podsum *p);

#endif
