/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dra.h - cards held through Dynamic Resource Allocation (resource.k8s.io/v1).
 * A store of ResourceSlices (what drivers publish: per device its name and
 * its "uuid" attribute) and ResourceClaims (status.allocation names driver,
 * pool and device of each allocated device) that answers "is the card with
 * this UUID allocated to a claim, and to which". The UUID is the one
 * dcgm-exporter labels its series with, so a claimed card is found in the
 * snapshot by its UUID. A device allocated to several claims, or a claim
 * shared by several pods, still holds its card once.
 *
 * The store is pure; gx_dra_watch starts the two watches through kube
 * (list+watch with kube_reflector.c's rules). Servers without the DRA API
 * answer 404: logged once, the store stays empty and every card stays
 * usable.
 * Loop thread only.
 */
#ifndef GX_DRA_H
#define GX_DRA_H

#include "kobj.h"

struct gx_kube;
struct gx_dra;

/** New empty store; NULL on ENOMEM. @changed (may be NULL) runs after every change. */
struct gx_dra *gx_dra_new(void (*changed)(void *ctx), void *ctx);

/** Stop its watches and free; NULL is a no-op. */
void gx_dra_free(struct gx_dra *d);

/**
 * Watch ResourceSlices and ResourceClaims through @k (borrowed; outlives
 * @d's watches: gx_dra_free before gx_kube_free). GX_ENOMEM.
 */
enum gx_err gx_dra_watch(struct gx_dra *d, struct gx_kube *k) GX_WUR;

/** Replace every slice with @s[0..n) (a list). GX_ENOMEM leaves the store unchanged. */
enum gx_err gx_dra_set_slices(struct gx_dra *d, const struct gx_rslice *s, size_t n) GX_WUR;

/** Replace every claim with @c[0..n) (a list). GX_ENOMEM leaves the store unchanged. */
enum gx_err gx_dra_set_claims(struct gx_dra *d, const struct gx_rclaim *c, size_t n) GX_WUR;

/** Add or replace one slice, or remove it when @deleted. GX_ENOMEM. */
enum gx_err gx_dra_put_slice(struct gx_dra *d, const struct gx_rslice *s, bool deleted) GX_WUR;

/** Add or replace one claim, or remove it when @deleted. GX_ENOMEM. */
enum gx_err gx_dra_put_claim(struct gx_dra *d, const struct gx_rclaim *c, bool deleted) GX_WUR;

/**
 * The claim ("namespace/name") the card with @uuid is allocated to, or
 * NULL when none is (or @uuid is NULL). Borrowed until the next change.
 */
const char *gx_dra_claim_of(struct gx_dra *d, const char *uuid);

/** Distinct devices with a UUID allocated to claims (each counted once). */
size_t gx_dra_claimed_devices(struct gx_dra *d);

/** True once both lists arrived, or the server does not serve the DRA API. */
bool gx_dra_synced(const struct gx_dra *d);

#endif
