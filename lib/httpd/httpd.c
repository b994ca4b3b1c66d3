/* The route-table HTTP server on evhttp (see httpd.h): exact routes,
 * deferred replies, and the connection limits evhttp lacks (a cap, a
 * deadline for the request headers, accept errors with a back-off).
 *
 * evhttp (libevent 2.1) has no hook for a new connection, so the server
 * makes each connection's bufferevent itself (evhttp_set_bevcb) and, once
 * evhttp has wrapped it in an evhttp_connection (one loop callback later,
 * through attach_ev), finds that connection through the bufferevent's
 * callback argument and asks to hear of its close (closecb). Between the
 * two the server holds a reference on the bufferevent, so that a
 * connection evhttp frees at once (out of memory) is noticed, not used. */
#include "httpd/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/alloc.h"
#include "base/log.h"

#define DEFAULT_MAX_CONNECTIONS 256
#define DEFAULT_HEADER_TIMEOUT_MS 10000
#define ACCEPT_BACKOFF_MIN_MS 10
#define ACCEPT_BACKOFF_MAX_MS 1000
#define ACCEPT_LOG_EVERY_MS 10000

struct route {
    char method[8];
    char path[128];
    fair_httpd_handler fn;
    fair_httpd_async_handler afn;
    void *ctx;
    const void *guard_arg; /* what the guard gets (fair_httpd_route_guard) */
};

struct conn {
    struct fair_httpd *srv;
    struct bufferevent *bev;         /* evhttp's; ours to reference until attached */
    struct evhttp_connection *evcon; /* NULL until attached */
    struct event *deadline;          /* the header deadline (WAITING) */
    struct fair_httpd_req *pending;  /* a deferred request waiting for its reply */
    int busy;                        /* BUSY; else WAITING */
    int fresh;                       /* attached in this round of on_attach() */
    struct conn *prev, *next;        /* srv's list: WAITING ones in the order they began */
};

struct fair_httpd_req {
    struct fair_httpd *srv;       /* NULL once orphaned */
    struct conn *conn;            /* NULL once the connection closed */
    struct evhttp_request *evreq; /* NULL once the client went away */
    struct event *watch;          /* readable: the client may have closed */
    void (*cancel_fn)(void *arg);
    void *cancel_arg;
    bool cancelled;
    bool head;
    const struct route *route; /* guarded: the route to run once allowed */
    char *query;               /* guarded: the query string, until then */
    char path[128];            /* for the log */
};

struct fair_httpd {
    struct event_base *base;
    struct evhttp *http;
    struct evconnlistener *listener; /* evhttp's; borrowed */
    int port;
    int max_conns;
    int header_timeout_ms;
    size_t nroutes;
    struct route routes[FAIR_HTTPD_MAX_ROUTES];
    struct conn *head, *tail; /* every connection */
    struct event *attach_ev;  /* attaches the connections accepted since */
    bool attach_pending;
    struct event *accept_timer; /* re-enables the listener after a back-off */
    int64_t accept_backoff_ms;
    int64_t accept_logged_ms;
    uint64_t accept_suppressed;
    struct fair_httpd_stats st;
    SSL_CTX *tls; /* HTTPS: new connections' context (a reference) */
    fair_httpd_guard_fn guard;
    void *guard_ctx;
    struct fair_httpd *reg_next; /* the registry below */
};

/* evconnlistener's error callback gets evhttp's pointer, not ours: a small
 * registry maps one to the other. Servers on loops in other threads may
 * register at the same time, hence the lock. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fair_httpd *reg_head;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timeval tv_ms(int64_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

/* ---- replies ---- */

static const char *reason_of(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}

static void on_complete(struct evhttp_request *req, void *arg);

static void reply(struct conn *c, struct evhttp_request *req, int status, const char *ctype,
                  const char *body, size_t len, int head, const char *allow)
{
    if (status == 401)
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                          "Bearer realm=\"fairshare\"");
    struct evbuffer *out = evbuffer_new();
    if (c)
        evhttp_request_set_on_complete_cb(req, on_complete, c);
    if (!out) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    if (!head && len)
        evbuffer_add(out, body, len);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    if (allow)
        evhttp_add_header(h, "Allow", allow);
    evhttp_send_reply(req, status, reason_of(status), out);
    evbuffer_free(out);
}

static void json_error(struct conn *c, struct evhttp_request *req, int status, const char *msg,
                       int head, const char *allow)
{
    char body[256];
    int n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", msg);
    reply(c, req, status, "application/json", body, (size_t)n, head, allow);
}

/* ---- connections ---- */

static void list_remove(struct fair_httpd *srv, struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        srv->tail = c->prev;
    c->prev = c->next = NULL;
}

static void list_append(struct fair_httpd *srv, struct conn *c)
{
    c->prev = srv->tail;
    c->next = NULL;
    if (srv->tail)
        srv->tail->next = c;
    else
        srv->head = c;
    srv->tail = c;
}

/* Detaches a deferred request from its connection: the reply will be
 * dropped. Runs its cancel callback last (it may free req). */
static void req_cancel(struct fair_httpd_req *r)
{
    if (r->watch) {
        event_free(r->watch);
        r->watch = NULL;
    }
    if (r->conn)
        r->conn->pending = NULL;
    r->conn = NULL;
    r->evreq = NULL; /* evhttp frees it with the connection */
    if (r->cancelled)
        return;
    r->cancelled = true;
    if (r->srv) {
        r->srv->st.cancelled++;
        r->srv->st.deferred--;
    }
    FAIR_DEBUG("httpd", "msg=\"client went away; deferred request cancelled\" path=%s", r->path);
    if (r->cancel_fn)
        r->cancel_fn(r->cancel_arg);
}

/* evhttp frees the connection (closecb): forget it. */
static void on_close(struct evhttp_connection *evcon, void *arg)
{
    struct conn *c = arg;
    (void)evcon;
    struct fair_httpd *srv = c->srv;
    list_remove(srv, c);
    srv->st.connections--;
    if (c->deadline)
        event_free(c->deadline);
    struct fair_httpd_req *r = c->pending;
    fair_free(c);
    if (r)
        req_cancel(r);
}

/* Closes a connection now; on_close() frees c. */
static void conn_close(struct conn *c)
{
    evhttp_connection_free(c->evcon);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    if (c->busy)
        return;
    c->srv->st.header_timeouts++;
    FAIR_DEBUG("httpd", "msg=\"request headers not complete within the deadline; closing\"");
    conn_close(c);
}

/* WAITING again: to the end of the list, deadline restarted. */
static void conn_wait(struct conn *c)
{
    struct fair_httpd *srv = c->srv;
    c->busy = 0;
    list_remove(srv, c);
    list_append(srv, c);
    struct timeval tv = tv_ms(srv->header_timeout_ms);
    evtimer_add(c->deadline, &tv);
}

/* The WAITING connection that has waited longest, other than except. */
static struct conn *oldest_waiting(struct fair_httpd *srv, const struct conn *except)
{
    for (struct conn *c = srv->head; c; c = c->next)
        if (c->evcon && !c->busy && c != except)
            return c;
    return NULL;
}

/* evhttp_set_bevcb: every accepted connection starts here. */
static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
    struct fair_httpd *srv = arg;
    struct conn *c = fair_calloc(1, sizeof(*c));
    struct bufferevent *bev = NULL;
    if (srv->tls) {
        /* A NULL answer would make evhttp serve the connection in plain
         * HTTP: on_request() refuses such a connection (tls_ok). */
        SSL *ssl = SSL_new(srv->tls);
        bev = ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                   BEV_OPT_CLOSE_ON_FREE)
                  : NULL;
        if (bev)
            bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
        else
            SSL_free(ssl);
    } else {
        bev = bufferevent_socket_new(base, -1, 0); /* as evhttp's own */
    }
    if (!c || !bev) {
        fair_free(c);
        return bev; /* untracked; evhttp still serves it */
    }
    bufferevent_incref(bev); /* until attach(): see the file's note */
    c->srv = srv;
    c->bev = bev;
    list_append(srv, c);
    srv->st.connections++;
    srv->st.accepted++;
    srv->accept_backoff_ms = 0;
    if (!srv->attach_pending) {
        srv->attach_pending = true;
        event_active(srv->attach_ev, EV_TIMEOUT, 1);
    }
    return bev;
}

/* Attaches one new connection; 0 when it is tracked, -1 when it is gone. */
static int attach(struct conn *c)
{
    struct fair_httpd *srv = c->srv;
    void (*readcb)(struct bufferevent *, void *) = NULL;
    void *cbarg = NULL;
    bufferevent_getcb(c->bev, &readcb, NULL, NULL, &cbarg);
    if (!readcb || !cbarg) {
        /* evhttp gave up on it already (bufferevent_free clears the
         * callbacks): drop our reference, which frees it. */
        bufferevent_decref(c->bev);
        list_remove(srv, c);
        srv->st.connections--;
        fair_free(c);
        return -1;
    }
    c->evcon = cbarg; /* evhttp's bufferevent callbacks get the connection */
    bufferevent_decref(c->bev);
    c->deadline = evtimer_new(srv->base, on_deadline, c);
    if (!c->deadline) {
        c->evcon = NULL;
        evhttp_connection_free(cbarg); /* no closecb yet: freed below */
        list_remove(srv, c);
        srv->st.connections--;
        fair_free(c);
        return -1;
    }
    evhttp_connection_set_closecb(c->evcon, on_close, c);
    /* Small answers (and TLS records) must not wait for Nagle and the
     * client's delayed ACK. */
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    struct timeval tv = tv_ms(srv->header_timeout_ms);
    evtimer_add(c->deadline, &tv);
    return 0;
}

static void on_attach(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_httpd *srv = arg;
    srv->attach_pending = false;
    struct conn *next;
    for (struct conn *c = srv->head; c; c = next) {
        next = c->next;
        if (!c->evcon && attach(c) == 0)
            c->fresh = 1;
    }
    /* Over the cap: close the connections that have waited longest for
     * their request. The new ones come last in the list, so they go only
     * when every older connection is BUSY: then they are refused. */
    while (srv->st.connections > (uint64_t)srv->max_conns) {
        struct conn *old = oldest_waiting(srv, NULL);
        if (!old)
            break;
        if (old->fresh)
            srv->st.refused++;
        else
            srv->st.evicted++;
        conn_close(old);
    }
    for (struct conn *c = srv->head; c; c = c->next)
        c->fresh = 0;
}

static void rate_limited_accept_log(struct fair_httpd *srv, int e)
{
    int64_t now = mono_ms();
    if (srv->accept_logged_ms && now - srv->accept_logged_ms < ACCEPT_LOG_EVERY_MS) {
        srv->accept_suppressed++;
        return;
    }
    FAIR_WARN("httpd",
              "msg=\"accept failed; pausing the listener\" port=%d err=\"%s\" connections=%" PRIu64
              " failures_since_last_line=%" PRIu64 " backoff_ms=%" PRId64,
              srv->port, strerror(e), srv->st.connections, srv->accept_suppressed,
              srv->accept_backoff_ms);
    srv->accept_logged_ms = now;
    srv->accept_suppressed = 0;
}

static void on_accept_error(struct evconnlistener *lev, void *http)
{
    int e = EVUTIL_SOCKET_ERROR();
    struct fair_httpd *srv;
    pthread_mutex_lock(&reg_lock);
    for (srv = reg_head; srv && srv->http != http; srv = srv->reg_next) {
    }
    pthread_mutex_unlock(&reg_lock);
    if (!srv)
        return;
    srv->st.accept_errors++;
    evconnlistener_disable(lev);
    srv->accept_backoff_ms =
        srv->accept_backoff_ms ? srv->accept_backoff_ms * 2 : ACCEPT_BACKOFF_MIN_MS;
    if (srv->accept_backoff_ms > ACCEPT_BACKOFF_MAX_MS)
        srv->accept_backoff_ms = ACCEPT_BACKOFF_MAX_MS;
    rate_limited_accept_log(srv, e);
    if (e == EMFILE || e == ENFILE) {
        /* Free a descriptor for the next client (a probe, most likely):
         * descriptors are the process's, so the connection to close may
         * belong to another server on this loop (the health port's
         * listener fails while the idle connections hold the main one). */
        struct fair_httpd *owner = srv;
        struct conn *old = oldest_waiting(srv, NULL);
        if (!old) {
            pthread_mutex_lock(&reg_lock);
            for (struct fair_httpd *o = reg_head; o && !old; o = o->reg_next)
                if (o != srv && o->base == srv->base && (old = oldest_waiting(o, NULL)))
                    owner = o;
            pthread_mutex_unlock(&reg_lock);
        }
        if (old) {
            owner->st.evicted++;
            conn_close(old);
        }
    }
    struct timeval tv = tv_ms(srv->accept_backoff_ms);
    evtimer_add(srv->accept_timer, &tv);
}

static void on_accept_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_httpd *srv = arg;
    if (srv->listener)
        evconnlistener_enable(srv->listener);
}

static void on_complete(struct evhttp_request *req, void *arg)
{
    (void)req;
    conn_wait(arg); /* on_close() follows when evhttp then closes it */
}

/* ---- deferred requests ---- */

/* The client's side became readable (or, for TLS, closed) while a deferred
 * request waits: an end of file means the client went away. Over plain
 * HTTP, data (a pipelined request) cannot be told apart without reading
 * it, so watching stops there. Over TLS every byte is a record (a
 * close_notify too), so the watch waits for the peer's close (EV_CLOSED,
 * where the backend reports it) instead of peeking. */
static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    struct fair_httpd_req *r = arg;
    if (!(what & EV_CLOSED)) {
        char b;
        ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) {
            if (n < 0)
                event_add(r->watch, NULL);
            return;
        }
    }
    struct conn *c = r->conn;
    req_cancel(r); /* may free r */
    if (c)
        conn_close(c);
}

void fair_httpd_req_on_cancel(struct fair_httpd_req *req, void (*fn)(void *arg), void *arg)
{
    req->cancel_fn = fn;
    req->cancel_arg = arg;
}

bool fair_httpd_req_cancelled(const struct fair_httpd_req *req)
{
    return req->cancelled;
}

const char *fair_httpd_req_path(const struct fair_httpd_req *req)
{
    return req->path;
}

const char *fair_httpd_req_body(struct fair_httpd_req *req, size_t *len)
{
    *len = 0;
    if (!req->evreq)
        return NULL;
    struct evbuffer *in = evhttp_request_get_input_buffer(req->evreq);
    size_t n = in ? evbuffer_get_length(in) : 0;
    if (!n)
        return "";
    const char *p = (const char *)evbuffer_pullup(in, -1);
    if (!p)
        return NULL;
    *len = n;
    return p;
}

const char *fair_httpd_req_header(struct fair_httpd_req *req, const char *name)
{
    if (!req->evreq)
        return NULL;
    return evhttp_find_header(evhttp_request_get_input_headers(req->evreq), name);
}

/* Sends the answer when the client is still there, then frees req. */
static void req_finish(struct fair_httpd_req *req, int status, const char *content_type,
                       const char *body, size_t len)
{
    if (req->watch)
        event_free(req->watch);
    if (req->evreq && req->conn) {
        req->conn->pending = NULL;
        if (req->srv)
            req->srv->st.deferred--;
        reply(req->conn, req->evreq, status, content_type, body, len, req->head, NULL);
        FAIR_DEBUG("httpd", "msg=request path=%s status=%d deferred=1", req->path, status);
    }
    fair_free(req->query);
    fair_free(req);
}

void fair_httpd_reply(struct fair_httpd_req *req, int status, const char *content_type,
                      const char *body, size_t len)
{
    if (!req)
        return;
    req_finish(req, status, content_type, body, len);
}

/* A deferred request for route r on connection c (may be NULL). */
static struct fair_httpd_req *req_new(struct fair_httpd *srv, struct conn *c,
                                      struct evhttp_request *evreq, const struct route *r, int head)
{
    struct fair_httpd_req *req = fair_calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    req->srv = srv;
    req->conn = c;
    req->evreq = evreq;
    req->head = head;
    snprintf(req->path, sizeof(req->path), "%s", r->path);
    if (c) {
        c->pending = req;
        evutil_socket_t fd = bufferevent_getfd(c->bev);
        short what = EV_READ;
        if (srv->tls && (event_base_get_features(srv->base) & EV_FEATURE_EARLY_CLOSE))
            what = EV_CLOSED;
        if (fd >= 0 && (req->watch = event_new(srv->base, fd, what, on_watch, req)))
            event_add(req->watch, NULL);
    }
    srv->st.deferred++;
    return req;
}

static void start_async(struct fair_httpd *srv, struct conn *c, struct evhttp_request *evreq,
                        const struct route *r, const char *query, int head)
{
    struct fair_httpd_req *req = req_new(srv, c, evreq, r, head);
    if (!req) {
        json_error(c, evreq, 500, "out of memory", head, NULL);
        return;
    }
    r->afn(r->ctx, req, query); /* may reply at once */
}

/* Runs a sync route's handler and answers (c may be NULL). */
static void run_sync(struct conn *c, struct evhttp_request *req, const struct route *r,
                     const char *query, int head)
{
    struct fair_buf body;
    const char *ctype = "text/plain; charset=utf-8";
    int status = 200;
    fair_buf_init(&body, 64 << 20);
    int rc = r->fn(r->ctx, query, &body, &ctype, &status);
    if (rc < 0) {
        FAIR_WARN("httpd", "msg=\"handler failed\" path=%s rc=%d", r->path, rc);
        json_error(c, req, 500, "internal error", head, NULL);
    } else {
        reply(c, req, status, ctype, fair_buf_str(&body), body.len, head, NULL);
    }
    FAIR_DEBUG("httpd", "msg=request path=%s status=%d", r->path, rc < 0 ? 500 : status);
    fair_buf_release(&body);
}

static void start_guarded(struct fair_httpd *srv, struct conn *c, struct evhttp_request *evreq,
                          const struct route *r, const char *query, int head)
{
    struct fair_httpd_req *req = req_new(srv, c, evreq, r, head);
    if (!req || (query && !(req->query = fair_strdup(query)))) {
        if (req) {
            srv->st.deferred--;
            if (c)
                c->pending = NULL;
            if (req->watch)
                event_free(req->watch);
            fair_free(req);
        }
        json_error(c, evreq, 500, "out of memory", head, NULL);
        return;
    }
    req->route = r;
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(evreq), "Authorization");
    srv->guard(srv->guard_ctx, req, auth, r->guard_arg); /* may answer at once */
}

void fair_httpd_guard_done(struct fair_httpd_req *req, int status, const char *msg)
{
    if (!req)
        return;
    if (req->cancelled || !req->evreq || !req->conn || !req->srv || !req->route) {
        req_finish(req, 0, NULL, NULL, 0); /* only frees */
        return;
    }
    if (status != 0) {
        json_t *j = json_pack("{s:s}", "error", msg ? msg : "refused");
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        const char *b = text ? text : "{\"error\":\"refused\"}";
        struct fair_buf body;
        fair_buf_init(&body, 0);
        if (fair_buf_appendf(&body, "%s\n", b) == 0)
            req_finish(req, status, "application/json", fair_buf_str(&body), body.len);
        else
            req_finish(req, status, "application/json", b, strlen(b));
        fair_buf_release(&body);
        free(text);
        return;
    }
    const struct route *r = req->route;
    char *query = req->query;
    req->query = NULL;
    req->route = NULL;
    if (r->afn) {
        r->afn(r->ctx, req, query); /* req is the handler's now */
        fair_free(query);
        return;
    }
    /* A sync route: answer here, as on_request() would have. */
    struct conn *c = req->conn;
    struct evhttp_request *evreq = req->evreq;
    int head = req->head;
    if (req->watch) {
        event_free(req->watch);
        req->watch = NULL;
    }
    c->pending = NULL;
    req->srv->st.deferred--;
    req->evreq = NULL;
    req->conn = NULL;
    fair_free(req);
    run_sync(c, evreq, r, query, head);
    fair_free(query);
}

/* ---- requests ---- */

/* Splits the request target into an exact path and a query. */
static int target_split(struct evhttp_request *req, char *path, size_t pn, char *query, size_t qn,
                        int *has_query)
{
    const char *t = evhttp_request_get_uri(req);
    *has_query = 0;
    if (!t)
        return -1;
    if (t[0] != '/') {
        /* absolute-form (http://host/path): the parsed URI's path */
        const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
        const char *p = u ? evhttp_uri_get_path(u) : NULL;
        const char *q = u ? evhttp_uri_get_query(u) : NULL;
        if (!u || !evhttp_uri_get_scheme(u))
            return -1;
        if ((size_t)snprintf(path, pn, "%s", p && *p ? p : "/") >= pn)
            return -1;
        if (q) {
            *has_query = 1;
            if ((size_t)snprintf(query, qn, "%s", q) >= qn)
                return -1;
        }
        return 0;
    }
    size_t plen = strcspn(t, "?#");
    if (plen >= pn)
        return -1;
    memcpy(path, t, plen);
    path[plen] = '\0';
    if (t[plen] == '?') {
        const char *q = t + plen + 1;
        size_t qlen = strcspn(q, "#");
        if (qlen >= qn)
            return -1;
        memcpy(query, q, qlen);
        query[qlen] = '\0';
        *has_query = 1;
    }
    return 0;
}

static const char *method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_TRACE:
        return "TRACE";
    case EVHTTP_REQ_CONNECT:
        return "CONNECT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    }
    return "?";
}

/* Whether the request came over TLS (see make_bev(): a connection whose
 * TLS set-up failed would otherwise be served in plain HTTP). */
static bool tls_ok(struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    return bev && bufferevent_openssl_get_ssl(bev) != NULL;
}

static struct conn *conn_of(struct fair_httpd *srv, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    for (struct conn *c = srv->tail; evcon && c; c = c->prev)
        if (c->evcon == evcon)
            return c;
    return NULL;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct fair_httpd *srv = arg;
    struct conn *c = conn_of(srv, req);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const char *method = method_name(cmd);
    int head = cmd == EVHTTP_REQ_HEAD;
    if (head)
        method = "GET";
    if (c) {
        c->busy = 1;
        evtimer_del(c->deadline);
    }
    if (srv->tls && !tls_ok(req)) {
        json_error(c, req, 400, "this port serves HTTPS only", head, NULL);
        return;
    }
    char path[1024], query[4096];
    int has_query = 0;
    if (target_split(req, path, sizeof(path), query, sizeof(query), &has_query) != 0) {
        json_error(c, req, 404, "not found", head, NULL);
        return;
    }
    char allow[64] = "";
    for (size_t i = 0; i < srv->nroutes; i++) {
        struct route *r = &srv->routes[i];
        if (strcmp(r->path, path) != 0)
            continue;
        if (strcmp(r->method, method) != 0) {
            size_t n = strlen(allow);
            snprintf(allow + n, sizeof(allow) - n, "%s%s%s", n ? ", " : "", r->method,
                     strcmp(r->method, "GET") == 0 ? ", HEAD" : "");
            continue;
        }
        if (srv->guard)
            start_guarded(srv, c, req, r, has_query ? query : NULL, head);
        else if (r->afn)
            start_async(srv, c, req, r, has_query ? query : NULL, head);
        else
            run_sync(c, req, r, has_query ? query : NULL, head);
        return;
    }
    if (allow[0])
        json_error(c, req, 405, "method not allowed", head, allow);
    else
        json_error(c, req, 404, "not found", head, NULL);
}

/* ---- lifecycle ---- */

int fair_httpd_new(struct event_base *base, const char *addr, int port,
                   const struct fair_httpd_options *o, struct fair_httpd **out,
                   struct fair_error *err)
{
    struct fair_httpd *srv = NULL;
    int rc = 0;
    *out = NULL;
    if (port < 0 || port > 65535)
        return fair_error_set(err, FAIR_EINVAL, "httpd: bad port %d", port);
    srv = fair_calloc(1, sizeof(*srv));
    if (!srv)
        return fair_error_set(err, FAIR_ENOMEM, "httpd: out of memory");
    srv->base = base;
    srv->max_conns = o && o->max_connections > 0 ? o->max_connections : DEFAULT_MAX_CONNECTIONS;
    srv->header_timeout_ms =
        o && o->header_timeout_ms > 0 ? o->header_timeout_ms : DEFAULT_HEADER_TIMEOUT_MS;
    if (o && o->tls) {
        SSL_CTX_up_ref(o->tls);
        srv->tls = o->tls;
    }
    srv->http = evhttp_new(base);
    srv->attach_ev = event_new(base, -1, 0, on_attach, srv);
    srv->accept_timer = evtimer_new(base, on_accept_timer, srv);
    if (!srv->http || !srv->attach_ev || !srv->accept_timer) {
        rc = fair_error_set(err, FAIR_ENOMEM, "httpd: out of memory");
        goto out;
    }
    evhttp_set_max_headers_size(srv->http, 16384);
    evhttp_set_max_body_size(srv->http, 1 << 20);
    evhttp_set_timeout(srv->http, 30);
    /* Every method reaches on_request, which answers the JSON 405 that the
     * route table implies; evhttp's own answer would be an HTML 501. */
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                              EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                              EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                              EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(srv->http, on_request, srv);
    evhttp_set_bevcb(srv->http, make_bev, srv);
    struct evhttp_bound_socket *bs =
        evhttp_bind_socket_with_handle(srv->http, addr, (ev_uint16_t)port);
    if (!bs) {
        rc = fair_error_set(err, FAIR_EIO,
                            "httpd: cannot listen on %s:%d (address in use or "
                            "not local?)",
                            addr, port);
        goto out;
    }
    srv->listener = evhttp_bound_socket_get_listener(bs);
    pthread_mutex_lock(&reg_lock);
    srv->reg_next = reg_head;
    reg_head = srv;
    pthread_mutex_unlock(&reg_lock);
    if (srv->listener)
        evconnlistener_set_error_cb(srv->listener, on_accept_error);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            srv->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            srv->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
out:
    if (rc) {
        fair_httpd_free(srv);
        return rc;
    }
    *out = srv;
    return 0;
}

void fair_httpd_free(struct fair_httpd *srv)
{
    if (!srv)
        return;
    pthread_mutex_lock(&reg_lock);
    for (struct fair_httpd **p = &reg_head; *p; p = &(*p)->reg_next)
        if (*p == srv) {
            *p = srv->reg_next;
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    /* Orphan the deferred requests first: their owners reply later. */
    for (struct conn *c = srv->head; c; c = c->next) {
        struct fair_httpd_req *r = c->pending;
        if (r) {
            r->srv = NULL;
            req_cancel(r);
        }
    }
    if (srv->http)
        evhttp_free(srv->http); /* closes every connection: on_close() */
    /* Connections evhttp never attached hold only our reference now. */
    while (srv->head) {
        struct conn *c = srv->head;
        list_remove(srv, c);
        if (!c->evcon)
            bufferevent_decref(c->bev);
        if (c->deadline)
            event_free(c->deadline);
        fair_free(c);
    }
    if (srv->attach_ev)
        event_free(srv->attach_ev);
    if (srv->accept_timer)
        event_free(srv->accept_timer);
    SSL_CTX_free(srv->tls);
    fair_free(srv);
}

void fair_httpd_set_tls(struct fair_httpd *srv, struct ssl_ctx_st *tls)
{
    if (!srv->tls || !tls)
        return;
    SSL_CTX_up_ref(tls);
    SSL_CTX_free(srv->tls);
    srv->tls = tls;
}

void fair_httpd_set_guard(struct fair_httpd *srv, fair_httpd_guard_fn fn, void *ctx)
{
    srv->guard = fn;
    srv->guard_ctx = ctx;
}

int fair_httpd_route_guard(struct fair_httpd *srv, const char *method, const char *path,
                           const void *arg)
{
    for (size_t i = 0; i < srv->nroutes; i++)
        if (strcmp(srv->routes[i].method, method) == 0 && strcmp(srv->routes[i].path, path) == 0) {
            srv->routes[i].guard_arg = arg;
            return 0;
        }
    return FAIR_ENOTFOUND;
}

static int add_route(struct fair_httpd *srv, const char *method, const char *path,
                     fair_httpd_handler fn, fair_httpd_async_handler afn, void *ctx)
{
    if (!method || !path || (!fn && !afn) || strlen(method) >= sizeof(srv->routes[0].method) ||
        strlen(path) >= sizeof(srv->routes[0].path) || path[0] != '/')
        return FAIR_EINVAL;
    for (size_t i = 0; i < srv->nroutes; i++)
        if (strcmp(srv->routes[i].method, method) == 0 && strcmp(srv->routes[i].path, path) == 0)
            return FAIR_EINVAL;
    if (srv->nroutes == FAIR_HTTPD_MAX_ROUTES)
        return FAIR_ERANGE;
    struct route *r = &srv->routes[srv->nroutes++];
    snprintf(r->method, sizeof(r->method), "%s", method);
    snprintf(r->path, sizeof(r->path), "%s", path);
    r->fn = fn;
    r->afn = afn;
    r->ctx = ctx;
    return 0;
}

int fair_httpd_route(struct fair_httpd *srv, const char *method, const char *path,
                     fair_httpd_handler handler, void *ctx)
{
    return add_route(srv, method, path, handler, NULL, ctx);
}

int fair_httpd_route_async(struct fair_httpd *srv, const char *method, const char *path,
                           fair_httpd_async_handler handler, void *ctx)
{
    return add_route(srv, method, path, NULL, handler, ctx);
}

int fair_httpd_port(const struct fair_httpd *srv)
{
    return srv->port;
}

void fair_httpd_stats(const struct fair_httpd *srv, struct fair_httpd_stats *out)
{
    *out = srv->st;
}

int fair_httpd_metrics(const struct fair_httpd *srv, struct fair_buf *out)
{
    const struct fair_httpd_stats *s = &srv->st;
    int rc = fair_buf_appendf(
        out,
        "# HELP fairshare_http_connections HTTP connections open.\n"
        "# TYPE fairshare_http_connections gauge\n"
        "fairshare_http_connections %" PRIu64 "\n"
        "# HELP fairshare_http_connections_accepted_total HTTP connections accepted.\n"
        "# TYPE fairshare_http_connections_accepted_total counter\n"
        "fairshare_http_connections_accepted_total %" PRIu64 "\n"
        "# HELP fairshare_http_connections_closed_total HTTP connections closed by the server "
        "before a request completed.\n"
        "# TYPE fairshare_http_connections_closed_total counter\n"
        "fairshare_http_connections_closed_total{reason=\"header_timeout\"} %" PRIu64 "\n"
        "fairshare_http_connections_closed_total{reason=\"evicted\"} %" PRIu64 "\n"
        "fairshare_http_connections_closed_total{reason=\"refused\"} %" PRIu64 "\n"
        "# HELP fairshare_http_accept_errors_total accept() failures (the listener paused).\n"
        "# TYPE fairshare_http_accept_errors_total counter\n"
        "fairshare_http_accept_errors_total %" PRIu64 "\n"
        "# HELP fairshare_http_deferred_requests Requests waiting for a reply from a query "
        "thread.\n"
        "# TYPE fairshare_http_deferred_requests gauge\n"
        "fairshare_http_deferred_requests %" PRIu64 "\n"
        "# HELP fairshare_http_cancelled_requests_total Deferred requests whose client went "
        "away.\n"
        "# TYPE fairshare_http_cancelled_requests_total counter\n"
        "fairshare_http_cancelled_requests_total %" PRIu64 "\n",
        s->connections, s->accepted, s->header_timeouts, s->evicted, s->refused, s->accept_errors,
        s->deferred, s->cancelled);
    return rc ? FAIR_ENOMEM : 0;
}
