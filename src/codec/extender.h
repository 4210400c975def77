/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender.h - the kube-scheduler extender wire codec (see
 * docs/architecture.md and the upstream extender/v1 types): ExtenderArgs,
 * ExtenderFilterResult, HostPriorityList, ExtenderBindingArgs/Result.
 * Keys are PascalCase (matched case-insensitively on input, as Go does).
 * In full Nodes mode the kept Node objects are echoed back byte-for-byte
 * from the request body, so the codec keeps spans into the body rather than
 * decoding nodes. No I/O.
 */
#ifndef GX_EXTENDER_H
#define GX_EXTENDER_H

#include "arena.h"
#include "buf.h"
#include "common.h"
#include "kobj.h"

enum gx_args_mode { GX_ARGS_NAMES, GX_ARGS_NODES };

/*
 * Most nodes one call may carry (NodeNames or Nodes.items): 20 times the
 * 5,000 nodes Kubernetes supports in one cluster. It bounds what decoding
 * and the reply cost per call (~100 bytes a node) whatever the body cap.
 */
#define GX_EXT_MAX_NODES 100000u

struct gx_ext_node {
    const char *name; /* decoded, NUL-terminated */
    size_t name_len;
    size_t item_off; /* its raw JSON in the body: the Node item, or the quoted name */
    size_t item_len;
};

/** Decoded ExtenderArgs. All memory lives in .arena. */
struct gx_ext_args {
    struct gx_arena arena;
    struct gx_pod pod;
    enum gx_args_mode mode;
    struct gx_ext_node *nodes;
    size_t n_nodes;
    bool escaped; /* some name of NodeNames came with an escape: not every name is echoed */
};

/**
 * Decode ExtenderArgs from @body (not NUL-terminated, borrowed: keep it alive
 * while you use the spans). Errors (GX_EPARSE, GX_EINVAL, GX_ETOOBIG) fill
 * @why: malformed JSON, wrong types, missing Pod, both or neither of
 * Nodes/NodeNames non-null, a node item without metadata.name, more than
 * GX_EXT_MAX_NODES nodes, a Pod over the caps of gx_kobj_decode_pod.
 * On success release with gx_ext_args_release even if you fail later.
 */
enum gx_err gx_ext_decode_args(const char *body, size_t len, int max_depth, struct gx_ext_args *out,
                               struct gx_why *why) GX_WUR;

/** Free the arena of decoded args. */
void gx_ext_args_release(struct gx_ext_args *args);

/** Per-node filter outcome handed to the encoder. */
struct gx_ext_filter_verdict {
    bool keep;
    bool unresolvable;  /* goes to FailedAndUnresolvableNodes */
    bool unlisted;      /* rejected, in neither map: dropped as any node not kept */
    const char *reason; /* when !keep: short, node-independent, no '%' */
};

/**
 * Encode ExtenderFilterResult for @args (decoded from @body) with one
 * verdict per args->nodes[i]. NodeNames mode: {"Nodes":null,"NodeNames":
 * [..],"FailedNodes":{..},"FailedAndUnresolvableNodes":{..},"Error":""}.
 * Nodes mode: "Nodes" holds {"metadata":{},"items":[..]} and NodeNames null.
 * Kept items and names are copied from @body as they came (invalid UTF-8
 * replaced), so a 5,000-name reply is a few copies, not 5,000 encodings.
 */
enum gx_err gx_ext_encode_filter(struct gx_buf *out, const char *body,
                                 const struct gx_ext_args *args,
                                 const struct gx_ext_filter_verdict *v) GX_WUR;

/**
 * Encode HostPriorityList for @args (decoded from @body): [{"Host":"n",
 * "Score":7},...], scores clamped to 0..10. Nodes scored 0 are left out:
 * kube-scheduler adds nothing for a node missing from the list (v1.37
 * schedule_one.go, prioritizeNodes), and decoding 5,000 entries was a
 * tenth of its CPU per pod at 5,000 nodes. NodeNames are echoed as sent,
 * as gx_ext_encode_filter does.
 */
enum gx_err gx_ext_encode_prioritize(struct gx_buf *out, const char *body,
                                     const struct gx_ext_args *args, const int *scores) GX_WUR;

struct gx_ext_bind_args {
    struct gx_arena arena;
    const char *pod_name, *pod_namespace, *pod_uid, *node;
};

/** Decode ExtenderBindingArgs; every field must be a non-empty string. */
enum gx_err gx_ext_decode_bind(const char *body, size_t len, int max_depth,
                               struct gx_ext_bind_args *out, struct gx_why *why) GX_WUR;

/** Free decoded bind args. */
void gx_ext_bind_args_release(struct gx_ext_bind_args *args);

/**
 * Encode ExtenderBindingResult: {"Error":""} or {"Error":"msg"}. In every
 * reason and error text this codec writes, '%' becomes " percent" (the
 * scheduler uses Error as a format string).
 */
enum gx_err gx_ext_encode_bind_result(struct gx_buf *out, const char *error) GX_WUR;

/** Encode an HTTP error body: {"error":"msg","status":code}. */
enum gx_err gx_ext_encode_http_error(struct gx_buf *out, int status, const char *msg) GX_WUR;

/* ---- preempt: ExtenderPreemptionArgs / ExtenderPreemptionResult ---- */

/* Most candidate nodes one preempt call may carry, and victims per node. */
#define GX_EXT_MAX_PREEMPT_NODES 100000u
#define GX_EXT_MAX_VICTIMS 10000u

/** One victim the scheduler named: its UID and, with full Pods, its priority. */
struct gx_ext_victim {
    const char *uid;   /* "" when a full Pod had no metadata.uid */
    bool has_priority; /* full Pods only: spec.priority was present */
    int32_t priority;
};

/** The victims of one candidate node. */
struct gx_ext_node_victims {
    const char *node; /* decoded, NUL-terminated, non-empty */
    struct gx_ext_victim *pods;
    size_t n_pods;
    int64_t pdb; /* NumPDBViolations */
};

/** Decoded ExtenderPreemptionArgs. All memory lives in .arena. */
struct gx_ext_preempt_args {
    struct gx_arena arena;
    struct gx_pod pod;
    bool meta; /* NodeNameToMetaVictims (nodeCacheCapable); else NodeNameToVictims */
    struct gx_ext_node_victims *nodes;
    size_t n_nodes;
};

/**
 * Decode ExtenderPreemptionArgs: Pod, and exactly one of NodeNameToVictims
 * (Victims{Pods: full Pods, NumPDBViolations}) or NodeNameToMetaVictims
 * (MetaVictims{Pods: [{UID}], NumPDBViolations}) non-null. A node whose
 * victims are null has none. Errors fill @why (the 400 body): malformed
 * JSON, wrong types, missing or null Pod, both or neither map set, an empty
 * node name, a MetaPod without a UID string, more than GX_EXT_MAX_PREEMPT_NODES
 * nodes or GX_EXT_MAX_VICTIMS victims on one node. On success release with
 * gx_ext_preempt_args_release.
 */
enum gx_err gx_ext_decode_preempt(const char *body, size_t len, int max_depth,
                                  struct gx_ext_preempt_args *out, struct gx_why *why) GX_WUR;

/** Free decoded preempt args. */
void gx_ext_preempt_args_release(struct gx_ext_preempt_args *args);

/** One node of a preempt answer (borrowed strings). */
struct gx_ext_meta_victims {
    const char *node;
    const char *const *uids;
    size_t n_uids;
    int64_t pdb;
};

/**
 * Encode ExtenderPreemptionResult:
 * {"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"u"}],"NumPDBViolations":0}}}
 * ({} for no node: nothing to preempt).
 */
enum gx_err gx_ext_encode_preempt(struct gx_buf *out, const struct gx_ext_meta_victims *v,
                                  size_t n) GX_WUR;

#endif
