/* The controller's configuration table and its YAML loader (see config.h).
 * Defaults are written as text and parsed by the same code as the file, so
 * the table is the single place where a key is described. */
#include "ctl/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/duration.h"
#include "base/log.h"
#include "base/tz.h"
#include "base/quantity.h"
#include "base/yaml.h"

#define OFF(field) offsetof(struct fair_ctl_config, field)
#define DAY_MS (24LL * 3600 * 1000)

static const struct fair_ctl_config_entry table[] = {
    {"schedulerName", FAIR_CFG_NAME, OFF(scheduler_name), "fairshare", 1, 253,
     "pods with this spec.schedulerName are scheduled by Fairshare"},
    {"leaderElection.enabled", FAIR_CFG_BOOL, OFF(leader_elect), "true", 0, 1,
     "run leader election on a Lease so that only one replica schedules"},
    {"leaderElection.leaseName", FAIR_CFG_NAME, OFF(lease_name), "fairshare-controller", 1, 253,
     "name of the coordination.k8s.io Lease"},
    {"leaderElection.leaseNamespace", FAIR_CFG_NAME, OFF(lease_namespace), "fairshare-system", 1,
     63, "namespace of the Lease"},
    {"leaderElection.leaseDuration", FAIR_CFG_DURATION, OFF(lease_duration_ms), "15s", 1000,
     3600 * 1000, "how long followers wait before taking over a lease that is not renewed"},
    {"leaderElection.renewDeadline", FAIR_CFG_DURATION, OFF(renew_deadline_ms), "10s", 500,
     3600 * 1000, "the leader steps down when it cannot renew for this long"},
    {"leaderElection.retryPeriod", FAIR_CFG_DURATION, OFF(retry_period_ms), "2s", 100, 600 * 1000,
     "time between attempts to acquire or renew the lease"},
    {"metricsAddress", FAIR_CFG_ADDRESS, OFF(metrics_address), "127.0.0.1:8080", 0, 0,
     "host:port for /healthz, /readyz, /metrics, the dashboard and reports; \"0\" turns it off"},
    {"ledger.path", FAIR_CFG_STRING, OFF(ledger_path), "fairshare-ledger.db", 0, 4096,
     "SQLite file of the GPU-hour ledger; \"\" turns the ledger off"},
    {"ledger.samplePeriod", FAIR_CFG_DURATION, OFF(ledger_sample_ms), "60s", 1000, DAY_MS,
     "how often per-queue samples (allocated, pending, fair share) are recorded"},
    {"ledger.retention", FAIR_CFG_DURATION, OFF(ledger_retention_ms), "400d", 3600 * 1000,
     3650 * DAY_MS, "samples older than this are deleted (intervals are kept)"},
    {"ledger.creatorLabel", FAIR_CFG_STRING, OFF(ledger_creator_label), "", 0, 317,
     "pod label whose value is recorded at bind time as the pod's creator (report --by user); "
     "\"\" records none"},
    {"ledger.flushInterval", FAIR_CFG_DURATION, OFF(ledger_flush_ms), "1s", 100, 600 * 1000,
     "how often buffered ledger writes are committed"},
    {"cycleInterval", FAIR_CFG_DURATION, OFF(cycle_interval_ms), "1s", 10, 600 * 1000,
     "a scheduling cycle runs at least this often"},
    {"cycleMinInterval", FAIR_CFG_DURATION, OFF(cycle_min_interval_ms), "20ms", 0, 60 * 1000,
     "changes arriving within this time are coalesced into one cycle"},
    {"kubeAPI.qps", FAIR_CFG_INT, OFF(api_qps), "2000", 1, 100000,
     "sustained requests per second to the API server (token bucket); sized so that the "
     "server's own flow control, not this bucket, paces a burst of binds"},
    {"kubeAPI.burst", FAIR_CFG_INT, OFF(api_burst), "4000", 1, 1000000,
     "requests allowed in a burst above qps"},
    {"kubeAPI.timeout", FAIR_CFG_DURATION, OFF(api_timeout_ms), "30s", 100, 600 * 1000,
     "timeout of one API request (watches excepted)"},
    {"kubeAPI.watchStallTimeout", FAIR_CFG_DURATION, OFF(watch_stall_ms), "3m", 1000, 3600 * 1000,
     "a watch that delivers nothing, not even a bookmark, for this long is closed and started "
     "again (kube-apiserver sends a bookmark a minute; at most the watch's own timeout, 5 to 10 "
     "minutes, applies)"},
    {"logLevel", FAIR_CFG_LOGLEVEL, OFF(log_level), "info", 0, 0, "debug, info, warn or error"},
    {"events.perPodInterval", FAIR_CFG_DURATION, OFF(event_interval_ms), "5m", 0, DAY_MS,
     "at most one FailedScheduling Event per pod and reason in this time"},
    {"statusUpdateInterval", FAIR_CFG_DURATION, OFF(status_interval_ms), "1s", 0, 600 * 1000,
     "Queue and Project status is written at most this often per object"},
    {"eviction.pdbBackoff", FAIR_CFG_DURATION, OFF(evict_backoff_ms), "30s", 0, 3600 * 1000,
     "a pod whose eviction a PodDisruptionBudget refused is not chosen again for this long"},
    {"eviction.pdbMaxWait", FAIR_CFG_DURATION, OFF(pdb_max_wait_ms), "5m", 0, DAY_MS,
     "a victim whose evictions a PodDisruptionBudget kept refusing for this long, and that is "
     "still the only way to give a queue what it is owed, is deleted instead, as kube-scheduler's "
     "preemption does (PDBs are best effort); 0: wait for the budget forever"},
    {"reclaim.upTo", FAIR_CFG_STRING, OFF(reclaim_up_to), "FairShare", 1, 16,
     "how far a queue's pods take GPUs back from borrowers by default: FairShare (up to its fair "
     "share) or Guarantee (up to its guarantee only); a Project's or Queue's spec.reclaimUpTo "
     "overrides it"},
    {"reclaim.overQuotaThreshold", FAIR_CFG_INT, OFF(oq_threshold_pct), "10", 0, 100,
     "percent of its fair share a queue must be below it before it reclaims beyond its "
     "guarantee (hysteresis)"},
    {"reclaim.overQuotaMinRuntime", FAIR_CFG_DURATION, OFF(oq_min_runtime_ms), "60s", 0, DAY_MS,
     "pods that ran less than this are not taken by reclaim beyond a guarantee"},
    {"reclaim.maxEvictions", FAIR_CFG_INT, OFF(max_evictions), "3", 0, 1000,
     "a workload evicted this many times runs only within its queue's guarantee and is not "
     "reclaimed again (within its fair share when the queue guarantees no GPUs); 0: no bound"},
    {"reclaim.nodeHoldTimeout", FAIR_CFG_DURATION, OFF(hold_timeout_ms), "10m", 0, DAY_MS,
     "how long a node is held for a pod owed GPUs that only an emptied node can take; 0: never"},
    {"reclaim.lendMaxRuntime", FAIR_CFG_DURATION, OFF(lend_max_runtime_ms), "0", 0, 30 * DAY_MS,
     "when set, a GPU pod may run above its queue's GPU guarantee only if its "
     "spec.activeDeadlineSeconds is at most this, or it sets fairshare.dev/checkpoint-interval "
     "(borrowed GPUs go to work that reclaim loses little of), and such pods are not reclaimed "
     "while they stay within the guarantee; 0: any pod may borrow"},
    {"reclaim.maxPreemptionNotice", FAIR_CFG_DURATION, OFF(max_notice_ms), "10m", 0, DAY_MS,
     "the longest fairshare.dev/preemption-notice honoured (a longer one is cut to it); the "
     "notice counts as part of the victim's grace period; 0: no notices"},
    {"reclaim.requeueBarePods", FAIR_CFG_BOOL, OFF(requeue_bare_pods), "true", 0, 1,
     "a pod without a controller owner that reclaim evicted is created again, pending, as "
     "<name>-rq<N> (a pod opts out with fairshare.dev/requeue: \"false\")"},
    {"fractions.minimum", FAIR_CFG_MILLI, OFF(min_fraction_milli), "0.05", 1, 999,
     "the smallest fairshare.dev/gpu-fraction accepted (GPUs); a pod asking less stays pending "
     "with reason InvalidPod"},
    {"fractions.reservations", FAIR_CFG_BOOL, OFF(reservations), "false", 0, 1,
     "a GPU that holds fractions is held by a reservation pod asking nvidia.com/gpu: 1 on its "
     "node, so that the device plugin never gives it to a whole-GPU pod; fractions are bound "
     "once the reservation reports its device, which they get in fairshare.dev/gpu-devices "
     "(docs/fractions.md)"},
    {"fractions.reservationNamespace", FAIR_CFG_NAME, OFF(reservation_namespace),
     "fairshare-system", 1, 63, "namespace of the reservation pods"},
    {"fractions.reservationImage", FAIR_CFG_STRING, OFF(reservation_image),
     "ghcr.io/fairshare-dev/fairshare:0.1.0", 1, 512,
     "image of the reservation pods (it runs fairshare-reserve)"},
    {"fractions.reservationServiceAccount", FAIR_CFG_STRING, OFF(reservation_sa),
     "fairshare-reserve", 0, 253,
     "service account of the reservation pods (it may get and patch pods in their namespace); "
     "empty: the namespace's default"},
    {"quota.chargeOtherSchedulers", FAIR_CFG_BOOL, OFF(charge_other_schedulers), "false", 0, 1,
     "GPU pods of other schedulers in a Project's namespaces are charged to the Project's "
     "defaultQueue (not preemptible, recorded in the ledger); false: they use capacity that is "
     "charged to no one"},
    {"timeZone", FAIR_CFG_STRING, OFF(time_zone), "UTC", 1, 64,
     "IANA time zone (Europe/Berlin) of Project budget periods (day, week from Monday, "
     "calendar month) and of spec.schedule windows that name none"},
    {"fairShare.usageHalfLife", FAIR_CFG_DURATION, OFF(usage_half_life_ms), "0", 0, 3660 * DAY_MS,
     "over-quota shares are weighted by GPU usage decayed with this half-life (read from the "
     "ledger), for Projects without spec.usageHalfLife; 0: off"},
    {"fairShare.usageRefresh", FAIR_CFG_DURATION, OFF(usage_refresh_ms), "60s", 1000, 3600 * 1000,
     "how often decayed usage and budget use are read again from the ledger"},
    {"inFlightTimeout", FAIR_CFG_DURATION, OFF(op_timeout_ms), "30s", 1000, 3600 * 1000,
     "a bind or eviction not yet seen in the informer is forgotten after this long"},
    {"volumeBindTimeout", FAIR_CFG_DURATION, OFF(volume_bind_timeout_ms), "10m", 1000, 3600 * 1000,
     "a pod whose claims were given its node keeps its room there this long at most while "
     "their volumes are made or bound (kube-scheduler's bindTimeoutSeconds); then it waits "
     "for them without the room"},
    {"http.maxConnections", FAIR_CFG_INT, OFF(http_max_conns), "256", 4, 65536,
     "HTTP connections open at once; beyond it the connection that has waited longest for its "
     "request is closed"},
    {"http.headerTimeout", FAIR_CFG_DURATION, OFF(http_header_timeout_ms), "10s", 100, 600 * 1000,
     "a request's line, headers and body must arrive within this (also the idle time of a "
     "kept-alive connection)"},
    {"ledger.queryTimeout", FAIR_CFG_DURATION, OFF(ledger_query_timeout_ms), "10s", 10, 600 * 1000,
     "a report or dashboard query still running after this is stopped (answer 503)"},
    {"ledger.queryThreads", FAIR_CFG_INT, OFF(ledger_query_threads), "2", 1, 16,
     "threads that run report and dashboard queries, each with its own read-only connection"},
    {"ledger.shutdownTimeout", FAIR_CFG_DURATION, OFF(ledger_shutdown_wait_ms), "5s", 0, 600 * 1000,
     "at shutdown, how long the last ledger writes wait for a lock held by another process"},
    {"healthAddress", FAIR_CFG_ADDRESS, OFF(health_address), ":8081", 0, 0,
     "host:port for /healthz and /readyz (plain HTTP, no authentication: for the kubelet's "
     "probes); \"0\" turns it off"},
    {"http.secureServing", FAIR_CFG_BOOL, OFF(http_secure), "true", 0, 1,
     "serve metricsAddress over HTTPS and authorise every request with a TokenReview and a "
     "SubjectAccessReview; false serves plain HTTP to anyone and is allowed only on a loopback "
     "metricsAddress"},
    {"http.tls.certFile", FAIR_CFG_STRING, OFF(http_tls_cert), "", 0, 4096,
     "PEM serving certificate (chain) of metricsAddress; \"\" makes a self-signed one in memory "
     "at start (its SHA-256 fingerprint is logged)"},
    {"http.tls.keyFile", FAIR_CFG_STRING, OFF(http_tls_key), "", 0, 4096,
     "PEM private key of http.tls.certFile; set both or neither"},
    {"http.authTimeout", FAIR_CFG_DURATION, OFF(http_auth_timeout_ms), "5s", 100, 60 * 1000,
     "a request whose TokenReview and SubjectAccessReview have not both answered within this is "
     "answered 503"},
    {"http.authCacheTTL", FAIR_CFG_DURATION, OFF(http_auth_allow_ttl_ms), "60s", 0, 3600 * 1000,
     "how long an allowed token is trusted without asking the API server again; 0: never cached"},
    {"http.authDenyCacheTTL", FAIR_CFG_DURATION, OFF(http_auth_deny_ttl_ms), "10s", 0, 3600 * 1000,
     "how long a refused token (401 or 403) is refused without asking again; 0: never cached"},
    {"http.authCacheSize", FAIR_CFG_INT, OFF(http_auth_cache_size), "4096", 16, 1000000,
     "decisions kept in the authorisation cache (least recently used ones go first)"},
    {"gpuModels", FAIR_CFG_STRING, OFF(gpu_models), "", 0, 4096,
     "GPU model aliases for quotas (gpu/<alias>) and pods (fairshare.dev/gpu-model): a mapping "
     "alias: nvidia.com/gpu.product in the file, \"alias=product,...\" on the command line"},
    {"webhook.address", FAIR_CFG_ADDRESS, OFF(webhook_address), "0", 0, 0,
     "host:port of the mutating admission webhook that adds the GPU env to fractional pods "
     "(HTTPS, certificate managed in webhook.secretName); \"0\" turns it off"},
    {"webhook.namespace", FAIR_CFG_NAME, OFF(webhook_namespace), "fairshare-system", 1, 63,
     "namespace of the webhook's Service and certificate Secret"},
    {"webhook.serviceName", FAIR_CFG_NAME, OFF(webhook_service), "fairshare-webhook", 1, 63,
     "the Service the API server calls: its DNS names go into the serving certificate"},
    {"webhook.secretName", FAIR_CFG_NAME, OFF(webhook_secret), "fairshare-webhook-cert", 1, 253,
     "Secret holding the webhook's CA and serving certificate (made when missing, shared by "
     "the replicas)"},
    {"webhook.configurationName", FAIR_CFG_STRING, OFF(webhook_config), "fairshare", 0, 253,
     "MutatingWebhookConfiguration whose caBundle the controller keeps up to date; \"\": none"},
    {"webhook.extraNames", FAIR_CFG_STRING, OFF(webhook_extra_names), "", 0, 4096,
     "more names for the serving certificate, comma-separated (IP literals become IP names), "
     "e.g. \"127.0.0.1\" for a webhook called by URL"},
    {"webhook.certValidity", FAIR_CFG_DURATION, OFF(webhook_validity_ms), "365d", 60 * 1000,
     3650 * DAY_MS,
     "validity of the webhook's CA and serving certificate; both are renewed at two thirds of it"},
    {"webhook.certCheckInterval", FAIR_CFG_DURATION, OFF(webhook_check_ms), "1m", 100, DAY_MS,
     "how often the Secret and the caBundle are read again (a renewal by another replica, a "
     "caBundle reset by kubectl apply)"},
    {"webhook.cudaVisibleDevices", FAIR_CFG_BOOL, OFF(webhook_cuda), "false", 0, 1,
     "the webhook also sets CUDA_VISIBLE_DEVICES from fairshare.dev/gpu-devices (only right "
     "where that annotation holds GPU UUIDs)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct fair_ctl_config_entry *fair_ctl_config_table(void)
{
    return table;
}

static const char *type_name(enum fair_ctl_config_type t)
{
    switch (t) {
    case FAIR_CFG_BOOL:
        return "boolean";
    case FAIR_CFG_STRING:
        return "string";
    case FAIR_CFG_NAME:
        return "name";
    case FAIR_CFG_DURATION:
        return "duration";
    case FAIR_CFG_INT:
        return "integer";
    case FAIR_CFG_LOGLEVEL:
        return "log level";
    case FAIR_CFG_ADDRESS:
        return "address";
    case FAIR_CFG_MILLI:
        return "quantity";
    }
    return "?";
}

static const struct fair_ctl_config_entry *find_entry(const char *name)
{
    for (const struct fair_ctl_config_entry *e = table; e->name; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

/* Kubernetes DNS-1123 subdomain: lower-case alphanumerics, '-' and '.',
 * starting and ending with an alphanumeric. */
static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '.')
            return false;
        if ((i == 0 || i == n - 1) && !alnum)
            return false;
    }
    return true;
}

int fair_ctl_parse_address(const char *addr, char *host, size_t hostlen, int *port,
                           struct fair_error *err)
{
    /* As Go's net.SplitHostPort: an IPv6 host only in brackets ("[::1]:80";
     * "::1:80" is ambiguous), and no stray bracket. */
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return fair_error_set(err, FAIR_EINVAL, "\"%s\" is not host:port", addr);
    size_t hl = (size_t)(colon - addr);
    const char *h = addr, *after = addr; /* no ']' from after on */
    if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        if (!end || end + 1 != colon)
            return fair_error_set(err, FAIR_EINVAL,
                                  "\"%s\" is not [host]:port (a ']' just before the port)", addr);
        h = addr + 1;
        hl = (size_t)(end - h);
        after = end + 1;
    } else if (memchr(addr, ':', hl)) {
        return fair_error_set(err, FAIR_EINVAL,
                              "\"%s\" has too many colons (write an IPv6 host as [host]:port)",
                              addr);
    }
    if (strchr(addr + (addr[0] == '[' ? 1 : 0), '[') || strchr(after, ']'))
        return fair_error_set(err, FAIR_EINVAL, "\"%s\" has a stray bracket", addr);
    if (hl >= hostlen)
        return fair_error_set(err, FAIR_EINVAL, "host in \"%s\" is too long", addr);
    if (hl == 0) {
        snprintf(host, hostlen, "0.0.0.0");
    } else {
        memcpy(host, h, hl);
        host[hl] = '\0';
    }
    const char *p = colon + 1;
    if (*p == '\0')
        return fair_error_set(err, FAIR_EINVAL, "\"%s\" has no port", addr);
    long v = 0;
    for (; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return fair_error_set(err, FAIR_EINVAL, "port in \"%s\" is not a number", addr);
        v = v * 10 + (*p - '0');
        if (v > 65535)
            return fair_error_set(err, FAIR_EINVAL, "port in \"%s\" is over 65535", addr);
    }
    *port = (int)v;
    return 0;
}

/* Go durations plus a whole number of days ("400d"), which retention wants. */
static int parse_duration(const char *s, int64_t *out, struct fair_error *err)
{
    size_t n = strlen(s);
    if (n >= 2 && n < 12 && s[n - 1] == 'd') {
        int64_t days = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            if (!isdigit((unsigned char)s[i]))
                goto go;
            days = days * 10 + (s[i] - '0');
        }
        *out = days * DAY_MS;
        return 0;
    }
go:
    return fair_duration_parse_ms(s, out, err);
}

static int parse_int_text(const char *s, int64_t *out)
{
    if (!*s || strlen(s) > 19)
        return FAIR_EINVAL;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return FAIR_EINVAL;
    *out = v;
    return 0;
}

/* Stores one value given as text into cfg. `where` prefixes messages. */
static int set_text(struct fair_ctl_config *cfg, const struct fair_ctl_config_entry *e,
                    const char *text, const char *where, struct fair_error *err)
{
    char *base = (char *)cfg;
    struct fair_error sub = {0};
    switch (e->type) {
    case FAIR_CFG_BOOL: {
        bool v;
        if (strcmp(text, "true") == 0)
            v = true;
        else if (strcmp(text, "false") == 0)
            v = false;
        else
            return fair_error_set(err, FAIR_EINVAL, "%skey %s: expected true or false, got \"%s\"",
                                  where, e->name, text);
        *(bool *)(base + e->offset) = v;
        return 0;
    }
    case FAIR_CFG_STRING:
    case FAIR_CFG_NAME:
    case FAIR_CFG_ADDRESS: {
        size_t len = strlen(text);
        if (e->type != FAIR_CFG_ADDRESS && len > (size_t)e->max)
            return fair_error_set(err, FAIR_EINVAL,
                                  "%skey %s: value is %zu characters long, at most %lld allowed",
                                  where, e->name, len, (long long)e->max);
        if (len < (size_t)e->min)
            return fair_error_set(err, FAIR_EINVAL, "%skey %s: must not be empty", where, e->name);
        if (e->type == FAIR_CFG_NAME && !valid_name(text))
            return fair_error_set(err, FAIR_EINVAL,
                                  "%skey %s: \"%s\" is not a valid Kubernetes name (lower-case "
                                  "letters, digits, '-' and '.')",
                                  where, e->name, text);
        if (e->type == FAIR_CFG_ADDRESS && strcmp(text, "0") != 0) {
            char host[256];
            int port = 0;
            if (len > 300 || fair_ctl_parse_address(text, host, sizeof host, &port, &sub))
                return fair_error_set(err, FAIR_EINVAL, "%skey %s: %s (write host:port or \"0\")",
                                      where, e->name, len > 300 ? "value too long" : sub.msg);
        }
        char *copy = fair_strdup(text);
        if (!copy)
            return fair_error_set(err, FAIR_ENOMEM, "out of memory");
        char **slot = (char **)(base + e->offset);
        fair_free(*slot);
        *slot = copy;
        return 0;
    }
    case FAIR_CFG_DURATION: {
        int64_t ms = 0;
        if (parse_duration(text, &ms, &sub))
            return fair_error_set(err, FAIR_EINVAL,
                                  "%skey %s: \"%s\" is not a duration (write e.g. \"500ms\", "
                                  "\"1s\", \"5m\")",
                                  where, e->name, text);
        if (ms < e->min || ms > e->max) {
            char lo[32], hi[32];
            fair_duration_format_ms(e->min, lo, sizeof lo);
            fair_duration_format_ms(e->max, hi, sizeof hi);
            return fair_error_set(err, FAIR_ERANGE, "%skey %s: %s is out of range [%s, %s]", where,
                                  e->name, text, lo, hi);
        }
        *(int64_t *)(base + e->offset) = ms;
        return 0;
    }
    case FAIR_CFG_INT: {
        int64_t v = 0;
        if (parse_int_text(text, &v))
            return fair_error_set(err, FAIR_EINVAL, "%skey %s: \"%s\" is not an integer", where,
                                  e->name, text);
        if (v < e->min || v > e->max)
            return fair_error_set(err, FAIR_ERANGE, "%skey %s: %lld is out of range [%lld, %lld]",
                                  where, e->name, (long long)v, (long long)e->min,
                                  (long long)e->max);
        *(int64_t *)(base + e->offset) = v;
        return 0;
    }
    case FAIR_CFG_MILLI: {
        int64_t v = 0;
        if (strlen(text) > 32 || fair_quantity_parse_milli(text, &v, &sub))
            return fair_error_set(err, FAIR_EINVAL,
                                  "%skey %s: \"%.40s\" is not a quantity (write e.g. \"0.05\" or "
                                  "\"50m\")",
                                  where, e->name, text);
        if (v < e->min || v > e->max)
            return fair_error_set(err, FAIR_ERANGE, "%skey %s: %s is out of range [%lldm, %lldm]",
                                  where, e->name, text, (long long)e->min, (long long)e->max);
        *(int64_t *)(base + e->offset) = v;
        return 0;
    }
    case FAIR_CFG_LOGLEVEL: {
        int lvl = fair_log_level_parse(text);
        if (lvl < 0)
            return fair_error_set(err, FAIR_EINVAL,
                                  "%skey %s: \"%s\" is not one of debug, info, warn, error, off",
                                  where, e->name, text);
        *(int *)(base + e->offset) = lvl;
        return 0;
    }
    }
    return fair_error_set(err, FAIR_EINVAL, "%skey %s: unsupported type", where, e->name);
}

int fair_ctl_config_init(struct fair_ctl_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    struct fair_error err = {0};
    for (const struct fair_ctl_config_entry *e = table; e->name; e++) {
        int rc = set_text(cfg, e, e->default_value, "default ", &err);
        if (rc)
            return rc; /* FAIR_ENOMEM; the defaults themselves are valid */
    }
    return 0;
}

void fair_ctl_config_release(struct fair_ctl_config *cfg)
{
    if (!cfg)
        return;
    for (const struct fair_ctl_config_entry *e = table; e->name; e++) {
        if (e->type == FAIR_CFG_STRING || e->type == FAIR_CFG_NAME || e->type == FAIR_CFG_ADDRESS) {
            char **slot = (char **)((char *)cfg + e->offset);
            fair_free(*slot);
            *slot = NULL;
        }
    }
}

int fair_ctl_config_set(struct fair_ctl_config *cfg, const char *key, const char *value,
                        struct fair_error *err)
{
    const struct fair_ctl_config_entry *e = find_entry(key);
    if (!e)
        return fair_error_set(err, FAIR_EINVAL, "unknown configuration key \"%s\"", key);
    return set_text(cfg, e, value, "", err);
}

int fair_ctl_config_check(const struct fair_ctl_config *cfg, struct fair_error *err)
{
    if (cfg->renew_deadline_ms >= cfg->lease_duration_ms)
        return fair_error_set(err, FAIR_EINVAL,
                              "key leaderElection.renewDeadline: must be shorter than "
                              "leaderElection.leaseDuration");
    if (cfg->retry_period_ms >= cfg->renew_deadline_ms)
        return fair_error_set(err, FAIR_EINVAL,
                              "key leaderElection.retryPeriod: must be shorter than "
                              "leaderElection.renewDeadline");
    if (cfg->api_burst < cfg->api_qps)
        return fair_error_set(err, FAIR_EINVAL,
                              "key kubeAPI.burst: must be at least kubeAPI.qps (%lld)",
                              (long long)cfg->api_qps);
    if (cfg->cycle_min_interval_ms > cfg->cycle_interval_ms)
        return fair_error_set(err, FAIR_EINVAL,
                              "key cycleMinInterval: must not be longer than cycleInterval");
    {
        struct fair_tz *z = NULL;
        struct fair_error te = {0};
        int trc = fair_tz_load(cfg->time_zone, &z, &te);
        if (trc)
            return fair_error_set(err, trc == FAIR_ENOMEM ? FAIR_ENOMEM : FAIR_EINVAL,
                                  "key timeZone: %s", te.msg);
        fair_tz_free(z);
    }
    struct fair_ctl_gpu_alias aliases[FAIR_CTL_MAX_GPU_ALIASES];
    size_t naliases;
    int arc = fair_ctl_parse_gpu_models(cfg->gpu_models, aliases, &naliases, err);
    if (arc)
        return arc;
    if (strcmp(cfg->reclaim_up_to, "FairShare") != 0 &&
        strcmp(cfg->reclaim_up_to, "Guarantee") != 0)
        return fair_error_set(err, FAIR_EINVAL,
                              "key reclaim.upTo: \"%s\" must be FairShare or Guarantee",
                              cfg->reclaim_up_to);
    return 0;
}

/* ---- issue 15: gpuModels, GPU model aliases ---- */

static bool gpu_label_value(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

int fair_ctl_parse_gpu_models(const char *text, struct fair_ctl_gpu_alias *out, size_t *n,
                              struct fair_error *err)
{
    *n = 0;
    const char *p = text ? text : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t al = eq ? (size_t)(eq - p) : 0, pl = eq ? len - al - 1 : 0;
        if (!eq || !gpu_label_value(p, al) || !gpu_label_value(eq + 1, pl))
            return fair_error_set(err, FAIR_EINVAL,
                                  "key gpuModels: \"%.*s\" is not alias=product (each a label "
                                  "value: 1 to 63 letters, digits, '-', '_' or '.')",
                                  (int)(len > 80 ? 80 : len), p);
        if (*n == FAIR_CTL_MAX_GPU_ALIASES)
            return fair_error_set(err, FAIR_EINVAL, "key gpuModels: more than %d aliases",
                                  FAIR_CTL_MAX_GPU_ALIASES);
        struct fair_ctl_gpu_alias *a = &out[*n];
        snprintf(a->alias, sizeof a->alias, "%.*s", (int)al, p);
        snprintf(a->product, sizeof a->product, "%.*s", (int)pl, eq + 1);
        for (size_t i = 0; i < *n; i++)
            if (strcmp(out[i].alias, a->alias) == 0)
                return fair_error_set(err, FAIR_EINVAL, "key gpuModels: alias %s given twice",
                                      a->alias);
        (*n)++;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

const char *fair_ctl_gpu_product(const struct fair_ctl_gpu_alias *a, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(a[i].alias, name) == 0)
            return a[i].product;
    return name;
}

/* gpuModels as a mapping (alias: product) in the file. */
static int load_gpu_models(struct fair_ctl_config *cfg, const struct fair_ctl_config_entry *e,
                           json_t *val, const char *where, struct fair_error *err)
{
    struct fair_buf b;
    fair_buf_init(&b, 8192);
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach(val, k, v)
    {
        if (!json_is_string(v)) {
            rc = fair_error_set(err, FAIR_EINVAL,
                                "%skey gpuModels.%s: want a string (a node's "
                                "nvidia.com/gpu.product)",
                                where, k);
            break;
        }
        if ((rc = fair_buf_appendf(&b, "%s%s=%s", b.len ? "," : "", k, json_string_value(v))))
            break;
    }
    if (!rc)
        rc = set_text(cfg, e, fair_buf_str(&b), where, err);
    fair_buf_release(&b);
    return rc;
}

/* Walks a mapping, checking each key against the table. prefix is the
 * dotted path so far ("" at the top). */
static int load_map(struct fair_ctl_config *cfg, json_t *obj, const char *prefix, int depth,
                    const char *where, struct fair_error *err)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        char path[128];
        int n = snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        if (n < 0 || (size_t)n >= sizeof path)
            return fair_error_set(err, FAIR_EINVAL, "%skey under \"%s\": name too long", where,
                                  prefix);
        if (depth == 0 && (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0))
            continue;
        const struct fair_ctl_config_entry *e = find_entry(path);
        if (!e) {
            if (json_is_object(val) && depth < 3) {
                /* A section: accept it only if some key starts with it. */
                size_t pl = strlen(path);
                bool section = false;
                for (const struct fair_ctl_config_entry *t = table; t->name; t++)
                    if (strncmp(t->name, path, pl) == 0 && t->name[pl] == '.')
                        section = true;
                if (section) {
                    int rc = load_map(cfg, val, path, depth + 1, where, err);
                    if (rc)
                        return rc;
                    continue;
                }
            }
            return fair_error_set(err, FAIR_EINVAL,
                                  "%sunknown key %s (see fairshare-controller --help for the "
                                  "list of keys)",
                                  where, path);
        }
        char text[64];
        const char *s = NULL;
        if (strcmp(e->name, "gpuModels") == 0 && json_is_object(val)) {
            int rc = load_gpu_models(cfg, e, val, where, err); /* issue 15 */
            if (rc)
                return rc;
            continue;
        }
        if (json_is_string(val)) {
            s = json_string_value(val);
        } else if (json_is_integer(val)) {
            snprintf(text, sizeof text, "%lld", (long long)json_integer_value(val));
            s = text;
        } else if (json_is_boolean(val)) {
            s = json_is_true(val) ? "true" : "false";
        } else if (json_is_null(val)) {
            continue; /* "key:" with no value keeps the default */
        } else {
            return fair_error_set(err, FAIR_EINVAL, "%skey %s: expected a %s, got a %s", where,
                                  path, type_name(e->type),
                                  json_is_object(val) ? "mapping" : "list");
        }
        /* A quoted or plain number for a duration key is a common slip. */
        if (e->type == FAIR_CFG_DURATION && json_is_integer(val))
            return fair_error_set(err, FAIR_EINVAL, "%skey %s: %s has no unit (write e.g. \"%ss\")",
                                  where, path, s, s);
        int rc = set_text(cfg, e, s, where, err);
        if (rc)
            return rc;
    }
    return 0;
}

int fair_ctl_config_load_text(struct fair_ctl_config *cfg, const char *name, const char *text,
                              size_t len, struct fair_error *err)
{
    json_t *docs = NULL;
    int rc = 0;
    char where[300];
    snprintf(where, sizeof where, "%s: ", name);
    struct fair_yaml_limits lim = {
        .max_bytes = FAIR_CTL_CONFIG_MAX_BYTES, .max_depth = 8, .max_nodes = 1000, .max_docs = 2};
    rc = fair_yaml_parse(name, text, len, &lim, &docs, err);
    if (rc)
        goto out;
    if (json_array_size(docs) != 1) {
        rc = fair_error_set(err, FAIR_EINVAL, "%sexpected one YAML document, found %zu", where,
                            json_array_size(docs));
        goto out;
    }
    json_t *doc = json_array_get(docs, 0);
    if (!json_is_object(doc)) {
        rc = fair_error_set(err, FAIR_EINVAL, "%sthe document must be a mapping", where);
        goto out;
    }
    const char *api = json_string_value(json_object_get(doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!api || strcmp(api, FAIR_CTL_CONFIG_API_VERSION) != 0) {
        rc = fair_error_set(err, FAIR_EINVAL, "%skey apiVersion: expected \"%s\", got \"%s\"",
                            where, FAIR_CTL_CONFIG_API_VERSION, api ? api : "(missing)");
        goto out;
    }
    if (!kind || strcmp(kind, FAIR_CTL_CONFIG_KIND) != 0) {
        rc = fair_error_set(err, FAIR_EINVAL, "%skey kind: expected \"%s\", got \"%s\"", where,
                            FAIR_CTL_CONFIG_KIND, kind ? kind : "(missing)");
        goto out;
    }
    rc = load_map(cfg, doc, "", 0, where, err);
    if (rc)
        goto out;
    rc = fair_ctl_config_check(cfg, err);
    if (rc)
        fair_error_prefix(err, "%s", where);
out:
    json_decref(docs);
    return rc;
}

int fair_ctl_config_load_file(struct fair_ctl_config *cfg, const char *path, struct fair_error *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc = fair_read_file(path, FAIR_CTL_CONFIG_MAX_BYTES, &data, &len, err);
    if (rc)
        goto out;
    rc = fair_ctl_config_load_text(cfg, path, data, len, err);
out:
    fair_free(data);
    return rc;
}

void fair_ctl_config_print_help(FILE *f)
{
    fprintf(f, "Configuration file keys (apiVersion: %s, kind: %s):\n", FAIR_CTL_CONFIG_API_VERSION,
            FAIR_CTL_CONFIG_KIND);
    for (const struct fair_ctl_config_entry *e = table; e->name; e++)
        fprintf(f, "  %-30s %-9s default %-22s %s\n", e->name, type_name(e->type),
                *e->default_value ? e->default_value : "\"\"", e->help);
}
