/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube.h - the Kubernetes API server source: list then watch nodes
 * (optionally by label selector) and the pods carrying the managed label,
 * over the async client, with resourceVersion tracking, bookmarks, relist
 * on 410 Gone, reconnect with backoff and jitter on dropped streams, and
 * caps on list and event sizes. Keeps the current node objects; reports
 * managed pods to its owner. Also offers authenticated one-shot requests
 * (Lease CAS, pod PATCH, Binding POST) for the ledger.
 *
 * Connection: cfg->kube_url with token/CA files, or in-cluster when
 * kube_url is NULL (KUBERNETES_SERVICE_HOST/PORT, the service-account
 * token re-read when the file changes, its CA bundle). Tokens are never
 * logged.
 */
#ifndef GX_KUBE_H
#define GX_KUBE_H

#include "config.h"
#include "httpc.h"
#include "kobj.h"

struct event_base;
struct gx_kube;

struct gx_kube_cbs {
    /** The node set changed (after a list, or a watch event). */
    void (*nodes_changed)(void *ctx);
    /** A managed pod was added, modified or deleted by a watch event. */
    void (*pod_event)(void *ctx, enum gx_watch_type type, const struct gx_pod *pod);
    /** A (re)list of managed pods completed: @pods is the complete set. */
    void (*pods_listed)(void *ctx, const struct gx_pod *pods, size_t n);
};

/**
 * Start listing and watching per @cfg (borrowed). @m is borrowed. Returns
 * NULL on ENOMEM, or with @why when the connection settings are unusable
 * (in-cluster variables missing, unreadable CA file).
 */
struct gx_kube *gx_kube_new(struct event_base *base, struct gx_httpc *http,
                            const struct gx_config *cfg, struct gx_upstats *st,
                            const struct gx_kube_cbs *cbs, void *ctx, struct gx_why *why);

/** Stop watches, cancel requests and free; NULL is a no-op. */
void gx_kube_free(struct gx_kube *k);

/** Use a new config (only the live keys take effect). */
void gx_kube_set_config(struct gx_kube *k, const struct gx_config *cfg);

/** True once the first node list has been applied. */
bool gx_kube_nodes_synced(const struct gx_kube *k);

/**
 * The current nodes as one array (*n entries), borrowed until the next
 * change of the node set (nodes_changed). Never a half-applied list.
 */
const struct gx_node_info *gx_kube_nodes(struct gx_kube *k, size_t *n);

/** Completed node and pod lists (first list included): for tests and metrics. */
uint64_t gx_kube_lists(const struct gx_kube *k);

/** Callbacks of a watch of gx_kube_watch_new, on the loop thread. */
struct gx_kube_watch_cbs {
    /**
     * A (re)list completed: @items is an array of @n objects of the watch's
     * kind (struct gx_lease, gx_rslice or gx_rclaim), borrowed for the call.
     */
    void (*listed)(void *ctx, const void *items, size_t n);
    /** One ADDED, MODIFIED or DELETED event; @ev is borrowed for the call. */
    void (*event)(void *ctx, const struct gx_watch_event *ev);
    /**
     * The list answered @status 404 (the server does not serve the
     * resource: an API group it lacks) or 403 (RBAC does not let us read
     * it). Called once per absence, not counted as an error; the list is
     * tried again every minute. May be NULL: then 404 is logged once and
     * 403 is an error like any other refusal.
     */
    void (*absent)(void *ctx, long status);
};

struct gx_kube_watch;

/**
 * List then watch the collection at @path ("/apis/coordination.k8s.io/v1/
 * namespaces/ns/leases") of @kind, optionally by @label_selector, with the
 * same resourceVersion, bookmark, 410 relist and backoff rules as the node
 * and pod watches. @name names it in logs. Strings are copied, @cbs too.
 * NULL on ENOMEM or bad arguments. Free it before @k.
 */
struct gx_kube_watch *gx_kube_watch_new(struct gx_kube *k, enum gx_kind kind, const char *name,
                                        const char *path, const char *label_selector,
                                        const struct gx_kube_watch_cbs *cbs, void *ctx);

/**
 * Filter watch @w also by @field_selector ("spec.nodeName!="), copied.
 * Call right after gx_kube_watch_new: the first list starts from the loop.
 * GX_ENOMEM.
 */
enum gx_err gx_kube_watch_set_fields(struct gx_kube_watch *w, const char *field_selector) GX_WUR;

/** Stop and free a watch (no more callbacks); NULL is a no-op. */
void gx_kube_watch_free(struct gx_kube_watch *w);

/**
 * List again (a resync) once the current transfer is out of the way, then
 * watch from the new list. A no-op while the resource is not served.
 */
void gx_kube_watch_relist(struct gx_kube_watch *w);

/**
 * The last resourceVersion @w saw, NULL before its first list; inside a
 * listed callback, the list's: what the list shows is as of that version.
 */
const char *gx_kube_watch_rv(const struct gx_kube_watch *w);

/**
 * Result of gx_kube_request. @body is borrowed for the call; with no answer
 * (@rc not GX_OK) it is the transport's error text, e.g. "Empty reply from
 * server", and @status is 0.
 */
typedef void (*gx_kube_done_cb)(void *ctx, enum gx_err rc, long status, const char *body,
                                size_t len);

/**
 * Send an authenticated request to the API server: @path starts with "/"
 * (e.g. "/api/v1/namespaces/ns/pods/p/binding"); @body may be NULL. The
 * timeout is cfg->kube_timeout_s unless @timeout_ms > 0. Returns a handle
 * for gx_kube_cancel, or NULL if it could not start (then @done is not
 * called). Requests still running at gx_kube_free are cancelled.
 */
struct gx_httpc_xfer *gx_kube_request(struct gx_kube *k, const char *method, const char *path,
                                      const char *body, size_t len, const char *content_type,
                                      long timeout_ms, gx_kube_done_cb done, void *ctx);

/**
 * Abort a request of gx_kube_request (its done callback is not called).
 * Use this rather than gx_httpc_cancel, which would leave kube's record
 * of the request behind. NULL is a no-op.
 */
void gx_kube_cancel(struct gx_kube *k, struct gx_httpc_xfer *x);

#endif
