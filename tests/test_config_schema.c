/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config_schema.c - the config's JSON Schema (config_schema.c): valid
 * JSON, every row of the key table with its type, range, names and default,
 * closed objects, and the required keys of array elements.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "config_schema.h"
#include "gx_test.h"

GX_SUITE(config_schema);

/* The schema, parsed; fails the test when it is not JSON. Free with cJSON_Delete. */
static cJSON *
schema(void)
{
    char *text = NULL;
    cJSON *root;

    cr_assert_eq(gx_config_schema(&text), GX_OK);
    cr_assert_not_null(text);
    root = cJSON_Parse(text);
    cr_assert_not_null(root, "not JSON near: %.80s", cJSON_GetErrorPtr());
    free(text);
    return root;
}

/*
 * The schema of @path ("a.b.c", "score.label_rules[].weight") inside @root:
 * properties of each section, items of an array of objects.
 */
static const cJSON *
at(const cJSON *root, const char *path)
{
    char buf[GX_CONFIG_PATH_MAX];
    const cJSON *cur = root;
    char *save = NULL;

    (void)snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = strtok_r(buf, ".", &save); p != NULL && cur != NULL;
         p = strtok_r(NULL, ".", &save)) {
        size_t n = strlen(p);
        bool elems = n > 2 && strcmp(p + n - 2, GX_CONFIG_ELEM_SUFFIX) == 0;

        if (elems) {
            p[n - 2] = '\0';
        }
        cur = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cur, "properties"),
                                               p);
        if (elems) {
            cur = cJSON_GetObjectItemCaseSensitive(cur, "items");
        }
    }
    return cur;
}

/* The "type" of @s when it is one string; "" otherwise. */
static const char *
type_of(const cJSON *s)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");

    return cJSON_IsString(t) ? t->valuestring : "";
}

static double
num(const cJSON *s, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);

    cr_assert(cJSON_IsNumber(v), "no number %s", key);
    return v->valuedouble;
}

/* Check the schema @s of a numeric row @k: @type and the table's range. */
static void
expect_range(const cJSON *s, const struct gx_kspec *k, const char *type)
{
    cr_assert_str_eq(type_of(s), type, "%s", k->path);
    cr_assert_eq(num(s, "minimum"), k->min, "%s minimum", k->path);
    cr_assert_eq(num(s, "maximum"), k->max, "%s maximum", k->path);
}

Test(config_schema, is_a_closed_draft07_object)
{
    cJSON *root = schema();

    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(root, "$schema")->valuestring,
                     "http://json-schema.org/draft-07/schema#");
    cr_assert_str_eq(type_of(root), "object");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "additionalProperties")));
    cJSON_Delete(root);
}

Test(config_schema, every_row_with_its_type_range_and_names)
{
    cJSON *root = schema();

    for (size_t i = 0; i < gx_config_n_rows; i++) {
        const struct gx_kspec *k = &gx_config_table[i];
        const cJSON *s = at(root, k->path), *t, *e;
        int n = 0;

        cr_assert_not_null(s, "%s is not in the schema", k->path);
        switch (k->type) {
        case GX_K_STR:
            t = cJSON_GetObjectItemCaseSensitive(s, "type");
            if (k->flags & GX_KF_NULLABLE) {
                cr_assert(cJSON_IsArray(t) && cJSON_GetArraySize(t) == 2, "%s", k->path);
                cr_assert_str_eq(cJSON_GetArrayItem(t, 1)->valuestring, "null", "%s", k->path);
            } else {
                cr_assert_str_eq(type_of(s), "string", "%s", k->path);
            }
            cr_assert_eq(cJSON_GetObjectItemCaseSensitive(s, "minLength") != NULL,
                         (k->flags & (GX_KF_NONEMPTY | GX_KF_PATH)) != 0, "%s minLength", k->path);
            break;
        case GX_K_INT:
        case GX_K_SIZE:
        case GX_K_I64:
            expect_range(s, k, "integer");
            break;
        case GX_K_DOUBLE:
            expect_range(s, k, "number");
            break;
        case GX_K_BOOL:
            cr_assert_str_eq(type_of(s), "boolean", "%s", k->path);
            break;
        case GX_K_ENUM:
            e = cJSON_GetObjectItemCaseSensitive(s, "enum");
            cr_assert(cJSON_IsArray(e), "%s", k->path);
            for (n = 0; k->names[n] != NULL; n++) {
                cr_assert_str_eq(cJSON_GetArrayItem(e, n)->valuestring, k->names[n], "%s", k->path);
            }
            cr_assert_eq(cJSON_GetArraySize(e), n, "%s", k->path);
            break;
        case GX_K_STR_LIST:
            cr_assert_str_eq(type_of(s), "array", "%s", k->path);
            cr_assert_str_eq(type_of(cJSON_GetObjectItemCaseSensitive(s, "items")), "string");
            cr_assert_eq(num(s, "maxItems"), GX_CONFIG_LIST_MAX);
            break;
        case GX_K_INT_LIST:
            cr_assert_str_eq(type_of(s), "array", "%s", k->path);
            expect_range(cJSON_GetObjectItemCaseSensitive(s, "items"), k, "integer");
            break;
        case GX_K_SLOTS:
            cr_assert_str_eq(type_of(s), "object", "%s", k->path);
            expect_range(cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"), k, "integer");
            break;
        case GX_K_RULES:
            cr_assert_str_eq(type_of(s), "array", "%s", k->path);
            cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
                          cJSON_GetObjectItemCaseSensitive(s, "items"), "additionalProperties")),
                      "%s items are not closed", k->path);
            break;
        }
    }
    cJSON_Delete(root);
}

/* Every object of the schema below @s is closed, and holds only table rows or sections. */
static void
expect_closed(const cJSON *s, const char *path)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties"), *p;

    if (props == NULL) {
        return;
    }
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s, "additionalProperties")),
              "object %s is not closed", path);
    cJSON_ArrayForEach(p, props)
    {
        char sub[GX_CONFIG_PATH_MAX];
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(p, "items");

        (void)snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] != '\0' ? "." : "", p->string);
        cr_assert(gx_config_find_row(sub) != NULL || gx_config_is_section(sub),
                  "%s is in the schema but not in the table", sub);
        expect_closed(p, sub);
        if (cJSON_GetObjectItemCaseSensitive(items, "properties") != NULL) {
            char elems[GX_CONFIG_PATH_MAX + sizeof(GX_CONFIG_ELEM_SUFFIX)];

            (void)snprintf(elems, sizeof(elems), "%s" GX_CONFIG_ELEM_SUFFIX, sub);
            expect_closed(items, elems);
        }
    }
}

Test(config_schema, objects_are_closed_and_hold_table_keys_only)
{
    cJSON *root = schema();

    expect_closed(root, "");
    cJSON_Delete(root);
}

Test(config_schema, label_rule_elements_require_their_keys)
{
    cJSON *root = schema();
    const cJSON *items = at(root, "score.label_rules[]");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(items, "required"), *r;
    char got[128] = "";

    cJSON_ArrayForEach(r, req)
    {
        (void)strncat(got, r->valuestring, sizeof(got) - strlen(got) - 2);
        (void)strncat(got, " ", sizeof(got) - strlen(got) - 1);
    }
    cr_assert_str_eq(got, "label operator weight ");
    cr_assert_null(
        cJSON_GetObjectItemCaseSensitive(at(root, "score.label_rules[].weight"), "default"));
    cJSON_Delete(root);
}

Test(config_schema, defaults_are_the_tables)
{
    cJSON *root = schema();
    const cJSON *d;

    d = cJSON_GetObjectItemCaseSensitive(at(root, "server.port"), "default");
    cr_assert_eq(d->valuedouble, 8888);
    d = cJSON_GetObjectItemCaseSensitive(at(root, "score.policy"), "default");
    cr_assert_str_eq(d->valuestring, "fgd");
    d = cJSON_GetObjectItemCaseSensitive(at(root, "prometheus.url"), "default");
    cr_assert(cJSON_IsNull(d));
    d = cJSON_GetObjectItemCaseSensitive(at(root, "metrics.node_labels"), "default");
    cr_assert_eq(cJSON_GetArraySize(d), 2);
    d = cJSON_GetObjectItemCaseSensitive(at(root, "metrics.names.util"), "pattern");
    cr_assert_str_eq(d->valuestring, GX_CONFIG_METRIC_NAME_RE);
    cr_assert_not_null(
        cJSON_GetObjectItemCaseSensitive(at(root, "sharing.default_slices"), "deprecated"));
    cJSON_Delete(root);
}
