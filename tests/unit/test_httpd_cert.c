/* Unit tests for lib/httpd/cert.h: the self-signed certificate (its names,
 * its fingerprint, its PEM), loading certificates and keys from PEM
 * (chains, mismatched, encrypted and malformed keys, size and chain
 * limits) and from files (errors name the file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "httpd/cert.h"

static const char *const names[] = {"localhost", "127.0.0.1", "::1",
                                    "fairshare-controller.fairshare-system.svc"};

static SSL_CTX *self_signed(struct fair_cert_info *ci)
{
    SSL_CTX *ctx = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_cert_self_signed(names, 4, &ctx, ci, &err), 0);
    assert_non_null(ctx);
    return ctx;
}

/* The PEM texts of ctx's certificate and key. */
static void pems(SSL_CTX *ctx, struct fair_buf *cert, struct fair_buf *key, const char *pass)
{
    fair_buf_init(cert, 0);
    fair_buf_init(key, 0);
    assert_int_equal(fair_cert_pem(ctx, cert), 0);
    BIO *b = BIO_new(BIO_s_mem());
    EVP_PKEY *k = SSL_CTX_get0_privatekey(ctx);
    assert_int_equal(PEM_write_bio_PrivateKey(b, k, pass ? EVP_aes_128_cbc() : NULL,
                                              (unsigned char *)pass, pass ? (int)strlen(pass) : 0,
                                              NULL, NULL),
                     1);
    char *data = NULL;
    long len = BIO_get_mem_data(b, &data);
    assert_int_equal(fair_buf_append(key, data, (size_t)len), 0);
    BIO_free(b);
}

static void test_self_signed(void **state)
{
    (void)state;
    struct fair_cert_info ci;
    SSL_CTX *ctx = self_signed(&ci);
    assert_true(ci.self_signed);
    assert_int_equal(strlen(ci.sha256), 95); /* 32 bytes "AB:" */
    assert_non_null(strstr(ci.subject, "CN=fairshare-controller"));
    assert_true(strncmp(ci.not_after, "20", 2) == 0 && strlen(ci.not_after) == 20);
    X509 *x = SSL_CTX_get0_certificate(ctx);
    assert_int_equal(X509_check_host(x, "localhost", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(x, "fairshare-controller.fairshare-system.svc", 0, 0, NULL),
                     1);
    assert_int_equal(X509_check_host(x, "example.com", 0, 0, NULL), 0);
    assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
    assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
    assert_int_equal(X509_check_ip_asc(x, "10.0.0.1", 0), 0);
    /* Its key is new each time. */
    struct fair_cert_info ci2;
    SSL_CTX *ctx2 = self_signed(&ci2);
    assert_string_not_equal(ci.sha256, ci2.sha256);
    SSL_CTX_free(ctx2);
    /* The PEM is that certificate, and it trusts itself. */
    struct fair_buf pem;
    fair_buf_init(&pem, 0);
    assert_int_equal(fair_cert_pem(ctx, &pem), 0);
    BIO *b = BIO_new_mem_buf(pem.data, (int)pem.len);
    X509 *y = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(y);
    assert_int_equal(X509_cmp(x, y), 0);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_add_cert(store, y);
    X509_STORE_CTX *vctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(vctx, store, y, NULL);
    X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(vctx), "localhost", 0);
    assert_int_equal(X509_verify_cert(vctx), 1);
    X509_STORE_CTX_free(vctx);
    X509_STORE_free(store);
    X509_free(y);
    fair_buf_release(&pem);
    SSL_CTX_free(ctx);
}

static void test_self_signed_bad_names(void **state)
{
    (void)state;
    SSL_CTX *ctx = NULL;
    struct fair_error err = {0};
    static const char *const bad[] = {"", "a,b", "a b", "x/y"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *one[] = {bad[i]};
        assert_int_equal(fair_cert_self_signed(one, 1, &ctx, NULL, &err), FAIR_EINVAL);
        assert_null(ctx);
    }
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *one[] = {longname};
    assert_int_equal(fair_cert_self_signed(one, 1, &ctx, NULL, &err), FAIR_EINVAL);
    const char *many[33];
    for (int i = 0; i < 33; i++)
        many[i] = "localhost";
    assert_int_equal(fair_cert_self_signed(many, 33, &ctx, NULL, &err), FAIR_EINVAL);
    assert_int_equal(fair_cert_self_signed(many, 0, &ctx, NULL, &err), FAIR_EINVAL);
    assert_null(ctx);
}

static void test_load_pem(void **state)
{
    (void)state;
    struct fair_cert_info ci, lci;
    SSL_CTX *src = self_signed(&ci);
    struct fair_buf cert, key;
    pems(src, &cert, &key, NULL);
    SSL_CTX *ctx = NULL;
    struct fair_error err = {0};
    assert_int_equal(
        fair_cert_load_pem("t", cert.data, cert.len, key.data, key.len, &ctx, &lci, &err), 0);
    assert_string_equal(lci.sha256, ci.sha256);
    assert_true(lci.self_signed);
    SSL_CTX_free(ctx);
    ctx = NULL;

    /* A chain: the leaf, then intermediates (here, two more certificates). */
    struct fair_buf chain;
    fair_buf_init(&chain, 0);
    for (int i = 0; i < 3; i++)
        fair_buf_append(&chain, cert.data, cert.len);
    assert_int_equal(
        fair_cert_load_pem("t", chain.data, chain.len, key.data, key.len, &ctx, NULL, &err), 0);
    SSL_CTX_free(ctx);
    ctx = NULL;
    /* ... but not of any length. */
    for (int i = 3; i < FAIR_CERT_MAX_CHAIN + 1; i++)
        fair_buf_append(&chain, cert.data, cert.len);
    assert_int_equal(
        fair_cert_load_pem("t", chain.data, chain.len, key.data, key.len, &ctx, NULL, &err),
        FAIR_ERANGE);
    assert_non_null(strstr(err.msg, "more than 16 certificates"));
    fair_buf_release(&chain);

    /* Another key. */
    struct fair_cert_info other;
    SSL_CTX *src2 = self_signed(&other);
    struct fair_buf cert2, key2;
    pems(src2, &cert2, &key2, NULL);
    assert_int_equal(
        fair_cert_load_pem("pair", cert.data, cert.len, key2.data, key2.len, &ctx, NULL, &err),
        FAIR_ETLS);
    assert_non_null(strstr(err.msg, "pair: the private key does not match the certificate"));
    /* An encrypted key: refused, never prompted for. */
    struct fair_buf cert3, key3;
    pems(src, &cert3, &key3, "secret");
    assert_non_null(strstr(fair_buf_str(&key3), "ENCRYPTED"));
    assert_int_equal(
        fair_cert_load_pem("enc", cert3.data, cert3.len, key3.data, key3.len, &ctx, NULL, &err),
        FAIR_ETLS);
    assert_non_null(strstr(err.msg, "passphrase"));
    /* Not PEM at all. */
    static const char junk[] = "hello, I am not a certificate\n";
    assert_int_equal(
        fair_cert_load_pem("junk", junk, sizeof junk - 1, key.data, key.len, &ctx, NULL, &err),
        FAIR_ETLS);
    assert_non_null(strstr(err.msg, "junk: no PEM certificate"));
    assert_int_equal(
        fair_cert_load_pem("junk", cert.data, cert.len, junk, sizeof junk - 1, &ctx, NULL, &err),
        FAIR_ETLS);
    /* Too large. */
    assert_int_equal(fair_cert_load_pem("big", cert.data, FAIR_CERT_MAX_FILE + 1, key.data, key.len,
                                        &ctx, NULL, &err),
                     FAIR_ERANGE);
    assert_null(ctx);
    fair_buf_release(&cert);
    fair_buf_release(&key);
    fair_buf_release(&cert2);
    fair_buf_release(&key2);
    fair_buf_release(&cert3);
    fair_buf_release(&key3);
    SSL_CTX_free(src);
    SSL_CTX_free(src2);
}

static void test_load_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/fair-cert-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cp[128], kp[128];
    snprintf(cp, sizeof cp, "%s/tls.crt", dir);
    snprintf(kp, sizeof kp, "%s/tls.key", dir);
    struct fair_cert_info ci, lci;
    SSL_CTX *src = self_signed(&ci);
    struct fair_buf cert, key;
    pems(src, &cert, &key, NULL);
    FILE *f = fopen(cp, "w");
    fwrite(cert.data, 1, cert.len, f);
    fclose(f);
    f = fopen(kp, "w");
    fwrite(key.data, 1, key.len, f);
    fclose(f);
    SSL_CTX *ctx = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_cert_load(cp, kp, &ctx, &lci, &err), 0);
    assert_string_equal(lci.sha256, ci.sha256);
    SSL_CTX_free(ctx);
    ctx = NULL;
    assert_int_not_equal(fair_cert_load("/nonexistent/tls.crt", kp, &ctx, NULL, &err), 0);
    assert_non_null(strstr(err.msg, "/nonexistent/tls.crt"));
    assert_int_not_equal(fair_cert_load(cp, cp, &ctx, NULL, &err), 0);
    assert_non_null(strstr(err.msg, "tls.crt"));
    assert_null(ctx);
    unlink(cp);
    unlink(kp);
    rmdir(dir);
    fair_buf_release(&cert);
    fair_buf_release(&key);
    SSL_CTX_free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_signed),
        cmocka_unit_test(test_self_signed_bad_names),
        cmocka_unit_test(test_load_pem),
        cmocka_unit_test(test_load_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
