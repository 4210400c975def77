/* SPDX-License-Identifier: Apache-2.0 */
/* test_quantity.c - Kubernetes quantity strings: valid values, rounding, rejects. */
#include "gx_test.h"

#include "quantity.h"

GX_SUITE(quantity);

struct qty_case {
    const char *in;
    enum gx_err rc;
    int64_t value;
};

static const struct qty_case valid_cases[] = {
    {"0", GX_OK, 0},
    {"1", GX_OK, 1},
    {"+2", GX_OK, 2},
    {"-0", GX_OK, 0},
    {"007", GX_OK, 7},
    {"8", GX_OK, 8},
    {"500m", GX_OK, 1},
    {"1000m", GX_OK, 1},
    {"1001m", GX_OK, 2},
    {"2500m", GX_OK, 3},
    {"0.1", GX_OK, 1},
    {"1.", GX_OK, 1},
    {".5", GX_OK, 1},
    {"1.0", GX_OK, 1},
    {"1.50", GX_OK, 2},
    {"100n", GX_OK, 1},
    {"3u", GX_OK, 1},
    {"2k", GX_OK, 2000},
    {"1.5k", GX_OK, 1500},
    {"1.0005k", GX_OK, 1001},
    {"3M", GX_OK, 3000000},
    {"1G", GX_OK, 1000000000},
    {"1.5G", GX_OK, 1500000000},
    {"2T", GX_OK, 2000000000000},
    {"1P", GX_OK, 1000000000000000},
    {"9E", GX_OK, 9000000000000000000},
    {"1Ki", GX_OK, 1024},
    {"0.5Ki", GX_OK, 512},
    {"0.3Ki", GX_OK, 308}, /* 307.2 */
    {"6Gi", GX_OK, 6442450944},
    {"1.5Mi", GX_OK, 1572864},
    {"1Ti", GX_OK, 1099511627776},
    {"1Pi", GX_OK, 1125899906842624},
    {"7.9Ei", GX_OK, 9108079886394091111}, /* 7.9 * 2^60 = ...110.4 */
    {"1e3", GX_OK, 1000},
    {"1E3", GX_OK, 1000},
    {"1.5e3", GX_OK, 1500},
    {"1e+2", GX_OK, 100},
    {"15e-1", GX_OK, 2},
    {"1e-3", GX_OK, 1},
    {"1e-99999999", GX_OK, 1},
    {"0e99999999", GX_OK, 0},
    {"9223372036854775807", GX_OK, INT64_MAX},
    {"000000000000000000000000000000000001", GX_OK, 1},
    {"1.000000000000000000000000000000001", GX_OK, 2},
    {"263855160Ki", GX_OK, 270187683840},
};

static const struct qty_case invalid_cases[] = {
    {"", GX_EPARSE, 0},
    {" 1", GX_EPARSE, 0},
    {"1 ", GX_EPARSE, 0},
    {"1 Gi", GX_EPARSE, 0},
    {"+", GX_EPARSE, 0},
    {".", GX_EPARSE, 0},
    {"Gi", GX_EPARSE, 0},
    {"++1", GX_EPARSE, 0},
    {"+-1", GX_EPARSE, 0},
    {"--1", GX_EPARSE, 0},
    {"1..5", GX_EPARSE, 0},
    {"1.2.3", GX_EPARSE, 0},
    {"1KB", GX_EPARSE, 0},
    {"1ki", GX_EPARSE, 0},
    {"1K", GX_EPARSE, 0},
    {"1g", GX_EPARSE, 0},
    {"1Gib", GX_EPARSE, 0},
    {"1e", GX_EPARSE, 0},
    {"1e+", GX_EPARSE, 0},
    {"1e1.5", GX_EPARSE, 0},
    {"1e--1", GX_EPARSE, 0},
    {"0x10", GX_EPARSE, 0},
    {"one", GX_EPARSE, 0},
    {"-1", GX_EINVAL, 0},
    {"-500m", GX_EINVAL, 0},
    {"-1Gi", GX_EINVAL, 0},
    {"9223372036854775808", GX_ETOOBIG, 0},
    {"10E", GX_ETOOBIG, 0},
    {"8Ei", GX_ETOOBIG, 0},
    {"1e19", GX_ETOOBIG, 0},
    {"1e99999999999", GX_ETOOBIG, 0},
    {"9223372036854775807.5", GX_ETOOBIG, 0},
    {"99999999999999999999999", GX_ETOOBIG, 0},
};

Test(quantity, parses_valid_table_exactly)
{
    for (size_t i = 0; i < GX_ARRAY_LEN(valid_cases); i++) {
        int64_t v = -42;
        enum gx_err rc = gx_quantity_parse(valid_cases[i].in, &v);

        cr_assert_eq(rc, GX_OK, "\"%s\": rc %d", valid_cases[i].in, rc);
        cr_assert_eq(v, valid_cases[i].value, "\"%s\": got %lld want %lld", valid_cases[i].in,
                     (long long)v, (long long)valid_cases[i].value);
    }
}

Test(quantity, rejects_invalid_table_without_writing_output)
{
    for (size_t i = 0; i < GX_ARRAY_LEN(invalid_cases); i++) {
        int64_t v = -42;
        enum gx_err rc = gx_quantity_parse(invalid_cases[i].in, &v);

        cr_assert_eq(rc, invalid_cases[i].rc, "\"%s\": rc %d want %d", invalid_cases[i].in, rc,
                     invalid_cases[i].rc);
        cr_assert_eq(v, -42, "\"%s\": output written on error", invalid_cases[i].in);
    }
}

Test(quantity, rejects_null_and_overlong_input)
{
    char big[200];
    int64_t v = -42;

    memset(big, '1', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cr_assert_eq(gx_quantity_parse(NULL, &v), GX_EPARSE);
    cr_assert_eq(gx_quantity_parse(big, &v), GX_ETOOBIG);
    cr_assert_eq(v, -42);
}

Test(quantity, converts_bytes_to_mib_rounding_up)
{
    static const struct qty_case mib[] = {
        {"6Gi", GX_OK, 6144}, {"1G", GX_OK, 954},     {"1Mi", GX_OK, 1},
        {"1", GX_OK, 1},      {"0", GX_OK, 0},        {"1048577", GX_OK, 2},
        {"0.5Mi", GX_OK, 1},  {"24Gi", GX_OK, 24576}, {"1Ei", GX_OK, 1099511627776},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(mib); i++) {
        int64_t v = -42;

        cr_assert_eq(gx_quantity_parse_mib(mib[i].in, &v), GX_OK, "\"%s\"", mib[i].in);
        cr_assert_eq(v, mib[i].value, "\"%s\": got %lld", mib[i].in, (long long)v);
    }
}

Test(quantity, mib_conversion_propagates_errors)
{
    int64_t v = -42;

    cr_assert_eq(gx_quantity_parse_mib("6 Gi", &v), GX_EPARSE);
    cr_assert_eq(gx_quantity_parse_mib("-6Gi", &v), GX_EINVAL);
    cr_assert_eq(gx_quantity_parse_mib("16Ei", &v), GX_ETOOBIG);
    cr_assert_eq(v, -42);
}
