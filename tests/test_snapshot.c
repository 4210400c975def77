/* SPDX-License-Identifier: Apache-2.0 */
/* test_snapshot.c - snapshot building from node objects and the metric store. */
#include <cJSON.h>
#include <math.h>
#include <string.h>

#include "snapshot.h"
#include "gx_test.h"

GX_SUITE(snapshot);

/*
 * The shipped defaults (gx_config_default), made once per test process and
 * kept reachable; a test copies them and overrides the fields it tests.
 */
static struct gx_config
test_cfg(void)
{
    static struct gx_config *defaults;

    if (defaults == NULL) {
        cr_assert_eq(gx_config_default(&defaults), GX_OK);
    }
    return *defaults;
}

/* A JSON object of strings as an arena array of key/value pairs (in document order). */
static struct gx_kv *
kv_of(struct gx_arena *a, const cJSON *obj, size_t *n)
{
    const cJSON *it;
    struct gx_kv *kv;
    size_t i = 0;

    *n = (size_t)cJSON_GetArraySize(obj);
    if (*n == 0) {
        return NULL;
    }
    kv = gx_arena_alloc(a, *n * sizeof(*kv));
    cr_assert_not_null(kv);
    cJSON_ArrayForEach(it, obj)
    {
        cr_assert(cJSON_IsString(it));
        kv[i].key = gx_arena_strdup(a, it->string);
        kv[i].value = gx_arena_strdup(a, it->valuestring);
        i++;
    }
    return kv;
}

/*
 * The fixture NodeList decoded with cJSON directly, so these tests do not
 * depend on the kobj module.
 */
static struct gx_node_info *
load_nodelist(struct gx_arena *a, size_t *n_nodes)
{
    size_t len;
    char *text = gx_fixture("nodelist.json", &len);
    cJSON *root = cJSON_ParseWithLength(text, len);
    const cJSON *items, *item;
    struct gx_node_info *nodes;
    size_t i = 0;

    cr_assert_not_null(root);
    items = cJSON_GetObjectItemCaseSensitive(root, "items");
    *n_nodes = (size_t)cJSON_GetArraySize(items);
    nodes = gx_arena_alloc(a, *n_nodes * sizeof(*nodes));
    cr_assert_not_null(nodes);
    cJSON_ArrayForEach(item, items)
    {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(item, "metadata");
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(item, "spec");
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(item, "status");
        const cJSON *cond, *unsched;
        struct gx_node_info *ni = &nodes[i++];

        ni->name = gx_arena_strdup(a, cJSON_GetObjectItemCaseSensitive(meta, "name")->valuestring);
        ni->labels = kv_of(a, cJSON_GetObjectItemCaseSensitive(meta, "labels"), &ni->n_labels);
        ni->allocatable =
            kv_of(a, cJSON_GetObjectItemCaseSensitive(status, "allocatable"), &ni->n_allocatable);
        ni->capacity =
            kv_of(a, cJSON_GetObjectItemCaseSensitive(status, "capacity"), &ni->n_capacity);
        cJSON_ArrayForEach(cond, cJSON_GetObjectItemCaseSensitive(status, "conditions"))
        {
            const char *type = cJSON_GetObjectItemCaseSensitive(cond, "type")->valuestring;
            const char *st = cJSON_GetObjectItemCaseSensitive(cond, "status")->valuestring;
            if (strcmp(type, "Ready") == 0) {
                ni->ready = strcmp(st, "True") == 0;
            }
        }
        unsched = cJSON_GetObjectItemCaseSensitive(spec, "unschedulable");
        ni->unschedulable = cJSON_IsTrue(unsched);
    }
    cJSON_Delete(root);
    free(text);
    return nodes;
}

/* A store holding the two fixture pages (node a from source 0, node b from source 1). */
static struct gx_mstore *
load_store(const struct gx_config *cfg, int64_t now_ms)
{
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_why why = {{0}};
    size_t la, lb;
    char *a = gx_fixture("dcgm-node-a.prom", &la);
    char *b = gx_fixture("dcgm-node-b.prom", &lb);

    cr_assert_not_null(ms);
    cr_assert_eq(gx_mstore_load_page(ms, cfg, 0, a, la, now_ms, &why), GX_OK, "%s", why.text);
    cr_assert_eq(gx_mstore_load_page(ms, cfg, 1, b, lb, now_ms, &why), GX_OK, "%s", why.text);
    free(a);
    free(b);
    return ms;
}

static const struct gx_node *
find(const struct gx_snapshot *snap, const char *name)
{
    return gx_snapshot_find(snap, name, strlen(name));
}

Test(snapshot, builds_fixture_cluster_with_cards_and_metrics)
{
    struct gx_config cfg = test_cfg();
    struct gx_arena a;
    size_t n_nodes;
    struct gx_node_info *nodes;
    struct gx_mstore *ms;
    struct gx_snapshot *snap = NULL;
    const struct gx_node *n;

    gx_arena_init(&a, 0);
    nodes = load_nodelist(&a, &n_nodes);
    ms = load_store(&cfg, 1000);
    cr_assert_eq(gx_snapshot_build(&cfg, nodes, n_nodes, ms, 2000, &snap), GX_OK);
    /* The snapshot owns copies: inputs may go away. */
    gx_mstore_free(ms);
    gx_arena_release(&a);

    cr_assert_eq(snap->n_nodes, 4);
    cr_assert_eq(snap->built_ms, 2000);

    n = find(snap, "gpu-node-a");
    cr_assert_not_null(n);
    cr_assert_str_eq(n->name, "gpu-node-a");
    cr_assert_str_eq(n->product, "NVIDIA-GeForce-RTX-4090");
    cr_assert_eq(n->gpu_count, 2);
    cr_assert_eq(n->n_cards, 2);
    cr_assert_eq(n->gpu_memory_mib, 24564);
    cr_assert_eq(n->replicas, 1);
    cr_assert_eq(n->sharing, GX_SHARING_NONE);
    cr_assert_eq(n->alloc_gpu, 2);
    cr_assert(n->ready);
    cr_assert_not(n->unschedulable);
    cr_assert_eq(n->cards[0].index, 0);
    cr_assert_eq(n->cards[0].v[GX_SIG_UTIL], 87.0);
    cr_assert_eq(n->cards[0].v[GX_SIG_MEM_USED], 18342.0);
    cr_assert_eq(n->cards[0].at_ms[GX_SIG_UTIL], 1000);
    cr_assert_str_eq(n->cards[0].uuid, "GPU-d2a17c4e-93b8-6f05-1c7a-5e04b9f2a6d1");
    cr_assert_str_eq(n->cards[0].pod, "vllm-llama3-8b-6c9d7f5b8-x2kqp");
    cr_assert_eq(n->cards[0].numa, -1, "node a has no memory-numa label");
    cr_assert_str_eq(n->cards[1].uuid, "GPU-5b7e0f93-2c4d-a8e1-7f36-0d9c41e8b527");
    cr_assert_null(n->cards[1].pod);
    cr_assert_eq(n->cards[1].v[GX_SIG_MEM_FREE], 24209.0);

    n = find(snap, "gpu-node-b");
    cr_assert_not_null(n);
    cr_assert_eq(n->n_cards, 8);
    cr_assert_eq(n->cards[5].index, 5);
    cr_assert_eq(n->cards[5].v[GX_SIG_XID], 13.0);
    cr_assert_str_eq(n->cards[5].pod, "jupyter-alice");
    cr_assert_eq(n->cards[4].v[GX_SIG_XID], 0.0);
    cr_assert_eq(n->cards[0].numa, 0, "bus 01 on a memory-numa node");
    cr_assert_eq(n->cards[3].numa, 0, "bus 61");
    cr_assert_eq(n->cards[4].numa, 1, "bus 81");
    cr_assert_eq(n->cards[7].numa, 1, "bus E1");

    n = find(snap, "gpu-node-c");
    cr_assert_not_null(n);
    cr_assert_eq(n->gpu_count, 2, "physical cards, not 8 replicas");
    cr_assert_eq(n->n_cards, 2);
    cr_assert_eq(n->replicas, 4);
    cr_assert_eq(n->sharing, GX_SHARING_TIME_SLICING);
    cr_assert_eq(n->alloc_gpu, 8);
    cr_assert_str_eq(n->product, "NVIDIA-GeForce-RTX-4090-SHARED");
    cr_assert_null(n->cards[1].uuid, "no metrics for node c");
    cr_assert(isnan(n->cards[1].v[GX_SIG_UTIL]));
    cr_assert_eq(n->cards[1].at_ms[GX_SIG_UTIL], 0);

    n = find(snap, "cpu-node-d");
    cr_assert_not_null(n);
    cr_assert_eq(n->gpu_count, 0);
    cr_assert_eq(n->n_cards, 0);
    cr_assert_eq(n->alloc_gpu, -1);
    cr_assert_str_eq(n->product, "");

    gx_snapshot_free(snap);
}

/* True when @key is one the snapshot keeps under a config with one rule on @rule_key. */
static bool
decision_label(const char *key, const char *rule_key)
{
    /* the GPU's and CUDA's labels: pods pin themselves by them (where.h) */
    return strcmp(key, rule_key) == 0 || strncmp(key, "nvidia.com/gpu.", 15) == 0 ||
           strncmp(key, "nvidia.com/cuda.", 16) == 0 ||
           strcmp(key, "node.kubernetes.io/instance-type") == 0 ||
           strcmp(key, "feature.node.kubernetes.io/memory-numa") == 0;
}

Test(snapshot, keeps_only_decision_labels_sorted_and_finds_by_name)
{
    struct gx_config cfg = test_cfg();
    struct gx_label_rule rule = {.label = "nvidia.com/gpu.family", .op = GX_OP_EXISTS, .weight = 5};
    struct gx_arena a;
    size_t n_nodes;
    struct gx_node_info *nodes;
    struct gx_snapshot *snap = NULL;
    const struct gx_node *n, *na;

    cfg.label_rules = &rule;
    cfg.n_label_rules = 1;
    gx_arena_init(&a, 0);
    nodes = load_nodelist(&a, &n_nodes);
    cr_assert_eq(gx_snapshot_build(&cfg, nodes, n_nodes, NULL, 0, &snap), GX_OK);
    for (size_t i = 0; i < n_nodes; i++) {
        size_t kept = 0;

        n = find(snap, nodes[i].name);
        cr_assert_not_null(n);
        cr_assert_eq(n, &snap->nodes[i]);
        for (size_t j = 1; j < n->n_labels; j++) {
            cr_assert_lt(strcmp(n->labels[j - 1].key, n->labels[j].key), 0);
        }
        for (size_t j = 0; j < nodes[i].n_labels; j++) {
            const char *key = nodes[i].labels[j].key;

            if (decision_label(key, rule.label)) {
                kept++;
                cr_assert_str_eq(gx_node_label(n, key), nodes[i].labels[j].value, "%s", key);
            } else {
                cr_assert_null(gx_node_label(n, key), "%s kept", key);
            }
        }
        cr_assert_eq(n->n_labels, kept, "%s", n->name);
    }
    n = find(snap, "gpu-node-b");
    cr_assert_eq(n->n_labels, 32, "GFD's gpu and cuda labels and memory-numa, of 100");
    cr_assert_str_eq(gx_node_label(n, "nvidia.com/gpu.family"), "ada-lovelace");
    cr_assert_str_eq(gx_node_label(n, "feature.node.kubernetes.io/memory-numa"), "true");
    cr_assert_null(gx_node_label(n, "kubernetes.io/hostname"), "no decision reads it");
    cr_assert_null(gx_node_label(n, "nvidia.com/gpu.clique"));
    /* Repeated strings are stored once per snapshot. */
    na = find(snap, "gpu-node-a");
    cr_assert_eq(na->product, n->product);
    cr_assert_eq(gx_node_label(na, "nvidia.com/gpu.family"),
                 gx_node_label(n, "nvidia.com/gpu.family"));
    cr_assert_eq(gx_snapshot_find(snap, "gpu-node-bX", 10), n, "length-bounded lookup");
    cr_assert_null(find(snap, "gpu-node-z"));
    cr_assert_null(find(snap, ""));
    cr_assert_eq(n->cards[0].numa, -1, "no store: no bus, no NUMA guess");
    gx_snapshot_free(snap);
    gx_arena_release(&a);
}

Test(snapshot, without_rules_keeps_only_gpu_labels)
{
    struct gx_config cfg = test_cfg();
    struct gx_arena a;
    size_t n_nodes;
    struct gx_node_info *nodes;
    struct gx_snapshot *snap = NULL;
    const struct gx_node *n;

    gx_arena_init(&a, 0);
    nodes = load_nodelist(&a, &n_nodes);
    cr_assert_eq(gx_snapshot_build(&cfg, nodes, n_nodes, NULL, 0, &snap), GX_OK);
    n = find(snap, "cpu-node-d");
    cr_assert_eq(n->n_labels, 1, "memory-numa only, of 70");
    n = find(snap, "gpu-node-c");
    cr_assert_eq(n->n_labels, 31);
    cr_assert_null(gx_node_label(n, "kubernetes.io/hostname"));
    cr_assert_null(gx_node_label(n, "nvidia.com/gfd.timestamp"), "not a kind of node");
    cr_assert_str_eq(gx_node_label(n, "nvidia.com/gpu.replicas"), "4");
    cr_assert_eq(n->replicas, 4);
    cr_assert_eq(n->sharing, GX_SHARING_TIME_SLICING);
    gx_snapshot_free(snap);
    gx_arena_release(&a);
}

Test(snapshot, derives_physical_cards_and_sharing_from_hand_built_nodes)
{
    struct gx_config cfg = test_cfg();
    struct gx_kv ts_labels[] = {{"nvidia.com/gpu.replicas", "4"}};
    struct gx_kv ts_alloc[] = {{"cpu", "8"}, {"nvidia.com/gpu", "8"}};
    struct gx_kv shared_labels[] = {{"nvidia.com/gpu.sharing-strategy", "mps"},
                                    {"nvidia.com/gpu.replicas", "3"},
                                    {"nvidia.com/gpu.count", "0"}};
    struct gx_kv shared_alloc[] = {{"nvidia.com/gpu.shared", "12"}};
    struct gx_kv both_alloc[] = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpu.shared", "2"}};
    struct gx_kv bad_labels[] = {{"nvidia.com/gpu.replicas", "x"},
                                 {"nvidia.com/gpu.count", "-3"},
                                 {"nvidia.com/gpu.memory", "lots"}};
    struct gx_node_info nodes[] = {
        {.name = "ts",
         .labels = ts_labels,
         .n_labels = 1,
         .allocatable = ts_alloc,
         .n_allocatable = 2,
         .ready = true},
        {.name = "mps",
         .labels = shared_labels,
         .n_labels = 3,
         .allocatable = shared_alloc,
         .n_allocatable = 1,
         .unschedulable = true},
        {.name = "both", .allocatable = both_alloc, .n_allocatable = 2},
        {.name = "bad", .labels = bad_labels, .n_labels = 3},
    };
    struct gx_snapshot *snap = NULL;
    const struct gx_node *n;

    cr_assert_eq(gx_snapshot_build(&cfg, nodes, GX_ARRAY_LEN(nodes), NULL, 0, &snap), GX_OK);
    n = find(snap, "ts");
    cr_assert_eq(n->gpu_count, 2, "8 allocatable / 4 replicas");
    cr_assert_eq(n->sharing, GX_SHARING_TIME_SLICING, "replicas > 1 without strategy label");
    cr_assert_eq(n->alloc_gpu, 8);
    cr_assert(n->ready);
    cr_assert_eq(n->cards[1].index, 1);
    cr_assert_eq(n->cards[1].numa, -1);

    n = find(snap, "mps");
    cr_assert_eq(n->sharing, GX_SHARING_MPS);
    cr_assert_eq(n->replicas, 3);
    cr_assert_eq(n->alloc_gpu, 12);
    cr_assert_eq(n->gpu_count, 4, "count 0 is ignored: 12 / 3");
    cr_assert(n->unschedulable);
    cr_assert_not(n->ready);

    n = find(snap, "both");
    cr_assert_eq(n->alloc_gpu, 3);
    cr_assert_eq(n->gpu_count, 3);
    cr_assert_eq(n->replicas, 1);
    cr_assert_eq(n->sharing, GX_SHARING_NONE);

    n = find(snap, "bad");
    cr_assert_eq(n->replicas, 1);
    cr_assert_eq(n->gpu_count, 0);
    cr_assert_eq(n->gpu_memory_mib, 0);
    cr_assert_eq(n->alloc_gpu, -1);
    cr_assert_null(n->cards);
    gx_snapshot_free(snap);
}

/* Put one UTIL sample for node "n" into @ms. */
static void
put_util(struct gx_mstore *ms, const char *uuid, int gpu, double v, int64_t at_ms)
{
    struct gx_card_sample s = {.node = "n",
                               .node_len = 1,
                               .uuid = uuid,
                               .gpu = gpu,
                               .sig = GX_SIG_UTIL,
                               .value = v,
                               .at_ms = at_ms};

    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
}

Test(snapshot, assigns_cards_without_index_in_uuid_order)
{
    struct gx_config cfg = test_cfg();
    struct gx_kv labels[] = {{"nvidia.com/gpu.count", "3"}};
    struct gx_node_info node = {.name = "n", .labels = labels, .n_labels = 1};
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_snapshot *snap = NULL;
    const struct gx_node *n;

    gx_mstore_begin(ms, 0, GX_SIG_UTIL);
    put_util(ms, "GPU-z", -1, 30, 10);
    put_util(ms, "GPU-m", 1, 20, 10);
    put_util(ms, "GPU-b", -1, 10, 10);
    put_util(ms, "GPU-out", 7, 99, 10);
    gx_mstore_commit(ms);
    cr_assert_eq(gx_snapshot_build(&cfg, &node, 1, ms, 0, &snap), GX_OK);
    gx_mstore_free(ms);
    n = find(snap, "n");
    cr_assert_eq(n->n_cards, 3);
    cr_assert_str_eq(n->cards[0].uuid, "GPU-b");
    cr_assert_eq(n->cards[0].v[GX_SIG_UTIL], 10.0);
    cr_assert_str_eq(n->cards[1].uuid, "GPU-m");
    cr_assert_eq(n->cards[1].v[GX_SIG_UTIL], 20.0);
    cr_assert_str_eq(n->cards[2].uuid, "GPU-z");
    cr_assert_eq(n->cards[2].v[GX_SIG_UTIL], 30.0);
    gx_snapshot_free(snap);
}

Test(snapshot, card_freshness_follows_max_age_per_signal)
{
    struct gx_config cfg = test_cfg();
    struct gx_kv labels[] = {{"nvidia.com/gpu.count", "2"}};
    struct gx_node_info node = {.name = "n", .labels = labels, .n_labels = 1};
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_snapshot *snap = NULL;
    const struct gx_node *n;

    gx_mstore_begin(ms, 0, GX_SIG_UTIL);
    put_util(ms, "GPU-a", 0, 50, 1000);
    put_util(ms, "GPU-b", 1, NAN, 1000);
    gx_mstore_commit(ms);
    cr_assert_eq(gx_snapshot_build(&cfg, &node, 1, ms, 1000, &snap), GX_OK);
    gx_mstore_free(ms);
    n = find(snap, "n");
    cr_assert(gx_card_fresh(&cfg, &n->cards[0], GX_SIG_UTIL, 1000));
    cr_assert(gx_card_fresh(&cfg, &n->cards[0], GX_SIG_UTIL, 61000), "exactly max age");
    cr_assert_not(gx_card_fresh(&cfg, &n->cards[0], GX_SIG_UTIL, 61001));
    cfg.max_age_s[GX_SIG_UTIL] = 5;
    cr_assert_not(gx_card_fresh(&cfg, &n->cards[0], GX_SIG_UTIL, 6001));
    cr_assert(gx_card_fresh(&cfg, &n->cards[0], GX_SIG_UTIL, 6000));
    cr_assert_not(gx_card_fresh(&cfg, &n->cards[0], GX_SIG_TEMP, 1000), "never seen");
    cr_assert_not(gx_card_fresh(&cfg, &n->cards[1], GX_SIG_UTIL, 1000), "NaN is unknown");
    gx_snapshot_free(snap);
}

Test(snapshot, empty_input_builds_empty_snapshot)
{
    struct gx_config cfg = test_cfg();
    struct gx_snapshot *snap = NULL;

    cr_assert_eq(gx_snapshot_build(&cfg, NULL, 0, NULL, 42, &snap), GX_OK);
    cr_assert_not_null(snap);
    cr_assert_eq(snap->n_nodes, 0);
    cr_assert_null(find(snap, "gpu-node-a"));
    cr_assert_eq(snap->built_ms, 42);
    gx_snapshot_free(snap);
    gx_snapshot_free(NULL);
}

Test(snapshot, carries_the_utilization_slope_per_card)
{
    struct gx_config cfg = test_cfg();
    struct gx_kv labels[] = {{"nvidia.com/gpu.count", "2"}};
    struct gx_node_info node = {.name = "n", .labels = labels, .n_labels = 1};
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_snapshot *snap = NULL;
    struct gx_card_sample s = {
        .node = "n", .node_len = 1, .uuid = "GPU-b", .gpu = 1, .sig = GX_SIG_UTIL_TREND};
    const struct gx_node *n;

    gx_mstore_begin(ms, 0, GX_SIG_UTIL_TREND);
    s.value = -0.25; /* a slope may be negative */
    s.at_ms = 1000;
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    gx_mstore_commit(ms);
    cr_assert_eq(gx_snapshot_build(&cfg, &node, 1, ms, 1000, &snap), GX_OK);
    gx_mstore_free(ms);
    n = find(snap, "n");
    cr_assert_eq(n->cards[1].v[GX_SIG_UTIL_TREND], -0.25);
    cr_assert(gx_card_fresh(&cfg, &n->cards[1], GX_SIG_UTIL_TREND, 1000));
    cr_assert_not(gx_card_fresh(&cfg, &n->cards[0], GX_SIG_UTIL_TREND, 1000), "card 0 has none");
    cr_assert_not(gx_card_fresh(&cfg, &n->cards[1], GX_SIG_UTIL, 1000), "nor a utilization");
    gx_snapshot_free(snap);
}
