/* SPDX-License-Identifier: Apache-2.0 */
/*
 * arena.h - a bump allocator for objects that live and die together (a
 * snapshot, a decoded request). Everything allocated from an arena is freed
 * by one gx_arena_release(); nothing is freed individually.
 */
#ifndef GX_ARENA_H
#define GX_ARENA_H

#include "common.h"

struct gx_arena_chunk;

struct gx_arena {
    struct gx_arena_chunk *head;
    size_t chunk_size;
    size_t total; /* bytes handed out, for memory accounting */
};

/** Initialize an empty arena whose chunks are @chunk_size bytes (0: 64 KiB). */
void gx_arena_init(struct gx_arena *a, size_t chunk_size);

/** Free every chunk; the arena is empty and reusable afterwards. */
void gx_arena_release(struct gx_arena *a);

/** @n zeroed bytes aligned for any type; NULL on ENOMEM. */
void *gx_arena_alloc(struct gx_arena *a, size_t n);

/** Copy @len bytes of @s as a NUL-terminated string; NULL on ENOMEM. */
char *gx_arena_strndup(struct gx_arena *a, const char *s, size_t len);

/** Copy a NUL-terminated string (NULL stays NULL). */
char *gx_arena_strdup(struct gx_arena *a, const char *s);

#endif
