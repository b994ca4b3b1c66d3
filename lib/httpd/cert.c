/* Serving certificates for lib/httpd (see cert.h): PEM files read whole
 * with a cap and parsed from memory, or a self-signed EC certificate made
 * with the OpenSSL API. */
#include "httpd/cert.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/yaml.h"

#define MAX_NAMES 32

const char *fair_ssl_reason(char *buf, size_t n)
{
    unsigned long e = ERR_peek_last_error();
    if (!e)
        snprintf(buf, n, "unknown OpenSSL error");
    else
        ERR_error_string_n(e, buf, n);
    ERR_clear_error();
    return buf;
}

/* Nothing may prompt for a passphrase: an encrypted key fails to load. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static void fill_info(X509 *cert, bool self_signed, struct fair_cert_info *info)
{
    if (!info)
        return;
    memset(info, 0, sizeof *info);
    info->self_signed = self_signed;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (X509_digest(cert, EVP_sha256(), md, &len) == 1) {
        size_t o = 0;
        for (unsigned int i = 0; i < len && o + 3 < sizeof info->sha256; i++)
            o += (size_t)snprintf(info->sha256 + o, sizeof info->sha256 - o, "%s%02X", i ? ":" : "",
                                  md[i]);
    }
    X509_NAME_oneline(X509_get_subject_name(cert), info->subject, (int)sizeof info->subject);
    struct tm tm;
    if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1)
        strftime(info->not_after, sizeof info->not_after, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static SSL_CTX *new_server_ctx(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_default_passwd_cb(ctx, no_password);
    return ctx;
}

int fair_cert_load_pem(const char *name, const char *cert_pem, size_t cert_len, const char *key_pem,
                       size_t key_len, struct ssl_ctx_st **out, struct fair_cert_info *info,
                       struct fair_error *err)
{
    char why[256];
    int rc = 0;
    SSL_CTX *ctx = NULL;
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    BIO *cb = NULL, *kb = NULL;
    *out = NULL;
    if (cert_len > FAIR_CERT_MAX_FILE || key_len > FAIR_CERT_MAX_FILE)
        return fair_error_set(err, FAIR_ERANGE, "%s: larger than %u bytes", name,
                              FAIR_CERT_MAX_FILE);
    ERR_clear_error();
    cb = BIO_new_mem_buf(cert_pem, (int)cert_len);
    kb = BIO_new_mem_buf(key_pem, (int)key_len);
    ctx = new_server_ctx();
    if (!cb || !kb || !ctx) {
        rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
        goto out;
    }
    leaf = PEM_read_bio_X509(cb, NULL, no_password, NULL);
    if (!leaf) {
        rc = fair_error_set(err, FAIR_ETLS, "%s: no PEM certificate (%s)", name,
                            fair_ssl_reason(why, sizeof why));
        goto out;
    }
    if (SSL_CTX_use_certificate(ctx, leaf) != 1) {
        rc = fair_error_set(err, FAIR_ETLS, "%s: unusable certificate (%s)", name,
                            fair_ssl_reason(why, sizeof why));
        goto out;
    }
    /* Intermediates, in order, until the text ends. */
    for (int i = 0;; i++) {
        X509 *ca = PEM_read_bio_X509(cb, NULL, no_password, NULL);
        if (!ca)
            break;
        if (i + 1 >= FAIR_CERT_MAX_CHAIN) {
            X509_free(ca);
            rc = fair_error_set(err, FAIR_ERANGE, "%s: more than %d certificates", name,
                                FAIR_CERT_MAX_CHAIN);
            goto out;
        }
        if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
            X509_free(ca);
            rc = fair_error_set(err, FAIR_ETLS, "%s: bad intermediate certificate %d (%s)", name,
                                i + 1, fair_ssl_reason(why, sizeof why));
            goto out;
        }
    }
    ERR_clear_error(); /* the end of the text reads as "no start line" */
    key = PEM_read_bio_PrivateKey(kb, NULL, no_password, NULL);
    if (!key) {
        rc = fair_error_set(err, FAIR_ETLS,
                            "%s: no unencrypted PEM private key (%s); keys with a passphrase "
                            "are not supported",
                            name, fair_ssl_reason(why, sizeof why));
        goto out;
    }
    if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        rc = fair_error_set(err, FAIR_ETLS, "%s: the private key does not match the certificate",
                            name);
        ERR_clear_error();
        goto out;
    }
    /* Self-signed: its own issuer, signed by its own key (X509_check_issued
     * would also want keyCertSign, which a server certificate lacks). */
    bool self = X509_NAME_cmp(X509_get_subject_name(leaf), X509_get_issuer_name(leaf)) == 0 &&
                X509_verify(leaf, X509_get0_pubkey(leaf)) == 1;
    ERR_clear_error();
    fill_info(leaf, self, info);
    *out = ctx;
    ctx = NULL;
out:
    BIO_free(cb);
    BIO_free(kb);
    X509_free(leaf);
    EVP_PKEY_free(key);
    SSL_CTX_free(ctx);
    return rc;
}

int fair_cert_load(const char *cert_file, const char *key_file, struct ssl_ctx_st **out,
                   struct fair_cert_info *info, struct fair_error *err)
{
    char *cert = NULL, *key = NULL;
    size_t clen = 0, klen = 0;
    char name[600];
    int rc;
    *out = NULL;
    if ((rc = fair_read_file(cert_file, FAIR_CERT_MAX_FILE, &cert, &clen, err)) ||
        (rc = fair_read_file(key_file, FAIR_CERT_MAX_FILE, &key, &klen, err)))
        goto out;
    snprintf(name, sizeof name, "certificate %s with key %s", cert_file, key_file);
    rc = fair_cert_load_pem(name, cert, clen, key, klen, out, info, err);
out:
    if (key)
        OPENSSL_cleanse(key, klen);
    fair_free(cert);
    fair_free(key);
    return rc;
}

int fair_cert_add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (!ext)
        return 0;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 1 : 0;
}

bool fair_cert_is_ip(const char *s)
{
    unsigned char ip[16];
    return inet_pton(AF_INET, s, ip) == 1 || inet_pton(AF_INET6, s, ip) == 1;
}

int fair_cert_san(const char *const *names, size_t n, bool wildcards, struct fair_buf *san,
                  const char **bad)
{
    for (size_t i = 0; i < n; i++) {
        const char *s = names[i] ? names[i] : "";
        size_t len = strlen(s);
        bool is_ip = fair_cert_is_ip(s);
        bool ok = is_ip || (len > 0 && len <= 253 &&
                            strspn(s, wildcards ? "abcdefghijklmnopqrstuvwxyz"
                                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                  "0123456789-.*"
                                                : "abcdefghijklmnopqrstuvwxyz"
                                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                  "0123456789-.") == len);
        if (!ok) {
            *bad = s;
            return FAIR_EINVAL;
        }
        if (fair_buf_appendf(san, "%s%s:%s", i ? "," : "", is_ip ? "IP" : "DNS", s))
            return FAIR_ENOMEM;
    }
    return 0;
}

X509 *fair_cert_new_x509(EVP_PKEY *key, const char *cn, int64_t not_before_s, int64_t not_after_s)
{
    X509 *c = X509_new();
    unsigned char serial[16];
    if (!c || RAND_bytes(serial, sizeof serial) != 1)
        goto fail;
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c)) != NULL;
    BN_free(bn);
    ok = ok && X509_set_version(c, 2) &&
         ASN1_TIME_set(X509_getm_notBefore(c), (time_t)not_before_s) &&
         ASN1_TIME_set(X509_getm_notAfter(c), (time_t)not_after_s) && X509_set_pubkey(c, key) &&
         X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                                    (const unsigned char *)cn, -1, -1, 0);
    if (ok)
        return c;
fail:
    X509_free(c);
    return NULL;
}

int fair_cert_self_signed(const char *const *names, size_t n, struct ssl_ctx_st **out,
                          struct fair_cert_info *info, struct fair_error *err)
{
    char why[256];
    int rc = 0;
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    SSL_CTX *ctx = NULL;
    struct fair_buf san;
    fair_buf_init(&san, 16384);
    *out = NULL;
    if (n == 0 || n > MAX_NAMES)
        return fair_error_set(err, FAIR_EINVAL, "self-signed certificate: 1 to %d names needed",
                              MAX_NAMES);
    const char *bad = NULL;
    rc = fair_cert_san(names, n, true, &san, &bad);
    if (rc) {
        rc = rc == FAIR_EINVAL ? fair_error_set(err, FAIR_EINVAL,
                                                "self-signed certificate: bad name \"%.64s\"", bad)
                               : fair_error_set(err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    ERR_clear_error();
    key = EVP_EC_gen("P-256");
    ctx = new_server_ctx();
    int64_t now = (int64_t)time(NULL);
    cert = key ? fair_cert_new_x509(key, "fairshare-controller", now - 3600,
                                    now + (int64_t)FAIR_CERT_SELF_SIGNED_DAYS * 86400)
               : NULL;
    if (!key || !cert || !ctx) {
        rc = fair_error_set(err, FAIR_ENOMEM, "self-signed certificate: %s",
                            fair_ssl_reason(why, sizeof why));
        goto out;
    }
    int ok = X509_set_issuer_name(cert, X509_get_subject_name(cert)) &&
             fair_cert_add_ext(cert, cert, NID_basic_constraints, "critical,CA:FALSE") &&
             fair_cert_add_ext(cert, cert, NID_key_usage, "critical,digitalSignature") &&
             fair_cert_add_ext(cert, cert, NID_ext_key_usage, "serverAuth") &&
             fair_cert_add_ext(cert, cert, NID_subject_key_identifier, "hash") &&
             fair_cert_add_ext(cert, cert, NID_subject_alt_name, fair_buf_str(&san)) &&
             X509_sign(cert, key, EVP_sha256()) > 0;
    if (!ok || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
        rc = fair_error_set(err, FAIR_ETLS, "self-signed certificate: %s",
                            fair_ssl_reason(why, sizeof why));
        goto out;
    }
    fill_info(cert, true, info);
    *out = ctx;
    ctx = NULL;
out:
    fair_buf_release(&san);
    EVP_PKEY_free(key);
    X509_free(cert);
    SSL_CTX_free(ctx);
    return rc;
}

int fair_cert_pem(struct ssl_ctx_st *ctx, struct fair_buf *out)
{
    X509 *cert = ctx ? SSL_CTX_get0_certificate(ctx) : NULL;
    if (!cert)
        return FAIR_EINVAL;
    BIO *b = BIO_new(BIO_s_mem());
    if (!b)
        return FAIR_ENOMEM;
    int rc = FAIR_ENOMEM;
    char *data = NULL;
    if (PEM_write_bio_X509(b, cert) == 1) {
        long len = BIO_get_mem_data(b, &data);
        if (len > 0 && fair_buf_append(out, data, (size_t)len) == 0)
            rc = 0;
    }
    BIO_free(b);
    return rc;
}
