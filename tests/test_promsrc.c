/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_promsrc.c - the Prometheus poller against a fake Prometheus that runs
 * in threads of the test on 127.0.0.1:0 (one per connection, so queries sent
 * together would be answered together). Each answer is delayed a little and
 * the fake records how many queries were in flight at once: a round must run
 * its queries one after another.
 */
#include "gx_test.h"

#include <event2/event.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "config.h"
#include "dcgm.h"
#include "httpc.h"
#include "log.h"
#include "metrics.h"
#include "promsrc.h"
#include "gx_fakehttp.h"

GX_SUITE(promsrc);

#define DEADLINE_MS 8000
#define ANSWER_DELAY_MS 40

struct fake {
    struct gx_fakehttp *srv;
    int port;
    pthread_mutex_t mu;
    int in_flight, max_in_flight, requests;
    bool fail_temp; /* answer the temperature query with HTTP 500 */
    char order[64]; /* first letter of each query, in arrival order */
};

/* Append @c to the arrival order (under f->mu). */
static void
note(struct fake *f, char c)
{
    size_t n = strlen(f->order);

    if (n + 1 < sizeof(f->order)) {
        f->order[n] = c;
        f->order[n + 1] = '\0';
    }
}

/* Answer one query: its name picks the value ("q_util" -> 42, ...). */
static void
answer(void *ctx, int fd, const struct gx_fakehttp_req *r)
{
    struct fake *f = ctx;
    char body[512];
    int status = 200;
    const char *value = "0", *fixed = NULL;

    pthread_mutex_lock(&f->mu);
    f->requests++;
    f->in_flight++;
    if (f->in_flight > f->max_in_flight) {
        f->max_in_flight = f->in_flight;
    }
    if (strstr(r->target, "query=q_util") != NULL) {
        value = "42";
        note(f, 'u');
    } else if (strstr(r->target, "query=q_mem") != NULL) {
        value = "1000";
        note(f, 'm');
    } else if (strstr(r->target, "query=q_temp") != NULL) {
        value = "61";
        status = f->fail_temp ? 500 : 200;
        note(f, 't');
    } else if (strstr(r->target, "query=q_bad") != NULL) {
        fixed = "{\"status\":\"error\",\"errorType\":\"bad_data\","
                "\"error\":\"1:3: parse error: unexpected character\"}";
        note(f, 'b');
    } else if (strstr(r->target, "query=q_auth") != NULL) {
        status = 401;
        fixed = "Unauthorized\n";
        note(f, 'a');
    }
    pthread_mutex_unlock(&f->mu);

    gx_fakehttp_msleep(ANSWER_DELAY_MS);
    (void)snprintf(body, sizeof(body),
                   "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                   "{\"metric\":{\"Hostname\":\"n1\",\"UUID\":\"GPU-1\",\"gpu\":\"0\"},"
                   "\"value\":[1787566530.5,\"%s\"]}]}}",
                   value);
    if (fixed != NULL) {
        (void)snprintf(body, sizeof(body), "%s", fixed);
    }
    pthread_mutex_lock(&f->mu);
    f->in_flight--;
    pthread_mutex_unlock(&f->mu);
    gx_fakehttp_respond(fd, status, body);
}

static void
fake_start(struct fake *f)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    f->srv = gx_fakehttp_start(answer, f);
    f->port = gx_fakehttp_port(f->srv);
}

static void
fake_stop(struct fake *f)
{
    gx_fakehttp_stop(f->srv); /* every answer has been sent */
    pthread_mutex_destroy(&f->mu);
}

/*
 * The shipped @defaults with the fake at @url as Prometheus: one round an
 * hour (a test polls again when it wants a second), the fake's three
 * queries and every other signal disabled.
 */
static void
test_cfg(struct gx_config *cfg, const struct gx_config *defaults, char *url)
{
    *cfg = *defaults;
    cfg->prom_url = url;
    cfg->prom_interval_s = 3600;
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        cfg->prom_queries[s] = "";
    }
    cfg->prom_queries[GX_SIG_UTIL] = "q_util";
    cfg->prom_queries[GX_SIG_MEM_USED] = "q_mem";
    cfg->prom_queries[GX_SIG_TEMP] = "q_temp";
}

static void
count_cb(void *ctx)
{
    (*(int *)ctx)++;
}

/* Run the loop until @updates is non-zero or the deadline passes. */
static void
run_until_update(struct event_base *base, const int *updates)
{
    int64_t end = gx_mono_ms() + DEADLINE_MS;

    while (*updates == 0 && gx_mono_ms() < end) {
        struct timeval tv = {0, 20000};
        (void)event_base_loopexit(base, &tv);
        (void)event_base_dispatch(base);
    }
}

/* Value of @sig of the only card of node n1, NaN when unknown. */
static double
card_value(const struct gx_mstore *ms, enum gx_signal sig)
{
    size_t n = 0;
    const struct gx_mcard *c = gx_mstore_cards(ms, "n1", &n);

    cr_assert_eq(n, 1);
    return c[0].v[sig].value;
}

/* The poller under test, its loop and the fake; one per test (criterion forks each). */
static struct rig {
    struct fake f;
    struct gx_config *defaults; /* gx_config_default(): owns what cfg borrows */
    struct gx_config cfg;
    struct gx_metrics *m;
    struct event_base *base;
    struct gx_httpc *http;
    struct gx_mstore *ms;
    struct gx_promsrc *p;
    char url[64];
    int updates;
} r;

/* .init: the fake and the poller's dependencies; a test adjusts r.cfg, then rig_start. */
static void
rig_init(void)
{
    memset(&r, 0, sizeof(r));
    r.m = calloc(1, sizeof(*r.m));
    r.base = event_base_new();
    r.ms = gx_mstore_new();
    cr_assert_not_null(r.m);
    cr_assert_not_null(r.base);
    cr_assert_not_null(r.ms);
    fake_start(&r.f);
    (void)snprintf(r.url, sizeof(r.url), "http://127.0.0.1:%d", r.f.port);
    cr_assert_eq(gx_config_default(&r.defaults), GX_OK);
    test_cfg(&r.cfg, r.defaults, r.url);
    r.http = gx_httpc_new(r.base);
    cr_assert_not_null(r.http);
}

static void
rig_start(void)
{
    r.p = gx_promsrc_new(r.base, r.http, &r.cfg, r.ms, &r.m->up[GX_UP_PROMETHEUS], count_cb,
                         &r.updates);
    cr_assert_not_null(r.p);
}

static void
rig_fini(void)
{
    gx_log_set_sink(NULL);
    gx_promsrc_free(r.p);
    gx_httpc_free(r.http);
    fake_stop(&r.f);
    gx_mstore_free(r.ms);
    event_base_free(r.base);
    free(r.m);
    gx_config_free(r.defaults);
}

/* Requests the fake has seen. */
static int
fake_requests(void)
{
    int n;

    pthread_mutex_lock(&r.f.mu);
    n = r.f.requests;
    pthread_mutex_unlock(&r.f.mu);
    return n;
}

Test(promsrc, round_runs_queries_one_after_another, .init = rig_init, .fini = rig_fini)
{
    rig_start();
    run_until_update(r.base, &r.updates);
    cr_assert_eq(r.updates, 1);
    cr_assert_eq(gx_promsrc_rounds_ok(r.p), 1);
    pthread_mutex_lock(&r.f.mu);
    cr_assert_eq(r.f.requests, 3, "the disabled power query is not sent");
    cr_assert_eq(r.f.max_in_flight, 1, "%d queries in flight at once", r.f.max_in_flight);
    cr_assert_str_eq(r.f.order, "umt", "signals in order");
    pthread_mutex_unlock(&r.f.mu);
    cr_assert_eq(r.m->up[GX_UP_PROMETHEUS].requests, 3);
    cr_assert_eq(card_value(r.ms, GX_SIG_UTIL), 42.0);
    cr_assert_eq(card_value(r.ms, GX_SIG_MEM_USED), 1000.0);
    cr_assert_eq(card_value(r.ms, GX_SIG_TEMP), 61.0);
}

/* A reload during a failing round: the next round comes after the interval, not a backoff. */
Test(promsrc, reload_during_a_round_clears_the_backoff, .init = rig_init, .fini = rig_fini)
{
    struct gx_config cfg2;
    int64_t t0, end;

    r.f.fail_temp = true;
    r.cfg.prom_interval_s = 1;
    cfg2 = r.cfg;
    rig_start();
    gx_promsrc_poll_now(r.p);
    gx_promsrc_set_config(r.p, &cfg2); /* the round is in flight */
    run_until_update(r.base, &r.updates);
    cr_assert_eq(gx_promsrc_rounds_ok(r.p), 0, "the temperature query failed the round");
    t0 = gx_mono_ms();
    end = t0 + DEADLINE_MS;
    while (fake_requests() < 4 && gx_mono_ms() < end) {
        struct timeval tv = {0, 10000};
        (void)event_base_loopexit(r.base, &tv);
        (void)event_base_dispatch(r.base);
    }
    cr_assert_eq(fake_requests(), 4, "no next round");
    /* a backoff after one failure is 2 s +- 20 % */
    cr_assert_lt(gx_mono_ms() - t0, 1500, "next round after %lld ms",
                 (long long)(gx_mono_ms() - t0));
}

Test(promsrc, failed_query_does_not_stop_the_round, .init = rig_init, .fini = rig_fini)
{
    r.f.fail_temp = true;
    /* Temperature first, so the queries after the failure must still run. */
    r.cfg.prom_queries[GX_SIG_UTIL] = "";
    r.cfg.prom_queries[GX_SIG_MEM_USED] = "";
    r.cfg.prom_queries[GX_SIG_TEMP] = "q_temp";
    r.cfg.prom_queries[GX_SIG_POWER] = "q_util";
    r.cfg.prom_queries[GX_SIG_XID] = "q_mem";
    rig_start();
    run_until_update(r.base, &r.updates);
    cr_assert_eq(r.updates, 1, "a round with some good answers updates the store");
    cr_assert_eq(gx_promsrc_rounds_ok(r.p), 0, "one query failed");
    pthread_mutex_lock(&r.f.mu);
    cr_assert_str_eq(r.f.order, "tum");
    cr_assert_eq(r.f.max_in_flight, 1);
    pthread_mutex_unlock(&r.f.mu);
    cr_assert_eq(r.m->up[GX_UP_PROMETHEUS].errors[GX_UPERR_HTTP], 1);
    cr_assert(isnan(card_value(r.ms, GX_SIG_TEMP)));
    cr_assert_eq(card_value(r.ms, GX_SIG_POWER), 42.0);
    cr_assert_eq(card_value(r.ms, GX_SIG_XID), 1000.0);
}

Test(promsrc, error_texts_say_what_happened, .init = rig_init, .fini = rig_fini)
{
    FILE *log = tmpfile();

    cr_assert_not_null(log);
    gx_log_set_sink(log);
    r.cfg.prom_queries[GX_SIG_UTIL] = "q_bad";
    r.cfg.prom_queries[GX_SIG_MEM_USED] = "q_auth";
    r.cfg.prom_queries[GX_SIG_TEMP] = "q_temp";
    rig_start();
    run_until_update(r.base, &r.updates);
    cr_assert_eq(r.updates, 1);
    /* a 200 carrying status=error is Prometheus refusing the query, not an HTTP failure */
    cr_assert_eq(r.m->up[GX_UP_PROMETHEUS].errors[GX_UPERR_QUERY], 1);
    cr_assert_eq(r.m->up[GX_UP_PROMETHEUS].errors[GX_UPERR_HTTP], 1, "only the 401");
    cr_assert_eq(gx_test_lines_with(log,
                                    "signal=util kind=query error=\"Prometheus answered HTTP 200 "
                                    "with an error"),
                 1);
    cr_assert_eq(gx_test_lines_with(log, "unexpected character"), 1,
                 "Prometheus' own text is kept");
    cr_assert_eq(gx_test_lines_with(log, "signal=mem_used kind=http error=\"HTTP 401"), 1);
    cr_assert_eq(gx_test_lines_with(log, "error=\"ok"), 0);
    gx_log_set_sink(NULL);
    (void)fclose(log);
}
