/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_manifest.c - what `explain --pod` and POST /debug/explain read: a
 * YAML stream into JSON documents (yamldoc), each document to the Pod it
 * stands for (gx_kobj_pod_of), and that Pod decoded. Every converted
 * document must be JSON the Pod reader accepts or refuses with a reason.
 */
#include "fuzz_util.h"

#include <string.h>

#include "arena.h"
#include "buf.h"
#include "kobj.h"
#include "yamldoc.h"

/* One document: to a Pod and decoded; failures must say why. */
static void
one_doc(const struct gx_config *cfg, const char *json, size_t len)
{
    struct gx_buf pod;
    struct gx_arena a;
    struct gx_pod p;
    struct gx_why why = {{0}};
    char what[300];
    bool tpl = false;

    FZ_CHECK(strlen(json) == len, "document length %zu, text %zu", len, strlen(json));
    gx_buf_init(&pod, GX_POD_MAX_BYTES);
    if (gx_kobj_pod_of(json, len, cfg->max_json_depth, &pod, what, sizeof(what), &tpl, &why) ==
        GX_OK) {
        gx_arena_init(&a, 0);
        if (gx_kobj_decode_pod(pod.data, pod.len, cfg->max_json_depth, &a, &p, &why) == GX_OK)
            fz_touch_pod(&p);
        else
            FZ_CHECK(why.text[0] != '\0', "pod decode failed without a reason");
        gx_arena_release(&a);
    } else {
        FZ_CHECK(why.text[0] != '\0', "pod_of failed without a reason");
    }
    gx_buf_release(&pod);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct gx_config *cfg = fz_config();
    struct gx_yamldocs docs;
    struct gx_why why = {{0}};

    if (gx_yamldoc_parse((const char *)data, size, cfg->max_json_depth, 1u << 20, &docs, &why) !=
        GX_OK) {
        FZ_CHECK(why.text[0] != '\0' && docs.n == 0, "yaml failed without a reason");
        return 0;
    }
    for (size_t i = 0; i < docs.n; i++)
        one_doc(cfg, docs.docs[i].json, docs.docs[i].len);
    gx_yamldoc_release(&docs);
    return 0;
}
