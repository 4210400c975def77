/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube_nodes.c - the current node objects, as the node stream of
 * kube_reflector.c lists and watches them: a gx_store of entries by node
 * name, and the sorted array gx_kube_nodes hands out, rebuilt after a change.
 *
 * Entries from a list share the list's arena (reference counted, it dies
 * with the last of them); an entry from a watch event owns the event's
 * arena, so no node is copied. A list is applied only after it decoded
 * completely, so the node set is never half a list. No I/O here.
 */
#include "kube_int.h"

#include <stdlib.h>
#include <string.h>

/* Entries of one node list share its arena; it dies with the last of them. */
struct list_arena {
    struct gx_arena a;
    size_t refs;
};

struct node_entry {
    struct gx_node_info info;
    struct gx_arena *own;    /* the watch event's arena, or NULL */
    struct list_arena *list; /* the list arena the info lives in, or NULL */
};

static void
list_arena_unref(struct list_arena *la)
{
    if (la == NULL || --la->refs > 0) {
        return;
    }
    gx_arena_release(&la->a);
    free(la);
}

static void
entry_free(void *v)
{
    struct node_entry *e = v;

    if (e == NULL) {
        return;
    }
    if (e->own != NULL) {
        gx_arena_release(e->own);
        free(e->own);
    }
    list_arena_unref(e->list);
    free(e);
}

static void
arena_free(struct gx_arena *a)
{
    gx_arena_release(a);
    free(a);
}

void
gx_kube_node_store_init(struct gx_kube_node_store *ns)
{
    gx_store_init(&ns->nodes, entry_free);
    ns->arr = NULL;
    ns->n_arr = 0;
    ns->arr_dirty = false;
}

void
gx_kube_node_store_release(struct gx_kube_node_store *ns)
{
    gx_store_release(&ns->nodes);
    free(ns->arr);
}

enum gx_err
gx_kube_node_store_list(struct gx_kube_node_store *ns, const char *body, size_t len, int max_depth,
                        char **rv, struct gx_why *why)
{
    struct list_arena *la = calloc(1, sizeof(*la));
    struct gx_store list;
    struct gx_node_info *nodes = NULL;
    const char *list_rv = NULL;
    size_t n = 0;
    char *rv_copy = NULL;
    enum gx_err rc;

    gx_store_init(&list, entry_free);
    if (la == NULL) {
        return GX_ENOMEM;
    }
    gx_arena_init(&la->a, 0);
    la->refs = 1; /* held by this function until the end */
    rc = gx_kobj_decode_node_list(body, len, max_depth, &la->a, &nodes, &n, &list_rv, why);
    if (rc != GX_OK) {
        goto out;
    }
    rv_copy = gx_strndup(list_rv != NULL ? list_rv : "", list_rv != NULL ? strlen(list_rv) : 0);
    if (rv_copy == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct node_entry *e;

        if (nodes[i].name == NULL || nodes[i].name[0] == '\0') {
            continue;
        }
        e = calloc(1, sizeof(*e));
        if (e == NULL) {
            rc = GX_ENOMEM;
            goto out;
        }
        e->info = nodes[i];
        e->list = la;
        la->refs++;
        if ((rc = gx_store_put(&list, e->info.name, e)) != GX_OK) {
            entry_free(e);
            goto out;
        }
    }
    gx_store_replace(&ns->nodes, &list);
    ns->arr_dirty = true;
    *rv = rv_copy;
    rv_copy = NULL;
out:
    gx_store_release(&list);
    free(rv_copy);
    list_arena_unref(la);
    return rc;
}

enum gx_err
gx_kube_node_store_event(struct gx_kube_node_store *ns, const struct gx_watch_event *ev,
                         struct gx_arena *a)
{
    const char *name = ev->obj.node.name;
    struct node_entry *e;
    enum gx_err rc;

    if (name == NULL || name[0] == '\0') {
        arena_free(a);
        return GX_OK;
    }
    if (ev->type == GX_WATCH_DELETED) {
        bool found = gx_store_del(&ns->nodes, name);

        arena_free(a); /* @name lives in it */
        ns->arr_dirty = ns->arr_dirty || found;
        return found ? GX_OK : GX_ENOTFOUND;
    }
    e = gx_store_get(&ns->nodes, name);
    if (e != NULL && gx_node_info_same(&e->info, &ev->obj.node)) {
        arena_free(a); /* @name lives in it */
        return GX_ENOTFOUND;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        arena_free(a);
        return GX_ENOMEM;
    }
    e->info = ev->obj.node;
    e->own = a;
    rc = gx_store_put(&ns->nodes, e->info.name, e);
    if (rc != GX_OK) {
        entry_free(e);
    }
    ns->arr_dirty = true;
    return rc;
}

static int
node_cmp(const void *a, const void *b)
{
    const struct gx_node_info *x = a, *y = b;

    return strcmp(x->name, y->name);
}

bool
gx_kube_nodes_synced(const struct gx_kube *k)
{
    return gx_store_synced(&k->store.nodes);
}

const struct gx_node_info *
gx_kube_nodes(struct gx_kube *k, size_t *n)
{
    struct gx_kube_node_store *ns = &k->store;
    size_t pos = 0, i = 0, count = gx_store_count(&ns->nodes);
    const struct node_entry *e;

    if (ns->arr_dirty) {
        struct gx_node_info *arr = NULL;

        if (count > 0) {
            arr = malloc(count * sizeof(*arr));
            if (arr == NULL) {
                /* The old array points into freed entries: show nothing rather than that. */
                *n = 0;
                return NULL;
            }
        }
        while ((e = gx_store_next(&ns->nodes, &pos)) != NULL && i < count) {
            arr[i++] = e->info;
        }
        if (i > 1) {
            qsort(arr, i, sizeof(*arr), node_cmp);
        }
        free(ns->arr);
        ns->arr = arr;
        ns->n_arr = i;
        ns->arr_dirty = false;
    }
    *n = ns->n_arr;
    return ns->arr;
}
