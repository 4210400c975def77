/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bind.c - the bind chain (bind.c) end to end in one process: a real
 * HTTP server hands POST /bind to gx_bind_handle, and the chain talks to a
 * fake API server (gx_fakehttp) that holds one pod and its node's Lease
 * with real resourceVersion semantics and can be told to fail each call.
 * The fake records the calls in order: that trace is the chain's state
 * sequence (READ_POD, RESERVE = Lease GET+PUT/POST with the label PATCH
 * alongside, BINDING = POST binding, CHECK = GET pod), then the background
 * write.
 */
#include "gx_test.h"

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <pthread.h>
#include <string.h>

#include "bgwrite.h"
#include "bind.h"
#include "config.h"
#include "gang.h"
#include "gang_bind.h"
#include "gang_filter.h"
#include "httpc.h"
#include "kube.h"
#include "podreq.h"
#include "gx_fakekube.h"
#include "seen.h"
#include "service.h"
#include "sync.h"

GX_SUITE(bind);

#define DEADLINE_MS 8000
#define NS "ml"
#define POD "p1"
#define UID "uid-1"
#define HERE "gpu-a"
#define POD_PATH "/api/v1/namespaces/" NS "/pods/" POD
#define LEASES "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases"
#define LEASE_PATH LEASES "/gpu-extender-" HERE

/* ---- the fake API server: one pod, the Lease of its node ---- */

struct fake {
    pthread_mutex_t mu;
    bool stop;
    char pod_node[64]; /* spec.nodeName of the pod, "" while pending */
    bool lease_exists;
    long rv;
    char *tenants; /* the Lease's tenants annotation (JSON text), heap */
    /* faults */
    int lose;           /* Lease PUTs still to lose to another writer */
    int patch_status;   /* the label PATCH answers this (0: 200) */
    int patch_failures; /* with patch_status: only this many PATCHes fail (0: every one) */
    int patch_ms;       /* each PATCH is answered this late */
    int hold_call;      /* the n-th Lease call (1-based) waits while @hold */
    bool hold, holding; /* holding: that call is waiting now */
    int lease_calls;
    int binding_status;   /* the Binding answers this (0: 201, or 409 when bound) */
    int binding_failures; /* with binding_status: only this many Bindings fail (0: every one) */
    const char *lands_on; /* a failing Binding binds the pod here all the same */
    int binding_hang_ms;
    int get_status;   /* a GET of the pod answers this (0: 200) */
    char trace[1024]; /* "GET lease,POST lease,PATCH pod,..." */
};

/* The pod as the API server shows it (caller holds mu); you own the string. */
static char *
pod_json(const struct fake *f)
{
    char *s = malloc(1024);

    cr_assert_not_null(s);
    (void)snprintf(s, 1024,
                   "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"" POD "\",\"namespace\":\"" NS
                   "\",\"uid\":\"" UID "\",\"resourceVersion\":\"5\"},\"spec\":{\"nodeName\":"
                   "\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
                   "{\"nvidia.com/gpu\":\"1\"}}}]}}",
                   f->pod_node);
    return s;
}

/* The Lease (caller holds mu); you own the string. */
static char *
lease_json(const struct fake *f)
{
    cJSON *ann = cJSON_CreateString(f->tenants != NULL ? f->tenants : "{\"v\":1,\"tenants\":[]}");
    char *tenants = cJSON_PrintUnformatted(ann), *s = malloc(strlen(tenants) + 512);

    cr_assert_not_null(s);
    (void)snprintf(s, strlen(tenants) + 512,
                   "{\"kind\":\"Lease\",\"metadata\":{\"name\":\"gpu-extender-" HERE
                   "\",\"namespace\":\"gpu-extender\",\"resourceVersion\":\"%ld\","
                   "\"annotations\":{\"gpu-extender.io/node\":\"" HERE
                   "\",\"gpu-extender.io/tenants\":%s}}}",
                   f->rv, tenants);
    free(tenants);
    cJSON_Delete(ann);
    return s;
}

/* Append @what to the trace (caller holds mu). */
static void
note(struct fake *f, const char *what)
{
    size_t n = strlen(f->trace);

    (void)snprintf(f->trace + n, sizeof(f->trace) - n, "%s%s", n ? "," : "", what);
}

/* Keep a written Lease body (caller holds mu). */
static void
store_lease(struct fake *f, const char *body)
{
    cJSON *o = cJSON_Parse(body);
    cJSON *t =
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "annotations"),
                            "gpu-extender.io/tenants");

    free(f->tenants);
    f->tenants = cJSON_IsString(t) ? strdup(t->valuestring) : NULL;
    f->lease_exists = true;
    f->rv++;
    cJSON_Delete(o);
}

/* The Lease's resourceVersion as a PUT @body names it, -1 when none. */
static long
body_rv(const char *body)
{
    cJSON *o = cJSON_Parse(body);
    cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "resourceVersion");
    long rv = cJSON_IsString(v) ? atol(v->valuestring) : -1;

    cJSON_Delete(o);
    return rv;
}

/* Wait while the test holds this Lease call back, as a loaded API server would (holds mu). */
static void
hold_back(struct fake *f)
{
    if (++f->lease_calls != f->hold_call) {
        return;
    }
    f->holding = true;
    while (f->hold && !f->stop) {
        pthread_mutex_unlock(&f->mu);
        gx_fakehttp_msleep(10);
        pthread_mutex_lock(&f->mu);
    }
    f->holding = false;
}

/* Answer a Lease call (caller holds mu; unlocked on return); s: the status. */
static void
lease_call(struct fake *f, int fd, const struct gx_fakehttp_req *r)
{
    int s = 200;
    char *obj = NULL;

    hold_back(f); /* answered with the Lease as it is when let go */
    if (strcmp(r->method, "GET") == 0) {
        note(f, "GET lease");
        s = f->lease_exists ? 200 : 404;
    } else if (strcmp(r->method, "POST") == 0) {
        note(f, "POST lease");
        s = f->lease_exists ? 409 : 201;
    } else {
        note(f, "PUT lease");
        s = body_rv(r->body) == f->rv ? 200 : 409;
        if (s == 200 && f->lose > 0) {
            f->lose--;
            f->rv++; /* another replica wrote first */
            s = 409;
        }
    }
    if (s == 200 && strcmp(r->method, "GET") != 0) {
        store_lease(f, r->body);
    } else if (s == 201) {
        store_lease(f, r->body);
    }
    obj = s < 300 ? lease_json(f) : NULL;
    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_respond(fd, s, obj != NULL ? obj : "{\"kind\":\"Status\",\"code\":409}");
    free(obj);
}

/* The node a Binding @body targets, into @out. */
static void
binding_target(const char *body, char *out, size_t n)
{
    cJSON *o = cJSON_Parse(body);
    cJSON *name = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "target"), "name");

    (void)snprintf(out, n, "%s", cJSON_IsString(name) ? name->valuestring : "");
    cJSON_Delete(o);
}

/* Answer the Binding (caller holds mu; unlocked on return). */
static void
binding_call(struct fake *f, int fd, const struct gx_fakehttp_req *r)
{
    int s = f->binding_status, hang = f->binding_hang_ms;

    note(f, "POST binding");
    if (s != 0 && f->binding_failures > 0 && --f->binding_failures == 0) {
        f->binding_status = 0; /* the last failure: the next Binding lands */
    }
    if (s == 0 && hang == 0) {
        s = f->pod_node[0] != '\0' ? 409 : 201; /* the API server's rule: bound once */
    }
    if (s == 201) {
        binding_target(r->body, f->pod_node, sizeof(f->pod_node));
    } else if (f->lands_on != NULL) {
        (void)snprintf(f->pod_node, sizeof(f->pod_node), "%s", f->lands_on);
    }
    pthread_mutex_unlock(&f->mu);
    for (int t = 0; t < hang; t += 10) { /* longer than the bind may wait */
        bool stop;
        pthread_mutex_lock(&f->mu);
        stop = f->stop;
        pthread_mutex_unlock(&f->mu);
        if (stop) {
            return;
        }
        gx_fakehttp_msleep(10);
    }
    gx_fakehttp_respond(fd, s != 0 ? s : 201, "{\"kind\":\"Status\"}");
}

static void
handle(void *ctx, int fd, const struct gx_fakehttp_req *r)
{
    struct fake *f = ctx;
    char *obj;
    int s, delay;

    if (strncmp(r->target, "/api/v1/nodes", 13) == 0 ||
        strncmp(r->target, "/api/v1/pods", 12) == 0 ||
        strncmp(r->target, LEASES "?", sizeof(LEASES)) == 0) {
        /* the stores' lists (the Lease of a past test is not there) and watches */
        gx_fakehttp_respond(fd, 200,
                            strstr(r->target, "watch=1") != NULL
                                ? ""
                                : "{\"items\":[],\"metadata\":{\"resourceVersion\":\"1\"}}");
        return;
    }
    pthread_mutex_lock(&f->mu);
    if (strncmp(r->target, LEASES, strlen(LEASES)) == 0) {
        lease_call(f, fd, r);
        return;
    }
    if (strncmp(r->target,
                POD_PATH "/binding?timeout=", sizeof(POD_PATH "/binding?timeout=") - 1) == 0) {
        binding_call(f, fd, r);
        return;
    }
    note(f, strcmp(r->method, "PATCH") == 0 ? "PATCH pod" : "GET pod");
    s = strcmp(r->method, "PATCH") == 0 && f->patch_status != 0 ? f->patch_status : 200;
    if (strcmp(r->method, "GET") == 0 && f->get_status != 0) {
        s = f->get_status;
    }
    if (s != 200 && f->patch_failures > 0 && --f->patch_failures == 0) {
        f->patch_status = 0; /* the last failure: the next PATCH succeeds */
    }
    obj = pod_json(f);
    delay = strcmp(r->method, "PATCH") == 0 ? f->patch_ms : 0;
    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_msleep(delay);
    gx_fakehttp_respond(fd, s, s == 200 ? obj : "{\"kind\":\"Status\",\"message\":\"boom\"}");
    free(obj);
}

/* ---- the extender side ---- */

struct env {
    struct fake f;
    struct gx_fakehttp *srv;
    struct gx_app app;
    struct gx_snapshot snap;
    struct gx_node node;
    struct gx_card cards[2];
    struct gx_http *http;
    /* the answer to the bind */
    bool answered;
    long status;
    char error[512];
};

static void
serve(void *ctx, struct gx_http_req *r)
{
    gx_bind_handle(ctx, r);
}

/* One L4 node with two fresh, idle cards. */
static void
snap_init(struct env *e)
{
    struct gx_node *n = &e->node;

    n->name = HERE;
    n->product = "NVIDIA-L4";
    n->gpu_count = 2;
    n->gpu_memory_mib = 24564;
    n->replicas = 1;
    n->ready = true;
    n->cards = e->cards;
    n->n_cards = 2;
    for (int c = 0; c < 2; c++) {
        e->cards[c].index = c;
        e->cards[c].numa = -1;
        for (int s = 0; s < GX_SIG_COUNT; s++) {
            e->cards[c].at_ms[s] = gx_wall_ms();
        }
        e->cards[c].v[GX_SIG_MEM_FREE] = 24564;
    }
    e->snap.nodes = n;
    e->snap.n_nodes = 1;
    cr_assert_eq(gx_snapshot_index(&e->snap), GX_OK);
}

/* Run the loop until @cond holds or the deadline passes; returns @cond. */
static bool
run_until(struct env *e, bool (*cond)(struct env *e))
{
    int64_t end = gx_mono_ms() + DEADLINE_MS;

    while (!cond(e) && gx_mono_ms() < end) {
        struct timeval tv = {0, 10000};
        (void)event_base_loopexit(e->app.base, &tv);
        (void)event_base_dispatch(e->app.base);
    }
    return cond(e);
}

static bool
synced(struct env *e)
{
    return gx_leases_synced(e->app.leases);
}

static void seen_by_filter(struct env *e);

/* The extender with the pod @seen by filter here (or not), the Leases listed. */
static void
env_init(struct env *e, bool seen)
{
    struct gx_app *a = &e->app;
    struct gx_http_opts o = {.address = "127.0.0.1", .max_body = 1 << 20, .conn_timeout_s = 10};
    struct gx_why why = {{0}};

    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->f.mu, NULL);
    e->f.rv = 100;
    e->srv = gx_fakehttp_start(handle, &e->f);
    gx_fakekube_app(a, e->srv);
    a->cfg->bind_deadline_ms = 1000;
    a->cfg->ledger_sync_s = 3600;
    LIST_INIT(&a->binds);
    LIST_INIT(&a->bgs);
    cr_assert_eq(gx_gate_init(&a->bind_gate, a->base), GX_OK);
    snap_init(e);
    a->sync.snap = &e->snap;
    a->ledger = gx_ledger_new();
    a->leases =
        gx_leases_new(a->base, a->sync.kube, a->cfg, a->ledger, &a->metrics.up[GX_UP_KUBERNETES]);
    a->seen = gx_seen_new();
    cr_assert(a->ledger != NULL && a->leases != NULL && a->seen != NULL);
    cr_assert_eq(gx_http_start(a->base, &o, serve, a, &e->http, &why), GX_OK, "%s", why.text);
    cr_assert(run_until(e, synced), "the Leases are listed");
    if (seen) {
        seen_by_filter(e);
    }
}

static void
env_fini(struct env *e)
{
    struct gx_app *a = &e->app;

    pthread_mutex_lock(&e->f.mu);
    e->f.stop = true;
    pthread_mutex_unlock(&e->f.mu);
    gx_bind_cancel_all(a);
    gx_gang_binds_free(a);
    gx_gang_store_free(a);
    gx_gate_release(&a->bind_gate);
    gx_leases_free(a->leases);
    gx_bg_clear(a);
    gx_http_free(e->http);
    gx_seen_free(a->seen);
    gx_ledger_free(a->ledger);
    gx_nameidx_release(&e->snap.names);
    gx_fakekube_app_free(a);
    gx_fakehttp_stop(e->srv);
    free(e->f.tenants);
    pthread_mutex_destroy(&e->f.mu);
}

/* What filter would have remembered about the pod. */
static void
seen_by_filter(struct env *e)
{
    struct gx_arena ar;
    struct gx_pod pod;
    struct gx_podreq req;
    struct gx_why why = {{0}};
    char *json = pod_json(&e->f);

    gx_arena_init(&ar, 0);
    cr_assert_eq(gx_kobj_decode_pod(json, strlen(json), 64, &ar, &pod, &why), GX_OK, "%s",
                 why.text);
    cr_assert_eq(gx_podreq_parse(e->app.cfg, &pod, &req, &why), GX_OK, "%s", why.text);
    gx_seen_put(e->app.seen, &pod, &req, gx_mono_ms());
    gx_arena_release(&ar);
    free(json);
}

static void
answer_done(void *ctx, const struct gx_httpc_result *res)
{
    struct env *e = ctx;
    cJSON *j = cJSON_ParseWithLength(res->body != NULL ? res->body : "", res->body_len);
    cJSON *err = cJSON_GetObjectItem(j, "Error");

    e->answered = true;
    e->status = res->status;
    (void)snprintf(e->error, sizeof(e->error), "%s", cJSON_IsString(err) ? err->valuestring : "?");
    cJSON_Delete(j);
}

static bool
settled(struct env *e)
{
    return e->answered && LIST_EMPTY(&e->app.bgs) && LIST_EMPTY(&e->app.binds);
}

static bool
answered(struct env *e)
{
    return e->answered;
}

/* POST the bind of the pod to HERE (the answer comes while the loop runs). */
static void
bind_post(struct env *e)
{
    static const char body[] = "{\"PodName\":\"" POD "\",\"PodNamespace\":\"" NS
                               "\",\"PodUID\":\"" UID "\",\"Node\":\"" HERE "\"}";
    char url[64];
    struct gx_httpc_req req = {.method = "POST",
                               .url = url,
                               .body = body,
                               .body_len = sizeof(body) - 1,
                               .content_type = "application/json",
                               .timeout_ms = DEADLINE_MS,
                               .max_body = 1 << 20};

    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d/bind", gx_http_port(e->http));
    e->answered = false;
    cr_assert_not_null(gx_httpc_start(e->app.sync.httpc, &req, answer_done, NULL, e));
}

/* POST the bind of the pod to HERE and wait for the answer and the background write. */
static void
bind_pod(struct env *e)
{
    bind_post(e);
    cr_assert(run_until(e, settled), "the bind is answered and its writes end");
    cr_assert_eq(e->status, 200);
}

/*
 * @trace without its label PATCHes into @out; returns how many there were,
 * and with @before_binding whether each came before the Binding.
 */
static int
strip_patches(const char *trace, char *out, size_t cap, bool *before_binding)
{
    const char *binding = strstr(trace, "POST binding");
    char buf[1024], *save = NULL;
    int n = 0;

    out[0] = '\0';
    *before_binding = true;
    (void)snprintf(buf, sizeof(buf), "%s", trace);
    for (char *call = strtok_r(buf, ",", &save); call != NULL; call = strtok_r(NULL, ",", &save)) {
        size_t len = strlen(out);
        if (strcmp(call, "PATCH pod") == 0) {
            n++;
            *before_binding &= binding == NULL || trace + (call - buf) < binding;
            continue;
        }
        (void)snprintf(out + len, cap - len, "%s%s", len ? "," : "", call);
    }
    return n;
}

/*
 * The calls the fake saw, in order, except the label PATCH: it runs
 * alongside the Lease calls, so only its count and that it came before the
 * Binding are fixed.
 */
static void
assert_trace(struct env *e, const char *want)
{
    char got_rest[1024], want_rest[1024];
    bool got_before, want_before;
    int got_n, want_n;

    pthread_mutex_lock(&e->f.mu);
    got_n = strip_patches(e->f.trace, got_rest, sizeof(got_rest), &got_before);
    want_n = strip_patches(want, want_rest, sizeof(want_rest), &want_before);
    cr_assert_str_eq(got_rest, want_rest, "trace %s", e->f.trace);
    cr_assert_eq(got_n, want_n, "label PATCHes in %s", e->f.trace);
    cr_assert(got_before, "every label PATCH before the Binding: %s", e->f.trace);
    pthread_mutex_unlock(&e->f.mu);
}

/* The state of the pod's booking in the fake's Lease: "reserved", "bound" or "" (none). */
static void
assert_booking(struct env *e, const char *want)
{
    cJSON *doc, *t;
    const char *got = "";

    pthread_mutex_lock(&e->f.mu);
    doc = cJSON_Parse(e->f.tenants != NULL ? e->f.tenants : "{}");
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(doc, "tenants"))
    {
        cJSON *uid = cJSON_GetObjectItem(t, "uid"), *st = cJSON_GetObjectItem(t, "state");
        if (cJSON_IsString(uid) && strcmp(uid->valuestring, UID) == 0) {
            got = cJSON_IsString(st) ? st->valuestring : "?";
            break;
        }
    }
    pthread_mutex_unlock(&e->f.mu);
    cr_assert_str_eq(got, want, "the Lease books the pod as \"%s\"", want);
    cr_assert_eq(gx_ledger_find_pod(e->app.ledger, UID) != NULL, want[0] != '\0',
                 "the cache agrees with the Lease");
    cJSON_Delete(doc);
}

/*
 * Bind the pod, then check the outcome counted, the error answered (a
 * prefix; "" is exact), the calls made in order and the booking left in
 * the Lease; then tear down.
 */
static void
expect(struct env *e, enum gx_bind_outcome o, const char *error, const char *trace,
       const char *booking)
{
    bind_pod(e);
    cr_assert_eq(e->app.metrics.binds[o], 1, "outcome %s: %s", gx_bind_outcome_name(o), e->error);
    if (error[0] == '\0') {
        cr_assert_str_eq(e->error, "");
    } else {
        cr_assert_eq(strncmp(e->error, error, strlen(error)), 0, "%s", e->error);
    }
    assert_trace(e, trace);
    assert_booking(e, booking);
    env_fini(e);
}

#define RESERVE "GET lease,POST lease,"
#define BIND RESERVE "PATCH pod,POST binding,"
#define MARK_BOUND "GET lease,PUT lease"
#define RELEASE "GET lease,PUT lease"
#define KEPT "cannot create the binding (booking kept until the pod settles): "
#define ELSEWHERE "the pod is already bound to another node"

Test(bind, reserve_label_binding_then_marks_bound)
{
    struct env e;

    env_init(&e, true);
    expect(&e, GX_BIND_OK, "", BIND MARK_BOUND, "bound");
}

Test(bind, a_pod_filter_did_not_see_is_read_first)
{
    struct env e;

    env_init(&e, false);
    expect(&e, GX_BIND_OK, "", "GET pod," BIND MARK_BOUND, "bound");
}

Test(bind, a_lost_lease_race_retries_the_reservation)
{
    struct env e;

    env_init(&e, true);
    e.f.lease_exists = true; /* so the reservation is a PUT; the first one loses */
    e.f.lose = 1;
    expect(&e, GX_BIND_OK, "",
           "GET lease,PUT lease,GET lease,PUT lease,PATCH pod,POST binding," MARK_BOUND, "bound");
}

/* Every label PATCH fails, each answered @patch_ms late: the bind fails after @trace. */
static void
label_fails(int patch_ms, const char *trace)
{
    struct env e;

    env_init(&e, true);
    e.f.patch_status = 500;
    e.f.patch_ms = patch_ms;
    expect(&e, GX_BIND_ERROR, "cannot label the pod: HTTP 500: boom", trace, "");
}

/* The label fails after the Lease write: the release is a round of its own. */
Test(bind, a_label_patch_failing_thrice_releases_the_reservation)
{
    label_fails(100, RESERVE "PATCH pod,PATCH pod,PATCH pod," RELEASE);
}

/* Tried again only while half the bind's deadline (1 s here) is left for it and the Binding. */
Test(bind, a_slow_failing_label_patch_is_tried_while_half_the_deadline_is_left)
{
    label_fails(300, RESERVE "PATCH pod,PATCH pod," RELEASE); /* 2nd answer: 400 ms left */
}

Test(bind, a_label_patch_failing_twice_is_sent_again)
{
    struct env e;

    env_init(&e, true);
    e.f.patch_status = 503;
    e.f.patch_failures = 2;
    expect(&e, GX_BIND_OK, "", RESERVE "PATCH pod,PATCH pod,PATCH pod,POST binding," MARK_BOUND,
           "bound");
}

static int g_patches_seen; /* label PATCHes the next held_with_patches waits for */

static bool
held_with_patches(struct env *e)
{
    bool h;
    int n = 0;

    pthread_mutex_lock(&e->f.mu);
    h = e->f.holding;
    for (const char *p = strstr(e->f.trace, "PATCH pod"); p != NULL;
         p = strstr(p + 1, "PATCH pod")) {
        n++;
    }
    pthread_mutex_unlock(&e->f.mu);
    return h && n >= g_patches_seen;
}

/* Let the held Lease call go and wait for the answer and the writes after it. */
static void
let_go(struct env *e)
{
    pthread_mutex_lock(&e->f.mu);
    e->f.hold = false;
    pthread_mutex_unlock(&e->f.mu);
    cr_assert(run_until(e, settled), "the bind is answered and its writes end");
}

/*
 * Bind while the API server holds the reservation's Lease write back until
 * @patches label PATCHes came; no answer before it is let go.
 */
static void
bind_with_lease_write_held(struct env *e, int patches)
{
    e->f.hold_call = 2; /* GET lease, POST lease: the write */
    e->f.hold = true;
    g_patches_seen = patches;
    bind_post(e);
    cr_assert(run_until(e, held_with_patches), "the PATCHes come while the Lease write waits");
    cr_assert_not(e->answered, "no answer before the Lease write ends");
    let_go(e);
}

/*
 * The label PATCH does not wait for the Lease write: under a slow API
 * server three writes one after another ran out of the bind's deadline.
 */
Test(bind, the_label_patch_goes_while_the_lease_write_is_held)
{
    struct env e;

    env_init(&e, true);
    bind_with_lease_write_held(&e, 1);
    cr_assert_eq(e.app.metrics.binds[GX_BIND_OK], 1, "%s", e.error);
    assert_trace(&e, BIND MARK_BOUND);
    assert_booking(&e, "bound");
    env_fini(&e);
}

static bool
one_waiting(struct env *e)
{
    return e->app.bind_gate.n_waiting == 1;
}

/*
 * One bind in flight at most: a second, still waiting when half its
 * deadline is gone, is answered at once with an error and costs the API
 * server nothing; the first goes on as usual.
 */
Test(bind, a_bind_waiting_past_half_its_deadline_is_shed_without_a_call)
{
    struct env e;

    env_init(&e, true);
    e.app.cfg->binds_in_flight = 1;
    e.f.hold_call = 1; /* the first bind's Lease read waits */
    e.f.hold = true;
    bind_post(&e);
    g_patches_seen = 0;
    cr_assert(run_until(&e, held_with_patches), "the first bind is in flight");
    bind_post(&e);
    cr_assert(run_until(&e, one_waiting), "the second waits for the first");
    cr_assert(run_until(&e, answered), "the second is answered while the first is held");
    cr_assert_eq(e.app.metrics.binds_shed, 1);
    cr_assert_eq(e.app.metrics.binds[GX_BIND_ERROR], 1);
    cr_assert_eq(strncmp(e.error, "too many binds in flight", 24), 0, "%s", e.error);
    pthread_mutex_lock(&e.f.mu);
    cr_assert_eq(e.f.lease_calls, 1, "the shed bind made no call: %s", e.f.trace);
    pthread_mutex_unlock(&e.f.mu);
    e.answered = false;
    let_go(&e);
    cr_assert_eq(e.app.metrics.binds[GX_BIND_OK], 1, "%s", e.error);
    cr_assert_eq(e.app.bind_gate.running, 0);
    assert_booking(&e, "bound");
    env_fini(&e);
}

/* A label that fails while the Lease write is in flight fails the bind once that write ends. */
Test(bind, a_label_failing_during_the_lease_write_releases_after_it)
{
    struct env e;

    env_init(&e, true);
    e.f.patch_status = 500;
    bind_with_lease_write_held(&e, 3); /* the PATCH and its two retries */
    cr_assert_eq(e.app.metrics.binds[GX_BIND_ERROR], 1, "%s", e.error);
    cr_assert_str_eq(e.error, "cannot label the pod: HTTP 500: boom");
    /* the release goes right behind the reservation's write: it needs no read */
    assert_trace(&e, RESERVE "PATCH pod,PATCH pod,PATCH pod,PUT lease");
    assert_booking(&e, "");
    env_fini(&e);
}

static enum gx_err
other_mutate(void *ctx, struct gx_ledger *l, const char *node, bool *write, struct gx_why *why)
{
    struct gx_tenant t = {.card = 1, .slices = 1, .util_pct = -1};
    static const int slots[2] = {2, 2};

    (void)ctx;
    (void)why;
    (void)snprintf(t.uid, sizeof(t.uid), "uid-other");
    (void)snprintf(t.pod, sizeof(t.pod), "ml/other");
    *write = true;
    return gx_ledger_add(l, node, &t, 1, slots, 2);
}

static void
other_done(void *ctx, enum gx_err rc, const char *why)
{
    (void)rc;
    (void)why;
    *(bool *)ctx = true;
}

static bool
holding(struct env *e)
{
    bool h;

    pthread_mutex_lock(&e->f.mu);
    h = e->f.holding;
    pthread_mutex_unlock(&e->f.mu);
    return h;
}

/* Run the loop for @ms. */
static void
run_for(struct env *e, int ms)
{
    int64_t end = gx_mono_ms() + ms;

    while (gx_mono_ms() < end) {
        struct timeval tv = {0, 10000};
        (void)event_base_loopexit(e->app.base, &tv);
        (void)event_base_dispatch(e->app.base);
    }
}

/*
 * A Lease round that outlives the bind's deadline (another update in it
 * has a later one) tells the bind after that deadline: the bind gives up
 * and releases instead of sending a Binding that could land after it
 * answered.
 */
Test(bind, a_reservation_heard_after_the_deadline_is_released)
{
    struct env e;
    bool first = false, second = false;

    env_init(&e, true);
    e.app.cfg->bind_deadline_ms = 500;
    e.f.hold_call = 1; /* round 1: another update's GET, held */
    e.f.hold = true;
    cr_assert(gx_leases_update(e.app.leases, HERE, gx_mono_ms() + 8000, other_mutate, other_done,
                               &first));
    cr_assert(run_until(&e, holding), "round 1 held");
    bind_post(&e); /* its reservation waits for round 2 */
    cr_assert(gx_leases_update(e.app.leases, HERE, gx_mono_ms() + 8000, other_mutate, other_done,
                               &second));
    run_for(&e, 100);
    pthread_mutex_lock(&e.f.mu);
    e.f.hold = false;
    pthread_mutex_unlock(&e.f.mu);
    while (holding(&e)) {
        gx_fakehttp_msleep(5);
    }
    pthread_mutex_lock(&e.f.mu);
    e.f.hold_call = 3; /* GET, POST (round 1), PUT (round 2: behind our write, no read) */
    e.f.hold = true;
    pthread_mutex_unlock(&e.f.mu);
    cr_assert(run_until(&e, holding), "round 2's write held");
    run_for(&e, 600); /* past the bind's deadline, not the round's */
    let_go(&e);
    cr_assert(first && second);
    cr_assert_eq(e.app.metrics.binds[GX_BIND_ERROR], 1, "%s", e.error);
    cr_assert_str_eq(e.error, "the ledger lease was written after the bind's deadline");
    assert_booking(&e, "");
    cr_assert_not_null(gx_ledger_find_pod(e.app.ledger, "uid-other"), "the round's other update");
    env_fini(&e);
}

Test(bind, a_binding_conflict_for_a_pod_bound_here_is_a_repeat)
{
    struct env e;

    env_init(&e, true);
    (void)snprintf(e.f.pod_node, sizeof(e.f.pod_node), HERE); /* a retried bind */
    expect(&e, GX_BIND_REPEAT, "", BIND "GET pod," MARK_BOUND, "bound");
}

Test(bind, a_binding_conflict_for_a_pod_bound_elsewhere_releases)
{
    struct env e;

    env_init(&e, true);
    (void)snprintf(e.f.pod_node, sizeof(e.f.pod_node), "gpu-b");
    expect(&e, GX_BIND_ERROR, ELSEWHERE, BIND "GET pod," RELEASE, "");
}

Test(bind, a_5xx_binding_that_landed_is_success)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_status = 500;
    e.f.lands_on = HERE;
    expect(&e, GX_BIND_OK, "", BIND "GET pod," MARK_BOUND, "bound");
}

Test(bind, a_5xx_binding_with_the_pod_unbound_keeps_the_booking)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_status = 503;
    expect(&e, GX_BIND_ERROR, KEPT "HTTP 503", BIND "GET pod,POST binding,GET pod", "reserved");
}

/* A Binding that failed and did not land goes once more while time is left. */
Test(bind, a_5xx_binding_that_did_not_land_is_sent_again)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_status = 503;
    e.f.binding_failures = 1;
    expect(&e, GX_BIND_OK, "", BIND "GET pod,POST binding," MARK_BOUND, "bound");
}

Test(bind, a_timed_out_binding_with_the_pod_unbound_keeps_the_booking)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_hang_ms = 3000;
    expect(&e, GX_BIND_ERROR, KEPT, BIND "GET pod", "reserved");
}

Test(bind, a_timed_out_binding_that_landed_is_success)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_hang_ms = 3000;
    e.f.lands_on = HERE;
    expect(&e, GX_BIND_OK, "", BIND "GET pod," MARK_BOUND, "bound");
}

Test(bind, an_unknown_binding_with_the_pod_bound_elsewhere_releases)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_status = 500;
    e.f.lands_on = "gpu-b"; /* another replica's Binding won meanwhile */
    expect(&e, GX_BIND_ERROR, ELSEWHERE, BIND "GET pod," RELEASE, "");
}

Test(bind, a_refused_reservation_writes_nothing_and_is_rejected)
{
    struct env e;

    env_init(&e, true);
    e.node.ready = false;
    expect(&e, GX_BIND_REJECTED, "cannot bind to " HERE, "GET lease", "");
}

static bool
held_and_answered(struct env *e)
{
    bool h;

    pthread_mutex_lock(&e->f.mu);
    h = e->f.holding;
    pthread_mutex_unlock(&e->f.mu);
    return h && e->answered;
}

/*
 * The e2e_burst over-admission: attempt 1 books, its label PATCH fails, so
 * it queues a background release, whose Lease call @hold_call the API
 * server holds back; the scheduler's retry comes meanwhile. Updates of one
 * node go in rounds (leases_cas.c), so the retry waits for the release's
 * round and then books anew: whichever way the calls interleave, the pod
 * ends bound with its booking in place.
 */
static void
late_release(int hold_call)
{
    struct env e;

    env_init(&e, true);
    e.f.patch_status = 500;
    e.f.patch_failures = 3; /* the PATCH and its two retries */
    e.f.hold_call = hold_call;
    e.f.hold = true;
    bind_post(&e);
    cr_assert(run_until(&e, held_and_answered), "attempt 1 fails with its release held");
    cr_assert_eq(e.app.metrics.binds[GX_BIND_ERROR], 1, "%s", e.error);
    bind_post(&e);
    pthread_mutex_lock(&e.f.mu);
    e.f.hold = false;
    pthread_mutex_unlock(&e.f.mu);
    cr_assert(run_until(&e, answered), "the retry is answered");
    cr_assert_eq(e.app.metrics.binds[GX_BIND_OK], 1, "the retry binds: %s", e.error);
    cr_assert(run_until(&e, settled), "the late release and the bound mark end");
    assert_booking(&e, "bound");
    env_fini(&e);
}

/* Held before it reads the Lease. */
Test(bind, a_late_release_of_a_failed_attempt_spares_the_retried_bind)
{
    late_release(3); /* GET lease, POST lease (attempt 1), then the release's GET */
}

/* Held after it read attempt 1's booking, before its write. */
Test(bind, a_late_release_write_of_a_failed_attempt_spares_the_retried_bind)
{
    late_release(4); /* ... the release's GET, then its PUT */
}

/* Seed the cache with the pod's booking on gpu-b, @age_ms old. */
static void
booked_on_b(struct env *e, int64_t age_ms)
{
    struct gx_tenant t = {.uid = UID,
                          .pod = NS "/" POD,
                          .card = 0,
                          .exclusive = true,
                          .util_pct = -1,
                          .state = GX_TENANT_RESERVED};
    static const int slots[2] = {1, 1};

    t.since_ms = gx_wall_ms() - age_ms;
    cr_assert_eq(gx_ledger_add(e->app.ledger, "gpu-b", &t, 1, slots, 2), GX_OK);
}

/* Bind the pod booked on gpu-b: refused with @error after the calls @trace; still booked there. */
static void
expect_kept_on_b(struct env *e, const char *error, const char *trace)
{
    bind_pod(e);
    cr_assert_eq(e->app.metrics.binds[GX_BIND_ERROR], 1, "%s", e->error);
    cr_assert_str_eq(e->error, error);
    assert_trace(e, trace);
    cr_assert_str_eq(gx_ledger_find_pod(e->app.ledger, UID)->node, "gpu-b", "still booked there");
    env_fini(e);
}

/*
 * A retried bind to another node while the pod's booking there is young:
 * the first attempt's timed-out Binding may still land, so the booking is
 * not moved (moving it left bound pods without a booking in e2e_burst).
 */
Test(bind, a_young_booking_on_another_node_is_not_moved)
{
    struct env e;

    env_init(&e, true);
    booked_on_b(&e, 1000);
    expect_kept_on_b(&e, "an earlier bind of the pod to another node may still land: gpu-b", "");
}

/*
 * A retried bind renews the booking an earlier attempt left (its Binding may
 * still land); when the retry then fails it must not undo that booking.
 */
Test(bind, a_renewed_booking_outlives_a_failed_retry)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_hang_ms = 3000;
    bind_pod(&e);
    cr_assert_eq(e.app.metrics.binds[GX_BIND_ERROR], 1, "attempt 1 times out: %s", e.error);
    assert_booking(&e, "reserved");
    e.f.binding_hang_ms = 0;
    e.f.patch_status = 500;
    bind_pod(&e);
    cr_assert_eq(e.app.metrics.binds[GX_BIND_ERROR], 2, "the retry fails: %s", e.error);
    cr_assert_eq(strncmp(e.error, "cannot label the pod", 20), 0, "%s", e.error);
    assert_booking(&e, "reserved");
    env_fini(&e);
}

/* The Binding conflicts and the read that follows answers @get_status. */
static void
conflict_then_read(int get_status, const char *error, const char *trace, const char *booking)
{
    struct env e;

    env_init(&e, true);
    e.f.binding_status = 409;
    e.f.get_status = get_status;
    expect(&e, GX_BIND_ERROR, error, trace, booking);
}

/* A 409 whose follow-up read fails: the pod may be bound here already, so the booking stays. */
Test(bind, a_binding_conflict_with_an_unreadable_pod_keeps_the_booking)
{
    conflict_then_read(500, "the binding conflicted and the pod could not be read", BIND "GET pod",
                       "reserved");
}

/* A 409 and then no pod at all: it was deleted, so its booking goes at once. */
Test(bind, a_binding_conflict_with_a_deleted_pod_releases_the_booking)
{
    conflict_then_read(404, "the pod was deleted", BIND "GET pod," RELEASE, "");
}

/* An old booking elsewhere moves only when the pod shows it is still pending. */
Test(bind, an_old_booking_of_a_pod_bound_there_is_not_moved)
{
    struct env e;

    env_init(&e, true);
    booked_on_b(&e, 60000);
    (void)snprintf(e.f.pod_node, sizeof(e.f.pod_node), "gpu-b");
    expect_kept_on_b(&e, "the pod holds GPUs on another node and is not pending: gpu-b", "GET pod");
}

Test(bind, an_old_booking_of_a_pending_pod_moves_here)
{
    struct env e;

    env_init(&e, true);
    booked_on_b(&e, 60000);
    expect(&e, GX_BIND_OK, "", "GET pod,GET lease," BIND MARK_BOUND, "bound");
}

/* ---- gangs: the barrier of the members this replica planned (gang_bind.h) ---- */

static void
go_noted(void *ctx, bool ok)
{
    if (ctx != NULL) {
        *(int *)ctx = ok ? 1 : -1;
    }
}

/* The pod and the first @n-1 of uid-m1.. of PodGroup ml/g planned on HERE in one pass. */
static void
gang_planned_n(struct env *e, size_t n)
{
    const char *uids[] = {UID, "uid-m1"};
    const struct gx_seen_pod *seen = gx_seen_get(e->app.seen, UID, gx_mono_ms());
    struct gx_decide_ctx dc;
    struct gx_why why = {{0}};

    cr_assert_not_null(seen);
    if (e->app.gang == NULL) {
        e->app.gang = gx_gang_new();
    }
    cr_assert_not_null(e->app.gang);
    gx_sync_decide_ctx(&e->app, &dc);
    for (size_t i = 0; i < n; i++) {
        struct gx_pod p = {.name = uids[i], .namespace = NS, .uid = uids[i], .pod_group = "g"};

        cr_assert_eq(
            gx_gang_put(e->app.gang, &dc, NS "/g", &p, &seen->req, HERE, 60000, gx_mono_ms(), &why),
            GX_OK, "%s", why.text);
    }
    cr_assert_eq(gx_gang_held(&e->app), n);
}

/* The pod and uid-m1, members of PodGroup ml/g, planned on HERE in one pass (their entries). */
static void
gang_planned(struct env *e)
{
    gang_planned_n(e, 2);
}

/* The gang's pass failed at uid-m1's bind (the barrier lingers a bind deadline). */
static void
gang_failed_at_m1(struct env *e)
{
    struct gx_gang_waiter m1;

    cr_assert(gx_gang_bind_join(&e->app, "uid-m1", &m1, go_noted, NULL));
    gx_gang_bind_failed(&m1);
    gx_gang_bind_leave(&m1);
    cr_assert_eq(e->app.metrics.gang_binds_failed, 1);
}

Test(bind, a_gang_member_binds_once_every_member_reserved)
{
    struct gx_gang_waiter m1;
    struct env e;
    int went = 0;

    env_init(&e, true);
    gang_planned(&e);
    cr_assert(gx_gang_bind_join(&e.app, "uid-m1", &m1, go_noted, &went));
    cr_assert_eq(gx_gang_bind_reserved(&m1), GX_BARRIER_OPEN, "m1 waits for the pod");
    bind_pod(&e);
    cr_assert_eq(went, 1, "the pod's reservation let m1 go on");
    cr_assert_eq(e.app.metrics.binds[GX_BIND_OK], 1, "%s", e.error);
    gx_gang_bind_leave(&m1);
    assert_booking(&e, "bound");
    env_fini(&e);
}

/*
 * kube-scheduler binds each member on its own: the pod's bind may arrive
 * after m1's failed its gang and the pass's entries went. It fails too,
 * before any write, instead of binding alone (a partly bound gang).
 */
Test(bind, a_gang_member_arriving_after_its_gang_failed_fails_unwritten)
{
    struct env e;

    env_init(&e, true);
    gang_planned(&e);
    gang_failed_at_m1(&e);
    cr_assert_eq(gx_gang_held(&e.app), 0, "the failed pass's entries are dropped");
    expect(&e, GX_BIND_ERROR, "another member of the pod's gang could not be booked", "", "");
}

/*
 * kube-scheduler may send the pod alone right after its gang failed (it
 * still counted the others as assumed): planned alone in a new pass, its
 * bind waits for the failed pass's members too, and fails when they do
 * not come, its reservation released.
 */
Test(bind, a_gang_member_planned_alone_after_its_gang_failed_waits_for_the_gang)
{
    struct env e;

    env_init(&e, true);
    gang_planned(&e);
    gang_failed_at_m1(&e);
    gx_fakehttp_msleep(2); /* a new pass */
    gang_planned_n(&e, 1);
    expect(&e, GX_BIND_ERROR, "another member of the pod's gang could not be booked",
           RESERVE "PATCH pod," RELEASE, "");
}

/*
 * kube-scheduler may hold the pod at its gang gate while it plans the
 * others in a new pass, which drops the pod's entry here: its bind still
 * waits for the members planned since, and fails when they do not come.
 */
Test(bind, a_gang_member_whose_entry_a_new_pass_dropped_waits_for_the_group)
{
    const struct gx_seen_pod *seen;
    struct gx_decide_ctx dc;
    struct gx_why why = {{0}};
    struct gx_pod m1 = {.name = "m1", .namespace = NS, .uid = "uid-m1", .pod_group = "g"};
    struct env e;

    env_init(&e, true);
    gang_planned(&e);
    seen = gx_seen_get(e.app.seen, UID, gx_mono_ms());
    cr_assert_not_null(seen);
    /* m1 filtered again: a new pass, the pod's entry gone */
    cr_assert_eq(gx_gang_begin(e.app.gang, NS "/g", "uid-m1", gx_mono_ms()), 2);
    gx_sync_decide_ctx(&e.app, &dc);
    cr_assert_eq(
        gx_gang_put(e.app.gang, &dc, NS "/g", &m1, &seen->req, HERE, 60000, gx_mono_ms(), &why),
        GX_OK, "%s", why.text);
    cr_assert_eq(gx_gang_held(&e.app), 1);
    expect(&e, GX_BIND_ERROR, "another member of the pod's gang could not be booked",
           RESERVE "PATCH pod," RELEASE, "");
}
