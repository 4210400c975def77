/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_schema.c - the JSON Schema of the config document, made from the key
 * table (config_keys.c): one object per section, one property per row, with
 * the row's type, range, names, default and list limits, as config_read.c
 * checks them. `gpu-extender --config-schema` prints it, and
 * scripts/chart-schema.py writes it into the Helm chart's values.schema.json.
 *
 * It reads no JSON and does no I/O; the rules across keys (config_check.c)
 * are not in the schema.
 */
#include "config_schema.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

/* Builder state: set once any allocation failed; every later step is then a no-op. */
struct sbuild {
    bool oom;
};

/* Attach @item to @obj as @name; on any failure (item NULL, obj NULL, no memory) free @item. */
static cJSON *
add(struct sbuild *b, cJSON *obj, const char *name, cJSON *item)
{
    if (item == NULL || obj == NULL || !cJSON_AddItemToObject(obj, name, item)) {
        cJSON_Delete(item);
        b->oom = true;
        return NULL;
    }
    return item;
}

/* A new empty object, or NULL with b->oom set. */
static cJSON *
new_object(struct sbuild *b)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL) {
        b->oom = true;
    }
    return o;
}

static void
add_str(struct sbuild *b, cJSON *obj, const char *name, const char *s)
{
    (void)add(b, obj, name, cJSON_CreateString(s));
}

static void
add_num(struct sbuild *b, cJSON *obj, const char *name, double d)
{
    (void)add(b, obj, name, cJSON_CreateNumber(d));
}

/* "name": the NULL-terminated list @names as an array of strings (empty for NULL). */
static void
add_names(struct sbuild *b, cJSON *obj, const char *name, const char *const *names)
{
    int n = 0;

    while (names != NULL && names[n] != NULL) {
        n++;
    }
    (void)add(b, obj, name, n > 0 ? cJSON_CreateStringArray(names, n) : cJSON_CreateArray());
}

/* "type": one JSON type, or [type, "null"] when @nullable. */
static void
add_type(struct sbuild *b, cJSON *obj, const char *type, bool nullable)
{
    const char *both[] = {type, "null"};

    (void)add(b, obj, "type",
              nullable ? cJSON_CreateStringArray(both, 2) : cJSON_CreateString(type));
}

/* Make @o a closed object: "type": "object", "additionalProperties": false, "properties": {}. */
static cJSON *
close_object(struct sbuild *b, cJSON *o, cJSON **props)
{
    add_type(b, o, "object", false);
    (void)add(b, o, "additionalProperties", cJSON_CreateFalse());
    *props = add(b, o, "properties", cJSON_CreateObject());
    return o;
}

/* A new closed object; its "properties" in *props. */
static cJSON *
new_closed_object(struct sbuild *b, cJSON **props)
{
    return close_object(b, new_object(b), props);
}

/* The "properties" of section @name inside @props, made on first use. */
static cJSON *
section(struct sbuild *b, cJSON *props, const char *name)
{
    cJSON *sec, *sub = NULL;

    if (props == NULL) {
        return NULL;
    }
    sec = cJSON_GetObjectItemCaseSensitive(props, name);
    if (sec != NULL) {
        return cJSON_GetObjectItemCaseSensitive(sec, "properties");
    }
    (void)add(b, props, name, new_closed_object(b, &sub));
    return sub;
}

/* The schema of one string value of row @k (also a list element). */
static cJSON *
string_schema(struct sbuild *b, const struct gx_kspec *k, bool nullable)
{
    cJSON *s = new_object(b);

    add_type(b, s, "string", nullable);
    if (k->flags & (GX_KF_NONEMPTY | GX_KF_PATH)) {
        add_num(b, s, "minLength", 1);
    }
    if (k->flags & GX_KF_METRIC_NAME) {
        add_str(b, s, "pattern", GX_CONFIG_METRIC_NAME_RE);
    }
    return s;
}

/* {"type": "integer"|"number", "minimum": min, "maximum": max} of row @k. */
static cJSON *
number_schema(struct sbuild *b, const struct gx_kspec *k, const char *type)
{
    cJSON *s = new_object(b);

    add_type(b, s, type, false);
    add_num(b, s, "minimum", k->min);
    add_num(b, s, "maximum", k->max);
    return s;
}

/* An array of @items, at most GX_CONFIG_LIST_MAX long. */
static cJSON *
array_schema(struct sbuild *b, cJSON *items)
{
    cJSON *s = new_object(b);

    add_type(b, s, "array", false);
    add_num(b, s, "maxItems", GX_CONFIG_LIST_MAX);
    (void)add(b, s, "items", items);
    return s;
}

static cJSON *row_schema(struct sbuild *b, const struct gx_kspec *k, bool elem);

/* The objects of array row @k: its element rows "<path>[].<key>", closed, with their required. */
static cJSON *
element_schema(struct sbuild *b, const struct gx_kspec *k)
{
    char match[GX_CONFIG_PATH_MAX];
    size_t mlen;
    cJSON *props = NULL, *o = new_closed_object(b, &props);
    cJSON *required = add(b, o, "required", cJSON_CreateArray());

    gx_config_elem_path(k, match, sizeof(match));
    mlen = strlen(match);
    for (size_t i = 0; i < gx_config_n_rows; i++) {
        const struct gx_kspec *e = &gx_config_table[i];
        const char *leaf = e->path + mlen + 1;

        if (!gx_config_row_owned_by(e, match, mlen)) {
            continue;
        }
        (void)add(b, props, leaf, row_schema(b, e, true));
        if ((e->flags & GX_KF_REQUIRED) && required != NULL &&
            !cJSON_AddItemToArray(required, cJSON_CreateString(leaf))) {
            b->oom = true;
        }
    }
    return o;
}

/*
 * The schema of row @k: type, range, names and limits as config_read.c checks
 * them, and the table's default (not for the rows of array elements, @elem).
 */
static cJSON *
row_schema(struct sbuild *b, const struct gx_kspec *k, bool elem)
{
    cJSON *s = NULL, *item;
    bool nullable = (k->flags & GX_KF_NULLABLE) != 0;

    switch (k->type) {
    case GX_K_STR:
        s = string_schema(b, k, nullable);
        if (!elem && k->defs != NULL) {
            add_str(b, s, "default", k->defs);
        } else if (!elem && nullable) {
            (void)add(b, s, "default", cJSON_CreateNull());
        }
        break;
    case GX_K_INT:
    case GX_K_SIZE:
    case GX_K_I64:
    case GX_K_DOUBLE:
        s = number_schema(b, k, k->type == GX_K_DOUBLE ? "number" : "integer");
        if (!elem) {
            add_num(b, s, "default", k->def);
        }
        break;
    case GX_K_BOOL:
        s = new_object(b);
        add_type(b, s, "boolean", false);
        if (!elem) {
            (void)add(b, s, "default", cJSON_CreateBool(k->def != 0));
        }
        break;
    case GX_K_ENUM:
        s = new_object(b);
        add_type(b, s, "string", false);
        add_names(b, s, "enum", k->names);
        if (!elem) {
            add_str(b, s, "default", k->names[(int)k->def]);
        }
        break;
    case GX_K_STR_LIST:
        s = array_schema(b, string_schema(b, k, false));
        if (k->flags & GX_KF_NONEMPTY) {
            add_num(b, s, "minItems", 1);
        }
        if (!elem) {
            add_names(b, s, "default", k->names);
        }
        break;
    case GX_K_INT_LIST:
        s = array_schema(b, number_schema(b, k, "integer"));
        if (!elem) {
            (void)add(b, s, "default", cJSON_CreateArray());
        }
        break;
    case GX_K_SLOTS:
        /* {"name": count}: names not empty, counts in the row's range */
        s = new_object(b);
        add_type(b, s, "object", false);
        add_num(b, s, "maxProperties", GX_CONFIG_LIST_MAX);
        item = add(b, s, "propertyNames", cJSON_CreateObject());
        add_num(b, item, "minLength", 1);
        (void)add(b, s, "additionalProperties", number_schema(b, k, "integer"));
        if (!elem) {
            (void)add(b, s, "default", cJSON_CreateObject());
        }
        break;
    case GX_K_RULES:
        s = array_schema(b, element_schema(b, k));
        if (!elem) {
            (void)add(b, s, "default", cJSON_CreateArray());
        }
        break;
    }
    if (s != NULL && (k->flags & GX_KF_DEPRECATED)) {
        add_str(b, s, "description", "deprecated: accepted, read by nothing (a warning is logged)");
        (void)add(b, s, "deprecated", cJSON_CreateTrue());
    }
    return s;
}

/* Add row @k under its sections ("a.b.c": sections a and b, property c) of @props. */
static void
add_row(struct sbuild *b, cJSON *props, const struct gx_kspec *k)
{
    char part[GX_CONFIG_PATH_MAX];
    const char *p = k->path, *dot;

    while ((dot = strchr(p, '.')) != NULL) {
        size_t n = (size_t)(dot - p);

        if (n >= sizeof(part)) {
            n = sizeof(part) - 1;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        props = section(b, props, part);
        p = dot + 1;
    }
    (void)add(b, props, p, row_schema(b, k, false));
}

/* Build the schema from the table; see config_schema.h. */
enum gx_err
gx_config_schema(char **out)
{
    struct sbuild b = {false};
    cJSON *props = NULL, *root = new_object(&b);
    char *text = NULL, *dup = NULL;

    add_str(&b, root, "$schema", "http://json-schema.org/draft-07/schema#");
    add_str(&b, root, "title", "gpu-extender config");
    add_str(&b, root, "description",
            "Generated by gpu-extender --config-schema from the key table "
            "(src/codec/config_keys.c; every key in docs/configuration.md). Rules across keys "
            "are checked by gpu-extender --check-config only.");
    (void)close_object(&b, root, &props);
    for (size_t i = 0; i < gx_config_n_rows; i++) {
        if (!gx_config_is_elem_row(&gx_config_table[i])) {
            add_row(&b, props, &gx_config_table[i]);
        }
    }
    if (!b.oom) {
        text = cJSON_Print(root);
    }
    if (text != NULL) {
        dup = gx_config_dup_str(text);
        cJSON_free(text);
    }
    cJSON_Delete(root);
    if (dup == NULL) {
        return GX_ENOMEM;
    }
    *out = dup;
    return GX_OK;
}
