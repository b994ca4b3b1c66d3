/* The webhook's certificate authority (see ca.h): a CA and a serving
 * certificate made in memory, written and read as PEM. */
#include "httpd/ca.h"
#include "httpd/cert.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"

static void wipe_free(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        fair_free(s);
    }
}

void fair_ca_pems_release(struct fair_ca_pems *p)
{
    fair_free(p->ca_cert);
    wipe_free(p->ca_key);
    fair_free(p->cert);
    wipe_free(p->key);
    memset(p, 0, sizeof *p);
}

static char *pem_of(X509 *cert, EVP_PKEY *key)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL, *data = NULL;
    if (!b)
        return NULL;
    int ok = cert ? PEM_write_bio_X509(b, cert)
                  : PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
    long len = ok == 1 ? BIO_get_mem_data(b, &data) : 0;
    if (len > 0 && (out = fair_malloc((size_t)len + 1))) {
        memcpy(out, data, (size_t)len);
        out[len] = '\0';
    }
    if (len > 0)
        OPENSSL_cleanse(data, (size_t)len);
    BIO_free(b);
    return out;
}

int fair_ca_issue(const char *const *names, size_t n, int64_t now_s, int64_t validity_s,
                  struct fair_ca_pems *out, struct fair_error *err)
{
    char why[256];
    int rc = 0;
    EVP_PKEY *ca_key = NULL, *key = NULL;
    X509 *ca = NULL, *leaf = NULL;
    struct fair_buf san;
    fair_buf_init(&san, 16384);
    memset(out, 0, sizeof *out);
    if (n == 0 || n > FAIR_CA_MAX_NAMES)
        return fair_error_set(err, FAIR_EINVAL, "webhook certificate: 1 to %d names needed",
                              FAIR_CA_MAX_NAMES);
    if (validity_s < FAIR_CA_MIN_VALIDITY_S)
        return fair_error_set(err, FAIR_EINVAL,
                              "webhook certificate: validity %lld s is shorter than %d s",
                              (long long)validity_s, FAIR_CA_MIN_VALIDITY_S);
    const char *bad = NULL;
    rc = fair_cert_san(names, n, false, &san, &bad);
    if (rc) {
        rc = rc == FAIR_EINVAL
                 ? fair_error_set(err, FAIR_EINVAL, "webhook certificate: bad name \"%.64s\"", bad)
                 : fair_error_set(err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    int64_t nb = now_s - FAIR_CA_BACKDATE_S, na = now_s + validity_s;
    ERR_clear_error();
    ca_key = EVP_EC_gen("P-256");
    key = EVP_EC_gen("P-256");
    ca = ca_key ? fair_cert_new_x509(ca_key, "fairshare-webhook-ca", nb, na) : NULL;
    leaf = key ? fair_cert_new_x509(key, names[0], nb, na) : NULL;
    int ok = ca && leaf && X509_set_issuer_name(ca, X509_get_subject_name(ca)) &&
             fair_cert_add_ext(ca, ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
             fair_cert_add_ext(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign") &&
             fair_cert_add_ext(ca, ca, NID_subject_key_identifier, "hash") &&
             X509_sign(ca, ca_key, EVP_sha256()) > 0 &&
             X509_set_issuer_name(leaf, X509_get_subject_name(ca)) &&
             fair_cert_add_ext(leaf, ca, NID_basic_constraints, "critical,CA:FALSE") &&
             fair_cert_add_ext(leaf, ca, NID_key_usage, "critical,digitalSignature") &&
             fair_cert_add_ext(leaf, ca, NID_ext_key_usage, "serverAuth") &&
             fair_cert_add_ext(leaf, ca, NID_authority_key_identifier, "keyid:always") &&
             fair_cert_add_ext(leaf, ca, NID_subject_alt_name, fair_buf_str(&san)) &&
             X509_sign(leaf, ca_key, EVP_sha256()) > 0;
    if (!ok) {
        rc = fair_error_set(err, FAIR_ETLS, "webhook certificate: %s",
                            fair_ssl_reason(why, sizeof why));
        goto out;
    }
    out->ca_cert = pem_of(ca, NULL);
    out->ca_key = pem_of(NULL, ca_key);
    out->cert = pem_of(leaf, NULL);
    out->key = pem_of(NULL, key);
    if (!out->ca_cert || !out->ca_key || !out->cert || !out->key) {
        fair_ca_pems_release(out);
        rc = fair_error_set(err, FAIR_ENOMEM, "webhook certificate: out of memory");
    }
out:
    fair_buf_release(&san);
    EVP_PKEY_free(ca_key);
    EVP_PKEY_free(key);
    X509_free(ca);
    X509_free(leaf);
    return rc;
}

static X509 *read_cert(const char *pem, size_t len)
{
    if (!pem || len == 0 || len > (1u << 20))
        return NULL;
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    X509 *c = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    ERR_clear_error();
    return c;
}

static int64_t asn1_s(const ASN1_TIME *t)
{
    struct tm tm;
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

int fair_ca_validity(const char *pem, size_t len, int64_t *not_before, int64_t *not_after,
                     struct fair_error *err)
{
    X509 *c = read_cert(pem, len);
    if (!c)
        return fair_error_set(err, FAIR_EINVAL, "no PEM certificate");
    *not_before = asn1_s(X509_get0_notBefore(c));
    *not_after = asn1_s(X509_get0_notAfter(c));
    X509_free(c);
    return 0;
}

int64_t fair_ca_renew_at(int64_t not_before, int64_t not_after)
{
    if (not_after <= not_before)
        return not_before;
    return not_before + (not_after - not_before) / 3 * 2;
}

bool fair_ca_covers(const char *cert_pem, size_t cert_len, const char *ca_pem, size_t ca_len,
                    const char *const *names, size_t n)
{
    X509 *c = read_cert(cert_pem, cert_len), *ca = read_cert(ca_pem, ca_len);
    bool ok = c && ca;
    EVP_PKEY *pub = ok ? X509_get0_pubkey(ca) : NULL;
    ok = ok && pub && X509_verify(c, pub) == 1;
    for (size_t i = 0; ok && i < n; i++)
        ok = fair_cert_is_ip(names[i])
                 ? X509_check_ip_asc(c, names[i], 0) == 1
                 : X509_check_host(c, names[i], strlen(names[i]), 0, NULL) == 1;
    X509_free(c);
    X509_free(ca);
    ERR_clear_error();
    return ok;
}
