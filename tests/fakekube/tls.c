/* fakekube's TLS set-up: a test CA and a server certificate for 127.0.0.1
 * and localhost (EC P-256), made with the OpenSSL API at first start and
 * kept in the state dir so that a restart keeps the CA; and the kubeconfig
 * that points clients at the server with that CA and the bearer token. */
#include "fakekube.h"

#include "base/log.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int path_in(const struct fk_server *s, const char *name, char *out, size_t n)
{
    int w = snprintf(out, n, "%s/%s", s->state_dir, name);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

static EVP_PKEY *new_key(void)
{
    return EVP_EC_gen("P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return -1;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, int ca)
{
    X509 *cert = X509_new();
    if (!cert)
        return NULL;
    unsigned char serial[16];
    RAND_bytes(serial, sizeof(serial));
    serial[0] &= 0x7f;
    BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
    X509_set_version(cert, 2);
    if (bn) {
        BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
        BN_free(bn);
    }
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 10L * 365 * 86400);
    X509_set_pubkey(cert, key);
    X509_NAME *name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
    X509 *iss = issuer ? issuer : cert;
    int rc = 0;
    if (ca) {
        rc |= add_ext(cert, iss, NID_basic_constraints, "critical,CA:TRUE");
        rc |= add_ext(cert, iss, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
        rc |= add_ext(cert, iss, NID_subject_key_identifier, "hash");
    } else {
        rc |= add_ext(cert, iss, NID_basic_constraints, "critical,CA:FALSE");
        rc |= add_ext(cert, iss, NID_key_usage, "critical,digitalSignature,keyEncipherment");
        rc |= add_ext(cert, iss, NID_ext_key_usage, "serverAuth");
        rc |= add_ext(cert, iss, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
        rc |= add_ext(cert, iss, NID_authority_key_identifier, "keyid");
    }
    if (rc || !X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256())) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}

static int write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    if (key)
        chmod(path, 0600);
    int ok =
        cert ? PEM_write_X509(f, cert) : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    if (fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static X509 *read_cert(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    X509 *c = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    return c;
}

static EVP_PKEY *read_key(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    return k;
}

int fk_tls_setup(struct fk_server *s)
{
    char ca_crt[600], ca_key[600], srv_crt[600], srv_key[600];
    X509 *ca = NULL, *cert = NULL;
    EVP_PKEY *cakey = NULL, *key = NULL;
    int rc = -1;
    if (path_in(s, "ca.crt", ca_crt, sizeof(ca_crt)) ||
        path_in(s, "ca.key", ca_key, sizeof(ca_key)) ||
        path_in(s, "server.crt", srv_crt, sizeof(srv_crt)) ||
        path_in(s, "server.key", srv_key, sizeof(srv_key)))
        goto out;
    ca = read_cert(ca_crt);
    cakey = read_key(ca_key);
    cert = read_cert(srv_crt);
    key = read_key(srv_key);
    if (!ca || !cakey || !cert || !key) {
        X509_free(ca);
        X509_free(cert);
        EVP_PKEY_free(cakey);
        EVP_PKEY_free(key);
        ca = cert = NULL;
        cakey = key = NULL;
        cakey = new_key();
        key = new_key();
        if (!cakey || !key)
            goto out;
        ca = make_cert(cakey, "fakekube-ca", NULL, NULL, 1);
        cert = ca ? make_cert(key, "fakekube-apiserver", ca, cakey, 0) : NULL;
        if (!cert)
            goto out;
        if (write_pem(ca_key, NULL, cakey) || write_pem(ca_crt, ca, NULL) ||
            write_pem(srv_key, NULL, key) || write_pem(srv_crt, cert, NULL)) {
            FAIR_ERROR("fakekube", "msg=\"cannot write certificates\" dir=%s", s->state_dir);
            goto out;
        }
        FAIR_INFO("fakekube", "msg=\"made test CA and server certificate\" dir=%s", s->state_dir);
    }
    s->ssl = SSL_CTX_new(TLS_server_method());
    if (!s->ssl)
        goto out;
    SSL_CTX_set_min_proto_version(s->ssl, TLS1_2_VERSION);
    SSL_CTX_set_options(s->ssl, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate(s->ssl, cert) != 1 || SSL_CTX_use_PrivateKey(s->ssl, key) != 1 ||
        SSL_CTX_check_private_key(s->ssl) != 1) {
        FAIR_ERROR("fakekube", "msg=\"bad server certificate or key\" dir=%s", s->state_dir);
        goto out;
    }
    rc = 0;
out:
    X509_free(ca);
    X509_free(cert);
    EVP_PKEY_free(cakey);
    EVP_PKEY_free(key);
    return rc;
}

int fk_write_kubeconfig(struct fk_server *s)
{
    char ca_crt[600], path[600], tmp[600];
    unsigned char pem[16384];
    char b64[4 * sizeof(pem) / 3 + 8];
    int rc = -1;
    FILE *f = NULL;
    if (path_in(s, "ca.crt", ca_crt, sizeof(ca_crt)) ||
        path_in(s, "kubeconfig", path, sizeof(path)) ||
        path_in(s, "kubeconfig.tmp", tmp, sizeof(tmp)))
        goto out;
    f = fopen(ca_crt, "r");
    if (!f)
        goto out;
    size_t n = fread(pem, 1, sizeof(pem), f);
    fclose(f);
    f = NULL;
    if (n == 0 || n == sizeof(pem))
        goto out;
    EVP_EncodeBlock((unsigned char *)b64, pem, (int)n);
    f = fopen(tmp, "w");
    if (!f)
        goto out;
    chmod(tmp, 0600);
    fprintf(f,
            "apiVersion: v1\n"
            "kind: Config\n"
            "clusters:\n"
            "- name: fakekube\n"
            "  cluster:\n"
            "    server: https://127.0.0.1:%d\n"
            "    certificate-authority-data: %s\n"
            "users:\n"
            "- name: fakekube-admin\n"
            "  user:\n"
            "    token: %s\n"
            "contexts:\n"
            "- name: fakekube\n"
            "  context:\n"
            "    cluster: fakekube\n"
            "    user: fakekube-admin\n"
            "    namespace: default\n"
            "current-context: fakekube\n",
            s->port, b64, s->token);
    if (fclose(f) != 0) {
        f = NULL;
        goto out;
    }
    f = NULL;
    if (rename(tmp, path) != 0)
        goto out;
    rc = 0;
out:
    if (f)
        fclose(f);
    return rc;
}
