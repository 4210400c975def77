/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h - the HTTP(S) server: libmicrohttpd in external epoll mode driven
 * by the libevent loop (no extra threads). It collects each request body up
 * to a cap and hands complete requests to one handler, which answers now
 * with gx_http_respond or later (the connection is suspended until then, so
 * bind can wait for the API server without blocking the loop).
 */
#ifndef GX_HTTP_H
#define GX_HTTP_H

#include "buf.h"
#include "common.h"

struct event_base;
struct gx_http;
struct gx_http_req;

/** Called once per complete request on the loop thread. */
typedef void (*gx_http_handler_cb)(void *ctx, struct gx_http_req *req);

/* Most connections open at once; more wait in the kernel's listen backlog. */
#define GX_HTTP_MAX_CONNS 2048u
/* MHD's per-connection buffer (request line, headers, body pieces), bytes. */
#define GX_HTTP_CONN_MEMORY 32768u

struct gx_http_opts {
    const char *address;  /* IPv4 or IPv6 literal */
    int port;             /* 0: pick a free port (see gx_http_port) */
    size_t max_body;      /* larger bodies: req->too_big, body dropped */
    size_t max_inflight;  /* memory budget of all requests in flight, bytes (0: none) */
    int conn_timeout_s;   /* idle/slow connections are closed after this */
    const char *tls_cert; /* PEM text or NULL for plain HTTP */
    const char *tls_key;
    const char *tls_priorities; /* GnuTLS priority string; NULL: GX_TLS_PRIORITIES */
    bool reuse_port;            /* SO_REUSEPORT: a successor can bind while this one drains */
    const char
        *busy_body; /* JSON of the 503 when the budget is spent (borrowed: outlives the server) */
};

/**
 * Start listening. On success you own *out (gx_http_free). GX_EIO with
 * @why when the address cannot be bound.
 */
enum gx_err gx_http_start(struct event_base *base, const struct gx_http_opts *opts,
                          gx_http_handler_cb cb, void *ctx, struct gx_http **out,
                          struct gx_why *why) GX_WUR;

/** Stop and free; answers nothing more. NULL is a no-op. */
void gx_http_free(struct gx_http *h);

/** The bound port. */
int gx_http_port(const struct gx_http *h);

/** Change the body cap for new requests (live config). */
void gx_http_set_max_body(struct gx_http *h, size_t max_body);

/**
 * Change the idle timeout (live config): applies to open connections and
 * to the reaper of slow requests at once.
 */
void gx_http_set_conn_timeout(struct gx_http *h, int seconds);

/**
 * Change the memory budget of requests in flight (live config). Each
 * request is charged twice its body (the body, and a reply that may echo
 * it) from its first byte until its answer is sent, plus any reply bytes
 * beyond that. A request charged more than 1/64 of the budget may only
 * use 7/8 of it (the rest stays for small calls). A request that does not
 * fit is answered 503 with Retry-After by this module, before its body is
 * read when it declares a Content-Length. 0: no budget.
 */
void gx_http_set_budget(struct gx_http *h, size_t max_inflight);

/** Counters of the server, for /metrics. */
struct gx_http_stats {
    size_t held;             /* bytes charged to requests in flight now */
    size_t held_peak;        /* the most ever charged at once */
    size_t budget;           /* the budget (0: none) */
    size_t connections;      /* connections open now */
    uint64_t refused_budget; /* requests answered 503 by the budget */
    uint64_t peer_closed;    /* connections shut down because the peer closed */
};

/** Fill @out with the current counters. */
void gx_http_get_stats(const struct gx_http *h, struct gx_http_stats *out);

/** Stop accepting connections; requests in flight continue. */
void gx_http_quiesce(struct gx_http *h);

/** Requests received and not yet answered. */
size_t gx_http_inflight(const struct gx_http *h);

/** Request accessors (borrowed until the request is answered). */
const char *gx_http_method(const struct gx_http_req *r);
const char *gx_http_path(const struct gx_http_req *r);
const char *gx_http_body(const struct gx_http_req *r, size_t *len);
const char *gx_http_header(const struct gx_http_req *r, const char *name);
const char *gx_http_query(const struct gx_http_req *r, const char *key);
bool gx_http_too_big(const struct gx_http_req *r);
uint64_t gx_http_id(const struct gx_http_req *r);
int64_t gx_http_start_ms(const struct gx_http_req *r); /* monotonic */
double gx_http_elapsed_s(const struct gx_http_req *r); /* since it began, to the microsecond */
const char *gx_http_peer(const struct gx_http_req *r); /* "ip" of the client */

/**
 * Answer @r with @status and the content of @body (taken: the buffer is
 * empty afterwards). Resumes the connection if the handler returned
 * without answering. Call exactly once per request.
 */
void gx_http_respond(struct gx_http_req *r, int status, const char *content_type,
                     struct gx_buf *body);

#endif
