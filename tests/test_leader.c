/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_leader.c - the leader Lease's reads and writes (leader.c) against a
 * fake API server (gx_fakehttp) holding that one Lease with real
 * compare-and-swap: taking a missing Lease, following a live holder, and
 * the hand-back at shutdown, also while a renewal is in flight, landed and
 * answered late, or landed with its answer lost.
 */
#include "gx_test.h"

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <pthread.h>
#include <string.h>

#include "config.h"
#include "gx_fakekube.h"
#include "leader.h"

GX_SUITE(leader);

#define DEADLINE_MS 8000
#define SELF "http://10.0.0.1:8888"
#define OTHER "http://10.0.0.2:8888"
#define LEASES "/apis/coordination.k8s.io/v1/namespaces/gpu-extender/leases"
#define LEASE_PATH LEASES "/gpu-extender-leader"

/* ---- the fake API server: the leader Lease ---- */

struct fake {
    pthread_mutex_t mu;
    bool exists;
    long rv;
    char holder[128];
    /* faults */
    int put_ms;   /* each PUT is answered this late (it has landed by then) */
    int drop_put; /* PUTs still to land and then lose their answer */
    /* what came */
    int gets, puts, posts, conflicts;
};

static char *
lease_json(const struct fake *f)
{
    char *out = malloc(1024);

    cr_assert_not_null(out);
    (void)snprintf(out, 1024,
                   "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\","
                   "\"metadata\":{\"name\":\"gpu-extender-leader\",\"namespace\":\"gpu-extender\","
                   "\"resourceVersion\":\"%ld\",\"annotations\":{\"gpu-extender.io/leader\":"
                   "\"%s\"}},\"spec\":{\"holderIdentity\":\"%s\"}}",
                   f->rv, f->holder, f->holder);
    return out;
}

/* The write in @body applied at its resourceVersion: 200, 201, 404 or 409. */
static int
apply(struct fake *f, const char *method, const char *body)
{
    cJSON *root = cJSON_Parse(body);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(ann, "gpu-extender.io/leader");
    int status;

    cr_assert(cJSON_IsString(h), "a write names its holder: %s", body);
    if (strcmp(method, "POST") == 0) {
        status = f->exists ? 409 : 201;
    } else if (!f->exists) {
        status = 404;
    } else {
        status = cJSON_IsString(rv) && atol(rv->valuestring) == f->rv ? 200 : 409;
    }
    if (status == 200 || status == 201) {
        f->exists = true;
        f->rv++;
        (void)snprintf(f->holder, sizeof(f->holder), "%s", h->valuestring);
    }
    f->conflicts += status == 409;
    cJSON_Delete(root);
    return status;
}

static void
handle(void *ctx, int fd, const struct gx_fakehttp_req *r)
{
    struct fake *f = ctx;
    bool put = strcmp(r->method, "PUT") == 0, drop = false;
    char *obj;
    int status, delay = 0;

    pthread_mutex_lock(&f->mu);
    if (strcmp(r->method, "GET") == 0 && strcmp(r->target, LEASE_PATH) == 0) {
        f->gets++;
        status = f->exists ? 200 : 404;
    } else if ((put && strcmp(r->target, LEASE_PATH) == 0) ||
               (strcmp(r->method, "POST") == 0 && strcmp(r->target, LEASES) == 0)) {
        f->puts += put;
        f->posts += !put;
        status = apply(f, r->method, r->body);
        delay = put ? f->put_ms : 0;
        drop = put && status == 200 && f->drop_put > 0;
        f->drop_put -= drop;
    } else {
        status = 404;
    }
    obj = lease_json(f);
    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_msleep(delay);
    if (!drop) { /* a lost answer: the connection closes with nothing sent */
        gx_fakehttp_respond(fd, status, status < 300 ? obj : "{\"kind\":\"Status\"}");
    }
    free(obj);
}

/* ---- the replica ---- */

struct env {
    struct fake f;
    struct gx_fakehttp *srv;
    struct gx_app app;
};

static void
env_init(struct env *e, const char *holder, long rv)
{
    struct gx_app *a = &e->app;
    struct gx_why why = {{0}};

    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->f.mu, NULL);
    e->f.exists = holder != NULL;
    e->f.rv = rv;
    (void)snprintf(e->f.holder, sizeof(e->f.holder), "%s", holder != NULL ? holder : "");
    e->srv = gx_fakehttp_start(handle, &e->f);
    gx_fakekube_app(a, e->srv);
    a->cfg->replicas_forward = true;
    a->cfg->replicas_lease_s = 2; /* reads every 500 ms, as forward_live's replicas */
    a->cfg->replicas_advertise_url = gx_strndup(SELF, strlen(SELF));
    cr_assert_eq(gx_leader_start(a, &why), GX_OK, "%s", why.text);
}

static void
env_fini(struct env *e)
{
    gx_leader_free(&e->app);
    gx_fakekube_app_free(&e->app);
    gx_fakehttp_stop(e->srv);
    pthread_mutex_destroy(&e->f.mu);
}

static bool
run_until(struct env *e, bool (*cond)(void *e))
{
    return gx_fakekube_run_until(&e->app, cond, e, DEADLINE_MS);
}

static bool
leading(void *arg)
{
    struct env *e = arg;

    return gx_leader_leading(&e->app);
}

static bool
handed_back(void *arg)
{
    struct env *e = arg;

    return !gx_leader_handing_back(&e->app);
}

/* The fake's count @n, read under its lock. */
static int
calls(struct env *e, const int *n)
{
    int v;

    pthread_mutex_lock(&e->f.mu);
    v = *n;
    pthread_mutex_unlock(&e->f.mu);
    return v;
}

static bool
read_once(void *arg)
{
    struct env *e = arg;

    return calls(e, &e->f.gets) > 0;
}

static int puts_before;

/* A PUT came after puts_before (it is being answered now, or its answer lost). */
static bool
put_came(void *arg)
{
    struct env *e = arg;

    return calls(e, &e->f.puts) > puts_before;
}

/* Lead, then release while the next renewal is on its way; the Lease after the hand-back. */
static void
release_during_renewal(struct env *e, int put_ms, int drop)
{
    cr_assert(run_until(e, leading), "the replica takes the Lease");
    pthread_mutex_lock(&e->f.mu);
    e->f.put_ms = put_ms;
    e->f.drop_put = drop;
    puts_before = e->f.puts;
    pthread_mutex_unlock(&e->f.mu);
    cr_assert(run_until(e, put_came), "a renewal is on its way");
    gx_leader_release(&e->app);
    cr_assert(gx_leader_handing_back(&e->app), "shutdown waits for the hand-back");
    cr_assert(run_until(e, handed_back), "the hand-back ends");
}

Test(leader, takes_a_missing_lease)
{
    struct env e;

    env_init(&e, NULL, 0);
    cr_assert(run_until(&e, leading), "no Lease: the replica creates it and leads");
    cr_assert_str_eq(e.f.holder, SELF);
    cr_assert_eq(e.f.posts, 1);
    cr_assert_null(gx_leader_url(&e.app), "the leader answers itself");
    env_fini(&e);
}

Test(leader, follows_a_live_holder_until_it_goes_quiet)
{
    struct env e;
    int64_t t0 = gx_mono_ms();

    env_init(&e, OTHER, 7);
    cr_assert(run_until(&e, read_once));
    cr_assert_str_eq(gx_leader_url(&e.app), OTHER, "forwards to the holder");
    cr_assert(run_until(&e, leading), "the holder's Lease unchanged for a period: taken");
    cr_assert_geq(gx_mono_ms() - t0, 2000, "not before a lease period without a change");
    cr_assert_str_eq(e.f.holder, SELF);
    cr_assert_eq(e.f.posts, 0);
    env_fini(&e);
}

Test(leader, hands_back_at_release)
{
    struct env e;

    env_init(&e, NULL, 0);
    cr_assert(run_until(&e, leading));
    gx_leader_release(&e.app);
    cr_assert(run_until(&e, handed_back));
    cr_assert_str_eq(e.f.holder, "", "the others may take it at once");
    cr_assert_eq(e.f.conflicts, 0);
    env_fini(&e);
}

Test(leader, hand_back_waits_for_the_renewal_in_flight)
{
    struct env e;

    env_init(&e, NULL, 0);
    release_during_renewal(&e, 300, 0);
    cr_assert_str_eq(e.f.holder, "", "handed back at the version the renewal left");
    cr_assert_eq(e.f.conflicts, 0);
    env_fini(&e);
}

Test(leader, hand_back_after_a_renewal_whose_answer_was_lost)
{
    struct env e;
    int gets;

    env_init(&e, NULL, 0);
    release_during_renewal(&e, 300, 1);
    gets = e.f.gets;
    cr_assert_str_eq(e.f.holder, "", "the renewal landed: the hand-back read the Lease first");
    cr_assert_eq(e.f.conflicts, 0, "no write at the version before the renewal");
    cr_assert_geq(gets, 2, "the first read, and the one after the lost answer");
    env_fini(&e);
}
