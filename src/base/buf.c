/* SPDX-License-Identifier: Apache-2.0 */
/* buf.c - capped growable buffer and JSON string escaping. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
gx_buf_init(struct gx_buf *b, size_t limit)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->limit = limit;
}

void
gx_buf_release(struct gx_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void
gx_buf_reset(struct gx_buf *b)
{
    b->len = 0;
    if (b->data != NULL) {
        b->data[0] = '\0';
    }
}

/* Make room for @extra more bytes plus the terminating NUL. */
static enum gx_err
buf_reserve(struct gx_buf *b, size_t extra)
{
    size_t need, ncap;
    char *p;

    if (extra > b->limit || b->len > b->limit - extra) {
        return GX_ETOOBIG;
    }
    need = b->len + extra + 1;
    if (need <= b->cap) {
        return GX_OK;
    }
    ncap = b->cap ? b->cap : 256;
    while (ncap < need) {
        ncap *= 2;
    }
    p = realloc(b->data, ncap);
    if (p == NULL) {
        return GX_ENOMEM;
    }
    b->data = p;
    b->cap = ncap;
    return GX_OK;
}

/*
 * Grow to exactly @need bytes if that is more than the capacity. Unlike
 * buf_reserve this does not round up: the caller knows the final size.
 */
enum gx_err
gx_buf_reserve(struct gx_buf *b, size_t n)
{
    size_t need;
    char *p;

    if (n > b->limit || b->len > b->limit - n) {
        return GX_ETOOBIG;
    }
    need = b->len + n + 1;
    if (need <= b->cap) {
        return GX_OK;
    }
    p = realloc(b->data, need);
    if (p == NULL) {
        return GX_ENOMEM;
    }
    if (b->data == NULL) {
        p[0] = '\0';
    }
    b->data = p;
    b->cap = need;
    return GX_OK;
}

enum gx_err
gx_buf_add(struct gx_buf *b, const void *data, size_t len)
{
    enum gx_err rc;

    /* Fast path: room is already there (a reserved buffer, or a small append). */
    if (b->cap - b->len <= len && (rc = buf_reserve(b, len)) != GX_OK) {
        return rc;
    }
    if (b->len + len > b->limit) {
        return GX_ETOOBIG;
    }
    if (len > 0) {
        memcpy(b->data + b->len, data, len);
    }
    b->len += len;
    b->data[b->len] = '\0';
    return GX_OK;
}

enum gx_err
gx_buf_adds(struct gx_buf *b, const char *s)
{
    return gx_buf_add(b, s, strlen(s));
}

enum gx_err
gx_buf_vaddf(struct gx_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    enum gx_err rc;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        return GX_EINVAL;
    }
    rc = buf_reserve(b, (size_t)n);
    if (rc != GX_OK) {
        return rc;
    }
    (void)vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return GX_OK;
}

enum gx_err
gx_buf_addf(struct gx_buf *b, const char *fmt, ...)
{
    va_list ap;
    enum gx_err rc;

    va_start(ap, fmt);
    rc = gx_buf_vaddf(b, fmt, ap);
    va_end(ap);
    return rc;
}

/* Length of the valid UTF-8 sequence at @s (at most @n bytes), 0 if invalid. */
static size_t
utf8_seq_len(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;

    if (s[0] < 0x80) {
        return 1;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2, cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3, cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4, cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return len;
}

/* The escape of byte @c (outside a valid UTF-8 sequence) into @tmp; returns its text. */
static const char *
json_escape(unsigned char c, char tmp[8], size_t *len)
{
    static const char hex[] = "0123456789abcdef";

    *len = 2;
    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '\n':
        return "\\n";
    case '\t':
        return "\\t";
    case '\r':
        return "\\r";
    default:
        break;
    }
    *len = 6;
    if (c >= 0x80) {
        return "\\ufffd";
    }
    (void)snprintf(tmp, 8, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
    return tmp;
}

/* 1 for ASCII bytes that go out as they are (not controls, '"', '\\', '<', '>', '&'). */
static const unsigned char json_plain_tab[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* True for ASCII bytes that go out as they are. */
static inline bool
json_plain(unsigned char c)
{
    return json_plain_tab[c] != 0;
}

/*
 * True when every byte of @w goes out as it is: ASCII from 0x20 up, none of
 * '"' '\\' '<' '>' '&'. Borrows of the "below 0x20" test only start at a
 * byte that is below 0x20, so a word is never wrongly called plain.
 */
static inline bool
json_word_plain(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t bad = w | ((w - ones * 0x20) & ~w);
    static const unsigned char special[] = {'"', '\\', '<', '>', '&'};

    for (size_t i = 0; i < sizeof(special); i++) {
        uint64_t x = w ^ (ones * special[i]);
        bad |= (x - ones) & ~x;
    }
    return (bad & highs) == 0;
}

/* Length of the prefix of @p that needs no escaping (8 bytes at a time). */
static inline size_t
json_plain_prefix(const unsigned char *p, size_t len)
{
    size_t i = 0;
    uint64_t w;

    while (len - i >= 8) {
        memcpy(&w, p + i, 8);
        if (!json_word_plain(w)) {
            break;
        }
        i += 8;
    }
    while (i < len && json_plain(p[i])) {
        i++;
    }
    return i;
}

enum gx_err
gx_buf_add_json_str(struct gx_buf *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i, run;
    enum gx_err rc;

    /* Most strings need no escape: reserve once for the common case. */
    if ((b->cap - b->len <= len + 2 || b->len + len + 2 > b->limit) &&
        (rc = buf_reserve(b, len + 2)) != GX_OK) {
        return rc;
    }
    i = run = json_plain_prefix(p, len);
    if (i == len) {
        char *d = b->data + b->len;
        d[0] = '"';
        memcpy(d + 1, s, len);
        d[len + 1] = '"';
        d[len + 2] = '\0';
        b->len += len + 2;
        return GX_OK;
    }
    if ((rc = gx_buf_add(b, "\"", 1)) != GX_OK) {
        return rc;
    }
    while (i < len) {
        unsigned char c = p[i];
        size_t seq, elen;
        char tmp[8];
        const char *esc;

        if (json_plain(c)) {
            run++;
            i++;
            continue;
        }
        if (c >= 0x80 && (seq = utf8_seq_len(p + i, len - i)) > 0) {
            run += seq;
            i += seq;
            continue;
        }
        if (run > 0 && (rc = gx_buf_add(b, p + i - run, run)) != GX_OK) {
            return rc;
        }
        run = 0;
        esc = json_escape(c, tmp, &elen);
        if ((rc = gx_buf_add(b, esc, elen)) != GX_OK) {
            return rc;
        }
        i++;
    }
    if (run > 0 && (rc = gx_buf_add(b, p + i - run, run)) != GX_OK) {
        return rc;
    }
    return gx_buf_add(b, "\"", 1);
}

char *
gx_buf_take(struct gx_buf *b, size_t *len)
{
    char *p = b->data;

    if (len != NULL) {
        *len = b->len;
    }
    if (p == NULL) {
        p = calloc(1, 1);
    }
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}

enum gx_err
gx_buf_add_utf8(struct gx_buf *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    enum gx_err rc;

    while (i < len) {
        size_t seq;
        uint64_t w;

        /* ASCII eight bytes at a time: the common case for Kubernetes objects. */
        if (len - i >= 8) {
            memcpy(&w, p + i, 8);
            if ((w & 0x8080808080808080ULL) == 0) {
                run += 8;
                i += 8;
                continue;
            }
        }
        if (p[i] < 0x80) {
            run++;
            i++;
            continue;
        }
        seq = utf8_seq_len(p + i, len - i);
        if (seq > 0) {
            run += seq;
            i += seq;
            continue;
        }
        if ((run > 0 && (rc = gx_buf_add(b, p + i - run, run)) != GX_OK) ||
            (rc = gx_buf_add(b, "\xef\xbf\xbd", 3)) != GX_OK) {
            return rc;
        }
        run = 0;
        i++;
    }
    return run > 0 ? gx_buf_add(b, p + i - run, run) : GX_OK;
}

void
gx_buf_put(struct gx_buf *b, enum gx_err *rc, const char *s)
{
    if (*rc == GX_OK) {
        *rc = gx_buf_adds(b, s);
    }
}

void
gx_buf_putf(struct gx_buf *b, enum gx_err *rc, const char *fmt, ...)
{
    va_list ap;

    if (*rc != GX_OK) {
        return;
    }
    va_start(ap, fmt);
    *rc = gx_buf_vaddf(b, fmt, ap);
    va_end(ap);
}

void
gx_buf_put_json_str(struct gx_buf *b, enum gx_err *rc, const char *s)
{
    if (*rc == GX_OK) {
        *rc = s != NULL ? gx_buf_add_json_str(b, s, strlen(s)) : gx_buf_adds(b, "null");
    }
}
