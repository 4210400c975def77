/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app_int.h - private to the app module (app.c, app_bind.c): the state of
 * the running extender and the helpers its parts share.
 */
#ifndef GX_APP_INT_H
#define GX_APP_INT_H

#include <sys/stat.h>
#include <time.h>

#include "gx/app.h"
#include "gx/arena.h"
#include "gx/dcgm.h"
#include "gx/http.h"
#include "gx/httpc.h"
#include "gx/kube.h"
#include "gx/leases.h"
#include "gx/ledger.h"
#include "gx/metrics.h"
#include "gx/podreq.h"
#include "gx/promsrc.h"
#include "gx/score.h"
#include "gx/snapshot.h"
#include "gx/strmap.h"
#include "gx/vcache.h"

#define FILE_CAP (256u << 20)
#define POD_CACHE_SLOTS 16384
#define POD_CACHE_TTL_MS (15 * 60 * 1000)
#define DRAIN_MIN_MS 300

/* What filter learned about a pod, so bind (which only gets names) can act. */
struct pod_seen {
    char uid[GX_UID_MAX];
    char pod[256];
    struct gx_podreq req;
    int64_t seen_ms;
};

struct file_stamp {
    time_t mtime;
    off_t size;
    ino_t ino;
};

/* A managed pod as the pod watch last showed it (for the reconciler). */
struct pod_state {
    char uid[GX_UID_MAX];
    char node[256]; /* spec.nodeName, "" while pending */
    bool finished;  /* Succeeded, Failed or being deleted */
};

struct bind_op;
struct bg;

struct gx_app {
    struct event_base *base;
    struct gx_config *cfg;
    struct gx_snapshot *snap;
    struct gx_ledger *ledger;
    struct gx_mstore *mstore;
    struct gx_http *http;
    struct gx_http *http_old; /* draining after a certificate rotation */
    struct file_stamp cert_stamp, key_stamp;
    struct gx_metrics metrics;
    char *config_path;
    struct file_stamp config_stamp;

    /* file sources */
    struct gx_arena nodes_arena;
    struct gx_node_info *nodes;
    size_t n_nodes;
    struct file_stamp nodes_stamp;

    /* live sources */
    struct gx_httpc *httpc;
    struct gx_promsrc *prom;
    struct gx_kube *kube;
    struct gx_leases *leases;
    struct event *rebuild_timer;
    bool rebuild_pending;

    /* managed pods (uid -> struct pod_state *, owned) and the reconciler */
    struct gx_strmap pod_states;
    bool pods_synced;
    struct event *reconcile_timer;
    struct bind_op *binds; /* binds waiting for the API server */
    struct bg *bgs;        /* background Lease updates (mark bound, undo) */

    struct event *refresh_timer;
    struct event *reload_timer;
    struct event *drain_timer;
    int64_t drain_deadline_ms;
    int64_t drain_quiet_ms; /* not drained before this, even when idle */
    bool draining;
    bool snap_has_api_nodes; /* the snapshot was built after the first node list */
    uint64_t generation;
    struct pod_seen *pods;    /* POD_CACHE_SLOTS direct-mapped entries */
    struct gx_vcache *vcache; /* filter/prioritize verdicts, created on first use */
};

/* Answer @r with a JSON body, counting it in the metrics. */
void app_respond_json(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb, int status,
                      struct gx_buf *body);

/* Answer @r with {"error":msg} and log it. */
void app_respond_error(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb, int status,
                       const char *msg);

/* What filter learned about pod @uid, or NULL. */
const struct pod_seen *app_recall_pod(struct gx_app *app, const char *uid);

/* Remember the request of @pod for a later bind. */
void app_remember_pod(struct gx_app *app, const struct gx_pod *pod, const struct gx_podreq *req);

/* The decision context for now. */
void app_decide_ctx(struct gx_app *app, struct gx_decide_ctx *ctx);

/* Rebuild the snapshot from the current sources and swap it in. */
enum gx_err app_rebuild_snapshot(struct gx_app *app);

/* POST {prefix}/bind. */
void app_handle_bind(struct gx_app *app, struct gx_http_req *r);

/* Managed pod bookkeeping fed by the pod watch. */
void app_pod_event(void *ctx, enum gx_watch_type type, const struct gx_pod *pod);
void app_pods_listed(void *ctx, const struct gx_pod *pods, size_t n);

/* Start the durable ledger and its reconciler (kubernetes.enabled). */
enum gx_err app_start_ledger(struct gx_app *app);

/* Cancel pending binds (no answers) and free the reconciler state. */
void app_stop_ledger(struct gx_app *app);

#endif
