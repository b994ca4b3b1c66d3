/* fakekube: a fake Kubernetes API server over TLS on 127.0.0.1, for
 * Fairshare's integration tests and demo. This file parses the flags,
 * sets up TLS, the state dir, the listener and signals, and runs the loop.
 * See docs/fakekube.md. */
#include "fakekube.h"

#include "base/alloc.h"
#include "base/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <limits.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

struct opt {
    const char *name;
    long *ival;        /* integer flag, or NULL */
    const char **sval; /* string flag, or NULL */
    long min, max;
    const char *help;
};

static long o_port = 0, o_history = 10000, o_nodes = 0, o_gpus = 8, o_kubelet = 0,
            o_kubelet_delay = 200, o_grace = 30, o_bookmark = 1000, o_persist = 2000,
            o_max_watchers = 1000;
static const char *o_state_dir, *o_token, *o_model = "NVIDIA-H100-80GB-HBM3", *o_port_file,
                                          *o_log_level = "info";

static const struct opt opts[] = {
    {"port", &o_port, NULL, 0, 65535, "TCP port on 127.0.0.1; 0 picks a free one"},
    {"state-dir", NULL, &o_state_dir, 0, 0, "folder for certificates, kubeconfig and state"},
    {"port-file", NULL, &o_port_file, 0, 0, "write the port here once listening"},
    {"token", NULL, &o_token, 0, 0, "bearer token (default: DIR/token, else random)"},
    {"history", &o_history, NULL, 1, 10000000, "watch events kept for watches from an rv"},
    {"nodes", &o_nodes, NULL, 0, 100000, "simulated GPU nodes made at start"},
    {"gpus-per-node", &o_gpus, NULL, 0, 1024, "nvidia.com/gpu per simulated node"},
    {"gpu-model", NULL, &o_model, 0, 0, "nvidia.com/gpu.product label of simulated nodes"},
    {"kubelet", &o_kubelet, NULL, 0, 1, "simulate the kubelet (flag, no value)"},
    {"kubelet-delay-ms", &o_kubelet_delay, NULL, 0, 600000, "bound -> Running delay"},
    {"grace-seconds", &o_grace, NULL, 0, 86400, "default terminationGracePeriodSeconds"},
    {"bookmark-ms", &o_bookmark, NULL, 0, 3600000, "watch bookmark interval; 0 = none"},
    {"persist-ms", &o_persist, NULL, 0, 3600000, "state save interval; 0 = only on exit"},
    {"max-watchers", &o_max_watchers, NULL, 1, 100000, "open watches allowed"},
    {"log-level", NULL, &o_log_level, 0, 0, "debug, info, warn, error or off"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: fakekube --state-dir DIR [options]\n");
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        fprintf(f, "  --%-18s %s\n", opts[i].name, opts[i].help);
}

static int parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "fakekube: unknown argument %s\n", a);
            goto bad;
        }
        const struct opt *o = NULL;
        for (size_t j = 0; j < sizeof(opts) / sizeof(opts[0]); j++)
            if (!strcmp(a + 2, opts[j].name))
                o = &opts[j];
        if (!o) {
            fprintf(stderr, "fakekube: unknown flag %s\n", a);
            goto bad;
        }
        if (o->ival == &o_kubelet) {
            o_kubelet = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fakekube: --%s needs a value\n", o->name);
            return -1;
        }
        const char *v = argv[++i];
        if (o->sval) {
            *o->sval = v;
            continue;
        }
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || end == v || n < o->min || n > o->max) {
            fprintf(stderr, "fakekube: --%s %s: expected an integer in [%ld, %ld]\n", o->name, v,
                    o->min, o->max);
            return -1;
        }
        *o->ival = n;
    }
    if (!o_state_dir) {
        fprintf(stderr, "fakekube: --state-dir is required\n");
        return -1;
    }
    return 0;
bad:
    usage(stderr);
    return -1;
}

static struct bufferevent *bevcb(struct event_base *base, void *arg)
{
    struct fk_server *s = arg;
    SSL *ssl = SSL_new(s->ssl);
    if (!ssl)
        return NULL;
    return bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                          BEV_OPT_CLOSE_ON_FREE);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct fk_server *s = arg;
    FAIR_INFO("fakekube", "msg=\"shutting down\" signal=%d", (int)sig);
    event_base_loopbreak(s->base);
}

static void persist_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fk_server *s = arg;
    /* Saving a large state blocks the loop: keep it under ~10% of the time
     * by waiting at least ten times as long as the last save took. */
    struct timeval now;
    gettimeofday(&now, NULL);
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_usec / 1000;
    if (!s->dirty || now_ms < s->persist_next_ms)
        return;
    fk_persist(s, 0);
    gettimeofday(&now, NULL);
    int64_t took = (int64_t)now.tv_sec * 1000 + now.tv_usec / 1000 - now_ms;
    s->persist_next_ms = now_ms + 10 * took;
}

static void pdb_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fk_server *s = arg;
    if (s->pdb_dirty) {
        s->pdb_dirty = 0;
        fk_pdb_sync(s);
    }
    if (s->job_dirty) {
        s->job_dirty = 0;
        fk_job_sync(s);
    }
}

static int load_token(struct fk_server *s)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/token", s->state_dir);
    if (o_token) {
        if (strlen(o_token) >= sizeof(s->token) || strlen(o_token) == 0) {
            fprintf(stderr, "fakekube: --token must have 1 to %zu characters\n",
                    sizeof(s->token) - 1);
            return -1;
        }
        snprintf(s->token, sizeof(s->token), "%s", o_token);
    } else {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(s->token, sizeof(s->token), f))
                s->token[0] = '\0';
            fclose(f);
            s->token[strcspn(s->token, "\r\n")] = '\0';
        }
        if (!s->token[0]) {
            unsigned char r[16];
            RAND_bytes(r, sizeof(r));
            for (size_t i = 0; i < sizeof(r); i++)
                snprintf(s->token + 2 * i, 3, "%02x", r[i]);
        }
    }
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    chmod(path, 0600);
    fprintf(f, "%s\n", s->token);
    return fclose(f) == 0 ? 0 : -1;
}

static int write_port_file(const char *path, int port)
{
    char tmp[PATH_MAX];
    int w = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (w < 0 || (size_t)w >= sizeof(tmp))
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

int main(int argc, char **argv)
{
    struct fk_server srv;
    struct fk_server *s = &srv;
    struct event *sig_term = NULL, *sig_int = NULL;
    int rc = 1;
    memset(s, 0, sizeof(*s));
    signal(SIGPIPE, SIG_IGN);
    /* Every watch holds a socket: raise the soft descriptor limit to the
     * hard one so that --max-watchers, not EMFILE, is what bounds them. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (parse_args(argc, argv))
        return 2;
    int lvl = fair_log_level_parse(o_log_level);
    if (lvl < 0) {
        fprintf(stderr, "fakekube: --log-level %s: expected debug, info, warn, error or off\n",
                o_log_level);
        return 2;
    }
    fair_log_set_level((enum fair_log_level)lvl);
    if (strlen(o_state_dir) >= sizeof(s->state_dir) - 32) {
        fprintf(stderr, "fakekube: --state-dir is too long\n");
        return 2;
    }
    snprintf(s->state_dir, sizeof(s->state_dir), "%s", o_state_dir);
    if (mkdir(s->state_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "fakekube: cannot create state dir %s: %s\n", s->state_dir,
                strerror(errno));
        return 1;
    }
    s->max_watchers = (size_t)o_max_watchers;
    s->bookmark_ms = (int)o_bookmark;
    s->grace_seconds = (int)o_grace;
    s->kubelet = (int)o_kubelet;
    s->kubelet_delay_ms = (int)o_kubelet_delay;
    s->persist_ms = (int)o_persist;

    /* Precise timers: the coarse monotonic clock libevent prefers can fire
     * an injected latency a few ms early. */
    struct event_config *cfg = event_config_new();
    if (cfg)
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    s->base = cfg ? event_base_new_with_config(cfg) : NULL;
    if (cfg)
        event_config_free(cfg);
    if (!s->base || fk_store_init(s, (size_t)o_history) != 0)
        goto out;
    if (load_token(s) != 0) {
        fprintf(stderr, "fakekube: cannot write %s/token\n", s->state_dir);
        goto out;
    }
    if (fk_load(s) != 0)
        goto out;
    if (fk_tls_setup(s) != 0) {
        fprintf(stderr, "fakekube: TLS set-up failed in %s\n", s->state_dir);
        goto out;
    }
    /* Namespaces every cluster has. */
    static const char *const base_ns[] = {"default", "kube-system", "kube-public",
                                          "kube-node-lease", NULL};
    for (size_t i = 0; base_ns[i]; i++) {
        if (fk_get(s, FK_NAMESPACES, base_ns[i]))
            continue;
        char uid[40], ts[32];
        fk_uuid(uid, sizeof(uid));
        fk_now_rfc3339(ts, sizeof(ts));
        json_t *ns = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{},s:{s:s}}", "kind", "Namespace",
                               "apiVersion", "v1", "metadata", "name", base_ns[i], "uid", uid,
                               "creationTimestamp", ts, "spec", "status", "phase", "Active");
        fk_namespace_name_label(ns, base_ns[i]);
        if (ns)
            fk_put(s, FK_NAMESPACES, base_ns[i], ns, FK_ADDED);
    }
    if (o_nodes > 0 && fk_sim_create_nodes(s, (int)o_nodes, (int)o_gpus, o_model) != 0)
        goto out;
    fk_sim_resume(s);

    s->http = evhttp_new(s->base);
    if (!s->http)
        goto out;
    evhttp_set_bevcb(s->http, bevcb, s);
    evhttp_set_gencb(s->http, fk_api_handle, s);
    evhttp_set_max_body_size(s->http, FK_MAX_BODY);
    evhttp_set_max_headers_size(s->http, 64 * 1024);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_PATCH | EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD);
    struct evhttp_bound_socket *bound =
        evhttp_bind_socket_with_handle(s->http, "127.0.0.1", (ev_uint16_t)o_port);
    if (!bound) {
        fprintf(stderr, "fakekube: cannot listen on 127.0.0.1:%ld\n", o_port);
        goto out;
    }
    struct sockaddr_in sin;
    socklen_t slen = sizeof(sin);
    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&sin, &slen) != 0)
        goto out;
    s->port = ntohs(sin.sin_port);
    if (fk_write_kubeconfig(s) != 0) {
        fprintf(stderr, "fakekube: cannot write %s/kubeconfig\n", s->state_dir);
        goto out;
    }
    sig_term = evsignal_new(s->base, SIGTERM, signal_cb, s);
    sig_int = evsignal_new(s->base, SIGINT, signal_cb, s);
    if (!sig_term || !sig_int || event_add(sig_term, NULL) || event_add(sig_int, NULL))
        goto out;
    if (s->persist_ms > 0) {
        s->persist_ev = event_new(s->base, -1, EV_PERSIST, persist_cb, s);
        struct timeval tv = {s->persist_ms / 1000, (s->persist_ms % 1000) * 1000};
        if (!s->persist_ev || event_add(s->persist_ev, &tv))
            goto out;
    }
    /* The disruption controller runs at most every 200 ms. */
    s->pdb_ev = event_new(s->base, -1, EV_PERSIST, pdb_cb, s);
    struct timeval pdb_tv = {0, 200 * 1000};
    if (!s->pdb_ev || event_add(s->pdb_ev, &pdb_tv))
        goto out;
    fk_persist(s, 0);
    if (o_port_file && write_port_file(o_port_file, s->port) != 0) {
        fprintf(stderr, "fakekube: cannot write --port-file %s\n", o_port_file);
        goto out;
    }
    FAIR_INFO("fakekube", "msg=listening port=%d state_dir=%s resourceVersion=%llu", s->port,
              s->state_dir, (unsigned long long)s->rv);
    event_base_dispatch(s->base);
    rc = fk_persist(s, 1) == 0 ? 0 : 1;
out:
    if (s->http)
        fk_watch_release_all(s);
    fk_deferred_release_all(s);
    fk_timers_release(s);
    fk_auth_release(s);
    if (s->http)
        evhttp_free(s->http);
    if (sig_term)
        event_free(sig_term);
    if (sig_int)
        event_free(sig_int);
    if (s->persist_ev)
        event_free(s->persist_ev);
    if (s->pdb_ev)
        event_free(s->pdb_ev);
    /* bufferevent_free() only drops a reference: a TLS connection is
     * destroyed (SSL_free, close) by a finalizer that runs from the loop,
     * and a connection that was mid-reply at the signal still has
     * callbacks queued that hold a reference to it. event_base_free()
     * cancels those without running them, so such a connection would
     * never be freed (LeakSanitizer then fails the exit). Run the loop
     * once more without blocking: it runs what is queued, which drops the
     * last references and runs the finalizers. Nothing else is registered
     * any more, so this returns at once. */
    if (s->base)
        event_base_loop(s->base, EVLOOP_NONBLOCK);
    fk_store_release(s);
    if (s->ssl)
        SSL_CTX_free(s->ssl);
    if (s->base)
        event_base_free(s->base);
    return rc;
}
