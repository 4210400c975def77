/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls.c - GnuTLS checks of the server's TLS settings: the priority string and
 * the key pair. Pure: the config check and the HTTP server share them, and
 * neither needs the other.
 */
#include "tls.h"
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The priority string handed to GnuTLS: the configured one with every
 * protocol older than TLS 1.2 removed, whatever it enabled.
 */
void
gx_tls_effective_priorities(const char *prio, char *out, size_t n)
{
    (void)snprintf(out, n, "%s:-VERS-SSL3.0:-VERS-TLS1.0:-VERS-TLS1.1",
                   prio != NULL ? prio : GX_TLS_PRIORITIES);
}

enum gx_err
gx_tls_check_priorities(const char *prio, struct gx_why *why)
{
    char eff[1024];
    const char *err_pos = NULL;
    gnutls_priority_t p;
    int ret;

    gx_tls_effective_priorities(prio, eff, sizeof(eff));
    ret = gnutls_priority_init(&p, eff, &err_pos);
    if (ret != GNUTLS_E_SUCCESS) {
        gx_why_set(why, "server.tls_priorities: not a valid GnuTLS priority string at '%.40s'",
                   err_pos != NULL ? err_pos : eff);
        return GX_EINVAL;
    }
    gnutls_priority_deinit(p);
    return GX_OK;
}

enum gx_err
gx_tls_check_pair(const char *cert, size_t cert_len, const char *key, size_t key_len,
                  struct gx_why *why)
{
    gnutls_certificate_credentials_t cred = NULL;
    gnutls_datum_t c = {(unsigned char *)(uintptr_t)cert, (unsigned int)cert_len};
    gnutls_datum_t k = {(unsigned char *)(uintptr_t)key, (unsigned int)key_len};
    int ret;

    if (cert_len > UINT32_MAX || key_len > UINT32_MAX ||
        gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS) {
        gx_why_set(why, "server.tls_cert_file: cannot check the certificate");
        return GX_ENOMEM;
    }
    ret = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
    gnutls_certificate_free_credentials(cred);
    if (ret < 0) {
        gx_why_set(why,
                   "server.tls_cert_file: certificate and server.tls_key_file do not form "
                   "a usable PEM pair: %s",
                   gnutls_strerror(ret));
        return GX_EINVAL;
    }
    return GX_OK;
}
