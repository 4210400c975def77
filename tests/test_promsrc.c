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

#include "gx/config.h"
#include "gx/dcgm.h"
#include "gx/httpc.h"
#include "gx/log.h"
#include "gx/metrics.h"
#include "gx/promsrc.h"
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

static char *node_labels[] = {"Hostname"};

/* The config fields promsrc and dcgm read, built by hand. */
static void
test_cfg(struct gx_config *cfg, char *url)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->node_labels = node_labels;
    cfg->n_node_labels = 1;
    cfg->max_json_depth = 64;
    cfg->prom_url = url;
    cfg->prom_interval_s = 3600;
    cfg->prom_timeout_s = 5;
    cfg->prom_max_response_bytes = 1u << 20;
    cfg->prom_queries[GX_SIG_UTIL] = "q_util";
    cfg->prom_queries[GX_SIG_MEM_USED] = "q_mem";
    cfg->prom_queries[GX_SIG_TEMP] = "q_temp";
    cfg->prom_queries[GX_SIG_POWER] = "";
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

Test(promsrc, round_runs_queries_one_after_another)
{
    struct fake f;
    struct gx_config cfg;
    struct gx_metrics *m = calloc(1, sizeof(*m));
    struct event_base *base = event_base_new();
    struct gx_httpc *http;
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_promsrc *p;
    char url[64];
    int updates = 0;

    cr_assert_not_null(m);
    cr_assert_not_null(base);
    cr_assert_not_null(ms);
    fake_start(&f);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
    test_cfg(&cfg, url);
    http = gx_httpc_new(base);
    cr_assert_not_null(http);
    p = gx_promsrc_new(base, http, &cfg, ms, m, count_cb, &updates);
    cr_assert_not_null(p);

    run_until_update(base, &updates);
    cr_assert_eq(updates, 1);
    cr_assert_eq(gx_promsrc_rounds_ok(p), 1);
    pthread_mutex_lock(&f.mu);
    cr_assert_eq(f.requests, 3, "the disabled power query is not sent");
    cr_assert_eq(f.max_in_flight, 1, "%d queries in flight at once", f.max_in_flight);
    cr_assert_str_eq(f.order, "umt", "signals in order");
    pthread_mutex_unlock(&f.mu);
    cr_assert_eq(m->up_requests[GX_UP_PROMETHEUS], 3);
    cr_assert_eq(card_value(ms, GX_SIG_UTIL), 42.0);
    cr_assert_eq(card_value(ms, GX_SIG_MEM_USED), 1000.0);
    cr_assert_eq(card_value(ms, GX_SIG_TEMP), 61.0);

    gx_promsrc_free(p);
    gx_httpc_free(http);
    fake_stop(&f);
    gx_mstore_free(ms);
    event_base_free(base);
    free(m);
}

Test(promsrc, failed_query_does_not_stop_the_round)
{
    struct fake f;
    struct gx_config cfg;
    struct gx_metrics *m = calloc(1, sizeof(*m));
    struct event_base *base = event_base_new();
    struct gx_httpc *http;
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_promsrc *p;
    char url[64];
    int updates = 0;

    cr_assert_not_null(m);
    cr_assert_not_null(base);
    cr_assert_not_null(ms);
    fake_start(&f);
    f.fail_temp = true;
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
    test_cfg(&cfg, url);
    /* Temperature first, so the queries after the failure must still run. */
    cfg.prom_queries[GX_SIG_UTIL] = "";
    cfg.prom_queries[GX_SIG_MEM_USED] = "";
    cfg.prom_queries[GX_SIG_TEMP] = "q_temp";
    cfg.prom_queries[GX_SIG_POWER] = "q_util";
    cfg.prom_queries[GX_SIG_XID] = "q_mem";
    http = gx_httpc_new(base);
    cr_assert_not_null(http);
    p = gx_promsrc_new(base, http, &cfg, ms, m, count_cb, &updates);
    cr_assert_not_null(p);

    run_until_update(base, &updates);
    cr_assert_eq(updates, 1, "a round with some good answers updates the store");
    cr_assert_eq(gx_promsrc_rounds_ok(p), 0, "one query failed");
    pthread_mutex_lock(&f.mu);
    cr_assert_str_eq(f.order, "tum");
    cr_assert_eq(f.max_in_flight, 1);
    pthread_mutex_unlock(&f.mu);
    cr_assert_eq(m->up_errors[GX_UP_PROMETHEUS][GX_UPERR_HTTP], 1);
    cr_assert(isnan(card_value(ms, GX_SIG_TEMP)));
    cr_assert_eq(card_value(ms, GX_SIG_POWER), 42.0);
    cr_assert_eq(card_value(ms, GX_SIG_XID), 1000.0);

    gx_promsrc_free(p);
    gx_httpc_free(http);
    fake_stop(&f);
    gx_mstore_free(ms);
    event_base_free(base);
    free(m);
}

/* Lines of @f that contain @needle. */
static int
grep_count(FILE *f, const char *needle)
{
    char line[4096];
    int n = 0;

    (void)fflush(f);
    rewind(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, needle) != NULL;
    }
    return n;
}

Test(promsrc, error_texts_say_what_happened)
{
    struct fake f;
    struct gx_config cfg;
    struct gx_metrics *m = calloc(1, sizeof(*m));
    struct event_base *base = event_base_new();
    struct gx_httpc *http;
    struct gx_mstore *ms = gx_mstore_new();
    struct gx_promsrc *p;
    FILE *log = tmpfile();
    char url[64];
    int updates = 0;

    cr_assert_not_null(m);
    cr_assert_not_null(base);
    cr_assert_not_null(log);
    gx_log_set_sink(log);
    fake_start(&f);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
    test_cfg(&cfg, url);
    cfg.prom_queries[GX_SIG_UTIL] = "q_bad";
    cfg.prom_queries[GX_SIG_MEM_USED] = "q_auth";
    cfg.prom_queries[GX_SIG_TEMP] = "q_temp";
    http = gx_httpc_new(base);
    cr_assert_not_null(http);
    p = gx_promsrc_new(base, http, &cfg, ms, m, count_cb, &updates);
    cr_assert_not_null(p);

    run_until_update(base, &updates);
    cr_assert_eq(updates, 1);
    /* a 200 carrying status=error is Prometheus refusing the query, not an HTTP failure */
    cr_assert_eq(m->up_errors[GX_UP_PROMETHEUS][GX_UPERR_QUERY], 1);
    cr_assert_eq(m->up_errors[GX_UP_PROMETHEUS][GX_UPERR_HTTP], 1, "only the 401");
    cr_assert_eq(grep_count(log, "signal=util kind=query error=\"Prometheus answered HTTP 200 "
                                 "with an error"),
                 1);
    cr_assert_eq(grep_count(log, "unexpected character"), 1, "Prometheus' own text is kept");
    cr_assert_eq(grep_count(log, "signal=mem_used kind=http error=\"HTTP 401"), 1);
    cr_assert_eq(grep_count(log, "error=\"ok"), 0);

    gx_log_set_sink(NULL);
    (void)fclose(log);
    gx_promsrc_free(p);
    gx_httpc_free(http);
    fake_stop(&f);
    gx_mstore_free(ms);
    event_base_free(base);
    free(m);
}
