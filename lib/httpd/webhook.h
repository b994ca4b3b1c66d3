/* The mutating admission webhook that gives fractional-GPU pods their GPU
 * environment: for a pod of the Fairshare scheduler that asks for part of
 * a GPU, it adds downward-API env entries that the kubelet resolves from
 * the annotations the controller writes at bind time (docs/fractions-webhook.md).
 *
 * fair_webhook_review() is pure: one admission.k8s.io/v1 AdmissionReview
 * in, the AdmissionReview answer (a JSONPatch) out; no I/O, no clock.
 * fair_webhook_register() puts it behind a POST route of lib/httpd.
 *
 * What is mutated: a CREATE of a core/v1 Pod (no subresource) whose
 * spec.schedulerName is o->scheduler_name and which carries a non-empty
 * fairshare.dev/gpu-fraction or fairshare.dev/gpu-memory annotation. Each
 * of its containers and initContainers gets, unless it already names the
 * variable in its env (the user's entry wins):
 *   NVIDIA_VISIBLE_DEVICES    <- metadata.annotations['fairshare.dev/gpu-devices']
 *   CUDA_VISIBLE_DEVICES      <- the same (only with o->cuda_visible_devices)
 *   CUDA_DEVICE_MEMORY_LIMIT  <- metadata.annotations['fairshare.dev/gpu-memory-limit']
 *   CUDA_DEVICE_SM_LIMIT      <- metadata.annotations['fairshare.dev/gpu-sm-limit']
 * and the pod gets the annotation fairshare.dev/gpu-env: "webhook", which
 * tells the controller that the webhook saw it. Anything else is allowed
 * unchanged. The webhook never denies a pod.
 *
 * Limits: the body at most FAIR_WEBHOOK_MAX_BODY bytes, JSON nesting at
 * most FAIR_WEBHOOK_MAX_DEPTH, at most FAIR_WEBHOOK_MAX_CONTAINERS
 * containers of each kind. */
#ifndef FAIR_HTTPD_WEBHOOK_H
#define FAIR_HTTPD_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

struct fair_httpd;

#define FAIR_WEBHOOK_MAX_BODY (1u << 20) /* lib/httpd's own body cap */
#define FAIR_WEBHOOK_MAX_DEPTH 64
#define FAIR_WEBHOOK_MAX_CONTAINERS 256

#define FAIR_WEBHOOK_ANN_ENV "fairshare.dev/gpu-env"
#define FAIR_WEBHOOK_ANN_MEMORY "fairshare.dev/gpu-memory"
#define FAIR_WEBHOOK_ANN_MEMORY_LIMIT "fairshare.dev/gpu-memory-limit"
#define FAIR_WEBHOOK_ANN_SM_LIMIT "fairshare.dev/gpu-sm-limit"

struct fair_webhook_options {
    const char *scheduler_name; /* NULL: "fairshare" */
    bool cuda_visible_devices;  /* also set CUDA_VISIBLE_DEVICES */
};

/* What one review did, for the log, the metrics and the tests. */
enum fair_webhook_outcome {
    FAIR_WEBHOOK_PATCHED,    /* allowed with a patch */
    FAIR_WEBHOOK_UNCHANGED,  /* a fractional pod whose containers had it all */
    FAIR_WEBHOOK_IGNORED,    /* not ours, not fractional, not a pod CREATE */
    FAIR_WEBHOOK_BAD_OBJECT, /* a review whose pod cannot be read: allowed, unchanged, warned */
    FAIR_WEBHOOK_MALFORMED,  /* not an AdmissionReview: HTTP 400 */
};

struct fair_webhook_result {
    enum fair_webhook_outcome outcome;
    int status;       /* the HTTP status to answer: 200, or 400 when malformed */
    size_t env_added; /* env entries added over all containers */
    char message[256];
};

/* Reads the AdmissionReview body[0..len) and appends the answer, an
 * AdmissionReview JSON document, to out: with HTTP status 200, the same
 * apiVersion and the request's uid, allowed true and, when something is
 * added, patchType JSONPatch and the base64 patch; with 400 (not JSON, too
 * deep, no request.uid, not admission.k8s.io/v1), response.allowed false
 * and response.status {code 400, message}, which the API server counts
 * as a failed call (failurePolicy then decides). Returns 0, or
 * FAIR_ENOMEM / FAIR_ERANGE when out cannot hold the answer. */
int fair_webhook_review(const struct fair_webhook_options *o, const char *body, size_t len,
                        struct fair_buf *out, struct fair_webhook_result *res);

/* Counters of a registered webhook. */
struct fair_webhook_stats {
    unsigned long long reviews[FAIR_WEBHOOK_MALFORMED + 1]; /* by outcome */
};

struct fair_webhook;
/* Registers POST path on srv (an HTTPS server: the API server calls
 * webhooks over TLS only); o's strings are copied. *out is new and must
 * outlive srv's requests: free it after srv. */
int fair_webhook_register(struct fair_httpd *srv, const char *path,
                          const struct fair_webhook_options *o, struct fair_webhook **out);
void fair_webhook_free(struct fair_webhook *w);
void fair_webhook_stats(const struct fair_webhook *w, struct fair_webhook_stats *out);
/* Prometheus text: fairshare_webhook_reviews_total{outcome="..."}. */
int fair_webhook_metrics(const struct fair_webhook *w, struct fair_buf *out);

#endif
