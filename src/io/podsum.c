/* SPDX-License-Identifier: Apache-2.0 */
/*
 * podsum.c - requests of the pods the extender does not manage, per node
 * (see podsum.h). One malloc per counted pod (its uid inline) and one per
 * node; a node's sum is freed once the ledger has its zero. Nodes whose sum
 * changed wait in a pending array that gx_podsum_apply drains; the array
 * has room for every node, so marking one pending cannot fail.
 */
#include "podsum.h"

#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "log.h"
#include "podreq.h"
#include "quantity.h"
#include "strmap.h"

/*
 * Bound and not finished: the server does not send the rest, and a pod that
 * finishes arrives as DELETED. counts() checks the same, for servers that
 * ignore a term.
 */
#define PODSUM_FIELDS "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"

/* Longest uid or node name kept (the API server's are 36 and 253). */
#define PODSUM_NAME_MAX 256

struct node_sum {
    int64_t cpu_milli, mem_bytes;
    size_t pods;
    bool pending;
    char name[];
};

struct pod_entry {
    struct node_sum *node;
    int64_t cpu_milli, mem_bytes;
    char uid[];
};

struct gx_podsum {
    struct gx_strmap pods;  /* uid -> struct pod_entry */
    struct gx_strmap nodes; /* name -> struct node_sum */
    struct node_sum **pending;
    size_t n_pending, cap_pending;
    int64_t cpu_milli, mem_bytes; /* totals */
    char *label;
    struct gx_podsum_cbs cbs;
    void *ctx;
    struct gx_kube_watch *w;
    bool listed, absent;
};

struct gx_podsum *
gx_podsum_new(const char *managed_label, const struct gx_podsum_cbs *cbs, void *ctx)
{
    struct gx_podsum *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    gx_strmap_init(&p->pods);
    gx_strmap_init(&p->nodes);
    if (cbs != NULL) {
        p->cbs = *cbs;
    }
    p->ctx = ctx;
    if (gx_podsum_set_label(p, managed_label) != GX_OK) {
        gx_podsum_free(p);
        return NULL;
    }
    return p;
}

/* Free every pod entry and empty the map. */
static void
pods_clear(struct gx_podsum *p)
{
    size_t pos = 0;
    void *v;

    while ((v = gx_strmap_next(&p->pods, &pos, NULL, NULL)) != NULL) {
        free(v);
    }
    gx_strmap_release(&p->pods);
    gx_strmap_init(&p->pods);
}

void
gx_podsum_free(struct gx_podsum *p)
{
    size_t pos = 0;
    void *v;

    if (p == NULL) {
        return;
    }
    gx_kube_watch_free(p->w);
    pods_clear(p);
    while ((v = gx_strmap_next(&p->nodes, &pos, NULL, NULL)) != NULL) {
        free(v);
    }
    gx_strmap_release(&p->nodes);
    free(p->pending);
    free(p->label);
    free(p);
}

enum gx_err
gx_podsum_set_label(struct gx_podsum *p, const char *managed_label)
{
    const char *l = managed_label != NULL ? managed_label : "";
    char *copy;

    if (p->label != NULL && strcmp(p->label, l) == 0) {
        return GX_OK;
    }
    if ((copy = gx_strndup(l, strlen(l))) == NULL) {
        return GX_ENOMEM;
    }
    free(p->label);
    p->label = copy;
    gx_kube_watch_relist(p->w); /* which pods count changed */
    return GX_OK;
}

/* True when @pod's requests belong in the sums (see podsum.h). */
static bool
counts(const struct gx_podsum *p, const struct gx_pod *pod)
{
    const char *managed = gx_kv_get(pod->labels, pod->n_labels, p->label);

    if (pod->node_name == NULL || pod->node_name[0] == '\0' ||
        strlen(pod->node_name) >= PODSUM_NAME_MAX || strcmp(pod->phase, "Succeeded") == 0 ||
        strcmp(pod->phase, "Failed") == 0 || (managed != NULL && strcmp(managed, "true") == 0)) {
        return false;
    }
    return p->cbs.is_tenant == NULL || !p->cbs.is_tenant(p->ctx, pod->uid);
}

static void
mark_pending(struct gx_podsum *p, struct node_sum *ns)
{
    if (!ns->pending) {
        ns->pending = true;
        p->pending[p->n_pending++] = ns; /* room made when @ns was created */
    }
}

/* The sum of node @name, created when missing (with room to mark it pending). NULL on ENOMEM. */
static struct node_sum *
node_get(struct gx_podsum *p, const char *name)
{
    size_t len = strlen(name);
    struct node_sum *ns = gx_strmap_get(&p->nodes, name, len);

    if (ns != NULL) {
        return ns;
    }
    if (p->cap_pending < p->nodes.count + 1) {
        size_t cap = p->cap_pending ? p->cap_pending * 2 : 64;
        struct node_sum **grown = realloc(p->pending, cap * sizeof(struct node_sum *));
        if (grown == NULL) {
            return NULL;
        }
        p->pending = grown;
        p->cap_pending = cap;
    }
    if ((ns = calloc(1, sizeof(*ns) + len + 1)) == NULL) {
        return NULL;
    }
    memcpy(ns->name, name, len + 1);
    if (gx_strmap_put(&p->nodes, ns->name, len, ns) != GX_OK) {
        free(ns);
        return NULL;
    }
    return ns;
}

/* Add (@sign 1) or take away (-1) entry @e's requests from its node and the totals. */
static void
account(struct gx_podsum *p, const struct pod_entry *e, int sign)
{
    e->node->cpu_milli += sign * e->cpu_milli;
    e->node->mem_bytes += sign * e->mem_bytes;
    e->node->pods = sign > 0 ? e->node->pods + 1 : e->node->pods - 1;
    p->cpu_milli += sign * e->cpu_milli;
    p->mem_bytes += sign * e->mem_bytes;
    mark_pending(p, e->node);
}

/* Count @pod (it counts, see counts()). GX_ENOMEM. */
static enum gx_err
add_pod(struct gx_podsum *p, const struct gx_pod *pod, size_t uid_len)
{
    struct node_sum *ns = node_get(p, pod->node_name);
    struct pod_entry *e;
    int64_t cpu, mem;

    if (ns == NULL || (e = malloc(sizeof(*e) + uid_len + 1)) == NULL) {
        return GX_ENOMEM;
    }
    memcpy(e->uid, pod->uid, uid_len + 1);
    gx_podreq_host(pod, &cpu, &mem);
    /* a sum of many near-INT64_MAX requests must not overflow */
    e->cpu_milli = cpu < INT64_MAX / 4096 ? cpu : INT64_MAX / 4096;
    e->mem_bytes = mem < INT64_MAX / 4096 ? mem : INT64_MAX / 4096;
    e->node = ns;
    if (gx_strmap_put(&p->pods, e->uid, uid_len, e) != GX_OK) {
        free(e);
        return GX_ENOMEM;
    }
    account(p, e, 1);
    return GX_OK;
}

static void
notify(struct gx_podsum *p)
{
    if (p->n_pending > 0 && p->cbs.changed != NULL) {
        p->cbs.changed(p->ctx);
    }
}

/* gx_podsum_put without the notification. */
static enum gx_err
put_one(struct gx_podsum *p, const struct gx_pod *pod, bool deleted)
{
    size_t len = strlen(pod->uid);
    struct pod_entry *old;

    if (len == 0 || len >= PODSUM_NAME_MAX) {
        return GX_OK; /* nothing a later delete could name */
    }
    if ((old = gx_strmap_del(&p->pods, pod->uid, len)) != NULL) {
        account(p, old, -1);
        free(old);
    }
    return deleted || !counts(p, pod) ? GX_OK : add_pod(p, pod, len);
}

enum gx_err
gx_podsum_put(struct gx_podsum *p, const struct gx_pod *pod, bool deleted)
{
    enum gx_err rc = put_one(p, pod, deleted);

    notify(p);
    return rc;
}

enum gx_err
gx_podsum_set(struct gx_podsum *p, const struct gx_pod *pods, size_t n)
{
    size_t pos = 0;
    struct node_sum *ns;
    enum gx_err rc = GX_OK;

    pods_clear(p);
    while ((ns = gx_strmap_next(&p->nodes, &pos, NULL, NULL)) != NULL) {
        ns->cpu_milli = ns->mem_bytes = 0;
        ns->pods = 0;
        mark_pending(p, ns); /* a node the list no longer has goes back to zero */
    }
    p->cpu_milli = p->mem_bytes = 0;
    for (size_t i = 0; i < n && rc == GX_OK; i++) {
        rc = put_one(p, &pods[i], false);
    }
    p->listed = true;
    notify(p);
    return rc;
}

bool
gx_podsum_node(const struct gx_podsum *p, const char *node, int64_t *cpu_milli, int64_t *mem_bytes)
{
    const struct node_sum *ns = gx_strmap_get(&p->nodes, node, strlen(node));

    *cpu_milli = ns != NULL ? ns->cpu_milli : 0;
    *mem_bytes = ns != NULL ? ns->mem_bytes : 0;
    return ns != NULL && ns->pods > 0;
}

void
gx_podsum_totals(const struct gx_podsum *p, size_t *pods, int64_t *cpu_milli, int64_t *mem_bytes)
{
    *pods = p != NULL ? p->pods.count : 0;
    *cpu_milli = p != NULL ? p->cpu_milli : 0;
    *mem_bytes = p != NULL ? p->mem_bytes : 0;
}

enum gx_err
gx_podsum_apply(struct gx_podsum *p, struct gx_ledger *l)
{
    size_t kept = 0;
    enum gx_err rc = GX_OK;

    for (size_t i = 0; i < p->n_pending; i++) {
        struct node_sum *ns = p->pending[i];
        if (gx_ledger_set_untracked(l, ns->name, ns->cpu_milli,
                                    gx_quantity_mib_of(ns->mem_bytes)) != GX_OK) {
            p->pending[kept++] = ns;
            rc = GX_ENOMEM;
            continue;
        }
        ns->pending = false;
        if (ns->pods == 0) {
            (void)gx_strmap_del(&p->nodes, ns->name, strlen(ns->name));
            free(ns);
        }
    }
    p->n_pending = kept;
    return rc;
}

bool
gx_podsum_synced(const struct gx_podsum *p)
{
    return p->listed || p->absent;
}

/* ---- the watch ---- */

static void
warn_nomem(struct gx_podsum *p)
{
    gx_warn("out of memory counting pods the extender does not manage, relisting", NULL);
    gx_kube_watch_relist(p->w);
}

static void
pods_listed(void *ctx, const void *items, size_t n)
{
    struct gx_podsum *p = ctx;
    bool first = !p->listed;

    p->absent = false;
    if (gx_podsum_set(p, items, n) != GX_OK) {
        warn_nomem(p);
    } else if (first) {
        gx_info("all bound pods listed", "pods=%zu counted=%zu", n, p->pods.count);
    }
}

static void
pod_event(void *ctx, const struct gx_watch_event *ev)
{
    struct gx_podsum *p = ctx;

    if (gx_podsum_put(p, &ev->obj.pod, ev->type == GX_WATCH_DELETED) != GX_OK) {
        warn_nomem(p);
    }
}

static void
absent_cb(void *ctx, long status)
{
    struct gx_podsum *p = ctx;

    if (!p->absent) {
        gx_warn("cannot list all pods, CPU and memory of pods the extender does not manage are "
                "not seen (grant list/watch on pods, see manifests/extender/02-rbac.yaml, or set "
                "kubernetes.watch_all_pods to false)",
                "status=%ld", status);
        /* no stale sums from before the refusal: the ledger goes back to zero */
        if (gx_podsum_set(p, NULL, 0) != GX_OK) {
            warn_nomem(p);
        }
        p->listed = false;
    }
    p->absent = true;
}

enum gx_err
gx_podsum_watch(struct gx_podsum *p, struct gx_kube *k)
{
    static const struct gx_kube_watch_cbs cbs = {pods_listed, pod_event, absent_cb};

    p->w = gx_kube_watch_new(k, GX_KIND_POD, "all-pods", "/api/v1/pods", NULL, &cbs, p);
    if (p->w == NULL || gx_kube_watch_set_fields(p->w, PODSUM_FIELDS) != GX_OK) {
        return GX_ENOMEM;
    }
    return GX_OK;
}
