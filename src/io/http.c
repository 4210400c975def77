/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c - libmicrohttpd in external epoll mode on the libevent loop.
 * MHD's epoll fd is watched by one persistent read event; MHD's own timeout
 * (idle connections) by one timer, re-armed after every MHD_run. Requests
 * are buffered up to a cap; a request whose handler did not answer at once
 * is suspended and resumed by gx_http_respond.
 *
 * Two things MHD does not do by itself in this mode are done here: a peer
 * that closes its side of a connection while a request is unfinished is
 * noticed at once (libevent EV_CLOSED on every connection socket: MHD's
 * edge-triggered epoll reads the last bytes but never the EOF after them,
 * so the connection would sit in CLOSE-WAIT until the idle timeout), and
 * the memory held by all requests in flight is bounded by one budget.
 *
 * Why one file: the MHD callbacks, the in-flight memory budget and the
 * reclaim of abandoned connections are one state machine per connection.
 */
#include "http.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "tls.h"

struct gx_http {
    struct MHD_Daemon *daemon;
    struct event_base *base;
    struct event *io;
    struct event *timer;
    gx_http_handler_cb cb;
    void *ctx;
    size_t max_body;
    size_t inflight;
    uint64_t next_id;
    int port;
    int phase_limit_ms;                   /* longest a request may take to arrive */
    LIST_HEAD(conn_list, conn_rec) conns; /* every open connection */
    struct event *reaper;                 /* closes connections that trickle */
    int conn_timeout_s;                   /* idle timeout given to each new connection */
    size_t budget;                        /* bytes all requests in flight may hold (0: no budget) */
    size_t held;                          /* bytes charged to requests in flight */
    bool early_close;                     /* the loop supports EV_CLOSED */
    size_t n_closed;                      /* connections with peer_closed set */
    const char *busy_body;                /* the 503's JSON, borrowed from the opts */
    struct gx_http_stats stats;
};

/*
 * One open connection. MHD's connection timeout only measures silence, so a
 * client sending a byte every few seconds would hold a connection forever;
 * the reaper closes a connection whose current request has not fully
 * arrived within the phase limit (plus time for a large body at 1 MiB/s).
 */
struct conn_rec {
    LIST_ENTRY(conn_rec) link;
    struct gx_http *h;
    struct MHD_Connection *conn;
    struct event *closed_ev; /* fires when the peer closes its side */
    MHD_socket fd;
    int64_t phase_start_ms; /* when the current request (or wait for one) began */
    int64_t extra_ms;       /* allowance for a declared body */
    bool busy;              /* request complete: being answered */
    bool peer_closed;       /* the peer closed its side; reap unless busy */
};

enum req_state { REQ_READING, REQ_DISPATCHED, REQ_SUSPENDED, REQ_ANSWERED };

struct gx_http_req {
    struct gx_http *h;
    struct MHD_Connection *conn;
    const char *method, *path;
    struct gx_buf body;
    size_t charge; /* bytes charged to the budget for this request */
    bool too_big;
    bool over_budget; /* refused by the memory budget: answered 503 here */
    enum req_state state;
    uint64_t id;
    int64_t start_us;
    char peer[64];
    /* a response prepared while suspended, queued when MHD calls back */
    struct MHD_Response *pending;
    int pending_status;
};

static void http_run(struct gx_http *h);
static bool reap_closed_once(struct gx_http *h);

static void
io_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_run(arg);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_run(arg);
}

/* Let MHD do its work, then re-arm the timer for MHD's next deadline. */
static void
http_run(struct gx_http *h)
{
    MHD_UNSIGNED_LONG_LONG ms;
    struct timeval tv;

    (void)MHD_run(h->daemon);
    if (reap_closed_once(h)) {
        ms = 0; /* let MHD see the sockets just shut down */
    } else if (MHD_get_timeout(h->daemon, &ms) != MHD_YES) {
        ms = 1000;
    }
    if (ms > 60000) {
        ms = 60000;
    }
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    (void)evtimer_add(h->timer, &tv);
}

/* Schedule an MHD_run on the next loop iteration. */
static void
http_kick(struct gx_http *h)
{
    struct timeval zero = {0, 0};

    (void)evtimer_add(h->timer, &zero);
}

static void
fill_peer(struct gx_http_req *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    r->peer[0] = '\0';
    if (sa == NULL) {
        return;
    }
    if (sa->sa_family == AF_INET) {
        (void)inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, r->peer,
                        sizeof(r->peer));
    } else if (sa->sa_family == AF_INET6) {
        (void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                        r->peer, sizeof(r->peer));
    }
}

/* Start a new phase on @conn: a request arriving (@body_bytes declared) or being answered. */
static void
conn_phase(struct MHD_Connection *conn, bool busy, size_t body_bytes)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_rec *c = ci != NULL ? ci->socket_context : NULL;

    if (c == NULL) {
        return;
    }
    c->busy = busy;
    c->phase_start_ms = gx_mono_ms();
    c->extra_ms = (int64_t)(body_bytes >> 10); /* 1 ms per KiB: 1 MiB/s */
}

/* The peer closed its side of @c's socket: let the next MHD pass decide. */
static void
closed_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn_rec *c = arg;

    (void)fd;
    (void)what;
    if (!c->peer_closed) {
        c->peer_closed = true;
        c->h->n_closed++;
    }
    http_kick(c->h);
}

/*
 * Shut down every connection whose peer has closed and which has no request
 * being answered: its unfinished request can never complete. Runs after
 * MHD_run, so bytes that arrived with the FIN have been read and a request
 * they completed is already dispatched (busy); a socket that still holds
 * unread bytes is left for the next pass. True when one was shut down (MHD
 * must run again to see it).
 */
static bool
reap_closed_once(struct gx_http *h)
{
    bool any = false;

    if (h->n_closed == 0) {
        return false;
    }
    for (struct conn_rec *c = LIST_FIRST(&h->conns); c != NULL; c = LIST_NEXT(c, link)) {
        int unread = 0;

        if (!c->peer_closed || c->busy || c->fd == MHD_INVALID_SOCKET) {
            continue;
        }
        if (ioctl(c->fd, FIONREAD, &unread) == 0 && unread > 0) {
            continue;
        }
        (void)shutdown(c->fd, SHUT_RDWR);
        c->peer_closed = false;
        h->n_closed--;
        c->busy = true; /* once */
        h->stats.peer_closed++;
        any = true;
    }
    return any;
}

static void
reap_closed(struct gx_http *h)
{
    if (reap_closed_once(h)) {
        http_kick(h);
    }
}

static void
notify_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
          enum MHD_ConnectionNotificationCode code)
{
    struct gx_http *h = cls;
    struct conn_rec *c = *socket_context;
    const union MHD_ConnectionInfo *ci;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            return;
        }
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->h = h;
        c->conn = conn;
        c->fd = ci != NULL ? ci->connect_fd : MHD_INVALID_SOCKET;
        c->phase_start_ms = gx_mono_ms();
        if (h->early_close && c->fd != MHD_INVALID_SOCKET) {
            c->closed_ev = event_new(h->base, c->fd, EV_CLOSED, closed_cb, c);
            if (c->closed_ev != NULL && event_add(c->closed_ev, NULL) != 0) {
                event_free(c->closed_ev);
                c->closed_ev = NULL;
            }
        }
        (void)MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                        (unsigned int)h->conn_timeout_s);
        LIST_INSERT_HEAD(&h->conns, c, link);
        *socket_context = c;
        return;
    }
    if (c == NULL) {
        return;
    }
    if (c->closed_ev != NULL) {
        event_free(c->closed_ev);
    }
    if (c->peer_closed) {
        h->n_closed--;
    }
    LIST_REMOVE(c, link);
    free(c);
    *socket_context = NULL;
}

/* Shut down connections whose request is taking too long to arrive. */
static void
reaper_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_http *h = arg;
    int64_t now = gx_mono_ms();
    bool any = false;

    (void)fd;
    (void)what;
    for (struct conn_rec *c = LIST_FIRST(&h->conns); c != NULL; c = LIST_NEXT(c, link)) {
        if (c->busy || c->fd == MHD_INVALID_SOCKET ||
            now - c->phase_start_ms <= h->phase_limit_ms + c->extra_ms) {
            continue;
        }
        (void)shutdown(c->fd, SHUT_RDWR);
        c->busy = true; /* once */
        any = true;
    }
    if (any) {
        http_kick(h);
    }
    reap_closed(h);
    gx_log_tick(); /* once a second: report log lines the rate limit held back */
}

/*
 * Charge @r @more bytes against the budget. False (nothing charged) when
 * the requests in flight already hold too much for it to fit. A large
 * request (charged over 1/64 of the budget) must leave the last eighth
 * free: a client holding maximum-size bodies cannot starve the small
 * calls (5,000 node names are ~100 KB) kube-scheduler makes.
 */
static bool
budget_charge(struct gx_http_req *r, size_t more)
{
    struct gx_http *h = r->h;
    size_t limit = h->budget;

    if (h->budget > 0 && r->charge + more > h->budget / 64) {
        limit -= h->budget / 8;
    }
    if (h->budget > 0 && (more > limit || h->held > limit - more)) {
        return false;
    }
    h->held += more;
    r->charge += more;
    if (h->held > h->stats.held_peak) {
        h->stats.held_peak = h->held;
    }
    return true;
}

/* A body of @n bytes is charged twice: the body, and a reply that may echo it. */
static size_t
body_charge(size_t n)
{
    return n > SIZE_MAX / 2 ? SIZE_MAX : 2 * n;
}

static struct gx_http_req *
req_new(struct gx_http *h, struct MHD_Connection *conn, const char *method, const char *url)
{
    struct gx_http_req *r = calloc(1, sizeof(*r));
    const char *cl;

    if (r == NULL) {
        return NULL;
    }
    r->h = h;
    r->conn = conn;
    r->method = method;
    r->path = url;
    r->id = ++h->next_id;
    r->start_us = gx_mono_us();
    r->state = REQ_READING;
    gx_buf_init(&r->body, h->max_body);
    cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl != NULL) {
        unsigned long long n = strtoull(cl, NULL, 10);
        if (n > h->max_body) {
            r->too_big = true;
        } else if (n > 0 && !budget_charge(r, body_charge((size_t)n))) {
            r->over_budget = true;
        } else if (n > 0) {
            /*
             * One allocation of the declared size instead of doubling from
             * 256 bytes: a 10 MiB body is then copied once, not ~twice over
             * through realloc. MHD never hands over more than the declared
             * length; a chunked body (no length) still grows up to the cap.
             * Failure is harmless: the buffer grows as usual.
             */
            if (gx_buf_reserve(&r->body, (size_t)n) != GX_OK) {
                gx_debug("request body not reserved", "bytes=%llu", n);
            }
        }
    }
    fill_peer(r);
    h->inflight++;
    return r;
}

static enum MHD_Result
queue_pending(struct gx_http_req *r)
{
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->pending_status, r->pending);

    MHD_destroy_response(r->pending);
    r->pending = NULL;
    r->state = REQ_ANSWERED;
    return ret;
}

/*
 * Refuse @r because the memory budget is spent: 503 with Retry-After, and
 * the connection is closed (the body is never read). Answered here, before
 * the handler, so the refusal costs no memory.
 */
static enum MHD_Result
refuse_over_budget(struct gx_http_req *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_buffer(
        strlen(r->h->busy_body), (void *)(uintptr_t)r->h->busy_body, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        return MHD_NO;
    }
    (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    (void)MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    r->state = REQ_ANSWERED;
    r->h->stats.refused_budget++;
    gx_buf_release(&r->body);
    ret = MHD_queue_response(r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result
access_cb(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
          const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    struct gx_http *h = cls;
    struct gx_http_req *r = *con_cls;

    (void)version;
    if (r == NULL) {
        r = req_new(h, conn, method, url);
        if (r == NULL) {
            return MHD_NO;
        }
        *con_cls = r;
        conn_phase(conn, false, r->body.cap);
        if (r->over_budget) {
            return refuse_over_budget(r);
        }
        /* A declared length over the cap is answered before reading the body. */
        if (!r->too_big) {
            return MHD_YES;
        }
    }
    if (r->state == REQ_ANSWERED && *upload_data_size > 0) {
        *upload_data_size = 0; /* refused: what still arrives is dropped */
        return MHD_YES;
    }
    if (r->state == REQ_READING && *upload_data_size > 0) {
        size_t want = body_charge(r->body.len + *upload_data_size);
        /*
         * A body without a declared length is charged as it grows; once it
         * does not fit, the rest is dropped and 503 answered at its end
         * (MHD cannot queue a reply in the middle of a body).
         */
        if (!r->too_big && !r->over_budget && want > r->charge &&
            !budget_charge(r, want - r->charge)) {
            r->over_budget = true;
            gx_buf_release(&r->body);
        }
        if (!r->too_big && !r->over_budget &&
            gx_buf_add(&r->body, upload_data, *upload_data_size) != GX_OK) {
            r->too_big = true;
            gx_buf_release(&r->body);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->state == REQ_READING && r->over_budget) {
        return refuse_over_budget(r);
    }
    if (r->state == REQ_READING) {
        conn_phase(conn, true, 0);
        r->state = REQ_DISPATCHED;
        h->cb(h->ctx, r);
        if (r->pending != NULL) {
            return queue_pending(r);
        }
        r->state = REQ_SUSPENDED;
        MHD_suspend_connection(conn);
        return MHD_YES;
    }
    if (r->pending != NULL) {
        return queue_pending(r);
    }
    return MHD_YES;
}

static void
completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    struct gx_http *h = cls;
    struct gx_http_req *r = *con_cls;

    (void)toe;
    if (r == NULL) {
        return;
    }
    conn_phase(conn, false, 0);
    if (r->pending != NULL) {
        MHD_destroy_response(r->pending);
    }
    gx_buf_release(&r->body);
    h->held -= r->charge;
    h->inflight--;
    free(r);
    *con_cls = NULL;
}

void
gx_http_respond(struct gx_http_req *r, int status, const char *content_type, struct gx_buf *body)
{
    size_t len = 0;
    char *data = gx_buf_take(body, &len);
    struct MHD_Response *resp;

    resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(data);
        return;
    }
    /*
     * The reply is held until it is sent. Admission reserved one body's
     * worth for it; a bigger reply (many names) is charged on top, without
     * refusal: the request is already decided.
     */
    if (len > r->charge - r->charge / 2) {
        size_t more = len - (r->charge - r->charge / 2);
        r->h->held += more;
        r->charge += more;
        if (r->h->held > r->h->stats.held_peak) {
            r->h->stats.held_peak = r->h->held;
        }
    }
    if (content_type != NULL) {
        (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    }
    (void)MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    r->pending = resp;
    r->pending_status = status;
    if (r->state == REQ_SUSPENDED) {
        MHD_resume_connection(r->conn);
        http_kick(r->h);
    }
}

static void
mhd_log_cb(void *cls, const char *fmt, va_list ap)
{
    char msg[512], q[600];
    size_t n;

    (void)cls;
    (void)vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) {
        msg[--n] = '\0';
    }
    gx_warn("http server error", "detail=%s", gx_log_quote(q, sizeof(q), msg));
}

static enum gx_err
parse_addr(const char *address, int port, struct sockaddr_storage *ss, struct gx_why *why)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, address, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        return GX_OK;
    }
    if (inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        return GX_OK;
    }
    gx_why_set(why, "server.address '%s' is not an IPv4 or IPv6 address", address);
    return GX_EINVAL;
}

enum gx_err
gx_http_start(struct event_base *base, const struct gx_http_opts *opts, gx_http_handler_cb cb,
              void *ctx, struct gx_http **out, struct gx_why *why)
{
    struct gx_http *h = NULL;
    struct sockaddr_storage ss;
    const union MHD_DaemonInfo *info;
    unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    char prio[1024];
    enum gx_err rc;

    if ((rc = parse_addr(opts->address, opts->port, &ss, why)) != GX_OK) {
        return rc;
    }
    if (ss.ss_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
    }
    if (opts->tls_cert != NULL) {
        flags |= MHD_USE_TLS;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return GX_ENOMEM;
    }
    LIST_INIT(&h->conns);
    h->base = base;
    h->cb = cb;
    h->ctx = ctx;
    h->max_body = opts->max_body;
    h->busy_body = opts->busy_body != NULL ? opts->busy_body : "{}";
    h->budget = opts->max_inflight;
    h->conn_timeout_s = opts->conn_timeout_s;
    h->phase_limit_ms = opts->conn_timeout_s * 1000;
    h->early_close = (event_base_get_features(base) & EV_FEATURE_EARLY_CLOSE) != 0;
    if (!h->early_close) {
        gx_warn("event loop cannot watch for closed connections; abandoned connections wait "
                "for the idle timeout",
                "method=%s", event_base_get_method(base));
    }
    /*
     * The daemon-wide timeout is only the default; every connection gets
     * the current server.connection_timeout_s when it opens (notify_cb),
     * which is what makes that key live.
     */
    gx_tls_effective_priorities(opts->tls_priorities, prio, sizeof(prio));
    if (opts->tls_cert != NULL) {
        h->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, access_cb, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log_cb, NULL,
            MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_NOTIFY_COMPLETED, completed_cb, h,
            MHD_OPTION_NOTIFY_CONNECTION, notify_cb, h, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned int)opts->conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT, GX_HTTP_MAX_CONNS,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GX_HTTP_CONN_MEMORY,
            MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)opts->reuse_port,
            MHD_OPTION_HTTPS_PRIORITIES, prio, MHD_OPTION_HTTPS_MEM_CERT, opts->tls_cert,
            MHD_OPTION_HTTPS_MEM_KEY, opts->tls_key, MHD_OPTION_END);
    } else {
        h->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, access_cb, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log_cb, NULL,
            MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_NOTIFY_COMPLETED, completed_cb, h,
            MHD_OPTION_NOTIFY_CONNECTION, notify_cb, h, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned int)opts->conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT, GX_HTTP_MAX_CONNS,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GX_HTTP_CONN_MEMORY, MHD_OPTION_END);
    }
    if (h->daemon == NULL) {
        gx_why_set(why, "cannot listen on %s port %d (in use, or bad TLS key/cert)", opts->address,
                   opts->port);
        free(h);
        return GX_EIO;
    }
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : opts->port;
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    h->io = event_new(base, info->epoll_fd, EV_READ | EV_PERSIST, io_cb, h);
    h->timer = evtimer_new(base, timer_cb, h);
    h->reaper = event_new(base, -1, EV_PERSIST, reaper_cb, h);
    if (h->io == NULL || h->timer == NULL || h->reaper == NULL || event_add(h->io, NULL) != 0 ||
        event_add(h->reaper, &(struct timeval){1, 0}) != 0) {
        gx_http_free(h);
        return GX_ENOMEM;
    }
    http_kick(h);
    *out = h;
    return GX_OK;
}

void
gx_http_free(struct gx_http *h)
{
    if (h == NULL) {
        return;
    }
    if (h->io != NULL) {
        event_free(h->io);
    }
    if (h->timer != NULL) {
        event_free(h->timer);
    }
    if (h->reaper != NULL) {
        event_free(h->reaper);
    }
    if (h->daemon != NULL) {
        MHD_stop_daemon(h->daemon); /* closes every connection: notify_cb frees its record */
    }
    free(h);
}

int
gx_http_port(const struct gx_http *h)
{
    return h->port;
}

void
gx_http_set_max_body(struct gx_http *h, size_t max_body)
{
    h->max_body = max_body;
}

void
gx_http_set_conn_timeout(struct gx_http *h, int seconds)
{
    h->conn_timeout_s = seconds;
    h->phase_limit_ms = seconds * 1000;
    for (struct conn_rec *c = LIST_FIRST(&h->conns); c != NULL; c = LIST_NEXT(c, link)) {
        (void)MHD_set_connection_option(c->conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                        (unsigned int)seconds);
    }
}

void
gx_http_set_budget(struct gx_http *h, size_t max_inflight)
{
    h->budget = max_inflight;
}

void
gx_http_get_stats(const struct gx_http *h, struct gx_http_stats *out)
{
    *out = h->stats;
    out->held = h->held;
    out->budget = h->budget;
    out->connections = 0;
    for (const struct conn_rec *c = LIST_FIRST(&h->conns); c != NULL; c = LIST_NEXT(c, link)) {
        out->connections++;
    }
}

void
gx_http_quiesce(struct gx_http *h)
{
    MHD_socket s = MHD_quiesce_daemon(h->daemon);

    if (s != MHD_INVALID_SOCKET) {
        (void)close(s);
    }
}

size_t
gx_http_inflight(const struct gx_http *h)
{
    return h->inflight;
}

const char *
gx_http_method(const struct gx_http_req *r)
{
    return r->method;
}

const char *
gx_http_path(const struct gx_http_req *r)
{
    return r->path;
}

const char *
gx_http_body(const struct gx_http_req *r, size_t *len)
{
    *len = r->body.len;
    return r->body.data ? r->body.data : "";
}

const char *
gx_http_header(const struct gx_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *
gx_http_query(const struct gx_http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

bool
gx_http_too_big(const struct gx_http_req *r)
{
    return r->too_big;
}

uint64_t
gx_http_id(const struct gx_http_req *r)
{
    return r->id;
}

int64_t
gx_http_start_ms(const struct gx_http_req *r)
{
    return r->start_us / 1000;
}

double
gx_http_elapsed_s(const struct gx_http_req *r)
{
    return (double)(gx_mono_us() - r->start_us) / 1e6;
}

const char *
gx_http_peer(const struct gx_http_req *r)
{
    return r->peer;
}
