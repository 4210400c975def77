/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httpc.c - libcurl multi on libevent. curl tells us which sockets to watch
 * (socket_cb) and when to call it back (timer_cb); libevent calls
 * curl_multi_socket_action when they fire; finished transfers are reaped
 * in check_done, which is the only place completion callbacks run.
 */
#include "httpc.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "buf.h"

struct gx_httpc {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    size_t active;
    LIST_HEAD(xfer_list, gx_httpc_xfer) xfers; /* transfers in progress */
};

struct gx_httpc_xfer {
    struct gx_httpc *c;
    LIST_ENTRY(gx_httpc_xfer) link;
    CURL *easy;
    struct curl_slist *headers;
    char *body; /* request body copy */
    struct gx_buf resp;
    gx_httpc_done_cb done;
    gx_httpc_data_cb data;
    void *ctx;
    bool stream;
    enum gx_err abort_rc; /* set when the data callback aborted */
    char errbuf[CURL_ERROR_SIZE];
    int64_t start_us;
};

/* Per-socket state handed to curl with curl_multi_assign. */
struct sock_ev {
    struct event *ev;
    struct gx_httpc *c;
};

static const char *const upkind_names[GX_UPERR_COUNT] = {"connect", "timeout",  "http",  "parse",
                                                         "gone",    "conflict", "query", "other"};

const char *
gx_upkind_name(enum gx_upkind k)
{
    return (unsigned)k < GX_UPERR_COUNT ? upkind_names[k] : "other";
}

static void
xfer_free(struct gx_httpc_xfer *x)
{
    curl_slist_free_all(x->headers);
    if (x->easy != NULL) {
        curl_easy_cleanup(x->easy);
    }
    free(x->body);
    gx_buf_release(&x->resp);
    free(x);
}

static void
xfer_link(struct gx_httpc *c, struct gx_httpc_xfer *x)
{
    LIST_INSERT_HEAD(&c->xfers, x, link);
    c->active++;
}

static void
xfer_unlink(struct gx_httpc *c, struct gx_httpc_xfer *x)
{
    (void)c;
    LIST_REMOVE(x, link);
    c->active--;
}

static enum gx_upkind
classify(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        return GX_UPERR_CONNECT;
    case CURLE_OPERATION_TIMEDOUT:
        return GX_UPERR_TIMEOUT;
    case CURLE_FILESIZE_EXCEEDED:
    case CURLE_WRITE_ERROR:
        return GX_UPERR_PARSE;
    default:
        return GX_UPERR_OTHER;
    }
}

/* Reap finished transfers and run their callbacks. */
static void
check_done(struct gx_httpc *c)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(c->multi, &left)) != NULL) {
        struct gx_httpc_xfer *x = NULL;
        struct gx_httpc_result res;
        CURLcode cc;

        if (msg->msg != CURLMSG_DONE) {
            continue;
        }
        cc = msg->data.result;
        (void)curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        memset(&res, 0, sizeof(res));
        (void)curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &res.status);
        res.seconds = (double)(gx_mono_us() - x->start_us) / 1e6;
        res.body = x->resp.data ? x->resp.data : "";
        res.body_len = x->resp.len;
        (void)curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &res.content_type);
        if (x->abort_rc != GX_OK) {
            res.rc = x->abort_rc;
            res.error = x->abort_rc == GX_ETOOBIG ? "response too large" : "stream aborted";
            res.kind = x->abort_rc == GX_ETOOBIG ? GX_UPERR_PARSE : GX_UPERR_OTHER;
        } else if (cc != CURLE_OK) {
            res.rc = cc == CURLE_OPERATION_TIMEDOUT  ? GX_ETIMEDOUT
                     : cc == CURLE_FILESIZE_EXCEEDED ? GX_ETOOBIG
                                                     : GX_EUPSTREAM;
            res.error = x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc);
            res.kind = classify(cc);
        } else {
            res.rc = GX_OK;
            res.kind = res.status >= 400 ? GX_UPERR_HTTP : GX_UPERR_OTHER;
            /* A caller that logs .error for any failure must not print curl's "ok". */
            if (res.status >= 400) {
                (void)snprintf(x->errbuf, sizeof(x->errbuf), "HTTP %ld", res.status);
                res.error = x->errbuf;
            }
        }
        (void)curl_multi_remove_handle(c->multi, x->easy);
        xfer_unlink(c, x);
        if (x->done != NULL) {
            x->done(x->ctx, &res);
        }
        xfer_free(x);
    }
}

static void
event_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_httpc *c = arg;
    int running = 0;
    int action =
        ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);

    (void)curl_multi_socket_action(c->multi, fd, action, &running);
    check_done(c);
}

static void
timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_httpc *c = arg;
    int running = 0;

    (void)fd;
    (void)what;
    (void)curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
}

static int
multi_timer_cb(CURLM *multi, long timeout_ms, void *arg)
{
    struct gx_httpc *c = arg;
    struct timeval tv;

    (void)multi;
    if (timeout_ms < 0) {
        (void)evtimer_del(c->timer);
        return 0;
    }
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    (void)evtimer_add(c->timer, &tv);
    return 0;
}

static int
multi_socket_cb(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
    struct gx_httpc *c = arg;
    struct sock_ev *se = sockp;
    short kind;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (se != NULL) {
            event_free(se->ev);
            free(se);
        }
        (void)curl_multi_assign(c->multi, s, NULL);
        return 0;
    }
    kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0) |
                   EV_PERSIST);
    if (se == NULL) {
        se = calloc(1, sizeof(*se));
        if (se == NULL) {
            return -1;
        }
        se->c = c;
        (void)curl_multi_assign(c->multi, s, se);
    } else {
        event_free(se->ev);
    }
    se->ev = event_new(c->base, s, kind, event_cb, c);
    if (se->ev == NULL) {
        return -1;
    }
    (void)event_add(se->ev, NULL);
    return 0;
}

static size_t
write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct gx_httpc_xfer *x = arg;
    size_t len = size * nmemb;
    long status = 0;

    (void)curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    if (x->stream && status >= 200 && status < 300) {
        enum gx_err rc = x->data(x->ctx, ptr, len);
        if (rc != GX_OK) {
            x->abort_rc = rc;
            return 0;
        }
        return len;
    }
    if (gx_buf_add(&x->resp, ptr, len) != GX_OK) {
        x->abort_rc = GX_ETOOBIG;
        return 0;
    }
    return len;
}

struct gx_httpc *
gx_httpc_new(struct event_base *base)
{
    static bool global_done;
    struct gx_httpc *c;

    if (!global_done) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            return NULL;
        }
        global_done = true;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->base = base;
    LIST_INIT(&c->xfers);
    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, timeout_cb, c);
    if (c->multi == NULL || c->timer == NULL) {
        gx_httpc_free(c);
        return NULL;
    }
    (void)curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, multi_socket_cb);
    (void)curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    (void)curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, multi_timer_cb);
    (void)curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return c;
}

void
gx_httpc_free(struct gx_httpc *c)
{
    if (c == NULL) {
        return;
    }
    for (struct gx_httpc_xfer *x = LIST_FIRST(&c->xfers), *next; x != NULL; x = next) {
        next = LIST_NEXT(x, link);
        gx_httpc_cancel(x);
    }
    if (c->multi != NULL) {
        (void)curl_multi_cleanup(c->multi);
    }
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    free(c);
}

static bool
add_header(struct gx_httpc_xfer *x, const char *h)
{
    struct curl_slist *l = curl_slist_append(x->headers, h);

    if (l == NULL) {
        return false;
    }
    x->headers = l;
    return true;
}

/* Apply auth and TLS options. The bearer header is built on the stack and wiped. */
static bool
apply_auth(struct gx_httpc_xfer *x, const struct gx_httpc_auth *a)
{
    char hdr[8192];
    bool ok = true;

    if (a == NULL) {
        return true;
    }
    if (a->bearer_token != NULL && a->bearer_token[0] != '\0') {
        int n = snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", a->bearer_token);
        ok = n > 0 && (size_t)n < sizeof(hdr) && add_header(x, hdr);
        memset(hdr, 0, sizeof(hdr));
    }
    if (a->basic_user != NULL) {
        (void)curl_easy_setopt(x->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        (void)curl_easy_setopt(x->easy, CURLOPT_USERNAME, a->basic_user);
        (void)curl_easy_setopt(x->easy, CURLOPT_PASSWORD,
                               a->basic_password ? a->basic_password : "");
    }
    if (a->ca_file != NULL) {
        (void)curl_easy_setopt(x->easy, CURLOPT_CAINFO, a->ca_file);
    }
    if (a->insecure || a->pinned_key != NULL) {
        (void)curl_easy_setopt(x->easy, CURLOPT_SSL_VERIFYPEER, 0L);
        (void)curl_easy_setopt(x->easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (a->pinned_key != NULL) {
        (void)curl_easy_setopt(x->easy, CURLOPT_PINNEDPUBLICKEY, a->pinned_key);
    }
    return ok;
}

static bool
setup_easy(struct gx_httpc_xfer *x, const struct gx_httpc_req *req)
{
    CURL *e = x->easy;
    char ct[256];

    (void)curl_easy_setopt(e, CURLOPT_URL, req->url);
    (void)curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    (void)curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    (void)curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    (void)curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    (void)curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    (void)curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                           req->connect_timeout_ms > 0 ? req->connect_timeout_ms : 5000L);
    (void)curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    (void)curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    (void)curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (req->timeout_ms > 0) {
        (void)curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    }
    if (req->max_body > 0 && !req->stream) {
        (void)curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)req->max_body);
    }
    if (req->stream) {
        /* A watch that goes silent (no bookmark, no event) for 2 minutes is dead. */
        (void)curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        (void)curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 120L);
    }
    if (strcmp(req->method, "GET") != 0) {
        (void)curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
    }
    if (req->body != NULL) {
        x->body = gx_strndup(req->body, req->body_len);
        if (x->body == NULL) {
            return false;
        }
        (void)curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
        (void)curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    }
    if (req->content_type != NULL) {
        (void)snprintf(ct, sizeof(ct), "Content-Type: %s", req->content_type);
        if (!add_header(x, ct)) {
            return false;
        }
    }
    if ((req->header != NULL && !add_header(x, req->header)) ||
        !add_header(x, "Accept: application/json") || !apply_auth(x, req->auth)) {
        return false;
    }
    (void)curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
    return true;
}

struct gx_httpc_xfer *
gx_httpc_start(struct gx_httpc *c, const struct gx_httpc_req *req, gx_httpc_done_cb done,
               gx_httpc_data_cb data, void *ctx)
{
    struct gx_httpc_xfer *x;

    if (req->stream && data == NULL) {
        return NULL;
    }
    x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return NULL;
    }
    x->c = c;
    x->done = done;
    x->data = data;
    x->ctx = ctx;
    x->stream = req->stream;
    x->start_us = gx_mono_us();
    gx_buf_init(&x->resp, req->max_body ? req->max_body : (size_t)64 << 20);
    x->easy = curl_easy_init();
    if (x->easy == NULL || !setup_easy(x, req) ||
        curl_multi_add_handle(c->multi, x->easy) != CURLM_OK) {
        xfer_free(x);
        return NULL;
    }
    xfer_link(c, x);
    return x;
}

void
gx_httpc_cancel(struct gx_httpc_xfer *x)
{
    if (x == NULL) {
        return;
    }
    (void)curl_multi_remove_handle(x->c->multi, x->easy);
    xfer_unlink(x->c, x);
    xfer_free(x);
}

size_t
gx_httpc_active(const struct gx_httpc *c)
{
    return c->active;
}

bool
gx_httpc_escape(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~';
        if (o + (plain ? 1 : 3) >= n) {
            return false;
        }
        if (plain) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    if (o >= n) {
        return false;
    }
    out[o] = '\0';
    return true;
}
