/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_watch.c - one watch event line ({"type":..,"object":{..}}) of any
 * kind, and the Status object the API server answers with: an ERROR
 * event's code and message, and the text of a failed call
 * (gx_kobj_failure_text). The objects are decoded by their kind's decoder
 * on the readers of kobj.c. No I/O.
 */
#include "kobj.h"

#include <stdio.h>
#include <string.h>

#include "kobj_int.h"

void
gx_kobj_failure_text(enum gx_err rc, long status, const char *body, size_t len, char *out, size_t n)
{
    struct doc doc;
    const cJSON *msg = NULL;

    if (rc != GX_OK) {
        /* a timeout says all; any other failure keeps the transport's words (gx_kube_request) */
        if (rc != GX_ETIMEDOUT && body != NULL && len > 0) {
            (void)snprintf(out, n, "%s: %.*s", gx_strerror(rc), (int)(len < 200 ? len : 200), body);
        } else {
            (void)snprintf(out, n, "%s", gx_strerror(rc));
        }
        return;
    }
    if (kobj_doc_parse(&doc, body, len, 8, 0, NULL) == GX_OK) {
        msg = kobj_last_member(doc.root, "message");
    }
    if (msg != NULL && cJSON_IsString(msg) && msg->valuestring != NULL &&
        msg->valuestring[0] != '\0') {
        (void)snprintf(out, n, "HTTP %ld: %s", status, msg->valuestring);
    } else {
        (void)snprintf(out, n, "HTTP %ld", status);
    }
    kobj_doc_free(&doc);
}

bool
gx_kobj_retryable(enum gx_err rc, long status)
{
    if (rc != GX_OK) {
        return rc != GX_ETIMEDOUT;
    }
    return status >= 500 || status == 429;
}

static const char *const watch_types[] = {
    [GX_WATCH_ADDED] = "ADDED",     [GX_WATCH_MODIFIED] = "MODIFIED",
    [GX_WATCH_DELETED] = "DELETED", [GX_WATCH_BOOKMARK] = "BOOKMARK",
    [GX_WATCH_ERROR] = "ERROR",
};

/* Decode the Status object of an ERROR event into code/message. */
static enum gx_err
decode_status(struct dec *d, const cJSON *o, struct gx_watch_event *ev)
{
    const cJSON *code;
    enum gx_err rc;

    if ((rc = kobj_get_field(d, o, "object", "code", cJSON_IsNumber, "a number", &code)) != GX_OK ||
        (rc = kobj_get_string(d, o, "object", "message", "", &ev->message)) != GX_OK) {
        return rc;
    }
    if (code != NULL) {
        if (code->valuedouble < 0 || code->valuedouble > 999 ||
            (double)(int)code->valuedouble != code->valuedouble) {
            gx_why_set(d->why, "object.code: must be an HTTP status code");
            return GX_EINVAL;
        }
        ev->code = (int)code->valuedouble;
    }
    ev->resource_version = "";
    return GX_OK;
}

/* Decode one watch event line; unknown types and missing objects are GX_EINVAL. */
enum gx_err
gx_kobj_decode_event(const char *json, size_t len, enum gx_kind kind, int max_depth,
                     struct gx_arena *a, struct gx_watch_event *out, struct gx_why *why)
{
    struct dec d = {a, why, NULL};
    struct gx_watch_event ev;
    struct doc doc;
    const cJSON *root, *type, *obj, *meta;
    size_t t;
    enum gx_err rc = kobj_doc_parse(&doc, json, len, max_depth, 0, why);

    if (rc != GX_OK) {
        kobj_doc_free(&doc);
        return rc;
    }
    root = doc.root;
    memset(&ev, 0, sizeof(ev));
    if (!cJSON_IsObject(root)) {
        gx_why_set(why, "watch event: must be an object");
        rc = GX_EINVAL;
        goto out;
    }
    if ((rc = kobj_get_field(&d, root, "", "type", cJSON_IsString, "a string", &type)) != GX_OK ||
        (rc = kobj_get_object(&d, root, "", "object", &obj)) != GX_OK) {
        goto out;
    }
    if (type == NULL || obj == NULL) {
        gx_why_set(why, "%s: required", type == NULL ? "type" : "object");
        rc = GX_EINVAL;
        goto out;
    }
    for (t = 0; t < GX_ARRAY_LEN(watch_types); t++) {
        if (strcmp(type->valuestring, watch_types[t]) == 0) {
            break;
        }
    }
    if (t == GX_ARRAY_LEN(watch_types)) {
        gx_why_set(why, "type: unknown watch event type \"%.64s\"", type->valuestring);
        rc = GX_EINVAL;
        goto out;
    }
    ev.type = (enum gx_watch_type)t;
    switch (ev.type) {
    case GX_WATCH_ERROR:
        rc = decode_status(&d, obj, &ev);
        break;
    case GX_WATCH_BOOKMARK:
        /* A bookmark carries only metadata.resourceVersion; the rest is empty. */
        if ((rc = kobj_get_object(&d, obj, "object", "metadata", &meta)) == GX_OK) {
            rc = kobj_get_string(&d, meta, "object.metadata", "resourceVersion", "",
                                 &ev.resource_version);
        }
        break;
    default:
        switch (kind) {
        case GX_KIND_NODE:
            rc = kobj_node_obj(&d, obj, "object", &ev.obj.node);
            ev.resource_version = ev.obj.node.resource_version;
            break;
        case GX_KIND_POD:
            rc = kobj_pod_obj(&d, obj, "object", &ev.obj.pod);
            ev.resource_version = ev.obj.pod.resource_version;
            break;
        case GX_KIND_LEASE:
            rc = kobj_lease_obj(&d, obj, "object", &ev.obj.lease);
            ev.resource_version = ev.obj.lease.resource_version;
            break;
        case GX_KIND_RESOURCE_SLICE:
            rc = kobj_slice_obj(&d, obj, "object", &ev.obj.slice);
            ev.resource_version = ev.obj.slice.resource_version;
            break;
        case GX_KIND_RESOURCE_CLAIM:
            rc = kobj_claim_obj(&d, obj, "object", &ev.obj.claim);
            ev.resource_version = ev.obj.claim.resource_version;
            break;
        case GX_KIND_PDB:
            rc = kobj_pdb_obj(&d, obj, "object", &ev.obj.pdb);
            ev.resource_version = ev.obj.pdb.resource_version;
            break;
        }
        break;
    }
    if (rc == GX_OK) {
        *out = ev;
    }
out:
    kobj_doc_free(&doc);
    return rc;
}
