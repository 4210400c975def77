/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app.c - lifecycle and wiring of the running extender: start, live reload
 * of the config, TLS certificate rotation, graceful drain, free. The jobs
 * themselves are elsewhere (service.h lists who does what). Everything runs
 * on the event-loop thread, so state needs no locks: a snapshot is replaced
 * whole between two requests, and a config likewise.
 */
#include "app.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgwrite.h"
#include "bind.h"
#include "extender.h"
#include "forward.h"
#include "leader.h"
#include "log.h"
#include "vcache.h"
#include "gang_bind.h"
#include "gang_filter.h"
#include "preempt_holds.h"
#include "reconcile.h"
#include "requeue.h"
#include "routes.h"
#include "seen.h"
#include "service.h"
#include "sync.h"

#define DRAIN_MIN_MS 300

/*
 * A managed pod's event goes to each subsystem that tracks pods, as redis's
 * serverCron calls each one's tick: the preempt holds first, so a hold takes
 * over from a victim's share before reconcile releases it.
 */
static void
pod_event(void *ctx, enum gx_watch_type type, const struct gx_pod *pod)
{
    struct gx_app *app = ctx;

    gx_preempt_pod_event(app, pod, type == GX_WATCH_DELETED || gx_pod_finished(pod));
    gx_recon_pod_event(app, type, pod);
}

static const struct gx_kube_cbs kube_cbs = {
    .nodes_changed = gx_sync_schedule_rebuild,
    .pod_event = pod_event,
    .pods_listed = gx_recon_pods_listed,
};

static void
arm(struct event *ev, int seconds)
{
    struct timeval tv = {seconds, 0};

    (void)evtimer_add(ev, &tv);
}

void
gx_app_reload(struct gx_app *app)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {{0}};
    char changed[256], q[300];
    bool retime;

    app->metrics.last_reload_ms = gx_wall_ms();
    if (gx_config_load(app->config_path, &cfg, &why) != GX_OK) {
        app->metrics.reloads_failed++;
        app->metrics.last_reload_ok = false;
        /* every rejection is written: the operator who changed the file looks for it */
        gx_log_always(GX_LOG_ERROR, "config rejected, keeping the last good config",
                      "path=%s error=%s", app->config_path, gx_log_quote(q, sizeof(q), why.text));
        return;
    }
    app->metrics.reloads_ok++;
    app->metrics.last_reload_ok = true;
    if (cfg->hash == app->cfg->hash) {
        gx_config_free(cfg);
        return;
    }
    if (gx_config_restart_keys_changed(app->cfg, cfg, changed, sizeof(changed))) {
        gx_warn("config keys changed that apply only after a restart; keeping their running "
                "values",
                "keys=%s", changed);
        if (gx_config_keep_restart_keys(cfg, app->cfg) != GX_OK) {
            gx_config_free(cfg);
            return;
        }
    }
    retime = cfg->ledger_reconcile_s != app->cfg->ledger_reconcile_s;
    gx_config_free(app->cfg);
    app->cfg = cfg;
    gx_sync_set_config(app);
    if (retime) {
        gx_recon_retime(app);
    }
    if (app->leases != NULL) {
        gx_leases_set_config(app->leases, cfg);
    }
    app->metrics.config_hash = cfg->hash;
    gx_log_set_level((enum gx_log_level)cfg->log_level);
    if (app->http != NULL) {
        gx_http_set_max_body(app->http, cfg->max_body_bytes);
        gx_http_set_conn_timeout(app->http, cfg->connection_timeout_s);
        gx_http_set_budget(app->http, cfg->max_inflight_bytes);
    }
    (void)gx_sync_rebuild(app);
    gx_info("config reloaded", "path=%s hash=%016llx", app->config_path,
            (unsigned long long)cfg->hash);
}

/* The 503 the HTTP server answers on its own, in the wire codec's error shape. */
static void
render_busy_body(struct gx_app *app)
{
    struct gx_buf b;
    size_t len = 0;
    char *data;

    gx_buf_init(&b, sizeof(app->busy_body) - 1);
    if (gx_ext_encode_http_error(&b, 503,
                                 "server busy: requests in flight hold "
                                 "server.max_inflight_bytes; retry") != GX_OK) {
        gx_buf_reset(&b);
    }
    data = gx_buf_take(&b, &len);
    (void)snprintf(app->busy_body, sizeof(app->busy_body), "%s", data != NULL ? data : "{}");
    free(data);
}

/*
 * Start an HTTP server on @port with the configured TLS files (read now).
 * With TLS the socket is SO_REUSEPORT, so a successor can take over the
 * port when the certificate is rotated while this one drains.
 */
static enum gx_err
start_http(struct gx_app *app, int port, struct gx_http **out, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    struct gx_http_opts o = {
        .address = cfg->listen_address,
        .port = port,
        .max_body = cfg->max_body_bytes,
        .max_inflight = cfg->max_inflight_bytes,
        .conn_timeout_s = cfg->connection_timeout_s,
        .tls_priorities = cfg->tls_priorities,
        .reuse_port = cfg->tls_cert_file != NULL,
        .busy_body = app->busy_body,
    };
    char *cert = NULL, *key = NULL;
    size_t len = 0;
    enum gx_err rc = GX_OK;

    render_busy_body(app);
    if (cfg->tls_cert_file != NULL) {
        (void)gx_stamp_changed(cfg->tls_cert_file, &app->cert_stamp);
        (void)gx_stamp_changed(cfg->tls_key_file, &app->key_stamp);
        rc = gx_read_file(cfg->tls_cert_file, 1 << 20, &cert, &len);
        if (rc == GX_OK) {
            rc = gx_read_file(cfg->tls_key_file, 1 << 20, &key, &len);
        }
        if (rc != GX_OK) {
            gx_why_set(why, "server.tls_*: cannot read %s: %s",
                       cert ? cfg->tls_key_file : cfg->tls_cert_file, gx_strerror(rc));
        }
        o.tls_cert = cert;
        o.tls_key = key;
    }
    if (rc == GX_OK) {
        rc = gx_http_start(app->base, &o, gx_routes_handle, app, out, why);
    }
    free(cert);
    if (key != NULL) {
        memset(key, 0, len);
        free(key);
    }
    return rc;
}

/* The certificate or key file changed (a Secret update): serve with the new pair. */
static void
tls_rotate(struct gx_app *app)
{
    struct gx_http *fresh = NULL;
    struct gx_why why = {{0}};
    char q[300];

    if (start_http(app, gx_http_port(app->http), &fresh, &why) != GX_OK) {
        gx_error("cannot load the new TLS certificate, keeping the current one", "error=%s",
                 gx_log_quote(q, sizeof(q), why.text));
        return;
    }
    gx_http_free(app->http_old);
    gx_http_quiesce(app->http);
    app->http_old = app->http;
    app->http = fresh;
    gx_leader_tls_changed(app);
    gx_info("TLS certificate reloaded", "cert=%s", app->cfg->tls_cert_file);
}

static void
reload_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;

    (void)fd;
    (void)what;
    if (gx_stamp_changed(app->config_path, &app->config_stamp)) {
        gx_app_reload(app);
    }
    if (app->cfg->tls_cert_file != NULL && !app->draining) {
        /* evaluate both: each call records the file's new stamp */
        bool cert = gx_stamp_changed(app->cfg->tls_cert_file, &app->cert_stamp);
        bool key = gx_stamp_changed(app->cfg->tls_key_file, &app->key_stamp);
        if (cert || key) {
            tls_rotate(app);
        }
    }
    if (app->http_old != NULL && gx_http_inflight(app->http_old) == 0) {
        gx_http_free(app->http_old);
        app->http_old = NULL;
    }
    arm(app->reload_timer, 1);
}

static void
drain_cb(evutil_socket_t fd, short what, void *arg)
{
    struct gx_app *app = arg;
    struct timeval tv = {0, 20000};

    (void)fd;
    (void)what;
    /*
     * Requests already on their way over open keep-alive connections get a
     * short window to arrive before an idle server counts as drained. The
     * leader Lease's hand-back, which may wait for a renewal, lands first:
     * else the other replicas wait out the lease.
     */
    if ((gx_http_inflight(app->http) == 0 && gx_mono_ms() >= app->drain_quiet_ms &&
         !gx_leader_handing_back(app)) ||
        gx_mono_ms() >= app->drain_deadline_ms) {
        gx_info("shutdown complete", "unanswered=%zu", gx_http_inflight(app->http));
        (void)event_base_loopexit(app->base, NULL);
        return;
    }
    (void)evtimer_add(app->drain_timer, &tv);
}

void
gx_app_shutdown(struct gx_app *app)
{
    if (app->draining) {
        return;
    }
    app->draining = true;
    gx_info("shutting down, draining in-flight requests", "inflight=%zu grace_s=%d",
            app->http ? gx_http_inflight(app->http) : 0, app->cfg->shutdown_grace_s);
    if (app->http == NULL) {
        (void)event_base_loopexit(app->base, NULL);
        return;
    }
    gx_http_quiesce(app->http);
    gx_leader_release(app);
    app->drain_deadline_ms = gx_mono_ms() + (int64_t)app->cfg->shutdown_grace_s * 1000;
    app->drain_quiet_ms = gx_mono_ms() + DRAIN_MIN_MS;
    drain_cb(-1, 0, app);
}

enum gx_err
gx_app_new(struct event_base *base, const char *config_path, struct gx_app **out,
           struct gx_why *why)
{
    struct gx_app *app = calloc(1, sizeof(*app));
    enum gx_err rc;

    if (app == NULL) {
        return GX_ENOMEM;
    }
    app->base = base;
    /* replicas given the same call draw different nodes among equals */
    app->shortlist_rng = (uint64_t)gx_wall_ms() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)app;
    LIST_INIT(&app->binds);
    LIST_INIT(&app->paced);
    LIST_INIT(&app->gang_binds);
    LIST_INIT(&app->bgs);
    LIST_INIT(&app->forwards);
    gx_metrics_init(&app->metrics);
    app->config_path = gx_strndup(config_path, strlen(config_path));
    app->ledger = gx_ledger_new();
    app->seen = gx_seen_new();
    app->gaps = calloc(1, sizeof(*app->gaps));
    if (app->config_path == NULL || app->ledger == NULL || app->seen == NULL || app->gaps == NULL ||
        gx_gate_init(&app->bind_gate, base) != GX_OK) {
        rc = GX_ENOMEM;
        goto fail;
    }
    rc = gx_config_load(config_path, &app->cfg, why);
    if (rc != GX_OK) {
        goto fail;
    }
    (void)gx_stamp_changed(config_path, &app->config_stamp);
    app->metrics.last_reload_ok = true;
    app->metrics.last_reload_ms = gx_wall_ms();
    app->metrics.config_hash = app->cfg->hash;
    gx_log_set_level((enum gx_log_level)app->cfg->log_level);
    rc = gx_sync_init(app, why);
    if (rc != GX_OK) {
        goto fail;
    }
    *out = app;
    return GX_OK;
fail:
    gx_app_free(app);
    return rc;
}

/* The durable ledger and its reconciler, once the API server source exists. */
static enum gx_err
start_ledger(struct gx_app *app)
{
    if (app->sync.kube == NULL) {
        return GX_OK;
    }
    app->leases = gx_leases_new(app->base, app->sync.kube, app->cfg, app->ledger,
                                &app->metrics.up[GX_UP_KUBERNETES]);
    if (app->leases == NULL) {
        return GX_ENOMEM;
    }
    return gx_recon_start(app) == GX_OK ? gx_requeue_start(app) : GX_ENOMEM;
}

enum gx_err
gx_app_listen(struct gx_app *app, struct gx_why *why)
{
    const struct gx_config *cfg = app->cfg;
    enum gx_err rc;

    if ((rc = start_http(app, cfg->port, &app->http, why)) != GX_OK) {
        return rc;
    }
    if (cfg->tls_cert_file == NULL && cfg->listen_address != NULL &&
        strcmp(cfg->listen_address, "127.0.0.1") != 0 && strcmp(cfg->listen_address, "::1") != 0) {
        gx_info("serving plain HTTP; set server.tls_cert_file/tls_key_file for HTTPS", NULL);
    }
    if ((rc = gx_sync_start(app, &kube_cbs, why)) != GX_OK || (rc = start_ledger(app)) != GX_OK ||
        (rc = gx_leader_start(app, why)) != GX_OK) {
        return rc;
    }
    app->reload_timer = evtimer_new(app->base, reload_cb, app);
    app->drain_timer = evtimer_new(app->base, drain_cb, app);
    if (app->reload_timer == NULL || app->drain_timer == NULL) {
        return GX_ENOMEM;
    }
    arm(app->reload_timer, 1);
    gx_info("listening", "address=%s port=%d prefix=%s tls=%s", cfg->listen_address,
            gx_http_port(app->http), cfg->url_prefix, cfg->tls_cert_file != NULL ? "on" : "off");
    return GX_OK;
}

int
gx_app_port(const struct gx_app *app)
{
    return app->http ? gx_http_port(app->http) : -1;
}

void
gx_app_free(struct gx_app *app)
{
    if (app == NULL) {
        return;
    }
    if (app->reload_timer != NULL) {
        event_free(app->reload_timer);
    }
    if (app->drain_timer != NULL) {
        event_free(app->drain_timer);
    }
    /* binds and background writes before the Lease store, which before the API client */
    gx_bind_cancel_all(app);
    gx_gang_binds_free(app);
    gx_routes_cancel(app);
    gx_forward_cancel(app);
    gx_leader_free(app);
    gx_gate_release(&app->bind_gate);
    gx_leases_free(app->leases); /* cancels every update without callbacks */
    app->leases = NULL;
    gx_bg_clear(app);
    gx_recon_stop(app);
    gx_requeue_stop(app);
    gx_http_free(app->http_old);
    gx_http_free(app->http);
    gx_sync_free(app);
    gx_vcache_free(app->vcache);
    gx_preempt_holds_free(app);
    gx_gang_store_free(app);
    gx_ledger_free(app->ledger);
    gx_config_free(app->cfg);
    gx_seen_free(app->seen);
    gx_score_gaps_release(app->gaps);
    free(app->gaps);
    free(app->config_path);
    free(app);
}
