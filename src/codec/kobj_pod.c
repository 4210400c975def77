/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_pod.c - a Pod decoded into struct gx_pod: metadata, the containers
 * and init containers with their requests and limits, the overhead,
 * priority, phase and whether the scheduler marked it a preemption victim.
 * On the readers of kobj.c; the list walk and the watch events decode
 * their Pods with kobj_pod_obj. No I/O.
 */
#include "kobj.h"

#include <string.h>

#include "kobj_int.h"

/* Decode one container object at @path (an element of containers/initContainers). */
static enum gx_err
decode_container(struct dec *d, const cJSON *c, const char *path, bool init,
                 struct gx_container *out)
{
    char rp[PATH_MAX_LEN];
    const cJSON *res;
    const char *policy = NULL;
    enum gx_err rc;

    if ((rc = kobj_get_shared_string(d, c, path, "name", "", &out->name)) != GX_OK) {
        return rc;
    }
    if ((rc = kobj_get_object(d, c, path, "resources", &res)) != GX_OK) {
        return rc;
    }
    kobj_sub_path(rp, sizeof(rp), path, "resources");
    if ((rc = kobj_get_map(d, res, rp, "requests", MAP_QUANTITIES | MAP_SHARE_VALUES,
                           &out->requests, &out->n_requests)) != GX_OK) {
        return rc;
    }
    if ((rc = kobj_get_map(d, res, rp, "limits", MAP_QUANTITIES | MAP_SHARE_VALUES, &out->limits,
                           &out->n_limits)) != GX_OK) {
        return rc;
    }
    if ((rc = kobj_get_shared_string(d, c, path, "restartPolicy", NULL, &policy)) != GX_OK) {
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
    enum gx_err rc = kobj_get_array(d, spec, path, key, &arr);

    if (rc != GX_OK) {
        return rc;
    }
    count = kobj_count_children(arr);
    if (count > 0) {
        cs = kobj_alloc_array(d, count, sizeof(*cs));
        if (cs == NULL) {
            return kobj_nomem(d);
        }
    }
    for (c = arr != NULL ? arr->child : NULL; c != NULL && i < count; c = c->next, i++) {
        kobj_index_path(cp, sizeof(cp), path, key, i);
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
 * True when status.conditions holds DisruptionTarget=True with reason
 * PreemptionByScheduler: kube-scheduler marks its victims so before it
 * deletes them. Read leniently (a malformed condition is not one), as
 * nothing but the preempt verb's holds depends on it.
 */
static bool
pod_preempted(const cJSON *status)
{
    const cJSON *arr = status != NULL ? kobj_last_member(status, "conditions") : NULL;
    const cJSON *c;

    if (!cJSON_IsArray(arr)) {
        return false;
    }
    cJSON_ArrayForEach(c, arr)
    {
        const cJSON *type = kobj_last_member(c, "type");
        const cJSON *st = kobj_last_member(c, "status");
        const cJSON *reason = kobj_last_member(c, "reason");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "DisruptionTarget") == 0 &&
            cJSON_IsString(st) && strcmp(st->valuestring, "True") == 0 && cJSON_IsString(reason) &&
            strcmp(reason->valuestring, "PreemptionByScheduler") == 0) {
            return true;
        }
    }
    return false;
}

/*
 * spec.schedulingGroup.podGroupName (KEP-4671, gate GenericWorkload): the
 * PodGroup the pod is a member of, "" when none. The scheduler-plugins
 * label scheduling.x-k8s.io/pod-group is not read: kube-scheduler itself
 * gives it no gang meaning, so the extender must not either.
 */
static enum gx_err
decode_pod_group(struct dec *d, const cJSON *spec, const char *sp, const char **out)
{
    char gp[PATH_MAX_LEN];
    const cJSON *g;
    enum gx_err rc = kobj_get_object(d, spec, sp, "schedulingGroup", &g);

    *out = "";
    if (rc != GX_OK || g == NULL) {
        return rc;
    }
    kobj_sub_path(gp, sizeof(gp), sp, "schedulingGroup");
    return kobj_get_string(d, g, gp, "podGroupName", "", out);
}

/* Decode a Pod object @o whose own path is @path ("" at the root). */
enum gx_err
kobj_pod_obj(struct dec *d, const cJSON *o, const char *path, struct gx_pod *out)
{
    char pp[3][PATH_MAX_LEN];
    const cJSON *parts[3], *meta, *spec, *status, *del, *prio;
    const char *mp = pp[0], *sp = pp[1], *tp = pp[2];
    struct gx_pod p;
    enum gx_err rc;

    memset(&p, 0, sizeof(p));
    if ((rc = kobj_object_parts(d, o, path, "pod", parts, pp)) != GX_OK) {
        return rc;
    }
    meta = parts[0], spec = parts[1], status = parts[2];

    if ((rc = kobj_get_string(d, meta, mp, "name", "", &p.name)) != GX_OK ||
        (rc = kobj_get_shared_string(d, meta, mp, "namespace", "", &p.namespace)) != GX_OK ||
        (rc = kobj_get_string(d, meta, mp, "uid", "", &p.uid)) != GX_OK ||
        (rc = kobj_get_string(d, meta, mp, "resourceVersion", "", &p.resource_version)) != GX_OK ||
        (rc = kobj_get_field(d, meta, mp, "deletionTimestamp", cJSON_IsString, "a string", &del)) !=
            GX_OK ||
        (rc = kobj_get_map(d, meta, mp, "labels", MAP_SHARE_VALUES, &p.labels, &p.n_labels)) !=
            GX_OK ||
        (rc = kobj_get_map(d, meta, mp, "annotations", 0, &p.annotations, &p.n_annotations)) !=
            GX_OK) {
        return rc;
    }
    p.deleting = del != NULL;

    if ((rc = kobj_get_string(d, spec, sp, "nodeName", NULL, &p.node_name)) != GX_OK ||
        (rc = kobj_get_shared_string(d, spec, sp, "schedulerName", "", &p.scheduler_name)) !=
            GX_OK ||
        (rc = kobj_get_field(d, spec, sp, "priority", cJSON_IsNumber, "a number", &prio)) !=
            GX_OK ||
        (rc = decode_containers(d, spec, sp, "containers", false, &p.containers,
                                &p.n_containers)) != GX_OK ||
        (rc = decode_containers(d, spec, sp, "initContainers", true, &p.init_containers,
                                &p.n_init_containers)) != GX_OK ||
        (rc = kobj_get_map(d, spec, sp, "overhead", MAP_QUANTITIES | MAP_SHARE_VALUES, &p.overhead,
                           &p.n_overhead)) != GX_OK ||
        (rc = kobj_where(d, spec, sp, &p.where)) != GX_OK ||
        (rc = decode_pod_group(d, spec, sp, &p.pod_group)) != GX_OK) {
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

    if ((rc = kobj_get_shared_string(d, status, tp, "phase", "", &p.phase)) != GX_OK) {
        return rc;
    }
    p.preempted = pod_preempted(status);
    *out = p;
    return GX_OK;
}

/* Succeeded, Failed or being deleted. */
bool
gx_pod_finished(const struct gx_pod *pod)
{
    return pod->deleting || strcmp(pod->phase, "Succeeded") == 0 ||
           strcmp(pod->phase, "Failed") == 0;
}

/* Decode one Pod; fails with GX_EPARSE/GX_ETOOBIG/GX_EINVAL/GX_ENOMEM and @why. */
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
    rc = kobj_doc_parse(&doc, json, len, max_depth, GX_POD_MAX_VALUES, why);
    if (rc == GX_OK) {
        rc = kobj_pod_obj(&d, doc.root, "", out);
    }
    kobj_doc_free(&doc);
    return rc;
}
