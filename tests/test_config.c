/* SPDX-License-Identifier: Apache-2.0 */
/* test_config.c - config parsing, validation, defaults, reload diff, card slots, docs. */
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "gx_test.h"

GX_SUITE(config);

/* Parse a JSON string with base dir "/etc/gx". */
static enum gx_err
parse(const char *json, struct gx_config **out, struct gx_why *why)
{
    return gx_config_parse(json, strlen(json), "/etc/gx", out, why);
}

/* Parse @json, expect @want and a reason containing @text. */
static void
expect_error(const char *json, enum gx_err want, const char *text)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {""};
    enum gx_err rc = parse(json, &cfg, &why);

    cr_assert_eq(rc, want, "%s: got %d (%s)", json, rc, why.text);
    cr_assert_null(cfg);
    cr_assert(strstr(why.text, text) != NULL, "%s: why '%s' lacks '%s'", json, why.text, text);
}

static struct gx_config *
parse_ok(const char *json)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {""};

    cr_assert_eq(parse(json, &cfg, &why), GX_OK, "%s: %s", json, why.text);
    cr_assert_not_null(cfg);
    return cfg;
}

/* The documented defaults, checked field by field. */
static void
assert_defaults(const struct gx_config *c)
{
    cr_assert_str_eq(c->listen_address, "0.0.0.0");
    cr_assert_eq(c->port, 8888);
    cr_assert_str_eq(c->url_prefix, "/gpu-extender");
    cr_assert_eq(c->max_body_bytes, (size_t)64 << 20);
    cr_assert_eq(c->max_json_depth, 64);
    cr_assert_eq(c->connection_timeout_s, 30);
    cr_assert_eq(c->shutdown_grace_s, 10);
    cr_assert_not(c->debug_endpoints);
    cr_assert_null(c->tls_cert_file);
    cr_assert_null(c->tls_key_file);
    cr_assert_eq(c->log_level, GX_LOG_INFO);
    cr_assert_str_eq(c->res_gpu, "nvidia.com/gpu");
    cr_assert_str_eq(c->res_shared, "nvidia.com/gpu.shared");
    cr_assert_str_eq(c->res_time_slice, "gpu-extender.io/time-slice");
    cr_assert_str_eq(c->ann_slices, "gpu-extender.io/time-slices");
    cr_assert_str_eq(c->ann_memory, "gpu-extender.io/gpu-memory");
    cr_assert_str_eq(c->ann_util, "gpu-extender.io/gpu-util");
    cr_assert_str_eq(c->ann_uuids, "gpu-extender.io/gpu-uuids");
    cr_assert_str_eq(c->ann_index, "gpu-extender.io/gpu-index");
    cr_assert_str_eq(c->managed_label, "gpu-extender.io/managed");
    cr_assert_null(c->nodes_file);
    cr_assert_eq(c->n_metrics_files, 0);
    cr_assert_eq(c->files_refresh_s, 5);
    cr_assert_eq(c->n_node_labels, 2);
    cr_assert_str_eq(c->node_labels[0], "Hostname");
    cr_assert_str_eq(c->node_labels[1], "hostname");
    cr_assert_not(c->strip_port);
    cr_assert_str_eq(c->metric_names[GX_SIG_UTIL], "DCGM_FI_DEV_GPU_UTIL");
    cr_assert_str_eq(c->metric_names[GX_SIG_MEM_USED], "DCGM_FI_DEV_FB_USED");
    cr_assert_str_eq(c->metric_names[GX_SIG_MEM_FREE], "DCGM_FI_DEV_FB_FREE");
    cr_assert_str_eq(c->metric_names[GX_SIG_TEMP], "DCGM_FI_DEV_GPU_TEMP");
    cr_assert_str_eq(c->metric_names[GX_SIG_POWER], "DCGM_FI_DEV_POWER_USAGE");
    cr_assert_str_eq(c->metric_names[GX_SIG_XID], "DCGM_FI_DEV_XID_ERRORS");
    cr_assert_eq(c->on_stale, GX_STALE_IGNORE);
    for (int i = 0; i < GX_SIG_COUNT; i++) {
        cr_assert_eq(c->max_age_s[i], 60, "max_age_s[%d]", i);
    }
    cr_assert_float_eq(c->max_temperature_c, 85.0, 1e-9);
    cr_assert_eq(c->n_ignored_xids, 0);
    cr_assert_float_eq(c->max_utilization_pct, 90.0, 1e-9);
    cr_assert_eq(c->default_slots, 4);
    cr_assert_float_eq(c->oversubscription, 1.0, 1e-9);
    cr_assert_eq(c->memory_reserve_mib, 512);
    cr_assert_float_eq(c->util_ceiling_pct, 100.0, 1e-9);
    cr_assert(c->expect_share_util, "a share without gpu-util expects its share by default");
    cr_assert_eq(c->default_slices, 1);
    cr_assert_eq(c->n_product_slots, 0);
    cr_assert_eq(c->reservation_ttl_s, 300);
    cr_assert_eq(c->policy, GX_POLICY_FGD);
    cr_assert_eq(c->fgd_half_life, 5000);
    cr_assert_eq(c->w_util, 4);
    cr_assert_eq(c->w_memory, 3);
    cr_assert_eq(c->w_temp, 1);
    cr_assert_eq(c->w_labels, 2);
    cr_assert_eq(c->w_fit, 2);
    cr_assert_eq(c->w_trend, 0, "the trend is off until measured");
    cr_assert_eq(c->n_label_rules, 0);
    cr_assert(c->prefer_cpu_nodes_for_cpu_pods);
    cr_assert_not(c->relative_scores);
    cr_assert_eq(c->fgd_idle_card_milli, 0);
}

Test(config, default_config_has_documented_values)
{
    struct gx_config *cfg = NULL;

    cr_assert_eq(gx_config_default(&cfg), GX_OK);
    assert_defaults(cfg);
    cr_assert_null(cfg->path);
    gx_config_free(cfg);
}

Test(config, empty_object_takes_every_default)
{
    struct gx_config *cfg = parse_ok("{}");

    assert_defaults(cfg);
    cr_assert_str_eq(cfg->base_dir, "/etc/gx");
    cr_assert_eq(cfg->hash, gx_hash("{}", 2));
    gx_config_free(cfg);
}

Test(config, free_accepts_null)
{
    gx_config_free(NULL);
    cr_assert_str_eq(gx_signal_name(GX_SIG_COUNT), "unknown");
}

Test(config, signal_names_match_config_keys)
{
    static const char *const want[GX_SIG_COUNT] = {"util",  "mem_used", "mem_free",  "temp",
                                                   "power", "xid",      "util_trend"};
    const char *const *keys = gx_config_keys();

    for (int s = 0; s < GX_SIG_COUNT; s++) {
        char key[64];
        bool found = false;

        cr_assert_str_eq(gx_signal_name((enum gx_signal)s), want[s]);
        (void)snprintf(key, sizeof(key), "metrics.max_age_s.%s", want[s]);
        for (size_t i = 0; keys[i] != NULL; i++) {
            found = found || strcmp(keys[i], key) == 0;
        }
        cr_assert(found, "%s not a key", key);
    }
}

static const char full_doc[] =
    "{\"server\":{\"address\":\"10.0.0.5\",\"port\":9443,\"url_prefix\":\"\","
    "\"max_body_bytes\":1048576,\"max_json_depth\":32,\"connection_timeout_s\":12,"
    "\"shutdown_grace_s\":3,\"debug_endpoints\":true,\"tls_cert_file\":\"tls/tls.crt\","
    "\"tls_key_file\":\"/certs/tls.key\"},"
    "\"log\":{\"level\":\"debug\"},"
    "\"names\":{\"gpu_resource\":\"amd.com/gpu\",\"shared_resource\":\"amd.com/gpu.shared\","
    "\"time_slice_resource\":\"x.io/ts\",\"time_slices_annotation\":\"x.io/slices\","
    "\"gpu_memory_annotation\":\"x.io/mem\",\"gpu_util_annotation\":\"x.io/util\","
    "\"gpu_uuids_annotation\":\"x.io/uuids\",\"gpu_index_annotation\":\"x.io/index\","
    "\"managed_label\":\"x.io/managed\"},"
    "\"sources\":{\"files\":{\"nodes\":\"demo/nodes.json\",\"metrics\":[\"a.prom\",\"/abs/"
    "b.prom\"],\"refresh_s\":7}},"
    "\"metrics\":{\"node_labels\":[\"instance\"],\"strip_port\":true,"
    "\"names\":{\"util\":\"U\",\"mem_used\":\"MU\",\"mem_free\":\"MF\",\"temp\":\"T\","
    "\"power\":\"P\",\"xid\":\"X\"},\"on_stale\":\"reject\","
    "\"max_age_s\":{\"util\":10,\"mem_used\":11,\"mem_free\":12,\"temp\":13,\"power\":14,"
    "\"xid\":15,\"util_trend\":16}},"
    "\"health\":{\"max_temperature_c\":80.5,\"ignored_xids\":[13,43]},"
    "\"filter\":{\"max_utilization_pct\":75},"
    "\"sharing\":{\"default_slots\":6,\"oversubscription\":1.5,\"memory_reserve_mib\":1024,"
    "\"util_ceiling_pct\":95,\"expect_share_util\":false,\"default_slices\":2,"
    "\"product_slots\":{\"NVIDIA-A100-SXM4-80GB\":7,\"NVIDIA-L4\":3},\"reservation_ttl_s\":120},"
    "\"score\":{\"policy\":\"spread\",\"weights\":{\"utilization\":9,\"memory\":8,"
    "\"temperature\":7,\"labels\":6,\"fit\":5,\"trend\":3},"
    "\"label_rules\":[{\"label\":\"topology.nvidia.com/pcie-gen\",\"operator\":\"Gt\","
    "\"values\":[\"3\"],\"weight\":10},{\"label\":\"zone\",\"operator\":\"In\",\"values\":"
    "[\"a\",\"b\"],\"weight\":-5}],\"prefer_cpu_nodes_for_cpu_pods\":false}}";

Test(config, full_document_sets_every_section)
{
    struct gx_config *c = parse_ok(full_doc);

    cr_assert_str_eq(c->listen_address, "10.0.0.5");
    cr_assert_eq(c->port, 9443);
    cr_assert_str_eq(c->url_prefix, "");
    cr_assert_eq(c->max_body_bytes, 1048576);
    cr_assert_eq(c->max_json_depth, 32);
    cr_assert_eq(c->connection_timeout_s, 12);
    cr_assert_eq(c->shutdown_grace_s, 3);
    cr_assert(c->debug_endpoints);
    cr_assert_str_eq(c->tls_cert_file, "/etc/gx/tls/tls.crt");
    cr_assert_str_eq(c->tls_key_file, "/certs/tls.key");
    cr_assert_eq(c->log_level, GX_LOG_DEBUG);
    cr_assert_str_eq(c->res_gpu, "amd.com/gpu");
    cr_assert_str_eq(c->res_shared, "amd.com/gpu.shared");
    cr_assert_str_eq(c->res_time_slice, "x.io/ts");
    cr_assert_str_eq(c->ann_slices, "x.io/slices");
    cr_assert_str_eq(c->ann_memory, "x.io/mem");
    cr_assert_str_eq(c->ann_util, "x.io/util");
    cr_assert_str_eq(c->ann_uuids, "x.io/uuids");
    cr_assert_str_eq(c->ann_index, "x.io/index");
    cr_assert_str_eq(c->managed_label, "x.io/managed");
    cr_assert_str_eq(c->nodes_file, "/etc/gx/demo/nodes.json");
    cr_assert_eq(c->n_metrics_files, 2);
    cr_assert_str_eq(c->metrics_files[0], "/etc/gx/a.prom");
    cr_assert_str_eq(c->metrics_files[1], "/abs/b.prom");
    cr_assert_eq(c->files_refresh_s, 7);
    cr_assert_eq(c->n_node_labels, 1);
    cr_assert_str_eq(c->node_labels[0], "instance");
    cr_assert(c->strip_port);
    cr_assert_str_eq(c->metric_names[GX_SIG_UTIL], "U");
    cr_assert_str_eq(c->metric_names[GX_SIG_MEM_USED], "MU");
    cr_assert_str_eq(c->metric_names[GX_SIG_MEM_FREE], "MF");
    cr_assert_str_eq(c->metric_names[GX_SIG_TEMP], "T");
    cr_assert_str_eq(c->metric_names[GX_SIG_POWER], "P");
    cr_assert_str_eq(c->metric_names[GX_SIG_XID], "X");
    cr_assert_eq(c->on_stale, GX_STALE_REJECT);
    for (int i = 0; i < GX_SIG_COUNT; i++) {
        cr_assert_eq(c->max_age_s[i], 10 + i);
    }
    cr_assert_float_eq(c->max_temperature_c, 80.5, 1e-9);
    cr_assert_eq(c->n_ignored_xids, 2);
    cr_assert_eq(c->ignored_xids[0], 13);
    cr_assert_eq(c->ignored_xids[1], 43);
    cr_assert_float_eq(c->max_utilization_pct, 75.0, 1e-9);
    cr_assert_eq(c->default_slots, 6);
    cr_assert_float_eq(c->oversubscription, 1.5, 1e-9);
    cr_assert_eq(c->memory_reserve_mib, 1024);
    cr_assert_float_eq(c->util_ceiling_pct, 95.0, 1e-9);
    cr_assert_not(c->expect_share_util);
    cr_assert_eq(c->default_slices, 2);
    cr_assert_eq(c->n_product_slots, 2);
    cr_assert_str_eq(c->product_slots[0].product, "NVIDIA-A100-SXM4-80GB");
    cr_assert_eq(c->product_slots[0].slots, 7);
    cr_assert_str_eq(c->product_slots[1].product, "NVIDIA-L4");
    cr_assert_eq(c->product_slots[1].slots, 3);
    cr_assert_eq(c->reservation_ttl_s, 120);
    cr_assert_eq(c->policy, GX_POLICY_SPREAD);
    cr_assert_eq(c->w_util, 9);
    cr_assert_eq(c->w_memory, 8);
    cr_assert_eq(c->w_temp, 7);
    cr_assert_eq(c->w_labels, 6);
    cr_assert_eq(c->w_fit, 5);
    cr_assert_eq(c->w_trend, 3);
    cr_assert_eq(c->n_label_rules, 2);
    cr_assert_not(c->prefer_cpu_nodes_for_cpu_pods);
    cr_assert_eq(c->hash, gx_hash(full_doc, strlen(full_doc)));
    gx_config_free(c);
}

Test(config, relative_paths_without_base_dir_join_dot)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {""};
    const char *doc = "{\"sources\":{\"files\":{\"nodes\":\"n.json\"}}}";

    cr_assert_eq(gx_config_parse(doc, strlen(doc), NULL, &cfg, &why), GX_OK, "%s", why.text);
    cr_assert_str_eq(cfg->base_dir, ".");
    cr_assert_str_eq(cfg->nodes_file, "./n.json");
    gx_config_free(cfg);
}

Test(config, unknown_keys_are_named_with_their_full_path)
{
    expect_error("{\"server\":{\"prot\":8888}}", GX_EINVAL, "unknown key 'server.prot'");
    expect_error("{\"serve\":{}}", GX_EINVAL, "unknown key 'serve'");
    expect_error("{\"metrics\":{\"names\":{\"utilization\":\"U\"}}}", GX_EINVAL,
                 "unknown key 'metrics.names.utilization'");
    expect_error("{\"sources\":{\"files\":{\"nodes\":null,\"pods\":\"p.json\"}}}", GX_EINVAL,
                 "unknown key 'sources.files.pods'");
    expect_error("{\"score\":{\"weights\":{\"gpu\":1}}}", GX_EINVAL,
                 "unknown key 'score.weights.gpu'");
    /* A dotted member name is not a shortcut for nesting. */
    expect_error("{\"server.port\":1}", GX_EINVAL, "unknown key 'server.port'");
}

Test(config, wrong_types_name_the_key)
{
    expect_error("{\"server\":{\"port\":\"8888\"}}", GX_EINVAL, "server.port: must be an integer");
    expect_error("{\"server\":{\"port\":88.5}}", GX_EINVAL, "server.port: must be an integer");
    expect_error("{\"server\":{\"address\":1}}", GX_EINVAL, "server.address: must be a string");
    expect_error("{\"server\":{\"debug_endpoints\":1}}", GX_EINVAL,
                 "server.debug_endpoints: must be true or false");
    expect_error("{\"server\":{\"tls_cert_file\":3}}", GX_EINVAL,
                 "server.tls_cert_file: must be a string or null");
    expect_error("{\"server\":7}", GX_EINVAL, "server: must be an object");
    expect_error("{\"health\":{\"max_temperature_c\":\"hot\"}}", GX_EINVAL,
                 "health.max_temperature_c: must be a number");
    expect_error("{\"metrics\":{\"node_labels\":\"Hostname\"}}", GX_EINVAL,
                 "metrics.node_labels: must be an array of strings");
    expect_error("{\"metrics\":{\"node_labels\":[\"Hostname\",2]}}", GX_EINVAL,
                 "metrics.node_labels[1]: must be a string");
    expect_error("{\"health\":{\"ignored_xids\":[13,\"43\"]}}", GX_EINVAL,
                 "health.ignored_xids[1]: must be an integer");
    expect_error("{\"sharing\":{\"product_slots\":[]}}", GX_EINVAL,
                 "sharing.product_slots: must be an object");
    expect_error("{\"names\":{\"gpu_resource\":null}}", GX_EINVAL,
                 "names.gpu_resource: must be a string");
}

Test(config, out_of_range_values_name_the_key_and_range)
{
    expect_error("{\"server\":{\"port\":0}}", GX_EINVAL,
                 "server.port: must be between 1 and 65535");
    expect_error("{\"server\":{\"port\":65536}}", GX_EINVAL, "server.port");
    expect_error("{\"server\":{\"max_body_bytes\":1023}}", GX_EINVAL, "server.max_body_bytes");
    expect_error("{\"server\":{\"max_json_depth\":513}}", GX_EINVAL, "server.max_json_depth");
    expect_error("{\"sharing\":{\"oversubscription\":0.5}}", GX_EINVAL,
                 "sharing.oversubscription: must be between 1 and 4");
    expect_error("{\"sharing\":{\"default_slots\":65}}", GX_EINVAL, "sharing.default_slots");
    expect_error("{\"filter\":{\"max_utilization_pct\":101}}", GX_EINVAL,
                 "filter.max_utilization_pct");
    expect_error("{\"health\":{\"max_temperature_c\":151}}", GX_EINVAL, "health.max_temperature_c");
    expect_error("{\"metrics\":{\"max_age_s\":{\"temp\":0}}}", GX_EINVAL,
                 "metrics.max_age_s.temp: must be between 1 and 86400");
    expect_error("{\"score\":{\"weights\":{\"fit\":-1}}}", GX_EINVAL, "score.weights.fit");
    expect_error("{\"score\":{\"weights\":{\"trend\":101}}}", GX_EINVAL, "score.weights.trend");
    expect_error("{\"sharing\":{\"product_slots\":{\"NVIDIA-L4\":0}}}", GX_EINVAL,
                 "sharing.product_slots.NVIDIA-L4: must be between 1 and 64");
    expect_error("{\"sources\":{\"files\":{\"refresh_s\":3601}}}", GX_EINVAL,
                 "sources.files.refresh_s");
}

Test(config, enums_list_allowed_values)
{
    expect_error("{\"log\":{\"level\":\"verbose\"}}", GX_EINVAL,
                 "log.level: must be one of debug, info, warn, error");
    expect_error("{\"score\":{\"policy\":\"pack\"}}", GX_EINVAL,
                 "score.policy: must be one of binpack, spread, fgd");
    expect_error("{\"metrics\":{\"on_stale\":\"drop\"}}", GX_EINVAL,
                 "metrics.on_stale: must be one of ignore, reject");
}

Test(config, cross_key_rules_are_checked)
{
    expect_error("{\"server\":{\"url_prefix\":\"/gx/\"}}", GX_EINVAL, "server.url_prefix");
    expect_error("{\"server\":{\"url_prefix\":\"gx\"}}", GX_EINVAL, "server.url_prefix");
    expect_error("{\"server\":{\"url_prefix\":\"/\"}}", GX_EINVAL, "server.url_prefix");
    expect_error("{\"server\":{\"tls_cert_file\":\"c.pem\"}}", GX_EINVAL, "tls_key_file");
    expect_error("{\"metrics\":{\"node_labels\":[]}}", GX_EINVAL,
                 "metrics.node_labels: must not be empty");
    expect_error("{\"metrics\":{\"node_labels\":[\"\"]}}", GX_EINVAL,
                 "metrics.node_labels[0]: must not be empty");
    expect_error("{\"sources\":{\"files\":{\"metrics\":[\"\"]}}}", GX_EINVAL,
                 "sources.files.metrics[0]: must not be empty");
    expect_error("{\"metrics\":{\"names\":{\"util\":\"DCGM FI\"}}}", GX_EINVAL,
                 "metrics.names.util: must be a Prometheus metric name");
}

Test(config, duplicate_keys_are_rejected)
{
    expect_error("{\"server\":{\"port\":1,\"port\":2}}", GX_EINVAL, "duplicate key 'server.port'");
    expect_error("{\"sharing\":{\"product_slots\":{\"A\":1,\"A\":2}}}", GX_EINVAL,
                 "duplicate key 'sharing.product_slots.A'");
}

Test(config, not_json_or_not_object_is_a_parse_error_with_position)
{
    expect_error("{\n  \"server\": {\"port\": }\n}", GX_EPARSE, "line 2");
    expect_error("", GX_EPARSE, "not valid JSON");
    expect_error("[1,2]", GX_EPARSE, "must be a JSON object");
    expect_error("{} x", GX_EPARSE, "line 1 column 4");
}

Test(config, length_bounds_the_text)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {""};
    /* Only the first 2 bytes count; the rest would be an error. */
    const char *doc = "{}{\"server\":1}";

    cr_assert_eq(gx_config_parse(doc, 2, NULL, &cfg, &why), GX_OK, "%s", why.text);
    cr_assert_eq(cfg->port, 8888);
    gx_config_free(cfg);
}

Test(config, label_rules_parse_and_validate)
{
    struct gx_config *c = parse_ok(
        "{\"score\":{\"label_rules\":["
        "{\"label\":\"topology.nvidia.com/pcie-gen\",\"operator\":\"Gt\",\"values\":[\"3\"],"
        "\"weight\":10},"
        "{\"label\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\",\"b\"],\"weight\":-20},"
        "{\"label\":\"nvidia.com/gpu.present\",\"operator\":\"Exists\",\"weight\":1},"
        "{\"label\":\"spot\",\"operator\":\"DoesNotExist\",\"values\":[],\"weight\":100},"
        "{\"label\":\"mem\",\"operator\":\"Lt\",\"values\":[\"-2.5e3\"],\"weight\":-100}]}}");

    cr_assert_eq(c->n_label_rules, 5);
    cr_assert_str_eq(c->label_rules[0].label, "topology.nvidia.com/pcie-gen");
    cr_assert_eq(c->label_rules[0].op, GX_OP_GT);
    cr_assert_float_eq(c->label_rules[0].number, 3.0, 1e-9);
    cr_assert_eq(c->label_rules[0].weight, 10);
    cr_assert_eq(c->label_rules[1].op, GX_OP_NOT_IN);
    cr_assert_eq(c->label_rules[1].n_values, 2);
    cr_assert_str_eq(c->label_rules[1].values[1], "b");
    cr_assert_eq(c->label_rules[1].weight, -20);
    cr_assert_eq(c->label_rules[2].op, GX_OP_EXISTS);
    cr_assert_eq(c->label_rules[2].n_values, 0);
    cr_assert_eq(c->label_rules[3].op, GX_OP_DOES_NOT_EXIST);
    cr_assert_eq(c->label_rules[4].op, GX_OP_LT);
    cr_assert_float_eq(c->label_rules[4].number, -2500.0, 1e-9);
    gx_config_free(c);
}

Test(config, bad_label_rules_name_the_element)
{
    expect_error(
        "{\"score\":{\"label_rules\":[{\"label\":\"a\",\"operator\":\"In\",\"weight\":1}]}}",
        GX_EINVAL, "score.label_rules[0].values: In needs at least one value");
    expect_error("{\"score\":{\"label_rules\":[{\"label\":\"a\",\"operator\":\"Exists\",\"values\":"
                 "[\"x\"],\"weight\":1}]}}",
                 GX_EINVAL, "score.label_rules[0].values: Exists takes no values");
    expect_error("{\"score\":{\"label_rules\":[{\"label\":\"a\",\"operator\":\"Exists\",\"weight\":"
                 "1},{\"label\":\"b\",\"operator\":\"Gt\",\"values\":[\"abc\"],\"weight\":1}]}}",
                 GX_EINVAL, "score.label_rules[1].values: Gt needs a number");
    expect_error("{\"score\":{\"label_rules\":[{\"label\":\"b\",\"operator\":\"Lt\",\"values\":"
                 "[\"1\",\"2\"],\"weight\":1}]}}",
                 GX_EINVAL, "score.label_rules[0].values: Lt needs exactly one value");
    expect_error("{\"score\":{\"label_rules\":[{\"label\":\"b\",\"operator\":\"Exists\",\"weight\":"
                 "101}]}}",
                 GX_EINVAL, "score.label_rules[0].weight: must be between -100 and 100");
    expect_error(
        "{\"score\":{\"label_rules\":[{\"label\":\"b\",\"operator\":\"gt\",\"weight\":1}]}}",
        GX_EINVAL, "score.label_rules[0].operator: must be one of In, NotIn");
    expect_error("{\"score\":{\"label_rules\":[{\"label\":\"b\",\"weight\":1}]}}", GX_EINVAL,
                 "score.label_rules[0].operator: is required");
    expect_error("{\"score\":{\"label_rules\":[{\"operator\":\"Exists\",\"weight\":1}]}}",
                 GX_EINVAL, "score.label_rules[0].label: is required");
    expect_error("{\"score\":{\"label_rules\":[{\"label\":\"b\",\"operator\":\"Exists\"}]}}",
                 GX_EINVAL, "score.label_rules[0].weight: is required");
    expect_error("{\"score\":{\"label_rules\":[{\"label\":\"b\",\"operator\":\"Exists\",\"weight\":"
                 "1,\"key\":\"x\"}]}}",
                 GX_EINVAL, "unknown key 'score.label_rules[0].key'");
    expect_error("{\"score\":{\"label_rules\":[3]}}", GX_EINVAL,
                 "score.label_rules[0]: must be an object");
    expect_error("{\"score\":{\"label_rules\":{}}}", GX_EINVAL,
                 "score.label_rules: must be an array of objects");
}

Test(config, card_slots_follow_product_then_replicas_then_default)
{
    struct gx_config *c = parse_ok("{\"sharing\":{\"default_slots\":4,\"product_slots\":"
                                   "{\"NVIDIA-A100-SXM4-80GB\":7,\"NVIDIA-GeForce-RTX-4090\":3}}}");

    cr_assert_eq(gx_config_card_slots(c, "NVIDIA-A100-SXM4-80GB", 1), 7);
    cr_assert_eq(gx_config_card_slots(c, "NVIDIA-A100-SXM4-80GB", 8), 7);
    /* The time-slicing label of GPU feature discovery appends -SHARED. */
    cr_assert_eq(gx_config_card_slots(c, "NVIDIA-GeForce-RTX-4090-SHARED", 4), 3);
    cr_assert_eq(gx_config_card_slots(c, "NVIDIA-L4", 3), 3);
    cr_assert_eq(gx_config_card_slots(c, "NVIDIA-L4", 6), 6);
    cr_assert_eq(gx_config_card_slots(c, "NVIDIA-L4", 1), 4);
    cr_assert_eq(gx_config_card_slots(c, "NVIDIA-L4", 0), 4);
    cr_assert_eq(gx_config_card_slots(c, NULL, 2), 2);
    cr_assert_eq(gx_config_card_slots(c, "-SHARED", 1), 4);
    gx_config_free(c);
}

Test(config, exact_product_wins_over_stripped_suffix)
{
    struct gx_config *c = parse_ok("{\"sharing\":{\"product_slots\":{\"GPU-X\":2,"
                                   "\"GPU-X-SHARED\":5}}}");

    cr_assert_eq(gx_config_card_slots(c, "GPU-X-SHARED", 1), 5);
    cr_assert_eq(gx_config_card_slots(c, "GPU-X", 1), 2);
    gx_config_free(c);
}

Test(config, card_slots_scale_by_oversubscription_with_floor)
{
    struct gx_config *c = parse_ok("{\"sharing\":{\"default_slots\":3,\"oversubscription\":1.5,"
                                   "\"product_slots\":{\"P\":1}}}");

    cr_assert_eq(gx_config_card_slots(c, "Q", 1), 4); /* floor(4.5) */
    cr_assert_eq(gx_config_card_slots(c, "Q", 4), 6);
    cr_assert_eq(gx_config_card_slots(c, "P", 1), 1); /* floor(1.5) */
    gx_config_free(c);

    c = parse_ok("{\"sharing\":{\"default_slots\":5,\"oversubscription\":1.2}}");
    cr_assert_eq(gx_config_card_slots(c, "Q", 1), 6);
    gx_config_free(c);
}

Test(config, restart_diff_lists_only_restart_keys)
{
    struct gx_config *a = parse_ok("{}");
    struct gx_config *b =
        parse_ok("{\"server\":{\"port\":9000,\"max_body_bytes\":2048,\"debug_endpoints\":true,"
                 "\"connection_timeout_s\":5,\"max_json_depth\":16},"
                 "\"sources\":{\"files\":{\"metrics\":[\"m.prom\"]}},\"log\":{\"level\":\"warn\"},"
                 "\"score\":{\"policy\":\"spread\"}}");
    struct gx_config *c = parse_ok("{\"log\":{\"level\":\"error\"},\"filter\":"
                                   "{\"max_utilization_pct\":50}}");
    char out[128];

    cr_assert(gx_config_restart_keys_changed(a, b, out, sizeof(out)));
    cr_assert_str_eq(out, "server.port,sources.files.metrics");
    cr_assert_not(gx_config_restart_keys_changed(a, c, out, sizeof(out)));
    cr_assert_str_eq(out, "");
    cr_assert_not(gx_config_restart_keys_changed(a, a, out, sizeof(out)));
    /* A tiny buffer still reports the change and stays terminated. */
    cr_assert(gx_config_restart_keys_changed(a, b, out, 4));
    cr_assert_eq(strlen(out), 0);
    cr_assert(gx_config_restart_keys_changed(a, b, NULL, 0));
    gx_config_free(a);
    gx_config_free(b);
    gx_config_free(c);
}

Test(config, restart_diff_sees_tls_address_prefix_and_nodes)
{
    struct gx_config *a = parse_ok("{}");
    struct gx_config *b = parse_ok(
        "{\"server\":{\"address\":\"127.0.0.1\",\"url_prefix\":\"/x\",\"tls_cert_file\":\"c\","
        "\"tls_key_file\":\"k\",\"shutdown_grace_s\":1},"
        "\"sources\":{\"files\":{\"nodes\":\"n.json\",\"refresh_s\":9}}}");
    char out[512];

    cr_assert(gx_config_restart_keys_changed(a, b, out, sizeof(out)));
    cr_assert_str_eq(out, "server.address,server.url_prefix,server.shutdown_grace_s,"
                          "server.tls_cert_file,server.tls_key_file,sources.files.nodes,"
                          "sources.files.refresh_s");
    gx_config_free(a);
    gx_config_free(b);
}

Test(config, demo_config_loads_with_resolved_files)
{
    const char *path = GX_SOURCE_DIR "/config/demo.json";
    struct gx_config *c = NULL;
    struct gx_why why = {""};
    char *text = NULL;
    size_t len = 0;

    cr_assert_eq(gx_config_load(path, &c, &why), GX_OK, "%s", why.text);
    cr_assert_str_eq(c->path, path);
    cr_assert_str_eq(c->base_dir, GX_SOURCE_DIR "/config");
    cr_assert_str_eq(c->nodes_file, GX_SOURCE_DIR "/config/demo/nodes.json");
    cr_assert_eq(c->n_metrics_files, 3);
    cr_assert_str_eq(c->metrics_files[2], GX_SOURCE_DIR "/config/demo/dcgm-gpu-node-c.prom");
    cr_assert_str_eq(c->listen_address, "127.0.0.1");
    cr_assert_eq(c->port, 8888);
    cr_assert(c->debug_endpoints);
    cr_assert_eq(gx_read_file(path, 1 << 20, &text, &len), GX_OK);
    cr_assert_eq(c->hash, gx_hash(text, len));
    /* Every data file the demo names is there. */
    for (size_t i = 0; i < c->n_metrics_files; i++) {
        char *data = NULL;
        size_t n = 0;
        cr_assert_eq(gx_read_file(c->metrics_files[i], 1 << 20, &data, &n), GX_OK, "%s",
                     c->metrics_files[i]);
        free(data);
    }
    free(text);
    gx_config_free(c);
}

/*
 * The production file (the default install, every pod through the extender) is the defaults
 * plus the live sources switched on and the two score keys the all-pods profile runs with.
 */
Test(config, production_config_is_the_defaults_with_live_sources_and_all_pods_scores)
{
    struct gx_config *c = NULL;
    struct gx_why why = {""};

    cr_assert_eq(gx_config_load(GX_SOURCE_DIR "/config/config.json", &c, &why), GX_OK, "%s",
                 why.text);
    cr_assert(c->kube_enabled);
    cr_assert_null(c->kube_url);
    cr_assert_str_eq(c->kube_node_selector, "nvidia.com/gpu.present=true");
    cr_assert_str_eq(c->prom_url, "http://prometheus-k8s.monitoring.svc:9090");
    cr_assert_str_eq(c->prom_queries[GX_SIG_XID], "max_over_time(DCGM_FI_DEV_XID_ERRORS[10m])");
    cr_assert(c->relative_scores);
    cr_assert_eq(c->fgd_idle_card_milli, 25);
    c->kube_enabled = false;
    c->relative_scores = false;
    c->fgd_idle_card_milli = 0;
    assert_defaults(c);
    gx_config_free(c);
}

Test(config, load_reports_missing_file)
{
    struct gx_config *c = NULL;
    struct gx_why why = {""};

    cr_assert_eq(gx_config_load(GX_SOURCE_DIR "/config/no-such.json", &c, &why), GX_ENOTFOUND);
    cr_assert_null(c);
    cr_assert(strstr(why.text, "no-such.json") != NULL, "%s", why.text);
}

/* sharing.default_slices is read by nothing: old files still load, with a warning. */
Test(config, deprecated_key_loads_with_a_warning)
{
    FILE *f = tmpfile();
    struct gx_config *c;

    cr_assert_not_null(f);
    gx_log_set_sink(f);
    c = parse_ok("{\"sharing\":{\"default_slots\":3}}");
    gx_config_free(c);
    cr_assert_eq(gx_test_lines_with(f, "deprecated"), 0, "no warning without the key");
    c = parse_ok("{\"sharing\":{\"default_slices\":2}}");
    cr_assert_eq(gx_test_lines_with(f, "key=sharing.default_slices"), 1);
    cr_assert_eq(gx_test_lines_with(f, "level=warn msg=\"config key is deprecated and ignored"), 1);
    gx_config_free(c);
    expect_error("{\"sharing\":{\"default_slices\":65}}", GX_EINVAL, "sharing.default_slices");
    gx_log_set_sink(NULL);
    (void)fclose(f);
}

/* Collect the keys of table rows "| `key` |" in docs/configuration.md. */
Test(config, docs_list_exactly_the_config_keys)
{
    const char *const *keys = gx_config_keys();
    char *doc = NULL, *line, *next;
    size_t len = 0, n_keys = 0, n_doc = 0;
    char *doc_keys[256];

    cr_assert_eq(gx_read_file(GX_SOURCE_DIR "/docs/configuration.md", 1 << 20, &doc, &len), GX_OK);
    for (line = doc; line != NULL; line = next) {
        char *end;

        next = strchr(line, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        if (strncmp(line, "| `", 3) != 0) {
            continue;
        }
        end = strchr(line + 3, '`');
        cr_assert_not_null(end, "unterminated key in: %s", line);
        *end = '\0';
        cr_assert_lt(n_doc, GX_ARRAY_LEN(doc_keys));
        for (size_t i = 0; i < n_doc; i++) {
            cr_assert_str_neq(doc_keys[i], line + 3, "documented twice: %s", line + 3);
        }
        doc_keys[n_doc++] = line + 3;
    }
    for (n_keys = 0; keys[n_keys] != NULL; n_keys++) {
        bool found = false;
        for (size_t i = 0; i < n_doc && !found; i++) {
            found = strcmp(doc_keys[i], keys[n_keys]) == 0;
        }
        cr_assert(found, "key %s is not documented", keys[n_keys]);
    }
    for (size_t i = 0; i < n_doc; i++) {
        bool found = false;
        for (size_t k = 0; keys[k] != NULL && !found; k++) {
            found = strcmp(doc_keys[i], keys[k]) == 0;
        }
        cr_assert(found, "documented key %s does not exist", doc_keys[i]);
    }
    cr_assert_eq(n_doc, n_keys);
    cr_assert_gt(n_keys, 50);
    free(doc);
}

Test(config, keys_include_element_rows)
{
    const char *const *keys = gx_config_keys();
    bool op = false, port = false;

    for (size_t i = 0; keys[i] != NULL; i++) {
        op = op || strcmp(keys[i], "score.label_rules[].operator") == 0;
        port = port || strcmp(keys[i], "server.port") == 0;
    }
    cr_assert(op);
    cr_assert(port);
}

/* Write @text to a fresh file under /tmp and return its path (static storage). */
static const char *
tmp_file(const char *name, const char *text)
{
    static char path[8][256];
    static int next;
    char *p = path[next++ % 8];
    FILE *f;

    (void)snprintf(p, 256, "/tmp/gx-test-config-%d-%s", (int)getpid(), name);
    f = fopen(p, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, true);
    cr_assert_eq(fclose(f), 0);
    return p;
}

/* gx_config_load of @json must fail with GX_EINVAL and a reason holding @text. */
static void
expect_load_error(const char *json, const char *text)
{
    struct gx_config *c = NULL;
    struct gx_why why = {""};
    const char *path = tmp_file("config.json", json);

    cr_assert_eq(gx_config_load(path, &c, &why), GX_EINVAL, "%s: %s", json, why.text);
    cr_assert_null(c);
    cr_assert(strstr(why.text, text) != NULL, "%s: why '%s' lacks '%s'", json, why.text, text);
    (void)unlink(path);
}

Test(config, load_rejects_missing_or_unusable_tls_files_naming_the_key)
{
    char json[1024];
    const char *junk = tmp_file("junk.pem", "not a certificate\n");

    expect_load_error("{\"server\":{\"tls_cert_file\":\"/nonexistent/c.pem\","
                      "\"tls_key_file\":\"/nonexistent/k.pem\"}}",
                      "server.tls_cert_file: cannot read '/nonexistent/c.pem'");
    (void)snprintf(json, sizeof(json),
                   "{\"server\":{\"tls_cert_file\":\"%s\",\"tls_key_file\":\"/nonexistent/k\"}}",
                   junk);
    expect_load_error(json, "server.tls_key_file: cannot read '/nonexistent/k'");
    (void)snprintf(json, sizeof(json),
                   "{\"server\":{\"tls_cert_file\":\"%s\",\"tls_key_file\":\"%s\"}}", junk, junk);
    expect_load_error(json, "server.tls_cert_file: certificate and server.tls_key_file");
    (void)snprintf(json, sizeof(json),
                   "{\"server\":{\"tls_cert_file\":\"/tmp\",\"tls_key_file\":"
                   "\"/tmp\"}}");
    expect_load_error(json, "server.tls_cert_file: cannot read '/tmp'");
    (void)unlink(junk);
}

Test(config, prometheus_url_must_be_http_or_https)
{
    struct gx_config *c;

    expect_error("{\"prometheus\":{\"url\":\"ftp://x\"}}", GX_EINVAL, "prometheus.url");
    expect_error("{\"prometheus\":{\"url\":\"prometheus:9090\"}}", GX_EINVAL, "prometheus.url");
    expect_error("{\"prometheus\":{\"url\":\"http://\"}}", GX_EINVAL, "prometheus.url");
    c = parse_ok("{\"prometheus\":{\"url\":\"HTTPS://prom.example:9090\"}}");
    gx_config_free(c);
    c = parse_ok("{\"prometheus\":{\"url\":\"http://127.0.0.1:9090/prefix\"}}");
    gx_config_free(c);
}

Test(config, nul_escape_in_any_string_is_rejected_naming_the_key)
{
    struct gx_config *c;

    expect_error("{\"names\":{\"gpu_resource\":\"nvidia.com/gpu\\u0000x\"}}", GX_EINVAL,
                 "names.gpu_resource: must not contain \\u0000");
    expect_error("{\"prometheus\":{\"queries\":{\"util\":\"up\\u0000\"}}}", GX_EINVAL,
                 "prometheus.queries.util");
    expect_error("{\"metrics\":{\"node_labels\":[\"a\",\"b\\u0000\"]}}", GX_EINVAL,
                 "metrics.node_labels[1]");
    expect_error("{\"log\":{\"level\":\"info\\u0000x\"}}", GX_EINVAL, "log.level");
    /* a key cut at \u0000 would silently match a real key */
    expect_error("{\"server\":{\"port\\u0000x\":1}}", GX_EINVAL, "server.port");
    /* an escaped backslash followed by u0000 is text, not a NUL */
    c = parse_ok("{\"names\":{\"gpu_resource\":\"a\\\\u0000b\"}}");
    cr_assert_str_eq(c->res_gpu, "a\\u0000b");
    gx_config_free(c);
}

Test(config, memory_budget_must_hold_a_largest_body_and_its_reply)
{
    struct gx_config *c;

    expect_error("{\"server\":{\"max_body_bytes\":104857600}}", GX_EINVAL,
                 "server.max_inflight_bytes: must be at least 16/7 x server.max_body_bytes");
    expect_error("{\"server\":{\"max_body_bytes\":104857600,\"max_inflight_bytes\":209715200}}",
                 GX_EINVAL, "server.max_inflight_bytes");
    c = parse_ok("{\"server\":{\"max_body_bytes\":104857600,\"max_inflight_bytes\":240000000}}");
    cr_assert_eq(c->max_inflight_bytes, (size_t)240000000);
    gx_config_free(c);
    c = parse_ok("{}");
    cr_assert_eq(c->max_inflight_bytes, (size_t)160 << 20);
    gx_config_free(c);
}

Test(config, tls_priorities_are_checked_and_default_to_tls12_and_13)
{
    struct gx_config *c;

    expect_error("{\"server\":{\"tls_priorities\":\"NO-SUCH-KEYWORD\"}}", GX_EINVAL,
                 "server.tls_priorities");
    c = parse_ok("{}");
    cr_assert(strstr(c->tls_priorities, "+VERS-TLS1.2") != NULL, "%s", c->tls_priorities);
    cr_assert(strstr(c->tls_priorities, "-VERS-ALL") != NULL, "%s", c->tls_priorities);
    gx_config_free(c);
}

/* Issue 22: what start-up refuses, gx_config_load refuses too, naming the key. */
Test(config, load_rejects_files_start_up_cannot_read_naming_the_key)
{
    char json[1024];
    const char *ok = tmp_file("ok.prom", "# nothing\n");

    expect_load_error("{\"sources\":{\"files\":{\"nodes\":\"/x/nodes.json\"}}}",
                      "sources.files.nodes: /x/nodes.json: No such file or directory");
    (void)snprintf(json, sizeof(json),
                   "{\"sources\":{\"files\":{\"metrics\":[\"%s\",\"/x/b.prom\"]}}}", ok);
    expect_load_error(json, "sources.files.metrics[1]: /x/b.prom: No such file or directory");
    expect_load_error("{\"kubernetes\":{\"enabled\":true,\"url\":\"https://k:6443\","
                      "\"token_file\":\"/x/token\"}}",
                      "kubernetes.token_file: /x/token: No such file or directory");
    expect_load_error("{\"kubernetes\":{\"enabled\":true,\"url\":\"https://k:6443\","
                      "\"ca_file\":\"/tmp\"}}",
                      "kubernetes.ca_file: /tmp: is a directory");
    expect_load_error("{\"prometheus\":{\"url\":\"http://p:9090\",\"ca_file\":\"/x/ca\"}}",
                      "prometheus.ca_file: /x/ca: No such file or directory");
    expect_load_error("{\"prometheus\":{\"url\":\"http://p:9090\","
                      "\"bearer_token_file\":\"/x/t\"}}",
                      "prometheus.bearer_token_file: /x/t");
    (void)unlink(ok);
}

Test(config, load_skips_files_start_up_does_not_read)
{
    struct gx_config *c = NULL;
    struct gx_why why = {""};
    const char *path =
        tmp_file("unused.json", "{\"kubernetes\":{\"enabled\":true,\"url\":\"https://k:6443\","
                                "\"insecure_skip_verify\":true,\"ca_file\":\"/x/ca\"}}");

    /* no CA is read when verification is off */
    cr_assert_eq(gx_config_load(path, &c, &why), GX_OK, "%s", why.text);
    gx_config_free(c);
    (void)unlink(path);
}

Test(config, node_selector_must_parse_as_a_label_selector)
{
    static const char *const good[] = {
        "nvidia.com/gpu.present=true",
        "a,!b, c != d,e==f",
        "env in (prod, staging),tier notin (frontend)",
        "gpu>2,x<10",
        "a=",
        "k8s.io/x in ()",
    };
    static const char *const bad[] = {
        "a=b=c", "a,,b", "a,", "-a=b", "a in b", "a in (b", "a=b c", "a>x", "A.Io/x=y", "!a=b",
    };
    char json[256];

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        (void)snprintf(json, sizeof(json), "{\"kubernetes\":{\"node_selector\":\"%s\"}}", good[i]);
        gx_config_free(parse_ok(json));
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        (void)snprintf(json, sizeof(json), "{\"kubernetes\":{\"node_selector\":\"%s\"}}", bad[i]);
        expect_error(json, GX_EINVAL, "kubernetes.node_selector: '");
    }
}

Test(config, replicas_take_an_http_or_https_address)
{
    struct gx_config *cfg;

    expect_error("{\"replicas\":{\"advertise_url\":\"ftp://10.0.0.1:8443\"}}", GX_EINVAL,
                 "replicas.advertise_url: must be an http:// or https:// URL with a host");
    expect_error("{\"replicas\":{\"advertise_url\":\"http://\"}}", GX_EINVAL,
                 "replicas.advertise_url: must be an http:// or https:// URL with a host");
    expect_error("{\"replicas\":{\"lease_s\":1}}", GX_EINVAL, "replicas.lease_s");
    cfg = parse_ok("{\"replicas\":{\"forward\":true,\"advertise_url\":\"https://10.0.0.1:8443\"}}");
    cr_assert(cfg->replicas_forward);
    cr_assert_eq(cfg->replicas_lease_s, 10);
    cr_assert_str_eq(cfg->replicas_advertise_url, "https://10.0.0.1:8443");
    gx_config_free(cfg);
}
