/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gx_fakehttp.c - the in-test HTTP server (see gx_fakehttp.h).
 */
#include "gx_fakehttp.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX 16384

struct gx_fakehttp {
    int lfd, port;
    gx_fakehttp_fn fn;
    void *ctx;
    pthread_t accept_thread;
    pthread_mutex_t mu;
    bool stop;
    pthread_t *conns; /* every connection thread, joined at stop */
    size_t n_conns, cap_conns;
};

struct conn {
    struct gx_fakehttp *s;
    int fd;
};

void
gx_fakehttp_msleep(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        ;
    }
}

void
gx_fakehttp_send(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return;
        }
        data += n;
        len -= (size_t)n;
    }
}

void
gx_fakehttp_respond(int fd, int status, const char *body)
{
    char head[256];
    size_t len = strlen(body);
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: "
                     "%zu\r\nConnection: close\r\n\r\n",
                     status, len);

    gx_fakehttp_send(fd, head, (size_t)n);
    gx_fakehttp_send(fd, body, len);
}

void
gx_fakehttp_chunk_head(int fd)
{
    static const char h[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

    gx_fakehttp_send(fd, h, sizeof(h) - 1);
}

void
gx_fakehttp_chunk(int fd, const char *data, size_t len)
{
    char h[32];
    int n = snprintf(h, sizeof(h), "%zx\r\n", len);

    if (len == 0) {
        return; /* an empty chunk would end the stream */
    }
    gx_fakehttp_send(fd, h, (size_t)n);
    gx_fakehttp_send(fd, data, len);
    gx_fakehttp_send(fd, "\r\n", 2);
}

void
gx_fakehttp_chunk_end(int fd)
{
    gx_fakehttp_send(fd, "0\r\n\r\n", 5);
}

/* The value of header @name (with ": ") in @head, or NULL. */
static const char *
header(const char *head, const char *name, size_t *len)
{
    size_t nl = strlen(name);

    for (const char *l = strstr(head, "\r\n"); l != NULL; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, name, nl) == 0) {
            const char *v = l + 2 + nl, *e = strstr(v, "\r\n");
            *len = e != NULL ? (size_t)(e - v) : strlen(v);
            return v;
        }
    }
    return NULL;
}

/* Read one request into @r (you free r->body); false on EOF or garbage. */
static bool
read_request(int fd, struct gx_fakehttp_req *r)
{
    char buf[HEAD_MAX];
    size_t len = 0, clen = 0, have, vl = 0;
    char *end = NULL;
    const char *v;

    while (end == NULL) {
        ssize_t n;

        if (len + 1 >= sizeof(buf)) {
            return false;
        }
        n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
        if (n <= 0) {
            return false;
        }
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    end[2] = '\0'; /* keep the last header's CRLF */
    if (sscanf(buf, "%15s %2047s", r->method, r->target) != 2) {
        return false;
    }
    if ((v = header(buf, "Authorization: ", &vl)) != NULL) {
        (void)snprintf(r->auth, sizeof(r->auth), "%.*s", (int)vl, v);
    }
    if ((v = header(buf, "Content-Length: ", &vl)) != NULL) {
        clen = strtoul(v, NULL, 10);
    }
    r->body = calloc(1, clen + 1);
    if (r->body == NULL) {
        return false;
    }
    have = len - (size_t)(end + 4 - buf);
    have = have < clen ? have : clen;
    memcpy(r->body, end + 4, have);
    while (have < clen) {
        ssize_t n = recv(fd, r->body + have, clen - have, 0);
        if (n <= 0) {
            return false;
        }
        have += (size_t)n;
    }
    r->body_len = clen;
    return true;
}

static void *
conn_main(void *arg)
{
    struct conn *c = arg;
    struct gx_fakehttp_req *r = calloc(1, sizeof(*r));
    struct timeval tv = {10, 0};

    (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (r != NULL && read_request(c->fd, r)) {
        c->s->fn(c->s->ctx, c->fd, r);
    }
    if (r != NULL) {
        free(r->body);
    }
    free(r);
    close(c->fd);
    free(c);
    return NULL;
}

/* Start a thread for connection @fd (closed when that fails). */
static void
spawn(struct gx_fakehttp *s, int fd)
{
    struct conn *c = malloc(sizeof(*c));

    if (c != NULL && s->n_conns == s->cap_conns) {
        size_t cap = s->cap_conns ? s->cap_conns * 2 : 64;
        pthread_t *t = realloc(s->conns, cap * sizeof(*t));
        if (t != NULL) {
            s->conns = t;
            s->cap_conns = cap;
        }
    }
    if (c == NULL || s->n_conns == s->cap_conns) {
        free(c);
        close(fd);
        return;
    }
    c->s = s;
    c->fd = fd;
    if (pthread_create(&s->conns[s->n_conns], NULL, conn_main, c) != 0) {
        free(c);
        close(fd);
        return;
    }
    s->n_conns++;
}

static void *
accept_main(void *arg)
{
    struct gx_fakehttp *s = arg;

    for (;;) {
        struct pollfd pfd = {s->lfd, POLLIN, 0};
        bool stop;
        int fd;

        pthread_mutex_lock(&s->mu);
        stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) {
            return NULL;
        }
        if (poll(&pfd, 1, 20) > 0 && (fd = accept(s->lfd, NULL, NULL)) >= 0) {
            spawn(s, fd);
        }
    }
}

struct gx_fakehttp *
gx_fakehttp_start(gx_fakehttp_fn fn, void *ctx)
{
    struct gx_fakehttp *s = calloc(1, sizeof(*s));
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);

    cr_assert_not_null(s);
    s->fn = fn;
    s->ctx = ctx;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(s->lfd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(s->lfd, 64), 0);
    cr_assert_eq(getsockname(s->lfd, (struct sockaddr *)&sa, &sl), 0);
    s->port = ntohs(sa.sin_port);
    cr_assert_eq(pthread_create(&s->accept_thread, NULL, accept_main, s), 0);
    return s;
}

int
gx_fakehttp_port(const struct gx_fakehttp *s)
{
    return s->port;
}

void
gx_fakehttp_stop(struct gx_fakehttp *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->accept_thread, NULL);
    for (size_t i = 0; i < s->n_conns; i++) {
        pthread_join(s->conns[i], NULL);
    }
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
    free(s->conns);
    free(s);
}
