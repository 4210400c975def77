/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger.c - per-node GPU tenancy bookkeeping and the Lease annotation codec.
 *
 * Node entries live in a strmap keyed by the entry's own heap copy of the
 * node name; entries are never removed (a node whose tenants are all gone
 * keeps an empty entry, so its Lease can be written back empty). A private
 * chained hash table maps each pod UID to the one node entry holding it, so
 * "is this uid on another node" and gx_ledger_find_pod cost O(1) plus the
 * tenants of one node. No I/O.
 *
 * An exclusive tenant holds the whole card: its slices field is not counted
 * in gx_card_usage.slices (shared slots only), and no other tenant may sit
 * on that card.
 *
 * Card GX_CARD_ANY (-1) marks a shared tenant whose card the NVIDIA device
 * plugin picks (time-slicing replicas): it counts against the node's slots,
 * which the decision code checks, not against any one card.
 *
 * Why one file: the bookings, their invariants and the Lease annotation
 * codec that must round-trip them exactly.
 */
#include "ledger.h"
#include "strmap.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tenants per node accepted by add, set_node and decode. */
#define LEDGER_MAX_TENANTS 1024
/* Highest card index accepted (cards per node are far fewer). */
#define LEDGER_MAX_CARD 1023
/* Slices one tenant may hold. */
#define LEDGER_MAX_SLICES 1024
/* Largest annotation decode accepts. */
#define LEDGER_MAX_JSON (1u << 20)
/* Largest CPU request of one pod, milli-CPU (a million cores). */
#define LEDGER_MAX_CPU (INT64_C(1) << 30)
/* Largest memory reservation (1 PiB in MiB). */
#define LEDGER_MAX_MIB (INT64_C(1) << 30)

/* The node a pod UID is on; the map's key is @uid. */
struct uid_link {
    struct gx_ledger_node *node;
    char uid[GX_UID_MAX];
};

struct gx_ledger {
    struct gx_strmap nodes; /* name -> struct gx_ledger_node * (owned) */
    struct gx_strmap uids;  /* pod UID -> struct uid_link * (owned) */
    uint64_t version;       /* last value handed to an entry (gx_ledger_version) */
};

/* Length of @uid if it is a valid NUL-terminated uid, else 0. */
static size_t
uid_len(const char *uid)
{
    const char *end = memchr(uid, '\0', GX_UID_MAX);

    if (end == NULL) {
        return 0;
    }
    return (size_t)(end - uid);
}

/* The index link of @uid or NULL. */
static struct uid_link *
uid_find(const struct gx_ledger *l, const char *uid)
{
    return gx_strmap_get(&l->uids, uid, strlen(uid));
}

/* Make room for @extra more uids, so that uid_insert cannot fail. GX_ENOMEM. */
static enum gx_err
uid_reserve(struct gx_ledger *l, size_t extra)
{
    return gx_strmap_reserve(&l->uids, extra);
}

/* Link @k into the index; uid_reserve must have made room. Cannot fail. */
static void
uid_insert(struct gx_ledger *l, struct uid_link *k)
{
    enum gx_err rc = gx_strmap_put(&l->uids, k->uid, strlen(k->uid), k);

    (void)rc; /* GX_OK: uid_reserve made room */
}

/* Unlink and free the index link of @uid, if any. */
static void
uid_remove(struct gx_ledger *l, const char *uid)
{
    free(gx_strmap_del(&l->uids, uid, strlen(uid)));
}

/* A new link for @uid pointing at @node; NULL on ENOMEM. */
static struct uid_link *
uid_link_new(const char *uid, struct gx_ledger_node *node)
{
    struct uid_link *k = calloc(1, sizeof(*k));

    if (k == NULL) {
        return NULL;
    }
    memcpy(k->uid, uid, strlen(uid) + 1);
    k->node = node;
    return k;
}

struct gx_ledger *
gx_ledger_new(void)
{
    struct gx_ledger *l = calloc(1, sizeof(*l));

    if (l == NULL) {
        return NULL;
    }
    gx_strmap_init(&l->nodes);
    gx_strmap_init(&l->uids);
    return l;
}

/* Free one node entry and everything it owns. */
static void
entry_free(struct gx_ledger_node *e)
{
    if (e == NULL) {
        return;
    }
    free(e->node);
    free(e->tenants);
    free(e->resource_version);
    free(e);
}

void
gx_ledger_free(struct gx_ledger *l)
{
    if (l == NULL) {
        return;
    }
    for (size_t i = 0; i < l->nodes.cap; i++) {
        if (l->nodes.slots[i].key != NULL) {
            entry_free(l->nodes.slots[i].value);
        }
    }
    gx_strmap_release(&l->nodes);
    for (size_t pos = 0;;) {
        void *k = gx_strmap_next(&l->uids, &pos, NULL, NULL);
        if (k == NULL) {
            break;
        }
        free(k);
    }
    gx_strmap_release(&l->uids);
    free(l);
}

/* Mutable entry of @node or NULL. */
static struct gx_ledger_node *
entry_get(const struct gx_ledger *l, const char *node)
{
    return gx_strmap_get(&l->nodes, node, strlen(node));
}

/* Record a change of @e: give it the next ledger version. Cannot fail. */
static void
entry_touch(struct gx_ledger *l, struct gx_ledger_node *e)
{
    e->version = ++l->version;
}

/* The entry of @node, created empty when missing. NULL on ENOMEM. */
static struct gx_ledger_node *
entry_get_or_create(struct gx_ledger *l, const char *node)
{
    struct gx_ledger_node *e = entry_get(l, node);
    size_t len = strlen(node);

    if (e != NULL) {
        return e;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return NULL;
    }
    e->node = gx_strndup(node, len);
    if (e->node == NULL || gx_strmap_put(&l->nodes, e->node, len, e) != GX_OK) {
        entry_free(e);
        return NULL;
    }
    entry_touch(l, e);
    return e;
}

/* Grow @e's tenant array to hold @extra more. GX_ENOMEM. */
static enum gx_err
entry_reserve(struct gx_ledger_node *e, size_t extra)
{
    size_t want = e->cap ? e->cap : 8;
    struct gx_tenant *nt;

    while (want < e->n_tenants + extra) {
        want *= 2;
    }
    if (want == e->cap) {
        return GX_OK;
    }
    nt = realloc(e->tenants, want * sizeof(*nt));
    if (nt == NULL) {
        return GX_ENOMEM;
    }
    e->tenants = nt;
    e->cap = want;
    return GX_OK;
}

/* Remove every tenant of @uid from @e; returns how many. */
static size_t
entry_remove_uid(struct gx_ledger_node *e, const char *uid)
{
    size_t w = 0, removed = 0;

    for (size_t r = 0; r < e->n_tenants; r++) {
        if (strcmp(e->tenants[r].uid, uid) == 0) {
            removed++;
            continue;
        }
        if (w != r) {
            e->tenants[w] = e->tenants[r];
        }
        w++;
    }
    e->n_tenants = w;
    return removed;
}

/* Usage of card @card computed from @e's tenants. */
static void
entry_card_usage(const struct gx_ledger_node *e, int card, struct gx_card_usage *u)
{
    memset(u, 0, sizeof(*u));
    if (e == NULL) {
        return;
    }
    for (size_t i = 0; i < e->n_tenants; i++) {
        const struct gx_tenant *t = &e->tenants[i];
        if (t->card != card) {
            continue;
        }
        u->tenants++;
        if (t->exclusive) {
            u->exclusive = true;
            continue;
        }
        if (t->milli > 0) {
            u->milli += t->milli;
        } else {
            u->slices += t->slices;
        }
        u->memory_mib += t->memory_mib;
        if (t->util_pct > 0) {
            u->util_pct += t->util_pct;
        }
    }
}

void
gx_ledger_entry_host(const struct gx_ledger_node *e, int64_t *cpu_milli, int64_t *mem_mib)
{
    int64_t c = e != NULL ? e->untracked_cpu_milli : 0, m = e != NULL ? e->untracked_mem_mib : 0;

    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        c += e->tenants[i].cpu_milli;
        m += e->tenants[i].host_mem_mib;
    }
    *cpu_milli = c;
    *mem_mib = m;
}

enum gx_err
gx_ledger_set_untracked(struct gx_ledger *l, const char *node, int64_t cpu_milli, int64_t mem_mib)
{
    struct gx_ledger_node *e;

    if (l == NULL || node == NULL || node[0] == '\0' || cpu_milli < 0 || mem_mib < 0) {
        return GX_EINVAL;
    }
    if ((e = entry_get_or_create(l, node)) == NULL) {
        return GX_ENOMEM;
    }
    if (e->untracked_cpu_milli != cpu_milli || e->untracked_mem_mib != mem_mib) {
        e->untracked_cpu_milli = cpu_milli;
        e->untracked_mem_mib = mem_mib;
        entry_touch(l, e);
    }
    return GX_OK;
}

int
gx_ledger_share_used(const struct gx_card_usage *u, int slots)
{
    int64_t sliced;

    if (slots < 1) {
        slots = 1;
    }
    sliced = ((int64_t)u->slices * GX_CARD_MILLI + slots - 1) / slots;
    return (int)(sliced + u->milli);
}

bool
gx_ledger_share_fits(const struct gx_card_usage *u, int slots, int slices, int milli)
{
    struct gx_card_usage after = *u;

    if (u->exclusive || slices < 0 || milli < 0) {
        return false;
    }
    after.slices += slices;
    after.milli += milli;
    return gx_ledger_share_used(&after, slots) <= GX_CARD_MILLI;
}

uint64_t
gx_ledger_version(const struct gx_ledger *l)
{
    return l != NULL ? l->version : 0;
}

const struct gx_ledger_node *
gx_ledger_node(const struct gx_ledger *l, const char *node)
{
    if (l == NULL || node == NULL) {
        return NULL;
    }
    return entry_get(l, node);
}

void
gx_ledger_entry_card_usage(const struct gx_ledger_node *e, int card, struct gx_card_usage *u)
{
    entry_card_usage(e, card, u);
}

void
gx_ledger_card_usage(const struct gx_ledger *l, const char *node, int card, struct gx_card_usage *u)
{
    entry_card_usage(l != NULL && node != NULL ? entry_get(l, node) : NULL, card, u);
}

const struct gx_ledger_node *
gx_ledger_find_pod(const struct gx_ledger *l, const char *uid)
{
    const struct uid_link *k;

    if (l == NULL || uid == NULL) {
        return NULL;
    }
    k = uid_find(l, uid);
    return k != NULL ? k->node : NULL;
}

/* True when the fields of @t are in range (the card bound is checked by callers). */
static bool
tenant_valid(const struct gx_tenant *t)
{
    if (uid_len(t->uid) == 0 || memchr(t->pod, '\0', sizeof(t->pod)) == NULL) {
        return false;
    }
    if (t->card < GX_CARD_ANY || t->card > LEDGER_MAX_CARD) {
        return false;
    }
    if (t->card == GX_CARD_ANY && t->exclusive) {
        return false;
    }
    if (t->slices < 0 || t->slices > LEDGER_MAX_SLICES || t->milli < 0 ||
        t->milli > GX_CARD_MILLI || (t->exclusive && t->milli > 0)) {
        return false;
    }
    if (!t->exclusive && t->slices < 1 && t->milli < 1) {
        return false;
    }
    if (t->memory_mib < 0 || t->memory_mib > LEDGER_MAX_MIB || t->host_mem_mib < 0 ||
        t->host_mem_mib > LEDGER_MAX_MIB || t->cpu_milli < 0 || t->cpu_milli > LEDGER_MAX_CPU) {
        return false;
    }
    if (!(t->util_pct == -1.0 || (t->util_pct >= 0.0 && t->util_pct <= 100.0))) {
        return false;
    }
    if (t->state != GX_TENANT_RESERVED && t->state != GX_TENANT_BOUND) {
        return false;
    }
    return t->since_ms >= 0;
}

/* True when @e already holds exactly the tenants @t[0..n) of their uid. */
static bool
entry_same_tenants(const struct gx_ledger_node *e, const struct gx_tenant *t, size_t n)
{
    size_t have = 0;

    for (size_t i = 0; i < e->n_tenants; i++) {
        if (strcmp(e->tenants[i].uid, t[0].uid) == 0) {
            have++;
        }
    }
    if (have != n) {
        return false;
    }
    for (size_t j = 0; j < n; j++) {
        bool found = false;
        for (size_t i = 0; i < e->n_tenants && !found; i++) {
            const struct gx_tenant *o = &e->tenants[i];
            found = strcmp(o->uid, t[j].uid) == 0 && o->card == t[j].card &&
                    o->exclusive == t[j].exclusive && o->slices == t[j].slices &&
                    o->milli == t[j].milli && o->memory_mib == t[j].memory_mib;
        }
        if (!found) {
            return false;
        }
    }
    return true;
}

enum gx_err
gx_ledger_add(struct gx_ledger *l, const char *node, const struct gx_tenant *t, size_t n,
              const int *slots_per_card, size_t n_cards)
{
    struct gx_ledger_node *e;
    struct uid_link *k = NULL;
    const struct uid_link *held;
    enum gx_err rc;

    if (l == NULL || node == NULL || node[0] == '\0' || t == NULL || n == 0 ||
        n > LEDGER_MAX_TENANTS || (n_cards > 0 && slots_per_card == NULL)) {
        return GX_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!tenant_valid(&t[i]) || strcmp(t[i].uid, t[0].uid) != 0) {
            return GX_EINVAL;
        }
        if (t[i].card != GX_CARD_ANY && (size_t)t[i].card >= n_cards) {
            return GX_EINVAL;
        }
        for (size_t j = 0; j < i; j++) {
            if (t[j].card == t[i].card) {
                return GX_EINVAL;
            }
        }
    }
    held = uid_find(l, t[0].uid);
    e = entry_get(l, node);
    if (held != NULL) {
        if (held->node != e) {
            return GX_ECONFLICT;
        }
        return entry_same_tenants(e, t, n) ? GX_OK : GX_ECONFLICT;
    }
    if (e != NULL && e->n_tenants + n > LEDGER_MAX_TENANTS) {
        return GX_ECONFLICT;
    }
    for (size_t i = 0; i < n; i++) {
        struct gx_card_usage u;
        if (t[i].card == GX_CARD_ANY) {
            continue;
        }
        entry_card_usage(e, t[i].card, &u);
        if (t[i].exclusive && u.tenants > 0) {
            return GX_ECONFLICT;
        }
        if (!t[i].exclusive &&
            !gx_ledger_share_fits(&u, slots_per_card[t[i].card], t[i].milli > 0 ? 0 : t[i].slices,
                                  t[i].milli)) {
            return GX_ECONFLICT;
        }
    }
    /* Every allocation happens before the first visible change. */
    if ((rc = uid_reserve(l, 1)) != GX_OK) {
        return rc;
    }
    if ((e = entry_get_or_create(l, node)) == NULL) {
        return GX_ENOMEM;
    }
    if ((rc = entry_reserve(e, n)) != GX_OK) {
        return rc;
    }
    if ((k = uid_link_new(t[0].uid, e)) == NULL) {
        return GX_ENOMEM;
    }
    memcpy(&e->tenants[e->n_tenants], t, n * sizeof(*t));
    e->n_tenants += n;
    uid_insert(l, k);
    entry_touch(l, e);
    return GX_OK;
}

enum gx_err
gx_ledger_mark_bound(struct gx_ledger *l, const char *uid)
{
    struct uid_link *k;

    if (l == NULL || uid == NULL) {
        return GX_ENOTFOUND;
    }
    k = uid_find(l, uid);
    if (k == NULL) {
        return GX_ENOTFOUND;
    }
    for (size_t i = 0; i < k->node->n_tenants; i++) {
        if (strcmp(k->node->tenants[i].uid, uid) == 0) {
            k->node->tenants[i].state = GX_TENANT_BOUND;
        }
    }
    entry_touch(l, k->node);
    return GX_OK;
}

size_t
gx_ledger_release(struct gx_ledger *l, const char *uid)
{
    struct uid_link *k;
    size_t removed;

    if (l == NULL || uid == NULL) {
        return 0;
    }
    k = uid_find(l, uid);
    if (k == NULL) {
        return 0;
    }
    removed = entry_remove_uid(k->node, uid);
    entry_touch(l, k->node);
    uid_remove(l, uid); /* frees k */
    return removed;
}

int64_t
gx_ledger_booking(const struct gx_ledger *l, const char *uid)
{
    const struct uid_link *k = l != NULL && uid != NULL ? uid_find(l, uid) : NULL;
    int64_t stamp = GX_BOOKING_ANY;

    for (size_t i = 0; k != NULL && i < k->node->n_tenants; i++) {
        const struct gx_tenant *t = &k->node->tenants[i];
        if (strcmp(t->uid, uid) == 0 && t->since_ms > stamp) {
            stamp = t->since_ms;
        }
    }
    return stamp;
}

int64_t
gx_ledger_renew(struct gx_ledger *l, const char *uid, int64_t now_ms)
{
    int64_t old = gx_ledger_booking(l, uid);
    /* later than the old stamp even when the clock went back or another replica's is ahead */
    int64_t stamp = now_ms > old ? now_ms : old + 1;
    struct uid_link *k;

    if (old == GX_BOOKING_ANY) {
        return GX_BOOKING_ANY;
    }
    k = uid_find(l, uid);
    for (size_t i = 0; i < k->node->n_tenants; i++) {
        if (strcmp(k->node->tenants[i].uid, uid) == 0) {
            k->node->tenants[i].since_ms = stamp;
        }
    }
    entry_touch(l, k->node);
    return stamp;
}

size_t
gx_ledger_release_booking(struct gx_ledger *l, const char *uid, int64_t booking)
{
    if (booking != GX_BOOKING_ANY && gx_ledger_booking(l, uid) != booking) {
        return 0;
    }
    return gx_ledger_release(l, uid);
}

size_t
gx_ledger_expire(struct gx_ledger *l, int64_t now_ms, int64_t ttl_ms)
{
    size_t removed = 0;

    if (l == NULL) {
        return 0;
    }
    for (size_t s = 0; s < l->nodes.cap; s++) {
        struct gx_ledger_node *e = l->nodes.slots[s].value;
        size_t i = 0;

        if (l->nodes.slots[s].key == NULL) {
            continue;
        }
        while (i < e->n_tenants) {
            const struct gx_tenant *t = &e->tenants[i];
            char uid[GX_UID_MAX];

            if (t->state != GX_TENANT_RESERVED || now_ms - t->since_ms <= ttl_ms) {
                i++;
                continue;
            }
            /* A pod's reservation goes as a whole; earlier tenants may move. */
            memcpy(uid, t->uid, sizeof(uid));
            removed += entry_remove_uid(e, uid);
            uid_remove(l, uid);
            entry_touch(l, e);
            i = 0;
        }
    }
    return removed;
}

/* True when @uid occurs in @t[0..i). */
static bool
uid_seen_before(const struct gx_tenant *t, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (strcmp(t[j].uid, t[i].uid) == 0) {
            return true;
        }
    }
    return false;
}

/* Check a whole replacement tenant set for @e: GX_EINVAL or GX_ECONFLICT. */
static enum gx_err
set_node_check(const struct gx_ledger *l, const struct gx_ledger_node *e, const struct gx_tenant *t,
               size_t n, size_t *n_new_uids)
{
    size_t fresh = 0;

    for (size_t i = 0; i < n; i++) {
        const struct uid_link *k;

        if (!tenant_valid(&t[i])) {
            return GX_EINVAL;
        }
        for (size_t j = 0; j < i; j++) {
            if (t[j].card != t[i].card) {
                continue;
            }
            if (strcmp(t[j].uid, t[i].uid) == 0) {
                return GX_EINVAL;
            }
            if (t[j].exclusive || t[i].exclusive) {
                return GX_ECONFLICT;
            }
        }
        if (uid_seen_before(t, i)) {
            continue;
        }
        k = uid_find(l, t[i].uid);
        if (k != NULL && (e == NULL || k->node != e)) {
            return GX_ECONFLICT;
        }
        fresh++;
    }
    *n_new_uids = fresh;
    return GX_OK;
}

enum gx_err
gx_ledger_set_node(struct gx_ledger *l, const char *node, const struct gx_tenant *t, size_t n,
                   const char *resource_version)
{
    struct gx_ledger_node *e;
    struct gx_tenant *copy = NULL;
    struct uid_link **links = NULL;
    char *rv = NULL;
    size_t n_uids = 0, li = 0;
    enum gx_err rc;

    if (l == NULL || node == NULL || node[0] == '\0' || (n > 0 && t == NULL) ||
        n > LEDGER_MAX_TENANTS) {
        return GX_EINVAL;
    }
    e = entry_get(l, node);
    if ((rc = set_node_check(l, e, t, n, &n_uids)) != GX_OK) {
        return rc;
    }
    rc = GX_ENOMEM;
    if (n > 0 && (copy = malloc(n * sizeof(*copy))) == NULL) {
        goto out;
    }
    if (n > 0 && (links = calloc(n, sizeof(struct uid_link *))) == NULL) {
        goto out;
    }
    if (resource_version != NULL &&
        (rv = gx_strndup(resource_version, strlen(resource_version))) == NULL) {
        goto out;
    }
    if ((e = entry_get_or_create(l, node)) == NULL) {
        goto out;
    }
    for (size_t i = 0; links != NULL && i < n; i++) {
        if (uid_seen_before(t, i)) {
            continue;
        }
        if ((links[li++] = uid_link_new(t[i].uid, e)) == NULL) {
            goto out;
        }
    }
    if ((rc = uid_reserve(l, n_uids)) != GX_OK) {
        goto out;
    }
    /* Commit: drop the old uids, then index the new ones. */
    for (size_t i = 0; i < e->n_tenants; i++) {
        uid_remove(l, e->tenants[i].uid);
    }
    for (size_t i = 0; i < li; i++) {
        uid_insert(l, links[i]);
    }
    if (n > 0) {
        memcpy(copy, t, n * sizeof(*copy));
    }
    free(e->tenants);
    e->tenants = copy;
    e->n_tenants = n;
    e->cap = n;
    free(e->resource_version);
    e->resource_version = rv;
    entry_touch(l, e);
    copy = NULL;
    rv = NULL;
    li = 0;
    rc = GX_OK;
out:
    for (size_t i = 0; i < li; i++) {
        free(links[i]);
    }
    free(links);
    free(rv);
    free(copy);
    return rc;
}

void
gx_ledger_totals(const struct gx_ledger *l, int64_t *slices, int64_t *tenants)
{
    int64_t s = 0, n = 0;

    for (size_t i = 0; l != NULL && i < l->nodes.cap; i++) {
        const struct gx_ledger_node *e = l->nodes.slots[i].value;
        if (l->nodes.slots[i].key == NULL) {
            continue;
        }
        for (size_t j = 0; j < e->n_tenants; j++) {
            if (!e->tenants[j].exclusive) {
                s += e->tenants[j].slices;
            }
        }
        n += (int64_t)e->n_tenants;
    }
    if (slices != NULL) {
        *slices = s;
    }
    if (tenants != NULL) {
        *tenants = n;
    }
}

void
gx_ledger_each(const struct gx_ledger *l, void (*cb)(void *ctx, const struct gx_ledger_node *n),
               void *ctx)
{
    if (l == NULL || cb == NULL) {
        return;
    }
    for (size_t i = 0; i < l->nodes.cap; i++) {
        if (l->nodes.slots[i].key != NULL) {
            cb(ctx, l->nodes.slots[i].value);
        }
    }
}

/* Add one tenant object to the array @arr. GX_ENOMEM. */
static enum gx_err
encode_tenant(cJSON *arr, const struct gx_tenant *t)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL) {
        return GX_ENOMEM;
    }
    if (!cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        return GX_ENOMEM;
    }
    if (cJSON_AddStringToObject(o, "uid", t->uid) == NULL ||
        cJSON_AddStringToObject(o, "pod", t->pod) == NULL ||
        cJSON_AddNumberToObject(o, "card", t->card) == NULL ||
        cJSON_AddBoolToObject(o, "exclusive", t->exclusive) == NULL ||
        cJSON_AddNumberToObject(o, "slices", t->slices) == NULL ||
        (t->milli > 0 && cJSON_AddNumberToObject(o, "milli", t->milli) == NULL) ||
        (t->cpu_milli > 0 &&
         cJSON_AddNumberToObject(o, "cpu_milli", (double)t->cpu_milli) == NULL) ||
        (t->host_mem_mib > 0 &&
         cJSON_AddNumberToObject(o, "host_mem_mib", (double)t->host_mem_mib) == NULL) ||
        cJSON_AddNumberToObject(o, "memory_mib", (double)t->memory_mib) == NULL ||
        cJSON_AddNumberToObject(o, "util_pct", t->util_pct) == NULL ||
        cJSON_AddStringToObject(o, "state", t->state == GX_TENANT_BOUND ? "bound" : "reserved") ==
            NULL ||
        cJSON_AddNumberToObject(o, "since_ms", (double)t->since_ms) == NULL) {
        return GX_ENOMEM;
    }
    return GX_OK;
}

enum gx_err
gx_ledger_node_encode(const struct gx_ledger_node *n, struct gx_buf *out)
{
    cJSON *root = NULL, *arr;
    char *text = NULL;
    enum gx_err rc = GX_ENOMEM;

    if (n == NULL || out == NULL) {
        return GX_EINVAL;
    }
    for (size_t i = 0; i < n->n_tenants; i++) {
        if (!tenant_valid(&n->tenants[i])) {
            return GX_EINVAL;
        }
    }
    if ((root = cJSON_CreateObject()) == NULL) {
        goto out;
    }
    if (cJSON_AddNumberToObject(root, "v", 1) == NULL ||
        (arr = cJSON_AddArrayToObject(root, "tenants")) == NULL) {
        goto out;
    }
    for (size_t i = 0; i < n->n_tenants; i++) {
        if ((rc = encode_tenant(arr, &n->tenants[i])) != GX_OK) {
            goto out;
        }
    }
    rc = GX_ENOMEM;
    if ((text = cJSON_PrintUnformatted(root)) == NULL) {
        goto out;
    }
    rc = gx_buf_adds(out, text);
out:
    cJSON_free(text);
    cJSON_Delete(root);
    return rc;
}

/* The integer value of number @item if it is integral and in [lo, hi]. */
static bool
json_int(const cJSON *item, int64_t lo, int64_t hi, int64_t *v)
{
    double d;

    if (!cJSON_IsNumber(item)) {
        return false;
    }
    d = item->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi) {
        return false;
    }
    *v = (int64_t)d;
    return true;
}

/* Decode one tenant object into @t; fills @why on failure. */
static enum gx_err
decode_tenant(const cJSON *o, struct gx_tenant *t, struct gx_why *why)
{
    enum {
        F_UID,
        F_POD,
        F_CARD,
        F_EXCL,
        F_SLICES,
        F_MEM,
        F_UTIL,
        F_STATE,
        F_SINCE,
        F_MILLI,
        F_CPU,
        F_HMEM,
        F_N
    };
    static const char *const names[F_N] = {"uid",      "pod",        "card",      "exclusive",
                                           "slices",   "memory_mib", "util_pct",  "state",
                                           "since_ms", "milli",      "cpu_milli", "host_mem_mib"};
    bool seen[F_N] = {false};
    const cJSON *c;
    int64_t v = 0;

    if (!cJSON_IsObject(o)) {
        gx_why_set(why, "must be an object");
        return GX_EPARSE;
    }
    memset(t, 0, sizeof(*t));
    cJSON_ArrayForEach(c, o)
    {
        int f;
        bool ok = false;

        for (f = 0; f < F_N; f++) {
            if (strcmp(c->string, names[f]) == 0) {
                break;
            }
        }
        if (f == F_N) {
            continue; /* newer writers may add fields */
        }
        if (seen[f]) {
            gx_why_set(why, "%s: duplicate key", names[f]);
            return GX_EPARSE;
        }
        seen[f] = true;
        switch (f) {
        case F_UID:
            ok = cJSON_IsString(c) && c->valuestring[0] != '\0' &&
                 strlen(c->valuestring) < sizeof(t->uid);
            if (ok) {
                memcpy(t->uid, c->valuestring, strlen(c->valuestring) + 1);
            }
            break;
        case F_POD:
            ok = cJSON_IsString(c) && strlen(c->valuestring) < sizeof(t->pod);
            if (ok) {
                memcpy(t->pod, c->valuestring, strlen(c->valuestring) + 1);
            }
            break;
        case F_CARD:
            ok = json_int(c, GX_CARD_ANY, LEDGER_MAX_CARD, &v);
            t->card = (int)v;
            break;
        case F_EXCL:
            ok = cJSON_IsBool(c);
            t->exclusive = cJSON_IsTrue(c);
            break;
        case F_SLICES:
            ok = json_int(c, 0, LEDGER_MAX_SLICES, &v);
            t->slices = (int)v;
            break;
        case F_MEM:
            ok = json_int(c, 0, LEDGER_MAX_MIB, &v);
            t->memory_mib = v;
            break;
        case F_UTIL:
            ok = cJSON_IsNumber(c) &&
                 (c->valuedouble == -1.0 || (c->valuedouble >= 0.0 && c->valuedouble <= 100.0));
            t->util_pct = c->valuedouble;
            break;
        case F_STATE:
            ok = cJSON_IsString(c) &&
                 (strcmp(c->valuestring, "bound") == 0 || strcmp(c->valuestring, "reserved") == 0);
            t->state = ok && c->valuestring[0] == 'b' ? GX_TENANT_BOUND : GX_TENANT_RESERVED;
            break;
        case F_SINCE:
            ok = json_int(c, 0, INT64_C(1) << 53, &v);
            t->since_ms = v;
            break;
        case F_MILLI:
            ok = json_int(c, 1, GX_CARD_MILLI, &v);
            t->milli = (int)v;
            break;
        case F_CPU:
            ok = json_int(c, 0, LEDGER_MAX_CPU, &v);
            t->cpu_milli = v;
            break;
        case F_HMEM:
            ok = json_int(c, 0, LEDGER_MAX_MIB, &v);
            t->host_mem_mib = v;
            break;
        default:
            break;
        }
        if (!ok) {
            gx_why_set(why, "%s: wrong type or out of range", names[f]);
            return GX_EPARSE;
        }
    }
    /* milli and the host requests are optional: older Leases lack them */
    for (int f = 0; f < F_MILLI; f++) {
        if (!seen[f]) {
            gx_why_set(why, "%s: missing", names[f]);
            return GX_EPARSE;
        }
    }
    if (!t->exclusive && t->slices < 1 && t->milli < 1) {
        gx_why_set(why, "slices: a shared tenant holds at least one slice or milli");
        return GX_EPARSE;
    }
    if (t->exclusive && t->milli > 0) {
        gx_why_set(why, "milli: an exclusive tenant holds the whole card");
        return GX_EPARSE;
    }
    return GX_OK;
}

enum gx_err
gx_ledger_node_decode(const char *json, size_t len, struct gx_tenant **t, size_t *n,
                      struct gx_why *why)
{
    cJSON *root = NULL;
    const cJSON *ver, *arr, *item;
    const char *end = NULL;
    struct gx_tenant *list = NULL;
    size_t count = 0, i = 0;
    enum gx_err rc = GX_EPARSE;

    if (json == NULL || t == NULL || n == NULL) {
        gx_why_set(why, "no input");
        return GX_EINVAL;
    }
    if (len > LEDGER_MAX_JSON) {
        gx_why_set(why, "ledger annotation larger than %u bytes", LEDGER_MAX_JSON);
        return GX_ETOOBIG;
    }
    root = cJSON_ParseWithLengthOpts(json, len, &end, false);
    if (root == NULL) {
        gx_why_set(why, "malformed JSON");
        goto out;
    }
    for (; end != NULL && end < json + len; end++) {
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r' && *end != '\0') {
            gx_why_set(why, "trailing data after JSON");
            goto out;
        }
    }
    if (!cJSON_IsObject(root)) {
        gx_why_set(why, "must be an object");
        goto out;
    }
    ver = cJSON_GetObjectItemCaseSensitive(root, "v");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1.0) {
        gx_why_set(why, "v: must be 1");
        goto out;
    }
    arr = cJSON_GetObjectItemCaseSensitive(root, "tenants");
    if (!cJSON_IsArray(arr)) {
        gx_why_set(why, "tenants: must be an array");
        goto out;
    }
    cJSON_ArrayForEach(item, arr)
    {
        if (++count > LEDGER_MAX_TENANTS) {
            gx_why_set(why, "tenants: more than %d entries", LEDGER_MAX_TENANTS);
            goto out;
        }
    }
    if (count > 0 && (list = calloc(count, sizeof(*list))) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    cJSON_ArrayForEach(item, arr)
    {
        if ((rc = decode_tenant(item, &list[i], why)) != GX_OK) {
            gx_why_prefix(why, "tenants[%zu]", i);
            goto out;
        }
        i++;
    }
    *t = list;
    *n = count;
    list = NULL;
    rc = GX_OK;
out:
    free(list);
    cJSON_Delete(root);
    return rc;
}
