/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_where.c - label selector requirements (matchExpressions) as a
 * PodDisruptionBudget's selector and a Pod's node selection hold them, and
 * where a Pod may run by node labels (struct gx_where): spec.nodeSelector
 * and the terms of spec.affinity.nodeAffinity's required part. The API
 * server validated them; a wrong type is still refused with its path, as
 * everywhere in kobj. matchFields (node names) are not kept: they pin a pod
 * to nodes, not to a kind of node, which is what the fgd model asks about.
 * No I/O.
 */
#include "kobj.h"

#include <stdio.h>
#include <string.h>

#include "kobj_int.h"

/* An optional array of strings at @path.@key into an arena array. */
static enum gx_err
get_strings(struct dec *d, const cJSON *obj, const char *path, const char *key, const char ***out,
            size_t *n)
{
    char xp[PATH_MAX_LEN];
    const cJSON *arr, *c;
    size_t count, i = 0;
    enum gx_err rc = kobj_get_array(d, obj, path, key, &arr);

    *out = NULL;
    *n = 0;
    if (rc != GX_OK) {
        return rc;
    }
    count = kobj_count_children(arr);
    if (count > 0 && (*out = kobj_alloc_array(d, count, sizeof(**out))) == NULL) {
        return kobj_nomem(d);
    }
    for (c = arr != NULL ? arr->child : NULL; c != NULL && i < count; c = c->next, i++) {
        if (!cJSON_IsString(c)) {
            kobj_index_path(xp, sizeof(xp), path, key, i);
            gx_why_set(d->why, "%s: must be a string", xp);
            return GX_EINVAL;
        }
        if (((*out)[i] = kobj_shared_str(d, c->valuestring)) == NULL) {
            return kobj_nomem(d);
        }
    }
    *n = count;
    return GX_OK;
}

/* The operator named @op; GX_SEL_INVALID for another text (Gt and Lt only in node selectors). */
static enum gx_sel_op
sel_op(const char *op, bool node)
{
    static const char *const ops[] = {
        [GX_SEL_IN] = "In",         [GX_SEL_NOT_IN] = "NotIn",
        [GX_SEL_EXISTS] = "Exists", [GX_SEL_DOES_NOT_EXIST] = "DoesNotExist",
        [GX_SEL_GT] = "Gt",         [GX_SEL_LT] = "Lt"};

    for (size_t k = 0; k < GX_ARRAY_LEN(ops); k++) {
        if (strcmp(op, ops[k]) == 0 && (node || (k != GX_SEL_GT && k != GX_SEL_LT))) {
            return (enum gx_sel_op)k;
        }
    }
    return GX_SEL_INVALID;
}

enum gx_err
kobj_sel_exprs(struct dec *d, const cJSON *obj, const char *path, bool node,
               struct gx_sel_expr **out, size_t *n)
{
    char xp[PATH_MAX_LEN];
    const cJSON *arr, *c;
    size_t count, i = 0;
    enum gx_err rc = kobj_get_array(d, obj, path, "matchExpressions", &arr);

    *out = NULL;
    *n = 0;
    if (rc != GX_OK) {
        return rc;
    }
    count = kobj_count_children(arr);
    if (count > 0 && (*out = kobj_alloc_array(d, count, sizeof(**out))) == NULL) {
        return kobj_nomem(d);
    }
    for (c = arr != NULL ? arr->child : NULL; c != NULL && i < count; c = c->next, i++) {
        struct gx_sel_expr *x = &(*out)[i];
        const char *op = NULL;

        kobj_index_path(xp, sizeof(xp), path, "matchExpressions", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = kobj_get_shared_string(d, c, xp, "key", "", &x->key)) != GX_OK ||
            (rc = kobj_get_string(d, c, xp, "operator", "", &op)) != GX_OK ||
            (rc = get_strings(d, c, xp, "values", &x->values, &x->n_values)) != GX_OK) {
            return rc;
        }
        x->op = sel_op(op, node);
    }
    *n = count;
    return GX_OK;
}

/* The object at @keys[0..n) under @o; @path follows. NULL (GX_OK) when one is absent. */
static enum gx_err
descend(struct dec *d, const cJSON *o, char path[PATH_MAX_LEN], const char *const *keys, size_t n,
        const cJSON **out)
{
    char next[PATH_MAX_LEN];
    enum gx_err rc;

    for (size_t i = 0; i < n && o != NULL; i++) {
        if ((rc = kobj_get_object(d, o, path, keys[i], &o)) != GX_OK) {
            return rc;
        }
        kobj_sub_path(next, sizeof(next), path, keys[i]);
        memcpy(path, next, sizeof(next));
    }
    *out = o;
    return GX_OK;
}

enum gx_err
kobj_where(struct dec *d, const cJSON *spec, const char *sp, struct gx_where *out)
{
    static const char *const required[] = {"affinity", "nodeAffinity",
                                           "requiredDuringSchedulingIgnoredDuringExecution"};
    char path[PATH_MAX_LEN], tp[PATH_MAX_LEN];
    const cJSON *sel, *arr, *t;
    size_t i = 0;
    enum gx_err rc;

    memset(out, 0, sizeof(*out));
    if ((rc = kobj_get_map(d, spec, sp, "nodeSelector", MAP_SHARE_VALUES, &out->selector,
                           &out->n_selector)) != GX_OK) {
        return rc;
    }
    (void)snprintf(path, sizeof(path), "%s", sp);
    if ((rc = descend(d, spec, path, required, GX_ARRAY_LEN(required), &sel)) != GX_OK ||
        (rc = kobj_get_array(d, sel, path, "nodeSelectorTerms", &arr)) != GX_OK ||
        (out->n_terms = kobj_count_children(arr)) == 0) {
        return rc;
    }
    if ((out->terms = kobj_alloc_array(d, out->n_terms, sizeof(*out->terms))) == NULL) {
        return kobj_nomem(d);
    }
    cJSON_ArrayForEach(t, arr)
    {
        struct gx_sel_term *term = &out->terms[i];
        kobj_index_path(tp, sizeof(tp), path, "nodeSelectorTerms", i++);
        if (!cJSON_IsObject(t)) {
            gx_why_set(d->why, "%s: must be an object", tp);
            return GX_EINVAL;
        }
        if ((rc = kobj_sel_exprs(d, t, tp, true, &term->exprs, &term->n_exprs)) != GX_OK) {
            return rc;
        }
    }
    return GX_OK;
}
