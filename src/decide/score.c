/* SPDX-License-Identifier: Apache-2.0 */
/*
 * score.c - the filter verdict of one node: the reasons table, the checks
 * that need no card (request, node known, GPUs, ready), the dispatch to the
 * card choice of the request's kind (score_pick.c) and the weighted score
 * of what it chose. A pod asking no GPU is scored here. Pure: reads the
 * config, one snapshot node, the ledger and the clock it is given; no I/O
 * and no allocation.
 *
 * The module's other files: score_card.c (a card's state and freshness,
 * the walk over a node's cards), score_parts.c (what prioritize scores),
 * score_fgd.c (the fgd policy's terms) and score_pick.c (the card choice);
 * score_int.h is what they share.
 */
#include "score_int.h"

#include <math.h>
#include <string.h>

/*
 * Per reason: the user-facing text, the metrics label and whether
 * preemption cannot help. tests/integration/check_monitoring.py reads this
 * table from the source: keep one entry per line in this shape.
 */
static const struct {
    const char *text;
    const char *name;
    bool unresolvable;
} reasons[GX_REASON_COUNT] = {
    [GX_REASON_NONE] = {"", "none", false},
    [GX_REASON_UNKNOWN_NODE] = {"node unknown to gpu-extender", "unknown_node", true},
    [GX_REASON_NOT_READY] = {"node not ready", "not_ready", false},
    [GX_REASON_NO_GPUS] = {"node has no GPUs", "no_gpus", true},
    [GX_REASON_TOO_FEW_GPUS] = {"too few usable GPUs", "too_few_gpus", true},
    [GX_REASON_UNHEALTHY] = {"GPU unhealthy", "unhealthy", false},
    [GX_REASON_BUSY] = {"GPU utilization above limit", "busy", false},
    [GX_REASON_NO_SLOT] = {"no GPU time slot available", "no_slot", false},
    [GX_REASON_NO_MEMORY] = {"insufficient GPU memory", "no_memory", false},
    [GX_REASON_STALE] = {"GPU metrics stale", "stale", false},
    [GX_REASON_SHARING_MISMATCH] = {"GPU sharing mode does not match the request",
                                    "sharing_mismatch", true},
    [GX_REASON_BAD_REQUEST] = {"invalid GPU request", "bad_request", true},
    /* preemption can free quota only with victims of the same namespace: the preempt verb's call */
    [GX_REASON_QUOTA] = {"namespace GPU share quota exceeded", "quota", false},
    /* a bind of the pod elsewhere may still land: no victim here changes that */
    [GX_REASON_BOOKED_ELSEWHERE] = {"GPUs of this pod booked on another node", "booked_elsewhere",
                                    true},
    /* more slices, milli or memory than an empty card of the node holds: waiting cannot help */
    [GX_REASON_NEVER_FITS] = {"request larger than any GPU of the node", "never_fits", true},
    /* a gang member's filter keeps one node, the one its cards are booked on (gang.h) */
    [GX_REASON_GANG_PINNED] = {"gang member placed on another node", "gang_pinned", false},
    /* gang-distinct-cards; the node's other cards may be freed by victims: not unresolvable */
    [GX_REASON_GANG_APART] = {"GPU held by another member of the gang", "gang_apart", false},
    /* gang-same-numa: the cards of the members' NUMA node are taken */
    [GX_REASON_GANG_NUMA] = {"gang members on another NUMA node", "gang_numa", false},
    /* filter.shortlist_nodes: the pod fits, the best nodes of the call were kept instead */
    [GX_REASON_SHORTLIST] = {"better nodes kept", "shortlist", false},
};

const char *
gx_reason_text(enum gx_reason r)
{
    if ((unsigned)r >= GX_REASON_COUNT) {
        return "";
    }
    return reasons[r].text;
}

const char *
gx_reason_name(enum gx_reason r)
{
    if ((unsigned)r >= GX_REASON_COUNT) {
        return "none";
    }
    return reasons[r].name;
}

bool
gx_reason_unlisted(enum gx_reason r)
{
    /* the pod fits there: the reason helps no reader, and preemption needs no status */
    return r == GX_REASON_GANG_PINNED || r == GX_REASON_SHORTLIST;
}

bool
gx_reason_lifts(enum gx_reason r)
{
    /* a gang's reasons too: a member that goes frees its card, or its NUMA node's */
    return r == GX_REASON_NO_SLOT || r == GX_REASON_NO_MEMORY || r == GX_REASON_TOO_FEW_GPUS ||
           r == GX_REASON_QUOTA || r == GX_REASON_GANG_APART || r == GX_REASON_GANG_NUMA ||
           r == GX_REASON_BUSY;
}

bool
gx_reason_unresolvable(enum gx_reason r)
{
    if ((unsigned)r >= GX_REASON_COUNT) {
        return false;
    }
    return reasons[r].unresolvable;
}

/*
 * A pod asking no GPU. Under fgd on a GPU node it scores by the GPU capacity
 * its CPU and memory would strand (a node whose cards are all taken loses
 * nothing); otherwise CPU nodes are preferred as configured.
 */
static void
decide_cpu_pod(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
               const struct gx_node *node, struct gx_verdict *out)
{
    const struct gx_config *cfg = ctx->cfg;
    bool cpu = node == NULL || node->gpu_count <= 0 || gx_score_node_cards(node) == 0;
    struct gx_score_dctx d;

    out->keep = true;
    out->parts.util = out->parts.memory = out->parts.temp = out->parts.fit = GX_SCORE_NEUTRAL;
    out->parts.trend = GX_SCORE_NEUTRAL;
    out->parts.labels = node != NULL ? gx_score_labels_part(cfg, node) : GX_SCORE_NEUTRAL;
    out->score = cfg->prefer_cpu_nodes_for_cpu_pods ? (cpu ? 10 : 0) : 5;
    out->score_exact = out->score;
    if (cpu) {
        return;
    }
    gx_score_dctx_init(&d, ctx, node);
    if (!gx_score_fgd_on(&d)) {
        return;
    }
    out->parts.fit = gx_score_fgd_fit(gx_score_fgd_delta(&d, req, node, NULL));
    out->score_exact = 10.0 * out->parts.fit;
    out->score = gx_score_weighted(out->score_exact);
}

/* True when @req is well formed for its kind. */
static bool
request_valid(const struct gx_podreq *req)
{
    switch (req->kind) {
    case GX_REQ_NONE:
        return true;
    case GX_REQ_EXCLUSIVE:
        return req->gpus >= 1;
    case GX_REQ_SHARED:
        return req->slices >= 1 && req->milli >= 0 && req->milli <= 1000 && req->memory_mib >= 0 &&
               !isnan(req->util_pct) && req->util_pct <= 100.0;
    }
    return false;
}

void
gx_score_node(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
              const struct gx_node *node, struct gx_verdict *out)
{
    const struct gx_config *cfg = ctx->cfg;
    struct gx_score_dctx d;
    bool time_sliced;

    memset(out, 0, sizeof(*out));
    if (req == NULL || !request_valid(req)) {
        out->reason = GX_REASON_BAD_REQUEST;
        return;
    }
    if (req->kind == GX_REQ_NONE) {
        decide_cpu_pod(ctx, req, node, out);
        return;
    }
    if (node == NULL) {
        out->reason = GX_REASON_UNKNOWN_NODE;
        return;
    }
    /* permanent before transient: a CPU node that is also NotReady has no GPUs */
    if (node->gpu_count <= 0 || gx_score_node_cards(node) == 0) {
        out->reason = GX_REASON_NO_GPUS;
        return;
    }
    if (!node->ready || node->unschedulable) {
        out->reason = GX_REASON_NOT_READY;
        return;
    }
    gx_score_dctx_init(&d, ctx, node);
    time_sliced = node->sharing != GX_SHARING_NONE || node->replicas > 1;
    if (req->kind == GX_REQ_EXCLUSIVE) {
        /* N GPUs means N physical cards, whatever the node advertises in replicas */
        if (req->gpus > node->gpu_count) {
            out->reason = GX_REASON_TOO_FEW_GPUS;
            return;
        }
        if (time_sliced) {
            gx_score_decide_device_plugin(&d, req, node, req->gpus, out);
        } else {
            gx_score_dctx_gang(&d, req, node);
            gx_score_decide_exclusive(&d, req, node, out);
        }
    } else if (req->device_plugin) {
        if (!time_sliced) {
            out->reason = GX_REASON_SHARING_MISMATCH;
            return;
        }
        gx_score_decide_device_plugin(&d, req, node, req->slices, out);
    } else {
        gx_score_dctx_gang(&d, req, node);
        gx_score_decide_shared(&d, req, node, out);
    }
    if (!out->keep) {
        memset(&out->parts, 0, sizeof(out->parts));
        out->n_cards = 0;
        return;
    }
    out->parts.labels = gx_score_labels_part(cfg, node);
    out->score_exact = gx_score_weighted_exact(cfg, &out->parts);
    out->score = gx_score_weighted(out->score_exact);
}
