/* SPDX-License-Identifier: Apache-2.0 */
/* test_expo.c - the text exposition parser against dcgm-exporter pages and edge cases. */
#include <math.h>
#include <string.h>

#include "expo.h"
#include "gx_test.h"

GX_SUITE(expo);

#define MAX_KEEP 256

/* Copy of one parsed sample (the parser's strings die with the callback). */
struct kept {
    char name[128];
    char keys[16][64];
    char values[16][256];
    size_t n_labels;
    double value;
    int64_t ts_ms;
};

struct collect {
    struct kept *s;    /* MAX_KEEP entries */
    size_t n;          /* samples seen (may exceed MAX_KEEP) */
    size_t stop_after; /* return GX_EIO after this many samples; 0 = never */
};

static enum gx_err
collect_cb(void *ctx, const struct gx_series *s)
{
    struct collect *c = ctx;

    if (c->n < MAX_KEEP) {
        struct kept *k = &c->s[c->n];
        (void)snprintf(k->name, sizeof(k->name), "%s", s->name);
        k->n_labels = s->n_labels;
        for (size_t i = 0; i < s->n_labels && i < 16; i++) {
            (void)snprintf(k->keys[i], sizeof(k->keys[i]), "%s", s->labels[i].key);
            (void)snprintf(k->values[i], sizeof(k->values[i]), "%s", s->labels[i].value);
        }
        k->value = s->value;
        k->ts_ms = s->ts_ms;
    }
    c->n++;
    if (c->stop_after != 0 && c->n == c->stop_after) {
        return GX_EIO;
    }
    return GX_OK;
}

static const char *
kept_label(const struct kept *k, const char *key)
{
    for (size_t i = 0; i < k->n_labels && i < 16; i++) {
        if (strcmp(k->keys[i], key) == 0) {
            return k->values[i];
        }
    }
    return NULL;
}

/* Parse @text fully into @c (which must have storage); returns the parse result. */
static enum gx_err
parse_str(const char *text, struct collect *c, struct gx_why *why)
{
    return gx_expo_parse(text, strlen(text), collect_cb, c, why);
}

static struct collect
new_collect(void)
{
    struct collect c = {.s = calloc(MAX_KEEP, sizeof(struct kept))};

    cr_assert_not_null(c.s);
    return c;
}

/* Sample lines of an exposition page: neither blank nor a '#' comment. */
static size_t
count_sample_lines(const char *text, size_t len)
{
    size_t n = 0;
    const char *p = text, *end = text + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p && *p != '#') {
            n++;
        }
        p = nl ? nl + 1 : end;
    }
    return n;
}

/* Find the sample of family @name whose label gpu equals @gpu. */
static const struct kept *
find(const struct collect *c, const char *name, const char *gpu)
{
    for (size_t i = 0; i < c->n && i < MAX_KEEP; i++) {
        const char *g = kept_label(&c->s[i], "gpu");
        if (strcmp(c->s[i].name, name) == 0 && g != NULL && strcmp(g, gpu) == 0) {
            return &c->s[i];
        }
    }
    return NULL;
}

Test(expo, parses_every_sample_of_node_a_page)
{
    size_t len;
    char *text = gx_fixture("dcgm-node-a.prom", &len);
    struct collect c = new_collect();
    struct gx_why why = {{0}};
    const struct kept *k;
    size_t families = 0;

    cr_assert_eq(gx_expo_parse(text, len, collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_assert_eq(c.n, count_sample_lines(text, len));
    cr_assert_eq(c.n, 38, "2 GPUs x 19 families");
    for (size_t i = 0; i < c.n; i++) {
        if (i == 0 || strcmp(c.s[i].name, c.s[i - 1].name) != 0) {
            families++;
        }
    }
    cr_assert_eq(families, 19);

    k = find(&c, "DCGM_FI_DEV_POWER_USAGE", "0");
    cr_assert_not_null(k);
    cr_assert_float_eq(k->value, 356.874, 1e-9);
    cr_assert_eq(k->ts_ms, 0);
    k = find(&c, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0");
    cr_assert_not_null(k);
    cr_assert_eq(k->value, 412398775160.0);
    k = find(&c, "DCGM_FI_DEV_GPU_UTIL", "0");
    cr_assert_not_null(k);
    cr_assert_eq(k->value, 87.0);
    cr_assert_str_eq(kept_label(k, "UUID"), "GPU-d2a17c4e-93b8-6f05-1c7a-5e04b9f2a6d1");
    cr_assert_str_eq(kept_label(k, "modelName"), "NVIDIA GeForce RTX 4090");
    cr_assert_str_eq(kept_label(k, "Hostname"), "gpu-node-a");
    cr_assert_str_eq(kept_label(k, "pod"), "vllm-llama3-8b-6c9d7f5b8-x2kqp");
    k = find(&c, "DCGM_FI_DEV_GPU_UTIL", "1");
    cr_assert_not_null(k);
    cr_assert_null(kept_label(k, "pod"), "idle GPU carries no pod label");
    free(c.s);
    free(text);
}

Test(expo, parses_node_b_page_with_xid_labels)
{
    size_t len;
    char *text = gx_fixture("dcgm-node-b.prom", &len);
    struct collect c = new_collect();
    struct gx_why why = {{0}};
    const struct kept *k;

    cr_assert_eq(gx_expo_parse(text, len, collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_assert_eq(c.n, count_sample_lines(text, len));
    cr_assert_eq(c.n, 8 * 19);
    k = find(&c, "DCGM_FI_DEV_XID_ERRORS", "5");
    cr_assert_not_null(k);
    cr_assert_eq(k->value, 13.0);
    cr_assert_str_eq(kept_label(k, "err_code"), "13");
    cr_assert_str_eq(kept_label(k, "err_msg"), "Graphics Engine Exception");
    cr_assert_str_eq(kept_label(k, "pod"), "jupyter-alice");
    k = find(&c, "DCGM_FI_DEV_XID_ERRORS", "4");
    cr_assert_not_null(k);
    cr_assert_str_eq(kept_label(k, "err_msg"), "No Error");
    free(c.s);
    free(text);
}

Test(expo, unescapes_backslash_quote_and_newline)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_eq(parse_str("m{a=\"x\\\\y\\\"z\\nw\",b=\"\"} 1\n", &c, &why), GX_OK, "%s", why.text);
    cr_assert_eq(c.n, 1);
    cr_assert_str_eq(kept_label(&c.s[0], "a"), "x\\y\"z\nw");
    cr_assert_str_eq(kept_label(&c.s[0], "b"), "");
    free(c.s);
}

Test(expo, keeps_unescaped_quote_inside_value)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_eq(parse_str("m{msg=\"say \"hi\" now\",b=\"c\"} 2\n"
                           "m{msg=\"end\"quote\" , z=\"1\" } 3\n"
                           "m{p=\"C:\\temp\"} 4\n",
                           &c, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(c.n, 3);
    cr_assert_str_eq(kept_label(&c.s[0], "msg"), "say \"hi\" now");
    cr_assert_str_eq(kept_label(&c.s[0], "b"), "c");
    cr_assert_str_eq(kept_label(&c.s[1], "msg"), "end\"quote");
    cr_assert_str_eq(kept_label(&c.s[1], "z"), "1");
    cr_assert_str_eq(kept_label(&c.s[2], "p"), "C:\\temp", "unknown escape kept literally");
    free(c.s);
}

Test(expo, reads_optional_timestamps)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_eq(parse_str("a 1 1787566530481\nb{x=\"y\"} 2\t-5\nc 3\n", &c, &why), GX_OK, "%s",
                 why.text);
    cr_assert_eq(c.n, 3);
    cr_assert_eq(c.s[0].ts_ms, 1787566530481LL);
    cr_assert_eq(c.s[1].ts_ms, -5);
    cr_assert_eq(c.s[1].value, 2.0);
    cr_assert_eq(c.s[2].ts_ms, 0);
    free(c.s);
}

Test(expo, accepts_nan_infinities_and_exponents)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_eq(
        parse_str("a NaN\nb +Inf\nc -Inf\nd Inf\ne 4.1239877516e+11\nf -0.5\ng 1E-3\n", &c, &why),
        GX_OK, "%s", why.text);
    cr_assert_eq(c.n, 7);
    cr_assert(isnan(c.s[0].value));
    cr_assert(isinf(c.s[1].value) && c.s[1].value > 0);
    cr_assert(isinf(c.s[2].value) && c.s[2].value < 0);
    cr_assert(isinf(c.s[3].value) && c.s[3].value > 0);
    cr_assert_eq(c.s[4].value, 412398775160.0);
    cr_assert_eq(c.s[5].value, -0.5);
    cr_assert_float_eq(c.s[6].value, 0.001, 1e-15);
    free(c.s);
}

Test(expo, skips_comments_blank_lines_and_tolerates_crlf_without_final_newline)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_eq(parse_str("# HELP a x\r\n# TYPE a gauge\r\n\r\n  \na{l=\"v\"} 1\r\nb 2", &c, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(c.n, 2);
    cr_assert_str_eq(c.s[0].name, "a");
    cr_assert_str_eq(kept_label(&c.s[0], "l"), "v");
    cr_assert_str_eq(c.s[1].name, "b");
    cr_assert_eq(c.s[1].value, 2.0);
    free(c.s);
}

Test(expo, accepts_trailing_comma_blanks_and_utf8_names)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_eq(parse_str("m{a=\"1\",} 1\n"
                           "m { a = \"1\" , b=\"2\" } 3\n"
                           "{\"my.dotted\", \"error.message\"=\"Not Found\"} 4\n"
                           "n{} 5\n",
                           &c, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(c.n, 4);
    cr_assert_eq(c.s[0].n_labels, 1);
    cr_assert_eq(c.s[1].n_labels, 2);
    cr_assert_str_eq(kept_label(&c.s[1], "b"), "2");
    cr_assert_str_eq(c.s[2].name, "my.dotted");
    cr_assert_str_eq(kept_label(&c.s[2], "error.message"), "Not Found");
    cr_assert_eq(c.s[3].n_labels, 0);
    cr_assert_eq(c.s[3].value, 5.0);
    free(c.s);
}

Test(expo, grows_scratch_for_a_long_line)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};
    size_t vlen = 20000;
    char *text = malloc(vlen + 64);
    size_t n;

    cr_assert_not_null(text);
    n = (size_t)snprintf(text, 64, "a 1\nm{v=\"");
    memset(text + n, 'x', vlen);
    n += vlen;
    memcpy(text + n, "\",w=\"ok\"} 7\n", 13);
    cr_assert_eq(gx_expo_parse(text, strlen(text), collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_assert_eq(c.n, 2);
    cr_assert_str_eq(kept_label(&c.s[1], "w"), "ok");
    cr_assert_eq(c.s[1].value, 7.0);
    free(text);
    free(c.s);
}

/* Parse @text, expect GX_EPARSE, and return the reason. */
static void
expect_error(const char *text, const char *why_prefix)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_eq(parse_str(text, &c, &why), GX_EPARSE, "input: %s", text);
    cr_assert(strncmp(why.text, why_prefix, strlen(why_prefix)) == 0, "why '%s' for '%s'", why.text,
              text);
    free(c.s);
}

Test(expo, reports_errors_with_line_numbers)
{
    expect_error("a 1\n# c\n\nb{x=\"1\" 2\n", "line 4: ");
    expect_error("m abc\n", "line 1: invalid value");
    expect_error("m\n", "line 1: missing value");
    expect_error("m 1 12x\n", "line 1: invalid timestamp");
    expect_error("m 1 2 3\n", "line 1: unexpected text after timestamp");
    expect_error("m{a=\"x} 1\n", "line 1: unterminated");
    expect_error("m{a=1} 1\n", "line 1: expected '\"'");
    expect_error("m{a} 1\n", "line 1: expected '='");
    expect_error("m{9a=\"1\"} 1\n", "line 1: invalid label name");
    expect_error("ok 1\nm-x 1\n", "line 2: invalid character in metric name");
    expect_error("{a=\"1\"} 1\n", "line 1: missing metric name");
    expect_error("m 1e999\n", "line 1: value out of range");
    expect_error("m +NaN\n", "line 1: invalid value");
    expect_error("m 0x10\n", "line 1: invalid value");
    expect_error("m 1 99999999999999999999\n", "line 1: invalid timestamp");
}

Test(expo, rejects_more_than_max_labels)
{
    char text[4096];
    size_t n = 0;
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    n += (size_t)snprintf(text + n, sizeof(text) - n, "m{");
    for (int i = 0; i <= GX_EXPO_MAX_LABELS; i++) {
        n += (size_t)snprintf(text + n, sizeof(text) - n, "l%d=\"v\",", i);
    }
    (void)snprintf(text + n, sizeof(text) - n, "} 1\n");
    cr_assert_eq(parse_str(text, &c, &why), GX_EPARSE);
    cr_assert_str_eq(why.text, "line 1: too many labels");
    cr_assert_eq(c.n, 0);
    free(c.s);
}

Test(expo, callback_error_stops_the_parse)
{
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    c.stop_after = 2;
    cr_assert_eq(parse_str("a 1\nb 2\nc 3\n", &c, &why), GX_EIO);
    cr_assert_eq(c.n, 2);
    free(c.s);
}

Test(expo, counts_every_sample_of_a_concatenated_large_page)
{
    size_t len, copies = 200, big_len;
    char *page = gx_fixture("dcgm-node-b.prom", &len);
    char *big = malloc(len * copies);
    struct collect c = new_collect();
    struct gx_why why = {{0}};

    cr_assert_not_null(big);
    for (size_t i = 0; i < copies; i++) {
        memcpy(big + i * len, page, len);
    }
    big_len = len * copies;
    cr_assert_eq(gx_expo_parse(big, big_len, collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_assert_eq(c.n, count_sample_lines(big, big_len));
    cr_assert_eq(c.n, copies * 8 * 19);
    free(big);
    free(page);
    free(c.s);
}
