/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service.h - the state of the running extender, one struct on the event
 * loop thread (no locks), in sections each written by one module:
 *
 *   app.c          lifecycle: config, HTTP servers, reload, TLS, drain
 *   sync.c         sources -> metric/node stores -> snapshot (ready.c reads it)
 *   routes.c       the route table and the filter/prioritize/... handlers
 *   reply.c        the only way an HTTP answer is made
 *   bind.c         the bind chain (reservation -> label -> Binding)
 *   bgwrite.c      background Lease writes (mark bound, release)
 *   reconcile.c    the managed-pod view and the periodic reconcile
 *   requeue.c      pods refused for capacity, poked when a booking goes
 *   preempt_holds.c the shares held for preemptors (decide/holds.c decides)
 *   gang_filter.c  gang members' tentative bookings (decide/gang.c decides)
 *   gang_bind.c    the barrier holding a gang's Bindings until all reserved
 *   leader.c       the leader Lease of replicas.forward
 *   forward.c      scheduling calls answered by the leader replica
 *
 * Pure decisions live outside the shell, in src/decide/.
 * Other modules only read a section they do not own.
 */
#ifndef GX_SERVICE_H
#define GX_SERVICE_H

#include <sys/queue.h>

#include "arena.h"
#include "dcgm.h"
#include "fgd.h"
#include "gate.h"
#include "http.h"
#include "kobj.h"
#include "leases.h"
#include "ledger.h"
#include "metrics.h"
#include "snapshot.h"
#include "store.h"

struct event;
struct gx_httpc;
struct gx_promsrc;
struct gx_kube;
struct gx_dra;
struct gx_podsum;
struct gx_seen;
struct gx_vcache;
struct bind_op;
struct bgwrite;
struct gx_holds;
struct gx_gang;
struct gx_pdbs;
struct gx_kube_watch;
struct gx_leader;
struct forward_op;

/* sync.c: where the snapshot comes from. */
struct gx_sync {
    struct gx_snapshot *snap;    /* current picture; replaced whole */
    uint64_t generation;         /* of the newest snapshot */
    bool snap_has_api_nodes;     /* built after the first node list */
    struct gx_arena nodes_arena; /* file mode: the NodeList file */
    struct gx_node_info *nodes;
    size_t n_nodes;
    struct gx_stamp nodes_stamp;
    struct gx_mstore *mstore;
    struct gx_httpc *httpc; /* live sources */
    struct gx_promsrc *prom;
    struct gx_kube *kube;
    struct gx_dra *dra;       /* cards held through DRA claims, with kube_watch_dra */
    struct gx_podsum *podsum; /* unmanaged pods' requests per node, with kube_watch_all_pods */
    struct gx_pdbs *pdbs;     /* PodDisruptionBudgets, for the preempt verb (live mode) */
    struct gx_kube_watch *w_pdbs;
    bool pdbs_listed_once;
    struct event *rebuild_timer;
    bool rebuild_pending;
    struct event *refresh_timer; /* file sources */
};

/* reconcile.c: managed pods as the watch shows them. */
struct gx_recon_read;
struct gx_poke;
struct gx_waiters;

/* requeue.c: pods refused for capacity the ledger holds, poked when some frees */
struct gx_requeue {
    struct gx_waiters *waiters;
    struct event *timer;
    int64_t tenants;      /* ledger tenants at the last tick */
    uint64_t cooled;      /* busy cards that cooled, counted at snapshot rebuilds */
    uint64_t cooled_seen; /* ... at the last tick */
    LIST_HEAD(gx_pokes, gx_poke) pokes;
};

struct gx_recon {
    struct gx_store pods; /* uid -> struct pod_state *, synced once the first pod list arrived */
    struct event *timer;
    LIST_HEAD(gx_recon_reads, gx_recon_read) reads; /* pods read to confirm a verdict */
    size_t n_reads;
};

struct gx_app {
    /* app.c */
    struct event_base *base;
    struct gx_config *cfg; /* replaced whole on reload */
    char *config_path;
    struct gx_stamp config_stamp, cert_stamp, key_stamp;
    struct gx_http *http;
    struct gx_http *http_old; /* draining after a certificate rotation */
    char busy_body[160];      /* the HTTP server's 503 when its memory budget is spent */
    struct event *reload_timer;
    struct event *drain_timer;
    int64_t drain_deadline_ms;
    int64_t drain_quiet_ms; /* not drained before this, even when idle */
    bool draining;
    struct gx_metrics metrics; /* every module counts here */

    struct gx_sync sync;

    /* fgd: the typical pods filter has seen (score_fgd.c learns, decisions read) */
    struct gx_fgd_model fgd;
    struct gx_score_gaps *gaps; /* the cluster's gap counts fgd's gap term keeps (score.h) */

    /* the ledger; live mode keeps it in Leases through @leases */
    struct gx_ledger *ledger;
    struct gx_leases *leases;

    /* routes.c */
    struct gx_seen *seen;     /* what filter learned, for bind */
    struct gx_vcache *vcache; /* filter/prioritize verdicts, created on first use */
    uint64_t shortlist_rng;   /* equal scores at the shortlist's cut (routes.c) */

    /* bind.c, bgwrite.c */
    LIST_HEAD(bind_list, bind_op) binds;       /* waiting for the API server */
    struct gx_gate bind_gate;                  /* ledger.binds_in_flight of them at once */
    LIST_HEAD(paced_list, paced_filter) paced; /* filter calls the gate holds (routes.c) */
    LIST_HEAD(bg_list, bgwrite) bgs;

    struct gx_recon recon;
    struct gx_requeue requeue;

    /* preempt_holds.c: shares held for preemptors, created on first use */
    struct gx_holds *holds;
    /* gang_filter.c: gang members' tentative bookings, created on first use */
    struct gx_gang *gang;
    /* gang_bind.c: a barrier per gang whose binds are in flight */
    LIST_HEAD(gx_gang_bind_list, gx_gang_bind) gang_binds;

    /* leader.c: which replica answers (replicas.forward), NULL when off */
    struct gx_leader *leader;
    /* forward.c: calls waiting for the leader's answer */
    LIST_HEAD(forward_list, forward_op) forwards;
};

#endif
