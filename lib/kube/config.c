/* Kubeconfig and in-cluster configuration (see config.h). Every failure
 * names the file and the key; nothing here trusts the file's shape. */
#include "kube/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/yaml.h"

void fair_kconfig_init(struct fair_kconfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
}

void fair_kconfig_release(struct fair_kconfig *cfg)
{
    if (!cfg)
        return;
    fair_free(cfg->server);
    fair_free(cfg->ca);
    fair_free(cfg->cert);
    if (cfg->key) /* a private key: wipe before freeing */
        memset(cfg->key, 0, cfg->key_len);
    fair_free(cfg->key);
    fair_free(cfg->token);
    fair_free(cfg->token_file);
    fair_free(cfg->namespace_);
    fair_free(cfg->source);
    fair_kconfig_init(cfg);
}

static int dup_mem(char **dst, size_t *dlen, const char *src, size_t len)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = fair_malloc(len + 1);
    if (!*dst)
        return FAIR_ENOMEM;
    memcpy(*dst, src, len);
    (*dst)[len] = '\0';
    if (dlen)
        *dlen = len;
    return 0;
}

int fair_kconfig_copy(struct fair_kconfig *dst, const struct fair_kconfig *src,
                      struct fair_error *err)
{
    fair_kconfig_init(dst);
    int rc = 0;
    if ((rc = dup_mem(&dst->server, NULL, src->server, src->server ? strlen(src->server) : 0)) ||
        (rc = dup_mem(&dst->ca, &dst->ca_len, src->ca, src->ca_len)) ||
        (rc = dup_mem(&dst->cert, &dst->cert_len, src->cert, src->cert_len)) ||
        (rc = dup_mem(&dst->key, &dst->key_len, src->key, src->key_len)) ||
        (rc = dup_mem(&dst->token, NULL, src->token, src->token ? strlen(src->token) : 0)) ||
        (rc = dup_mem(&dst->token_file, NULL, src->token_file,
                      src->token_file ? strlen(src->token_file) : 0)) ||
        (rc = dup_mem(&dst->namespace_, NULL, src->namespace_,
                      src->namespace_ ? strlen(src->namespace_) : 0)) ||
        (rc = dup_mem(&dst->source, NULL, src->source, src->source ? strlen(src->source) : 0))) {
        fair_kconfig_release(dst);
        return fair_error_set(err, rc, "kube config: out of memory");
    }
    dst->token_mtime = src->token_mtime;
    dst->token_read_ms = src->token_read_ms;
    dst->insecure = src->insecure;
    return 0;
}

/* ---- base64 ----------------------------------------------------------- */

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int fair_base64_decode(const char *in, size_t len, char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    char *o = fair_malloc(len / 4 * 3 + 4);
    if (!o)
        return FAIR_ENOMEM;
    size_t n = 0, pad = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64val(c);
        if (v < 0 || pad) /* bad character, or data after padding */
            goto bad;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    /* 6 leftover bits cannot encode a byte; more than 2 '=' is invalid. */
    if (bits >= 6 || pad > 2)
        goto bad;
    o[n] = '\0';
    *out = o;
    *out_len = n;
    return 0;
bad:
    fair_free(o);
    return FAIR_EINVAL;
}

/* ---- kubeconfig ------------------------------------------------------- */

struct kc {
    const char *path;
    char *dir; /* the file's directory, for relative paths */
    struct fair_error *err;
};

__attribute__((format(printf, 3, 4))) static int kc_fail(struct kc *k, int code, const char *fmt,
                                                         ...)
{
    char msg[FAIR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fair_error_set(k->err, code, "kubeconfig %s: %s", k->path, msg);
}

/* A string member: required or optional; wrong types always fail. */
static int kc_str(struct kc *k, const json_t *o, const char *key, const char *where, bool required,
                  const char **out)
{
    *out = NULL;
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return kc_fail(k, FAIR_EINVAL, "%s.%s: missing", where, key);
        return 0;
    }
    if (!json_is_string(v))
        return kc_fail(k, FAIR_EINVAL, "%s.%s: want a string", where, key);
    *out = json_string_value(v);
    return 0;
}

/* Finds the entry of list `key` (clusters, users, contexts) named name.
 * *idx gets its position, for messages. */
static int kc_find(struct kc *k, const json_t *root, const char *key, const char *name,
                   const char *referrer, const json_t **body, size_t *idx)
{
    const json_t *arr = json_object_get(root, key);
    if (arr && !json_is_null(arr) && !json_is_array(arr))
        return kc_fail(k, FAIR_EINVAL, "%s: want a list", key);
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (!json_is_object(e))
            return kc_fail(k, FAIR_EINVAL, "%s[%zu]: want a mapping", key, i);
        const json_t *n = json_object_get(e, "name");
        if (!json_is_string(n))
            return kc_fail(k, FAIR_EINVAL, "%s[%zu].name: missing or not a string", key, i);
        if (strcmp(json_string_value(n), name))
            continue;
        /* the body is under the singular key: clusters[].cluster, ... */
        char sub[16];
        snprintf(sub, sizeof sub, "%.*s", (int)strlen(key) - 1, key);
        const json_t *b = json_object_get(e, sub);
        if (!json_is_object(b))
            return kc_fail(k, FAIR_EINVAL, "%s[%zu].%s: missing or not a mapping", key, i, sub);
        *body = b;
        *idx = i;
        return 0;
    }
    return kc_fail(k, FAIR_EINVAL, "%s \"%s\" not found in %s", referrer, name, key);
}

static int read_path(struct kc *k, const char *p, const char *what, char **data, size_t *len)
{
    struct fair_buf full;
    fair_buf_init(&full, 4096);
    int rc = 0;
    if (p[0] != '/' && k->dir)
        rc = fair_buf_appendf(&full, "%s/%s", k->dir, p);
    else
        rc = fair_buf_appends(&full, p);
    if (rc) {
        fair_buf_release(&full);
        return kc_fail(k, rc, "%s: path too long", what);
    }
    struct fair_error fe = {0};
    rc = fair_read_file(fair_buf_str(&full), FAIR_KCONFIG_MAX_FILE, data, len, &fe);
    fair_buf_release(&full);
    if (rc)
        return kc_fail(k, rc, "%s: %s", what, fe.msg);
    return 0;
}

/* `<key>-data` (base64) or `<key>` (a file), into *data. */
static int kc_blob(struct kc *k, const json_t *o, const char *key, const char *where, char **data,
                   size_t *len)
{
    char dkey[64], what[160];
    snprintf(dkey, sizeof dkey, "%s-data", key);
    const char *b64, *file;
    int rc;
    if ((rc = kc_str(k, o, dkey, where, false, &b64)) ||
        (rc = kc_str(k, o, key, where, false, &file)))
        return rc;
    if (b64) {
        rc = fair_base64_decode(b64, strlen(b64), data, len);
        if (rc == FAIR_EINVAL)
            return kc_fail(k, rc, "%s.%s: not valid base64", where, dkey);
        if (rc)
            return kc_fail(k, rc, "%s.%s: out of memory", where, dkey);
        if (*len == 0) {
            fair_free(*data);
            *data = NULL;
            return kc_fail(k, FAIR_EINVAL, "%s.%s: empty", where, dkey);
        }
        return 0;
    }
    if (file) {
        snprintf(what, sizeof what, "%s.%s", where, key);
        return read_path(k, file, what, data, len);
    }
    return 0;
}

static int check_server(const char *server, const char *source, struct fair_error *err)
{
    if (!strncmp(server, "http://", 7))
        return fair_error_set(err, FAIR_EINVAL,
                              "%s: server %s uses plain http://; Fairshare only talks to the API "
                              "server over https:// (fix the server URL)",
                              source, server);
    if (strncmp(server, "https://", 8) || !server[8])
        return fair_error_set(err, FAIR_EINVAL, "%s: server \"%s\" is not an https:// URL", source,
                              server);
    if (strlen(server) > 2048)
        return fair_error_set(err, FAIR_ERANGE, "%s: server URL too long", source);
    return 0;
}

static int set_server(struct fair_kconfig *cfg, const char *s)
{
    size_t n = strlen(s);
    while (n > 8 && s[n - 1] == '/')
        n--;
    cfg->server = fair_strndup(s, n);
    return cfg->server ? 0 : FAIR_ENOMEM;
}

static int read_token_file(struct fair_kconfig *cfg, int64_t mono_now_ms, struct fair_error *err)
{
    struct stat st;
    if (stat(cfg->token_file, &st) != 0)
        return fair_error_set(err, FAIR_EIO, "token file %s: %s", cfg->token_file, strerror(errno));
    char *data = NULL;
    size_t len = 0;
    int rc = fair_read_file(cfg->token_file, 64 * 1024, &data, &len, err);
    if (rc)
        return rc;
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' '))
        data[--len] = '\0';
    if (len == 0 || memchr(data, '\n', len)) {
        fair_free(data);
        return fair_error_set(err, FAIR_EINVAL, "token file %s: empty or not a single line",
                              cfg->token_file);
    }
    fair_free(cfg->token);
    cfg->token = data;
    cfg->token_mtime = st.st_mtim;
    cfg->token_read_ms = mono_now_ms;
    return 0;
}

int fair_kconfig_refresh_token(struct fair_kconfig *cfg, int64_t mono_now_ms,
                               struct fair_error *err)
{
    if (!cfg->token_file)
        return 0;
    struct stat st;
    bool changed =
        stat(cfg->token_file, &st) == 0 && (st.st_mtim.tv_sec != cfg->token_mtime.tv_sec ||
                                            st.st_mtim.tv_nsec != cfg->token_mtime.tv_nsec);
    if (!changed && mono_now_ms - cfg->token_read_ms < FAIR_KCONFIG_TOKEN_REFRESH_MS)
        return 0;
    return read_token_file(cfg, mono_now_ms, err);
}

int fair_kconfig_load_kubeconfig(const char *path, const char *context, struct fair_kconfig *cfg,
                                 struct fair_error *err)
{
    struct kc k = {.path = path, .dir = NULL, .err = err};
    json_t *docs = NULL;
    int rc = 0;
    fair_kconfig_init(cfg);
    struct fair_yaml_limits lim = {.max_bytes = FAIR_KCONFIG_MAX_FILE, .max_depth = 16};
    struct fair_error ye = {0};
    if ((rc = fair_yaml_load_file(path, &lim, &docs, &ye))) {
        fair_error_set(err, rc, "kubeconfig %s: %s", path, ye.msg);
        goto out;
    }
    const char *slash = strrchr(path, '/');
    k.dir = slash ? fair_strndup(path, (size_t)(slash - path)) : fair_strdup(".");
    if (!k.dir) {
        rc = kc_fail(&k, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    const json_t *root = json_array_get(docs, 0);
    if (!json_is_object(root)) {
        rc = kc_fail(&k, FAIR_EINVAL, "not a kubeconfig (want a mapping at the top)");
        goto out;
    }
    const char *ctx_name = context;
    if (!ctx_name) {
        if ((rc = kc_str(&k, root, "current-context", "", false, &ctx_name)))
            goto out;
        if (!ctx_name || !ctx_name[0]) {
            rc = kc_fail(&k, FAIR_EINVAL, "current-context: missing (or pass a context)");
            goto out;
        }
    }
    const json_t *ctx, *cluster, *user = NULL;
    size_t ci, cli, ui;
    if ((rc = kc_find(&k, root, "contexts", ctx_name, "context", &ctx, &ci)))
        goto out;
    char where[96];
    snprintf(where, sizeof where, "contexts[%zu].context", ci);
    const char *cluster_name, *user_name, *ns;
    if ((rc = kc_str(&k, ctx, "cluster", where, true, &cluster_name)) ||
        (rc = kc_str(&k, ctx, "user", where, false, &user_name)) ||
        (rc = kc_str(&k, ctx, "namespace", where, false, &ns)))
        goto out;
    char ref[128];
    snprintf(ref, sizeof ref, "%s.cluster", where);
    if ((rc = kc_find(&k, root, "clusters", cluster_name, ref, &cluster, &cli)))
        goto out;
    if (user_name) {
        snprintf(ref, sizeof ref, "%s.user", where);
        if ((rc = kc_find(&k, root, "users", user_name, ref, &user, &ui)))
            goto out;
    }
    snprintf(where, sizeof where, "clusters[%zu].cluster", cli);
    const char *server;
    if ((rc = kc_str(&k, cluster, "server", where, true, &server)))
        goto out;
    char source[FAIR_ERROR_MSG_MAX / 2];
    snprintf(source, sizeof source, "kubeconfig %s: %s.server", path, where);
    if ((rc = check_server(server, source, err)))
        goto out;
    if ((rc = set_server(cfg, server)))
        goto oom;
    const json_t *insecure = json_object_get(cluster, "insecure-skip-tls-verify");
    if (insecure && !json_is_boolean(insecure) && !json_is_null(insecure)) {
        rc = kc_fail(&k, FAIR_EINVAL, "%s.insecure-skip-tls-verify: want true or false", where);
        goto out;
    }
    cfg->insecure = json_is_true(insecure);
    if ((rc = kc_blob(&k, cluster, "certificate-authority", where, &cfg->ca, &cfg->ca_len)))
        goto out;
    if (user) {
        snprintf(where, sizeof where, "users[%zu].user", ui);
        if ((rc = kc_blob(&k, user, "client-certificate", where, &cfg->cert, &cfg->cert_len)) ||
            (rc = kc_blob(&k, user, "client-key", where, &cfg->key, &cfg->key_len)))
            goto out;
        if (!cfg->cert != !cfg->key) {
            rc = kc_fail(&k, FAIR_EINVAL,
                         "%s: client-certificate and client-key go together "
                         "(one is missing)",
                         where);
            goto out;
        }
        const char *token, *token_file;
        if ((rc = kc_str(&k, user, "token", where, false, &token)) ||
            (rc = kc_str(&k, user, "tokenFile", where, false, &token_file)))
            goto out;
        if (token && !(cfg->token = fair_strdup(token)))
            goto oom;
        if (!token && token_file) {
            struct fair_buf full;
            fair_buf_init(&full, 4096);
            /* A failed append must not leave a path relative to the
             * working directory instead of the file's. */
            if ((token_file[0] != '/' && fair_buf_appendf(&full, "%s/", k.dir)) ||
                fair_buf_appends(&full, token_file) ||
                !(cfg->token_file = fair_buf_detach(&full))) {
                fair_buf_release(&full);
                goto oom;
            }
            struct fair_error te = {0};
            if ((rc = read_token_file(cfg, fair_mono_ms(fair_clock_system()), &te))) {
                rc = kc_fail(&k, rc, "%s.tokenFile: %s", where, te.msg);
                goto out;
            }
        }
        if (json_object_get(user, "exec") || json_object_get(user, "auth-provider")) {
            if (!cfg->token && !cfg->cert) {
                rc = kc_fail(&k, FAIR_EINVAL,
                             "%s: exec and auth-provider plugins are not "
                             "supported; use a token or a client certificate",
                             where);
                goto out;
            }
        }
    }
    if (!(cfg->namespace_ = fair_strdup(ns && ns[0] ? ns : "default")))
        goto oom;
    struct fair_buf src;
    fair_buf_init(&src, 4096);
    if (fair_buf_appendf(&src, "kubeconfig %s (context %s)", path, ctx_name) ||
        !(cfg->source = fair_buf_detach(&src))) {
        fair_buf_release(&src);
        goto oom;
    }
    goto out;
oom:
    rc = kc_fail(&k, FAIR_ENOMEM, "out of memory");
out:
    json_decref(docs);
    fair_free(k.dir);
    if (rc)
        fair_kconfig_release(cfg);
    else if (cfg->insecure)
        /* Once per load, not per client or request: the controller makes
         * two clients from one load. */
        FAIR_WARN("kube",
                  "msg=\"TLS verification is off (insecure-skip-tls-verify: true): the API "
                  "server's certificate is not checked, so anyone on the network path can "
                  "read the bearer token and forge answers; set certificate-authority "
                  "instead\" source=\"%s\" server=%s",
                  cfg->source, cfg->server);
    return rc;
}

int fair_kconfig_load_incluster(const char *sa_dir, struct fair_kconfig *cfg,
                                struct fair_error *err)
{
    int rc = 0;
    struct fair_buf b;
    fair_buf_init(&b, 8192);
    fair_kconfig_init(cfg);
    if (!sa_dir)
        sa_dir = FAIR_KCONFIG_SA_DIR;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !host[0] || !port || !port[0]) {
        rc = fair_error_set(err, FAIR_EINVAL,
                            "in-cluster config: KUBERNETES_SERVICE_HOST and "
                            "KUBERNETES_SERVICE_PORT must be set (not running in a pod?)");
        goto out;
    }
    /* IPv6 addresses need brackets in URLs. */
    if (strchr(host, ':'))
        rc = fair_buf_appendf(&b, "https://[%s]:%s", host, port);
    else
        rc = fair_buf_appendf(&b, "https://%s:%s", host, port);
    if (rc || !(cfg->server = fair_buf_detach(&b)))
        goto oom;
    if ((rc = fair_buf_appendf(&b, "%s/token", sa_dir)) || !(cfg->token_file = fair_buf_detach(&b)))
        goto oom;
    if ((rc = read_token_file(cfg, fair_mono_ms(fair_clock_system()), err)))
        goto prefix;
    if ((rc = fair_buf_appendf(&b, "%s/ca.crt", sa_dir)))
        goto oom;
    if ((rc = fair_read_file(fair_buf_str(&b), FAIR_KCONFIG_MAX_FILE, &cfg->ca, &cfg->ca_len, err)))
        goto prefix;
    fair_buf_reset(&b);
    if ((rc = fair_buf_appendf(&b, "%s/namespace", sa_dir)))
        goto oom;
    char *ns = NULL;
    size_t nlen = 0;
    if (fair_read_file(fair_buf_str(&b), 4096, &ns, &nlen, NULL) == 0) {
        while (nlen && (ns[nlen - 1] == '\n' || ns[nlen - 1] == ' '))
            ns[--nlen] = '\0';
        if (nlen)
            cfg->namespace_ = ns;
        else
            fair_free(ns);
    }
    if (!cfg->namespace_ && !(cfg->namespace_ = fair_strdup("default")))
        goto oom;
    if (!(cfg->source = fair_strdup("in-cluster")))
        goto oom;
    goto out;
oom:
    rc = fair_error_set(err, FAIR_ENOMEM, "in-cluster config: out of memory");
    goto out;
prefix:
    fair_error_prefix(err, "in-cluster config: ");
out:
    fair_buf_release(&b);
    if (rc)
        fair_kconfig_release(cfg);
    return rc;
}

int fair_kconfig_load(const char *kubeconfig, struct fair_kconfig *cfg, struct fair_error *err)
{
    if (kubeconfig && kubeconfig[0])
        return fair_kconfig_load_kubeconfig(kubeconfig, NULL, cfg, err);
    const char *env = getenv("KUBECONFIG");
    if (env && env[0]) {
        const char *colon = strchr(env, ':');
        char *first = colon ? fair_strndup(env, (size_t)(colon - env)) : fair_strdup(env);
        if (!first)
            return fair_error_set(err, FAIR_ENOMEM, "out of memory");
        int rc = fair_kconfig_load_kubeconfig(first, NULL, cfg, err);
        fair_free(first);
        return rc;
    }
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (host && host[0])
        return fair_kconfig_load_incluster(NULL, cfg, err);
    const char *home = getenv("HOME");
    if (!home || !home[0])
        return fair_error_set(err, FAIR_EINVAL,
                              "no kube configuration: pass --kubeconfig, set "
                              "KUBECONFIG, or run in a pod");
    struct fair_buf b;
    fair_buf_init(&b, 4096);
    int rc = fair_buf_appendf(&b, "%s/.kube/config", home);
    if (rc == 0)
        rc = fair_kconfig_load_kubeconfig(fair_buf_str(&b), NULL, cfg, err);
    else
        fair_error_set(err, rc, "HOME too long");
    fair_buf_release(&b);
    return rc;
}
