/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_check.c - the rules that tie several config keys together, checked
 * once every key is read: the URL prefix's shape, the TLS settings (the
 * cert and key set together, a priority string GnuTLS accepts), the memory
 * budget against the largest body, the Prometheus URL's scheme, the node
 * label selector's syntax (config_selector.c).
 *
 * One key's own type and range are checked by the reader (config_read.c);
 * whether the files the config names can be read, and the TLS pair
 * matches, is checked by gx_config_load (config_load.c). This file does no
 * I/O.
 */
#include "config_int.h"

#include <string.h>
#include <strings.h>

#include "tls.h"

/* True if @url is http:// or https:// (any case) followed by a host. */
static bool
url_scheme_ok(const char *url)
{
    size_t n = strncasecmp(url, "http://", 7) == 0    ? 7
               : strncasecmp(url, "https://", 8) == 0 ? 8
                                                      : 0;

    return n > 0 && url[n] != '\0' && url[n] != '/';
}

/* Rules that tie several keys together, checked after the walk. */
enum gx_err
gx_config_check(const struct gx_config *cfg, struct gx_why *why)
{
    const char *pre = cfg->url_prefix;
    size_t plen = strlen(pre);

    if (plen > 0 && (pre[0] != '/' || pre[plen - 1] == '/')) {
        gx_why_set(why, "server.url_prefix: must be empty or start with '/' and not end with '/'");
        return GX_EINVAL;
    }
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)pre[i];
        if (c <= ' ' || c == '?' || c == '#' || c >= 0x7f) {
            gx_why_set(why, "server.url_prefix: must not contain spaces, '?' or '#'");
            return GX_EINVAL;
        }
    }
    if ((cfg->tls_cert_file == NULL) != (cfg->tls_key_file == NULL)) {
        gx_why_set(why, "server.tls_cert_file: tls_cert_file and tls_key_file must be set "
                        "together");
        return GX_EINVAL;
    }
    /* A large request may use 7/8 of the budget (gx_http_set_budget): a largest body must fit. */
    if ((cfg->max_inflight_bytes - cfg->max_inflight_bytes / 8) / 2 < cfg->max_body_bytes) {
        gx_why_set(why,
                   "server.max_inflight_bytes: must be at least 16/7 x server.max_body_bytes "
                   "(%zu): a largest body and its reply must fit in 7/8 of the budget",
                   cfg->max_body_bytes);
        return GX_EINVAL;
    }
    if (gx_tls_check_priorities(cfg->tls_priorities, why) != GX_OK) {
        return GX_EINVAL;
    }
    if (gx_config_check_selector("kubernetes.node_selector", cfg->kube_node_selector, why) !=
        GX_OK) {
        return GX_EINVAL;
    }
    if (cfg->replicas_advertise_url != NULL && !url_scheme_ok(cfg->replicas_advertise_url)) {
        gx_why_set(why,
                   "replicas.advertise_url: must be an http:// or https:// URL with a host, "
                   "not '%s'",
                   cfg->replicas_advertise_url);
        return GX_EINVAL;
    }
    if (cfg->prom_url != NULL && !url_scheme_ok(cfg->prom_url)) {
        gx_why_set(why, "prometheus.url: must be an http:// or https:// URL with a host, not '%s'",
                   cfg->prom_url);
        return GX_EINVAL;
    }
    return GX_OK;
}
