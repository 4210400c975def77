/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_httpc.c - the async client against a tiny HTTP server on a thread:
 * status and body, the body cap, the timeout, an error status, a request
 * body and a streamed response, all on one event loop.
 */
#include "gx_test.h"

#include "httpc.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

GX_SUITE(httpc);

struct server {
    int fd;
    int port;
    atomic_bool stop;
    pthread_t thread;
};

/* Read one request (headers and Content-Length body) into @buf; its length or -1. */
static ssize_t
read_request(int fd, char *buf, size_t cap)
{
    size_t got = 0;

    for (;;) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        const char *end, *cl;

        if (n <= 0) {
            return -1;
        }
        got += (size_t)n;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end == NULL) {
            continue;
        }
        cl = strstr(buf, "Content-Length:");
        if (cl == NULL || got >= (size_t)(end + 4 - buf) + (size_t)atoi(cl + 15)) {
            return (ssize_t)got;
        }
    }
}

static void
say(int fd, const char *text)
{
    (void)!write(fd, text, strlen(text));
}

static void
answer(int fd, const char *req)
{
    char head[256], big[10000];

    if (strncmp(req, "GET /ok ", 8) == 0) {
        say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
    } else if (strncmp(req, "GET /big ", 9) == 0) {
        memset(big, 'x', sizeof(big));
        (void)snprintf(head, sizeof(head),
                       "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                       sizeof(big));
        (void)!write(fd, head, strlen(head));
        (void)!write(fd, big, sizeof(big));
    } else if (strncmp(req, "GET /err ", 9) == 0) {
        say(fd, "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\nConnection: close\r\n\r\noops");
    } else if (strncmp(req, "GET /slow ", 10) == 0) {
        (void)usleep(1500 * 1000);
    } else if (strncmp(req, "POST /echo ", 11) == 0) {
        const char *body = strstr(req, "\r\n\r\n") + 4;
        (void)snprintf(head, sizeof(head),
                       "HTTP/1.1 201 Created\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                       strlen(body));
        (void)!write(fd, head, strlen(head));
        (void)!write(fd, body, strlen(body));
    } else if (strncmp(req, "GET /stream ", 12) == 0) {
        static const char s[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                "Connection: close\r\n\r\n"
                                "5\r\nab\ncd\r\n3\r\nef\n\r\n0\r\n\r\n";
        (void)!write(fd, s, sizeof(s) - 1);
    }
}

/* One connection: the slow one must not hold up the others. */
static void *
conn_main(void *arg)
{
    int c = (int)(intptr_t)arg;
    char req[8192];

    if (read_request(c, req, sizeof(req)) > 0) {
        answer(c, req);
    }
    (void)close(c);
    return NULL;
}

static void *
server_main(void *arg)
{
    struct server *s = arg;

    while (!atomic_load(&s->stop)) {
        int c = accept(s->fd, NULL, NULL);
        pthread_t t;

        if (c < 0) {
            continue;
        }
        if (pthread_create(&t, NULL, conn_main, (void *)(intptr_t)c) != 0) {
            (void)close(c);
            continue;
        }
        (void)pthread_detach(t);
    }
    return NULL;
}

static void
server_start(struct server *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    struct timeval tv = {0, 200000};

    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(s->fd, 0);
    cr_assert_eq(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(s->fd, 16), 0);
    cr_assert_eq(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
    /* accept wakes up now and then to see the stop flag */
    (void)setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    s->port = ntohs(a.sin_port);
    atomic_store(&s->stop, false);
    cr_assert_eq(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void
server_stop(struct server *s)
{
    atomic_store(&s->stop, true);
    (void)pthread_join(s->thread, NULL);
    (void)close(s->fd);
}

/* What one transfer ended with. */
struct outcome {
    bool done;
    enum gx_err rc;
    long status;
    char body[64];
    char streamed[64];
};

static void
on_done(void *ctx, const struct gx_httpc_result *res)
{
    struct outcome *o = ctx;

    o->done = true;
    o->rc = res->rc;
    o->status = res->status;
    (void)snprintf(o->body, sizeof(o->body), "%.*s", (int)(res->body_len < 63 ? res->body_len : 63),
                   res->body != NULL ? res->body : "");
}

static enum gx_err
on_data(void *ctx, const char *data, size_t len)
{
    struct outcome *o = ctx;
    size_t have = strlen(o->streamed);

    (void)snprintf(o->streamed + have, sizeof(o->streamed) - have, "%.*s", (int)len, data);
    return GX_OK;
}

Test(httpc, transfers_end_with_status_body_cap_and_timeout)
{
    static struct server srv; /* outlives a failed assertion: the thread still reads it */
    struct event_base *base = event_base_new();
    struct gx_httpc *c = gx_httpc_new(base);
    const char *paths[] = {"/ok", "/big", "/err", "/slow", "/echo", "/stream"};
    struct outcome o[6];
    char url[6][128];

    cr_assert_not_null(c);
    /* the server writes to clients the cap made hang up, as main.c ignores SIGPIPE too */
    (void)signal(SIGPIPE, SIG_IGN);
    memset(o, 0, sizeof(o));
    server_start(&srv);
    for (int i = 0; i < 6; i++) {
        struct gx_httpc_req req = {
            .method = i == 4 ? "POST" : "GET",
            .url = url[i],
            .body = i == 4 ? "{\"a\":1}" : NULL,
            .body_len = i == 4 ? 7 : 0,
            .content_type = i == 4 ? "application/json" : NULL,
            .timeout_ms = i == 5 ? 0 : 400,
            .max_body = 1024,
            .stream = i == 5,
        };
        (void)snprintf(url[i], sizeof(url[i]), "http://127.0.0.1:%d%s", srv.port, paths[i]);
        cr_assert_not_null(gx_httpc_start(c, &req, on_done, i == 5 ? on_data : NULL, &o[i]));
    }
    for (int spins = 0; spins < 5000 && gx_httpc_active(c) > 0; spins++) {
        (void)event_base_loop(base, EVLOOP_ONCE);
    }
    cr_assert_eq(gx_httpc_active(c), 0);
    cr_assert(o[0].done && o[0].rc == GX_OK && o[0].status == 200);
    cr_assert_str_eq(o[0].body, "hello");
    cr_assert_eq(o[1].rc, GX_ETOOBIG, "%d", o[1].rc);
    cr_assert_eq(o[2].rc, GX_OK);
    cr_assert_eq(o[2].status, 500);
    cr_assert_str_eq(o[2].body, "oops");
    cr_assert_eq(o[3].rc, GX_ETIMEDOUT, "%d", o[3].rc);
    cr_assert_eq(o[4].status, 201);
    cr_assert_str_eq(o[4].body, "{\"a\":1}");
    cr_assert_eq(o[5].status, 200);
    cr_assert_str_eq(o[5].streamed, "ab\ncdef\n");
    gx_httpc_free(c);
    event_base_free(base);
    server_stop(&srv);
}

Test(httpc, escape_percent_encodes_and_refuses_to_overflow)
{
    char out[64];

    cr_assert(gx_httpc_escape("gpu-extender.io/managed=true", out, sizeof(out)));
    cr_assert_str_eq(out, "gpu-extender.io%2Fmanaged%3Dtrue");
    cr_assert_not(gx_httpc_escape("a very long value that cannot fit here", out, 8));
}
