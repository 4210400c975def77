/* SPDX-License-Identifier: Apache-2.0 */
/* test_trace.c - openb CSV readers: columns by header, optional columns, errors naming file, line,
 * column. */
#include "gx_test.h"

#include "trace.h"

#include <string.h>

GX_SUITE(trace);

/* Parse @csv as a pod list; returns the code, fills @why. */
static enum gx_err
pods(const char *csv, struct gx_trace_pod **p, size_t *n, struct gx_why *why)
{
    return gx_trace_parse_pods(csv, strlen(csv), "pods.csv", p, n, why);
}

Test(trace, reads_node_list_by_header)
{
    size_t len = 0, n = 0;
    char *text = gx_fixture("trace/nodes.csv", &len);
    struct gx_trace_node *nodes = NULL;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_trace_parse_nodes(text, len, "nodes.csv", &nodes, &n, &why), GX_OK, "%s",
                 why.text);
    cr_assert_eq(n, 4);
    cr_assert_str_eq(nodes[1].name, "n1");
    cr_assert_eq(nodes[1].cpu_milli, 64000);
    cr_assert_eq(nodes[1].memory_mib, 262144);
    cr_assert_eq(nodes[1].gpus, 8);
    cr_assert_str_eq(nodes[1].model, "G2");
    cr_assert_eq(nodes[3].gpus, 0);
    cr_assert_str_eq(nodes[3].model, "");
    free(nodes);
    free(text);
}

Test(trace, reads_pod_list_with_crlf_and_blank_lines)
{
    size_t len = 0, n = 0;
    char *text = gx_fixture("trace/pods.csv", &len);
    struct gx_trace_pod *p = NULL;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_trace_parse_pods(text, len, "pods.csv", &p, &n, &why), GX_OK, "%s", why.text);
    cr_assert_eq(n, 3);
    cr_assert_eq(p[1].gpu_milli, 250);
    cr_assert_str_eq(p[1].gpu_spec, "V100M16|V100M32");
    cr_assert_eq(p[1].creation_s, 5);
    cr_assert_eq(p[1].deletion_s, 50);
    cr_assert_eq(gx_trace_pod_milli(&p[0]), 1000);
    cr_assert_eq(gx_trace_pod_milli(&p[1]), 250);
    cr_assert_eq(gx_trace_pod_milli(&p[2]), 0);
    free(p);
    free(text);
}

Test(trace, optional_columns_may_be_missing)
{
    struct gx_trace_pod *p = NULL;
    size_t n = 0;
    struct gx_why why = {{0}};

    cr_assert_eq(pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,2,8,1000\n", &p, &n, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(n, 1);
    cr_assert_eq(p[0].num_gpu, 8);
    cr_assert_str_eq(p[0].gpu_spec, "");
    cr_assert_eq(p[0].creation_s, -1);
    cr_assert_eq(gx_trace_pod_milli(&p[0]), 8000);
    free(p);
}

Test(trace, bad_number_names_file_line_and_column)
{
    struct gx_trace_pod *p = NULL;
    size_t n = 0;
    struct gx_why why = {{0}};

    cr_assert_eq(pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,2,1,500\nb,1,x2,1,500\n",
                      &p, &n, &why),
                 GX_EPARSE);
    cr_assert(strstr(why.text, "pods.csv:3: column memory_mib") != NULL, "%s", why.text);
    cr_assert_null(p);
}

Test(trace, out_of_range_and_inconsistent_rows_are_errors)
{
    struct gx_trace_pod *p = NULL;
    size_t n = 0;
    struct gx_why why = {{0}};

    cr_assert_eq(pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,2,1,1001\n", &p, &n, &why),
                 GX_EPARSE);
    cr_assert(strstr(why.text, "pods.csv:2: column gpu_milli") != NULL, "%s", why.text);
    cr_assert_eq(pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,2,2,500\n", &p, &n, &why),
                 GX_EPARSE);
    cr_assert(strstr(why.text, "does not fit num_gpu 2") != NULL, "%s", why.text);
    cr_assert_eq(pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,-1,2,1,5\n", &p, &n, &why),
                 GX_EPARSE);
}

Test(trace, short_row_missing_header_and_quotes_are_errors)
{
    struct gx_trace_pod *p = NULL;
    size_t n = 0;
    struct gx_why why = {{0}};

    cr_assert_eq(pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,2\n", &p, &n, &why),
                 GX_EPARSE);
    cr_assert(strstr(why.text, "pods.csv:2: column num_gpu: missing") != NULL, "%s", why.text);
    cr_assert_eq(pods("name,cpu_milli,num_gpu,gpu_milli\n", &p, &n, &why), GX_EPARSE);
    cr_assert(strstr(why.text, "header has no column memory_mib") != NULL, "%s", why.text);
    cr_assert_eq(pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\"a\",1,2,1,5\n", &p, &n, &why),
                 GX_EPARSE);
    cr_assert(strstr(why.text, "pods.csv:2: column 1: quoted") != NULL, "%s", why.text);
    cr_assert_eq(pods("", &p, &n, &why), GX_EPARSE);
}

Test(trace, spec_lists_acceptable_models)
{
    cr_assert(gx_trace_spec_accepts("", "T4"));
    cr_assert(gx_trace_spec_accepts("V100M16|V100M32", "V100M32"));
    cr_assert(gx_trace_spec_accepts("V100M16|V100M32", "V100M16"));
    cr_assert_not(gx_trace_spec_accepts("V100M16|V100M32", "V100M1"));
    cr_assert_not(gx_trace_spec_accepts("V100M16", "T4"));
}
