/* The controller's configuration: a YAML file with apiVersion
 * config.fairshare.dev/v1alpha1 and kind ControllerConfig, described by a
 * table (name, type, default, bounds, help text) in the manner of Redis's
 * standardConfig. Every key of the file is checked against the table before
 * the controller starts: an unknown key, a value of the wrong type or one
 * out of bounds fails with a message that names the key.
 *
 * Ownership: struct fair_ctl_config is caller-owned storage; its strings are
 * owned by it and freed by fair_ctl_config_release(). */
#ifndef FAIR_CTL_CONFIG_H
#define FAIR_CTL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

#define FAIR_CTL_CONFIG_API_VERSION "config.fairshare.dev/v1alpha1"
#define FAIR_CTL_CONFIG_KIND "ControllerConfig"
/* Config files larger than this are refused. */
#define FAIR_CTL_CONFIG_MAX_BYTES (256 * 1024)

struct fair_ctl_config {
    char *scheduler_name;            /* schedulerName */
    bool leader_elect;               /* leaderElection.enabled */
    char *lease_name;                /* leaderElection.leaseName */
    char *lease_namespace;           /* leaderElection.leaseNamespace */
    int64_t lease_duration_ms;       /* leaderElection.leaseDuration */
    int64_t renew_deadline_ms;       /* leaderElection.renewDeadline */
    int64_t retry_period_ms;         /* leaderElection.retryPeriod */
    char *metrics_address;           /* metricsAddress: host:port, "0" disables */
    char *ledger_path;               /* ledger.path: "" disables the ledger */
    char *ledger_creator_label;      /* ledger.creatorLabel: "" records no creator */
    int64_t ledger_sample_ms;        /* ledger.samplePeriod */
    int64_t ledger_retention_ms;     /* ledger.retention */
    int64_t ledger_flush_ms;         /* ledger.flushInterval */
    int64_t cycle_interval_ms;       /* cycleInterval: longest time between cycles */
    int64_t cycle_min_interval_ms;   /* cycleMinInterval: changes are coalesced */
    int64_t api_qps;                 /* kubeAPI.qps */
    int64_t api_burst;               /* kubeAPI.burst */
    int64_t api_timeout_ms;          /* kubeAPI.timeout */
    int64_t watch_stall_ms;          /* kubeAPI.watchStallTimeout */
    int log_level;                   /* logLevel: enum fair_log_level */
    int64_t event_interval_ms;       /* events.perPodInterval */
    int64_t status_interval_ms;      /* statusUpdateInterval */
    int64_t evict_backoff_ms;        /* eviction.pdbBackoff */
    int64_t pdb_max_wait_ms;         /* eviction.pdbMaxWait */
    int64_t op_timeout_ms;           /* inFlightTimeout */
    int64_t volume_bind_timeout_ms;  /* volumeBindTimeout */
    char *reclaim_up_to;             /* reclaim.upTo: "FairShare" or "Guarantee" */
    int64_t oq_threshold_pct;        /* reclaim.overQuotaThreshold (percent) */
    int64_t oq_min_runtime_ms;       /* reclaim.overQuotaMinRuntime */
    int64_t max_evictions;           /* reclaim.maxEvictions; 0: no bound */
    int64_t hold_timeout_ms;         /* reclaim.nodeHoldTimeout; 0: no holds */
    int64_t lend_max_runtime_ms;     /* reclaim.lendMaxRuntime; 0: any pod borrows */
    int64_t max_notice_ms;           /* reclaim.maxPreemptionNotice; 0: no notices */
    bool requeue_bare_pods;          /* reclaim.requeueBarePods */
    int64_t min_fraction_milli;      /* fractions.minimum (milli-GPU) */
    bool reservations;               /* fractions.reservations */
    char *reservation_namespace;     /* fractions.reservationNamespace */
    char *reservation_image;         /* fractions.reservationImage */
    char *reservation_sa;            /* fractions.reservationServiceAccount */
    bool charge_other_schedulers;    /* quota.chargeOtherSchedulers */
    char *time_zone;                 /* timeZone: budget periods, schedule windows */
    int64_t usage_half_life_ms;      /* fairShare.usageHalfLife; 0: off */
    int64_t usage_refresh_ms;        /* fairShare.usageRefresh */
    int64_t http_max_conns;          /* http.maxConnections */
    int64_t http_header_timeout_ms;  /* http.headerTimeout */
    int64_t ledger_query_timeout_ms; /* ledger.queryTimeout */
    int64_t ledger_query_threads;    /* ledger.queryThreads */
    int64_t ledger_shutdown_wait_ms; /* ledger.shutdownTimeout */
    char *health_address;            /* healthAddress: host:port, "0" disables */
    bool http_secure;                /* http.secureServing */
    char *http_tls_cert;             /* http.tls.certFile: "" = self-signed */
    char *http_tls_key;              /* http.tls.keyFile */
    int64_t http_auth_timeout_ms;    /* http.authTimeout */
    int64_t http_auth_allow_ttl_ms;  /* http.authCacheTTL */
    int64_t http_auth_deny_ttl_ms;   /* http.authDenyCacheTTL */
    int64_t http_auth_cache_size;    /* http.authCacheSize */
    char *gpu_models;                /* gpuModels: aliases "H100=NVIDIA-H100-80GB-HBM3,..." */
    char *webhook_address;           /* webhook.address: host:port, "0" off */
    char *webhook_namespace;         /* webhook.namespace: the Secret's and Service's */
    char *webhook_service;           /* webhook.serviceName */
    char *webhook_secret;            /* webhook.secretName */
    char *webhook_config;            /* webhook.configurationName: "" none */
    char *webhook_extra_names;       /* webhook.extraNames: comma-separated hosts and IPs */
    int64_t webhook_validity_ms;     /* webhook.certValidity */
    int64_t webhook_check_ms;        /* webhook.certCheckInterval */
    bool webhook_cuda;               /* webhook.cudaVisibleDevices */
};

/* ---- issue 15: GPU model aliases (gpuModels) ---- */
#define FAIR_CTL_MAX_GPU_ALIASES 32
struct fair_ctl_gpu_alias {
    char alias[64];   /* a label value */
    char product[64]; /* a node's nvidia.com/gpu.product */
};
/* Parses gpuModels ("alias=product,alias=product"; empty: none) into out
 * (at most FAIR_CTL_MAX_GPU_ALIASES). FAIR_EINVAL with a message naming
 * the entry when one is malformed or an alias repeats. */
int fair_ctl_parse_gpu_models(const char *text, struct fair_ctl_gpu_alias *out, size_t *n,
                              struct fair_error *err);
/* The product an alias stands for, or name itself. */
const char *fair_ctl_gpu_product(const struct fair_ctl_gpu_alias *a, size_t n, const char *name);

enum fair_ctl_config_type {
    FAIR_CFG_BOOL,
    FAIR_CFG_STRING,   /* any string up to bound max characters */
    FAIR_CFG_NAME,     /* a Kubernetes name (DNS-1123 subdomain) */
    FAIR_CFG_DURATION, /* Go duration ("1s", "5m"); "d" days allowed too */
    FAIR_CFG_INT,
    FAIR_CFG_LOGLEVEL, /* debug, info, warn, error */
    FAIR_CFG_ADDRESS,  /* host:port, :port, or "0" for off */
    FAIR_CFG_MILLI,    /* a quantity ("0.05", "50m") stored in thousandths */
};

/* One row of the table. For DURATION the bounds are in ms; for STRING and
 * NAME, max is the longest length. */
struct fair_ctl_config_entry {
    const char *name; /* dotted path in the YAML file: "ledger.path" */
    enum fair_ctl_config_type type;
    size_t offset; /* into struct fair_ctl_config */
    const char *default_value;
    int64_t min, max;
    const char *help;
};

/* The table, terminated by an entry with a NULL name. Borrowed, static. */
const struct fair_ctl_config_entry *fair_ctl_config_table(void);

/* Fills cfg with the defaults. Returns 0 or FAIR_ENOMEM. */
int fair_ctl_config_init(struct fair_ctl_config *cfg);
void fair_ctl_config_release(struct fair_ctl_config *cfg);

/* Reads and validates a config file on top of the current values (call
 * _init first). On failure, err names the file and the key; cfg may be
 * partly updated and must still be released. */
int fair_ctl_config_load_file(struct fair_ctl_config *cfg, const char *path,
                              struct fair_error *err);
/* The same from a YAML text in memory; name is used in messages. */
int fair_ctl_config_load_text(struct fair_ctl_config *cfg, const char *name, const char *text,
                              size_t len, struct fair_error *err);

/* Sets one key from text ("cycleInterval", "2s"), as the command line does;
 * same checks as the file. */
int fair_ctl_config_set(struct fair_ctl_config *cfg, const char *key, const char *value,
                        struct fair_error *err);

/* Checks rules that involve several keys (renewDeadline < leaseDuration,
 * ...). The loaders call it; call it again after _set. */
int fair_ctl_config_check(const struct fair_ctl_config *cfg, struct fair_error *err);

/* Prints every key with its type, default and help (for --help). */
void fair_ctl_config_print_help(FILE *f);

/* Splits "host:port" (":port" means every interface, 0.0.0.0, as in Go). Returns FAIR_EINVAL when
 * malformed. host must hold at least 256 bytes. */
int fair_ctl_parse_address(const char *addr, char *host, size_t hostlen, int *port,
                           struct fair_error *err);

#endif
