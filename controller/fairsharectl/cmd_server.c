/* How fairsharectl's commands reach a running controller (`report
 * --server`, `dashboard --server`): the bearer token (--token,
 * --token-file, or the kubeconfig's user), the CA to trust (--ca-file) or
 * no verification at all (--insecure-skip-tls-verify, with a warning). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/yaml.h"
#include "kube/config.h"

#include "cmd.h"

#define MAX_TOKEN_FILE (64 * 1024)

int fair_cmd_server_opt(struct fair_cmd_server *s, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    static const struct {
        const char *name;
        size_t off;
    } table[] = {
        {"--kubeconfig", offsetof(struct fair_cmd_server, kubeconfig)},
        {"--context", offsetof(struct fair_cmd_server, context)},
        {"--token", offsetof(struct fair_cmd_server, token)},
        {"--token-file", offsetof(struct fair_cmd_server, token_file)},
        {"--ca-file", offsetof(struct fair_cmd_server, ca_file)},
    };
    if (strcmp(a, "--insecure-skip-tls-verify") == 0 ||
        strcmp(a, "--insecure-skip-tls-verify=true") == 0) {
        s->insecure = true;
        return 1;
    }
    for (size_t k = 0; k < sizeof table / sizeof *table; k++) {
        size_t len = strlen(table[k].name);
        if (strncmp(a, table[k].name, len) != 0 || (a[len] != '\0' && a[len] != '='))
            continue;
        const char *val = NULL;
        if (a[len] == '=')
            val = a + len + 1;
        else if (*i + 1 < argc)
            val = argv[++*i];
        else
            return -1;
        const char **slot = (const char **)((char *)s + table[k].off);
        if (*slot)
            return -1;
        *slot = val;
        return 1;
    }
    return 0;
}

void fair_cmd_server_usage(FILE *f)
{
    fprintf(f,
            "  Talking to a controller (--server https://HOST:PORT):\n"
            "  --token TOKEN | --token-file FILE   the bearer token to send; else the user\n"
            "                        token of --kubeconfig/--context ($KUBECONFIG,\n"
            "                        ~/.kube/config, or the pod's service account)\n"
            "  --kubeconfig FILE, --context NAME   where that token comes from\n"
            "  --ca-file FILE        CA (or the controller's own certificate) to trust; default:\n"
            "                        the system's CAs\n"
            "  --insecure-skip-tls-verify  do not check the server's certificate (warns)\n"
            "  Tokens are never sent over plain http://. The controller checks the token\n"
            "  with a TokenReview and needs get on reports.fairshare.dev for reports\n"
            "  (ClusterRole fairshare-finance); see docs/operations.md.\n");
}

char *fair_cmd_default_kubeconfig(void)
{
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        const char *colon = strchr(env, ':');
        return colon ? fair_strndup(env, (size_t)(colon - env)) : fair_strdup(env);
    }
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + 16;
    char *p = fair_malloc(n);
    if (p)
        snprintf(p, n, "%s/.kube/config", home);
    return p;
}

int fair_cmd_server_token(const char *prog, const struct fair_cmd_server *s, const char *url,
                          char **token)
{
    *token = NULL;
    bool https = strncmp(url, "https://", 8) == 0;
    if (!https && strncmp(url, "http://", 7) != 0) {
        fprintf(stderr,
                "%s: --server must be an https:// (or, for a local controller, "
                "http://) URL\n",
                prog);
        return 2;
    }
    if (s->token && s->token_file) {
        fprintf(stderr, "%s: give at most one of --token and --token-file\n", prog);
        return 2;
    }
    if (!https && (s->token || s->token_file)) {
        fprintf(stderr,
                "%s: refusing to send a bearer token over plain http:// (use the "
                "controller's https:// address)\n",
                prog);
        return 2;
    }
    if (s->insecure && https)
        fprintf(stderr,
                "%s: warning: --insecure-skip-tls-verify: the server's certificate is not "
                "checked, so anyone on the network path can read the answer and your token\n",
                prog);
    if (!https)
        return 0; /* a loopback controller with http.secureServing false */
    if (s->token) {
        if (!(*token = fair_strdup(s->token)))
            return 1;
        return 0;
    }
    struct fair_error err = {0};
    if (s->token_file) {
        char *data = NULL;
        size_t len = 0;
        if (fair_read_file(s->token_file, MAX_TOKEN_FILE, &data, &len, &err)) {
            fprintf(stderr, "%s: --token-file: %s\n", prog, err.msg);
            return 1;
        }
        while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' '))
            data[--len] = '\0';
        if (!len || strpbrk(data, "\r\n")) {
            fprintf(stderr, "%s: --token-file %s: expected one line with the token\n", prog,
                    s->token_file);
            fair_free(data);
            return 1;
        }
        *token = data;
        return 0;
    }
    /* The kubeconfig's user, as kubectl would authenticate. */
    bool explicit_cfg = s->kubeconfig || s->context;
    struct fair_kconfig cfg;
    fair_kconfig_init(&cfg);
    int rc;
    if (s->context) {
        char *path = s->kubeconfig ? fair_strdup(s->kubeconfig) : fair_cmd_default_kubeconfig();
        rc = path ? fair_kconfig_load_kubeconfig(path, s->context, &cfg, &err)
                  : fair_error_set(&err, FAIR_EINVAL, "no kubeconfig to find --context in");
        fair_free(path);
    } else {
        rc = fair_kconfig_load(s->kubeconfig, &cfg, &err);
    }
    if (rc) {
        if (explicit_cfg) {
            fprintf(stderr, "%s: %s\n", prog, err.msg);
            return 1;
        }
        return 0; /* no kubeconfig: no token; the server will say 401 */
    }
    if (!cfg.token) {
        if (explicit_cfg) {
            fprintf(stderr,
                    "%s: %s: the user has no bearer token (a client certificate cannot be "
                    "checked by a TokenReview); give --token or --token-file, e.g. from "
                    "`kubectl create token SERVICEACCOUNT`\n",
                    prog, cfg.source ? cfg.source : "kubeconfig");
            fair_kconfig_release(&cfg);
            return 1;
        }
    } else {
        *token = cfg.token;
        cfg.token = NULL;
    }
    fair_kconfig_release(&cfg);
    return 0;
}

int fair_cmd_via_apiserver(const char *prog, const struct fair_cmd_server *s,
                           struct fair_kconfig *kc, char **token)
{
    struct fair_error err = {0};
    int rc;
    *token = NULL;
    fair_kconfig_init(kc);
    if (s->context) {
        char *path = s->kubeconfig ? fair_strdup(s->kubeconfig) : fair_cmd_default_kubeconfig();
        rc = path ? fair_kconfig_load_kubeconfig(path, s->context, kc, &err)
                  : fair_error_set(&err, FAIR_EINVAL, "no kubeconfig to find --context in");
        fair_free(path);
    } else {
        rc = fair_kconfig_load(s->kubeconfig, kc, &err);
    }
    if (rc) {
        fprintf(stderr, "%s: --via-apiserver: %s\n", prog, err.msg);
        return 1;
    }
    rc = 0;
    if (s->token || s->token_file)
        rc = fair_cmd_server_token(prog, s, kc->server, token);
    else if (kc->token && !(*token = fair_strdup(kc->token)))
        rc = 1;
    if (!rc && !*token) {
        fprintf(stderr,
                "%s: --via-apiserver: %s has no bearer token for the "
                "controller (a client certificate is not passed on by the API server's "
                "proxy): give --token or --token-file (e.g. `kubectl create token "
                "SERVICEACCOUNT`), or use `kubectl port-forward` and --server\n",
                prog, kc->source ? kc->source : "the kubeconfig");
        rc = 1;
    }
    return rc;
}

int fair_cmd_via_target(const char **ns, const char **port, char *msg, size_t n)
{
    static const char dns[] = "abcdefghijklmnopqrstuvwxyz0123456789-";
    if (!*ns)
        *ns = "fairshare-system";
    if (!*port)
        *port = "8080";
    if (strspn(*ns, dns) != strlen(*ns) || !**ns || strlen(*ns) > 63) {
        snprintf(msg, n, "bad --controller-namespace \"%s\"", *ns);
        return -1;
    }
    if (strspn(*port, dns) != strlen(*port) || !**port || strlen(*port) > 15) {
        snprintf(msg, n, "bad --controller-port \"%s\"", *port);
        return -1;
    }
    return 0;
}

char *fair_cmd_via_path(const char *ns, const char *port)
{
    size_t n = strlen(ns) + strlen(port) + 96;
    char *p = fair_malloc(n);
    if (p)
        snprintf(p, n, "/api/v1/namespaces/%s/services/https:fairshare-controller:%s/proxy", ns,
                 port);
    return p;
}
