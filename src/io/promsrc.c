/* SPDX-License-Identifier: Apache-2.0 */
/*
 * promsrc.c - Prometheus poller. A round runs the signals' queries one
 * after another: an answer for 40,000 series is about 20 MiB, and running
 * them in turn bounds a round's memory to one body and its parsed samples
 * (the loop time spent parsing is the same either way). Each answer is
 * parsed completely into a scratch list before the store is touched, so a
 * truncated or malformed answer changes nothing.
 */
#include "promsrc.h"

#include <event2/event.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "log.h"
#include "prom.h"

#define BACKOFF_MAX_MS 60000

struct query {
    struct gx_promsrc *p;
    enum gx_signal sig;
    struct gx_httpc_xfer *xfer;
};

struct gx_promsrc {
    struct event_base *base;
    struct gx_httpc *http;
    const struct gx_config *cfg;
    struct gx_mstore *ms;
    struct gx_upstats *st;
    gx_promsrc_update_cb cb;
    void *ctx;
    struct event *timer;
    struct query q[GX_SIG_COUNT];
    bool in_round;    /* a round is running (its query in flight) */
    int next_sig;     /* the signal whose query the round starts next */
    int round_failed; /* queries of the current round that failed */
    int round_ok;
    unsigned failures; /* consecutive failed rounds */
    bool reconfigured; /* the config changed during the round in flight */
    int interval_s;    /* prometheus.interval_s of the config in use */
    uint64_t rounds_ok;
    uint64_t rng;
};

/* Samples of one answer, collected before they are applied. */
struct collect {
    const struct gx_config *cfg;
    enum gx_signal sig;
    struct gx_arena arena;
    struct gx_card_sample *s;
    size_t n, cap;
    int64_t now_ms;
};

/* Series callback: map one series to a card sample and keep a copy of it. GX_ENOMEM. */
static enum gx_err
collect_cb(void *ctx, const struct gx_series *series)
{
    struct collect *c = ctx;
    struct gx_card_sample smp;

    if (!gx_dcgm_map(c->cfg, c->sig, series, c->now_ms, &smp)) {
        return GX_OK;
    }
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 256;
        struct gx_card_sample *ns = realloc(c->s, ncap * sizeof(*ns));
        if (ns == NULL) {
            return GX_ENOMEM;
        }
        c->s = ns;
        c->cap = ncap;
    }
    smp.node = gx_arena_strndup(&c->arena, smp.node, smp.node_len);
    smp.uuid = gx_arena_strdup(&c->arena, smp.uuid);
    smp.pod = gx_arena_strdup(&c->arena, smp.pod);
    if (smp.node == NULL) {
        return GX_ENOMEM;
    }
    c->s[c->n++] = smp;
    return GX_OK;
}

/* Read a secret file into @out (size @n), trailing newlines cut; "" when unset or unreadable. */
static void
read_secret(const char *path, char *out, size_t n)
{
    char *text = NULL;
    size_t len = 0;

    out[0] = '\0';
    if (path == NULL || gx_read_file(path, n - 1, &text, &len) != GX_OK) {
        return;
    }
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) {
        len--;
    }
    memcpy(out, text, len);
    out[len] = '\0';
    memset(text, 0, len);
    free(text);
}

/* Run the next round in @ms milliseconds. */
static void
arm(struct gx_promsrc *p, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};

    (void)evtimer_add(p->timer, &tv);
}

/* Next delay: the interval, or exponential backoff with +-20 % jitter. */
static int64_t
next_delay_ms(struct gx_promsrc *p)
{
    int64_t base = (int64_t)p->cfg->prom_interval_s * 1000, d = base;

    if (p->failures == 0) {
        return base;
    }
    for (unsigned i = 0; i < p->failures && d < BACKOFF_MAX_MS; i++) {
        d = gx_backoff_next(d, base, BACKOFF_MAX_MS);
    }
    return gx_jitter(d, 20, &p->rng);
}

/* Finish the round: count it, tell the owner, arm the timer for the next one. */
static void
round_end(struct gx_promsrc *p)
{
    p->in_round = false;
    if (p->round_failed == 0) {
        p->failures = 0;
        p->rounds_ok++;
        p->st->syncs++;
        p->st->last_success_ms = gx_wall_ms();
    } else if (p->reconfigured) {
        p->failures = 0; /* failed under the old config: no backoff for the new one */
    } else {
        p->failures++;
    }
    p->reconfigured = false;
    if (p->round_ok > 0 && p->cb != NULL) {
        p->cb(p->ctx);
    }
    arm(p, next_delay_ms(p));
}

/* Count and log a failed query; the signal keeps its last values. */
static void
query_failed(struct gx_promsrc *p, enum gx_signal sig, enum gx_upkind kind, const char *why)
{
    char q[300];

    p->round_failed++;
    p->st->errors[kind]++;
    gx_warn("prometheus query failed, keeping last values", "signal=%s kind=%s error=%s",
            gx_signal_name(sig), gx_upkind_name(kind), gx_log_quote(q, sizeof(q), why));
}

/* Replace signal @sig in the store with the samples of one answer. */
static void
apply(struct gx_promsrc *p, enum gx_signal sig, const struct collect *c)
{
    gx_mstore_begin(p->ms, GX_PROMSRC_SOURCE, sig);
    for (size_t i = 0; i < c->n; i++) {
        if (gx_mstore_put(p->ms, &c->s[i]) != GX_OK) {
            break;
        }
    }
    gx_mstore_commit(p->ms);
}

static void round_next(struct gx_promsrc *p);

/* A query ended: apply its answer or count the failure, then go on with the round. */
static void
done_cb(void *ctx, const struct gx_httpc_result *res)
{
    struct query *qr = ctx;
    struct gx_promsrc *p = qr->p;
    struct collect c = {.cfg = p->cfg, .sig = qr->sig, .now_ms = gx_wall_ms()};
    struct gx_why why = {{0}};
    enum gx_err rc;

    qr->xfer = NULL;
    gx_histo_observe(&p->st->duration, res->seconds);
    gx_arena_init(&c.arena, 0);
    if (res->rc != GX_OK) {
        query_failed(p, qr->sig, res->kind, res->error);
    } else {
        rc = gx_prom_parse_query(res->body, res->body_len, p->cfg->max_json_depth, collect_cb, &c,
                                 &why);
        if (rc == GX_OK && res->status == 200) {
            apply(p, qr->sig, &c);
            p->round_ok++;
        } else if (res->status != 200) {
            char msg[300];
            (void)snprintf(msg, sizeof(msg), "HTTP %ld: %s", res->status,
                           why.text[0] ? why.text : "non-JSON error body");
            query_failed(p, qr->sig, GX_UPERR_HTTP, msg);
        } else if (rc == GX_EUPSTREAM) {
            /* HTTP 200 whose body says status=error: Prometheus refused the query itself. */
            char msg[300];
            (void)snprintf(msg, sizeof(msg), "Prometheus answered HTTP 200 with an error: %s",
                           why.text[0] ? why.text : "status=error");
            query_failed(p, qr->sig, GX_UPERR_QUERY, msg);
        } else {
            query_failed(p, qr->sig, GX_UPERR_PARSE, why.text);
        }
    }
    free(c.s);
    gx_arena_release(&c.arena);
    round_next(p);
}

/* Send the query of @sig; false when the request cannot be started. */
static bool
start_query(struct gx_promsrc *p, enum gx_signal sig, const struct gx_httpc_auth *auth)
{
    const struct gx_config *cfg = p->cfg;
    char *url;
    size_t qlen = strlen(cfg->prom_queries[sig]) * 3 + 1, ulen;
    struct gx_httpc_req req = {
        .method = "GET",
        .auth = auth,
        .timeout_ms = (long)cfg->prom_timeout_s * 1000,
        .max_body = cfg->prom_max_response_bytes,
    };
    char *esc = malloc(qlen);

    ulen = strlen(cfg->prom_url) + qlen + 32;
    url = malloc(ulen);
    if (esc == NULL || url == NULL || !gx_httpc_escape(cfg->prom_queries[sig], esc, qlen)) {
        free(esc);
        free(url);
        return false;
    }
    (void)snprintf(url, ulen, "%s/api/v1/query?query=%s", cfg->prom_url, esc);
    req.url = url;
    p->q[sig].p = p;
    p->q[sig].sig = sig;
    p->q[sig].xfer = gx_httpc_start(p->http, &req, done_cb, NULL, &p->q[sig]);
    free(esc);
    free(url);
    if (p->q[sig].xfer == NULL) {
        return false;
    }
    p->st->requests++;
    return true;
}

/*
 * Start the next configured signal's query of the round (secrets re-read
 * for each, so a rotated token is picked up and no secret outlives the
 * call); a query that cannot start counts as failed and the next is tried.
 * Ends the round when no signal is left.
 */
static void
round_next(struct gx_promsrc *p)
{
    const struct gx_config *cfg = p->cfg;
    char token[8192], password[1024];
    struct gx_httpc_auth auth = {
        .ca_file = cfg->prom_ca_file,
        .insecure = cfg->prom_insecure,
        .basic_user = cfg->prom_basic_user,
    };
    bool started = false;

    while (!started && p->next_sig < GX_SIG_COUNT) {
        enum gx_signal s = (enum gx_signal)p->next_sig++;

        if (cfg->prom_url == NULL || cfg->prom_queries[s] == NULL ||
            cfg->prom_queries[s][0] == '\0') {
            continue;
        }
        read_secret(cfg->prom_bearer_token_file, token, sizeof(token));
        read_secret(cfg->prom_basic_password_file, password, sizeof(password));
        auth.bearer_token = token[0] ? token : NULL;
        auth.basic_password = password;
        started = start_query(p, s, &auth);
        memset(token, 0, sizeof(token));
        memset(password, 0, sizeof(password));
        if (!started) {
            query_failed(p, s, GX_UPERR_OTHER, "cannot start the request");
        }
    }
    if (!started) {
        round_end(p);
    }
}

/* Begin a round with the first signal (unless one is running or no URL is set). */
static void
start_round(struct gx_promsrc *p)
{
    if (p->in_round || p->cfg->prom_url == NULL) {
        return;
    }
    p->in_round = true;
    p->next_sig = 0;
    p->round_failed = 0;
    p->round_ok = 0;
    round_next(p);
}

/* The interval (or backoff) elapsed: start a round. */
static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start_round(arg);
}

/* A poller whose first round starts on the next loop turn; NULL on ENOMEM. */
struct gx_promsrc *
gx_promsrc_new(struct event_base *base, struct gx_httpc *http, const struct gx_config *cfg,
               struct gx_mstore *ms, struct gx_upstats *st, gx_promsrc_update_cb cb, void *ctx)
{
    struct gx_promsrc *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    p->base = base;
    p->http = http;
    p->cfg = cfg;
    p->interval_s = cfg->prom_interval_s;
    p->ms = ms;
    p->st = st;
    p->cb = cb;
    p->ctx = ctx;
    p->rng = (uint64_t)gx_mono_ms() | 1;
    p->timer = evtimer_new(base, timer_cb, p);
    if (p->timer == NULL) {
        free(p);
        return NULL;
    }
    arm(p, 0);
    return p;
}

/* Use @cfg from the next query on. */
void
gx_promsrc_set_config(struct gx_promsrc *p, const struct gx_config *cfg)
{
    int old_interval = p->interval_s; /* the old config may be freed already */

    p->cfg = cfg;
    p->interval_s = cfg->prom_interval_s;
    /*
     * The wait for the next round was armed with the old interval: a change
     * from 3600 s to 5 s would otherwise apply only an hour later. And a
     * failing Prometheus may be waiting out a backoff of up to a minute
     * that the new config (a fixed URL, CA or credential) does not deserve.
     * Re-arm at the new interval (a round in flight arms its successor, and
     * its failure does not count: it ran with the old config).
     */
    if (p->in_round) {
        p->reconfigured = true;
    } else if (cfg->prom_interval_s != old_interval || p->failures > 0) {
        p->failures = 0;
        (void)evtimer_del(p->timer);
        arm(p, next_delay_ms(p));
    }
}

/* Start a round now unless one is running. */
void
gx_promsrc_poll_now(struct gx_promsrc *p)
{
    if (!p->in_round) {
        (void)evtimer_del(p->timer);
        start_round(p);
    }
}

/* Rounds in which every query succeeded. */
uint64_t
gx_promsrc_rounds_ok(const struct gx_promsrc *p)
{
    return p->rounds_ok;
}

/* Cancel the query in flight and free; NULL is a no-op. */
void
gx_promsrc_free(struct gx_promsrc *p)
{
    if (p == NULL) {
        return;
    }
    for (int s = 0; s < GX_SIG_COUNT; s++) {
        gx_httpc_cancel(p->q[s].xfer);
    }
    if (p->timer != NULL) {
        event_free(p->timer);
    }
    free(p);
}
