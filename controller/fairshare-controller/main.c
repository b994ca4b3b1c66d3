/* fairshare-controller: the daemon. Reads the command line and the config
 * file (validated before anything starts), then runs the controller
 * (lib/ctl/controller.h) and its HTTP endpoints on one libevent loop until
 * SIGTERM or SIGINT, when it releases the Lease and flushes the ledger. */
#include <curl/curl.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/version.h"
#include "ctl/config.h"
#include "ctl/controller.h"
#include "http.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fairshare-controller [--kubeconfig FILE] [--config FILE] [--ledger FILE]\n"
            "                            [--listen HOST:PORT] [--health-listen HOST:PORT]\n"
            "                            [--secure-serving=true|false] [--tls-cert-file FILE]\n"
            "                            [--tls-key-file FILE] [--leader-elect=true|false]\n"
            "                            [--pod-name NAME] [--log-level LEVEL]\n"
            "\n"
            "Schedules pods whose spec.schedulerName is Fairshare's: lends idle guaranteed\n"
            "GPUs to queues that want more and reclaims them through the Eviction API.\n"
            "\n"
            "  --kubeconfig FILE     API server and credentials (default: $KUBECONFIG, the\n"
            "                        in-cluster service account, then ~/.kube/config)\n"
            "  --config FILE         YAML ControllerConfig (keys below)\n"
            "  --ledger FILE         SQLite GPU-hour ledger (sets ledger.path; \"\" = off)\n"
            "  --listen HOST:PORT    /metrics, reports and the dashboard, over HTTPS with\n"
            "                        authorisation (sets metricsAddress)\n"
            "  --health-listen HOST:PORT  /healthz and /readyz, plain HTTP (sets healthAddress)\n"
            "  --secure-serving=BOOL false: plain HTTP, no authentication, loopback only\n"
            "                        (http.secureServing)\n"
            "  --tls-cert-file FILE  serving certificate (http.tls.certFile)\n"
            "  --tls-key-file FILE   its key (http.tls.keyFile)\n"
            "  --leader-elect=BOOL   leader election on a Lease (leaderElection.enabled)\n"
            "  --pod-name NAME       identity in the Lease (default $POD_NAME, then hostname)\n"
            "  --log-level LEVEL     debug, info, warn, error (sets logLevel)\n"
            "  --version             the version, git commit and build date\n"
            "  --help                this text\n\n");
    fair_ctl_config_print_help(f);
}

struct app {
    struct event_base *base;
    struct fair_ctl *ctl;
    bool shutting_down;
};

static void on_shutdown_done(void *ctx)
{
    struct app *a = ctx;
    event_base_loopexit(a->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct app *a = arg;
    if (a->shutting_down) {
        event_base_loopexit(a->base, NULL); /* second signal: now */
        return;
    }
    a->shutting_down = true;
    FAIR_INFO("main", "msg=\"shutting down\" signal=%d", (int)sig);
    fair_ctl_shutdown(a->ctl, on_shutdown_done, a);
}

/* "--name=value" or "--name value". Returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc) {
        (*i)++;
        return argv[*i];
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct fair_ctl_config cfg;
    struct fair_error err = {0};
    const char *kubeconfig = NULL, *config = NULL, *ledger = NULL, *listen_addr = NULL;
    const char *leader = NULL, *pod_name = NULL, *log_level = NULL;
    const char *health_listen = NULL, *secure = NULL, *tls_cert = NULL, *tls_key = NULL;
    int rc = 1;
    struct app a = {0};
    struct event *sigterm = NULL, *sigint = NULL;
    struct fair_ctl_http *http = NULL;

    if (fair_ctl_config_init(&cfg)) {
        fprintf(stderr, "fairshare-controller: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            fair_ctl_config_release(&cfg);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            fair_version_print(stdout, "fairshare-controller");
            fair_ctl_config_release(&cfg);
            return 0;
        } else if ((v = opt_value(argc, argv, &i, "--kubeconfig"))) {
            kubeconfig = v;
        } else if ((v = opt_value(argc, argv, &i, "--config"))) {
            config = v;
        } else if ((v = opt_value(argc, argv, &i, "--ledger"))) {
            ledger = v;
        } else if ((v = opt_value(argc, argv, &i, "--listen"))) {
            listen_addr = v;
        } else if ((v = opt_value(argc, argv, &i, "--health-listen"))) {
            health_listen = v;
        } else if ((v = opt_value(argc, argv, &i, "--secure-serving"))) {
            secure = v;
        } else if (strcmp(argv[i], "--secure-serving") == 0) {
            secure = "true";
        } else if ((v = opt_value(argc, argv, &i, "--tls-cert-file"))) {
            tls_cert = v;
        } else if ((v = opt_value(argc, argv, &i, "--tls-key-file"))) {
            tls_key = v;
        } else if ((v = opt_value(argc, argv, &i, "--leader-elect"))) {
            leader = v;
        } else if (strcmp(argv[i], "--leader-elect") == 0) {
            leader = "true";
        } else if ((v = opt_value(argc, argv, &i, "--pod-name"))) {
            pod_name = v;
        } else if ((v = opt_value(argc, argv, &i, "--log-level"))) {
            log_level = v;
        } else {
            fprintf(stderr, "fairshare-controller: unknown or incomplete option \"%s\"\n\n",
                    argv[i]);
            usage(stderr);
            fair_ctl_config_release(&cfg);
            return 2;
        }
    }
    if (config && fair_ctl_config_load_file(&cfg, config, &err))
        goto bad_config;
    if (ledger && fair_ctl_config_set(&cfg, "ledger.path", ledger, &err))
        goto bad_config;
    if (listen_addr && fair_ctl_config_set(&cfg, "metricsAddress", listen_addr, &err))
        goto bad_config;
    if (health_listen && fair_ctl_config_set(&cfg, "healthAddress", health_listen, &err))
        goto bad_config;
    if (secure && fair_ctl_config_set(&cfg, "http.secureServing", secure, &err))
        goto bad_config;
    if (tls_cert && fair_ctl_config_set(&cfg, "http.tls.certFile", tls_cert, &err))
        goto bad_config;
    if (tls_key && fair_ctl_config_set(&cfg, "http.tls.keyFile", tls_key, &err))
        goto bad_config;
    if (leader && fair_ctl_config_set(&cfg, "leaderElection.enabled", leader, &err))
        goto bad_config;
    if (log_level && fair_ctl_config_set(&cfg, "logLevel", log_level, &err))
        goto bad_config;
    if (fair_ctl_config_check(&cfg, &err) || fair_ctl_http_check(&cfg, &err))
        goto bad_config;
    fair_log_set_level((enum fair_log_level)cfg.log_level);

    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    a.base = event_base_new();
    if (!a.base) {
        fprintf(stderr, "fairshare-controller: cannot create the event loop\n");
        goto out;
    }
    if (!pod_name)
        pod_name = getenv("POD_NAME");
    struct fair_ctl_options o = {.cfg = &cfg, .kubeconfig = kubeconfig, .identity = pod_name};
    if (fair_ctl_new(a.base, &o, &a.ctl, &err)) {
        fprintf(stderr, "fairshare-controller: %s\n", err.msg);
        goto out;
    }
    if (fair_ctl_start(a.ctl, &err)) {
        fprintf(stderr, "fairshare-controller: %s\n", err.msg);
        goto out;
    }
    if ((strcmp(cfg.metrics_address, "0") != 0 || strcmp(cfg.health_address, "0") != 0) &&
        fair_ctl_http_new(a.base, &cfg, a.ctl, &http, &err)) {
        fprintf(stderr, "fairshare-controller: %s\n", err.msg);
        goto out;
    }
    sigterm = evsignal_new(a.base, SIGTERM, on_signal, &a);
    sigint = evsignal_new(a.base, SIGINT, on_signal, &a);
    if (!sigterm || !sigint || evsignal_add(sigterm, NULL) || evsignal_add(sigint, NULL)) {
        fprintf(stderr, "fairshare-controller: cannot install signal handlers\n");
        goto out;
    }
    FAIR_INFO(
        "main",
        "msg=\"started\" version=%s commit=%s scheduler=%s leader_election=%s listen=%s health=%s "
        "secure_serving=%s ledger=\"%s\"",
        fair_version, fair_git_commit, cfg.scheduler_name, cfg.leader_elect ? "true" : "false",
        cfg.metrics_address, cfg.health_address, cfg.http_secure ? "true" : "false",
        cfg.ledger_path);
    event_base_dispatch(a.base);
    rc = fair_ctl_exit_code(a.ctl);
    FAIR_INFO("main", "msg=\"stopped\" exit=%d", rc);
    goto out;

bad_config:
    fprintf(stderr, "fairshare-controller: invalid configuration: %s\n", err.msg);
    fair_ctl_config_release(&cfg);
    return 2;
out:
    if (sigterm)
        event_free(sigterm);
    if (sigint)
        event_free(sigint);
    fair_ctl_http_free(http);
    fair_ctl_free(a.ctl);
    /* TLS connections are freed by finalizers that run from the loop:
     * let them run before the loop goes (fakekube's main.c explains). */
    if (a.base)
        event_base_loop(a.base, EVLOOP_NONBLOCK);
    if (a.base)
        event_base_free(a.base);
    curl_global_cleanup();
    fair_ctl_config_release(&cfg);
    return rc;
}
