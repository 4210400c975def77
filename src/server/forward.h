/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forward.h - replicas.forward: a replica that does not lead answers
 * kube-scheduler's filter, prioritize, bind and preempt calls (and the
 * debug explains of filter and preempt) with the leader's answers
 * (leader.h), so one replica decides and each decision
 * sees every bind in flight, as with one replica, whatever the Service in
 * front of them does (round-robin included). With TLS the leader is trusted
 * by the serving key the replicas share (gx_leader_pin). A call the leader cannot take
 * (no connection, or one broken mid-call: it died) is answered here, a
 * bind as a retry of the same bind; a bind that timed out at the leader
 * fails, for kube-scheduler to retry (the leader may still be binding it).
 */
#ifndef GX_FORWARD_H
#define GX_FORWARD_H

#include <stdbool.h>

#include "http.h"
#include "metrics.h"

/* Set on a forwarded call: its receiver answers it, never forwards it again. */
#define GX_FORWARDED_HEADER "X-Gpu-Extender-Forwarded"

struct gx_app;

/** How this replica answers a call itself. */
typedef void (*gx_forward_local_cb)(struct gx_app *app, struct gx_http_req *r);

/**
 * Forward @r (a call of @verb the leader answers) to the leader: true when it went
 * (it is answered later, by the leader or by @local), false when this
 * replica answers it now.
 */
bool gx_forward(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb,
                gx_forward_local_cb local);

/** Drop every forwarded call without answering (shutdown). */
void gx_forward_cancel(struct gx_app *app);

#endif
