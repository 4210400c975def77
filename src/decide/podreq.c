/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podreq.c - what a pod asks of GPUs. Effective requests follow Kubernetes
 * (k8s.io/component-helpers resource.PodRequests, with native sidecars from
 * KEP-753); pod overhead is added to CPU and memory only (as kube-scheduler
 * does), since GPU resources never appear in it. Classification into none /
 * exclusive / shared follows podreq.h. Pure code: no I/O, no allocation.
 */
#include "podreq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gang.h"
#include "quantity.h"

/* Time slots one pod may ask for on one card. */
#define PODREQ_MAX_SLICES 64

/* True when a configured name is usable (the config may leave one unset). */
static bool
name_set(const char *name)
{
    return name != NULL && name[0] != '\0';
}

/* Add without overflow; false when the sum does not fit. */
static bool
add_i64(int64_t a, int64_t b, int64_t *out)
{
    if (b > 0 && a > INT64_MAX - b) {
        return false;
    }
    *out = a + b;
    return true;
}

/*
 * Request of @resource by container @c: requests[res], else limits[res]
 * (Kubernetes defaults an absent request to the limit), else 0. On a bad
 * quantity fills @why naming the container and returns the quantity error.
 */
static enum gx_err
container_request(const struct gx_container *c, const char *kind, size_t idx, const char *resource,
                  bool milli, int64_t *out, struct gx_why *why)
{
    const char *q = gx_kv_get(c->requests, c->n_requests, resource);
    const char *field = "requests";
    enum gx_err rc;
    int64_t v;

    if (q == NULL) {
        q = gx_kv_get(c->limits, c->n_limits, resource);
        field = "limits";
    }
    if (q == NULL) {
        *out = 0;
        return GX_OK;
    }
    rc = milli ? gx_quantity_parse_milli(q, &v) : gx_quantity_parse(q, &v);
    if (rc != GX_OK) {
        gx_why_set(why, "%s[%zu] \"%.64s\": resources.%s[\"%.64s\"]: %s quantity \"%.32s\"", kind,
                   idx, c->name != NULL ? c->name : "", field, resource,
                   rc == GX_EINVAL    ? "negative"
                   : rc == GX_ETOOBIG ? "too large"
                                      : "invalid",
                   q);
        return rc;
    }
    *out = v;
    return GX_OK;
}

/*
 * Effective request of @resource (see podreq.h). Quantity errors come back
 * as they are, with @why naming the container; a sum that overflows int64
 * is GX_ETOOBIG.
 */
static enum gx_err
effective(const struct gx_pod *pod, const char *resource, bool milli, int64_t *out,
          struct gx_why *why)
{
    int64_t app = 0, init_peak = 0, sidecars = 0, v, peak;
    enum gx_err rc;

    for (size_t i = 0; i < pod->n_containers; i++) {
        rc = container_request(&pod->containers[i], "containers", i, resource, milli, &v, why);
        if (rc != GX_OK) {
            return rc;
        }
        if (!add_i64(app, v, &app)) {
            goto toobig;
        }
    }
    for (size_t i = 0; i < pod->n_init_containers; i++) {
        const struct gx_container *c = &pod->init_containers[i];

        rc = container_request(c, "initContainers", i, resource, milli, &v, why);
        if (rc != GX_OK) {
            return rc;
        }
        if (c->restartable) {
            /* A sidecar keeps running: it counts for the app phase and for every later init. */
            if (!add_i64(app, v, &app) || !add_i64(sidecars, v, &sidecars)) {
                goto toobig;
            }
            peak = sidecars;
        } else if (!add_i64(v, sidecars, &peak)) {
            goto toobig;
        }
        if (peak > init_peak) {
            init_peak = peak;
        }
    }
    *out = app > init_peak ? app : init_peak;
    return GX_OK;
toobig:
    gx_why_set(why, "total request of %.64s is too large", resource);
    return GX_ETOOBIG;
}

/* Effective request of @resource; GX_EPARSE on any bad quantity. */
enum gx_err
gx_podreq_effective(const struct gx_pod *pod, const char *resource, int64_t *out)
{
    int64_t v = 0;

    if (pod == NULL || resource == NULL) {
        return GX_EINVAL;
    }
    if (effective(pod, resource, false, &v, NULL) != GX_OK) {
        return GX_EPARSE;
    }
    *out = v;
    return GX_OK;
}

/* Effective request of a configured resource name (0 when the name is unset). */
static enum gx_err
effective_named(const struct gx_pod *pod, const char *resource, int64_t *out, struct gx_why *why)
{
    if (!name_set(resource)) {
        *out = 0;
        return GX_OK;
    }
    return effective(pod, resource, false, out, why) == GX_OK ? GX_OK : GX_EINVAL;
}

/* Annotation value of a configured name, NULL when absent or the name is unset. */
static const char *
annotation(const struct gx_pod *pod, const char *name)
{
    if (!name_set(name)) {
        return NULL;
    }
    return gx_kv_get(pod->annotations, pod->n_annotations, name);
}

/* Parse a plain decimal integer 1..64 (no sign, no spaces). */
static bool
parse_slices(const char *s, int *out)
{
    int v = 0;

    if (s[0] == '\0') {
        return false;
    }
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        v = v * 10 + (*p - '0');
        if (v > PODREQ_MAX_SLICES) {
            return false;
        }
    }
    if (v < 1) {
        return false;
    }
    *out = v;
    return true;
}

/* Parse a plain decimal integer 1..1000 (a milli-GPU share). */
static bool
parse_milli(const char *s, int *out)
{
    int v = 0;

    if (s[0] == '\0' || strlen(s) > 4) {
        return false;
    }
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 1000) {
        return false;
    }
    *out = v;
    return true;
}

/*
 * GPU memory annotation in MiB, rounded up. A Kubernetes quantity: "6Gi" =
 * 6144 MiB, "1G" = 954 MiB, and a bare number is bytes ("6442450944" = 6 GiB).
 * A bare number under 1 MiB is refused rather than booked as a MiB: "8000"
 * was surely meant as 8000Mi (it was read so before).
 */
static enum gx_err
parse_memory(const char *s, int64_t *out)
{
    size_t i = 0;
    int64_t bytes;

    while (s[i] >= '0' && s[i] <= '9') {
        i++;
    }
    if (i > 0 && s[i] == '\0' &&
        (gx_quantity_parse(s, &bytes) != GX_OK || (bytes > 0 && bytes < (INT64_C(1) << 20)))) {
        return GX_EINVAL;
    }
    return gx_quantity_parse_mib(s, out);
}

/* Parse a utilization percentage 0..100 (a decimal number, nothing else). */
static bool
parse_util(const char *s, double *out)
{
    char *end = NULL;
    double v;

    /* strtod skips leading spaces and takes "nan"/"inf"/hex: allow only digits and '.'. */
    if (s[0] == '\0' || strspn(s, "0123456789.") != strlen(s)) {
        return false;
    }
    v = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v) || v < 0 || v > 100) {
        return false;
    }
    *out = v;
    return true;
}

/* Read the memory and utilization annotations of a shared pod into @r. */
static enum gx_err
shared_annotations(const struct gx_config *cfg, const struct gx_pod *pod, struct gx_podreq *r,
                   struct gx_why *why)
{
    const char *mem = annotation(pod, cfg->ann_memory);
    const char *util = annotation(pod, cfg->ann_util);

    if (mem != NULL && parse_memory(mem, &r->memory_mib) != GX_OK) {
        gx_why_set(why,
                   "%.64s must be a memory size such as 6Gi or 6144Mi (a bare number is bytes), "
                   "not \"%.32s\"",
                   cfg->ann_memory, mem);
        return GX_EINVAL;
    }
    if (util != NULL && !parse_util(util, &r->util_pct)) {
        gx_why_set(why, "%.64s must be a number from 0 to 100, not \"%.32s\"", cfg->ann_util, util);
        return GX_EINVAL;
    }
    return GX_OK;
}

/* A boolean annotation @name: absent is false; GX_EINVAL unless "true" or "false". */
static enum gx_err
flag_annotation(const struct gx_pod *pod, const char *name, bool *out, struct gx_why *why)
{
    const char *v = annotation(pod, name);

    *out = v != NULL && strcmp(v, "true") == 0;
    if (v != NULL && !*out && strcmp(v, "false") != 0) {
        gx_why_set(why, "%.64s must be \"true\" or \"false\", not \"%.32s\"", name, v);
        return GX_EINVAL;
    }
    return GX_OK;
}

/* The gang a member belongs to and how its cards sit next to the other members'. */
static enum gx_err
gang_options(const struct gx_config *cfg, const struct gx_pod *pod, struct gx_podreq *r,
             struct gx_why *why)
{
    char key[GX_GANG_KEY_MAX];
    enum gx_err rc;

    if ((rc = flag_annotation(pod, cfg->ann_apart, &r->apart, why)) != GX_OK ||
        (rc = flag_annotation(pod, cfg->ann_numa, &r->same_numa, why)) != GX_OK) {
        return rc;
    }
    r->gang = gx_gang_key(pod, key, sizeof(key)) ? gx_hash(key, strlen(key)) : 0;
    return GX_OK;
}

/* spec.overhead[@resource] into *out (0 when absent or not a quantity). */
static void
overhead_of(const struct gx_pod *pod, const char *resource, bool milli, int64_t *out)
{
    const char *q = gx_kv_get(pod->overhead, pod->n_overhead, resource);
    enum gx_err rc;

    *out = 0;
    if (q != NULL) {
        rc = milli ? gx_quantity_parse_milli(q, out) : gx_quantity_parse(q, out);
        if (rc != GX_OK) {
            *out = 0;
        }
    }
}

/* Effective request of @resource plus the pod's overhead, 0 when it does not parse. */
static int64_t
node_request(const struct gx_pod *pod, const char *resource, bool milli)
{
    int64_t v = 0, o;

    if (effective(pod, resource, milli, &v, NULL) != GX_OK) {
        v = 0;
    }
    overhead_of(pod, resource, milli, &o);
    return add_i64(v, o, &v) ? v : INT64_MAX;
}

/*
 * The API server has validated these quantities; one that does not parse
 * counts as 0 rather than rejecting a GPU request.
 */
void
gx_podreq_host(const struct gx_pod *pod, int64_t *cpu_milli, int64_t *mem_bytes)
{
    *cpu_milli = node_request(pod, "cpu", true);
    *mem_bytes = node_request(pod, "memory", false);
}

/* CPU (milli) and memory (MiB) the pod asks of the node, for scores that weigh the whole node. */
static void
host_requests(const struct gx_pod *pod, struct gx_podreq *r)
{
    int64_t bytes;

    gx_podreq_host(pod, &r->cpu_milli, &bytes);
    r->mem_mib = gx_quantity_mib_of(bytes);
}

/*
 * Bindings of earlier versions wrote the time-slices annotation on every pod
 * they bound: "0" on whole GPUs, the replicas on device-plugin shares. On a
 * bound pod that asks for either by its resources (and for no share of ours)
 * it is that note, not a request.
 */
static bool
legacy_slices_note(const struct gx_pod *pod, int64_t gpu, int64_t shared, int64_t slice,
                   const char *ann_milli)
{
    return pod->node_name != NULL && pod->node_name[0] != '\0' && (gpu > 0 || shared > 0) &&
           slice == 0 && ann_milli == NULL;
}

/* Classify @pod per podreq.h; GX_EINVAL with @why when it cannot be honoured. */
enum gx_err
gx_podreq_parse(const struct gx_config *cfg, const struct gx_pod *pod, struct gx_podreq *out,
                struct gx_why *why)
{
    struct gx_podreq r = {.kind = GX_REQ_NONE, .util_pct = -1};
    const char *ann_slices, *ann_milli;
    int64_t gpu, shared, slice;
    enum gx_err rc;

    if (cfg == NULL || pod == NULL) {
        gx_why_set(why, "no pod");
        return GX_EINVAL;
    }
    if ((rc = effective_named(pod, cfg->res_gpu, &gpu, why)) != GX_OK ||
        (rc = effective_named(pod, cfg->res_shared, &shared, why)) != GX_OK ||
        (rc = effective_named(pod, cfg->res_time_slice, &slice, why)) != GX_OK) {
        return rc;
    }
    ann_slices = annotation(pod, cfg->ann_slices);
    ann_milli = annotation(pod, cfg->ann_milli);
    if (ann_slices != NULL && legacy_slices_note(pod, gpu, shared, slice, ann_milli)) {
        ann_slices = NULL;
    }

    if (ann_slices != NULL || ann_milli != NULL || slice > 0) {
        /* Annotation mode: the extender picks the card and books time slots on it. */
        if (gpu > 0) {
            gx_why_set(why, "time slices and whole GPUs cannot be combined (%.64s with %.64s)",
                       ann_slices != NULL  ? cfg->ann_slices
                       : ann_milli != NULL ? cfg->ann_milli
                                           : cfg->res_time_slice,
                       cfg->res_gpu);
            return GX_EINVAL;
        }
        if (shared > 0) {
            gx_why_set(why, "time slices and %.64s cannot be combined",
                       name_set(cfg->res_shared) ? cfg->res_shared : "shared GPUs");
            return GX_EINVAL;
        }
        r.kind = GX_REQ_SHARED;
        if (ann_slices != NULL) {
            if (!parse_slices(ann_slices, &r.slices)) {
                gx_why_set(why, "%.64s must be an integer from 1 to %d, not \"%.32s\"",
                           cfg->ann_slices, PODREQ_MAX_SLICES, ann_slices);
                return GX_EINVAL;
            }
        } else if (slice > PODREQ_MAX_SLICES) {
            gx_why_set(why, "%.64s must be from 1 to %d, not %lld", cfg->res_time_slice,
                       PODREQ_MAX_SLICES, (long long)slice);
            return GX_EINVAL;
        } else {
            r.slices = slice > 0 ? (int)slice : 1;
        }
        if (ann_milli != NULL && !parse_milli(ann_milli, &r.milli)) {
            gx_why_set(why, "%.64s must be an integer from 1 to 1000 (milli-GPU), not \"%.32s\"",
                       cfg->ann_milli, ann_milli);
            return GX_EINVAL;
        }
        if ((rc = shared_annotations(cfg, pod, &r, why)) != GX_OK) {
            return rc;
        }
    } else if (shared > 0) {
        /* Device-plugin mode: the plugin picks the card; we count replicas. */
        if (gpu > 0) {
            gx_why_set(why, "%.64s and %.64s cannot be combined", cfg->res_shared, cfg->res_gpu);
            return GX_EINVAL;
        }
        if (shared > PODREQ_MAX_SLICES) {
            gx_why_set(why, "%.64s must be from 1 to %d", cfg->res_shared, PODREQ_MAX_SLICES);
            return GX_EINVAL;
        }
        r.kind = GX_REQ_SHARED;
        r.device_plugin = true;
        r.slices = (int)shared;
        if ((rc = shared_annotations(cfg, pod, &r, why)) != GX_OK) {
            return rc;
        }
    } else if (gpu > 0) {
        r.kind = GX_REQ_EXCLUSIVE;
        r.gpus = gpu;
    }
    if ((rc = gang_options(cfg, pod, &r, why)) != GX_OK) {
        return rc;
    }
    host_requests(pod, &r);
    *out = r;
    return GX_OK;
}

/*
 * kube-scheduler calls an extender with managedResources only for a pod
 * that requests one of them; the shipped scheduler config lists exactly
 * the three resource names of the config (an annotation alone routes
 * nothing).
 */
bool
gx_podreq_managed(const struct gx_config *cfg, const struct gx_pod *pod)
{
    const char *names[3] = {cfg->res_gpu, cfg->res_shared, cfg->res_time_slice};
    struct gx_why why = {{0}};

    for (int i = 0; i < 3; i++) {
        int64_t v = 0;
        if (effective_named(pod, names[i], &v, &why) == GX_OK && v > 0) {
            return true;
        }
    }
    return false;
}
