/* SPDX-License-Identifier: Apache-2.0 */
/* nameidx.c - see nameidx.h. Linear probing, load factor <= 1/2. */
#include "nameidx.h"

#include <stdlib.h>
#include <string.h>

enum gx_err
gx_nameidx_init(struct gx_nameidx *x, size_t max)
{
    size_t cap = 16;

    memset(x, 0, sizeof(*x));
    if (max >= UINT32_MAX - 1) {
        return GX_ETOOBIG;
    }
    while (cap < 2 * max) {
        cap *= 2;
    }
    x->slots = calloc(cap, sizeof(*x->slots));
    x->off = calloc(max + 1, sizeof(*x->off));
    if (x->slots == NULL || x->off == NULL) {
        gx_nameidx_release(x);
        return GX_ENOMEM;
    }
    x->cap = cap;
    x->max = max;
    return GX_OK;
}

void
gx_nameidx_release(struct gx_nameidx *x)
{
    free(x->slots);
    free(x->off);
    free(x->text);
    memset(x, 0, sizeof(*x));
}

static const char *
name_at(const struct gx_nameidx *x, uint32_t pos, size_t *len)
{
    *len = x->off[pos + 1] - x->off[pos] - 1;
    return x->text + x->off[pos];
}

/* The slot holding @name (hash @h), or the empty slot where it would go. */
static uint64_t *
find_slot(const struct gx_nameidx *x, const char *name, size_t len, uint64_t h)
{
    uint64_t tag = h >> 32;

    for (size_t i = (size_t)h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
        uint64_t s = x->slots[i];
        size_t have;
        const char *at;
        if (s == 0) {
            return &x->slots[i];
        }
        if (s >> 32 != tag) {
            continue;
        }
        at = name_at(x, (uint32_t)s - 1, &have);
        if (have == len && memcmp(at, name, len) == 0) {
            return &x->slots[i];
        }
    }
}

enum gx_err
gx_nameidx_add(struct gx_nameidx *x, const char *name, size_t len)
{
    uint64_t h = gx_hash_mem(name, len);
    uint64_t *slot;

    if (x->n >= x->max) {
        return GX_ETOOBIG;
    }
    if (x->text_len + len + 1 > x->text_cap || x->text_len + len + 1 > UINT32_MAX) {
        size_t ncap = x->text_cap ? x->text_cap * 2 : 4096;
        char *nt;
        while (ncap < x->text_len + len + 1) {
            ncap *= 2;
        }
        if (ncap > UINT32_MAX || (nt = realloc(x->text, ncap)) == NULL) {
            return GX_ENOMEM;
        }
        x->text = nt;
        x->text_cap = ncap;
    }
    /* the name is copied first: find_slot reads positions through off */
    memcpy(x->text + x->text_len, name, len);
    x->text[x->text_len + len] = '\0';
    x->off[x->n] = (uint32_t)x->text_len;
    x->off[x->n + 1] = (uint32_t)(x->text_len + len + 1);
    slot = find_slot(x, name, len, h);
    *slot = (h >> 32) << 32 | (uint64_t)(x->n + 1);
    x->text_len += len + 1;
    x->n++;
    return GX_OK;
}

uint32_t
gx_nameidx_find(const struct gx_nameidx *x, const char *name, size_t len)
{
    uint64_t s;

    if (x->cap == 0) {
        return GX_NAMEIDX_NONE;
    }
    s = *find_slot(x, name, len, gx_hash_mem(name, len));
    return s != 0 ? (uint32_t)s - 1 : GX_NAMEIDX_NONE;
}

void
gx_nameidx_find_many(const struct gx_nameidx *x, struct gx_nameidx_probe *p, size_t n,
                     uint32_t *out)
{
    if (x->cap == 0) {
        for (size_t i = 0; i < n; i++) {
            out[i] = GX_NAMEIDX_NONE;
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        p[i].hash = gx_hash_mem(p[i].name, p[i].len);
        __builtin_prefetch(&x->slots[p[i].hash & (x->cap - 1)]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t s = *find_slot(x, p[i].name, p[i].len, p[i].hash);
        out[i] = s != 0 ? (uint32_t)s - 1 : GX_NAMEIDX_NONE;
    }
}
