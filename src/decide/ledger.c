/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger.c - per-node GPU tenancy bookkeeping: the entries, the pod UID
 * index and every change to them (add, bind, release, renew, expire,
 * replace from a Lease), each keeping the invariants of ledger.h. What a
 * card's tenants add up to is ledger_usage.c's; the Lease annotation codec
 * is ledger_codec.c's. No I/O.
 *
 * Node entries live in a strmap keyed by the entry's own heap copy of the
 * node name; entries are never removed (a node whose tenants are all gone
 * keeps an empty entry, so its Lease can be written back empty). A private
 * chained hash table maps each pod UID to the one node entry holding it, so
 * "is this uid on another node" and gx_ledger_find_pod cost O(1) plus the
 * tenants of one node.
 *
 * An exclusive tenant holds the whole card: no other tenant may sit on
 * that card. Card GX_CARD_ANY (-1) marks a shared tenant whose card the
 * NVIDIA device plugin picks (time-slicing replicas): it counts against the
 * node's slots, which the decision code checks, not against any one card.
 */
#include "ledger_int.h"
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

/* The node a pod UID is on; the map's key is @uid. */
struct uid_link {
    struct gx_ledger_node *node;
    char uid[GX_UID_MAX];
};

struct gx_ledger {
    struct gx_strmap nodes; /* name -> struct gx_ledger_node * (owned) */
    struct gx_strmap uids;  /* pod UID -> struct uid_link * (owned) */
    uint64_t version;       /* last value handed to an entry (gx_ledger_version) */
    /* changed[v % GX_LEDGER_CHANGES]: the entry given version v (entries live as long as @l) */
    const struct gx_ledger_node *changed[GX_LEDGER_CHANGES];
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
    l->changed[l->version % GX_LEDGER_CHANGES] = e;
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

uint64_t
gx_ledger_version(const struct gx_ledger *l)
{
    return l != NULL ? l->version : 0;
}

bool
gx_ledger_changed_since(const struct gx_ledger *l, uint64_t since,
                        void (*fn)(void *arg, const char *node), void *arg)
{
    uint64_t now = gx_ledger_version(l);

    if (since > now || now - since > GX_LEDGER_CHANGES) {
        return false;
    }
    for (uint64_t v = since + 1; v <= now; v++) {
        fn(arg, l->changed[v % GX_LEDGER_CHANGES]->node);
    }
    return true;
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
gx_ledger_card_usage(const struct gx_ledger *l, const char *node, int card, struct gx_card_usage *u)
{
    gx_ledger_entry_card_usage(l != NULL && node != NULL ? entry_get(l, node) : NULL, card, u);
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

const char *
gx_ledger_tenant_problem(const struct gx_tenant *t)
{
    if (uid_len(t->uid) == 0) {
        return "uid: empty or too long";
    }
    if (memchr(t->pod, '\0', sizeof(t->pod)) == NULL) {
        return "pod: too long";
    }
    if (t->card < GX_CARD_ANY || t->card > GX_LEDGER_MAX_CARD) {
        return "card: out of range";
    }
    if (t->card == GX_CARD_ANY && t->exclusive) {
        return "card: an exclusive tenant holds one card";
    }
    if (t->slices < 0 || t->slices > GX_LEDGER_MAX_SLICES || t->milli < 0 ||
        t->milli > GX_CARD_MILLI) {
        return "slices, milli: out of range";
    }
    if (t->exclusive && t->milli > 0) {
        return "milli: an exclusive tenant holds the whole card";
    }
    if (!t->exclusive && t->slices < 1 && t->milli < 1) {
        return "slices: a shared tenant holds at least one slice or milli";
    }
    if (t->memory_mib < 0 || t->memory_mib > GX_LEDGER_MAX_MIB || t->host_mem_mib < 0 ||
        t->host_mem_mib > GX_LEDGER_MAX_MIB || t->cpu_milli < 0 ||
        t->cpu_milli > GX_LEDGER_MAX_CPU) {
        return "memory_mib, host_mem_mib, cpu_milli: out of range";
    }
    if (!(t->util_pct == -1.0 || (t->util_pct >= 0.0 && t->util_pct <= 100.0))) {
        return "util_pct: out of range";
    }
    if (t->state != GX_TENANT_RESERVED && t->state != GX_TENANT_BOUND) {
        return "state: unknown";
    }
    return t->since_ms < 0 ? "since_ms: negative" : NULL;
}

bool
gx_ledger_tenant_valid(const struct gx_tenant *t)
{
    return gx_ledger_tenant_problem(t) == NULL;
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
        n > GX_LEDGER_MAX_TENANTS || (n_cards > 0 && slots_per_card == NULL)) {
        return GX_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!gx_ledger_tenant_valid(&t[i]) || strcmp(t[i].uid, t[0].uid) != 0) {
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
    if (e != NULL && e->n_tenants + n > GX_LEDGER_MAX_TENANTS) {
        return GX_ECONFLICT;
    }
    for (size_t i = 0; i < n; i++) {
        struct gx_card_usage u;
        if (t[i].card == GX_CARD_ANY) {
            continue;
        }
        gx_ledger_entry_card_usage(e, t[i].card, &u);
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

        if (!gx_ledger_tenant_valid(&t[i])) {
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
        n > GX_LEDGER_MAX_TENANTS) {
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

struct gx_ledger *
gx_ledger_scratch(const struct gx_ledger *l, const char *node)
{
    struct gx_ledger *scratch = gx_ledger_new();
    const struct gx_ledger_node *e = gx_ledger_node(l, node);

    if (scratch != NULL && gx_ledger_set_node(scratch, node, e != NULL ? e->tenants : NULL,
                                              e != NULL ? e->n_tenants : 0, NULL) != GX_OK) {
        gx_ledger_free(scratch);
        return NULL;
    }
    return scratch;
}
