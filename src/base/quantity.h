/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quantity.h - Kubernetes resource.Quantity strings ("2", "500m", "6Gi",
 * "1.5G", "1e3") parsed into integers. No I/O, no allocation.
 */
#ifndef GX_QUANTITY_H
#define GX_QUANTITY_H

#include "common.h"

/**
 * Parse @s as a quantity and return its value rounded up to a whole unit in
 * *out (so "500m" -> 1, "6Gi" -> 6442450944). GX_EPARSE on bad syntax,
 * GX_ETOOBIG when it does not fit in int64. Negative values are GX_EINVAL.
 */
enum gx_err gx_quantity_parse(const char *s, int64_t *out) GX_WUR;

/** Parse @s in thousandths ("500m" -> 500, "2" -> 2000, "0.1" -> 100), rounded up. */
enum gx_err gx_quantity_parse_milli(const char *s, int64_t *out) GX_WUR;

/** Parse a byte quantity and convert to MiB rounded up ("6Gi" -> 6144, "1G" -> 954). */
enum gx_err gx_quantity_parse_mib(const char *s, int64_t *out) GX_WUR;

/** @bytes (>= 0) in MiB, rounded up. */
int64_t gx_quantity_mib_of(int64_t bytes);

#endif
