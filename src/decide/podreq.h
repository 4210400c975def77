/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podreq.h - what a pod asks of GPUs, computed as Kubernetes computes
 * effective requests: per resource, max(sum over app containers + sidecars,
 * max over init containers of (init + sidecars started before it)); a limit
 * counts when the request is absent (extended resources must have
 * request == limit). Pure code, no I/O.
 *
 * Classification (names from the config):
 *   shared, annotation mode: annotation time-slices or gpu-milli, or the
 *     virtual resource (res_time_slice) is present -> the extender picks the
 *     card; a gpu-milli annotation sizes the share instead of the slices;
 *   shared, device-plugin mode: res_shared > 0 -> admitted per node from
 *     replicas in use and headroom;
 *   exclusive: res_gpu > 0 (on a time-slicing node the decision code treats
 *     it as device-plugin shared replicas);
 *   none otherwise.
 *
 * A gang member (spec.schedulingGroup) carries its gang's id; the
 * annotations gang-distinct-cards and gang-same-numa ("true"/"false") ask
 * its card choice to keep apart from, or close to, the other members'.
 */
#ifndef GX_PODREQ_H
#define GX_PODREQ_H

#include "common.h"
#include "config.h"
#include "kobj.h"

enum gx_req_kind { GX_REQ_NONE, GX_REQ_EXCLUSIVE, GX_REQ_SHARED };

struct gx_podreq {
    enum gx_req_kind kind;
    int64_t gpus;       /* exclusive: effective res_gpu request */
    int slices;         /* shared: time slots asked (>= 1) */
    int milli;          /* shared: share of one card in milli-GPU, 1..1000; 0 = sized by slices */
    int64_t memory_mib; /* shared: declared GPU memory, 0 = none */
    double util_pct;    /* shared: expected utilization, -1 = none */
    bool device_plugin; /* shared via res_shared: the device plugin picks the card */
    int64_t cpu_milli;  /* effective CPU request, milli-CPU (0 = none) */
    int64_t mem_mib;    /* effective memory request, MiB rounded up */
    uint64_t gang;      /* gx_hash of the gang key (gang.h) of a member, 0 for any other pod */
    bool apart;         /* gang-distinct-cards: no card of another member of its gang */
    bool same_numa;     /* gang-same-numa: on a node, the NUMA node of its gang's members there */
};

/**
 * Classify @pod. GX_EINVAL with @why for a request that cannot be honoured
 * (annotation not a number or out of range, time slices together with whole
 * GPUs, quantities that do not parse).
 */
enum gx_err gx_podreq_parse(const struct gx_config *cfg, const struct gx_pod *pod,
                            struct gx_podreq *out, struct gx_why *why) GX_WUR;

/** Effective request of @resource for @pod (0 when absent). GX_EPARSE on a bad quantity. */
enum gx_err gx_podreq_effective(const struct gx_pod *pod, const char *resource,
                                int64_t *out) GX_WUR;

/**
 * CPU (milli) and memory (bytes) @pod takes on its node as kube-scheduler
 * counts it: the effective request (above) plus spec.overhead. A quantity
 * that does not parse counts as 0. Cannot fail.
 */
void gx_podreq_host(const struct gx_pod *pod, int64_t *cpu_milli, int64_t *mem_bytes);

/**
 * True when @pod requests one of the resources kube-scheduler hands to the
 * extender (its managedResources: names.gpu_resource, shared_resource,
 * time_slice_resource); a pod that requests none never reaches it, whatever
 * its annotations say. A quantity that does not parse counts as none.
 */
bool gx_podreq_managed(const struct gx_config *cfg, const struct gx_pod *pod);

#endif
