/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj.h - Kubernetes objects (Pod, Node, Lease, ResourceSlice,
 * ResourceClaim, their lists, watch events) decoded from JSON into plain
 * structs. Only the fields the extender uses are kept. Every string and
 * array of a decoded object is allocated from an arena the caller passes
 * in and dies with it. Input is peer data: every
 * field is type-checked; wrong types are errors with the field path in @why.
 * No I/O.
 */
#ifndef GX_KOBJ_H
#define GX_KOBJ_H

#include "arena.h"
#include "buf.h"
#include "common.h"

/** Value of @key in @kv[0..n), or NULL. Linear scan. */
const char *gx_kv_get(const struct gx_kv *kv, size_t n, const char *key);

struct gx_container {
    const char *name;
    struct gx_kv *requests; /* resource name -> quantity string */
    size_t n_requests;
    struct gx_kv *limits;
    size_t n_limits;
    bool restartable; /* init container with restartPolicy: Always (a sidecar) */
};

/** Operator of one matchExpressions requirement of a label selector. */
enum gx_sel_op {
    GX_SEL_IN,
    GX_SEL_NOT_IN,
    GX_SEL_EXISTS,
    GX_SEL_DOES_NOT_EXIST,
    GX_SEL_GT, /* node selectors only: the label's integer value is greater */
    GX_SEL_LT,
    GX_SEL_INVALID /* any other text: the selector matches nothing (as kube-scheduler reads it) */
};

/** One requirement of a matchExpressions list (a PDB's selector, a node selector term). */
struct gx_sel_expr {
    const char *key;
    enum gx_sel_op op;
    const char **values;
    size_t n_values;
};

/** One nodeSelectorTerm: all of its label requirements (matchFields are not kept). */
struct gx_sel_term {
    struct gx_sel_expr *exprs;
    size_t n_exprs;
};

/**
 * Where a pod may run by node labels, as kube-scheduler's NodeAffinity
 * reads it: every spec.nodeSelector pair, and one of the terms of the
 * required node affinity (no terms: any node the selector allows).
 */
struct gx_where {
    struct gx_kv *selector;
    size_t n_selector;
    struct gx_sel_term *terms;
    size_t n_terms;
};

struct gx_pod {
    const char *name, *namespace, *uid; /* "" when absent */
    const char *node_name;              /* spec.nodeName, NULL while pending */
    const char *scheduler_name;         /* spec.schedulerName, "" when absent */
    const char *phase;                  /* status.phase, "" when absent */
    const char *resource_version;
    bool deleting;     /* metadata.deletionTimestamp set */
    bool has_priority; /* spec.priority present (the Priority admission plugin sets it) */
    int32_t priority;  /* spec.priority, 0 when absent */
    bool preempted;    /* a DisruptionTarget=True/PreemptionByScheduler condition: a victim */
    struct gx_kv *labels;
    size_t n_labels;
    struct gx_kv *annotations;
    size_t n_annotations;
    struct gx_container *containers;
    size_t n_containers;
    struct gx_container *init_containers;
    size_t n_init_containers;
    struct gx_kv *overhead; /* spec.overhead */
    size_t n_overhead;
    struct gx_where where; /* spec.nodeSelector and required node affinity */
    const char *pod_group; /* spec.schedulingGroup.podGroupName: a member of that PodGroup; "" */
};

struct gx_taint {
    const char *key, *value, *effect;
};

struct gx_node_info {
    const char *name;
    const char *resource_version;
    struct gx_kv *labels; /* sorted by key */
    size_t n_labels;
    struct gx_kv *allocatable;
    size_t n_allocatable;
    struct gx_kv *capacity;
    size_t n_capacity;
    struct gx_taint *taints;
    size_t n_taints;
    bool ready;         /* Ready condition is "True" */
    bool unschedulable; /* spec.unschedulable */
};

/**
 * True when @a and @b hold the same node for every decision: everything
 * decoded but the resourceVersion. A node update that changes none of it
 * (a status heartbeat, another controller's annotation) needs no new
 * snapshot: at 5,000 nodes their stream rebuilt it 20 times a second.
 */
bool gx_node_info_same(const struct gx_node_info *a, const struct gx_node_info *b);

/**
 * True when resourceVersion @a is older than @b. Since v1.35 (KEP-5504)
 * they are decimal integers without leading zeros, comparable by length,
 * then digit by digit; anything else (empty, an older or foreign server's
 * opaque string) is never older, so it is applied as before.
 */
bool gx_rv_older(const char *a, const char *b);

/* Largest Pod JSON accepted from a request (the API server's own limit is 1.5 MiB). */
#define GX_POD_MAX_BYTES 3145728u
/* Most JSON values a Pod may hold (each costs a tree node while decoding). */
#define GX_POD_MAX_VALUES 100000u

/**
 * The Pod a manifest document stands for, as JSON text appended to @pod:
 * a Pod (or an object without "kind") as it is; the pod template of a
 * Deployment, StatefulSet, DaemonSet, ReplicaSet or Job (spec.template) or
 * of a CronJob (spec.jobTemplate.spec.template) as a Pod named and
 * namespaced as the workload. @what (size @what_n) names the document
 * ("Pod ns/a", "Deployment ns/train"), also on failure once the kind is
 * known; *@template is true for a workload. GX_EINVAL with @why for another
 * kind or a workload without a template, GX_EPARSE for bad JSON, GX_ENOMEM,
 * GX_ETOOBIG (from @pod or the Pod caps).
 */
enum gx_err gx_kobj_pod_of(const char *json, size_t len, int max_depth, struct gx_buf *pod,
                           char *what, size_t what_n, bool *template, struct gx_why *why) GX_WUR;

/**
 * Decode one Pod object. GX_ETOOBIG over GX_POD_MAX_BYTES or
 * GX_POD_MAX_VALUES values, or nested deeper than @max_depth.
 */
enum gx_err gx_kobj_decode_pod(const char *json, size_t len, int max_depth, struct gx_arena *a,
                               struct gx_pod *out, struct gx_why *why) GX_WUR;

/** The pod will run no more: Succeeded, Failed or being deleted. */
bool gx_pod_finished(const struct gx_pod *pod);

/** Decode one Node object. */
enum gx_err gx_kobj_decode_node(const char *json, size_t len, int max_depth, struct gx_arena *a,
                                struct gx_node_info *out, struct gx_why *why) GX_WUR;

/**
 * Decode a NodeList ({"items":[...],"metadata":{"resourceVersion":..}}).
 * *nodes is an arena array of *n nodes; *resource_version may be NULL.
 */
enum gx_err gx_kobj_decode_node_list(const char *json, size_t len, int max_depth,
                                     struct gx_arena *a, struct gx_node_info **nodes, size_t *n,
                                     const char **resource_version, struct gx_why *why) GX_WUR;

/** Decode a PodList the same way. */
enum gx_err gx_kobj_decode_pod_list(const char *json, size_t len, int max_depth, struct gx_arena *a,
                                    struct gx_pod **pods, size_t *n, const char **resource_version,
                                    struct gx_why *why) GX_WUR;

/**
 * What a failed API call says: "HTTP 409: <Status.message>" from the
 * Status body the API server sends with an error, "HTTP 500" without one,
 * or the transfer error (@rc not GX_OK: "timed out", or e.g. "upstream
 * error: Empty reply from server" with the transport's text in @body).
 * Into @out (@n).
 */
void gx_kobj_failure_text(enum gx_err rc, long status, const char *body, size_t len, char *out,
                          size_t n);

/**
 * Whether a failed API call is worth sending again at once: a broken
 * connection, a 5xx or a 429. Not a timeout (its time is spent) and not
 * another 4xx (the same request gets the same answer). A write failed this
 * way may have landed: only an idempotent one, or one that reads first, is
 * sent again.
 */
bool gx_kobj_retryable(enum gx_err rc, long status);

enum gx_watch_type {
    GX_WATCH_ADDED,
    GX_WATCH_MODIFIED,
    GX_WATCH_DELETED,
    GX_WATCH_BOOKMARK,
    GX_WATCH_ERROR
};

/** A coordination.k8s.io/v1 Lease: only its metadata (the ledger lives in annotations). */
struct gx_lease {
    const char *name, *namespace, *resource_version; /* "" when absent */
    struct gx_kv *annotations;
    size_t n_annotations;
};

/** One device of a ResourceSlice. */
struct gx_dra_device {
    const char *name;
    const char *uuid; /* string attribute "uuid" (any domain: "gpu.nvidia.com/uuid"), or NULL */
};

/** A resource.k8s.io/v1 ResourceSlice: what a DRA driver publishes per pool. */
struct gx_rslice {
    const char *name, *resource_version;   /* "" when absent */
    const char *driver, *pool, *node_name; /* spec.driver, spec.pool.name, spec.nodeName ("") */
    struct gx_dra_device *devices;
    size_t n_devices;
};

/** One allocated device of a claim (status.allocation.devices.results[i]). */
struct gx_dra_result {
    const char *driver, *pool, *device;
};

/** A resource.k8s.io/v1 ResourceClaim: its allocation and who uses it. */
struct gx_rclaim {
    const char *name, *namespace, *uid, *resource_version; /* "" when absent */
    struct gx_dra_result *results; /* status.allocation.devices.results, none unallocated */
    size_t n_results;
    const char **reserved_for; /* status.reservedFor[].name */
    size_t n_reserved_for;
};

/** A policy/v1 PodDisruptionBudget: whom it protects and how many of them may go now. */
struct gx_pdb {
    const char *name, *namespace, *uid, *resource_version; /* "" when absent */
    bool has_selector;                                     /* spec.selector set */
    struct gx_kv *match_labels;                            /* spec.selector.matchLabels */
    size_t n_match_labels;
    struct gx_sel_expr *exprs; /* spec.selector.matchExpressions */
    size_t n_exprs;
    int32_t disruptions_allowed; /* status.disruptionsAllowed, 0 when absent */
    const char **disrupted;      /* names of status.disruptedPods (deletions in flight) */
    size_t n_disrupted;
};

enum gx_kind {
    GX_KIND_NODE,
    GX_KIND_POD,
    GX_KIND_LEASE,
    GX_KIND_RESOURCE_SLICE,
    GX_KIND_RESOURCE_CLAIM,
    GX_KIND_PDB
};

/**
 * Decode a list of @kind (NodeList, PodList, LeaseList, ResourceSliceList,
 * ResourceClaimList, PodDisruptionBudgetList) into an arena array *items of
 * *n elements of that kind's struct (gx_node_info, gx_pod, gx_lease,
 * gx_rslice, gx_rclaim, gx_pdb);
 * *resource_version may be NULL. Fails as gx_kobj_decode_pod does.
 */
enum gx_err gx_kobj_decode_list(const char *json, size_t len, enum gx_kind kind, int max_depth,
                                struct gx_arena *a, void **items, size_t *n,
                                const char **resource_version, struct gx_why *why) GX_WUR;

/** Decode one Lease object. */
enum gx_err gx_kobj_decode_lease(const char *json, size_t len, int max_depth, struct gx_arena *a,
                                 struct gx_lease *out, struct gx_why *why) GX_WUR;

/** One decoded watch event. For ERROR, code/message come from the Status. */
struct gx_watch_event {
    enum gx_watch_type type;
    const char *resource_version; /* of the object (BOOKMARK: the new RV) */
    int code;                     /* ERROR: Status.code, e.g. 410 */
    const char *message;          /* ERROR: Status.message */
    union {
        struct gx_node_info node;
        struct gx_pod pod;
        struct gx_lease lease;
        struct gx_rslice slice;
        struct gx_rclaim claim;
        struct gx_pdb pdb;
    } obj;
};

/** Decode one watch event line ({"type":..,"object":{..}}) of @kind. */
enum gx_err gx_kobj_decode_event(const char *json, size_t len, enum gx_kind kind, int max_depth,
                                 struct gx_arena *a, struct gx_watch_event *out,
                                 struct gx_why *why) GX_WUR;

#endif
