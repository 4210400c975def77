/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bind.h - POST {prefix}/bind.
 *
 * File mode (no API server): the assignment is booked in the in-process
 * ledger and the answer is immediate.
 *
 * Live mode: the connection stays suspended while the bind runs as a chain
 * of API calls, all within ledger.bind_deadline_ms:
 *   [READ_POD: GET the pod, when filter did not see it here]
 *   [MOVE: release a reservation the pod left on another node, unless it
 *          is young enough that a Binding there may still land]
 *   RESERVE: compare-and-swap the node's Lease (idempotent per pod UID);
 *            once the pod fits, the PATCH of the managed label (node-
 *            independent) is sent alongside the Lease write
 *   LABEL:   wait for that PATCH, when the Lease write ended first
 *   BINDING: POST the Binding carrying the assignment annotations: the API
 *            server sets node and annotations in one write, so a pod's
 *            annotations always name cards of the node it is bound to
 *   [CHECK:  after a 409, GET the pod: already bound here is success]
 * then answer, and mark the tenant bound in the background. A failure after
 * RESERVE releases the reservation, except when the Binding's outcome is
 * unknown (a timeout or a 5xx may still be applied): then CHECK reads the
 * pod: bound here is success, bound to another node (or replaced) releases,
 * and while it is pending or cannot be read the booking stays for the
 * reconciler to mark bound or release. A crash leaves at worst a
 * reservation the reconciler settles.
 */
#ifndef GX_BIND_H
#define GX_BIND_H

#include "service.h"

/** Handle one bind request. */
void gx_bind_handle(struct gx_app *app, struct gx_http_req *r);

/** Cancel every bind waiting for the API server, without answers (shutdown). */
void gx_bind_cancel_all(struct gx_app *app);

#endif
