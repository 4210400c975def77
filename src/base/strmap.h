/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strmap.h - open-addressing hash map from a byte-string key to a pointer.
 * Keys are borrowed: the caller keeps them alive as long as the map (they
 * usually live in the same arena). Values are borrowed too.
 */
#ifndef GX_STRMAP_H
#define GX_STRMAP_H

#include "arena.h"
#include "common.h"

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

/** Make room for @extra more keys: the next @extra puts cannot fail. GX_ENOMEM. */
enum gx_err gx_strmap_reserve(struct gx_strmap *m, size_t extra) GX_WUR;

/** Remove @key; returns its value or NULL if absent. Cannot fail. */
void *gx_strmap_del(struct gx_strmap *m, const char *key, size_t klen);

/**
 * Iterate: start with *pos = 0; each call returns the next slot's value and
 * sets *key and *klen, or NULL at the end. The map must not change meanwhile.
 */
void *gx_strmap_next(const struct gx_strmap *m, size_t *pos, const char **key, size_t *klen);

/** The value for @key, or NULL. */
void *gx_strmap_get(const struct gx_strmap *m, const char *key, size_t klen);

/*
 * One copy per distinct string in @a, for strings that repeat across many
 * objects (label keys and values, namespaces). Strings longer than
 * @max_len (0: no limit) are copied unshared; so is everything once the map
 * cannot grow, which costs memory but not correctness.
 */
struct gx_interner {
    struct gx_strmap map;
    struct gx_arena *a;
    size_t max_len;
    bool full;
};

/** Start an interner over arena @a (borrowed). */
void gx_intern_init(struct gx_interner *in, struct gx_arena *a, size_t max_len);

/** The shared copy of @s[0..len), made on first use; NULL on ENOMEM. */
const char *gx_intern(struct gx_interner *in, const char *s, size_t len);

/** Free the map (the copies stay in the arena). */
void gx_intern_release(struct gx_interner *in);

#endif
