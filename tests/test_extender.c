/* SPDX-License-Identifier: Apache-2.0 */
/* test_extender.c - the extender wire codec. */
#include "gx_test.h"

#include "extender.h"

#include <cjson/cJSON.h>
#include <string.h>

GX_SUITE(extender);

#define DEPTH 64

/* Decode a NUL-terminated @body. */
static enum gx_err
decode(const char *body, struct gx_ext_args *args, struct gx_why *why)
{
    return gx_ext_decode_args(body, strlen(body), DEPTH, args, why);
}

/* Exactly the keys of @obj in order, joined by ','. */
static void
keys_of(const cJSON *obj, char *dst, size_t cap)
{
    size_t n = 0;
    const cJSON *it;

    dst[0] = '\0';
    cJSON_ArrayForEach(it, obj)
    {
        int w = snprintf(dst + n, cap - n, "%s%s", n ? "," : "", it->string);
        cr_assert(w > 0 && (size_t)w < cap - n);
        n += (size_t)w;
    }
}

Test(extender, decodes_nodes_mode_fixture_with_exact_item_spans)
{
    size_t len;
    char *body = gx_fixture("extender-filter-args.json", &len);
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    static const char *const names[] = {"gpu-node-a", "gpu-node-b", "gpu-node-c"};
    cJSON *doc, *items;

    cr_assert_eq(gx_ext_decode_args(body, len, DEPTH, &args, &why), GX_OK, "%s", why.text);
    cr_expect_eq(args.mode, GX_ARGS_NODES);
    cr_assert_eq(args.n_nodes, 3);
    cr_expect_str_eq(args.pod.name, "llm-eval-job-8f4kq");
    cr_expect_str_eq(args.pod.namespace, "ml-research");
    doc = cJSON_ParseWithLength(body, len);
    cr_assert_not_null(doc);
    items =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "Nodes"), "items");
    cr_assert_eq(cJSON_GetArraySize(items), 3);
    for (size_t i = 0; i < 3; i++) {
        const struct gx_ext_node *n = &args.nodes[i];
        cJSON *span;
        cr_expect_str_eq(n->name, names[i]);
        cr_expect_eq(n->name_len, strlen(names[i]));
        cr_assert_lt(n->item_off + n->item_len, len);
        cr_expect_eq(body[n->item_off], '{');
        cr_expect_eq(body[n->item_off + n->item_len - 1], '}');
        span = cJSON_ParseWithLength(body + n->item_off, n->item_len);
        cr_assert_not_null(span, "item %zu does not re-parse", i);
        cr_expect(cJSON_Compare(span, cJSON_GetArrayItem(items, (int)i), true), "item %zu", i);
        cJSON_Delete(span);
    }
    cJSON_Delete(doc);
    gx_ext_args_release(&args);
    free(body);
}

Test(extender, decodes_node_names_mode_fixture)
{
    size_t len;
    char *body = gx_fixture("extender-filter-args-nodecache.json", &len);
    struct gx_ext_args args;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_ext_decode_args(body, len, DEPTH, &args, &why), GX_OK, "%s", why.text);
    cr_expect_eq(args.mode, GX_ARGS_NAMES);
    cr_assert_eq(args.n_nodes, 3);
    cr_expect_str_eq(args.nodes[0].name, "gpu-node-a");
    cr_expect_str_eq(args.nodes[1].name, "gpu-node-b");
    cr_expect_str_eq(args.nodes[2].name, "gpu-node-c");
    cr_expect_str_eq(args.pod.uid, "0f3c7a92-5e1b-4d68-a4c9-7b2e8d1f6a05");
    gx_ext_args_release(&args);
    free(body);
}

Test(extender, matches_keys_case_insensitively_and_last_duplicate_wins)
{
    const char *body = "{\"pod\":{\"metadata\":{\"name\":\"p1\"}},\"nodenames\":[\"a\"],"
                       "\"unknown\":{\"x\":[1,2]},\"NODENAMES\":[\"b\",\"c\\u002dd\"],"
                       "\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"z\"}}]},\"nOdEs\":null}";
    struct gx_ext_args args;
    struct gx_why why = {{0}};

    cr_assert_eq(decode(body, &args, &why), GX_OK, "%s", why.text);
    cr_expect_eq(args.mode, GX_ARGS_NAMES);
    cr_assert_eq(args.n_nodes, 2);
    cr_expect_str_eq(args.nodes[0].name, "b");
    cr_expect_str_eq(args.nodes[1].name, "c-d");
    cr_expect_str_eq(args.pod.name, "p1");
    gx_ext_args_release(&args);
}

Test(extender, accepts_empty_node_names_and_duplicate_names)
{
    struct gx_ext_args args;
    struct gx_why why = {{0}};

    cr_assert_eq(decode("{\"Pod\":{},\"Nodes\":null,\"NodeNames\":[]}", &args, &why), GX_OK, "%s",
                 why.text);
    cr_expect_eq(args.mode, GX_ARGS_NAMES);
    cr_expect_eq(args.n_nodes, 0);
    gx_ext_args_release(&args);

    cr_assert_eq(decode("{\"Pod\":{},\"NodeNames\":[\"a\",\"a\"]}", &args, &why), GX_OK);
    cr_expect_eq(args.n_nodes, 2);
    gx_ext_args_release(&args);
}

Test(extender, item_span_covers_nested_metadata_and_last_name_wins)
{
    const char *item = "{\"metadata\":{\"labels\":{\"a\":\"b\"},\"name\":\"x\",\"name\":\"n1\"},"
                       "\"status\":{\"images\":[{\"names\":[\"i\"]}]}}";
    char body[512];
    struct gx_ext_args args;
    struct gx_why why = {{0}};

    (void)snprintf(body, sizeof(body), "{\"Pod\":{},\"Nodes\":{\"metadata\":{},\"items\":[ %s ]}}",
                   item);
    cr_assert_eq(decode(body, &args, &why), GX_OK, "%s", why.text);
    cr_expect_eq(args.mode, GX_ARGS_NODES);
    cr_assert_eq(args.n_nodes, 1);
    cr_expect_str_eq(args.nodes[0].name, "n1");
    cr_expect_eq(args.nodes[0].item_len, strlen(item));
    cr_expect_eq(memcmp(body + args.nodes[0].item_off, item, strlen(item)), 0);
    gx_ext_args_release(&args);
}

Test(extender, rejects_bad_args_with_a_reason_naming_the_field)
{
    static const struct {
        const char *body;
        enum gx_err rc;
        const char *why;
    } bad[] = {
        {"", GX_EPARSE, "offset 0"},
        {"[]", GX_EINVAL, "ExtenderArgs must be a JSON object"},
        {"\"x\"", GX_EINVAL, "ExtenderArgs must be a JSON object"},
        {"{\"Pod\":{}", GX_EPARSE, "expected ',' or '}'"},
        {"{\"NodeNames\":[\"a\"]}", GX_EINVAL, "Pod is missing"},
        {"{\"Pod\":null,\"NodeNames\":[\"a\"]}", GX_EINVAL, "Pod is null"},
        {"{\"Pod\":\"p\",\"NodeNames\":[\"a\"]}", GX_EINVAL, "Pod must be an object"},
        {"{\"Pod\":[],\"NodeNames\":[\"a\"]}", GX_EINVAL, "Pod must be an object"},
        {"{\"Pod\":tru,\"NodeNames\":[\"a\"]}", GX_EPARSE, "offset 7: expected true"},
        {"{\"Pod\":{},\"Nodes\":{\"items\":[]},\"NodeNames\":[]}", GX_EINVAL,
         "both Nodes and NodeNames are set"},
        {"{\"Pod\":{},\"Nodes\":null,\"NodeNames\":null}", GX_EINVAL,
         "neither Nodes nor NodeNames is set"},
        {"{\"Pod\":{}}", GX_EINVAL, "neither Nodes nor NodeNames is set"},
        {"{\"Pod\":{},\"NodeNames\":\"a\"}", GX_EINVAL, "NodeNames must be an array of strings"},
        {"{\"Pod\":{},\"NodeNames\":[\"a\",1]}", GX_EINVAL, "NodeNames[1] must be a string"},
        {"{\"Pod\":{},\"NodeNames\":[\"\"]}", GX_EINVAL, "NodeNames[0] is empty"},
        {"{\"Pod\":{},\"Nodes\":[]}", GX_EINVAL, "Nodes must be a NodeList object or null"},
        {"{\"Pod\":{},\"Nodes\":{\"items\":{}}}", GX_EINVAL, "Nodes.items must be an array"},
        {"{\"Pod\":{},\"Nodes\":{\"items\":[1]}}", GX_EINVAL, "Nodes.items[0] must be an object"},
        {"{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{}}]}}", GX_EINVAL,
         "Nodes.items[0] has no metadata.name"},
        {"{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"kind\":\"Node\"}]}}",
         GX_EINVAL, "Nodes.items[1] has no metadata.name"},
        {"{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":"
         "{\"name\":5}}]}}",
         GX_EINVAL, "Nodes.items[1].metadata.name must be a string"},
        {"{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":\"m\"}]}}", GX_EINVAL,
         "Nodes.items[0].metadata must be an object"},
        {"{\"Pod\":{},\"NodeNames\":[]} x", GX_EPARSE, "unexpected data after the JSON object"},
        {"{\"Pod\":{},\"NodeNames\":[]}{}", GX_EPARSE, "unexpected data after the JSON object"},
        {"{\"Pod\":{},\"NodeNames\":[],\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
         "[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
         GX_ETOOBIG, "JSON nested deeper than 64"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        struct gx_ext_args args;
        struct gx_why why = {{0}};
        enum gx_err rc = decode(bad[i].body, &args, &why);
        cr_expect_eq(rc, bad[i].rc, "body %zu (%s): rc %d, why '%s'", i, bad[i].body, rc, why.text);
        cr_expect(strstr(why.text, bad[i].why) != NULL, "body %zu: why '%s', want '%s'", i,
                  why.text, bad[i].why);
        if (rc == GX_OK) {
            gx_ext_args_release(&args);
        }
    }
}

Test(extender, pod_decode_errors_are_prefixed_with_pod)
{
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    enum gx_err rc =
        decode("{\"Pod\":{\"metadata\":{\"name\":5}},\"NodeNames\":[\"a\"]}", &args, &why);

    cr_expect_neq(rc, GX_OK);
    cr_expect_eq(strncmp(why.text, "Pod: ", 5), 0, "why '%s'", why.text);
    if (rc == GX_OK) {
        gx_ext_args_release(&args);
    }
}

/* Parse @out as JSON and require exactly the five filter-result keys in order. */
static cJSON *
parse_filter_result(const struct gx_buf *out)
{
    char keys[256];
    cJSON *doc;

    cr_assert_null(memchr(out->data, '%', out->len), "'%%' in %s", out->data);
    doc = cJSON_ParseWithLength(out->data, out->len);
    cr_assert_not_null(doc, "not JSON: %s", out->data);
    cr_assert(cJSON_IsObject(doc));
    keys_of(doc, keys, sizeof(keys));
    cr_expect_str_eq(keys, "Nodes,NodeNames,FailedNodes,FailedAndUnresolvableNodes,Error");
    return doc;
}

/* The filter result for the node-cache fixture's three nodes with verdicts @v, parsed. */
static cJSON *
filter_nodecache(const struct gx_ext_filter_verdict v[3])
{
    size_t len;
    char *body = gx_fixture("extender-filter-args-nodecache.json", &len);
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    cJSON *doc;

    cr_assert_eq(gx_ext_decode_args(body, len, DEPTH, &args, &why), GX_OK, "%s", why.text);
    gx_buf_init(&out, 1 << 20);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    doc = parse_filter_result(&out);
    gx_buf_release(&out);
    gx_ext_args_release(&args);
    free(body);
    return doc;
}

Test(extender, encodes_filter_result_in_node_names_mode)
{
    const struct gx_ext_filter_verdict v[3] = {
        {.keep = true},
        {.keep = false, .reason = "GPU utilization above 90%"},
        {.keep = false, .unresolvable = true, .reason = "no GPU"},
    };
    cJSON *doc = filter_nodecache(v), *names, *failed, *unres;

    cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "Nodes")));
    names = cJSON_GetObjectItemCaseSensitive(doc, "NodeNames");
    cr_assert(cJSON_IsArray(names));
    cr_assert_eq(cJSON_GetArraySize(names), 1);
    cr_expect_str_eq(cJSON_GetArrayItem(names, 0)->valuestring, "gpu-node-a");
    failed = cJSON_GetObjectItemCaseSensitive(doc, "FailedNodes");
    cr_assert_eq(cJSON_GetArraySize(failed), 1);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(failed, "gpu-node-b")->valuestring,
                     "GPU utilization above 90 percent");
    unres = cJSON_GetObjectItemCaseSensitive(doc, "FailedAndUnresolvableNodes");
    cr_assert_eq(cJSON_GetArraySize(unres), 1);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(unres, "gpu-node-c")->valuestring, "no GPU");
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(doc, "Error")->valuestring, "");
    cJSON_Delete(doc);
}

Test(extender, leaves_an_unlisted_rejection_out_of_both_maps)
{
    const struct gx_ext_filter_verdict v[3] = {
        {.keep = false, .unlisted = true, .reason = "gang member placed on another node"},
        {.keep = true},
        {.keep = false, .unlisted = true, .unresolvable = true, .reason = "x"},
    };
    cJSON *doc = filter_nodecache(v), *names;

    names = cJSON_GetObjectItemCaseSensitive(doc, "NodeNames");
    cr_assert_eq(cJSON_GetArraySize(names), 1);
    cr_expect_str_eq(cJSON_GetArrayItem(names, 0)->valuestring, "gpu-node-b");
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "FailedNodes")), 0);
    cr_expect_eq(
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "FailedAndUnresolvableNodes")), 0);
    cJSON_Delete(doc);
}

Test(extender, encodes_filter_result_in_nodes_mode_with_verbatim_items)
{
    size_t len;
    char *body = gx_fixture("extender-filter-args.json", &len);
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    const struct gx_ext_filter_verdict v[3] = {
        {.keep = true},
        {.keep = false, .reason = "no GPU time slot available"},
        {.keep = true},
    };
    cJSON *doc, *nodes, *items, *orig, *orig_items;
    char keys[128];

    cr_assert_eq(gx_ext_decode_args(body, len, DEPTH, &args, &why), GX_OK, "%s", why.text);
    gx_buf_init(&out, 1 << 20);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    doc = parse_filter_result(&out);
    nodes = cJSON_GetObjectItemCaseSensitive(doc, "Nodes");
    cr_assert(cJSON_IsObject(nodes));
    keys_of(nodes, keys, sizeof(keys));
    cr_expect_str_eq(keys, "metadata,items");
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(nodes, "metadata")), 0);
    items = cJSON_GetObjectItemCaseSensitive(nodes, "items");
    cr_assert_eq(cJSON_GetArraySize(items), 2);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "NodeNames")));
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(doc, "FailedNodes"), "gpu-node-b")
                         ->valuestring,
                     "no GPU time slot available");
    cr_expect_eq(
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "FailedAndUnresolvableNodes")), 0);
    /* Kept items are byte-identical to the request's spans, in order, comma-joined. */
    {
        const char *prefix = "{\"Nodes\":{\"metadata\":{},\"items\":[";
        char *expect = malloc(args.nodes[0].item_len + args.nodes[2].item_len + 2);
        size_t n = 0;
        cr_assert_not_null(expect);
        memcpy(expect, body + args.nodes[0].item_off, args.nodes[0].item_len);
        n += args.nodes[0].item_len;
        expect[n++] = ',';
        memcpy(expect + n, body + args.nodes[2].item_off, args.nodes[2].item_len);
        n += args.nodes[2].item_len;
        expect[n] = '\0';
        cr_expect_not_null(strstr(out.data, expect));
        cr_expect_eq(strncmp(out.data, prefix, strlen(prefix)), 0);
        cr_expect_eq(memcmp(out.data + strlen(prefix), expect, n), 0);
        free(expect);
    }
    orig = cJSON_ParseWithLength(body, len);
    orig_items =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(orig, "Nodes"), "items");
    cr_expect(cJSON_Compare(cJSON_GetArrayItem(items, 0), cJSON_GetArrayItem(orig_items, 0), true));
    cr_expect(cJSON_Compare(cJSON_GetArrayItem(items, 1), cJSON_GetArrayItem(orig_items, 2), true));
    cJSON_Delete(orig);
    cJSON_Delete(doc);
    gx_buf_release(&out);
    gx_ext_args_release(&args);
    free(body);
}

Test(extender, encodes_all_rejected_and_default_reason)
{
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    const struct gx_ext_filter_verdict v[2] = {{.keep = false}, {.keep = false, .reason = ""}};

    cr_assert_eq(decode("{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"a\"}},"
                        "{\"metadata\":{\"name\":\"b\"}}]}}",
                        &args, &why),
                 GX_OK, "%s", why.text);
    gx_buf_init(&out, 4096);
    cr_assert_eq(gx_ext_encode_filter(&out, "unused-when-nothing-kept", &args, v), GX_OK);
    cr_expect_str_eq(out.data, "{\"Nodes\":{\"metadata\":{},\"items\":[]},\"NodeNames\":null,"
                               "\"FailedNodes\":{\"a\":\"rejected by gpu-extender\",\"b\":"
                               "\"rejected by gpu-extender\"},\"FailedAndUnresolvableNodes\":{},"
                               "\"Error\":\"\"}");
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

Test(extender, encodes_duplicate_node_names_without_crashing)
{
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    const struct gx_ext_filter_verdict v[2] = {{.keep = true}, {.keep = false, .reason = "x"}};
    cJSON *doc;

    const char *body = "{\"Pod\":{},\"NodeNames\":[\"a\",\"a\"]}";

    cr_assert_eq(decode(body, &args, &why), GX_OK);
    gx_buf_init(&out, 4096);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    doc = parse_filter_result(&out);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "NodeNames")), 1);
    cJSON_Delete(doc);
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

Test(extender, kept_names_are_echoed_in_runs_whatever_the_spacing)
{
    const char *body = "{\"Pod\":{},\"NodeNames\":[ \"a\" ,\n \"b\", \"c\" ,\"d\"\t]}";
    const struct gx_ext_filter_verdict v[4] = {
        {.keep = true}, {.keep = true}, {.keep = false, .reason = "x"}, {.keep = true}};
    const char *want[] = {"a", "b", "d"};
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    cJSON *doc, *names;

    cr_assert_eq(decode(body, &args, &why), GX_OK, "%s", why.text);
    gx_buf_init(&out, 4096);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    doc = parse_filter_result(&out);
    names = cJSON_GetObjectItemCaseSensitive(doc, "NodeNames");
    cr_assert_eq(cJSON_GetArraySize(names), 3, "%s", out.data);
    for (int i = 0; i < 3; i++) {
        cr_expect_str_eq(cJSON_GetArrayItem(names, i)->valuestring, want[i]);
    }
    cr_expect(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "FailedNodes"),
                                               "c") != NULL);
    cJSON_Delete(doc);
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

/* An escaped name is encoded again, not echoed: a lone surrogate or \u0000 is one strict readers
 * refuse. */
Test(extender, escaped_names_are_encoded_again_in_filter_and_prioritize)
{
    const char *body = "{\"Pod\":{},\"NodeNames\":[\"a\",\"\\ud800c\\u0000d\",\"b\"]}";
    const struct gx_ext_filter_verdict v[3] = {{.keep = true}, {.keep = true}, {.keep = true}};
    const int scores[3] = {1, 2, 3};
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    cJSON *doc;

    cr_assert_eq(decode(body, &args, &why), GX_OK, "%s", why.text);
    gx_buf_init(&out, 4096);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    cr_expect(strstr(out.data, "\\ud800") == NULL, "%s", out.data);
    doc = cJSON_Parse(out.data);
    cr_assert_not_null(doc, "a strict reader takes it: %s", out.data);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "NodeNames")), 3);
    cJSON_Delete(doc);
    gx_buf_reset(&out);
    cr_assert_eq(gx_ext_encode_prioritize(&out, body, &args, scores), GX_OK);
    doc = cJSON_Parse(out.data);
    cr_assert_not_null(doc, "%s", out.data);
    cr_expect_eq(cJSON_GetArraySize(doc), 3);
    cJSON_Delete(doc);
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

Test(extender, encode_failure_leaves_buffer_unchanged)
{
    size_t len;
    char *body = gx_fixture("extender-filter-args.json", &len);
    struct gx_ext_args args;
    struct gx_buf out;
    const struct gx_ext_filter_verdict v[3] = {{.keep = true}, {.keep = true}, {.keep = true}};

    cr_assert_eq(gx_ext_decode_args(body, len, DEPTH, &args, NULL), GX_OK);
    gx_buf_init(&out, 100);
    cr_assert_eq(gx_buf_adds(&out, "prefix"), GX_OK);
    cr_expect_eq(gx_ext_encode_filter(&out, body, &args, v), GX_ETOOBIG);
    cr_expect_eq(out.len, 6);
    cr_expect_str_eq(out.data, "prefix");
    gx_buf_release(&out);
    gx_ext_args_release(&args);
    free(body);
}

Test(extender, encodes_prioritize_with_clamped_integer_scores_leaving_out_zeros)
{
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    const int scores[5] = {-3, 7, 42, 0, 10};
    const int none[2] = {0, -1};
    /* names echoed as sent: the escape stays, the invalid byte becomes U+FFFD */
    const char *body = "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\\u003cd\",\"z\",\"e\xff\"]}";

    cr_assert_eq(decode(body, &args, &why), GX_OK, "%s", why.text);
    gx_buf_init(&out, 4096);
    cr_assert_eq(gx_ext_encode_prioritize(&out, body, &args, scores), GX_OK);
    cr_expect_str_eq(out.data, "[{\"Host\":\"b\",\"Score\":7},"
                               "{\"Host\":\"c\\u003cd\",\"Score\":10},"
                               "{\"Host\":\"e\xef\xbf\xbd\",\"Score\":10}]");
    gx_buf_reset(&out);
    args.n_nodes = 2;
    cr_assert_eq(gx_ext_encode_prioritize(&out, body, &args, none), GX_OK);
    cr_expect_str_eq(out.data, "[]");
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

Test(extender, encodes_prioritize_for_nodes_mode_and_empty_lists)
{
    size_t len;
    char *body = gx_fixture("extender-filter-args.json", &len);
    struct gx_ext_args args;
    struct gx_buf out;
    const int scores[3] = {1, 2, 3};
    cJSON *doc;

    cr_assert_eq(gx_ext_decode_args(body, len, DEPTH, &args, NULL), GX_OK);
    gx_buf_init(&out, 4096);
    cr_assert_eq(gx_ext_encode_prioritize(&out, body, &args, scores), GX_OK);
    doc = cJSON_Parse(out.data);
    cr_assert(cJSON_IsArray(doc));
    cr_assert_eq(cJSON_GetArraySize(doc), 3);
    cr_expect_str_eq(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(doc, 2), "Host")->valuestring,
        "gpu-node-c");
    cr_expect_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(doc, 2), "Score")->valueint,
                 3);
    cJSON_Delete(doc);
    gx_ext_args_release(&args);
    free(body);

    cr_assert_eq(decode("{\"Pod\":{},\"NodeNames\":[]}", &args, NULL), GX_OK);
    gx_buf_reset(&out);
    cr_assert_eq(gx_ext_encode_prioritize(&out, "", &args, NULL), GX_OK);
    cr_expect_str_eq(out.data, "[]");
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

Test(extender, decodes_bind_args)
{
    const char *body = " {\"podname\":\"p1\",\"PodNamespace\":\"default\",\"PODUID\":\"6f1c\","
                       "\"Node\":\"x\",\"Node\":\"node-a\",\"Extra\":[1]} ";
    struct gx_ext_bind_args b;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_ext_decode_bind(body, strlen(body), DEPTH, &b, &why), GX_OK, "%s", why.text);
    cr_expect_str_eq(b.pod_name, "p1");
    cr_expect_str_eq(b.pod_namespace, "default");
    cr_expect_str_eq(b.pod_uid, "6f1c");
    cr_expect_str_eq(b.node, "node-a");
    gx_ext_bind_args_release(&b);
}

Test(extender, rejects_bad_bind_args)
{
    static const struct {
        const char *body;
        enum gx_err rc;
        const char *why;
    } bad[] = {
        {"[]", GX_EINVAL, "ExtenderBindingArgs must be a JSON object"},
        {"{\"PodName\":\"p\"", GX_EPARSE, "offset"},
        {"{\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"n\"}", GX_EINVAL,
         "PodName is missing"},
        {"{\"PodName\":\"p\",\"PodUID\":\"u\",\"Node\":\"n\"}", GX_EINVAL,
         "PodNamespace is missing"},
        {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"Node\":\"n\"}", GX_EINVAL,
         "PodUID is missing"},
        {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"u\"}", GX_EINVAL,
         "Node is missing"},
        {"{\"PodName\":\"\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"n\"}", GX_EINVAL,
         "PodName must be a non-empty string"},
        {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":null,\"Node\":\"n\"}", GX_EINVAL,
         "PodUID must be a non-empty string"},
        {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":7}", GX_EINVAL,
         "Node must be a string"},
        {"{\"PodName\":\"p\",\"PodNamespace\":\"d\",\"PodUID\":\"u\",\"Node\":\"n\"}]", GX_EPARSE,
         "unexpected data after the JSON object"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        struct gx_ext_bind_args b;
        struct gx_why why = {{0}};
        enum gx_err rc = gx_ext_decode_bind(bad[i].body, strlen(bad[i].body), DEPTH, &b, &why);
        cr_expect_eq(rc, bad[i].rc, "body %zu: rc %d why '%s'", i, rc, why.text);
        cr_expect(strstr(why.text, bad[i].why) != NULL, "body %zu: why '%s', want '%s'", i,
                  why.text, bad[i].why);
        if (rc == GX_OK) {
            gx_ext_bind_args_release(&b);
        }
    }
}

Test(extender, encodes_bind_result_and_http_error)
{
    struct gx_buf out;

    gx_buf_init(&out, 4096);
    cr_assert_eq(gx_ext_encode_bind_result(&out, NULL), GX_OK);
    cr_expect_str_eq(out.data, "{\"Error\":\"\"}");
    gx_buf_reset(&out);
    cr_assert_eq(gx_ext_encode_bind_result(&out, ""), GX_OK);
    cr_expect_str_eq(out.data, "{\"Error\":\"\"}");
    gx_buf_reset(&out);
    cr_assert_eq(gx_ext_encode_bind_result(&out, "ledger 100% full: \"gpu\"%s"), GX_OK);
    cr_expect_str_eq(out.data, "{\"Error\":\"ledger 100 percent full: \\\"gpu\\\" percents\"}");
    gx_buf_reset(&out);
    cr_assert_eq(gx_ext_encode_http_error(&out, 400, "Pod is missing"), GX_OK);
    cr_expect_str_eq(out.data, "{\"error\":\"Pod is missing\",\"status\":400}");
    gx_buf_reset(&out);
    cr_assert_eq(gx_ext_encode_http_error(&out, 413, "body over 5%"), GX_OK);
    cr_expect_str_eq(out.data, "{\"error\":\"body over 5 percent\",\"status\":413}");
    gx_buf_release(&out);
}

Test(extender, node_names_with_escapes_and_invalid_utf8_round_trip)
{
    /* Escapes (decoded), raw invalid UTF-8 (kept as bytes, replaced on output). */
    const char *body = "{\"Pod\":{},\"NodeNames\":[\"plain-node-0001\",\"tab\\there\","
                       "\"bad\xff\xfe-utf8\",\"a<b>&c\",\"\\u00e9t\\u00e9\",\"x\"]}";
    const char *want[] = {"plain-node-0001", "tab\there",         "bad\xff\xfe-utf8",
                          "a<b>&c",          "\xc3\xa9t\xc3\xa9", "x"};
    struct gx_ext_filter_verdict v[6] = {{.keep = true}, {.keep = true}, {.keep = true},
                                         {.keep = true}, {.keep = true}, {.keep = true}};
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    cJSON *doc, *names;

    cr_assert_eq(decode(body, &args, &why), GX_OK, "%s", why.text);
    cr_assert_eq(args.n_nodes, 6);
    for (size_t i = 0; i < 6; i++) {
        cr_expect_str_eq(args.nodes[i].name, want[i]);
        cr_expect_eq(args.nodes[i].name_len, strlen(want[i]));
    }
    gx_buf_init(&out, 1 << 20);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    /* echoed as sent: escapes kept, invalid bytes replaced by U+FFFD */
    cr_expect(strstr(out.data, "\"tab\\there\"") != NULL, "%s", out.data);
    cr_expect(strchr(out.data, '\xff') == NULL && strchr(out.data, '\xfe') == NULL);
    doc = parse_filter_result(&out);
    names = cJSON_GetObjectItemCaseSensitive(doc, "NodeNames");
    cr_assert_eq(cJSON_GetArraySize(names), 6);
    cr_expect_str_eq(cJSON_GetArrayItem(names, 1)->valuestring, "tab\there");
    cr_expect_str_eq(cJSON_GetArrayItem(names, 2)->valuestring, "bad\xef\xbf\xbd\xef\xbf\xbd-utf8");
    cr_expect_str_eq(cJSON_GetArrayItem(names, 3)->valuestring, "a<b>&c");
    cr_expect_str_eq(cJSON_GetArrayItem(names, 4)->valuestring, "\xc3\xa9t\xc3\xa9");
    cJSON_Delete(doc);
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

Test(extender, node_names_report_the_index_of_a_bad_element)
{
    static const struct {
        const char *body;
        enum gx_err rc;
        const char *why;
    } cases[] = {
        {"{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",7]}", GX_EINVAL, "NodeNames[2] must be a string"},
        {"{\"Pod\":{},\"NodeNames\":[{}]}", GX_EINVAL, "NodeNames[0] must be a string"},
        {"{\"Pod\":{},\"NodeNames\":[\"a\",\"\"]}", GX_EINVAL, "NodeNames[1] is empty"},
        {"{\"Pod\":{},\"NodeNames\":[\"a\",tru]}", GX_EPARSE, "expected true"},
        {"{\"Pod\":{},\"NodeNames\":[\"a\\x\"]}", GX_EPARSE, "a valid escape"},
        {"{\"Pod\":{},\"NodeNames\":[\"a\",]}", GX_EPARSE, "expected a value"},
        {"{\"Pod\":{},\"NodeNames\":[\"a\"", GX_EPARSE, "',' or ']'"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(cases); i++) {
        struct gx_ext_args args;
        struct gx_why why = {{0}};
        cr_expect_eq(decode(cases[i].body, &args, &why), cases[i].rc, "case %zu", i);
        cr_expect(strstr(why.text, cases[i].why) != NULL, "case %zu: '%s'", i, why.text);
    }
}

Test(extender, shared_reasons_are_encoded_once_and_copied)
{
    const char *body = "{\"Pod\":{},\"NodeNames\":[\"n0\",\"n1\",\"n2\",\"n3\",\"n4\"]}";
    static const char r1[] = "too hot: 95%", r2[] = "no \"free\" card";
    const struct gx_ext_filter_verdict v[5] = {
        {.keep = false, .reason = r1},
        {.keep = false, .reason = r1},
        {.keep = false, .reason = r2},
        {.keep = false, .reason = r1},
        {.keep = true},
    };
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    cJSON *doc, *failed;

    cr_assert_eq(decode(body, &args, &why), GX_OK, "%s", why.text);
    gx_buf_init(&out, 1 << 20);
    cr_assert_eq(gx_buf_adds(&out, "prefix:"), GX_OK);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    cr_assert(strncmp(out.data, "prefix:", 7) == 0);
    doc = cJSON_Parse(out.data + 7);
    cr_assert_not_null(doc);
    failed = cJSON_GetObjectItemCaseSensitive(doc, "FailedNodes");
    cr_assert_eq(cJSON_GetArraySize(failed), 4);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(failed, "n0")->valuestring,
                     "too hot: 95 percent");
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(failed, "n1")->valuestring,
                     "too hot: 95 percent");
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(failed, "n2")->valuestring,
                     "no \"free\" card");
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(failed, "n3")->valuestring,
                     "too hot: 95 percent");
    cJSON_Delete(doc);
    gx_buf_release(&out);
    gx_ext_args_release(&args);
}

Test(extender, filter_reply_fits_its_reservation)
{
    size_t len;
    char *body = gx_fixture("extender-filter-args-nodecache.json", &len);
    const struct gx_ext_filter_verdict v[3] = {{.keep = true}, {.keep = true}, {.keep = true}};
    struct gx_ext_args args;
    struct gx_why why = {{0}};
    struct gx_buf out;
    char *first;

    cr_assert_eq(gx_ext_decode_args(body, len, DEPTH, &args, &why), GX_OK, "%s", why.text);
    gx_buf_init(&out, 1 << 20);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    first = out.data;
    cr_expect_leq(out.len + 1, out.cap, "reply outgrew one reservation");
    gx_buf_reset(&out);
    cr_assert_eq(gx_ext_encode_filter(&out, body, &args, v), GX_OK);
    cr_expect_eq(out.data, first, "the second encode reallocated");
    gx_buf_release(&out);
    gx_ext_args_release(&args);
    free(body);
}

/* Build {"Pod":<pod>,"NodeNames":[n names]} or the Nodes form; caller frees. */
static char *
many_nodes_body(size_t n, bool items, const char *pod)
{
    size_t cap = n * 40 + strlen(pod) + 64, o = 0;
    char *b = malloc(cap);

    cr_assert_not_null(b);
    o += (size_t)snprintf(b + o, cap - o, "{\"Pod\":%s,%s", pod,
                          items ? "\"Nodes\":{\"items\":[" : "\"NodeNames\":[");
    for (size_t i = 0; i < n; i++) {
        o += (size_t)snprintf(b + o, cap - o,
                              items ? "%s{\"metadata\":{\"name\":\"n%zu\"}}" : "%s\"n%zu\"",
                              i ? "," : "", i);
    }
    (void)snprintf(b + o, cap - o, "]%s}", items ? "}" : "");
    return b;
}

Test(extender, caps_the_nodes_of_one_call)
{
    struct gx_ext_args args;
    struct gx_why why = {""};
    char *ok = many_nodes_body(GX_EXT_MAX_NODES, false, "{}");
    char *names = many_nodes_body(GX_EXT_MAX_NODES + 1, false, "{}");
    char *items = many_nodes_body(GX_EXT_MAX_NODES + 1, true, "{}");

    cr_assert_eq(decode(ok, &args, &why), GX_OK, "%s", why.text);
    cr_assert_eq(args.n_nodes, GX_EXT_MAX_NODES);
    gx_ext_args_release(&args);
    cr_assert_eq(decode(names, &args, &why), GX_ETOOBIG);
    cr_assert(strstr(why.text, "NodeNames holds more than 100000 names") != NULL, "%s", why.text);
    cr_assert_eq(decode(items, &args, &why), GX_ETOOBIG);
    cr_assert(strstr(why.text, "Nodes.items holds more than 100000 nodes") != NULL, "%s", why.text);
    free(ok);
    free(names);
    free(items);
}

Test(extender, caps_what_the_pod_may_hold)
{
    struct gx_ext_args args;
    struct gx_why why = {""};
    size_t n = GX_POD_MAX_VALUES, cap = n * 16 + 256, o = 0;
    char *pod = malloc(cap), *body;

    /* 100,000 containers: a tree of many times the body before the cap */
    cr_assert_not_null(pod);
    o += (size_t)snprintf(pod + o, cap - o, "{\"spec\":{\"containers\":[");
    for (size_t i = 0; i < n; i++) {
        o += (size_t)snprintf(pod + o, cap - o, "%s{\"name\":\"c\"}", i ? "," : "");
    }
    (void)snprintf(pod + o, cap - o, "]}}");
    body = many_nodes_body(1, false, pod);
    cr_assert_eq(decode(body, &args, &why), GX_ETOOBIG);
    cr_assert(strstr(why.text, "Pod") != NULL && strstr(why.text, "100000 JSON values") != NULL,
              "%s", why.text);
    free(body);
    free(pod);
}
