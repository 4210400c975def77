/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "arena.h"
#include "common.h"
#include "gx_test.h"

GX_SUITE(common);

Test(common, why_prefix_keeps_the_reason)
{
    struct gx_why why;

    gx_why_set(&why, "must be an integer");
    gx_why_prefix(&why, "server.%s", "port");
    cr_assert_str_eq(why.text, "server.port: must be an integer");
}

Test(common, why_prefix_truncates_without_overflow)
{
    struct gx_why why;
    char longkey[400];

    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    gx_why_set(&why, "%s", longkey);
    gx_why_prefix(&why, "%s", longkey);
    cr_assert_lt(strlen(why.text), sizeof(why.text));
}

Test(common, every_error_has_a_message)
{
    for (int e = GX_EIO; e <= GX_OK; e++) {
        cr_assert_str_neq(gx_strerror((enum gx_err)e), "unknown error");
    }
}

Test(common, read_file_reports_missing_and_too_big)
{
    char *data = NULL;
    size_t len = 0;

    cr_assert_eq(gx_read_file("/nonexistent/x", 10, &data, &len), GX_ENOTFOUND);
    cr_assert_eq(gx_read_file(GX_FIXTURES "/nodelist.json", 10, &data, &len), GX_ETOOBIG);
    cr_assert_null(data);
    cr_assert_eq(gx_read_file(GX_FIXTURES "/prom-query-empty.json", 1 << 20, &data, &len), GX_OK);
    cr_assert_eq(strlen(data), len);
    free(data);
}

/* A pipe has no size until its end: read to EOF, within the cap. */
Test(common, read_file_reads_a_pipe)
{
    char *data = NULL;
    size_t len = 0;
    char path[64];
    FILE *p = popen("head -c 200000 /dev/zero | tr '\\0' x", "r");

    cr_assert_not_null(p);
    (void)snprintf(path, sizeof(path), "/dev/fd/%d", fileno(p));
    cr_assert_eq(gx_read_file(path, 1 << 20, &data, &len), GX_OK);
    cr_assert_eq(len, 200000, "read %zu bytes", len);
    cr_assert_eq(data[len - 1], 'x');
    cr_assert_eq(data[len], '\0');
    free(data);
    (void)pclose(p);
    p = popen("head -c 200000 /dev/zero", "r");
    cr_assert_not_null(p);
    (void)snprintf(path, sizeof(path), "/dev/fd/%d", fileno(p));
    data = NULL;
    cr_assert_eq(gx_read_file(path, 100000, &data, &len), GX_ETOOBIG);
    cr_assert_null(data);
    (void)pclose(p);
    /* "-" is stdin */
    cr_assert_not_null(freopen(GX_FIXTURES "/prom-query-empty.json", "rb", stdin));
    cr_assert_eq(gx_read_file("-", 1 << 20, &data, &len), GX_OK);
    cr_assert_not_null(strstr(data, "\"status\""), "%s", data);
    free(data);
}

Test(common, arena_strings_and_big_blocks)
{
    struct gx_arena a;
    char *s, *big;

    gx_arena_init(&a, 128);
    s = gx_arena_strdup(&a, "gpu-node-a");
    big = gx_arena_alloc(&a, 10000);
    cr_assert_not_null(big);
    memset(big, 'x', 10000);
    cr_assert_str_eq(s, "gpu-node-a");
    cr_assert_str_eq(gx_arena_strndup(&a, "abcdef", 3), "abc");
    cr_assert_null(gx_arena_strdup(&a, NULL));
    cr_assert_geq(a.total, 10000);
    gx_arena_release(&a);
}

/* One backoff and one jitter for every retry loop (kube streams, Prometheus, Lease CAS). */
Test(common, backoff_doubles_to_a_cap_with_bounded_jitter)
{
    int64_t d = 200, lo = INT64_MAX, hi = 0;
    uint64_t rng = 12345;
    int steps = 0;

    while (d < 30000) {
        int64_t next = gx_backoff_next(d, 200, 30000);
        cr_assert(next == d * 2 || next == 30000, "%lld -> %lld", (long long)d, (long long)next);
        d = next;
        steps++;
    }
    cr_assert_eq(steps, 8); /* 200 .. 25600, then the 30 s cap */
    cr_assert_eq(gx_backoff_next(30000, 200, 30000), 30000);
    cr_assert_eq(gx_backoff_next(0, 200, 30000), 200);
    for (int i = 0; i < 2000; i++) {
        int64_t j = gx_jitter(1000, 20, &rng);
        lo = j < lo ? j : lo;
        hi = j > hi ? j : hi;
    }
    cr_assert_geq(lo, 800);
    cr_assert_leq(hi, 1200);
    cr_assert_lt(lo, 850, "jitter spreads down (%lld)", (long long)lo);
    cr_assert_gt(hi, 1150, "jitter spreads up (%lld)", (long long)hi);
    cr_assert_eq(gx_jitter(0, 20, &rng), 0);
    cr_assert_neq(gx_rand_next(&rng), gx_rand_next(&rng));
}

/* Every byte of a key counts, whatever its length and position (the 8-byte steps and the tail). */
Test(common, hash_mem_sees_every_byte)
{
    char a[40], b[40];

    for (size_t len = 1; len <= sizeof(a); len++) {
        memset(a, 'x', len);
        cr_assert_eq(gx_hash_mem(a, len), gx_hash_mem(a, len));
        for (size_t at = 0; at < len; at++) {
            memcpy(b, a, len);
            b[at] = 'y';
            cr_assert_neq(gx_hash_mem(a, len), gx_hash_mem(b, len), "len %zu, byte %zu", len, at);
        }
        cr_assert_neq(gx_hash_mem(a, len), gx_hash_mem(a, len - 1), "len %zu", len);
    }
}
