/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_node.c - a Node decoded into struct gx_node_info: labels (sorted by
 * key), allocatable and capacity, taints, unschedulable and the Ready
 * condition. On the readers of kobj.c; the list walk and the watch events
 * decode their Nodes with kobj_node_obj. No I/O.
 */
#include "kobj.h"

#include <stdlib.h>
#include <string.h>

#include "kobj_int.h"

/* qsort comparator: gx_kv by key. */
static int
kv_cmp(const void *x, const void *y)
{
    const struct gx_kv *a = x, *b = y;

    return strcmp(a->key, b->key);
}

/* Decode spec.taints of a node. */
static enum gx_err
decode_taints(struct dec *d, const cJSON *spec, const char *sp, struct gx_node_info *n)
{
    char tp[PATH_MAX_LEN];
    const cJSON *arr, *t;
    size_t count, i = 0;
    enum gx_err rc = kobj_get_array(d, spec, sp, "taints", &arr);

    if (rc != GX_OK) {
        return rc;
    }
    count = kobj_count_children(arr);
    if (arr == NULL || count == 0) {
        return GX_OK;
    }
    n->taints = kobj_alloc_array(d, count, sizeof(*n->taints));
    if (n->taints == NULL) {
        return kobj_nomem(d);
    }
    for (t = arr->child; t != NULL && i < count; t = t->next, i++) {
        kobj_index_path(tp, sizeof(tp), sp, "taints", i);
        if (!cJSON_IsObject(t)) {
            gx_why_set(d->why, "%s: must be an object", tp);
            return GX_EINVAL;
        }
        if ((rc = kobj_get_shared_string(d, t, tp, "key", "", &n->taints[i].key)) != GX_OK ||
            (rc = kobj_get_shared_string(d, t, tp, "value", "", &n->taints[i].value)) != GX_OK ||
            (rc = kobj_get_shared_string(d, t, tp, "effect", "", &n->taints[i].effect)) != GX_OK) {
            return rc;
        }
    }
    n->n_taints = count;
    return GX_OK;
}

/* Find the Ready condition in status.conditions; its status must be "True". */
static enum gx_err
decode_ready(struct dec *d, const cJSON *status, const char *tp, bool *ready)
{
    char cp[PATH_MAX_LEN];
    const cJSON *arr, *c, *type, *st;
    size_t i = 0;
    enum gx_err rc = kobj_get_array(d, status, tp, "conditions", &arr);

    if (rc != GX_OK) {
        return rc;
    }
    *ready = false;
    for (c = arr != NULL ? arr->child : NULL; c != NULL; c = c->next, i++) {
        kobj_index_path(cp, sizeof(cp), tp, "conditions", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", cp);
            return GX_EINVAL;
        }
        if ((rc = kobj_get_field(d, c, cp, "type", cJSON_IsString, "a string", &type)) != GX_OK ||
            (rc = kobj_get_field(d, c, cp, "status", cJSON_IsString, "a string", &st)) != GX_OK) {
            return rc;
        }
        if (type != NULL && strcmp(type->valuestring, "Ready") == 0) {
            *ready = st != NULL && strcmp(st->valuestring, "True") == 0;
        }
    }
    return GX_OK;
}

/* Decode a Node object @o whose own path is @path ("" at the root). */
enum gx_err
kobj_node_obj(struct dec *d, const cJSON *o, const char *path, struct gx_node_info *out)
{
    char pp[3][PATH_MAX_LEN];
    const cJSON *parts[3], *meta, *spec, *status;
    const char *mp = pp[0], *sp = pp[1], *tp = pp[2];
    struct gx_node_info n;
    enum gx_err rc;

    memset(&n, 0, sizeof(n));
    if ((rc = kobj_object_parts(d, o, path, "node", parts, pp)) != GX_OK) {
        return rc;
    }
    meta = parts[0], spec = parts[1], status = parts[2];

    if ((rc = kobj_get_string(d, meta, mp, "name", "", &n.name)) != GX_OK ||
        (rc = kobj_get_string(d, meta, mp, "resourceVersion", "", &n.resource_version)) != GX_OK ||
        (rc = kobj_get_map(d, meta, mp, "labels", MAP_SHARE_VALUES, &n.labels, &n.n_labels)) !=
            GX_OK) {
        return rc;
    }
    if (n.n_labels > 1) {
        qsort(n.labels, n.n_labels, sizeof(*n.labels), kv_cmp);
    }

    if ((rc = kobj_get_bool(d, spec, sp, "unschedulable", &n.unschedulable)) != GX_OK ||
        (rc = decode_taints(d, spec, sp, &n)) != GX_OK) {
        return rc;
    }

    if ((rc = kobj_get_map(d, status, tp, "allocatable", MAP_QUANTITIES | MAP_SHARE_VALUES,
                           &n.allocatable, &n.n_allocatable)) != GX_OK ||
        (rc = kobj_get_map(d, status, tp, "capacity", MAP_QUANTITIES | MAP_SHARE_VALUES,
                           &n.capacity, &n.n_capacity)) != GX_OK ||
        (rc = decode_ready(d, status, tp, &n.ready)) != GX_OK) {
        return rc;
    }
    *out = n;
    return GX_OK;
}

/* Decode one Node; fails as gx_kobj_decode_pod does. */
enum gx_err
gx_kobj_decode_node(const char *json, size_t len, int max_depth, struct gx_arena *a,
                    struct gx_node_info *out, struct gx_why *why)
{
    struct dec d = {a, why, NULL};
    struct doc doc;
    enum gx_err rc = kobj_doc_parse(&doc, json, len, max_depth, 0, why);

    if (rc == GX_OK) {
        rc = kobj_node_obj(&d, doc.root, "", out);
    }
    kobj_doc_free(&doc);
    return rc;
}

static bool
str_same(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool
kvs_same(const struct gx_kv *a, size_t na, const struct gx_kv *b, size_t nb)
{
    if (na != nb) {
        return false;
    }
    for (size_t i = 0; i < na; i++) {
        if (!str_same(a[i].key, b[i].key) || !str_same(a[i].value, b[i].value)) {
            return false;
        }
    }
    return true;
}

bool
gx_node_info_same(const struct gx_node_info *a, const struct gx_node_info *b)
{
    if (a->ready != b->ready || a->unschedulable != b->unschedulable ||
        !str_same(a->name, b->name) || !kvs_same(a->labels, a->n_labels, b->labels, b->n_labels) ||
        !kvs_same(a->allocatable, a->n_allocatable, b->allocatable, b->n_allocatable) ||
        !kvs_same(a->capacity, a->n_capacity, b->capacity, b->n_capacity) ||
        a->n_taints != b->n_taints) {
        return false;
    }
    for (size_t i = 0; i < a->n_taints; i++) {
        if (!str_same(a->taints[i].key, b->taints[i].key) ||
            !str_same(a->taints[i].value, b->taints[i].value) ||
            !str_same(a->taints[i].effect, b->taints[i].effect)) {
            return false;
        }
    }
    return true;
}

static bool
rv_number(const char *s, size_t *len)
{
    size_t n = strspn(s, "0123456789");

    *len = n;
    return n > 0 && s[n] == '\0' && (s[0] != '0' || n == 1);
}

bool
gx_rv_older(const char *a, const char *b)
{
    size_t la, lb;

    if (a == NULL || b == NULL || !rv_number(a, &la) || !rv_number(b, &lb)) {
        return false;
    }
    return la != lb ? la < lb : strcmp(a, b) < 0;
}
