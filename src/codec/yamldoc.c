/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yamldoc.c - YAML stream to JSON documents (see yamldoc.h) on libyaml's document
 * loader, which resolves aliases to the anchored node: a node is written
 * once per reference, so the output cap also bounds alias bombs, and the
 * depth cap bounds a node that refers to itself.
 */
#include "yamldoc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"

struct conv {
    yaml_document_t *doc;
    struct gx_buf *out;
    int max_depth;
    struct gx_why *why;
};

/* True when @s is one of the NULL-terminated @words. */
static bool
is_word(const char *s, const char *const *words)
{
    for (; *words != NULL; words++) {
        if (strcmp(s, *words) == 0) {
            return true;
        }
    }
    return false;
}

/* A YAML 1.1 integer (sign, 0x hex, 0o or leading-0 octal, underscores); false when @s is none. */
static bool
plain_int(const char *s, long long *v)
{
    char digits[64], *end = NULL;
    size_t n = 0;
    int base = 10;
    bool neg = *s == '-';
    const char *p = s + (*s == '-' || *s == '+');

    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'o')) {
        base = p[1] == 'o' ? 8 : 16;
        p += 2;
    } else if (p[0] == '0' && p[1] != '\0') {
        base = 8;
    }
    for (; *p != '\0' && n + 1 < sizeof(digits); p++) {
        if (*p != '_') {
            digits[n++] = *p;
        }
    }
    digits[n] = '\0';
    if (*p != '\0' || n == 0 || !isxdigit((unsigned char)digits[0])) {
        return false;
    }
    errno = 0;
    *v = strtoll(digits, &end, base);
    if (neg) {
        *v = -*v;
    }
    return errno == 0 && *end == '\0';
}

/* A YAML float JSON can hold ("1.5", "-2e3", ".5") into *@v; false for .inf, .nan and the rest. */
static bool
plain_float(const char *s, double *v)
{
    const char *p = s + (*s == '-' || *s == '+');
    char *end = NULL;

    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1]))) {
        return false;
    }
    errno = 0;
    *v = strtod(s, &end);
    return errno == 0 && end != s && *end == '\0' && strpbrk(s, "xXpP") == NULL;
}

/* True when @s is a number as JSON writes it (no '+', no leading zero, digits around '.'). */
static bool
json_number(const char *s)
{
    s += *s == '-';
    if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1]))) {
        return false;
    }
    while (isdigit((unsigned char)*s)) {
        s++;
    }
    if (*s == '.') {
        if (!isdigit((unsigned char)*++s)) {
            return false;
        }
        while (isdigit((unsigned char)*s)) {
            s++;
        }
    }
    if (*s == 'e' || *s == 'E') {
        s += 1 + (s[1] == '+' || s[1] == '-');
        if (!isdigit((unsigned char)*s)) {
            return false;
        }
        while (isdigit((unsigned char)*s)) {
            s++;
        }
    }
    return *s == '\0';
}

/*
 * A scalar value: typed when plain, else a string. The loader gives every
 * untagged scalar the str tag, so an explicit tag cannot be told apart and
 * is not read.
 */
static void
put_scalar(struct conv *c, enum gx_err *rc, const yaml_node_t *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                        "on",   "On",   "ON",   "y",   "Y",   NULL};
    static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO",
                                         "off",   "Off",   "OFF",   "n",  "N",  NULL};
    const char *s = (const char *)n->data.scalar.value;
    bool plain = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    long long v;
    double f;

    if (plain && is_word(s, nulls)) {
        gx_buf_put(c->out, rc, "null");
    } else if (plain && is_word(s, trues)) {
        gx_buf_put(c->out, rc, "true");
    } else if (plain && is_word(s, falses)) {
        gx_buf_put(c->out, rc, "false");
    } else if (plain && plain_int(s, &v)) {
        gx_buf_putf(c->out, rc, "%lld", v);
    } else if (plain && plain_float(s, &f) && json_number(s)) {
        gx_buf_put(c->out, rc, s);
    } else if (plain && plain_float(s, &f)) {
        gx_buf_putf(c->out, rc, "%.17g", f);
    } else if (*rc == GX_OK) {
        *rc = gx_buf_add_json_str(c->out, s, n->data.scalar.length);
    }
}

static enum gx_err put_node(struct conv *c, int id, int depth);

static enum gx_err
put_sequence(struct conv *c, const yaml_node_t *n, int depth)
{
    enum gx_err rc = GX_OK;

    gx_buf_put(c->out, &rc, "[");
    for (yaml_node_item_t *i = n->data.sequence.items.start;
         i < n->data.sequence.items.top && rc == GX_OK; i++) {
        gx_buf_put(c->out, &rc, i == n->data.sequence.items.start ? "" : ",");
        if (rc == GX_OK) {
            rc = put_node(c, *i, depth + 1);
        }
    }
    gx_buf_put(c->out, &rc, "]");
    return rc;
}

static enum gx_err
put_mapping(struct conv *c, const yaml_node_t *n, int depth)
{
    enum gx_err rc = GX_OK;

    gx_buf_put(c->out, &rc, "{");
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top && rc == GX_OK; p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        gx_buf_put(c->out, &rc, p == n->data.mapping.pairs.start ? "" : ",");
        if (k == NULL || k->type != YAML_SCALAR_NODE) {
            gx_why_set(c->why, "line %zu column %zu: a mapping key must be a scalar",
                       k != NULL ? k->start_mark.line + 1 : 0,
                       k != NULL ? k->start_mark.column + 1 : 0);
            return GX_EPARSE;
        }
        if (rc == GX_OK) {
            rc = gx_buf_add_json_str(c->out, (const char *)k->data.scalar.value,
                                     k->data.scalar.length);
        }
        gx_buf_put(c->out, &rc, ":");
        if (rc == GX_OK) {
            rc = put_node(c, p->value, depth + 1);
        }
    }
    gx_buf_put(c->out, &rc, "}");
    return rc;
}

/* Node @id of the document as JSON; depth-capped, so a self-referring alias ends. */
static enum gx_err
put_node(struct conv *c, int id, int depth)
{
    const yaml_node_t *n = yaml_document_get_node(c->doc, id);
    enum gx_err rc = GX_OK;

    if (n == NULL) {
        gx_why_set(c->why, "a node refers to nothing");
        return GX_EPARSE;
    }
    if (depth > c->max_depth) {
        gx_why_set(c->why, "line %zu column %zu: nested deeper than %d levels",
                   n->start_mark.line + 1, n->start_mark.column + 1, c->max_depth);
        return GX_EPARSE;
    }
    switch (n->type) {
    case YAML_SCALAR_NODE:
        put_scalar(c, &rc, n);
        return rc;
    case YAML_SEQUENCE_NODE:
        return put_sequence(c, n, depth);
    case YAML_MAPPING_NODE:
        return put_mapping(c, n, depth);
    case YAML_NO_NODE:
        break;
    }
    gx_why_set(c->why, "an empty node");
    return GX_EPARSE;
}

/* Append one more document to @out (owning @json). */
static enum gx_err
docs_push(struct gx_yamldocs *out, char *json, size_t len, int line)
{
    struct gx_yamldoc *d = realloc(out->docs, (out->n + 1) * sizeof(*d));

    if (d == NULL) {
        free(json);
        return GX_ENOMEM;
    }
    out->docs = d;
    d[out->n++] = (struct gx_yamldoc){json, len, line};
    return GX_OK;
}

/* Convert the root of @doc into a new entry of @out; *@done at the end of the stream. */
static enum gx_err
convert_doc(yaml_document_t *doc, int max_depth, size_t *left, struct gx_yamldocs *out, bool *done,
            struct gx_why *why)
{
    const yaml_node_t *root = yaml_document_get_root_node(doc);
    struct gx_buf b;
    struct conv c = {doc, &b, max_depth, why};
    enum gx_err rc;
    char *json;
    size_t len = 0;

    if (root == NULL) {
        *done = true; /* the end of the stream */
        return GX_OK;
    }
    if (root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0) {
        return GX_OK; /* an empty document ("---" with nothing after it) */
    }
    gx_buf_init(&b, *left);
    rc = put_node(&c, 1, 1);
    if (rc == GX_ETOOBIG) {
        gx_why_set(why, "the documents are larger than %zu bytes as JSON", *left);
    }
    if (rc != GX_OK) {
        gx_buf_release(&b);
        return rc;
    }
    json = gx_buf_take(&b, &len);
    *left -= len;
    return json == NULL ? GX_ENOMEM : docs_push(out, json, len, (int)root->start_mark.line + 1);
}

enum gx_err
gx_yamldoc_parse(const char *text, size_t len, int max_depth, size_t cap, struct gx_yamldocs *out,
                 struct gx_why *why)
{
    yaml_parser_t p;
    enum gx_err rc = GX_OK;
    bool done = false;

    memset(out, 0, sizeof(*out));
    if (!yaml_parser_initialize(&p)) {
        return GX_ENOMEM;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    while (!done && rc == GX_OK) {
        yaml_document_t doc;
        if (!yaml_parser_load(&p, &doc)) {
            gx_why_set(why, "line %zu column %zu: %s", p.problem_mark.line + 1,
                       p.problem_mark.column + 1, p.problem != NULL ? p.problem : "bad YAML");
            rc = p.error == YAML_MEMORY_ERROR ? GX_ENOMEM : GX_EPARSE;
            break;
        }
        rc = convert_doc(&doc, max_depth, &cap, out, &done, why);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&p);
    if (rc != GX_OK) {
        gx_yamldoc_release(out);
    }
    return rc;
}

void
gx_yamldoc_release(struct gx_yamldocs *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->docs[i].json);
    }
    free(d->docs);
    d->docs = NULL;
    d->n = 0;
}

bool
gx_yamldoc_is_json(const char *text, size_t len)
{
    size_t i = 0;

    while (i < len && isspace((unsigned char)text[i])) {
        i++;
    }
    return i < len && (text[i] == '{' || text[i] == '[');
}
