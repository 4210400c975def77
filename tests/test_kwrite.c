/* SPDX-License-Identifier: Apache-2.0 */
/* test_kwrite.c - the API request bodies: shape, escaping, optional fields. */
#include "gx_test.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "kwrite.h"

GX_SUITE(kwrite);

/* Parse @b as JSON (it must be valid) and return the tree; the caller frees it. */
static cJSON *
parsed(const struct gx_buf *b)
{
    cJSON *j = cJSON_ParseWithLength(b->data, b->len);

    cr_assert_not_null(j, "not JSON: %s", b->data);
    return j;
}

static const char *
str_at(const cJSON *j, const char *a, const char *b, const char *c)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);

    if (b != NULL) {
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    }
    if (c != NULL) {
        x = cJSON_GetObjectItemCaseSensitive(x, c);
    }
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

Test(kwrite, binding_escapes_peer_strings_and_names_the_node)
{
    struct gx_kv ann[] = {{"gpu-extender.io/gpu-index", "0,1"}};
    struct gx_kmeta m = {
        .name = "a\"b", .namespace = "ml", .uid = "u-1", .annotations = ann, .n_annotations = 1};
    struct gx_buf b;
    cJSON *j;

    gx_buf_init(&b, 4096);
    cr_assert_eq(gx_kwrite_binding(&b, &m, "gpu-a"), GX_OK);
    j = parsed(&b);
    cr_assert_str_eq(str_at(j, "kind", NULL, NULL), "Binding");
    cr_assert_str_eq(str_at(j, "metadata", "name", NULL), "a\"b");
    cr_assert_str_eq(str_at(j, "metadata", "uid", NULL), "u-1");
    cr_assert_str_eq(str_at(j, "metadata", "annotations", "gpu-extender.io/gpu-index"), "0,1");
    cr_assert_str_eq(str_at(j, "target", "name", NULL), "gpu-a");
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(j, "metadata"), "labels"));
    cJSON_Delete(j);
    gx_buf_release(&b);
}

Test(kwrite, lease_carries_its_resource_version_only_when_given)
{
    struct gx_kv lab[] = {{"gpu-extender.io/ledger", "true"}};
    struct gx_kmeta m = {.name = "gpu-extender-n1",
                         .namespace = "gpu-extender",
                         .resource_version = "7\"}",
                         .labels = lab,
                         .n_labels = 1};
    struct gx_buf b;
    cJSON *j;

    gx_buf_init(&b, 4096);
    cr_assert_eq(gx_kwrite_lease(&b, &m, "gpu-extender"), GX_OK);
    j = parsed(&b);
    cr_assert_str_eq(str_at(j, "metadata", "resourceVersion", NULL), "7\"}");
    cr_assert_str_eq(str_at(j, "metadata", "labels", "gpu-extender.io/ledger"), "true");
    cr_assert_str_eq(str_at(j, "spec", "holderIdentity", NULL), "gpu-extender");
    cJSON_Delete(j);
    gx_buf_reset(&b);
    m.resource_version = NULL;
    cr_assert_eq(gx_kwrite_lease(&b, &m, "gpu-extender"), GX_OK);
    j = parsed(&b);
    cr_assert_null(str_at(j, "metadata", "resourceVersion", NULL));
    cJSON_Delete(j);
    gx_buf_release(&b);
}

Test(kwrite, meta_patch_sets_only_labels_and_annotations)
{
    struct gx_kv lab[] = {{"gpu-extender.io/managed", "true"}};
    struct gx_kv ann[] = {{"gpu-extender.io/requeued-at", "17"}};
    struct gx_kmeta m = {.name = "ignored", .labels = lab, .n_labels = 1};
    struct gx_buf b;

    gx_buf_init(&b, 4096);
    cr_assert_eq(gx_kwrite_meta_patch(&b, &m), GX_OK);
    cr_assert_str_eq(b.data, "{\"metadata\":{\"labels\":{\"gpu-extender.io/managed\":\"true\"}}}");
    gx_buf_reset(&b);
    m.n_labels = 0;
    m.annotations = ann;
    m.n_annotations = 1;
    cr_assert_eq(gx_kwrite_meta_patch(&b, &m), GX_OK);
    cr_assert_str_eq(b.data,
                     "{\"metadata\":{\"annotations\":{\"gpu-extender.io/requeued-at\":\"17\"}}}");
    gx_buf_reset(&b);
    m.n_labels = 1;
    cr_assert_eq(gx_kwrite_meta_patch(&b, &m), GX_OK);
    cr_assert_str_eq(b.data, "{\"metadata\":{\"labels\":{\"gpu-extender.io/managed\":\"true\"},"
                             "\"annotations\":{\"gpu-extender.io/requeued-at\":\"17\"}}}");
    gx_buf_release(&b);
}

Test(kwrite, a_full_buffer_fails_cleanly)
{
    struct gx_kmeta m = {.name = "a-long-enough-name", .namespace = "ns"};
    struct gx_buf b;

    gx_buf_init(&b, 16);
    cr_assert_neq(gx_kwrite_binding(&b, &m, "node"), GX_OK);
    gx_buf_release(&b);
}

Test(kwrite, pod_path_names_the_subresource_and_says_when_it_did_not_fit)
{
    char path[64];

    cr_assert_eq(gx_kwrite_pod_path(path, sizeof(path), "ml", "p", "/binding"),
                 strlen("/api/v1/namespaces/ml/pods/p/binding"));
    cr_assert_str_eq(path, "/api/v1/namespaces/ml/pods/p/binding");
    cr_assert_geq(gx_kwrite_pod_path(path, 16, "ml", "p", ""), 16);
}

Test(kwrite, lease_path_names_one_lease_or_the_collection)
{
    char p[256];

    gx_kwrite_lease_path(p, sizeof(p), "gpu-extender", "gpu-extender-leader");
    cr_assert_str_eq(p, "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases/"
                        "gpu-extender-leader");
    gx_kwrite_lease_path(p, sizeof(p), "gpu-extender", "");
    cr_assert_str_eq(p, "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases");
}
