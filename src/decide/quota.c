/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quota.c - per-namespace GPU quotas (see quota.h). A tenant's share is
 * what ledger.h's one rule books on its card (gx_ledger_share_used of the
 * tenant alone), so a namespace's usage and a card's usage are the same
 * arithmetic.
 */
#include "quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

/* The row of @ns in @rows[0..n), or NULL. */
static const struct gx_product_slots *
row_of(const struct gx_product_slots *rows, size_t n, const char *ns)
{
    for (size_t i = 0; rows != NULL && i < n; i++) {
        if (rows[i].product != NULL && strcmp(rows[i].product, ns) == 0) {
            return &rows[i];
        }
    }
    return NULL;
}

void
gx_quota_limits(const struct gx_config *cfg, const char *ns, struct gx_quota_limit *out)
{
    const struct gx_product_slots *m = row_of(cfg->quota_milli, cfg->n_quota_milli, ns);
    const struct gx_product_slots *b = row_of(cfg->quota_mib, cfg->n_quota_mib, ns);

    /* a listed 0 forbids; the defaults' 0 (also a hand-built config's) means no limit */
    out->milli = m != NULL                      ? m->slots
                 : cfg->quota_default_milli > 0 ? cfg->quota_default_milli
                                                : -1;
    out->memory_mib = b != NULL                    ? b->slots
                      : cfg->quota_default_mib > 0 ? cfg->quota_default_mib
                                                   : -1;
}

bool
gx_quota_limited(const struct gx_quota_limit *lim)
{
    return lim->milli >= 0 || lim->memory_mib >= 0;
}

/* Slots of a card of @node (a snapshot node, may be NULL). */
static int
slots_of(const struct gx_config *cfg, const struct gx_node *node)
{
    return gx_config_card_slots(cfg, node != NULL ? node->product : NULL,
                                node != NULL ? node->replicas : 1);
}

int64_t
gx_quota_tenant_milli(const struct gx_config *cfg, const struct gx_snapshot *snap, const char *node,
                      const struct gx_tenant *t)
{
    const struct gx_node *sn = snap != NULL ? gx_snapshot_find(snap, node, strlen(node)) : NULL;

    return gx_ledger_tenant_milli(t, slots_of(cfg, sn));
}

void
gx_quota_tenant_ns(const struct gx_tenant *t, char *out, size_t n)
{
    const char *slash = strchr(t->pod, '/');
    size_t len = slash != NULL ? (size_t)(slash - t->pod) : 0;

    (void)snprintf(out, n, "%.*s", (int)len, t->pod);
}

struct usage_ctx {
    const struct gx_config *cfg;
    const struct gx_snapshot *snap;
    const char *ns, *skip;
    struct gx_quota_use *out;
};

static void
usage_cb(void *arg, const struct gx_ledger_node *e)
{
    struct usage_ctx *c = arg;
    size_t nlen = strlen(c->ns);

    for (size_t i = 0; i < e->n_tenants; i++) {
        const struct gx_tenant *t = &e->tenants[i];

        if (strncmp(t->pod, c->ns, nlen) != 0 || t->pod[nlen] != '/' ||
            (c->skip != NULL && strcmp(t->uid, c->skip) == 0)) {
            continue;
        }
        c->out->milli += gx_quota_tenant_milli(c->cfg, c->snap, e->node, t);
        c->out->memory_mib += t->exclusive ? 0 : t->memory_mib;
        c->out->tenants++;
    }
}

void
gx_quota_usage(const struct gx_config *cfg, const struct gx_snapshot *snap,
               const struct gx_ledger *l, const char *ns, const char *skip_uid,
               struct gx_quota_use *out)
{
    struct usage_ctx c = {cfg, snap, ns, skip_uid, NULL};

    memset(out, 0, sizeof(*out));
    c.out = out;
    if (l != NULL && ns != NULL) {
        gx_ledger_each(l, usage_cb, &c);
    }
}

void
gx_quota_request(const struct gx_config *cfg, const struct gx_node *node,
                 const struct gx_podreq *req, struct gx_quota_use *out)
{
    struct gx_card_usage u = {0};

    memset(out, 0, sizeof(*out));
    if (node == NULL) {
        return;
    }
    switch (req->kind) {
    case GX_REQ_NONE:
        return;
    case GX_REQ_EXCLUSIVE:
        out->milli = req->gpus * GX_CARD_MILLI;
        out->tenants = (int)req->gpus;
        return;
    case GX_REQ_SHARED:
        if (req->milli > 0) {
            u.milli = gx_config_share_milli(cfg, req->milli);
        } else {
            u.slices = req->slices;
        }
        out->milli = gx_ledger_share_used(&u, slots_of(cfg, node));
        out->memory_mib = req->memory_mib;
        out->tenants = 1;
        return;
    }
}

bool
gx_quota_fits(const struct gx_quota_limit *lim, const struct gx_quota_use *have,
              const struct gx_quota_use *add)
{
    if (lim->milli >= 0 && add->milli > 0 && have->milli + add->milli > lim->milli) {
        return false;
    }
    if (lim->memory_mib >= 0 && add->memory_mib > 0 &&
        have->memory_mib + add->memory_mib > lim->memory_mib) {
        return false;
    }
    return true;
}

void
gx_quota_check_begin(const struct gx_decide_ctx *ctx, const char *ns, const char *uid,
                     const struct gx_podreq *req, struct gx_quota_check *q)
{
    memset(q, 0, sizeof(*q));
    if (req == NULL || req->kind == GX_REQ_NONE || ns == NULL) {
        return;
    }
    gx_quota_limits(ctx->cfg, ns, &q->lim);
    if (!gx_quota_limited(&q->lim)) {
        return;
    }
    q->on = true;
    gx_quota_usage(ctx->cfg, ctx->snap, ctx->ledger, ns, uid, &q->have);
}

bool
gx_quota_check_node(const struct gx_quota_check *q, const struct gx_decide_ctx *ctx,
                    const struct gx_podreq *req, const struct gx_node *node)
{
    struct gx_quota_use add;

    if (!q->on) {
        return true;
    }
    gx_quota_request(ctx->cfg, node, req, &add);
    return gx_quota_fits(&q->lim, &q->have, &add);
}

/* ---- every namespace ---- */

struct ns_row {
    char ns[254];
    struct gx_quota_use use;
};

struct each_ctx {
    const struct gx_config *cfg;
    const struct gx_snapshot *snap;
    struct gx_strmap map; /* ns -> struct ns_row (keys live in the rows) */
    struct ns_row **rows;
    size_t n, cap;
    bool nomem;
};

static struct ns_row *
row_get(struct each_ctx *c, const char *ns)
{
    struct ns_row *r = gx_strmap_get(&c->map, ns, strlen(ns));

    if (r != NULL || c->nomem) {
        return r;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct ns_row **grown = realloc(c->rows, cap * sizeof(struct ns_row *));
        if (grown == NULL) {
            c->nomem = true;
            return NULL;
        }
        c->rows = grown;
        c->cap = cap;
    }
    if ((r = calloc(1, sizeof(*r))) == NULL) {
        c->nomem = true;
        return NULL;
    }
    (void)snprintf(r->ns, sizeof(r->ns), "%s", ns);
    if (gx_strmap_put(&c->map, r->ns, strlen(r->ns), r) != GX_OK) {
        free(r);
        c->nomem = true;
        return NULL;
    }
    c->rows[c->n++] = r;
    return r;
}

static void
each_cb(void *arg, const struct gx_ledger_node *e)
{
    struct each_ctx *c = arg;

    for (size_t i = 0; i < e->n_tenants; i++) {
        const struct gx_tenant *t = &e->tenants[i];
        char ns[254];
        struct ns_row *r;

        gx_quota_tenant_ns(t, ns, sizeof(ns));
        if ((r = row_get(c, ns)) == NULL) {
            continue;
        }
        r->use.milli += gx_quota_tenant_milli(c->cfg, c->snap, e->node, t);
        r->use.memory_mib += t->exclusive ? 0 : t->memory_mib;
        r->use.tenants++;
    }
}

static int
row_cmp(const void *a, const void *b)
{
    const struct ns_row *const *x = a, *const *y = b;

    return strcmp((*x)->ns, (*y)->ns);
}

enum gx_err
gx_quota_each(const struct gx_config *cfg, const struct gx_snapshot *snap,
              const struct gx_ledger *l, size_t max,
              void (*cb)(void *ctx, const char *ns, const struct gx_quota_use *use,
                         const struct gx_quota_limit *lim),
              void *ctx, size_t *dropped)
{
    struct each_ctx c = {.cfg = cfg, .snap = snap};
    enum gx_err rc;

    gx_strmap_init(&c.map);
    if (l != NULL) {
        gx_ledger_each(l, each_cb, &c);
    }
    rc = c.nomem ? GX_ENOMEM : GX_OK;
    if (rc == GX_OK) {
        if (c.n > 1) {
            qsort(c.rows, c.n, sizeof(struct ns_row *), row_cmp);
        }
        for (size_t i = 0; i < c.n && i < max; i++) {
            struct gx_quota_limit lim;
            gx_quota_limits(cfg, c.rows[i]->ns, &lim);
            cb(ctx, c.rows[i]->ns, &c.rows[i]->use, &lim);
        }
        if (dropped != NULL) {
            *dropped = c.n > max ? c.n - max : 0;
        }
    }
    for (size_t i = 0; i < c.n; i++) {
        free(c.rows[i]);
    }
    free(c.rows);
    gx_strmap_release(&c.map);
    return rc;
}
