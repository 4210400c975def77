/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_field.c - the storage of one config key: set a row's default in
 * the struct it lives in, release what a row owns, and the string and list
 * copies the reader and the reload share. Rows are described by the key
 * table (config_keys.c); this file reads no JSON and checks no values.
 */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>

/* Heap copy of @s; NULL on ENOMEM. */
char *
gx_config_dup_str(const char *s)
{
    return gx_strndup(s, strlen(s));
}

/* Free @n strings and the array holding them; NULL is a no-op. */
void
gx_config_free_str_list(char **list, size_t n)
{
    for (size_t i = 0; list != NULL && i < n; i++) {
        free(list[i]);
    }
    free(list);
}

/* Free @n products and the array holding them; NULL is a no-op. */
void
gx_config_free_slots(struct gx_product_slots *list, size_t n)
{
    for (size_t i = 0; list != NULL && i < n; i++) {
        free(list[i].product);
    }
    free(list);
}

/* All or nothing: a partial copy is freed before GX_ENOMEM. */
enum gx_err
gx_config_dup_str_list(const char *const *src, size_t n, char ***out)
{
    char **l = n > 0 ? calloc(n, sizeof(*l)) : NULL;

    if (n > 0 && l == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if ((l[i] = gx_config_dup_str(src[i])) == NULL) {
            gx_config_free_str_list(l, i);
            return GX_ENOMEM;
        }
    }
    *out = l;
    return GX_OK;
}

/* Release what one row owns inside @base and reset it to empty. This can't fail. */
void
gx_config_release_field(void *base, const struct gx_kspec *k)
{
    void *p = gx_config_field(base, k);

    switch (k->type) {
    case GX_K_STR: {
        char **s = p;
        free(*s);
        *s = NULL;
        break;
    }
    case GX_K_STR_LIST: {
        char ***l = p;
        gx_config_free_str_list(*l, *gx_config_count_field(base, k));
        *l = NULL;
        *gx_config_count_field(base, k) = 0;
        break;
    }
    case GX_K_INT_LIST: {
        int **l = p;
        free(*l);
        *l = NULL;
        *gx_config_count_field(base, k) = 0;
        break;
    }
    case GX_K_SLOTS: {
        struct gx_product_slots **l = p;
        gx_config_free_slots(*l, *gx_config_count_field(base, k));
        *l = NULL;
        *gx_config_count_field(base, k) = 0;
        break;
    }
    case GX_K_RULES: {
        struct gx_label_rule **l = p;
        size_t n = *gx_config_count_field(base, k);
        char prefix[GX_CONFIG_PATH_MAX];
        gx_config_elem_path(k, prefix, sizeof(prefix));
        for (size_t i = 0; *l != NULL && i < n; i++) {
            gx_config_release_rows(&(*l)[i], prefix);
        }
        free(*l);
        *l = NULL;
        *gx_config_count_field(base, k) = 0;
        break;
    }
    default:
        break;
    }
}

/*
 * Release every row directly owned by @base: with @prefix NULL the rows of
 * struct gx_config, else the element rows "<prefix>.<key>". Can't fail.
 */
void
gx_config_release_rows(void *base, const char *prefix)
{
    size_t plen = prefix != NULL ? strlen(prefix) : 0;

    for (size_t i = 0; i < gx_config_n_rows; i++) {
        const struct gx_kspec *k = &gx_config_table[i];
        bool mine = gx_config_row_owned_by(k, prefix, plen);

        if (mine) {
            gx_config_release_field(base, k);
        }
    }
}

/* Set the default of one row in @base. Fails only with GX_ENOMEM. */
static enum gx_err
apply_default(void *base, const struct gx_kspec *k)
{
    void *p = gx_config_field(base, k);

    switch (k->type) {
    case GX_K_STR:
        if (k->defs != NULL && (*(char **)p = gx_config_dup_str(k->defs)) == NULL) {
            return GX_ENOMEM;
        }
        break;
    case GX_K_INT:
    case GX_K_ENUM:
        *(int *)p = (int)k->def;
        break;
    case GX_K_SIZE:
        *(size_t *)p = (size_t)k->def;
        break;
    case GX_K_I64:
        *(int64_t *)p = (int64_t)k->def;
        break;
    case GX_K_DOUBLE:
        *(double *)p = k->def;
        break;
    case GX_K_BOOL:
        *(bool *)p = k->def != 0;
        break;
    case GX_K_STR_LIST:
        if (k->names != NULL) {
            size_t n = 0;
            while (k->names[n] != NULL) {
                n++;
            }
            if (gx_config_dup_str_list(k->names, n, (char ***)p) != GX_OK) {
                return GX_ENOMEM;
            }
            *gx_config_count_field(base, k) = n;
        }
        break;
    default:
        break; /* lists, maps and rules start empty (calloc) */
    }
    return GX_OK;
}

/* Apply the defaults of the rows gx_config_release_rows(@base, @prefix) would release. */
enum gx_err
gx_config_apply_defaults(void *base, const char *prefix)
{
    size_t plen = prefix != NULL ? strlen(prefix) : 0;

    for (size_t i = 0; i < gx_config_n_rows; i++) {
        const struct gx_kspec *k = &gx_config_table[i];
        bool mine = gx_config_row_owned_by(k, prefix, plen);

        if (mine && apply_default(base, k) != GX_OK) {
            return GX_ENOMEM;
        }
    }
    return GX_OK;
}
