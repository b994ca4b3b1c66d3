/* fairsharectl's subcommands. Each returns the process exit status:
 * 0 success, 1 failure while running, 2 bad usage (with a usage message). */
#ifndef FAIR_CTL_CMD_H
#define FAIR_CTL_CMD_H

struct fair_cmd {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
};

int fair_cmd_report(int argc, char **argv);
int fair_cmd_simulate(int argc, char **argv);
int fair_cmd_dashboard(int argc, char **argv);
int fair_cmd_ledger(int argc, char **argv);
int fair_cmd_queues(int argc, char **argv);
int fair_cmd_why(int argc, char **argv);
int fair_cmd_top(int argc, char **argv);
int fair_cmd_completion(int argc, char **argv);

/* Talking to a running controller (cmd_server.c). */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct fair_kconfig;

struct fair_cmd_server {
    const char *kubeconfig, *context, *token, *token_file, *ca_file; /* borrowed from argv */
    bool insecure;
};
/* Reads argv[*i] if it is one of the options above (advancing *i past
 * its value): 1 when it was, 0 when not, -1 when its value is missing or
 * it was given twice. */
int fair_cmd_server_opt(struct fair_cmd_server *s, int argc, char **argv, int *i);
/* Prints the options' help. */
void fair_cmd_server_usage(FILE *f);
/* The bearer token to send to url (*token malloc'd, or NULL: none), from
 * --token, --token-file or the kubeconfig; prints the warning of
 * --insecure-skip-tls-verify. Returns 0, 1 (error, printed) or 2 (usage,
 * printed). prog prefixes messages ("fairsharectl report"). */
int fair_cmd_server_token(const char *prog, const struct fair_cmd_server *s, const char *url,
                          char **token);

/* --via-apiserver (report, dashboard): the controller through the API
 * server's service proxy. The kubeconfig (--kubeconfig, --context, else
 * as kubectl finds it) gives the API server, its CA and the first hop's
 * credentials (into *kc, initialised here; release it); *token (malloc'd)
 * is the user's token for the controller (--token, --token-file, else the
 * kubeconfig user's), sent in X-Fairshare-Authorization since the proxy
 * drops Authorization. A user with only a client certificate has none:
 * the error says so. Returns 0, 1 (error, printed) or 2 (usage, printed). */
int fair_cmd_via_apiserver(const char *prog, const struct fair_cmd_server *s,
                           struct fair_kconfig *kc, char **token);
/* Checks --controller-namespace and --controller-port (NULL: the defaults
 * fairshare-system and 8080, stored back): 0, or -1 with a message for
 * the caller's usage error in msg. */
int fair_cmd_via_target(const char **ns, const char **port, char *msg, size_t n);
/* The proxy's path to the controller's Service, without a trailing '/':
 * /api/v1/namespaces/NS/services/https:fairshare-controller:PORT/proxy
 * (malloc'd), or NULL when out of memory. */
char *fair_cmd_via_path(const char *ns, const char *port);

/* The first entry of $KUBECONFIG, else ~/.kube/config (malloc'd), or NULL. */
char *fair_cmd_default_kubeconfig(void);

/* kubectl's flags, for the commands that read the API server
 * (cmd_kube.c); all borrowed from argv. */
struct fair_cmd_kube {
    const char *kubeconfig, *context, *namespace_, *output;
    bool all_namespaces;
};
/* Reads argv[*i] if it is one of --kubeconfig, --context, -n/--namespace,
 * -A/--all-namespaces, -o/--output (advancing *i past its value): 1 when
 * it was, 0 when not, -1 when its value is missing or given twice. */
int fair_cmd_kube_flag(struct fair_cmd_kube *k, int argc, char **argv, int *i);
void fair_cmd_kube_usage(FILE *f);

#endif
