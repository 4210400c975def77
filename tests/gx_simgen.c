/* SPDX-License-Identifier: Apache-2.0 */
#include "gx_simgen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

struct gx_sim_trace
gx_simgen_trace(const struct gx_simgen *g, struct gx_trace_node *nodes, struct gx_trace_pod *pods)
{
    uint32_t x = g->seed;

    for (int i = 0; i < g->n_nodes; i++) {
        struct gx_trace_node *n = &nodes[i];
        (void)snprintf(n->name, sizeof(n->name), "node-%02d", i);
        n->gpus = i % 3 == 0 ? 8 : 2;
        n->cpu_milli = n->gpus == 8 ? 96000 : 32000;
        n->memory_mib = n->gpus == 8 ? 393216 : 131072;
        (void)snprintf(n->model, sizeof(n->model), "%s", g->one_model || i % 2 ? "T4" : "G2");
    }
    for (int i = 0; i < g->n_pods; i++) {
        struct gx_trace_pod *p = &pods[i];
        int m;
        x = x * 1103515245u + 12345u;
        m = g->milli[(x >> 16) % g->n_milli];
        (void)snprintf(p->name, sizeof(p->name), "pod-%04d", i);
        p->cpu_milli = 2000 + (int64_t)((x >> 8) % 8) * 1000;
        p->memory_mib = 4096 + (int64_t)((x >> 4) % 4) * 4096;
        p->num_gpu = m == 0 ? 0 : m < 1000 ? 1 : m / 1000;
        p->gpu_milli = m == 0 ? 0 : m < 1000 ? m : 1000;
        p->creation_s = g->dur != NULL ? (int64_t)i * 100 : -1;
        p->deletion_s = g->dur != NULL ? p->creation_s + g->dur[(x >> 20) % g->n_dur] : -1;
    }
    return (struct gx_sim_trace){
        .nodes = nodes, .n_nodes = (size_t)g->n_nodes, .pods = pods, .n_pods = (size_t)g->n_pods};
}

struct gx_sim_trace
gx_simgen_mixed(struct gx_trace_node *nodes, struct gx_trace_pod *pods)
{
    static const int milli[] = {250, 500, 1000, 1000, 750, 300, 1000, 0, 500, 2000, 8000};
    const struct gx_simgen g = {.n_nodes = GX_SIMGEN_MIXED_NODES,
                                .n_pods = GX_SIMGEN_MIXED_PODS,
                                .seed = 12345,
                                .milli = milli,
                                .n_milli = GX_ARRAY_LEN(milli)};

    return gx_simgen_trace(&g, nodes, pods);
}

struct gx_config *
gx_simgen_config(const char *json)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_config_parse(json, strlen(json), NULL, &cfg, &why), GX_OK, "%s", why.text);
    return cfg;
}
