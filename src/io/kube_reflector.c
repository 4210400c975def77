/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube_reflector.c - list+watch streams against the API server, as
 * client-go's reflector does it: list, then watch from the list's
 * resourceVersion; every event advances it; a 410 Gone (as an HTTP status
 * or an ERROR event) or a line that does not decode means relist; a
 * dropped stream reconnects after an exponential backoff with jitter; a
 * watch the server ends normally is resumed at once. One stream serves
 * each watched kind: kube's nodes (into kube_nodes.c's store) and managed
 * pods (to kube's owner), and the owners' watches of gx_kube_watch_new
 * (Leases, all pods, DRA objects, PodDisruptionBudgets).
 *
 * libcurl forbids adding or removing transfers from inside its callbacks,
 * and the owner's callbacks may start requests, so the stream data
 * callback only copies bytes into an inbox; the lines are decoded and
 * applied from a deferred libevent callback (or from the done callback,
 * which libcurl does not call from inside itself).
 *
 * Why one file past 700 lines: it is one state machine. A list ends in a
 * watch, a watch in a relist or a backoff, and the timer starts either, so
 * start_list, start_watch and stream_next call each other in a circle that
 * no file boundary may cut (scripts/layers.py). Requests and credentials
 * are kube_client.c's, the node set kube_nodes.c's.
 */
#include "kube_int.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "log.h"

#define KUBE_INBOX_SLACK (8u << 20) /* what one socket read burst may add */
#define KUBE_SHORT_WATCH_MS 1000    /* an empty watch shorter than this backs off */
#define KUBE_EVENT_CHUNK 8192       /* arena chunk of one watch event */
#define KUBE_ABSENT_RETRY_MS 60000  /* a resource the server does not serve: look again */

/* What a stream does after a list, a watch or an aborted watch. */
enum next_step { NEXT_WATCH_NOW, NEXT_WATCH_BACKOFF, NEXT_LIST_NOW, NEXT_LIST_BACKOFF };

/* Why processing the inbox stopped early. */
enum verdict { V_OK, V_GONE, V_PARSE, V_ERROR_EVENT, V_NOMEM };

static void stream_next(struct gx_kube_stream *s, enum next_step step);
static void start_list(struct gx_kube_stream *s);
static void start_watch(struct gx_kube_stream *s);

/* ---- small helpers ---- */

static size_t
max_event_bytes(const struct gx_kube *k)
{
    return k->cfg->kube_max_event_bytes > 0 ? k->cfg->kube_max_event_bytes : (size_t)16 << 20;
}

static int
watch_timeout_s(const struct gx_kube *k)
{
    return k->cfg->kube_watch_timeout_s > 0 ? k->cfg->kube_watch_timeout_s : 300;
}

static bool
str_eq(const char *a, const char *b)
{
    if (a == NULL || a[0] == '\0') {
        return b == NULL || b[0] == '\0';
    }
    return b != NULL && strcmp(a, b) == 0;
}

/* ---- URLs ---- */

static enum gx_err
add_escaped(struct gx_buf *b, const char *s)
{
    size_t n = strlen(s) * 3 + 1;
    char *esc = malloc(n);
    enum gx_err rc;

    if (esc == NULL) {
        return GX_ENOMEM;
    }
    rc = gx_httpc_escape(s, esc, n) ? gx_buf_adds(b, esc) : GX_ETOOBIG;
    free(esc);
    return rc;
}

/* The label selector the next list of @s uses (heap copy in *out, NULL: none). */
static enum gx_err
current_selector(const struct gx_kube_stream *s, char **out)
{
    const struct gx_config *cfg = s->k->cfg;
    struct gx_buf b;

    *out = NULL;
    if (s->w != NULL) {
        if (s->w->selector != NULL) {
            *out = gx_strndup(s->w->selector, strlen(s->w->selector));
            return *out != NULL ? GX_OK : GX_ENOMEM;
        }
        return GX_OK;
    }
    if (s->kind == GX_KIND_NODE) {
        if (cfg->kube_node_selector == NULL || cfg->kube_node_selector[0] == '\0') {
            return GX_OK;
        }
        *out = gx_strndup(cfg->kube_node_selector, strlen(cfg->kube_node_selector));
        return *out != NULL ? GX_OK : GX_ENOMEM;
    }
    gx_buf_init(&b, GX_KUBE_URL_MAX);
    if (gx_buf_addf(&b, "%s=true",
                    cfg->managed_label != NULL ? cfg->managed_label : "gpu-extender.io/managed") !=
        GX_OK) {
        gx_buf_release(&b);
        return GX_ENOMEM;
    }
    *out = gx_buf_take(&b, NULL);
    return GX_OK;
}

/* Build the list (@watch false) or watch URL of @s into @b. */
static enum gx_err
stream_url(const struct gx_kube_stream *s, bool watch, struct gx_buf *b)
{
    const struct gx_kube *k = s->k;
    const char *sel = watch ? s->selector : s->list_selector;
    enum gx_err rc;
    char sep = '?';

    rc = gx_buf_addf(b, "%s%s", k->base_url, s->path);
    if (rc == GX_OK && watch) {
        rc = gx_buf_addf(b, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d",
                         watch_timeout_s(k));
        sep = '&';
        if (rc == GX_OK && s->rv != NULL && s->rv[0] != '\0') {
            rc = gx_buf_adds(b, "&resourceVersion=");
            if (rc == GX_OK) {
                rc = add_escaped(b, s->rv);
            }
        }
    }
    if (rc == GX_OK && sel != NULL && sel[0] != '\0') {
        rc = gx_buf_addf(b, "%clabelSelector=", sep);
        sep = '&';
        if (rc == GX_OK) {
            rc = add_escaped(b, sel);
        }
    }
    if (rc == GX_OK && s->w != NULL && s->w->fields != NULL) {
        rc = gx_buf_addf(b, "%cfieldSelector=", sep);
        if (rc == GX_OK) {
            rc = add_escaped(b, s->w->fields);
        }
    }
    return rc;
}

/* ---- streams: scheduling ---- */

void
gx_kube_stream_schedule(struct gx_kube_stream *s, int64_t delay_ms)
{
    struct timeval tv;

    if (delay_ms < 0) {
        delay_ms = 0;
    }
    tv.tv_sec = (time_t)(delay_ms / 1000);
    tv.tv_usec = (suseconds_t)((delay_ms % 1000) * 1000);
    s->state = GX_KUBE_WAIT;
    (void)evtimer_add(s->timer, &tv);
}

static int64_t
stream_backoff(struct gx_kube_stream *s)
{
    int64_t d = s->backoff_ms;

    s->backoff_ms = gx_backoff_next(d, GX_KUBE_BACKOFF_START_MS, GX_KUBE_BACKOFF_MAX_MS);
    return gx_jitter(d, GX_KUBE_JITTER_PCT, &s->k->rng);
}

/* Decide and arm what @s does next. */
static void
stream_next(struct gx_kube_stream *s, enum next_step step)
{
    bool list = step == NEXT_LIST_NOW || step == NEXT_LIST_BACKOFF || s->want_relist;
    bool now = step == NEXT_WATCH_NOW || step == NEXT_LIST_NOW;

    /* Relisting at once after a watch that died young would spin against a sick server. */
    if (step == NEXT_LIST_NOW && s->watch_events == 0 &&
        gx_mono_ms() - s->watch_start_ms < KUBE_SHORT_WATCH_MS) {
        now = false;
    }
    s->relist = list;
    s->want_relist = false;
    gx_kube_stream_schedule(s, now ? 0 : stream_backoff(s));
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_kube_stream *s = arg;

    (void)fd;
    (void)what;
    if (s->relist || s->rv == NULL) {
        start_list(s);
    } else {
        start_watch(s);
    }
}

/* Stop the transfer of @s (never called from inside a libcurl callback). */
static void
stream_stop(struct gx_kube_stream *s)
{
    if (s->xfer != NULL) {
        gx_httpc_cancel(s->xfer);
        s->xfer = NULL;
    }
    (void)event_del(s->defer);
    (void)evtimer_del(s->timer);
    gx_buf_reset(&s->inbox);
    gx_lines_reset(&s->lines);
    s->state = GX_KUBE_IDLE;
}

static void
log_failure(const struct gx_kube_stream *s, const char *what, enum gx_upkind kind,
            const char *detail)
{
    char q[300];

    gx_warn("kubernetes request failed, retrying", "resource=%s op=%s kind=%s error=%s", s->name,
            what, gx_upkind_name(kind), gx_log_quote(q, sizeof(q), detail ? detail : ""));
}

/* ---- lists ---- */

/* Decode a PodList into @a; *@rv receives a heap copy of its resourceVersion. */
static enum gx_err
decode_pod_list(struct gx_kube *k, const char *body, size_t len, struct gx_arena *a,
                struct gx_pod **pods, size_t *n, char **rv, struct gx_why *why)
{
    const char *list_rv = NULL;
    char *copy;
    enum gx_err rc;

    rc = gx_kobj_decode_pod_list(body, len, gx_kube_max_depth(k), a, pods, n, &list_rv, why);
    if (rc != GX_OK) {
        return rc;
    }
    copy = gx_strndup(list_rv != NULL ? list_rv : "", list_rv != NULL ? strlen(list_rv) : 0);
    if (copy == NULL) {
        return GX_ENOMEM;
    }
    *rv = copy;
    return GX_OK;
}

/* A list ended: apply it and watch from its resourceVersion, or back off and relist. */
static void
list_done_cb(void *ctx, const struct gx_httpc_result *res)
{
    struct gx_kube_stream *s = ctx;
    struct gx_kube *k = s->k;
    struct gx_why why = {{0}};
    struct gx_arena pod_arena;
    struct gx_pod *pods = NULL;
    void *items = NULL;
    size_t n_pods = 0;
    enum gx_upkind kind = GX_UPERR_OTHER;
    char *rv = NULL;
    char detail[320];
    enum gx_err rc = GX_EUPSTREAM;

    s->xfer = NULL;
    gx_arena_init(&pod_arena, 0);
    gx_histo_observe(&k->st->duration, res->seconds);
    if (res->rc != GX_OK) {
        kind = res->kind;
        (void)snprintf(detail, sizeof(detail), "%s", res->error ? res->error : "");
        goto out;
    }
    if (s->w != NULL && (res->status == 404 || (res->status == 403 && s->w->cbs.absent != NULL))) {
        /* Not served (no DRA API on this server), or not ours to read: not an error. */
        if (!s->w->absent && s->w->cbs.absent != NULL) {
            s->w->cbs.absent(s->w->ctx, res->status); /* the owner says what it means, once */
        } else if (!s->w->absent) {
            gx_info("kubernetes resource not served, looking again later", "resource=%s retry_s=%d",
                    s->name, KUBE_ABSENT_RETRY_MS / 1000);
        }
        s->w->absent = true;
        gx_arena_release(&pod_arena);
        s->relist = true;
        gx_kube_stream_schedule(s, KUBE_ABSENT_RETRY_MS);
        return;
    }
    if (res->status < 200 || res->status >= 300) {
        kind = res->status == 410 ? GX_UPERR_GONE : GX_UPERR_HTTP;
        (void)snprintf(detail, sizeof(detail), "HTTP %ld: %.200s", res->status, res->body);
        goto out;
    }
    if (s->w != NULL) {
        const char *list_rv = NULL;
        rc = gx_kobj_decode_list(res->body, res->body_len, s->kind, gx_kube_max_depth(k),
                                 &pod_arena, &items, &n_pods, &list_rv, &why);
        if (rc == GX_OK && (rv = gx_strndup(list_rv != NULL ? list_rv : "",
                                            list_rv != NULL ? strlen(list_rv) : 0)) == NULL) {
            rc = GX_ENOMEM;
        }
    } else if (s->kind == GX_KIND_NODE) {
        rc = gx_kube_node_store_list(&k->store, res->body, res->body_len, gx_kube_max_depth(k), &rv,
                                     &why);
    } else {
        rc = decode_pod_list(k, res->body, res->body_len, &pod_arena, &pods, &n_pods, &rv, &why);
    }
    if (rc != GX_OK) {
        kind = rc == GX_ENOMEM ? GX_UPERR_OTHER : GX_UPERR_PARSE;
        (void)snprintf(detail, sizeof(detail), "%s: %s", gx_strerror(rc), why.text);
        goto out;
    }
    free(s->rv);
    s->rv = rv;
    free(s->selector);
    s->selector = s->list_selector;
    s->list_selector = NULL;
    s->backoff_ms = GX_KUBE_BACKOFF_START_MS;
    k->lists++;
    k->st->syncs++;
    gx_kube_mark_success(k);
    if (s->w != NULL) {
        if (s->w->absent) {
            gx_info("kubernetes resource served again", "resource=%s", s->name);
        }
        s->w->absent = false;
        gx_debug("kubernetes objects listed", "resource=%s items=%zu resource_version=%s", s->name,
                 n_pods, s->rv);
        s->w->cbs.listed(s->w->ctx, items, n_pods);
    } else if (s->kind == GX_KIND_NODE) {
        gx_info("kubernetes nodes listed", "nodes=%zu resource_version=%s",
                gx_store_count(&k->store.nodes), s->rv);
        if (k->cbs.nodes_changed != NULL) {
            k->cbs.nodes_changed(k->ctx);
        }
    } else {
        gx_info("kubernetes managed pods listed", "pods=%zu resource_version=%s", n_pods, s->rv);
        if (k->cbs.pods_listed != NULL) {
            k->cbs.pods_listed(k->ctx, pods, n_pods);
        }
    }
out:
    gx_arena_release(&pod_arena);
    if (rc != GX_OK) {
        gx_kube_count_error(k, kind);
        log_failure(s, "list", kind, detail);
        stream_next(s, NEXT_LIST_BACKOFF);
    } else if (s->want_relist) {
        start_list(s);
    } else {
        start_watch(s);
    }
}

/* Start a list of @s; failing to start counts as an error and backs off. */
static void
start_list(struct gx_kube_stream *s)
{
    struct gx_kube *k = s->k;
    struct gx_httpc_auth auth;
    struct gx_httpc_req req = {
        .method = "GET",
        .auth = &auth,
        .timeout_ms = gx_kube_request_timeout_ms(k),
        .max_body = gx_kube_max_list_bytes(k),
    };
    struct gx_buf url;

    s->state = GX_KUBE_LIST;
    s->want_relist = false;
    free(s->list_selector);
    gx_buf_init(&url, GX_KUBE_URL_MAX);
    if (current_selector(s, &s->list_selector) != GX_OK || stream_url(s, false, &url) != GX_OK) {
        goto fail;
    }
    gx_kube_fill_auth(k, &auth);
    req.url = url.data;
    s->xfer = gx_httpc_start(k->http, &req, list_done_cb, NULL, s);
    if (s->xfer == NULL) {
        goto fail;
    }
    k->st->requests++;
    gx_buf_release(&url);
    return;
fail:
    gx_buf_release(&url);
    gx_kube_count_error(k, GX_UPERR_OTHER);
    log_failure(s, "list", GX_UPERR_OTHER, "cannot start the request");
    stream_next(s, NEXT_LIST_BACKOFF);
}

/* ---- watches ---- */

static void
set_rv(struct gx_kube_stream *s, const char *rv)
{
    if (rv != NULL && rv[0] != '\0' && !str_eq(s->rv, rv)) {
        (void)gx_kube_set_str(&s->rv, rv);
    }
}

struct line_ctx {
    struct gx_kube_stream *s;
    enum verdict verdict;
    bool applied;
};

/* Decode and apply one event line; a non-OK return stops the stream. */
static enum gx_err
line_cb(void *arg, const char *line, size_t len)
{
    struct line_ctx *lc = arg;
    struct gx_kube_stream *s = lc->s;
    struct gx_kube *k = s->k;
    struct gx_watch_event ev;
    struct gx_why why = {{0}};
    struct gx_arena *a = malloc(sizeof(*a));
    char q[300];
    enum gx_err rc;

    if (a == NULL) {
        lc->verdict = V_NOMEM;
        return GX_ENOMEM;
    }
    gx_arena_init(a, KUBE_EVENT_CHUNK);
    rc = gx_kobj_decode_event(line, len, s->kind, gx_kube_max_depth(k), a, &ev, &why);
    if (rc != GX_OK) {
        gx_arena_release(a);
        free(a);
        gx_warn("kubernetes watch event does not decode, relisting", "resource=%s error=%s",
                s->name, gx_log_quote(q, sizeof(q), why.text));
        lc->verdict = V_PARSE;
        return rc;
    }
    switch (ev.type) {
    case GX_WATCH_ERROR:
        gx_warn("kubernetes watch error event, relisting", "resource=%s code=%d message=%s",
                s->name, ev.code, gx_log_quote(q, sizeof(q), ev.message ? ev.message : ""));
        lc->verdict = ev.code == 410 ? V_GONE : V_ERROR_EVENT;
        gx_arena_release(a);
        free(a);
        return GX_EUPSTREAM;
    case GX_WATCH_BOOKMARK:
        set_rv(s, ev.resource_version);
        gx_arena_release(a);
        free(a);
        break;
    default:
        set_rv(s, ev.resource_version);
        if (s->w != NULL) {
            s->w->cbs.event(s->w->ctx, &ev);
            gx_arena_release(a);
            free(a);
        } else if (s->kind == GX_KIND_NODE) {
            rc = gx_kube_node_store_event(&k->store, &ev, a); /* takes the arena */
            if (rc == GX_ENOMEM) {
                lc->verdict = V_NOMEM;
                return rc;
            }
            if (rc == GX_OK) {
                s->changed = true;
            }
        } else {
            if (k->cbs.pod_event != NULL) {
                k->cbs.pod_event(k->ctx, ev.type, &ev.obj.pod);
            }
            gx_arena_release(a);
            free(a);
        }
        break;
    }
    s->watch_events++;
    lc->applied = true;
    return GX_OK;
}

/*
 * Split and apply what the stream delivered so far. Events before a bad
 * line stay applied (each is a complete object); nothing after it is.
 */
static enum verdict
process_inbox(struct gx_kube_stream *s)
{
    struct gx_kube *k = s->k;
    struct line_ctx lc = {s, V_OK, false};
    enum gx_err rc;

    s->changed = false;
    if (s->inbox.len > 0) {
        rc = gx_lines_feed(&s->lines, s->inbox.data, s->inbox.len, line_cb, &lc);
        if (rc == GX_ETOOBIG && lc.verdict == V_OK) {
            gx_warn("kubernetes watch event too large, relisting", "resource=%s max_bytes=%zu",
                    s->name, max_event_bytes(k));
            lc.verdict = V_PARSE;
        }
    }
    /* A large burst should not pin its buffer for the life of the watch. */
    if (s->inbox.cap > ((size_t)1 << 20)) {
        gx_buf_release(&s->inbox);
    } else {
        gx_buf_reset(&s->inbox);
    }
    if (lc.applied) {
        gx_kube_mark_success(k);
    }
    if (s->changed && k->cbs.nodes_changed != NULL) {
        k->cbs.nodes_changed(k->ctx);
    }
    s->changed = false;
    return lc.verdict;
}

/* Account for an aborted watch and arm the relist. */
static void
handle_verdict(struct gx_kube_stream *s, enum verdict v)
{
    switch (v) {
    case V_GONE:
        gx_kube_count_error(s->k, GX_UPERR_GONE);
        stream_next(s, NEXT_LIST_NOW);
        break;
    case V_PARSE:
        gx_kube_count_error(s->k, GX_UPERR_PARSE);
        stream_next(s, NEXT_LIST_BACKOFF);
        break;
    case V_ERROR_EVENT:
        gx_kube_count_error(s->k, GX_UPERR_HTTP);
        stream_next(s, NEXT_LIST_BACKOFF);
        break;
    case V_NOMEM:
        gx_kube_count_error(s->k, GX_UPERR_OTHER);
        stream_next(s, NEXT_LIST_BACKOFF);
        break;
    case V_OK:
        break;
    }
}

/* Runs on the loop, outside libcurl: apply the inbox, abort the watch if it went bad. */
static void
defer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_kube_stream *s = arg;
    enum verdict v;

    (void)fd;
    (void)what;
    if (s->state != GX_KUBE_WATCH) {
        return;
    }
    v = process_inbox(s);
    if (v == V_OK && !s->want_relist) {
        return;
    }
    if (s->xfer != NULL) {
        gx_httpc_cancel(s->xfer);
        s->xfer = NULL;
    }
    gx_lines_reset(&s->lines);
    if (v != V_OK) {
        handle_verdict(s, v);
    } else {
        stream_next(s, NEXT_LIST_NOW);
    }
}

/* libcurl callback: only queue the bytes (no transfers may start or stop in here). */
static enum gx_err
watch_data_cb(void *ctx, const char *data, size_t len)
{
    struct gx_kube_stream *s = ctx;

    if (gx_buf_add(&s->inbox, data, len) != GX_OK) {
        return GX_ETOOBIG;
    }
    event_active(s->defer, EV_TIMEOUT, 0);
    return GX_OK;
}

static void
watch_done_cb(void *ctx, const struct gx_httpc_result *res)
{
    struct gx_kube_stream *s = ctx;
    struct gx_kube *k = s->k;
    char detail[320];
    enum verdict v;
    bool partial;

    s->xfer = NULL;
    (void)event_del(s->defer);
    /* Complete events that arrived before the end are valid whatever ended the stream. */
    v = process_inbox(s);
    partial = s->lines.pending.len > 0;
    gx_lines_reset(&s->lines);
    if (v != V_OK) {
        handle_verdict(s, v);
        return;
    }
    if (res->rc != GX_OK) {
        enum gx_upkind kind = res->rc == GX_ETOOBIG ? GX_UPERR_PARSE : res->kind;
        gx_kube_count_error(k, kind);
        log_failure(s, "watch", kind, res->error);
        stream_next(s, res->rc == GX_ETOOBIG ? NEXT_LIST_BACKOFF : NEXT_WATCH_BACKOFF);
        return;
    }
    if (res->status == 410) {
        gx_kube_count_error(k, GX_UPERR_GONE);
        gx_info("kubernetes watch expired, relisting", "resource=%s", s->name);
        stream_next(s, NEXT_LIST_NOW);
        return;
    }
    if (res->status < 200 || res->status >= 300) {
        (void)snprintf(detail, sizeof(detail), "HTTP %ld: %.200s", res->status, res->body);
        gx_kube_count_error(k, GX_UPERR_HTTP);
        log_failure(s, "watch", GX_UPERR_HTTP, detail);
        /* Server trouble passes; any other refusal means our position is no good. */
        stream_next(s,
                    gx_kobj_retryable(GX_OK, res->status) ? NEXT_WATCH_BACKOFF : NEXT_LIST_BACKOFF);
        return;
    }
    if (partial) {
        gx_kube_count_error(k, GX_UPERR_CONNECT);
        log_failure(s, "watch", GX_UPERR_CONNECT, "stream ended inside an event");
        stream_next(s, NEXT_WATCH_BACKOFF);
        return;
    }
    gx_kube_mark_success(k);
    if (s->watch_events == 0 && gx_mono_ms() - s->watch_start_ms < KUBE_SHORT_WATCH_MS) {
        gx_debug("kubernetes watch ended at once, backing off", "resource=%s", s->name);
        stream_next(s, NEXT_WATCH_BACKOFF);
        return;
    }
    stream_next(s, NEXT_WATCH_NOW);
}

/* Start a watch of @s from its resourceVersion. */
static void
start_watch(struct gx_kube_stream *s)
{
    struct gx_kube *k = s->k;
    struct gx_httpc_auth auth;
    struct gx_httpc_req req = {
        .method = "GET",
        .auth = &auth,
        .stream = true,
        /* A server that never ends the watch is cut off well after timeoutSeconds. */
        .timeout_ms = ((long)watch_timeout_s(k) + 60) * 1000,
    };
    struct gx_buf url;

    s->state = GX_KUBE_WATCH;
    s->watch_events = 0;
    s->watch_start_ms = gx_mono_ms();
    /* Fresh buffers: a reload may have changed the event cap. */
    gx_lines_release(&s->lines);
    gx_lines_init(&s->lines, max_event_bytes(k));
    gx_buf_release(&s->inbox);
    gx_buf_init(&s->inbox, max_event_bytes(k) + KUBE_INBOX_SLACK);
    gx_buf_init(&url, GX_KUBE_URL_MAX);
    if (stream_url(s, true, &url) != GX_OK) {
        goto fail;
    }
    gx_kube_fill_auth(k, &auth);
    req.url = url.data;
    s->xfer = gx_httpc_start(k->http, &req, watch_done_cb, watch_data_cb, s);
    if (s->xfer == NULL) {
        goto fail;
    }
    k->st->requests++;
    gx_debug("kubernetes watch started", "resource=%s resource_version=%s", s->name,
             s->rv != NULL ? s->rv : "");
    gx_buf_release(&url);
    return;
fail:
    gx_buf_release(&url);
    gx_kube_count_error(k, GX_UPERR_OTHER);
    log_failure(s, "watch", GX_UPERR_OTHER, "cannot start the request");
    stream_next(s, NEXT_WATCH_BACKOFF);
}

/* Ask @s to relist (e.g. its selector changed), without touching libcurl from here. */
static void
stream_request_relist(struct gx_kube_stream *s)
{
    switch (s->state) {
    case GX_KUBE_WAIT:
        s->relist = true;
        break;
    case GX_KUBE_LIST:
        s->want_relist = true;
        break;
    case GX_KUBE_WATCH:
        s->want_relist = true;
        event_active(s->defer, EV_TIMEOUT, 0);
        break;
    case GX_KUBE_IDLE:
        break;
    }
}

void
gx_kube_stream_reselect(struct gx_kube_stream *s)
{
    const char *applied = s->state == GX_KUBE_LIST ? s->list_selector : s->selector;
    char *sel = NULL;

    if ((s->rv == NULL && s->state != GX_KUBE_LIST) || current_selector(s, &sel) != GX_OK) {
        return;
    }
    if (!str_eq(sel, applied)) {
        gx_info("kubernetes label selector changed, relisting", "resource=%s", s->name);
        stream_request_relist(s);
    }
    free(sel);
}

bool
gx_kube_stream_init(struct gx_kube *k, struct gx_kube_stream *s, enum gx_kind kind,
                    const char *name, const char *path)
{
    s->k = k;
    s->kind = kind;
    s->name = name;
    s->path = gx_strndup(path, strlen(path));
    s->relist = true;
    s->backoff_ms = GX_KUBE_BACKOFF_START_MS;
    gx_buf_init(&s->inbox, max_event_bytes(k) + KUBE_INBOX_SLACK);
    gx_lines_init(&s->lines, max_event_bytes(k));
    s->timer = evtimer_new(k->base, timer_cb, s);
    s->defer = event_new(k->base, -1, 0, defer_cb, s);
    return s->path != NULL && s->timer != NULL && s->defer != NULL;
}

void
gx_kube_stream_release(struct gx_kube_stream *s)
{
    if (s->k == NULL) {
        return;
    }
    if (s->timer != NULL && s->defer != NULL) {
        stream_stop(s);
    }
    if (s->timer != NULL) {
        event_free(s->timer);
    }
    if (s->defer != NULL) {
        event_free(s->defer);
    }
    gx_buf_release(&s->inbox);
    gx_lines_release(&s->lines);
    free(s->rv);
    free(s->selector);
    free(s->list_selector);
    free(s->path);
}

/* ---- the owners' watches ---- */

struct gx_kube_watch *
gx_kube_watch_new(struct gx_kube *k, enum gx_kind kind, const char *name, const char *path,
                  const char *label_selector, const struct gx_kube_watch_cbs *cbs, void *ctx)
{
    struct gx_kube_watch *w;

    if (path == NULL || path[0] != '/' || cbs == NULL || cbs->listed == NULL ||
        cbs->event == NULL) {
        return NULL;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    w->name = gx_strndup(name, strlen(name));
    w->cbs = *cbs;
    w->ctx = ctx;
    w->s.w = w;
    if (w->name == NULL ||
        (label_selector != NULL && label_selector[0] != '\0' &&
         (w->selector = gx_strndup(label_selector, strlen(label_selector))) == NULL) ||
        !gx_kube_stream_init(k, &w->s, kind, w->name, path)) {
        gx_kube_stream_release(&w->s);
        free(w->selector);
        free(w->name);
        free(w);
        return NULL;
    }
    LIST_INSERT_HEAD(&k->watches, w, link);
    gx_kube_stream_schedule(&w->s, 0);
    return w;
}

void
gx_kube_watch_free(struct gx_kube_watch *w)
{
    if (w == NULL) {
        return;
    }
    LIST_REMOVE(w, link);
    gx_kube_stream_release(&w->s);
    free(w->selector);
    free(w->fields);
    free(w->name);
    free(w);
}

void
gx_kube_watch_relist(struct gx_kube_watch *w)
{
    if (w != NULL && !w->absent) {
        stream_request_relist(&w->s);
    }
}

const char *
gx_kube_watch_rv(const struct gx_kube_watch *w)
{
    return w != NULL ? w->s.rv : NULL;
}

enum gx_err
gx_kube_watch_set_fields(struct gx_kube_watch *w, const char *field_selector)
{
    char *copy = gx_strndup(field_selector, strlen(field_selector));

    if (copy == NULL) {
        return GX_ENOMEM;
    }
    free(w->fields);
    w->fields = copy;
    return GX_OK;
}
