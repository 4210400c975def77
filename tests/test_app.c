/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_app.c - the wired service in-process: start on the demo cluster,
 * explain, live reload (a bad edit keeps the last good config), and the
 * route table answering over a real socket (routes, reply, sync).
 */
#include "gx_test.h"

#include "app.h"
#include "explain_pod.h"
#include "service.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

GX_SUITE(app);

/* A free loopback port (closed again; a race with another process is unlikely). */
static int
free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    port = ntohs(a.sin_port);
    (void)close(fd);
    return port;
}

/* config/demo.json with absolute source paths and @port, written to @path; @extra appended. */
static void
write_config(const char *path, int port, const char *log_level)
{
    size_t len = 0;
    char *text = NULL, *out, *w;
    const char *p;
    FILE *f;

    cr_assert_eq(gx_read_file(GX_SOURCE_DIR "/config/demo.json", 1 << 20, &text, &len), GX_OK);
    out = calloc(1, len * 2 + 4096);
    cr_assert_not_null(out);
    w = out;
    for (p = text; *p != '\0'; p++) {
        if (strncmp(p, "\"demo/", 6) == 0) {
            w += sprintf(w, "\"%s/config/demo/", GX_SOURCE_DIR);
            p += 5;
        } else if (strncmp(p, "\"port\": 8888", 12) == 0) {
            w += sprintf(w, "\"port\": %d", port);
            p += 11;
        } else if (strncmp(p, "\"level\": \"info\"", 15) == 0) {
            w += sprintf(w, "\"level\": \"%s\"", log_level);
            p += 14;
        } else {
            *w++ = *p;
        }
    }
    f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(out, f) >= 0, true);
    cr_assert_eq(fclose(f), 0);
    free(out);
    free(text);
}

struct rig {
    char dir[64];
    char path[128];
    int port;
    struct event_base *base;
    struct gx_app *app;
};

static void
rig_up(struct rig *r)
{
    struct gx_why why = {{0}};

    (void)snprintf(r->dir, sizeof(r->dir), "/tmp/gx-app-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
    (void)snprintf(r->path, sizeof(r->path), "%s/config.json", r->dir);
    r->port = free_port();
    write_config(r->path, r->port, "error");
    r->base = event_base_new();
    cr_assert_not_null(r->base);
    cr_assert_eq(gx_app_new(r->base, r->path, &r->app, &why), GX_OK, "%s", why.text);
}

static void
rig_down(struct rig *r)
{
    gx_app_free(r->app);
    event_base_free(r->base);
    (void)unlink(r->path);
    (void)rmdir(r->dir);
}

Test(app, starts_on_the_demo_cluster_and_explains)
{
    struct rig r;
    struct gx_why why = {{0}};
    struct gx_buf out;
    size_t len = 0;
    char *pod = NULL;

    rig_up(&r);
    cr_assert_eq(gx_read_file(GX_SOURCE_DIR "/config/demo/pod-shared.json", 1 << 20, &pod, &len),
                 GX_OK);
    gx_buf_init(&out, 1 << 20);
    cr_assert_eq(gx_explain_pod(r.app, pod, len, false, &out, &why), GX_OK, "%s", why.text);
    cr_assert_not_null(strstr(out.data, "gpu-node-a"), "%s", out.data);
    cr_assert_not_null(strstr(out.data, "node has no GPUs"), "%s", out.data);
    gx_buf_reset(&out);
    cr_assert_eq(gx_explain_pod(r.app, "{", 1, true, &out, &why), GX_EPARSE);
    gx_buf_release(&out);
    free(pod);
    rig_down(&r);
}

Test(app, missing_config_names_the_file)
{
    struct event_base *base = event_base_new();
    struct gx_app *app = NULL;
    struct gx_why why = {{0}};

    cr_assert_neq(gx_app_new(base, "/nonexistent/gx.json", &app, &why), GX_OK);
    cr_assert_null(app);
    cr_assert_not_null(strstr(why.text, "/nonexistent/gx.json"), "%s", why.text);
    event_base_free(base);
}

Test(app, reload_keeps_the_last_good_config)
{
    struct rig r;
    uint64_t hash;
    FILE *f;

    rig_up(&r);
    hash = r.app->cfg->hash;
    f = fopen(r.path, "w");
    cr_assert_not_null(f);
    (void)fputs("{\"server\": {\"port\": \"not a number\"}}", f);
    cr_assert_eq(fclose(f), 0);
    gx_app_reload(r.app);
    cr_assert_eq(r.app->metrics.reloads_failed, 1);
    cr_assert_not(r.app->metrics.last_reload_ok);
    cr_assert_eq(r.app->cfg->hash, hash);
    write_config(r.path, r.port, "warn");
    gx_app_reload(r.app);
    cr_assert(r.app->metrics.last_reload_ok);
    cr_assert_neq(r.app->cfg->hash, hash);
    cr_assert_eq(r.app->metrics.config_hash, r.app->cfg->hash);
    rig_down(&r);
}

/* One HTTP/1.0 exchange with the server on @port; the status line into @status. */
struct call {
    int port;
    const char *request;
    char response[8192];
};

static void
exchange(struct call *c)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)c->port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    size_t got = 0;
    ssize_t n;

    c->response[0] = '\0';
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0) {
            (void)close(fd);
        }
        return;
    }
    (void)!write(fd, c->request, strlen(c->request));
    while (got < sizeof(c->response) - 1 &&
           (n = read(fd, c->response + got, sizeof(c->response) - 1 - got)) > 0) {
        got += (size_t)n;
    }
    c->response[got] = '\0';
    (void)close(fd);
}

struct client {
    struct call *calls;
    size_t n;
    atomic_bool done;
};

static void *
client_main(void *arg)
{
    struct client *cl = arg;

    for (size_t i = 0; i < cl->n; i++) {
        exchange(&cl->calls[i]);
    }
    atomic_store(&cl->done, true);
    return NULL;
}

Test(app, routes_answer_over_a_real_socket)
{
    static const char filter_body[] = "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\","
                                      "\"uid\":\"u-1\",\"annotations\":{\"gpu-extender.io/"
                                      "time-slices\":\"1\"}},\"spec\":{\"containers\":[{\"name\":"
                                      "\"c\"}]}},\"NodeNames\":[\"gpu-node-a\",\"cpu-node-d\"]}";
    struct rig r;
    struct gx_why why = {{0}};
    char filter_req[1024];
    struct call calls[6] = {
        {0, "GET /healthz HTTP/1.0\r\n\r\n", ""},
        {0, "GET /gpu-extender/filter HTTP/1.0\r\n\r\n", ""},
        {0, "POST /nope HTTP/1.0\r\nContent-Length: 0\r\n\r\n", ""},
        {0, filter_req, ""},
        {0, "GET /readyz HTTP/1.0\r\n\r\n", ""},
        {0, "GET /metrics HTTP/1.0\r\n\r\n", ""},
    };
    struct client cl = {calls, 6, false};
    pthread_t t;

    (void)snprintf(filter_req, sizeof(filter_req),
                   "POST /gpu-extender/filter HTTP/1.0\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n%s",
                   strlen(filter_body), filter_body);
    rig_up(&r);
    cr_assert_eq(gx_app_listen(r.app, &why), GX_OK, "%s", why.text);
    for (size_t i = 0; i < 6; i++) {
        calls[i].port = gx_app_port(r.app);
    }
    cr_assert_eq(pthread_create(&t, NULL, client_main, &cl), 0);
    while (!atomic_load(&cl.done)) {
        (void)event_base_loop(r.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        (void)usleep(1000);
    }
    (void)pthread_join(t, NULL);
    cr_assert(strncmp(calls[0].response, "HTTP/1.0 200", 12) == 0 ||
                  strncmp(calls[0].response, "HTTP/1.1 200", 12) == 0,
              "%s", calls[0].response);
    cr_assert_not_null(strstr(calls[0].response, "{\"status\":\"ok\"}"));
    cr_assert_not_null(strstr(calls[1].response, " 405 "), "%s", calls[1].response);
    cr_assert_not_null(strstr(calls[1].response, "use POST"), "%s", calls[1].response);
    cr_assert_not_null(strstr(calls[2].response, " 404 "), "%s", calls[2].response);
    cr_assert_not_null(strstr(calls[2].response, "\"error\""), "%s", calls[2].response);
    cr_assert_not_null(strstr(calls[3].response, " 200 "), "%s", calls[3].response);
    cr_assert_not_null(strstr(calls[3].response, "node has no GPUs"), "%s", calls[3].response);
    cr_assert_not_null(strstr(calls[4].response, " 200 "), "%s", calls[4].response);
    cr_assert_not_null(strstr(calls[5].response, "text/plain"), "%s", calls[5].response);
    cr_assert_not_null(strstr(calls[5].response, "gpu_extender_requests_total"), "%.400s",
                       calls[5].response);
    rig_down(&r);
}
