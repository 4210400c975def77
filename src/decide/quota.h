/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quota.h - GPU quotas per namespace, for what a ResourceQuota cannot see
 * (annotation-only shared pods, GPU memory): limits from the config
 * (quotas.*, a default for namespaces not listed), usage from the ledger.
 * A namespace's usage is the sum over its tenants of the share of a card
 * each holds, in milli-GPU (a whole card 1000, one slice of an s-slot
 * card 1000/s, a milli share its milli), and of their declared GPU memory.
 * filter and bind admit a pod only while usage + its request stays within
 * both limits. Pure: config x snapshot x ledger, no I/O.
 */
#ifndef GX_QUOTA_H
#define GX_QUOTA_H

#include "config.h"
#include "ledger.h"
#include "podreq.h"
#include "score.h"
#include "snapshot.h"

/** What a namespace holds, or what a pod would add. */
struct gx_quota_use {
    int64_t milli;      /* milli-GPU */
    int64_t memory_mib; /* declared GPU memory */
    int tenants;        /* ledger entries (a 4-GPU pod is 4) */
};

/** Limits of a namespace; -1: none. */
struct gx_quota_limit {
    int64_t milli;
    int64_t memory_mib;
};

/** The limits of namespace @ns under @cfg: its rows, else the defaults. Cannot fail. */
void gx_quota_limits(const struct gx_config *cfg, const char *ns, struct gx_quota_limit *out);

/** True when @lim limits anything. */
bool gx_quota_limited(const struct gx_quota_limit *lim);

/**
 * Milli-GPU tenant @t of node @node holds (slots per card from the
 * snapshot node, or the config defaults when @snap lacks it). Cannot fail.
 */
int64_t gx_quota_tenant_milli(const struct gx_config *cfg, const struct gx_snapshot *snap,
                              const char *node, const struct gx_tenant *t);

/** The namespace part of a tenant's "namespace/name" into @out (@n bytes). */
void gx_quota_tenant_ns(const struct gx_tenant *t, char *out, size_t n);

/**
 * What namespace @ns holds in @l, skipping the tenants of pod @skip_uid
 * (NULL: none): a pod being bound again is not counted twice. Cannot fail.
 */
void gx_quota_usage(const struct gx_config *cfg, const struct gx_snapshot *snap,
                    const struct gx_ledger *l, const char *ns, const char *skip_uid,
                    struct gx_quota_use *out);

/** What @req would add on snapshot node @node (NULL: unknown, nothing). Cannot fail. */
void gx_quota_request(const struct gx_config *cfg, const struct gx_node *node,
                      const struct gx_podreq *req, struct gx_quota_use *out);

/** True when @have + @add stays within @lim. */
bool gx_quota_fits(const struct gx_quota_limit *lim, const struct gx_quota_use *have,
                   const struct gx_quota_use *add);

/** One pod's quota check, computed once per call and applied per node. */
struct gx_quota_check {
    bool on;                   /* the namespace is limited and the pod asks GPUs */
    struct gx_quota_limit lim; /* of the pod's namespace */
    struct gx_quota_use have;  /* what the namespace holds, the pod's own tenants left out */
};

/**
 * Prepare @q for pod @uid (may be NULL) of namespace @ns asking @req
 * (NULL: an invalid request, no check) against @ctx's config, snapshot
 * and ledger. Cannot fail.
 */
void gx_quota_check_begin(const struct gx_decide_ctx *ctx, const char *ns, const char *uid,
                          const struct gx_podreq *req, struct gx_quota_check *q);

/**
 * The one quota rule filter, bind and explain apply: true when @req on
 * snapshot node @node fits @q (always when !q->on). A node that does not
 * fit is rejected with GX_REASON_QUOTA. Cannot fail.
 */
bool gx_quota_check_node(const struct gx_quota_check *q, const struct gx_decide_ctx *ctx,
                         const struct gx_podreq *req, const struct gx_node *node);

/**
 * Call @cb once per namespace holding tenants in @l with its usage and
 * limits, at most @max namespaces (the rest are counted in *@dropped, may
 * be NULL). GX_ENOMEM.
 */
enum gx_err gx_quota_each(const struct gx_config *cfg, const struct gx_snapshot *snap,
                          const struct gx_ledger *l, size_t max,
                          void (*cb)(void *ctx, const char *ns, const struct gx_quota_use *use,
                                     const struct gx_quota_limit *lim),
                          void *ctx, size_t *dropped) GX_WUR;

#endif
