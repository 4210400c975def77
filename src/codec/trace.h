/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h - readers of the openb cluster trace CSVs (Alibaba
 * cluster-trace-gpu-v2023: openb_node_list_*.csv, openb_pod_list_*.csv).
 * Columns are found by their header names, so files with fewer optional
 * columns (multigpu20 has no gpu_spec or times) read the same. Pure: the
 * caller reads the file; these parse its text.
 */
#ifndef GX_TRACE_H
#define GX_TRACE_H

#include "common.h"

#define GX_TRACE_NAME_MAX 64
#define GX_TRACE_SPEC_MAX 128

/** One node row: sn,cpu_milli,memory_mib,gpu,model. */
struct gx_trace_node {
    char name[GX_TRACE_NAME_MAX];
    int64_t cpu_milli;
    int64_t memory_mib;
    int gpus;                      /* physical cards, 0..16 */
    char model[GX_TRACE_NAME_MAX]; /* GPU product code (G2, T4, V100M16 ...) */
};

/** One pod row. gpu_milli is 1000 for whole-GPU pods and 0 for CPU-only ones. */
struct gx_trace_pod {
    char name[GX_TRACE_NAME_MAX];
    int64_t cpu_milli;
    int64_t memory_mib;
    int num_gpu;                      /* whole GPUs, 0..16; 1 with gpu_milli < 1000 = a share */
    int gpu_milli;                    /* share of one card when num_gpu is 1 */
    char gpu_spec[GX_TRACE_SPEC_MAX]; /* acceptable models "A|B", "" = any */
    int64_t creation_s;               /* -1 when the file has no times */
    int64_t deletion_s;
};

/** Requested milli-GPU of @p: num_gpu x 1000, or gpu_milli for a share. */
int64_t gx_trace_pod_milli(const struct gx_trace_pod *p);

/** True when @model is listed in @spec ("" accepts every model). */
bool gx_trace_spec_accepts(const char *spec, const char *model);

/**
 * Parse a node list (@len bytes of @text, named @file in errors) into a heap
 * array (*out, *n; you own it, free()). GX_EPARSE with @why
 * "FILE:LINE: column NAME: reason" on the first bad row; GX_ENOMEM.
 */
enum gx_err gx_trace_parse_nodes(const char *text, size_t len, const char *file,
                                 struct gx_trace_node **out, size_t *n, struct gx_why *why) GX_WUR;

/** Parse a pod list, like gx_trace_parse_nodes. */
enum gx_err gx_trace_parse_pods(const char *text, size_t len, const char *file,
                                struct gx_trace_pod **out, size_t *n, struct gx_why *why) GX_WUR;

#endif
