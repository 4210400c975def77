/* SPDX-License-Identifier: Apache-2.0 */
/* leader.c - the leader Lease's reads and writes (see leader.h). */
#include "leader.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elect.h"
#include "kobj.h"
#include "kube.h"
#include "kwrite.h"
#include "log.h"
#include "service.h"
#include "tls.h"

#define LEASE_NAME "gpu-extender-leader"
#define LEADER_ANN "gpu-extender.io/leader"
#define RENEWED_ANN "gpu-extender.io/renewed-ms" /* wall ms of the write, for people */

struct gx_leader {
    struct gx_app *app;
    struct event *timer;
    struct gx_httpc_xfer *xfer;
    struct gx_elect e;
    char self[GX_ELECT_ID_MAX];
    char pin[128];  /* with TLS: the serving key's pin, which every replica shares; else "" */
    bool led;       /* leading at the last write or read, for the log of a change */
    bool releasing; /* shutting down: hand the Lease back once the call in flight ends */
    bool handing;   /* the hand-back is on its way */
    bool reread;    /* the hand-back already read the Lease again once */
};

static int64_t
lease_ms(const struct gx_leader *ld)
{
    return (int64_t)ld->app->cfg->replicas_lease_s * 1000;
}

static void
arm(struct gx_leader *ld)
{
    int64_t ms = lease_ms(ld) / 4;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    (void)evtimer_add(ld->timer, &tv);
}

static void
lease_path(const struct gx_leader *ld, bool item, char *out, size_t n)
{
    gx_kwrite_lease_path(out, n, ld->app->cfg->kube_namespace, item ? LEASE_NAME : "");
}

/* The leader Lease in @body: its resourceVersion and holder ("" none) into *rv, *holder. */
static bool
decode(const struct gx_leader *ld, const char *body, size_t len, struct gx_arena *a,
       const char **rv, const char **holder)
{
    struct gx_lease l;

    if (gx_kobj_decode_lease(body, len, ld->app->cfg->max_json_depth, a, &l, NULL) != GX_OK) {
        return false;
    }
    *rv = l.resource_version;
    *holder = gx_kv_get(l.annotations, l.n_annotations, LEADER_ANN);
    *holder = *holder != NULL ? *holder : "";
    return true;
}

/* Log a change of who leads, once. */
static void
note_change(struct gx_leader *ld)
{
    bool now = gx_elect_leading(&ld->e, ld->self, gx_mono_ms(), lease_ms(ld));

    if (now != ld->led) {
        gx_info(now ? "leading: the other replicas forward to this one"
                    : "no longer leading: forwarding to the leader",
                "self=%s leader=%s", ld->self, ld->e.holder[0] ? ld->e.holder : "-");
    }
    ld->led = now;
}

static bool write_lease(struct gx_leader *ld, const char *rv, const char *holder);
static bool read_lease(struct gx_leader *ld);

/* Write the Lease at the version last seen with no holder: the others take it at once. */
static void
hand_back(struct gx_leader *ld)
{
    ld->releasing = false;
    ld->handing = write_lease(ld, ld->e.rv, "");
    if (ld->handing) {
        gx_info("handing the leader lease back", "self=%s", ld->self);
    }
}

/*
 * After the renewal in flight, or the hand-back itself: hand back at the
 * version the write left. A write that failed may still have landed (a
 * timeout, a dropped answer) and moved the version, so read it once more.
 */
static void
hand_back_after(struct gx_leader *ld, bool written)
{
    if (written && ld->releasing) {
        hand_back(ld);
        return;
    }
    ld->releasing = false;
    if (!written && !ld->reread) {
        ld->reread = true;
        ld->releasing = read_lease(ld);
    }
}

static void
write_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_leader *ld = ctx;
    struct gx_arena a;
    const char *rv, *holder;
    bool written = false, was_handing = ld->handing;

    ld->xfer = NULL;
    ld->handing = false;
    gx_arena_init(&a, 0);
    if (rc == GX_OK && (status == 200 || status == 201) &&
        decode(ld, body, len, &a, &rv, &holder)) {
        written = true;
        if (strcmp(holder, ld->self) == 0) {
            gx_elect_written(&ld->e, ld->self, rv, gx_mono_ms());
        }
    } else if (status != 409) {
        gx_debug("leader lease not written", "rc=%s status=%ld", gx_strerror(rc), status);
    }
    gx_arena_release(&a);
    if (ld->releasing || was_handing) {
        hand_back_after(ld, written);
        return;
    }
    note_change(ld);
    arm(ld);
}

/* PUT the Lease at @rv naming @holder ("" hands it back), or POST it when @rv is "". */
static bool
write_lease(struct gx_leader *ld, const char *rv, const char *holder)
{
    char stamp[32];
    /* the API server keeps a write that changes nothing as it was, resourceVersion included */
    struct gx_kv ann[2] = {{LEADER_ANN, holder}, {RENEWED_ANN, stamp}};
    struct gx_kmeta m = {.name = LEASE_NAME,
                         .namespace = ld->app->cfg->kube_namespace,
                         .resource_version = rv[0] ? rv : NULL,
                         .annotations = ann,
                         .n_annotations = 2};
    char path[512];
    struct gx_buf b;

    (void)snprintf(stamp, sizeof(stamp), "%lld", (long long)gx_wall_ms());

    lease_path(ld, rv[0] != '\0', path, sizeof(path));
    gx_buf_init(&b, 8192);
    if (gx_kwrite_lease(&b, &m, holder) == GX_OK) {
        ld->xfer = gx_kube_request(ld->app->sync.kube, rv[0] ? "PUT" : "POST", path, b.data, b.len,
                                   "application/json", lease_ms(ld) / 4, write_done, ld);
    }
    gx_buf_release(&b);
    return ld->xfer != NULL;
}

static void
read_done(void *ctx, enum gx_err rc, long status, const char *body, size_t len)
{
    struct gx_leader *ld = ctx;
    struct gx_arena a;
    const char *rv = "", *holder = ""; /* 404: no Lease */
    enum gx_elect_act act;

    ld->xfer = NULL;
    gx_arena_init(&a, 0);
    if (rc != GX_OK || (status != 200 && status != 404) ||
        (status == 200 && !decode(ld, body, len, &a, &rv, &holder))) {
        gx_debug("leader lease not read", "rc=%s status=%ld", gx_strerror(rc), status);
        gx_arena_release(&a);
        if (ld->releasing) {
            ld->releasing = false; /* shutting down: the others wait out the lease */
        } else {
            arm(ld);
        }
        return;
    }
    act = gx_elect_observe(&ld->e, ld->self, rv, holder, gx_mono_ms(), lease_ms(ld));
    if (ld->releasing) {
        ld->releasing = false;
        if (act == GX_ELECT_RENEW) {
            hand_back(ld);
        }
        gx_arena_release(&a);
        return;
    }
    if (act == GX_ELECT_TAKE) {
        gx_info("taking the leader lease", "holder=%s resource_version=%s unchanged_ms=%lld",
                ld->e.holder[0] ? ld->e.holder : "-", ld->e.rv[0] ? ld->e.rv : "-",
                (long long)(gx_mono_ms() - ld->e.changed_ms));
    }
    if (act == GX_ELECT_FOLLOW || !write_lease(ld, rv, ld->self)) {
        note_change(ld);
        arm(ld);
    }
    gx_arena_release(&a);
}

static bool
read_lease(struct gx_leader *ld)
{
    char path[512];

    lease_path(ld, true, path, sizeof(path));
    ld->xfer = gx_kube_request(ld->app->sync.kube, "GET", path, NULL, 0, NULL, lease_ms(ld) / 4,
                               read_done, ld);
    return ld->xfer != NULL;
}

static void
tick(evutil_socket_t fd, short what, void *arg)
{
    struct gx_leader *ld = arg;

    (void)fd;
    (void)what;
    if (ld->xfer != NULL || ld->app->draining) {
        return;
    }
    if (!read_lease(ld)) {
        arm(ld);
    }
}

/* This replica's URL: replicas.advertise_url, or http://$POD_IP:<port>. */
static bool
self_url(const struct gx_app *app, char *out, size_t n)
{
    const char *ip = getenv("POD_IP");
    int w;

    if (app->cfg->replicas_advertise_url != NULL) {
        w = snprintf(out, n, "%s", app->cfg->replicas_advertise_url);
    } else if (ip != NULL && ip[0] != '\0') {
        w = snprintf(out, n, strchr(ip, ':') ? "%s://[%s]:%d" : "%s://%s:%d",
                     app->cfg->tls_cert_file != NULL ? "https" : "http", ip,
                     gx_http_port(app->http));
    } else {
        return false;
    }
    return w > 0 && (size_t)w < n;
}

/*
 * The pin of the serving certificate (TLS only): the replicas share one
 * Secret, so a replica trusts another that holds the same key, whatever
 * name or CA its certificate carries.
 */
static enum gx_err
read_pin(const struct gx_app *app, char *out, size_t n, struct gx_why *why)
{
    char *cert = NULL;
    size_t len = 0;
    enum gx_err rc;

    out[0] = '\0';
    if (app->cfg->tls_cert_file == NULL) {
        return GX_OK;
    }
    rc = gx_read_file(app->cfg->tls_cert_file, (size_t)1 << 20, &cert, &len);
    if (rc == GX_OK) {
        rc = gx_tls_pubkey_pin(cert, len, out, n);
    }
    free(cert);
    if (rc != GX_OK) {
        gx_why_set(why, "replicas.forward: cannot read the public key of %s",
                   app->cfg->tls_cert_file);
    }
    return rc;
}

void
gx_leader_tls_changed(struct gx_app *app)
{
    struct gx_leader *ld = app->leader;
    struct gx_why why = {{0}};
    char pin[sizeof(ld->pin)];

    if (ld == NULL) {
        return;
    }
    if (read_pin(app, pin, sizeof(pin), &why) != GX_OK) {
        gx_warn("keeping the replicas' key pin", "error=%s", why.text);
        return;
    }
    memcpy(ld->pin, pin, sizeof(pin));
}

const char *
gx_leader_pin(const struct gx_app *app)
{
    return app->leader != NULL && app->leader->pin[0] ? app->leader->pin : NULL;
}

enum gx_err
gx_leader_start(struct gx_app *app, struct gx_why *why)
{
    struct gx_leader *ld;

    if (!app->cfg->replicas_forward || app->sync.kube == NULL) {
        return GX_OK;
    }
    if ((ld = calloc(1, sizeof(*ld))) == NULL) {
        return GX_ENOMEM;
    }
    ld->app = app;
    gx_elect_init(&ld->e);
    if (!self_url(app, ld->self, sizeof(ld->self))) {
        free(ld);
        gx_why_set(why, "replicas.forward: set replicas.advertise_url, or the POD_IP environment "
                        "variable (the downward API's status.podIP), so the other replicas can "
                        "reach this one");
        return GX_EINVAL;
    }
    if (read_pin(app, ld->pin, sizeof(ld->pin), why) != GX_OK) {
        free(ld);
        return GX_EINVAL;
    }
    if ((ld->timer = evtimer_new(app->base, tick, ld)) == NULL) {
        free(ld);
        return GX_ENOMEM;
    }
    app->leader = ld;
    gx_info("replicas forward to one leader", "self=%s lease_s=%d", ld->self,
            app->cfg->replicas_lease_s);
    tick(-1, 0, ld);
    return GX_OK;
}

const char *
gx_leader_url(const struct gx_app *app)
{
    const struct gx_leader *ld = app->leader;

    return ld != NULL ? gx_elect_leader(&ld->e, ld->self, gx_mono_ms(), lease_ms(ld)) : NULL;
}

bool
gx_leader_leading(const struct gx_app *app)
{
    const struct gx_leader *ld = app->leader;

    return ld != NULL && gx_elect_leading(&ld->e, ld->self, gx_mono_ms(), lease_ms(ld));
}

void
gx_leader_release(struct gx_app *app)
{
    struct gx_leader *ld = app->leader;

    if (ld == NULL || !gx_leader_leading(app)) {
        return;
    }
    (void)evtimer_del(ld->timer);
    /*
     * A renewal in flight may land and move the resourceVersion: cancelled,
     * the hand-back then lost its compare-and-swap and the others waited
     * out the lease (forward_live: half the runs).
     */
    ld->releasing = true;
    if (ld->xfer == NULL) {
        hand_back(ld);
    }
}

bool
gx_leader_handing_back(const struct gx_app *app)
{
    const struct gx_leader *ld = app->leader;

    return ld != NULL && (ld->releasing || ld->handing);
}

void
gx_leader_free(struct gx_app *app)
{
    struct gx_leader *ld = app->leader;

    if (ld == NULL) {
        return;
    }
    gx_kube_cancel(app->sync.kube, ld->xfer);
    event_free(ld->timer);
    free(ld);
    app->leader = NULL;
}
