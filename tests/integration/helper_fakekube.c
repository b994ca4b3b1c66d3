/* Integration-test helper for the fake API server: process control
 * (fork/exec, SIGTERM, SIGKILL, restart) and synchronous libcurl calls.
 * See helper_fakekube.h. */
#include "helper_fakekube.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef FAIR_BIN_DIR
#define FAIR_BIN_DIR "."
#endif

#define RESPONSE_MAX ((size_t)512 << 20)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int read_port(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    char line[32];
    int port = -1;
    if (fgets(line, sizeof(line), fp)) {
        char *end;
        long v = strtol(line, &end, 10);
        if (v > 0 && v < 65536 && (*end == '\n' || *end == '\0'))
            port = (int)v;
    }
    fclose(fp);
    return port;
}

static int spawn(struct fair_fake *f, int port)
{
    char port_file[320], portbuf[16];
    char nums[10][16];
    const char *argv[64];
    int argc = 0, ni = 0;
    snprintf(port_file, sizeof(port_file), "%s/port", f->dir);
    unlink(port_file);
    snprintf(portbuf, sizeof(portbuf), "%d", port);
    argv[argc++] = FAIR_BIN_DIR "/fakekube";
    argv[argc++] = "--state-dir";
    argv[argc++] = f->dir;
    argv[argc++] = "--port";
    argv[argc++] = portbuf;
    argv[argc++] = "--port-file";
    argv[argc++] = port_file;
    argv[argc++] = "--token";
    argv[argc++] = f->token;
#define NUMFLAG(flag, val)                                                                         \
    do {                                                                                           \
        if ((val) != 0) {                                                                          \
            snprintf(nums[ni], sizeof(nums[ni]), "%d", (val) < 0 ? 0 : (val));                     \
            argv[argc++] = flag;                                                                   \
            argv[argc++] = nums[ni++];                                                             \
        }                                                                                          \
    } while (0)
    NUMFLAG("--nodes", f->opts.nodes);
    NUMFLAG("--gpus-per-node", f->opts.gpus_per_node);
    NUMFLAG("--kubelet-delay-ms", f->opts.kubelet_delay_ms);
    NUMFLAG("--grace-seconds", f->opts.grace_seconds);
    NUMFLAG("--history", f->opts.history);
    NUMFLAG("--bookmark-ms", f->opts.bookmark_ms);
    NUMFLAG("--persist-ms", f->opts.persist_ms);
    NUMFLAG("--max-watchers", f->opts.max_watchers);
#undef NUMFLAG
    if (f->opts.gpu_model) {
        argv[argc++] = "--gpu-model";
        argv[argc++] = f->opts.gpu_model;
    }
    if (f->opts.kubelet)
        argv[argc++] = "--kubelet";
    const char *lvl = getenv("FAIR_FAKEKUBE_LOG_LEVEL");
    if (lvl) {
        argv[argc++] = "--log-level";
        argv[argc++] = lvl;
    }
    for (int i = 0; i < 8 && f->opts.extra_args[i] && argc < 62; i++)
        argv[argc++] = f->opts.extra_args[i];
    argv[argc] = NULL;

    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "helper_fakekube: fork failed: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* Die with the test: a crashed or killed test leaves no server. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        int fd = open(f->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "helper_fakekube: exec %s failed: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    f->pid = pid;
    long long deadline = mono_ms() + 60000;
    while (mono_ms() < deadline) {
        int p = read_port(port_file);
        if (p > 0) {
            f->port = p;
            snprintf(f->base_url, sizeof(f->base_url), "https://127.0.0.1:%d", p);
            return 0;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "helper_fakekube: fakekube exited early (status %d); see %s\n", st,
                    f->log_path);
            f->pid = 0;
            return -1;
        }
        sleep_ms(10);
    }
    fprintf(stderr, "helper_fakekube: fakekube did not start within 60 s; see %s\n", f->log_path);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    f->pid = 0;
    return -1;
}

int fair_fake_start(struct fair_fake *f, const struct fair_fake_opts *opts)
{
    memset(f, 0, sizeof(*f));
    if (opts)
        f->opts = *opts;
    /* $TMPDIR when it is short enough for the paths built under it. */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/' || strlen(tmp) > 64)
        tmp = "/tmp";
    snprintf(f->dir, sizeof(f->dir), "%s/fakekube-XXXXXX", tmp);
    if (!mkdtemp(f->dir)) {
        fprintf(stderr, "helper_fakekube: mkdtemp failed: %s\n", strerror(errno));
        return -1;
    }
    snprintf(f->kubeconfig, sizeof(f->kubeconfig), "%s/kubeconfig", f->dir);
    snprintf(f->ca_path, sizeof(f->ca_path), "%s/ca.crt", f->dir);
    snprintf(f->log_path, sizeof(f->log_path), "%s/fakekube.log", f->dir);
    snprintf(f->token, sizeof(f->token), "%s", f->opts.token ? f->opts.token : "fair-test-token");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return spawn(f, 0);
}

static int wait_exit(struct fair_fake *f, int *status)
{
    long long deadline = mono_ms() + 60000;
    while (mono_ms() < deadline) {
        pid_t r = waitpid(f->pid, status, WNOHANG);
        if (r == f->pid) {
            f->pid = 0;
            return 0;
        }
        if (r < 0) {
            f->pid = 0;
            return -1;
        }
        sleep_ms(5);
    }
    kill(f->pid, SIGKILL);
    waitpid(f->pid, status, 0);
    f->pid = 0;
    fprintf(stderr, "helper_fakekube: fakekube did not stop within 60 s; killed\n");
    return -1;
}

static void drop_curl(struct fair_fake *f)
{
    if (f->curl)
        curl_easy_cleanup(f->curl);
    f->curl = NULL;
}

int fair_fake_stop(struct fair_fake *f)
{
    int st = 0;
    drop_curl(f);
    if (!f->pid)
        return 0;
    kill(f->pid, SIGTERM);
    if (wait_exit(f, &st) != 0)
        return -1;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "helper_fakekube: fakekube exited with status %d; see %s\n", st,
                f->log_path);
        return -1;
    }
    return 0;
}

int fair_fake_kill9(struct fair_fake *f)
{
    int st;
    drop_curl(f);
    if (!f->pid)
        return 0;
    kill(f->pid, SIGKILL);
    return wait_exit(f, &st);
}

int fair_fake_restart(struct fair_fake *f)
{
    if (f->pid && fair_fake_stop(f) != 0)
        return -1;
    return spawn(f, f->port);
}

/* The state dir is flat: remove its files, then the dir. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char p[600];
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

void fair_fake_release(struct fair_fake *f)
{
    if (f->pid)
        fair_fake_stop(f);
    drop_curl(f);
    if (f->dir[0]) {
        if (getenv("FAIR_KEEP_FAKEKUBE_DIR"))
            fprintf(stderr, "helper_fakekube: kept %s\n", f->dir);
        else
            remove_dir(f->dir);
    }
    f->dir[0] = '\0';
}

struct sink {
    char *data;
    size_t len, cap;
};

static size_t sink_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;
    if (s->len + n + 1 > RESPONSE_MAX)
        return 0;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *d = realloc(s->data, cap);
        if (!d)
            return 0;
        s->data = d;
        s->cap = cap;
    }
    memcpy(s->data + s->len, ptr, n);
    s->len += n;
    s->data[s->len] = '\0';
    return n;
}

static void setup_easy(struct fair_fake *f, CURL *c, const char *path, struct curl_slist **hdrs,
                       const char *content_type)
{
    char url[2048], auth[200], ct[200];
    snprintf(url, sizeof(url), "%s%s", f->base_url, path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", f->token);
    *hdrs = curl_slist_append(*hdrs, auth);
    if (content_type) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        *hdrs = curl_slist_append(*hdrs, ct);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, f->ca_path);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
}

int fair_fake_request_ct(struct fair_fake *f, const char *method, const char *path,
                         const char *content_type, const char *body, long *status, char **response)
{
    struct sink sink = {0};
    struct curl_slist *hdrs = NULL;
    int rc = -1;
    if (!f->curl)
        f->curl = curl_easy_init();
    CURL *c = f->curl;
    if (!c)
        return -1;
    curl_easy_reset(c);
    setup_easy(f, c, path, &hdrs, body ? (content_type ? content_type : "application/json") : NULL);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else if (!strcmp(method, "GET")) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    CURLcode cr = curl_easy_perform(c);
    if (cr != CURLE_OK) {
        fprintf(stderr, "helper_fakekube: %s %s: %s\n", method, path, curl_easy_strerror(cr));
        goto out;
    }
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (status)
        *status = code;
    if (response) {
        *response = sink.data ? sink.data : strdup("");
        sink.data = NULL;
    }
    rc = 0;
out:
    curl_slist_free_all(hdrs);
    free(sink.data);
    return rc;
}

int fair_fake_request(struct fair_fake *f, const char *method, const char *path, const char *body,
                      long *status, char **response)
{
    return fair_fake_request_ct(f, method, path, NULL, body, status, response);
}

json_t *fair_fake_request_json(struct fair_fake *f, const char *method, const char *path,
                               const char *body, long *status)
{
    char *resp = NULL;
    if (fair_fake_request(f, method, path, body, status, &resp) != 0)
        return NULL;
    json_t *j = json_loads(resp, 0, NULL);
    free(resp);
    return j;
}

int fair_fake_create_namespace(struct fair_fake *f, const char *ns)
{
    char body[512];
    long code = 0;
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    if (fair_fake_request(f, "POST", "/api/v1/namespaces", body, &code, NULL) != 0)
        return -1;
    return (code == 201 || code == 409) ? 0 : -1;
}

static int fake_post(struct fair_fake *f, const char *path, json_t **out)
{
    long code = 0;
    json_t *j = fair_fake_request_json(f, "POST", path, NULL, &code);
    if (code != 200) {
        json_decref(j);
        return -1;
    }
    if (out)
        *out = j;
    else
        json_decref(j);
    return 0;
}

int fair_fake_fail_next(struct fair_fake *f, int code, long count, const char *prefix,
                        const char *verb, int retry_after)
{
    char path[1024], esc[600] = "";
    if (prefix) {
        CURL *c = curl_easy_init();
        char *e = c ? curl_easy_escape(c, prefix, 0) : NULL;
        if (e)
            snprintf(esc, sizeof(esc), "%s", e);
        curl_free(e);
        if (c)
            curl_easy_cleanup(c);
    }
    snprintf(path, sizeof(path), "/fake/fail?code=%d&count=%ld&retryAfter=%d%s%s%s%s", code, count,
             retry_after, prefix ? "&prefix=" : "", esc, verb ? "&verb=" : "", verb ? verb : "");
    return fake_post(f, path, NULL);
}

long fair_fake_drop_watches(struct fair_fake *f, int abrupt)
{
    json_t *j = NULL;
    if (fake_post(f, abrupt ? "/fake/drop-watches?mode=close" : "/fake/drop-watches?mode=end",
                  &j) != 0)
        return -1;
    long n = (long)json_integer_value(json_object_get(j, "dropped"));
    json_decref(j);
    return n;
}

int fair_fake_set_latency(struct fair_fake *f, int ms)
{
    char path[64];
    snprintf(path, sizeof(path), "/fake/latency?ms=%d", ms);
    return fake_post(f, path, NULL);
}

int fair_fake_add_user(struct fair_fake *f, const char *token, const char *username,
                       const char *groups, const char *rules)
{
    json_t *g = json_loads(groups ? groups : "[]", 0, NULL);
    json_t *r = json_loads(rules ? rules : "[]", 0, NULL);
    json_t *u = g && r ? json_pack("{s:s,s:s,s:O,s:O}", "token", token, "username", username,
                                   "groups", g, "rules", r)
                       : NULL;
    char *body = u ? json_dumps(u, JSON_COMPACT) : NULL;
    long code = 0;
    json_t *resp = body ? fair_fake_request_json(f, "POST", "/fake/users", body, &code) : NULL;
    int rc = code == 200 ? 0 : -1;
    json_decref(resp);
    free(body);
    json_decref(u);
    json_decref(g);
    json_decref(r);
    return rc;
}

int fair_fake_set_review_latency(struct fair_fake *f, int ms)
{
    char path[64];
    snprintf(path, sizeof(path), "/fake/review-latency?ms=%d", ms);
    return fake_post(f, path, NULL);
}

int fair_fake_hold_reviews(struct fair_fake *f, int hold)
{
    return fake_post(f, hold ? "/fake/review-hold" : "/fake/review-release", NULL);
}

int fair_fake_review_counts(struct fair_fake *f, long *token_reviews, long *access_reviews)
{
    long code = 0;
    json_t *j = fair_fake_request_json(f, "GET", "/fake/stats", NULL, &code);
    int rc = code == 200 && j ? 0 : -1;
    if (token_reviews)
        *token_reviews = (long)json_integer_value(json_object_get(j, "tokenReviews"));
    if (access_reviews)
        *access_reviews = (long)json_integer_value(json_object_get(j, "subjectAccessReviews"));
    json_decref(j);
    return rc;
}

int fair_fake_compact(struct fair_fake *f)
{
    return fake_post(f, "/fake/compact", NULL);
}

int fair_fake_reset_faults(struct fair_fake *f)
{
    return fake_post(f, "/fake/reset", NULL);
}

json_t *fair_fake_state(struct fair_fake *f, const char *resource)
{
    char path[256];
    long code = 0;
    snprintf(path, sizeof(path), "/fake/state%s%s", resource ? "?resource=" : "",
             resource ? resource : "");
    json_t *j = fair_fake_request_json(f, "GET", path, NULL, &code);
    if (code != 200) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* ---- synchronous watch reader over the curl multi interface ---- */

struct fair_fake_watch {
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    struct sink buf;
    int done;
    long status;
};

struct fair_fake_watch *fair_fake_watch_open(struct fair_fake *f, const char *path)
{
    struct fair_fake_watch *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->multi = curl_multi_init();
    w->easy = curl_easy_init();
    if (!w->multi || !w->easy) {
        fair_fake_watch_close(w);
        return NULL;
    }
    setup_easy(f, w->easy, path, &w->hdrs, NULL);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, &w->buf);
    curl_multi_add_handle(w->multi, w->easy);
    /* Wait for the response headers, so that the watch is established on
     * the server before the caller makes changes. */
    long long deadline = mono_ms() + 10000;
    while (mono_ms() < deadline) {
        int running = 0;
        curl_multi_perform(w->multi, &running);
        long code = 0;
        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code != 0 || !running)
            break;
        curl_multi_poll(w->multi, NULL, 0, 20, NULL);
    }
    return w;
}

static int take_line(struct fair_fake_watch *w, json_t **event)
{
    char *nl = w->buf.data ? memchr(w->buf.data, '\n', w->buf.len) : NULL;
    if (!nl)
        return 0;
    size_t n = (size_t)(nl - w->buf.data);
    *event = json_loadb(w->buf.data, n, 0, NULL);
    memmove(w->buf.data, nl + 1, w->buf.len - n - 1);
    w->buf.len -= n + 1;
    w->buf.data[w->buf.len] = '\0';
    return 1;
}

int fair_fake_watch_next(struct fair_fake_watch *w, json_t **event, int timeout_ms)
{
    long long deadline = mono_ms() + timeout_ms;
    *event = NULL;
    for (;;) {
        if (take_line(w, event))
            return 1;
        if (w->done)
            return -1;
        long long left = deadline - mono_ms();
        if (left <= 0)
            return 0;
        int running = 0;
        curl_multi_perform(w->multi, &running);
        int msgs;
        CURLMsg *m;
        while ((m = curl_multi_info_read(w->multi, &msgs)) != NULL) {
            if (m->msg == CURLMSG_DONE) {
                w->done = 1;
                curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->status);
            }
        }
        if (take_line(w, event))
            return 1;
        if (!running)
            w->done = 1;
        if (w->done)
            continue;
        curl_multi_poll(w->multi, NULL, 0, (int)(left < 50 ? left : 50), NULL);
    }
}

long fair_fake_watch_http_status(struct fair_fake_watch *w)
{
    long code = w->status;
    if (!code)
        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

void fair_fake_watch_close(struct fair_fake_watch *w)
{
    if (!w)
        return;
    if (w->multi && w->easy)
        curl_multi_remove_handle(w->multi, w->easy);
    if (w->easy)
        curl_easy_cleanup(w->easy);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    curl_slist_free_all(w->hdrs);
    free(w->buf.data);
    free(w);
}

const char *fair_fake_json_str(const json_t *j, const char *path)
{
    char part[128];
    const json_t *cur = j;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(part, sizeof(part), "%.*s", (int)len, p);
        cur = json_object_get(cur, part);
        p = dot ? dot + 1 : p + len;
    }
    return json_string_value(cur);
}
