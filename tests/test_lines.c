/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "lines.h"
#include "gx_test.h"

GX_SUITE(lines);

struct collected {
    char text[4096];
    int count;
};

static enum gx_err
collect(void *ctx, const char *line, size_t len)
{
    struct collected *c = ctx;
    size_t used = strlen(c->text);

    (void)snprintf(c->text + used, sizeof(c->text) - used, "[%.*s]", (int)len, line);
    c->count++;
    return GX_OK;
}

static enum gx_err
fail_on_b(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    return len > 0 && line[0] == 'b' ? GX_EPARSE : GX_OK;
}

/* Every way of cutting the stream into reads yields the same lines. */
Test(lines, events_split_across_reads_come_out_whole)
{
    const char stream[] =
        "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\r\n\n{\"type\":\"DELETED\"}\n";
    size_t len = sizeof(stream) - 1;

    for (size_t cut1 = 0; cut1 <= len; cut1++) {
        for (size_t cut2 = cut1; cut2 <= len; cut2 += 3) {
            struct gx_lines l;
            struct collected c = {{0}, 0};
            gx_lines_init(&l, 1024);
            cr_assert_eq(gx_lines_feed(&l, stream, cut1, collect, &c), GX_OK);
            cr_assert_eq(gx_lines_feed(&l, stream + cut1, cut2 - cut1, collect, &c), GX_OK);
            cr_assert_eq(gx_lines_feed(&l, stream + cut2, len - cut2, collect, &c), GX_OK);
            cr_assert_str_eq(
                c.text, "[{\"type\":\"ADDED\"}][{\"type\":\"MODIFIED\"}][{\"type\":\"DELETED\"}]");
            cr_assert_eq(c.count, 3);
            gx_lines_release(&l);
        }
    }
}

Test(lines, a_line_over_the_cap_is_an_error)
{
    struct gx_lines l;
    struct collected c = {{0}, 0};
    char big[100];

    memset(big, 'x', sizeof(big));
    gx_lines_init(&l, 64);
    cr_assert_eq(gx_lines_feed(&l, big, 50, collect, &c), GX_OK);
    cr_assert_eq(gx_lines_feed(&l, big, 50, collect, &c), GX_ETOOBIG);
    gx_lines_reset(&l);
    cr_assert_eq(gx_lines_feed(&l, "ok\n", 3, collect, &c), GX_OK);
    cr_assert_str_eq(c.text, "[ok]");
    cr_assert_eq(gx_lines_feed(&l, big, sizeof(big), collect, &c), GX_ETOOBIG);
    gx_lines_release(&l);
}

Test(lines, callback_errors_stop_the_feed)
{
    struct gx_lines l;

    gx_lines_init(&l, 64);
    cr_assert_eq(gx_lines_feed(&l, "a\nb\nc\n", 6, fail_on_b, NULL), GX_EPARSE);
    gx_lines_release(&l);
}

Test(lines, unfinished_line_waits_for_its_end)
{
    struct gx_lines l;
    struct collected c = {{0}, 0};

    gx_lines_init(&l, 64);
    cr_assert_eq(gx_lines_feed(&l, "partial", 7, collect, &c), GX_OK);
    cr_assert_eq(c.count, 0);
    gx_lines_reset(&l);
    cr_assert_eq(gx_lines_feed(&l, "next\n", 5, collect, &c), GX_OK);
    cr_assert_str_eq(c.text, "[next]");
    gx_lines_release(&l);
}
