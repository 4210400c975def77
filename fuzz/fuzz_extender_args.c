/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_extender_args.c - ExtenderArgs as kube-scheduler POSTs them to
 * filter and prioritize: decode, then encode the filter result with every
 * node kept and with every node rejected, and the priority list. Every
 * answer must be one valid JSON document.
 */
#include "fuzz_util.h"

#include "extender.h"

/* Check the spans and names the decoder handed back. */
static void
check_nodes(const char *body, const struct gx_ext_args *a, size_t size)
{
    for (size_t i = 0; i < a->n_nodes; i++) {
        const struct gx_ext_node *n = &a->nodes[i];

        FZ_CHECK(n->name != NULL, "node %zu has no name", i);
        FZ_CHECK(n->name[n->name_len] == '\0', "name of node %zu not NUL-terminated", i);
        fz_touch_str(n->name);
        if (a->mode == GX_ARGS_NODES) {
            FZ_CHECK(n->item_off + n->item_len <= size && n->item_len > 0,
                     "item span %zu+%zu outside the body of %zu", n->item_off, n->item_len, size);
            FZ_CHECK(body[n->item_off] == '{' && body[n->item_off + n->item_len - 1] == '}',
                     "item %zu is not an object span", i);
        }
    }
}

/*
 * With every node rejected no item is echoed, so the result is plain JSON;
 * its reasons must hold no '%' (the scheduler formats them).
 */
static void
check_reasons(const char *text, size_t len)
{
    static const char *const maps[] = {"FailedNodes", "FailedAndUnresolvableNodes"};
    cJSON *root = cJSON_ParseWithLength(text, len);
    const cJSON *m, *r;

    FZ_CHECK(root != NULL, "cJSON rejects the all-reject result: %.200s", text);
    for (size_t i = 0; i < GX_ARRAY_LEN(maps); i++) {
        m = cJSON_GetObjectItemCaseSensitive(root, maps[i]);
        FZ_CHECK(cJSON_IsObject(m), "%s is not an object", maps[i]);
        cJSON_ArrayForEach(r, m)
        {
            FZ_CHECK(cJSON_IsString(r), "%s value is not a string", maps[i]);
            FZ_CHECK(strchr(r->valuestring, '%') == NULL, "'%%' in reason \"%s\"", r->valuestring);
        }
    }
    cJSON_Delete(root);
}

/* Encode a filter result with @keep for every node and check the output. */
static void
encode_filter(const char *body, const struct gx_ext_args *a, struct gx_ext_filter_verdict *v,
              bool keep)
{
    struct gx_buf out;
    enum gx_err rc;

    for (size_t i = 0; i < a->n_nodes; i++) {
        v[i].keep = keep;
        v[i].unresolvable = (i % 2) == 1;
        v[i].reason = (i % 3) == 0 ? "GPU above 90% utilization" : "no GPU time slot available";
    }
    gx_buf_init(&out, 64u << 20);
    rc = gx_ext_encode_filter(&out, body, a, a->n_nodes ? v : NULL);
    FZ_CHECK(rc == GX_OK, "encode_filter: %s", gx_strerror(rc));
    FZ_CHECK(fz_is_strict_json(out.data, out.len), "filter result is not JSON: %.200s", out.data);
    if (a->mode == GX_ARGS_NAMES)
        FZ_CHECK(fz_is_json(out.data, out.len), "cJSON rejects the filter result: %.200s",
                 out.data);
    if (!keep)
        check_reasons(out.data, out.len);
    gx_buf_release(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    struct gx_ext_args a;
    struct gx_ext_filter_verdict *v = NULL;
    int *scores = NULL;
    struct gx_why why = {{0}};
    struct gx_buf out;
    enum gx_err rc;

    if (gx_ext_decode_args(body, size, fz_config()->max_json_depth, &a, &why) != GX_OK) {
        FZ_CHECK(why.text[0] != '\0', "decode failed without a reason");
        return 0;
    }
    fz_touch_pod(&a.pod);
    check_nodes(body, &a, size);
    v = calloc(a.n_nodes + 1, sizeof(*v));
    scores = calloc(a.n_nodes + 1, sizeof(*scores));
    FZ_CHECK(v != NULL && scores != NULL, "out of memory");
    encode_filter(body, &a, v, true);
    encode_filter(body, &a, v, false);

    for (size_t i = 0; i < a.n_nodes; i++)
        scores[i] = (int)(i % 31) - 10; /* below, inside and above 0..10 */
    gx_buf_init(&out, 64u << 20);
    rc = gx_ext_encode_prioritize(&out, body, &a, scores);
    FZ_CHECK(rc == GX_OK, "encode_prioritize: %s", gx_strerror(rc));
    FZ_CHECK(fz_is_json(out.data, out.len), "priority list is not JSON: %.200s", out.data);
    gx_buf_release(&out);

    free(scores);
    free(v);
    gx_ext_args_release(&a);
    return 0;
}
