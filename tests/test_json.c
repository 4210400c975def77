/* SPDX-License-Identifier: Apache-2.0 */
/* test_json.c - the validating JSON scanner. */
#include "gx_test.h"

#include "json.h"

#include <string.h>

GX_SUITE(json);

/* Skip one value of @doc and require that it spans the whole document. */
static enum gx_err
skip_all(const char *doc, int max_depth, struct gx_why *why)
{
    struct gx_json j;
    enum gx_err rc;

    gx_json_init(&j, doc, strlen(doc), max_depth, why);
    rc = gx_json_skip(&j);
    if (rc != GX_OK) {
        return rc;
    }
    if (gx_json_peek(&j) != '\0' || j.pos != j.len) {
        gx_why_set(why, "trailing data at %zu", j.pos);
        return GX_EPARSE;
    }
    return GX_OK;
}

Test(json, accepts_valid_documents)
{
    static const char *const docs[] = {
        "0",
        "-0",
        "-12.5e+3",
        "1E-7",
        "3.25",
        "true",
        "false",
        "null",
        "\"\"",
        "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"",
        "[]",
        "{}",
        " \t\r\n[ 1 , \"x\" , { \"k\" : [ null , true ] } , [ ] ] \n",
        "{\"a\":{\"b\":{\"c\":[1,2,{\"d\":\"e\"}]}},\"f\":-0.0}",
        "\"long string with no escapes that crosses several eight-byte words of input\"",
        "\"\xc3\xa9t\xc3\xa9\"",
    };
    struct gx_why why = {{0}};

    for (size_t i = 0; i < GX_ARRAY_LEN(docs); i++) {
        cr_expect_eq(skip_all(docs[i], 64, &why), GX_OK, "doc %zu (%s): %s", i, docs[i], why.text);
    }
}

Test(json, rejects_invalid_documents_with_offset)
{
    static const struct {
        const char *doc;
        const char *why;
    } bad[] = {
        {"", "offset 0: expected a value, found end of input"},
        {"01", "trailing"},
        {"+1", "offset 0: expected a value"},
        {"1.", "offset 2: expected a digit after '.'"},
        {".5", "offset 0: expected a value"},
        {"1e", "offset 2: expected a digit in the exponent"},
        {"-", "offset 1: expected a digit"},
        {"tru", "offset 0: expected true"},
        {"nul", "offset 0: expected null"},
        {"NaN", "offset 0: expected a value"},
        {"\"abc", "offset 4: expected '\"' to end the string, found end of input"},
        {"\"a\tb\"", "offset 2: expected an escaped control character"},
        {"\"\\x\"", "offset 1: expected a valid escape"},
        {"\"\\u12G4\"", "offset 1: expected four hex digits"},
        {"\"\\u12\"", "offset 1: expected four hex digits"},
        {"[1,]", "offset 3: expected a value"},
        {"[1 2]", "offset 3: expected ',' or ']'"},
        {"{\"a\":1,}", "offset 7: expected a string key"},
        {"{\"a\" 1}", "offset 5: expected ':'"},
        {"{a:1}", "offset 1: expected a string key"},
        {"{\"a\":1", "offset 6: expected ',' or '}', found end of input"},
        {"[", "offset 1: expected a value, found end of input"},
        {"[1}", "offset 2: expected ',' or ']'"},
        {"'x'", "offset 0: expected a value"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        struct gx_why why = {{0}};
        cr_expect_eq(skip_all(bad[i].doc, 64, &why), GX_EPARSE, "doc %zu (%s)", i, bad[i].doc);
        cr_expect(strstr(why.text, bad[i].why) != NULL, "doc %zu (%s): why '%s', want '%s'", i,
                  bad[i].doc, why.text, bad[i].why);
    }
}

/* A document of @depth nested arrays around a 1; the caller frees it. */
static char *
nested(int depth, char open, char close)
{
    char *s = malloc((size_t)depth * 2 + 2);

    cr_assert_not_null(s);
    for (int i = 0; i < depth; i++) {
        s[i] = open;
        s[depth + 1 + i] = close;
    }
    s[depth] = '1';
    s[2 * depth + 1] = '\0';
    return s;
}

Test(json, caps_nesting_depth)
{
    struct gx_why why = {{0}};
    char *ok = nested(64, '[', ']');
    char *deep = nested(65, '[', ']');
    char *huge = nested(100000, '[', ']');

    cr_expect_eq(skip_all(ok, 64, &why), GX_OK, "%s", why.text);
    cr_expect_eq(skip_all(deep, 64, &why), GX_ETOOBIG);
    cr_expect_str_eq(why.text, "JSON nested deeper than 64");
    /* Deeper than the scanner's own stack: still an error, never a crash. */
    cr_expect_eq(skip_all(huge, 1 << 30, &why), GX_ETOOBIG);
    free(ok);
    free(deep);
    free(huge);
}

Test(json, counts_entered_containers_towards_the_depth_cap)
{
    const char *doc = "{\"a\":[[1]]}";
    struct gx_json j;
    struct gx_why why = {{0}};
    const char *k;
    size_t kl;
    enum gx_err rc;

    gx_json_init(&j, doc, strlen(doc), 2, &why);
    cr_assert_eq(gx_json_enter_object(&j), GX_OK);
    cr_assert(gx_json_next_member(&j, &k, &kl, &rc));
    /* One level is used by the object: [[1]] needs two more. */
    cr_expect_eq(gx_json_skip(&j), GX_ETOOBIG);
    cr_expect_str_eq(why.text, "JSON nested deeper than 2");
}

Test(json, walks_objects_and_arrays)
{
    const char *doc = " { \"name\" : \"n1\", \"list\": [1, {\"x\":2}, \"s\"], \"empty\":{}, "
                      "\"none\": null } ";
    struct gx_json j;
    struct gx_why why = {{0}};
    const char *k;
    size_t kl, n = 0, klen_total = 0;
    enum gx_err rc = GX_OK;
    char keys[64] = "";

    gx_json_init(&j, doc, strlen(doc), 8, &why);
    cr_assert_eq(gx_json_enter_object(&j), GX_OK);
    while (gx_json_next_member(&j, &k, &kl, &rc)) {
        cr_assert_lt(klen_total + kl + 2, sizeof(keys));
        memcpy(keys + klen_total, k, kl);
        klen_total += kl;
        keys[klen_total++] = ',';
        keys[klen_total] = '\0';
        if (gx_json_key_is(k, kl, "list")) {
            cr_assert_eq(gx_json_enter_array(&j), GX_OK);
            while (gx_json_next_element(&j, &rc)) {
                cr_assert_eq(gx_json_skip(&j), GX_OK);
                n++;
            }
            cr_assert_eq(rc, GX_OK, "%s", why.text);
        } else if (gx_json_key_is(k, kl, "empty")) {
            cr_assert_eq(gx_json_enter_object(&j), GX_OK);
            cr_assert_not(gx_json_next_member(&j, &k, &kl, &rc));
            cr_assert_eq(rc, GX_OK);
        } else if (gx_json_key_is(k, kl, "none")) {
            cr_assert(gx_json_take_null(&j));
        } else {
            cr_assert_eq(gx_json_skip(&j), GX_OK);
        }
    }
    cr_expect_eq(rc, GX_OK, "%s", why.text);
    cr_expect_str_eq(keys, "name,list,empty,none,");
    cr_expect_eq(n, 3);
    cr_expect_eq(j.depth, 0);
    cr_expect_eq(gx_json_peek(&j), '\0');
    cr_expect_eq(j.pos, strlen(doc));
}

Test(json, next_member_reports_missing_comma)
{
    const char *doc = "{\"a\":1 \"b\":2}";
    struct gx_json j;
    struct gx_why why = {{0}};
    const char *k;
    size_t kl;
    enum gx_err rc = GX_OK;

    gx_json_init(&j, doc, strlen(doc), 8, &why);
    cr_assert_eq(gx_json_enter_object(&j), GX_OK);
    cr_assert(gx_json_next_member(&j, &k, &kl, &rc));
    cr_assert_eq(gx_json_skip(&j), GX_OK);
    cr_expect_not(gx_json_next_member(&j, &k, &kl, &rc));
    cr_expect_eq(rc, GX_EPARSE);
    cr_expect_str_eq(why.text, "offset 7: expected ',' or '}'");
}

Test(json, next_element_rejects_trailing_comma)
{
    const char *doc = "[1,]";
    struct gx_json j;
    enum gx_err rc = GX_OK;

    gx_json_init(&j, doc, strlen(doc), 8, NULL);
    cr_assert_eq(gx_json_enter_array(&j), GX_OK);
    cr_assert(gx_json_next_element(&j, &rc));
    cr_assert_eq(gx_json_skip(&j), GX_OK);
    cr_expect_not(gx_json_next_element(&j, &rc));
    cr_expect_eq(rc, GX_EPARSE);
}

Test(json, enter_object_rejects_other_values)
{
    struct gx_json j;
    struct gx_why why = {{0}};

    gx_json_init(&j, "[1]", 3, 8, &why);
    cr_expect_eq(gx_json_enter_object(&j), GX_EPARSE);
    cr_expect_str_eq(why.text, "offset 0: expected '{'");
    gx_json_init(&j, "  {}", 4, 8, &why);
    cr_expect_eq(gx_json_enter_array(&j), GX_EPARSE);
    cr_expect_str_eq(why.text, "offset 2: expected '['");
}

/* Decode the string document @doc into @a. */
static enum gx_err
decode(const char *doc, struct gx_arena *a, const char **out, size_t *n)
{
    struct gx_json j;

    gx_json_init(&j, doc, strlen(doc), 8, NULL);
    return gx_json_string(&j, a, out, n);
}

Test(json, decodes_escapes_and_surrogate_pairs)
{
    struct gx_arena a;
    const char *s = NULL;
    size_t n = 0;

    gx_arena_init(&a, 0);
    cr_assert_eq(decode("\"plain\"", &a, &s, &n), GX_OK);
    cr_expect_eq(n, 5);
    cr_expect_str_eq(s, "plain");
    cr_assert_eq(decode("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", &a, &s, &n), GX_OK);
    cr_expect_eq(n, 12);
    cr_expect_eq(memcmp(s, "a\"b\\c/d\b\f\n\r\t", 13), 0);
    /* U+00E9, U+20AC, U+1F600 (pair), Go's \u003c escapes. */
    cr_assert_eq(decode("\"\\u00e9\\u20AC\\ud83d\\ude00\\u003cx\\u003e\"", &a, &s, &n), GX_OK);
    cr_expect_str_eq(s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80<x>");
    cr_expect_eq(n, strlen(s));
    /* Embedded NUL: counted in n, ends the C string. */
    cr_assert_eq(decode("\"a\\u0000b\"", &a, &s, &n), GX_OK);
    cr_expect_eq(n, 3);
    cr_expect_eq(memcmp(s, "a\0b", 3), 0);
    gx_arena_release(&a);
}

Test(json, lone_surrogates_become_replacement_characters)
{
    struct gx_arena a;
    const char *s = NULL;
    size_t n = 0;

    gx_arena_init(&a, 0);
    cr_assert_eq(decode("\"x\\ud800y\"", &a, &s, &n), GX_OK);
    cr_expect_str_eq(s, "x\xef\xbf\xbdy");
    cr_assert_eq(decode("\"\\udc00\"", &a, &s, &n), GX_OK);
    cr_expect_str_eq(s, "\xef\xbf\xbd");
    /* High surrogate followed by a non-surrogate escape: both kept apart. */
    cr_assert_eq(decode("\"\\ud83d\\u0041\"", &a, &s, &n), GX_OK);
    cr_expect_str_eq(s, "\xef\xbf\xbd"
                        "A");
    /* High surrogate at the very end. */
    cr_assert_eq(decode("\"\\uD83D\"", &a, &s, &n), GX_OK);
    cr_expect_str_eq(s, "\xef\xbf\xbd");
    gx_arena_release(&a);
}

Test(json, string_rejects_invalid_escapes_and_non_strings)
{
    struct gx_arena a;
    const char *s = "unchanged";
    size_t n = 99;

    gx_arena_init(&a, 0);
    cr_expect_eq(decode("\"\\q\"", &a, &s, &n), GX_EPARSE);
    cr_expect_eq(decode("\"\\u00\"", &a, &s, &n), GX_EPARSE);
    cr_expect_eq(decode("42", &a, &s, &n), GX_EPARSE);
    cr_expect_eq(decode("\"open", &a, &s, &n), GX_EPARSE);
    cr_expect_str_eq(s, "unchanged");
    cr_expect_eq(n, 99);
    gx_arena_release(&a);
}

Test(json, key_is_matches_case_insensitively_and_through_escapes)
{
    cr_expect(gx_json_key_is("Pod", 3, "Pod"));
    cr_expect(gx_json_key_is("pod", 3, "Pod"));
    cr_expect(gx_json_key_is("NODENAMES", 9, "NodeNames"));
    cr_expect_not(gx_json_key_is("Pods", 4, "Pod"));
    cr_expect_not(gx_json_key_is("Po", 2, "Pod"));
    cr_expect_not(gx_json_key_is("Pox", 3, "Pod"));
    cr_expect(gx_json_key_is("\\u0050od", 8, "Pod"));
    cr_expect(gx_json_key_is("\\u0070OD", 8, "Pod"));
    cr_expect_not(gx_json_key_is("\\u0050odx", 9, "Pod"));
}

Test(json, skip_spans_are_exact)
{
    const char *doc = "[ {\"a\":[1,2]} ,\"s\\\"x\",  -1.5e3 ]";
    const char *want[] = {"{\"a\":[1,2]}", "\"s\\\"x\"", "-1.5e3"};
    struct gx_json j;
    enum gx_err rc = GX_OK;
    size_t i = 0;

    gx_json_init(&j, doc, strlen(doc), 8, NULL);
    cr_assert_eq(gx_json_enter_array(&j), GX_OK);
    while (gx_json_next_element(&j, &rc)) {
        size_t start = j.pos;
        cr_assert_eq(gx_json_skip(&j), GX_OK);
        cr_assert_lt(i, 3);
        cr_expect_eq(j.pos - start, strlen(want[i]), "element %zu", i);
        cr_expect_eq(memcmp(doc + start, want[i], strlen(want[i])), 0, "element %zu", i);
        i++;
    }
    cr_expect_eq(rc, GX_OK);
    cr_expect_eq(i, 3);
}

Test(json, take_null_only_consumes_null)
{
    struct gx_json j;

    gx_json_init(&j, " null", 5, 8, NULL);
    cr_expect(gx_json_take_null(&j));
    cr_expect_eq(j.pos, 5);
    gx_json_init(&j, "nul", 3, 8, NULL);
    cr_expect_not(gx_json_take_null(&j));
    gx_json_init(&j, "\"null\"", 6, 8, NULL);
    cr_expect_not(gx_json_take_null(&j));
    cr_expect_eq(gx_json_peek(&j), '"');
}

Test(json, skips_a_large_document)
{
    /* 20,000 objects with long strings: exercises the word-at-a-time string scan. */
    size_t cap = 20000 * 80 + 16, len = 0;
    char *doc = malloc(cap);
    struct gx_json j;
    enum gx_err rc = GX_OK;
    size_t n = 0;

    cr_assert_not_null(doc);
    doc[len++] = '[';
    for (int i = 0; i < 20000; i++) {
        len += (size_t)snprintf(doc + len, cap - len, "%s{\"name\":\"node-%05d\",\"v\":\"%s\"}",
                                i ? "," : "", i, i % 7 ? "abcdefghijklmnopq" : "a\\nb\\u00e9");
    }
    doc[len++] = ']';
    gx_json_init(&j, doc, len, 8, NULL);
    cr_assert_eq(gx_json_enter_array(&j), GX_OK);
    while (gx_json_next_element(&j, &rc)) {
        cr_assert_eq(gx_json_skip(&j), GX_OK);
        n++;
    }
    cr_expect_eq(rc, GX_OK);
    cr_expect_eq(n, 20000);
    cr_expect_eq(j.pos, len);
    free(doc);
}

Test(json, string_scan_finds_specials_at_every_offset)
{
    /* A quote, escape or control byte at each offset mod 16 and past the tail. */
    char doc[80];

    for (size_t len = 0; len < 40; len++) {
        for (size_t at = 0; at <= len; at++) {
            static const char *const ins[] = {"\\n", "\\u0041", "\x01", "\\x"};
            for (size_t k = 0; k < GX_ARRAY_LEN(ins); k++) {
                struct gx_why why = {{0}};
                size_t n = 0, il = strlen(ins[k]);
                enum gx_err want = k >= 2 ? GX_EPARSE : GX_OK;
                doc[n++] = '"';
                memset(doc + n, 'z', at);
                n += at;
                memcpy(doc + n, ins[k], il);
                n += il;
                memset(doc + n, 'z', len - at);
                n += len - at;
                doc[n++] = '"';
                doc[n] = '\0';
                cr_assert_eq(skip_all(doc, 8, &why), want, "%s", doc);
                if (want == GX_EPARSE) {
                    char off[32];
                    (void)snprintf(off, sizeof(off), "offset %zu:", at + 1);
                    cr_assert(strstr(why.text, off) != NULL, "%s: %s", doc, why.text);
                }
            }
        }
        /* Unterminated at every length. */
        {
            struct gx_why why = {{0}};
            doc[0] = '"';
            memset(doc + 1, 'z', len);
            doc[len + 1] = '\0';
            cr_assert_eq(skip_all(doc, 8, &why), GX_EPARSE);
            cr_assert(strstr(why.text, "end of input") != NULL, "%s", why.text);
        }
    }
}

Test(json, string_raw_and_unescape)
{
    struct gx_json j;
    struct gx_why why = {{0}};
    const char *raw = NULL;
    size_t n = 0;
    bool esc = true;
    char dst[32];

    gx_json_init(&j, " \"ab\\u00e9\\n\" \"plain\" 1", 23, 8, &why);
    cr_assert_eq(gx_json_string_raw(&j, &raw, &n, &esc), GX_OK);
    cr_expect_eq(n, 10);
    cr_expect(esc);
    cr_expect_eq(memcmp(raw, "ab\\u00e9\\n", 10), 0);
    cr_expect_eq(gx_json_unescape(raw, n, dst), 5);
    cr_expect_str_eq(dst, "ab\xc3\xa9\n");
    cr_assert_eq(gx_json_string_raw(&j, &raw, &n, &esc), GX_OK);
    cr_expect_eq(n, 5);
    cr_expect_not(esc);
    cr_expect_eq(memcmp(raw, "plain", 5), 0);
    cr_expect_eq(gx_json_string_raw(&j, &raw, &n, &esc), GX_EPARSE);
    cr_expect_str_eq(why.text, "offset 22: expected a string");
}

/* Walk an array with gx_json_next_string; return the names joined by '|'. */
static enum gx_err
strings_of(const char *doc, char *dst, size_t cap, size_t *count)
{
    struct gx_json j;
    struct gx_why why = {{0}};
    const char *raw;
    size_t n, o = 0;
    bool esc;
    enum gx_err rc;

    *count = 0;
    dst[0] = '\0';
    gx_json_init(&j, doc, strlen(doc), 8, &why);
    if ((rc = gx_json_enter_array(&j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_string(&j, &raw, &n, &esc, &rc)) {
        cr_assert(o + n + 2 < cap);
        if (o > 0) {
            dst[o++] = '|';
        }
        memcpy(dst + o, raw, n);
        o += n;
        dst[o] = '\0';
        (*count)++;
    }
    return rc;
}

Test(json, next_string_walks_arrays_of_strings)
{
    char got[128];
    size_t n;

    cr_expect_eq(strings_of("[]", got, sizeof(got), &n), GX_OK);
    cr_expect_eq(n, 0);
    cr_expect_eq(strings_of("[\"a\",\"bc\",\"d\\\"e\"]", got, sizeof(got), &n), GX_OK);
    cr_expect_eq(n, 3);
    cr_expect_str_eq(got, "a|bc|d\\\"e");
    cr_expect_eq(strings_of(" [ \"a\" ,\n\"b\" ] ", got, sizeof(got), &n), GX_OK);
    cr_expect_str_eq(got, "a|b");
    /* Not a string: GX_EINVAL; malformed: GX_EPARSE. */
    cr_expect_eq(strings_of("[\"a\",1]", got, sizeof(got), &n), GX_EINVAL);
    cr_expect_eq(n, 1);
    cr_expect_eq(strings_of("[null]", got, sizeof(got), &n), GX_EINVAL);
    cr_expect_eq(strings_of("[\"a\",]", got, sizeof(got), &n), GX_EPARSE);
    cr_expect_eq(strings_of("[\"a\" \"b\"]", got, sizeof(got), &n), GX_EPARSE);
    cr_expect_eq(strings_of("[\"a\\q\"]", got, sizeof(got), &n), GX_EPARSE);
    cr_expect_eq(strings_of("[\"a\"", got, sizeof(got), &n), GX_EPARSE);
    cr_expect_eq(strings_of("[\"a", got, sizeof(got), &n), GX_EPARSE);
}

Test(json, marks_nul_escapes_inside_strings_only)
{
    char text[] = "{\"a\\u0000\":\"x\\u0000y\",\"b\":\"\\\\u0000\",\"c\":\"\\u00001\"} \\u0000";

    cr_assert_eq(gx_json_mark_nul_escapes(text, strlen(text)), 3);
    cr_assert_str_eq(text, "{\"a\\uFFFF\":\"x\\uFFFFy\",\"b\":\"\\\\u0000\",\"c\":\"\\uFFFF1\"} "
                           "\\u0000");
}
