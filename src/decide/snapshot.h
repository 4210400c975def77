/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.h - the immutable picture of the cluster that every decision
 * reads: GPU nodes with the labels decisions use and cards with live metrics.
 * Built from node objects (file or API server) and the metric store, then
 * swapped whole; request handlers only read it. One arena holds it all.
 * No I/O.
 */
#ifndef GX_SNAPSHOT_H
#define GX_SNAPSHOT_H

#include "arena.h"
#include "config.h"
#include "dcgm.h"
#include "extender.h"
#include "kobj.h"
#include "nameidx.h"
#include "strmap.h"

enum gx_sharing { GX_SHARING_NONE, GX_SHARING_TIME_SLICING, GX_SHARING_MPS };

struct gx_card {
    int index;
    const char *uuid;            /* NULL when metrics never named it */
    const char *pod;             /* workload pod seen on it by dcgm-exporter, or NULL */
    const char *claim;           /* DRA ResourceClaim ("namespace/name") holding it, or NULL */
    int numa;                    /* -1 unknown; derived from the PCI bus on memory-numa nodes */
    double v[GX_SIG_COUNT];      /* NaN = unknown */
    int64_t at_ms[GX_SIG_COUNT]; /* sample time, 0 = never */
};

struct gx_node {
    const char *name;
    /*
     * Only the labels decisions read: the nvidia.com/gpu.{product,count,memory,
     * replicas,sharing-strategy} and feature.node.kubernetes.io/memory-numa keys
     * and every key of cfg->label_rules (of the config the snapshot was built
     * with); other labels of the node are not kept. Sorted by key (bsearch with
     * gx_node_label); strings may be shared between nodes.
     */
    struct gx_kv *labels;
    size_t n_labels;
    const char *product;    /* nvidia.com/gpu.product, "" if absent */
    int gpu_count;          /* physical cards: gpu.count, else allocatable / replicas */
    int64_t gpu_memory_mib; /* per card: nvidia.com/gpu.memory, 0 unknown */
    int replicas;           /* nvidia.com/gpu.replicas, >= 1 */
    enum gx_sharing sharing;
    int64_t alloc_gpu;       /* allocatable res_gpu (+ res_shared), -1 if absent */
    int64_t alloc_cpu_milli; /* allocatable cpu in milli-CPU, -1 if absent */
    int64_t alloc_mem_mib;   /* allocatable memory in MiB, -1 if absent */
    bool ready;
    bool unschedulable;
    struct gx_card *cards; /* gpu_count entries */
    size_t n_cards;
};

struct gx_snapshot {
    struct gx_arena arena;
    struct gx_node *nodes;
    size_t n_nodes;
    struct gx_nameidx names; /* node name -> position in nodes */
    int64_t built_ms;        /* wall time of the build */
    int64_t nodes_ms;        /* wall time of the node source's last sync, 0 never */
    int64_t metrics_ms;      /* wall time of the metric source's last success, 0 never */
    uint64_t generation;
};

/**
 * Build a snapshot from @nodes (borrowed, copied) and the metric store @ms
 * (may be NULL). Nodes without GPUs are kept (so a CPU-only node can be
 * rejected with the right reason). Of each node's labels only those
 * decisions read under @cfg are copied (see struct gx_node), so a config
 * whose label_rules change needs a new snapshot. You own *out
 * (gx_snapshot_free).
 */
enum gx_err gx_snapshot_build(const struct gx_config *cfg, const struct gx_node_info *nodes,
                              size_t n_nodes, const struct gx_mstore *ms, int64_t now_ms,
                              struct gx_snapshot **out) GX_WUR;

/** The claim holding the card @uuid (never NULL) of @node, or NULL; see gx_snapshot_mark_claimed.
 */
typedef const char *(*gx_snapshot_claim_fn)(void *ctx, const char *node, const char *uuid);

/**
 * Part of building, before the snapshot is shared: set card->claim of
 * every card with a UUID that @claim_of names a claim for (copied into
 * the snapshot's arena). Decisions treat such a card as taken. GX_ENOMEM
 * leaves some cards unmarked.
 */
enum gx_err gx_snapshot_mark_claimed(struct gx_snapshot *snap, gx_snapshot_claim_fn claim_of,
                                     void *ctx) GX_WUR;

/** Free a snapshot; NULL is a no-op. */
void gx_snapshot_free(struct gx_snapshot *snap);

/**
 * (Re)build the name index of snap->nodes[0..n_nodes), which gx_snapshot_find
 * reads; gx_snapshot_build calls it, a snapshot made by hand (tests) must.
 * The last of two nodes of one name is the one found. GX_ENOMEM.
 */
enum gx_err gx_snapshot_index(struct gx_snapshot *snap) GX_WUR;

/** The node named @name (@len bytes), or NULL. */
const struct gx_node *gx_snapshot_find(const struct gx_snapshot *snap, const char *name,
                                       size_t len);

/*
 * gx_snapshot_find for each node of a request (out[i] for @names[i]), in
 * one pass whose memory misses overlap: the 5,000-name filter spent half
 * its time in one name lookup after another.
 */
void gx_snapshot_find_all(const struct gx_snapshot *snap, const struct gx_ext_node *names, size_t n,
                          const struct gx_node **out);

/**
 * Value of label @key on @node, or NULL (binary search). Only the labels the
 * snapshot keeps are found (struct gx_node).
 */
const char *gx_node_label(const struct gx_node *node, const char *key);

/** True when a snapshot built with @cfg keeps node label @key (struct gx_node's labels). */
bool gx_snapshot_label_kept(const struct gx_config *cfg, const char *key);

/** True when signal @sig of @card is known and not older than the config's max age. */
bool gx_card_fresh(const struct gx_config *cfg, const struct gx_card *card, enum gx_signal sig,
                   int64_t now_ms);

#endif
