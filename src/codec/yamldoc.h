/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yamldoc.h - a YAML stream (the manifests people keep: kubectl apply -f) as
 * JSON text, one JSON document per YAML document, so the JSON decoders read
 * it. Scalars follow YAML 1.1 as Kubernetes' own YAML reader does: a quoted
 * or block scalar is a string; a plain scalar is null,
 * a boolean (true/false/yes/no/on/off), an integer (decimal, 0x hex, 0o or
 * leading-0 octal) or a float when it reads as one, else a string (tags
 * are not read). Aliases are expanded. Mapping keys are always strings. Pure: no I/O.
 */
#ifndef GX_YAMLDOC_H
#define GX_YAMLDOC_H

#include <stddef.h>

#include "common.h"

/** One non-empty document of a stream: JSON text (owned, NUL-terminated) and where it starts. */
struct gx_yamldoc {
    char *json;
    size_t len;
    int line; /* 1-based line of the document's first node */
};

/** The documents of a stream, in order; release with gx_yamldoc_release. */
struct gx_yamldocs {
    struct gx_yamldoc *docs;
    size_t n;
};

/**
 * Convert the YAML stream @text (@len bytes) into @out. Nesting deeper than
 * @max_depth and JSON larger than @cap bytes (all documents together, after
 * alias expansion) are refused. Empty documents are left out. On failure
 * @out is empty and @why says where ("line 3 column 7: ..."): GX_EPARSE for
 * bad YAML, GX_ETOOBIG, GX_ENOMEM.
 */
enum gx_err gx_yamldoc_parse(const char *text, size_t len, int max_depth, size_t cap,
                             struct gx_yamldocs *out, struct gx_why *why) GX_WUR;

/** Free the documents of @d and empty it; accepts an empty @d. */
void gx_yamldoc_release(struct gx_yamldocs *d);

/** True when @text (after blanks) starts a JSON object or array rather than YAML. */
bool gx_yamldoc_is_json(const char *text, size_t len);

#endif
