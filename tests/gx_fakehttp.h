/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gx_fakehttp.h - the one in-test HTTP/1.1 server: listens on 127.0.0.1:0,
 * runs a thread per connection that reads one request (headers and a
 * Content-Length body) and hands it to the test's handler on that thread;
 * the handler answers with the helpers below (Connection: close). Handlers
 * run concurrently: the test guards its own state.
 */
#ifndef GX_FAKEHTTP_H
#define GX_FAKEHTTP_H

#include <stddef.h>

struct gx_fakehttp_req {
    char method[16];
    char target[2048]; /* path and query */
    char auth[1024];   /* the Authorization header, "" when absent */
    char *body;        /* NUL-terminated, "" when none; borrowed for the call */
    size_t body_len;
};

/** Answer @r on @fd (the connection is closed after the call). */
typedef void (*gx_fakehttp_fn)(void *ctx, int fd, const struct gx_fakehttp_req *r);

struct gx_fakehttp;

/** Start serving with @fn(@ctx, ...); the test fails if the socket cannot be opened. */
struct gx_fakehttp *gx_fakehttp_start(gx_fakehttp_fn fn, void *ctx);

/** The port it listens on. */
int gx_fakehttp_port(const struct gx_fakehttp *s);

/**
 * Stop accepting and wait for every connection's handler to return (a
 * handler that blocks or streams must be told to end by the test first),
 * then free @s.
 */
void gx_fakehttp_stop(struct gx_fakehttp *s);

/** Sleep @ms milliseconds (EINTR resumed). */
void gx_fakehttp_msleep(int ms);

/** Send all of @data (a peer that went away ends it quietly). */
void gx_fakehttp_send(int fd, const char *data, size_t len);

/** A complete JSON answer with Content-Length. */
void gx_fakehttp_respond(int fd, int status, const char *body);

/** Start a chunked 200 answer (a watch); then chunks, then the end. */
void gx_fakehttp_chunk_head(int fd);
void gx_fakehttp_chunk(int fd, const char *data, size_t len);
void gx_fakehttp_chunk_end(int fd);

#endif
