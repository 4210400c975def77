/* SPDX-License-Identifier: Apache-2.0 */
/*
 * explain.c - "why is my pod pending?": runs gx_score_node over every node of
 * the snapshot (in snapshot order) and renders the verdicts, reasons, score
 * parts and per-card bookkeeping as an aligned text table or as JSON. Pure:
 * writes only into the caller's buffer; on failure the buffer is left as it
 * was.
 */
#include "explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cards.h"
#include "quota.h"

/* Append a JSON number, null when not finite. */
static void
put_json_num(struct gx_buf *b, enum gx_err *rc, double v)
{
    if (isfinite(v)) {
        gx_buf_putf(b, rc, "%.6g", v);
    } else {
        gx_buf_put(b, rc, "null");
    }
}

/* Undo everything appended since @len0 after a failure. */
static void
rollback(struct gx_buf *b, size_t len0)
{
    b->len = len0;
    if (b->data != NULL) {
        b->data[len0] = '\0';
    }
}

/* Human description of the request ("shared 1 slice, memory 6144 MiB"). */
static void
put_request(struct gx_buf *b, enum gx_err *rc, const struct gx_podreq *req)
{
    if (req == NULL) {
        gx_buf_put(b, rc, "invalid request");
        return;
    }
    switch (req->kind) {
    case GX_REQ_NONE:
        gx_buf_put(b, rc, "no GPU request");
        break;
    case GX_REQ_EXCLUSIVE:
        gx_buf_putf(b, rc, "exclusive %lld GPU%s", (long long)req->gpus, req->gpus == 1 ? "" : "s");
        break;
    case GX_REQ_SHARED:
        if (req->milli > 0) {
            gx_buf_putf(b, rc, "shared %d milli-GPU", req->milli);
        } else {
            gx_buf_putf(b, rc, "shared %d slice%s", req->slices, req->slices == 1 ? "" : "s");
        }
        if (req->memory_mib > 0) {
            gx_buf_putf(b, rc, ", memory %lld MiB", (long long)req->memory_mib);
        }
        if (req->util_pct >= 0) {
            gx_buf_putf(b, rc, ", util %.0f%%", req->util_pct);
        }
        if (req->device_plugin) {
            gx_buf_put(b, rc, " (device plugin)");
        }
        break;
    }
}

/* Name of the request kind for JSON. */
static const char *
kind_name(const struct gx_podreq *req)
{
    if (req == NULL) {
        return "invalid";
    }
    switch (req->kind) {
    case GX_REQ_EXCLUSIVE:
        return "exclusive";
    case GX_REQ_SHARED:
        return "shared";
    case GX_REQ_NONE:
        break;
    }
    return "none";
}

/* Comma-separated card indexes of @v into @s (size @n); "-" when none. */
static void
cards_list(const struct gx_verdict *v, char *s, size_t n)
{
    size_t off = 0;

    if (v->device_plugin && v->keep) {
        (void)snprintf(s, n, "device-plugin");
        return;
    }
    s[0] = '\0';
    if (v->n_cards == 0) {
        (void)snprintf(s, n, "-");
        return;
    }
    for (int i = 0; i < v->n_cards && off < n; i++) {
        int w = snprintf(s + off, n - off, "%s%d", i ? "," : "", v->cards[i]);
        if (w < 0) {
            break;
        }
        off += (size_t)w;
    }
}

/* The quota check of the pod named "namespace/name" @pod_name. */
static void
quota_begin(const struct gx_decide_ctx *ctx, const struct gx_podreq *req, const char *pod_name,
            char *ns, size_t n, struct gx_quota_check *q)
{
    const char *slash = pod_name != NULL ? strchr(pod_name, '/') : NULL;

    (void)snprintf(ns, n, "%.*s", slash != NULL ? (int)(slash - pod_name) : 0,
                   slash != NULL ? pod_name : "");
    gx_quota_check_begin(ctx, ns, NULL, req, q);
}

/* gx_score_node, then the namespace quota as filter applies it. */
static void
decide(const struct gx_decide_ctx *ctx, const struct gx_podreq *req, const struct gx_quota_check *q,
       const struct gx_node *node, struct gx_verdict *v)
{
    gx_score_node(ctx, req, node, v);
    if (v->keep && !gx_quota_check_node(q, ctx, req, node)) {
        v->keep = false;
        v->reason = GX_REASON_QUOTA;
    }
}

/*
 * filter.shortlist_nodes as a filter call listing every node of the snapshot
 * would apply it: per node, negative when it would be left out. Scores equal
 * to the cut are all kept (filter draws among them). NULL when nothing is
 * left out (or without memory: then explain shows every fit).
 */
static double *
shortlist_of(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
             const struct gx_quota_check *q)
{
    const struct gx_snapshot *snap = ctx->snap;
    size_t n = snap->n_nodes;
    size_t k = ctx->cfg->shortlist_nodes > 0 ? (size_t)ctx->cfg->shortlist_nodes : 0;
    double *exact;

    if (k == 0 || n <= k || (exact = malloc(2 * n * sizeof(*exact))) == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct gx_verdict v;

        decide(ctx, req, q, &snap->nodes[i], &v);
        exact[i] = gx_score_shortlist_key(v.keep, v.score_exact);
    }
    if (gx_score_shortlist(exact, n, k, exact + n, NULL) == 0) {
        free(exact);
        return NULL;
    }
    return exact;
}

/* decide() for node @i, then left out as filter's shortlist would (@listed from shortlist_of). */
static void
decide_listed(const struct gx_decide_ctx *ctx, const struct gx_podreq *req,
              const struct gx_quota_check *q, const double *listed, size_t i, struct gx_verdict *v)
{
    decide(ctx, req, q, &ctx->snap->nodes[i], v);
    if (listed != NULL && v->keep && listed[i] < 0.0) {
        v->keep = false;
        v->reason = GX_REASON_SHORTLIST;
    }
}

/* "    pod ns/a: 2 slices, 4096 MiB, bound" lines: who holds card @idx of @node. */
static void
put_tenants_text(struct gx_buf *b, enum gx_err *rc, const struct gx_decide_ctx *ctx,
                 const struct gx_node *node, int idx)
{
    const struct gx_ledger_node *e = gx_ledger_node(ctx->ledger, node->name);

    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        const struct gx_tenant *t = &e->tenants[i];
        if (t->card != idx) {
            continue;
        }
        gx_buf_putf(b, rc, "    pod %s:", t->pod);
        if (t->exclusive) {
            gx_buf_put(b, rc, " whole card");
        } else if (t->milli > 0) {
            gx_buf_putf(b, rc, " %d milli-GPU", t->milli);
        } else {
            gx_buf_putf(b, rc, " %d slice%s", t->slices, t->slices == 1 ? "" : "s");
        }
        if (t->memory_mib > 0) {
            gx_buf_putf(b, rc, ", %lld MiB", (long long)t->memory_mib);
        }
        gx_buf_put(b, rc, t->state == GX_TENANT_BOUND ? ", bound\n" : ", reserved\n");
    }
}

/* ,"tenants":[{..}] of card @idx of @node for JSON, as /debug/cards shows them. */
static void
put_tenants_json(struct gx_buf *b, enum gx_err *rc, const struct gx_decide_ctx *ctx,
                 const struct gx_node *node, int idx)
{
    gx_buf_put(b, rc, ",");
    gx_cards_put_tenants(b, rc, ctx->cfg, ctx->snap, gx_ledger_node(ctx->ledger, node->name), idx);
}

/* The namespace line: what it holds of its limits ("-": none). */
static void
put_quota_text(struct gx_buf *b, enum gx_err *rc, const struct gx_decide_ctx *ctx, const char *ns)
{
    struct gx_quota_limit lim;
    struct gx_quota_use use;

    gx_quota_limits(ctx->cfg, ns, &lim);
    gx_quota_usage(ctx->cfg, ctx->snap, ctx->ledger, ns, NULL, &use);
    gx_buf_putf(b, rc, "namespace %s: %lld", ns[0] != '\0' ? ns : "-", (long long)use.milli);
    if (lim.milli >= 0) {
        gx_buf_putf(b, rc, "/%lld", (long long)lim.milli);
    }
    gx_buf_putf(b, rc, " milli-GPU, %lld", (long long)use.memory_mib);
    if (lim.memory_mib >= 0) {
        gx_buf_putf(b, rc, "/%lld", (long long)lim.memory_mib);
    }
    gx_buf_putf(b, rc, " MiB declared, %d tenant%s%s\n", use.tenants, use.tenants == 1 ? "" : "s",
                gx_quota_limited(&lim) ? "" : " (no quota)");
}

/* "namespace":{..} for JSON. */
static void
put_quota_json(struct gx_buf *b, enum gx_err *rc, const struct gx_decide_ctx *ctx, const char *ns)
{
    struct gx_quota_limit lim;
    struct gx_quota_use use;

    gx_quota_limits(ctx->cfg, ns, &lim);
    gx_quota_usage(ctx->cfg, ctx->snap, ctx->ledger, ns, NULL, &use);
    gx_buf_put(b, rc, ",\"namespace\":{\"name\":");
    gx_buf_put_json_str(b, rc, ns);
    gx_buf_putf(b, rc,
                ",\"milli_gpus\":%lld,\"memory_mib\":%lld,\"tenants\":%d,\"quota_milli_gpus\":%lld,"
                "\"quota_memory_mib\":%lld}",
                (long long)use.milli, (long long)use.memory_mib, use.tenants, (long long)lim.milli,
                (long long)lim.memory_mib);
}

/* True when card @idx is among the cards chosen in @v. */
static bool
chosen(const struct gx_verdict *v, int idx)
{
    for (int i = 0; i < v->n_cards; i++) {
        if (v->cards[i] == idx) {
            return true;
        }
    }
    return false;
}

/* One line per card of @node with live values and ledger bookings. */
static void
put_cards_text(struct gx_buf *b, enum gx_err *rc, const struct gx_decide_ctx *ctx,
               const struct gx_node *node, const struct gx_verdict *v)
{
    for (size_t i = 0; i < node->n_cards; i++) {
        const struct gx_card *c = &node->cards[i];
        struct gx_card_booking bk;
        const struct gx_card_usage *u = &bk.u;

        gx_cards_booking(ctx->cfg, ctx->ledger, node, c, &bk);
        gx_buf_putf(b, rc, "  card %d %s", c->index, c->uuid != NULL ? c->uuid : "-");
        if (gx_score_fresh(ctx, c, GX_SIG_UTIL)) {
            gx_buf_putf(b, rc, " util %.0f%%", c->v[GX_SIG_UTIL]);
        } else {
            gx_buf_put(b, rc, " util ?");
        }
        if (gx_score_fresh(ctx, c, GX_SIG_MEM_USED)) {
            gx_buf_putf(b, rc, " mem %.0f/", c->v[GX_SIG_MEM_USED]);
        } else {
            gx_buf_put(b, rc, " mem ?/");
        }
        if (node->gpu_memory_mib > 0) {
            gx_buf_putf(b, rc, "%lld MiB", (long long)node->gpu_memory_mib);
        } else {
            gx_buf_put(b, rc, "? MiB");
        }
        if (gx_score_fresh(ctx, c, GX_SIG_TEMP)) {
            gx_buf_putf(b, rc, " temp %.0fC", c->v[GX_SIG_TEMP]);
        } else {
            gx_buf_put(b, rc, " temp ?");
        }
        gx_buf_putf(b, rc, " slots %d/%d share %.2f booked %lld MiB tenants %d", bk.slots_used,
                    bk.slots, bk.share, (long long)u->memory_mib, u->tenants);
        if (u->exclusive) {
            gx_buf_put(b, rc, " [exclusive]");
        }
        if (gx_score_card_state(ctx, node, c) != GX_CARD_OK) {
            gx_buf_putf(b, rc, " [unusable: %s]",
                        gx_card_state_text(gx_score_card_state(ctx, node, c)));
        }
        if (c->claim != NULL) {
            gx_buf_putf(b, rc, " [DRA claim %s]", c->claim);
        }
        if (c->pod != NULL && c->pod[0] != '\0' && u->tenants == 0) {
            gx_buf_putf(b, rc, " [in use by %s]", c->pod);
        }
        if (chosen(v, c->index)) {
            gx_buf_put(b, rc, " [chosen]");
        }
        gx_buf_put(b, rc, "\n");
        put_tenants_text(b, rc, ctx, node, c->index);
    }
}

/* The "source:" and "warning:" lines. */
static void
put_notes_text(struct gx_buf *b, enum gx_err *rc, const struct gx_explain_notes *notes)
{
    if (notes != NULL && notes->source != NULL) {
        gx_buf_putf(b, rc, "source: %s\n", notes->source);
    }
    for (size_t i = 0; notes != NULL && i < notes->n_warnings; i++) {
        gx_buf_putf(b, rc, "warning: %s\n", notes->warnings[i]);
    }
}

/* ,"source":..,"warnings":[..] for JSON. */
static void
put_notes_json(struct gx_buf *b, enum gx_err *rc, const struct gx_explain_notes *notes)
{
    gx_buf_put(b, rc, ",\"source\":");
    gx_buf_put_json_str(b, rc, notes != NULL ? notes->source : NULL);
    gx_buf_put(b, rc, ",\"warnings\":[");
    for (size_t i = 0; notes != NULL && i < notes->n_warnings; i++) {
        gx_buf_put(b, rc, i ? "," : "");
        gx_buf_put_json_str(b, rc, notes->warnings[i]);
    }
    gx_buf_put(b, rc, "]");
}

/* Column widths of the text table. */
struct widths {
    int node, verdict, reason;
};

enum gx_err
gx_explain_text(const struct gx_decide_ctx *ctx, const struct gx_podreq *req, const char *pod_name,
                const struct gx_explain_notes *notes, struct gx_buf *out)
{
    const struct gx_snapshot *snap = ctx->snap;
    size_t len0 = out->len;
    struct widths w = {(int)strlen("NODE"), (int)strlen("VERDICT"), (int)strlen("REASON")};
    struct gx_quota_check q;
    double *listed;
    char ns[256];
    enum gx_err rc = GX_OK;

    quota_begin(ctx, req, pod_name, ns, sizeof(ns), &q);
    listed = shortlist_of(ctx, req, &q);
    for (size_t i = 0; i < snap->n_nodes; i++) {
        struct gx_verdict v;
        int nl = (int)strlen(snap->nodes[i].name);
        int rl;

        decide_listed(ctx, req, &q, listed, i, &v);
        rl = v.keep ? 1 : (int)strlen(gx_reason_text(v.reason));
        if (nl > w.node) {
            w.node = nl;
        }
        if (rl > w.reason) {
            w.reason = rl;
        }
    }
    gx_buf_putf(out, &rc, "pod %s: ", pod_name != NULL ? pod_name : "-");
    put_request(out, &rc, req);
    gx_buf_put(out, &rc, "\n");
    put_notes_text(out, &rc, notes);
    put_quota_text(out, &rc, ctx, ns);
    gx_buf_putf(out, &rc, "%-*s  %-*s  %-*s  %5s  %4s %4s %4s %6s %4s  %s\n", w.node, "NODE",
                w.verdict, "VERDICT", w.reason, "REASON", "SCORE", "UTIL", "MEM", "TEMP", "LABELS",
                "FIT", "CARDS");
    for (size_t i = 0; i < snap->n_nodes && rc == GX_OK; i++) {
        const struct gx_node *node = &snap->nodes[i];
        struct gx_verdict v;
        char cards[GX_MAX_PICK * 12];

        decide_listed(ctx, req, &q, listed, i, &v);
        cards_list(&v, cards, sizeof(cards));
        if (v.keep) {
            gx_buf_putf(out, &rc, "%-*s  %-*s  %-*s  %5d  %4.2f %4.2f %4.2f %6.2f %4.2f  %s%s\n",
                        w.node, node->name, w.verdict, "fit", w.reason, "-", v.score, v.parts.util,
                        v.parts.memory, v.parts.temp, v.parts.labels, v.parts.fit, cards,
                        v.parts.metrics_neutral ? "  (metrics neutral)" : "");
        } else {
            gx_buf_putf(out, &rc, "%-*s  %-*s  %-*s  %5s  %4s %4s %4s %6s %4s  %s\n", w.node,
                        node->name, w.verdict, "reject", w.reason, gx_reason_text(v.reason), "-",
                        "-", "-", "-", "-", "-", "-");
        }
        put_cards_text(out, &rc, ctx, node, &v);
    }
    free(listed);
    if (rc != GX_OK) {
        rollback(out, len0);
    }
    return rc;
}

/* The "cards" array of one node for JSON. */
static void
put_cards_json(struct gx_buf *b, enum gx_err *rc, const struct gx_decide_ctx *ctx,
               const struct gx_node *node, const struct gx_verdict *v)
{
    gx_buf_put(b, rc, "[");
    for (size_t i = 0; i < node->n_cards; i++) {
        const struct gx_card *c = &node->cards[i];
        struct gx_card_booking bk;

        gx_cards_booking(ctx->cfg, ctx->ledger, node, c, &bk);
        gx_buf_putf(b, rc, "%s{\"index\":%d,\"uuid\":", i ? "," : "", c->index);
        gx_buf_put_json_str(b, rc, c->uuid);
        gx_buf_put(b, rc, ",\"util_pct\":");
        put_json_num(b, rc, gx_score_fresh(ctx, c, GX_SIG_UTIL) ? c->v[GX_SIG_UTIL] : NAN);
        gx_buf_put(b, rc, ",\"mem_used_mib\":");
        put_json_num(b, rc, gx_score_fresh(ctx, c, GX_SIG_MEM_USED) ? c->v[GX_SIG_MEM_USED] : NAN);
        gx_buf_put(b, rc, ",\"mem_total_mib\":");
        put_json_num(b, rc, node->gpu_memory_mib > 0 ? (double)node->gpu_memory_mib : NAN);
        gx_buf_put(b, rc, ",\"temp_c\":");
        put_json_num(b, rc, gx_score_fresh(ctx, c, GX_SIG_TEMP) ? c->v[GX_SIG_TEMP] : NAN);
        gx_buf_putf(b, rc,
                    ",\"slots\":%d,\"slots_used\":%d,\"booked_share\":%.4f,\"slices_used\":%d,"
                    "\"booked_mib\":%lld,\"tenant_count\":%d,\"exclusive\":%s,\"state\":\"%s\","
                    "\"chosen\":%s,\"workload_pod\":",
                    bk.slots, bk.slots_used, bk.share, bk.u.slices, (long long)bk.u.memory_mib,
                    bk.u.tenants, bk.u.exclusive ? "true" : "false",
                    gx_card_state_text(gx_score_card_state(ctx, node, c)),
                    chosen(v, c->index) ? "true" : "false");
        gx_buf_put_json_str(b, rc, c->pod != NULL && c->pod[0] != '\0' ? c->pod : NULL);
        gx_buf_put(b, rc, ",\"dra_claim\":");
        gx_buf_put_json_str(b, rc, c->claim);
        put_tenants_json(b, rc, ctx, node, c->index);
        gx_buf_put(b, rc, "}");
    }
    gx_buf_put(b, rc, "]");
}

enum gx_err
gx_explain_json(const struct gx_decide_ctx *ctx, const struct gx_podreq *req, const char *pod_name,
                const struct gx_explain_notes *notes, struct gx_buf *out)
{
    const struct gx_snapshot *snap = ctx->snap;
    size_t len0 = out->len;
    struct gx_buf desc;
    struct gx_quota_check q;
    double *listed;
    char ns[256];
    enum gx_err rc = GX_OK;

    quota_begin(ctx, req, pod_name, ns, sizeof(ns), &q);
    listed = shortlist_of(ctx, req, &q);
    gx_buf_init(&desc, 1024);
    put_request(&desc, &rc, req);
    gx_buf_put(out, &rc, "{\"pod\":");
    gx_buf_put_json_str(out, &rc, pod_name);
    put_notes_json(out, &rc, notes);
    gx_buf_put(out, &rc, ",\"request\":{\"kind\":");
    gx_buf_put_json_str(out, &rc, kind_name(req));
    gx_buf_put(out, &rc, ",\"text\":");
    gx_buf_put_json_str(out, &rc, desc.data != NULL ? desc.data : "");
    if (req != NULL) {
        gx_buf_putf(out, &rc,
                    ",\"gpus\":%lld,\"slices\":%d,\"memory_mib\":%lld,\"device_plugin\":%s,"
                    "\"util_pct\":",
                    (long long)req->gpus, req->slices, (long long)req->memory_mib,
                    req->device_plugin ? "true" : "false");
        put_json_num(out, &rc, req->util_pct);
    }
    gx_buf_put(out, &rc, "}");
    put_quota_json(out, &rc, ctx, ns);
    gx_buf_put(out, &rc, ",\"nodes\":[");
    for (size_t i = 0; i < snap->n_nodes && rc == GX_OK; i++) {
        const struct gx_node *node = &snap->nodes[i];
        struct gx_verdict v;

        decide_listed(ctx, req, &q, listed, i, &v);
        gx_buf_put(out, &rc, i ? ",{\"node\":" : "{\"node\":");
        gx_buf_put_json_str(out, &rc, node->name);
        gx_buf_putf(out, &rc, ",\"verdict\":\"%s\",\"reason\":", v.keep ? "fit" : "reject");
        gx_buf_put_json_str(out, &rc, gx_reason_text(v.reason));
        gx_buf_putf(out, &rc, ",\"reason_name\":\"%s\",\"unresolvable\":%s",
                    gx_reason_name(v.reason), gx_reason_unresolvable(v.reason) ? "true" : "false");
        if (v.keep) {
            gx_buf_putf(out, &rc,
                        ",\"score\":%d,\"parts\":{\"util\":%.4f,\"memory\":%.4f,\"temp\":%.4f,"
                        "\"labels\":%.4f,\"fit\":%.4f,\"metrics_neutral\":%s}",
                        v.score, v.parts.util, v.parts.memory, v.parts.temp, v.parts.labels,
                        v.parts.fit, v.parts.metrics_neutral ? "true" : "false");
        } else {
            gx_buf_put(out, &rc, ",\"score\":null,\"parts\":null");
        }
        gx_buf_put(out, &rc, ",\"cards_chosen\":[");
        for (int k = 0; k < v.n_cards; k++) {
            gx_buf_putf(out, &rc, "%s%d", k ? "," : "", v.cards[k]);
        }
        gx_buf_putf(out, &rc, "],\"device_plugin\":%s,\"usable_cards\":%d,\"cards\":",
                    v.device_plugin ? "true" : "false", v.usable_cards);
        put_cards_json(out, &rc, ctx, node, &v);
        gx_buf_put(out, &rc, "}");
    }
    gx_buf_put(out, &rc, "]}");
    gx_buf_release(&desc);
    free(listed);
    if (rc != GX_OK) {
        rollback(out, len0);
    }
    return rc;
}
