/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_reload.c - what a live reload needs from two configs: the names of
 * the restart-only keys whose values differ (the reload warns with them),
 * and giving the fresh config the running values of those keys so the
 * reload applies only the live ones.
 *
 * Both walk the key table (config_keys.c) over its restart-only rows; the
 * swap of the running config itself is the server's.
 */
#include "config_int.h"

#include <string.h>

/* String equality where two NULLs are equal and NULL differs from any string. */
static bool
str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

/* True if row @k holds the same value in @a and @b (top-level rows only). */
static bool
field_equal(const struct gx_config *a, const struct gx_config *b, const struct gx_kspec *k)
{
    const void *pa = gx_config_cfield(a, k), *pb = gx_config_cfield(b, k);

    switch (k->type) {
    case GX_K_STR:
        return str_eq(*(char *const *)pa, *(char *const *)pb);
    case GX_K_INT:
    case GX_K_ENUM:
        return *(const int *)pa == *(const int *)pb;
    case GX_K_SIZE:
        return *(const size_t *)pa == *(const size_t *)pb;
    case GX_K_I64:
        return *(const int64_t *)pa == *(const int64_t *)pb;
    case GX_K_DOUBLE:
        return *(const double *)pa == *(const double *)pb;
    case GX_K_BOOL:
        return *(const bool *)pa == *(const bool *)pb;
    case GX_K_STR_LIST: {
        size_t n = gx_config_ccount(a, k);
        if (n != gx_config_ccount(b, k)) {
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            if (!str_eq((*(char **const *)pa)[i], (*(char **const *)pb)[i])) {
                return false;
            }
        }
        return true;
    }
    case GX_K_INT_LIST: {
        size_t n = gx_config_ccount(a, k);
        return n == gx_config_ccount(b, k) &&
               (n == 0 || memcmp(*(int *const *)pa, *(int *const *)pb, n * sizeof(int)) == 0);
    }
    case GX_K_SLOTS:
    case GX_K_RULES:
        /* Never restart-only; treated as different so a future flag cannot hide a change. */
        return false;
    }
    return false;
}

/* True if @k is a restart-only key of struct gx_config whose value differs in @a and @b. */
static bool
restart_row_differs(const struct gx_config *a, const struct gx_config *b, const struct gx_kspec *k)
{
    return (k->flags & GX_KF_RESTART) && !gx_config_is_elem_row(k) && !field_equal(a, b, k);
}

/*
 * Compare every GX_KF_RESTART row; names that do not fit in @out are left out,
 * but the result still says whether anything differs. This can't fail.
 */
bool
gx_config_restart_keys_changed(const struct gx_config *a, const struct gx_config *b, char *out,
                               size_t n)
{
    size_t used = 0;
    bool any = false;

    if (out != NULL && n > 0) {
        out[0] = '\0';
    }
    for (size_t i = 0; i < gx_config_n_rows; i++) {
        const struct gx_kspec *k = &gx_config_table[i];
        size_t kl;

        if (!restart_row_differs(a, b, k)) {
            continue;
        }
        any = true;
        if (out == NULL || n == 0) {
            continue;
        }
        kl = strlen(k->path);
        /* Whole names only: a name that does not fit is left out. */
        if (used + (used > 0) + kl + 1 > n) {
            continue;
        }
        if (used > 0) {
            out[used++] = ',';
        }
        memcpy(out + used, k->path, kl + 1);
        used += kl;
    }
    return any;
}

/* Copy row @k's value from @from into @to (top-level GX_K_STR, GX_K_STR_LIST and scalar rows). */
static enum gx_err
copy_field(struct gx_config *to, const struct gx_config *from, const struct gx_kspec *k)
{
    void *pt = gx_config_field(to, k);
    const void *pf = gx_config_cfield(from, k);

    switch (k->type) {
    case GX_K_STR: {
        const char *s = *(char *const *)pf;
        char *d = s != NULL ? gx_config_dup_str(s) : NULL;
        if (s != NULL && d == NULL) {
            return GX_ENOMEM;
        }
        gx_config_release_field(to, k);
        *(char **)pt = d;
        return GX_OK;
    }
    case GX_K_STR_LIST: {
        size_t n = gx_config_ccount(from, k);
        char **l = NULL;
        if (gx_config_dup_str_list((const char *const *)*(char **const *)pf, n, &l) != GX_OK) {
            return GX_ENOMEM;
        }
        gx_config_release_field(to, k);
        *(char ***)pt = l;
        *gx_config_count_field(to, k) = n;
        return GX_OK;
    }
    case GX_K_INT:
    case GX_K_ENUM:
        *(int *)pt = *(const int *)pf;
        return GX_OK;
    case GX_K_SIZE:
        *(size_t *)pt = *(const size_t *)pf;
        return GX_OK;
    case GX_K_I64:
        *(int64_t *)pt = *(const int64_t *)pf;
        return GX_OK;
    case GX_K_DOUBLE:
        *(double *)pt = *(const double *)pf;
        return GX_OK;
    case GX_K_BOOL:
        *(bool *)pt = *(const bool *)pf;
        return GX_OK;
    case GX_K_INT_LIST:
    case GX_K_SLOTS:
    case GX_K_RULES:
        break;
    }
    return GX_EINVAL;
}

/* Copy, row by row, what differs; stops at the first GX_ENOMEM. */
enum gx_err
gx_config_keep_restart_keys(struct gx_config *fresh, const struct gx_config *running)
{
    for (size_t i = 0; i < gx_config_n_rows; i++) {
        const struct gx_kspec *k = &gx_config_table[i];
        enum gx_err rc;

        if (!restart_row_differs(fresh, running, k)) {
            continue;
        }
        if ((rc = copy_field(fresh, running, k)) != GX_OK) {
            return rc;
        }
    }
    return GX_OK;
}
