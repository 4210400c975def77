/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls.c - GnuTLS checks of the server's TLS settings: the priority string and
 * the key pair. Pure: the config check and the HTTP server share them, and
 * neither needs the other.
 */
#include "tls.h"
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
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

/* The SHA-256 of @crt's SubjectPublicKeyInfo, base64, into @b64 (gnutls_free it). */
static int
spki_sha256_b64(gnutls_x509_crt_t crt, gnutls_datum_t *b64)
{
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t der = {NULL, 0};
    unsigned char digest[32];
    gnutls_datum_t d = {digest, sizeof(digest)};
    int ret = gnutls_pubkey_init(&pub);

    if (ret >= 0) {
        ret = gnutls_pubkey_import_x509(pub, crt, 0);
    }
    if (ret >= 0) {
        ret = gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &der);
    }
    if (ret >= 0) {
        ret = gnutls_hash_fast(GNUTLS_DIG_SHA256, der.data, der.size, digest);
    }
    if (ret >= 0) {
        ret = gnutls_base64_encode2(&d, b64);
    }
    gnutls_free(der.data);
    gnutls_pubkey_deinit(pub);
    return ret;
}

enum gx_err
gx_tls_pubkey_pin(const char *cert, size_t cert_len, char *out, size_t n)
{
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t in = {(unsigned char *)(uintptr_t)cert, (unsigned int)cert_len};
    gnutls_datum_t b64 = {NULL, 0};
    enum gx_err rc = GX_EINVAL;
    int w;

    if (cert_len > UINT32_MAX || gnutls_x509_crt_init(&crt) < 0) {
        return GX_ENOMEM;
    }
    if (gnutls_x509_crt_import(crt, &in, GNUTLS_X509_FMT_PEM) >= 0 &&
        spki_sha256_b64(crt, &b64) >= 0) {
        w = snprintf(out, n, "sha256//%.*s", (int)b64.size, (const char *)b64.data);
        rc = w > 0 && (size_t)w < n ? GX_OK : GX_EINVAL;
    }
    gnutls_free(b64.data);
    gnutls_x509_crt_deinit(crt);
    return rc;
}
