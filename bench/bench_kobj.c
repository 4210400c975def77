/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_kobj.c - times kobj's decoders outside the server: a NodeList (the
 * API server's first list, or sources.files.nodes), a PodList made of
 * @pods copies of one Pod (the managed-pod relist) and that one Pod alone
 * (bind's pod read, a watch event's object). Prints the median of the runs
 * (and -j: one JSON line).
 *
 *   bench_kobj --nodes NODES.json --pod POD.json [--pods 5000] [--runs 20]
 *              [--only nodes|pods|pod] [-j]
 *
 * --only times one of the three (the others print 0), for counting
 * instructions under valgrind --tool=callgrind on a loaded machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "kobj.h"

#include "bench_util.h"

#define FILE_CAP ((size_t)1 << 30)
#define MAX_RUNS 1000
#define POD_REPS 2000 /* Pod decodes per run: one is too short to time */
#define DEPTH 64

/* {"items":[POD,POD,...],"metadata":{"resourceVersion":"1"}} with @n copies. */
static char *
pod_list(const char *pod, size_t pod_len, size_t n, size_t *len)
{
    size_t cap = n * (pod_len + 1) + 64, off = 0;
    char *s = malloc(cap);

    if (s == NULL) {
        exit(2);
    }
    off += (size_t)snprintf(s, cap, "{\"items\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            s[off++] = ',';
        }
        memcpy(s + off, pod, pod_len);
        off += pod_len;
    }
    off += (size_t)snprintf(s + off, cap - off, "],\"metadata\":{\"resourceVersion\":\"1\"}}");
    *len = off;
    return s;
}

/* One timed decode of @kind (list) or of the Pod @reps times; exits on a decode error. */
static double
time_decode(const char *json, size_t len, int list_kind, int reps)
{
    struct gx_arena a;
    struct gx_why why = {{0}};
    double t0 = now_ms();

    for (int r = 0; r < reps; r++) {
        void *items = NULL;
        size_t n = 0;
        struct gx_pod pod;
        enum gx_err rc;

        gx_arena_init(&a, 0);
        rc = list_kind >= 0 ? gx_kobj_decode_list(json, len, (enum gx_kind)list_kind, DEPTH, &a,
                                                  &items, &n, NULL, &why)
                            : gx_kobj_decode_pod(json, len, DEPTH, &a, &pod, &why);
        gx_arena_release(&a);
        if (rc != GX_OK) {
            fprintf(stderr, "bench_kobj: decode failed: %s\n", why.text);
            exit(1);
        }
    }
    return (now_ms() - t0) / reps;
}

int
main(int argc, char **argv)
{
    const char *nodes_path = opt(argc, argv, "--nodes"), *pod_path = opt(argc, argv, "--pod");
    const char *runs_s = opt(argc, argv, "--runs"), *pods_s = opt(argc, argv, "--pods");
    const char *only = opt(argc, argv, "--only");
    int runs = runs_s ? atoi(runs_s) : 20;
    size_t n_pods = pods_s ? (size_t)atol(pods_s) : 5000, nodes_len, pod_len, list_len;
    bool json = argc > 1 && strcmp(argv[argc - 1], "-j") == 0;
    static double t_nodes[MAX_RUNS], t_list[MAX_RUNS], t_pod[MAX_RUNS];
    char *nodes, *pod, *list;

    if (nodes_path == NULL || pod_path == NULL || runs < 1 || runs > MAX_RUNS || n_pods < 1) {
        fprintf(stderr, "usage: bench_kobj --nodes N --pod P [--pods 5000] [--runs 20] [-j]\n");
        return 2;
    }
    nodes = slurp("bench_kobj", nodes_path, FILE_CAP, &nodes_len);
    pod = slurp("bench_kobj", pod_path, FILE_CAP, &pod_len);
    if (nodes == NULL || pod == NULL) {
        return 2;
    }
    list = pod_list(pod, pod_len, n_pods, &list_len);
    for (int r = 0; r < runs; r++) {
        bool all = only == NULL;
        t_nodes[r] =
            all || strcmp(only, "nodes") == 0 ? time_decode(nodes, nodes_len, GX_KIND_NODE, 1) : 0;
        t_list[r] =
            all || strcmp(only, "pods") == 0 ? time_decode(list, list_len, GX_KIND_POD, 1) : 0;
        t_pod[r] =
            all || strcmp(only, "pod") == 0 ? time_decode(pod, pod_len, -1, POD_REPS) * 1000.0 : 0;
    }
    if (json) {
        printf("{\"nodelist_bytes\":%zu,\"nodelist_decode_ms\":%.2f,\"pods\":%zu,"
               "\"podlist_bytes\":%zu,\"podlist_decode_ms\":%.2f,\"pod_bytes\":%zu,"
               "\"pod_decode_us\":%.2f}\n",
               nodes_len, median(t_nodes, (size_t)runs), n_pods, list_len,
               median(t_list, (size_t)runs), pod_len, median(t_pod, (size_t)runs));
    } else {
        printf("NodeList decode, %.1f MiB:               %8.2f ms\n"
               "PodList decode, %zu pods, %.1f MiB:     %8.2f ms\n"
               "Pod decode, %zu bytes:                  %8.2f us\n",
               (double)nodes_len / 1048576.0, median(t_nodes, (size_t)runs), n_pods,
               (double)list_len / 1048576.0, median(t_list, (size_t)runs), pod_len,
               median(t_pod, (size_t)runs));
    }
    free(list);
    free(pod);
    free(nodes);
    return 0;
}
