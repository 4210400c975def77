/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.h - the objects of one watched collection, by key: replaced whole by
 * a list, changed one at a time by watch events, synced once the first list
 * was applied. The one container behind every such store (kube's nodes, the
 * DRA slices and claims, the PodDisruptionBudgets, reconcile's managed pods),
 * so that "a list replaces everything or nothing" and "an event replaces one
 * object and frees the one before" are written once.
 *
 * A container only: no I/O, no decoding, no notion of what a value is. The
 * store owns its values and frees them with the function given to
 * gx_store_init; each value's key must live inside the value (or at least as
 * long as it), since the map borrows it. Loop thread only, not thread-safe.
 */
#ifndef GX_STORE_H
#define GX_STORE_H

#include "common.h"
#include "strmap.h"

struct gx_store {
    struct gx_strmap map; /* key -> value, values owned */
    void (*free_value)(void *value);
    bool synced; /* a list has been applied */
};

/**
 * Start an empty store, not synced, whose values are freed with
 * @free_value (not NULL). Cannot fail.
 */
void gx_store_init(struct gx_store *s, void (*free_value)(void *value));

/** Free every value and the table; init again before any other use. */
void gx_store_release(struct gx_store *s);

/**
 * Add @value under @key (NUL-terminated, borrowed for as long as @value is
 * in the store: it normally points into @value), freeing the value it
 * replaces (putting the value already stored frees nothing). On success
 * the store owns @value. GX_ENOMEM leaves the store unchanged and @value
 * the caller's.
 */
enum gx_err gx_store_put(struct gx_store *s, const char *key, void *value) GX_WUR;

/** Remove and free the value under @key. True when there was one. Cannot fail. */
bool gx_store_del(struct gx_store *s, const char *key);

/** The value under @key, or NULL; borrowed until it is replaced or deleted. */
void *gx_store_get(const struct gx_store *s, const char *key);

/** How many values the store holds. */
size_t gx_store_count(const struct gx_store *s);

/**
 * Iterate: start with *@pos = 0; each call returns the next value, NULL at
 * the end, in no particular order. The store must not change meanwhile.
 */
void *gx_store_next(const struct gx_store *s, size_t *pos);

/**
 * Apply a list: free every value of @s and give it those of @list (built
 * with the same free function), which is left empty and needs no release.
 * @s is synced from now on. Cannot fail: build @list first, so a list that
 * did not fit is never half applied.
 */
void gx_store_replace(struct gx_store *s, struct gx_store *list);

/** True once a list has been applied (gx_store_replace). */
bool gx_store_synced(const struct gx_store *s);

#endif
