/* fairsharectl dashboard: serves the finance dashboard and the report
 * endpoints from a ledger file (read-only), without the controller. The
 * queries run on a query pool (lib/httpd/querypool.h), as in the
 * controller, with the same deadline.
 *
 * With --server it is instead a local proxy to a running controller: a
 * browser sends no bearer token, so the page is served here, on loopback,
 * and its three JSON requests are forwarded over HTTPS with the user's
 * token (cmd_server.c), asynchronously, through a lib/kube client.
 *
 * With --via-apiserver the same proxy goes through the API server's
 * service proxy instead: the client is the kubeconfig's (server, CA,
 * credentials of that hop), every path gets the proxy's prefix, and the
 * user's token rides in X-Fairshare-Authorization (an extra header of the
 * client: the API server drops Authorization before the controller). */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"
#include "base/yaml.h"
#include "httpd/auth.h"
#include "httpd/dashboard.h"
#include "httpd/httpd.h"
#include "httpd/querypool.h"
#include "kube/client.h"
#include "kube/config.h"
#include "ledger/ledger.h"

#include "cmd.h"

/* The JSON endpoints the page asks for (dashboard.h). */
static const char *const proxied[] = {"/api/v1/reports/gpu-hours", "/api/v1/queues/samples",
                                      "/api/v1/queues/current"};

static void usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl dashboard (--db FILE | --server https://HOST:PORT [auth] |\n"
               "         --via-apiserver [--controller-namespace NS] [--controller-port PORT]\n"
               "         [auth]) [--listen ADDR:PORT]\n"
               "\n"
               "Serves the dashboard at / and the JSON endpoints /api/v1/reports/gpu-hours,\n"
               "/api/v1/queues/samples and /api/v1/queues/current from a ledger file, or\n"
               "from a running controller (--server), to which it forwards them with your\n"
               "bearer token. --via-apiserver forwards them through the API server's\n"
               "service proxy (services/https:fairshare-controller:PORT in NS, default\n"
               "fairshare-system and 8080) with the kubeconfig's server, CA and\n"
               "credentials, and your token (--token, --token-file or the kubeconfig's) in\n"
               "X-Fairshare-Authorization; you need get on services/proxy there.\n"
               "--listen defaults to 127.0.0.1:8080; port 0 picks a free port.\n"
               "The first line on stdout is the URL. SIGINT or SIGTERM stops it.\n\n");
    fair_cmd_server_usage(f);
}

/* ---- --server: the proxy ---- */

struct proxy;

struct proxy_req {
    struct proxy *p;
    struct fair_httpd_req *req;
    struct fair_kreq *kreq;
    struct proxy_req *prev, *next;
};

struct proxy {
    struct fair_kclient *kc;
    const char *prefix;     /* "" or the API server's service proxy path */
    struct proxy_req *head; /* requests in flight, answered 503 at exit */
};

static void proxy_unlink(struct proxy_req *pr)
{
    if (pr->prev)
        pr->prev->next = pr->next;
    else
        pr->p->head = pr->next;
    if (pr->next)
        pr->next->prev = pr->prev;
}

static void on_proxied(const struct fair_kresponse *resp, void *ctx)
{
    struct proxy_req *pr = ctx;
    pr->kreq = NULL;
    proxy_unlink(pr);
    if (resp->status == 0) {
        static const char msg[] = "{\"error\":\"cannot reach the controller\"}\n";
        FAIR_WARN("dashboard", "msg=\"cannot reach the controller\" error=\"%s\"", resp->err.msg);
        fair_httpd_reply(pr->req, 502, "application/json", msg, sizeof msg - 1);
    } else {
        const char *b = resp->body ? resp->body : "";
        bool json = b[0] == '{' || b[0] == '[';
        fair_httpd_reply(pr->req, (int)resp->status,
                         json ? "application/json" : "text/plain; charset=utf-8", b,
                         resp->body_len);
    }
    fair_free(pr);
}

static void on_proxy_cancel(void *arg)
{
    struct proxy_req *pr = arg;
    if (pr->kreq)
        fair_kreq_cancel(pr->kreq);
    proxy_unlink(pr);
    fair_httpd_reply(pr->req, 503, "application/json", "", 0); /* only frees */
    fair_free(pr);
}

static void proxy_route(void *ctx, struct fair_httpd_req *req, const char *query)
{
    struct proxy *p = ctx;
    struct fair_buf path;
    struct fair_error err = {0};
    fair_buf_init(&path, 8192);
    struct proxy_req *pr = fair_calloc(1, sizeof *pr);
    if (!pr || fair_buf_appendf(&path, "%s%s%s%s", p->prefix, fair_httpd_req_path(req),
                                query ? "?" : "", query ? query : "")) {
        static const char oom[] = "{\"error\":\"out of memory\"}\n";
        fair_httpd_reply(req, 500, "application/json", oom, sizeof oom - 1);
        fair_free(pr);
        fair_buf_release(&path);
        return;
    }
    pr->p = p;
    pr->req = req;
    if (fair_kclient_request(p->kc, "GET", fair_buf_str(&path), NULL, NULL, 0, 0, on_proxied, pr,
                             &pr->kreq, &err)) {
        static const char bad[] = "{\"error\":\"cannot forward the request\"}\n";
        fair_httpd_reply(req, 502, "application/json", bad, sizeof bad - 1);
        fair_free(pr);
    } else {
        pr->next = p->head;
        if (p->head)
            p->head->prev = pr;
        p->head = pr;
        fair_httpd_req_on_cancel(req, on_proxy_cancel, pr);
    }
    fair_buf_release(&path);
}

/* A client for the controller at url with the given token and CA. */
static int proxy_client(struct event_base *base, const char *url, const struct fair_cmd_server *s,
                        char *token, struct fair_kclient **out, struct fair_error *err)
{
    struct fair_kconfig cfg;
    fair_kconfig_init(&cfg);
    int rc = 0;
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (!(cfg.server = fair_strndup(url, n)) || !(cfg.namespace_ = fair_strdup("default")) ||
        !(cfg.source = fair_strdup("fairsharectl dashboard --server"))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    cfg.token = token; /* taken */
    cfg.insecure = s->insecure;
    if (s->ca_file &&
        (rc = fair_read_file(s->ca_file, FAIR_KCONFIG_MAX_FILE, &cfg.ca, &cfg.ca_len, err))) {
        fair_error_prefix(err, "--ca-file: ");
        goto out;
    }
    struct fair_kclient_options ko = {0};
    fair_kclient_options_default(&ko);
    ko.qps = -1;
    ko.max_host_connections = 4;
    ko.request_timeout_ms = 120000;
    rc = fair_kclient_new(base, &cfg, &ko, out, err);
out:
    if (cfg.token)
        memset(cfg.token, 0, strlen(cfg.token));
    fair_kconfig_release(&cfg);
    return rc;
}

/* One request before serving, so that a bad token, CA or URL fails at
 * start rather than in the browser. */
static int proxy_check(struct fair_kclient *kc, const char *prefix, const char *url,
                       const char *ctl_ns, const char *ctl_port)
{
    long status = 0;
    char *body = NULL;
    struct fair_error err = {0};
    struct fair_buf path;
    fair_buf_init(&path, 4096);
    if (fair_buf_appendf(&path, "%s/api/v1/queues/current", prefix)) {
        fprintf(stderr, "fairsharectl dashboard: out of memory\n");
        fair_buf_release(&path);
        return 1;
    }
    fair_kclient_request_sync(kc, "GET", fair_buf_str(&path), NULL, 0, &status, &body, &err);
    fair_buf_release(&path);
    int rc = 0;
    if (status != 200) {
        if (status == 0)
            fprintf(stderr, "fairsharectl dashboard: cannot reach %s: %s\n", url, err.msg);
        else
            fprintf(stderr, "fairsharectl dashboard: %s answered %ld: %s\n", url, status,
                    body ? body : "");
        if (status == 403)
            fprintf(stderr,
                    "fairsharectl dashboard: the token's user needs get on "
                    "dashboard.fairshare.dev (ClusterRole fairshare-viewer or "
                    "fairshare-finance)%s\n",
                    ctl_ns ? " (and, for --via-apiserver, get on services/proxy in the "
                             "controller's namespace)"
                           : "");
        else if (status == 401 && ctl_ns)
            fprintf(stderr, "fairsharectl dashboard: the API server (the kubeconfig's "
                            "credentials) or the controller (the token) refused: see the "
                            "answer above\n");
        else if (ctl_ns && (status == 404 || status == 503))
            fprintf(stderr,
                    "fairsharectl dashboard: is the controller's Service fairshare-controller "
                    "in namespace %s, port %s? (--controller-namespace, --controller-port)\n",
                    ctl_ns, ctl_port);
        rc = 1;
    }
    free(body);
    return rc;
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

struct via {
    bool on;
    const char *ns, *port; /* --controller-namespace, --controller-port */
};

static int serve_proxy(const char *server, const struct fair_cmd_server *so, const struct via *via,
                       const char *addr, int port);

int fair_cmd_dashboard(int argc, char **argv)
{
    const char *db = NULL, *listen = "127.0.0.1:8080", *server = NULL;
    struct fair_cmd_server so = {0};
    struct via via = {0};
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
        } else if (strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
            server = argv[++i];
        } else if (strcmp(argv[i], "--via-apiserver") == 0 ||
                   strcmp(argv[i], "--via-apiserver=true") == 0) {
            via.on = true;
        } else if (strcmp(argv[i], "--controller-namespace") == 0 && i + 1 < argc && !via.ns) {
            via.ns = argv[++i];
        } else if (strcmp(argv[i], "--controller-port") == 0 && i + 1 < argc && !via.port) {
            via.port = argv[++i];
        } else if (fair_cmd_server_opt(&so, argc, argv, &i) > 0) {
            continue;
        } else {
            fprintf(stderr, "fairsharectl dashboard: bad argument \"%s\"\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    int sources = !!db + !!server + via.on;
    if (sources != 1 || parse_listen(listen, addr, sizeof(addr), &port)) {
        fprintf(stderr, "fairsharectl dashboard: %s\n\n",
                sources != 1 ? "give exactly one of --db FILE, --server URL and --via-apiserver"
                             : "bad --listen: use ADDR:PORT");
        usage(stderr);
        return 2;
    }
    char vmsg[128];
    if ((via.ns || via.port) && !via.on) {
        fprintf(stderr, "fairsharectl dashboard: --controller-namespace and --controller-port "
                        "work with --via-apiserver only\n\n");
        usage(stderr);
        return 2;
    }
    if (via.on && (so.ca_file || so.insecure)) {
        fprintf(stderr, "fairsharectl dashboard: --via-apiserver trusts the kubeconfig's CA: "
                        "--ca-file and --insecure-skip-tls-verify work with --server only\n\n");
        usage(stderr);
        return 2;
    }
    if (via.on && fair_cmd_via_target(&via.ns, &via.port, vmsg, sizeof vmsg)) {
        fprintf(stderr, "fairsharectl dashboard: %s\n\n", vmsg);
        usage(stderr);
        return 2;
    }
    if (server || via.on)
        return serve_proxy(server, &so, &via, addr, port);
    if (so.kubeconfig || so.context || so.token || so.token_file || so.ca_file || so.insecure) {
        fprintf(stderr, "fairsharectl dashboard: --token, --kubeconfig, --ca-file and the like "
                        "work with --server or --via-apiserver only\n\n");
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

/* --via-apiserver: a client of the kubeconfig's API server that adds the
 * user's token for the controller to every request. Returns 0 or 1
 * (printed). */
static int via_client(struct event_base *base, const struct fair_cmd_server *so,
                      struct fair_kclient **out, char **server_out)
{
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    char *token = NULL;
    struct fair_buf h;
    fair_buf_init(&h, FAIR_KCLIENT_MAX_HEADER_VALUE);
    *out = NULL;
    int rc = fair_cmd_via_apiserver("fairsharectl dashboard", so, &cfg, &token);
    if (rc)
        goto out;
    rc = 1;
    struct fair_kclient_options ko = {0};
    fair_kclient_options_default(&ko);
    ko.qps = -1;
    ko.max_host_connections = 4;
    ko.request_timeout_ms = 120000;
    if (!(*server_out = fair_strdup(cfg.server))) {
        fprintf(stderr, "fairsharectl dashboard: out of memory\n");
        goto out;
    }
    if (fair_kclient_new(base, &cfg, &ko, out, &err) || fair_buf_appendf(&h, "Bearer %s", token) ||
        fair_kclient_add_header(*out, FAIR_AUTH_ALT_HEADER, fair_buf_str(&h), &err)) {
        fprintf(stderr, "fairsharectl dashboard: --via-apiserver: %s\n",
                err.msg[0] ? err.msg : "the token is too long");
        fair_kclient_free(*out);
        *out = NULL;
        goto out;
    }
    rc = 0;
out:
    if (h.data)
        memset(h.data, 0, h.len);
    fair_buf_release(&h);
    if (token)
        memset(token, 0, strlen(token));
    fair_free(token);
    if (cfg.token)
        memset(cfg.token, 0, strlen(cfg.token));
    fair_kconfig_release(&cfg);
    return rc;
}

static int serve_proxy(const char *server, const struct fair_cmd_server *so, const struct via *via,
                       const char *addr, int port)
{
    char *token = NULL, *prefix = NULL, *apiserver = NULL;
    int rc = 0;
    struct fair_error err = {0};
    struct proxy proxy = {.prefix = ""};
    struct fair_httpd *srv = NULL;
    struct event_base *base = NULL;
    struct event *sigint = NULL, *sigterm = NULL;
    if (via->on) {
        rc = 1;
        if (!(base = event_base_new()) || !(prefix = fair_cmd_via_path(via->ns, via->port))) {
            fprintf(stderr, "fairsharectl dashboard: out of memory\n");
            goto out;
        }
        if (via_client(base, so, &proxy.kc, &apiserver))
            goto out;
        proxy.prefix = prefix;
        server = apiserver;
        if (proxy_check(proxy.kc, prefix, server, via->ns, via->port))
            goto out;
        goto serve;
    }
    if (strncmp(server, "https://", 8) != 0) {
        fprintf(stderr, "fairsharectl dashboard: --server must be an https:// URL (a controller "
                        "that serves plain http:// needs no proxy: open it in a browser)\n");
        return 2;
    }
    if ((rc = fair_cmd_server_token("fairsharectl dashboard", so, server, &token)))
        return rc;
    rc = 1;
    base = event_base_new();
    if (!base) {
        fair_free(token);
        fprintf(stderr, "fairsharectl dashboard: cannot create the event loop\n");
        return 1;
    }
    int crc = proxy_client(base, server, so, token, &proxy.kc, &err);
    token = NULL; /* taken */
    if (crc)
        goto fail;
    if (proxy_check(proxy.kc, "", server, NULL, NULL))
        goto out;
serve:
    rc = 1;
    if (fair_httpd_new(base, addr, port, NULL, &srv, &err))
        goto fail;
    if (fair_httpd_route(srv, "GET", "/", fair_dashboard_page, NULL)) {
        fair_error_set(&err, FAIR_EINVAL, "cannot register the routes");
        goto fail;
    }
    for (size_t i = 0; i < sizeof proxied / sizeof *proxied; i++)
        if (fair_httpd_route_async(srv, "GET", proxied[i], proxy_route, &proxy)) {
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
    FAIR_INFO("dashboard", "msg=\"forwarding to the controller\" addr=%s port=%d server=%s via=%s",
              addr, fair_httpd_port(srv), server, via->on ? "apiserver" : "direct");
    event_base_dispatch(base);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "fairsharectl dashboard: %s\n", err.msg);
out:
    while (proxy.head) {
        struct proxy_req *pr = proxy.head;
        if (pr->kreq)
            fair_kreq_cancel(pr->kreq);
        proxy_unlink(pr);
        static const char stopping[] = "{\"error\":\"stopping\"}\n";
        fair_httpd_reply(pr->req, 503, "application/json", stopping, sizeof stopping - 1);
        fair_free(pr);
    }
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    fair_httpd_free(srv);
    fair_kclient_free(proxy.kc);
    if (base)
        event_base_free(base);
    fair_free(prefix);
    fair_free(apiserver);
    return rc;
}
