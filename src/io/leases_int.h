/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leases_int.h - the Lease codec of leases.c, exposed to tests/test_leases.c
 * only. Never included by another module.
 */
#ifndef GX_LEASES_INT_H
#define GX_LEASES_INT_H

#include "kobj.h"
#include "leases.h"

/**
 * The ledger's view of a decoded Lease: its resourceVersion into @rv
 * (@rvlen), the tenants of its annotation as a heap array (*t, *n; you own
 * *t, NULL when it has none) and, when @node is not NULL, the node it
 * books (borrowed from @lease, NULL when the annotation is missing).
 * GX_EPARSE with @why when the resourceVersion is missing or too long or
 * the tenants do not decode; nothing is written then.
 */
enum gx_err gx_leases_decode(const struct gx_lease *lease, char *rv, size_t rvlen,
                             struct gx_tenant **t, size_t *n, const char **node,
                             struct gx_why *why) GX_WUR;

/**
 * Append the Lease object @name in @namespace for @node with the tenants of
 * @e (NULL: none) to @out; @rv (NULL: a new Lease) is the resourceVersion
 * the write is conditional on. Every string is JSON-escaped. GX_ETOOBIG
 * past the caps of @out or of the annotation.
 */
enum gx_err gx_leases_encode(const char *name, const char *namespace, const char *node,
                             const char *rv, const struct gx_ledger_node *e,
                             struct gx_buf *out) GX_WUR;

#endif
