/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases_cache.c - the Lease codec and the in-memory ledger as a cache of
 * the Leases: what a Lease decodes to, the body a write sends, and the one
 * way the cache takes a node's tenants (which notes the nodes whose Lease
 * may book a pod twice). No I/O: the rounds (leases_cas.c) and the watch
 * (leases.c) call it.
 */
#include "leases_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "kwrite.h"
#include "log.h"
#include "score.h"

void
gx_leases_name(const char *node, char *out, size_t n)
{
    size_t len = strlen(node);

    if (sizeof("gpu-extender-") - 1 + len <= GX_LEASE_NAME_MAX) {
        (void)snprintf(out, n, "gpu-extender-%s", node);
        return;
    }
    /* Too long for an object name: keep a prefix and make it unique with a hash. */
    (void)snprintf(out, n, "gpu-extender-%.200s-%016llx", node,
                   (unsigned long long)gx_hash(node, len));
}

/* Remember @node: its Lease may still book a pod the cache now places elsewhere. */
static void
suspect(struct gx_leases *ls, const char *node)
{
    for (size_t i = 0; i < ls->n_suspects; i++) {
        if (strcmp(ls->suspects[i], node) == 0) {
            return;
        }
    }
    if (ls->n_suspects < GX_ARRAY_LEN(ls->suspects) && strlen(node) < sizeof(ls->suspects[0])) {
        (void)snprintf(ls->suspects[ls->n_suspects++], sizeof(ls->suspects[0]), "%s", node);
    }
}

/*
 * A uid the cache places on another node moves; that node becomes a
 * suspect: its Lease may book the pod too (a write that timed out but
 * landed, two replicas racing), and only a reconcile of that Lease can
 * tell which booking is the pod's.
 */
void
gx_leases_cache_truth(struct gx_leases *ls, const char *node, const struct gx_tenant *t, size_t n,
                      const char *rv)
{
    struct gx_ledger *l = ls->ledger;

    for (size_t i = 0; i < n; i++) {
        const struct gx_ledger_node *held = gx_ledger_find_pod(l, t[i].uid);
        if (held != NULL && strcmp(held->node, node) != 0) {
            suspect(ls, held->node);
            (void)gx_ledger_release(l, t[i].uid);
        }
    }
    if (gx_ledger_set_node(l, node, t, n, rv) != GX_OK) {
        gx_warn("ledger lease holds inconsistent tenants, ignoring it", "node=%s", node);
    }
}

/* A bind in flight: the booking it made in the cache, shown until it ends. */
struct gx_lease_hold {
    char node[256];
    char uid[GX_UID_MAX];
    struct gx_tenant t[GX_MAX_PICK];
    size_t n;
    int64_t stamp;
};

/*
 * Try to show hold @x on top of @node's tenants @all[0..*n): kept when the
 * ledger takes it. One at a time, so a hold that clashes with the truth
 * (its bind will fail) hides no other: shown all or none, a watch event
 * that brought one clash hid every bind waiting on the node, and each
 * showed itself again at its Lease write.
 */
static void
show_one(struct gx_leases *ls, const char *node, const struct gx_lease_hold *x,
         struct gx_tenant *all, size_t *n, size_t cap, const char *rv)
{
    if (strcmp(x->node, node) != 0 || gx_ledger_find_pod(ls->ledger, x->uid) != NULL ||
        *n + x->n > cap) {
        return; /* booked already (the Lease has it), or elsewhere: the truth wins */
    }
    memcpy(&all[*n], x->t, x->n * sizeof(x->t[0]));
    if (gx_ledger_set_node(ls->ledger, node, all, *n + x->n, rv) == GX_OK) {
        *n += x->n;
    } else {
        gx_debug("bind in flight not shown: it clashes with the lease", "node=%s uid=%s", node,
                 x->uid);
    }
}

void
gx_leases_show_holds(struct gx_leases *ls, const char *node)
{
    const struct gx_ledger_node *e = gx_ledger_node(ls->ledger, node);
    struct gx_tenant all[256];
    char rv[64] = "";
    size_t n = 0;

    if (ls->n_holds == 0 || (e != NULL && e->n_tenants > GX_ARRAY_LEN(all))) {
        return;
    }
    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        all[n++] = e->tenants[i];
    }
    if (e != NULL && e->resource_version != NULL) {
        (void)snprintf(rv, sizeof(rv), "%s", e->resource_version);
    }
    for (size_t h = 0; h < ls->n_holds; h++) {
        show_one(ls, node, &ls->holds[h], all, &n, GX_ARRAY_LEN(all), rv[0] ? rv : NULL);
    }
}

void
gx_leases_cache_set(struct gx_leases *ls, const char *node, const struct gx_tenant *t, size_t n,
                    const char *rv)
{
    gx_leases_cache_truth(ls, node, t, n, rv);
    gx_leases_show_holds(ls, node);
}

void
gx_leases_hold(struct gx_leases *ls, const char *node, const char *uid)
{
    const struct gx_ledger_node *e = gx_ledger_node(ls->ledger, node);
    struct gx_lease_hold *x;

    if (e == NULL || strlen(node) >= sizeof(x->node) || strlen(uid) >= sizeof(x->uid)) {
        return;
    }
    /*
     * One hold per pod: a bind whose shown booking the cache dropped shows
     * it again, and gx_leases_unhold ends one hold. A second one outlived
     * its bind and showed the pod on that node for good (e2e_burst_faults:
     * the filter kept the node, the bind refused it, the pod stayed Pending).
     */
    gx_leases_unhold(ls, uid, true);
    if (ls->n_holds == ls->cap_holds) {
        size_t cap = ls->cap_holds ? ls->cap_holds * 2 : 64;
        struct gx_lease_hold *grown = realloc(ls->holds, cap * sizeof(*grown));
        if (grown == NULL) {
            return; /* not shown: the filter may admit a pod onto these cards, bind refuses it */
        }
        ls->holds = grown;
        ls->cap_holds = cap;
    }
    x = &ls->holds[ls->n_holds];
    memset(x, 0, sizeof(*x));
    (void)snprintf(x->node, sizeof(x->node), "%s", node);
    (void)snprintf(x->uid, sizeof(x->uid), "%s", uid);
    for (size_t i = 0; i < e->n_tenants && x->n < GX_MAX_PICK; i++) {
        if (strcmp(e->tenants[i].uid, uid) == 0) {
            x->t[x->n++] = e->tenants[i];
        }
    }
    x->stamp = gx_ledger_booking(ls->ledger, uid);
    if (x->n > 0) {
        ls->n_holds++;
    }
}

void
gx_leases_unhold(struct gx_leases *ls, const char *uid, bool booked)
{
    for (size_t h = 0; h < ls->n_holds; h++) {
        if (strcmp(ls->holds[h].uid, uid) == 0) {
            int64_t stamp = ls->holds[h].stamp;
            ls->holds[h] = ls->holds[--ls->n_holds];
            if (!booked) {
                (void)gx_ledger_release_booking(ls->ledger, uid, stamp);
            }
            return;
        }
    }
}

size_t
gx_leases_holds(const struct gx_leases *ls)
{
    return ls->n_holds;
}

void
gx_leases_holds_free(struct gx_leases *ls)
{
    free(ls->holds);
    ls->holds = NULL;
    ls->n_holds = ls->cap_holds = 0;
}

enum gx_err
gx_leases_cache_copy(const struct gx_ledger *l, const char *node, struct gx_tenant **t, size_t *n)
{
    const struct gx_ledger_node *e = gx_ledger_node(l, node);

    *t = NULL;
    *n = 0;
    if (e == NULL || e->n_tenants == 0) {
        return GX_OK;
    }
    *t = malloc(e->n_tenants * sizeof(**t));
    if (*t == NULL) {
        return GX_ENOMEM;
    }
    memcpy(*t, e->tenants, e->n_tenants * sizeof(**t));
    *n = e->n_tenants;
    return GX_OK;
}

enum gx_err
gx_leases_decode(const struct gx_lease *lease, char *rv, size_t rvlen, struct gx_tenant **t,
                 size_t *n, const char **node, struct gx_why *why)
{
    const char *ten = gx_kv_get(lease->annotations, lease->n_annotations, GX_LEASE_TENANTS);
    const char *v = lease->resource_version;

    if (v == NULL || v[0] == '\0' || strlen(v) >= rvlen) {
        gx_why_set(why, "lease without a usable metadata.resourceVersion");
        return GX_EPARSE;
    }
    if (ten != NULL) {
        enum gx_err rc = gx_ledger_node_decode(ten, strlen(ten), t, n, why);
        if (rc != GX_OK) {
            return rc;
        }
    } else {
        *t = NULL;
        *n = 0;
    }
    (void)snprintf(rv, rvlen, "%s", v);
    if (node != NULL) {
        *node = gx_kv_get(lease->annotations, lease->n_annotations, GX_LEASE_NODE);
    }
    return GX_OK;
}

enum gx_err
gx_leases_decode_json(const struct gx_leases *ls, const char *body, size_t len, char *rv,
                      size_t rvlen, struct gx_tenant **t, size_t *n, struct gx_why *why)
{
    struct gx_arena a;
    struct gx_lease lease;
    enum gx_err rc;

    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_lease(body, len, ls->cfg->max_json_depth > 0 ? ls->cfg->max_json_depth : 64,
                              &a, &lease, why);
    if (rc == GX_OK) {
        rc = gx_leases_decode(&lease, rv, rvlen, t, n, NULL, why);
    }
    gx_arena_release(&a);
    return rc;
}

enum gx_err
gx_leases_encode(const char *name, const char *namespace, const char *node, const char *rv,
                 const struct gx_ledger_node *e, struct gx_buf *out)
{
    struct gx_ledger_node empty = {0};
    struct gx_buf tenants;
    enum gx_err rc;

    gx_buf_init(&tenants, GX_LEASE_BODY_CAP);
    rc = gx_ledger_node_encode(e != NULL ? e : &empty, &tenants);
    if (rc == GX_OK) {
        struct gx_kv labels[] = {{GX_LEASE_LABEL, "true"},
                                 {"app.kubernetes.io/managed-by", "gpu-extender"}};
        struct gx_kv ann[] = {{GX_LEASE_NODE, node},
                              {GX_LEASE_TENANTS, tenants.data != NULL ? tenants.data : ""}};
        struct gx_kmeta m = {.name = name,
                             .namespace = namespace,
                             .resource_version = rv,
                             .labels = labels,
                             .n_labels = 2,
                             .annotations = ann,
                             .n_annotations = 2};

        rc = gx_kwrite_lease(out, &m, "gpu-extender");
    }
    gx_buf_release(&tenants);
    return rc;
}

size_t
gx_leases_take_suspects(struct gx_leases *ls, char (*out)[256], size_t max)
{
    size_t n = ls->n_suspects < max ? ls->n_suspects : max;

    memcpy(out, ls->suspects, n * sizeof(ls->suspects[0]));
    /* any left over stay for the next pass */
    memmove(ls->suspects, ls->suspects + n, (ls->n_suspects - n) * sizeof(ls->suspects[0]));
    ls->n_suspects -= n;
    return n;
}
