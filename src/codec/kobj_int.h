/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_int.h - what the files of kobj share, included by them only (never
 * by another module): the decoding context, the one-pass reader of a
 * document into a cJSON tree (kobj.c), the typed field readers every kind
 * is decoded with (kobj.c), and the decoder of each kind's object, which
 * the list walk (kobj_list.c) and the watch events (kobj_watch.c) call.
 *
 *   kobj.c        document reader (scanner -> tree) and typed field readers
 *   kobj_pod.c    Pod                      kobj_node.c   Node
 *   kobj_kinds.c  Lease, ResourceSlice, ResourceClaim, PodDisruptionBudget
 *   kobj_list.c   every kind's List, one item at a time
 *   kobj_watch.c  watch events and the Status of a failed call
 *   kobj_template.c  the Pod a manifest stands for (a workload's pod template)
 *
 * Calls go down that table only (scripts/layers.py fails a circle).
 */
#ifndef GX_KOBJ_INT_H
#define GX_KOBJ_INT_H

#include <cjson/cJSON.h>

#include "json.h"
#include "kobj.h"
#include "strmap.h"

/* Room for a field path in an error message ("items[12].spec.containers[3].resources"). */
#define PATH_MAX_LEN 192

/* kobj_get_map flags: accept JSON numbers as quantity strings; intern short values. */
#define MAP_QUANTITIES 1u
#define MAP_SHARE_VALUES 2u

/*
 * Decoding context: where strings go, where errors are explained and, while
 * a list is decoded, the map from each interned string to its arena copy
 * (NULL for single objects).
 */
struct dec {
    struct gx_arena *a;
    struct gx_why *why;
    struct gx_interner *intern;
};

typedef cJSON_bool (*type_pred)(const cJSON *item);

/* ---- field paths and allocation ---- */

/*
 * Field paths for error messages: "path.key" and "path.key[i]" (no dot at
 * the root). A path longer than the buffer is cut short, which only
 * shortens a message.
 */
void kobj_sub_path(char *buf, size_t n, const char *path, const char *key);
void kobj_index_path(char *buf, size_t n, const char *path, const char *key, size_t i);

/* Record an allocation failure; always returns GX_ENOMEM (inline: callers' analysis sees it). */
static inline enum gx_err
kobj_nomem(struct dec *d)
{
    gx_why_set(d->why, "out of memory");
    return GX_ENOMEM;
}

/*
 * Copy @s into the arena, or with an intern map return the one shared copy
 * of it (made on first use). NULL on ENOMEM.
 */
const char *kobj_shared_str(struct dec *d, const char *s);

/* Zeroed arena array of @n elements of @size bytes; NULL for n == 0 or ENOMEM. */
void *kobj_alloc_array(struct dec *d, size_t n, size_t size);

/* Number of elements of a cJSON array or members of an object (0 for NULL). */
size_t kobj_count_children(const cJSON *v);

/* ---- typed field readers ---- */

/* Member @key of @obj, the last one when the key repeats; NULL if absent. */
const cJSON *kobj_last_member(const cJSON *obj, const char *key);

/*
 * Look up @key in @obj (NULL: absent) and check it with @is. Absent or JSON
 * null gives *out = NULL and GX_OK; a wrong type is GX_EINVAL naming
 * "path.key" and @what ("an object").
 */
enum gx_err kobj_get_field(struct dec *d, const cJSON *obj, const char *path, const char *key,
                           type_pred is, const char *what, const cJSON **out) GX_WUR;

/* Optional object / array member; see kobj_get_field. */
enum gx_err kobj_get_object(struct dec *d, const cJSON *obj, const char *path, const char *key,
                            const cJSON **out) GX_WUR;
enum gx_err kobj_get_array(struct dec *d, const cJSON *obj, const char *path, const char *key,
                           const cJSON **out) GX_WUR;

/* Optional boolean member; false when absent. */
enum gx_err kobj_get_bool(struct dec *d, const cJSON *obj, const char *path, const char *key,
                          bool *out) GX_WUR;

/* Optional string member copied into the arena; @dflt (not copied, may be NULL) when absent. */
enum gx_err kobj_get_string(struct dec *d, const cJSON *obj, const char *path, const char *key,
                            const char *dflt, const char **out) GX_WUR;

/*
 * As kobj_get_string, for values that repeat across the items of a list
 * (namespace, phase, container names, taints): interned in list decodes.
 */
enum gx_err kobj_get_shared_string(struct dec *d, const cJSON *obj, const char *path,
                                   const char *key, const char *dflt, const char **out) GX_WUR;

/*
 * Optional map of strings ("path.key": {"k": "v", ...}) into an arena
 * array. MAP_QUANTITIES: JSON numbers are accepted and formatted as
 * strings; MAP_SHARE_VALUES: values are interned like the keys.
 */
enum gx_err kobj_get_map(struct dec *d, const cJSON *obj, const char *path, const char *key,
                         unsigned flags, struct gx_kv **kv, size_t *n) GX_WUR;

/*
 * The metadata, spec and status objects of a Kubernetes object @o at @path
 * (each may be absent: NULL), with their paths for error messages.
 */
enum gx_err kobj_object_parts(struct dec *d, const cJSON *o, const char *path, const char *kind,
                              const cJSON *parts[3], char paths[3][PATH_MAX_LEN]) GX_WUR;

/* ---- one pass over a document: the scanner builds the tree ---- */

/*
 * One pass over a document: the gx_json scanner validates it (syntax,
 * nesting under max_depth) and builds, in the same walk, the cJSON tree
 * the decoders read, so no byte is read twice. Keys and strings live in
 * @strs as cJSON references (cJSON_Delete leaves them); @values counts
 * what a tree holds (~100 bytes per value however short its text) against
 * @max_values when that is not 0.
 */
struct tree {
    struct gx_json *j;
    struct gx_arena *strs;
    size_t values, max_values;
};

/* Build the value at the cursor into *out (yours to cJSON_Delete). */
enum gx_err kobj_build_value(struct tree *t, cJSON **out) GX_WUR;

/* The depth error in the words every decoder of kobj uses: GX_ETOOBIG. */
enum gx_err kobj_too_deep(struct gx_json *j);

/* Nothing but whitespace may follow the document's value: else GX_EPARSE. */
enum gx_err kobj_doc_end(struct gx_json *j) GX_WUR;

/* A single object's tree and the arena its strings live in. */
struct doc {
    cJSON *root;
    struct gx_arena strs;
};

/*
 * Parse @len bytes (not NUL-terminated) into @doc in one pass, holding at
 * most @max_values values when that is not 0. Free with kobj_doc_free,
 * also after a failure.
 */
enum gx_err kobj_doc_parse(struct doc *doc, const char *json, size_t len, int max_depth,
                           size_t max_values, struct gx_why *why) GX_WUR;
void kobj_doc_free(struct doc *doc);

/* ---- one decoder per kind: object @o whose own path is @path ("" at the root) ---- */

/*
 * The optional matchExpressions of @obj at @path (kobj_where.c); @node
 * allows node selectors' Gt and Lt. An unknown operator is GX_SEL_INVALID.
 */
enum gx_err kobj_sel_exprs(struct dec *d, const cJSON *obj, const char *path, bool node,
                           struct gx_sel_expr **out, size_t *n) GX_WUR;

/* Where the pod spec @spec at @sp may run (kobj_where.c). */
enum gx_err kobj_where(struct dec *d, const cJSON *spec, const char *sp,
                       struct gx_where *out) GX_WUR;
enum gx_err kobj_pod_obj(struct dec *d, const cJSON *o, const char *path,
                         struct gx_pod *out) GX_WUR;
enum gx_err kobj_node_obj(struct dec *d, const cJSON *o, const char *path,
                          struct gx_node_info *out) GX_WUR;
enum gx_err kobj_lease_obj(struct dec *d, const cJSON *o, const char *path,
                           struct gx_lease *out) GX_WUR;
enum gx_err kobj_slice_obj(struct dec *d, const cJSON *o, const char *path,
                           struct gx_rslice *out) GX_WUR;
enum gx_err kobj_claim_obj(struct dec *d, const cJSON *o, const char *path,
                           struct gx_rclaim *out) GX_WUR;
enum gx_err kobj_pdb_obj(struct dec *d, const cJSON *o, const char *path,
                         struct gx_pdb *out) GX_WUR;

#endif
