/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dra.c - the DRA store (see dra.h). Slices and claims are copied into one
 * arena per object (watch events live only for their callback). The UUID
 * index (uuid -> claim) is derived, rebuilt on the first lookup after a
 * change: devices by "driver/pool/device" from the slices, then each
 * claim's results looked up there. Driver names are DNS subdomains and
 * device names DNS labels, so the first and last '/' of the key cannot be
 * part of them, and a pool name with '/' in it cannot make two keys equal.
 * The two maps, their lists and their events, are gx_stores.
 */
#include "dra.h"

#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "log.h"
#include "store.h"
#include "strmap.h"

struct dev {
    const char *key; /* "driver/pool/device" */
    const char *uuid;
};

struct slice_entry {
    struct gx_arena a;
    const char *name;
    struct dev *devs;
    size_t n_devs;
};

struct claim_entry {
    struct gx_arena a;
    const char *key;   /* "namespace/name" */
    const char **devs; /* "driver/pool/device" of each result */
    size_t n_devs;
};

struct gx_dra {
    struct gx_store slices; /* name -> struct slice_entry */
    struct gx_store claims; /* namespace/name -> struct claim_entry */
    struct gx_strmap index; /* uuid -> claim key; keys and values borrowed from entries */
    bool dirty;
    void (*changed)(void *ctx);
    void *ctx;
    struct gx_kube_watch *w_slices, *w_claims;
    bool absent;
};

/* "a/b/c" in arena @a; NULL on ENOMEM. */
static const char *
join3(struct gx_arena *a, const char *x, const char *y, const char *z)
{
    size_t lx = strlen(x), ly = strlen(y), lz = strlen(z);
    char *s = gx_arena_alloc(a, lx + ly + lz + 3);

    if (s == NULL) {
        return NULL;
    }
    memcpy(s, x, lx);
    s[lx] = '/';
    memcpy(s + lx + 1, y, ly);
    s[lx + 1 + ly] = '/';
    memcpy(s + lx + 2 + ly, z, lz);
    s[lx + ly + lz + 2] = '\0';
    return s;
}

static void
slice_free(void *v)
{
    struct slice_entry *e = v;

    if (e != NULL) {
        gx_arena_release(&e->a);
        free(e);
    }
}

static void
claim_free(void *v)
{
    struct claim_entry *e = v;

    if (e != NULL) {
        gx_arena_release(&e->a);
        free(e);
    }
}

/* A copy of @s with only what the index needs (devices with a UUID). */
static struct slice_entry *
slice_copy(const struct gx_rslice *s)
{
    struct slice_entry *e = calloc(1, sizeof(*e));
    size_t k = 0;

    if (e == NULL) {
        return NULL;
    }
    gx_arena_init(&e->a, 0);
    e->name = gx_arena_strdup(&e->a, s->name != NULL ? s->name : "");
    if (e->name == NULL) {
        goto fail;
    }
    if (s->n_devices > 0) {
        e->devs = gx_arena_alloc(&e->a, s->n_devices * sizeof(*e->devs));
        if (e->devs == NULL) {
            goto fail;
        }
    }
    for (size_t i = 0; i < s->n_devices; i++) {
        const struct gx_dra_device *d = &s->devices[i];

        if (d->uuid == NULL || d->uuid[0] == '\0' || d->name == NULL) {
            continue;
        }
        e->devs[k].key = join3(&e->a, s->driver ? s->driver : "", s->pool ? s->pool : "", d->name);
        e->devs[k].uuid = gx_arena_strdup(&e->a, d->uuid);
        if (e->devs[k].key == NULL || e->devs[k].uuid == NULL) {
            goto fail;
        }
        k++;
    }
    e->n_devs = k;
    return e;
fail:
    slice_free(e);
    return NULL;
}

/* A copy of @c: its key and the keys of its allocated devices. */
static struct claim_entry *
claim_copy(const struct gx_rclaim *c)
{
    struct claim_entry *e = calloc(1, sizeof(*e));

    if (e == NULL) {
        return NULL;
    }
    gx_arena_init(&e->a, 0);
    e->key = join3(&e->a, c->namespace ? c->namespace : "", c->name ? c->name : "", "");
    if (e->key == NULL) {
        goto fail;
    }
    ((char *)e->key)[strlen(e->key) - 1] = '\0'; /* "ns/name/" -> "ns/name" */
    if (c->n_results > 0) {
        e->devs = gx_arena_alloc(&e->a, c->n_results * sizeof(*e->devs));
        if (e->devs == NULL) {
            goto fail;
        }
    }
    for (size_t i = 0; i < c->n_results; i++) {
        const struct gx_dra_result *r = &c->results[i];
        e->devs[i] = join3(&e->a, r->driver ? r->driver : "", r->pool ? r->pool : "",
                           r->device ? r->device : "");
        if (e->devs[i] == NULL) {
            goto fail;
        }
    }
    e->n_devs = c->n_results;
    return e;
fail:
    claim_free(e);
    return NULL;
}

static void
touch(struct gx_dra *d)
{
    d->dirty = true;
    if (d->changed != NULL) {
        d->changed(d->ctx);
    }
}

struct gx_dra *
gx_dra_new(void (*changed)(void *ctx), void *ctx)
{
    struct gx_dra *d = calloc(1, sizeof(*d));

    if (d == NULL) {
        return NULL;
    }
    gx_store_init(&d->slices, slice_free);
    gx_store_init(&d->claims, claim_free);
    gx_strmap_init(&d->index);
    d->changed = changed;
    d->ctx = ctx;
    return d;
}

void
gx_dra_free(struct gx_dra *d)
{
    if (d == NULL) {
        return;
    }
    gx_kube_watch_free(d->w_slices);
    gx_kube_watch_free(d->w_claims);
    gx_store_release(&d->slices);
    gx_store_release(&d->claims);
    gx_strmap_release(&d->index);
    free(d);
}

enum gx_err
gx_dra_put_slice(struct gx_dra *d, const struct gx_rslice *s, bool deleted)
{
    struct slice_entry *e;

    if (deleted) {
        (void)gx_store_del(&d->slices, s->name != NULL ? s->name : "");
        touch(d);
        return GX_OK;
    }
    if ((e = slice_copy(s)) == NULL) {
        return GX_ENOMEM;
    }
    if (gx_store_put(&d->slices, e->name, e) != GX_OK) {
        slice_free(e);
        return GX_ENOMEM; /* unchanged */
    }
    touch(d);
    return GX_OK;
}

enum gx_err
gx_dra_put_claim(struct gx_dra *d, const struct gx_rclaim *c, bool deleted)
{
    struct claim_entry *e = claim_copy(c); /* the key, even to delete */

    if (e == NULL) {
        return GX_ENOMEM;
    }
    if (deleted) {
        (void)gx_store_del(&d->claims, e->key);
        claim_free(e);
        touch(d);
        return GX_OK;
    }
    if (gx_store_put(&d->claims, e->key, e) != GX_OK) {
        claim_free(e);
        return GX_ENOMEM; /* unchanged */
    }
    touch(d);
    return GX_OK;
}

enum gx_err
gx_dra_set_slices(struct gx_dra *d, const struct gx_rslice *s, size_t n)
{
    struct gx_store list;

    gx_store_init(&list, slice_free);
    for (size_t i = 0; i < n; i++) {
        struct slice_entry *e = slice_copy(&s[i]);
        if (e == NULL || gx_store_put(&list, e->name, e) != GX_OK) {
            slice_free(e);
            gx_store_release(&list);
            return GX_ENOMEM;
        }
    }
    gx_store_replace(&d->slices, &list);
    touch(d);
    return GX_OK;
}

enum gx_err
gx_dra_set_claims(struct gx_dra *d, const struct gx_rclaim *c, size_t n)
{
    struct gx_store list;

    gx_store_init(&list, claim_free);
    for (size_t i = 0; i < n; i++) {
        struct claim_entry *e = claim_copy(&c[i]);
        if (e == NULL || gx_store_put(&list, e->key, e) != GX_OK) {
            claim_free(e);
            gx_store_release(&list);
            return GX_ENOMEM;
        }
    }
    gx_store_replace(&d->claims, &list);
    touch(d);
    return GX_OK;
}

/*
 * Rebuild uuid -> claim from the entries. On ENOMEM the index holds what
 * fit and stays dirty, so the next lookup tries again: a card missed is
 * one filter may offer, which bind's own re-check does not catch, hence
 * the warning.
 */
static void
reindex(struct gx_dra *d)
{
    struct gx_strmap devs;
    size_t pos = 0;
    const struct slice_entry *s;
    const struct claim_entry *c;
    bool ok = true;

    gx_strmap_release(&d->index);
    gx_strmap_init(&d->index);
    gx_strmap_init(&devs);
    while ((s = gx_store_next(&d->slices, &pos)) != NULL) {
        for (size_t i = 0; i < s->n_devs; i++) {
            ok = gx_strmap_put(&devs, s->devs[i].key, strlen(s->devs[i].key),
                               (void *)s->devs[i].uuid) == GX_OK &&
                 ok;
        }
    }
    pos = 0;
    while ((c = gx_store_next(&d->claims, &pos)) != NULL) {
        for (size_t i = 0; i < c->n_devs; i++) {
            const char *uuid = gx_strmap_get(&devs, c->devs[i], strlen(c->devs[i]));
            if (uuid != NULL && gx_strmap_get(&d->index, uuid, strlen(uuid)) == NULL) {
                ok = gx_strmap_put(&d->index, uuid, strlen(uuid), (void *)c->key) == GX_OK && ok;
            }
        }
    }
    gx_strmap_release(&devs);
    d->dirty = !ok;
    if (!ok) {
        gx_warn("out of memory indexing DRA claims, some claimed cards may show as free", NULL);
    }
}

const char *
gx_dra_claim_of(struct gx_dra *d, const char *uuid)
{
    if (d == NULL || uuid == NULL) {
        return NULL;
    }
    if (d->dirty) {
        reindex(d);
    }
    return gx_strmap_get(&d->index, uuid, strlen(uuid));
}

size_t
gx_dra_claimed_devices(struct gx_dra *d)
{
    if (d == NULL) {
        return 0;
    }
    if (d->dirty) {
        reindex(d);
    }
    return d->index.count;
}

bool
gx_dra_synced(const struct gx_dra *d)
{
    return d->absent || (gx_store_synced(&d->slices) && gx_store_synced(&d->claims));
}

/* ---- the watches ---- */

static void
warn_nomem(const char *what)
{
    gx_warn("out of memory storing DRA objects, keeping the previous ones", "resource=%s", what);
}

static void
slices_listed(void *ctx, const void *items, size_t n)
{
    struct gx_dra *d = ctx;

    d->absent = false;
    if (gx_dra_set_slices(d, items, n) != GX_OK) {
        warn_nomem("resourceslices");
    }
}

static void
slice_event(void *ctx, const struct gx_watch_event *ev)
{
    if (gx_dra_put_slice(ctx, &ev->obj.slice, ev->type == GX_WATCH_DELETED) != GX_OK) {
        warn_nomem("resourceslices");
    }
}

static void
claims_listed(void *ctx, const void *items, size_t n)
{
    struct gx_dra *d = ctx;

    d->absent = false;
    if (gx_dra_set_claims(d, items, n) != GX_OK) {
        warn_nomem("resourceclaims");
    }
}

static void
claim_event(void *ctx, const struct gx_watch_event *ev)
{
    if (gx_dra_put_claim(ctx, &ev->obj.claim, ev->type == GX_WATCH_DELETED) != GX_OK) {
        warn_nomem("resourceclaims");
    }
}

static void
absent_cb(void *ctx, long status)
{
    struct gx_dra *d = ctx;

    if (!d->absent && status == 403) {
        gx_warn("not allowed to read DRA ResourceSlices/ResourceClaims, cards claims hold are not "
                "seen (grant get/list/watch, see manifests/extender/02-rbac.yaml)",
                NULL);
    } else if (!d->absent) {
        gx_info("the API server has no DRA API (resource.k8s.io/v1), no card is held by claims",
                NULL);
    }
    d->absent = true;
}

enum gx_err
gx_dra_watch(struct gx_dra *d, struct gx_kube *k)
{
    static const struct gx_kube_watch_cbs slice_cbs = {slices_listed, slice_event, absent_cb};
    static const struct gx_kube_watch_cbs claim_cbs = {claims_listed, claim_event, absent_cb};

    d->w_slices = gx_kube_watch_new(k, GX_KIND_RESOURCE_SLICE, "resourceslices",
                                    "/apis/resource.k8s.io/v1/resourceslices", NULL, &slice_cbs, d);
    d->w_claims = gx_kube_watch_new(k, GX_KIND_RESOURCE_CLAIM, "resourceclaims",
                                    "/apis/resource.k8s.io/v1/resourceclaims", NULL, &claim_cbs, d);
    return d->w_slices != NULL && d->w_claims != NULL ? GX_OK : GX_ENOMEM;
}
