/* The admission webhook's certificate, managed by the controller: a CA
 * and a serving certificate (lib/httpd/ca.h) kept in a Secret of the
 * controller's namespace, so that every replica serves the same one and a
 * restart keeps it; the CA is written into the MutatingWebhookConfiguration's
 * caBundle, and both are renewed at two thirds of their life.
 *
 * Design note: one check, run at start and then every check_interval_ms
 * (sooner when the renewal falls due, 10 s after a failure). Steps run
 * one after the other as asynchronous requests on the loop:
 *
 *   GET secret --404---------------------> issue, POST secret --409--> start over (once)
 *              --200, unusable or due----> issue, PUT secret (resourceVersion) --409--> start over
 *              --200, usable-------------> (keep)
 *   then: serve it (on_cert) when it differs from what is served;
 *   GET configuration --200, a caBundle differs--> PUT configuration --409--> next check
 *                     --404--> warned once per change (nothing to patch)
 *
 * "Usable": the four keys (ca.crt, ca.key, tls.crt, tls.key) decode, the
 * serving certificate covers every name and was signed by ca.crt, and the
 * renewal time (fair_ca_renew_at) has not come. Replicas race only
 * through resourceVersion preconditions: the loser reads the winner's
 * Secret. After a renewal the caBundle holds the new CA and, while it is
 * still valid, the previous one (ca-prev.crt), so that an API server that
 * has not seen the new bundle yet still trusts a replica that serves the
 * old certificate, and the reverse holds once it has.
 *
 * Everything runs on the loop thread. */
#ifndef FAIR_CTL_WEBHOOKCERT_H
#define FAIR_CTL_WEBHOOKCERT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"

struct event_base;
struct fair_kclient;
struct ssl_ctx_st;
struct fair_ctl_webhookcert;

#define FAIR_WEBHOOKCERT_MAX_NAMES 32

struct fair_ctl_webhookcert_options {
    struct fair_kclient *kc;  /* borrowed */
    const char *namespace_;   /* the Secret's namespace */
    const char *secret_name;  /* "fairshare-webhook-cert" */
    const char *config_name;  /* MutatingWebhookConfiguration; "" or NULL: none */
    const char *const *names; /* the serving certificate's names (copied) */
    size_t n_names;
    int64_t validity_ms;            /* of the CA and the serving certificate */
    int64_t check_interval_ms;      /* 0: 60000 */
    const struct fair_clock *clock; /* NULL: the system clock; borrowed */
    /* A new TLS context to serve from now on: borrowed for the call (take
     * a reference to keep it). */
    void (*on_cert)(void *ctx, struct ssl_ctx_st *tls);
    void *ctx;
};

/* Starts the first check at once. Strings of o are copied. */
int fair_ctl_webhookcert_new(struct event_base *base, const struct fair_ctl_webhookcert_options *o,
                             struct fair_ctl_webhookcert **out, struct fair_error *err);
/* Cancels the requests in flight. NULL: no-op. */
void fair_ctl_webhookcert_free(struct fair_ctl_webhookcert *w);
/* Runs a check now unless one is running (tests, after moving the clock). */
void fair_ctl_webhookcert_check(struct fair_ctl_webhookcert *w);

struct fair_ctl_webhookcert_stats {
    uint64_t checks;        /* checks finished (with or without an error) */
    uint64_t issued;        /* new CAs and certificates made */
    uint64_t secret_writes; /* Secret creates and updates accepted */
    uint64_t bundle_writes; /* configuration updates accepted */
    uint64_t loaded;        /* certificates handed to on_cert */
    uint64_t errors;        /* checks that failed */
    int64_t not_after_s;    /* the served certificate's notAfter; 0: none yet */
    int64_t renew_at_s;     /* when it is renewed */
};
void fair_ctl_webhookcert_stats(const struct fair_ctl_webhookcert *w,
                                struct fair_ctl_webhookcert_stats *out);
/* The CA bundle (PEM) last written or found in the Secret; "" before. */
const char *fair_ctl_webhookcert_ca(const struct fair_ctl_webhookcert *w);
/* Prometheus text: fairshare_webhook_cert_not_after_seconds,
 * fairshare_webhook_cert_renewals_total, fairshare_webhook_cert_errors_total. */
int fair_ctl_webhookcert_metrics(const struct fair_ctl_webhookcert *w, struct fair_buf *out);

#endif
