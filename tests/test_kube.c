/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kube.c - list+watch against a scripted fake API server that runs in
 * a thread of the test on 127.0.0.1:0. Each test gives the server a
 * handler that answers lists and watches by how many came before; the
 * test drives the event loop until the node store reaches the expected
 * state or a deadline passes.
 */
#include "gx_test.h"

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "httpc.h"
#include "kube.h"
#include "metrics.h"
#include "gx_fakehttp.h"
#include "kube_int.h"

GX_SUITE(kube);

#define DEADLINE_MS 8000
#define MAX_URLS 32

/* ---- the fake API server ---- */

enum req_kind { RQ_NODE_LIST, RQ_NODE_WATCH, RQ_POD_LIST, RQ_POD_WATCH, RQ_OTHER, RQ_KINDS };

struct fake_req {
    enum req_kind kind;
    int nth;                                   /* 1 for the first request of this kind */
    const char *method, *target, *auth, *body; /* of the request, borrowed */
};

struct fake;
typedef void (*fake_handler)(struct fake *f, int fd, const struct fake_req *r);

struct fake {
    struct gx_fakehttp *srv;
    fake_handler handler;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    int step;            /* advanced by the test */
    int count[RQ_KINDS]; /* requests seen per kind */
    char urls[RQ_KINDS][MAX_URLS][2048];
    char last_auth[1024];
};

/* Send @s as @pieces chunks with a small pause between them. */
static void
chunk_split(int fd, const char *s, int pieces)
{
    size_t len = strlen(s), step = (len + (size_t)pieces - 1) / (size_t)pieces;

    for (size_t off = 0; off < len; off += step) {
        gx_fakehttp_chunk(fd, s + off, len - off < step ? len - off : step);
        gx_fakehttp_msleep(15);
    }
}

/* Block the handler until the test reaches @step (or the server stops). */
static void
wait_step(struct fake *f, int step)
{
    pthread_mutex_lock(&f->mu);
    while (f->step < step && !f->stop) {
        pthread_cond_wait(&f->cv, &f->mu);
    }
    pthread_mutex_unlock(&f->mu);
}

static void
set_step(struct fake *f, int step)
{
    pthread_mutex_lock(&f->mu);
    f->step = step;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static int
count_of(struct fake *f, enum req_kind kind)
{
    int n;

    pthread_mutex_lock(&f->mu);
    n = f->count[kind];
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Copy of the @nth (1-based) request target of @kind, "" if none yet. */
static void
url_of(struct fake *f, enum req_kind kind, int nth, char *out, size_t n)
{
    pthread_mutex_lock(&f->mu);
    out[0] = '\0';
    if (nth >= 1 && nth <= f->count[kind] && nth <= MAX_URLS) {
        (void)snprintf(out, n, "%s", f->urls[kind][nth - 1]);
    }
    pthread_mutex_unlock(&f->mu);
}

static enum req_kind
classify(const char *target)
{
    bool watch = strstr(target, "watch=1") != NULL;

    if (strncmp(target, "/api/v1/nodes", 13) == 0 && (target[13] == '?' || target[13] == '\0')) {
        return watch ? RQ_NODE_WATCH : RQ_NODE_LIST;
    }
    if (strncmp(target, "/api/v1/pods", 12) == 0 && (target[12] == '?' || target[12] == '\0')) {
        return watch ? RQ_POD_WATCH : RQ_POD_LIST;
    }
    return RQ_OTHER;
}

/* Count the request, then hand it to the test's handler. */
static void
dispatch(void *ctx, int fd, const struct gx_fakehttp_req *h)
{
    struct fake *f = ctx;
    struct fake_req r = {classify(h->target), 0, h->method, h->target, h->auth, h->body};

    pthread_mutex_lock(&f->mu);
    r.nth = ++f->count[r.kind];
    if (r.nth <= MAX_URLS) {
        (void)snprintf(f->urls[r.kind][r.nth - 1], sizeof(f->urls[0][0]), "%s", r.target);
    }
    (void)snprintf(f->last_auth, sizeof(f->last_auth), "%s", r.auth);
    pthread_mutex_unlock(&f->mu);
    f->handler(f, fd, &r);
}

static struct fake *
fake_start(fake_handler h)
{
    struct fake *f = calloc(1, sizeof(*f));

    cr_assert_not_null(f);
    f->handler = h;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->srv = gx_fakehttp_start(dispatch, f);
    return f;
}

static void
fake_stop(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->stop = true; /* releases the handlers that wait */
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_stop(f->srv);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}

/* ---- API objects built from the fixtures ---- */

static cJSON *
fixture_json(const char *name)
{
    size_t len;
    char *text = gx_fixture(name, &len);
    cJSON *j = cJSON_ParseWithLength(text, len);

    free(text);
    cr_assert_not_null(j);
    return j;
}

/* A copy of node @from of nodelist.json named @as, with @rv and an optional label. */
static cJSON *
node_item(const char *from, const char *as, const char *rv, const char *lkey, const char *lval)
{
    cJSON *list = fixture_json("nodelist.json"), *item, *out = NULL, *md;

    cJSON_ArrayForEach(item, cJSON_GetObjectItem(list, "items"))
    {
        md = cJSON_GetObjectItem(item, "metadata");
        if (strcmp(cJSON_GetObjectItem(md, "name")->valuestring, from) == 0) {
            out = cJSON_Duplicate(item, 1);
        }
    }
    cJSON_Delete(list);
    cr_assert_not_null(out, "node %s in the fixture", from);
    md = cJSON_GetObjectItem(out, "metadata");
    cJSON_ReplaceItemInObject(md, "name", cJSON_CreateString(as));
    if (rv != NULL) {
        cJSON_ReplaceItemInObject(md, "resourceVersion", cJSON_CreateString(rv));
    }
    if (lkey != NULL) {
        cJSON_AddStringToObject(cJSON_GetObjectItem(md, "labels"), lkey, lval);
    }
    return out;
}

static char *
print_free(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);

    cJSON_Delete(j);
    cr_assert_not_null(s);
    return s;
}

/* A NodeList at @rv of the fixture nodes in @pairs ({from, as}, NULL-terminated). */
static char *
node_list(const char *rv, const char *const *pairs)
{
    cJSON *list = cJSON_CreateObject(), *items = cJSON_CreateArray(), *md = cJSON_CreateObject();

    cJSON_AddStringToObject(list, "kind", "NodeList");
    cJSON_AddStringToObject(list, "apiVersion", "v1");
    cJSON_AddStringToObject(md, "resourceVersion", rv);
    cJSON_AddItemToObject(list, "metadata", md);
    for (size_t i = 0; pairs[i] != NULL; i += 2) {
        cJSON_AddItemToArray(items, node_item(pairs[i], pairs[i + 1], NULL, NULL, NULL));
    }
    cJSON_AddItemToObject(list, "items", items);
    return print_free(list);
}

static const char *const ALL_NODES[] = {"gpu-node-a", "gpu-node-a", "gpu-node-b",
                                        "gpu-node-b", "gpu-node-c", "gpu-node-c",
                                        "cpu-node-d", "cpu-node-d", NULL};

/* One watch event line with a trailing newline. */
static char *
event_line(const char *type, cJSON *obj)
{
    cJSON *ev = cJSON_CreateObject();
    char *s, *line;
    size_t len;

    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddItemToObject(ev, "object", obj);
    s = print_free(ev);
    len = strlen(s);
    line = malloc(len + 2);
    cr_assert_not_null(line);
    memcpy(line, s, len);
    line[len] = '\n';
    line[len + 1] = '\0';
    free(s);
    return line;
}

static char *
gone_event(void)
{
    cJSON *st = cJSON_Parse("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                            "\"status\":\"Failure\",\"message\":\"too old resource version: 1 "
                            "(48213550)\",\"reason\":\"Expired\",\"code\":410}");
    return event_line("ERROR", st);
}

static char *
bookmark_event(const char *rv)
{
    cJSON *o = cJSON_CreateObject(), *md = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "kind", "Node");
    cJSON_AddStringToObject(md, "resourceVersion", rv);
    cJSON_AddItemToObject(o, "metadata", md);
    return event_line("BOOKMARK", o);
}

static cJSON *
managed_pod(const char *rv)
{
    cJSON *pod = fixture_json("pod-gpu.json");
    cJSON *md = cJSON_GetObjectItem(pod, "metadata");

    cJSON_AddStringToObject(cJSON_GetObjectItem(md, "labels"), "gpu-extender.io/managed", "true");
    cJSON_ReplaceItemInObject(md, "resourceVersion", cJSON_CreateString(rv));
    return pod;
}

static char *
pod_list(void)
{
    cJSON *list = cJSON_CreateObject(), *items = cJSON_CreateArray();

    cJSON_AddItemToObject(list, "metadata", cJSON_Parse("{\"resourceVersion\":\"900\"}"));
    cJSON_AddItemToArray(items, managed_pod("880"));
    cJSON_AddItemToObject(list, "items", items);
    return print_free(list);
}

/* Pods: a one-pod list, then a watch that adds the pod again and stays open. */
static void
serve_pods(struct fake *f, int fd, const struct fake_req *r)
{
    char *s;

    if (r->kind == RQ_POD_LIST) {
        s = pod_list();
        gx_fakehttp_respond(fd, 200, s);
        free(s);
        return;
    }
    gx_fakehttp_chunk_head(fd);
    if (r->nth == 1) {
        s = event_line("ADDED", managed_pod("901"));
        chunk_split(fd, s, 2);
        free(s);
    }
    wait_step(f, 1000);
    gx_fakehttp_chunk_end(fd);
}

/* A watch that stays open (silent) until the server stops. */
static void
hold_watch(struct fake *f, int fd)
{
    gx_fakehttp_chunk_head(fd);
    wait_step(f, 1000);
    gx_fakehttp_chunk_end(fd);
}

/* ---- the client side ---- */

struct env {
    struct event_base *base;
    struct event *tick;
    struct gx_httpc *http;
    struct gx_config *cfg;
    struct gx_metrics m;
    struct gx_kube *k;
    struct fake *f;
    int nodes_changed;
    int pods_listed;
    size_t pods_listed_n;
    char listed_pod[128];
    int pod_events;
    enum gx_watch_type pod_event_type;
    char event_pod[128];
};

static void
on_nodes_changed(void *ctx)
{
    struct env *e = ctx;

    e->nodes_changed++;
}

static void
on_pod_event(void *ctx, enum gx_watch_type type, const struct gx_pod *pod)
{
    struct env *e = ctx;

    e->pod_events++;
    e->pod_event_type = type;
    (void)snprintf(e->event_pod, sizeof(e->event_pod), "%s/%s", pod->namespace, pod->name);
}

static void
on_pods_listed(void *ctx, const struct gx_pod *pods, size_t n)
{
    struct env *e = ctx;

    e->pods_listed++;
    e->pods_listed_n = n;
    if (n > 0) {
        (void)snprintf(e->listed_pod, sizeof(e->listed_pod), "%s/%s", pods[0].namespace,
                       pods[0].name);
    }
}

static const struct gx_kube_cbs CBS = {on_nodes_changed, on_pod_event, on_pods_listed};

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static char *
dup_str(const char *s)
{
    char *d = gx_strndup(s, strlen(s));

    cr_assert_not_null(d);
    return d;
}

/* Config, loop and client against a fresh fake server running @h (kube not started). */
static void
env_init(struct env *e, fake_handler h)
{
    struct timeval tv = {0, 10000};
    char url[64];

    memset(e, 0, sizeof(*e));
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("all_proxy");
    unsetenv("ALL_PROXY");
    e->f = fake_start(h);
    cr_assert_eq(gx_config_default(&e->cfg), GX_OK);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d/", gx_fakehttp_port(e->f->srv));
    free(e->cfg->kube_url);
    e->cfg->kube_url = dup_str(url);
    e->cfg->kube_enabled = true;
    e->cfg->kube_timeout_s = 5;
    e->cfg->kube_watch_timeout_s = 300;
    e->cfg->kube_max_event_bytes = 1u << 20;
    e->cfg->kube_max_list_bytes = 16u << 20;
    gx_metrics_init(&e->m);
    e->base = event_base_new();
    cr_assert_not_null(e->base);
    e->tick = event_new(e->base, -1, EV_PERSIST, tick_cb, NULL);
    cr_assert_not_null(e->tick);
    cr_assert_eq(event_add(e->tick, &tv), 0);
    e->http = gx_httpc_new(e->base);
    cr_assert_not_null(e->http);
}

static void
env_start(struct env *e)
{
    struct gx_why why = {{0}};

    e->k = gx_kube_new(e->base, e->http, e->cfg, &e->m.up[GX_UP_KUBERNETES], &CBS, e, &why);
    cr_assert_not_null(e->k, "gx_kube_new: %s", why.text);
}

static void
env_fini(struct env *e)
{
    gx_kube_free(e->k);
    gx_httpc_free(e->http);
    fake_stop(e->f);
    event_free(e->tick);
    event_base_free(e->base);
    gx_config_free(e->cfg);
}

typedef bool (*cond_fn)(struct env *e, const void *arg);

/* Run the loop until @cond holds; false at the deadline. */
static bool
run_until(struct env *e, cond_fn cond, const void *arg)
{
    int64_t deadline = gx_mono_ms() + DEADLINE_MS;

    while (!cond(e, arg)) {
        if (gx_mono_ms() > deadline) {
            return false;
        }
        (void)event_base_loop(e->base, EVLOOP_ONCE);
    }
    return true;
}

/* The current node names, comma-separated in array order. */
static void
node_names(struct env *e, char *out, size_t n)
{
    size_t cnt = 0, off = 0;
    const struct gx_node_info *nodes = gx_kube_nodes(e->k, &cnt);

    out[0] = '\0';
    for (size_t i = 0; i < cnt && off < n; i++) {
        off += (size_t)snprintf(out + off, n - off, "%s%s", i ? "," : "", nodes[i].name);
    }
}

static bool
names_are(struct env *e, const void *arg)
{
    char names[512];

    node_names(e, names, sizeof(names));
    return strcmp(names, arg) == 0;
}

static const struct gx_node_info *
find_node(struct env *e, const char *name)
{
    size_t n = 0;
    const struct gx_node_info *nodes = gx_kube_nodes(e->k, &n);

    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].name, name) == 0) {
            return &nodes[i];
        }
    }
    return NULL;
}

static const char *
node_label(struct env *e, const char *node, const char *key)
{
    const struct gx_node_info *ni = find_node(e, node);

    return ni != NULL ? gx_kv_get(ni->labels, ni->n_labels, key) : NULL;
}

struct label_want {
    const char *node, *key, *value; /* value NULL: the label is absent */
};

static bool
label_is(struct env *e, const void *arg)
{
    const struct label_want *w = arg;
    const char *v = node_label(e, w->node, w->key);

    if (find_node(e, w->node) == NULL) {
        return false;
    }
    return w->value == NULL ? v == NULL : v != NULL && strcmp(v, w->value) == 0;
}

static bool
kube_errors_at_least(struct env *e, const void *arg)
{
    const int *want = arg; /* {kind, count} */

    return e->m.up[GX_UP_KUBERNETES].errors[want[0]] >= (uint64_t)want[1];
}

static bool
requests_at_least(struct env *e, const void *arg)
{
    const int *want = arg; /* {kind, count} */

    return count_of(e->f, (enum req_kind)want[0]) >= want[1];
}

static bool
pods_seen(struct env *e, const void *arg)
{
    (void)arg;
    return e->pods_listed >= 1 && e->pod_events >= 1;
}

/* gx_kube_lists counts node and pod lists: read it once both first lists landed. */
static bool
pods_listed(struct env *e, const void *arg)
{
    (void)arg;
    return e->pods_listed >= 1;
}

static uint64_t
lists_settled(struct env *e)
{
    cr_assert(run_until(e, pods_listed, NULL));
    return gx_kube_lists(e->k);
}

static uint64_t
kube_error_total(const struct env *e)
{
    uint64_t t = 0;

    for (int i = 0; i < GX_UPERR_COUNT; i++) {
        t += e->m.up[GX_UP_KUBERNETES].errors[i];
    }
    return t;
}

/* ---- scenario: list, watch events, 410, relist ---- */

static void
serve_main(struct fake *f, int fd, const struct fake_req *r)
{
    static const char *const relist[] = {"gpu-node-b", "gpu-node-b", "gpu-node-c", "gpu-node-c",
                                         "gpu-node-a", "gpu-node-e", NULL};
    char *s;

    switch (r->kind) {
    case RQ_NODE_LIST:
        s = r->nth == 1 ? node_list("48213402", ALL_NODES) : node_list("48213600", relist);
        gx_fakehttp_respond(fd, 200, s);
        free(s);
        break;
    case RQ_NODE_WATCH:
        if (r->nth > 1) {
            gx_fakehttp_chunk_head(fd);
            s = bookmark_event("48213700");
            gx_fakehttp_chunk(fd, s, strlen(s));
            free(s);
            wait_step(f, 1000);
            gx_fakehttp_chunk_end(fd);
            break;
        }
        gx_fakehttp_chunk_head(fd);
        s = event_line("MODIFIED", node_item("gpu-node-a", "gpu-node-a", "48213500",
                                             "test.gpu-extender.io/changed", "yes"));
        chunk_split(fd, s, 4);
        free(s);
        wait_step(f, 1);
        s = event_line("DELETED", node_item("cpu-node-d", "cpu-node-d", "48213501", NULL, NULL));
        chunk_split(fd, s, 3);
        free(s);
        wait_step(f, 2);
        s = gone_event();
        chunk_split(fd, s, 2);
        free(s);
        gx_fakehttp_chunk_end(fd);
        break;
    case RQ_POD_LIST:
    case RQ_POD_WATCH:
        serve_pods(f, fd, r);
        break;
    default:
        gx_fakehttp_respond(fd, 404, "{}");
        break;
    }
}

Test(kube, lists_applies_watch_events_and_relists_after_gone)
{
    struct env e;
    char url[2048];
    uint64_t lists;
    int changed;
    const struct label_want modified = {"gpu-node-a", "test.gpu-extender.io/changed", "yes"};

    env_init(&e, serve_main);
    e.cfg->kube_node_selector = dup_str("nvidia.com/gpu.present=true");
    env_start(&e);
    cr_assert_not(gx_kube_nodes_synced(e.k));

    /* The list: four nodes, sorted by name; the selector went out escaped. */
    cr_assert(run_until(&e, names_are, "cpu-node-d,gpu-node-a,gpu-node-b,gpu-node-c"));
    cr_assert(gx_kube_nodes_synced(e.k));
    cr_assert_geq(e.nodes_changed, 1);
    url_of(e.f, RQ_NODE_LIST, 1, url, sizeof(url));
    cr_assert_str_eq(url, "/api/v1/nodes?labelSelector=nvidia.com%2Fgpu.present%3Dtrue");
    cr_assert_null(node_label(&e, "gpu-node-a", "test.gpu-extender.io/changed"));

    /* A MODIFIED event split over several writes changes one label. */
    changed = e.nodes_changed;
    cr_assert(run_until(&e, label_is, &modified));
    cr_assert_gt(e.nodes_changed, changed);
    cr_assert_str_eq(node_label(&e, "gpu-node-b", "nvidia.com/gpu.present"), "true");
    url_of(e.f, RQ_NODE_WATCH, 1, url, sizeof(url));
    cr_assert(strstr(url, "watch=1") != NULL, "%s", url);
    cr_assert(strstr(url, "allowWatchBookmarks=true") != NULL, "%s", url);
    cr_assert(strstr(url, "resourceVersion=48213402") != NULL, "%s", url);
    cr_assert(strstr(url, "labelSelector=nvidia.com%2Fgpu.present%3Dtrue") != NULL, "%s", url);

    /* DELETED removes the node. */
    set_step(e.f, 1);
    cr_assert(run_until(&e, names_are, "gpu-node-a,gpu-node-b,gpu-node-c"));

    /* The pods: a complete list, then a watch event. */
    cr_assert(run_until(&e, pods_seen, NULL));
    cr_assert_eq(e.pods_listed_n, 1);
    cr_assert_str_eq(e.listed_pod, "ml-research/llm-eval-job-8f4kq");
    cr_assert_eq(e.pod_event_type, GX_WATCH_ADDED);
    cr_assert_str_eq(e.event_pod, "ml-research/llm-eval-job-8f4kq");
    url_of(e.f, RQ_POD_LIST, 1, url, sizeof(url));
    cr_assert_str_eq(url, "/api/v1/pods?labelSelector=gpu-extender.io%2Fmanaged%3Dtrue");

    /* 410 Gone in the stream: relist; the node set is exactly the new list. */
    lists = lists_settled(&e);
    set_step(e.f, 2);
    cr_assert(run_until(&e, names_are, "gpu-node-b,gpu-node-c,gpu-node-e"));
    cr_assert_eq(gx_kube_lists(e.k), lists + 1);
    cr_assert_eq(e.m.up[GX_UP_KUBERNETES].errors[GX_UPERR_GONE], 1);
    cr_assert_eq(count_of(e.f, RQ_NODE_LIST), 2);
    cr_assert_null(node_label(&e, "gpu-node-e", "test.gpu-extender.io/changed"));

    /* The next watch starts from the new list's resourceVersion. */
    {
        const int want[2] = {RQ_NODE_WATCH, 2};
        cr_assert(run_until(&e, requests_at_least, want));
    }
    url_of(e.f, RQ_NODE_WATCH, 2, url, sizeof(url));
    cr_assert(strstr(url, "resourceVersion=48213600") != NULL, "%s", url);
    cr_assert_geq(e.m.up[GX_UP_KUBERNETES].syncs, 3);
    cr_assert_gt(e.m.up[GX_UP_KUBERNETES].last_success_ms, 0);
    env_fini(&e);
}

/* ---- scenario: damaged lists keep the previous nodes ---- */

static void
serve_truncated_lists(struct fake *f, int fd, const struct fake_req *r)
{
    static const char *const two[] = {"gpu-node-b", "gpu-node-b", "cpu-node-d", "cpu-node-d", NULL};
    char head[256], *s;
    int n;

    switch (r->kind) {
    case RQ_NODE_LIST:
        s = node_list(r->nth >= 4 ? "48213800" : "48213402", r->nth >= 4 ? two : ALL_NODES);
        if (r->nth == 2) {
            /* The connection drops half-way through the promised body. */
            n = snprintf(head, sizeof(head),
                         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                         strlen(s));
            gx_fakehttp_send(fd, head, (size_t)n);
            gx_fakehttp_send(fd, s, strlen(s) / 2);
        } else if (r->nth == 3) {
            /* A complete response whose body is half a NodeList. */
            s[strlen(s) / 2] = '\0';
            wait_step(f, 1);
            gx_fakehttp_respond(fd, 200, s);
        } else {
            gx_fakehttp_respond(fd, 200, s);
        }
        free(s);
        break;
    case RQ_NODE_WATCH:
        if (r->nth == 1) {
            gx_fakehttp_chunk_head(fd);
            s = gone_event();
            gx_fakehttp_chunk(fd, s, strlen(s));
            free(s);
            gx_fakehttp_chunk_end(fd);
        } else {
            hold_watch(f, fd);
        }
        break;
    case RQ_POD_LIST:
    case RQ_POD_WATCH:
        serve_pods(f, fd, r);
        break;
    default:
        gx_fakehttp_respond(fd, 404, "{}");
        break;
    }
}

Test(kube, truncated_list_keeps_previous_nodes)
{
    struct env e;
    const int third_list[2] = {RQ_NODE_LIST, 3};
    const int parse_err[2] = {GX_UPERR_PARSE, 1};
    uint64_t lists, errors;

    env_init(&e, serve_truncated_lists);
    env_start(&e);
    cr_assert(run_until(&e, names_are, "cpu-node-d,gpu-node-a,gpu-node-b,gpu-node-c"));
    errors = kube_error_total(&e);
    lists = lists_settled(&e);

    /* The watch says 410; the relist drops mid-body: the four nodes stay. */
    cr_assert(run_until(&e, requests_at_least, third_list));
    cr_assert_geq(kube_error_total(&e), errors + 2); /* the 410 and the dropped list */
    cr_assert_eq(e.m.up[GX_UP_KUBERNETES].errors[GX_UPERR_GONE], 1);
    cr_assert(names_are(&e, "cpu-node-d,gpu-node-a,gpu-node-b,gpu-node-c"));

    /* The next one is a complete response with half a list: still the four nodes. */
    set_step(e.f, 1);
    cr_assert(run_until(&e, kube_errors_at_least, parse_err));
    cr_assert(names_are(&e, "cpu-node-d,gpu-node-a,gpu-node-b,gpu-node-c"));
    cr_assert(gx_kube_nodes_synced(e.k));
    cr_assert_eq(gx_kube_lists(e.k), lists);
    cr_assert_str_eq(node_label(&e, "gpu-node-a", "nvidia.com/gpu.present"), "true");

    /* A good list after the backoff replaces the set. */
    cr_assert(run_until(&e, names_are, "cpu-node-d,gpu-node-b"));
    cr_assert_eq(gx_kube_lists(e.k), lists + 1);
    env_fini(&e);
}

/* ---- scenario: a garbage line aborts the stream; nothing after it applies ---- */

static void
serve_garbage(struct fake *f, int fd, const struct fake_req *r)
{
    char *a, *b, *s;
    size_t la, lb;
    static const char junk[] = "<html>502 Bad Gateway</html> {\"type\":\n";

    switch (r->kind) {
    case RQ_NODE_LIST:
        if (r->nth == 2) {
            wait_step(f, 1);
        }
        s = node_list("48213402", ALL_NODES);
        gx_fakehttp_respond(fd, 200, s);
        free(s);
        break;
    case RQ_NODE_WATCH:
        if (r->nth > 1) {
            hold_watch(f, fd);
            break;
        }
        a = event_line("MODIFIED", node_item("gpu-node-a", "gpu-node-a", "48213500",
                                             "test.gpu-extender.io/changed", "a"));
        b = event_line("MODIFIED", node_item("gpu-node-b", "gpu-node-b", "48213502",
                                             "test.gpu-extender.io/changed", "b"));
        la = strlen(a);
        lb = strlen(b);
        s = malloc(la + sizeof(junk) + lb);
        cr_assert_not_null(s);
        memcpy(s, a, la);
        memcpy(s + la, junk, sizeof(junk) - 1);
        memcpy(s + la + sizeof(junk) - 1, b, lb + 1);
        gx_fakehttp_chunk_head(fd);
        gx_fakehttp_chunk(fd, s, strlen(s));
        free(a);
        free(b);
        free(s);
        wait_step(f, 1000);
        gx_fakehttp_chunk_end(fd);
        break;
    case RQ_POD_LIST:
    case RQ_POD_WATCH:
        serve_pods(f, fd, r);
        break;
    default:
        gx_fakehttp_respond(fd, 404, "{}");
        break;
    }
}

Test(kube, garbage_line_aborts_stream_and_relists)
{
    struct env e;
    const int parse_err[2] = {GX_UPERR_PARSE, 1};
    const struct label_want a_plain = {"gpu-node-a", "test.gpu-extender.io/changed", NULL};
    uint64_t lists;

    env_init(&e, serve_garbage);
    env_start(&e);
    cr_assert(run_until(&e, names_are, "cpu-node-d,gpu-node-a,gpu-node-b,gpu-node-c"));
    lists = lists_settled(&e);
    cr_assert(run_until(&e, kube_errors_at_least, parse_err));
    /* The event before the bad line applied, the one after it did not. */
    cr_assert_str_eq(node_label(&e, "gpu-node-a", "test.gpu-extender.io/changed"), "a");
    cr_assert_null(node_label(&e, "gpu-node-b", "test.gpu-extender.io/changed"));
    set_step(e.f, 1);
    cr_assert(run_until(&e, label_is, &a_plain));
    cr_assert_eq(gx_kube_lists(e.k), lists + 1);
    cr_assert_eq(count_of(e.f, RQ_NODE_LIST), 2);
    env_fini(&e);
}

/* ---- scenario: dropped and ended watches resume from the last resourceVersion ---- */

static void
serve_drops(struct fake *f, int fd, const struct fake_req *r)
{
    char *s;

    switch (r->kind) {
    case RQ_NODE_LIST:
        s = node_list("48213402", ALL_NODES);
        gx_fakehttp_respond(fd, 200, s);
        free(s);
        break;
    case RQ_NODE_WATCH:
        gx_fakehttp_chunk_head(fd);
        if (r->nth == 1) {
            /* One event, then half of another, then the connection dies. */
            s = event_line("MODIFIED", node_item("gpu-node-a", "gpu-node-a", "48213500",
                                                 "test.gpu-extender.io/changed", "one"));
            gx_fakehttp_chunk(fd, s, strlen(s));
            free(s);
            s = event_line("MODIFIED", node_item("gpu-node-b", "gpu-node-b", "48213501",
                                                 "test.gpu-extender.io/changed", "half"));
            gx_fakehttp_chunk(fd, s, strlen(s) / 2);
            free(s);
            shutdown(fd, SHUT_RDWR);
        } else if (r->nth == 2) {
            /* A bookmark, an event, and the server's timeout ends the watch cleanly. */
            s = bookmark_event("48213520");
            gx_fakehttp_chunk(fd, s, strlen(s));
            free(s);
            s = event_line("MODIFIED", node_item("gpu-node-c", "gpu-node-c", "48213530",
                                                 "test.gpu-extender.io/changed", "two"));
            chunk_split(fd, s, 3);
            free(s);
            gx_fakehttp_chunk_end(fd);
        } else {
            wait_step(f, 1000);
            gx_fakehttp_chunk_end(fd);
        }
        break;
    case RQ_POD_LIST:
    case RQ_POD_WATCH:
        serve_pods(f, fd, r);
        break;
    default:
        gx_fakehttp_respond(fd, 404, "{}");
        break;
    }
}

Test(kube, dropped_watch_resumes_from_last_resource_version)
{
    struct env e;
    const int third_watch[2] = {RQ_NODE_WATCH, 3};
    const struct label_want c_two = {"gpu-node-c", "test.gpu-extender.io/changed", "two"};
    char url[2048];

    env_init(&e, serve_drops);
    env_start(&e);
    cr_assert(run_until(&e, label_is, &c_two));
    cr_assert(run_until(&e, requests_at_least, third_watch));
    cr_assert_str_eq(node_label(&e, "gpu-node-a", "test.gpu-extender.io/changed"), "one");
    cr_assert_null(node_label(&e, "gpu-node-b", "test.gpu-extender.io/changed"));
    url_of(e.f, RQ_NODE_WATCH, 2, url, sizeof(url));
    cr_assert(strstr(url, "resourceVersion=48213500") != NULL, "%s", url);
    url_of(e.f, RQ_NODE_WATCH, 3, url, sizeof(url));
    cr_assert(strstr(url, "resourceVersion=48213530") != NULL, "%s", url);
    cr_assert_eq(count_of(e.f, RQ_NODE_LIST), 1);
    cr_assert_eq(e.m.up[GX_UP_KUBERNETES].errors[GX_UPERR_GONE], 0);
    cr_assert_geq(kube_error_total(&e), 1);
    env_fini(&e);
}

/* ---- scenario: watch refusals ---- */

static void
serve_refusals(struct fake *f, int fd, const struct fake_req *r)
{
    char *s;

    switch (r->kind) {
    case RQ_NODE_LIST:
        s = node_list("48213402", ALL_NODES);
        gx_fakehttp_respond(fd, 200, s);
        free(s);
        break;
    case RQ_NODE_WATCH:
        if (r->nth == 1) {
            gx_fakehttp_respond(
                fd, 410,
                "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Expired\","
                "\"code\":410}");
        } else if (r->nth == 2) {
            gx_fakehttp_respond(fd, 500, "{\"kind\":\"Status\",\"code\":500}");
        } else if (r->nth == 3) {
            /* One event larger than the configured cap. */
            gx_fakehttp_chunk_head(fd);
            s = event_line("MODIFIED", node_item("gpu-node-a", "gpu-node-a", "48213500",
                                                 "test.gpu-extender.io/changed", "big"));
            gx_fakehttp_chunk(fd, s, strlen(s));
            free(s);
            wait_step(f, 1000);
            gx_fakehttp_chunk_end(fd);
        } else {
            hold_watch(f, fd);
        }
        break;
    case RQ_POD_LIST:
    case RQ_POD_WATCH:
        serve_pods(f, fd, r);
        break;
    default:
        gx_fakehttp_respond(fd, 404, "{}");
        break;
    }
}

Test(kube, watch_refusals_relist_or_retry)
{
    struct env e;
    const int fourth_watch[2] = {RQ_NODE_WATCH, 4};
    char url[2048];

    env_init(&e, serve_refusals);
    e.cfg->kube_max_event_bytes = 4096; /* a node object is ~10 KiB */
    env_start(&e);
    cr_assert(run_until(&e, requests_at_least, fourth_watch));
    /* 410 as an HTTP status: relist. 500: retry the watch from the same place. */
    cr_assert_eq(e.m.up[GX_UP_KUBERNETES].errors[GX_UPERR_GONE], 1);
    cr_assert_geq(e.m.up[GX_UP_KUBERNETES].errors[GX_UPERR_HTTP], 1);
    url_of(e.f, RQ_NODE_WATCH, 3, url, sizeof(url));
    cr_assert(strstr(url, "resourceVersion=48213402") != NULL, "%s", url);
    /* The oversized event: counted as a parse error, relisted, not applied. */
    cr_assert_geq(e.m.up[GX_UP_KUBERNETES].errors[GX_UPERR_PARSE], 1);
    cr_assert_eq(count_of(e.f, RQ_NODE_LIST), 3);
    cr_assert_null(node_label(&e, "gpu-node-a", "test.gpu-extender.io/changed"));
    cr_assert(names_are(&e, "cpu-node-d,gpu-node-a,gpu-node-b,gpu-node-c"));
    env_fini(&e);
}

/* ---- scenario: one-shot requests, token rotation, cancel ---- */

static void
serve_requests(struct fake *f, int fd, const struct fake_req *r)
{
    char *s;
    cJSON *j;

    switch (r->kind) {
    case RQ_NODE_LIST:
        s = node_list("1", ALL_NODES);
        gx_fakehttp_respond(fd, 200, s);
        free(s);
        break;
    case RQ_POD_LIST:
        gx_fakehttp_respond(fd, 200, "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}");
        break;
    case RQ_NODE_WATCH:
    case RQ_POD_WATCH:
        hold_watch(f, fd);
        break;
    default:
        if (strstr(r->target, "/hangup") != NULL) {
            break; /* the connection closes with no answer */
        }
        if (strstr(r->target, "/hang") != NULL) {
            wait_step(f, 1000);
            break;
        }
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "method", r->method);
        cJSON_AddStringToObject(j, "path", r->target);
        cJSON_AddStringToObject(j, "auth", r->auth);
        cJSON_AddStringToObject(j, "body", r->body != NULL ? r->body : "");
        s = print_free(j);
        gx_fakehttp_respond(fd, strstr(r->target, "/conflict") != NULL ? 409 : 201, s);
        free(s);
        break;
    }
}

struct reply {
    int calls;
    enum gx_err rc;
    long status;
    char body[4096];
};

static void
on_reply(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct reply *r = ctx;

    r->calls++;
    r->rc = rc;
    r->status = status;
    (void)snprintf(r->body, sizeof(r->body), "%.*s", (int)len, body);
}

static bool
replied(struct env *e, const void *arg)
{
    (void)e;
    return ((const struct reply *)arg)->calls > 0;
}

static void
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, true);
    cr_assert_eq(fclose(f), 0);
}

Test(kube, requests_carry_the_current_token)
{
    struct env e;
    struct reply r1 = {0}, r2 = {0}, r3 = {0}, hung = {0};
    char path[128], auth[1024];
    const char body[] = "{\"apiVersion\":\"v1\",\"kind\":\"Binding\"}";
    struct gx_httpc_xfer *x;

    (void)snprintf(path, sizeof(path), "/tmp/gx-kube-token-%ld", (long)getpid());
    write_file(path, "tok-one\n");
    env_init(&e, serve_requests);
    e.cfg->kube_token_file = dup_str(path);
    env_start(&e);
    cr_assert(run_until(&e, names_are, "cpu-node-d,gpu-node-a,gpu-node-b,gpu-node-c"));
    pthread_mutex_lock(&e.f->mu);
    (void)snprintf(auth, sizeof(auth), "%s", e.f->last_auth);
    pthread_mutex_unlock(&e.f->mu);
    cr_assert_str_eq(auth, "Bearer tok-one");

    x = gx_kube_request(e.k, "POST", "/api/v1/namespaces/ns/pods/p/binding", body, sizeof(body) - 1,
                        "application/json", 0, on_reply, &r1);
    cr_assert_not_null(x);
    cr_assert(run_until(&e, replied, &r1));
    cr_assert_eq(r1.rc, GX_OK);
    cr_assert_eq(r1.status, 201);
    cr_assert(strstr(r1.body, "\"auth\":\"Bearer tok-one\"") != NULL, "%s", r1.body);
    cr_assert(strstr(r1.body, "\"method\":\"POST\"") != NULL, "%s", r1.body);
    cr_assert(strstr(r1.body, "\"path\":\"/api/v1/namespaces/ns/pods/p/binding\"") != NULL);
    cr_assert(strstr(r1.body, "Binding") != NULL, "%s", r1.body);

    /* The kubelet rotates the token: the next request carries the new one. */
    write_file(path, "tok-two-rotated\n");
    cr_assert_not_null(gx_kube_request(e.k, "PUT", "/apis/x/conflict", "{}", 2, "application/json",
                                       2000, on_reply, &r2));
    cr_assert(run_until(&e, replied, &r2));
    cr_assert_eq(r2.status, 409);
    cr_assert(strstr(r2.body, "\"auth\":\"Bearer tok-two-rotated\"") != NULL, "%s", r2.body);
    cr_assert_eq(e.m.up[GX_UP_KUBERNETES].errors[GX_UPERR_CONFLICT], 1);

    /* A cancelled request never calls back; a bad path is refused up front. */
    x = gx_kube_request(e.k, "GET", "/hang", NULL, 0, NULL, 0, on_reply, &hung);
    cr_assert_not_null(x);
    cr_assert_null(gx_kube_request(e.k, "GET", "no-slash", NULL, 0, NULL, 0, on_reply, &r3));
    cr_assert_not_null(
        gx_kube_request(e.k, "GET", "/api/v1/nodes/gpu-node-a", NULL, 0, NULL, 0, on_reply, &r3));
    gx_kube_cancel(e.k, x);
    cr_assert(run_until(&e, replied, &r3));
    cr_assert_eq(r3.status, 201);
    cr_assert_eq(hung.calls, 0);
    cr_assert_eq(r3.calls, 1);

    /* No answer at all: the body is what the transport said, for the caller's message. */
    memset(&r3, 0, sizeof(r3));
    cr_assert_not_null(gx_kube_request(e.k, "PATCH", "/hangup", "{}", 2,
                                       "application/merge-patch+json", 2000, on_reply, &r3));
    cr_assert(run_until(&e, replied, &r3));
    cr_assert_neq(r3.rc, GX_OK);
    cr_assert_eq(r3.status, 0);
    cr_assert(strstr(r3.body, "reply") != NULL, "curl's words: %s", r3.body);
    env_fini(&e);
    unlink(path);
}

/* ---- scenario: a changed node selector relists with it ---- */

static void
serve_plain(struct fake *f, int fd, const struct fake_req *r)
{
    char *s;

    switch (r->kind) {
    case RQ_NODE_LIST:
        s = node_list("48213402", ALL_NODES);
        gx_fakehttp_respond(fd, 200, s);
        free(s);
        break;
    case RQ_NODE_WATCH:
        hold_watch(f, fd);
        break;
    case RQ_POD_LIST:
    case RQ_POD_WATCH:
        serve_pods(f, fd, r);
        break;
    default:
        gx_fakehttp_respond(fd, 404, "{}");
        break;
    }
}

Test(kube, selector_change_relists_with_the_new_selector)
{
    struct env e;
    struct gx_config *cfg2 = NULL;
    const int first_watch[2] = {RQ_NODE_WATCH, 1};
    const int second_list[2] = {RQ_NODE_LIST, 2};
    const int second_watch[2] = {RQ_NODE_WATCH, 2};
    char url[2048];
    uint64_t lists;

    env_init(&e, serve_plain);
    env_start(&e);
    cr_assert(run_until(&e, requests_at_least, first_watch));
    lists = lists_settled(&e);
    url_of(e.f, RQ_NODE_LIST, 1, url, sizeof(url));
    cr_assert_str_eq(url, "/api/v1/nodes");

    cr_assert_eq(gx_config_default(&cfg2), GX_OK);
    free(cfg2->kube_url);
    cfg2->kube_url = dup_str(e.cfg->kube_url);
    cfg2->kube_node_selector = dup_str("pool in (gpu)");
    gx_kube_set_config(e.k, cfg2);
    cr_assert(run_until(&e, requests_at_least, second_list));
    cr_assert(run_until(&e, requests_at_least, second_watch));
    url_of(e.f, RQ_NODE_LIST, 2, url, sizeof(url));
    cr_assert_str_eq(url, "/api/v1/nodes?labelSelector=pool%20in%20%28gpu%29");
    url_of(e.f, RQ_NODE_WATCH, 2, url, sizeof(url));
    cr_assert(strstr(url, "labelSelector=pool%20in%20%28gpu%29") != NULL, "%s", url);
    cr_assert_eq(gx_kube_lists(e.k), lists + 1);
    /* The same config again changes nothing. */
    gx_kube_set_config(e.k, cfg2);
    for (int i = 0; i < 20; i++) {
        (void)event_base_loop(e.base, EVLOOP_ONCE);
    }
    cr_assert_eq(count_of(e.f, RQ_NODE_LIST), 2);
    env_fini(&e);
    gx_config_free(cfg2);
}

/* ---- connection settings ---- */

static struct gx_kube *
new_without_server(struct gx_config *cfg, struct event_base *base, struct gx_httpc *http,
                   struct gx_metrics *m, struct gx_why *why)
{
    return gx_kube_new(base, http, cfg, &m->up[GX_UP_KUBERNETES], &CBS, NULL, why);
}

Test(kube, in_cluster_settings_from_the_environment)
{
    struct event_base *base = event_base_new();
    struct gx_httpc *http = gx_httpc_new(base);
    struct gx_config *cfg = NULL;
    struct gx_metrics m;
    struct gx_why why = {{0}};
    struct gx_kube *k;

    gx_metrics_init(&m);
    cr_assert_eq(gx_config_default(&cfg), GX_OK);
    free(cfg->kube_url);
    cfg->kube_url = NULL;
    cfg->kube_insecure = true; /* no service-account CA bundle on the test machine */
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    cr_assert_null(new_without_server(cfg, base, http, &m, &why));
    cr_assert(strstr(why.text, "KUBERNETES_SERVICE_HOST") != NULL, "%s", why.text);

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    k = new_without_server(cfg, base, http, &m, &why);
    cr_assert_not_null(k, "%s", why.text);
    cr_assert_str_eq(gx_kube_base_url(k), "https://10.96.0.1:443");
    gx_kube_free(k);

    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    k = new_without_server(cfg, base, http, &m, &why);
    cr_assert_not_null(k, "%s", why.text);
    cr_assert_str_eq(gx_kube_base_url(k), "https://[fd00:10:96::1]:6443");
    cr_assert_not(gx_kube_nodes_synced(k));
    gx_kube_free(k);

    /* With verification on, the (missing) service-account CA makes it unusable. */
    cfg->kube_insecure = false;
    cr_assert_null(new_without_server(cfg, base, http, &m, &why));
    cr_assert(strstr(why.text, "ca.crt") != NULL, "%s", why.text);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");

    /* An explicit URL: trailing slashes go; an unreadable CA file is refused. */
    cfg->kube_url = dup_str("https://api.example:6443//");
    k = new_without_server(cfg, base, http, &m, &why);
    cr_assert_not_null(k, "%s", why.text);
    cr_assert_str_eq(gx_kube_base_url(k), "https://api.example:6443");
    gx_kube_free(k);
    cfg->kube_ca_file = dup_str("/nonexistent/gx-kube-test/ca.crt");
    cr_assert_null(new_without_server(cfg, base, http, &m, &why));
    cr_assert(strstr(why.text, "kubernetes.ca_file") != NULL, "%s", why.text);

    gx_httpc_free(http);
    event_base_free(base);
    gx_config_free(cfg);
}

/* ---- the node store: updates that change nothing a decision reads ---- */

/* Apply MODIFIED @obj (freed) to @ns; the store's verdict. */
static enum gx_err
modify(struct gx_kube_node_store *ns, cJSON *obj)
{
    struct gx_arena *a = malloc(sizeof(*a));
    struct gx_watch_event ev = {.type = GX_WATCH_MODIFIED};
    char *s = print_free(obj);
    struct gx_why why = {{0}};

    cr_assert_not_null(a);
    gx_arena_init(a, 0);
    cr_assert_eq(gx_kobj_decode_node(s, strlen(s), 64, a, &ev.obj.node, &why), GX_OK, "%s",
                 why.text);
    free(s);
    return gx_kube_node_store_event(ns, &ev, a);
}

Test(kube, node_updates_that_change_no_decision_input_change_nothing)
{
    static const char *const one[] = {"gpu-node-a", "gpu-node-a", NULL};
    struct gx_kube_node_store ns;
    struct gx_why why = {{0}};
    char *list = node_list("100", one), *rv = NULL;
    cJSON *hb, *cond;

    gx_kube_node_store_init(&ns);
    cr_assert_eq(gx_kube_node_store_list(&ns, list, strlen(list), 64, &rv, &why), GX_OK);
    /* a heartbeat: new resourceVersion, new condition times, an annotation */
    hb = node_item("gpu-node-a", "gpu-node-a", "101", NULL, NULL);
    cJSON_ArrayForEach(cond, cJSON_GetObjectItem(cJSON_GetObjectItem(hb, "status"), "conditions"))
    {
        cJSON_ReplaceItemInObject(cond, "lastHeartbeatTime",
                                  cJSON_CreateString("2026-12-02T08:00:00Z"));
    }
    cJSON_AddItemToObject(cJSON_GetObjectItem(hb, "metadata"), "annotations",
                          cJSON_Parse("{\"example.com/seen\":\"now\"}"));
    cr_assert_eq(modify(&ns, hb), GX_ENOTFOUND, "a heartbeat needs no new snapshot");
    cr_assert_eq(modify(&ns, node_item("gpu-node-a", "gpu-node-a", "102", "x.io/k", "v")), GX_OK,
                 "a new label does");
    cr_assert_eq(modify(&ns, node_item("gpu-node-a", "gpu-node-a", "103", "x.io/k", "w")), GX_OK,
                 "so does a changed value");
    cr_assert_eq(modify(&ns, node_item("gpu-node-a", "gpu-node-a", "104", "x.io/k", "w")),
                 GX_ENOTFOUND);
    hb = node_item("gpu-node-a", "gpu-node-a", "105", "x.io/k", "w");
    cJSON_AddItemToObject(cJSON_GetObjectItem(hb, "spec"), "unschedulable", cJSON_CreateTrue());
    cr_assert_eq(modify(&ns, hb), GX_OK, "cordoning does");
    gx_kube_node_store_release(&ns);
    free(list);
    free(rv);
}
