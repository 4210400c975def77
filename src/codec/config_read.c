/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_read.c - the JSON reader of the config: walk the parsed document
 * against the key table (config_keys.c), member by member, and read each
 * value by its row's kind (string, number, enum, list, map, label rules),
 * checking its type and range and naming the key on error. Relative file
 * paths are resolved here, against the config's base_dir.
 *
 * It does not parse the JSON text (gx_config_parse in config.c does), nor
 * check rules across keys (config_check.c), nor read any file.
 */
#include "config_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Format a dotted key for a message; a key longer than the buffer is cut. */
static void GX_PRINTF(3, 4) path_printf(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

/* Parse state: where relative paths resolve, where errors go. */
struct pctx {
    const char *base_dir;
    struct gx_why *why;
    bool nul_marked; /* \u0000 escapes were rewritten to U+FFFF (gx_json_mark_nul_escapes) */
};

/* Join @path onto @dir unless it is absolute; NULL on ENOMEM. */
static char *
resolve_path(const char *dir, const char *path)
{
    size_t dl, pl;
    char *s;

    if (path[0] == '/' || dir == NULL || dir[0] == '\0') {
        return gx_config_dup_str(path);
    }
    dl = strlen(dir);
    pl = strlen(path);
    while (dl > 1 && dir[dl - 1] == '/') {
        dl--;
    }
    s = malloc(dl + 1 + pl + 1);
    if (s == NULL) {
        return NULL;
    }
    memcpy(s, dir, dl);
    if (dir[dl - 1] != '/') {
        s[dl++] = '/';
    }
    memcpy(s + dl, path, pl + 1);
    return s;
}

/* True if @s is a Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*. */
static bool
metric_name_ok(const char *s)
{
    for (size_t i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) {
            return false;
        }
    }
    return s[0] != '\0';
}

/* Check a JSON number is an integer within the row's range; fills @why otherwise. */
static enum gx_err
get_integer(const cJSON *v, const struct gx_kspec *k, const char *key, struct gx_why *why,
            double *out)
{
    double d;

    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble)) {
        gx_why_set(why, "%s: must be an integer", key);
        return GX_EINVAL;
    }
    d = v->valuedouble;
    if (d < k->min || d > k->max) {
        gx_why_set(why, "%s: must be between %.0f and %.0f", key, k->min, k->max);
        return GX_EINVAL;
    }
    *out = d;
    return GX_OK;
}

/* Make a heap string from a JSON string, resolving it as a path when the row says so. */
static enum gx_err
get_string(const cJSON *v, const struct gx_kspec *k, const char *key, const struct pctx *ctx,
           char **out)
{
    const char *s = v->valuestring;
    char *dup;

    if (ctx->nul_marked && strstr(s, "\xEF\xBF\xBF") != NULL) {
        gx_why_set(ctx->why, "%s: must not contain \\u0000 (a NUL character)", key);
        return GX_EINVAL;
    }
    if ((k->flags & (GX_KF_NONEMPTY | GX_KF_PATH)) && s[0] == '\0') {
        gx_why_set(ctx->why, "%s: must not be empty", key);
        return GX_EINVAL;
    }
    if ((k->flags & GX_KF_METRIC_NAME) && !metric_name_ok(s)) {
        gx_why_set(ctx->why, "%s: must be a Prometheus metric name", key);
        return GX_EINVAL;
    }
    dup = (k->flags & GX_KF_PATH) ? resolve_path(ctx->base_dir, s) : gx_config_dup_str(s);
    if (dup == NULL) {
        return GX_ENOMEM;
    }
    *out = dup;
    return GX_OK;
}

/* True (with @why filled) if a list or map of @n elements is over GX_CONFIG_LIST_MAX. */
static bool
too_many(size_t n, const char *key, struct gx_why *why)
{
    if (n <= GX_CONFIG_LIST_MAX) {
        return false;
    }
    gx_why_set(why, "%s: at most %d elements", key, GX_CONFIG_LIST_MAX);
    return true;
}

/* Parse a JSON array of strings into a fresh list; the old list is replaced on success. */
static enum gx_err
parse_str_list(const cJSON *v, void *base, const struct gx_kspec *k, const char *key,
               const struct pctx *ctx)
{
    char **list = NULL;
    size_t n = 0, cap;
    const cJSON *e;
    enum gx_err rc = GX_OK;

    if (!cJSON_IsArray(v)) {
        gx_why_set(ctx->why, "%s: must be an array of strings", key);
        return GX_EINVAL;
    }
    cap = (size_t)cJSON_GetArraySize(v);
    if (too_many(cap, key, ctx->why)) {
        return GX_EINVAL;
    }
    if ((k->flags & GX_KF_NONEMPTY) && cap == 0) {
        gx_why_set(ctx->why, "%s: must not be empty", key);
        return GX_EINVAL;
    }
    if (cap == 0) {
        gx_config_release_field(base, k);
        return GX_OK;
    }
    if ((list = calloc(cap, sizeof(*list))) == NULL) {
        return GX_ENOMEM;
    }
    cJSON_ArrayForEach(e, v)
    {
        char ekey[GX_CONFIG_PATH_MAX];

        path_printf(ekey, sizeof(ekey), "%s[%zu]", key, n);
        if (!cJSON_IsString(e)) {
            gx_why_set(ctx->why, "%s: must be a string", ekey);
            rc = GX_EINVAL;
            goto out;
        }
        /* GX_KF_NONEMPTY on a list also forbids empty elements (a node label named ""). */
        if ((rc = get_string(e, k, ekey, ctx, &list[n])) != GX_OK) {
            goto out;
        }
        n++;
    }
    gx_config_release_field(base, k);
    *(char ***)gx_config_field(base, k) = list;
    *gx_config_count_field(base, k) = n;
    list = NULL;
out:
    gx_config_free_str_list(list, n);
    return rc;
}

/* Parse a JSON array of integers (each within the row's range) into a fresh list. */
static enum gx_err
parse_int_list(const cJSON *v, void *base, const struct gx_kspec *k, const char *key,
               const struct pctx *ctx)
{
    int *list = NULL;
    size_t n = 0, cap;
    const cJSON *e;
    enum gx_err rc = GX_OK;

    if (!cJSON_IsArray(v)) {
        gx_why_set(ctx->why, "%s: must be an array of integers", key);
        return GX_EINVAL;
    }
    cap = (size_t)cJSON_GetArraySize(v);
    if (too_many(cap, key, ctx->why)) {
        return GX_EINVAL;
    }
    if (cap == 0) {
        gx_config_release_field(base, k);
        return GX_OK;
    }
    if ((list = calloc(cap, sizeof(*list))) == NULL) {
        return GX_ENOMEM;
    }
    cJSON_ArrayForEach(e, v)
    {
        char ekey[GX_CONFIG_PATH_MAX];
        double d;

        path_printf(ekey, sizeof(ekey), "%s[%zu]", key, n);
        if ((rc = get_integer(e, k, ekey, ctx->why, &d)) != GX_OK) {
            goto out;
        }
        list[n++] = (int)d;
    }
    gx_config_release_field(base, k);
    *(int **)gx_config_field(base, k) = list;
    *gx_config_count_field(base, k) = n;
    list = NULL;
out:
    free(list);
    return rc;
}

/* Parse {"product": slots, ...}; products must be non-empty and unique. */
static enum gx_err
parse_slots(const cJSON *v, void *base, const struct gx_kspec *k, const char *key,
            const struct pctx *ctx)
{
    struct gx_product_slots *list = NULL;
    size_t n = 0, cap;
    const cJSON *e;
    enum gx_err rc = GX_OK;

    if (!cJSON_IsObject(v)) {
        gx_why_set(ctx->why, "%s: must be an object of product: slots", key);
        return GX_EINVAL;
    }
    cap = (size_t)cJSON_GetArraySize(v);
    if (too_many(cap, key, ctx->why)) {
        return GX_EINVAL;
    }
    if (cap == 0) {
        gx_config_release_field(base, k);
        return GX_OK;
    }
    if ((list = calloc(cap, sizeof(*list))) == NULL) {
        return GX_ENOMEM;
    }
    cJSON_ArrayForEach(e, v)
    {
        char ekey[GX_CONFIG_PATH_MAX];
        double d;

        path_printf(ekey, sizeof(ekey), "%s.%s", key, e->string);
        if (e->string[0] == '\0') {
            gx_why_set(ctx->why, "%s: product names must not be empty", key);
            rc = GX_EINVAL;
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            if (strcmp(list[i].product, e->string) == 0) {
                gx_why_set(ctx->why, "duplicate key '%s'", ekey);
                rc = GX_EINVAL;
                goto out;
            }
        }
        if ((rc = get_integer(e, k, ekey, ctx->why, &d)) != GX_OK) {
            goto out;
        }
        if ((list[n].product = gx_config_dup_str(e->string)) == NULL) {
            rc = GX_ENOMEM;
            goto out;
        }
        list[n++].slots = (int)d;
    }
    gx_config_release_field(base, k);
    *(struct gx_product_slots **)gx_config_field(base, k) = list;
    *gx_config_count_field(base, k) = n;
    list = NULL;
out:
    gx_config_free_slots(list, n);
    return rc;
}

static enum gx_err walk_object(const cJSON *obj, const char *match, const char *show, void *base,
                               const struct pctx *ctx);

/* Check the values of one label rule against its operator; parses Gt/Lt numbers. */
static enum gx_err
check_rule(struct gx_label_rule *r, const char *key, struct gx_why *why)
{
    char *end = NULL;

    switch (r->op) {
    case GX_OP_IN:
    case GX_OP_NOT_IN:
        if (r->n_values == 0) {
            gx_why_set(why, "%s.values: %s needs at least one value", key,
                       gx_config_op_names[r->op]);
            return GX_EINVAL;
        }
        break;
    case GX_OP_EXISTS:
    case GX_OP_DOES_NOT_EXIST:
        if (r->n_values != 0) {
            gx_why_set(why, "%s.values: %s takes no values", key, gx_config_op_names[r->op]);
            return GX_EINVAL;
        }
        break;
    case GX_OP_GT:
    case GX_OP_LT:
        if (r->n_values != 1) {
            gx_why_set(why, "%s.values: %s needs exactly one value", key,
                       gx_config_op_names[r->op]);
            return GX_EINVAL;
        }
        r->number = strtod(r->values[0], &end);
        if (end == r->values[0] || *end != '\0' || !isfinite(r->number)) {
            gx_why_set(why, "%s.values: %s needs a number", key, gx_config_op_names[r->op]);
            return GX_EINVAL;
        }
        break;
    }
    return GX_OK;
}

/* Parse an array of label rule objects, each walked against the "[]." rows. */
static enum gx_err
parse_rules(const cJSON *v, void *base, const struct gx_kspec *k, const char *key,
            const struct pctx *ctx)
{
    char match[GX_CONFIG_PATH_MAX];
    struct gx_label_rule *rules;
    size_t n, i = 0;
    const cJSON *e;

    if (!cJSON_IsArray(v)) {
        gx_why_set(ctx->why, "%s: must be an array of objects", key);
        return GX_EINVAL;
    }
    gx_config_elem_path(k, match, sizeof(match));
    n = (size_t)cJSON_GetArraySize(v);
    if (too_many(n, key, ctx->why)) {
        return GX_EINVAL;
    }
    gx_config_release_field(base, k);
    if (n == 0) {
        return GX_OK;
    }
    rules = calloc(n, sizeof(*rules));
    if (rules == NULL) {
        return GX_ENOMEM;
    }
    /* Publish first: gx_config_free releases a partly parsed array. */
    *(struct gx_label_rule **)gx_config_field(base, k) = rules;
    *gx_config_count_field(base, k) = n;
    cJSON_ArrayForEach(e, v)
    {
        char show[GX_CONFIG_PATH_MAX];
        enum gx_err rc;

        path_printf(show, sizeof(show), "%s[%zu]", key, i);
        if (!cJSON_IsObject(e)) {
            gx_why_set(ctx->why, "%s: must be an object", show);
            return GX_EINVAL;
        }
        if ((rc = gx_config_apply_defaults(&rules[i], match)) != GX_OK) {
            return rc;
        }
        if ((rc = walk_object(e, match, show, &rules[i], ctx)) != GX_OK) {
            return rc;
        }
        if ((rc = check_rule(&rules[i], show, ctx->why)) != GX_OK) {
            return rc;
        }
        i++;
    }
    return GX_OK;
}

/* Parse one JSON value into the field of row @k inside @base. */
static enum gx_err
parse_value(const cJSON *v, void *base, const struct gx_kspec *k, const char *key,
            const struct pctx *ctx)
{
    void *p = gx_config_field(base, k);
    enum gx_err rc;
    double d;
    char *s;

    switch (k->type) {
    case GX_K_STR:
        if (cJSON_IsNull(v) && (k->flags & GX_KF_NULLABLE)) {
            gx_config_release_field(base, k);
            return GX_OK;
        }
        if (!cJSON_IsString(v)) {
            gx_why_set(ctx->why, "%s: must be a string%s", key,
                       (k->flags & GX_KF_NULLABLE) ? " or null" : "");
            return GX_EINVAL;
        }
        if ((rc = get_string(v, k, key, ctx, &s)) != GX_OK) {
            return rc;
        }
        gx_config_release_field(base, k);
        *(char **)p = s;
        return GX_OK;
    case GX_K_INT:
    case GX_K_SIZE:
    case GX_K_I64:
        if ((rc = get_integer(v, k, key, ctx->why, &d)) != GX_OK) {
            return rc;
        }
        if (k->type == GX_K_INT) {
            *(int *)p = (int)d;
        } else if (k->type == GX_K_SIZE) {
            *(size_t *)p = (size_t)d;
        } else {
            *(int64_t *)p = (int64_t)d;
        }
        return GX_OK;
    case GX_K_DOUBLE:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
            gx_why_set(ctx->why, "%s: must be a number", key);
            return GX_EINVAL;
        }
        if (v->valuedouble < k->min || v->valuedouble > k->max) {
            gx_why_set(ctx->why, "%s: must be between %g and %g", key, k->min, k->max);
            return GX_EINVAL;
        }
        *(double *)p = v->valuedouble;
        return GX_OK;
    case GX_K_BOOL:
        if (!cJSON_IsBool(v)) {
            gx_why_set(ctx->why, "%s: must be true or false", key);
            return GX_EINVAL;
        }
        *(bool *)p = cJSON_IsTrue(v);
        return GX_OK;
    case GX_K_ENUM:
        for (int i = 0; cJSON_IsString(v) && k->names[i] != NULL; i++) {
            if (strcmp(v->valuestring, k->names[i]) == 0) {
                *(int *)p = i;
                return GX_OK;
            }
        }
        {
            char list[128] = "";
            size_t used = 0;
            for (int i = 0; k->names[i] != NULL && used < sizeof(list); i++) {
                int w = snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "",
                                 k->names[i]);
                used += w > 0 ? (size_t)w : 0;
            }
            gx_why_set(ctx->why, "%s: must be one of %s", key, list);
        }
        return GX_EINVAL;
    case GX_K_STR_LIST:
        return parse_str_list(v, base, k, key, ctx);
    case GX_K_INT_LIST:
        return parse_int_list(v, base, k, key, ctx);
    case GX_K_SLOTS:
        return parse_slots(v, base, k, key, ctx);
    case GX_K_RULES:
        return parse_rules(v, base, k, key, ctx);
    }
    return GX_EINVAL;
}

/* Join a member name onto a dotted prefix ("" at the top); false if too long. */
static bool
join_key(char *out, size_t n, const char *prefix, const char *name)
{
    int w = snprintf(out, n, "%s%s%s", prefix, prefix[0] != '\0' ? "." : "", name);

    return w >= 0 && (size_t)w < n;
}

/*
 * Walk the members of @obj: @match is the table path of @obj ("" for the
 * top, "score.label_rules[]" for a rule), @show the same path as the user
 * wrote it (for messages). Every member must be a row or a section; rows
 * flagged GX_KF_REQUIRED directly below @match must be present.
 */
static enum gx_err
walk_object(const cJSON *obj, const char *match, const char *show, void *base,
            const struct pctx *ctx)
{
    const cJSON *m, *prev;
    size_t mlen = strlen(match);
    enum gx_err rc;

    cJSON_ArrayForEach(m, obj)
    {
        char mpath[GX_CONFIG_PATH_MAX], spath[GX_CONFIG_PATH_MAX];
        const struct gx_kspec *k;

        if (!join_key(spath, sizeof(spath), show, m->string)) {
            gx_why_set(ctx->why, "unknown key '%.64s...'", spath);
            return GX_EINVAL;
        }
        for (prev = obj->child; prev != m; prev = prev->next) {
            if (strcmp(prev->string, m->string) == 0) {
                gx_why_set(ctx->why, "duplicate key '%s'", spath);
                return GX_EINVAL;
            }
        }
        if (!join_key(mpath, sizeof(mpath), match, m->string) ||
            strstr(m->string, GX_CONFIG_ELEM_SUFFIX) != NULL || strchr(m->string, '.') != NULL) {
            gx_why_set(ctx->why, "unknown key '%s'", spath);
            return GX_EINVAL;
        }
        k = gx_config_find_row(mpath);
        if (k != NULL) {
            if ((rc = parse_value(m, base, k, spath, ctx)) != GX_OK) {
                return rc;
            }
            if (k->flags & GX_KF_DEPRECATED) {
                gx_warn("config key is deprecated and ignored; remove it", "key=%s", spath);
            }
        } else if (gx_config_is_section(mpath)) {
            if (!cJSON_IsObject(m)) {
                gx_why_set(ctx->why, "%s: must be an object", spath);
                return GX_EINVAL;
            }
            if ((rc = walk_object(m, mpath, spath, base, ctx)) != GX_OK) {
                return rc;
            }
        } else {
            gx_why_set(ctx->why, "unknown key '%s'", spath);
            return GX_EINVAL;
        }
    }
    for (size_t i = 0; i < gx_config_n_rows; i++) {
        const struct gx_kspec *k = &gx_config_table[i];
        const char *leaf;

        if (!(k->flags & GX_KF_REQUIRED) || !gx_config_row_owned_by(k, match, mlen)) {
            continue;
        }
        leaf = k->path + mlen + 1;
        if (cJSON_GetObjectItemCaseSensitive(obj, leaf) == NULL) {
            gx_why_set(ctx->why, "%s.%s: is required", show, leaf);
            return GX_EINVAL;
        }
    }
    return GX_OK;
}

/* The top of the document is the section "": walk it with the parse state of @cfg. */
enum gx_err
gx_config_read(const cJSON *root, struct gx_config *cfg, bool nul_marked, struct gx_why *why)
{
    struct pctx ctx = {cfg->base_dir, why, nul_marked};

    return walk_object(root, "", "", cfg, &ctx);
}
