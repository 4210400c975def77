/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cards.c - the ledger per card for /metrics and /debug/cards (see cards.h).
 * A card's booked share is what the ledger's one rule counts
 * (gx_ledger_share_used / 1000), 1 for a whole-GPU holder or a DRA claim,
 * so it can be drawn next to dcgm-exporter's measured utilization / 100;
 * its slots in use are gx_ledger_slots_used's, all of them under a claim.
 * gx_cards_booking is the one place these are decided: explain, GET
 * /debug/cards and /metrics all read it.
 * Tenants whose card the device plugin picks (card GX_CARD_ANY) are on no
 * card; they count in their namespace only.
 */
#include "cards.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "quota.h"

/* A label value with \, " and newline escaped (exposition format). */
static void
put_label(struct gx_buf *b, enum gx_err *rc, const char *s)
{
    for (; s != NULL && *s != '\0' && *rc == GX_OK; s++) {
        if (*s == '\\' || *s == '"') {
            char e[3] = {'\\', *s, '\0'};
            *rc = gx_buf_adds(b, e);
        } else if (*s == '\n') {
            *rc = gx_buf_adds(b, "\\n");
        } else {
            *rc = gx_buf_add(b, s, 1);
        }
    }
}

void
gx_cards_booking(const struct gx_config *cfg, const struct gx_ledger *l, const struct gx_node *node,
                 const struct gx_card *card, struct gx_card_booking *bk)
{
    memset(bk, 0, sizeof(*bk));
    bk->slots = gx_config_card_slots(cfg, node->product, node->replicas);
    gx_ledger_card_usage(l, node->name, card->index, &bk->u);
    if (bk->u.exclusive || card->claim != NULL) {
        bk->share = 1.0;
        bk->slots_used = bk->slots;
    } else {
        bk->share = (double)gx_ledger_share_used(&bk->u, bk->slots) / (double)GX_CARD_MILLI;
        bk->share = bk->share > 1.0 ? 1.0 : bk->share;
        bk->slots_used = gx_ledger_slots_used(&bk->u, bk->slots);
    }
}

void
gx_cards_slots(const struct gx_config *cfg, const struct gx_snapshot *snap,
               const struct gx_ledger *l, int64_t *used, int64_t *total)
{
    *used = *total = 0;
    for (size_t i = 0; snap != NULL && i < snap->n_nodes; i++) {
        for (size_t c = 0; c < snap->nodes[i].n_cards; c++) {
            struct gx_card_booking bk;
            gx_cards_booking(cfg, l, &snap->nodes[i], &snap->nodes[i].cards[c], &bk);
            *used += bk.slots_used;
            *total += bk.slots;
        }
    }
}

/* What the ledger holds on one card. */
struct card_row {
    const struct gx_node *node;
    const struct gx_card *card;
    struct gx_card_booking b;
};

static void
card_row(const struct gx_config *cfg, const struct gx_ledger *l, const struct gx_node *node,
         const struct gx_card *card, struct card_row *r)
{
    r->node = node;
    r->card = card;
    gx_cards_booking(cfg, l, node, card, &r->b);
}

static bool
row_shown(const struct card_row *r)
{
    return r->b.u.tenants > 0 || r->b.u.exclusive || r->card->claim != NULL;
}

static void
put_card_labels(struct gx_buf *b, enum gx_err *rc, const struct card_row *r)
{
    gx_buf_put(b, rc, "{node=\"");
    put_label(b, rc, r->node->name);
    gx_buf_putf(b, rc, "\",gpu=\"%d\",UUID=\"", r->card->index);
    put_label(b, rc, r->card->uuid != NULL ? r->card->uuid : "");
    gx_buf_put(b, rc, "\"}");
}

enum family { F_SHARE, F_BYTES, F_TENANTS, F_CLAIMED, F_COUNT };

/* Bytes of @mib: metrics are in base units, as Prometheus' conventions ask. */
#define MIB_BYTES(mib) ((int64_t)(mib)*1024 * 1024)

static const struct {
    const char *name, *help;
} families[F_COUNT] = {
    [F_SHARE] = {"gpu_extender_card_booked_share",
                 "Share of the card booked in the ledger, 0..1 (1: a whole-GPU holder or a DRA "
                 "claim)."},
    [F_BYTES] = {"gpu_extender_card_booked_memory_bytes",
                 "GPU memory the card's shared tenants declared, bytes."},
    [F_TENANTS] = {"gpu_extender_card_tenants", "Pods the ledger places on the card."},
    [F_CLAIMED] = {"gpu_extender_card_dra_claimed",
                   "1 when a DRA ResourceClaim holds the card (no ledger booking can take it)."},
};

static double
family_value(enum family f, const struct card_row *r)
{
    switch (f) {
    case F_SHARE:
        return r->b.share;
    case F_BYTES:
        return (double)MIB_BYTES(r->b.u.memory_mib);
    case F_TENANTS:
        return (double)r->b.u.tenants;
    case F_CLAIMED:
    case F_COUNT:
        break;
    }
    return r->card->claim != NULL ? 1.0 : 0.0;
}

/* One family over the shown cards (at most @max); counts what was shown and left out. */
static void
put_family(struct gx_buf *b, enum gx_err *rc, const struct gx_config *cfg,
           const struct gx_snapshot *snap, const struct gx_ledger *l, enum family f, size_t max,
           size_t *shown, size_t *dropped, size_t *claimed)
{
    gx_buf_putf(b, rc, "# HELP %s %s\n# TYPE %s gauge\n", families[f].name, families[f].help,
                families[f].name);
    *shown = *dropped = *claimed = 0;
    for (size_t i = 0; snap != NULL && i < snap->n_nodes && *rc == GX_OK; i++) {
        const struct gx_node *node = &snap->nodes[i];
        for (size_t c = 0; c < node->n_cards && *rc == GX_OK; c++) {
            struct card_row r;
            card_row(cfg, l, node, &node->cards[c], &r);
            *claimed += node->cards[c].claim != NULL;
            if (!row_shown(&r)) {
                continue;
            }
            if (*shown >= max) {
                (*dropped)++;
                continue;
            }
            (*shown)++;
            gx_buf_put(b, rc, families[f].name);
            put_card_labels(b, rc, &r);
            gx_buf_putf(b, rc, " %.17g\n", family_value(f, &r));
        }
    }
}

/* The namespace families, in ns_cb's pass order: name and help. */
static const char *const ns_families[4][2] = {
    {"gpu_extender_namespace_booked_milli_gpus",
     "GPU share the namespace's pods hold in the ledger, milli-GPU."},
    {"gpu_extender_namespace_booked_memory_bytes",
     "GPU memory the namespace's shared pods declared, bytes."},
    {"gpu_extender_namespace_quota_milli_gpus", "quotas.* limit of the namespace, milli-GPU."},
    {"gpu_extender_namespace_quota_memory_bytes", "quotas.* limit of the namespace, bytes."},
};

struct ns_ctx {
    struct gx_buf *b;
    enum gx_err *rc;
    int pass; /* which family */
};

static void
ns_cb(void *arg, const char *ns, const struct gx_quota_use *use, const struct gx_quota_limit *lim)
{
    struct ns_ctx *c = arg;
    int64_t v;

    switch (c->pass) {
    case 0:
        v = use->milli;
        break;
    case 1:
        v = MIB_BYTES(use->memory_mib);
        break;
    case 2:
        v = lim->milli;
        break;
    default:
        v = lim->memory_mib < 0 ? -1 : MIB_BYTES(lim->memory_mib);
        break;
    }
    if (c->pass >= 2 && v < 0) {
        return; /* no limit: no series */
    }
    gx_buf_put(c->b, c->rc, ns_families[c->pass][0]);
    gx_buf_put(c->b, c->rc, "{tenant_namespace=\"");
    put_label(c->b, c->rc, ns);
    gx_buf_putf(c->b, c->rc, "\"} %lld\n", (long long)v);
}

enum gx_err
gx_cards_metrics(const struct gx_config *cfg, const struct gx_snapshot *snap,
                 const struct gx_ledger *l, struct gx_buf *out)
{
    size_t max = cfg->metrics_max_cards > 0 ? (size_t)cfg->metrics_max_cards : 0;
    size_t shown = 0, dropped = 0, claimed = 0, ns_dropped = 0;
    enum gx_err rc = GX_OK;
    size_t len0 = out->len;

    for (int f = 0; f < F_COUNT && rc == GX_OK; f++) {
        put_family(out, &rc, cfg, snap, l, (enum family)f, max, &shown, &dropped, &claimed);
    }
    gx_buf_putf(out, &rc,
                "# HELP gpu_extender_card_series_dropped Booked or claimed cards left out of the "
                "gpu_extender_card_* series by server.metrics_max_cards.\n"
                "# TYPE gpu_extender_card_series_dropped gauge\n"
                "gpu_extender_card_series_dropped %zu\n"
                "# HELP gpu_extender_dra_claimed_cards Cards held by DRA ResourceClaims.\n"
                "# TYPE gpu_extender_dra_claimed_cards gauge\n"
                "gpu_extender_dra_claimed_cards %zu\n",
                dropped, claimed);
    for (int pass = 0; pass < 4 && rc == GX_OK; pass++) {
        struct ns_ctx c = {out, &rc, pass};
        gx_buf_putf(out, &rc, "# HELP %s %s\n# TYPE %s gauge\n", ns_families[pass][0],
                    ns_families[pass][1], ns_families[pass][0]);
        if (rc == GX_OK) {
            rc = gx_quota_each(cfg, snap, l, max, ns_cb, &c, &ns_dropped);
        }
    }
    gx_buf_putf(out, &rc,
                "# HELP gpu_extender_namespace_series_dropped Namespaces left out of the "
                "gpu_extender_namespace_* series by server.metrics_max_cards.\n"
                "# TYPE gpu_extender_namespace_series_dropped gauge\n"
                "gpu_extender_namespace_series_dropped %zu\n",
                ns_dropped);
    if (rc != GX_OK) {
        out->len = len0;
    }
    return rc;
}

/* A measured value, or null when unknown or stale. */
static void
put_measured(struct gx_buf *b, enum gx_err *rc, const struct gx_config *cfg,
             const struct gx_card *card, enum gx_signal sig, int64_t now_ms)
{
    if (gx_card_fresh(cfg, card, sig, now_ms) && isfinite(card->v[sig])) {
        gx_buf_putf(b, rc, "%.17g", card->v[sig]);
    } else {
        gx_buf_put(b, rc, "null");
    }
}

void
gx_cards_put_tenants(struct gx_buf *b, enum gx_err *rc, const struct gx_config *cfg,
                     const struct gx_snapshot *snap, const struct gx_ledger_node *e, int idx)
{
    bool first = true;

    gx_buf_put(b, rc, "\"tenants\":[");
    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        const struct gx_tenant *t = &e->tenants[i];
        if (t->card != idx) {
            continue;
        }
        gx_buf_put(b, rc, first ? "{\"pod\":" : ",{\"pod\":");
        gx_buf_put_json_str(b, rc, t->pod);
        gx_buf_put(b, rc, ",\"uid\":");
        gx_buf_put_json_str(b, rc, t->uid);
        gx_buf_putf(b, rc,
                    ",\"exclusive\":%s,\"slices\":%d,\"milli\":%d,\"share_milli\":%lld,"
                    "\"memory_mib\":%lld,\"state\":\"%s\",\"since_ms\":%lld}",
                    t->exclusive ? "true" : "false", t->slices, t->milli,
                    (long long)gx_quota_tenant_milli(cfg, snap, e->node, t),
                    (long long)t->memory_mib, t->state == GX_TENANT_BOUND ? "bound" : "reserved",
                    (long long)t->since_ms);
        first = false;
    }
    gx_buf_put(b, rc, "]");
}

struct json_ns {
    struct gx_buf *b;
    enum gx_err *rc;
    bool first;
};

static void
json_ns_cb(void *arg, const char *ns, const struct gx_quota_use *use,
           const struct gx_quota_limit *lim)
{
    struct json_ns *c = arg;

    gx_buf_put(c->b, c->rc, c->first ? "{\"namespace\":" : ",{\"namespace\":");
    gx_buf_put_json_str(c->b, c->rc, ns);
    gx_buf_putf(c->b, c->rc,
                ",\"milli_gpus\":%lld,\"memory_mib\":%lld,\"tenants\":%d,\"quota_milli_gpus\":%lld,"
                "\"quota_memory_mib\":%lld}",
                (long long)use->milli, (long long)use->memory_mib, use->tenants,
                (long long)lim->milli, (long long)lim->memory_mib);
    c->first = false;
}

/* The node's CPU and memory requests as the ledger counts them: tenants plus other pods. */
static void
put_host(struct gx_buf *b, enum gx_err *rc, const struct gx_ledger_node *e)
{
    int64_t cpu, mem;

    gx_ledger_entry_host(e, &cpu, &mem);
    gx_buf_putf(b, rc,
                "\"host\":{\"cpu_milli\":%lld,\"memory_mib\":%lld,\"other_cpu_milli\":%lld,"
                "\"other_memory_mib\":%lld}",
                (long long)cpu, (long long)mem, (long long)(e != NULL ? e->untracked_cpu_milli : 0),
                (long long)(e != NULL ? e->untracked_mem_mib : 0));
}

enum gx_err
gx_cards_json(const struct gx_config *cfg, const struct gx_snapshot *snap,
              const struct gx_ledger *l, int64_t now_ms, struct gx_buf *out)
{
    struct json_ns jn = {out, NULL, true};
    enum gx_err rc = GX_OK;
    size_t len0 = out->len;
    bool first_node = true;

    jn.rc = &rc;
    gx_buf_put(out, &rc, "{\"nodes\":[");
    for (size_t i = 0; snap != NULL && i < snap->n_nodes && rc == GX_OK; i++) {
        const struct gx_node *node = &snap->nodes[i];
        const struct gx_ledger_node *e = gx_ledger_node(l, node->name);

        if (node->n_cards == 0) {
            continue;
        }
        gx_buf_put(out, &rc, first_node ? "{\"node\":" : ",{\"node\":");
        gx_buf_put_json_str(out, &rc, node->name);
        gx_buf_putf(out, &rc, ",\"product\":");
        gx_buf_put_json_str(out, &rc, node->product);
        gx_buf_put(out, &rc, ",\"cards\":[");
        for (size_t c = 0; c < node->n_cards && rc == GX_OK; c++) {
            struct card_row r;
            card_row(cfg, l, node, &node->cards[c], &r);
            gx_buf_putf(out, &rc, "%s{\"index\":%d,\"uuid\":", c ? "," : "", node->cards[c].index);
            gx_buf_put_json_str(out, &rc, node->cards[c].uuid);
            gx_buf_putf(
                out, &rc,
                ",\"slots\":%d,\"slots_used\":%d,\"booked_share\":%.4f,\"booked_slices\":%d,"
                "\"booked_milli\":%d,\"booked_memory_mib\":%lld,\"exclusive\":%s,\"dra_claim\":",
                r.b.slots, r.b.slots_used, r.b.share, r.b.u.slices, r.b.u.milli,
                (long long)r.b.u.memory_mib, r.b.u.exclusive ? "true" : "false");
            gx_buf_put_json_str(out, &rc, node->cards[c].claim);
            gx_buf_put(out, &rc, ",\"measured\":{\"util_pct\":");
            put_measured(out, &rc, cfg, &node->cards[c], GX_SIG_UTIL, now_ms);
            gx_buf_put(out, &rc, ",\"mem_used_mib\":");
            put_measured(out, &rc, cfg, &node->cards[c], GX_SIG_MEM_USED, now_ms);
            gx_buf_put(out, &rc, "},\"workload_pod\":");
            gx_buf_put_json_str(out, &rc, node->cards[c].pod);
            gx_buf_put(out, &rc, ",");
            gx_cards_put_tenants(out, &rc, cfg, snap, e, node->cards[c].index);
            gx_buf_put(out, &rc, "}");
        }
        gx_buf_put(out, &rc, "],\"unplaced\":{");
        gx_cards_put_tenants(out, &rc, cfg, snap, e, GX_CARD_ANY);
        gx_buf_put(out, &rc, "},");
        put_host(out, &rc, e);
        gx_buf_put(out, &rc, "}");
        first_node = false;
    }
    gx_buf_put(out, &rc, "],\"namespaces\":[");
    if (rc == GX_OK) {
        rc = gx_quota_each(cfg, snap, l, SIZE_MAX, json_ns_cb, &jn, NULL);
    }
    gx_buf_put(out, &rc, "]}");
    if (rc != GX_OK) {
        out->len = len0;
    }
    return rc;
}
