/* fairsharectl dashboard: serves the finance dashboard and the report
 * endpoints from a ledger file (read-only), without the controller. The
 * queries run on a query pool (lib/httpd/querypool.h), as in the
 * controller, with the same deadline. */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "httpd/dashboard.h"
#include "httpd/httpd.h"
#include "httpd/querypool.h"
#include "ledger/ledger.h"

#include "cmd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl dashboard --db FILE [--listen ADDR:PORT]\n"
               "\n"
               "Serves the dashboard at / and the JSON endpoints /api/v1/reports/gpu-hours,\n"
               "/api/v1/queues/samples and /api/v1/queues/current from a ledger file.\n"
               "--listen defaults to 127.0.0.1:8080; port 0 picks a free port. The first\n"
               "line on stdout is the URL. SIGINT or SIGTERM stops it.\n");
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static int parse_listen(const char *s, char *addr, size_t n, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= n)
        return -1;
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 0 || p > 65535)
        return -1;
    memcpy(addr, s, (size_t)(colon - s));
    addr[colon - s] = '\0';
    *port = (int)p;
    return 0;
}

int fair_cmd_dashboard(int argc, char **argv)
{
    const char *db = NULL, *listen = "127.0.0.1:8080";
    char addr[128];
    int port = 0, rc = 1;
    struct fair_error err = {0};
    struct fair_ledger *l = NULL;
    struct fair_httpd *srv = NULL;
    struct fair_querypool *pool = NULL;
    struct event_base *base = NULL;
    struct event *sigint = NULL, *sigterm = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            db = argv[++i];
        } else if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            listen = argv[++i];
        } else {
            fprintf(stderr, "fairsharectl dashboard: bad argument \"%s\"\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!db || parse_listen(listen, addr, sizeof(addr), &port)) {
        fprintf(stderr, "fairsharectl dashboard: %s\n\n",
                db ? "bad --listen: use ADDR:PORT" : "--db is required");
        usage(stderr);
        return 2;
    }
    struct fair_ledger_options o;
    fair_ledger_options_init(&o);
    o.path = db;
    o.readonly = 1;
    /* Opened here once so that a bad file fails at start; the pool's
     * threads open their own connections. */
    if (fair_ledger_open(&o, &l, &err))
        goto fail;
    fair_ledger_free(l);
    l = NULL;
    base = event_base_new();
    if (!base) {
        fair_error_set(&err, FAIR_ENOMEM, "cannot create the event loop");
        goto fail;
    }
    struct fair_querypool_options po = {.path = db};
    if (fair_httpd_new(base, addr, port, NULL, &srv, &err) ||
        fair_querypool_new(base, &po, &pool, &err))
        goto fail;
    if (fair_dashboard_register(srv, pool)) {
        fair_error_set(&err, FAIR_EINVAL, "cannot register the routes");
        goto fail;
    }
    sigint = evsignal_new(base, SIGINT, on_signal, base);
    sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    if (!sigint || !sigterm || evsignal_add(sigint, NULL) || evsignal_add(sigterm, NULL)) {
        fair_error_set(&err, FAIR_EIO, "cannot install signal handlers");
        goto fail;
    }
    printf("http://%s:%d/\n", addr, fair_httpd_port(srv));
    fflush(stdout);
    FAIR_INFO("dashboard", "msg=listening addr=%s port=%d db=%s", addr, fair_httpd_port(srv), db);
    event_base_dispatch(base);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "fairsharectl dashboard: %s\n", err.msg);
out:
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    fair_querypool_free(pool);
    fair_httpd_free(srv);
    if (base)
        event_base_free(base);
    fair_ledger_free(l);
    return rc;
}
