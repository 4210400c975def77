/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj.c - what every kind of kobj.h is decoded with: the one-pass reader
 * of a document into a cJSON tree and the typed field readers that look
 * into it. The decoders of the kinds (kobj_pod.c, kobj_node.c,
 * kobj_kinds.c), the list walk (kobj_list.c) and the watch events
 * (kobj_watch.c) sit on top; kobj_int.h lists them. Every kept string is
 * copied into the caller's arena and every tree is freed before returning,
 * so cJSON never leaves kobj. Input is peer data: nesting is capped, every
 * field present with the wrong type is an error naming its path, absent
 * optional fields take defaults. Quantities are kept as strings (JSON
 * numbers are formatted as strings); podreq parses them. No I/O.
 *
 * Each document is read once: the gx_json scanner validates it and, in the
 * same walk, builds the cJSON tree the typed field readers look into
 * (kobj_build_value). Lists (a 5,000-node NodeList is about 50 MiB) are
 * never one tree: kobj_list.c builds and decodes one item at a time.
 * Strings that repeat across a list's items (label keys, short values,
 * resource names) are interned: each is copied into the arena once and
 * shared by every item (kobj_shared_str).
 */
#include "kobj.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "kobj_int.h"
#include "strmap.h"

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
void
kobj_sub_path(char *buf, size_t n, const char *path, const char *key)
{
    if (snprintf(buf, n, "%s%s%s", path, sep(path), key) < 0) {
        buf[0] = '\0';
    }
}

/* "path.key[i]"; see kobj_sub_path. */
void
kobj_index_path(char *buf, size_t n, const char *path, const char *key, size_t i)
{
    if (snprintf(buf, n, "%s%s%s[%zu]", path, sep(path), key, i) < 0) {
        buf[0] = '\0';
    }
}

/*
 * Copy @s into the arena, or with an intern map return the one shared copy
 * of it (made on first use). Strings longer than INTERN_MAX_LEN are copied.
 * NULL on ENOMEM; when only the map cannot grow the string is copied
 * unshared, which costs memory but not correctness.
 */
const char *
kobj_shared_str(struct dec *d, const char *s)
{
    size_t len = strlen(s);

    return d->intern != NULL ? gx_intern(d->intern, s, len) : gx_arena_strndup(d->a, s, len);
}

/*
 * Member @key of @obj, the last one when the key repeats: every peer writes
 * and reads JSON with Go's decoders, where the last duplicate wins, and so
 * does the extender codec for the rest of an ExtenderArgs (json.h). NULL if
 * absent.
 */
const cJSON *
kobj_last_member(const cJSON *obj, const char *key)
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
enum gx_err
kobj_get_field(struct dec *d, const cJSON *obj, const char *path, const char *key, type_pred is,
               const char *what, const cJSON **out)
{
    const cJSON *v = kobj_last_member(obj, key);

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

/* Optional object member; see kobj_get_field. */
enum gx_err
kobj_get_object(struct dec *d, const cJSON *obj, const char *path, const char *key,
                const cJSON **out)
{
    return kobj_get_field(d, obj, path, key, cJSON_IsObject, "an object", out);
}

/* Optional array member; see kobj_get_field. */
enum gx_err
kobj_get_array(struct dec *d, const cJSON *obj, const char *path, const char *key,
               const cJSON **out)
{
    return kobj_get_field(d, obj, path, key, cJSON_IsArray, "an array", out);
}

/* Optional boolean member; false when absent. */
enum gx_err
kobj_get_bool(struct dec *d, const cJSON *obj, const char *path, const char *key, bool *out)
{
    const cJSON *v;
    enum gx_err rc = kobj_get_field(d, obj, path, key, cJSON_IsBool, "a boolean", &v);

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
enum gx_err
kobj_get_string(struct dec *d, const cJSON *obj, const char *path, const char *key,
                const char *dflt, const char **out)
{
    const cJSON *v;
    enum gx_err rc = kobj_get_field(d, obj, path, key, cJSON_IsString, "a string", &v);

    if (rc != GX_OK) {
        return rc;
    }
    if (v == NULL) {
        *out = dflt;
        return GX_OK;
    }
    *out = gx_arena_strdup(d->a, v->valuestring);
    return *out != NULL ? GX_OK : kobj_nomem(d);
}

/*
 * As kobj_get_string, for values that repeat across the items of a list
 * (namespace, phase, container names, taints): interned in list decodes.
 */
enum gx_err
kobj_get_shared_string(struct dec *d, const cJSON *obj, const char *path, const char *key,
                       const char *dflt, const char **out)
{
    const cJSON *v;
    enum gx_err rc = kobj_get_field(d, obj, path, key, cJSON_IsString, "a string", &v);

    if (rc != GX_OK) {
        return rc;
    }
    if (v == NULL) {
        *out = dflt;
        return GX_OK;
    }
    *out = kobj_shared_str(d, v->valuestring);
    return *out != NULL ? GX_OK : kobj_nomem(d);
}

/* Zeroed arena array of @n elements of @size bytes; NULL for n == 0 or ENOMEM. */
void *
kobj_alloc_array(struct dec *d, size_t n, size_t size)
{
    if (n == 0 || n > SIZE_MAX / size) {
        return NULL;
    }
    return gx_arena_alloc(d->a, n * size);
}

/* Number of elements of a cJSON array or members of an object. */
size_t
kobj_count_children(const cJSON *v)
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
    return kobj_shared_str(d, buf);
}

/*
 * Decode an optional map of strings ("path.key": {"k": "v", ...}). With
 * MAP_QUANTITIES in @flags, JSON numbers are accepted and formatted as
 * strings; with MAP_SHARE_VALUES, values are interned like the keys (keys
 * always are in list decodes).
 */
enum gx_err
kobj_get_map(struct dec *d, const cJSON *obj, const char *path, const char *key, unsigned flags,
             struct gx_kv **kv, size_t *n)
{
    bool quantities = (flags & MAP_QUANTITIES) != 0, share = (flags & MAP_SHARE_VALUES) != 0;
    const cJSON *m, *c;
    struct gx_kv *arr = NULL;
    size_t count, i = 0;
    enum gx_err rc = kobj_get_object(d, obj, path, key, &m);

    if (rc != GX_OK) {
        return rc;
    }
    count = kobj_count_children(m);
    if (count > 0) {
        arr = kobj_alloc_array(d, count, sizeof(*arr));
        if (arr == NULL) {
            return kobj_nomem(d);
        }
    }
    for (c = m != NULL ? m->child : NULL; c != NULL && i < count; c = c->next, i++) {
        const char *k = c->string != NULL ? c->string : "";

        if (cJSON_IsString(c)) {
            arr[i].value =
                share ? kobj_shared_str(d, c->valuestring) : gx_arena_strdup(d->a, c->valuestring);
        } else if (quantities && cJSON_IsNumber(c)) {
            arr[i].value = number_string(d, c->valuedouble);
        } else {
            gx_why_set(d->why, "%s%s%s[\"%s\"]: must be %s", path, sep(path), key, k,
                       quantities ? "a quantity string" : "a string");
            return GX_EINVAL;
        }
        arr[i].key = kobj_shared_str(d, k);
        if (arr[i].key == NULL || arr[i].value == NULL) {
            return kobj_nomem(d);
        }
    }
    *kv = arr;
    *n = count;
    return GX_OK;
}

/*
 * The metadata, spec and status objects of a Kubernetes object @o at @path
 * (each may be absent: NULL), with their paths for error messages.
 */
enum gx_err
kobj_object_parts(struct dec *d, const cJSON *o, const char *path, const char *kind,
                  const cJSON *parts[3], char paths[3][PATH_MAX_LEN])
{
    static const char *const names[3] = {"metadata", "spec", "status"};
    enum gx_err rc;

    if (!cJSON_IsObject(o)) {
        gx_why_set(d->why, "%s: must be an object", path[0] != '\0' ? path : kind);
        return GX_EINVAL;
    }
    for (int i = 0; i < 3; i++) {
        kobj_sub_path(paths[i], PATH_MAX_LEN, path, names[i]);
        if ((rc = kobj_get_object(d, o, path, names[i], &parts[i])) != GX_OK) {
            return rc;
        }
    }
    return GX_OK;
}

/* ---- one pass over a document (struct tree in kobj_int.h) ---- */

static enum gx_err
tree_nomem(struct tree *t)
{
    gx_why_set(t->j->why, "out of memory");
    return GX_ENOMEM;
}

/* The depth error in the words every decoder of kobj uses. */
enum gx_err
kobj_too_deep(struct gx_json *j)
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
        rc = kobj_too_deep(t->j);
    } else if (rc == GX_OK && c == NULL) {
        rc = tree_nomem(t);
    }
    while (rc == GX_OK && (object ? gx_json_next_member(t->j, &key, &klen, &rc)
                                  : gx_json_next_element(t->j, &rc))) {
        cJSON *v = NULL;

        if (object && (k = tree_str(t, key, klen, memchr(key, '\\', klen) != NULL)) == NULL) {
            rc = tree_nomem(t);
        } else if ((rc = kobj_build_value(t, &v)) == GX_OK) {
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
enum gx_err
kobj_build_value(struct tree *t, cJSON **out)
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
enum gx_err
kobj_doc_end(struct gx_json *j)
{
    (void)gx_json_peek(j);
    if (j->pos < j->len) {
        gx_why_set(j->why, "trailing data after JSON at offset %zu", j->pos);
        return GX_EPARSE;
    }
    return GX_OK;
}

/*
 * Parse @len bytes (not NUL-terminated) into @doc in one pass, holding at
 * most @max_values values when that is not 0. Free with kobj_doc_free, also
 * after a failure.
 */
enum gx_err
kobj_doc_parse(struct doc *doc, const char *json, size_t len, int max_depth, size_t max_values,
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
    if ((rc = kobj_build_value(&t, &doc->root)) == GX_OK) {
        rc = kobj_doc_end(&j);
    }
    return rc;
}

void
kobj_doc_free(struct doc *doc)
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
