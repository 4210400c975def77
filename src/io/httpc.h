/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httpc.h - asynchronous HTTP client: one libcurl multi handle driven by
 * the libevent loop (curl's hiperfifo pattern: socket and timer callbacks,
 * per-transfer context in CURLOPT_PRIVATE). Used for Prometheus queries,
 * API server lists, watches (streamed) and writes. Bodies are capped;
 * every transfer has a timeout (watches: a low-speed limit instead).
 * All callbacks run on the loop thread.
 */
#ifndef GX_HTTPC_H
#define GX_HTTPC_H

#include "common.h"
#include "histo.h"

/** How an upstream call failed, for metrics and logs. */
enum gx_upkind {
    GX_UPERR_CONNECT,
    GX_UPERR_TIMEOUT,
    GX_UPERR_HTTP,
    GX_UPERR_PARSE,
    GX_UPERR_GONE,
    GX_UPERR_CONFLICT,
    GX_UPERR_QUERY, /* answered 200, but the body reports an error (Prometheus status=error) */
    GX_UPERR_OTHER,
    GX_UPERR_COUNT
};

/*
 * What one upstream's clients count (kube and leases the API server's,
 * promsrc Prometheus'); the server's metrics hold one per upstream and
 * render them.
 */
struct gx_upstats {
    uint64_t requests;
    uint64_t errors[GX_UPERR_COUNT];
    struct gx_histo duration;
    uint64_t syncs;
    int64_t last_success_ms; /* wall ms, 0 never */
    uint64_t cas_conflicts;  /* Lease compare-and-swap lost (the API server only) */
};

/** "connect", "timeout", "http", ... Static. */
const char *gx_upkind_name(enum gx_upkind k);

struct event_base;
struct gx_httpc;
struct gx_httpc_xfer;

/** TLS and authentication for one upstream. Strings are copied per transfer. */
struct gx_httpc_auth {
    const char *bearer_token; /* "Authorization: Bearer ..." (never logged) */
    const char *basic_user;   /* basic auth when non-NULL */
    const char *basic_password;
    const char *ca_file; /* verify the server against this CA bundle */
    bool insecure;       /* skip TLS verification (logged at start by the owner) */
    /* trust the server by its public key alone ("sha256//<base64>"), not by a CA or name */
    const char *pinned_key;
};

struct gx_httpc_req {
    const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *url;
    const char *body; /* copied; may be NULL */
    size_t body_len;
    const char *content_type;
    const struct gx_httpc_auth *auth; /* may be NULL */
    long timeout_ms;                  /* whole transfer; 0 = none (streams) */
    size_t max_body;                  /* larger responses fail with GX_ETOOBIG */
    bool stream;                      /* deliver the body through the data callback */
    long connect_timeout_ms;          /* 0: 5 s */
    const char *header;               /* one more "Name: value", may be NULL */
};

struct gx_httpc_result {
    enum gx_err rc;   /* GX_OK when an HTTP response was received (any status) */
    long status;      /* HTTP status, 0 if none */
    const char *body; /* collected body (not for streams), NUL-terminated */
    size_t body_len;
    const char *error;   /* rc != GX_OK: curl's error text; an HTTP status that is not 2xx
                            or 3xx: "HTTP <status>"; NULL otherwise */
    enum gx_upkind kind; /* classification of the failure for metrics */
    double seconds;
    const char *content_type; /* of the response, NULL if none */
};

/** Called once when a transfer ends (not after gx_httpc_cancel). */
typedef void (*gx_httpc_done_cb)(void *ctx, const struct gx_httpc_result *res);

/**
 * Streams: called with each received piece once the status is known (2xx
 * only; other statuses collect the body for the done callback). Return
 * non-OK to abort the transfer (done then reports that code).
 */
typedef enum gx_err (*gx_httpc_data_cb)(void *ctx, const char *data, size_t len);

/** A client on @base; NULL on ENOMEM. */
struct gx_httpc *gx_httpc_new(struct event_base *base);

/** Cancel every transfer (no callbacks) and free; NULL is a no-op. */
void gx_httpc_free(struct gx_httpc *c);

/**
 * Start a transfer. Returns its handle (valid until done is called or it
 * is cancelled) or NULL on ENOMEM / bad request.
 */
struct gx_httpc_xfer *gx_httpc_start(struct gx_httpc *c, const struct gx_httpc_req *req,
                                     gx_httpc_done_cb done, gx_httpc_data_cb data, void *ctx);

/** Abort a transfer; its callbacks are not called. */
void gx_httpc_cancel(struct gx_httpc_xfer *x);

/** Number of transfers in progress. */
size_t gx_httpc_active(const struct gx_httpc *c);

/** Percent-encode @s for a URL query value into @out (size @n). False if it does not fit. */
bool gx_httpc_escape(const char *s, char *out, size_t n);

#endif
