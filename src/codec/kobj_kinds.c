/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_kinds.c - the kinds beyond Pod and Node, each only as far as the
 * extender reads it: a coordination.k8s.io Lease (its metadata: the ledger
 * lives in annotations), a resource.k8s.io ResourceSlice (driver, pool,
 * node, devices and their UUIDs) and ResourceClaim (allocated devices,
 * reservedFor), and a policy PodDisruptionBudget (selector,
 * disruptionsAllowed, disruptedPods). One decoder per kind on the readers
 * of kobj.c; the list walk and the watch events call them. No I/O.
 */
#include "kobj.h"

#include <string.h>

#include "kobj_int.h"

/* ---- Lease ---- */

/* Decode a Lease object @o at @path: its metadata only. */
enum gx_err
kobj_lease_obj(struct dec *d, const cJSON *o, const char *path, struct gx_lease *out)
{
    char pp[3][PATH_MAX_LEN];
    const cJSON *parts[3];
    const char *mp = pp[0];
    struct gx_lease l;
    enum gx_err rc;

    memset(&l, 0, sizeof(l));
    if ((rc = kobj_object_parts(d, o, path, "lease", parts, pp)) != GX_OK) {
        return rc;
    }
    if ((rc = kobj_get_string(d, parts[0], mp, "name", "", &l.name)) != GX_OK ||
        (rc = kobj_get_shared_string(d, parts[0], mp, "namespace", "", &l.namespace)) != GX_OK ||
        (rc = kobj_get_string(d, parts[0], mp, "resourceVersion", "", &l.resource_version)) !=
            GX_OK ||
        (rc = kobj_get_map(d, parts[0], mp, "annotations", 0, &l.annotations, &l.n_annotations)) !=
            GX_OK) {
        return rc;
    }
    *out = l;
    return GX_OK;
}

/* Decode one Lease; fails as gx_kobj_decode_node does. */
enum gx_err
gx_kobj_decode_lease(const char *json, size_t len, int max_depth, struct gx_arena *a,
                     struct gx_lease *out, struct gx_why *why)
{
    struct dec d = {a, why, NULL};
    struct doc doc;
    enum gx_err rc = kobj_doc_parse(&doc, json, len, max_depth, 0, why);

    if (rc == GX_OK) {
        rc = kobj_lease_obj(&d, doc.root, "", out);
    }
    kobj_doc_free(&doc);
    return rc;
}

/* ---- ResourceSlice, ResourceClaim ---- */

/*
 * The device's UUID: the string attribute "uuid" of any domain
 * ("gpu.nvidia.com/uuid" or unqualified), NULL when it has none.
 */
static enum gx_err
decode_device_uuid(struct dec *d, const cJSON *dev, const char *path, const char **uuid)
{
    char ap[PATH_MAX_LEN];
    const cJSON *attrs, *a;
    enum gx_err rc = kobj_get_object(d, dev, path, "attributes", &attrs);

    *uuid = NULL;
    if (rc != GX_OK || attrs == NULL) {
        return rc;
    }
    kobj_sub_path(ap, sizeof(ap), path, "attributes");
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
        return kobj_get_string(d, a, ap, "string", NULL, uuid);
    }
    return GX_OK;
}

/* Decode a ResourceSlice object @o at @path. */
enum gx_err
kobj_slice_obj(struct dec *d, const cJSON *o, const char *path, struct gx_rslice *out)
{
    char pp[3][PATH_MAX_LEN], xp[PATH_MAX_LEN];
    const cJSON *parts[3], *pool, *devs, *c;
    const char *mp = pp[0], *sp = pp[1];
    struct gx_rslice r;
    size_t count, i = 0;
    enum gx_err rc;

    memset(&r, 0, sizeof(r));
    if ((rc = kobj_object_parts(d, o, path, "resourceslice", parts, pp)) != GX_OK) {
        return rc;
    }
    if ((rc = kobj_get_string(d, parts[0], mp, "name", "", &r.name)) != GX_OK ||
        (rc = kobj_get_string(d, parts[0], mp, "resourceVersion", "", &r.resource_version)) !=
            GX_OK ||
        (rc = kobj_get_shared_string(d, parts[1], sp, "driver", "", &r.driver)) != GX_OK ||
        (rc = kobj_get_shared_string(d, parts[1], sp, "nodeName", "", &r.node_name)) != GX_OK ||
        (rc = kobj_get_object(d, parts[1], sp, "pool", &pool)) != GX_OK ||
        (rc = kobj_get_array(d, parts[1], sp, "devices", &devs)) != GX_OK) {
        return rc;
    }
    kobj_sub_path(xp, sizeof(xp), sp, "pool");
    if ((rc = kobj_get_shared_string(d, pool, xp, "name", "", &r.pool)) != GX_OK) {
        return rc;
    }
    count = kobj_count_children(devs);
    if (count > 0 && (r.devices = kobj_alloc_array(d, count, sizeof(*r.devices))) == NULL) {
        return kobj_nomem(d);
    }
    for (c = devs != NULL ? devs->child : NULL; c != NULL && i < count; c = c->next, i++) {
        kobj_index_path(xp, sizeof(xp), sp, "devices", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = kobj_get_string(d, c, xp, "name", "", &r.devices[i].name)) != GX_OK ||
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

    kobj_sub_path(ap, sizeof(ap), tp, "allocation");
    kobj_sub_path(dp, sizeof(dp), ap, "devices");
    if ((rc = kobj_get_object(d, status, tp, "allocation", &alloc)) != GX_OK ||
        (rc = kobj_get_object(d, alloc, ap, "devices", &devs)) != GX_OK ||
        (rc = kobj_get_array(d, devs, dp, "results", &res)) != GX_OK) {
        return rc;
    }
    count = kobj_count_children(res);
    if (count > 0 && (r->results = kobj_alloc_array(d, count, sizeof(*r->results))) == NULL) {
        return kobj_nomem(d);
    }
    for (c = res != NULL ? res->child : NULL; c != NULL && i < count; c = c->next, i++) {
        struct gx_dra_result *x = &r->results[i];

        kobj_index_path(xp, sizeof(xp), dp, "results", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = kobj_get_shared_string(d, c, xp, "driver", "", &x->driver)) != GX_OK ||
            (rc = kobj_get_shared_string(d, c, xp, "pool", "", &x->pool)) != GX_OK ||
            (rc = kobj_get_string(d, c, xp, "device", "", &x->device)) != GX_OK) {
            return rc;
        }
    }
    r->n_results = count;
    return GX_OK;
}

/* Decode a ResourceClaim object @o at @path. */
enum gx_err
kobj_claim_obj(struct dec *d, const cJSON *o, const char *path, struct gx_rclaim *out)
{
    char pp[3][PATH_MAX_LEN], xp[PATH_MAX_LEN];
    const cJSON *parts[3], *rf, *c;
    const char *mp = pp[0], *tp = pp[2];
    struct gx_rclaim r;
    size_t count, i = 0;
    enum gx_err rc;

    memset(&r, 0, sizeof(r));
    if ((rc = kobj_object_parts(d, o, path, "resourceclaim", parts, pp)) != GX_OK) {
        return rc;
    }
    if ((rc = kobj_get_string(d, parts[0], mp, "name", "", &r.name)) != GX_OK ||
        (rc = kobj_get_shared_string(d, parts[0], mp, "namespace", "", &r.namespace)) != GX_OK ||
        (rc = kobj_get_string(d, parts[0], mp, "uid", "", &r.uid)) != GX_OK ||
        (rc = kobj_get_string(d, parts[0], mp, "resourceVersion", "", &r.resource_version)) !=
            GX_OK ||
        (rc = decode_claim_results(d, parts[2], tp, &r)) != GX_OK ||
        (rc = kobj_get_array(d, parts[2], tp, "reservedFor", &rf)) != GX_OK) {
        return rc;
    }
    count = kobj_count_children(rf);
    if (count > 0 &&
        (r.reserved_for = kobj_alloc_array(d, count, sizeof(*r.reserved_for))) == NULL) {
        return kobj_nomem(d);
    }
    for (c = rf != NULL ? rf->child : NULL; c != NULL && i < count; c = c->next, i++) {
        kobj_index_path(xp, sizeof(xp), tp, "reservedFor", i);
        if (!cJSON_IsObject(c)) {
            gx_why_set(d->why, "%s: must be an object", xp);
            return GX_EINVAL;
        }
        if ((rc = kobj_get_string(d, c, xp, "name", "", &r.reserved_for[i])) != GX_OK) {
            return rc;
        }
    }
    r.n_reserved_for = count;
    *out = r;
    return GX_OK;
}

/* ---- PodDisruptionBudget ---- */

/* Decode a PodDisruptionBudget object @o at @path. */
enum gx_err
kobj_pdb_obj(struct dec *d, const cJSON *o, const char *path, struct gx_pdb *out)
{
    char pp[3][PATH_MAX_LEN], selp[PATH_MAX_LEN];
    const cJSON *parts[3], *sel, *allowed, *disrupted, *c;
    const char *mp = pp[0], *sp = pp[1], *tp = pp[2];
    struct gx_pdb p;
    size_t i = 0;
    enum gx_err rc;

    memset(&p, 0, sizeof(p));
    if ((rc = kobj_object_parts(d, o, path, "poddisruptionbudget", parts, pp)) != GX_OK) {
        return rc;
    }
    kobj_sub_path(selp, sizeof(selp), sp, "selector");
    if ((rc = kobj_get_string(d, parts[0], mp, "name", "", &p.name)) != GX_OK ||
        (rc = kobj_get_shared_string(d, parts[0], mp, "namespace", "", &p.namespace)) != GX_OK ||
        (rc = kobj_get_string(d, parts[0], mp, "uid", "", &p.uid)) != GX_OK ||
        (rc = kobj_get_string(d, parts[0], mp, "resourceVersion", "", &p.resource_version)) !=
            GX_OK ||
        (rc = kobj_get_object(d, parts[1], sp, "selector", &sel)) != GX_OK ||
        (rc = kobj_get_map(d, sel, selp, "matchLabels", MAP_SHARE_VALUES, &p.match_labels,
                           &p.n_match_labels)) != GX_OK ||
        (rc = kobj_sel_exprs(d, sel, selp, false, &p.exprs, &p.n_exprs)) != GX_OK ||
        (rc = kobj_get_field(d, parts[2], tp, "disruptionsAllowed", cJSON_IsNumber, "a number",
                             &allowed)) != GX_OK ||
        (rc = kobj_get_object(d, parts[2], tp, "disruptedPods", &disrupted)) != GX_OK) {
        return rc;
    }
    p.has_selector = sel != NULL;
    if (allowed != NULL) {
        double v = cJSON_GetNumberValue(allowed);
        p.disruptions_allowed = v >= 2147483647.0 ? INT32_MAX : v <= 0.0 ? 0 : (int32_t)v;
    }
    p.n_disrupted = kobj_count_children(disrupted);
    if (p.n_disrupted > 0 &&
        (p.disrupted = kobj_alloc_array(d, p.n_disrupted, sizeof(*p.disrupted))) == NULL) {
        return kobj_nomem(d);
    }
    for (c = disrupted != NULL ? disrupted->child : NULL; c != NULL && i < p.n_disrupted;
         c = c->next, i++) {
        if ((p.disrupted[i] = gx_arena_strdup(d->a, c->string != NULL ? c->string : "")) == NULL) {
            return kobj_nomem(d);
        }
    }
    *out = p;
    return GX_OK;
}
