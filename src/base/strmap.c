/* SPDX-License-Identifier: Apache-2.0 */
/* strmap.c - linear-probing hash map, load factor <= 1/2. */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

void
gx_strmap_init(struct gx_strmap *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
}

void
gx_strmap_release(struct gx_strmap *m)
{
    free(m->slots);
    gx_strmap_init(m);
}

static struct gx_strmap_slot *
find_slot(struct gx_strmap_slot *slots, size_t cap, const char *key, size_t klen, uint64_t h)
{
    size_t i = (size_t)h & (cap - 1);

    for (;;) {
        struct gx_strmap_slot *s = &slots[i];
        if (s->key == NULL || (s->hash == h && s->klen == klen && memcmp(s->key, key, klen) == 0)) {
            return s;
        }
        i = (i + 1) & (cap - 1);
    }
}

static enum gx_err
grow(struct gx_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    struct gx_strmap_slot *ns = calloc(ncap, sizeof(*ns));

    if (ns == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        struct gx_strmap_slot *o = &m->slots[i];
        if (o->key != NULL) {
            *find_slot(ns, ncap, o->key, o->klen, o->hash) = *o;
        }
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return GX_OK;
}

enum gx_err
gx_strmap_reserve(struct gx_strmap *m, size_t extra)
{
    enum gx_err rc;

    while ((m->count + extra) * 2 > m->cap) {
        if ((rc = grow(m)) != GX_OK) {
            return rc;
        }
    }
    return GX_OK;
}

enum gx_err
gx_strmap_put(struct gx_strmap *m, const char *key, size_t klen, void *value)
{
    uint64_t h = gx_hash_mem(key, klen);
    struct gx_strmap_slot *s;
    enum gx_err rc;

    if ((m->count + 1) * 2 > m->cap && (rc = grow(m)) != GX_OK) {
        return rc;
    }
    s = find_slot(m->slots, m->cap, key, klen, h);
    if (s->key == NULL) {
        s->key = key;
        s->klen = klen;
        s->hash = h;
        m->count++;
    }
    s->value = value;
    return GX_OK;
}

void *
gx_strmap_get(const struct gx_strmap *m, const char *key, size_t klen)
{
    if (m->cap == 0) {
        return NULL;
    }
    return find_slot(m->slots, m->cap, key, klen, gx_hash_mem(key, klen))->value;
}

void *
gx_strmap_del(struct gx_strmap *m, const char *key, size_t klen)
{
    struct gx_strmap_slot *s;
    size_t i, j;
    void *value;

    if (m->cap == 0) {
        return NULL;
    }
    s = find_slot(m->slots, m->cap, key, klen, gx_hash_mem(key, klen));
    if (s->key == NULL) {
        return NULL;
    }
    value = s->value;
    /* Backward-shift deletion keeps every probe chain unbroken. */
    i = (size_t)(s - m->slots);
    j = i;
    for (;;) {
        size_t home;
        j = (j + 1) & (m->cap - 1);
        if (m->slots[j].key == NULL) {
            break;
        }
        home = (size_t)m->slots[j].hash & (m->cap - 1);
        /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    memset(&m->slots[i], 0, sizeof(m->slots[i]));
    m->count--;
    return value;
}

void *
gx_strmap_next(const struct gx_strmap *m, size_t *pos, const char **key, size_t *klen)
{
    while (*pos < m->cap) {
        const struct gx_strmap_slot *s = &m->slots[(*pos)++];
        if (s->key != NULL) {
            if (key != NULL) {
                *key = s->key;
            }
            if (klen != NULL) {
                *klen = s->klen;
            }
            return s->value;
        }
    }
    return NULL;
}

void
gx_intern_init(struct gx_interner *in, struct gx_arena *a, size_t max_len)
{
    gx_strmap_init(&in->map);
    in->a = a;
    in->max_len = max_len;
    in->full = false;
}

const char *
gx_intern(struct gx_interner *in, const char *s, size_t len)
{
    const char *hit;
    char *copy;

    if (in->max_len != 0 && len > in->max_len) {
        return gx_arena_strndup(in->a, s, len);
    }
    hit = gx_strmap_get(&in->map, s, len);
    if (hit != NULL) {
        return hit;
    }
    copy = gx_arena_strndup(in->a, s, len);
    if (copy != NULL && !in->full && gx_strmap_put(&in->map, copy, len, copy) != GX_OK) {
        in->full = true;
    }
    return copy;
}

void
gx_intern_release(struct gx_interner *in)
{
    gx_strmap_release(&in->map);
}
