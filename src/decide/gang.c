/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gang.c - tentative bookings of gang members (gang.h): a packed table of
 * entries, the rules that drop them, the verdict of a node with them
 * booked and the single node a member's filter keeps. Pure: the time comes
 * in as @now_ms, and the log lines are the shell's (server/gang_filter.c).
 */
#include "gang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "snapshot.h"

/* One member's tentative booking: the tenants its bind would write on @node. */
struct entry {
    char key[GX_GANG_KEY_MAX];
    char uid[GX_UID_MAX];
    char node[256];
    struct gx_tenant t[GX_MAX_PICK];
    size_t n;
    bool fits;       /* it fitted on the last scratch ledger (not counted when it did not) */
    int64_t made_ms; /* the caller's monotonic clock */
    int64_t expires_ms;
};

/* A pod some filter planned as a member of group @key: known until @expires_ms, entry or not. */
struct known {
    char key[GX_GANG_KEY_MAX];
    char uid[GX_UID_MAX];
    int64_t expires_ms;
};

/* Entries packed at the front: filter walks only the live ones for every node. */
/* Bits of the nodes entries name, by hash: most nodes of a call hold none (other_on). */
#define NAMED_BITS (1u << 14)
/* Fewer entries are walked: hashing every node's name costs more than comparing a few. */
#define NAMED_MIN 8

struct gx_gang {
    struct entry *e;
    size_t n, cap;
    struct known *k; /* GX_GANG_MAX of them, made with the first */
    size_t nk;
    uint64_t named[NAMED_BITS / 64]; /* a superset of the entries' nodes until named_stale */
    bool named_stale;                /* entries came or went since @named was made */
};

struct gx_gang *
gx_gang_new(void)
{
    return calloc(1, sizeof(struct gx_gang));
}

void
gx_gang_free(struct gx_gang *g)
{
    if (g != NULL) {
        free(g->e);
        free(g->k);
        free(g);
    }
}

bool
gx_gang_key(const struct gx_pod *pod, char *key, size_t cap)
{
    int w;

    key[0] = '\0';
    if (pod->pod_group == NULL || pod->pod_group[0] == '\0') {
        return false;
    }
    w = snprintf(key, cap, "%s/%s", pod->namespace, pod->pod_group);
    if (w < 0 || (size_t)w >= cap) {
        key[0] = '\0';
        return false;
    }
    return true;
}

/* Remove entry @i: the last one takes its place. */
static void
drop_at(struct gx_gang *g, size_t i)
{
    if (i + 1 < g->n) {
        g->e[i] = g->e[g->n - 1];
    }
    g->n--;
    g->named_stale = true;
}

size_t
gx_gang_begin(struct gx_gang *g, const char *key, const char *uid, int64_t now_ms)
{
    bool again = false;
    size_t dropped = 0;
    int64_t newest = INT64_MIN;

    if (g == NULL) {
        return 0;
    }
    for (size_t i = 0; i < g->n;) {
        if (g->e[i].expires_ms < now_ms) {
            drop_at(g, i);
            continue;
        }
        if (strcmp(g->e[i].key, key) == 0) {
            again = again || strcmp(g->e[i].uid, uid) == 0;
            newest = g->e[i].made_ms > newest ? g->e[i].made_ms : newest;
        }
        i++;
    }
    /*
     * A pause since the group's last entry: a new pass (a retry after
     * backoff), whatever member comes first. Its order may differ from the
     * last pass's, so a member still holding an old entry later in this pass
     * must not take it for a new pass and drop this pass's entries.
     */
    again = again || (newest != INT64_MIN && now_ms - newest > GX_GANG_PASS_GAP_MS);
    for (size_t i = 0; again && i < g->n;) {
        if (strcmp(g->e[i].key, key) == 0) {
            drop_at(g, i);
            dropped++;
            continue;
        }
        i++;
    }
    return dropped;
}

bool
gx_gang_any(const struct gx_gang *g)
{
    return g != NULL && g->n > 0;
}

size_t
gx_gang_count(const struct gx_gang *g, int64_t now_ms)
{
    size_t n = 0;

    for (size_t i = 0; g != NULL && i < g->n; i++) {
        n += g->e[i].expires_ms >= now_ms;
    }
    return n;
}

/*
 * A scratch ledger holding @ctx's entry of snapshot node @sn with every
 * live entry of the node booked but @uid's; NULL when no entry applies or
 * out of memory. Entries expired go; those whose pod the ledger books add
 * nothing (its booking holds the cards).
 */
static struct gx_ledger *
scratch_of(struct gx_gang *g, const struct gx_decide_ctx *ctx, const struct gx_node *sn,
           const char *uid, int64_t now_ms)
{
    struct gx_ledger *scratch = NULL;
    int slots[256];
    size_t n_slots = 0;

    for (size_t i = 0; i < g->n;) {
        struct entry *x = &g->e[i];
        if (x->expires_ms < now_ms) {
            drop_at(g, i);
            continue;
        }
        /* the member's own booking holds its cards: the entry adds none (the bind drops it) */
        if (strcmp(x->node, sn->name) != 0 || strcmp(x->uid, uid) == 0 || x->n == 0 ||
            gx_ledger_find_pod(ctx->ledger, x->uid) != NULL) {
            i++;
            continue;
        }
        if (scratch == NULL) {
            if ((scratch = gx_ledger_scratch(ctx->ledger, sn->name)) == NULL) {
                return NULL;
            }
            n_slots = gx_admit_slots(ctx->cfg, sn, slots, GX_ARRAY_LEN(slots));
        }
        /* no room left: whatever took it holds it just as well */
        x->fits = gx_ledger_add(scratch, sn->name, x->t, x->n, slots, n_slots) == GX_OK;
        i++;
    }
    return scratch;
}

static size_t
named_bit(const char *node)
{
    return (size_t)(gx_hash_mem(node, strlen(node)) % NAMED_BITS);
}

/* False when no entry names @node for sure; true when one may (more than NAMED_MIN held). */
static bool
maybe_named(struct gx_gang *g, const char *node)
{
    size_t bit;

    if (g->n <= NAMED_MIN) {
        return true;
    }
    if (g->named_stale) {
        memset(g->named, 0, sizeof(g->named));
        for (size_t i = 0; i < g->n; i++) {
            bit = named_bit(g->e[i].node);
            g->named[bit / 64] |= 1ULL << (bit % 64);
        }
        g->named_stale = false;
    }
    bit = named_bit(node);
    return (g->named[bit / 64] & (1ULL << (bit % 64))) != 0;
}

/*
 * True when an entry of a pod other than @uid names @node, live or not:
 * asked for every node of a call before the snapshot lookup. Walking every
 * entry for every node of a 5,000-node call took 67 % of a member's filter
 * with 180 entries held (3.4 against 0.7 ms); the bits spare the walk.
 */
static bool
other_on(struct gx_gang *g, const char *node, const char *uid)
{
    if (!maybe_named(g, node)) {
        return false;
    }
    for (size_t i = 0; i < g->n; i++) {
        if (strcmp(g->e[i].node, node) == 0 && strcmp(g->e[i].uid, uid) != 0) {
            return true;
        }
    }
    return false;
}

enum gx_gang_outcome
gx_gang_verdict(struct gx_gang *g, const struct gx_decide_ctx *ctx, const struct gx_pod *pod,
                const struct gx_podreq *req, const char *node_name, int64_t now_ms,
                struct gx_vshort *v)
{
    const struct gx_node *sn;
    struct gx_ledger *scratch;
    bool turned;

    if (g == NULL || !other_on(g, node_name, pod->uid) ||
        (sn = gx_snapshot_find(ctx->snap, node_name, strlen(node_name))) == NULL ||
        (scratch = scratch_of(g, ctx, sn, pod->uid, now_ms)) == NULL) {
        return GX_GANG_NONE;
    }
    turned = gx_vcache_decide_booked(ctx, scratch, req, sn, v);
    gx_ledger_free(scratch);
    return turned ? GX_GANG_TURNED : GX_GANG_DECIDED;
}

size_t
gx_gang_pin(struct gx_vshort *v, size_t n, size_t prefer)
{
    size_t best = prefer < n && v[prefer].keep ? prefer : n;
    bool held = best != n;

    for (size_t i = 0; i < n && !held; i++) {
        if (v[i].keep && (best == n || v[i].score > v[best].score)) {
            best = i;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (i != best && v[i].keep) {
            v[i].keep = false;
            v[i].reason = GX_REASON_GANG_PINNED;
            v[i].score = 0;
        }
    }
    return best;
}

/* The slot of a new entry, growing the table up to GX_GANG_MAX; NULL when full or no memory. */
static struct entry *
entry_new(struct gx_gang *g, enum gx_err *rc)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct entry *e;

        if (cap > GX_GANG_MAX) {
            cap = GX_GANG_MAX;
        }
        if (cap == g->cap) {
            *rc = GX_ETOOBIG;
            return NULL;
        }
        if ((e = realloc(g->e, cap * sizeof(*e))) == NULL) {
            *rc = GX_ENOMEM;
            return NULL;
        }
        g->e = e;
        g->cap = cap;
    }
    return &g->e[g->n];
}

/*
 * Remember pod @uid as a member of group @key until @expires_ms: a new
 * pass drops its entry, but its bind must still wait for its gang.
 * Full: the row that expires first goes.
 */
static void
know(struct gx_gang *g, const char *key, const char *uid, int64_t expires_ms)
{
    size_t at = 0;

    if (g->k == NULL && (g->k = calloc(GX_GANG_MAX, sizeof(*g->k))) == NULL) {
        return;
    }
    while (at < g->nk && strcmp(g->k[at].uid, uid) != 0) {
        at++;
    }
    if (at == g->nk && g->nk == GX_GANG_MAX) {
        at = 0;
        for (size_t i = 1; i < g->nk; i++) {
            at = g->k[i].expires_ms < g->k[at].expires_ms ? i : at;
        }
    } else if (at == g->nk) {
        g->nk++;
    }
    (void)snprintf(g->k[at].key, sizeof(g->k[at].key), "%s", key);
    (void)snprintf(g->k[at].uid, sizeof(g->k[at].uid), "%s", uid);
    g->k[at].expires_ms = expires_ms;
}

enum gx_err
gx_gang_put(struct gx_gang *g, const struct gx_decide_ctx *ctx, const char *key,
            const struct gx_pod *pod, const struct gx_podreq *req, const char *node, int64_t ttl_ms,
            int64_t now_ms, struct gx_why *why)
{
    const struct gx_node *sn = gx_snapshot_find(ctx->snap, node, strlen(node));
    struct gx_admit_pod ap = {pod->uid, pod->namespace, pod->name, req};
    const struct gx_ledger_node *booked;
    struct gx_ledger *scratch;
    struct gx_admit_plan plan;
    struct gx_decide_ctx here;
    struct entry *x;
    enum gx_err rc = GX_OK;

    if (sn == NULL) {
        gx_why_set(why, "node %s unknown to gpu-extender", node);
        return GX_ECONFLICT;
    }
    if (strlen(key) >= sizeof(x->key) || strlen(pod->uid) >= sizeof(x->uid) ||
        strlen(node) >= sizeof(x->node)) {
        gx_why_set(why, "gang key, pod uid or node name too long");
        return GX_EINVAL;
    }
    (void)gx_gang_drop(g, pod->uid);
    scratch = scratch_of(g, ctx, sn, pod->uid, now_ms);
    if (scratch == NULL && (scratch = gx_ledger_scratch(ctx->ledger, sn->name)) == NULL) {
        return GX_ENOMEM; /* (no other entry on the node: a copy of the node's own entry) */
    }
    here = gx_decide_ctx_on(ctx, scratch);
    rc = gx_admit_reserve(&here, scratch, sn->name, &ap, &plan, why);
    /* a member whose own booking already holds its cards (a failed bind's, not yet released)
     * books none, but is a member of the pass all the same: its bind waits for the others */
    if (rc == GX_OK && (plan.changed || plan.renewed) && (x = entry_new(g, &rc)) != NULL) {
        memset(x, 0, sizeof(*x));
        (void)snprintf(x->key, sizeof(x->key), "%s", key);
        (void)snprintf(x->uid, sizeof(x->uid), "%s", pod->uid);
        (void)snprintf(x->node, sizeof(x->node), "%s", sn->name);
        booked = plan.changed ? gx_ledger_node(scratch, sn->name) : NULL;
        for (size_t i = 0; booked != NULL && i < booked->n_tenants && x->n < GX_MAX_PICK; i++) {
            if (strcmp(booked->tenants[i].uid, pod->uid) == 0) {
                x->t[x->n++] = booked->tenants[i];
            }
        }
        x->made_ms = now_ms;
        x->expires_ms = now_ms + ttl_ms;
        g->n++;
        g->named_stale = true;
        know(g, key, pod->uid, x->expires_ms);
    }
    gx_ledger_free(scratch);
    return rc;
}

/* Pod @uid's entry (a pod holds one at most) when it is live at @now_ms, else NULL. */
static const struct entry *
live_of(const struct gx_gang *g, const char *uid, int64_t now_ms)
{
    for (size_t i = 0; g != NULL && i < g->n; i++) {
        if (strcmp(g->e[i].uid, uid) == 0) {
            return g->e[i].expires_ms >= now_ms ? &g->e[i] : NULL;
        }
    }
    return NULL;
}

size_t
gx_gang_planned(const struct gx_gang *g, const char *uid, const char *node, int64_t now_ms,
                struct gx_tenant *t)
{
    const struct entry *x = live_of(g, uid, now_ms);

    if (x == NULL || strcmp(x->node, node) != 0) {
        return 0;
    }
    memcpy(t, x->t, x->n * sizeof(*t));
    return x->n;
}

bool
gx_gang_drop(struct gx_gang *g, const char *uid)
{
    for (size_t i = 0; g != NULL && i < g->n; i++) {
        if (strcmp(g->e[i].uid, uid) == 0) {
            drop_at(g, i);
            return true;
        }
    }
    return false;
}

size_t
gx_gang_group_of(const struct gx_gang *g, const char *uid, int64_t now_ms, char *key, size_t cap)
{
    const struct entry *own = live_of(g, uid, now_ms);
    size_t n = 0;

    key[0] = '\0';
    if (own == NULL || strlen(own->key) >= cap) {
        return 0;
    }
    for (size_t i = 0; i < g->n; i++) {
        n += g->e[i].expires_ms >= now_ms && strcmp(g->e[i].key, own->key) == 0;
    }
    (void)snprintf(key, cap, "%s", own->key);
    return n;
}

bool
gx_gang_group_key(const struct gx_gang *g, const char *uid, int64_t now_ms, char *key, size_t cap)
{
    for (size_t i = 0; g != NULL && i < g->nk; i++) {
        if (strcmp(g->k[i].uid, uid) == 0 && g->k[i].expires_ms >= now_ms &&
            strlen(g->k[i].key) < cap) {
            (void)snprintf(key, cap, "%s", g->k[i].key);
            return true;
        }
    }
    key[0] = '\0';
    return false;
}

size_t
gx_gang_drop_members(struct gx_gang *g, const struct gx_gang_barrier *b)
{
    size_t dropped = 0;

    for (size_t i = 0; g != NULL && i < g->n;) {
        if (gx_barrier_member(b, g->e[i].uid)) {
            drop_at(g, i);
            dropped++;
            continue;
        }
        i++;
    }
    return dropped;
}

enum gx_barrier_state
gx_barrier_reserved(struct gx_gang_barrier *b)
{
    b->reserved++;
    if (b->state == GX_BARRIER_OPEN && b->reserved >= b->expected) {
        b->state = GX_BARRIER_GO;
    }
    return b->state;
}

bool
gx_barrier_fail(struct gx_gang_barrier *b)
{
    if (b->state != GX_BARRIER_OPEN) {
        return false;
    }
    b->state = GX_BARRIER_FAILED;
    return true;
}

/* The index of @uid among @b's members, or @b->n. */
static size_t
member_at(const struct gx_gang_barrier *b, const char *uid)
{
    size_t i = 0;

    while (i < b->n && strcmp(b->m[i].uid, uid) != 0) {
        i++;
    }
    return i;
}

bool
gx_barrier_member(const struct gx_gang_barrier *b, const char *uid)
{
    return member_at(b, uid) < b->n;
}

bool
gx_barrier_expects(const struct gx_gang_barrier *b, const char *uid)
{
    size_t i = member_at(b, uid);

    return i < b->n && !b->m[i].arrived;
}

size_t
gx_barrier_absent(const struct gx_gang_barrier *b)
{
    size_t n = 0;

    for (size_t i = 0; i < b->n; i++) {
        n += !b->m[i].arrived;
    }
    return n;
}

enum gx_err
gx_barrier_add(struct gx_gang_barrier *b, const char *uid)
{
    struct gx_barrier_member *m;

    if (member_at(b, uid) < b->n) {
        return GX_OK;
    }
    if (strlen(uid) >= sizeof(m->uid)) {
        return GX_EINVAL;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        if ((m = realloc(b->m, cap * sizeof(*m))) == NULL) {
            return GX_ENOMEM;
        }
        b->m = m;
        b->cap = cap;
    }
    m = &b->m[b->n++];
    (void)snprintf(m->uid, sizeof(m->uid), "%s", uid);
    m->arrived = false;
    b->expected = b->n;
    return GX_OK;
}

enum gx_err
gx_barrier_arrive(struct gx_gang_barrier *b, const char *uid)
{
    enum gx_err rc = gx_barrier_add(b, uid);

    if (rc == GX_OK) {
        b->m[member_at(b, uid)].arrived = true;
    }
    return rc;
}

enum gx_err
gx_barrier_plan(struct gx_gang_barrier *b, const struct gx_gang *g, const char *key,
                const char *uid, const struct gx_gang_barrier *failed, int64_t now_ms)
{
    enum gx_err rc = GX_OK;

    for (size_t i = 0; g != NULL && i < g->n && rc == GX_OK; i++) {
        if (g->e[i].expires_ms >= now_ms && strcmp(g->e[i].key, key) == 0) {
            rc = gx_barrier_add(b, g->e[i].uid);
        }
    }
    for (size_t i = 0; failed != NULL && i < failed->n && rc == GX_OK; i++) {
        rc = gx_barrier_add(b, failed->m[i].uid);
    }
    return rc == GX_OK ? gx_barrier_add(b, uid) : rc;
}

void
gx_barrier_release(struct gx_gang_barrier *b)
{
    free(b->m);
    b->m = NULL;
    b->n = b->cap = 0;
}
