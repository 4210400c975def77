/* SPDX-License-Identifier: Apache-2.0 */
/* test_yamldoc.c - YAML streams into JSON documents (yamldoc.c). */
#include "gx_test.h"

#include "yamldoc.h"

#include <string.h>

GX_SUITE(yamldoc);

/* Convert @text; the documents in @d. */
static enum gx_err
conv(const char *text, struct gx_yamldocs *d, struct gx_why *why)
{
    return gx_yamldoc_parse(text, strlen(text), 64, 1u << 20, d, why);
}

/* The one document of @text as JSON. */
static void
expect_json(const char *text, const char *want)
{
    struct gx_yamldocs d;
    struct gx_why why = {{0}};

    cr_assert_eq(conv(text, &d, &why), GX_OK, "%s", why.text);
    cr_assert_eq(d.n, 1);
    cr_expect_str_eq(d.docs[0].json, want);
    gx_yamldoc_release(&d);
}

Test(yamldoc, plain_scalars_are_typed_and_quoted_ones_stay_strings)
{
    expect_json("a: 1\nb: \"1\"\nc: true\nd: 'yes'\ne: yes\nf: ~\ng: 1.5\nh: 6Gi\ni: 0x10\n"
                "j: 010\nk: -3\nl: .inf\nn: |\n  x\n",
                "{\"a\":1,\"b\":\"1\",\"c\":true,\"d\":\"yes\",\"e\":true,\"f\":null,\"g\":1.5,"
                "\"h\":\"6Gi\",\"i\":16,\"j\":8,\"k\":-3,\"l\":\".inf\",\"n\":\"x\\n\"}");
}

Test(yamldoc, keys_are_strings_and_sequences_nest)
{
    expect_json("1: [a, {b: 2}]\ntrue: []\n", "{\"1\":[\"a\",{\"b\":2}],\"true\":[]}");
}

Test(yamldoc, floats_json_cannot_write_are_rewritten)
{
    expect_json("[+1.5, .5, 1e3]", "[1.5,0.5,1e3]");
}

Test(yamldoc, aliases_expand_to_their_anchor)
{
    expect_json("a: &x {k: v}\nb: *x\n", "{\"a\":{\"k\":\"v\"},\"b\":{\"k\":\"v\"}}");
}

Test(yamldoc, every_document_of_a_stream_empty_ones_left_out)
{
    struct gx_yamldocs d;
    struct gx_why why = {{0}};

    cr_assert_eq(conv("---\nkind: A\n---\n---\n# only a comment\n---\nkind: B\n", &d, &why), GX_OK,
                 "%s", why.text);
    cr_assert_eq(d.n, 2);
    cr_expect_str_eq(d.docs[0].json, "{\"kind\":\"A\"}");
    cr_expect_str_eq(d.docs[1].json, "{\"kind\":\"B\"}");
    cr_expect_eq(d.docs[0].line, 2);
    cr_expect_eq(d.docs[1].line, 7);
    gx_yamldoc_release(&d);
}

Test(yamldoc, bad_yaml_says_where)
{
    struct gx_yamldocs d;
    struct gx_why why = {{0}};

    cr_assert_eq(conv("a: b\n  c: d\n", &d, &why), GX_EPARSE);
    cr_expect(strstr(why.text, "line 2") != NULL, "%s", why.text);
    cr_expect_eq(d.n, 0);
    cr_assert_eq(conv("{[a]: 1}\n", &d, &why), GX_EPARSE);
    cr_expect(strstr(why.text, "key must be a scalar") != NULL, "%s", why.text);
}

Test(yamldoc, alias_bombs_and_deep_nesting_are_refused)
{
    struct gx_yamldocs d;
    struct gx_why why = {{0}};
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e]\n"
                       "g: [*f, *f, *f, *f, *f, *f, *f, *f]\n";

    cr_expect_eq(gx_yamldoc_parse(bomb, strlen(bomb), 64, 1u << 20, &d, &why), GX_ETOOBIG);
    cr_expect(strstr(why.text, "larger than") != NULL, "%s", why.text);
    cr_expect_eq(gx_yamldoc_parse("[[[[x]]]]", 9, 3, 1024, &d, &why), GX_EPARSE);
    cr_expect(strstr(why.text, "deeper than 3") != NULL, "%s", why.text);
}

Test(yamldoc, json_text_is_told_apart)
{
    cr_expect(gx_yamldoc_is_json(" \n{\"kind\":\"Pod\"}", 16));
    cr_expect(!gx_yamldoc_is_json("kind: Pod\n", 10));
    cr_expect(!gx_yamldoc_is_json("   ", 3));
}
