/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls.h - GnuTLS checks of server.tls_* settings, shared by the config check
 * and the HTTP server. Pure: no I/O (the caller reads the files).
 */
#ifndef GX_TLS_H
#define GX_TLS_H

#include <stddef.h>
#include "common.h"

/* GnuTLS priorities when server.tls_priorities is not set: TLS 1.2 and 1.3 only. */
#define GX_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE"

/** The priority string handed to GnuTLS: @prio (NULL: the default) without TLS < 1.2. */
void gx_tls_effective_priorities(const char *prio, char *out, size_t n);

/**
 * Check a GnuTLS priority string as the server would use it. GX_EINVAL with
 * @why naming server.tls_priorities.
 */
enum gx_err gx_tls_check_priorities(const char *prio, struct gx_why *why) GX_WUR;

/**
 * Check that PEM @cert and @key (borrowed) form a pair the server can use.
 * GX_EINVAL with @why naming server.tls_cert_file.
 */
enum gx_err gx_tls_check_pair(const char *cert, size_t cert_len, const char *key, size_t key_len,
                              struct gx_why *why) GX_WUR;

/**
 * The curl public-key pin ("sha256//<base64>") of the first certificate in
 * PEM @cert: the SHA-256 of its SubjectPublicKeyInfo. The replicas share one
 * serving key, so each trusts the other by it (forward.c). GX_EINVAL when
 * @cert holds no certificate or @out (@n bytes) is too small.
 */
enum gx_err gx_tls_pubkey_pin(const char *cert, size_t cert_len, char *out, size_t n) GX_WUR;

#endif
