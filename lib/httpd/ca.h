/* A small certificate authority for the admission webhook's serving
 * certificate: a new self-signed CA and a serving certificate it signs,
 * as PEM text that the controller keeps in a Secret and whose CA goes into
 * the MutatingWebhookConfiguration's caBundle. Pure apart from OpenSSL's
 * random numbers: the time is a parameter, so that tests drive rotation
 * with a manual clock.
 *
 * Keys are EC P-256; both certificates are valid from now - 5 minutes (a
 * little clock skew between nodes) for validity_s seconds, and are
 * renewed together (fair_ca_renew_at). */
#ifndef FAIR_HTTPD_CA_H
#define FAIR_HTTPD_CA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define FAIR_CA_MAX_NAMES 32
#define FAIR_CA_MIN_VALIDITY_S 60 /* anything shorter is refused */
#define FAIR_CA_BACKDATE_S 300

/* PEM texts, each new and NUL-terminated (NULL when not made). */
struct fair_ca_pems {
    char *ca_cert;
    char *ca_key;
    char *cert; /* the serving certificate */
    char *key;  /* its key */
};
/* Frees the texts (keys wiped first) and sets them NULL. */
void fair_ca_pems_release(struct fair_ca_pems *p);

/* A new CA (CN fairshare-webhook-ca) and a serving certificate (CN the
 * first name) signed by it for names: IPv4 and IPv6 literals become IP
 * names, the rest DNS names (1 to FAIR_CA_MAX_NAMES, each at most 253
 * characters). now_s: seconds since the epoch. out is filled (release it). */
int fair_ca_issue(const char *const *names, size_t n, int64_t now_s, int64_t validity_s,
                  struct fair_ca_pems *out, struct fair_error *err);

/* notBefore and notAfter of the first certificate in pem (seconds since
 * the epoch). FAIR_EINVAL when pem holds no certificate. */
int fair_ca_validity(const char *pem, size_t len, int64_t *not_before, int64_t *not_after,
                     struct fair_error *err);

/* When a certificate valid from not_before to not_after is renewed: at
 * two thirds of its life, so that a third of it is left for retries and
 * for the API servers to see the new caBundle. */
int64_t fair_ca_renew_at(int64_t not_before, int64_t not_after);

/* Whether the first certificate in cert_pem names every one of names and
 * was signed by the first certificate in ca_pem. */
bool fair_ca_covers(const char *cert_pem, size_t cert_len, const char *ca_pem, size_t ca_len,
                    const char *const *names, size_t n);

#endif
