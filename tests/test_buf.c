/* SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <string.h>

#include "buf.h"
#include "gx_test.h"

GX_SUITE(buf);

Test(buf, grows_and_stays_nul_terminated)
{
    struct gx_buf b;

    gx_buf_init(&b, 1 << 20);
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(gx_buf_addf(&b, "%d,", i), GX_OK);
    }
    cr_assert_eq(strlen(b.data), b.len);
    cr_assert(strncmp(b.data, "0,1,2,", 6) == 0);
    cr_assert(strstr(b.data, "999,") != NULL);
    gx_buf_release(&b);
}

Test(buf, refuses_to_grow_past_its_limit)
{
    struct gx_buf b;

    gx_buf_init(&b, 10);
    cr_assert_eq(gx_buf_adds(&b, "0123456789"), GX_OK);
    cr_assert_eq(gx_buf_adds(&b, "x"), GX_ETOOBIG);
    cr_assert_eq(b.len, 10);
    cr_assert_str_eq(b.data, "0123456789");
    gx_buf_release(&b);
}

/* The sticky forms append until the first error, then keep it and append nothing. */
Test(buf, sticky_puts_keep_the_first_error)
{
    struct gx_buf b;
    enum gx_err rc = GX_OK;

    gx_buf_init(&b, 16);
    gx_buf_put(&b, &rc, "{\"a\":");
    gx_buf_put_json_str(&b, &rc, NULL);
    gx_buf_putf(&b, &rc, ",%d}", 7);
    cr_assert_eq(rc, GX_OK);
    cr_assert_str_eq(b.data, "{\"a\":null,7}");
    gx_buf_put_json_str(&b, &rc, "too long for the rest");
    cr_assert_eq(rc, GX_ETOOBIG);
    gx_buf_put(&b, &rc, "x");
    gx_buf_putf(&b, &rc, "%s", "y");
    cr_assert_eq(rc, GX_ETOOBIG, "the first error stays");
    cr_assert_str_eq(b.data, "{\"a\":null,7}", "nothing appended after it");
    gx_buf_release(&b);
}

/* Escaped output must always be valid JSON that decodes to the input (or U+FFFD). */
Test(buf, json_strings_escape_quotes_controls_and_html)
{
    struct gx_buf b;
    const char in[] = "a\"b\\c\n\t\x01<>&\xc3\xa9";
    cJSON *j;

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_buf_add_json_str(&b, in, sizeof(in) - 1), GX_OK);
    cr_assert_str_eq(b.data, "\"a\\\"b\\\\c\\n\\t\\u0001\\u003c\\u003e\\u0026\xc3\xa9\"");
    j = cJSON_Parse(b.data);
    cr_assert_not_null(j);
    cr_assert_str_eq(j->valuestring, in);
    cJSON_Delete(j);
    gx_buf_release(&b);
}

Test(buf, json_strings_replace_invalid_utf8)
{
    struct gx_buf b;
    const char in[] = "x\xff\xc3(y\xed\xa0\x80";

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_buf_add_json_str(&b, in, sizeof(in) - 1), GX_OK);
    cr_assert_str_eq(b.data, "\"x\\ufffd\\ufffd(y\\ufffd\\ufffd\\ufffd\"");
    gx_buf_release(&b);
}

Test(buf, take_hands_over_the_storage)
{
    struct gx_buf b;
    size_t len;
    char *s;

    gx_buf_init(&b, 100);
    cr_assert_eq(gx_buf_adds(&b, "hello"), GX_OK);
    s = gx_buf_take(&b, &len);
    cr_assert_str_eq(s, "hello");
    cr_assert_eq(len, 5);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 0);
    free(s);
}

Test(buf, reserve_allocates_once_and_keeps_pointers_valid)
{
    struct gx_buf b;
    char *before;

    gx_buf_init(&b, 100);
    cr_assert_eq(gx_buf_reserve(&b, 50), GX_OK);
    cr_assert_not_null(b.data);
    cr_expect_eq(b.cap, 51);
    cr_expect_eq(b.len, 0);
    cr_expect_str_eq(b.data, "");
    before = b.data;
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(gx_buf_add(&b, "x", 1), GX_OK);
    }
    cr_expect_eq(b.data, before, "appending within the reservation moved the data");
    cr_expect_eq(strlen(b.data), 50);
    /* A source inside the buffer stays valid once reserved. */
    cr_assert_eq(gx_buf_reserve(&b, 40), GX_OK);
    cr_assert_eq(gx_buf_add(&b, b.data, 40), GX_OK);
    cr_expect_eq(b.len, 90);
    cr_expect_eq(strspn(b.data, "x"), 90);
    /* Past the limit: refused, content unchanged; a smaller reserve is a no-op. */
    cr_expect_eq(gx_buf_reserve(&b, 11), GX_ETOOBIG);
    cr_expect_eq(gx_buf_reserve(&b, (size_t)-1), GX_ETOOBIG);
    cr_expect_eq(b.len, 90);
    cr_expect_eq(gx_buf_reserve(&b, 1), GX_OK);
    gx_buf_release(&b);
}

Test(buf, json_strings_escape_at_every_offset)
{
    static const char specials[] = {'"', '\\', '<', '>', '&', '\n', '\x01', '\x7f', '\x80'};
    static const char *const want[] = {"\\\"", "\\\\",    "\\u003c", "\\u003e", "\\u0026",
                                       "\\n",  "\\u0001", "\x7f",    "\\ufffd"};
    char in[40], exp[80];

    for (size_t s = 0; s < sizeof(specials); s++) {
        for (size_t len = 1; len <= 24; len++) {
            for (size_t at = 0; at < len; at++) {
                struct gx_buf b;
                size_t n = 0;
                memset(in, 'a', len);
                in[at] = specials[s];
                exp[n++] = '"';
                memcpy(exp + n, in, at);
                n += at;
                memcpy(exp + n, want[s], strlen(want[s]));
                n += strlen(want[s]);
                memcpy(exp + n, in + at + 1, len - at - 1);
                n += len - at - 1;
                exp[n++] = '"';
                exp[n] = '\0';
                gx_buf_init(&b, 1024);
                cr_assert_eq(gx_buf_add_json_str(&b, in, len), GX_OK);
                cr_assert_str_eq(b.data, exp, "special %zu at %zu of %zu", s, at, len);
                gx_buf_release(&b);
            }
        }
    }
}

Test(buf, json_string_fast_path_respects_the_limit)
{
    struct gx_buf b;

    gx_buf_init(&b, 12);
    cr_assert_eq(gx_buf_reserve(&b, 12), GX_OK);
    cr_expect_eq(gx_buf_add_json_str(&b, "0123456789a", 11), GX_ETOOBIG);
    cr_expect_eq(b.len, 0);
    cr_expect_eq(gx_buf_add_json_str(&b, "0123456789", 10), GX_OK);
    cr_expect_str_eq(b.data, "\"0123456789\"");
    gx_buf_release(&b);
}

/* Valid UTF-8 passes unchanged; every invalid byte becomes U+FFFD, at any offset. */
Test(buf, utf8_copy_replaces_invalid_bytes_only)
{
    struct gx_buf b;
    const char valid[] = "{\"name\":\"gpu-node-\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80-a\"}";
    char in[64], want[64];

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_buf_add_utf8(&b, valid, sizeof(valid) - 1), GX_OK);
    cr_assert_str_eq(b.data, valid);
    for (size_t at = 0; at < 20; at++) {
        memset(in, 'x', sizeof(in));
        in[at] = (char)0xff;
        memset(want, 'x', sizeof(want));
        memcpy(want + at, "\xef\xbf\xbd", 3);
        gx_buf_reset(&b);
        cr_assert_eq(gx_buf_add_utf8(&b, in, 20), GX_OK);
        cr_assert_eq(b.len, 22);
        cr_assert(memcmp(b.data, want, 22) == 0, "offset %zu", at);
    }
    gx_buf_reset(&b);
    cr_assert_eq(gx_buf_add_utf8(&b, "a\xe2\x82", 3), GX_OK);
    cr_assert_str_eq(b.data, "a\xef\xbf\xbd\xef\xbf\xbd");
    gx_buf_release(&b);
}
