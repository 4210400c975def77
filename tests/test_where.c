/* SPDX-License-Identifier: Apache-2.0 */
/* test_where.c - label requirements, where keys and what a key allows of a node. */
#include "gx_test.h"

#include "where.h"

GX_SUITE(where);

/* A node carrying @labels (sorted by key), as a snapshot keeps them. */
static struct gx_node
node_with(struct gx_kv *labels, size_t n)
{
    return (struct gx_node){.name = "n", .labels = labels, .n_labels = n, .product = ""};
}

static struct gx_config
cfg_plain(void)
{
    return (struct gx_config){0};
}

Test(where, requirements_match_as_kube_scheduler_reads_them)
{
    const char *in[] = {"a", "b"}, *ten[] = {"10"}, *bad[] = {"x"};
    struct gx_sel_expr x = {"k", GX_SEL_IN, in, 2};

    cr_assert(gx_sel_expr_matches(&x, "b"));
    cr_assert_not(gx_sel_expr_matches(&x, "c"));
    cr_assert_not(gx_sel_expr_matches(&x, NULL));
    x.op = GX_SEL_NOT_IN;
    cr_assert(gx_sel_expr_matches(&x, NULL), "NotIn holds where the label is absent");
    cr_assert_not(gx_sel_expr_matches(&x, "a"));
    x = (struct gx_sel_expr){"k", GX_SEL_GT, ten, 1};
    cr_assert(gx_sel_expr_matches(&x, "24564"));
    cr_assert_not(gx_sel_expr_matches(&x, "10"));
    cr_assert_not(gx_sel_expr_matches(&x, "ten"), "not an integer: no match");
    x.op = GX_SEL_LT;
    cr_assert(gx_sel_expr_matches(&x, "-3"));
    x.values = bad;
    cr_assert_not(gx_sel_expr_matches(&x, "3"));
    x.op = GX_SEL_INVALID;
    cr_assert_not(gx_sel_expr_matches(&x, "3"));
}

Test(where, one_rule_has_one_key_however_it_is_spelled)
{
    const char *ab[] = {"T4", "A10"}, *ba[] = {"A10", "T4", "A10"}, *mem[] = {"20000"};
    struct gx_sel_expr e1[] = {{"nvidia.com/gpu.product", GX_SEL_IN, ab, 2},
                               {"nvidia.com/gpu.memory", GX_SEL_GT, mem, 1}};
    struct gx_sel_expr e2[] = {{"nvidia.com/gpu.memory", GX_SEL_GT, mem, 1},
                               {"nvidia.com/gpu.product", GX_SEL_IN, ba, 3}};
    struct gx_sel_term t1 = {e1, 2}, t2 = {e2, 2}, none = {NULL, 0};
    struct gx_kv sel = {"nvidia.com/gpu.family", "ampere"};
    struct gx_where w1 = {.terms = &t1, .n_terms = 1}, w2 = {.terms = &t2, .n_terms = 1};
    char k1[GX_WHERE_KEY_MAX], k2[GX_WHERE_KEY_MAX];

    cr_assert(gx_where_key(&w1, k1, sizeof(k1)));
    cr_assert(gx_where_key(&w2, k2, sizeof(k2)));
    cr_assert_str_eq(k1, k2);
    cr_assert_str_eq(k1, "nvidia.com/gpu.memory gt 20000;nvidia.com/gpu.product in A10,T4");
    w1.selector = &sel;
    w1.n_selector = 1;
    cr_assert(gx_where_key(&w1, k1, sizeof(k1)));
    cr_assert_not_null(strstr(k1, "nvidia.com/gpu.family in ampere;"), "%s", k1);
    w1.terms = &none; /* matchFields only: the selector alone */
    cr_assert(gx_where_key(&w1, k1, sizeof(k1)));
    cr_assert_str_eq(k1, "nvidia.com/gpu.family in ampere");
    w1 = (struct gx_where){0};
    cr_assert(gx_where_key(&w1, k1, sizeof(k1)));
    cr_assert_str_eq(k1, "", "no rule");
    cr_assert_not(gx_where_key(&w2, k1, 20), "too long for the room: no rule kept");
    cr_assert_str_eq(k1, "");
}

Test(where, a_key_allows_the_nodes_one_of_its_terms_admits)
{
    struct gx_config cfg = cfg_plain();
    struct gx_kv l4[] = {{"nvidia.com/gpu.memory", "23034"},
                         {"nvidia.com/gpu.product", "NVIDIA-L4"}};
    struct gx_kv t4[] = {{"nvidia.com/gpu.memory", "15360"},
                         {"nvidia.com/gpu.product", "Tesla-T4"}};
    struct gx_node a = node_with(l4, 2), b = node_with(t4, 2), bare = node_with(NULL, 0);
    const char *k = "nvidia.com/gpu.memory gt 20000|nvidia.com/gpu.product in Tesla-T4,X";

    cr_assert(gx_where_key_allows(&cfg, k, &a), "the first term");
    cr_assert(gx_where_key_allows(&cfg, k, &b), "the second term");
    cr_assert_not(gx_where_key_allows(&cfg, k, &bare));
    k = "nvidia.com/gpu.product notin Tesla-T4;nvidia.com/gpu.memory exists ";
    cr_assert(gx_where_key_allows(&cfg, k, &a));
    cr_assert_not(gx_where_key_allows(&cfg, k, &b));
    cr_assert(gx_where_key_allows(&cfg, "nvidia.com/gpu.clique !exists ", &a));
    cr_assert(gx_where_key_allows(&cfg, "", &bare), "no rule: any node");
    /* a label the snapshot does not keep cannot bar a node: it is not seen */
    cr_assert(gx_where_key_allows(&cfg, "team in vision", &bare));
}

Test(where, keys_round_trip_through_what_they_allow)
{
    struct gx_config cfg = cfg_plain();
    const char *models[] = {"V100M16", "V100M32"};
    struct gx_sel_expr e = {"nvidia.com/gpu.product", GX_SEL_IN, models, 2};
    struct gx_sel_term t = {&e, 1};
    struct gx_where w = {.terms = &t, .n_terms = 1};
    struct gx_kv v32[] = {{"nvidia.com/gpu.product", "V100M32"}};
    struct gx_kv p100[] = {{"nvidia.com/gpu.product", "P100"}};
    struct gx_node a = node_with(v32, 1), b = node_with(p100, 1);
    char k[GX_WHERE_KEY_MAX];

    cr_assert(gx_where_key(&w, k, sizeof(k)));
    cr_assert(gx_where_key_allows(&cfg, k, &a));
    cr_assert_not(gx_where_key_allows(&cfg, k, &b));
}

/* Exists carries no values (and no array): its key has none either. */
Test(where, a_requirement_without_values_has_a_key)
{
    struct gx_sel_expr e = {"nvidia.com/gpu.memory", GX_SEL_EXISTS, NULL, 0};
    struct gx_sel_term t = {&e, 1};
    struct gx_where w = {.terms = &t, .n_terms = 1};
    char k[GX_WHERE_KEY_MAX];

    cr_assert(gx_where_key(&w, k, sizeof(k)));
    cr_assert_str_eq(k, "nvidia.com/gpu.memory exists ");
}
