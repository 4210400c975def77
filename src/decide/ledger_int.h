/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger_int.h - what ledger.c (the bookkeeping) and ledger_codec.c (the
 * Lease annotation codec) share: the limits of one node entry and the
 * range check of one tenant, so that the codec writes and reads exactly
 * what the bookkeeping accepts. Never included by another module.
 */
#ifndef GX_LEDGER_INT_H
#define GX_LEDGER_INT_H

#include "ledger.h"

/** Tenants per node accepted by add, set_node and decode. */
#define GX_LEDGER_MAX_TENANTS 1024
/** Highest card index accepted (cards per node are far fewer). */
#define GX_LEDGER_MAX_CARD 1023
/** Slices one tenant may hold. */
#define GX_LEDGER_MAX_SLICES 1024
/** Largest CPU request of one pod, milli-CPU (a million cores). */
#define GX_LEDGER_MAX_CPU (INT64_C(1) << 30)
/** Largest memory reservation (1 PiB in MiB). */
#define GX_LEDGER_MAX_MIB (INT64_C(1) << 30)

/**
 * True when the fields of @t are in range: a uid, a pod name that fits, a
 * card index (the bound of the node's cards is checked by callers), a share
 * of at least one slice or milli or an exclusive card, amounts and a state
 * the codec can carry. Cannot fail.
 */
bool gx_ledger_tenant_valid(const struct gx_tenant *t);

/** What is wrong with @t ("field: why", static), or NULL when gx_ledger_tenant_valid. */
const char *gx_ledger_tenant_problem(const struct gx_tenant *t);

#endif
