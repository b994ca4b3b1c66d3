/* The asynchronous Kubernetes client (see client.h): libcurl's multi
 * interface on a libevent loop, following libcurl's multi-event example.
 *
 * Life of a request: request() creates it and arms its wait timer (the
 * token bucket's delay, possibly 0: transfers always start from the loop,
 * never from inside the caller, which may itself be inside a curl
 * callback). The timer adds the easy handle to the multi handle. Curl's
 * socket and timer callbacks drive the transfer; completion is read from
 * curl_multi_info_read() after each curl_multi_socket_action(), and the
 * request is finished there: a 429 with Retry-After is re-armed, anything
 * else goes to the callback and the request is freed.
 *
 * Cancellation from inside curl (a watch event handler cancelling a
 * request) cannot remove easy handles; such requests are marked and
 * reaped by a deferred event once curl has returned. */
#include "kube/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/version.h"
#include "kube/decode.h"
#include "kube/liststream.h"
#include "kube/ratelimit.h"

#define COMP "kube"

struct sock_ctx {
    struct event ev;
    struct fair_kclient *c;
};

struct fair_kreq {
    struct fair_kclient *c;
    struct fair_kreq *prev, *next; /* all live requests */
    struct fair_kreq *reap_next;
    char *method, *url, *content_type, *body;
    const char *path; /* inside url: the path and query, for the observer */
    size_t body_len;
    unsigned flags;
    CURL *easy;
    struct curl_slist *headers;
    struct event *wait_timer;
    struct fair_buf resp;
    char errbuf[CURL_ERROR_SIZE];
    bool watch;
    struct fair_kframer framer;
    int64_t stall_ms;          /* WATCH: see fair_klist_opts.stall_ms */
    curl_socket_t sock;        /* the socket curl last told us about, or -1 */
    int sock_what;             /* what curl asked to wait for on it (CURL_POLL_*) */
    int64_t last_line_ms;      /* WATCH: monotonic; transfer start or last line */
    struct event *stall_timer; /* WATCH with stall_ms > 0 */
    fair_kwatch_event_cb on_event;
    const struct fair_jfield *filter;
    struct fair_jfield list_filter[8]; /* LIST: items through filter */
    bool list_stream;                  /* a streamed LIST page */
    bool page_cap;                     /* its body is capped at max_body */
    struct fair_kliststream *ls;       /* created at its first 2xx byte */
    fair_klist_object_cb on_object;
    size_t received; /* body bytes of this transfer */
    fair_kclient_cb cb;
    void *ctx;
    int retries;
    int64_t retry_after_ms; /* -1: no Retry-After header */
    int stream_rc;
    struct fair_error stream_err;
    bool cancelled;
    bool reaping;
};

struct fair_kclient {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    struct event *reaper;
    struct fair_kconfig cfg;
    struct fair_kclient_options opt;
    char *user_agent;
    struct fair_tokenbucket tb;
    struct fair_kreq *reqs;
    struct fair_kreq *reap;
    int in_curl; /* depth of curl_multi_socket_action() calls */
    struct fair_kclient_stats stats;
    fair_kclient_observer_fn observer; /* test hook, or the request log */
    void *observer_ctx;
    int log_fd;      /* FAIR_KUBE_REQUEST_LOG, or -1 */
    int64_t log_max; /* FAIR_KUBE_REQUEST_LOG_MAX bytes */
    bool log_full;   /* the cap was reached: nothing more is written */
    /* fair_kclient_add_header(): "Name: value" lines, secret (zeroed at free) */
    char *extra[FAIR_KCLIENT_MAX_HEADERS];
    int nextra;
};

const struct fair_kres fair_kres_pods = {"", "v1", "pods", true};
const struct fair_kres fair_kres_nodes = {"", "v1", "nodes", false};
const struct fair_kres fair_kres_namespaces = {"", "v1", "namespaces", false};
const struct fair_kres fair_kres_events = {"", "v1", "events", true};
const struct fair_kres fair_kres_leases = {"coordination.k8s.io", "v1", "leases", true};
const struct fair_kres fair_kres_projects = {"fairshare.dev", "v1alpha1", "projects", false};
const struct fair_kres fair_kres_queues = {"fairshare.dev", "v1alpha1", "queues", false};
const struct fair_kres fair_kres_sp_podgroups = {"scheduling.x-k8s.io", "v1alpha1", "podgroups",
                                                 true};
const struct fair_kres fair_kres_vc_podgroups = {"scheduling.volcano.sh", "v1beta1", "podgroups",
                                                 true};
const struct fair_kres fair_kres_pvcs = {"", "v1", "persistentvolumeclaims", true};
const struct fair_kres fair_kres_pvs = {"", "v1", "persistentvolumes", false};
const struct fair_kres fair_kres_storageclasses = {"storage.k8s.io", "v1", "storageclasses", false};

void fair_kclient_options_default(struct fair_kclient_options *o)
{
    if (o->qps == 0)
        o->qps = FAIR_KUBE_DEFAULT_QPS;
    if (o->burst <= 0)
        o->burst = FAIR_KUBE_DEFAULT_BURST;
    if (o->max_host_connections <= 0)
        o->max_host_connections = 16;
    if (o->connect_timeout_ms <= 0)
        o->connect_timeout_ms = 10000;
    if (o->request_timeout_ms <= 0)
        o->request_timeout_ms = 60000;
    if (!o->max_body)
        o->max_body = (size_t)64 << 20;
    if (!o->max_event)
        o->max_event = FAIR_KWATCH_DEFAULT_MAX_EVENT;
    if (o->max_retries <= 0)
        o->max_retries = 5;
    if (o->max_retry_after_ms <= 0)
        o->max_retry_after_ms = 30000;
    if (!o->user_agent)
        o->user_agent = fair_user_agent_cli;
    if (!o->clock)
        o->clock = fair_clock_system();
}

/* ---- libevent <-> curl glue ------------------------------------------- */

static void check_multi_info(struct fair_kclient *c);

static void socket_action(struct fair_kclient *c, curl_socket_t fd, int action)
{
    int running = 0;
    c->in_curl++;
    curl_multi_socket_action(c->multi, fd, action, &running);
    c->in_curl--;
    check_multi_info(c);
}

static void on_socket_event(evutil_socket_t fd, short kind, void *arg)
{
    struct fair_kclient *c = arg;
    int action =
        ((kind & EV_READ) ? CURL_CSELECT_IN : 0) | ((kind & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    socket_action(c, fd, action);
}

static void on_curl_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    socket_action(arg, CURL_SOCKET_TIMEOUT, 0);
}

static int curl_sock_cb(CURL *e, curl_socket_t s, int what, void *cbp, void *sockp)
{
    struct fair_kclient *c = cbp;
    struct sock_ctx *sc = sockp;
    struct fair_kreq *r = NULL;
    /* Kept for the stall timer's message: where a hung watch waits. */
    if (e && curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r) == CURLE_OK && r) {
        r->sock = s;
        r->sock_what = what;
    }
    if (what == CURL_POLL_REMOVE) {
        if (sc) {
            event_del(&sc->ev);
            fair_free(sc);
        }
        curl_multi_assign(c->multi, s, NULL);
        return 0;
    }
    if (!sc) {
        sc = fair_calloc(1, sizeof *sc);
        if (!sc)
            return -1;
        sc->c = c;
        curl_multi_assign(c->multi, s, sc);
    } else {
        event_del(&sc->ev);
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) |
                         ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    event_assign(&sc->ev, c->base, s, kind, on_socket_event, c);
    event_add(&sc->ev, NULL);
    return 0;
}

static int curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    struct fair_kclient *c = userp;
    if (timeout_ms < 0) {
        evtimer_del(c->timer);
    } else {
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        evtimer_add(c->timer, &tv);
    }
    return 0;
}

/* ---- the request log and observer (tests) -------------------------------- */

/* FAIR_KUBE_REQUEST_LOG: one line per event, each written with one write()
 * on an O_APPEND descriptor, so that the lines of several clients and
 * processes sharing the file never mix:
 *   <wall ms> <pid> send <METHOD> <PATH?QUERY>
 *   <wall ms> <pid> done <METHOD> <PATH?QUERY> <HTTP status, 0: no answer>
 * Once the file holds log_max bytes, one "# request log full" line and
 * nothing more from this client. */
static void request_log(struct fair_kclient *c, enum fair_kobserve what, const struct fair_kreq *r,
                        long status)
{
    if (c->log_fd < 0 || c->log_full)
        return;
    struct stat st;
    if (fstat(c->log_fd, &st) != 0 || st.st_size >= c->log_max) {
        static const char full[] = "# request log full\n";
        c->log_full = true;
        if (write(c->log_fd, full, sizeof full - 1) < 0)
            FAIR_WARN(COMP, "msg=\"cannot write the request log\" error=\"%s\"", strerror(errno));
        return;
    }
    struct fair_buf b;
    fair_buf_init(&b, 64 * 1024);
    long long ms = (long long)fair_now_ms(fair_clock_system());
    int rc =
        what == FAIR_KOBSERVE_SEND
            ? fair_buf_appendf(&b, "%lld %ld send %s %s\n", ms, (long)getpid(), r->method, r->path)
            : fair_buf_appendf(&b, "%lld %ld done %s %s %ld\n", ms, (long)getpid(), r->method,
                               r->path, status);
    if (rc == 0 && write(c->log_fd, b.data, b.len) != (ssize_t)b.len)
        FAIR_WARN(COMP, "msg=\"cannot write the request log\" error=\"%s\"", strerror(errno));
    fair_buf_release(&b);
}

static void observe(struct fair_kclient *c, enum fair_kobserve what, const struct fair_kreq *r,
                    long status)
{
    request_log(c, what, r, status);
    if (c->observer)
        c->observer(what, r->method, r->path, status, c->observer_ctx);
}

void fair_kclient_set_observer(struct fair_kclient *c, fair_kclient_observer_fn fn, void *ctx)
{
    c->observer = fn;
    c->observer_ctx = ctx;
}

/* Opens the log named by FAIR_KUBE_REQUEST_LOG, if any. A log that cannot
 * be opened is reported and left out: it is a test aid, never a reason
 * for the client to fail. */
static void request_log_open(struct fair_kclient *c)
{
    c->log_fd = -1;
    const char *path = getenv("FAIR_KUBE_REQUEST_LOG");
    if (!path || !*path)
        return;
    c->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (c->log_fd < 0) {
        FAIR_WARN(COMP, "msg=\"cannot open the request log\" path=\"%s\" error=\"%s\"", path,
                  strerror(errno));
        return;
    }
    c->log_max = FAIR_KUBE_REQUEST_LOG_DEFAULT_MAX;
    const char *max = getenv("FAIR_KUBE_REQUEST_LOG_MAX");
    if (max && *max) {
        char *end;
        long long v = strtoll(max, &end, 10);
        if (*end == '\0' && v > 0)
            c->log_max = v;
    }
}

/* ---- requests ----------------------------------------------------------- */

static void note_peak(struct fair_kclient *c, size_t n)
{
    if (n > c->stats.peak_buffer)
        c->stats.peak_buffer = n;
}

static void req_free(struct fair_kreq *r)
{
    struct fair_kclient *c = r->c;
    note_peak(c, r->resp.cap);
    if (r->ls)
        note_peak(c, fair_kliststream_peak(r->ls));
    if (r->watch)
        note_peak(c, r->framer.partial.cap);
    fair_kliststream_free(r->ls);
    if (r->easy) {
        curl_multi_remove_handle(c->multi, r->easy);
        curl_easy_cleanup(r->easy);
    }
    if (r->prev)
        r->prev->next = r->next;
    else if (c->reqs == r)
        c->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (r->wait_timer)
        event_free(r->wait_timer);
    if (r->stall_timer)
        event_free(r->stall_timer);
    curl_slist_free_all(r->headers);
    fair_buf_release(&r->resp);
    if (r->watch)
        fair_kframer_release(&r->framer);
    fair_free(r->method);
    fair_free(r->url);
    fair_free(r->content_type);
    fair_free(r->body);
    fair_free(r);
}

static void on_reap(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    struct fair_kclient *c = arg;
    while (c->reap) {
        struct fair_kreq *r = c->reap;
        c->reap = r->reap_next;
        req_free(r);
    }
}

void fair_kreq_cancel(struct fair_kreq *r)
{
    if (!r || r->cancelled)
        return;
    r->cancelled = true;
    struct fair_kclient *c = r->c;
    if (c->in_curl && r->easy) {
        r->reaping = true;
        r->reap_next = c->reap;
        c->reap = r;
        event_active(c->reaper, EV_TIMEOUT, 0);
        return;
    }
    req_free(r);
}

int fair_kretry_after_parse(const char *line, size_t len, int64_t *ms)
{
    static const char name[] = "Retry-After:";
    const size_t nl = sizeof name - 1;
    if (len < nl || strncasecmp(line, name, nl) != 0)
        return 0;
    size_t i = nl, end = len;
    while (end > i && (line[end - 1] == '\n' || line[end - 1] == '\r' || line[end - 1] == ' ' ||
                       line[end - 1] == '\t'))
        end--;
    while (i < end && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == end)
        return 0;
    int64_t v = 0;
    for (; i < end; i++) {
        if (line[i] < '0' || line[i] > '9')
            return 0; /* an HTTP-date, a sign, a fraction, junk */
        if (v <= FAIR_KUBE_RETRY_AFTER_MAX_S)
            v = v * 10 + (line[i] - '0');
    }
    *ms = (v > FAIR_KUBE_RETRY_AFTER_MAX_S ? FAIR_KUBE_RETRY_AFTER_MAX_S : v) * 1000;
    return 1;
}

static size_t on_header(char *buf, size_t size, size_t n, void *userp)
{
    struct fair_kreq *r = userp;
    size_t len = size * n;
    int64_t ms;
    if (len >= 5 && !memcmp(buf, "HTTP/", 5))
        r->retry_after_ms = -1;
    else if (fair_kretry_after_parse(buf, len, &ms))
        r->retry_after_ms = ms;
    return len;
}

static int on_watch_line(const char *line, size_t len, void *ctx)
{
    struct fair_kreq *r = ctx;
    if (r->cancelled)
        return 1;
    r->last_line_ms = fair_mono_ms(r->c->opt.clock);
    struct fair_kwatch_event ev;
    json_t *root = NULL;
    int rc = fair_kwatch_event_parse_filtered(line, len, r->filter, &ev, &root, &r->stream_err);
    if (rc) {
        r->stream_rc = rc;
        return rc;
    }
    r->on_event(&ev, r->ctx);
    json_decref(root);
    return r->cancelled ? 1 : 0;
}

/* A streamed LIST's item: parsed through the filter, then handed out. */
static int on_list_item(const struct fair_klist_item *it, void *ctx)
{
    struct fair_kreq *r = ctx;
    if (r->cancelled)
        return 1;
    struct fair_klist_object o = {.bytes = it->raw_len};
    struct fair_error pe = {0};
    char why[FAIR_ERROR_MSG_MAX + 64];
    json_t *obj = NULL, *skel = NULL;
    if (it->oversized) {
        o.rc = FAIR_ERANGE;
        snprintf(why, sizeof why,
                 "the fields Fairshare reads pass the limit of %zu bytes per object (or nest "
                 "deeper than %d)",
                 r->c->opt.max_event, FAIR_JSON_MAX_DEPTH);
    } else {
        int rc = fair_json_parse_filtered(it->json, it->len, r->filter, &obj, &pe);
        if (rc == FAIR_ENOMEM)
            return FAIR_ENOMEM;
        if (rc) {
            o.rc = rc;
            snprintf(why, sizeof why, "%s", pe.msg);
        }
    }
    if (!obj && it->skeleton &&
        fair_json_parse_filtered(it->skeleton, it->skeleton_len, NULL, &skel, NULL) == FAIR_ENOMEM)
        return FAIR_ENOMEM;
    o.object = obj;
    o.skeleton = skel;
    o.why = o.rc ? why : "";
    r->on_object(&o, r->ctx);
    json_decref(obj);
    json_decref(skel);
    return r->cancelled ? 1 : 0;
}

static size_t on_write(char *data, size_t size, size_t n, void *userp)
{
    struct fair_kreq *r = userp;
    size_t len = size * n;
    if (r->cancelled)
        return 0;
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (r->list_stream && status >= 200 && status < 300) {
        r->received += len;
        if (r->page_cap && r->received > r->c->opt.max_body) {
            r->stream_rc = fair_error_set(&r->stream_err, FAIR_ERANGE,
                                          "list page larger than %zu bytes; ask for fewer items",
                                          r->c->opt.max_body);
            return 0;
        }
        if (!r->ls && fair_kliststream_new(r->filter, fair_kskeleton_filter, r->c->opt.max_event,
                                           on_list_item, r, &r->ls)) {
            r->stream_rc = fair_error_set(&r->stream_err, FAIR_ENOMEM, "out of memory");
            return 0;
        }
        int rc = fair_kliststream_feed(r->ls, data, len, &r->stream_err);
        if (rc) {
            if (!r->stream_rc && !r->cancelled)
                r->stream_rc = rc == 1 ? FAIR_EIO : rc;
            return 0;
        }
        return len;
    }
    if (r->watch && status == 200) {
        r->received += len;
        int rc = fair_kframer_feed(&r->framer, data, len, on_watch_line, r, &r->stream_err);
        if (rc) {
            if (!r->stream_rc && !r->cancelled)
                r->stream_rc = rc == 1 ? FAIR_EIO : rc;
            return 0;
        }
        return len;
    }
    if (fair_buf_append(&r->resp, data, len)) {
        r->stream_rc = fair_error_set(&r->stream_err, FAIR_ERANGE,
                                      "response body larger than %zu bytes", r->resp.max);
        return 0;
    }
    return len;
}

static void arm_timer(struct event *ev, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(ev, &tv);
}

static void arm_wait(struct fair_kreq *r, int64_t ms)
{
    arm_timer(r->wait_timer, ms);
}

static void finish(struct fair_kreq *r, const struct fair_kresponse *resp)
{
    fair_kclient_cb cb = r->cb;
    void *ctx = r->ctx;
    /* Unlink first: the handle is invalid once the callback runs. */
    r->cancelled = true;
    cb(resp, ctx);
    req_free(r);
}

static void fail_now(struct fair_kreq *r, int rc, const char *msg)
{
    struct fair_kresponse resp = {.rc = rc, .reason = "", .body = ""};
    fair_error_set(&resp.err, rc, "%s %s: %s", r->method, r->url, msg);
    r->c->stats.errors++;
    finish(r, &resp);
}

static int start_transfer(struct fair_kreq *r)
{
    struct fair_kclient *c = r->c;
    struct fair_error te = {0};
    if (fair_kconfig_refresh_token(&c->cfg, fair_mono_ms(c->opt.clock), &te))
        FAIR_WARN(COMP, "msg=\"cannot re-read the token; keeping the old one\" error=\"%s\"",
                  te.msg);
    CURL *e = curl_easy_init();
    if (!e)
        return FAIR_ENOMEM;
    curl_slist_free_all(r->headers);
    r->headers = NULL;
    struct fair_buf h;
    fair_buf_init(&h, 64 * 1024);
    struct curl_slist *hl = curl_slist_append(NULL, "Accept: application/json");
    if (c->cfg.token) {
        fair_buf_appendf(&h, "Authorization: Bearer %s", c->cfg.token);
        hl = hl ? curl_slist_append(hl, fair_buf_str(&h)) : NULL;
        fair_buf_reset(&h);
    }
    if (r->body) {
        fair_buf_appendf(&h, "Content-Type: %s", r->content_type);
        hl = hl ? curl_slist_append(hl, fair_buf_str(&h)) : NULL;
    }
    for (int i = 0; i < c->nextra; i++)
        hl = hl ? curl_slist_append(hl, c->extra[i]) : NULL;
    if (h.data)
        memset(h.data, 0, h.len); /* it held the bearer token */
    fair_buf_release(&h);
    if (!hl) {
        curl_easy_cleanup(e);
        return FAIR_ENOMEM;
    }
    r->headers = hl;
    r->errbuf[0] = '\0';
    r->sock = CURL_SOCKET_BAD;
    r->sock_what = CURL_POLL_NONE;
    r->retry_after_ms = -1;
    r->stream_rc = 0;
    r->received = 0;
    if (r->ls) {
        note_peak(c, fair_kliststream_peak(r->ls));
        fair_kliststream_free(r->ls);
        r->ls = NULL;
    }
    fair_buf_reset(&r->resp);
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->opt.connect_timeout_ms);
    if (!r->watch) {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->opt.request_timeout_ms);
    } else {
        /* A stalled watch (no bytes, not even bookmarks) is dropped. */
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 660L);
    }
    if (!strcmp(r->method, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(r->method, "POST"))
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(r->body ? r->body_len : 0));
    }
    if (c->cfg.ca) {
        struct curl_blob b = {c->cfg.ca, c->cfg.ca_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    }
    if (c->cfg.cert && c->cfg.key) {
        struct curl_blob cb = {c->cfg.cert, c->cfg.cert_len, CURL_BLOB_NOCOPY};
        struct curl_blob kb = {c->cfg.key, c->cfg.key_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->cfg.insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    r->easy = e;
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        r->easy = NULL;
        return FAIR_EHTTP;
    }
    c->stats.requests++;
    observe(c, FAIR_KOBSERVE_SEND, r, 0);
    if (r->stall_timer) {
        r->last_line_ms = fair_mono_ms(c->opt.clock);
        arm_timer(r->stall_timer, r->stall_ms);
    }
    return 0;
}

/* A watch that delivered no line for stall_ms: whatever state the
 * transfer is in (a server that stopped writing, a connection that lost
 * its end, a transfer curl no longer drives), it is closed here, from the
 * loop, and fails with FAIR_ETIMEDOUT; the caller watches again. */
static void on_stall_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    struct fair_kreq *r = arg;
    struct fair_kclient *c = r->c;
    if (r->cancelled || !r->easy)
        return; /* between transfers (a 429 retry): start_transfer re-arms */
    int64_t idle = fair_mono_ms(c->opt.clock) - r->last_line_ms;
    if (idle < r->stall_ms) {
        arm_timer(r->stall_timer, r->stall_ms - idle);
        return;
    }
    struct fair_kresponse resp = {.reason = "", .body = ""};
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.status);
    /* Where it stuck: a transfer that never got a connection (waiting for
     * one of max_host_connections) has no pre-transfer time and no port. */
    curl_off_t pretransfer_us = 0;
    long port = 0;
    curl_easy_getinfo(r->easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
    curl_easy_getinfo(r->easy, CURLINFO_LOCAL_PORT, &port);
    int unread = -1; /* bytes the kernel holds for us that nobody read */
    if (r->sock != CURL_SOCKET_BAD && ioctl(r->sock, FIONREAD, &unread) != 0)
        unread = -1;
    static const char *const polls[] = {"none", "in", "out", "in+out", "removed"};
    const char *poll = r->sock_what >= 0 && r->sock_what <= 4 ? polls[r->sock_what] : "?";
    curl_multi_remove_handle(c->multi, r->easy);
    curl_easy_cleanup(r->easy);
    r->easy = NULL;
    observe(c, FAIR_KOBSERVE_DONE, r, resp.status);
    resp.retries = r->retries;
    resp.rc = fair_error_set(&resp.err, FAIR_ETIMEDOUT,
                             "%s %s: watch stalled: no event and no bookmark for %lld ms "
                             "(request sent: %s, local port %ld, HTTP status %ld, %zu bytes "
                             "received, %d unread in the socket, curl waits for: %s); closing it",
                             r->method, r->url, (long long)idle, pretransfer_us > 0 ? "yes" : "no",
                             port, resp.status, r->received, unread, poll);
    c->stats.errors++;
    c->stats.watch_stalls++;
    finish(r, &resp);
}

static void on_wait_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    struct fair_kreq *r = arg;
    int rc = start_transfer(r);
    if (rc)
        fail_now(r, rc, "cannot start the transfer");
}

/* Waits for the token bucket (unless exempt), then starts. */
static void schedule(struct fair_kreq *r, int64_t extra_ms)
{
    struct fair_kclient *c = r->c;
    int64_t d = 0;
    if (!(r->flags & FAIR_KREQ_NO_RATE_LIMIT))
        d = fair_tokenbucket_reserve(&c->tb);
    if (d > 0)
        c->stats.throttled++;
    arm_wait(r, d + extra_ms);
}

static bool is_tls_error(CURLcode cc)
{
    switch (cc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
        return true;
    default:
        return false;
    }
}

static void complete(struct fair_kreq *r, CURLcode cc)
{
    struct fair_kclient *c = r->c;
    struct fair_kresponse resp = {.reason = "", .body = ""};
    json_t *json = NULL;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.status);
    curl_multi_remove_handle(c->multi, r->easy);
    curl_easy_cleanup(r->easy);
    r->easy = NULL;
    if (r->cancelled) {
        req_free(r);
        return;
    }
    observe(c, FAIR_KOBSERVE_DONE, r, resp.status);
    resp.retries = r->retries;
    resp.body = fair_buf_str(&r->resp);
    resp.body_len = r->resp.len;
    resp.received = r->list_stream ? r->received : r->resp.len;
    if (r->stream_rc) {
        resp.rc = r->stream_rc;
        resp.err = r->stream_err;
        fair_error_prefix(&resp.err, "%s %s: ", r->method, r->url);
    } else if (cc != CURLE_OK) {
        const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);
        if (is_tls_error(cc)) {
            resp.rc = fair_error_set(&resp.err, FAIR_ETLS,
                                     "TLS to %s failed: %s (check the CA of %s)", c->cfg.server,
                                     detail, c->cfg.source ? c->cfg.source : "the configuration");
        } else if (cc == CURLE_OPERATION_TIMEDOUT) {
            resp.rc = fair_error_set(&resp.err, FAIR_ETIMEDOUT, "%s %s: timed out: %s", r->method,
                                     r->url, detail);
        } else if (r->watch && resp.status == 200 &&
                   (cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR ||
                    cc == CURLE_HTTP2_STREAM || cc == CURLE_HTTP2 || cc == CURLE_GOT_NOTHING)) {
            /* A watch cut mid-stream: the caller resumes from its last
             * resourceVersion, as after a clean end. */
            resp.rc = fair_error_set(&resp.err, FAIR_EIO, "%s %s: stream cut: %s", r->method,
                                     r->url, detail);
        } else {
            resp.rc = fair_error_set(&resp.err, FAIR_EHTTP, "%s %s: %s", r->method, r->url, detail);
        }
    } else if (r->list_stream && resp.status >= 200 && resp.status < 300) {
        /* The items went to on_object; what is left is the list's own
         * fields, where metadata.continue is. */
        const char *meta = NULL;
        size_t mlen = 0;
        int rc = r->ls ? fair_kliststream_finish(r->ls, &meta, &mlen, &resp.err)
                       : fair_error_set(&resp.err, FAIR_EPARSE, "list: empty response");
        if (!rc)
            rc = fair_json_parse_filtered(meta, mlen, NULL, &json, &resp.err);
        if (rc) {
            resp.rc = rc;
            fair_error_prefix(&resp.err, "%s %s: ", r->method, r->url);
        }
        resp.json = json;
    } else {
        resp.rc = fair_khttp_code(resp.status);
        if (r->resp.len) {
            if (r->list_filter[0].key)
                fair_json_parse_filtered(r->resp.data, r->resp.len, r->list_filter, &json, NULL);
            else
                json = json_loadb(r->resp.data, r->resp.len, 0, NULL);
            resp.json = json;
        }
        if (resp.rc) {
            struct fair_kstatus st;
            if (json && fair_kstatus_decode(json, &st) == 0) {
                resp.reason = json_string_value(json_object_get(json, "reason"));
                if (!resp.reason)
                    resp.reason = "";
                fair_error_set(&resp.err, resp.rc, "%s %s: HTTP %ld %s: %s", r->method, r->url,
                               resp.status, st.reason, st.message);
            } else {
                fair_error_set(&resp.err, resp.rc, "%s %s: HTTP %ld: %.200s", r->method, r->url,
                               resp.status, resp.body);
            }
            if (resp.status == 429 && !(r->flags & FAIR_KREQ_NO_RETRY_429) &&
                r->retry_after_ms >= 0 && r->retries < c->opt.max_retries) {
                int64_t d = r->retry_after_ms;
                if (d > c->opt.max_retry_after_ms)
                    d = c->opt.max_retry_after_ms;
                r->retries++;
                c->stats.retries_429++;
                FAIR_DEBUG(COMP, "msg=\"429, retrying\" url=%s retry=%d delay_ms=%lld", r->url,
                           r->retries, (long long)d);
                json_decref(json);
                schedule(r, d);
                return;
            }
        }
    }
    if (resp.rc)
        c->stats.errors++;
    finish(r, &resp);
    json_decref(json);
}

static void check_multi_info(struct fair_kclient *c)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct fair_kreq *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (r->reaping) { /* cancelled from inside curl; the reaper frees it */
            continue;
        }
        complete(r, msg->data.result);
    }
}

/* ---- client -------------------------------------------------------------- */

int fair_kclient_new(struct event_base *base, const struct fair_kconfig *cfg,
                     const struct fair_kclient_options *opt, struct fair_kclient **out,
                     struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    if (!cfg->server || strncmp(cfg->server, "https://", 8))
        return fair_error_set(err, FAIR_EINVAL, "kube client: the server must be an https:// URL");
    static bool curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return fair_error_set(err, FAIR_EHTTP, "kube client: curl_global_init failed");
        curl_ready = true;
    }
    struct fair_kclient *c = fair_calloc(1, sizeof *c);
    if (!c)
        return fair_error_set(err, FAIR_ENOMEM, "kube client: out of memory");
    c->base = base;
    request_log_open(c);
    if (opt)
        c->opt = *opt;
    fair_kclient_options_default(&c->opt);
    if ((rc = fair_kconfig_copy(&c->cfg, cfg, err)))
        goto out;
    c->user_agent = fair_strdup(c->opt.user_agent);
    c->opt.user_agent = c->user_agent;
    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, on_curl_timer, c);
    c->reaper = event_new(base, -1, 0, on_reap, c);
    if (!c->user_agent || !c->multi || !c->timer || !c->reaper) {
        rc = fair_error_set(err, FAIR_ENOMEM, "kube client: out of memory");
        goto out;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, curl_sock_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, c->opt.max_host_connections);
    fair_tokenbucket_init(&c->tb, c->opt.qps < 0 ? 0 : c->opt.qps, c->opt.burst, c->opt.clock);
out:
    if (rc) {
        fair_kclient_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void fair_kclient_free(struct fair_kclient *c)
{
    if (!c)
        return;
    on_reap(-1, 0, c);
    while (c->reqs)
        req_free(c->reqs);
    if (c->timer)
        event_free(c->timer);
    if (c->reaper)
        event_free(c->reaper);
    if (c->multi)
        curl_multi_cleanup(c->multi); /* CURL_POLL_REMOVE frees the sock_ctx */
    fair_kconfig_release(&c->cfg);
    for (int i = 0; i < c->nextra; i++) {
        memset(c->extra[i], 0, strlen(c->extra[i]));
        fair_free(c->extra[i]);
    }
    fair_free(c->user_agent);
    if (c->log_fd >= 0)
        close(c->log_fd);
    fair_free(c);
}

int fair_kclient_add_header(struct fair_kclient *c, const char *name, const char *value,
                            struct fair_error *err)
{
    /* Headers the client or curl sets, or that would change the request's
     * framing or credentials for the API server itself. */
    static const char *const reserved[] = {"accept",
                                           "authorization",
                                           "content-type",
                                           "content-length",
                                           "host",
                                           "transfer-encoding",
                                           "user-agent",
                                           "connection",
                                           "cookie",
                                           "expect",
                                           "proxy-authorization"};
    static const char tchar[] = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    size_t nlen = name ? strlen(name) : 0;
    if (!nlen || nlen > 64 || strspn(name, tchar) != nlen)
        return fair_error_set(err, FAIR_EINVAL, "kube client: bad extra header name");
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (strlen(reserved[i]) == nlen && strncasecmp(name, reserved[i], nlen) == 0)
            return fair_error_set(err, FAIR_EINVAL,
                                  "kube client: the header %s is the client's own", name);
    /* The value is a secret: errors name the header, never the value. */
    if (!value || !*value || strpbrk(value, "\r\n"))
        return fair_error_set(err, FAIR_EINVAL, "kube client: bad value for header %s", name);
    size_t vlen = strlen(value);
    if (vlen > FAIR_KCLIENT_MAX_HEADER_VALUE)
        return fair_error_set(err, FAIR_ERANGE,
                              "kube client: the value of header %s is over %d bytes", name,
                              FAIR_KCLIENT_MAX_HEADER_VALUE);
    if (c->nextra >= FAIR_KCLIENT_MAX_HEADERS)
        return fair_error_set(err, FAIR_ERANGE, "kube client: more than %d extra headers",
                              FAIR_KCLIENT_MAX_HEADERS);
    char *line = fair_malloc(nlen + vlen + 3);
    if (!line)
        return fair_error_set(err, FAIR_ENOMEM, "kube client: out of memory");
    memcpy(line, name, nlen);
    memcpy(line + nlen, ": ", 2);
    memcpy(line + nlen + 2, value, vlen + 1);
    c->extra[c->nextra++] = line;
    return 0;
}

struct event_base *fair_kclient_base(struct fair_kclient *c)
{
    return c->base;
}

void fair_kclient_get_options(const struct fair_kclient *c, struct fair_kclient_options *out)
{
    *out = c->opt;
}

const char *fair_kclient_namespace(const struct fair_kclient *c)
{
    return c->cfg.namespace_ ? c->cfg.namespace_ : "default";
}

void fair_kclient_stats(const struct fair_kclient *c, struct fair_kclient_stats *out)
{
    *out = c->stats;
}

static int new_req(struct fair_kclient *c, const char *method, const char *path,
                   const char *content_type, const char *body, size_t body_len, unsigned flags,
                   fair_kclient_cb cb, void *ctx, struct fair_kreq **out, struct fair_error *err)
{
    *out = NULL;
    if (!path || path[0] != '/')
        return fair_error_set(err, FAIR_EINVAL, "kube request: path must start with '/'");
    struct fair_kreq *r = fair_calloc(1, sizeof *r);
    if (!r)
        return fair_error_set(err, FAIR_ENOMEM, "kube request: out of memory");
    r->c = c;
    r->flags = flags;
    r->cb = cb;
    r->ctx = ctx;
    fair_buf_init(&r->resp, c->opt.max_body);
    struct fair_buf u;
    fair_buf_init(&u, 16384);
    fair_buf_appends(&u, c->cfg.server);
    int rc = fair_buf_appends(&u, path);
    r->url = rc ? NULL : fair_buf_detach(&u);
    r->path = r->url ? r->url + strlen(c->cfg.server) : "";
    fair_buf_release(&u);
    r->method = fair_strdup(method);
    r->content_type = fair_strdup(content_type ? content_type : "application/json");
    if (body) {
        r->body = fair_strndup(body, body_len);
        r->body_len = body_len;
    }
    r->wait_timer = evtimer_new(c->base, on_wait_timer, r);
    /* link before any failure so req_free() can unlink */
    r->next = c->reqs;
    if (c->reqs)
        c->reqs->prev = r;
    c->reqs = r;
    if (!r->url || !r->method || !r->content_type || (body && !r->body) || !r->wait_timer) {
        req_free(r);
        return fair_error_set(err, rc == FAIR_ERANGE ? FAIR_ERANGE : FAIR_ENOMEM,
                              "kube request %s: out of memory or URL too long", path);
    }
    *out = r;
    return 0;
}

int fair_kclient_request(struct fair_kclient *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t body_len,
                         unsigned flags, fair_kclient_cb cb, void *ctx, struct fair_kreq **handle,
                         struct fair_error *err)
{
    struct fair_kreq *r;
    int rc = new_req(c, method, path, content_type, body, body_len, flags, cb, ctx, &r, err);
    if (rc)
        return rc;
    schedule(r, 0);
    if (handle)
        *handle = r;
    return 0;
}

/* ---- paths ----------------------------------------------------------- */

static int check_name(const char *what, const char *s, struct fair_error *err)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253 || !strcmp(s, ".") || !strcmp(s, "..") || strpbrk(s, "/?%#& \t\n"))
        return fair_error_set(err, FAIR_EINVAL, "%s \"%.64s\" is not a valid name", what, s);
    return 0;
}

int fair_kpath(struct fair_buf *out, const struct fair_kres *r, const char *ns, const char *name,
               const char *sub, struct fair_error *err)
{
    int rc;
    if ((ns && (rc = check_name("namespace", ns, err))) ||
        (name && (rc = check_name("name", name, err))) ||
        (sub && (rc = check_name("subresource", sub, err))))
        return rc;
    if (r->group[0])
        rc = fair_buf_appendf(out, "/apis/%s/%s", r->group, r->version);
    else
        rc = fair_buf_appendf(out, "/api/%s", r->version);
    if (!rc && r->namespaced && ns)
        rc = fair_buf_appendf(out, "/namespaces/%s", ns);
    if (!rc)
        rc = fair_buf_appendf(out, "/%s", r->resource);
    if (!rc && name)
        rc = fair_buf_appendf(out, "/%s", name);
    if (!rc && sub)
        rc = fair_buf_appendf(out, "/%s", sub);
    if (rc)
        return fair_error_set(err, rc, "path too long");
    return 0;
}

static int append_query(struct fair_buf *b, bool *first, const char *key, const char *val)
{
    int rc = fair_buf_appendf(b, "%c%s=", *first ? '?' : '&', key);
    *first = false;
    for (const unsigned char *p = (const unsigned char *)val; !rc && *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~')
            rc = fair_buf_append(b, p, 1);
        else
            rc = fair_buf_appendf(b, "%%%02X", *p);
    }
    return rc;
}

static int list_query(struct fair_buf *b, const struct fair_klist_opts *o, bool watch)
{
    bool first = true;
    int rc = 0;
    char num[32];
    if (watch) {
        rc = append_query(b, &first, "watch", "1");
        if (!rc)
            rc = append_query(b, &first, "allowWatchBookmarks", "true");
    }
    if (!o)
        return rc;
    if (!rc && o->label_selector && o->label_selector[0])
        rc = append_query(b, &first, "labelSelector", o->label_selector);
    if (!rc && o->field_selector && o->field_selector[0])
        rc = append_query(b, &first, "fieldSelector", o->field_selector);
    if (!rc && o->resource_version && o->resource_version[0])
        rc = append_query(b, &first, "resourceVersion", o->resource_version);
    if (!rc && !watch && o->limit > 0) {
        snprintf(num, sizeof num, "%ld", o->limit);
        rc = append_query(b, &first, "limit", num);
    }
    if (!rc && !watch && o->continue_token && o->continue_token[0])
        rc = append_query(b, &first, "continue", o->continue_token);
    if (!rc && watch && o->timeout_s > 0) {
        snprintf(num, sizeof num, "%ld", o->timeout_s);
        rc = append_query(b, &first, "timeoutSeconds", num);
    }
    return rc;
}

/* Builds the path and sends. */
static int send_res(struct fair_kclient *c, const char *method, const struct fair_kres *r,
                    const char *ns, const char *name, const char *sub, const char *ctype,
                    const char *body, unsigned flags, fair_kclient_cb cb, void *ctx,
                    struct fair_error *err)
{
    struct fair_buf p;
    fair_buf_init(&p, 8192);
    int rc = fair_kpath(&p, r, ns, name, sub, err);
    if (!rc)
        rc = fair_kclient_request(c, method, fair_buf_str(&p), ctype, body, body ? strlen(body) : 0,
                                  flags, cb, ctx, NULL, err);
    fair_buf_release(&p);
    return rc;
}

int fair_kclient_get(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                     const char *name, fair_kclient_cb cb, void *ctx, struct fair_error *err)
{
    return send_res(c, "GET", r, ns, name, NULL, NULL, NULL, 0, cb, ctx, err);
}

int fair_kclient_list(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                      const struct fair_klist_opts *opts, fair_kclient_cb cb, void *ctx,
                      struct fair_kreq **handle, struct fair_error *err)
{
    struct fair_buf p;
    fair_buf_init(&p, 16384);
    int rc = fair_kpath(&p, r, ns, NULL, NULL, err);
    if (!rc && (rc = list_query(&p, opts, false)))
        fair_error_set(err, rc, "list query too long");
    struct fair_kreq *req = NULL;
    if (!rc)
        rc = new_req(c, "GET", fair_buf_str(&p), NULL, NULL, 0, 0, cb, ctx, &req, err);
    fair_buf_release(&p);
    if (rc)
        return rc;
    if (opts && opts->filter) {
        /* The list's own fields and a Status' stay whole; items are
         * filtered like watch events. */
        static const char *const whole[] = {"kind", "apiVersion", "metadata",
                                            "code", "reason",     "message"};
        for (size_t i = 0; i < 6; i++)
            req->list_filter[i] = (struct fair_jfield){whole[i], NULL};
        req->list_filter[6] = (struct fair_jfield){"items", opts->filter};
        req->list_filter[7] = (struct fair_jfield){NULL, NULL};
    }
    schedule(req, 0);
    if (handle)
        *handle = req;
    return 0;
}

int fair_kclient_list_stream(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                             const struct fair_klist_opts *opts, fair_klist_object_cb on_object,
                             fair_kclient_cb on_done, void *ctx, struct fair_kreq **handle,
                             struct fair_error *err)
{
    struct fair_buf p;
    fair_buf_init(&p, 16384);
    int rc = fair_kpath(&p, r, ns, NULL, NULL, err);
    if (!rc && (rc = list_query(&p, opts, false)))
        fair_error_set(err, rc, "list query too long");
    struct fair_kreq *req = NULL;
    if (!rc)
        rc = new_req(c, "GET", fair_buf_str(&p), NULL, NULL, 0, 0, on_done, ctx, &req, err);
    fair_buf_release(&p);
    if (rc)
        return rc;
    req->list_stream = true;
    req->page_cap = !(opts && opts->limit == 1);
    req->on_object = on_object;
    req->filter = opts ? opts->filter : NULL;
    schedule(req, 0);
    if (handle)
        *handle = req;
    return 0;
}

int fair_kclient_create(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                        const char *body, fair_kclient_cb cb, void *ctx, struct fair_error *err)
{
    return send_res(c, "POST", r, ns, NULL, NULL, NULL, body, 0, cb, ctx, err);
}

int fair_kclient_update(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                        const char *name, const char *sub, const char *body, fair_kclient_cb cb,
                        void *ctx, struct fair_error *err)
{
    return send_res(c, "PUT", r, ns, name, sub, NULL, body, 0, cb, ctx, err);
}

int fair_kclient_merge_patch(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                             const char *name, const char *sub, const char *patch,
                             fair_kclient_cb cb, void *ctx, struct fair_error *err)
{
    return send_res(c, "PATCH", r, ns, name, sub, "application/merge-patch+json", patch, 0, cb, ctx,
                    err);
}

int fair_kclient_delete(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                        const char *name, fair_kclient_cb cb, void *ctx, struct fair_error *err)
{
    return send_res(c, "DELETE", r, ns, name, NULL, NULL, NULL, 0, cb, ctx, err);
}

/* Serialises a json body built here and sends it. Takes obj. */
static int send_json_take(struct fair_kclient *c, const char *method, const struct fair_kres *r,
                          const char *ns, const char *name, const char *sub, json_t *obj,
                          unsigned flags, fair_kclient_cb cb, void *ctx, struct fair_error *err)
{
    char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (!body)
        return fair_error_set(err, FAIR_ENOMEM, "kube request: out of memory");
    int rc = send_res(c, method, r, ns, name, sub, NULL, body, flags, cb, ctx, err);
    free(body);
    return rc;
}

int fair_kclient_bind(struct fair_kclient *c, const char *ns, const char *pod, const char *uid,
                      const char *node, const char *const *kv, size_t nann, fair_kclient_cb cb,
                      void *ctx, struct fair_error *err)
{
    json_t *md = json_pack("{s:s, s:s}", "name", pod, "namespace", ns);
    if (md && uid)
        json_object_set_new(md, "uid", json_string(uid));
    if (md && nann) {
        json_t *a = json_object();
        for (size_t i = 0; a && i < nann; i++)
            json_object_set_new(a, kv[2 * i], json_string(kv[2 * i + 1]));
        json_object_set_new(md, "annotations", a);
    }
    json_t *b =
        md ? json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Binding",
                       "metadata", md, "target", "apiVersion", "v1", "kind", "Node", "name", node)
           : NULL;
    return send_json_take(c, "POST", &fair_kres_pods, ns, pod, "binding", b, 0, cb, ctx, err);
}

int fair_kclient_evict(struct fair_kclient *c, const char *ns, const char *pod, fair_kclient_cb cb,
                       void *ctx, struct fair_error *err)
{
    json_t *b = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "policy/v1", "kind", "Eviction",
                          "metadata", "name", pod, "namespace", ns);
    return send_json_take(c, "POST", &fair_kres_pods, ns, pod, "eviction", b,
                          FAIR_KREQ_NO_RETRY_429, cb, ctx, err);
}

int fair_kclient_event(struct fair_kclient *c, const struct fair_kevent_ref *o, const char *type,
                       const char *reason, const char *message, const char *component,
                       fair_kclient_cb cb, void *ctx, struct fair_error *err)
{
    char now[40], gen[300];
    fair_time_format_rfc3339(fair_now_ms(c->opt.clock), now, sizeof now);
    const char *ns = o->namespace_ ? o->namespace_ : "default";
    snprintf(gen, sizeof gen, "%.250s.", o->name);
    json_t *inv = json_pack("{s:s, s:s, s:s}", "apiVersion", o->api_version, "kind", o->kind,
                            "name", o->name);
    if (inv && o->namespace_)
        json_object_set_new(inv, "namespace", json_string(o->namespace_));
    if (inv && o->uid)
        json_object_set_new(inv, "uid", json_string(o->uid));
    /* Event messages are capped by the API server at 1 KiB. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", message ? message : "");
    json_t *b =
        inv ? json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s}, s:s, "
                        "s:s, s:i, s:s}",
                        "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen,
                        "namespace", ns, "involvedObject", inv, "type", type, "reason", reason,
                        "message", msg, "source", "component", component, "firstTimestamp", now,
                        "lastTimestamp", now, "count", 1, "reportingComponent", component)
            : NULL;
    return send_json_take(c, "POST", &fair_kres_events, ns, NULL, NULL, b, 0, cb, ctx, err);
}

int fair_kclient_watch(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                       const struct fair_klist_opts *opts, fair_kwatch_event_cb on_event,
                       fair_kclient_cb on_done, void *ctx, struct fair_kreq **handle,
                       struct fair_error *err)
{
    struct fair_buf p;
    fair_buf_init(&p, 16384);
    struct fair_kreq *req = NULL;
    int rc = fair_kpath(&p, r, ns, NULL, NULL, err);
    if (!rc && (rc = list_query(&p, opts, true)))
        fair_error_set(err, rc, "watch query too long");
    if (!rc)
        rc = new_req(c, "GET", fair_buf_str(&p), NULL, NULL, 0, 0, on_done, ctx, &req, err);
    fair_buf_release(&p);
    if (rc)
        return rc;
    req->watch = true;
    req->on_event = on_event;
    req->filter = opts ? opts->filter : NULL;
    fair_kframer_init(&req->framer, c->opt.max_event);
    if (opts && opts->stall_ms > 0) {
        req->stall_ms = opts->stall_ms;
        req->stall_timer = evtimer_new(c->base, on_stall_timer, req);
        if (!req->stall_timer) {
            req_free(req);
            return fair_error_set(err, FAIR_ENOMEM, "watch: out of memory");
        }
    }
    schedule(req, 0);
    if (handle)
        *handle = req;
    return 0;
}

/* ---- synchronous helper ------------------------------------------------ */

struct sync_ctx {
    bool done;
    int rc;
    long status;
    char *body;
    struct fair_error err;
};

static void sync_cb(const struct fair_kresponse *resp, void *ctx)
{
    struct sync_ctx *s = ctx;
    s->done = true;
    s->rc = resp->rc;
    s->status = resp->status;
    s->err = resp->err;
    s->body = fair_strndup(resp->body, resp->body_len);
}

int fair_kclient_request_sync(struct fair_kclient *c, const char *method, const char *path,
                              const char *body, unsigned flags, long *status_out, char **body_out,
                              struct fair_error *err)
{
    struct sync_ctx s = {0};
    const char *ctype = !strcmp(method, "PATCH") ? "application/merge-patch+json" : NULL;
    int rc = fair_kclient_request(c, method, path, ctype, body, body ? strlen(body) : 0, flags,
                                  sync_cb, &s, NULL, err);
    if (rc)
        return rc;
    while (!s.done)
        if (event_base_loop(c->base, EVLOOP_ONCE) < 0)
            break;
    if (!s.done)
        return fair_error_set(err, FAIR_EIO, "event loop failed");
    if (status_out)
        *status_out = s.status;
    if (body_out)
        *body_out = s.body;
    else
        fair_free(s.body);
    if (s.rc && err)
        *err = s.err;
    return s.rc;
}
