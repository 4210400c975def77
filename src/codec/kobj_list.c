/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_list.c - a List of any kind (NodeList, PodList, LeaseList, ...)
 * decoded in one pass, one item at a time: the gx_json scanner walks the
 * envelope, each item is built into its own cJSON tree (kobj_build_value),
 * decoded by its kind's decoder and freed before the next, so a
 * 5,000-node NodeList (about 50 MiB) is never one tree. Strings that
 * repeat across the items (label keys, short values, resource names) are
 * interned: each is copied into the arena once and shared by every item.
 * No I/O.
 */
#include "kobj.h"

#include <stdlib.h>
#include <string.h>

#include "kobj_int.h"

/*
 * Longest string value interned in a list. Label values and quantities are
 * short and repeat ("true", "8", "NVIDIA-A100-SXM4-80GB"); longer ones are
 * mostly unique and would only grow the intern map.
 */
#define INTERN_MAX_LEN 64

/*
 * True when the raw (still escaped) key @key of @klen bytes is exactly
 * @name, as cJSON_GetObjectItemCaseSensitive compares decoded keys. A key
 * with escapes is decoded into a scratch arena first.
 */
static bool
raw_key_eq(const char *key, size_t klen, const char *name)
{
    struct gx_arena scratch;
    struct gx_json j;
    const char *dec = NULL;
    size_t dlen = 0;
    bool eq;

    if (memchr(key, '\\', klen) == NULL) {
        return klen == strlen(name) && memcmp(key, name, klen) == 0;
    }
    /* The scanner hands out keys between their quotes: decode the quoted span. */
    gx_arena_init(&scratch, klen + 64);
    gx_json_init(&j, key - 1, klen + 2, 1, NULL);
    eq = gx_json_string(&j, &scratch, &dec, &dlen) == GX_OK && dlen == strlen(name) &&
         memcmp(dec, name, dlen) == 0;
    gx_arena_release(&scratch);
    return eq;
}

/* Decode one list item into the element @slot (the struct of the list's kind). */
typedef enum gx_err (*item_fn)(struct dec *d, const cJSON *o, const char *path, void *slot);

/* item_fn for NodeList items. */
static enum gx_err
node_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return kobj_node_obj(d, o, path, slot);
}

/* item_fn for PodList items. */
static enum gx_err
pod_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return kobj_pod_obj(d, o, path, slot);
}

/* item_fn for LeaseList items. */
static enum gx_err
lease_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return kobj_lease_obj(d, o, path, slot);
}

/* item_fn for ResourceSliceList items. */
static enum gx_err
slice_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return kobj_slice_obj(d, o, path, slot);
}

/* item_fn for ResourceClaimList items. */
static enum gx_err
claim_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return kobj_claim_obj(d, o, path, slot);
}

/* item_fn for PodDisruptionBudgetList items. */
static enum gx_err
pdb_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return kobj_pdb_obj(d, o, path, slot);
}

/*
 * A list document as one pass over it finds it. Items are decoded as the
 * scan reaches them, one cJSON tree at a time; a repeated "items" or
 * "metadata" starts over (the last one wins, as kobj_last_member). An item that
 * fails is reported only after the document is known to be valid and its
 * envelope right, as when those were checked first.
 */
struct list_pass {
    struct dec d; /* for the items: d.why is item_why */
    size_t size;
    item_fn decode;
    unsigned char *items; /* heap, of the last "items" member */
    size_t n, cap;
    bool not_object;        /* the root is not an object */
    char items_at, meta_at; /* first byte of the last "items" / "metadata" value, 0: absent */
    enum gx_err item_rc;    /* the first item that failed */
    struct gx_why item_why;
    cJSON *meta;          /* the last "metadata" object */
    struct gx_arena strs; /* strings of the item tree being decoded */
    struct gx_arena meta_strs;
};

/* Room for one more item. */
static enum gx_err
list_grow(struct list_pass *lp)
{
    size_t cap = lp->cap ? lp->cap * 2 : 64;
    unsigned char *p = cap <= SIZE_MAX / 2 / lp->size ? realloc(lp->items, cap * lp->size) : NULL;

    if (p == NULL) {
        return kobj_nomem(&lp->d);
    }
    lp->items = p;
    lp->cap = cap;
    return GX_OK;
}

/* Build the item at the cursor and decode it into the next slot. */
static enum gx_err
list_item(struct list_pass *lp, struct gx_json *j)
{
    char ip[PATH_MAX_LEN];
    struct tree t = {j, &lp->strs, 0, 0};
    cJSON *item = NULL;
    enum gx_err rc = lp->n == lp->cap ? list_grow(lp) : GX_OK;

    if (rc == GX_OK && (rc = kobj_build_value(&t, &item)) == GX_OK) {
        kobj_index_path(ip, sizeof(ip), "", "items", lp->n);
        rc = lp->decode(&lp->d, item, ip, lp->items + lp->n * lp->size);
        cJSON_Delete(item);
        if (rc == GX_OK) {
            lp->n++;
        } else if (rc != GX_ENOMEM) {
            lp->item_rc = rc; /* kept for later; the rest is only validated */
            rc = GX_OK;
        }
    }
    gx_arena_release(&lp->strs);
    return rc;
}

/* The "items" array at the cursor. */
static enum gx_err
list_items(struct list_pass *lp, struct gx_json *j)
{
    enum gx_err rc = gx_json_enter_array(j);

    lp->n = 0;
    lp->item_rc = GX_OK;
    while (rc == GX_OK && gx_json_next_element(j, &rc)) {
        rc = lp->item_rc == GX_OK ? list_item(lp, j) : gx_json_skip(j);
    }
    return rc;
}

/* The "metadata" object at the cursor. */
static enum gx_err
list_meta(struct list_pass *lp, struct gx_json *j)
{
    struct tree t = {j, &lp->meta_strs, 0, 0};

    return kobj_build_value(&t, &lp->meta);
}

/* Walk the root object's members. */
static enum gx_err
list_walk(struct list_pass *lp, struct gx_json *j)
{
    const char *key;
    size_t klen;
    enum gx_err rc;

    if (gx_json_peek(j) != '{') {
        lp->not_object = true;
        return gx_json_skip(j);
    }
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_member(j, &key, &klen, &rc)) {
        char c = gx_json_peek(j);

        if (raw_key_eq(key, klen, "items")) {
            lp->items_at = c;
            rc = c == '[' ? list_items(lp, j) : gx_json_skip(j);
        } else if (raw_key_eq(key, klen, "metadata")) {
            lp->meta_at = c;
            cJSON_Delete(lp->meta);
            lp->meta = NULL;
            gx_arena_release(&lp->meta_strs);
            rc = c == '{' ? list_meta(lp, j) : gx_json_skip(j);
        } else {
            rc = gx_json_skip(j);
        }
        if (rc != GX_OK) {
            return rc;
        }
    }
    return rc;
}

/*
 * After the walk of a valid document: the envelope's types ("items" absent
 * or null is an empty list; metadata.resourceVersion NULL when absent),
 * then the item that failed, in the order they are reported.
 */
static enum gx_err
list_result(struct list_pass *lp, struct gx_why *why, const char **rv)
{
    struct dec md = {lp->d.a, why, NULL};
    enum gx_err rc;

    if (lp->not_object) {
        gx_why_set(why, "list: must be an object");
        return GX_EINVAL;
    }
    if (lp->items_at != 0 && lp->items_at != '[' && lp->items_at != 'n') {
        gx_why_set(why, "items: must be an array");
        return GX_EINVAL;
    }
    if (lp->meta_at != 0 && lp->meta_at != '{' && lp->meta_at != 'n') {
        gx_why_set(why, "metadata: must be an object");
        return GX_EINVAL;
    }
    *rv = NULL;
    if (lp->meta != NULL &&
        (rc = kobj_get_string(&md, lp->meta, "metadata", "resourceVersion", NULL, rv)) != GX_OK) {
        return rc;
    }
    if (lp->item_rc != GX_OK) {
        *why = lp->item_why;
    }
    return lp->item_rc;
}

/*
 * Decode a list in one pass into an arena array of elements of @size
 * bytes, with repeated strings interned. Peak memory beyond the arena is
 * one item's tree and the array while it grows. Outputs are written only
 * on success.
 */
static enum gx_err
decode_list(const char *json, size_t len, int max_depth, struct gx_arena *a, size_t size,
            item_fn decode, void **items, size_t *n, const char **resource_version,
            struct gx_why *why)
{
    struct gx_interner intern;
    struct list_pass lp;
    struct gx_json j;
    const char *rv = NULL;
    void *arr = NULL;
    enum gx_err rc;

    if (json == NULL || len == 0) {
        gx_why_set(why, "empty JSON document");
        return GX_EPARSE;
    }
    memset(&lp, 0, sizeof(lp));
    lp.d = (struct dec){a, &lp.item_why, &intern};
    lp.size = size;
    lp.decode = decode;
    gx_intern_init(&intern, a, INTERN_MAX_LEN);
    gx_arena_init(&lp.strs, 0);
    gx_arena_init(&lp.meta_strs, 4096);
    gx_json_init(&j, json, len, max_depth, why);
    if ((rc = list_walk(&lp, &j)) == GX_OK) {
        rc = kobj_doc_end(&j);
    }
    if (rc == GX_ETOOBIG) {
        rc = kobj_too_deep(&j);
    } else if (rc == GX_ENOMEM) {
        gx_why_set(why, "out of memory");
    }
    if (rc == GX_OK) {
        rc = list_result(&lp, why, &rv);
    }
    if (rc == GX_OK && lp.n > 0) {
        arr = kobj_alloc_array(&lp.d, lp.n, size);
        rc = arr != NULL ? GX_OK : kobj_nomem(&lp.d);
    }
    if (rc == GX_OK) {
        if (lp.n > 0) {
            memcpy(arr, lp.items, lp.n * size);
        }
        *items = arr;
        *n = lp.n;
        if (resource_version != NULL) {
            *resource_version = rv;
        }
    }
    free(lp.items);
    cJSON_Delete(lp.meta);
    gx_arena_release(&lp.meta_strs);
    gx_arena_release(&lp.strs);
    gx_intern_release(&intern);
    return rc;
}

/* Decode a NodeList into an arena array; fails as gx_kobj_decode_pod does. */
enum gx_err
gx_kobj_decode_node_list(const char *json, size_t len, int max_depth, struct gx_arena *a,
                         struct gx_node_info **nodes, size_t *n, const char **resource_version,
                         struct gx_why *why)
{
    void *arr = NULL;
    size_t count = 0;
    enum gx_err rc = decode_list(json, len, max_depth, a, sizeof(struct gx_node_info), node_item,
                                 &arr, &count, resource_version, why);

    if (rc == GX_OK) {
        *nodes = arr;
        *n = count;
    }
    return rc;
}

/* Decode a PodList into an arena array; fails as gx_kobj_decode_pod does. */
enum gx_err
gx_kobj_decode_pod_list(const char *json, size_t len, int max_depth, struct gx_arena *a,
                        struct gx_pod **pods, size_t *n, const char **resource_version,
                        struct gx_why *why)
{
    void *arr = NULL;
    size_t count = 0;
    enum gx_err rc = decode_list(json, len, max_depth, a, sizeof(struct gx_pod), pod_item, &arr,
                                 &count, resource_version, why);

    if (rc == GX_OK) {
        *pods = arr;
        *n = count;
    }
    return rc;
}

/* One decoder per kind: element size and item function. */
static const struct {
    size_t size;
    item_fn decode;
} kinds[] = {
    [GX_KIND_NODE] = {sizeof(struct gx_node_info), node_item},
    [GX_KIND_POD] = {sizeof(struct gx_pod), pod_item},
    [GX_KIND_LEASE] = {sizeof(struct gx_lease), lease_item},
    [GX_KIND_RESOURCE_SLICE] = {sizeof(struct gx_rslice), slice_item},
    [GX_KIND_RESOURCE_CLAIM] = {sizeof(struct gx_rclaim), claim_item},
    [GX_KIND_PDB] = {sizeof(struct gx_pdb), pdb_item},
};

/* Decode a list of @kind into an arena array; fails as gx_kobj_decode_pod does. */
enum gx_err
gx_kobj_decode_list(const char *json, size_t len, enum gx_kind kind, int max_depth,
                    struct gx_arena *a, void **items, size_t *n, const char **resource_version,
                    struct gx_why *why)
{
    void *arr = NULL;
    size_t count = 0;
    enum gx_err rc;

    if ((size_t)kind >= GX_ARRAY_LEN(kinds)) {
        gx_why_set(why, "unknown object kind");
        return GX_EINVAL;
    }
    rc = decode_list(json, len, max_depth, a, kinds[kind].size, kinds[kind].decode, &arr, &count,
                     resource_version, why);
    if (rc == GX_OK) {
        *items = arr;
        *n = count;
    }
    return rc;
}
