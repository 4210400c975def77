/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_keys.c - the key table: one row per config key with its dotted
 * path, its type, where it lives in struct gx_config, its range, its
 * default and whether changing it needs a restart; and the lookups over
 * the table (row by path, sections, the rows of one struct) the other
 * config files share through config_int.h.
 *
 * Adding a key is adding a row here (and a line in docs/configuration.md:
 * a test compares the two); parsing, defaults, freeing and the restart
 * comparison all follow the table. This file reads no JSON and allocates
 * nothing.
 */
#include "config_int.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "tls.h"

static const char *const level_names[] = {"debug", "info", "warn", "error", NULL};
static const char *const policy_names[] = {"binpack", "spread", "fgd", NULL};
static const char *const stale_names[] = {"ignore", "reject", NULL};
static const char *const strategy_names[] = {"LeastAllocated", "MostAllocated", NULL};
const char *const gx_config_op_names[] = {"In", "NotIn", "Exists", "DoesNotExist",
                                          "Gt", "Lt",    NULL};
static const char *const default_node_labels[] = {"Hostname", "hostname", NULL};
static const char *const signal_names[GX_SIG_COUNT] = {"util",  "mem_used", "mem_free",  "temp",
                                                       "power", "xid",      "util_trend"};

_Static_assert(sizeof(enum gx_policy) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum gx_on_stale) == sizeof(int), "enum stored as int");
_Static_assert(sizeof(enum gx_rule_op) == sizeof(int), "enum stored as int");
_Static_assert(GX_LOG_ERROR == 3 && GX_OP_LT == 5 && GX_POLICY_SPREAD == 1 && GX_STALE_REJECT == 1,
               "name tables follow the enums");

/* clang-format off */
#define OFF(f) offsetof(struct gx_config, f)
#define ROFF(f) offsetof(struct gx_label_rule, f)

/* Row makers: path, field, [range], default, flags. Lists keep their count in n_<field>. */
#define STR(p, f, d, fl) {.path = (p), .type = GX_K_STR, .off = OFF(f), .defs = (d), .flags = (fl)}
#define INT(p, f, lo, hi, d, fl) \
    {.path = (p), .type = GX_K_INT, .off = OFF(f), .min = (lo), .max = (hi), .def = (d), \
     .flags = (fl)}
#define NUM(p, t, f, lo, hi, d) \
    {.path = (p), .type = (t), .off = OFF(f), .min = (lo), .max = (hi), .def = (d)}
#define BOOL(p, f, d) {.path = (p), .type = GX_K_BOOL, .off = OFF(f), .def = (d)}
#define ENUM(p, f, nm, d) {.path = (p), .type = GX_K_ENUM, .off = OFF(f), .names = (nm), .def = (d)}
#define LIST(p, t, f, lo, hi, dl, fl) \
    {.path = (p), .type = (t), .off = OFF(f), .off_n = OFF(n_##f), .min = (lo), .max = (hi), \
     .names = (dl), .flags = (fl)}
#define MNAME(sig, idx, d) \
    STR("metrics.names." #sig, metric_names[idx], d, GX_KF_NONEMPTY | GX_KF_METRIC_NAME)
#define MAXAGE(sig, idx) INT("metrics.max_age_s." #sig, max_age_s[idx], 1, 86400, 60, 0)
/* Element rows of score.label_rules: offsets into struct gx_label_rule. */
#define RULE(p, t, f, lo, hi, nm, fl) \
    {.path = "score.label_rules[]." p, .type = (t), .off = ROFF(f), .min = (lo), .max = (hi), \
     .names = (nm), .flags = (fl)}

#define F_RPATH (GX_KF_RESTART | GX_KF_NULLABLE | GX_KF_PATH | GX_KF_NONEMPTY)
#define F_LPATH (GX_KF_NULLABLE | GX_KF_PATH | GX_KF_NONEMPTY)
/* A PromQL query per signal; "" disables the signal. */
#define PROMQL(sig, idx, d) STR("prometheus.queries." #sig, prom_queries[idx], d, 0)

/*
 * Every key. Keep docs/configuration.md in step: a test compares the two.
 * Ranges here are the documented ranges.
 */
const struct gx_kspec gx_config_table[] = {
    STR("server.address", listen_address, "0.0.0.0", GX_KF_RESTART | GX_KF_NONEMPTY),
    INT("server.port", port, 1, 65535, 8888, GX_KF_RESTART),
    STR("server.url_prefix", url_prefix, "/gpu-extender", GX_KF_RESTART),
    NUM("server.max_body_bytes", GX_K_SIZE, max_body_bytes, 1024, 1073741824.0, 67108864.0),
    INT("server.max_json_depth", max_json_depth, 8, 512, 64, 0),
    INT("server.connection_timeout_s", connection_timeout_s, 1, 3600, 30, 0),
    INT("server.shutdown_grace_s", shutdown_grace_s, 1, 3600, 10, GX_KF_RESTART),
    BOOL("server.debug_endpoints", debug_endpoints, 0),
    STR("server.tls_cert_file", tls_cert_file, NULL, F_RPATH),
    STR("server.tls_key_file", tls_key_file, NULL, F_RPATH),
    STR("server.tls_priorities", tls_priorities, GX_TLS_PRIORITIES, GX_KF_RESTART | GX_KF_NONEMPTY),
    NUM("server.max_inflight_bytes", GX_K_SIZE, max_inflight_bytes, 1048576, 17179869184.0,
        167772160.0),

    ENUM("log.level", log_level, level_names, GX_LOG_INFO),

    STR("names.gpu_resource", res_gpu, "nvidia.com/gpu", GX_KF_NONEMPTY),
    STR("names.shared_resource", res_shared, "nvidia.com/gpu.shared", GX_KF_NONEMPTY),
    STR("names.time_slice_resource", res_time_slice, "gpu-extender.io/time-slice", GX_KF_NONEMPTY),
    STR("names.time_slices_annotation", ann_slices, "gpu-extender.io/time-slices", GX_KF_NONEMPTY),
    STR("names.gpu_memory_annotation", ann_memory, "gpu-extender.io/gpu-memory", GX_KF_NONEMPTY),
    STR("names.gpu_milli_annotation", ann_milli, "gpu-extender.io/gpu-milli", GX_KF_NONEMPTY),
    STR("names.gpu_util_annotation", ann_util, "gpu-extender.io/gpu-util", GX_KF_NONEMPTY),
    STR("names.gang_distinct_annotation", ann_apart, "gpu-extender.io/gang-distinct-cards",
        GX_KF_NONEMPTY),
    STR("names.gang_numa_annotation", ann_numa, "gpu-extender.io/gang-same-numa", GX_KF_NONEMPTY),
    STR("names.gpu_uuids_annotation", ann_uuids, "gpu-extender.io/gpu-uuids", GX_KF_NONEMPTY),
    STR("names.gpu_index_annotation", ann_index, "gpu-extender.io/gpu-index", GX_KF_NONEMPTY),
    STR("names.managed_label", managed_label, "gpu-extender.io/managed", GX_KF_NONEMPTY),

    STR("sources.files.nodes", nodes_file, NULL, F_RPATH),
    LIST("sources.files.metrics", GX_K_STR_LIST, metrics_files, 0, 0, NULL,
         GX_KF_RESTART | GX_KF_PATH),
    INT("sources.files.refresh_s", files_refresh_s, 1, 3600, 5, GX_KF_RESTART),

    LIST("metrics.node_labels", GX_K_STR_LIST, node_labels, 0, 0, default_node_labels,
         GX_KF_NONEMPTY),
    BOOL("metrics.strip_port", strip_port, 0),
    MNAME(util, GX_SIG_UTIL, "DCGM_FI_DEV_GPU_UTIL"),
    MNAME(mem_used, GX_SIG_MEM_USED, "DCGM_FI_DEV_FB_USED"),
    MNAME(mem_free, GX_SIG_MEM_FREE, "DCGM_FI_DEV_FB_FREE"),
    MNAME(temp, GX_SIG_TEMP, "DCGM_FI_DEV_GPU_TEMP"),
    MNAME(power, GX_SIG_POWER, "DCGM_FI_DEV_POWER_USAGE"),
    MNAME(xid, GX_SIG_XID, "DCGM_FI_DEV_XID_ERRORS"),
    ENUM("metrics.on_stale", on_stale, stale_names, GX_STALE_IGNORE),
    MAXAGE(util, GX_SIG_UTIL),
    MAXAGE(mem_used, GX_SIG_MEM_USED),
    MAXAGE(mem_free, GX_SIG_MEM_FREE),
    MAXAGE(temp, GX_SIG_TEMP),
    MAXAGE(power, GX_SIG_POWER),
    MAXAGE(xid, GX_SIG_XID),
    MAXAGE(util_trend, GX_SIG_UTIL_TREND),

    NUM("health.max_temperature_c", GX_K_DOUBLE, max_temperature_c, 0, 150, 85),
    LIST("health.ignored_xids", GX_K_INT_LIST, ignored_xids, 1, 65535, NULL, 0),

    NUM("filter.max_utilization_pct", GX_K_DOUBLE, max_utilization_pct, 0, 100, 90),
    INT("filter.shortlist_nodes", shortlist_nodes, 0, 1000000, 0, 0),

    INT("sharing.default_slots", default_slots, 1, 64, 4, 0),
    NUM("sharing.oversubscription", GX_K_DOUBLE, oversubscription, 1.0, 4.0, 1.0),
    NUM("sharing.memory_reserve_mib", GX_K_I64, memory_reserve_mib, 0, 1048576, 512),
    NUM("sharing.util_ceiling_pct", GX_K_DOUBLE, util_ceiling_pct, 0, 100, 100),
    BOOL("sharing.expect_share_util", expect_share_util, 1),
    /* the time-slice request sizes a share without the annotation (docs/configuration.md) */
    INT("sharing.default_slices", default_slices, 1, 64, 1, GX_KF_DEPRECATED),
    LIST("sharing.product_slots", GX_K_SLOTS, product_slots, 1, 64, NULL, 0),
    INT("sharing.reservation_ttl_s", reservation_ttl_s, 1, 86400, 300, 0),
    INT("gang.hold_ms", gang_hold_ms, 100, 600000, 30000, 0),

    ENUM("score.policy", policy, policy_names, GX_POLICY_FGD),
    INT("score.fgd_half_life", fgd_half_life, 10, 10000000, 5000, 0),
    INT("score.fgd_idle_card_milli", fgd_idle_card_milli, 0, 1000, 0, 0),
    INT("score.fgd_gap_milli", fgd_gap_milli, 0, 1000, 6, 0),
    INT("score.weights.utilization", w_util, 0, 100, 4, 0),
    INT("score.weights.memory", w_memory, 0, 100, 3, 0),
    INT("score.weights.temperature", w_temp, 0, 100, 1, 0),
    INT("score.weights.labels", w_labels, 0, 100, 2, 0),
    INT("score.weights.fit", w_fit, 0, 100, 2, 0),
    INT("score.weights.trend", w_trend, 0, 100, 0, 0),
    LIST("score.label_rules", GX_K_RULES, label_rules, 0, 0, NULL, 0),
    RULE("label", GX_K_STR, label, 0, 0, NULL, GX_KF_NONEMPTY | GX_KF_REQUIRED),
    RULE("operator", GX_K_ENUM, op, 0, 0, gx_config_op_names, GX_KF_REQUIRED),
    {.path = "score.label_rules[].values", .type = GX_K_STR_LIST, .off = ROFF(values),
     .off_n = ROFF(n_values)},
    RULE("weight", GX_K_INT, weight, -100, 100, NULL, GX_KF_REQUIRED),
    BOOL("score.prefer_cpu_nodes_for_cpu_pods", prefer_cpu_nodes_for_cpu_pods, 1),
    BOOL("score.relative", relative_scores, 0),

    ENUM("simulate.scheduler.scoring_strategy", sim_strategy, strategy_names, 0),
    INT("simulate.scheduler.fit_weight", sim_fit_weight, 0, 100, 1, 0),
    INT("simulate.scheduler.balanced_weight", sim_balanced_weight, 0, 100, 1, 0),
    INT("simulate.scheduler.gpu_resource_weight", sim_gpu_weight, 0, 100, 0, 0),
    INT("simulate.scheduler.extender_weight", sim_extender_weight, 1, 10000, 5, 0),
    INT("simulate.scheduler.percentage_of_nodes_to_score", sim_pct_nodes_to_score, 0, 100, 0, 0),

    STR("prometheus.url", prom_url, NULL, GX_KF_RESTART | GX_KF_NULLABLE | GX_KF_NONEMPTY),
    INT("prometheus.interval_s", prom_interval_s, 1, 3600, 5, 0),
    INT("prometheus.timeout_s", prom_timeout_s, 1, 60, 3, 0),
    PROMQL(util, GX_SIG_UTIL, "DCGM_FI_DEV_GPU_UTIL"),
    PROMQL(mem_used, GX_SIG_MEM_USED, "DCGM_FI_DEV_FB_USED"),
    PROMQL(mem_free, GX_SIG_MEM_FREE, "DCGM_FI_DEV_FB_FREE"),
    PROMQL(temp, GX_SIG_TEMP, "DCGM_FI_DEV_GPU_TEMP"),
    PROMQL(power, GX_SIG_POWER, "DCGM_FI_DEV_POWER_USAGE"),
    PROMQL(xid, GX_SIG_XID, "max_over_time(DCGM_FI_DEV_XID_ERRORS[10m])"),
    PROMQL(util_trend, GX_SIG_UTIL_TREND, ""),
    STR("prometheus.bearer_token_file", prom_bearer_token_file, NULL, F_LPATH),
    STR("prometheus.basic_auth.username", prom_basic_user, NULL, GX_KF_NULLABLE | GX_KF_NONEMPTY),
    STR("prometheus.basic_auth.password_file", prom_basic_password_file, NULL, F_LPATH),
    STR("prometheus.ca_file", prom_ca_file, NULL, F_LPATH),
    BOOL("prometheus.insecure_skip_verify", prom_insecure, 0),
    NUM("prometheus.max_response_bytes", GX_K_SIZE, prom_max_response_bytes, 1024, 4294967296.0,
        268435456.0),

    {.path = "kubernetes.enabled", .type = GX_K_BOOL, .off = OFF(kube_enabled), .def = 0,
     .flags = GX_KF_RESTART},
    STR("kubernetes.url", kube_url, NULL, GX_KF_RESTART | GX_KF_NULLABLE | GX_KF_NONEMPTY),
    STR("kubernetes.token_file", kube_token_file, NULL, F_RPATH),
    STR("kubernetes.ca_file", kube_ca_file, NULL, F_RPATH),
    {.path = "kubernetes.insecure_skip_verify", .type = GX_K_BOOL, .off = OFF(kube_insecure),
     .def = 0, .flags = GX_KF_RESTART},
    STR("kubernetes.node_selector", kube_node_selector, NULL,
        GX_KF_RESTART | GX_KF_NULLABLE | GX_KF_NONEMPTY),
    {.path = "kubernetes.watch_dra", .type = GX_K_BOOL, .off = OFF(kube_watch_dra), .def = 1,
     .flags = GX_KF_RESTART},
    {.path = "kubernetes.watch_all_pods", .type = GX_K_BOOL, .off = OFF(kube_watch_all_pods),
     .def = 1, .flags = GX_KF_RESTART},
    INT("quotas.default_milli_gpus", quota_default_milli, 0, 1000000000, 0, 0),
    INT("quotas.default_memory_mib", quota_default_mib, 0, 2000000000, 0, 0),
    LIST("quotas.milli_gpus", GX_K_SLOTS, quota_milli, 0, 1000000000, NULL, 0),
    LIST("quotas.memory_mib", GX_K_SLOTS, quota_mib, 0, 2000000000, NULL, 0),
    INT("server.metrics_max_cards", metrics_max_cards, 0, 1000000, 2000, 0),
    STR("kubernetes.namespace", kube_namespace, "gpu-extender", GX_KF_RESTART | GX_KF_NONEMPTY),
    INT("kubernetes.timeout_s", kube_timeout_s, 1, 60, 10, 0),
    INT("kubernetes.watch_timeout_s", kube_watch_timeout_s, 10, 3600, 300, 0),
    NUM("kubernetes.max_event_bytes", GX_K_SIZE, kube_max_event_bytes, 1024, 268435456.0,
        16777216.0),
    NUM("kubernetes.max_list_bytes", GX_K_SIZE, kube_max_list_bytes, 1048576.0, 4294967296.0,
        1073741824.0),

    INT("ledger.sync_interval_s", ledger_sync_s, 1, 3600, 5, 0),
    INT("ledger.reconcile_interval_s", ledger_reconcile_s, 1, 3600, 10, 0),
    INT("ledger.cas_retries", ledger_cas_retries, 1, 20, 8, 0),
    INT("ledger.bind_deadline_ms", bind_deadline_ms, 500, 30000, 4000, 0),
    INT("ledger.binds_in_flight", binds_in_flight, 1, 100000, 16, 0),

    {.path = "replicas.forward", .type = GX_K_BOOL, .off = OFF(replicas_forward), .def = 0,
     .flags = GX_KF_RESTART},
    INT("replicas.lease_s", replicas_lease_s, 2, 300, 10, GX_KF_RESTART),
    STR("replicas.advertise_url", replicas_advertise_url, NULL,
        GX_KF_RESTART | GX_KF_NULLABLE | GX_KF_NONEMPTY),
};
/* clang-format on */

#define N_KEYS GX_ARRAY_LEN(gx_config_table)

const size_t gx_config_n_rows = N_KEYS;

/* Map a signal to its key name; "unknown" for an out-of-range value. */
const char *
gx_signal_name(enum gx_signal sig)
{
    if ((int)sig < 0 || sig >= GX_SIG_COUNT) {
        return "unknown";
    }
    return signal_names[sig];
}

/* Address of the field @k describes inside @base. */
void *
gx_config_field(void *base, const struct gx_kspec *k)
{
    return (char *)base + k->off;
}

/* Read-only twin of gx_config_field(). */
const void *
gx_config_cfield(const void *base, const struct gx_kspec *k)
{
    return (const char *)base + k->off;
}

/* Address of the element count of a list row inside @base. */
size_t *
gx_config_count_field(void *base, const struct gx_kspec *k)
{
    return (size_t *)(void *)((char *)base + k->off_n);
}

/* The element count of a list row inside a read-only @base. */
size_t
gx_config_ccount(const void *base, const struct gx_kspec *k)
{
    size_t n;

    memcpy(&n, (const char *)base + k->off_n, sizeof(n));
    return n;
}

/* True for rows of array elements ("a.b[].c"); they are not fields of struct gx_config. */
bool
gx_config_is_elem_row(const struct gx_kspec *k)
{
    return strstr(k->path, GX_CONFIG_ELEM_SUFFIX ".") != NULL;
}

/* True if @path starts with @prefix followed by '.', i.e. @path is below @prefix. */
bool
gx_config_path_below(const char *path, const char *prefix, size_t plen)
{
    return strncmp(path, prefix, plen) == 0 && path[plen] == '.';
}

/*
 * True if row @k is a field of the struct at @prefix: with @prefix NULL the
 * rows of struct gx_config, else the element rows "<prefix>.<key>".
 */
bool
gx_config_row_owned_by(const struct gx_kspec *k, const char *prefix, size_t plen)
{
    if (prefix == NULL) {
        return !gx_config_is_elem_row(k);
    }
    return gx_config_path_below(k->path, prefix, plen) && strchr(k->path + plen + 1, '.') == NULL;
}

/* The row whose path is exactly @path, or NULL. */
const struct gx_kspec *
gx_config_find_row(const char *path)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        if (strcmp(gx_config_table[i].path, path) == 0) {
            return &gx_config_table[i];
        }
    }
    return NULL;
}

/* True if some row lies below @path, i.e. @path names a section. */
bool
gx_config_is_section(const char *path)
{
    size_t n = strlen(path);

    for (size_t i = 0; i < N_KEYS; i++) {
        if (gx_config_path_below(gx_config_table[i].path, path, n)) {
            return true;
        }
    }
    return false;
}

static const char *keys_list[N_KEYS + 1];
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

/* Fill the key list from the table, once (see gx_config_keys). */
static void
keys_init(void)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        keys_list[i] = gx_config_table[i].path;
    }
    keys_list[N_KEYS] = NULL;
}

/* The table's paths in order, NULL-terminated; thread-safe through pthread_once. */
const char *const *
gx_config_keys(void)
{
    (void)pthread_once(&keys_once, keys_init);
    return keys_list;
}

/* The elements of array row @k live under "<path>[]". */
void
gx_config_elem_path(const struct gx_kspec *k, char *out, size_t n)
{
    (void)snprintf(out, n, "%s" GX_CONFIG_ELEM_SUFFIX, k->path);
}
