/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube.c - the Kubernetes API server source as one object: gx_kube_new
 * wires the connection (kube_client.c), the node store (kube_nodes.c) and
 * the node and managed-pod streams (kube_reflector.c) together, and
 * gx_kube_free takes them apart in the reverse order. Nothing is decided
 * here; kube_int.h says which file does what.
 */
#include "kube_int.h"

#include <stdlib.h>

#include "log.h"

struct gx_kube *
gx_kube_new(struct event_base *base, struct gx_httpc *http, const struct gx_config *cfg,
            struct gx_upstats *st, const struct gx_kube_cbs *cbs, void *ctx, struct gx_why *why)
{
    struct gx_kube *k = calloc(1, sizeof(*k));

    if (k == NULL) {
        return NULL;
    }
    k->base = base;
    k->http = http;
    k->cfg = cfg;
    k->st = st;
    if (cbs != NULL) {
        k->cbs = *cbs;
    }
    k->ctx = ctx;
    k->rng = (uint64_t)gx_mono_ms() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)k;
    gx_kube_node_store_init(&k->store);
    if (gx_kube_conn_init(k, why) != GX_OK) {
        goto fail;
    }
    LIST_INIT(&k->watches);
    if (!gx_kube_stream_init(k, &k->nodes, GX_KIND_NODE, "nodes", "/api/v1/nodes") ||
        !gx_kube_stream_init(k, &k->pods, GX_KIND_POD, "pods", "/api/v1/pods")) {
        gx_why_set(why, "out of memory");
        goto fail;
    }
    gx_kube_conn_start(k);
    gx_kube_stream_schedule(&k->nodes, 0);
    gx_kube_stream_schedule(&k->pods, 0);
    return k;
fail:
    gx_kube_free(k);
    return NULL;
}

void
gx_kube_free(struct gx_kube *k)
{
    if (k == NULL) {
        return;
    }
    for (struct gx_kube_watch *w = LIST_FIRST(&k->watches), *next; w != NULL; w = next) {
        next = LIST_NEXT(w, link);
        gx_kube_watch_free(w);
    }
    gx_kube_stream_release(&k->nodes);
    gx_kube_stream_release(&k->pods);
    gx_kube_conn_release(k);
    gx_kube_node_store_release(&k->store);
    free(k);
}

void
gx_kube_set_config(struct gx_kube *k, const struct gx_config *cfg)
{
    if (cfg->kube_insecure && !k->cfg->kube_insecure) {
        gx_warn("TLS verification of the API server is OFF (kubernetes.insecure_skip_verify)",
                NULL);
    }
    k->cfg = cfg;
    gx_kube_stream_reselect(&k->nodes);
    gx_kube_stream_reselect(&k->pods);
}

uint64_t
gx_kube_lists(const struct gx_kube *k)
{
    return k->lists;
}
