/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube_int.h - kube.c internals exposed to tests/test_kube.c only. Never
 * included by another module.
 */
#ifndef GX_KUBE_INT_H
#define GX_KUBE_INT_H

#include "kube.h"

/** First reconnect delay, its ceiling, and the jitter (percent either side). */
#define GX_KUBE_BACKOFF_START_MS 200
#define GX_KUBE_BACKOFF_MAX_MS 30000
#define GX_KUBE_JITTER_PCT 20

/** The API server base URL in use ("https://10.0.0.1:443"), borrowed. */
const char *gx_kube_base_url(const struct gx_kube *k);

#endif
