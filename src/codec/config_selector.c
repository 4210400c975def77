/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_selector.c - whether a label selector string parses as the API
 * server parses one (k8s.io/apimachinery labels.Parse): requirements
 * separated by ',', each "key", "!key", "key=value", "key==value",
 * "key!=value", "key in (v1,v2)", "key notin (v1,v2)", "key>1" or "key<1";
 * keys are qualified names ("prefix/name"), values label values. A selector
 * the API server refuses fails every list, so the config check refuses it
 * first. Pure: no I/O.
 */
#include "config_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

enum tok { T_END, T_IDENT, T_NOT, T_EQ, T_NEQ, T_LT, T_GT, T_COMMA, T_OPEN, T_CLOSE };

struct lex {
    const char *p;
    enum tok t;
    const char *s; /* the identifier */
    size_t n;
};

/* The next token of @l. */
static void
next(struct lex *l)
{
    static const char special[] = "!=,()<> \t\n";

    while (isspace((unsigned char)*l->p)) {
        l->p++;
    }
    l->s = l->p;
    l->n = 0;
    switch (*l->p) {
    case '\0':
        l->t = T_END;
        return;
    case '!':
        l->t = l->p[1] == '=' ? T_NEQ : T_NOT;
        l->p += l->t == T_NEQ ? 2 : 1;
        return;
    case '=':
        l->t = T_EQ;
        l->p += l->p[1] == '=' ? 2 : 1;
        return;
    default:
        break;
    }
    if (strchr(",()<>", *l->p) != NULL) {
        const char *at = strchr(",()<>", *l->p);
        l->t = (enum tok[]){T_COMMA, T_OPEN, T_CLOSE, T_LT, T_GT}[at - ",()<>"];
        l->p++;
        return;
    }
    l->t = T_IDENT;
    while (l->p[0] != '\0' && strchr(special, l->p[0]) == NULL) {
        l->p++;
    }
    l->n = (size_t)(l->p - l->s);
}

/* A name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, 1..63 characters. */
static bool
name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1])) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && strchr("-_.", s[i]) == NULL) {
            return false;
        }
    }
    return true;
}

/* A key: [DNS subdomain prefix, at most 253, then '/'] and a name. */
static bool
key_ok(const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n);
    size_t pn = slash != NULL ? (size_t)(slash - s) : 0;

    if (slash == NULL) {
        return name_ok(s, n);
    }
    for (size_t i = 0; i < pn; i++) {
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) &&
            strchr("-.", s[i]) == NULL) {
            return false;
        }
    }
    return pn > 0 && pn <= 253 && name_ok(s, pn) && name_ok(slash + 1, n - pn - 1);
}

/* One value of a requirement; an empty one only where allowed. */
static bool
value(struct lex *l, bool empty_ok, bool integer)
{
    if (l->t != T_IDENT) {
        return empty_ok;
    }
    for (size_t i = 0; integer && i < l->n; i++) {
        if (!isdigit((unsigned char)l->s[i]) && !(i == 0 && l->s[0] == '-' && l->n > 1)) {
            return false;
        }
    }
    if (!name_ok(l->s, l->n)) {
        return false;
    }
    next(l);
    return true;
}

/* "(v1, v2)" after in / notin. */
static bool
value_set(struct lex *l)
{
    if (l->t != T_OPEN) {
        return false;
    }
    do {
        next(l);
        if (!value(l, true, false)) {
            return false;
        }
    } while (l->t == T_COMMA);
    if (l->t != T_CLOSE) {
        return false;
    }
    next(l);
    return true;
}

/* One requirement, from its first token. */
static bool
requirement(struct lex *l)
{
    bool negated = l->t == T_NOT;

    if (negated) {
        next(l);
    }
    if (l->t != T_IDENT || !key_ok(l->s, l->n)) {
        return false;
    }
    next(l);
    if (negated || l->t == T_END || l->t == T_COMMA) {
        return l->t == T_END || l->t == T_COMMA;
    }
    if (l->t == T_EQ || l->t == T_NEQ || l->t == T_LT || l->t == T_GT) {
        bool integer = l->t == T_LT || l->t == T_GT;
        next(l);
        return value(l, !integer, integer);
    }
    if (l->t == T_IDENT && ((l->n == 2 && strncmp(l->s, "in", 2) == 0) ||
                            (l->n == 5 && strncmp(l->s, "notin", 5) == 0))) {
        next(l);
        return value_set(l);
    }
    return false;
}

enum gx_err
gx_config_check_selector(const char *key, const char *sel, struct gx_why *why)
{
    struct lex l = {sel, T_END, sel, 0};

    if (sel == NULL) {
        return GX_OK;
    }
    next(&l);
    while (l.t != T_END) {
        const char *at = l.s;
        if (!requirement(&l) || (l.t != T_END && l.t != T_COMMA)) {
            gx_why_set(why, "%s: '%s' is not a label selector (at offset %d: '%.32s')", key, sel,
                       (int)(at - sel), at);
            return GX_EINVAL;
        }
        if (l.t == T_COMMA) {
            next(&l);
            if (l.t == T_END) {
                gx_why_set(why, "%s: '%s' is not a label selector (ends with ',')", key, sel);
                return GX_EINVAL;
            }
        }
    }
    return GX_OK;
}
