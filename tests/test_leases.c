/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_leases.c - the Lease codec (kobj decode + leases encode, escaping)
 * and the compare-and-swap state machine against a fake API server in a
 * thread of the test on 127.0.0.1:0 that holds one Lease with real
 * resourceVersion semantics (409 on a stale PUT), can be told to lose
 * races on purpose, and serves a Lease watch that sends every change.
 */
#include "gx_test.h"

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <pthread.h>
#include <string.h>

#include "config.h"
#include "httpc.h"
#include "kube.h"
#include "ledger.h"
#include "metrics.h"
#include "gx_fakehttp.h"
#include "leases_int.h"

GX_SUITE(leases);

#define DEADLINE_MS 8000
#define NS "gx"
#define NODE "n1"
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases"

/* ---- codec ---- */

static struct gx_ledger_node
one_tenant_node(struct gx_tenant *t)
{
    struct gx_ledger_node e = {0};

    memset(t, 0, sizeof(*t));
    (void)snprintf(t->uid, sizeof(t->uid), "uid-1");
    (void)snprintf(t->pod, sizeof(t->pod), "team-a/p1");
    t->card = 1;
    t->slices = 2;
    t->util_pct = -1;
    t->state = GX_TENANT_BOUND;
    t->since_ms = 1000;
    e.node = (char *)NODE;
    e.tenants = t;
    e.n_tenants = 1;
    return e;
}

Test(leases, encode_escapes_the_resource_version_and_round_trips)
{
    struct gx_tenant t, *got = NULL;
    struct gx_ledger_node e = one_tenant_node(&t);
    struct gx_buf b;
    struct gx_arena a;
    struct gx_lease lease;
    struct gx_why why = {{0}};
    const char *node = NULL;
    size_t n = 0;
    char rv[64];

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_leases_encode("gpu-extender-n1", NS, NODE, "12\"}", &e, &b), GX_OK);
    gx_arena_init(&a, 0);
    cr_assert_eq(gx_kobj_decode_lease(b.data, b.len, 64, &a, &lease, &why), GX_OK, "%s", why.text);
    cr_assert_str_eq(lease.resource_version, "12\"}");
    cr_assert_str_eq(lease.name, "gpu-extender-n1");
    cr_assert_str_eq(lease.namespace, NS);
    cr_assert_eq(gx_leases_decode(&lease, rv, sizeof(rv), &got, &n, &node, &why), GX_OK, "%s",
                 why.text);
    cr_assert_str_eq(rv, "12\"}");
    cr_assert_str_eq(node, NODE);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(got[0].uid, "uid-1");
    cr_assert_eq(got[0].card, 1);
    cr_assert_eq(got[0].slices, 2);
    free(got);
    gx_arena_release(&a);
    gx_buf_release(&b);
}

Test(leases, tenants_with_host_requests_round_trip)
{
    struct gx_tenant t, *got = NULL;
    struct gx_ledger_node e = one_tenant_node(&t);
    struct gx_buf b;
    struct gx_arena a;
    struct gx_lease lease;
    struct gx_why why = {{0}};
    size_t n = 0;
    char rv[64];

    /* every field the encoder writes must be one the decoder knows */
    t.cpu_milli = 100;
    t.host_mem_mib = 64;
    t.milli = 250;
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_leases_encode("gpu-extender-n1", NS, NODE, "7", &e, &b), GX_OK);
    gx_arena_init(&a, 0);
    cr_assert_eq(gx_kobj_decode_lease(b.data, b.len, 64, &a, &lease, &why), GX_OK, "%s", why.text);
    cr_assert_eq(gx_leases_decode(&lease, rv, sizeof(rv), &got, &n, NULL, &why), GX_OK, "%s",
                 why.text);
    cr_assert_eq(n, 1);
    cr_assert_eq(got[0].cpu_milli, 100);
    cr_assert_eq(got[0].host_mem_mib, 64);
    cr_assert_eq(got[0].milli, 250);
    free(got);
    gx_arena_release(&a);
    gx_buf_release(&b);
}

Test(leases, a_new_lease_has_no_resource_version)
{
    struct gx_buf b;

    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_leases_encode("gpu-extender-n1", NS, NODE, NULL, NULL, &b), GX_OK);
    cr_assert_null(strstr(b.data, "resourceVersion"));
    gx_buf_release(&b);
}

Test(leases, decode_rejects_a_lease_without_resource_version_or_with_bad_tenants)
{
    static const char *const bad[] = {
        "{\"metadata\":{\"name\":\"x\"}}",
        "{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"3\",\"annotations\":"
        "{\"gpu-extender.io/tenants\":\"not json\"}}}",
    };
    struct gx_why why = {{0}};

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        struct gx_arena a;
        struct gx_lease lease;
        struct gx_tenant *t = NULL;
        size_t n = 0;
        char rv[64] = "unchanged";

        gx_arena_init(&a, 0);
        cr_assert_eq(gx_kobj_decode_lease(bad[i], strlen(bad[i]), 64, &a, &lease, &why), GX_OK);
        cr_assert_neq(gx_leases_decode(&lease, rv, sizeof(rv), &t, &n, NULL, &why), GX_OK);
        cr_assert_str_eq(rv, "unchanged", "nothing written on failure");
        cr_assert_null(t);
        gx_arena_release(&a);
    }
}

Test(leases, kobj_rejects_wrongly_typed_annotations)
{
    const char *j = "{\"metadata\":{\"resourceVersion\":\"3\",\"annotations\":{\"a\":1}}}";
    struct gx_arena a;
    struct gx_lease lease;
    struct gx_why why = {{0}};

    gx_arena_init(&a, 0);
    cr_assert_eq(gx_kobj_decode_lease(j, strlen(j), 64, &a, &lease, &why), GX_EINVAL);
    cr_assert_not_null(strstr(why.text, "metadata.annotations"), "%s", why.text);
    gx_arena_release(&a);
}

/* ---- the fake API server: one Lease ---- */

struct fake {
    struct gx_fakehttp *srv;
    pthread_mutex_t mu;
    bool stop;
    /* the Lease */
    bool exists;
    long rv;          /* of the Lease; also the server's resourceVersion */
    char *tenants;    /* annotation value (JSON text), heap */
    int lose;         /* PUTs still to lose to an "other writer" */
    bool write_after; /* after a write, another writer writes too, before our answer */
    int fail_writes;  /* PUTs still to store and then answer 504 (landed, answer lost) */
    int drop_writes;  /* PUTs still to hang up on before they reach the Lease (a reset) */
    bool mute_watch;  /* the watch sends nothing: a watch that lags under load */
    char *late;       /* a Lease the watch sends once, as if delayed (heap) */
    int write_ms;     /* each write is answered this late: a slow API server */
    long list_as_of;  /* > 0: lists answer no Lease, as of this resourceVersion */
    bool late_sent;
    int puts, posts, gets, lists, watches, conflicts;
};

/* The Lease as the server shows it (caller holds mu); you own the string. */
static char *
lease_json(struct fake *f)
{
    cJSON *o = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
    char rv[32];
    char *s;

    (void)snprintf(rv, sizeof(rv), "%ld", f->rv);
    cJSON_AddStringToObject(o, "kind", "Lease");
    cJSON_AddStringToObject(md, "name", "gpu-extender-" NODE);
    cJSON_AddStringToObject(md, "namespace", NS);
    cJSON_AddStringToObject(md, "resourceVersion", rv);
    cJSON_AddStringToObject(ann, "gpu-extender.io/node", NODE);
    if (f->tenants != NULL) {
        cJSON_AddStringToObject(ann, "gpu-extender.io/tenants", f->tenants);
    }
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Store a written Lease body (caller holds mu). */
static void
store_body(struct fake *f, const char *body)
{
    cJSON *o = cJSON_Parse(body);
    cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "annotations");
    cJSON *t = cJSON_GetObjectItem(ann, "gpu-extender.io/tenants");

    free(f->tenants);
    f->tenants = cJSON_IsString(t) ? strdup(t->valuestring) : NULL;
    f->exists = true;
    f->rv++;
    cJSON_Delete(o);
}

/* What another replica does: book @uid on card 0. */
static void
other_writer(struct fake *f, const char *uid)
{
    char buf[512];

    (void)snprintf(buf, sizeof(buf),
                   "{\"v\":1,\"tenants\":[{\"uid\":\"%s\",\"pod\":\"team-b/other\","
                   "\"card\":0,\"exclusive\":false,\"slices\":1,\"memory_mib\":0,"
                   "\"util_pct\":-1,\"state\":\"bound\",\"since_ms\":1}]}",
                   uid);
    free(f->tenants);
    f->tenants = strdup(buf);
    f->exists = true;
    f->rv++;
}

/* Stream MODIFIED events for every change after @sent (the rv when the watch was counted). */
static void
serve_watch(struct fake *f, int fd, long sent)
{
    gx_fakehttp_chunk_head(fd);
    for (;;) {
        char *obj = NULL;
        bool stop;

        pthread_mutex_lock(&f->mu);
        stop = f->stop;
        if (f->late != NULL) {
            obj = f->late;
            f->late = NULL;
            f->late_sent = true;
        } else if (f->rv != sent && f->exists && !f->mute_watch) {
            obj = lease_json(f);
            sent = f->rv;
        }
        pthread_mutex_unlock(&f->mu);
        if (stop) {
            free(obj);
            break;
        }
        if (obj != NULL) {
            size_t n = strlen(obj) + 64;
            char *line = malloc(n);
            (void)snprintf(line, n, "{\"type\":\"MODIFIED\",\"object\":%s}\n", obj);
            gx_fakehttp_chunk(fd, line, strlen(line));
            free(line);
            free(obj);
        }
        gx_fakehttp_msleep(5);
    }
    gx_fakehttp_chunk_end(fd);
}

/* Wait f->write_ms before a write's answer (caller holds mu, held again on return). */
static void
slow_write(struct fake *f)
{
    int ms = f->write_ms;

    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_msleep(ms);
    pthread_mutex_lock(&f->mu);
}

static void
handle(void *ctx, int fd, const struct gx_fakehttp_req *r)
{
    struct fake *f = ctx;
    const char *method = r->method, *target = r->target, *body = r->body;
    char *obj;

    if (strncmp(target, "/api/v1/", 8) == 0) {
        if (strstr(target, "watch=1") != NULL) {
            gx_fakehttp_respond(fd, 200, ""); /* an empty watch: kube backs off */
        } else {
            gx_fakehttp_respond(fd, 200, "{\"items\":[],\"metadata\":{\"resourceVersion\":\"1\"}}");
        }
        return;
    }
    pthread_mutex_lock(&f->mu);
    if (strncmp(target, LEASE_PATH "?", sizeof(LEASE_PATH)) == 0 &&
        strstr(target, "watch=1") != NULL) {
        long sent = f->rv; /* read with the count: a write the test makes next is sent */

        f->watches++;
        pthread_mutex_unlock(&f->mu);
        serve_watch(f, fd, sent);
        return;
    }
    if (strncmp(target, LEASE_PATH "?", sizeof(LEASE_PATH)) == 0) {
        char rv[32], *list;
        size_t n;

        f->lists++;
        obj = f->exists && f->list_as_of == 0 ? lease_json(f) : NULL;
        (void)snprintf(rv, sizeof(rv), "%ld", f->list_as_of > 0 ? f->list_as_of : f->rv);
        n = (obj ? strlen(obj) : 0) + 128;
        list = malloc(n);
        (void)snprintf(list, n, "{\"items\":[%s],\"metadata\":{\"resourceVersion\":\"%s\"}}",
                       obj ? obj : "", rv);
        pthread_mutex_unlock(&f->mu);
        gx_fakehttp_respond(fd, 200, list);
        free(list);
        free(obj);
        return;
    }
    if (strcmp(method, "POST") == 0) {
        f->posts++;
        if (f->exists) {
            pthread_mutex_unlock(&f->mu);
            gx_fakehttp_respond(
                fd, 409, "{\"kind\":\"Status\",\"message\":\"already exists\",\"code\":409}");
            return;
        }
        store_body(f, body);
        obj = lease_json(f);
        slow_write(f);
        if (f->write_after) {
            other_writer(f, "uid-after"); /* the watch sends it while our answer waits */
        }
        pthread_mutex_unlock(&f->mu);
        if (f->write_after) {
            gx_fakehttp_msleep(300);
        }
        gx_fakehttp_respond(fd, 201, obj);
        free(obj);
        return;
    }
    if (strcmp(method, "PUT") == 0) {
        cJSON *o = cJSON_Parse(body);
        cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "resourceVersion");
        bool current = cJSON_IsString(v) && atol(v->valuestring) == f->rv;

        cJSON_Delete(o);
        f->puts++;
        if (f->drop_writes > 0) {
            f->drop_writes--;
            pthread_mutex_unlock(&f->mu);
            return; /* the connection closes unanswered */
        }
        if (current && f->lose > 0) {
            f->lose--;
            other_writer(f, "uid-other");
            current = false;
        }
        if (!current) {
            f->conflicts++;
            pthread_mutex_unlock(&f->mu);
            gx_fakehttp_respond(fd, 409,
                                "{\"kind\":\"Status\",\"message\":\"modified\",\"code\":409}");
            return;
        }
        store_body(f, body);
        obj = lease_json(f);
        slow_write(f);
        if (f->fail_writes > 0) {
            f->fail_writes--;
            pthread_mutex_unlock(&f->mu);
            gx_fakehttp_respond(fd, 504, "{\"kind\":\"Status\",\"code\":504}");
            free(obj);
            return;
        }
        pthread_mutex_unlock(&f->mu);
        gx_fakehttp_respond(fd, 200, obj);
        free(obj);
        return;
    }
    /* GET of the Lease */
    f->gets++;
    obj = f->exists ? lease_json(f) : NULL;
    pthread_mutex_unlock(&f->mu);
    if (obj == NULL) {
        gx_fakehttp_respond(fd, 404,
                            "{\"kind\":\"Status\",\"message\":\"not found\",\"code\":404}");
    } else {
        gx_fakehttp_respond(fd, 200, obj);
    }
    free(obj);
}

static struct fake *
fake_start(void)
{
    struct fake *f = calloc(1, sizeof(*f));

    cr_assert_not_null(f);
    f->rv = 100;
    pthread_mutex_init(&f->mu, NULL);
    f->srv = gx_fakehttp_start(handle, f);
    return f;
}

static void
fake_stop(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    f->stop = true; /* ends the watches */
    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_stop(f->srv);
    pthread_mutex_destroy(&f->mu);
    free(f->tenants);
    free(f->late);
    free(f);
}

/* ---- the client side ---- */

struct env {
    struct event_base *base;
    struct event *tick;
    struct gx_httpc *http;
    struct gx_config *cfg;
    struct gx_metrics m;
    struct gx_kube *k;
    struct gx_ledger *l;
    struct gx_leases *ls;
    struct fake *f;
    /* the update under test */
    int calls;
    bool done;
    enum gx_err rc;
    char why[300];
    enum gx_err mutate_rc;
    bool late_done; /* the deferred update's */
    enum gx_err late_rc;
};

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void
env_init(struct env *e, int sync_s)
{
    struct timeval tv = {0, 10000};
    struct gx_why why = {{0}};
    char url[64];

    memset(e, 0, sizeof(*e));
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    e->f = fake_start();
    cr_assert_eq(gx_config_default(&e->cfg), GX_OK);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d/", gx_fakehttp_port(e->f->srv));
    free(e->cfg->kube_url);
    e->cfg->kube_url = gx_strndup(url, strlen(url));
    free(e->cfg->kube_namespace);
    e->cfg->kube_namespace = gx_strndup(NS, strlen(NS));
    e->cfg->kube_enabled = true;
    e->cfg->kube_timeout_s = 5;
    e->cfg->ledger_sync_s = sync_s;
    gx_metrics_init(&e->m);
    e->base = event_base_new();
    e->tick = event_new(e->base, -1, EV_PERSIST, tick_cb, NULL);
    cr_assert_eq(event_add(e->tick, &tv), 0);
    e->http = gx_httpc_new(e->base);
    e->k = gx_kube_new(e->base, e->http, e->cfg, &e->m.up[GX_UP_KUBERNETES], NULL, e, &why);
    cr_assert_not_null(e->k, "%s", why.text);
    e->l = gx_ledger_new();
    e->ls = gx_leases_new(e->base, e->k, e->cfg, e->l, &e->m.up[GX_UP_KUBERNETES]);
    cr_assert_not_null(e->ls);
}

static void
env_fini(struct env *e)
{
    gx_leases_free(e->ls);
    gx_kube_free(e->k);
    gx_httpc_free(e->http);
    fake_stop(e->f);
    gx_ledger_free(e->l);
    event_free(e->tick);
    event_base_free(e->base);
    gx_config_free(e->cfg);
}

/* Run the loop until @cond holds or the deadline passes; returns @cond. */
static bool
run_until(struct env *e, bool (*cond)(struct env *e))
{
    int64_t end = gx_mono_ms() + DEADLINE_MS;

    while (!cond(e) && gx_mono_ms() < end) {
        (void)event_base_loop(e->base, EVLOOP_ONCE);
    }
    return cond(e);
}

static bool
is_done(struct env *e)
{
    return e->done;
}

static bool
is_synced(struct env *e)
{
    return gx_leases_synced(e->ls);
}

/* Book uid-mine on card 1 (2 slots) unless the Lease has it, or fail with e->mutate_rc. */
static enum gx_err
book_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct env *e = ctx;
    struct gx_tenant t;
    static const int slots[2] = {2, 2};

    e->calls++;
    if (e->mutate_rc != GX_OK) {
        gx_why_set(why, "refused by the test");
        return e->mutate_rc;
    }
    if (gx_ledger_find_pod(l, "uid-mine") != NULL) {
        *write = false; /* an earlier attempt's write landed (as bind's reserve takes it over) */
        return GX_OK;
    }
    memset(&t, 0, sizeof(t));
    (void)snprintf(t.uid, sizeof(t.uid), "uid-mine");
    (void)snprintf(t.pod, sizeof(t.pod), "team-a/mine");
    t.card = 1;
    t.slices = 1;
    t.util_pct = -1;
    *write = true;
    return gx_ledger_add(l, node, &t, 1, slots, 2);
}

static void
book_done(void *ctx, enum gx_err rc, const char *why)
{
    struct env *e = ctx;

    e->done = true;
    e->rc = rc;
    (void)snprintf(e->why, sizeof(e->why), "%s", why);
}

static void
book(struct env *e)
{
    e->done = false;
    cr_assert(gx_leases_update(e->ls, NODE, gx_mono_ms() + 4000, book_mutate, book_done, e));
    cr_assert(run_until(e, is_done), "the update ends");
}

static int
fake_int(struct env *e, const int *field)
{
    int v;

    pthread_mutex_lock(&e->f->mu);
    v = *field;
    pthread_mutex_unlock(&e->f->mu);
    return v;
}

/* Put a one-slice tenant @uid on card 0 of @node in the cache only (no Lease write). */
static void
cache_add(struct env *e, const char *node, const char *uid, enum gx_tenant_state st)
{
    struct gx_tenant t = {.card = 0, .slices = 1, .util_pct = -1, .state = st, .since_ms = 5};
    static const int slots[2] = {2, 2};

    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "team-b/%s", uid);
    cr_assert_eq(gx_ledger_add(e->l, node, &t, 1, slots, 2), GX_OK);
}

/* Run the loop until the fake's Lease watch is open. */
static void
wait_watch(struct env *e)
{
    int64_t t0 = gx_mono_ms();

    while (fake_int(e, &e->f->watches) == 0 && gx_mono_ms() - t0 < DEADLINE_MS) {
        (void)event_base_loop(e->base, EVLOOP_ONCE);
    }
    cr_assert_eq(fake_int(e, &e->f->watches), 1, "the watch is open");
}

Test(leases, update_creates_the_lease_when_missing)
{
    struct env e;

    env_init(&e, 60);
    cr_assert(run_until(&e, is_synced), "first list");
    book(&e);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    cr_assert_eq(fake_int(&e, &e.f->posts), 1, "a POST, no PUT");
    cr_assert_eq(fake_int(&e, &e.f->puts), 0);
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-mine"), "the cache holds what was written");
    pthread_mutex_lock(&e.f->mu);
    cr_assert_not_null(strstr(e.f->tenants, "uid-mine"), "the Lease holds it");
    pthread_mutex_unlock(&e.f->mu);
    env_fini(&e);
}

Test(leases, a_lost_race_reads_again_and_reapplies_on_the_fresh_tenants)
{
    struct env e;

    env_init(&e, 60);
    pthread_mutex_lock(&e.f->mu);
    other_writer(e.f, "uid-first");
    e.f->lose = 2;
    pthread_mutex_unlock(&e.f->mu);
    cr_assert(run_until(&e, is_synced), "first list");
    book(&e);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    cr_assert_eq(fake_int(&e, &e.f->conflicts), 2);
    cr_assert_eq(e.m.up[GX_UP_KUBERNETES].cas_conflicts, 2, "each 409 is counted");
    cr_assert_eq(e.calls, 3, "mutate ran once per attempt");
    cr_assert_eq(fake_int(&e, &e.f->gets), 3, "each attempt read the Lease first");
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-mine"));
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-other"), "the other writer's tenant kept");
    env_fini(&e);
}

Test(leases, endless_conflicts_give_up_after_the_retry_bound)
{
    struct env e;

    env_init(&e, 60);
    pthread_mutex_lock(&e.f->mu);
    other_writer(e.f, "uid-first");
    e.f->lose = 1000;
    pthread_mutex_unlock(&e.f->mu);
    cr_assert(run_until(&e, is_synced), "first list");
    book(&e);
    cr_assert_eq(e.rc, GX_ECONFLICT, "%s", e.why);
    cr_assert_str_eq(e.why,
                     "the ledger lease of " NODE " kept changing (compare-and-swap conflicts)");
    cr_assert_eq(e.calls, e.cfg->ledger_cas_retries, "one mutate per allowed attempt");
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-mine"), "the cache shows nothing unwritten");
    env_fini(&e);
}

Test(leases, a_refused_mutate_writes_nothing)
{
    struct env e;

    env_init(&e, 60);
    cr_assert(run_until(&e, is_synced), "first list");
    e.mutate_rc = GX_ECONFLICT;
    book(&e);
    cr_assert_eq(e.rc, GX_ECONFLICT);
    cr_assert_str_eq(e.why, "refused by the test");
    cr_assert_eq(fake_int(&e, &e.f->posts) + fake_int(&e, &e.f->puts), 0);
    env_fini(&e);
}

/* Book uid-late on card 0: the deferred update of the tests below. */
static enum gx_err
late_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct gx_tenant t = {.card = 0, .slices = 1, .util_pct = -1};
    static const int slots[2] = {2, 2};

    (void)ctx;
    (void)why;
    (void)snprintf(t.uid, sizeof(t.uid), "uid-late");
    (void)snprintf(t.pod, sizeof(t.pod), "team-a/late");
    *write = true;
    return gx_ledger_add(l, node, &t, 1, slots, 2);
}

static void
late_done(void *ctx, enum gx_err rc, const char *why)
{
    struct env *e = ctx;

    (void)why;
    e->late_done = true;
    e->late_rc = rc;
}

static bool
is_late_done(struct env *e)
{
    return e->late_done;
}

/* Run the loop for @ms. */
static void
run_for(struct env *e, int64_t ms)
{
    int64_t end = gx_mono_ms() + ms;

    while (gx_mono_ms() < end) {
        (void)event_base_loop(e->base, EVLOOP_ONCE);
    }
}

Test(leases, a_deferred_update_goes_with_the_next_round_of_its_node)
{
    struct env e;

    env_init(&e, 60);
    cr_assert(run_until(&e, is_synced), "first list");
    cr_assert(
        gx_leases_update_after(e.ls, NODE, 600, gx_mono_ms() + 8000, late_mutate, late_done, &e));
    run_for(&e, 200);
    cr_assert_not(e.late_done, "it waits");
    cr_assert_eq(fake_int(&e, &e.f->gets), 0, "no round of its own yet");
    pthread_mutex_lock(&e.f->mu);
    e.f->write_ms = 800;    /* its own time comes while the round is in flight */
    e.f->mute_watch = true; /* no echo of the write: it would make the round read once more */
    pthread_mutex_unlock(&e.f->mu);
    book(&e);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    cr_assert(e.late_done, "it went with the bind's round");
    cr_assert_eq(e.late_rc, GX_OK);
    cr_assert_eq(fake_int(&e, &e.f->gets), 1, "one read");
    cr_assert_eq(fake_int(&e, &e.f->posts) + fake_int(&e, &e.f->puts), 1, "one write for both");
    run_for(&e, 300);
    cr_assert_eq(fake_int(&e, &e.f->gets), 1, "its wait ended when the round took it");
    pthread_mutex_lock(&e.f->mu);
    cr_assert(strstr(e.f->tenants, "uid-mine") && strstr(e.f->tenants, "uid-late"));
    pthread_mutex_unlock(&e.f->mu);
    env_fini(&e);
}

Test(leases, a_deferred_update_alone_goes_when_due)
{
    struct env e;
    int64_t t0;

    env_init(&e, 60);
    cr_assert(run_until(&e, is_synced), "first list");
    t0 = gx_mono_ms();
    cr_assert(gx_leases_update_after(e.ls, NODE, 300, t0 + 8000, late_mutate, late_done, &e));
    cr_assert(run_until(&e, is_late_done), "it ends");
    cr_assert_eq(e.late_rc, GX_OK);
    cr_assert_geq(gx_mono_ms() - t0, 300, "not before its time");
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-late"), "written and in the cache");
    env_fini(&e);
}

static bool
sees_other(struct env *e)
{
    return gx_ledger_find_pod(e->l, "uid-watched") != NULL;
}

Test(leases, the_watch_shows_another_writer_without_waiting_for_a_resync)
{
    struct env e;
    int64_t t0;

    env_init(&e, 3600); /* no resync within the test */
    cr_assert(run_until(&e, is_synced), "first list");
    /* wait until the watch is open */
    wait_watch(&e);
    pthread_mutex_lock(&e.f->mu);
    other_writer(e.f, "uid-watched");
    pthread_mutex_unlock(&e.f->mu);
    t0 = gx_mono_ms();
    cr_assert(run_until(&e, sees_other), "the watch event reaches the cache");
    cr_assert_lt(gx_mono_ms() - t0, 1000, "within a second");
    cr_assert_eq(fake_int(&e, &e.f->lists), 1, "no list was needed");
    env_fini(&e);
}

static bool
sees_after_only(struct env *e)
{
    return gx_ledger_find_pod(e->l, "uid-after") != NULL &&
           gx_ledger_find_pod(e->l, "uid-mine") == NULL;
}

Test(leases, a_write_the_watch_shows_during_an_update_is_not_lost)
{
    struct env e;

    env_init(&e, 3600);
    cr_assert(run_until(&e, is_synced), "first list");
    wait_watch(&e);
    pthread_mutex_lock(&e.f->mu);
    e.f->write_after = true;
    pthread_mutex_unlock(&e.f->mu);
    book(&e);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    /* our answer (older than the other write) came last: the update reads the Lease again */
    cr_assert(run_until(&e, sees_after_only), "the cache ends with the newer Lease");
    cr_assert_eq(fake_int(&e, &e.f->lists), 1, "without a resync");
    env_fini(&e);
}

static bool
relisted(struct env *e)
{
    return fake_int(e, &e->f->lists) >= 2;
}

Test(leases, the_resync_lists_again)
{
    struct env e;

    env_init(&e, 1);
    cr_assert(run_until(&e, relisted), "a second list after sync_interval_s");
    env_fini(&e);
}

static bool
listed_again(struct env *e)
{
    return fake_int(e, &e->f->lists) >= 3;
}

/*
 * A relist answered late shows the Leases as they were when it was taken:
 * one this process wrote after that is missing from it and stays in the
 * cache; one missing from a list newer than the cache's copy was deleted.
 */
static void
relist_without_the_lease(long as_of_after_write, bool kept)
{
    struct env e;
    long wrote;

    env_init(&e, 1); /* a relist every second */
    cr_assert(run_until(&e, is_synced), "first list");
    book(&e);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    pthread_mutex_lock(&e.f->mu);
    wrote = e.f->rv;
    e.f->list_as_of = wrote + as_of_after_write;
    e.f->lists = 0;
    pthread_mutex_unlock(&e.f->mu);
    cr_assert(run_until(&e, listed_again), "two more lists");
    cr_assert_eq(gx_ledger_find_pod(e.l, "uid-mine") != NULL, kept, "list as of %ld, wrote %ld",
                 wrote + as_of_after_write, wrote);
    env_fini(&e);
}

Test(leases, a_list_older_than_our_write_keeps_its_booking)
{
    relist_without_the_lease(-1, true);
}

Test(leases, a_list_newer_than_our_write_drops_a_deleted_lease)
{
    relist_without_the_lease(+1, false);
}

static bool
sees_mine(struct env *e)
{
    return gx_ledger_find_pod(e->l, "uid-mine") != NULL;
}

/* How many times @uid is booked in the fake's Lease. */
static int
lease_count(struct env *e, const char *uid)
{
    int n = 0;

    pthread_mutex_lock(&e->f->mu);
    for (const char *p = e->f->tenants; p != NULL && (p = strstr(p, uid)) != NULL; p++) {
        n++;
    }
    pthread_mutex_unlock(&e->f->mu);
    return n;
}

/*
 * A write answered 504 after it landed: the round reads the Lease again
 * and the update finds its booking there, so the update succeeds with
 * one write (ended at the 504, every bind of the round failed), and the
 * cache never hides a booking the Lease holds.
 */
/*
 * Book uid-mine on an existing Lease (a PUT) whose next @lost writes land
 * but lose their answer (504) and whose next @reset writes never arrive;
 * the watch is mute, so only the update's own calls show the Lease.
 */
static void
book_faulty(struct env *e, int lost, int reset)
{
    env_init(e, 3600);
    cr_assert(run_until(e, is_synced), "first list");
    pthread_mutex_lock(&e->f->mu);
    other_writer(e->f, "uid-other");
    e->f->fail_writes = lost;
    e->f->drop_writes = reset;
    e->f->mute_watch = true;
    pthread_mutex_unlock(&e->f->mu);
    book(e);
}

Test(leases, a_write_that_failed_but_landed_is_read_back)
{
    struct env e;

    book_faulty(&e, 1, 0);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    cr_assert_eq(fake_int(&e, &e.f->puts), 1, "the landed write is not sent again");
    cr_assert_eq(fake_int(&e, &e.f->gets), 2, "the Lease was read again after the 504");
    cr_assert_eq(e.calls, 2, "the update decided again on what the Lease held");
    cr_assert(sees_mine(&e), "the cache shows the booking");
    cr_assert_eq(lease_count(&e, "uid-mine"), 1, "booked once");
    env_fini(&e);
}

/* A write whose connection broke before it arrived is sent again in the same update. */
Test(leases, a_write_that_never_arrived_is_sent_again)
{
    struct env e;

    book_faulty(&e, 0, 1);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    cr_assert_eq(fake_int(&e, &e.f->puts), 2, "written again after the reset");
    cr_assert_eq(lease_count(&e, "uid-mine"), 1, "booked once");
    cr_assert(sees_mine(&e));
    env_fini(&e);
}

/* A write that keeps failing ends the update with the failure, not as a conflict. */
Test(leases, a_write_that_keeps_failing_gives_up_as_upstream_error)
{
    struct env e;

    book_faulty(&e, 0, 1000);
    cr_assert_neq(e.rc, GX_OK);
    cr_assert_neq(e.rc, GX_ECONFLICT, "bind answers a rejection for a conflict only");
    /* the reconcile's log line has no node of its own: the reason names it */
#define W "cannot write the ledger lease of " NODE ": "
    cr_assert(strncmp(e.why, W, sizeof(W) - 1) == 0, "%s", e.why);
#undef W
    cr_assert_geq(e.calls, 2, "tried again");
    cr_assert_leq(e.calls, e.cfg->ledger_cas_retries, "within the retry bound");
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-mine"), "the cache shows nothing unwritten");
    env_fini(&e);
}

static bool
late_sent(struct env *e)
{
    bool sent;

    pthread_mutex_lock(&e->f->mu);
    sent = e->f->late_sent;
    pthread_mutex_unlock(&e->f->mu);
    return sent;
}

/*
 * A watch event that trails our own write's answer (the Lease before the
 * write) leaves the cache at the newer write: applied, it would hide the
 * booking until the next event, and filters would admit onto its card.
 */
Test(leases, a_watch_event_older_than_the_cache_is_ignored)
{
    struct env e;
    char *before;
    int64_t t0;

    env_init(&e, 3600);
    cr_assert(run_until(&e, is_synced), "first list");
    wait_watch(&e);
    pthread_mutex_lock(&e.f->mu);
    other_writer(e.f, "uid-other");
    before = lease_json(e.f); /* rv 101, without uid-mine */
    e.f->mute_watch = true;
    pthread_mutex_unlock(&e.f->mu);
    book(&e);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-mine"));
    pthread_mutex_lock(&e.f->mu);
    e.f->late = before;
    pthread_mutex_unlock(&e.f->mu);
    cr_assert(run_until(&e, late_sent), "the late event is sent");
    t0 = gx_mono_ms();
    while (gx_mono_ms() - t0 < 200) { /* time for it to arrive */
        (void)event_base_loop(e.base, EVLOOP_ONCE);
    }
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-mine"), "the newer write stays");
    pthread_mutex_lock(&e.f->mu);
    e.f->mute_watch = false;
    other_writer(e.f, "uid-watched"); /* a newer event still applies */
    pthread_mutex_unlock(&e.f->mu);
    cr_assert(run_until(&e, sees_other), "a newer event reaches the cache");
    env_fini(&e);
}

/* A Lease that books a pod the cache holds on another node makes that node a suspect. */
Test(leases, a_pod_booked_on_two_nodes_makes_the_other_a_suspect)
{
    struct env e;
    char got[4][256];
    int64_t t0;

    env_init(&e, 3600);
    cr_assert(run_until(&e, is_synced), "first list");
    wait_watch(&e);
    cache_add(&e, "gpu-other", "uid-dup", GX_TENANT_BOUND);
    cr_assert_eq(gx_leases_take_suspects(e.ls, got, 4), 0, "no suspect yet");
    pthread_mutex_lock(&e.f->mu);
    other_writer(e.f, "uid-dup");
    pthread_mutex_unlock(&e.f->mu);
    t0 = gx_mono_ms();
    while (strcmp(gx_ledger_find_pod(e.l, "uid-dup")->node, NODE) != 0 &&
           gx_mono_ms() - t0 < DEADLINE_MS) {
        (void)event_base_loop(e.base, EVLOOP_ONCE);
    }
    cr_assert_eq(gx_leases_take_suspects(e.ls, got, 4), 1);
    cr_assert_str_eq(got[0], "gpu-other");
    cr_assert_eq(gx_leases_take_suspects(e.ls, got, 4), 0, "taken once");
    env_fini(&e);
}

/* One of many concurrent bookings: uid-<i> on card 0 (16 slots). */
struct many {
    struct env *e;
    int i, calls, done;
    enum gx_err rc;
};

static enum gx_err
many_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct many *m = ctx;
    struct gx_tenant t = {.card = 0, .slices = 1, .util_pct = -1};
    static const int slots[1] = {16};

    (void)why;
    m->calls++;
    (void)snprintf(t.uid, sizeof(t.uid), "uid-%d", m->i);
    (void)snprintf(t.pod, sizeof(t.pod), "team-a/p%d", m->i);
    *write = true;
    return gx_ledger_add(l, node, &t, 1, slots, 1);
}

static void
many_done(void *ctx, enum gx_err rc, const char *why)
{
    struct many *m = ctx;

    (void)why;
    m->done++;
    m->rc = rc;
}

static struct many *g_many;
static int g_n_many;

static bool
many_done_all(struct env *e)
{
    (void)e;
    for (int i = 0; i < g_n_many; i++) {
        if (g_many[i].done == 0) {
            return false;
        }
    }
    return true;
}

/* Queue @n bookings uid-0.. of NODE at once, each @left_ms[i] from its deadline (NULL: 4 s). */
static void
book_many(struct env *e, struct many *m, int n, const int64_t *left_ms)
{
    g_many = m;
    g_n_many = n;
    for (int i = 0; i < n; i++) {
        m[i] = (struct many){.e = e, .i = i};
        cr_assert(gx_leases_update(e->ls, NODE, gx_mono_ms() + (left_ms ? left_ms[i] : 4000),
                                   many_mutate, many_done, &m[i]));
    }
    cr_assert(run_until(e, many_done_all), "every update ends");
}

/*
 * Ten bookings of one node at once (a burst of binds under binpack) go in
 * rounds: the first alone, the other nine together; no update conflicts
 * with another of this process, and each is called back once.
 */
Test(leases, concurrent_updates_of_one_node_share_a_write)
{
    struct env e;
    struct many m[10];

    env_init(&e, 3600);
    cr_assert(run_until(&e, is_synced), "first list");
    book_many(&e, m, 10, NULL);
    for (int i = 0; i < 10; i++) {
        char uid[16];

        (void)snprintf(uid, sizeof(uid), "uid-%d", i);
        cr_assert_eq(m[i].rc, GX_OK, "update %d", i);
        cr_assert_eq(m[i].done, 1, "update %d called back once", i);
        cr_assert_not_null(gx_ledger_find_pod(e.l, uid), "%s in the cache", uid);
    }
    cr_assert_eq(fake_int(&e, &e.f->conflicts), 0, "no update lost a race to another");
    cr_assert_eq(fake_int(&e, &e.f->posts) + fake_int(&e, &e.f->puts), 2, "two writes");
    env_fini(&e);
}

/* Queue uid-0, then uid-1 behind its round, after @setup(e->f) (mu held); both are written. */
static void
book_two_in_a_row(struct env *e, bool watch, void (*setup)(struct fake *f))
{
    struct many m[2];

    env_init(e, 3600);
    cr_assert(run_until(e, is_synced), "first list");
    if (watch) {
        wait_watch(e);
    }
    pthread_mutex_lock(&e->f->mu);
    setup(e->f);
    pthread_mutex_unlock(&e->f->mu);
    book_many(e, m, 2, NULL);
    cr_assert_eq(m[0].rc, GX_OK);
    cr_assert_eq(m[1].rc, GX_OK);
}

/* The fake's Lease holds @uid. */
static bool
lease_has(struct env *e, const char *uid)
{
    bool has;

    pthread_mutex_lock(&e->f->mu);
    has = e->f->tenants != NULL && strstr(e->f->tenants, uid) != NULL;
    pthread_mutex_unlock(&e->f->mu);
    return has;
}

/*
 * A round right behind this process's own write starts from what that
 * write left: no read. The watch's event of that write, which arrives
 * while the write's answer is still on its way, is not mistaken for
 * another writer's.
 */
static void
slow_writes(struct fake *f)
{
    f->write_ms = 200; /* the watch sends the write before its answer */
}

Test(leases, a_round_behind_our_own_write_does_not_read_the_lease)
{
    struct env e;

    book_two_in_a_row(&e, true, slow_writes);
    cr_assert(lease_has(&e, "uid-0") && lease_has(&e, "uid-1"));
    cr_assert_eq(fake_int(&e, &e.f->gets), 1, "one read, for the first round");
    cr_assert_eq(fake_int(&e, &e.f->posts), 1);
    cr_assert_eq(fake_int(&e, &e.f->puts), 1);
    cr_assert_eq(fake_int(&e, &e.f->conflicts), 0);
    env_fini(&e);
}

/* Another writer the watch has not shown yet: the round without a read loses once, then reads. */
static void
unseen_writer(struct fake *f)
{
    f->mute_watch = true;
    f->lose = 1; /* the first PUT: another replica wrote just before it */
}

Test(leases, a_write_the_skipped_read_missed_costs_one_conflict)
{
    struct env e;

    book_two_in_a_row(&e, false, unseen_writer);
    cr_assert_eq(fake_int(&e, &e.f->conflicts), 1);
    cr_assert_eq(fake_int(&e, &e.f->gets), 2, "the first round's read, and the one after the 409");
    cr_assert_eq(fake_int(&e, &e.f->puts), 2);
    cr_assert(lease_has(&e, "uid-other"), "the other writer's booking kept");
    cr_assert(lease_has(&e, "uid-1"));
    env_fini(&e);
}

/* Another writer the watch shows during our write: the next round reads what it wrote. */
static void
seen_writer(struct fake *f)
{
    f->write_after = true; /* after our POST, before its answer */
}

Test(leases, a_round_behind_a_write_the_watch_showed_reads_the_lease)
{
    struct env e;

    book_two_in_a_row(&e, true, seen_writer);
    cr_assert_eq(fake_int(&e, &e.f->conflicts), 0, "read first, so no lost race");
    cr_assert_eq(fake_int(&e, &e.f->gets), 2);
    cr_assert(lease_has(&e, "uid-after"), "the other writer's booking kept");
    cr_assert(lease_has(&e, "uid-1"));
    env_fini(&e);
}

/*
 * Updates queued behind a round (a write takes 500 ms): one whose deadline
 * passed while it waited ends without joining the next round; one that
 * runs out during that round hears its result late, and no longer times
 * out the updates the round carries with it.
 */
Test(leases, an_update_near_its_deadline_does_not_fail_its_round)
{
    struct env e;
    struct many m[4];
    static const int64_t left_ms[4] = {4000, 300, 900, 4000};

    env_init(&e, 3600);
    cr_assert(run_until(&e, is_synced), "first list");
    pthread_mutex_lock(&e.f->mu);
    e.f->write_ms = 500;
    e.f->mute_watch = true; /* no event during a round: no extra round reads the Lease */
    pthread_mutex_unlock(&e.f->mu);
    book(&e); /* the Lease exists: the first round reads it, the next goes behind its write */
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    book_many(&e, m, 4, left_ms);
    cr_assert_eq(m[0].rc, GX_OK, "the first round, alone");
    cr_assert_eq(m[1].rc, GX_ETIMEDOUT, "out of time before the second round");
    cr_assert_eq(m[1].calls, 0, "never applied");
    cr_assert_eq(m[2].rc, GX_OK, "written, heard after its deadline");
    cr_assert_eq(m[3].rc, GX_OK, "not failed by the late one");
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-3"));
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-1"));
    env_fini(&e);
}

/* A synced env whose cache shows bind in flight @uid on NODE (card 0). */
static void
synced_with_hold(struct env *e, const char *uid)
{
    env_init(e, 3600);
    cr_assert(run_until(e, is_synced), "first list");
    cache_add(e, NODE, uid, GX_TENANT_RESERVED);
    gx_leases_hold(e->ls, NODE, uid);
}

/*
 * A bind in flight shows its booking in the cache (filters see its cards),
 * across another update's write and the watch's copy of it, and that write
 * never carries it to the Lease.
 */
Test(leases, a_held_booking_is_shown_but_never_written)
{
    struct env e;

    synced_with_hold(&e, "uid-held");
    book(&e);
    cr_assert_eq(e.rc, GX_OK, "%s", e.why);
    pthread_mutex_lock(&e.f->mu);
    cr_assert_null(strstr(e.f->tenants, "uid-held"), "never written: %s", e.f->tenants);
    cr_assert_not_null(strstr(e.f->tenants, "uid-mine"));
    pthread_mutex_unlock(&e.f->mu);
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-held"), "still shown after the write");
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-mine"));
    gx_leases_unhold(e.ls, "uid-held", false);
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-held"), "gone once its bind failed");
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-mine"), "the Lease's booking stays");
    env_fini(&e);
}

/* Tenant @uid on card @card of NODE's truth: a whole card when @whole, else a slice. */
static struct gx_tenant
truth_tenant(const char *uid, int card, bool whole)
{
    struct gx_tenant t = {.card = card,
                          .exclusive = whole,
                          .slices = whole ? 0 : 1,
                          .util_pct = -1,
                          .state = GX_TENANT_BOUND,
                          .since_ms = 5};

    (void)snprintf(t.uid, sizeof(t.uid), "%s", uid);
    (void)snprintf(t.pod, sizeof(t.pod), "team-b/%s", uid);
    return t;
}

/*
 * A bind whose shown booking the cache dropped shows it again: still one
 * hold, so the bind's end takes the pod off the node for good (a second
 * hold outlived its bind and showed the pod there until the process ended).
 */
Test(leases, a_booking_shown_twice_is_held_once)
{
    struct env e;

    synced_with_hold(&e, "uid-held");
    cr_assert_eq(gx_ledger_release(e.l, "uid-held"), 1, "dropped from the cache");
    cache_add(&e, NODE, "uid-held", GX_TENANT_RESERVED);
    gx_leases_hold(e.ls, NODE, "uid-held");
    cr_assert_eq(gx_leases_holds(e.ls), 1, "one bind, one hold");
    gx_leases_unhold(e.ls, "uid-held", false);
    cr_assert_eq(gx_leases_holds(e.ls), 0);
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-held"), "its bind ended");
    gx_leases_cache_set(e.ls, NODE, NULL, 0, "7");
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-held"), "not shown again by the next truth");
    env_fini(&e);
}

/* A hold that clashes with the Lease's truth hides no other bind in flight on the node. */
Test(leases, a_clashing_hold_hides_no_other)
{
    struct env e;
    struct gx_tenant truth = truth_tenant("uid-whole", 0, true);

    synced_with_hold(&e, "uid-a"); /* card 0 */
    {
        struct gx_tenant b = truth_tenant("uid-b", 1, false);
        cr_assert_eq(gx_ledger_add(e.l, NODE, &b, 1, (const int[]){2, 2}, 2), GX_OK);
    }
    gx_leases_hold(e.ls, NODE, "uid-b");
    gx_leases_cache_set(e.ls, NODE, &truth, 1, "8");
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-a"), "card 0 is the whole-GPU pod's");
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-b"), "card 1 still shows its bind");
    cr_assert_not_null(gx_ledger_find_pod(e.l, "uid-whole"), "the truth stays");
    gx_leases_unhold(e.ls, "uid-a", false);
    gx_leases_unhold(e.ls, "uid-b", false);
    cr_assert_null(gx_ledger_find_pod(e.l, "uid-b"));
    env_fini(&e);
}
