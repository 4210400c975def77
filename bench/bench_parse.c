/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_parse.c - times the background work behind a snapshot, outside the
 * server: a Prometheus /api/v1/query answer parsed and merged into the
 * metric store exactly as src/io/promsrc.c does (gx_prom_parse_query, each
 * series mapped with gx_dcgm_map and copied, then begin/put/commit), the
 * NodeList decode, a whole dcgm-exporter page load and gx_snapshot_build,
 * and the fgd gap term's count of the cluster's gaps (every node holding a
 * share), as the first share decision after a ledger change pays it.
 * Prints the median of the runs in milliseconds (and -j: one JSON line).
 *
 *   bench_parse --config C --prom P.json --nodes NODES.json --page PAGE.prom
 *               [--runs 20] [-j]
 */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "config.h"
#include "dcgm.h"
#include "kobj.h"
#include "prom.h"
#include "score.h"
#include "snapshot.h"

#include "bench_util.h"

#define FILE_CAP ((size_t)1 << 30)
#define MAX_RUNS 1000

/* Samples of one answer, collected before they are applied (as promsrc). */
struct collect {
    const struct gx_config *cfg;
    enum gx_signal sig;
    struct gx_arena arena;
    struct gx_card_sample *s;
    size_t n, cap;
    int64_t now_ms;
};

/* Bytes of heap in use (malloc'ed and not freed), from mallinfo2. */
static size_t
heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

/* Resident set size of this process in bytes (VmRSS), 0 if unknown. */
static size_t
rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0, res = 0;

    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &pages, &res) != 2)
        res = 0;
    fclose(f);
    return (size_t)res * 4096;
}

/* Map one series to a card sample and keep a copy; GX_ENOMEM on failure. */
static enum gx_err
collect_cb(void *ctx, const struct gx_series *series)
{
    struct collect *c = ctx;
    struct gx_card_sample smp;

    if (!gx_dcgm_map(c->cfg, c->sig, series, c->now_ms, &smp))
        return GX_OK;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 256;
        struct gx_card_sample *ns = realloc(c->s, ncap * sizeof(*ns));
        if (ns == NULL)
            return GX_ENOMEM;
        c->s = ns;
        c->cap = ncap;
    }
    smp.node = gx_arena_strndup(&c->arena, smp.node, smp.node_len);
    smp.uuid = gx_arena_strdup(&c->arena, smp.uuid);
    smp.pod = gx_arena_strdup(&c->arena, smp.pod);
    if (smp.node == NULL)
        return GX_ENOMEM;
    c->s[c->n++] = smp;
    return GX_OK;
}

/*
 * Parse @body into a scratch list, then replace the utilization signal of
 * the Prometheus source in @ms. *parse_ms gets the parse+map part alone.
 * Returns the number of samples applied, or -1 on a parse error.
 */
static long
prom_round(const struct gx_config *cfg, struct gx_mstore *ms, const char *body, size_t len,
           double *parse_ms)
{
    struct collect c = {.cfg = cfg, .sig = GX_SIG_UTIL, .now_ms = 1787566530481};
    struct gx_why why = {{0}};
    double t0 = now_ms();
    long n = -1;

    gx_arena_init(&c.arena, 0);
    if (gx_prom_parse_query(body, len, cfg->max_json_depth, collect_cb, &c, &why) != GX_OK) {
        fprintf(stderr, "bench_parse: prometheus answer: %s\n", why.text);
        goto out;
    }
    *parse_ms = now_ms() - t0;
    gx_mstore_begin(ms, 1000, GX_SIG_UTIL);
    for (size_t i = 0; i < c.n; i++) {
        if (gx_mstore_put(ms, &c.s[i]) != GX_OK)
            goto out;
    }
    gx_mstore_commit(ms);
    n = (long)c.n;
out:
    free(c.s);
    gx_arena_release(&c.arena);
    return n;
}

/*
 * One 300-milli share booked on card 0 of every node of @snap, then the
 * decision for another share on the first node: with the gap counts just
 * invalidated (what a ledger change does) and with them kept. The
 * difference is the count. -1 when the decision never reached the term.
 */
static int
gap_count_ms(const struct gx_config *base, const struct gx_snapshot *snap, int64_t now, long runs,
             double *count_ms, double *kept_ms)
{
    static double t_count[MAX_RUNS], t_kept[MAX_RUNS];
    struct gx_config cfg = *base;
    struct gx_ledger *l = gx_ledger_new();
    struct gx_score_gaps *gaps = calloc(1, sizeof(*gaps));
    static struct gx_fgd_model m;
    const struct gx_fgd_shape typical = {.cpu_milli = 1000, .gpus = 1, .milli = 300};
    struct gx_podreq share = {.kind = GX_REQ_SHARED, .slices = 1, .milli = 300, .util_pct = -1};
    struct gx_decide_ctx ctx = {.cfg = &cfg, .snap = snap, .ledger = l, .now_ms = now, .fgd = &m};
    struct gx_verdict v;
    int rc = -1;

    if (l == NULL || gaps == NULL || snap->n_nodes == 0)
        goto out;
    cfg.policy = GX_POLICY_FGD;
    cfg.fgd_gap_milli = 8;
    gx_fgd_model_init(&m, 5000);
    gx_fgd_observe(&m, &typical);
    for (size_t i = 0; i < snap->n_nodes; i++) {
        const struct gx_node *n = &snap->nodes[i];
        int slots[64];
        struct gx_tenant t = {.card = 0, .slices = 1, .milli = 300, .util_pct = -1};
        size_t k;

        for (k = 0; k < n->n_cards && k < 64; k++)
            slots[k] = gx_config_card_slots(&cfg, n->product, n->replicas);
        (void)snprintf(t.uid, sizeof(t.uid), "u%zu", i);
        if (k > 0 && gx_ledger_add(l, n->name, &t, 1, slots, k) != GX_OK)
            goto out;
    }
    ctx.gaps = gaps;
    for (long r = 0; r < runs; r++) {
        double t0;

        gaps->valid = false;
        t0 = now_ms();
        gx_score_node(&ctx, &share, &snap->nodes[0], &v);
        t_count[r] = now_ms() - t0;
        if (!gaps->valid)
            goto out; /* the decision did not reach the term: nothing measured */
        t0 = now_ms();
        gx_score_node(&ctx, &share, &snap->nodes[0], &v);
        t_kept[r] = now_ms() - t0;
    }
    *count_ms = median(t_count, (size_t)runs) - median(t_kept, (size_t)runs);
    *kept_ms = median(t_kept, (size_t)runs);
    rc = 0;
out:
    free(gaps);
    gx_ledger_free(l);
    return rc;
}

int
main(int argc, char **argv)
{
    const char *cfg_path = opt(argc, argv, "--config"), *prom_path = opt(argc, argv, "--prom");
    const char *nodes_path = opt(argc, argv, "--nodes"), *page_path = opt(argc, argv, "--page");
    const char *runs_s = opt(argc, argv, "--runs");
    bool json = argc > 1 && strcmp(argv[argc - 1], "-j") == 0;
    long runs = runs_s ? strtol(runs_s, NULL, 10) : 20, series = 0;
    struct gx_config *cfg = NULL;
    struct gx_mstore *ms = NULL;
    struct gx_why why = {{0}};
    struct gx_arena na;
    struct gx_node_info *nodes = NULL;
    size_t n_nodes = 0, prom_len = 0, nodes_len = 0, page_len = 0, snap_bytes = 0;
    char *prom = NULL, *ntext = NULL, *page = NULL;
    static double t_full[MAX_RUNS], t_parse[MAX_RUNS], t_snap[MAX_RUNS], t_cooled[MAX_RUNS];
    struct gx_snapshot *prev = NULL;
    size_t cooled = 0;
    size_t heap0 = 0, heap_nodes = 0, heap_store = 0, heap_snap = 0, heap_base = 0;
    double first_full = 0, t_nodes = 0, t_page = 0, t0, pm = 0, t_gaps = 0, t_decide = 0;
    int rc = 1;

    gx_arena_init(&na, 0);
    if (cfg_path == NULL || prom_path == NULL || nodes_path == NULL || page_path == NULL ||
        runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: bench_parse --config C --prom P --nodes N --page PAGE "
                        "[--runs 1..1000] [-j]\n");
        return 2;
    }
    if (gx_config_load(cfg_path, &cfg, &why) != GX_OK) {
        fprintf(stderr, "bench_parse: %s\n", why.text);
        return 2;
    }
    prom = slurp("bench_parse", prom_path, FILE_CAP, &prom_len);
    ntext = slurp("bench_parse", nodes_path, FILE_CAP, &nodes_len);
    page = slurp("bench_parse", page_path, FILE_CAP, &page_len);
    ms = gx_mstore_new();
    if (prom == NULL || ntext == NULL || page == NULL || ms == NULL)
        goto out;

    /* Prometheus answer -> metric store: first round inserts, later ones replace */
    for (long r = 0; r < runs + 1; r++) {
        t0 = now_ms();
        series = prom_round(cfg, ms, prom, prom_len, &pm);
        if (series < 0)
            goto out;
        if (r == 0) {
            first_full = now_ms() - t0;
            continue;
        }
        t_full[r - 1] = now_ms() - t0;
        t_parse[r - 1] = pm;
    }
    gx_mstore_free(ms);
    ms = gx_mstore_new();
    if (ms == NULL)
        goto out;

    /* NodeList decode and the whole dcgm-exporter page, once each */
    free(prom);
    prom = NULL;
    heap0 = heap_in_use();
    t0 = now_ms();
    if (gx_kobj_decode_node_list(ntext, nodes_len, cfg->max_json_depth, &na, &nodes, &n_nodes, NULL,
                                 &why) != GX_OK) {
        fprintf(stderr, "bench_parse: %s: %s\n", nodes_path, why.text);
        goto out;
    }
    t_nodes = now_ms() - t0;
    heap_nodes = heap_in_use() - heap0;
    free(ntext);
    ntext = NULL;
    heap0 = heap_in_use();
    t0 = now_ms();
    if (gx_mstore_load_page(ms, cfg, 0, page, page_len, 1787566530481, &why) != GX_OK) {
        fprintf(stderr, "bench_parse: %s: %s\n", page_path, why.text);
        goto out;
    }
    t_page = now_ms() - t0;
    heap_store = heap_in_use() - heap0;
    free(page);
    page = NULL;

    heap_base = heap_in_use();
    for (long r = 0; r < runs; r++) {
        struct gx_snapshot *snap = NULL;
        t0 = now_ms();
        if (gx_snapshot_build(cfg, nodes, n_nodes, ms, 1787566531000, &snap) != GX_OK) {
            fprintf(stderr, "bench_parse: snapshot build failed\n");
            goto out;
        }
        t_snap[r] = now_ms() - t0;
        if (prev != NULL) {
            /* what a rebuild adds while pods wait: the cards that cooled (sync.c) */
            struct gx_decide_ctx b = {.cfg = cfg, .snap = prev, .now_ms = 1787566531000};
            struct gx_decide_ctx a = {.cfg = cfg, .snap = snap, .now_ms = 1787566531000};
            t0 = now_ms();
            cooled += gx_score_cards_cooled(&b, &a);
            t_cooled[r] = now_ms() - t0;
            gx_snapshot_free(prev);
        }
        prev = snap;
        snap_bytes = snap->arena.total;
        if (r == 0)
            heap_snap = heap_in_use();
        if (r == runs - 1 &&
            gap_count_ms(cfg, snap, 1787566531000, runs, &t_gaps, &t_decide) != 0) {
            fprintf(stderr, "bench_parse: the share decision did not count the gaps\n");
            goto out;
        }
    }
    gx_snapshot_free(prev);
    prev = NULL;
    if (json)
        printf("{\"series\":%ld,\"prom_bytes\":%zu,\"runs\":%ld,\"prom_first_ms\":%.2f,"
               "\"prom_parse_map_ms\":%.2f,\"prom_parse_merge_ms\":%.2f,\"nodes\":%zu,"
               "\"nodelist_bytes\":%zu,\"nodelist_decode_ms\":%.2f,\"page_bytes\":%zu,"
               "\"page_load_ms\":%.2f,\"snapshot_build_ms\":%.2f,\"snapshot_bytes\":%zu,"
               "\"heap_nodes_bytes\":%zu,\"heap_store_bytes\":%zu,\"heap_snapshot_bytes\":%zu,"
               "\"rss_end_bytes\":%zu,\"gap_count_ms\":%.3f,\"share_decision_ms\":%.4f,"
               "\"cooled_count_ms\":%.3f}\n",
               series, prom_len, runs, first_full, median(t_parse, (size_t)runs),
               median(t_full, (size_t)runs), n_nodes, nodes_len, t_nodes, page_len, t_page,
               median(t_snap, (size_t)runs), snap_bytes, heap_nodes, heap_store,
               heap_snap - heap_base, rss_bytes(), t_gaps, t_decide,
               runs > 1 ? median(t_cooled + 1, (size_t)runs - 1) : 0.0);
    else
        printf("prometheus answer: %ld series, %.1f MiB\n"
               "  parse + map (median of %ld):            %8.2f ms\n"
               "  parse + map + merge into store (median): %8.2f ms  (first, inserting: %.2f ms)\n"
               "NodeList decode, %zu nodes, %.1f MiB:       %8.2f ms\n"
               "dcgm-exporter page load, %.1f MiB:         %8.2f ms\n"
               "gx_snapshot_build, %zu nodes (median):    %8.2f ms  (arena %.1f MiB)\n"
               "heap held: decoded nodes %.1f MiB, metric store %.1f MiB, snapshot %.1f MiB\n"
               "fgd gap count, a share on every node (median): %6.3f ms  (one node's share "
               "decision: %.4f ms)\n"
               "cards that cooled between two snapshots (median): %6.3f ms\n",
               series, (double)prom_len / 1048576.0, runs, median(t_parse, (size_t)runs),
               median(t_full, (size_t)runs), first_full, n_nodes, (double)nodes_len / 1048576.0,
               t_nodes, (double)page_len / 1048576.0, t_page, n_nodes, median(t_snap, (size_t)runs),
               (double)snap_bytes / 1048576.0, (double)heap_nodes / 1048576.0,
               (double)heap_store / 1048576.0, (double)(heap_snap - heap_base) / 1048576.0, t_gaps,
               t_decide, runs > 1 ? median(t_cooled + 1, (size_t)runs - 1) : 0.0);
    rc = 0;
out:
    gx_snapshot_free(prev);
    gx_mstore_free(ms);
    gx_arena_release(&na);
    free(prom);
    free(ntext);
    free(page);
    gx_config_free(cfg);
    return rc;
}
