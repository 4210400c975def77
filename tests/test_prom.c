/* SPDX-License-Identifier: Apache-2.0 */
/* test_prom.c - Prometheus query API response parser. */
#include "gx_test.h"

#include "buf.h"
#include "prom.h"

#include <math.h>
#include <string.h>

GX_SUITE(prom);

#define MAX_KEEP 16

/* What the callback saw, copied out (series memory dies with the callback). */
struct seen {
    char name[64];
    char host[64];
    char gpu[16];
    char uuid[64];
    char first_key[64];
    size_t n_labels;
    double value;
    int64_t ts_ms;
};

struct collect {
    struct seen s[MAX_KEEP];
    size_t n;
    double sum;
    size_t stop_after; /* 0: never stop */
};

/* Value of label @key of @s, or NULL (a local lookup keeps this test independent of kobj). */
static const char *
label(const struct gx_series *s, const char *key)
{
    for (size_t i = 0; i < s->n_labels; i++) {
        if (strcmp(s->labels[i].key, key) == 0) {
            return s->labels[i].value;
        }
    }
    return NULL;
}

/* Copy @v (may be NULL) into @dst. */
static void
copy(char *dst, size_t cap, const char *v)
{
    (void)snprintf(dst, cap, "%s", v != NULL ? v : "(null)");
}

static enum gx_err
collect_cb(void *ctx, const struct gx_series *s)
{
    struct collect *c = ctx;

    if (c->n < MAX_KEEP) {
        struct seen *o = &c->s[c->n];
        copy(o->name, sizeof(o->name), s->name);
        copy(o->host, sizeof(o->host), label(s, "Hostname"));
        copy(o->gpu, sizeof(o->gpu), label(s, "gpu"));
        copy(o->uuid, sizeof(o->uuid), label(s, "UUID"));
        copy(o->first_key, sizeof(o->first_key), s->n_labels ? s->labels[0].key : "");
        o->n_labels = s->n_labels;
        o->value = s->value;
        o->ts_ms = s->ts_ms;
        /* __name__ is never among the labels. */
        cr_assert_null(label(s, "__name__"));
    }
    c->n++;
    if (!isnan(s->value)) {
        c->sum += s->value;
    }
    if (c->stop_after != 0 && c->n == c->stop_after) {
        return GX_ECONFLICT;
    }
    return GX_OK;
}

/* Parse a NUL-terminated @body into @c. */
static enum gx_err
parse(const char *body, struct collect *c, struct gx_why *why)
{
    memset(c, 0, sizeof(*c));
    return gx_prom_parse_query(body, strlen(body), 32, collect_cb, c, why);
}

Test(prom, parses_vector_fixture)
{
    size_t len;
    char *body = gx_fixture("prom-query-util.json", &len);
    struct collect c;
    struct gx_why why = {{0}};

    memset(&c, 0, sizeof(c));
    cr_assert_eq(gx_prom_parse_query(body, len, 32, collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_expect_eq(c.n, 12);
    cr_expect_str_eq(c.s[0].name, "DCGM_FI_DEV_GPU_UTIL");
    cr_expect_str_eq(c.s[0].host, "gpu-node-a");
    cr_expect_str_eq(c.s[0].gpu, "1");
    cr_expect_str_eq(c.s[0].uuid, "GPU-5b7e0f93-2c4d-a8e1-7f36-0d9c41e8b527");
    cr_expect_eq(c.s[0].n_labels, 14);
    cr_expect_eq(c.s[0].value, 0.0);
    cr_expect_eq(c.s[0].ts_ms, 1787566530481);
    cr_expect_str_eq(c.s[1].uuid, "GPU-d2a17c4e-93b8-6f05-1c7a-5e04b9f2a6d1");
    cr_expect_eq(c.s[1].n_labels, 17);
    cr_expect_eq(c.s[1].value, 87.0);
    cr_expect_str_eq(c.s[10].host, "gpu-node-c");
    cr_expect_eq(c.s[10].value, 100.0);
    cr_expect_str_eq(c.s[11].gpu, "1");
    cr_expect_eq(c.s[11].value, 45.0);
    /* 0+87+97+99+96+98+0+12+64+0+100+45 */
    cr_expect_eq(c.sum, 698.0);
    free(body);
}

Test(prom, parses_empty_result)
{
    size_t len;
    char *body = gx_fixture("prom-query-empty.json", &len);
    struct collect c;
    struct gx_why why = {{0}};

    memset(&c, 0, sizeof(c));
    cr_expect_eq(gx_prom_parse_query(body, len, 32, collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_expect_eq(c.n, 0);
    free(body);
}

Test(prom, parses_rate_without_name_and_ignores_infos)
{
    size_t len;
    char *body = gx_fixture("prom-query-rate-energy-infos.json", &len);
    struct collect c;
    struct gx_why why = {{0}};

    memset(&c, 0, sizeof(c));
    cr_assert_eq(gx_prom_parse_query(body, len, 32, collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_expect_eq(c.n, 2);
    cr_expect_str_eq(c.s[0].name, "");
    cr_expect_str_eq(c.s[0].first_key, "DCGM_FI_DRIVER_VERSION");
    cr_expect_eq(c.s[0].value, 11318.933333333333);
    cr_expect_eq(c.s[1].value, 356902.7333333333);
    cr_expect_str_eq(c.s[1].gpu, "0");
    free(body);
}

Test(prom, matrix_uses_newest_point)
{
    size_t len;
    char *body = gx_fixture("prom-query-range-util-node-a.json", &len);
    struct collect c;
    struct gx_why why = {{0}};

    memset(&c, 0, sizeof(c));
    cr_assert_eq(gx_prom_parse_query(body, len, 32, collect_cb, &c, &why), GX_OK, "%s", why.text);
    cr_expect_eq(c.n, 2);
    cr_expect_str_eq(c.s[1].name, "DCGM_FI_DEV_GPU_UTIL");
    cr_expect_str_eq(c.s[1].gpu, "0");
    cr_expect_eq(c.s[1].value, 87.0);
    cr_expect_eq(c.s[1].ts_ms, 1787566530481);
    free(body);
}

Test(prom, matrix_newest_point_does_not_depend_on_order)
{
    struct collect c;
    struct gx_why why = {{0}};
    const char *body = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                       "{\"metric\":{\"a\":\"1\"},\"values\":[[20,\"2\"],[30,\"3\"],[10,\"1\"]]},"
                       "{\"metric\":{\"a\":\"2\"},\"values\":[]}]}}";

    cr_assert_eq(parse(body, &c, &why), GX_OK, "%s", why.text);
    /* The row with no points has no sample and is skipped. */
    cr_expect_eq(c.n, 1);
    cr_expect_eq(c.s[0].value, 3.0);
    cr_expect_eq(c.s[0].ts_ms, 30000);
}

Test(prom, status_error_is_upstream_error_with_type_and_text)
{
    struct collect c;
    struct gx_why why = {{0}};
    const char *body = "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"invalid "
                       "parameter \\\"query\\\": 1:22: parse error: unexpected end of input\"}";

    cr_expect_eq(parse(body, &c, &why), GX_EUPSTREAM);
    cr_expect_str_eq(why.text, "bad_data: invalid parameter \"query\": 1:22: parse error: "
                               "unexpected end of input");
    cr_expect_eq(c.n, 0);
}

Test(prom, status_after_data_is_honoured)
{
    struct collect c;
    struct gx_why why = {{0}};
    const char *ok = "{\"data\":{\"result\":[{\"value\":[1.5,\"7\"],\"metric\":{\"__name__\":"
                     "\"up\",\"job\":\"x\"}}],\"resultType\":\"vector\"},\"status\":\"success\"}";
    const char *err = "{\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
                      "\"value\":[1,\"7\"]}]},\"error\":\"boom\",\"status\":\"error\","
                      "\"errorType\":\"execution\"}";

    cr_assert_eq(parse(ok, &c, &why), GX_OK, "%s", why.text);
    cr_expect_eq(c.n, 1);
    cr_expect_str_eq(c.s[0].name, "up");
    cr_expect_eq(c.s[0].n_labels, 1);
    cr_expect_str_eq(c.s[0].first_key, "job");
    cr_expect_eq(c.s[0].value, 7.0);
    cr_expect_eq(c.s[0].ts_ms, 1500);
    /* An error status wins even when data came first: no callback. */
    cr_expect_eq(parse(err, &c, &why), GX_EUPSTREAM);
    cr_expect_str_eq(why.text, "execution: boom");
    cr_expect_eq(c.n, 0);
}

Test(prom, parses_special_values_and_escaped_labels)
{
    struct collect c;
    struct gx_why why = {{0}};
    const char *body = "{\"status\":\"success\",\"warnings\":[\"w\"],\"data\":{\"resultType\":"
                       "\"vector\",\"result\":["
                       "{\"metric\":{\"Hostname\":\"n\\u0031\"},\"value\":[1,\"NaN\"]},"
                       "{\"metric\":{\"Hostname\":\"a\\\"b\"},\"value\":[1,\"+Inf\"]},"
                       "{\"metric\":{\"Hostname\":\"c\"},\"value\":[1,\"-Inf\"]},"
                       "{\"metric\":{\"Hostname\":\"d\"},\"value\":[1,\"1e-07\"]}]}}";

    cr_assert_eq(parse(body, &c, &why), GX_OK, "%s", why.text);
    cr_assert_eq(c.n, 4);
    cr_expect(isnan(c.s[0].value));
    cr_expect_str_eq(c.s[0].host, "n1");
    cr_expect(isinf(c.s[1].value) && c.s[1].value > 0);
    cr_expect_str_eq(c.s[1].host, "a\"b");
    cr_expect(isinf(c.s[2].value) && c.s[2].value < 0);
    cr_expect_eq(c.s[3].value, 1e-07);
}

Test(prom, rejects_scalar_and_string_results)
{
    struct collect c;
    struct gx_why why = {{0}};

    cr_expect_eq(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\","
                       "\"result\":[1,\"2\"]}}",
                       &c, &why),
                 GX_EPARSE);
    cr_expect_str_eq(why.text, "unsupported resultType \"scalar\"");
    cr_expect_eq(parse("{\"status\":\"success\",\"data\":{\"result\":[1,\"x\"],"
                       "\"resultType\":\"string\"}}",
                       &c, &why),
                 GX_EPARSE);
    cr_expect_str_eq(why.text, "unsupported resultType \"string\"");
}

Test(prom, rejects_malformed_bodies)
{
    static const struct {
        const char *body;
        const char *why;
    } bad[] = {
        {"", "response is not a JSON object"},
        {"<html>502 Bad Gateway</html>", "response is not a JSON object"},
        {"[]", "response is not a JSON object"},
        {"{\"status\":\"success\"", "expected ',' or '}'"},
        {"{\"status\":\"success\"} x", "unexpected data after the response"},
        {"{\"data\":{\"resultType\":\"vector\",\"result\":[]}}", "status is missing"},
        {"{\"status\":\"success\"}", "data is missing"},
        {"{\"status\":\"success\",\"data\":null}", "data is missing"},
        {"{\"status\":\"pending\",\"data\":{}}", "unknown status \"pending\""},
        {"{\"status\":1}", "status must be a string"},
        {"{\"status\":\"success\",\"data\":[]}", "data must be an object"},
        {"{\"status\":\"success\",\"data\":{\"result\":[]}}", "data.resultType is missing"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\"}}", "data.result is missing"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}",
         "data.result must be an array"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[1]}}",
         "result[0]: must be an object"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "[],\"value\":[1,\"1\"]}]}}",
         "result[0]: metric must be an object"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{\"a\":1},\"value\":[1,\"1\"]}]}}",
         "result[0]: label value must be a string"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[1,1]}]}}",
         "result[0]: sample must be"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[1,\"abc\"]}]}}",
         "result[0]: sample must be"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[1,\"\"]}]}}",
         "result[0]: sample must be"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[\"1\",\"2\"]}]}}",
         "result[0]: sample must be"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[1,\"2\",3]}]}}",
         "result[0]: sample must be"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[1]}]}}",
         "result[0]: sample must be"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[1e300,\"2\"]}]}}",
         "result[0]: sample must be"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{},\"value\":[1,\" 2\"]}]}}",
         "result[0]: sample must be"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        struct collect c;
        struct gx_why why = {{0}};
        enum gx_err rc = parse(bad[i].body, &c, &why);
        cr_expect_eq(rc, GX_EPARSE, "body %zu: rc %d", i, rc);
        cr_expect(strstr(why.text, bad[i].why) != NULL, "body %zu: why '%s', want '%s'", i,
                  why.text, bad[i].why);
        cr_expect_eq(c.n, 0, "body %zu", i);
    }
}

Test(prom, stops_with_the_callback_code)
{
    size_t len;
    char *body = gx_fixture("prom-query-util.json", &len);
    struct collect c;

    memset(&c, 0, sizeof(c));
    c.stop_after = 3;
    cr_expect_eq(gx_prom_parse_query(body, len, 32, collect_cb, &c, NULL), GX_ECONFLICT);
    cr_expect_eq(c.n, 3);
    free(body);
}

Test(prom, rejects_series_with_too_many_labels)
{
    struct gx_buf b;
    struct collect c;
    struct gx_why why = {{0}};

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_buf_adds(&b, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                 "\"result\":[{\"metric\":{\"__name__\":\"m\""),
                 GX_OK);
    for (int i = 0; i < 65; i++) {
        cr_assert_eq(gx_buf_addf(&b, ",\"l%d\":\"v\"", i), GX_OK);
    }
    cr_assert_eq(gx_buf_adds(&b, "},\"value\":[1,\"1\"]}]}}"), GX_OK);
    cr_expect_eq(parse(b.data, &c, &why), GX_ETOOBIG);
    cr_expect_str_eq(why.text, "result[0]: series has more than 64 labels");
    cr_expect_eq(c.n, 0);
    gx_buf_release(&b);
}

Test(prom, caps_nesting_depth)
{
    struct collect c;
    struct gx_why why = {{0}};
    const char *body = "{\"status\":\"success\",\"extra\":[[[[1]]]],\"data\":{\"resultType\":"
                       "\"vector\",\"result\":[]}}";

    memset(&c, 0, sizeof(c));
    cr_expect_eq(gx_prom_parse_query(body, strlen(body), 4, collect_cb, &c, &why), GX_ETOOBIG);
    cr_expect_str_eq(why.text, "JSON nested deeper than 4");
}

Test(prom, parses_forty_thousand_series)
{
    struct gx_buf b;
    struct collect c;
    struct gx_why why = {{0}};
    double want = 0;

    gx_buf_init(&b, 64u << 20);
    cr_assert_eq(gx_buf_adds(&b, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                 "\"result\":["),
                 GX_OK);
    for (int i = 0; i < 40000; i++) {
        int node = i / 8, gpu = i % 8;
        cr_assert_eq(
            gx_buf_addf(&b,
                        "%s{\"metric\":{\"DCGM_FI_DRIVER_VERSION\":\"580.126.20\",\"Hostname\":"
                        "\"gpu-node-%05d\",\"UUID\":\"GPU-%08x-2c4d-a8e1-7f36-0d9c41e8b527\","
                        "\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\",\"container\":\"nvidia-dcgm-"
                        "exporter\",\"device\":\"nvidia%d\",\"endpoint\":\"gpu-metrics\","
                        "\"gpu\":\"%d\",\"instance\":\"10.244.%d.%d:9400\",\"job\":\"nvidia-"
                        "dcgm-exporter\",\"modelName\":\"NVIDIA H100 80GB HBM3\",\"namespace\":"
                        "\"gpu-operator\",\"pci_bus_id\":\"00000000:%02X:00.0\",\"pod\":"
                        "\"nvidia-dcgm-exporter-%05d\",\"service\":\"nvidia-dcgm-exporter\"},"
                        "\"value\":[1787566530.481,\"%d\"]}",
                        i ? "," : "", node, (unsigned)i, gpu, gpu, node / 250, node % 250, gpu * 16,
                        node, i % 101),
            GX_OK);
        want += i % 101;
    }
    cr_assert_eq(gx_buf_adds(&b, "]}}"), GX_OK);
    memset(&c, 0, sizeof(c));
    cr_assert_eq(gx_prom_parse_query(b.data, b.len, 32, collect_cb, &c, &why), GX_OK, "%s",
                 why.text);
    cr_expect_eq(c.n, 40000);
    cr_expect_eq(c.sum, want);
    cr_expect_str_eq(c.s[9].host, "gpu-node-00001");
    cr_expect_str_eq(c.s[9].gpu, "1");
    cr_expect_str_eq(c.s[9].uuid, "GPU-00000009-2c4d-a8e1-7f36-0d9c41e8b527");
    cr_expect_eq(c.s[9].n_labels, 14);
    gx_buf_release(&b);
}
