/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - the extender's configuration: one JSON document (the ConfigMap's
 * config.json), parsed and validated into an immutable struct gx_config.
 * Unknown keys and out-of-range values are errors naming the key. Every key
 * is documented in docs/configuration.md; gx_config_keys() lists them so a
 * test can compare the two.
 *
 * A config is never changed after gx_config_parse() returns it; a reload
 * parses a new one and swaps the pointer (the old one is freed when no
 * request uses it any more).
 */
#ifndef GX_CONFIG_H
#define GX_CONFIG_H

#include "common.h"

enum gx_policy { GX_POLICY_BINPACK, GX_POLICY_SPREAD, GX_POLICY_FGD };
enum gx_on_stale { GX_STALE_IGNORE, GX_STALE_REJECT };

/** The live GPU signals, one Prometheus query / dcgm family each. */
enum gx_signal {
    GX_SIG_UTIL,       /* utilization %, 0..100 */
    GX_SIG_MEM_USED,   /* framebuffer used, MiB */
    GX_SIG_MEM_FREE,   /* framebuffer free, MiB */
    GX_SIG_TEMP,       /* GPU temperature, C */
    GX_SIG_POWER,      /* power draw, W */
    GX_SIG_XID,        /* last XID error code, 0 = none */
    GX_SIG_UTIL_TREND, /* utilization slope, % per second (Prometheus deriv); no dcgm family */
    GX_SIG_COUNT
};

/** Lowercase name of a signal ("util", "mem_used", ...), as used in config keys. */
const char *gx_signal_name(enum gx_signal sig);

enum gx_rule_op { GX_OP_IN, GX_OP_NOT_IN, GX_OP_EXISTS, GX_OP_DOES_NOT_EXIST, GX_OP_GT, GX_OP_LT };

/** A node label preference for prioritize: matching nodes earn @weight points. */
struct gx_label_rule {
    char *label;
    enum gx_rule_op op;
    char **values; /* In/NotIn */
    size_t n_values;
    double number; /* Gt/Lt: compared with the label value parsed as a number */
    int weight;    /* -100..100; negative weights express dislike */
};

/** Time slots per card for one GPU product (overrides sharing.default_slots). */
struct gx_product_slots {
    char *product;
    int slots;
};

struct gx_config {
    /* server: restart-only except max_body_bytes, max_json_depth,
     * connection_timeout_s and debug_endpoints (docs/configuration.md) */
    char *listen_address;     /* "0.0.0.0" */
    int port;                 /* 8888 */
    char *url_prefix;         /* "/gpu-extender" (no trailing slash, may be "") */
    size_t max_body_bytes;    /* 64 MiB */
    int max_json_depth;       /* 64 */
    int connection_timeout_s; /* idle connection timeout, 30 */
    int shutdown_grace_s;     /* drain in-flight requests on SIGTERM, 10 */
    bool debug_endpoints;     /* /debug/explain, default false */
    char *tls_cert_file;      /* NULL: plain HTTP */
    char *tls_key_file;
    char *tls_priorities;      /* GnuTLS priority string; TLS < 1.2 always removed */
    size_t max_inflight_bytes; /* memory budget of requests in flight, 160 MiB */

    /* log */
    int log_level; /* enum gx_log_level */

    /* names (all configurable, DESIGN.md section 3) */
    char *res_gpu;        /* "nvidia.com/gpu" */
    char *res_shared;     /* "nvidia.com/gpu.shared" */
    char *res_time_slice; /* "gpu-extender.io/time-slice" (virtual resource) */
    char *ann_slices;     /* "gpu-extender.io/time-slices" */
    char *ann_memory;     /* "gpu-extender.io/gpu-memory" */
    char *ann_milli;      /* "gpu-extender.io/gpu-milli": a share of one card in milli-GPU */
    char *ann_util;       /* "gpu-extender.io/gpu-util" */
    char *ann_apart;      /* "gpu-extender.io/gang-distinct-cards" */
    char *ann_numa;       /* "gpu-extender.io/gang-same-numa" */
    char *ann_uuids;      /* output: "gpu-extender.io/gpu-uuids" */
    char *ann_index;      /* output: "gpu-extender.io/gpu-index" */
    char *managed_label;  /* "gpu-extender.io/managed" */

    /* sources.files: the embedded default (paths relative to the config file) */
    char *nodes_file;     /* NodeList JSON, NULL when nodes come from the API server */
    char **metrics_files; /* dcgm-exporter pages */
    size_t n_metrics_files;
    int files_refresh_s; /* re-read changed files, 5 */

    /* metrics: mapping and staleness */
    char **node_labels; /* labels naming the node: ["Hostname", "hostname"] */
    size_t n_node_labels;
    bool strip_port;                  /* strip ":port" from the node label value (instance) */
    char *metric_names[GX_SIG_COUNT]; /* dcgm family names per signal */
    enum gx_on_stale on_stale;
    int max_age_s[GX_SIG_COUNT]; /* default 60 each */

    /* health and filter */
    double max_temperature_c; /* 85 */
    int *ignored_xids;        /* XIDs that do not make a card unhealthy */
    size_t n_ignored_xids;
    double max_utilization_pct; /* a card above this is busy: 90 */
    int shortlist_nodes;        /* filter keeps the best this many; 0 every node that fits */

    /* sharing */
    int default_slots;          /* slots per card when replicas <= 1: 4 */
    double oversubscription;    /* 1.0 .. 4.0 */
    int64_t memory_reserve_mib; /* per card: 512 */
    double util_ceiling_pct;    /* shared: measured + expected <= this: 100 */
    bool expect_share_util;     /* a share without gpu-util expects its share: on */
    int default_slices;         /* deprecated, read by nothing (configuration.md) */
    struct gx_product_slots *product_slots;
    size_t n_product_slots;
    int reservation_ttl_s; /* unbound reservations expire: 300 */
    int gang_hold_ms;      /* a gang member's tentative booking expires: 30000 (gang.h) */

    /* score */
    enum gx_policy policy;
    int fgd_half_life;       /* fgd: typical pods forget with this half-life, in GPU pods seen */
    int fgd_idle_card_milli; /* fgd: cost per card of a placement on a node with none in use: 0 */
    int fgd_gap_milli;       /* fgd: cost per unit of the gaps' sum of squares a share adds: 6 */
    int w_util, w_memory, w_temp, w_labels, w_fit; /* 0..100 each */
    int w_trend; /* utilization slope (GX_SIG_UTIL_TREND), 0..100, 0: off */
    struct gx_label_rule *label_rules;
    size_t n_label_rules;
    bool prefer_cpu_nodes_for_cpu_pods; /* true */
    bool relative_scores; /* true: prioritize answers 10 for the best node of the call */

    /* simulate: the kube-scheduler profile `gpu-extender simulate` runs around the extender */
    int sim_strategy;           /* 0 LeastAllocated, 1 MostAllocated (enum gx_ksched_strategy) */
    int sim_fit_weight;         /* NodeResourcesFit plugin weight, 1 */
    int sim_balanced_weight;    /* NodeResourcesBalancedAllocation weight, 1 */
    int sim_gpu_weight;         /* nvidia.com/gpu in Fit's scoring resources, 0 */
    int sim_extender_weight;    /* extenders[].weight, 5 */
    int sim_pct_nodes_to_score; /* percentageOfNodesToScore, 0 adaptive */

    /* prometheus: the live metric source (prom_url NULL: none) */
    char *prom_url;                   /* e.g. "http://prometheus:9090" */
    int prom_interval_s;              /* refresh period, 5 */
    int prom_timeout_s;               /* per query, 3 */
    char *prom_queries[GX_SIG_COUNT]; /* PromQL per signal; "" disables a signal */
    char *prom_bearer_token_file;     /* re-read every round (rotation) */
    char *prom_basic_user;
    char *prom_basic_password_file;
    char *prom_ca_file;
    bool prom_insecure;
    size_t prom_max_response_bytes; /* 256 MiB */

    /* kubernetes: nodes and managed pods by list+watch (kube_enabled false: files) */
    bool kube_enabled;
    char *kube_url;        /* NULL: in-cluster (KUBERNETES_SERVICE_HOST/PORT) */
    char *kube_token_file; /* re-read when it changes; NULL: none */
    char *kube_ca_file;
    bool kube_insecure;
    bool kube_watch_dra;      /* watch ResourceSlices/ResourceClaims: DRA-held cards are taken */
    bool kube_watch_all_pods; /* watch every bound pod: unmanaged pods' CPU/memory per node */
    /* quotas: per-namespace limits on what the ledger books, see quota.h */
    int quota_default_milli; /* milli-GPU a namespace not listed may hold, 0: no limit */
    int quota_default_mib;   /* declared GPU memory (MiB) one not listed may hold, 0: no limit */
    struct gx_product_slots *quota_milli; /* namespace -> milli-GPU ("product" = namespace) */
    size_t n_quota_milli;
    struct gx_product_slots *quota_mib; /* namespace -> MiB */
    size_t n_quota_mib;
    int metrics_max_cards;       /* per-card series in /metrics at most (booked or claimed cards) */
    char *kube_node_selector;    /* label selector for nodes, NULL: all */
    char *kube_namespace;        /* where the ledger Leases live */
    int kube_timeout_s;          /* lists and writes, 10 */
    int kube_watch_timeout_s;    /* server-side timeoutSeconds of a watch, 300 */
    size_t kube_max_event_bytes; /* one watch event line, 16 MiB */
    size_t kube_max_list_bytes;  /* one list response, 1 GiB */

    /* ledger: durable copy in one Lease per GPU node (with kube_enabled) */
    int ledger_sync_s;      /* list the Leases into the cache every N s, 5 */
    int ledger_reconcile_s; /* release tenants of gone pods, expire reservations, 10 */
    int ledger_cas_retries; /* attempts of one Lease compare-and-swap, 8 */
    int bind_deadline_ms;   /* a bind answers within this, 4000 (< httpTimeout) */
    int binds_in_flight;    /* most binds talking to the API server at once, 16 (gate.h) */

    /* replicas: one leads (a Lease), the others forward kube-scheduler's calls to it (elect.h) */
    bool replicas_forward;
    int replicas_lease_s;         /* a leader whose Lease is this quiet is replaced, 10 */
    char *replicas_advertise_url; /* how the others reach this one; NULL: http://$POD_IP:port */

    /* bookkeeping */
    char *path;     /* file it came from, NULL if from a string */
    char *base_dir; /* directory relative paths are resolved against */
    uint64_t hash;  /* FNV-1a of the source text, shown in /version */
};

/**
 * Parse and validate @len bytes of JSON. Missing keys take their defaults.
 * On error returns GX_EPARSE/GX_EINVAL and fills @why with "key: reason".
 * @base_dir (may be NULL: ".") resolves relative file paths.
 * On success you own *out (free with gx_config_free).
 */
enum gx_err gx_config_parse(const char *text, size_t len, const char *base_dir,
                            struct gx_config **out, struct gx_why *why) GX_WUR;

/**
 * Read, parse and validate a file (see gx_config_parse). Also reads the
 * files start-up would refuse to serve with: the TLS certificate and key
 * must be readable and form a valid pair, and every other file the config
 * names (sources.files.*, the token, password and CA files) must be
 * readable (GX_EINVAL naming the key: "sources.files.nodes: /x: No such
 * file or directory").
 */
enum gx_err gx_config_load(const char *path, struct gx_config **out, struct gx_why *why) GX_WUR;

/**
 * GX_OK when @path (NULL: not set) is a file that can be opened for
 * reading; else GX_EINVAL with "@key: @path: reason" in @why. The one
 * check of a named file, for gx_config_load and the sources that read
 * files of their own (the in-cluster CA). Does I/O.
 */
enum gx_err gx_config_check_readable(const char *key, const char *path, struct gx_why *why) GX_WUR;

/** A config with every default (no file sources). You own it. */
enum gx_err gx_config_default(struct gx_config **out) GX_WUR;

/** Free a config; NULL is a no-op. */
void gx_config_free(struct gx_config *cfg);

/**
 * Every accepted key as a dotted path ("server.port", "score.label_rules[].op"),
 * NULL-terminated. Static storage.
 */
const char *const *gx_config_keys(void);

/**
 * Names of restart-only keys whose value differs between @a and @b, written
 * comma-separated into @out (size @n); returns true if any differ.
 */
bool gx_config_restart_keys_changed(const struct gx_config *a, const struct gx_config *b, char *out,
                                    size_t n);

/**
 * Give @fresh the values of @running for every restart-only key, so a live
 * reload applies only the live keys (the running process keeps its port,
 * prefix, sources...). GX_ENOMEM.
 */
enum gx_err gx_config_keep_restart_keys(struct gx_config *fresh,
                                        const struct gx_config *running) GX_WUR;

/**
 * Slots of one card of @product on a node advertising @replicas: the one
 * rule every decision uses. Product entry (exact, else without GFD's
 * "-SHARED" suffix), else @replicas when > 1, else sharing.default_slots;
 * times sharing.oversubscription, floored, at least 1. Cannot fail.
 */
int gx_config_card_slots(const struct gx_config *cfg, const char *product, int replicas);

/**
 * Milli-GPU a pod asking @milli (1..1000) books on its card: @milli divided
 * by sharing.oversubscription, rounded up, at least 1. With the slice rule
 * above, the one place a share's size is decided. Cannot fail.
 */
int gx_config_share_milli(const struct gx_config *cfg, int milli);

#endif
