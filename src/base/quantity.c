/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quantity.c - Kubernetes resource.Quantity strings parsed into integers.
 *
 * Grammar (k8s.io/apimachinery/pkg/api/resource):
 *   quantity ::= [sign] number [suffix]
 *   number   ::= digits | digits "." [digits] | "." digits
 *   suffix   ::= Ki Mi Gi Ti Pi Ei | n u m k M G T P E | (e|E) [sign] digits
 *
 * The value is computed exactly with a small decimal big number (the input
 * is capped in length), so "0.5Ki" is 512 and "7.9Ei" does not overflow on
 * the way; only the final result must fit in int64. Fractions round up.
 * No I/O, no allocation.
 */
#include "quantity.h"

#include <string.h>

/* Longest accepted input; Kubernetes objects never carry longer quantities. */
#define QTY_MAX_LEN 128
/* Decimal digits of the working number: input digits plus 2^60 (19 digits). */
#define QTY_DIGITS (QTY_MAX_LEN + 24)
/* Exponents are saturated here; anything beyond is too big or rounds to 1. */
#define QTY_EXP_CAP 100000

struct qty_suffix {
    const char *name;
    int exp10; /* decimal exponent */
    int exp2;  /* binary exponent */
};

static const struct qty_suffix qty_suffixes[] = {
    {"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/*
 * Parse the suffix starting at @s (the rest of the string) into a decimal and
 * a binary exponent. Returns false when it is not a known suffix.
 */
static bool
parse_suffix(const char *s, long *exp10, int *exp2)
{
    for (size_t i = 0; i < GX_ARRAY_LEN(qty_suffixes); i++) {
        if (strcmp(s, qty_suffixes[i].name) == 0) {
            *exp10 = qty_suffixes[i].exp10;
            *exp2 = qty_suffixes[i].exp2;
            return true;
        }
    }
    if (s[0] == 'e' || s[0] == 'E') {
        const char *p = s + 1;
        bool neg = false;
        long e = 0;

        if (*p == '+' || *p == '-') {
            neg = *p++ == '-';
        }
        if (!is_digit(*p)) {
            return false;
        }
        for (; is_digit(*p); p++) {
            if (e < QTY_EXP_CAP) {
                e = e * 10 + (*p - '0');
            }
        }
        if (*p != '\0') {
            return false;
        }
        *exp10 = neg ? -e : e;
        *exp2 = 0;
        return true;
    }
    return false;
}

/*
 * Multiply the big-endian decimal digits d[0..*n) by two in place, growing
 * the number by one digit when needed. The caller guarantees room.
 */
static void
digits_double(unsigned char *d, size_t *n)
{
    unsigned carry = 0;

    for (size_t i = *n; i-- > 0;) {
        unsigned v = (unsigned)d[i] * 2 + carry;
        d[i] = (unsigned char)(v % 10);
        carry = v / 10;
    }
    if (carry != 0) {
        memmove(d + 1, d, *n);
        d[0] = (unsigned char)carry;
        (*n)++;
    }
}

/*
 * Convert d[0..n) to an int64; false when it does not fit. Leading zeros
 * are allowed.
 */
static bool
digits_to_i64(const unsigned char *d, size_t n, int64_t *out)
{
    int64_t v = 0;

    for (size_t i = 0; i < n; i++) {
        if (v > (INT64_MAX - d[i]) / 10) {
            return false;
        }
        v = v * 10 + d[i];
    }
    *out = v;
    return true;
}

/* Parse @s exactly, times 10^@shift, and round up; see quantity.h for the result codes. */
static enum gx_err
parse_scaled(const char *s, long shift, int64_t *out)
{
    unsigned char d[QTY_DIGITS] = {0};
    size_t n = 0, frac = 0, len;
    const char *p = s;
    bool neg = false, any = false;
    long exp10 = 0;
    int exp2 = 0;
    int64_t v;

    if (s == NULL) {
        return GX_EPARSE;
    }
    len = strlen(s);
    if (len == 0) {
        return GX_EPARSE;
    }
    if (len > QTY_MAX_LEN) {
        return GX_ETOOBIG;
    }
    if (*p == '+' || *p == '-') {
        neg = *p++ == '-';
    }
    /* Integer digits; leading zeros never reach the digit buffer. */
    for (; is_digit(*p); p++) {
        any = true;
        if (n > 0 || *p != '0') {
            d[n++] = (unsigned char)(*p - '0');
        }
    }
    if (*p == '.') {
        for (p++; is_digit(*p); p++) {
            any = true;
            frac++;
            if (n > 0 || *p != '0') {
                d[n++] = (unsigned char)(*p - '0');
            }
        }
    }
    if (!any || !parse_suffix(p, &exp10, &exp2)) {
        return GX_EPARSE;
    }
    exp10 += shift;

    if (n == 0) {
        *out = 0; /* "-0" is zero too */
        return GX_OK;
    }
    if (neg) {
        return GX_EINVAL;
    }

    for (int i = 0; i < exp2; i++) {
        digits_double(d, &n);
    }
    /* Strip trailing zeros so that a remaining fraction is a real one. */
    exp10 -= (long)frac;
    while (n > 1 && d[n - 1] == 0) {
        n--;
        exp10++;
    }

    if (exp10 >= 0) {
        /* An integer: n digits followed by exp10 zeros, at most 19 digits. */
        if ((size_t)exp10 > 19 || n + (size_t)exp10 > 19) {
            return GX_ETOOBIG;
        }
        memset(d + n, 0, (size_t)exp10);
        if (!digits_to_i64(d, n + (size_t)exp10, &v)) {
            return GX_ETOOBIG;
        }
        *out = v;
        return GX_OK;
    }

    /* A fraction remains (the last digit is not zero): keep the integer part, add one. */
    if ((size_t)-exp10 >= n) {
        v = 0;
    } else if (!digits_to_i64(d, n - (size_t)-exp10, &v)) {
        return GX_ETOOBIG;
    }
    if (v == INT64_MAX) {
        return GX_ETOOBIG;
    }
    *out = v + 1;
    return GX_OK;
}

enum gx_err
gx_quantity_parse(const char *s, int64_t *out)
{
    return parse_scaled(s, 0, out);
}

enum gx_err
gx_quantity_parse_milli(const char *s, int64_t *out)
{
    return parse_scaled(s, 3, out);
}

int64_t
gx_quantity_mib_of(int64_t bytes)
{
    return bytes / ((int64_t)1024 * 1024) + (bytes % ((int64_t)1024 * 1024) != 0);
}

/* Parse a byte quantity and round it up to MiB; fails as gx_quantity_parse does. */
enum gx_err
gx_quantity_parse_mib(const char *s, int64_t *out)
{
    int64_t bytes;
    enum gx_err rc = gx_quantity_parse(s, &bytes);

    if (rc != GX_OK) {
        return rc;
    }
    /* ceil(ceil(x) / 2^20) == ceil(x / 2^20), so rounding bytes first is exact. */
    *out = gx_quantity_mib_of(bytes);
    return GX_OK;
}
