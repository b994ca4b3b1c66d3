/* Unit tests for lib/httpd/ca.h, the webhook's small CA: the certificates
 * it issues (validity from the given time, the names, the CA's
 * constraints, the chain verifies), the renewal time, the checks that
 * decide whether a stored certificate is still usable, and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <string.h>

#include "httpd/ca.h"
#include "httpd/cert.h"

static const char *const names[] = {"fairshare-webhook.fairshare-system.svc", "127.0.0.1"};

static X509 *pem_x509(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(c);
    return c;
}

static void test_issue(void **state)
{
    (void)state;
    struct fair_ca_pems p;
    struct fair_error err = {0};
    const int64_t now = 1800000000; /* 2027-01-15 */
    assert_int_equal(fair_ca_issue(names, 2, now, 3600, &p, &err), 0);
    int64_t nb = 0, na = 0;
    assert_int_equal(fair_ca_validity(p.cert, strlen(p.cert), &nb, &na, &err), 0);
    assert_int_equal(nb, now - FAIR_CA_BACKDATE_S);
    assert_int_equal(na, now + 3600);
    assert_int_equal(fair_ca_validity(p.ca_cert, strlen(p.ca_cert), &nb, &na, &err), 0);
    assert_int_equal(na, now + 3600);
    /* two thirds of [now - 300, now + 3600] */
    assert_int_equal(fair_ca_renew_at(nb, na), nb + 3900 / 3 * 2);
    assert_int_equal(fair_ca_renew_at(10, 10), 10);

    /* The chain verifies at `now` for a server, and the CA is a CA. */
    X509 *ca = pem_x509(p.ca_cert), *leaf = pem_x509(p.cert);
    assert_int_equal(X509_check_ca(ca), 1);
    assert_int_equal(X509_check_ca(leaf), 0);
    X509_STORE *st = X509_STORE_new();
    X509_STORE_add_cert(st, ca);
    X509_STORE_CTX *vc = X509_STORE_CTX_new();
    X509_STORE_CTX_init(vc, st, leaf, NULL);
    X509_STORE_CTX_set_purpose(vc, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(vc), (time_t)now);
    assert_int_equal(X509_verify_cert(vc), 1);
    X509_STORE_CTX_free(vc);
    X509_STORE_free(st);
    X509_free(ca);
    X509_free(leaf);

    /* covers: every name and this CA; not another CA, not another name. */
    assert_true(fair_ca_covers(p.cert, strlen(p.cert), p.ca_cert, strlen(p.ca_cert), names, 2));
    static const char *const other[] = {"other.svc"};
    assert_false(fair_ca_covers(p.cert, strlen(p.cert), p.ca_cert, strlen(p.ca_cert), other, 1));
    struct fair_ca_pems q;
    assert_int_equal(fair_ca_issue(names, 2, now, 3600, &q, &err), 0);
    assert_false(fair_ca_covers(p.cert, strlen(p.cert), q.ca_cert, strlen(q.ca_cert), names, 2));
    assert_false(fair_ca_covers("junk", 4, p.ca_cert, strlen(p.ca_cert), names, 2));
    assert_false(fair_ca_covers(NULL, 0, NULL, 0, names, 2));

    /* The key and the certificate make a server context. */
    SSL_CTX *ctx = NULL;
    assert_int_equal(
        fair_cert_load_pem("t", p.cert, strlen(p.cert), p.key, strlen(p.key), &ctx, NULL, &err), 0);
    SSL_CTX_free(ctx);
    fair_ca_pems_release(&q);
    fair_ca_pems_release(&p);
    assert_null(p.cert);
    fair_ca_pems_release(&p); /* twice is fine */
}

static void test_bad_input(void **state)
{
    (void)state;
    struct fair_ca_pems p;
    struct fair_error err = {0};
    static const char *const bad[] = {"a b"};
    assert_int_equal(fair_ca_issue(bad, 1, 1800000000, 3600, &p, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "bad name"));
    assert_null(p.cert);
    assert_int_equal(fair_ca_issue(names, 0, 1800000000, 3600, &p, &err), FAIR_EINVAL);
    assert_int_equal(fair_ca_issue(names, 2, 1800000000, 59, &p, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "shorter than 60"));
    int64_t nb, na;
    assert_int_equal(fair_ca_validity("no pem", 6, &nb, &na, &err), FAIR_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
