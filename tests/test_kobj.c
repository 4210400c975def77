/* SPDX-License-Identifier: Apache-2.0 */
/* test_kobj.c - Pod, Node, lists and watch events decoded from JSON. */
#include "gx_test.h"

#include <string.h>

#include "buf.h"
#include "kobj.h"

GX_SUITE(kobj);

#define DEPTH 64

static struct gx_arena arena;

static void
setup(void)
{
    gx_arena_init(&arena, 0);
}

static void
teardown(void)
{
    gx_arena_release(&arena);
}

/* An exact-length heap copy of @s, without a NUL, so ASan catches over-reads. */
static char *
unterminated(const char *s, size_t len)
{
    char *p = malloc(len != 0 ? len : 1);

    cr_assert_not_null(p);
    memcpy(p, s, len);
    return p;
}

static enum gx_err
decode_pod(const char *json, struct gx_pod *pod, struct gx_why *why)
{
    size_t len = strlen(json);
    char *buf = unterminated(json, len);
    enum gx_err rc = gx_kobj_decode_pod(buf, len, DEPTH, &arena, pod, why);

    free(buf);
    return rc;
}

static enum gx_err
decode_node(const char *json, struct gx_node_info *node, struct gx_why *why)
{
    size_t len = strlen(json);
    char *buf = unterminated(json, len);
    enum gx_err rc = gx_kobj_decode_node(buf, len, DEPTH, &arena, node, why);

    free(buf);
    return rc;
}

static enum gx_err
decode_event(const char *json, enum gx_kind kind, struct gx_watch_event *ev, struct gx_why *why)
{
    size_t len = strlen(json);
    char *buf = unterminated(json, len);
    enum gx_err rc = gx_kobj_decode_event(buf, len, kind, DEPTH, &arena, ev, why);

    free(buf);
    return rc;
}

static const struct gx_node_info *
find_node(const struct gx_node_info *nodes, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].name, name) == 0) {
            return &nodes[i];
        }
    }
    cr_assert_fail("node %s not found", name);
    return NULL;
}

Test(kobj, decodes_nodelist_fixture, .init = setup, .fini = teardown)
{
    size_t len, n = 0;
    char *text = gx_fixture("nodelist.json", &len);
    char *buf = unterminated(text, len);
    struct gx_node_info *nodes = NULL;
    const char *rv = NULL;
    struct gx_why why = {{0}};
    const struct gx_node_info *a, *b, *c, *d;

    cr_assert_eq(gx_kobj_decode_node_list(buf, len, DEPTH, &arena, &nodes, &n, &rv, &why), GX_OK,
                 "%s", why.text);
    free(buf);
    free(text);
    cr_assert_eq(n, 4);
    cr_assert_str_eq(rv, "48213402");
    cr_assert_str_eq(nodes[0].name, "gpu-node-a");
    cr_assert_str_eq(nodes[1].name, "gpu-node-b");
    cr_assert_str_eq(nodes[2].name, "gpu-node-c");
    cr_assert_str_eq(nodes[3].name, "cpu-node-d");
    for (size_t i = 0; i < n; i++) {
        cr_assert(nodes[i].ready, "%s ready", nodes[i].name);
        cr_assert_not(nodes[i].unschedulable);
        cr_assert_gt(nodes[i].n_labels, 50);
        for (size_t j = 1; j < nodes[i].n_labels; j++) {
            cr_assert_lt(strcmp(nodes[i].labels[j - 1].key, nodes[i].labels[j].key), 0,
                         "%s labels not sorted at %zu", nodes[i].name, j);
        }
    }
    a = find_node(nodes, n, "gpu-node-a");
    b = find_node(nodes, n, "gpu-node-b");
    c = find_node(nodes, n, "gpu-node-c");
    d = find_node(nodes, n, "cpu-node-d");
    cr_assert_eq(a->n_labels, 98);
    cr_assert_str_eq(a->labels[0].key, "beta.kubernetes.io/arch");
    cr_assert_str_eq(a->resource_version, "48213120");
    cr_assert_str_eq(gx_kv_get(c->labels, c->n_labels, "nvidia.com/gpu.replicas"), "4");
    cr_assert_str_eq(gx_kv_get(a->labels, a->n_labels, "nvidia.com/gpu.product"),
                     "NVIDIA-GeForce-RTX-4090");
    cr_assert_str_eq(gx_kv_get(b->allocatable, b->n_allocatable, "nvidia.com/gpu"), "8");
    cr_assert_str_eq(gx_kv_get(a->allocatable, a->n_allocatable, "nvidia.com/gpu"), "2");
    cr_assert_str_eq(gx_kv_get(a->capacity, a->n_capacity, "memory"), "263855160Ki");
    cr_assert_eq(a->n_taints, 1);
    cr_assert_str_eq(a->taints[0].key, "nvidia.com/gpu");
    cr_assert_str_eq(a->taints[0].value, "present");
    cr_assert_str_eq(a->taints[0].effect, "NoSchedule");
    cr_assert_eq(d->n_taints, 0);
    cr_assert_null(gx_kv_get(d->allocatable, d->n_allocatable, "nvidia.com/gpu"));
    cr_assert_null(gx_kv_get(d->labels, d->n_labels, "nvidia.com/gpu.replicas"));
}

Test(kobj, decodes_gpu_pod_fixture, .init = setup, .fini = teardown)
{
    size_t len;
    char *text = gx_fixture("pod-gpu.json", &len);
    char *buf = unterminated(text, len);
    struct gx_pod pod;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_pod(buf, len, DEPTH, &arena, &pod, &why), GX_OK, "%s", why.text);
    free(buf);
    free(text);
    cr_assert_str_eq(pod.name, "llm-eval-job-8f4kq");
    cr_assert_str_eq(pod.namespace, "ml-research");
    cr_assert_str_eq(pod.uid, "0f3c7a92-5e1b-4d68-a4c9-7b2e8d1f6a05");
    cr_assert_str_eq(pod.resource_version, "48213395");
    cr_assert_str_eq(pod.phase, "Pending");
    cr_assert_null(pod.node_name);
    cr_assert_not(pod.deleting);
    cr_assert_eq(pod.n_labels, 5);
    cr_assert_str_eq(gx_kv_get(pod.labels, pod.n_labels, "job-name"), "llm-eval-job");
    cr_assert_eq(pod.n_annotations, 0);
    cr_assert_eq(pod.n_init_containers, 0);
    cr_assert_eq(pod.n_containers, 1);
    cr_assert_str_eq(pod.containers[0].name, "eval");
    cr_assert_not(pod.containers[0].restartable);
    cr_assert_eq(pod.containers[0].n_limits, 3);
    cr_assert_str_eq(
        gx_kv_get(pod.containers[0].limits, pod.containers[0].n_limits, "nvidia.com/gpu"), "1");
    cr_assert_str_eq(gx_kv_get(pod.containers[0].requests, pod.containers[0].n_requests, "cpu"),
                     "4");
}

Test(kobj, decodes_pod_fields_sidecars_and_numbers, .init = setup, .fini = teardown)
{
    struct gx_pod pod;
    struct gx_why why = {{0}};
    const char *json =
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\","
        "\"resourceVersion\":\"77\",\"deletionTimestamp\":\"2026-08-24T10:15:27Z\","
        "\"annotations\":{\"gpu-extender.io/time-slices\":\"2\"},\"labels\":null},"
        "\"spec\":{\"nodeName\":\"gpu-node-a\",\"overhead\":{\"cpu\":\"250m\"},"
        "\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\","
        "\"resources\":{\"requests\":{\"nvidia.com/gpu\":1}}},"
        "{\"name\":\"setup\",\"restartPolicy\":\"Never\",\"resources\":{}}],"
        "\"containers\":[{\"name\":\"main\",\"restartPolicy\":\"Always\","
        "\"resources\":{\"limits\":{\"nvidia.com/gpu\":2,\"cpu\":0.5,\"big\":1e20}}}]},"
        "\"status\":{\"phase\":\"Running\"}}  \n";

    cr_assert_eq(decode_pod(json, &pod, &why), GX_OK, "%s", why.text);
    cr_assert_str_eq(pod.uid, "u1");
    cr_assert_str_eq(pod.resource_version, "77");
    cr_assert(pod.deleting);
    cr_assert_str_eq(pod.node_name, "gpu-node-a");
    cr_assert_str_eq(pod.phase, "Running");
    cr_assert_eq(pod.n_labels, 0);
    cr_assert_str_eq(gx_kv_get(pod.annotations, pod.n_annotations, "gpu-extender.io/time-slices"),
                     "2");
    cr_assert_str_eq(gx_kv_get(pod.overhead, pod.n_overhead, "cpu"), "250m");
    cr_assert_eq(pod.n_init_containers, 2);
    cr_assert(pod.init_containers[0].restartable);
    cr_assert_not(pod.init_containers[1].restartable);
    cr_assert_str_eq(pod.init_containers[1].name, "setup");
    cr_assert_str_eq(gx_kv_get(pod.init_containers[0].requests, pod.init_containers[0].n_requests,
                               "nvidia.com/gpu"),
                     "1");
    /* restartPolicy on an app container does not make it a sidecar. */
    cr_assert_not(pod.containers[0].restartable);
    cr_assert_str_eq(
        gx_kv_get(pod.containers[0].limits, pod.containers[0].n_limits, "nvidia.com/gpu"), "2");
    cr_assert_str_eq(gx_kv_get(pod.containers[0].limits, pod.containers[0].n_limits, "cpu"), "0.5");
    cr_assert_str_eq(gx_kv_get(pod.containers[0].limits, pod.containers[0].n_limits, "big"),
                     "1e+20");
}

Test(kobj, defaults_missing_pod_metadata_to_empty, .init = setup, .fini = teardown)
{
    struct gx_pod pod;
    struct gx_why why = {{0}};

    cr_assert_eq(decode_pod("{\"spec\":{\"nodeName\":\"\"}}", &pod, &why), GX_OK, "%s", why.text);
    cr_assert_str_eq(pod.name, "");
    cr_assert_str_eq(pod.namespace, "");
    cr_assert_str_eq(pod.uid, "");
    cr_assert_str_eq(pod.phase, "");
    cr_assert_str_eq(pod.resource_version, "");
    cr_assert_null(pod.node_name);
    cr_assert_eq(pod.n_containers, 0);
    cr_assert_not(pod.deleting);
}

struct type_case {
    const char *json;
    const char *why;
};

Test(kobj, rejects_wrong_pod_field_types_naming_the_path, .init = setup, .fini = teardown)
{
    static const struct type_case cases[] = {
        {"{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"resources\":"
         "{\"limits\":[]}}]}}",
         "spec.containers[1].resources.limits: must be an object"},
        {"{\"metadata\":{\"name\":5}}", "metadata.name: must be a string"},
        {"{\"metadata\":{\"uid\":{}}}", "metadata.uid: must be a string"},
        {"{\"metadata\":{\"labels\":{\"a\":1}}}", "metadata.labels[\"a\"]: must be a string"},
        {"{\"metadata\":{\"annotations\":\"x\"}}", "metadata.annotations: must be an object"},
        {"{\"metadata\":{\"deletionTimestamp\":1}}",
         "metadata.deletionTimestamp: must be a string"},
        {"{\"metadata\":[]}", "metadata: must be an object"},
        {"{\"spec\":{\"containers\":{}}}", "spec.containers: must be an array"},
        {"{\"spec\":{\"containers\":[1]}}", "spec.containers[0]: must be an object"},
        {"{\"spec\":{\"initContainers\":[{\"restartPolicy\":true}]}}",
         "spec.initContainers[0].restartPolicy: must be a string"},
        {"{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":true}}}]}}",
         "spec.containers[0].resources.requests[\"cpu\"]: must be a quantity string"},
        {"{\"spec\":{\"containers\":[{\"resources\":7}]}}",
         "spec.containers[0].resources: must be an object"},
        {"{\"spec\":{\"nodeName\":false}}", "spec.nodeName: must be a string"},
        {"{\"spec\":{\"overhead\":{\"cpu\":[]}}}",
         "spec.overhead[\"cpu\"]: must be a quantity string"},
        {"{\"status\":{\"phase\":1}}", "status.phase: must be a string"},
        {"[]", "pod: must be an object"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(cases); i++) {
        struct gx_pod pod = {.name = "sentinel"};
        struct gx_why why = {{0}};

        cr_assert_eq(decode_pod(cases[i].json, &pod, &why), GX_EINVAL, "%s", cases[i].json);
        cr_assert_str_eq(why.text, cases[i].why);
        cr_assert_str_eq(pod.name, "sentinel", "output written on error");
    }
}

Test(kobj, rejects_wrong_node_field_types_naming_the_path, .init = setup, .fini = teardown)
{
    static const struct type_case cases[] = {
        {"{\"spec\":{\"unschedulable\":\"yes\"}}", "spec.unschedulable: must be a boolean"},
        {"{\"spec\":{\"taints\":[{\"key\":1}]}}", "spec.taints[0].key: must be a string"},
        {"{\"spec\":{\"taints\":[\"x\"]}}", "spec.taints[0]: must be an object"},
        {"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":true}]}}",
         "status.conditions[0].status: must be a string"},
        {"{\"status\":{\"allocatable\":{\"nvidia.com/gpu\":null}}}",
         "status.allocatable[\"nvidia.com/gpu\"]: must be a quantity string"},
        {"{\"status\":{\"capacity\":[]}}", "status.capacity: must be an object"},
        {"{\"metadata\":{\"labels\":{\"k\":true}}}", "metadata.labels[\"k\"]: must be a string"},
        {"\"node\"", "node: must be an object"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(cases); i++) {
        struct gx_node_info node = {.name = "sentinel"};
        struct gx_why why = {{0}};

        cr_assert_eq(decode_node(cases[i].json, &node, &why), GX_EINVAL, "%s", cases[i].json);
        cr_assert_str_eq(why.text, cases[i].why);
        cr_assert_str_eq(node.name, "sentinel", "output written on error");
    }
}

Test(kobj, decodes_node_readiness_and_cordon, .init = setup, .fini = teardown)
{
    struct gx_node_info node;
    struct gx_why why = {{0}};

    cr_assert_eq(decode_node("{\"metadata\":{\"name\":\"n1\",\"labels\":{\"b\":\"2\",\"a\":\"1\","
                             "\"c\":\"3\"}},\"spec\":{\"unschedulable\":true},"
                             "\"status\":{\"capacity\":{\"nvidia.com/gpu\":4},\"conditions\":["
                             "{\"type\":\"Ready\",\"status\":\"False\"},"
                             "{\"type\":\"DiskPressure\",\"status\":\"True\"}]}}",
                             &node, &why),
                 GX_OK, "%s", why.text);
    cr_assert_str_eq(node.name, "n1");
    cr_assert(node.unschedulable);
    cr_assert_not(node.ready);
    cr_assert_eq(node.n_labels, 3);
    cr_assert_str_eq(node.labels[0].key, "a");
    cr_assert_str_eq(node.labels[1].key, "b");
    cr_assert_str_eq(node.labels[2].value, "3");
    cr_assert_str_eq(gx_kv_get(node.capacity, node.n_capacity, "nvidia.com/gpu"), "4");

    cr_assert_eq(decode_node("{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
                             "\"True\"}]}}",
                             &node, &why),
                 GX_OK);
    cr_assert(node.ready);
    cr_assert_not(node.unschedulable);
    cr_assert_str_eq(node.name, "");

    cr_assert_eq(decode_node("{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
                             "\"Unknown\"}]}}",
                             &node, &why),
                 GX_OK);
    cr_assert_not(node.ready);
}

/* A heartbeat (new resourceVersion, same facts) is the same node; a label or a condition is not. */
Test(kobj, node_info_same_ignores_only_the_resource_version, .init = setup, .fini = teardown)
{
    static const char *fmt = "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"%s\","
                             "\"labels\":{\"a\":\"%s\"}},\"status\":{\"capacity\":"
                             "{\"nvidia.com/gpu\":4},\"conditions\":[{\"type\":\"Ready\","
                             "\"status\":\"%s\"}]}}";
    struct gx_node_info a, b;
    struct gx_why why = {{0}};
    char j[512];

    (void)snprintf(j, sizeof(j), fmt, "7", "1", "True");
    cr_assert_eq(decode_node(j, &a, &why), GX_OK, "%s", why.text);
    (void)snprintf(j, sizeof(j), fmt, "8", "1", "True");
    cr_assert_eq(decode_node(j, &b, &why), GX_OK, "%s", why.text);
    cr_assert(gx_node_info_same(&a, &b), "a heartbeat");
    (void)snprintf(j, sizeof(j), fmt, "9", "2", "True");
    cr_assert_eq(decode_node(j, &b, &why), GX_OK, "%s", why.text);
    cr_assert_not(gx_node_info_same(&a, &b), "a label changed");
    (void)snprintf(j, sizeof(j), fmt, "9", "1", "False");
    cr_assert_eq(decode_node(j, &b, &why), GX_OK, "%s", why.text);
    cr_assert_not(gx_node_info_same(&a, &b), "no longer ready");
}

Test(kobj, resource_versions_compare_as_numbers_when_they_are)
{
    cr_assert(gx_rv_older("99", "100"), "by length first");
    cr_assert(gx_rv_older("123", "124"));
    cr_assert_not(gx_rv_older("124", "124"), "equal is not older");
    cr_assert_not(gx_rv_older("1000", "999"));
    cr_assert_not(gx_rv_older("", "5"), "empty: not comparable");
    cr_assert_not(gx_rv_older("abc", "5"), "opaque: not comparable");
    cr_assert_not(gx_rv_older("5", "x12"));
    cr_assert_not(gx_rv_older("05", "6"), "a leading zero is not a KEP-5504 version");
    cr_assert_not(gx_rv_older(NULL, "6"));
    cr_assert(gx_rv_older("0", "1"));
}

/* {"a":[[...]]} nested to exactly @depth levels. */
static char *
nested(int depth)
{
    size_t len = (size_t)depth * 2 + 16;
    char *s = calloc(1, len);
    size_t p = 0;

    cr_assert_not_null(s);
    p += (size_t)snprintf(s, len, "{\"a\":");
    for (int i = 1; i < depth; i++) {
        s[p++] = '[';
    }
    for (int i = 1; i < depth; i++) {
        s[p++] = ']';
    }
    s[p++] = '}';
    return s;
}

Test(kobj, caps_nesting_depth, .init = setup, .fini = teardown)
{
    struct gx_pod pod;
    struct gx_why why = {{0}};
    char *ok = nested(DEPTH), *deep = nested(DEPTH + 1);
    const char *in_string = "{\"metadata\":{\"name\":\"[[[\\\"[[[{{{\"}}";

    cr_assert_eq(gx_kobj_decode_pod(ok, strlen(ok), DEPTH, &arena, &pod, &why), GX_OK, "%s",
                 why.text);
    cr_assert_eq(gx_kobj_decode_pod(deep, strlen(deep), DEPTH, &arena, &pod, &why), GX_ETOOBIG);
    cr_assert_str_eq(why.text, "JSON nested deeper than 64 levels");
    free(ok);
    free(deep);

    /* Brackets inside strings (with escaped quotes) do not count. */
    cr_assert_eq(gx_kobj_decode_pod(in_string, strlen(in_string), 2, &arena, &pod, &why), GX_OK,
                 "%s", why.text);
    cr_assert_str_eq(pod.name, "[[[\"[[[{{{");
}

Test(kobj, rejects_malformed_json, .init = setup, .fini = teardown)
{
    static const char *const bad[] = {"", "{", "{\"a\":}", "{} x", "{}{}", "nul", "{\"a\":1,}"};
    struct gx_pod pod;
    struct gx_node_info node;
    struct gx_why why = {{0}};

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        cr_assert_eq(decode_pod(bad[i], &pod, &why), GX_EPARSE, "\"%s\"", bad[i]);
        cr_assert_eq(decode_node(bad[i], &node, &why), GX_EPARSE, "\"%s\"", bad[i]);
    }
    cr_assert_eq(decode_pod("{} x", &pod, &why), GX_EPARSE);
    cr_assert_str_eq(why.text, "trailing data after JSON at offset 3");
    /* A NUL inside the buffer is not the end of the document. */
    cr_assert_eq(gx_kobj_decode_pod("{}\0{}", 5, DEPTH, &arena, &pod, &why), GX_EPARSE);
}

Test(kobj, decodes_pod_list, .init = setup, .fini = teardown)
{
    const char *json =
        "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"900\"},"
        "\"items\":[{\"metadata\":{\"name\":\"a\",\"uid\":\"ua\"}},"
        "{\"metadata\":{\"name\":\"b\",\"uid\":\"ub\"},"
        "\"spec\":{\"nodeName\":\"gpu-node-b\"},\"status\":{\"phase\":\"Running\"}}]}";
    size_t len = strlen(json), n = 0;
    char *buf = unterminated(json, len);
    struct gx_pod *pods = NULL;
    const char *rv = NULL;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_pod_list(buf, len, DEPTH, &arena, &pods, &n, &rv, &why), GX_OK,
                 "%s", why.text);
    free(buf);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(rv, "900");
    cr_assert_str_eq(pods[0].uid, "ua");
    cr_assert_null(pods[0].node_name);
    cr_assert_str_eq(pods[1].name, "b");
    cr_assert_str_eq(pods[1].node_name, "gpu-node-b");
    cr_assert_str_eq(pods[1].phase, "Running");
}

Test(kobj, decodes_empty_lists_and_names_item_paths, .init = setup, .fini = teardown)
{
    struct gx_pod *pods = NULL;
    struct gx_node_info *nodes = NULL;
    const char *rv = "unset";
    size_t n = 99;
    struct gx_why why = {{0}};
    const char *bad = "{\"items\":[{},{\"metadata\":[]}]}";

    cr_assert_eq(gx_kobj_decode_pod_list("{\"items\":[]}", 12, DEPTH, &arena, &pods, &n, &rv, &why),
                 GX_OK);
    cr_assert_eq(n, 0);
    cr_assert_null(rv);
    cr_assert_eq(gx_kobj_decode_node_list("{}", 2, DEPTH, &arena, &nodes, &n, NULL, &why), GX_OK);
    cr_assert_eq(n, 0);

    n = 99;
    cr_assert_eq(gx_kobj_decode_node_list(bad, strlen(bad), DEPTH, &arena, &nodes, &n, &rv, &why),
                 GX_EINVAL);
    cr_assert_str_eq(why.text, "items[1].metadata: must be an object");
    cr_assert_eq(n, 99);
    cr_assert_eq(gx_kobj_decode_pod_list("{\"items\":{}}", 12, DEPTH, &arena, &pods, &n, &rv, &why),
                 GX_EINVAL);
    cr_assert_str_eq(why.text, "items: must be an array");
}

Test(kobj, decodes_watch_events_of_each_type, .init = setup, .fini = teardown)
{
    struct gx_watch_event ev;
    struct gx_why why = {{0}};

    cr_assert_eq(decode_event("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":"
                              "{\"name\":\"n1\",\"resourceVersion\":\"10\"}}}",
                              GX_KIND_NODE, &ev, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(ev.type, GX_WATCH_ADDED);
    cr_assert_str_eq(ev.obj.node.name, "n1");
    cr_assert_str_eq(ev.resource_version, "10");

    cr_assert_eq(decode_event("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p\","
                              "\"uid\":\"u\",\"resourceVersion\":\"11\"},\"spec\":{\"nodeName\":"
                              "\"n1\"}}}",
                              GX_KIND_POD, &ev, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(ev.type, GX_WATCH_MODIFIED);
    cr_assert_str_eq(ev.obj.pod.uid, "u");
    cr_assert_str_eq(ev.obj.pod.node_name, "n1");
    cr_assert_str_eq(ev.resource_version, "11");

    cr_assert_eq(decode_event("{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"p\","
                              "\"resourceVersion\":\"12\",\"deletionTimestamp\":\"t\"}}}",
                              GX_KIND_POD, &ev, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(ev.type, GX_WATCH_DELETED);
    cr_assert(ev.obj.pod.deleting);
    cr_assert_str_eq(ev.resource_version, "12");

    cr_assert_eq(decode_event("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":"
                              "\"v1\",\"metadata\":{\"resourceVersion\":\"12345\",\"annotations\":"
                              "{\"k8s.io/initial-events-end\":\"true\"}}}}",
                              GX_KIND_POD, &ev, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(ev.type, GX_WATCH_BOOKMARK);
    cr_assert_str_eq(ev.resource_version, "12345");
    cr_assert_null(ev.obj.pod.name);
}

Test(kobj, decodes_410_error_event, .init = setup, .fini = teardown)
{
    struct gx_watch_event ev;
    struct gx_why why = {{0}};

    cr_assert_eq(decode_event("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":"
                              "\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old "
                              "resource version: 1 (2)\",\"reason\":\"Expired\",\"code\":410}}\n",
                              GX_KIND_NODE, &ev, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(ev.type, GX_WATCH_ERROR);
    cr_assert_eq(ev.code, 410);
    cr_assert_str_eq(ev.message, "too old resource version: 1 (2)");
}

Test(kobj, rejects_bad_watch_events, .init = setup, .fini = teardown)
{
    static const struct type_case cases[] = {
        {"{\"type\":\"SYNC\",\"object\":{}}", "type: unknown watch event type \"SYNC\""},
        {"{\"type\":\"added\",\"object\":{}}", "type: unknown watch event type \"added\""},
        {"{\"type\":1,\"object\":{}}", "type: must be a string"},
        {"{\"object\":{}}", "type: required"},
        {"{\"type\":\"ADDED\"}", "object: required"},
        {"{\"type\":\"ADDED\",\"object\":[]}", "object: must be an object"},
        {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":[]}}}",
         "object.metadata.name: must be a string"},
        {"{\"type\":\"ERROR\",\"object\":{\"code\":\"410\"}}", "object.code: must be a number"},
        {"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":5}}}",
         "object.metadata.resourceVersion: must be a string"},
        {"[]", "watch event: must be an object"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(cases); i++) {
        struct gx_watch_event ev = {.code = -7};
        struct gx_why why = {{0}};

        cr_assert_eq(decode_event(cases[i].json, GX_KIND_NODE, &ev, &why), GX_EINVAL, "%s",
                     cases[i].json);
        cr_assert_str_eq(why.text, cases[i].why);
        cr_assert_eq(ev.code, -7, "output written on error");
    }
}

Test(kobj, kv_get_scans_linearly)
{
    static const struct gx_kv kv[] = {{"a", "1"}, {"b", "2"}, {"a", "3"}};

    cr_assert_str_eq(gx_kv_get(kv, 3, "a"), "1");
    cr_assert_str_eq(gx_kv_get(kv, 3, "b"), "2");
    cr_assert_null(gx_kv_get(kv, 1, "b"));
    cr_assert_null(gx_kv_get(kv, 3, "c"));
    cr_assert_null(gx_kv_get(NULL, 0, "a"));
}

Test(kobj, node_list_shares_one_copy_of_repeated_label_strings, .init = setup, .fini = teardown)
{
    const char *json =
        "{\"items\":["
        "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":\"z1\",\"nvidia.com/gpu.count\":\"8\","
        "\"host\":\"n1\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}},"
        "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"host\":\"n2\",\"nvidia.com/gpu.count\":\"8\","
        "\"zone\":\"z1\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":8}}}]}";
    size_t len = strlen(json), n = 0;
    char *buf = unterminated(json, len);
    struct gx_node_info *nodes = NULL;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_node_list(buf, len, DEPTH, &arena, &nodes, &n, NULL, &why), GX_OK,
                 "%s", why.text);
    free(buf);
    cr_assert_eq(n, 2);
    cr_assert_eq(nodes[0].n_labels, 3);
    cr_assert_eq(nodes[1].n_labels, 3);
    for (size_t i = 0; i < 3; i++) {
        /* Both label sets are sorted the same way: same keys at the same index. */
        cr_assert_str_eq(nodes[0].labels[i].key, nodes[1].labels[i].key);
        cr_assert_eq(nodes[0].labels[i].key, nodes[1].labels[i].key, "key %s copied twice",
                     nodes[0].labels[i].key);
    }
    cr_assert_eq(gx_kv_get(nodes[0].labels, 3, "zone"), gx_kv_get(nodes[1].labels, 3, "zone"));
    cr_assert_str_eq(gx_kv_get(nodes[0].labels, 3, "host"), "n1");
    cr_assert_str_eq(gx_kv_get(nodes[1].labels, 3, "host"), "n2");
    /* A quantity given as a number and as a string end up as the same shared "8". */
    cr_assert_eq(nodes[0].allocatable[0].key, nodes[1].allocatable[0].key);
    cr_assert_eq(nodes[0].allocatable[0].value, nodes[1].allocatable[0].value);
    cr_assert_str_eq(nodes[1].allocatable[0].value, "8");
}

Test(kobj, pod_list_shares_namespaces_and_request_keys, .init = setup, .fini = teardown)
{
    const char *json =
        "{\"items\":["
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ml\"},\"spec\":{\"containers\":"
        "[{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}},"
        "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\"},\"spec\":{\"containers\":"
        "[{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}"
        "]}";
    size_t len = strlen(json), n = 0;
    char *buf = unterminated(json, len);
    struct gx_pod *pods = NULL;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_pod_list(buf, len, DEPTH, &arena, &pods, &n, NULL, &why), GX_OK,
                 "%s", why.text);
    free(buf);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(pods[1].name, "b");
    cr_assert_str_eq(pods[0].namespace, "ml");
    cr_assert_eq(pods[0].namespace, pods[1].namespace);
    cr_assert_eq(pods[0].containers[0].name, pods[1].containers[0].name);
    cr_assert_eq(pods[0].containers[0].limits[0].key, pods[1].containers[0].limits[0].key);
    cr_assert_neq(pods[0].name, pods[1].name);
}

/* Append one generated node (40 labels, one unique) to @b. */
static void
add_generated_node(struct gx_buf *b, size_t i)
{
    cr_assert_eq(
        gx_buf_addf(b, "%s{\"metadata\":{\"name\":\"node-%05zu\",\"labels\":{", i ? "," : "", i),
        GX_OK);
    for (int k = 0; k < 40; k++) {
        cr_assert_eq(
            gx_buf_addf(b, "\"feature.node.kubernetes.io/cpu-cpuid.FLAG%02d\":\"true\",", k),
            GX_OK);
    }
    cr_assert_eq(
        gx_buf_addf(b,
                    "\"kubernetes.io/hostname\":\"node-%05zu\"}},"
                    "\"spec\":{\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]},"
                    "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"96\"},"
                    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
                    i, i % 7 == 0 ? "False" : "True"),
        GX_OK);
}

Test(kobj, decodes_large_generated_node_list_with_shared_strings, .init = setup, .fini = teardown)
{
    enum { NODES = 3000 };
    struct gx_buf b;
    struct gx_node_info *nodes = NULL;
    const char *rv = NULL;
    struct gx_why why = {{0}};
    size_t n = 0, len = 0, per_node_copy = 0;
    char *json;

    gx_buf_init(&b, 64u << 20);
    cr_assert_eq(gx_buf_adds(&b, "{\"kind\":\"NodeList\",\"items\":["), GX_OK);
    for (size_t i = 0; i < NODES; i++) {
        add_generated_node(&b, i);
    }
    cr_assert_eq(gx_buf_adds(&b, "],\"metadata\":{\"resourceVersion\":\"77\"}}"), GX_OK);
    json = gx_buf_take(&b, &len);
    cr_assert_eq(gx_kobj_decode_node_list(json, len, DEPTH, &arena, &nodes, &n, &rv, &why), GX_OK,
                 "%s", why.text);
    free(json);
    cr_assert_eq(n, NODES);
    cr_assert_str_eq(rv, "77");
    for (size_t i = 0; i < n; i++) {
        char name[32];

        (void)snprintf(name, sizeof(name), "node-%05zu", i);
        cr_assert_str_eq(nodes[i].name, name);
        cr_assert_eq(nodes[i].n_labels, 41);
        cr_assert_str_eq(gx_kv_get(nodes[i].labels, 41, "kubernetes.io/hostname"), name);
        cr_assert_eq(nodes[i].ready, i % 7 != 0, "%s", name);
        cr_assert_eq(nodes[i].n_taints, 1);
        cr_assert_eq(nodes[i].labels[0].key, nodes[0].labels[0].key);
        cr_assert_eq(nodes[i].taints[0].effect, nodes[0].taints[0].effect);
    }
    /* Without sharing, each node would copy its 40 keys ("...FLAGnn", 47 bytes each). */
    for (size_t k = 0; k < nodes[0].n_labels; k++) {
        per_node_copy += strlen(nodes[0].labels[k].key) + 1;
    }
    cr_assert_lt(arena.total, (size_t)NODES * per_node_copy, "arena %zu bytes", arena.total);
}

Test(kobj, list_errors_name_the_failure, .init = setup, .fini = teardown)
{
    static const struct {
        const char *json;
        enum gx_err rc;
        const char *why;
    } cases[] = {
        {"{\"items\":[{}] } x", GX_EPARSE, "trailing data after JSON at offset 16"},
        {"{\"items\":[{},]}", GX_EPARSE, NULL},
        {"[]", GX_EINVAL, "list: must be an object"},
        {"{\"metadata\":[],\"items\":[]}", GX_EINVAL, "metadata: must be an object"},
        {"{\"metadata\":{\"resourceVersion\":1}}", GX_EINVAL,
         "metadata.resourceVersion: must be a string"},
        {"{\"items\":[[[[[[[[[[]]]]]]]]]]}", GX_ETOOBIG, "JSON nested deeper than 8 levels"},
        {"", GX_EPARSE, "empty JSON document"},
        /* one pass decodes items as it goes, yet reports in the order of the checks: */
        {"{\"items\":[{\"metadata\":1},{]}", GX_EPARSE, "offset 26: expected a string key"},
        {"{\"items\":[{\"metadata\":1}],\"kind\":[[[[[[[[]]]]]]]]}", GX_ETOOBIG,
         "JSON nested deeper than 8 levels"},
        {"{\"items\":[{\"metadata\":1}],\"metadata\":[]}", GX_EINVAL,
         "metadata: must be an object"},
        {"{\"items\":[{},{\"spec\":[]},{\"metadata\":1}]}", GX_EINVAL,
         "items[1].spec: must be an object"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(cases); i++) {
        struct gx_node_info *nodes = NULL;
        size_t n = 99, len = strlen(cases[i].json);
        char *buf = unterminated(cases[i].json, len);
        struct gx_why why = {{0}};

        cr_assert_eq(gx_kobj_decode_node_list(buf, len, 8, &arena, &nodes, &n, NULL, &why),
                     cases[i].rc, "%s: %s", cases[i].json, why.text);
        free(buf);
        if (cases[i].why != NULL) {
            cr_assert_str_eq(why.text, cases[i].why);
        } else {
            cr_assert_neq(why.text[0], '\0');
        }
        cr_assert_eq(n, 99, "output written on error");
    }
}

/* A repeated key: the last wins, as with Go's decoders and in extender.c (json.h). */
Test(kobj, list_takes_last_items_member_and_decodes_escaped_key, .init = setup, .fini = teardown)
{
    const char *json = "{\"items\":[{},{}],\"metadata\":{\"resourceVersion\":\"7\"},"
                       "\"\\u0069tems\":[{\"metadata\":{\"name\":\"x\"}}],\"metadata\":null}";
    size_t len = strlen(json), n = 0;
    char *buf = unterminated(json, len);
    struct gx_node_info *nodes = NULL;
    const char *rv = "unset";
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_node_list(buf, len, DEPTH, &arena, &nodes, &n, &rv, &why), GX_OK,
                 "%s", why.text);
    free(buf);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(nodes[0].name, "x");
    cr_assert_null(rv);
    /* a bad item of an "items" a later one replaces is no error */
    json = "{\"items\":[{\"metadata\":1}],\"items\":[{},{}]}";
    cr_assert_eq(gx_kobj_decode_node_list(json, strlen(json), DEPTH, &arena, &nodes, &n, &rv, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(n, 2);
}

Test(kobj, failure_text_says_what_the_server_said)
{
    static const char status[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
        "\"message\":\"pods \\\"a\\\" is forbidden\",\"code\":403}";
    char out[200];

    gx_kobj_failure_text(GX_OK, 403, status, strlen(status), out, sizeof(out));
    cr_assert_str_eq(out, "HTTP 403: pods \"a\" is forbidden");
    gx_kobj_failure_text(GX_OK, 500, "oops", 4, out, sizeof(out));
    cr_assert_str_eq(out, "HTTP 500");
    gx_kobj_failure_text(GX_OK, 401, NULL, 0, out, sizeof(out));
    cr_assert_str_eq(out, "HTTP 401");
    gx_kobj_failure_text(GX_ETIMEDOUT, 0, NULL, 0, out, sizeof(out));
    cr_assert_str_eq(out, gx_strerror(GX_ETIMEDOUT));
    cr_assert_null(strstr(out, "ok"));
    /* no answer: what the transport said (gx_kube_request passes it as the body) */
    gx_kobj_failure_text(GX_EUPSTREAM, 0, "Empty reply from server", 23, out, sizeof(out));
    cr_assert_str_eq(out, "upstream error: Empty reply from server");
    gx_kobj_failure_text(GX_ETIMEDOUT, 0, "Operation timed out after 9 ms", 30, out, sizeof(out));
    cr_assert_str_eq(out, gx_strerror(GX_ETIMEDOUT), "a timeout says all");
}

/* Worth sending again at once: a broken connection, a 5xx, a 429; not a timeout, not a 4xx. */
Test(kobj, retryable_failures)
{
    cr_assert(gx_kobj_retryable(GX_EUPSTREAM, 0));
    cr_assert(gx_kobj_retryable(GX_OK, 504));
    cr_assert(gx_kobj_retryable(GX_OK, 500));
    cr_assert(gx_kobj_retryable(GX_OK, 429));
    cr_assert_not(gx_kobj_retryable(GX_ETIMEDOUT, 0), "its time is spent");
    cr_assert_not(gx_kobj_retryable(GX_OK, 409));
    cr_assert_not(gx_kobj_retryable(GX_OK, 403));
    cr_assert_not(gx_kobj_retryable(GX_OK, 200));
}

Test(kobj, repeated_pod_fields_take_the_last_value, .init = setup, .fini = teardown)
{
    const char *json = "{\"metadata\":{\"name\":\"first\",\"namespace\":\"ml\",\"name\":\"last\"},"
                       "\"spec\":{\"nodeName\":\"a\",\"nodeName\":\"b\"}}";
    struct gx_pod pod;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_pod(json, strlen(json), DEPTH, &arena, &pod, &why), GX_OK, "%s",
                 why.text);
    cr_assert_str_eq(pod.name, "last");
    cr_assert_str_eq(pod.node_name, "b");
}

/* The tree the decoders read is built by the scanner: escapes, numbers and literals as cJSON. */
Test(kobj, one_pass_pod_tree_keeps_values, .init = setup, .fini = teardown)
{
    const char *json =
        "{\"metadata\":{\"n\\u0061me\":\"a\\\"b\\u00e9\",\"labels\":{\"k\":\"v\"},"
        "\"deletionTimestamp\":null},\"spec\":{\"priority\":-2.5e1,\"containers\":[{\"name\":"
        "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":2,\"cpu\":0.5}}}],"
        "\"initContainers\":[{\"name\":\"i\",\"restartPolicy\":\"Always\"}]}}";
    struct gx_pod pod;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_pod(json, strlen(json), DEPTH, &arena, &pod, &why), GX_OK, "%s",
                 why.text);
    cr_assert_str_eq(pod.name, "a\"b\xc3\xa9");
    cr_assert_not(pod.deleting);
    cr_assert_str_eq(gx_kv_get(pod.labels, pod.n_labels, "k"), "v");
    cr_assert(pod.has_priority);
    cr_assert_eq(pod.priority, -25);
    cr_assert_str_eq(gx_kv_get(pod.containers[0].limits, 2, "nvidia.com/gpu"), "2");
    cr_assert_str_eq(gx_kv_get(pod.containers[0].limits, 2, "cpu"), "0.5");
    cr_assert(pod.init_containers[0].restartable);
    /* a document cut short is a syntax error */
    cr_assert_eq(gx_kobj_decode_pod("{\"a\":[1,2,3", 11, DEPTH, &arena, &pod, &why), GX_EPARSE);
}

Test(kobj, pod_where_holds_the_node_selector_and_the_required_terms, .init = setup,
     .fini = teardown)
{
    const char *json =
        "{\"spec\":{\"nodeSelector\":{\"nvidia.com/gpu.family\":\"ada-lovelace\"},"
        "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.product\","
        "\"operator\":\"In\",\"values\":[\"NVIDIA-GeForce-RTX-4090\",\"NVIDIA-L4\"]},"
        "{\"key\":\"nvidia.com/gpu.memory\",\"operator\":\"Gt\",\"values\":[\"20000\"]}]},"
        "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n\"]}]}]},"
        "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1,\"preference\":"
        "{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"Exists\"}]}}]}}}}";
    struct gx_pod pod;
    struct gx_why why = {{0}};
    const struct gx_sel_term *t;

    cr_assert_eq(decode_pod(json, &pod, &why), GX_OK, "%s", why.text);
    cr_assert_eq(pod.where.n_selector, 1);
    cr_assert_str_eq(pod.where.selector[0].value, "ada-lovelace");
    cr_assert_eq(pod.where.n_terms, 2, "the preferred terms are not kept");
    t = &pod.where.terms[0];
    cr_assert_eq(t->n_exprs, 2);
    cr_assert_eq(t->exprs[0].op, GX_SEL_IN);
    cr_assert_eq(t->exprs[0].n_values, 2);
    cr_assert_str_eq(t->exprs[0].values[1], "NVIDIA-L4");
    cr_assert_eq(t->exprs[1].op, GX_SEL_GT, "Gt is a node selector operator");
    cr_assert_eq(pod.where.terms[1].n_exprs, 0, "matchFields are not kept");
    cr_assert_eq(decode_pod("{\"spec\":{}}", &pod, &why), GX_OK);
    cr_assert_eq(pod.where.n_selector + pod.where.n_terms, 0, "no rule: any node");
}

Test(kobj, pod_where_of_the_wrong_type_names_its_path, .init = setup, .fini = teardown)
{
    struct gx_pod pod;
    struct gx_why why = {{0}};

    cr_assert_eq(decode_pod("{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringScheduling"
                            "IgnoredDuringExecution\":{\"nodeSelectorTerms\":[7]}}}}}",
                            &pod, &why),
                 GX_EINVAL);
    cr_assert_not_null(strstr(why.text, "nodeSelectorTerms[0]"), "%s", why.text);
    cr_assert_eq(decode_pod("{\"spec\":{\"nodeSelector\":[\"a\"]}}", &pod, &why), GX_EINVAL);
}

Test(kobj, pod_group_is_the_scheduling_group_name, .init = setup, .fini = teardown)
{
    struct gx_pod pod;
    struct gx_why why = {{0}};

    cr_assert_eq(
        decode_pod("{\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"trainer\"}}}", &pod, &why),
        GX_OK, "%s", why.text);
    cr_assert_str_eq(pod.pod_group, "trainer");
    /* the scheduler-plugins label makes no member: kube-scheduler gives it no gang meaning */
    cr_assert_eq(decode_pod("{\"metadata\":{\"labels\":{\"scheduling.x-k8s.io/pod-group\":"
                            "\"trainer\"}},\"spec\":{}}",
                            &pod, &why),
                 GX_OK);
    cr_assert_str_eq(pod.pod_group, "", "no schedulingGroup: no group");
    cr_assert_eq(decode_pod("{\"spec\":{\"schedulingGroup\":{}}}", &pod, &why), GX_OK);
    cr_assert_str_eq(pod.pod_group, "");
    cr_assert_eq(decode_pod("{\"spec\":{\"schedulingGroup\":{\"podGroupName\":7}}}", &pod, &why),
                 GX_EINVAL);
    cr_assert_not_null(strstr(why.text, "spec.schedulingGroup.podGroupName"), "%s", why.text);
    cr_assert_eq(decode_pod("{\"spec\":{\"schedulingGroup\":\"trainer\"}}", &pod, &why), GX_EINVAL);
}

/* gx_kobj_pod_of on @json: the Pod JSON in @b, the document's name in @what. */
static enum gx_err
pod_of_doc(const char *json, struct gx_buf *b, char *what, bool *tpl, struct gx_why *why)
{
    gx_buf_init(b, 1 << 20);
    return gx_kobj_pod_of(json, strlen(json), 64, b, what, 300, tpl, why);
}

Test(kobj, pod_of_takes_a_pod_as_it_is, .init = setup, .fini = teardown)
{
    const char *pod = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ml\"},"
                      "\"spec\":{\"schedulerName\":\"gpu-scheduler\",\"containers\":[]}}";
    struct gx_buf b;
    struct gx_why why = {{0}};
    struct gx_pod p;
    char what[300];
    bool tpl = true;

    cr_assert_eq(pod_of_doc(pod, &b, what, &tpl, &why), GX_OK, "%s", why.text);
    cr_expect(!tpl);
    cr_expect_str_eq(what, "Pod ml/a");
    cr_expect_str_eq(b.data, pod);
    cr_assert_eq(gx_kobj_decode_pod(b.data, b.len, 64, &arena, &p, &why), GX_OK, "%s", why.text);
    cr_expect_str_eq(p.scheduler_name, "gpu-scheduler");
    gx_buf_release(&b);
}

Test(kobj, pod_of_a_workload_is_its_template_named_as_the_workload, .init = setup, .fini = teardown)
{
    const char *docs[] = {
        "{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":\"ml\"},"
        "\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
        "{\"nvidia.com/gpu\":2}}}]}}}}",
        "{\"kind\":\"CronJob\",\"metadata\":{\"name\":\"web\",\"namespace\":\"ml\"},"
        "\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"metadata\":{\"labels\":"
        "{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
        "{\"nvidia.com/gpu\":2}}}]}}}}}}",
    };

    for (size_t i = 0; i < 2; i++) {
        struct gx_buf b;
        struct gx_why why = {{0}};
        struct gx_pod p;
        char what[300];
        bool tpl = false;

        cr_assert_eq(pod_of_doc(docs[i], &b, what, &tpl, &why), GX_OK, "%s", why.text);
        cr_expect(tpl);
        cr_expect_str_eq(what, i == 0 ? "Deployment ml/web" : "CronJob ml/web");
        cr_assert_eq(gx_kobj_decode_pod(b.data, b.len, 64, &arena, &p, &why), GX_OK, "%s: %s",
                     b.data, why.text);
        cr_expect_str_eq(p.name, "web");
        cr_expect_str_eq(p.namespace, "ml");
        cr_expect_str_eq(gx_kv_get(p.labels, p.n_labels, "a"), "b");
        cr_expect_eq(p.n_containers, 1);
        gx_buf_release(&b);
    }
}

Test(kobj, pod_of_refuses_other_kinds_and_workloads_without_template, .init = setup,
     .fini = teardown)
{
    struct gx_buf b;
    struct gx_why why = {{0}};
    char what[300];
    bool tpl;

    cr_expect_eq(
        pod_of_doc("{\"kind\":\"Service\",\"metadata\":{\"name\":\"s\"}}", &b, what, &tpl, &why),
        GX_EINVAL);
    cr_expect_str_eq(what, "Service s");
    cr_expect(strstr(why.text, "kind Service is not a Pod") != NULL, "%s", why.text);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(pod_of_doc("{\"kind\":\"Job\",\"spec\":{}}", &b, what, &tpl, &why), GX_EINVAL);
    cr_expect(strstr(why.text, "Job without a pod template (spec.template)") != NULL, "%s",
              why.text);
    cr_expect_eq(pod_of_doc("[1]", &b, what, &tpl, &why), GX_EINVAL);
    cr_expect_eq(pod_of_doc("{", &b, what, &tpl, &why), GX_EPARSE);
}
