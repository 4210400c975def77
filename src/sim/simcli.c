/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simcli.c - `gpu-extender simulate`: argument parsing, file reading,
 * worker threads over seeds, output. Every decision comes from the pure
 * sim code (gx_sim_run); this file only moves data in and out.
 */
#include "simcli.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "replay.h"
#include "sim.h"
#include "sim_deploy.h"
#include "trace.h"

/* Seeds one invocation may run, policies one invocation may compare. */
#define CLI_MAX_SEEDS 1000
#define CLI_MAX_POLICIES 8
/* Largest trace file read. */
#define CLI_MAX_FILE (256u << 20)

struct cli {
    const char *nodes_path, *pods_path, *config_path, *json_path, *svg_path;
    /* --deployment: the shipped install simulated, its files under --manifests */
    const struct gx_sim_deployment *deployment;
    const char *manifests;
    struct gx_sim_sched sched; /* the deployment's gpu-scheduler profile */
    char policies[256];
    uint64_t seeds[CLI_MAX_SEEDS];
    size_t n_seeds;
    double tune;
    int threads;
    bool exact, no_shuffle, slices, all_pods, cpu_pods;
    int replicas;
    const char *strategy;
    int ext_weight, pct_nodes;
    /* --replay time: the time-based replay (replay.h) */
    bool replay_time, trend;
    double load, hours, ramp;
    int lag_s;
    const char *gangs_spec; /* --gangs as given, NULL: pod by pod */
    struct gx_sim_gangs gangs;
    bool progress;     /* --progress, or stderr is a terminal */
    double progress_s; /* a progress line per running seed at most this often */
};

/* Progress reports: the default interval on a terminal. */
#define CLI_PROGRESS_S 2.0

/* Work shared by the threads of one policy. */
struct work {
    const struct gx_sim_opts *opts;
    const struct gx_sim_trace *trace;
    const struct cli *cli;
    const char *policy;
    struct gx_sim_result *results;
    const struct gx_replay_opts *ropts; /* --replay time: run these instead */
    struct gx_replay_result *rresults;
    size_t next, done;
    enum gx_err rc;
    struct gx_why why;
    pthread_mutex_t mu;
};

/* One running seed, for its progress lines. */
struct seed_run {
    const struct work *w;
    uint64_t seed;
    int64_t last_ms; /* the seed's start, then its last progress line */
};

static void
sim_usage(FILE *f)
{
    (void)fprintf(
        f, "usage: gpu-extender simulate --nodes NODES.csv --pods PODS.csv\n"
           "         [--deployment default|gpu-pods-only] [--manifests DIR] [--config FILE]\n"
           "         [--policy NAME[,NAME...]] [--tune 1.3] [--seeds 42-51] [--json OUT.json]\n"
           "         [--svg OUT.svg] [--threads N] [--exact-score] [--no-shuffle] [--replicas R]\n"
           "         [--share-slices] [--sees-all-pods] [--cpu-pods-too]\n"
           "         [--strategy LeastAllocated|MostAllocated] [--extender-weight W]\n"
           "         [--percentage-of-nodes-to-score P]\n"
           "         [--progress SECONDS] [--gangs SIZE[,SIZE...][:whole|multi|gpu]]\n"
           "       --replay time [--load 1.0] [--hours 2] [--lag 30] [--ramp 0.3] [--trend]\n"
           "progress: a line per running seed every SECONDS (default 2 when stderr is a\n"
           "  terminal, none otherwise; 0: every 1024 pods)\n"
           "gangs: all-or-nothing jobs; the arrivals of a class (whole: pods of whole GPUs,\n"
           "  the default; multi: of 2 GPUs or more; gpu: every GPU pod) are cut, in arrival\n"
           "  order, into gangs of a size drawn from the list (2..64) with the seed; a gang is\n"
           "  scheduled when its last member arrives, member by member, and rolled back whole\n"
           "  when one member fits nowhere. Reports gangs placed, failed and partially bound\n"
           "  (must be 0). Not with --replay time. Example: --gangs 2,4,8\n"
           "deployments: what an install runs, read from DIR (default ./manifests, so run from\n"
           "  the repository root): default = kubectl apply -k manifests/ (config.json,\n"
           "  scheduler/kube-scheduler-config.yaml: all pods through the extender),\n"
           "  gpu-pods-only = kubectl apply -k manifests/overlays/gpu-pods-only (its\n"
           "  config.json and kube-scheduler-config.yaml: GPU pods only, Kubernetes < 1.36).\n"
           "  A deployment sets the extender config (--config replaces it), its policy\n"
           "  (score.policy; --policy replaces it), --sees-all-pods from\n"
           "  kubernetes.watch_all_pods, and from the gpu-scheduler profile --strategy,\n"
           "  --extender-weight, --percentage-of-nodes-to-score, the in-tree score weights and\n"
           "  --cpu-pods-too (an extender without managedResources); the flags still override.\n"
           "  Without --deployment, --policy or --config: --deployment default. With --policy\n"
           "  or --config alone: an experiment with only the flags given and the config's\n"
           "  simulate.scheduler keys (built-in defaults without --config).\n"
           "policies: binpack, spread, fgd (the extender under that score.policy), count-only\n"
           "          (kube-scheduler + NVIDIA device plugin), random; default: the config's\n"
           "          score.policy\n");
}

/* Parse "42-51" or "1,5,9" (or a mix) into @c->seeds. */
static bool
parse_seeds(const char *s, struct cli *c)
{
    c->n_seeds = 0;
    while (*s != '\0') {
        char *end = NULL;
        unsigned long long a = strtoull(s, &end, 10), b;
        if (end == s) {
            return false;
        }
        b = a;
        s = end;
        if (*s == '-') {
            b = strtoull(s + 1, &end, 10);
            if (end == s + 1 || b < a) {
                return false;
            }
            s = end;
        }
        for (unsigned long long v = a; v <= b; v++) {
            if (c->n_seeds == CLI_MAX_SEEDS) {
                return false;
            }
            c->seeds[c->n_seeds++] = v;
        }
        if (*s == ',') {
            s++;
        } else if (*s != '\0') {
            return false;
        }
    }
    return c->n_seeds > 0;
}

/* A decimal integer argument; -1 when it is not one (every option wants >= 0). */
static int
int_arg(const char *v)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);

    return end == v || *end != '\0' || n < 0 || n > 1000000 ? -1 : (int)n;
}

/* Options without a value. */
static const char *const sim_flags[] = {"--exact-score",
                                        "--no-shuffle",
                                        "--share-slices",
                                        "--sees-all-pods",
                                        "--cpu-pods-too",
                                        "--trend",
                                        NULL};

/* Options with a value. */
static const char *const sim_values[] = {"--nodes",
                                         "--pods",
                                         "--config",
                                         "--deployment",
                                         "--manifests",
                                         "--json",
                                         "--svg",
                                         "--policy",
                                         "--seeds",
                                         "--tune",
                                         "--threads",
                                         "--replicas",
                                         "--strategy",
                                         "--extender-weight",
                                         "--percentage-of-nodes-to-score",
                                         "--replay",
                                         "--load",
                                         "--hours",
                                         "--ramp",
                                         "--lag",
                                         "--progress",
                                         "--gangs",
                                         NULL};

static bool
listed(const char *a, const char *const *names)
{
    for (; *names != NULL; names++) {
        if (strcmp(a, *names) == 0) {
            return true;
        }
    }
    return false;
}

/* Set flag @a. */
static void
set_flag(struct cli *c, const char *a)
{
    bool *f = strcmp(a, "--exact-score") == 0     ? &c->exact
              : strcmp(a, "--no-shuffle") == 0    ? &c->no_shuffle
              : strcmp(a, "--share-slices") == 0  ? &c->slices
              : strcmp(a, "--sees-all-pods") == 0 ? &c->all_pods
              : strcmp(a, "--cpu-pods-too") == 0  ? &c->cpu_pods
                                                  : &c->trend;
    *f = true;
}

/* Set option @a to @v; false (with @why) for a value it cannot take. */
static bool
set_value(struct cli *c, const char *a, const char *v, struct gx_why *why)
{
    const char **path = strcmp(a, "--nodes") == 0       ? &c->nodes_path
                        : strcmp(a, "--pods") == 0      ? &c->pods_path
                        : strcmp(a, "--config") == 0    ? &c->config_path
                        : strcmp(a, "--json") == 0      ? &c->json_path
                        : strcmp(a, "--svg") == 0       ? &c->svg_path
                        : strcmp(a, "--strategy") == 0  ? &c->strategy
                        : strcmp(a, "--manifests") == 0 ? &c->manifests
                                                        : NULL;
    int *num = strcmp(a, "--threads") == 0                        ? &c->threads
               : strcmp(a, "--replicas") == 0                     ? &c->replicas
               : strcmp(a, "--extender-weight") == 0              ? &c->ext_weight
               : strcmp(a, "--percentage-of-nodes-to-score") == 0 ? &c->pct_nodes
               : strcmp(a, "--lag") == 0                          ? &c->lag_s
                                                                  : NULL;
    double *real = strcmp(a, "--tune") == 0       ? &c->tune
                   : strcmp(a, "--load") == 0     ? &c->load
                   : strcmp(a, "--hours") == 0    ? &c->hours
                   : strcmp(a, "--ramp") == 0     ? &c->ramp
                   : strcmp(a, "--progress") == 0 ? &c->progress_s
                                                  : NULL;
    char *end = NULL;

    if (path != NULL) {
        *path = v;
        return true;
    }
    if (num != NULL) {
        *num = int_arg(v);
        if (*num < 0) {
            gx_why_set(why, "simulate: %s takes an integer from 0 to 1000000, not '%s'", a, v);
        }
        return *num >= 0;
    }
    if (real != NULL) {
        *real = strtod(v, &end);
        if (end == v || *end != '\0') {
            gx_why_set(why, "simulate: %s takes a number, not '%s'", a, v);
        }
        return end != v && *end == '\0';
    }
    if (strcmp(a, "--deployment") == 0) {
        c->deployment = gx_sim_deployment_find(v);
        if (c->deployment == NULL) {
            gx_why_set(why, "simulate: --deployment takes %s, not '%s'", gx_sim_deployment_names(),
                       v);
        }
        return c->deployment != NULL;
    }
    if (strcmp(a, "--policy") == 0) {
        (void)snprintf(c->policies, sizeof(c->policies), "%s", v);
    } else if (strcmp(a, "--seeds") == 0 && !parse_seeds(v, c)) {
        gx_why_set(why, "simulate: --seeds takes seeds like 42-51 or 1,5,9, not '%s'", v);
        return false;
    } else if (strcmp(a, "--gangs") == 0) {
        c->gangs_spec = v;
        if (gx_sim_gangs_parse(v, &c->gangs, why) != GX_OK) {
            gx_why_prefix(why, "simulate: --gangs");
            return false;
        }
    } else if (strcmp(a, "--replay") == 0) {
        c->replay_time = strcmp(v, "time") == 0;
        if (!c->replay_time) {
            gx_why_set(why, "simulate: --replay takes only 'time', not '%s'", v);
        }
        return c->replay_time;
    }
    return true;
}

/* What parse_args found missing or out of range; false with @why. */
static bool
check_args(const struct cli *c, struct gx_why *why)
{
    const char *bad =
        c->nodes_path == NULL                       ? "--nodes is required"
        : c->pods_path == NULL                      ? "--pods is required"
        : c->threads < 1                            ? "--threads must be at least 1"
        : c->tune < 0                               ? "--tune must not be negative"
        : c->load <= 0                              ? "--load must be above 0"
        : c->hours <= 0 || c->hours > 1000          ? "--hours must be above 0 and at most 1000"
        : c->ramp < 0 || c->ramp > 1                ? "--ramp must be from 0 to 1"
        : c->progress_s < 0 || c->progress_s > 3600 ? "--progress takes seconds from 0 to 3600"
        : c->gangs_spec != NULL && c->replay_time   ? "--gangs does not apply to --replay time"
        : c->strategy != NULL && strcmp(c->strategy, "LeastAllocated") != 0 &&
                strcmp(c->strategy, "MostAllocated") != 0
            ? "--strategy takes LeastAllocated or MostAllocated"
            : NULL;

    if (bad != NULL) {
        gx_why_set(why, "simulate: %s", bad);
    }
    return bad == NULL;
}

/* The command line into @c; false with @why for a wrong one. */
static bool
parse_args(int argc, char **argv, struct cli *c, struct gx_why *why)
{
    memset(c, 0, sizeof(*c));
    c->manifests = "manifests";
    c->tune = 1.3;
    c->threads = 2;
    c->replicas = 0;
    c->ext_weight = -1;
    c->pct_nodes = -1;
    c->load = 1.0;
    c->hours = 2.0;
    c->ramp = 0.3;
    c->lag_s = 30;
    c->progress_s = NAN;
    (void)parse_seeds("42-51", c);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];

        if (listed(a, sim_flags)) {
            set_flag(c, a);
        } else if (!listed(a, sim_values)) {
            gx_why_set(why, "simulate: unknown option '%s'", a);
            return false;
        } else if (i + 1 >= argc) {
            gx_why_set(why, "simulate: missing value for %s", a);
            return false;
        } else if (!set_value(c, a, argv[++i], why)) {
            return false;
        }
    }
    /* the shipped install unless the command line sets up an experiment */
    if (c->deployment == NULL && c->config_path == NULL && c->policies[0] == '\0') {
        c->deployment = gx_sim_deployment_find("default");
    }
    if (isnan(c->progress_s)) {
        c->progress_s = CLI_PROGRESS_S;
        c->progress = isatty(STDERR_FILENO) != 0;
    } else {
        c->progress = true;
    }
    return check_args(c, why);
}

/* True when the command line asks for help. */
static bool
wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return true;
        }
    }
    return false;
}

/* Read and parse both trace files into @t (heap arrays you free). */
static int
load_trace(const struct cli *c, struct gx_trace_node **nodes, struct gx_trace_pod **pods,
           struct gx_sim_trace *t)
{
    char *text = NULL;
    size_t len = 0;
    struct gx_why why = {{0}};
    enum gx_err rc;

    if (gx_read_file(c->nodes_path, CLI_MAX_FILE, &text, &len) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: cannot read %s\n", c->nodes_path);
        return 1;
    }
    rc = gx_trace_parse_nodes(text, len, c->nodes_path, nodes, &t->n_nodes, &why);
    free(text);
    if (rc != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: %s\n", why.text);
        return 1;
    }
    if (gx_read_file(c->pods_path, CLI_MAX_FILE, &text, &len) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: cannot read %s\n", c->pods_path);
        return 1;
    }
    rc = gx_trace_parse_pods(text, len, c->pods_path, pods, &t->n_pods, &why);
    free(text);
    if (rc != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: %s\n", why.text);
        return 1;
    }
    t->nodes = *nodes;
    t->pods = *pods;
    return 0;
}

/* gx_sim_run's report every 1024 pods: a line when the seed's interval has passed. */
static void
progress_cb(void *ctx, size_t done, size_t total)
{
    struct seed_run *r = ctx;
    int64_t now = gx_mono_ms();
    char text[128];

    if (!r->w->cli->progress || (double)(now - r->last_ms) < r->w->cli->progress_s * 1000.0) {
        return;
    }
    r->last_ms = now;
    gx_sim_progress_text(text, sizeof(text), r->seed, done, total);
    (void)fprintf(stderr, "simulate: %s %s\n", r->w->policy, text);
}

/* Worker: take the next seed until none is left. */
static void *
worker(void *arg)
{
    struct work *w = arg;

    for (;;) {
        size_t k;
        struct gx_sim_result r;
        struct gx_why why = {{0}};
        enum gx_err rc;

        (void)pthread_mutex_lock(&w->mu);
        k = w->next < w->cli->n_seeds && w->rc == GX_OK ? w->next++ : w->cli->n_seeds;
        (void)pthread_mutex_unlock(&w->mu);
        if (k >= w->cli->n_seeds) {
            return NULL;
        }
        if (w->ropts != NULL) {
            rc = gx_replay_run(w->ropts, w->trace, w->cli->seeds[k], &w->rresults[k], &why);
        } else {
            struct seed_run sr = {.w = w, .seed = w->cli->seeds[k], .last_ms = gx_mono_ms()};
            rc = gx_sim_run(w->opts, w->trace, sr.seed, progress_cb, &sr, &r, &why);
        }
        (void)pthread_mutex_lock(&w->mu);
        if (rc != GX_OK && w->rc == GX_OK) {
            w->rc = rc;
            w->why = why;
        }
        if (w->ropts == NULL) {
            w->results[k] = r;
        }
        w->done++;
        (void)fprintf(stderr, "simulate: %s: seed %llu done (%zu/%zu)\n", w->policy,
                      (unsigned long long)w->cli->seeds[k], w->done, w->cli->n_seeds);
        (void)pthread_mutex_unlock(&w->mu);
    }
}

/* The policies: the extender under a score.policy, or a baseline without it. */
static const struct {
    const char *name;
    enum gx_sim_mode mode;
    enum gx_policy policy; /* GX_SIM_EXTENDER only */
} policy_table[] = {
    {"binpack", GX_SIM_EXTENDER, GX_POLICY_BINPACK},
    {"spread", GX_SIM_EXTENDER, GX_POLICY_SPREAD},
    {"fgd", GX_SIM_EXTENDER, GX_POLICY_FGD},
    {"count-only", GX_SIM_COUNT_ONLY, GX_POLICY_BINPACK},
    {"random", GX_SIM_RANDOM, GX_POLICY_BINPACK},
};

/* The name of @cfg's score.policy, what runs when --policy is not given. */
static const char *
config_policy(const struct gx_config *cfg)
{
    for (size_t i = 0; i < GX_ARRAY_LEN(policy_table); i++) {
        if (policy_table[i].mode == GX_SIM_EXTENDER && policy_table[i].policy == cfg->policy) {
            return policy_table[i].name;
        }
    }
    return "binpack";
}

/* The scheduler profile: the deployment's, else the config's simulate.scheduler keys. */
static void
base_profile(const struct cli *c, const struct gx_config *cfg, struct gx_ksched_profile *p)
{
    if (c->deployment != NULL) {
        *p = c->sched.profile;
        return;
    }
    p->strategy = (enum gx_ksched_strategy)cfg->sim_strategy;
    p->fit_weight = cfg->sim_fit_weight;
    p->balanced_weight = cfg->sim_balanced_weight;
    p->gpu_weight = cfg->sim_gpu_weight;
    p->extender_weight = cfg->sim_extender_weight;
    p->pct_nodes_to_score = cfg->sim_pct_nodes_to_score;
}

/* The command line's overrides of the profile. */
static void
override_profile(const struct cli *c, struct gx_ksched_profile *p)
{
    if (c->strategy != NULL) {
        p->strategy = strcmp(c->strategy, "MostAllocated") == 0 ? GX_KS_MOST_ALLOCATED
                                                                : GX_KS_LEAST_ALLOCATED;
    }
    if (c->ext_weight > 0) {
        p->extender_weight = c->ext_weight;
    }
    if (c->pct_nodes >= 0) {
        p->pct_nodes_to_score = c->pct_nodes;
    }
}

/* Options of one policy: the mode, and for the extender its score.policy. */
static bool
policy_opts(const char *name, const struct cli *c, const struct gx_config *base,
            struct gx_config *cfg, struct gx_sim_opts *o)
{
    size_t i = 0;

    while (i < GX_ARRAY_LEN(policy_table) && strcmp(name, policy_table[i].name) != 0) {
        i++;
    }
    if (i == GX_ARRAY_LEN(policy_table)) {
        return false;
    }
    *cfg = *base; /* shallow: the copy is only read, never freed */
    gx_sim_opts_default(o, cfg);
    o->mode = policy_table[i].mode;
    if (o->mode == GX_SIM_EXTENDER) {
        cfg->policy = policy_table[i].policy;
    }
    base_profile(c, cfg, &o->profile);
    override_profile(c, &o->profile);
    o->tune = c->tune;
    o->shuffle = !c->no_shuffle;
    o->exact_score = c->exact;
    o->share_slices = c->slices;
    /* a deployment: the extender's all-pods watch and which pods its scheduler sends */
    o->sees_all_pods = c->all_pods || (c->deployment != NULL && cfg->kube_watch_all_pods);
    o->cpu_pods_too = c->cpu_pods || (c->deployment != NULL && c->sched.all_pods);
    o->replicas = c->replicas > 0 ? c->replicas : gx_config_card_slots(cfg, "", 1);
    o->gangs = c->gangs;
    return true;
}

/* One line on stderr saying what is simulated, so a run's setup is on record. */
static void
print_setup(const struct cli *c, const char *config, const struct gx_sim_opts *o)
{
    const struct gx_ksched_profile *p = &o->profile;

    (void)fprintf(stderr,
                  "simulate: %s%s; extender config %s; profile %s, fit weight %d, balanced "
                  "weight %d, extender weight %d, %d %% of nodes to score%s; %s through the "
                  "extender; all-pods watch %s\n",
                  c->deployment != NULL ? "deployment " : "experiment",
                  c->deployment != NULL ? c->deployment->name : "", config,
                  p->strategy == GX_KS_MOST_ALLOCATED ? "MostAllocated" : "LeastAllocated",
                  p->fit_weight, p->balanced_weight, p->extender_weight, p->pct_nodes_to_score,
                  p->pct_nodes_to_score == 0 ? " (adaptive)" : "",
                  o->cpu_pods_too ? "all pods" : "GPU pods only", o->sees_all_pods ? "on" : "off");
}

/* One line of the time replay: per seed, or the mean. */
static void
print_replay_line(const char *policy, const char *what, const struct gx_replay_result *r)
{
    (void)printf("replay %s %s: %zu arrived, pending mean %.1f s p95 %.1f s, %zu never placed, "
                 "%zu placed when a card cooled; hot %.0f card-min (%.0f shared), over-admitted "
                 "%.0f card-min on %zu cards; alloc %.2f%% util %.2f%%%s\n",
                 policy, what, r->arrived, r->pending_mean_s, r->pending_p95_s, r->never_placed,
                 r->cooled_placed, r->hot_card_min, r->hot_shared_card_min, r->over_card_min,
                 r->over_cards, r->alloc_pct, r->util_pct,
                 r->ledger_errs || r->ledger_left || r->order_errs ? " (INVARIANT BROKEN)" : "");
}

/* The time replay's results of one policy on stdout. */
static void
print_replay(const char *policy, const struct gx_replay_result *r, size_t n)
{
    struct gx_replay_result m;
    char what[64];

    for (size_t k = 0; k < n; k++) {
        (void)snprintf(what, sizeof(what), "seed %llu", (unsigned long long)r[k].seed);
        print_replay_line(policy, what, &r[k]);
    }
    gx_replay_mean(r, n, &m);
    (void)snprintf(what, sizeof(what), "mean of %zu seeds", n);
    print_replay_line(policy, what, &m);
    (void)fflush(stdout);
}

/* Run every seed of one policy on the worker threads. */
static int
run_policy(const struct cli *c, const struct gx_sim_opts *o, const struct gx_sim_trace *t,
           const char *policy, struct gx_sim_result *results)
{
    pthread_t th[64];
    int n = c->threads > 64 ? 64 : c->threads;
    struct gx_replay_opts ro;
    struct gx_replay_result rr[CLI_MAX_SEEDS] = {{0}};
    struct work w = {.opts = o, .trace = t, .cli = c, .policy = policy, .results = results};

    if (c->replay_time) {
        gx_replay_opts_default(&ro, o->cfg);
        ro.sim = *o;
        ro.load = c->load;
        ro.horizon_s = (int64_t)(c->hours * 3600.0);
        ro.warmup_s = ro.horizon_s / 2;
        ro.lag_s = c->lag_s;
        ro.ramp_frac = c->ramp;
        ro.trend = c->trend;
        w.ropts = &ro;
        w.rresults = rr;
    }

    (void)pthread_mutex_init(&w.mu, NULL);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&th[i], NULL, worker, &w) != 0) {
            n = i;
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        (void)pthread_join(th[i], NULL);
    }
    (void)pthread_mutex_destroy(&w.mu);
    if (n == 0 || w.rc != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: simulate: %s\n", n == 0 ? "no thread" : w.why.text);
        return 1;
    }
    if (c->replay_time) {
        print_replay(policy, rr, c->n_seeds);
    }
    return 0;
}

/* Per-seed lines and the mean of one policy on stdout; its gangs' sums with @gangs. */
static void
print_policy(const char *trace, const char *policy, const char *gangs,
             const struct gx_sim_result *r, size_t n)
{
    struct gx_sim_result m;

    for (size_t k = 0; k < n; k++) {
        (void)printf("%s %s seed %llu: alloc %.2f%% at 100%% arrived, %.2f%% at 130%%; frag "
                     "%.2f%% at 100%%; failed %zu of %zu pods\n",
                     trace, policy, (unsigned long long)r[k].seed, r[k].alloc_pct[100],
                     r[k].alloc_pct[130], r[k].frag_pct[100], r[k].failed, r[k].pods);
    }
    gx_sim_mean(r, n, &m);
    (void)printf("%s %s mean of %zu seeds: alloc %.2f%% at 100%% arrived, %.2f%% at 130%%; frag "
                 "%.2f%% at 100%%; failed %zu of %zu pods; %.1f cards over-admitted%s\n",
                 trace, policy, n, m.alloc_pct[100], m.alloc_pct[130], m.frag_pct[100], m.failed,
                 m.pods, (double)m.over_cards / (double)(n ? n : 1),
                 m.ledger_errs ? " (LEDGER REFUSED BOOKINGS)" : "");
    if (gangs != NULL) {
        (void)printf("%s %s gangs %s, %zu seeds: %zu gangs, %zu placed, %zu failed (%zu of %zu "
                     "before 100%% arrived), %zu partially bound%s\n",
                     trace, policy, gangs, n, m.gangs, m.gangs_placed, m.gangs_failed,
                     m.gangs_failed_100, m.gangs_100, m.gangs_partial,
                     m.gangs_partial ? " (INVARIANT BROKEN)" : "");
    }
    (void)fflush(stdout);
}

/* Write @b to @path. */
static int
write_out(const char *path, const struct gx_buf *b)
{
    FILE *f = fopen(path, "w");
    bool ok;

    if (f == NULL) {
        (void)fprintf(stderr, "gpu-extender: cannot write %s\n", path);
        return 1;
    }
    ok = fwrite(b->data != NULL ? b->data : "", 1, b->len, f) == b->len;
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        (void)fprintf(stderr, "gpu-extender: cannot write %s\n", path);
    }
    return ok ? 0 : 1;
}

/* The trace's name: the pod file's base name without ".csv". */
static void
trace_name(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    size_t len;

    b = b != NULL ? b + 1 : path;
    len = strlen(b);
    if (len > 4 && strcmp(b + len - 4, ".csv") == 0) {
        len -= 4;
    }
    (void)snprintf(out, n, "%.*s", (int)len, b);
}

/* --json and --svg of every policy run. */
static int
write_outputs(const struct cli *c, const struct gx_sim_series *s, size_t n)
{
    struct gx_buf b;
    int st = 0;

    gx_buf_init(&b, (size_t)64 << 20);
    if (c->json_path != NULL) {
        st |= gx_sim_json(s, n, &b) == GX_OK ? write_out(c->json_path, &b) : 1;
    }
    gx_buf_reset(&b);
    if (c->svg_path != NULL) {
        st |= gx_sim_svg(s, n, &b) == GX_OK ? write_out(c->svg_path, &b) : 1;
    }
    gx_buf_release(&b);
    return st;
}

/* @rel under --manifests into @out; the file a deployment reads. */
static void
manifest_path(const struct cli *c, const char *rel, char *out, size_t n)
{
    (void)snprintf(out, n, "%s/%s", c->manifests, rel);
}

/* Load the config: --config, else the deployment's, else the built-in defaults. */
static int
load_config(const struct cli *c, char *path, size_t n, struct gx_config **cfg)
{
    struct gx_why why = {{0}};

    if (c->config_path != NULL) {
        (void)snprintf(path, n, "%s", c->config_path);
    } else if (c->deployment != NULL) {
        manifest_path(c, c->deployment->config, path, n);
    } else {
        (void)snprintf(path, n, "(built-in defaults)");
        return gx_config_default(cfg) == GX_OK ? 0 : 1;
    }
    if (gx_config_load(path, cfg, &why) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: %s: invalid config: %s%s\n", path, why.text,
                      c->config_path == NULL ? " (--deployment reads the repository's manifests/: "
                                               "run from its root or give --manifests DIR)"
                                             : "");
        return 1;
    }
    return 0;
}

/* The deployment's gpu-scheduler profile into @c->sched; nothing without a deployment. */
static int
load_sched(struct cli *c)
{
    char path[1024];
    char *text = NULL;
    size_t len = 0;
    struct gx_why why = {{0}};
    enum gx_err rc;

    if (c->deployment == NULL) {
        return 0;
    }
    manifest_path(c, c->deployment->scheduler, path, sizeof(path));
    if (gx_read_file(path, 1u << 20, &text, &len) != GX_OK) {
        (void)fprintf(stderr,
                      "gpu-extender: simulate: --deployment %s: cannot read %s (run from the "
                      "repository root or give --manifests DIR)\n",
                      c->deployment->name, path);
        return 1;
    }
    rc = gx_sim_sched_parse(text, len, &c->sched, &why);
    free(text);
    if (rc != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: simulate: %s: %s\n", path, why.text);
        return 1;
    }
    return 0;
}

int
gx_simcli_main(int argc, char **argv)
{
    static struct cli c;
    struct gx_trace_node *nodes = NULL;
    struct gx_trace_pod *pods = NULL;
    struct gx_sim_trace t = {0};
    struct gx_config *base = NULL, cfgs[CLI_MAX_POLICIES];
    struct gx_sim_opts opts[CLI_MAX_POLICIES];
    struct gx_sim_series series[CLI_MAX_POLICIES];
    struct gx_sim_result *results = NULL;
    char trace[128], config[1024], *save = NULL, *tok;
    size_t n_pol = 0;
    struct gx_why why = {{0}};
    int st = 1;

    if (wants_help(argc, argv)) {
        sim_usage(stdout);
        return 0;
    }
    if (!parse_args(argc, argv, &c, &why)) {
        return gx_usage_error("gpu-extender simulate --help", "%s", why.text);
    }
    if (load_config(&c, config, sizeof(config), &base) != 0 || load_sched(&c) != 0 ||
        load_trace(&c, &nodes, &pods, &t) != 0) {
        goto out;
    }
    if (c.policies[0] == '\0') {
        (void)snprintf(c.policies, sizeof(c.policies), "%s", config_policy(base));
    }
    trace_name(c.pods_path, trace, sizeof(trace));
    results = calloc(CLI_MAX_POLICIES * (c.n_seeds > 0 ? c.n_seeds : 1), sizeof(*results));
    if (results == NULL) {
        goto out;
    }
    for (tok = strtok_r(c.policies, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        struct gx_sim_result *r = results + n_pol * c.n_seeds;
        if (n_pol == CLI_MAX_POLICIES || !policy_opts(tok, &c, base, &cfgs[n_pol], &opts[n_pol])) {
            (void)fprintf(stderr, "gpu-extender: simulate: unknown policy %s\n", tok);
            goto out;
        }
        if (n_pol == 0) {
            print_setup(&c, config, &opts[0]);
        }
        if (run_policy(&c, &opts[n_pol], &t, tok, r) != 0) {
            goto out;
        }
        if (!c.replay_time) {
            print_policy(trace, tok, c.gangs_spec, r, c.n_seeds);
        }
        series[n_pol] = (struct gx_sim_series){
            .trace = trace, .policy = tok, .runs = r, .n_runs = c.n_seeds, .gangs = c.gangs_spec};
        n_pol++;
    }
    st = c.replay_time ? 0 : write_outputs(&c, series, n_pol);
out:
    free(results);
    free(nodes);
    free(pods);
    gx_config_free(base);
    return st;
}
