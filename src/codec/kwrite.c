/* SPDX-License-Identifier: Apache-2.0 */
/* kwrite.c - the API request bodies, on one object-metadata writer. */
#include "kwrite.h"

#include <stdbool.h>
#include <stdio.h>

/* {"k":"v",...} */
static void
put_map(struct gx_buf *b, enum gx_err *rc, const struct gx_kv *kv, size_t n)
{
    gx_buf_put(b, rc, "{");
    for (size_t i = 0; i < n; i++) {
        gx_buf_put(b, rc, i ? "," : "");
        gx_buf_put_json_str(b, rc, kv[i].key);
        gx_buf_put(b, rc, ":");
        gx_buf_put_json_str(b, rc, kv[i].value);
    }
    gx_buf_put(b, rc, "}");
}

static void
put_field(struct gx_buf *b, enum gx_err *rc, const char *key, const char *value)
{
    if (value != NULL) {
        gx_buf_putf(b, rc, ",\"%s\":", key);
        gx_buf_put_json_str(b, rc, value);
    }
}

/* "metadata":{...}: the name first, so no field needs to know it is not the first. */
static void
put_meta(struct gx_buf *b, enum gx_err *rc, const struct gx_kmeta *m)
{
    gx_buf_put(b, rc, "\"metadata\":{\"name\":");
    gx_buf_put_json_str(b, rc, m->name);
    put_field(b, rc, "namespace", m->namespace);
    put_field(b, rc, "uid", m->uid);
    put_field(b, rc, "resourceVersion", m->resource_version);
    if (m->n_labels > 0) {
        gx_buf_put(b, rc, ",\"labels\":");
        put_map(b, rc, m->labels, m->n_labels);
    }
    if (m->n_annotations > 0) {
        gx_buf_put(b, rc, ",\"annotations\":");
        put_map(b, rc, m->annotations, m->n_annotations);
    }
    gx_buf_put(b, rc, "}");
}

/* {<head>,"metadata":{..},<field>"<value>"}}: an object whose one other field ends in a string */
static enum gx_err
put_object(struct gx_buf *out, const char *head, const struct gx_kmeta *m, const char *field,
           const char *value)
{
    enum gx_err rc = GX_OK;

    gx_buf_put(out, &rc, head);
    put_meta(out, &rc, m);
    gx_buf_put(out, &rc, field);
    gx_buf_put_json_str(out, &rc, value);
    gx_buf_put(out, &rc, "}}");
    return rc;
}

enum gx_err
gx_kwrite_binding(struct gx_buf *out, const struct gx_kmeta *m, const char *node)
{
    return put_object(out, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",", m,
                      ",\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":", node);
}

enum gx_err
gx_kwrite_lease(struct gx_buf *out, const struct gx_kmeta *m, const char *holder)
{
    return put_object(out, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",", m,
                      ",\"spec\":{\"holderIdentity\":", holder);
}

enum gx_err
gx_kwrite_meta_patch(struct gx_buf *out, const struct gx_kmeta *m)
{
    enum gx_err rc = GX_OK;
    bool both = m->n_labels > 0 && m->n_annotations > 0;

    gx_buf_put(out, &rc, "{\"metadata\":{");
    if (m->n_labels > 0) {
        gx_buf_put(out, &rc, "\"labels\":");
        put_map(out, &rc, m->labels, m->n_labels);
    }
    if (m->n_annotations > 0) {
        gx_buf_put(out, &rc, both ? ",\"annotations\":" : "\"annotations\":");
        put_map(out, &rc, m->annotations, m->n_annotations);
    }
    gx_buf_put(out, &rc, "}}");
    return rc;
}

void
gx_kwrite_lease_path(char *out, size_t n, const char *ns, const char *name)
{
    (void)snprintf(out, n, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s", ns,
                   name[0] ? "/" : "", name);
}

size_t
gx_kwrite_pod_path(char *out, size_t n, const char *ns, const char *name, const char *sub)
{
    int w = snprintf(out, n, "/api/v1/namespaces/%s/pods/%s%s", ns, name, sub);

    return w < 0 ? n : (size_t)w;
}
