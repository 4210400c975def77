/* SPDX-License-Identifier: Apache-2.0 */
/* test_log.c - line format and the per-message rate limit, on an injected clock. */
#include "gx_test.h"

#include <string.h>

#include "log.h"

GX_SUITE(log);

static int64_t fake_now;

static int64_t
fake_clock(void)
{
    return fake_now;
}

static FILE *
capture(void)
{
    FILE *f = tmpfile();

    cr_assert_not_null(f);
    fake_now = 1000000;
    gx_log_set_clock(fake_clock);
    gx_log_set_sink(f);
    gx_log_set_level(GX_LOG_DEBUG);
    return f;
}

static void
release(FILE *f)
{
    gx_log_set_sink(NULL);
    gx_log_set_clock(NULL);
    (void)fclose(f);
}

Test(log, one_message_is_limited_and_the_rest_counted)
{
    FILE *f = capture();

    for (int i = 0; i < 1000; i++) {
        gx_warn("request rejected", "status=%d", 400);
    }
    cr_assert_eq(gx_test_lines_with(f, "msg=\"request rejected\""), GX_LOG_BURST);
    cr_assert_eq(gx_log_suppressed_total(), 1000 - GX_LOG_BURST);
    /* the window ends: the next line of that message says how many were held back */
    fake_now += GX_LOG_WINDOW_MS;
    gx_warn("request rejected", "status=%d", 400);
    cr_assert_eq(gx_test_lines_with(f, "msg=\"similar log lines suppressed\" suppressed=990 "
                                       "of=\"request rejected\""),
                 1);
    cr_assert_eq(gx_test_lines_with(f, "msg=\"request rejected\""), GX_LOG_BURST + 1);
    release(f);
}

Test(log, messages_are_limited_separately)
{
    FILE *f = capture();

    for (int i = 0; i < 50; i++) {
        gx_warn("first reason", NULL);
        gx_error("second reason", NULL);
    }
    cr_assert_eq(gx_test_lines_with(f, "first reason"), GX_LOG_BURST);
    cr_assert_eq(gx_test_lines_with(f, "second reason"), GX_LOG_BURST);
    release(f);
}

Test(log, tick_reports_suppressed_lines_after_the_window_once)
{
    FILE *f = capture();

    for (int i = 0; i < 25; i++) {
        gx_info("noisy", NULL);
    }
    gx_log_tick();
    cr_assert_eq(gx_test_lines_with(f, "similar log lines suppressed"), 0, "window not over yet");
    fake_now += GX_LOG_WINDOW_MS;
    gx_log_tick();
    gx_log_tick();
    cr_assert_eq(gx_test_lines_with(f, "suppressed=15 of=\"noisy\""), 1);
    release(f);
}

Test(log, debug_lines_are_not_limited)
{
    FILE *f = capture();

    for (int i = 0; i < 100; i++) {
        gx_debug("decision", "i=%d", i);
    }
    cr_assert_eq(gx_test_lines_with(f, "msg=\"decision\""), 100);
    release(f);
}

/* An operator's config rejections are each written, past the limit of other messages. */
Test(log, always_lines_are_not_limited)
{
    FILE *f = capture();

    for (int i = 0; i < 3 * GX_LOG_BURST; i++) {
        gx_log_always(GX_LOG_ERROR, "config rejected", "i=%d", i);
    }
    cr_assert_eq(gx_test_lines_with(f, "msg=\"config rejected\""), 3 * GX_LOG_BURST);
    cr_assert_eq(gx_test_lines_with(f, "level=error"), 3 * GX_LOG_BURST);
    release(f);
}

Test(log, quote_escapes_and_bounds)
{
    char q[16];

    cr_assert_str_eq(gx_log_quote(q, sizeof(q), "a\"b\\c\nd"), "\"a\\\"b\\\\c d\"");
    cr_assert_str_eq(gx_log_quote(q, sizeof(q), "0123456789abcdefghij"), "\"0123456789ab\"");
    /* a client-supplied pod name cannot forge a key=value */
    cr_assert_str_eq(gx_log_quote_pod(q, sizeof(q), "ml", "x node=y"), "\"ml/x node=y\"");
}
