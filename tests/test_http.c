/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http.c - the HTTP server on a libevent loop driven by the test, with
 * plain sockets as clients on 127.0.0.1: abandoned connections reclaimed
 * at once, the memory budget of requests in flight, the live idle timeout,
 * and the TLS checks. The loop is run in short slices until a condition
 * holds or a deadline passes; nothing sleeps.
 */
#include "gx_test.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

GX_SUITE(http);

struct srv {
    struct event_base *base;
    struct gx_http *h;
    int handled;
};

/* Answers every request 200 {"ok":true} at once. */
static void
handler_cb(void *ctx, struct gx_http_req *r)
{
    struct srv *s = ctx;
    struct gx_buf b;

    s->handled++;
    gx_buf_init(&b, 1024);
    cr_assert_eq(gx_buf_adds(&b, "{\"ok\":true}"), GX_OK);
    gx_http_respond(r, 200, "application/json", &b);
}

static void
srv_start(struct srv *s, size_t budget, int timeout_s)
{
    struct gx_http_opts o = {
        .address = "127.0.0.1",
        .port = 0,
        .max_body = 1 << 20,
        .max_inflight = budget,
        .conn_timeout_s = timeout_s,
        .busy_body = "{\"error\":\"server busy\",\"status\":503}",
    };
    struct gx_why why = {{0}};

    memset(s, 0, sizeof(*s));
    s->base = event_base_new();
    cr_assert_not_null(s->base);
    cr_assert_eq(gx_http_start(s->base, &o, handler_cb, s, &s->h, &why), GX_OK, "%s", why.text);
}

static void
srv_stop(struct srv *s)
{
    gx_http_free(s->h);
    event_base_free(s->base);
}

/* Run the loop for up to @ms milliseconds. */
static void
spin(struct srv *s, int ms)
{
    int64_t end = gx_mono_ms() + ms;

    while (gx_mono_ms() < end) {
        struct timeval tv = {0, 5000};
        (void)event_base_loopexit(s->base, &tv);
        (void)event_base_loop(s->base, 0);
    }
}

static size_t
open_conns(const struct srv *s)
{
    struct gx_http_stats st;

    gx_http_get_stats(s->h, &st);
    return st.connections;
}

/* Run the loop until the server has @n connections open; the time it took (ms), or -1. */
static int64_t
until_conns(struct srv *s, size_t n, int deadline_ms)
{
    int64_t start = gx_mono_ms();

    while (gx_mono_ms() - start < deadline_ms) {
        spin(s, 5);
        if (open_conns(s) == n) {
            return gx_mono_ms() - start;
        }
    }
    return -1;
}

static int
client(const struct srv *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gx_http_port(s->h))};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void
send_str(int fd, const char *data)
{
    size_t len = strlen(data);

    cr_assert_eq(send(fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Read what the server sent on @fd while running the loop, until it closes or @deadline_ms. */
static void
read_answer(struct srv *s, int fd, char *out, size_t n, int deadline_ms)
{
    size_t used = 0;
    int64_t end = gx_mono_ms() + deadline_ms;

    (void)fcntl(fd, F_SETFL, O_NONBLOCK);
    out[0] = '\0';
    while (gx_mono_ms() < end && used + 1 < n) {
        ssize_t got;
        spin(s, 5);
        got = recv(fd, out + used, n - used - 1, 0);
        if (got == 0) {
            break;
        }
        if (got > 0) {
            used += (size_t)got;
            out[used] = '\0';
            if (strstr(out, "\r\n\r\n") != NULL && strchr(strstr(out, "\r\n\r\n"), '}') != NULL) {
                break;
            }
        }
    }
}

Test(http, half_request_then_close_is_reclaimed_at_once)
{
    struct srv s;
    int64_t took;

    srv_start(&s, 0, 30);
    for (int i = 0; i < 20; i++) {
        int fd = client(&s);
        send_str(fd, i % 2 ? "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a"
                           : "GET /healthz HTTP/1.1\r\nHo");
        (void)close(fd);
    }
    /* The idle timeout is 30 s: anything under a second is the close being noticed. */
    took = until_conns(&s, 0, 1000);
    cr_assert(took >= 0, "abandoned connections still open after 1 s: %zu", open_conns(&s));
    cr_assert_eq(s.handled, 0);
    srv_stop(&s);
}

Test(http, complete_request_with_half_close_is_still_answered)
{
    struct srv s;
    char buf[4096];
    int fd;

    srv_start(&s, 0, 30);
    fd = client(&s);
    send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    (void)shutdown(fd, SHUT_WR);
    read_answer(&s, fd, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got %s", buf);
    cr_assert_eq(s.handled, 1);
    (void)close(fd);
    cr_assert_geq(until_conns(&s, 0, 1000), 0);
    srv_stop(&s);
}

Test(http, idle_keepalive_connection_closed_by_peer_is_reclaimed)
{
    struct srv s;
    char buf[4096];
    int fd;

    srv_start(&s, 0, 30);
    fd = client(&s);
    send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    read_answer(&s, fd, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got %s", buf);
    cr_assert_eq(open_conns(&s), 1);
    (void)close(fd);
    cr_assert_geq(until_conns(&s, 0, 1000), 0);
    srv_stop(&s);
}

Test(http, declared_body_over_budget_is_refused_503_before_it_is_read)
{
    struct srv s;
    char buf[4096];
    int fd;
    struct gx_http_stats st;

    srv_start(&s, 100000, 30);
    fd = client(&s);
    /* 60,000 bytes are charged twice (body and reply): over 100,000. */
    send_str(fd, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n{");
    read_answer(&s, fd, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 503", 12) == 0, "got %s", buf);
    cr_assert(strstr(buf, "Retry-After: 1") != NULL, "got %s", buf);
    cr_assert(strstr(buf, "\"status\":503") != NULL, "got %s", buf);
    cr_assert_eq(s.handled, 0);
    gx_http_get_stats(s.h, &st);
    cr_assert_eq(st.refused_budget, 1);
    cr_assert_eq(st.held, 0);
    (void)close(fd);
    srv_stop(&s);
}

Test(http, budget_is_shared_by_all_requests_in_flight)
{
    struct srv s;
    char buf[4096];
    int a, b;
    struct gx_http_stats st;

    srv_start(&s, 100000, 30);
    a = client(&s);
    send_str(a, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 30000\r\n\r\n{");
    spin(&s, 50);
    gx_http_get_stats(s.h, &st);
    cr_assert_eq(st.held, 60000);
    b = client(&s);
    send_str(b, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 30000\r\n\r\n{");
    read_answer(&s, b, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 503", 12) == 0, "second body must not fit: %s", buf);
    (void)close(b);
    (void)close(a);
    cr_assert_geq(until_conns(&s, 0, 1000), 0);
    gx_http_get_stats(s.h, &st);
    cr_assert_eq(st.held, 0, "the charge is returned when the connection ends");
    cr_assert_eq(st.held_peak, 60000);
    srv_stop(&s);
}

Test(http, chunked_body_over_budget_gets_503_at_its_end)
{
    struct srv s;
    char buf[4096], chunk[8200];
    int fd;

    srv_start(&s, 50000, 30);
    fd = client(&s);
    send_str(fd, "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    memset(chunk, 'a', sizeof(chunk));
    (void)snprintf(chunk, 8, "1f40\r\n");
    chunk[6] = 'a';
    memcpy(chunk + 6 + 8000, "\r\n", 3);
    for (int i = 0; i < 5; i++) {
        send_str(fd, chunk);
        spin(&s, 5);
    }
    send_str(fd, "0\r\n\r\n");
    read_answer(&s, fd, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 503", 12) == 0, "got %s", buf);
    cr_assert_eq(s.handled, 0);
    (void)close(fd);
    srv_stop(&s);
}

Test(http, body_within_budget_is_served)
{
    struct srv s;
    char buf[4096], req[256];
    int fd;

    srv_start(&s, 100000, 30);
    fd = client(&s);
    (void)snprintf(req, sizeof(req), "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    send_str(fd, req);
    read_answer(&s, fd, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "got %s", buf);
    (void)close(fd);
    srv_stop(&s);
}

Test(http, idle_timeout_change_applies_to_open_connections)
{
    struct srv s;
    int fd;

    srv_start(&s, 0, 30);
    fd = client(&s);
    send_str(fd, "GET /healthz HTTP/1.1\r\nHo");
    spin(&s, 50);
    cr_assert_eq(open_conns(&s), 1);
    gx_http_set_conn_timeout(s.h, 1);
    cr_assert_geq(until_conns(&s, 0, 3000), 0, "not closed after the new 1 s timeout");
    (void)close(fd);
    srv_stop(&s);
}

Test(http, large_bodies_leave_room_for_small_calls)
{
    struct srv s;
    char buf[4096];
    int big, small;
    struct gx_http_stats st;

    /* budget 640,000: large requests may hold 560,000; 2 x 270,000 = 540,000 */
    srv_start(&s, 640000, 30);
    big = client(&s);
    send_str(big, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 270000\r\n\r\n{");
    spin(&s, 50);
    gx_http_get_stats(s.h, &st);
    cr_assert_eq(st.held, 540000);
    small = client(&s);
    send_str(small, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 30000\r\n\r\n{");
    read_answer(&s, small, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 503", 12) == 0, "a second large body must not fit: %s", buf);
    (void)close(small);
    small = client(&s);
    send_str(small, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    read_answer(&s, small, buf, sizeof(buf), 2000);
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "a small call still fits: %s", buf);
    (void)close(small);
    (void)close(big);
    srv_stop(&s);
}
