/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.h - a growable byte buffer with a hard size cap fixed at init (curl's
 * dynbuf). Used to build HTTP replies and to collect upstream bodies. The
 * content is always NUL-terminated.
 */
#ifndef GX_BUF_H
#define GX_BUF_H

#include "common.h"

#include <stdarg.h>

struct gx_buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;   /* allocated bytes */
    size_t limit; /* appends past this many bytes fail with GX_ETOOBIG */
};

/** Initialize an empty buffer that may grow to @limit bytes. Cannot fail. */
void gx_buf_init(struct gx_buf *b, size_t limit);

/** Free the storage; the buffer is empty and reusable afterwards. */
void gx_buf_release(struct gx_buf *b);

/** Empty the buffer but keep its storage. */
void gx_buf_reset(struct gx_buf *b);

/**
 * Make room for @n more bytes (plus the NUL) in one allocation of exactly
 * that size, so that appending up to @n bytes afterwards neither reallocates
 * nor moves the data (a pointer into the buffer stays valid as a source for
 * gx_buf_add). The content is unchanged. GX_ETOOBIG when len + @n passes the
 * limit, GX_ENOMEM.
 */
enum gx_err gx_buf_reserve(struct gx_buf *b, size_t n) GX_WUR;

/** Append @len bytes; GX_ETOOBIG past the limit, GX_ENOMEM. */
enum gx_err gx_buf_add(struct gx_buf *b, const void *data, size_t len) GX_WUR;

/** Append a NUL-terminated string. */
enum gx_err gx_buf_adds(struct gx_buf *b, const char *s) GX_WUR;

/** Append formatted text. */
enum gx_err gx_buf_addf(struct gx_buf *b, const char *fmt, ...) GX_PRINTF(2, 3) GX_WUR;

/** Append formatted text from a va_list. */
enum gx_err gx_buf_vaddf(struct gx_buf *b, const char *fmt, va_list ap) GX_WUR;

/**
 * Append @len bytes of @s as a JSON string literal, quotes included. Control
 * characters, '"', '\\', and '<' '>' '&' (as Go does) are escaped; bytes of
 * invalid UTF-8 are replaced by U+FFFD so the output is always valid JSON.
 */
enum gx_err gx_buf_add_json_str(struct gx_buf *b, const char *s, size_t len) GX_WUR;

/**
 * Append @len bytes, replacing every byte that does not start a valid UTF-8
 * sequence with U+FFFD, so JSON copied from a peer stays valid UTF-8. Input
 * that is valid (the common case) is copied unchanged in one piece.
 */
enum gx_err gx_buf_add_utf8(struct gx_buf *b, const char *s, size_t len) GX_WUR;

/*
 * Sticky forms for writers that append many pieces: each does nothing once
 * *@rc holds an error and otherwise keeps the first error in it, so the
 * caller checks once at the end.
 */
void gx_buf_put(struct gx_buf *b, enum gx_err *rc, const char *s);
void gx_buf_putf(struct gx_buf *b, enum gx_err *rc, const char *fmt, ...) GX_PRINTF(3, 4);
/** @s as a JSON string literal; NULL appends null. */
void gx_buf_put_json_str(struct gx_buf *b, enum gx_err *rc, const char *s);

/** Take the storage: you now own the returned string; the buffer is empty. */
char *gx_buf_take(struct gx_buf *b, size_t *len);

#endif
