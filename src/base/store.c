/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c - the store of watched objects (see store.h) over strmap. strmap
 * keeps the first key of a slot when a value is replaced, and that key lives
 * in the value being freed, so a put removes the old slot and inserts a new
 * one; room for it is reserved first so that nothing changes on ENOMEM.
 */
#include "store.h"

#include <string.h>

void
gx_store_init(struct gx_store *s, void (*free_value)(void *value))
{
    gx_strmap_init(&s->map);
    s->free_value = free_value;
    s->synced = false;
}

/* Free every value of @m with @free_value and the table. */
static void
free_all(struct gx_strmap *m, void (*free_value)(void *value))
{
    size_t pos = 0;
    void *v;

    while ((v = gx_strmap_next(m, &pos, NULL, NULL)) != NULL) {
        free_value(v);
    }
    gx_strmap_release(m);
}

void
gx_store_release(struct gx_store *s)
{
    free_all(&s->map, s->free_value);
}

enum gx_err
gx_store_put(struct gx_store *s, const char *key, void *value)
{
    size_t len = strlen(key);
    enum gx_err rc = gx_strmap_reserve(&s->map, 1);
    void *old;

    if (rc != GX_OK) {
        return rc;
    }
    old = gx_strmap_del(&s->map, key, len);
    /* cannot fail: the room is reserved and the delete only made more */
    rc = gx_strmap_put(&s->map, key, len, value);
    if (old != NULL && old != value) {
        s->free_value(old);
    }
    return rc;
}

bool
gx_store_del(struct gx_store *s, const char *key)
{
    void *old = gx_strmap_del(&s->map, key, strlen(key));

    if (old == NULL) {
        return false;
    }
    s->free_value(old);
    return true;
}

void *
gx_store_get(const struct gx_store *s, const char *key)
{
    return gx_strmap_get(&s->map, key, strlen(key));
}

size_t
gx_store_count(const struct gx_store *s)
{
    return s->map.count;
}

void *
gx_store_next(const struct gx_store *s, size_t *pos)
{
    return gx_strmap_next(&s->map, pos, NULL, NULL);
}

void
gx_store_replace(struct gx_store *s, struct gx_store *list)
{
    free_all(&s->map, s->free_value);
    s->map = list->map;
    s->synced = true;
    gx_strmap_init(&list->map);
}

bool
gx_store_synced(const struct gx_store *s)
{
    return s->synced;
}
