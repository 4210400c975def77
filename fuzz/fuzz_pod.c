/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_pod.c - a Pod object (from ExtenderArgs or the API server): decode
 * it, classify its GPU request with the default config and check the
 * documented ranges of the result. The same bytes also go through the Node
 * decoder, the other single-object parser of API server input.
 */
#include "fuzz_util.h"

#include <math.h>

#include "arena.h"
#include "podreq.h"

/* The ranges podreq.h promises for a classified request. */
static void
check_req(const struct gx_podreq *r)
{
    switch (r->kind) {
    case GX_REQ_NONE:
        FZ_CHECK(r->gpus == 0, "no request but gpus=%lld", (long long)r->gpus);
        break;
    case GX_REQ_EXCLUSIVE:
        FZ_CHECK(r->gpus > 0, "exclusive with gpus=%lld", (long long)r->gpus);
        break;
    case GX_REQ_SHARED:
        FZ_CHECK(r->slices >= 1, "shared with slices=%d", r->slices);
        FZ_CHECK(r->memory_mib >= 0, "memory_mib=%lld", (long long)r->memory_mib);
        FZ_CHECK(r->util_pct == -1 || (r->util_pct >= 0 && r->util_pct <= 100), "util_pct=%g",
                 r->util_pct);
        break;
    default:
        FZ_CHECK(0, "unknown kind %d", (int)r->kind);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct gx_config *cfg = fz_config();
    const char *json = (const char *)data;
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_node_info node;
    struct gx_podreq req;
    struct gx_why why = {{0}};
    int64_t v = 0;

    gx_arena_init(&a, 0);
    if (gx_kobj_decode_pod(json, size, cfg->max_json_depth, &a, &pod, &why) == GX_OK) {
        fz_touch_pod(&pod);
        if (gx_podreq_parse(cfg, &pod, &req, &why) == GX_OK)
            check_req(&req);
        else
            FZ_CHECK(why.text[0] != '\0', "podreq failed without a reason");
        if (gx_podreq_effective(&pod, cfg->res_gpu, &v) == GX_OK)
            FZ_CHECK(v >= 0, "negative effective request %lld", (long long)v);
        if (gx_podreq_effective(&pod, "cpu", &v) == GX_OK)
            FZ_CHECK(v >= 0, "negative effective cpu %lld", (long long)v);
    } else {
        FZ_CHECK(why.text[0] != '\0', "pod decode failed without a reason");
    }
    gx_arena_release(&a);

    gx_arena_init(&a, 0);
    if (gx_kobj_decode_node(json, size, cfg->max_json_depth, &a, &node, &why) == GX_OK)
        fz_touch_node(&node);
    gx_arena_release(&a);
    return 0;
}
