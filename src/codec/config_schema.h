/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_schema.h - the JSON Schema of the config document, made from the one
 * key table (config_keys.c) so that editors and the Helm chart's
 * values.schema.json (scripts/chart-schema.py) check the same keys, types,
 * ranges and names as gpu-extender --check-config. Pure: no I/O.
 */
#ifndef GX_CONFIG_SCHEMA_H
#define GX_CONFIG_SCHEMA_H

#include "common.h"

/**
 * The JSON Schema (draft-07) of a config document: every key of the table
 * with its type, range (minimum/maximum), enum names, default, list and map
 * limits, the required keys of array elements, and "additionalProperties":
 * false on every object, so a misspelt key is an error as it is for the
 * config reader. Rules that tie several keys together (config_check.c) are
 * not expressible there and stay with gx_config_parse.
 *
 * On success *out is a NUL-terminated JSON text (indented, no trailing
 * newline) that you now own: free it with free(). GX_ENOMEM, with *out
 * untouched. Thread-safe.
 */
enum gx_err gx_config_schema(char **out) GX_WUR;

#endif
