/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kwrite.h - the bodies the extender sends to the API server: a Binding, a
 * Lease, a pod's label merge patch. One object-metadata writer serves them
 * all, so every string is escaped the same way (peer data is never pasted
 * into JSON). Pure: writes into a caller's buffer.
 */
#ifndef GX_KWRITE_H
#define GX_KWRITE_H

#include "buf.h"
#include "common.h"

/** metadata of an object; NULL fields and empty lists are left out. All borrowed. */
struct gx_kmeta {
    const char *name;
    const char *namespace;
    const char *uid;
    const char *resource_version;
    const struct gx_kv *labels;
    size_t n_labels;
    const struct gx_kv *annotations;
    size_t n_annotations;
};

/** A v1 Binding of the object @m to node @node. GX_ENOMEM or the buffer's cap. */
enum gx_err gx_kwrite_binding(struct gx_buf *out, const struct gx_kmeta *m,
                              const char *node) GX_WUR;

/** A coordination.k8s.io/v1 Lease @m held by @holder. */
enum gx_err gx_kwrite_lease(struct gx_buf *out, const struct gx_kmeta *m,
                            const char *holder) GX_WUR;

/**
 * The API path of pod @ns/@name, then @sub ("" or "/binding"), into @out
 * (@n bytes). Returns its length; >= @n when it did not fit.
 */
size_t gx_kwrite_pod_path(char *out, size_t n, const char *ns, const char *name, const char *sub);

/**
 * The API path of Lease @name in namespace @ns ("" @name: the namespace's
 * Lease collection, where a new one is POSTed) into @out (@n bytes).
 */
void gx_kwrite_lease_path(char *out, size_t n, const char *ns, const char *name);

/** A merge patch that sets the labels and annotations of @m (and nothing else). */
enum gx_err gx_kwrite_meta_patch(struct gx_buf *out, const struct gx_kmeta *m) GX_WUR;

#endif
