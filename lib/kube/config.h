/* Where the API server is and how to authenticate: from a kubeconfig file
 * or from the in-cluster service account.
 *
 * Lookup order of fair_kconfig_load(): an explicit path (--kubeconfig),
 * then $KUBECONFIG (first entry of a ':' list), then the in-cluster
 * service account when $KUBERNETES_SERVICE_HOST is set, then
 * ~/.kube/config. Only https:// servers are accepted. Certificates and
 * keys are held in memory (they reach libcurl as blobs, never temp files).
 *
 * Bearer tokens read from a file (in-cluster, or a kubeconfig tokenFile)
 * are re-read when the file's mtime changes, and at least every
 * FAIR_KCONFIG_TOKEN_REFRESH_MS, so that rotated service-account tokens are
 * picked up. */
#ifndef FAIR_KUBE_CONFIG_H
#define FAIR_KUBE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"

#define FAIR_KCONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define FAIR_KCONFIG_TOKEN_REFRESH_MS 60000
#define FAIR_KCONFIG_MAX_FILE (1u << 20) /* kubeconfig, CA, cert, key, token */

/* Caller-owned; every pointer is owned by the struct. */
struct fair_kconfig {
    char *server; /* "https://host:port" without a trailing '/' */
    char *ca;     /* PEM bundle; NULL: the system's CAs */
    size_t ca_len;
    char *cert; /* client certificate, PEM; NULL if none */
    size_t cert_len;
    char *key; /* client key, PEM; NULL if none */
    size_t key_len;
    char *token;      /* bearer token (current value); NULL if none */
    char *token_file; /* where token comes from, re-read on rotation */
    struct timespec token_mtime;
    int64_t token_read_ms; /* monotonic ms of the last read */
    char *namespace_;      /* the context's (or pod's) namespace; "default" */
    bool insecure;         /* insecure-skip-tls-verify: true */
    char *source;          /* "kubeconfig /path (context x)" or "in-cluster": for messages */
};

void fair_kconfig_init(struct fair_kconfig *cfg);
void fair_kconfig_release(struct fair_kconfig *cfg);
/* Deep copy of src into dst (dst is initialised first). */
int fair_kconfig_copy(struct fair_kconfig *dst, const struct fair_kconfig *src,
                      struct fair_error *err);

/* Reads a kubeconfig file. context NULL: its current-context. Errors name
 * the file and the key, e.g.
 *   kubeconfig /x/config: contexts[0].context.cluster "foo" not found in clusters
 * Relative certificate-authority/client-certificate/client-key/tokenFile
 * paths are resolved against the file's directory, as kubectl does. */
int fair_kconfig_load_kubeconfig(const char *path, const char *context, struct fair_kconfig *cfg,
                                 struct fair_error *err);

/* The in-cluster configuration: token, ca.crt and namespace under sa_dir
 * (NULL: FAIR_KCONFIG_SA_DIR), server from $KUBERNETES_SERVICE_HOST and
 * $KUBERNETES_SERVICE_PORT. */
int fair_kconfig_load_incluster(const char *sa_dir, struct fair_kconfig *cfg,
                                struct fair_error *err);

/* The lookup order above. kubeconfig may be NULL. */
int fair_kconfig_load(const char *kubeconfig, struct fair_kconfig *cfg, struct fair_error *err);

/* Re-reads cfg->token_file if its mtime changed or the last read is older
 * than FAIR_KCONFIG_TOKEN_REFRESH_MS (mono_now_ms: a monotonic reading).
 * A failed re-read keeps the previous token and returns the error. No-op
 * without a token_file. */
int fair_kconfig_refresh_token(struct fair_kconfig *cfg, int64_t mono_now_ms,
                               struct fair_error *err);

/* Standard base64 (with or without padding, whitespace ignored) into a new
 * buffer (NUL-terminated for convenience). FAIR_EINVAL on bad input. */
int fair_base64_decode(const char *in, size_t len, char **out, size_t *out_len);

#endif
