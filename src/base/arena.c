/* SPDX-License-Identifier: Apache-2.0 */
/* arena.c - chunked bump allocator. */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

struct gx_arena_chunk {
    struct gx_arena_chunk *next;
    size_t used;
    size_t size;
    _Alignas(16) unsigned char data[];
};

void
gx_arena_init(struct gx_arena *a, size_t chunk_size)
{
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : (size_t)64 * 1024;
    a->total = 0;
}

void
gx_arena_release(struct gx_arena *a)
{
    struct gx_arena_chunk *c = a->head, *next;

    while (c != NULL) {
        next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void *
gx_arena_alloc(struct gx_arena *a, size_t n)
{
    struct gx_arena_chunk *c = a->head;
    size_t need = (n + 15) & ~(size_t)15;
    void *p;

    if (need < n) {
        return NULL;
    }
    if (c == NULL || c->size - c->used < need) {
        size_t size = need > a->chunk_size ? need : a->chunk_size;
        c = malloc(sizeof(*c) + size);
        if (c == NULL) {
            return NULL;
        }
        c->size = size;
        c->used = 0;
        /* A big one-off block goes behind the head so the head keeps its room. */
        if (a->head != NULL && size > a->chunk_size) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    p = c->data + c->used;
    c->used += need;
    a->total += need;
    memset(p, 0, n);
    return p;
}

char *
gx_arena_strndup(struct gx_arena *a, const char *s, size_t len)
{
    char *p = gx_arena_alloc(a, len + 1);

    if (p == NULL) {
        return NULL;
    }
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *
gx_arena_strdup(struct gx_arena *a, const char *s)
{
    return s == NULL ? NULL : gx_arena_strndup(a, s, strlen(s));
}
