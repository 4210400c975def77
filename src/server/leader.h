/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leader.h - the leader Lease of replicas.forward ("gpu-extender-leader" in
 * kubernetes.namespace): every quarter of replicas.lease_s each replica
 * reads it and renews or takes it by compare-and-swap as decide/elect.c
 * says; the Lease names the leader by the URL the others reach it at
 * (annotation gpu-extender.io/leader). forward.c asks gx_leader_url where
 * to send kube-scheduler's calls, and, with TLS, gx_leader_pin how to trust
 * the leader: by the serving key every replica mounts from one Secret.
 */
#ifndef GX_LEADER_H
#define GX_LEADER_H

#include "common.h"

struct gx_app;

/**
 * Take part in the election when replicas.forward is on and the API
 * server is a source (else a no-op). GX_EINVAL with @why when this
 * replica's own URL is unknown (replicas.advertise_url or POD_IP).
 */
enum gx_err gx_leader_start(struct gx_app *app, struct gx_why *why);

/** The leader's URL to forward to, or NULL: this replica answers itself. */
const char *gx_leader_url(const struct gx_app *app);

/** With TLS, the pin of the serving key the replicas share ("sha256//..."), else NULL. */
const char *gx_leader_pin(const struct gx_app *app);

/** The serving certificate was reloaded: pin its key from now on (kept when unreadable). */
void gx_leader_tls_changed(struct gx_app *app);

/** True while this replica leads. */
bool gx_leader_leading(const struct gx_app *app);

/** Shutting down: hand the Lease back so another replica leads at once. */
void gx_leader_release(struct gx_app *app);

/** True while the Lease is being handed back (gx_leader_release): shutdown waits for it. */
bool gx_leader_handing_back(const struct gx_app *app);

/** Stop (cancels its request); NULL leader is a no-op. */
void gx_leader_free(struct gx_app *app);

#endif
