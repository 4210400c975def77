/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nameidx.h - a compact index from names to their positions 0..n-1, built
 * once and then only read (a snapshot's node names). It keeps its own copy
 * of the names in one block and 8 bytes a slot, so the index of 5,000 node
 * names is about 250 kB and stays in the caches, where a map of pointers
 * to names spread over an arena missed twice a lookup.
 */
#ifndef GX_NAMEIDX_H
#define GX_NAMEIDX_H

#include "common.h"

#define GX_NAMEIDX_NONE UINT32_MAX

struct gx_nameidx {
    uint64_t *slots; /* hash tag << 32 | (position + 1); 0 = empty */
    size_t cap;      /* power of two, at least twice n */
    uint32_t *off;   /* per position: its name's offset in text (n + 1 entries) */
    char *text;      /* the names, each followed by '\0', by position */
    size_t n, max, text_len, text_cap;
};

/** One name of gx_nameidx_find_many: the caller sets name and len. */
struct gx_nameidx_probe {
    const char *name;
    size_t len;
    uint64_t hash; /* scratch */
};

/** An empty index with room for @max names (at most UINT32_MAX - 1). GX_ENOMEM. */
enum gx_err gx_nameidx_init(struct gx_nameidx *x, size_t max) GX_WUR;

/** Free its memory; the index is empty and unusable until gx_nameidx_init. */
void gx_nameidx_release(struct gx_nameidx *x);

/**
 * Give @name the next position. A name added before moves to the new
 * position (the last one wins). GX_ENOMEM; GX_ETOOBIG past max.
 */
enum gx_err gx_nameidx_add(struct gx_nameidx *x, const char *name, size_t len) GX_WUR;

/** The position of @name, or GX_NAMEIDX_NONE. */
uint32_t gx_nameidx_find(const struct gx_nameidx *x, const char *name, size_t len);

/*
 * gx_nameidx_find for each of @n names (out[i] for p[i]), their slots
 * fetched ahead so the memory misses overlap.
 */
void gx_nameidx_find_many(const struct gx_nameidx *x, struct gx_nameidx_probe *p, size_t n,
                          uint32_t *out);

#endif
