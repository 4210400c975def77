/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strmap.h - open-addressing hash map from a byte-string key to a pointer.
 * Keys are borrowed: the caller keeps them alive as long as the map (they
 * usually live in the same arena). Values are borrowed too.
 */
#ifndef GX_STRMAP_H
#define GX_STRMAP_H

#include "gx/common.h"

struct gx_strmap_slot {
    const char *key;
    size_t klen;
    uint64_t hash;
    void *value;
};

struct gx_strmap {
    struct gx_strmap_slot *slots;
    size_t cap; /* power of two, 0 when empty */
    size_t count;
};

/** Initialize an empty map. Cannot fail. */
void gx_strmap_init(struct gx_strmap *m);

/** Free the slot table (not keys or values). */
void gx_strmap_release(struct gx_strmap *m);

/** Insert or replace @key -> @value. GX_ENOMEM. */
enum gx_err gx_strmap_put(struct gx_strmap *m, const char *key, size_t klen, void *value) GX_WUR;

/** Remove @key; returns its value or NULL if absent. Cannot fail. */
void *gx_strmap_del(struct gx_strmap *m, const char *key, size_t klen);

/**
 * Iterate: start with *pos = 0; each call returns the next slot's value and
 * sets *key and *klen, or NULL at the end. The map must not change meanwhile.
 */
void *gx_strmap_next(const struct gx_strmap *m, size_t *pos, const char **key, size_t *klen);

/** The value for @key, or NULL. */
void *gx_strmap_get(const struct gx_strmap *m, const char *key, size_t klen);

#endif
