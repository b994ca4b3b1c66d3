/* The serving certificate of lib/httpd's HTTPS listeners: an OpenSSL
 * server context made from PEM files (a certificate chain and its key,
 * read whole with a size cap), or from a self-signed certificate made in
 * memory at start, for tests, the demo and clusters that have no
 * certificate of their own yet.
 *
 * Ownership: every *out is a new SSL_CTX (free it with SSL_CTX_free();
 * lib/httpd takes its own reference). Nothing here touches the event loop.
 *
 * Limits: each file at most FAIR_CERT_MAX_FILE bytes, at most
 * FAIR_CERT_MAX_CHAIN certificates; keys protected by a passphrase are
 * refused (nothing may prompt). Contexts accept TLS 1.2 and later only. */
#ifndef FAIR_HTTPD_CERT_H
#define FAIR_HTTPD_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct ssl_ctx_st;
struct x509_st;
struct evp_pkey_st;
struct fair_buf;

#define FAIR_CERT_MAX_FILE (1u << 20)
#define FAIR_CERT_MAX_CHAIN 16
/* Validity of a self-signed certificate: it is made again at each start. */
#define FAIR_CERT_SELF_SIGNED_DAYS 365

/* What a context serves, for the log and for clients to compare with. */
struct fair_cert_info {
    char sha256[96];    /* SHA-256 of the leaf's DER, "AB:CD:...", as `openssl x509
                           -fingerprint -sha256` prints it */
    char subject[256];  /* the leaf's subject, "/CN=..." */
    char not_after[32]; /* "2027-01-31T12:00:00Z" */
    bool self_signed;
};

/* The last OpenSSL error in words, in buf (the error queue is cleared). */
const char *fair_ssl_reason(char *buf, size_t n);

/* Building certificates (here and in ca.c). */
/* Whether s is an IPv4 or IPv6 literal. */
bool fair_cert_is_ip(const char *s);
/* The subjectAltName value for names ("DNS:a,IP:10.0.0.1"), appended to
 * san: each an IP literal or a DNS name of at most 253 characters of
 * letters, digits, '-' and '.' (and '*' when wildcards). Returns 0,
 * FAIR_ENOMEM, or FAIR_EINVAL with *bad the name refused. */
int fair_cert_san(const char *const *names, size_t n, bool wildcards, struct fair_buf *san,
                  const char **bad);
/* A version 3 certificate for key with a random serial, subject CN cn,
 * valid [not_before_s, not_after_s) (Unix seconds), not signed; NULL on
 * failure. */
struct x509_st *fair_cert_new_x509(struct evp_pkey_st *key, const char *cn, int64_t not_before_s,
                                   int64_t not_after_s);
/* Adds extension nid (OpenSSL's config syntax, e.g. "critical,CA:FALSE")
 * to cert, issued by issuer. Returns 1 on success, 0 on failure. */
int fair_cert_add_ext(struct x509_st *cert, struct x509_st *issuer, int nid, const char *value);

/* A server context from cert_file (a PEM certificate, optionally followed
 * by its intermediates) and key_file (the matching PEM private key). Errors
 * name the file and what is wrong with it. info may be NULL. */
int fair_cert_load(const char *cert_file, const char *key_file, struct ssl_ctx_st **out,
                   struct fair_cert_info *info, struct fair_error *err);

/* The same from PEM text in memory (name is used in messages). */
int fair_cert_load_pem(const char *name, const char *cert_pem, size_t cert_len, const char *key_pem,
                       size_t key_len, struct ssl_ctx_st **out, struct fair_cert_info *info,
                       struct fair_error *err);

/* A context with a new EC P-256 key and a self-signed certificate (CN
 * fairshare-controller, valid FAIR_CERT_SELF_SIGNED_DAYS) for the given
 * subject alternative names: IPv4 and IPv6 literals become IP names, the
 * rest DNS names (at most 32 names, each at most 253 characters). The key
 * exists only in memory. */
int fair_cert_self_signed(const char *const *names, size_t n, struct ssl_ctx_st **out,
                          struct fair_cert_info *info, struct fair_error *err);

/* The PEM text of the leaf certificate ctx serves, appended to out (for
 * tests and for writing the self-signed certificate where clients can read
 * it). Returns 0 or FAIR_ENOMEM / FAIR_EINVAL. */
struct fair_buf;
int fair_cert_pem(struct ssl_ctx_st *ctx, struct fair_buf *out);

#endif
