/* SPDX-License-Identifier: Apache-2.0 */
/* gx_fakekube.c - a service wired to a fake API server (see gx_fakekube.h). */
#include "gx_fakekube.h"

#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "httpc.h"
#include "kube.h"

void
gx_fakekube_app(struct gx_app *a, const struct gx_fakehttp *srv)
{
    struct gx_why why = {{0}};
    char url[64];

    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    cr_assert_eq(gx_config_default(&a->cfg), GX_OK);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d/", gx_fakehttp_port(srv));
    free(a->cfg->kube_url);
    a->cfg->kube_url = gx_strndup(url, strlen(url));
    a->cfg->kube_enabled = true;
    gx_metrics_init(&a->metrics);
    a->base = event_base_new();
    cr_assert_not_null(a->base);
    a->sync.httpc = gx_httpc_new(a->base);
    a->sync.kube = gx_kube_new(a->base, a->sync.httpc, a->cfg, &a->metrics.up[GX_UP_KUBERNETES],
                               NULL, a, &why);
    cr_assert_not_null(a->sync.kube, "%s", why.text);
}

void
gx_fakekube_app_free(struct gx_app *a)
{
    gx_kube_free(a->sync.kube);
    gx_httpc_free(a->sync.httpc);
    gx_config_free(a->cfg);
    event_base_free(a->base);
}

bool
gx_fakekube_run_until(struct gx_app *a, bool (*cond)(void *arg), void *arg, int ms)
{
    int64_t end = gx_mono_ms() + ms;

    while (!cond(arg) && gx_mono_ms() < end) {
        struct timeval tv = {0, 10000};
        (void)event_base_loopexit(a->base, &tv);
        (void)event_base_dispatch(a->base);
    }
    return cond(arg);
}
