/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pdb.h - PodDisruptionBudgets for the preempt verb: which pods a budget
 * selects, how many violations evicting a set of pods causes, and the store
 * of the watched budgets (policy/v1, every namespace). Read exactly as
 * kube-scheduler's DefaultPreemption reads them (v1.37.2
 * pkg/scheduler/framework/preemption/util.go FilterVictimsWithPDBViolation),
 * so the extender's NumPDBViolations means what the scheduler's does:
 *   - a budget selects pods of its own namespace only; a missing or empty
 *     selector, or one with an invalid requirement, selects nothing; a pod
 *     without labels is selected by none;
 *   - victims are taken in order; each selected victim not already in the
 *     budget's status.disruptedPods uses one of status.disruptionsAllowed,
 *     and a victim that takes any budget below zero is a violation.
 * Pure: no I/O. The watch that feeds the store is sync.c's.
 */
#ifndef GX_PDB_H
#define GX_PDB_H

#include "kobj.h"

/** A pod as the budgets see it. */
struct gx_pdb_pod {
    const char *namespace, *name;
    const struct gx_kv *labels;
    size_t n_labels;
};

/** True when budget @p selects @pod (see the file header). */
bool gx_pdb_selects(const struct gx_pdb *p, const struct gx_pdb_pod *pod);

/**
 * Victims among @pods[0..n) whose eviction violates one of @pdbs[0..n_pdbs)
 * (see the file header); the budgets are not changed. GX_ENOMEM leaves 0
 * in *out.
 */
enum gx_err gx_pdb_violations(const struct gx_pdb *const *pdbs, size_t n_pdbs,
                              const struct gx_pdb_pod *pods, size_t n, size_t *out) GX_WUR;

/** The watched budgets, by namespace/name (each copied into its own arena). */
struct gx_pdbs;

/** A new empty store, not synced; NULL on ENOMEM. */
struct gx_pdbs *gx_pdbs_new(void);

/** Free; NULL is a no-op. */
void gx_pdbs_free(struct gx_pdbs *s);

/** A (re)list: the store becomes @items[0..n) and is synced. GX_ENOMEM keeps the old set. */
enum gx_err gx_pdbs_set(struct gx_pdbs *s, const struct gx_pdb *items, size_t n) GX_WUR;

/** One watch event: @p added or changed, or removed when @deleted. GX_ENOMEM changes nothing. */
enum gx_err gx_pdbs_put(struct gx_pdbs *s, const struct gx_pdb *p, bool deleted) GX_WUR;

/** Mark the store synced with nothing in it (the API server does not serve or lets us not read
 * PDBs). */
void gx_pdbs_absent(struct gx_pdbs *s);

/** True once a list has been applied (or the resource is absent). */
bool gx_pdbs_synced(const struct gx_pdbs *s);

/** Budgets in the store. */
size_t gx_pdbs_count(const struct gx_pdbs *s);

/** gx_pdb_violations over every budget in @s. */
enum gx_err gx_pdbs_violations(struct gx_pdbs *s, const struct gx_pdb_pod *pods, size_t n,
                               size_t *out) GX_WUR;

#endif
