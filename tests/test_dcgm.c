/* SPDX-License-Identifier: Apache-2.0 */
/* test_dcgm.c - series-to-card mapping and the metric store's replacement semantics. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "dcgm.h"
#include "gx_test.h"

GX_SUITE(dcgm);

static char *node_labels_instance[] = {"instance"};

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

static struct gx_series
series(const struct gx_kv *labels, size_t n, double value)
{
    struct gx_series s = {
        .name = "DCGM_FI_DEV_GPU_UTIL", .labels = labels, .n_labels = n, .value = value};
    return s;
}

static bool
node_is(const struct gx_card_sample *cs, const char *want)
{
    return cs->node_len == strlen(want) && memcmp(cs->node, want, cs->node_len) == 0;
}

Test(dcgm, signal_of_matches_configured_family_names)
{
    struct gx_config cfg = test_cfg();
    enum gx_signal sig = GX_SIG_COUNT;

    cr_assert(gx_dcgm_signal_of(&cfg, "DCGM_FI_DEV_FB_USED", &sig));
    cr_assert_eq(sig, GX_SIG_MEM_USED);
    cr_assert(gx_dcgm_signal_of(&cfg, "DCGM_FI_DEV_XID_ERRORS", &sig));
    cr_assert_eq(sig, GX_SIG_XID);
    sig = GX_SIG_COUNT;
    cr_assert_not(gx_dcgm_signal_of(&cfg, "DCGM_FI_DEV_SM_CLOCK", &sig));
    cr_assert_eq(sig, GX_SIG_COUNT, "out-param untouched on failure");
    cfg.metric_names[GX_SIG_UTIL] = "DCGM_FI_DEV_GPU_UTIL_RATIO";
    cr_assert_not(gx_dcgm_signal_of(&cfg, "DCGM_FI_DEV_GPU_UTIL", &sig));
}

Test(dcgm, maps_hostname_uuid_gpu_and_pod)
{
    struct gx_config cfg = test_cfg();
    struct gx_kv l[] = {{"gpu", "1"},
                        {"UUID", "GPU-5b7e0f93"},
                        {"pci_bus_id", "00000000:C1:00.0"},
                        {"Hostname", "gpu-node-a"},
                        {"container", "vllm"},
                        {"namespace", "ml-inference"},
                        {"pod", "vllm-0"}};
    struct gx_series s = series(l, GX_ARRAY_LEN(l), 87);
    struct gx_card_sample cs;

    cr_assert(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 5000, &cs));
    cr_assert(node_is(&cs, "gpu-node-a"));
    cr_assert_str_eq(cs.uuid, "GPU-5b7e0f93");
    cr_assert_eq(cs.gpu, 1);
    cr_assert_str_eq(cs.pod, "vllm-0");
    cr_assert_eq(cs.sig, GX_SIG_UTIL);
    cr_assert_eq(cs.value, 87.0);
    cr_assert_eq(cs.at_ms, 5000, "no sample time: the default");
    s.ts_ms = 1234;
    cr_assert(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 5000, &cs));
    cr_assert_eq(cs.at_ms, 1234, "sample time wins");
}

Test(dcgm, maps_lowercase_hostname_and_uuid_of_newer_exporters)
{
    struct gx_config cfg = test_cfg();
    struct gx_kv l[] = {{"gpu", "x"}, {"uuid", "GPU-aa"}, {"hostname", "gpu-node-b"}};
    struct gx_kv both[] = {{"hostname", "second"}, {"Hostname", "first"}, {"gpu", "0"}};
    struct gx_series s = series(l, GX_ARRAY_LEN(l), 1);
    struct gx_card_sample cs;

    cr_assert(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 0, &cs));
    cr_assert(node_is(&cs, "gpu-node-b"));
    cr_assert_str_eq(cs.uuid, "GPU-aa");
    cr_assert_eq(cs.gpu, -1, "non-decimal gpu label");
    cr_assert_null(cs.pod);

    s = series(both, GX_ARRAY_LEN(both), 1);
    cr_assert(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 0, &cs));
    cr_assert(node_is(&cs, "first"), "first configured label wins");
    cr_assert_null(cs.uuid);
    cr_assert_eq(cs.gpu, 0);
}

/* True when a series with instance=@value maps to node @want. */
static bool
instance_maps_to(struct gx_config *cfg, const char *value, const char *want)
{
    struct gx_kv l[] = {{"instance", value}, {"gpu", "0"}};
    struct gx_series s = series(l, GX_ARRAY_LEN(l), 1);
    struct gx_card_sample cs;

    cfg->node_labels = node_labels_instance;
    cfg->n_node_labels = 1;
    if (!gx_dcgm_map(cfg, GX_SIG_UTIL, &s, 0, &cs)) {
        return false;
    }
    cr_assert_eq(cs.node, value + (value[0] == '[' ? 1 : 0), "node points into the label");
    return node_is(&cs, want);
}

Test(dcgm, strips_port_from_instance_including_ipv6)
{
    struct gx_config cfg = test_cfg();

    cfg.strip_port = true;
    cr_assert(instance_maps_to(&cfg, "10.244.1.9:9400", "10.244.1.9"));
    cr_assert(instance_maps_to(&cfg, "[fd00::1]:9400", "fd00::1"));
    cr_assert(instance_maps_to(&cfg, "[fd00::1]", "fd00::1"));
    cr_assert(instance_maps_to(&cfg, "fd00::1", "fd00::1"), "bare IPv6 has no port");
    cr_assert(instance_maps_to(&cfg, "gpu-node-a", "gpu-node-a"));
    cr_assert(instance_maps_to(&cfg, "gpu-node-a:metrics", "gpu-node-a:metrics"));
    cfg.strip_port = false;
    cr_assert(instance_maps_to(&cfg, "10.244.1.9:9400", "10.244.1.9:9400"));
}

Test(dcgm, rejects_series_without_node_or_card)
{
    struct gx_config cfg = test_cfg();
    struct gx_kv no_node[] = {{"gpu", "0"}, {"UUID", "GPU-aa"}, {"instance", "x:1"}};
    struct gx_kv empty_node[] = {{"Hostname", ""}, {"gpu", "0"}};
    struct gx_kv no_card[] = {{"Hostname", "gpu-node-a"}, {"gpu", "-1"}};
    struct gx_kv only_uuid[] = {{"Hostname", "gpu-node-a"}, {"UUID", "GPU-aa"}};
    struct gx_series s;
    struct gx_card_sample cs;

    s = series(no_node, GX_ARRAY_LEN(no_node), 1);
    cr_assert_not(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 0, &cs));
    s = series(empty_node, GX_ARRAY_LEN(empty_node), 1);
    cr_assert_not(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 0, &cs));
    s = series(no_card, GX_ARRAY_LEN(no_card), 1);
    cr_assert_not(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 0, &cs));
    s = series(only_uuid, GX_ARRAY_LEN(only_uuid), 1);
    cr_assert(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 0, &cs));
    cr_assert_eq(cs.gpu, -1);
}

/* The pod @labels map to (NULL when none). */
static const char *
pod_of(const struct gx_kv *labels, size_t n)
{
    struct gx_config cfg = test_cfg();
    struct gx_series s = series(labels, n, 1);
    struct gx_card_sample cs;

    cr_assert(gx_dcgm_map(&cfg, GX_SIG_UTIL, &s, 0, &cs));
    return cs.pod;
}

Test(dcgm, picks_workload_pod_not_exporter_pod)
{
    struct gx_kv exported[] = {{"Hostname", "n"},
                               {"gpu", "0"},
                               {"container", "nvidia-dcgm-exporter"},
                               {"exported_pod", "vllm-0"},
                               {"pod", "nvidia-dcgm-exporter-7xk2p"}};
    struct gx_kv exporter_only[] = {{"Hostname", "n"},
                                    {"gpu", "0"},
                                    {"container", "nvidia-dcgm-exporter"},
                                    {"pod", "nvidia-dcgm-exporter-7xk2p"}};
    struct gx_kv chart_exporter[] = {
        {"Hostname", "n"}, {"gpu", "0"}, {"container", "dcgm-exporter"}, {"pod", "dcgm-x"}};
    struct gx_kv direct[] = {
        {"Hostname", "n"}, {"gpu", "0"}, {"container", "trainer"}, {"pod", "ddp-0"}};
    struct gx_kv old_namespace[] = {{"Hostname", "n"}, {"gpu", "0"}, {"pod_name", "legacy-0"}};
    struct gx_kv empty[] = {{"Hostname", "n"}, {"gpu", "0"}, {"exported_pod", ""}, {"pod", ""}};
    const char *p;

    p = pod_of(exported, GX_ARRAY_LEN(exported));
    cr_assert_str_eq(p, "vllm-0");
    cr_assert_null(pod_of(exporter_only, GX_ARRAY_LEN(exporter_only)));
    cr_assert_null(pod_of(chart_exporter, GX_ARRAY_LEN(chart_exporter)));
    p = pod_of(direct, GX_ARRAY_LEN(direct));
    cr_assert_str_eq(p, "ddp-0");
    p = pod_of(old_namespace, GX_ARRAY_LEN(old_namespace));
    cr_assert_str_eq(p, "legacy-0");
    cr_assert_null(pod_of(empty, GX_ARRAY_LEN(empty)));
}

/* The store's card of @node with gpu index @gpu, or NULL. */
static const struct gx_mcard *
card(const struct gx_mstore *ms, const char *node, int gpu)
{
    size_t n;
    const struct gx_mcard *c = gx_mstore_cards(ms, node, &n);

    for (size_t i = 0; i < n; i++) {
        if (c[i].gpu == gpu) {
            return &c[i];
        }
    }
    return NULL;
}

Test(dcgm, loads_fixture_page_into_store)
{
    struct gx_config cfg = test_cfg();
    struct gx_mstore *ms = gx_mstore_new();
    size_t len, n;
    char *text = gx_fixture("dcgm-node-a.prom", &len);
    struct gx_why why = {{0}};
    const struct gx_mcard *c;

    cr_assert_not_null(ms);
    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, text, len, 777, &why), GX_OK, "%s", why.text);
    cr_assert_not_null(gx_mstore_cards(ms, "gpu-node-a", &n));
    cr_assert_eq(n, 2);
    cr_assert_null(gx_mstore_cards(ms, "gpu-node-b", &n));
    cr_assert_eq(n, 0);
    c = card(ms, "gpu-node-a", 0);
    cr_assert_not_null(c);
    cr_assert_str_eq(c->uuid, "GPU-d2a17c4e-93b8-6f05-1c7a-5e04b9f2a6d1");
    cr_assert_str_eq(c->pod, "vllm-llama3-8b-6c9d7f5b8-x2kqp");
    cr_assert_str_eq(c->pci_bus_id, "00000000:01:00.0");
    cr_assert_eq(c->v[GX_SIG_UTIL].value, 87.0);
    cr_assert_eq(c->v[GX_SIG_UTIL].at_ms, 777);
    cr_assert_eq(c->v[GX_SIG_MEM_USED].value, 18342.0);
    cr_assert_eq(c->v[GX_SIG_MEM_FREE].value, 5868.0);
    cr_assert_eq(c->v[GX_SIG_TEMP].value, 68.0);
    cr_assert_float_eq(c->v[GX_SIG_POWER].value, 356.874, 1e-9);
    cr_assert_eq(c->v[GX_SIG_XID].value, 0.0);
    c = card(ms, "gpu-node-a", 1);
    cr_assert_not_null(c);
    cr_assert_null(c->pod);
    cr_assert_eq(c->v[GX_SIG_MEM_USED].value, 1.0);
    gx_mstore_free(ms);
    free(text);
}

Test(dcgm, series_missing_from_next_page_becomes_unknown)
{
    struct gx_config cfg = test_cfg();
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_why why = {{0}};
    const char *p1 = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n1\"} 10\n"
                     "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"n1\"} 20\n"
                     "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"n1\"} 40\n";
    const char *p2 = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n1\"} 11\n"
                     "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"n1\"} 41 900\n";
    const struct gx_mcard *c;
    size_t n;

    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, p1, strlen(p1), 100, &why), GX_OK);
    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, p2, strlen(p2), 200, &why), GX_OK);
    c = card(ms, "n1", 0);
    cr_assert_eq(c->v[GX_SIG_UTIL].value, 11.0);
    cr_assert_eq(c->v[GX_SIG_UTIL].at_ms, 200);
    c = card(ms, "n1", 1);
    cr_assert(isnan(c->v[GX_SIG_UTIL].value), "vanished series is unknown, not zero");
    cr_assert_eq(c->v[GX_SIG_UTIL].at_ms, 0);
    cr_assert_eq(c->v[GX_SIG_TEMP].value, 41.0);
    cr_assert_eq(c->v[GX_SIG_TEMP].at_ms, 900, "page timestamp kept");

    /* A page without any series of the node drops its cards entirely. */
    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, "", 0, 300, &why), GX_OK);
    cr_assert_null(gx_mstore_cards(ms, "n1", &n));
    cr_assert_eq(n, 0);
    gx_mstore_free(ms);
}

Test(dcgm, malformed_page_keeps_previous_values)
{
    struct gx_config cfg = test_cfg();
    struct gx_mstore *ms = gx_mstore_new();
    size_t len;
    char *text = gx_fixture("dcgm-node-a.prom", &len);
    struct gx_why why = {{0}};
    const char *bad = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-d2a17c4e-93b8-6f05-1c7a-"
                      "5e04b9f2a6d1\",Hostname=\"gpu-node-a\"} 1\n"
                      "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\" oops\n";
    const struct gx_mcard *c;

    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, text, len, 100, &why), GX_OK);
    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, bad, strlen(bad), 200, &why), GX_EPARSE);
    cr_assert(strncmp(why.text, "line 2: ", 8) == 0, "%s", why.text);
    c = card(ms, "gpu-node-a", 0);
    cr_assert_not_null(c);
    cr_assert_eq(c->v[GX_SIG_UTIL].value, 87.0);
    cr_assert_eq(c->v[GX_SIG_UTIL].at_ms, 100);
    c = card(ms, "gpu-node-a", 1);
    cr_assert_not_null(c);
    cr_assert_eq(c->v[GX_SIG_TEMP].value, 34.0);
    gx_mstore_free(ms);
    free(text);
}

Test(dcgm, sources_replace_only_their_own_values)
{
    struct gx_config cfg = test_cfg();
    struct gx_mstore *ms = gx_mstore_new();
    size_t la, lb, n;
    char *a = gx_fixture("dcgm-node-a.prom", &la);
    char *b = gx_fixture("dcgm-node-b.prom", &lb);
    struct gx_why why = {{0}};
    const struct gx_mcard *c;

    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, a, la, 100, &why), GX_OK);
    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 1, b, lb, 100, &why), GX_OK);
    cr_assert_not_null(gx_mstore_cards(ms, "gpu-node-b", &n));
    cr_assert_eq(n, 8);
    c = card(ms, "gpu-node-b", 5);
    cr_assert_eq(c->v[GX_SIG_XID].value, 13.0);
    cr_assert_str_eq(c->pod, "jupyter-alice");

    /* Source 1 now serves an empty page: node b's values go, node a's stay. */
    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 1, "# nothing\n", 10, 200, &why), GX_OK);
    cr_assert_null(gx_mstore_cards(ms, "gpu-node-b", &n));
    cr_assert_not_null(gx_mstore_cards(ms, "gpu-node-a", &n));
    cr_assert_eq(n, 2);
    cr_assert_eq(card(ms, "gpu-node-a", 0)->v[GX_SIG_UTIL].value, 87.0);
    gx_mstore_free(ms);
    free(a);
    free(b);
}

/* A sample for card GPU-x (index 0) on node n. */
static struct gx_card_sample
sample(enum gx_signal sig, double v, const char *pod)
{
    struct gx_card_sample s = {.node = "n",
                               .node_len = 1,
                               .uuid = "GPU-x",
                               .gpu = 0,
                               .sig = sig,
                               .value = v,
                               .at_ms = 50,
                               .pod = pod};
    return s;
}

Test(dcgm, open_replacements_cover_several_signals_and_sources)
{
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_card_sample s;
    const struct gx_mcard *c;

    /* Source 0 owns util, source 1 owns temp, on the same card. */
    gx_mstore_begin(ms, 0, GX_SIG_UTIL);
    s = sample(GX_SIG_UTIL, 30, "p");
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    gx_mstore_commit(ms);
    gx_mstore_begin(ms, 1, GX_SIG_TEMP);
    gx_mstore_begin(ms, 1, GX_SIG_POWER);
    s = sample(GX_SIG_TEMP, 55, "p");
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    s = sample(GX_SIG_POWER, 200, "p");
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    gx_mstore_commit(ms);
    c = card(ms, "n", 0);
    cr_assert_eq(c->v[GX_SIG_UTIL].value, 30.0);
    cr_assert_eq(c->v[GX_SIG_TEMP].value, 55.0);
    cr_assert_eq(c->v[GX_SIG_POWER].value, 200.0);

    /* Source 1 refreshes util and temp but only puts power: its temp goes. */
    gx_mstore_begin(ms, 1, GX_SIG_UTIL);
    gx_mstore_begin(ms, 1, GX_SIG_TEMP);
    gx_mstore_begin(ms, 1, GX_SIG_POWER);
    s = sample(GX_SIG_POWER, 210, NULL);
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    gx_mstore_commit(ms);
    c = card(ms, "n", 0);
    cr_assert_eq(c->v[GX_SIG_UTIL].value, 30.0, "util belongs to source 0");
    cr_assert(isnan(c->v[GX_SIG_TEMP].value));
    cr_assert_eq(c->v[GX_SIG_POWER].value, 210.0);
    cr_assert_null(c->pod, "the latest sample names no pod");
    gx_mstore_free(ms);
}

Test(dcgm, put_without_open_replacement_is_rejected)
{
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_card_sample s = sample(GX_SIG_UTIL, 1, NULL);
    size_t n;

    cr_assert_eq(gx_mstore_put(ms, &s), GX_EINVAL);
    gx_mstore_begin(ms, 0, GX_SIG_TEMP);
    cr_assert_eq(gx_mstore_put(ms, &s), GX_EINVAL, "only temp is open");
    gx_mstore_commit(ms);
    cr_assert_null(gx_mstore_cards(ms, "n", &n));
    gx_mstore_free(ms);
}

Test(dcgm, card_seen_by_index_adopts_its_uuid)
{
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_card_sample s = sample(GX_SIG_UTIL, 1, NULL);
    const struct gx_mcard *c;
    size_t n;

    gx_mstore_begin(ms, 0, GX_SIG_UTIL);
    gx_mstore_begin(ms, 0, GX_SIG_TEMP);
    s.uuid = NULL;
    s.gpu = 3;
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    s = sample(GX_SIG_TEMP, 60, NULL);
    s.gpu = 3;
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    s = sample(GX_SIG_TEMP, 61, NULL);
    s.uuid = "GPU-y";
    s.gpu = -1;
    cr_assert_eq(gx_mstore_put(ms, &s), GX_OK);
    gx_mstore_commit(ms);
    c = gx_mstore_cards(ms, "n", &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(c[0].gpu, 3);
    cr_assert_str_eq(c[0].uuid, "GPU-x");
    cr_assert_eq(c[0].v[GX_SIG_UTIL].value, 1.0);
    cr_assert_eq(c[0].v[GX_SIG_TEMP].value, 60.0);
    cr_assert_eq(c[1].gpu, -1);
    cr_assert_str_eq(c[1].uuid, "GPU-y");
    gx_mstore_free(ms);
}

/* Append the three families of a generated page (cards of @nodes nodes x 4) to @b. */
static void
generated_page(struct gx_buf *b, int nodes)
{
    static const char *const fams[] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP",
                                       "DCGM_FI_DEV_FB_USED"};

    for (size_t f = 0; f < GX_ARRAY_LEN(fams); f++) {
        cr_assert_eq(gx_buf_addf(b, "# TYPE %s gauge\n", fams[f]), GX_OK);
        for (int n = 0; n < nodes; n++) {
            for (int g = 0; g < 4; g++) {
                /* Card 3 is busy only in the util family's view of the pod label. */
                const char *pod = g == 1 ? "train-0" : (g == 3 && f == 0 ? "late" : "");

                cr_assert_eq(gx_buf_addf(b,
                                         "%s{gpu=\"%d\",UUID=\"GPU-%d-%d\",pci_bus_id=\"0000:%02X:"
                                         "00.0\",Hostname=\"node-%d\",pod=\"%s\"} %d\n",
                                         fams[f], g, n, g, g * 0x40, n, pod,
                                         (int)f * 1000 + n * 4 + g),
                             GX_OK);
            }
        }
    }
}

Test(dcgm, page_with_many_cards_keeps_each_cards_strings_and_values)
{
    struct gx_config cfg = test_cfg();
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_why why = {{0}};
    struct gx_buf b;
    size_t len = 0;
    char *text;

    gx_buf_init(&b, 8u << 20);
    generated_page(&b, 300);
    text = gx_buf_take(&b, &len);
    cr_assert_eq(gx_mstore_load_page(ms, &cfg, 0, text, len, 555, &why), GX_OK, "%s", why.text);
    free(text);
    for (int n = 0; n < 300; n++) {
        char name[32], uuid[32], pci[32];
        size_t nc = 0;
        const struct gx_mcard *cards;

        (void)snprintf(name, sizeof(name), "node-%d", n);
        cards = gx_mstore_cards(ms, name, &nc);
        cr_assert_eq(nc, 4, "%s", name);
        for (int g = 0; g < 4; g++) {
            const struct gx_mcard *c = NULL;

            (void)snprintf(uuid, sizeof(uuid), "GPU-%d-%d", n, g);
            (void)snprintf(pci, sizeof(pci), "0000:%02X:00.0", g * 0x40);
            for (size_t i = 0; i < nc; i++) {
                if (cards[i].uuid != NULL && strcmp(cards[i].uuid, uuid) == 0) {
                    c = &cards[i];
                }
            }
            cr_assert_not_null(c, "%s", uuid);
            cr_assert_eq(c->gpu, g);
            cr_assert_str_eq(c->pci_bus_id, pci);
            cr_assert_eq(c->v[GX_SIG_UTIL].value, n * 4 + g);
            cr_assert_eq(c->v[GX_SIG_TEMP].value, 1000 + n * 4 + g);
            cr_assert_eq(c->v[GX_SIG_MEM_USED].value, 2000 + n * 4 + g);
            cr_assert_eq(c->v[GX_SIG_MEM_USED].at_ms, 555);
            cr_assert(isnan(c->v[GX_SIG_POWER].value));
            if (g == 1) {
                cr_assert_str_eq(c->pod, "train-0");
            } else {
                /* The last family read (fb_used) names no pod for cards 0, 2 and 3. */
                cr_assert_null(c->pod, "%s pod %s", uuid, c->pod);
            }
        }
    }
    gx_mstore_free(ms);
}

/* Write a page of @n nodes x 8 cards (utilization = node index % 101) to @path. */
static void
write_big_page(const char *path, int n)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    (void)fputs("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
                "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
                f);
    for (int i = 0; i < n; i++) {
        for (int g = 0; g < 8; g++) {
            (void)fprintf(
                f,
                "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-%08d-%d\",device=\"nvidia%d\","
                "modelName=\"NVIDIA GeForce RTX 4090\",Hostname=\"node-%05d\","
                "DCGM_FI_DRIVER_VERSION=\"580.126.20\"} %d\n",
                g, i, g, g, i, i % 101);
        }
    }
    cr_assert_eq(fclose(f), 0);
}

static enum gx_err
feed(void *pg, const char *buf, size_t len, bool last, size_t *used, struct gx_why *why)
{
    return gx_page_feed(pg, buf, len, last, used, why);
}

/* A page file read through a 1 MiB window into @ms, as the shell reads one. */
static enum gx_err
load_file(struct gx_mstore *ms, const struct gx_config *cfg, const char *path, size_t max,
          int64_t now, struct gx_why *why)
{
    struct gx_page *pg = gx_page_new(cfg, now);
    enum gx_err rc = gx_read_chunks(path, max, (size_t)1 << 20, feed, pg, why);

    if (rc == GX_OK) {
        rc = gx_page_apply(pg, ms, 0, why);
    }
    gx_page_free(pg);
    return rc;
}

/* A page read in 1 MiB pieces, lines crossing piece boundaries, equals the page read whole. */
Test(dcgm, file_load_in_pieces_matches_whole_page)
{
    struct gx_config cfg = test_cfg();
    struct gx_mstore *whole = gx_mstore_new(), *pieces = gx_mstore_new();
    char path[] = "/tmp/gx-dcgm-XXXXXX";
    struct gx_why why = {{0}};
    char *text = NULL;
    size_t len = 0, n = 0;
    int fd = mkstemp(path);

    cr_assert_geq(fd, 0);
    (void)close(fd);
    write_big_page(path, 3000); /* about 4 MiB */
    cr_assert_eq(gx_read_file(path, 64u << 20, &text, &len), GX_OK);
    cr_assert_gt(len, (size_t)3 << 20);
    cr_assert_eq(gx_mstore_load_page(whole, &cfg, 0, text, len, 1000, &why), GX_OK, "%s", why.text);
    cr_assert_eq(load_file(pieces, &cfg, path, 64u << 20, 1000, &why), GX_OK, "%s", why.text);
    for (int i = 0; i < 3000; i += 7) {
        char node[32];
        size_t nw = 0, np = 0;
        (void)snprintf(node, sizeof(node), "node-%05d", i);
        const struct gx_mcard *a = gx_mstore_cards(whole, node, &nw);
        const struct gx_mcard *b = gx_mstore_cards(pieces, node, &np);
        cr_assert_eq(nw, 8);
        cr_assert_eq(np, 8);
        for (size_t k = 0; k < 8; k++) {
            cr_assert_str_eq(a[k].uuid, b[k].uuid);
            cr_assert_eq(b[k].v[GX_SIG_UTIL].value, (double)(i % 101), "%s card %zu", node, k);
        }
    }
    (void)gx_mstore_cards(pieces, "node-02999", &n);
    cr_assert_eq(n, 8);
    /* Too big, and missing: errors that change nothing. */
    cr_assert_eq(load_file(pieces, &cfg, path, 1 << 20, 2000, &why), GX_ETOOBIG);
    cr_assert_eq(load_file(pieces, &cfg, "/nonexistent", 1 << 20, 2000, &why), GX_ENOTFOUND);
    cr_assert_eq(gx_mstore_cards(pieces, "node-00007", &n)[0].v[GX_SIG_UTIL].value, 7.0);
    (void)unlink(path);
    free(text);
    gx_mstore_free(whole);
    gx_mstore_free(pieces);
}

/* A malformed line deep in a big file leaves the store as it was. */
Test(dcgm, file_load_error_keeps_previous_values)
{
    struct gx_config cfg = test_cfg();
    struct gx_mstore *ms = gx_mstore_new();
    char path[] = "/tmp/gx-dcgm-XXXXXX";
    struct gx_why why = {{0}};
    size_t n = 0;
    FILE *f;
    int fd = mkstemp(path);

    cr_assert_geq(fd, 0);
    (void)close(fd);
    write_big_page(path, 2000);
    cr_assert_eq(load_file(ms, &cfg, path, 64u << 20, 1000, &why), GX_OK);
    f = fopen(path, "a");
    cr_assert_not_null(f);
    (void)fputs("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" broken\n", f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(load_file(ms, &cfg, path, 64u << 20, 2000, &why), GX_EPARSE);
    cr_assert(strstr(why.text, "near byte") != NULL, "%s", why.text);
    cr_assert_eq(gx_mstore_cards(ms, "node-01999", &n)[3].v[GX_SIG_UTIL].at_ms, 1000);
    (void)unlink(path);
    gx_mstore_free(ms);
}
