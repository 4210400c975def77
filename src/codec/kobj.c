/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj.c - Pod, Node, Lease, ResourceSlice, ResourceClaim, their lists
 * and watch events decoded from JSON into the plain structs of kobj.h.
 * Every kept string is copied into the caller's arena and every tree is
 * freed before returning, so cJSON never leaves this file. Input is peer
 * data: nesting is capped, every field present with the wrong type is an
 * error naming its path, absent optional fields take defaults. Quantities
 * are kept as strings (JSON numbers are formatted as strings); podreq
 * parses them. No I/O.
 *
 * Each document is read once: the gx_json scanner validates it and, in the
 * same walk, builds the cJSON tree the typed field readers below look into
 * (build_value). Lists (a 5,000-node NodeList is about 50 MiB) are never
 * one tree: the walk builds and decodes one item at a time. Strings that
 * repeat across a list's items (label keys, short values, resource names)
 * are interned: each is copied into the arena once and shared by every
 * item.
 *
 * Why one file: every kind is decoded with the same typed field readers
 * (get_field and its family, the last-wins rule, the shared-string
 * interning of list decodes); one decoder per kind on top of them.
 */
#include "kobj.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "strmap.h"

/* Room for a field path in an error message ("items[12].spec.containers[3].resources"). */
#define PATH_MAX_LEN 192

/*
 * Longest string value interned in a list. Label values and quantities are
 * short and repeat ("true", "8", "NVIDIA-A100-SXM4-80GB"); longer ones are
 * mostly unique and would only grow the intern map.
 */
#define INTERN_MAX_LEN 64

/* get_map flags: accept JSON numbers as quantity strings; intern short values. */
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

/* Separator between a path prefix and the next key ("" at the root). */
static const char *
sep(const char *path)
{
    return path[0] != '\0' ? "." : "";
}

/*
 * Field paths for error messages: "path.key" and "path.key[i]" (no dot at
 * the root). A path longer than the buffer is cut short, which only
 * shortens a message.
 */
static void
sub_path(char *buf, size_t n, const char *path, const char *key)
{
    if (snprintf(buf, n, "%s%s%s", path, sep(path), key) < 0) {
        buf[0] = '\0';
    }
}

/* "path.key[i]"; see sub_path. */
static void
index_path(char *buf, size_t n, const char *path, const char *key, size_t i)
{
    if (snprintf(buf, n, "%s%s%s[%zu]", path, sep(path), key, i) < 0) {
        buf[0] = '\0';
    }
}

/* Record an allocation failure; always returns GX_ENOMEM. */
static enum gx_err
nomem(struct dec *d)
{
    gx_why_set(d->why, "out of memory");
    return GX_ENOMEM;
}

/*
 * Copy @s into the arena, or with an intern map return the one shared copy
 * of it (made on first use). Strings longer than INTERN_MAX_LEN are copied.
 * NULL on ENOMEM; when only the map cannot grow the string is copied
 * unshared, which costs memory but not correctness.
 */
static const char *
shared_str(struct dec *d, const char *s)
{
    size_t len = strlen(s);

    return d->intern != NULL ? gx_intern(d->intern, s, len) : gx_arena_strndup(d->a, s, len);
}

/*
 * Member @key of @obj, the last one when the key repeats: every peer writes
 * and reads JSON with Go's decoders, where the last duplicate wins, and so
 * does extender.c for the rest of an ExtenderArgs (json.h). NULL if absent.
 */
static const cJSON *
last_member(const cJSON *obj, const char *key)
{
    const cJSON *c, *found = NULL;

    if (obj == NULL) {
        return NULL;
    }
    cJSON_ArrayForEach(c, obj)
    {
        if (c->string != NULL && strcmp(c->string, key) == 0) {
            found = c;
        }
    }
    return found;
}

/*
 * Look up @key in @obj (NULL: absent) and check it with @is. Absent or JSON
 * null gives *out = NULL and GX_OK; a wrong type is GX_EINVAL naming
 * "path.key" and @what ("an object").
 */
static enum gx_err
get_field(struct dec *d, const cJSON *obj, const char *path, const char *key, type_pred is,
          const char *what, const cJSON **out)
{
    const cJSON *v = last_member(obj, key);

    if (v == NULL || cJSON_IsNull(v)) {
        *out = NULL;
        return GX_OK;
    }
    if (!is(v)) {
        gx_why_set(d->why, "%s%s%s: must be %s", path, sep(path), key, what);
        return GX_EINVAL;
    }
    *out = v;
    return GX_OK;
}

/* Optional object member; see get_field. */
static enum gx_err
get_object(struct dec *d, const cJSON *obj, const char *path, const char *key, const cJSON **out)
{
    return get_field(d, obj, path, key, cJSON_IsObject, "an object", out);
}

/* Optional array member; see get_field. */
static enum gx_err
get_array(struct dec *d, const cJSON *obj, const char *path, const char *key, const cJSON **out)
{
    return get_field(d, obj, path, key, cJSON_IsArray, "an array", out);
}

/* Optional boolean member; false when absent. */
static enum gx_err
get_bool(struct dec *d, const cJSON *obj, const char *path, const char *key, bool *out)
{
    const cJSON *v;
    enum gx_err rc = get_field(d, obj, path, key, cJSON_IsBool, "a boolean", &v);

    if (rc != GX_OK) {
        return rc;
    }
    *out = v != NULL && cJSON_IsTrue(v);
    return GX_OK;
}

/*
 * Optional string member copied into the arena; @dflt (not copied, may be
 * NULL) when absent.
 */
static enum gx_err
get_string(struct dec *d, const cJSON *obj, const char *path, const char *key, const char *dflt,
           const char **out)
{
    const cJSON *v;
    enum gx_err rc = get_field(d, obj, path, key, cJSON_IsString, "a string", &v);

    if (rc != GX_OK) {
        return rc;
    }
    if (v == NULL) {
        *out = dflt;
        return GX_OK;
    }
    *out = gx_arena_strdup(d->a, v->valuestring);
    return *out != NULL ? GX_OK : nomem(d);
}

/*
 * As get_string, for values that repeat across the items of a list
 * (namespace, phase, container names, taints): interned in list decodes.
 */
static enum gx_err
get_shared_string(struct dec *d, const cJSON *obj, const char *path, const char *key,
                  const char *dflt, const char **out)
{
    const cJSON *v;
    enum gx_err rc = get_field(d, obj, path, key, cJSON_IsString, "a string", &v);

    if (rc != GX_OK) {
        return rc;
    }
    if (v == NULL) {
        *out = dflt;
        return GX_OK;
    }
    *out = shared_str(d, v->valuestring);
    return *out != NULL ? GX_OK : nomem(d);
}

/* Zeroed arena array of @n elements of @size bytes; NULL for n == 0 or ENOMEM. */
static void *
alloc_array(struct dec *d, size_t n, size_t size)
{
    if (n == 0 || n > SIZE_MAX / size) {
        return NULL;
    }
    return gx_arena_alloc(d->a, n * size);
}

/* Number of elements of a cJSON array or members of an object. */
static size_t
count_children(const cJSON *v)
{
    size_t n = 0;

    for (const cJSON *c = v != NULL ? v->child : NULL; c != NULL; c = c->next) {
        n++;
    }
    return n;
}

/*
 * Format a JSON number as a quantity string: integers exactly, other
 * values with enough digits to round-trip ("0.5", "1e+20").
 */
static const char *
number_string(struct dec *d, double v)
{
    char buf[64];

    if (v > -9007199254740992.0 && v < 9007199254740992.0 && (double)(int64_t)v == v) {
        (void)snprintf(buf, sizeof(buf), "%lld", (long long)(int64_t)v);
    } else {
        (void)snprintf(buf, sizeof(buf), "%.17g", v);
    }
    return shared_str(d, buf);
}

/*
 * Decode an optional map of strings ("path.key": {"k": "v", ...}). With
 * MAP_QUANTITIES in @flags, JSON numbers are accepted and formatted as
 * strings; with MAP_SHARE_VALUES, values are interned like the keys (keys
 * always are in list decodes).
 */
static enum gx_err
get_map(struct dec *d, const cJSON *obj, const char *path, const char *key, unsigned flags,
        struct gx_kv **kv, size_t *n)
{
    bool quantities = (flags & MAP_QUANTITIES) != 0, share = (flags & MAP_SHARE_VALUES) != 0;
    const cJSON *m, *c;
    struct gx_kv *arr = NULL;
    size_t count, i = 0;
    enum gx_err rc = get_object(d, obj, path, key, &m);

    if (rc != GX_OK) {
        return rc;
    }
    count = count_children(m);
    if (count > 0) {
        arr = alloc_array(d, count, sizeof(*arr));
        if (arr == NULL) {
            return nomem(d);
        }
    }
    for (c = m != NULL ? m->child : NULL; c != NULL && i < count; c = c->next, i++) {
        const char *k = c->string != NULL ? c->string : "";

        if (cJSON_IsString(c)) {
            arr[i].value =
                share ? shared_str(d, c->valuestring) : gx_arena_strdup(d->a, c->valuestring);
        } else if (quantities && cJSON_IsNumber(c)) {
            arr[i].value = number_string(d, c->valuedouble);
        } else {
            gx_why_set(d->why, "%s%s%s[\"%s\"]: must be %s", path, sep(path), key, k,
                       quantities ? "a quantity string" : "a string");
            return GX_EINVAL;
        }
        arr[i].key = shared_str(d, k);
        if (arr[i].key == NULL || arr[i].value == NULL) {
            return nomem(d);
        }
    }
    *kv = arr;
    *n = count;
    return GX_OK;
}

/* qsort comparator: gx_kv by key. */
static int
kv_cmp(const void *x, const void *y)
{
    const struct gx_kv *a = x, *b = y;

    return strcmp(a->key, b->key);
}

/* Decode one container object at @path (an element of containers/initContainers). */
static enum gx_err
decode_container(struct dec *d, const cJSON *c, const char *path, bool init,
                 struct gx_container *out)
{
    char rp[PATH_MAX_LEN];
    const cJSON *res;
    const char *policy = NULL;
    enum gx_err rc;

    if ((rc = get_shared_string(d, c, path, "name", "", &out->name)) != GX_OK) {
        return rc;
    }
    if ((rc = get_object(d, c, path, "resources", &res)) != GX_OK) {
        return rc;
    }
    sub_path(rp, sizeof(rp), path, "resources");
    if ((rc = get_map(d, res, rp, "requests", MAP_QUANTITIES | MAP_SHARE_VALUES, &out->requests,
                      &out->n_requests)) != GX_OK) {
        return rc;
    }
    if ((rc = get_map(d, res, rp, "limits", MAP_QUANTITIES | MAP_SHARE_VALUES, &out->limits,
                      &out->n_limits)) != GX_OK) {
        return rc;
    }
    if ((rc = get_shared_string(d, c, path, "restartPolicy", NULL, &policy)) != GX_OK) {
        return rc;
    }
    /* Only init containers can be sidecars (KEP-753). */
    out->restartable = init && policy != NULL && strcmp(policy, "Always") == 0;
    return GX_OK;
}

/* Decode the optional container array @key of a pod spec at @path. */
static enum gx_err
decode_containers(struct dec *d, const cJSON *spec, const char *path, const char *key, bool init,
                  struct gx_container **out, size_t *n)
{
    char cp[PATH_MAX_LEN];
    const cJSON *arr, *c;
    struct gx_container *cs = NULL;
    size_t count, i = 0;
    enum gx_err rc = get_array(d, spec, path, key, &arr);

    if (rc != GX_OK) {
        return rc;
    }
    count = count_children(arr);
    if (count > 0) {
        cs = alloc_array(d, count, sizeof(*cs));
        if (cs == NULL) {
            return nomem(d);
        }
    }
    for (c = arr != NULL ? arr->child : NULL; c != NULL && i < count; c = c->next, i++) {
        index_path(cp, sizeof(cp), path, key, i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", cp);
            return GX_EINVAL;
        }
        if ((rc = decode_container(d, c, cp, init, &cs[i])) != GX_OK) {
            return rc;
        }
    }
    *out = cs;
    *n = count;
    return GX_OK;
}

/*
 * The metadata, spec and status objects of a Kubernetes object @o at @path
 * (each may be absent: NULL), with their paths for error messages.
 */
static enum gx_err
object_parts(struct dec *d, const cJSON *o, const char *path, const char *kind,
             const cJSON *parts[3], char paths[3][PATH_MAX_LEN])
{
    static const char *const names[3] = {"metadata", "spec", "status"};
    enum gx_err rc;

    if (!cJSON_IsObject(o)) {
        gx_why_set(d->why, "%s: must be an object", path[0] != '\0' ? path : kind);
        return GX_EINVAL;
    }
    for (int i = 0; i < 3; i++) {
        sub_path(paths[i], PATH_MAX_LEN, path, names[i]);
        if ((rc = get_object(d, o, path, names[i], &parts[i])) != GX_OK) {
            return rc;
        }
    }
    return GX_OK;
}

/*
 * True when status.conditions holds DisruptionTarget=True with reason
 * PreemptionByScheduler: kube-scheduler marks its victims so before it
 * deletes them. Read leniently (a malformed condition is not one), as
 * nothing but the preempt verb's holds depends on it.
 */
static bool
pod_preempted(const cJSON *status)
{
    const cJSON *arr = status != NULL ? last_member(status, "conditions") : NULL;
    const cJSON *c;

    if (!cJSON_IsArray(arr)) {
        return false;
    }
    cJSON_ArrayForEach(c, arr)
    {
        const cJSON *type = last_member(c, "type");
        const cJSON *st = last_member(c, "status");
        const cJSON *reason = last_member(c, "reason");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "DisruptionTarget") == 0 &&
            cJSON_IsString(st) && strcmp(st->valuestring, "True") == 0 && cJSON_IsString(reason) &&
            strcmp(reason->valuestring, "PreemptionByScheduler") == 0) {
            return true;
        }
    }
    return false;
}

/* Decode a Pod object @o whose own path is @path ("" at the root). */
static enum gx_err
decode_pod_obj(struct dec *d, const cJSON *o, const char *path, struct gx_pod *out)
{
    char pp[3][PATH_MAX_LEN];
    const cJSON *parts[3], *meta, *spec, *status, *del, *prio;
    const char *mp = pp[0], *sp = pp[1], *tp = pp[2];
    struct gx_pod p;
    enum gx_err rc;

    memset(&p, 0, sizeof(p));
    if ((rc = object_parts(d, o, path, "pod", parts, pp)) != GX_OK) {
        return rc;
    }
    meta = parts[0], spec = parts[1], status = parts[2];

    if ((rc = get_string(d, meta, mp, "name", "", &p.name)) != GX_OK ||
        (rc = get_shared_string(d, meta, mp, "namespace", "", &p.namespace)) != GX_OK ||
        (rc = get_string(d, meta, mp, "uid", "", &p.uid)) != GX_OK ||
        (rc = get_string(d, meta, mp, "resourceVersion", "", &p.resource_version)) != GX_OK ||
        (rc = get_field(d, meta, mp, "deletionTimestamp", cJSON_IsString, "a string", &del)) !=
            GX_OK ||
        (rc = get_map(d, meta, mp, "labels", MAP_SHARE_VALUES, &p.labels, &p.n_labels)) != GX_OK ||
        (rc = get_map(d, meta, mp, "annotations", 0, &p.annotations, &p.n_annotations)) != GX_OK) {
        return rc;
    }
    p.deleting = del != NULL;

    if ((rc = get_string(d, spec, sp, "nodeName", NULL, &p.node_name)) != GX_OK ||
        (rc = get_field(d, spec, sp, "priority", cJSON_IsNumber, "a number", &prio)) != GX_OK ||
        (rc = decode_containers(d, spec, sp, "containers", false, &p.containers,
                                &p.n_containers)) != GX_OK ||
        (rc = decode_containers(d, spec, sp, "initContainers", true, &p.init_containers,
                                &p.n_init_containers)) != GX_OK ||
        (rc = get_map(d, spec, sp, "overhead", MAP_QUANTITIES | MAP_SHARE_VALUES, &p.overhead,
                      &p.n_overhead)) != GX_OK) {
        return rc;
    }
    /* spec.priority is an int32; anything else is clamped, never wrapped */
    if (prio != NULL) {
        double v = cJSON_GetNumberValue(prio);
        p.has_priority = true;
        p.priority = v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
    }
    /* An empty nodeName is what a pending pod may carry: treat it as unset. */
    if (p.node_name != NULL && p.node_name[0] == '\0') {
        p.node_name = NULL;
    }

    if ((rc = get_shared_string(d, status, tp, "phase", "", &p.phase)) != GX_OK) {
        return rc;
    }
    p.preempted = pod_preempted(status);
    *out = p;
    return GX_OK;
}

/* Decode spec.taints of a node. */
static enum gx_err
decode_taints(struct dec *d, const cJSON *spec, const char *sp, struct gx_node_info *n)
{
    char tp[PATH_MAX_LEN];
    const cJSON *arr, *t;
    size_t count, i = 0;
    enum gx_err rc = get_array(d, spec, sp, "taints", &arr);

    if (rc != GX_OK) {
        return rc;
    }
    count = count_children(arr);
    if (arr == NULL || count == 0) {
        return GX_OK;
    }
    n->taints = alloc_array(d, count, sizeof(*n->taints));
    if (n->taints == NULL) {
        return nomem(d);
    }
    for (t = arr->child; t != NULL && i < count; t = t->next, i++) {
        index_path(tp, sizeof(tp), sp, "taints", i);
        if (!cJSON_IsObject(t)) {
            gx_why_set(d->why, "%s: must be an object", tp);
            return GX_EINVAL;
        }
        if ((rc = get_shared_string(d, t, tp, "key", "", &n->taints[i].key)) != GX_OK ||
            (rc = get_shared_string(d, t, tp, "value", "", &n->taints[i].value)) != GX_OK ||
            (rc = get_shared_string(d, t, tp, "effect", "", &n->taints[i].effect)) != GX_OK) {
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
    enum gx_err rc = get_array(d, status, tp, "conditions", &arr);

    if (rc != GX_OK) {
        return rc;
    }
    *ready = false;
    for (c = arr != NULL ? arr->child : NULL; c != NULL; c = c->next, i++) {
        index_path(cp, sizeof(cp), tp, "conditions", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", cp);
            return GX_EINVAL;
        }
        if ((rc = get_field(d, c, cp, "type", cJSON_IsString, "a string", &type)) != GX_OK ||
            (rc = get_field(d, c, cp, "status", cJSON_IsString, "a string", &st)) != GX_OK) {
            return rc;
        }
        if (type != NULL && strcmp(type->valuestring, "Ready") == 0) {
            *ready = st != NULL && strcmp(st->valuestring, "True") == 0;
        }
    }
    return GX_OK;
}

/* Decode a Node object @o whose own path is @path ("" at the root). */
static enum gx_err
decode_node_obj(struct dec *d, const cJSON *o, const char *path, struct gx_node_info *out)
{
    char pp[3][PATH_MAX_LEN];
    const cJSON *parts[3], *meta, *spec, *status;
    const char *mp = pp[0], *sp = pp[1], *tp = pp[2];
    struct gx_node_info n;
    enum gx_err rc;

    memset(&n, 0, sizeof(n));
    if ((rc = object_parts(d, o, path, "node", parts, pp)) != GX_OK) {
        return rc;
    }
    meta = parts[0], spec = parts[1], status = parts[2];

    if ((rc = get_string(d, meta, mp, "name", "", &n.name)) != GX_OK ||
        (rc = get_string(d, meta, mp, "resourceVersion", "", &n.resource_version)) != GX_OK ||
        (rc = get_map(d, meta, mp, "labels", MAP_SHARE_VALUES, &n.labels, &n.n_labels)) != GX_OK) {
        return rc;
    }
    if (n.n_labels > 1) {
        qsort(n.labels, n.n_labels, sizeof(*n.labels), kv_cmp);
    }

    if ((rc = get_bool(d, spec, sp, "unschedulable", &n.unschedulable)) != GX_OK ||
        (rc = decode_taints(d, spec, sp, &n)) != GX_OK) {
        return rc;
    }

    if ((rc = get_map(d, status, tp, "allocatable", MAP_QUANTITIES | MAP_SHARE_VALUES,
                      &n.allocatable, &n.n_allocatable)) != GX_OK ||
        (rc = get_map(d, status, tp, "capacity", MAP_QUANTITIES | MAP_SHARE_VALUES, &n.capacity,
                      &n.n_capacity)) != GX_OK ||
        (rc = decode_ready(d, status, tp, &n.ready)) != GX_OK) {
        return rc;
    }
    *out = n;
    return GX_OK;
}

/* Decode a Lease object @o at @path: its metadata only. */
static enum gx_err
decode_lease_obj(struct dec *d, const cJSON *o, const char *path, struct gx_lease *out)
{
    char pp[3][PATH_MAX_LEN];
    const cJSON *parts[3];
    const char *mp = pp[0];
    struct gx_lease l;
    enum gx_err rc;

    memset(&l, 0, sizeof(l));
    if ((rc = object_parts(d, o, path, "lease", parts, pp)) != GX_OK) {
        return rc;
    }
    if ((rc = get_string(d, parts[0], mp, "name", "", &l.name)) != GX_OK ||
        (rc = get_shared_string(d, parts[0], mp, "namespace", "", &l.namespace)) != GX_OK ||
        (rc = get_string(d, parts[0], mp, "resourceVersion", "", &l.resource_version)) != GX_OK ||
        (rc = get_map(d, parts[0], mp, "annotations", 0, &l.annotations, &l.n_annotations)) !=
            GX_OK) {
        return rc;
    }
    *out = l;
    return GX_OK;
}

/*
 * The device's UUID: the string attribute "uuid" of any domain
 * ("gpu.nvidia.com/uuid" or unqualified), NULL when it has none.
 */
static enum gx_err
decode_device_uuid(struct dec *d, const cJSON *dev, const char *path, const char **uuid)
{
    char ap[PATH_MAX_LEN];
    const cJSON *attrs, *a;
    enum gx_err rc = get_object(d, dev, path, "attributes", &attrs);

    *uuid = NULL;
    if (rc != GX_OK || attrs == NULL) {
        return rc;
    }
    sub_path(ap, sizeof(ap), path, "attributes");
    for (a = attrs->child; a != NULL; a = a->next) {
        const char *k = a->string != NULL ? a->string : "";
        const char *slash = strrchr(k, '/');

        if (strcmp(slash != NULL ? slash + 1 : k, "uuid") != 0) {
            continue;
        }
        if (!cJSON_IsObject(a)) {
            gx_why_set(d->why, "%s[\"%s\"]: must be an object", ap, k);
            return GX_EINVAL;
        }
        return get_string(d, a, ap, "string", NULL, uuid);
    }
    return GX_OK;
}

/* Decode a ResourceSlice object @o at @path. */
static enum gx_err
decode_slice_obj(struct dec *d, const cJSON *o, const char *path, struct gx_rslice *out)
{
    char pp[3][PATH_MAX_LEN], xp[PATH_MAX_LEN];
    const cJSON *parts[3], *pool, *devs, *c;
    const char *mp = pp[0], *sp = pp[1];
    struct gx_rslice r;
    size_t count, i = 0;
    enum gx_err rc;

    memset(&r, 0, sizeof(r));
    if ((rc = object_parts(d, o, path, "resourceslice", parts, pp)) != GX_OK) {
        return rc;
    }
    if ((rc = get_string(d, parts[0], mp, "name", "", &r.name)) != GX_OK ||
        (rc = get_string(d, parts[0], mp, "resourceVersion", "", &r.resource_version)) != GX_OK ||
        (rc = get_shared_string(d, parts[1], sp, "driver", "", &r.driver)) != GX_OK ||
        (rc = get_shared_string(d, parts[1], sp, "nodeName", "", &r.node_name)) != GX_OK ||
        (rc = get_object(d, parts[1], sp, "pool", &pool)) != GX_OK ||
        (rc = get_array(d, parts[1], sp, "devices", &devs)) != GX_OK) {
        return rc;
    }
    sub_path(xp, sizeof(xp), sp, "pool");
    if ((rc = get_shared_string(d, pool, xp, "name", "", &r.pool)) != GX_OK) {
        return rc;
    }
    count = count_children(devs);
    if (count > 0 && (r.devices = alloc_array(d, count, sizeof(*r.devices))) == NULL) {
        return nomem(d);
    }
    for (c = devs != NULL ? devs->child : NULL; c != NULL && i < count; c = c->next, i++) {
        index_path(xp, sizeof(xp), sp, "devices", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = get_string(d, c, xp, "name", "", &r.devices[i].name)) != GX_OK ||
            (rc = decode_device_uuid(d, c, xp, &r.devices[i].uuid)) != GX_OK) {
            return rc;
        }
    }
    r.n_devices = count;
    *out = r;
    return GX_OK;
}

/* Decode status.allocation.devices.results of a claim (@status at @tp). */
static enum gx_err
decode_claim_results(struct dec *d, const cJSON *status, const char *tp, struct gx_rclaim *r)
{
    char ap[PATH_MAX_LEN], dp[PATH_MAX_LEN], xp[PATH_MAX_LEN];
    const cJSON *alloc, *devs, *res, *c;
    size_t count, i = 0;
    enum gx_err rc;

    sub_path(ap, sizeof(ap), tp, "allocation");
    sub_path(dp, sizeof(dp), ap, "devices");
    if ((rc = get_object(d, status, tp, "allocation", &alloc)) != GX_OK ||
        (rc = get_object(d, alloc, ap, "devices", &devs)) != GX_OK ||
        (rc = get_array(d, devs, dp, "results", &res)) != GX_OK) {
        return rc;
    }
    count = count_children(res);
    if (count > 0 && (r->results = alloc_array(d, count, sizeof(*r->results))) == NULL) {
        return nomem(d);
    }
    for (c = res != NULL ? res->child : NULL; c != NULL && i < count; c = c->next, i++) {
        struct gx_dra_result *x = &r->results[i];

        index_path(xp, sizeof(xp), dp, "results", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = get_shared_string(d, c, xp, "driver", "", &x->driver)) != GX_OK ||
            (rc = get_shared_string(d, c, xp, "pool", "", &x->pool)) != GX_OK ||
            (rc = get_string(d, c, xp, "device", "", &x->device)) != GX_OK) {
            return rc;
        }
    }
    r->n_results = count;
    return GX_OK;
}

/* Decode a ResourceClaim object @o at @path. */
static enum gx_err
decode_claim_obj(struct dec *d, const cJSON *o, const char *path, struct gx_rclaim *out)
{
    char pp[3][PATH_MAX_LEN], xp[PATH_MAX_LEN];
    const cJSON *parts[3], *rf, *c;
    const char *mp = pp[0], *tp = pp[2];
    struct gx_rclaim r;
    size_t count, i = 0;
    enum gx_err rc;

    memset(&r, 0, sizeof(r));
    if ((rc = object_parts(d, o, path, "resourceclaim", parts, pp)) != GX_OK) {
        return rc;
    }
    if ((rc = get_string(d, parts[0], mp, "name", "", &r.name)) != GX_OK ||
        (rc = get_shared_string(d, parts[0], mp, "namespace", "", &r.namespace)) != GX_OK ||
        (rc = get_string(d, parts[0], mp, "uid", "", &r.uid)) != GX_OK ||
        (rc = get_string(d, parts[0], mp, "resourceVersion", "", &r.resource_version)) != GX_OK ||
        (rc = decode_claim_results(d, parts[2], tp, &r)) != GX_OK ||
        (rc = get_array(d, parts[2], tp, "reservedFor", &rf)) != GX_OK) {
        return rc;
    }
    count = count_children(rf);
    if (count > 0 && (r.reserved_for = alloc_array(d, count, sizeof(*r.reserved_for))) == NULL) {
        return nomem(d);
    }
    for (c = rf != NULL ? rf->child : NULL; c != NULL && i < count; c = c->next, i++) {
        index_path(xp, sizeof(xp), tp, "reservedFor", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = get_string(d, c, xp, "name", "", &r.reserved_for[i])) != GX_OK) {
            return rc;
        }
    }
    r.n_reserved_for = count;
    *out = r;
    return GX_OK;
}

/* An optional array of strings at @path.@key into an arena array. */
static enum gx_err
get_strings(struct dec *d, const cJSON *obj, const char *path, const char *key, const char ***out,
            size_t *n)
{
    char xp[PATH_MAX_LEN];
    const cJSON *arr, *c;
    size_t count, i = 0;
    enum gx_err rc = get_array(d, obj, path, key, &arr);

    *out = NULL;
    *n = 0;
    if (rc != GX_OK) {
        return rc;
    }
    count = count_children(arr);
    if (count > 0 && (*out = alloc_array(d, count, sizeof(**out))) == NULL) {
        return nomem(d);
    }
    for (c = arr != NULL ? arr->child : NULL; c != NULL && i < count; c = c->next, i++) {
        if (!cJSON_IsString(c)) {
            index_path(xp, sizeof(xp), path, key, i);
            gx_why_set(d->why, "%s: must be a string", xp);
            return GX_EINVAL;
        }
        if (((*out)[i] = shared_str(d, c->valuestring)) == NULL) {
            return nomem(d);
        }
    }
    *n = count;
    return GX_OK;
}

/* spec.selector.matchExpressions of a PDB (@sel at @selp). */
static enum gx_err
decode_sel_exprs(struct dec *d, const cJSON *sel, const char *selp, struct gx_pdb *p)
{
    static const char *const ops[] = {[GX_SEL_IN] = "In",
                                      [GX_SEL_NOT_IN] = "NotIn",
                                      [GX_SEL_EXISTS] = "Exists",
                                      [GX_SEL_DOES_NOT_EXIST] = "DoesNotExist"};
    char xp[PATH_MAX_LEN];
    const cJSON *arr, *c;
    size_t count, i = 0;
    enum gx_err rc = get_array(d, sel, selp, "matchExpressions", &arr);

    if (rc != GX_OK) {
        return rc;
    }
    count = count_children(arr);
    if (count > 0 && (p->exprs = alloc_array(d, count, sizeof(*p->exprs))) == NULL) {
        return nomem(d);
    }
    for (c = arr != NULL ? arr->child : NULL; c != NULL && i < count; c = c->next, i++) {
        struct gx_sel_expr *x = &p->exprs[i];
        const char *op = NULL;

        index_path(xp, sizeof(xp), selp, "matchExpressions", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = get_shared_string(d, c, xp, "key", "", &x->key)) != GX_OK ||
            (rc = get_string(d, c, xp, "operator", "", &op)) != GX_OK ||
            (rc = get_strings(d, c, xp, "values", &x->values, &x->n_values)) != GX_OK) {
            return rc;
        }
        x->op = GX_SEL_INVALID;
        for (size_t k = 0; k < GX_ARRAY_LEN(ops); k++) {
            if (strcmp(op, ops[k]) == 0) {
                x->op = (enum gx_sel_op)k;
            }
        }
    }
    p->n_exprs = count;
    return GX_OK;
}

/* Decode a PodDisruptionBudget object @o at @path. */
static enum gx_err
decode_pdb_obj(struct dec *d, const cJSON *o, const char *path, struct gx_pdb *out)
{
    char pp[3][PATH_MAX_LEN], selp[PATH_MAX_LEN];
    const cJSON *parts[3], *sel, *allowed, *disrupted, *c;
    const char *mp = pp[0], *sp = pp[1], *tp = pp[2];
    struct gx_pdb p;
    size_t i = 0;
    enum gx_err rc;

    memset(&p, 0, sizeof(p));
    if ((rc = object_parts(d, o, path, "poddisruptionbudget", parts, pp)) != GX_OK) {
        return rc;
    }
    sub_path(selp, sizeof(selp), sp, "selector");
    if ((rc = get_string(d, parts[0], mp, "name", "", &p.name)) != GX_OK ||
        (rc = get_shared_string(d, parts[0], mp, "namespace", "", &p.namespace)) != GX_OK ||
        (rc = get_string(d, parts[0], mp, "uid", "", &p.uid)) != GX_OK ||
        (rc = get_string(d, parts[0], mp, "resourceVersion", "", &p.resource_version)) != GX_OK ||
        (rc = get_object(d, parts[1], sp, "selector", &sel)) != GX_OK ||
        (rc = get_map(d, sel, selp, "matchLabels", MAP_SHARE_VALUES, &p.match_labels,
                      &p.n_match_labels)) != GX_OK ||
        (rc = decode_sel_exprs(d, sel, selp, &p)) != GX_OK ||
        (rc = get_field(d, parts[2], tp, "disruptionsAllowed", cJSON_IsNumber, "a number",
                        &allowed)) != GX_OK ||
        (rc = get_object(d, parts[2], tp, "disruptedPods", &disrupted)) != GX_OK) {
        return rc;
    }
    p.has_selector = sel != NULL;
    if (allowed != NULL) {
        double v = cJSON_GetNumberValue(allowed);
        p.disruptions_allowed = v >= 2147483647.0 ? INT32_MAX : v <= 0.0 ? 0 : (int32_t)v;
    }
    p.n_disrupted = count_children(disrupted);
    if (p.n_disrupted > 0 &&
        (p.disrupted = alloc_array(d, p.n_disrupted, sizeof(*p.disrupted))) == NULL) {
        return nomem(d);
    }
    for (c = disrupted != NULL ? disrupted->child : NULL; c != NULL && i < p.n_disrupted;
         c = c->next, i++) {
        if ((p.disrupted[i] = gx_arena_strdup(d->a, c->string != NULL ? c->string : "")) == NULL) {
            return nomem(d);
        }
    }
    *out = p;
    return GX_OK;
}

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

static enum gx_err build_value(struct tree *t, cJSON **out);

static enum gx_err
tree_nomem(struct tree *t)
{
    gx_why_set(t->j->why, "out of memory");
    return GX_ENOMEM;
}

/* The depth error in the words every decoder of this file uses. */
static enum gx_err
too_deep(struct gx_json *j)
{
    gx_why_set(j->why, "JSON nested deeper than %d levels", j->max_depth);
    return GX_ETOOBIG;
}

/* Count one more value (an empty container counts once more, as its brackets would). */
static enum gx_err
count_value(struct tree *t)
{
    if (t->max_values > 0 && ++t->values > t->max_values) {
        gx_why_set(t->j->why, "holds more than %zu JSON values", t->max_values);
        return GX_ETOOBIG;
    }
    return GX_OK;
}

/* A NUL-terminated copy of the raw string bytes @raw, unescaped when @esc. */
static const char *
tree_str(struct tree *t, const char *raw, size_t len, bool esc)
{
    char *s;

    if (!esc) {
        return gx_arena_strndup(t->strs, raw, len);
    }
    s = gx_arena_alloc(t->strs, len + 1); /* unescaping never grows a string */
    if (s != NULL) {
        (void)gx_json_unescape(raw, len, s);
    }
    return s;
}

/* The number whose validated text is @p[0..len). */
static double
number_at(struct tree *t, const char *p, size_t len)
{
    char buf[64];
    const char *s = buf;

    if (len < sizeof(buf)) {
        memcpy(buf, p, len);
        buf[len] = '\0';
    } else if ((s = gx_arena_strndup(t->strs, p, len)) == NULL) {
        return 0; /* 64 digits that cannot be copied: out of memory soon anyway */
    }
    return strtod(s, NULL);
}

/* Build the object or array at the cursor. */
static enum gx_err
build_container(struct tree *t, bool object, cJSON **out)
{
    cJSON *c = object ? cJSON_CreateObject() : cJSON_CreateArray();
    const char *key = NULL, *k = NULL;
    size_t klen = 0, n = 0;
    enum gx_err rc = object ? gx_json_enter_object(t->j) : gx_json_enter_array(t->j);

    if (rc == GX_ETOOBIG) {
        rc = too_deep(t->j);
    } else if (rc == GX_OK && c == NULL) {
        rc = tree_nomem(t);
    }
    while (rc == GX_OK && (object ? gx_json_next_member(t->j, &key, &klen, &rc)
                                  : gx_json_next_element(t->j, &rc))) {
        cJSON *v = NULL;

        if (object && (k = tree_str(t, key, klen, memchr(key, '\\', klen) != NULL)) == NULL) {
            rc = tree_nomem(t);
        } else if ((rc = build_value(t, &v)) == GX_OK) {
            (void)(object ? cJSON_AddItemToObjectCS(c, k, v) : cJSON_AddItemToArray(c, v));
            n++;
        }
    }
    if (rc == GX_OK && n == 0) {
        rc = count_value(t);
    }
    if (rc != GX_OK) {
        cJSON_Delete(c);
        return rc;
    }
    *out = c;
    return GX_OK;
}

/* Build the value at the cursor into *out (yours). */
static enum gx_err
build_value(struct tree *t, cJSON **out)
{
    char c = gx_json_peek(t->j);
    size_t at = t->j->pos, len = 0;
    const char *raw = NULL, *s;
    bool esc = false;
    enum gx_err rc = count_value(t);

    if (rc != GX_OK) {
        return rc;
    }
    if (c == '{' || c == '[') {
        return build_container(t, c == '{', out);
    }
    if (c == '"') {
        if ((rc = gx_json_string_raw(t->j, &raw, &len, &esc)) != GX_OK) {
            return rc;
        }
        s = tree_str(t, raw, len, esc);
        *out = s != NULL ? cJSON_CreateStringReference(s) : NULL;
    } else {
        /* a literal or a number, validated by the skip */
        if ((rc = gx_json_skip(t->j)) != GX_OK) {
            return rc;
        }
        *out = c == 't'   ? cJSON_CreateTrue()
               : c == 'f' ? cJSON_CreateFalse()
               : c == 'n' ? cJSON_CreateNull()
                          : cJSON_CreateNumber(number_at(t, t->j->p + at, t->j->pos - at));
    }
    return *out != NULL ? GX_OK : tree_nomem(t);
}

/* Nothing but whitespace may follow the document's value. */
static enum gx_err
doc_end(struct gx_json *j)
{
    (void)gx_json_peek(j);
    if (j->pos < j->len) {
        gx_why_set(j->why, "trailing data after JSON at offset %zu", j->pos);
        return GX_EPARSE;
    }
    return GX_OK;
}

/* A single object's tree and the arena its strings live in. */
struct doc {
    cJSON *root;
    struct gx_arena strs;
};

/*
 * Parse @len bytes (not NUL-terminated) into @doc in one pass, holding at
 * most @max_values values when that is not 0. Free with doc_free, also
 * after a failure.
 */
static enum gx_err
doc_parse(struct doc *doc, const char *json, size_t len, int max_depth, size_t max_values,
          struct gx_why *why)
{
    struct gx_json j;
    struct tree t = {&j, &doc->strs, 0, max_values};
    enum gx_err rc;

    /* strings never outgrow the text: one chunk holds a small document's */
    gx_arena_init(&doc->strs, len < 32768 ? len + len / 2 + 64 : 0);
    doc->root = NULL;
    if (json == NULL || len == 0) {
        gx_why_set(why, "empty JSON document");
        return GX_EPARSE;
    }
    gx_json_init(&j, json, len, max_depth, why);
    if ((rc = build_value(&t, &doc->root)) == GX_OK) {
        rc = doc_end(&j);
    }
    return rc;
}

static void
doc_free(struct doc *doc)
{
    cJSON_Delete(doc->root);
    doc->root = NULL;
    gx_arena_release(&doc->strs);
}

/* Linear scan of @kv for @key. */
const char *
gx_kv_get(const struct gx_kv *kv, size_t n, const char *key)
{
    if (kv == NULL || key == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i].key, key) == 0) {
            return kv[i].value;
        }
    }
    return NULL;
}

/* Decode one Pod; fails with GX_EPARSE/GX_ETOOBIG/GX_EINVAL/GX_ENOMEM and @why. */
bool
gx_pod_finished(const struct gx_pod *pod)
{
    return pod->deleting || strcmp(pod->phase, "Succeeded") == 0 ||
           strcmp(pod->phase, "Failed") == 0;
}

enum gx_err
gx_kobj_decode_pod(const char *json, size_t len, int max_depth, struct gx_arena *a,
                   struct gx_pod *out, struct gx_why *why)
{
    struct dec d = {a, why, NULL};
    struct doc doc;
    enum gx_err rc;

    /*
     * A Pod comes from a peer (the scheduler's request) and is decoded into
     * a tree: cap what it may hold, so a body of 100,000 containers cannot
     * cost many times its size. The API server stores no object over 1.5
     * MiB (etcd's request limit), so no real Pod comes near either cap.
     */
    if (len > GX_POD_MAX_BYTES) {
        gx_why_set(why, "is %zu bytes, more than the %u a Pod may have", len, GX_POD_MAX_BYTES);
        return GX_ETOOBIG;
    }
    rc = doc_parse(&doc, json, len, max_depth, GX_POD_MAX_VALUES, why);
    if (rc == GX_OK) {
        rc = decode_pod_obj(&d, doc.root, "", out);
    }
    doc_free(&doc);
    return rc;
}

/* Decode one Node; fails as gx_kobj_decode_pod does. */
enum gx_err
gx_kobj_decode_node(const char *json, size_t len, int max_depth, struct gx_arena *a,
                    struct gx_node_info *out, struct gx_why *why)
{
    struct dec d = {a, why, NULL};
    struct doc doc;
    enum gx_err rc = doc_parse(&doc, json, len, max_depth, 0, why);

    if (rc == GX_OK) {
        rc = decode_node_obj(&d, doc.root, "", out);
    }
    doc_free(&doc);
    return rc;
}

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

/* Decode one list item into the element @slot (a gx_node_info or a gx_pod). */
typedef enum gx_err (*item_fn)(struct dec *d, const cJSON *o, const char *path, void *slot);

/* item_fn for NodeList items. */
static enum gx_err
node_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return decode_node_obj(d, o, path, slot);
}

/* item_fn for PodList items. */
static enum gx_err
pod_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return decode_pod_obj(d, o, path, slot);
}

/* item_fn for LeaseList items. */
static enum gx_err
lease_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return decode_lease_obj(d, o, path, slot);
}

/* item_fn for ResourceSliceList items. */
static enum gx_err
slice_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return decode_slice_obj(d, o, path, slot);
}

/* item_fn for ResourceClaimList items. */
static enum gx_err
claim_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return decode_claim_obj(d, o, path, slot);
}

/* item_fn for PodDisruptionBudgetList items. */
static enum gx_err
pdb_item(struct dec *d, const cJSON *o, const char *path, void *slot)
{
    return decode_pdb_obj(d, o, path, slot);
}

/*
 * A list document as one pass over it finds it. Items are decoded as the
 * scan reaches them, one cJSON tree at a time; a repeated "items" or
 * "metadata" starts over (the last one wins, as last_member). An item that
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
        return nomem(&lp->d);
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

    if (rc == GX_OK && (rc = build_value(&t, &item)) == GX_OK) {
        index_path(ip, sizeof(ip), "", "items", lp->n);
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

    return build_value(&t, &lp->meta);
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
        (rc = get_string(&md, lp->meta, "metadata", "resourceVersion", NULL, rv)) != GX_OK) {
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
        rc = doc_end(&j);
    }
    if (rc == GX_ETOOBIG) {
        rc = too_deep(&j);
    } else if (rc == GX_ENOMEM) {
        gx_why_set(why, "out of memory");
    }
    if (rc == GX_OK) {
        rc = list_result(&lp, why, &rv);
    }
    if (rc == GX_OK && lp.n > 0) {
        arr = alloc_array(&lp.d, lp.n, size);
        rc = arr != NULL ? GX_OK : nomem(&lp.d);
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

/* Decode one Lease; fails as gx_kobj_decode_node does. */
enum gx_err
gx_kobj_decode_lease(const char *json, size_t len, int max_depth, struct gx_arena *a,
                     struct gx_lease *out, struct gx_why *why)
{
    struct dec d = {a, why, NULL};
    struct doc doc;
    enum gx_err rc = doc_parse(&doc, json, len, max_depth, 0, why);

    if (rc == GX_OK) {
        rc = decode_lease_obj(&d, doc.root, "", out);
    }
    doc_free(&doc);
    return rc;
}

void
gx_kobj_failure_text(enum gx_err rc, long status, const char *body, size_t len, char *out, size_t n)
{
    struct doc doc;
    const cJSON *msg = NULL;

    if (rc != GX_OK) {
        (void)snprintf(out, n, "%s", gx_strerror(rc));
        return;
    }
    if (doc_parse(&doc, body, len, 8, 0, NULL) == GX_OK) {
        msg = last_member(doc.root, "message");
    }
    if (msg != NULL && cJSON_IsString(msg) && msg->valuestring != NULL &&
        msg->valuestring[0] != '\0') {
        (void)snprintf(out, n, "HTTP %ld: %s", status, msg->valuestring);
    } else {
        (void)snprintf(out, n, "HTTP %ld", status);
    }
    doc_free(&doc);
}

static const char *const watch_types[] = {
    [GX_WATCH_ADDED] = "ADDED",     [GX_WATCH_MODIFIED] = "MODIFIED",
    [GX_WATCH_DELETED] = "DELETED", [GX_WATCH_BOOKMARK] = "BOOKMARK",
    [GX_WATCH_ERROR] = "ERROR",
};

/* Decode the Status object of an ERROR event into code/message. */
static enum gx_err
decode_status(struct dec *d, const cJSON *o, struct gx_watch_event *ev)
{
    const cJSON *code;
    enum gx_err rc;

    if ((rc = get_field(d, o, "object", "code", cJSON_IsNumber, "a number", &code)) != GX_OK ||
        (rc = get_string(d, o, "object", "message", "", &ev->message)) != GX_OK) {
        return rc;
    }
    if (code != NULL) {
        if (code->valuedouble < 0 || code->valuedouble > 999 ||
            (double)(int)code->valuedouble != code->valuedouble) {
            gx_why_set(d->why, "object.code: must be an HTTP status code");
            return GX_EINVAL;
        }
        ev->code = (int)code->valuedouble;
    }
    ev->resource_version = "";
    return GX_OK;
}

/* Decode one watch event line; unknown types and missing objects are GX_EINVAL. */
enum gx_err
gx_kobj_decode_event(const char *json, size_t len, enum gx_kind kind, int max_depth,
                     struct gx_arena *a, struct gx_watch_event *out, struct gx_why *why)
{
    struct dec d = {a, why, NULL};
    struct gx_watch_event ev;
    struct doc doc;
    const cJSON *root, *type, *obj, *meta;
    size_t t;
    enum gx_err rc = doc_parse(&doc, json, len, max_depth, 0, why);

    if (rc != GX_OK) {
        doc_free(&doc);
        return rc;
    }
    root = doc.root;
    memset(&ev, 0, sizeof(ev));
    if (!cJSON_IsObject(root)) {
        gx_why_set(why, "watch event: must be an object");
        rc = GX_EINVAL;
        goto out;
    }
    if ((rc = get_field(&d, root, "", "type", cJSON_IsString, "a string", &type)) != GX_OK ||
        (rc = get_object(&d, root, "", "object", &obj)) != GX_OK) {
        goto out;
    }
    if (type == NULL || obj == NULL) {
        gx_why_set(why, "%s: required", type == NULL ? "type" : "object");
        rc = GX_EINVAL;
        goto out;
    }
    for (t = 0; t < GX_ARRAY_LEN(watch_types); t++) {
        if (strcmp(type->valuestring, watch_types[t]) == 0) {
            break;
        }
    }
    if (t == GX_ARRAY_LEN(watch_types)) {
        gx_why_set(why, "type: unknown watch event type \"%.64s\"", type->valuestring);
        rc = GX_EINVAL;
        goto out;
    }
    ev.type = (enum gx_watch_type)t;
    switch (ev.type) {
    case GX_WATCH_ERROR:
        rc = decode_status(&d, obj, &ev);
        break;
    case GX_WATCH_BOOKMARK:
        /* A bookmark carries only metadata.resourceVersion; the rest is empty. */
        if ((rc = get_object(&d, obj, "object", "metadata", &meta)) == GX_OK) {
            rc = get_string(&d, meta, "object.metadata", "resourceVersion", "",
                            &ev.resource_version);
        }
        break;
    default:
        switch (kind) {
        case GX_KIND_NODE:
            rc = decode_node_obj(&d, obj, "object", &ev.obj.node);
            ev.resource_version = ev.obj.node.resource_version;
            break;
        case GX_KIND_POD:
            rc = decode_pod_obj(&d, obj, "object", &ev.obj.pod);
            ev.resource_version = ev.obj.pod.resource_version;
            break;
        case GX_KIND_LEASE:
            rc = decode_lease_obj(&d, obj, "object", &ev.obj.lease);
            ev.resource_version = ev.obj.lease.resource_version;
            break;
        case GX_KIND_RESOURCE_SLICE:
            rc = decode_slice_obj(&d, obj, "object", &ev.obj.slice);
            ev.resource_version = ev.obj.slice.resource_version;
            break;
        case GX_KIND_RESOURCE_CLAIM:
            rc = decode_claim_obj(&d, obj, "object", &ev.obj.claim);
            ev.resource_version = ev.obj.claim.resource_version;
            break;
        case GX_KIND_PDB:
            rc = decode_pdb_obj(&d, obj, "object", &ev.obj.pdb);
            ev.resource_version = ev.obj.pdb.resource_version;
            break;
        }
        break;
    }
    if (rc == GX_OK) {
        *out = ev;
    }
out:
    doc_free(&doc);
    return rc;
}
