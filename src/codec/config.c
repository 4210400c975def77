/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - parse and validate config.json into an immutable struct
 * gx_config.
 *
 * One static table describes every key: its dotted path, its type, where it
 * lives in the struct, its range, its default and whether changing it needs
 * a restart. The parser walks the JSON tree against that table, so adding a
 * section is adding table rows; the same table yields the defaults,
 * gx_config_keys(), gx_config_free() and the restart-only comparison.
 * Array-of-object keys (score.label_rules) have rows whose paths contain
 * "[]." and whose offsets are relative to the element struct.
 *
 * This module reads the config file in gx_config_load(), and there also the
 * TLS certificate and key it names (start-up would refuse to serve with a
 * missing or broken pair, so --check-config and a reload must too); the
 * parser itself does no I/O.
 *
 * Why one file: the key table holds some 200 rows, and each row's
 * validation sits next to its parser so the table stays the one place a
 * key is defined.
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "tls.h"
#include "log.h"

/* The config file is small; anything bigger is a mistake or an attack. */
#define CONFIG_FILE_CAP (4u << 20)
/* Most elements any list or map key accepts (keeps lookups and checks cheap). */
#define LIST_MAX 1024
/* Longest dotted path we build while walking ("score.label_rules[12].values[3]"). */
#define PATH_MAX_LEN 192

enum ktype {
    K_STR,      /* char *; F_NULLABLE allows null, F_PATH resolves against base_dir */
    K_INT,      /* int */
    K_SIZE,     /* size_t */
    K_I64,      /* int64_t */
    K_DOUBLE,   /* double */
    K_BOOL,     /* bool */
    K_ENUM,     /* an enum stored as int; names[] index = value */
    K_STR_LIST, /* char **, count at off_n */
    K_INT_LIST, /* int *, count at off_n; elements within min..max */
    K_SLOTS,    /* object product -> slots (struct gx_product_slots[]) */
    K_RULES,    /* array of objects (struct gx_label_rule[]) */
};

enum {
    F_RESTART = 1u << 0,     /* a change needs a restart */
    F_NULLABLE = 1u << 1,    /* K_STR: null accepted, default may be NULL */
    F_PATH = 1u << 2,        /* K_STR/K_STR_LIST: a file path, resolved against base_dir */
    F_NONEMPTY = 1u << 3,    /* K_STR: not ""; K_STR_LIST: at least one element */
    F_REQUIRED = 1u << 4,    /* element key that must be present */
    F_METRIC_NAME = 1u << 5, /* K_STR: a Prometheus metric name */
    F_DEPRECATED = 1u << 6,  /* still parsed (old files load), read by nothing: warned */
};

struct kspec {
    const char *path; /* dotted; element rows are "<array>[].<key>" */
    enum ktype type;
    unsigned flags;           /* F_* */
    size_t off;               /* field offset in struct gx_config (or the element struct) */
    size_t off_n;             /* count offset for lists */
    double min, max;          /* numeric range (inclusive), also for list elements */
    double def;               /* numeric/bool default */
    const char *defs;         /* string default */
    const char *const *names; /* K_ENUM names; K_STR_LIST default (NULL-terminated) */
};

static const char *const level_names[] = {"debug", "info", "warn", "error", NULL};
static const char *const policy_names[] = {"binpack", "spread", "fgd", NULL};
static const char *const stale_names[] = {"ignore", "reject", NULL};
static const char *const strategy_names[] = {"LeastAllocated", "MostAllocated", NULL};
static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", NULL};
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
#define STR(p, f, d, fl) {.path = (p), .type = K_STR, .off = OFF(f), .defs = (d), .flags = (fl)}
#define INT(p, f, lo, hi, d, fl) \
    {.path = (p), .type = K_INT, .off = OFF(f), .min = (lo), .max = (hi), .def = (d), \
     .flags = (fl)}
#define NUM(p, t, f, lo, hi, d) \
    {.path = (p), .type = (t), .off = OFF(f), .min = (lo), .max = (hi), .def = (d)}
#define BOOL(p, f, d) {.path = (p), .type = K_BOOL, .off = OFF(f), .def = (d)}
#define ENUM(p, f, nm, d) {.path = (p), .type = K_ENUM, .off = OFF(f), .names = (nm), .def = (d)}
#define LIST(p, t, f, lo, hi, dl, fl) \
    {.path = (p), .type = (t), .off = OFF(f), .off_n = OFF(n_##f), .min = (lo), .max = (hi), \
     .names = (dl), .flags = (fl)}
#define MNAME(sig, idx, d) \
    STR("metrics.names." #sig, metric_names[idx], d, F_NONEMPTY | F_METRIC_NAME)
#define MAXAGE(sig, idx) INT("metrics.max_age_s." #sig, max_age_s[idx], 1, 86400, 60, 0)
/* Element rows of score.label_rules: offsets into struct gx_label_rule. */
#define RULE(p, t, f, lo, hi, nm, fl) \
    {.path = "score.label_rules[]." p, .type = (t), .off = ROFF(f), .min = (lo), .max = (hi), \
     .names = (nm), .flags = (fl)}

#define F_RPATH (F_RESTART | F_NULLABLE | F_PATH | F_NONEMPTY)
#define F_LPATH (F_NULLABLE | F_PATH | F_NONEMPTY)
/* A PromQL query per signal; "" disables the signal. */
#define PROMQL(sig, idx, d) STR("prometheus.queries." #sig, prom_queries[idx], d, 0)

/*
 * Every key. Keep docs/configuration.md in step: a test compares the two.
 * Ranges here are the documented ranges.
 */
static const struct kspec keys_table[] = {
    STR("server.address", listen_address, "0.0.0.0", F_RESTART | F_NONEMPTY),
    INT("server.port", port, 1, 65535, 8888, F_RESTART),
    STR("server.url_prefix", url_prefix, "/gpu-extender", F_RESTART),
    NUM("server.max_body_bytes", K_SIZE, max_body_bytes, 1024, 1073741824.0, 67108864.0),
    INT("server.max_json_depth", max_json_depth, 8, 512, 64, 0),
    INT("server.connection_timeout_s", connection_timeout_s, 1, 3600, 30, 0),
    INT("server.shutdown_grace_s", shutdown_grace_s, 1, 3600, 10, F_RESTART),
    BOOL("server.debug_endpoints", debug_endpoints, 0),
    STR("server.tls_cert_file", tls_cert_file, NULL, F_RPATH),
    STR("server.tls_key_file", tls_key_file, NULL, F_RPATH),
    STR("server.tls_priorities", tls_priorities, GX_TLS_PRIORITIES, F_RESTART | F_NONEMPTY),
    NUM("server.max_inflight_bytes", K_SIZE, max_inflight_bytes, 1048576, 17179869184.0,
        167772160.0),

    ENUM("log.level", log_level, level_names, GX_LOG_INFO),

    STR("names.gpu_resource", res_gpu, "nvidia.com/gpu", F_NONEMPTY),
    STR("names.shared_resource", res_shared, "nvidia.com/gpu.shared", F_NONEMPTY),
    STR("names.time_slice_resource", res_time_slice, "gpu-extender.io/time-slice", F_NONEMPTY),
    STR("names.time_slices_annotation", ann_slices, "gpu-extender.io/time-slices", F_NONEMPTY),
    STR("names.gpu_memory_annotation", ann_memory, "gpu-extender.io/gpu-memory", F_NONEMPTY),
    STR("names.gpu_milli_annotation", ann_milli, "gpu-extender.io/gpu-milli", F_NONEMPTY),
    STR("names.gpu_util_annotation", ann_util, "gpu-extender.io/gpu-util", F_NONEMPTY),
    STR("names.gpu_uuids_annotation", ann_uuids, "gpu-extender.io/gpu-uuids", F_NONEMPTY),
    STR("names.gpu_index_annotation", ann_index, "gpu-extender.io/gpu-index", F_NONEMPTY),
    STR("names.managed_label", managed_label, "gpu-extender.io/managed", F_NONEMPTY),

    STR("sources.files.nodes", nodes_file, NULL, F_RPATH),
    LIST("sources.files.metrics", K_STR_LIST, metrics_files, 0, 0, NULL, F_RESTART | F_PATH),
    INT("sources.files.refresh_s", files_refresh_s, 1, 3600, 5, F_RESTART),

    LIST("metrics.node_labels", K_STR_LIST, node_labels, 0, 0, default_node_labels, F_NONEMPTY),
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

    NUM("health.max_temperature_c", K_DOUBLE, max_temperature_c, 0, 150, 85),
    LIST("health.ignored_xids", K_INT_LIST, ignored_xids, 1, 65535, NULL, 0),

    NUM("filter.max_utilization_pct", K_DOUBLE, max_utilization_pct, 0, 100, 90),

    INT("sharing.default_slots", default_slots, 1, 64, 4, 0),
    NUM("sharing.oversubscription", K_DOUBLE, oversubscription, 1.0, 4.0, 1.0),
    NUM("sharing.memory_reserve_mib", K_I64, memory_reserve_mib, 0, 1048576, 512),
    NUM("sharing.util_ceiling_pct", K_DOUBLE, util_ceiling_pct, 0, 100, 100),
    /* the time-slice request sizes a share without the annotation (docs/configuration.md) */
    INT("sharing.default_slices", default_slices, 1, 64, 1, F_DEPRECATED),
    LIST("sharing.product_slots", K_SLOTS, product_slots, 1, 64, NULL, 0),
    INT("sharing.reservation_ttl_s", reservation_ttl_s, 1, 86400, 300, 0),

    ENUM("score.policy", policy, policy_names, GX_POLICY_FGD),
    INT("score.fgd_half_life", fgd_half_life, 10, 10000000, 5000, 0),
    INT("score.fgd_idle_card_milli", fgd_idle_card_milli, 0, 1000, 0, 0),
    INT("score.fgd_gap_milli", fgd_gap_milli, 0, 1000, 8, 0),
    INT("score.weights.utilization", w_util, 0, 100, 4, 0),
    INT("score.weights.memory", w_memory, 0, 100, 3, 0),
    INT("score.weights.temperature", w_temp, 0, 100, 1, 0),
    INT("score.weights.labels", w_labels, 0, 100, 2, 0),
    INT("score.weights.fit", w_fit, 0, 100, 2, 0),
    INT("score.weights.trend", w_trend, 0, 100, 0, 0),
    LIST("score.label_rules", K_RULES, label_rules, 0, 0, NULL, 0),
    RULE("label", K_STR, label, 0, 0, NULL, F_NONEMPTY | F_REQUIRED),
    RULE("operator", K_ENUM, op, 0, 0, op_names, F_REQUIRED),
    {.path = "score.label_rules[].values", .type = K_STR_LIST, .off = ROFF(values),
     .off_n = ROFF(n_values)},
    RULE("weight", K_INT, weight, -100, 100, NULL, F_REQUIRED),
    BOOL("score.prefer_cpu_nodes_for_cpu_pods", prefer_cpu_nodes_for_cpu_pods, 1),
    BOOL("score.relative", relative_scores, 0),

    ENUM("simulate.scheduler.scoring_strategy", sim_strategy, strategy_names, 0),
    INT("simulate.scheduler.fit_weight", sim_fit_weight, 0, 100, 1, 0),
    INT("simulate.scheduler.balanced_weight", sim_balanced_weight, 0, 100, 1, 0),
    INT("simulate.scheduler.gpu_resource_weight", sim_gpu_weight, 0, 100, 0, 0),
    INT("simulate.scheduler.extender_weight", sim_extender_weight, 1, 10000, 5, 0),
    INT("simulate.scheduler.percentage_of_nodes_to_score", sim_pct_nodes_to_score, 0, 100, 0, 0),

    STR("prometheus.url", prom_url, NULL, F_RESTART | F_NULLABLE | F_NONEMPTY),
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
    STR("prometheus.basic_auth.username", prom_basic_user, NULL, F_NULLABLE | F_NONEMPTY),
    STR("prometheus.basic_auth.password_file", prom_basic_password_file, NULL, F_LPATH),
    STR("prometheus.ca_file", prom_ca_file, NULL, F_LPATH),
    BOOL("prometheus.insecure_skip_verify", prom_insecure, 0),
    NUM("prometheus.max_response_bytes", K_SIZE, prom_max_response_bytes, 1024, 4294967296.0,
        268435456.0),

    {.path = "kubernetes.enabled", .type = K_BOOL, .off = OFF(kube_enabled), .def = 0,
     .flags = F_RESTART},
    STR("kubernetes.url", kube_url, NULL, F_RESTART | F_NULLABLE | F_NONEMPTY),
    STR("kubernetes.token_file", kube_token_file, NULL, F_RPATH),
    STR("kubernetes.ca_file", kube_ca_file, NULL, F_RPATH),
    {.path = "kubernetes.insecure_skip_verify", .type = K_BOOL, .off = OFF(kube_insecure),
     .def = 0, .flags = F_RESTART},
    STR("kubernetes.node_selector", kube_node_selector, NULL, F_RESTART | F_NULLABLE | F_NONEMPTY),
    {.path = "kubernetes.watch_dra", .type = K_BOOL, .off = OFF(kube_watch_dra), .def = 1,
     .flags = F_RESTART},
    {.path = "kubernetes.watch_all_pods", .type = K_BOOL, .off = OFF(kube_watch_all_pods),
     .def = 1, .flags = F_RESTART},
    INT("quotas.default_milli_gpus", quota_default_milli, 0, 1000000000, 0, 0),
    INT("quotas.default_memory_mib", quota_default_mib, 0, 2000000000, 0, 0),
    LIST("quotas.milli_gpus", K_SLOTS, quota_milli, 0, 1000000000, NULL, 0),
    LIST("quotas.memory_mib", K_SLOTS, quota_mib, 0, 2000000000, NULL, 0),
    INT("server.metrics_max_cards", metrics_max_cards, 0, 1000000, 2000, 0),
    STR("kubernetes.namespace", kube_namespace, "gpu-extender", F_RESTART | F_NONEMPTY),
    INT("kubernetes.timeout_s", kube_timeout_s, 1, 60, 10, 0),
    INT("kubernetes.watch_timeout_s", kube_watch_timeout_s, 10, 3600, 300, 0),
    NUM("kubernetes.max_event_bytes", K_SIZE, kube_max_event_bytes, 1024, 268435456.0,
        16777216.0),
    NUM("kubernetes.max_list_bytes", K_SIZE, kube_max_list_bytes, 1048576.0, 4294967296.0,
        1073741824.0),

    INT("ledger.sync_interval_s", ledger_sync_s, 1, 3600, 5, 0),
    INT("ledger.reconcile_interval_s", ledger_reconcile_s, 1, 3600, 10, 0),
    INT("ledger.cas_retries", ledger_cas_retries, 1, 20, 8, 0),
    INT("ledger.bind_deadline_ms", bind_deadline_ms, 500, 30000, 4000, 0),
};
/* clang-format on */

#define N_KEYS GX_ARRAY_LEN(keys_table)

/* The element rows of an array-of-objects key live under this path suffix. */
#define ELEM_SUFFIX "[]"

/* Format a dotted key for a message; a key longer than the buffer is cut. */
static void GX_PRINTF(3, 4) path_printf(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

/* Parse state: where relative paths resolve, where errors go. */
struct pctx {
    const char *base_dir;
    struct gx_why *why;
    bool nul_marked; /* \u0000 escapes were rewritten to U+FFFF (gx_json_mark_nul_escapes) */
};

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
static void *
field(void *base, const struct kspec *k)
{
    return (char *)base + k->off;
}

/* Read-only twin of field(). */
static const void *
cfield(const void *base, const struct kspec *k)
{
    return (const char *)base + k->off;
}

/* Address of the element count of a list row inside @base. */
static size_t *
count_field(void *base, const struct kspec *k)
{
    return (size_t *)(void *)((char *)base + k->off_n);
}

/* The element count of a list row inside a read-only @base. */
static size_t
ccount(const void *base, const struct kspec *k)
{
    size_t n;

    memcpy(&n, (const char *)base + k->off_n, sizeof(n));
    return n;
}

/* True for rows of array elements ("a.b[].c"); they are not fields of struct gx_config. */
static bool
is_elem_row(const struct kspec *k)
{
    return strstr(k->path, ELEM_SUFFIX ".") != NULL;
}

/* True if @path starts with @prefix followed by '.', i.e. @path is below @prefix. */
static bool
path_below(const char *path, const char *prefix, size_t plen)
{
    return strncmp(path, prefix, plen) == 0 && path[plen] == '.';
}

/*
 * True if row @k is a field of the struct at @prefix: with @prefix NULL the
 * rows of struct gx_config, else the element rows "<prefix>.<key>".
 */
static bool
row_owned_by(const struct kspec *k, const char *prefix, size_t plen)
{
    if (prefix == NULL) {
        return !is_elem_row(k);
    }
    return path_below(k->path, prefix, plen) && strchr(k->path + plen + 1, '.') == NULL;
}

/* Free @n strings and the array holding them; NULL is a no-op. */
static void
free_str_list(char **list, size_t n)
{
    for (size_t i = 0; list != NULL && i < n; i++) {
        free(list[i]);
    }
    free(list);
}

static void release_rows(void *base, const char *prefix);

/* Release what one row owns inside @base and reset it to empty. This can't fail. */
static void
release_field(void *base, const struct kspec *k)
{
    void *p = field(base, k);

    switch (k->type) {
    case K_STR: {
        char **s = p;
        free(*s);
        *s = NULL;
        break;
    }
    case K_STR_LIST: {
        char ***l = p;
        free_str_list(*l, *count_field(base, k));
        *l = NULL;
        *count_field(base, k) = 0;
        break;
    }
    case K_INT_LIST: {
        int **l = p;
        free(*l);
        *l = NULL;
        *count_field(base, k) = 0;
        break;
    }
    case K_SLOTS: {
        struct gx_product_slots **l = p;
        size_t n = *count_field(base, k);
        for (size_t i = 0; *l != NULL && i < n; i++) {
            free((*l)[i].product);
        }
        free(*l);
        *l = NULL;
        *count_field(base, k) = 0;
        break;
    }
    case K_RULES: {
        struct gx_label_rule **l = p;
        size_t n = *count_field(base, k);
        char prefix[PATH_MAX_LEN];
        path_printf(prefix, sizeof(prefix), "%s" ELEM_SUFFIX, k->path);
        for (size_t i = 0; *l != NULL && i < n; i++) {
            release_rows(&(*l)[i], prefix);
        }
        free(*l);
        *l = NULL;
        *count_field(base, k) = 0;
        break;
    }
    default:
        break;
    }
}

/*
 * Release every row directly owned by @base: with @prefix NULL the rows of
 * struct gx_config, else the element rows "<prefix>.<key>". Can't fail.
 */
static void
release_rows(void *base, const char *prefix)
{
    size_t plen = prefix != NULL ? strlen(prefix) : 0;

    for (size_t i = 0; i < N_KEYS; i++) {
        const struct kspec *k = &keys_table[i];
        bool mine = row_owned_by(k, prefix, plen);

        if (mine) {
            release_field(base, k);
        }
    }
}

/* Free everything the config owns through its rows, then the config itself. */
void
gx_config_free(struct gx_config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    release_rows(cfg, NULL);
    free(cfg->path);
    free(cfg->base_dir);
    free(cfg);
}

/* Heap copy of @s; NULL on ENOMEM. */
static char *
dup_str(const char *s)
{
    return gx_strndup(s, strlen(s));
}

/* Set the default of one row in @base. Fails only with GX_ENOMEM. */
static enum gx_err
apply_default(void *base, const struct kspec *k)
{
    void *p = field(base, k);

    switch (k->type) {
    case K_STR:
        if (k->defs != NULL && (*(char **)p = dup_str(k->defs)) == NULL) {
            return GX_ENOMEM;
        }
        break;
    case K_INT:
    case K_ENUM:
        *(int *)p = (int)k->def;
        break;
    case K_SIZE:
        *(size_t *)p = (size_t)k->def;
        break;
    case K_I64:
        *(int64_t *)p = (int64_t)k->def;
        break;
    case K_DOUBLE:
        *(double *)p = k->def;
        break;
    case K_BOOL:
        *(bool *)p = k->def != 0;
        break;
    case K_STR_LIST:
        if (k->names != NULL) {
            size_t n = 0;
            char **l;
            while (k->names[n] != NULL) {
                n++;
            }
            if (n == 0) {
                break;
            }
            l = calloc(n, sizeof(*l));
            if (l == NULL) {
                return GX_ENOMEM;
            }
            *(char ***)p = l;
            for (size_t i = 0; i < n; i++) {
                if ((l[i] = dup_str(k->names[i])) == NULL) {
                    return GX_ENOMEM;
                }
                *count_field(base, k) = i + 1;
            }
        }
        break;
    default:
        break; /* lists, maps and rules start empty (calloc) */
    }
    return GX_OK;
}

/* Apply the defaults of the rows release_rows(@base, @prefix) would release. */
static enum gx_err
apply_defaults(void *base, const char *prefix)
{
    size_t plen = prefix != NULL ? strlen(prefix) : 0;

    for (size_t i = 0; i < N_KEYS; i++) {
        const struct kspec *k = &keys_table[i];
        bool mine = row_owned_by(k, prefix, plen);

        if (mine && apply_default(base, k) != GX_OK) {
            return GX_ENOMEM;
        }
    }
    return GX_OK;
}

/* Allocate a zeroed config carrying every default; NULL on ENOMEM. */
static struct gx_config *
config_new_defaults(const char *base_dir)
{
    struct gx_config *cfg = calloc(1, sizeof(*cfg));

    if (cfg == NULL) {
        return NULL;
    }
    cfg->base_dir = dup_str(base_dir != NULL ? base_dir : ".");
    if (cfg->base_dir == NULL || apply_defaults(cfg, NULL) != GX_OK) {
        gx_config_free(cfg);
        return NULL;
    }
    return cfg;
}

/* A config with every default and base_dir "."; fails only with GX_ENOMEM. */
enum gx_err
gx_config_default(struct gx_config **out)
{
    struct gx_config *cfg = config_new_defaults(NULL);

    if (cfg == NULL) {
        return GX_ENOMEM;
    }
    *out = cfg;
    return GX_OK;
}

/* Join @path onto @dir unless it is absolute; NULL on ENOMEM. */
static char *
resolve_path(const char *dir, const char *path)
{
    size_t dl, pl;
    char *s;

    if (path[0] == '/' || dir == NULL || dir[0] == '\0') {
        return dup_str(path);
    }
    dl = strlen(dir);
    pl = strlen(path);
    while (dl > 1 && dir[dl - 1] == '/') {
        dl--;
    }
    s = malloc(dl + 1 + pl + 1);
    if (s == NULL) {
        return NULL;
    }
    memcpy(s, dir, dl);
    if (dir[dl - 1] != '/') {
        s[dl++] = '/';
    }
    memcpy(s + dl, path, pl + 1);
    return s;
}

/* True if @s is a Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*. */
static bool
metric_name_ok(const char *s)
{
    for (size_t i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) {
            return false;
        }
    }
    return s[0] != '\0';
}

/* Check a JSON number is an integer within the row's range; fills @why otherwise. */
static enum gx_err
get_integer(const cJSON *v, const struct kspec *k, const char *key, struct gx_why *why, double *out)
{
    double d;

    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble)) {
        gx_why_set(why, "%s: must be an integer", key);
        return GX_EINVAL;
    }
    d = v->valuedouble;
    if (d < k->min || d > k->max) {
        gx_why_set(why, "%s: must be between %.0f and %.0f", key, k->min, k->max);
        return GX_EINVAL;
    }
    *out = d;
    return GX_OK;
}

/* Make a heap string from a JSON string, resolving it as a path when the row says so. */
static enum gx_err
get_string(const cJSON *v, const struct kspec *k, const char *key, const struct pctx *ctx,
           char **out)
{
    const char *s = v->valuestring;
    char *dup;

    if (ctx->nul_marked && strstr(s, "\xEF\xBF\xBF") != NULL) {
        gx_why_set(ctx->why, "%s: must not contain \\u0000 (a NUL character)", key);
        return GX_EINVAL;
    }
    if ((k->flags & (F_NONEMPTY | F_PATH)) && s[0] == '\0') {
        gx_why_set(ctx->why, "%s: must not be empty", key);
        return GX_EINVAL;
    }
    if ((k->flags & F_METRIC_NAME) && !metric_name_ok(s)) {
        gx_why_set(ctx->why, "%s: must be a Prometheus metric name", key);
        return GX_EINVAL;
    }
    dup = (k->flags & F_PATH) ? resolve_path(ctx->base_dir, s) : dup_str(s);
    if (dup == NULL) {
        return GX_ENOMEM;
    }
    *out = dup;
    return GX_OK;
}

/* True (with @why filled) if a list or map of @n elements is over LIST_MAX. */
static bool
too_many(size_t n, const char *key, struct gx_why *why)
{
    if (n <= LIST_MAX) {
        return false;
    }
    gx_why_set(why, "%s: at most %d elements", key, LIST_MAX);
    return true;
}

/* Parse a JSON array of strings into a fresh list; the old list is replaced on success. */
static enum gx_err
parse_str_list(const cJSON *v, void *base, const struct kspec *k, const char *key,
               const struct pctx *ctx)
{
    char **list = NULL;
    size_t n = 0, cap;
    const cJSON *e;
    enum gx_err rc = GX_OK;

    if (!cJSON_IsArray(v)) {
        gx_why_set(ctx->why, "%s: must be an array of strings", key);
        return GX_EINVAL;
    }
    cap = (size_t)cJSON_GetArraySize(v);
    if (too_many(cap, key, ctx->why)) {
        return GX_EINVAL;
    }
    if ((k->flags & F_NONEMPTY) && cap == 0) {
        gx_why_set(ctx->why, "%s: must not be empty", key);
        return GX_EINVAL;
    }
    if (cap == 0) {
        release_field(base, k);
        return GX_OK;
    }
    if ((list = calloc(cap, sizeof(*list))) == NULL) {
        return GX_ENOMEM;
    }
    cJSON_ArrayForEach(e, v)
    {
        char ekey[PATH_MAX_LEN];

        path_printf(ekey, sizeof(ekey), "%s[%zu]", key, n);
        if (!cJSON_IsString(e)) {
            gx_why_set(ctx->why, "%s: must be a string", ekey);
            rc = GX_EINVAL;
            goto out;
        }
        /* F_NONEMPTY on a list also forbids empty elements (a node label named ""). */
        if ((rc = get_string(e, k, ekey, ctx, &list[n])) != GX_OK) {
            goto out;
        }
        n++;
    }
    release_field(base, k);
    *(char ***)field(base, k) = list;
    *count_field(base, k) = n;
    list = NULL;
out:
    free_str_list(list, n);
    return rc;
}

/* Parse a JSON array of integers (each within the row's range) into a fresh list. */
static enum gx_err
parse_int_list(const cJSON *v, void *base, const struct kspec *k, const char *key,
               const struct pctx *ctx)
{
    int *list = NULL;
    size_t n = 0, cap;
    const cJSON *e;
    enum gx_err rc = GX_OK;

    if (!cJSON_IsArray(v)) {
        gx_why_set(ctx->why, "%s: must be an array of integers", key);
        return GX_EINVAL;
    }
    cap = (size_t)cJSON_GetArraySize(v);
    if (too_many(cap, key, ctx->why)) {
        return GX_EINVAL;
    }
    if (cap == 0) {
        release_field(base, k);
        return GX_OK;
    }
    if ((list = calloc(cap, sizeof(*list))) == NULL) {
        return GX_ENOMEM;
    }
    cJSON_ArrayForEach(e, v)
    {
        char ekey[PATH_MAX_LEN];
        double d;

        path_printf(ekey, sizeof(ekey), "%s[%zu]", key, n);
        if ((rc = get_integer(e, k, ekey, ctx->why, &d)) != GX_OK) {
            goto out;
        }
        list[n++] = (int)d;
    }
    release_field(base, k);
    *(int **)field(base, k) = list;
    *count_field(base, k) = n;
    list = NULL;
out:
    free(list);
    return rc;
}

/* Parse {"product": slots, ...}; products must be non-empty and unique. */
static enum gx_err
parse_slots(const cJSON *v, void *base, const struct kspec *k, const char *key,
            const struct pctx *ctx)
{
    struct gx_product_slots *list = NULL;
    size_t n = 0, cap;
    const cJSON *e;
    enum gx_err rc = GX_OK;

    if (!cJSON_IsObject(v)) {
        gx_why_set(ctx->why, "%s: must be an object of product: slots", key);
        return GX_EINVAL;
    }
    cap = (size_t)cJSON_GetArraySize(v);
    if (too_many(cap, key, ctx->why)) {
        return GX_EINVAL;
    }
    if (cap == 0) {
        release_field(base, k);
        return GX_OK;
    }
    if ((list = calloc(cap, sizeof(*list))) == NULL) {
        return GX_ENOMEM;
    }
    cJSON_ArrayForEach(e, v)
    {
        char ekey[PATH_MAX_LEN];
        double d;

        path_printf(ekey, sizeof(ekey), "%s.%s", key, e->string);
        if (e->string[0] == '\0') {
            gx_why_set(ctx->why, "%s: product names must not be empty", key);
            rc = GX_EINVAL;
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            if (strcmp(list[i].product, e->string) == 0) {
                gx_why_set(ctx->why, "duplicate key '%s'", ekey);
                rc = GX_EINVAL;
                goto out;
            }
        }
        if ((rc = get_integer(e, k, ekey, ctx->why, &d)) != GX_OK) {
            goto out;
        }
        if ((list[n].product = dup_str(e->string)) == NULL) {
            rc = GX_ENOMEM;
            goto out;
        }
        list[n++].slots = (int)d;
    }
    release_field(base, k);
    *(struct gx_product_slots **)field(base, k) = list;
    *count_field(base, k) = n;
    list = NULL;
out:
    for (size_t i = 0; list != NULL && i < n; i++) {
        free(list[i].product);
    }
    free(list);
    return rc;
}

static enum gx_err walk_object(const cJSON *obj, const char *match, const char *show, void *base,
                               const struct pctx *ctx);

/* Check the values of one label rule against its operator; parses Gt/Lt numbers. */
static enum gx_err
check_rule(struct gx_label_rule *r, const char *key, struct gx_why *why)
{
    char *end = NULL;

    switch (r->op) {
    case GX_OP_IN:
    case GX_OP_NOT_IN:
        if (r->n_values == 0) {
            gx_why_set(why, "%s.values: %s needs at least one value", key, op_names[r->op]);
            return GX_EINVAL;
        }
        break;
    case GX_OP_EXISTS:
    case GX_OP_DOES_NOT_EXIST:
        if (r->n_values != 0) {
            gx_why_set(why, "%s.values: %s takes no values", key, op_names[r->op]);
            return GX_EINVAL;
        }
        break;
    case GX_OP_GT:
    case GX_OP_LT:
        if (r->n_values != 1) {
            gx_why_set(why, "%s.values: %s needs exactly one value", key, op_names[r->op]);
            return GX_EINVAL;
        }
        r->number = strtod(r->values[0], &end);
        if (end == r->values[0] || *end != '\0' || !isfinite(r->number)) {
            gx_why_set(why, "%s.values: %s needs a number", key, op_names[r->op]);
            return GX_EINVAL;
        }
        break;
    }
    return GX_OK;
}

/* Parse an array of label rule objects, each walked against the "[]." rows. */
static enum gx_err
parse_rules(const cJSON *v, void *base, const struct kspec *k, const char *key,
            const struct pctx *ctx)
{
    char match[PATH_MAX_LEN];
    struct gx_label_rule *rules;
    size_t n, i = 0;
    const cJSON *e;

    if (!cJSON_IsArray(v)) {
        gx_why_set(ctx->why, "%s: must be an array of objects", key);
        return GX_EINVAL;
    }
    path_printf(match, sizeof(match), "%s" ELEM_SUFFIX, k->path);
    n = (size_t)cJSON_GetArraySize(v);
    if (too_many(n, key, ctx->why)) {
        return GX_EINVAL;
    }
    release_field(base, k);
    if (n == 0) {
        return GX_OK;
    }
    rules = calloc(n, sizeof(*rules));
    if (rules == NULL) {
        return GX_ENOMEM;
    }
    /* Publish first: gx_config_free releases a partly parsed array. */
    *(struct gx_label_rule **)field(base, k) = rules;
    *count_field(base, k) = n;
    cJSON_ArrayForEach(e, v)
    {
        char show[PATH_MAX_LEN];
        enum gx_err rc;

        path_printf(show, sizeof(show), "%s[%zu]", key, i);
        if (!cJSON_IsObject(e)) {
            gx_why_set(ctx->why, "%s: must be an object", show);
            return GX_EINVAL;
        }
        if ((rc = apply_defaults(&rules[i], match)) != GX_OK) {
            return rc;
        }
        if ((rc = walk_object(e, match, show, &rules[i], ctx)) != GX_OK) {
            return rc;
        }
        if ((rc = check_rule(&rules[i], show, ctx->why)) != GX_OK) {
            return rc;
        }
        i++;
    }
    return GX_OK;
}

/* Parse one JSON value into the field of row @k inside @base. */
static enum gx_err
parse_value(const cJSON *v, void *base, const struct kspec *k, const char *key,
            const struct pctx *ctx)
{
    void *p = field(base, k);
    enum gx_err rc;
    double d;
    char *s;

    switch (k->type) {
    case K_STR:
        if (cJSON_IsNull(v) && (k->flags & F_NULLABLE)) {
            release_field(base, k);
            return GX_OK;
        }
        if (!cJSON_IsString(v)) {
            gx_why_set(ctx->why, "%s: must be a string%s", key,
                       (k->flags & F_NULLABLE) ? " or null" : "");
            return GX_EINVAL;
        }
        if ((rc = get_string(v, k, key, ctx, &s)) != GX_OK) {
            return rc;
        }
        release_field(base, k);
        *(char **)p = s;
        return GX_OK;
    case K_INT:
    case K_SIZE:
    case K_I64:
        if ((rc = get_integer(v, k, key, ctx->why, &d)) != GX_OK) {
            return rc;
        }
        if (k->type == K_INT) {
            *(int *)p = (int)d;
        } else if (k->type == K_SIZE) {
            *(size_t *)p = (size_t)d;
        } else {
            *(int64_t *)p = (int64_t)d;
        }
        return GX_OK;
    case K_DOUBLE:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
            gx_why_set(ctx->why, "%s: must be a number", key);
            return GX_EINVAL;
        }
        if (v->valuedouble < k->min || v->valuedouble > k->max) {
            gx_why_set(ctx->why, "%s: must be between %g and %g", key, k->min, k->max);
            return GX_EINVAL;
        }
        *(double *)p = v->valuedouble;
        return GX_OK;
    case K_BOOL:
        if (!cJSON_IsBool(v)) {
            gx_why_set(ctx->why, "%s: must be true or false", key);
            return GX_EINVAL;
        }
        *(bool *)p = cJSON_IsTrue(v);
        return GX_OK;
    case K_ENUM:
        for (int i = 0; cJSON_IsString(v) && k->names[i] != NULL; i++) {
            if (strcmp(v->valuestring, k->names[i]) == 0) {
                *(int *)p = i;
                return GX_OK;
            }
        }
        {
            char list[128] = "";
            size_t used = 0;
            for (int i = 0; k->names[i] != NULL && used < sizeof(list); i++) {
                int w = snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "",
                                 k->names[i]);
                used += w > 0 ? (size_t)w : 0;
            }
            gx_why_set(ctx->why, "%s: must be one of %s", key, list);
        }
        return GX_EINVAL;
    case K_STR_LIST:
        return parse_str_list(v, base, k, key, ctx);
    case K_INT_LIST:
        return parse_int_list(v, base, k, key, ctx);
    case K_SLOTS:
        return parse_slots(v, base, k, key, ctx);
    case K_RULES:
        return parse_rules(v, base, k, key, ctx);
    }
    return GX_EINVAL;
}

/* The row whose path is exactly @path, or NULL. */
static const struct kspec *
find_row(const char *path)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        if (strcmp(keys_table[i].path, path) == 0) {
            return &keys_table[i];
        }
    }
    return NULL;
}

/* True if some row lies below @path, i.e. @path names a section. */
static bool
is_section(const char *path)
{
    size_t n = strlen(path);

    for (size_t i = 0; i < N_KEYS; i++) {
        if (path_below(keys_table[i].path, path, n)) {
            return true;
        }
    }
    return false;
}

/* Join a member name onto a dotted prefix ("" at the top); false if too long. */
static bool
join_key(char *out, size_t n, const char *prefix, const char *name)
{
    int w = snprintf(out, n, "%s%s%s", prefix, prefix[0] != '\0' ? "." : "", name);

    return w >= 0 && (size_t)w < n;
}

/*
 * Walk the members of @obj: @match is the table path of @obj ("" for the
 * top, "score.label_rules[]" for a rule), @show the same path as the user
 * wrote it (for messages). Every member must be a row or a section; rows
 * flagged F_REQUIRED directly below @match must be present.
 */
static enum gx_err
walk_object(const cJSON *obj, const char *match, const char *show, void *base,
            const struct pctx *ctx)
{
    const cJSON *m, *prev;
    size_t mlen = strlen(match);
    enum gx_err rc;

    cJSON_ArrayForEach(m, obj)
    {
        char mpath[PATH_MAX_LEN], spath[PATH_MAX_LEN];
        const struct kspec *k;

        if (!join_key(spath, sizeof(spath), show, m->string)) {
            gx_why_set(ctx->why, "unknown key '%.64s...'", spath);
            return GX_EINVAL;
        }
        for (prev = obj->child; prev != m; prev = prev->next) {
            if (strcmp(prev->string, m->string) == 0) {
                gx_why_set(ctx->why, "duplicate key '%s'", spath);
                return GX_EINVAL;
            }
        }
        if (!join_key(mpath, sizeof(mpath), match, m->string) ||
            strstr(m->string, ELEM_SUFFIX) != NULL || strchr(m->string, '.') != NULL) {
            gx_why_set(ctx->why, "unknown key '%s'", spath);
            return GX_EINVAL;
        }
        k = find_row(mpath);
        if (k != NULL) {
            if ((rc = parse_value(m, base, k, spath, ctx)) != GX_OK) {
                return rc;
            }
            if (k->flags & F_DEPRECATED) {
                gx_warn("config key is deprecated and ignored; remove it", "key=%s", spath);
            }
        } else if (is_section(mpath)) {
            if (!cJSON_IsObject(m)) {
                gx_why_set(ctx->why, "%s: must be an object", spath);
                return GX_EINVAL;
            }
            if ((rc = walk_object(m, mpath, spath, base, ctx)) != GX_OK) {
                return rc;
            }
        } else {
            gx_why_set(ctx->why, "unknown key '%s'", spath);
            return GX_EINVAL;
        }
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct kspec *k = &keys_table[i];
        const char *leaf = k->path + mlen + 1;

        if (!(k->flags & F_REQUIRED) || mlen == 0 || !path_below(k->path, match, mlen) ||
            strchr(leaf, '.') != NULL) {
            continue;
        }
        if (cJSON_GetObjectItemCaseSensitive(obj, leaf) == NULL) {
            gx_why_set(ctx->why, "%s.%s: is required", show, leaf);
            return GX_EINVAL;
        }
    }
    return GX_OK;
}

/* True if @url is http:// or https:// (any case) followed by a host. */
static bool
url_scheme_ok(const char *url)
{
    size_t n = strncasecmp(url, "http://", 7) == 0    ? 7
               : strncasecmp(url, "https://", 8) == 0 ? 8
                                                      : 0;

    return n > 0 && url[n] != '\0' && url[n] != '/';
}

/* Rules that tie several keys together, checked after the walk. */
static enum gx_err
check_config(const struct gx_config *cfg, struct gx_why *why)
{
    const char *pre = cfg->url_prefix;
    size_t plen = strlen(pre);

    if (plen > 0 && (pre[0] != '/' || pre[plen - 1] == '/')) {
        gx_why_set(why, "server.url_prefix: must be empty or start with '/' and not end with '/'");
        return GX_EINVAL;
    }
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)pre[i];
        if (c <= ' ' || c == '?' || c == '#' || c >= 0x7f) {
            gx_why_set(why, "server.url_prefix: must not contain spaces, '?' or '#'");
            return GX_EINVAL;
        }
    }
    if ((cfg->tls_cert_file == NULL) != (cfg->tls_key_file == NULL)) {
        gx_why_set(why, "server.tls_cert_file: tls_cert_file and tls_key_file must be set "
                        "together");
        return GX_EINVAL;
    }
    /* A large request may use 7/8 of the budget (gx_http_set_budget): a largest body must fit. */
    if ((cfg->max_inflight_bytes - cfg->max_inflight_bytes / 8) / 2 < cfg->max_body_bytes) {
        gx_why_set(why,
                   "server.max_inflight_bytes: must be at least 16/7 x server.max_body_bytes "
                   "(%zu): a largest body and its reply must fit in 7/8 of the budget",
                   cfg->max_body_bytes);
        return GX_EINVAL;
    }
    if (gx_tls_check_priorities(cfg->tls_priorities, why) != GX_OK) {
        return GX_EINVAL;
    }
    if (cfg->prom_url != NULL && !url_scheme_ok(cfg->prom_url)) {
        gx_why_set(why, "prometheus.url: must be an http:// or https:// URL with a host, not '%s'",
                   cfg->prom_url);
        return GX_EINVAL;
    }
    return GX_OK;
}

/* Describe where cJSON stopped as "line L column C". */
static void
why_json_position(struct gx_why *why, const char *text, size_t len, const char *at)
{
    size_t off = at != NULL && at >= text && at <= text + len ? (size_t)(at - text) : len;
    size_t line = 1, col = 1;

    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    gx_why_set(why, "not valid JSON at line %zu column %zu", line, col);
}

/*
 * Parse @len bytes: JSON syntax first (GX_EPARSE with a line and column),
 * then the table walk and the cross-key checks (GX_EINVAL naming the key).
 */
enum gx_err
gx_config_parse(const char *text, size_t len, const char *base_dir, struct gx_config **out,
                struct gx_why *why)
{
    struct gx_config *cfg = NULL;
    cJSON *root = NULL;
    const char *end = NULL;
    struct pctx ctx = {NULL, why, false};
    char *marked = NULL;
    enum gx_err rc;

    if (text == NULL) {
        gx_why_set(why, "config: no text");
        return GX_EINVAL;
    }
    /* cJSON would cut a string at \u0000; mark those on a copy so the key is named. */
    if ((marked = gx_strndup(text, len)) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    ctx.nul_marked = gx_json_mark_nul_escapes(marked, len) > 0;
    root = cJSON_ParseWithLengthOpts(marked, len, &end, 0);
    if (end != NULL) {
        end = text + (end - marked); /* positions are reported in the caller's text */
    }
    if (root == NULL) {
        why_json_position(why, text, len, end);
        rc = GX_EPARSE;
        goto out;
    }
    /* cJSON stops after the first value; anything but whitespace after it is an error. */
    while (end != NULL && end < text + len &&
           (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) {
        end++;
    }
    if (end == NULL || end != text + len) {
        why_json_position(why, text, len, end);
        rc = GX_EPARSE;
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        gx_why_set(why, "config: must be a JSON object");
        rc = GX_EPARSE;
        goto out;
    }
    cfg = config_new_defaults(base_dir);
    if (cfg == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    ctx.base_dir = cfg->base_dir;
    if ((rc = walk_object(root, "", "", cfg, &ctx)) != GX_OK) {
        goto out;
    }
    if ((rc = check_config(cfg, why)) != GX_OK) {
        goto out;
    }
    cfg->hash = gx_hash(text, len);
    *out = cfg;
    cfg = NULL;
    rc = GX_OK;
out:
    if (rc == GX_ENOMEM) {
        gx_why_set(why, "config: out of memory");
    }
    gx_config_free(cfg);
    cJSON_Delete(root);
    free(marked);
    return rc;
}

/* The directory part of @path ("." when there is none); NULL on ENOMEM. */
static char *
dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL) {
        return dup_str(".");
    }
    if (slash == path) {
        return dup_str("/");
    }
    return gx_strndup(path, (size_t)(slash - path));
}

/*
 * The TLS pair must be what start-up can serve with: both files readable
 * (1 MiB cap, as start-up reads them) and a certificate matching its key.
 */
static enum gx_err
check_tls_files(const struct gx_config *cfg, struct gx_why *why)
{
    char *cert = NULL, *key = NULL;
    size_t cert_len = 0, key_len = 0;
    enum gx_err rc;

    if (cfg->tls_cert_file == NULL) {
        return GX_OK;
    }
    rc = gx_read_file(cfg->tls_cert_file, 1u << 20, &cert, &cert_len);
    if (rc != GX_OK) {
        gx_why_set(why, "server.tls_cert_file: cannot read '%s': %s", cfg->tls_cert_file,
                   gx_strerror(rc));
        rc = GX_EINVAL;
        goto out;
    }
    rc = gx_read_file(cfg->tls_key_file, 1u << 20, &key, &key_len);
    if (rc != GX_OK) {
        gx_why_set(why, "server.tls_key_file: cannot read '%s': %s", cfg->tls_key_file,
                   gx_strerror(rc));
        rc = GX_EINVAL;
        goto out;
    }
    rc = gx_tls_check_pair(cert, cert_len, key, key_len, why) == GX_OK ? GX_OK : GX_EINVAL;
out:
    free(cert);
    if (key != NULL) {
        memset(key, 0, key_len);
        free(key);
    }
    return rc;
}

/* Read at most 4 MiB from @path and parse it with its directory as base_dir. */
enum gx_err
gx_config_load(const char *path, struct gx_config **out, struct gx_why *why)
{
    struct gx_config *cfg = NULL;
    char *text = NULL, *dir = NULL;
    size_t len = 0;
    enum gx_err rc;

    rc = gx_read_file(path, CONFIG_FILE_CAP, &text, &len);
    if (rc != GX_OK) {
        gx_why_set(why, "cannot read config file '%s': %s", path,
                   rc == GX_ETOOBIG ? "larger than 4 MiB" : gx_strerror(rc));
        goto out;
    }
    if ((dir = dir_of(path)) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    if ((rc = gx_config_parse(text, len, dir, &cfg, why)) != GX_OK) {
        goto out;
    }
    if ((rc = check_tls_files(cfg, why)) != GX_OK) {
        goto out;
    }
    if ((cfg->path = dup_str(path)) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    *out = cfg;
    cfg = NULL;
out:
    gx_config_free(cfg);
    free(dir);
    free(text);
    return rc;
}

static const char *keys_list[N_KEYS + 1];
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

/* Fill the key list from the table, once (see gx_config_keys). */
static void
keys_init(void)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        keys_list[i] = keys_table[i].path;
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

/* String equality where two NULLs are equal and NULL differs from any string. */
static bool
str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return strcmp(a, b) == 0;
}

/* True if row @k holds the same value in @a and @b (top-level rows only). */
static bool
field_equal(const struct gx_config *a, const struct gx_config *b, const struct kspec *k)
{
    const void *pa = cfield(a, k), *pb = cfield(b, k);

    switch (k->type) {
    case K_STR:
        return str_eq(*(char *const *)pa, *(char *const *)pb);
    case K_INT:
    case K_ENUM:
        return *(const int *)pa == *(const int *)pb;
    case K_SIZE:
        return *(const size_t *)pa == *(const size_t *)pb;
    case K_I64:
        return *(const int64_t *)pa == *(const int64_t *)pb;
    case K_DOUBLE:
        return *(const double *)pa == *(const double *)pb;
    case K_BOOL:
        return *(const bool *)pa == *(const bool *)pb;
    case K_STR_LIST: {
        size_t n = ccount(a, k);
        if (n != ccount(b, k)) {
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            if (!str_eq((*(char **const *)pa)[i], (*(char **const *)pb)[i])) {
                return false;
            }
        }
        return true;
    }
    case K_INT_LIST: {
        size_t n = ccount(a, k);
        return n == ccount(b, k) &&
               (n == 0 || memcmp(*(int *const *)pa, *(int *const *)pb, n * sizeof(int)) == 0);
    }
    case K_SLOTS:
    case K_RULES:
        /* Never restart-only; treated as different so a future flag cannot hide a change. */
        return false;
    }
    return false;
}

/*
 * Compare every F_RESTART row; names that do not fit in @out are left out,
 * but the result still says whether anything differs. This can't fail.
 */
bool
gx_config_restart_keys_changed(const struct gx_config *a, const struct gx_config *b, char *out,
                               size_t n)
{
    size_t used = 0;
    bool any = false;

    if (out != NULL && n > 0) {
        out[0] = '\0';
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct kspec *k = &keys_table[i];
        size_t kl;

        if (!(k->flags & F_RESTART) || is_elem_row(k) || field_equal(a, b, k)) {
            continue;
        }
        any = true;
        if (out == NULL || n == 0) {
            continue;
        }
        kl = strlen(k->path);
        /* Whole names only: a name that does not fit is left out. */
        if (used + (used > 0) + kl + 1 > n) {
            continue;
        }
        if (used > 0) {
            out[used++] = ',';
        }
        memcpy(out + used, k->path, kl + 1);
        used += kl;
    }
    return any;
}

/* True if @product equals @name, or equals it once a "-SHARED" suffix is removed. */
static bool
product_matches(const char *product, const char *name)
{
    static const char suffix[] = "-SHARED";
    size_t pl = strlen(product), sl = sizeof(suffix) - 1;

    if (name == NULL) {
        return false;
    }
    if (strcmp(product, name) == 0) {
        return true;
    }
    return pl > sl && strcmp(product + pl - sl, suffix) == 0 && strlen(name) == pl - sl &&
           strncmp(product, name, pl - sl) == 0;
}

/*
 * The one rule for a card's time slots (filter, bind, explain, /metrics):
 * product entry (exact, else with GFD's "-SHARED" suffix removed), else
 * replicas > 1, else default_slots; times oversubscription, at least 1.
 */
int
gx_config_card_slots(const struct gx_config *cfg, const char *product, int replicas)
{
    int slots = cfg->default_slots;
    bool listed = false;
    double total;

    for (size_t i = 0; product != NULL && i < cfg->n_product_slots; i++) {
        if (cfg->product_slots[i].product != NULL &&
            strcmp(cfg->product_slots[i].product, product) == 0) {
            slots = cfg->product_slots[i].slots;
            listed = true;
            break;
        }
    }
    for (size_t i = 0; !listed && product != NULL && i < cfg->n_product_slots; i++) {
        if (product_matches(product, cfg->product_slots[i].product)) {
            slots = cfg->product_slots[i].slots;
            listed = true;
            break;
        }
    }
    if (!listed && replicas > 1) {
        slots = replicas;
    }
    /* A small epsilon keeps 5 x 1.2 from flooring to 5 through rounding. */
    total = floor((double)slots * cfg->oversubscription + 1e-9);
    if (total < 1) {
        return 1;
    }
    if (total > 1e6) {
        return 1000000;
    }
    return (int)total;
}

/* Oversubscription shrinks what a milli share books, as it multiplies slots. */
int
gx_config_share_milli(const struct gx_config *cfg, int milli)
{
    double booked = ceil((double)milli / cfg->oversubscription - 1e-9);

    if (booked < 1) {
        return 1;
    }
    return booked > 1000 ? 1000 : (int)booked;
}

/* Copy row @k's value from @from into @to (top-level K_STR, K_STR_LIST and scalar rows). */
static enum gx_err
copy_field(struct gx_config *to, const struct gx_config *from, const struct kspec *k)
{
    void *pt = field(to, k);
    const void *pf = cfield(from, k);

    switch (k->type) {
    case K_STR: {
        const char *s = *(char *const *)pf;
        char *d = s != NULL ? dup_str(s) : NULL;
        if (s != NULL && d == NULL) {
            return GX_ENOMEM;
        }
        release_field(to, k);
        *(char **)pt = d;
        return GX_OK;
    }
    case K_STR_LIST: {
        size_t n = ccount(from, k);
        char **l = n > 0 ? calloc(n, sizeof(*l)) : NULL;
        if (n > 0 && l == NULL) {
            return GX_ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
            if ((l[i] = dup_str((*(char **const *)pf)[i])) == NULL) {
                free_str_list(l, i);
                return GX_ENOMEM;
            }
        }
        release_field(to, k);
        *(char ***)pt = l;
        *count_field(to, k) = n;
        return GX_OK;
    }
    case K_INT:
    case K_ENUM:
        *(int *)pt = *(const int *)pf;
        return GX_OK;
    case K_SIZE:
        *(size_t *)pt = *(const size_t *)pf;
        return GX_OK;
    case K_I64:
        *(int64_t *)pt = *(const int64_t *)pf;
        return GX_OK;
    case K_DOUBLE:
        *(double *)pt = *(const double *)pf;
        return GX_OK;
    case K_BOOL:
        *(bool *)pt = *(const bool *)pf;
        return GX_OK;
    case K_INT_LIST:
    case K_SLOTS:
    case K_RULES:
        break;
    }
    return GX_EINVAL;
}

enum gx_err
gx_config_keep_restart_keys(struct gx_config *fresh, const struct gx_config *running)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct kspec *k = &keys_table[i];
        enum gx_err rc;

        if (!(k->flags & F_RESTART) || is_elem_row(k) || field_equal(fresh, running, k)) {
            continue;
        }
        if ((rc = copy_field(fresh, running, k)) != GX_OK) {
            return rc;
        }
    }
    return GX_OK;
}
