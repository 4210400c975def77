/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gx_fakekube.h - a service (struct gx_app) whose API server is a
 * gx_fakehttp fake: the wiring the tests of the modules that talk to it
 * share (bind, leader, requeue).
 */
#ifndef GX_FAKEKUBE_H
#define GX_FAKEKUBE_H

#include <stdbool.h>

#include "gx_fakehttp.h"
#include "service.h"

/**
 * Wire @a to @srv: the default config with kubernetes on at @srv's URL,
 * the metrics, an event base, the HTTP client and the kube client. The
 * test sets what else its module reads.
 */
void gx_fakekube_app(struct gx_app *a, const struct gx_fakehttp *srv);

/** Free what gx_fakekube_app made (the fake stays the test's). */
void gx_fakekube_app_free(struct gx_app *a);

/** Run @a's loop until @cond(@arg) holds or @ms pass; returns @cond(@arg). */
bool gx_fakekube_run_until(struct gx_app *a, bool (*cond)(void *arg), void *arg, int ms);

#endif
