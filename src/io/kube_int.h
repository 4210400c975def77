/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube_int.h - what the files of the kube module share, and the internals
 * tests/test_kube.c reads. Never included by another module.
 *
 * The module is four files, each calling only those below it:
 *   kube.c            gx_kube_new/free/set_config: wires the three below
 *   kube_reflector.c  list+watch streams: resourceVersion, relist on 410
 *                     Gone, backoff; the owners' watches (gx_kube_watch_*)
 *   kube_nodes.c      the node store the node stream fills (gx_kube_nodes)
 *   kube_client.c     connection, token rotation, auth, error accounting,
 *                     one-shot requests (gx_kube_request)
 * struct gx_kube is one struct for all of them; each field names the file
 * that writes it.
 */
#ifndef GX_KUBE_INT_H
#define GX_KUBE_INT_H

#include <sys/queue.h>
#include <sys/stat.h>

#include "buf.h"
#include "kube.h"
#include "lines.h"
#include "store.h"

/** First reconnect delay, its ceiling, and the jitter (percent either side). */
#define GX_KUBE_BACKOFF_START_MS 200
#define GX_KUBE_BACKOFF_MAX_MS 30000
#define GX_KUBE_JITTER_PCT 20

/** Cap of a request URL (base URL, path, selectors). */
#define GX_KUBE_URL_MAX (64u << 10)

/** Where a stream is: between transfers, waiting on its timer, listing, watching. */
enum gx_kube_state { GX_KUBE_IDLE, GX_KUBE_WAIT, GX_KUBE_LIST, GX_KUBE_WATCH };

/** One list+watch of a collection (kube_reflector.c). */
struct gx_kube_stream {
    struct gx_kube *k;
    struct gx_kube_watch *w; /* the owner's watch, NULL for nodes and pods */
    enum gx_kind kind;
    const char *name; /* "nodes", "pods", ...: log text */
    char *path;       /* of the collection: "/api/v1/nodes" */
    enum gx_kube_state state;
    bool relist;      /* the next start is a list (else a watch) */
    bool want_relist; /* relist once the current transfer is out of the way */
    struct gx_httpc_xfer *xfer;
    struct event *timer;
    struct event *defer;
    struct gx_buf inbox; /* received watch bytes not yet split */
    struct gx_lines lines;
    char *rv;            /* last resourceVersion seen, NULL before a list */
    char *selector;      /* label selector of the applied list, NULL: none */
    char *list_selector; /* selector of the list in flight */
    int64_t backoff_ms;
    int64_t watch_start_ms;
    uint64_t watch_events;
    bool changed; /* nodes changed while processing the inbox */
};

/** A watch of another kind for an owner (gx_kube_watch_new, kube_reflector.c). */
struct gx_kube_watch {
    struct gx_kube_stream s;
    char *name;
    char *selector; /* fixed label selector, NULL: none */
    char *fields;   /* fixed field selector, NULL: none */
    struct gx_kube_watch_cbs cbs;
    void *ctx;
    bool absent; /* the last list answered 404 (logged once) */
    LIST_ENTRY(gx_kube_watch) link;
};

/** The current nodes (kube_nodes.c). */
struct gx_kube_node_store {
    struct gx_store nodes;    /* name -> entry; synced with the first node list */
    struct gx_node_info *arr; /* gx_kube_nodes' sorted array */
    size_t n_arr;
    bool arr_dirty; /* @nodes changed since @arr was built */
};

struct gx_kube_req;

struct gx_kube {
    /* kube.c */
    struct event_base *base;
    struct gx_httpc *http;
    const struct gx_config *cfg;
    struct gx_upstats *st;
    struct gx_kube_cbs cbs;
    void *ctx;

    /* kube_client.c: connection, bearer token cache, one-shot requests */
    char *base_url;
    bool in_cluster;
    char *token;
    char *token_path;
    struct stat token_st; /* the token file when last read: re-read when it changes */
    bool token_warned;
    LIST_HEAD(gx_kube_req_list, gx_kube_req) reqs;

    /* kube_reflector.c */
    struct gx_kube_stream nodes, pods;
    LIST_HEAD(gx_kube_watch_list, gx_kube_watch) watches;
    uint64_t lists;
    uint64_t rng;

    /* kube_nodes.c */
    struct gx_kube_node_store store;
};

/* ---- the config's limits, with their defaults ---- */

/** Deepest JSON nesting a list or event may have. */
static inline int
gx_kube_max_depth(const struct gx_kube *k)
{
    return k->cfg->max_json_depth > 0 ? k->cfg->max_json_depth : 64;
}

/** Timeout of a list or one-shot request. */
static inline long
gx_kube_request_timeout_ms(const struct gx_kube *k)
{
    return (long)(k->cfg->kube_timeout_s > 0 ? k->cfg->kube_timeout_s : 10) * 1000;
}

/** Largest list (or one-shot answer) body. */
static inline size_t
gx_kube_max_list_bytes(const struct gx_kube *k)
{
    return k->cfg->kube_max_list_bytes > 0 ? k->cfg->kube_max_list_bytes : (size_t)1 << 30;
}

/* ---- kube_client.c ---- */

/**
 * Find the API server (cfg->kube_url, or in-cluster from the environment)
 * and check that its CA file can be read. GX_EINVAL with @why when the
 * settings are unusable, GX_ENOMEM.
 */
enum gx_err gx_kube_conn_init(struct gx_kube *k, struct gx_why *why) GX_WUR;

/** Log the connection in use and read the token the first time. */
void gx_kube_conn_start(struct gx_kube *k);

/** Cancel the one-shot requests still running and free the connection state. */
void gx_kube_conn_release(struct gx_kube *k);

/** Fill @auth for one request; the token is borrowed from @k until the next call. */
void gx_kube_fill_auth(struct gx_kube *k, struct gx_httpc_auth *auth);

/** Count one failure of @kind against the API server. */
void gx_kube_count_error(struct gx_kube *k, enum gx_upkind kind);

/** Note that the API server answered well just now. */
void gx_kube_mark_success(struct gx_kube *k);

/** Replace *@slot (heap) with a copy of @s (NULL or "" clear it). False on ENOMEM (unchanged). */
bool gx_kube_set_str(char **slot, const char *s);

/** The API server base URL in use ("https://10.0.0.1:443"), borrowed. */
const char *gx_kube_base_url(const struct gx_kube *k);

/* ---- kube_nodes.c ---- */

/** Start an empty node store, not synced. Cannot fail. */
void gx_kube_node_store_init(struct gx_kube_node_store *ns);

/** Free every node and the array. */
void gx_kube_node_store_release(struct gx_kube_node_store *ns);

/**
 * Decode a NodeList (@max_depth deep at most) and, only when all of it
 * decoded and fit, make it the whole node set; the store is synced from
 * then on. *@rv receives a heap copy of the list's resourceVersion (yours).
 * GX_EPARSE with @why, GX_ENOMEM: the store is unchanged.
 */
enum gx_err gx_kube_node_store_list(struct gx_kube_node_store *ns, const char *body, size_t len,
                                    int max_depth, char **rv, struct gx_why *why) GX_WUR;

/**
 * Apply one ADDED, MODIFIED or DELETED node event decoded into arena @a,
 * which the store takes in every case. GX_ENOTFOUND: nothing changed (a
 * delete of a node it does not have, or an update gx_node_info_same with
 * what it has). GX_ENOMEM.
 */
enum gx_err gx_kube_node_store_event(struct gx_kube_node_store *ns, const struct gx_watch_event *ev,
                                     struct gx_arena *a) GX_WUR;

/* ---- kube_reflector.c ---- */

/**
 * Set up stream @s (caller storage) of @kind at @path (copied) for @k;
 * @name is borrowed and must outlive it. False on ENOMEM: release it
 * anyway.
 */
bool gx_kube_stream_init(struct gx_kube *k, struct gx_kube_stream *s, enum gx_kind kind,
                         const char *name, const char *path);

/** Stop @s (no more callbacks) and free what it holds; a zeroed stream is a no-op. */
void gx_kube_stream_release(struct gx_kube_stream *s);

/** Start @s (a list, or a watch once it has a resourceVersion) in @delay_ms. */
void gx_kube_stream_schedule(struct gx_kube_stream *s, int64_t delay_ms);

/** After a config change: relist @s when the label selector it should use changed. */
void gx_kube_stream_reselect(struct gx_kube_stream *s);

#endif
