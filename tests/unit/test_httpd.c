/* Unit tests for lib/httpd over real sockets on 127.0.0.1: exact paths and
 * the JSON 405, the header deadline against a trickling client, the
 * connection cap against idle connections, deferred replies and their
 * cancellation, and the query pool's deadline over a ledger large enough
 * that a query takes a while. The server runs on its own thread with its
 * own event loop (as in the controller, everything of lib/httpd stays on
 * that thread); the test thread is the client. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "httpd/dashboard.h"
#include "httpd/httpd.h"
#include "httpd/querypool.h"
#include "ledger/ledger.h"

#define WAIT_MS 30000
#define DAY FAIR_LEDGER_DAY_MS
#define T0 1790812800000LL /* 2026-10-01T00:00:00Z */

static char dir[64], db[128];

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

#define WAIT_UNTIL(expr)                                                                           \
    ({                                                                                             \
        long long deadline_ = now_ms() + WAIT_MS;                                                  \
        bool ok_ = false;                                                                          \
        for (;;) {                                                                                 \
            if (expr) {                                                                            \
                ok_ = true;                                                                        \
                break;                                                                             \
            }                                                                                      \
            if (now_ms() > deadline_)                                                              \
                break;                                                                             \
            nap(20);                                                                               \
        }                                                                                          \
        ok_;                                                                                       \
    })

/* ---- the server thread ---- */

struct server {
    pthread_t th;
    struct fair_httpd_options ho;
    const char *ledger; /* NULL: no query pool */
    int64_t query_timeout_ms;
    int port;
    atomic_int ready; /* 1 up, -1 failed */
    int stop[2];      /* the test writes a byte: the loop ends */
    int release[2];   /* the test writes a byte: /hang requests are answered */
    /* Server-thread only: */
    struct event_base *base;
    struct fair_httpd *srv;
    struct fair_querypool *pool;
    struct fair_httpd_req *hung[16];
    int nhung;
    atomic_int nhung_seen; /* for the test thread */
    atomic_int hang_cancels;
};

static int healthz(void *ctx, const char *query, struct fair_buf *body, const char **type,
                   int *status)
{
    (void)ctx;
    (void)query;
    *type = "text/plain";
    *status = 200;
    return fair_buf_appends(body, "ok\n");
}

static int metrics(void *ctx, const char *query, struct fair_buf *body, const char **type,
                   int *status)
{
    struct server *s = ctx;
    (void)query;
    *type = "text/plain";
    *status = 200;
    int rc = fair_httpd_metrics(s->srv, body);
    if (!rc && s->pool)
        rc = fair_querypool_metrics(s->pool, body);
    return rc;
}

static void hang_cancel(void *arg)
{
    struct server *s = arg;
    atomic_fetch_add(&s->hang_cancels, 1);
}

/* An async route that answers only when the test says so. */
static void hang(void *ctx, struct fair_httpd_req *req, const char *query)
{
    struct server *s = ctx;
    (void)query;
    if (s->nhung == 16) {
        fair_httpd_reply(req, 500, "text/plain", "full\n", 5);
        return;
    }
    fair_httpd_req_on_cancel(req, hang_cancel, s);
    s->hung[s->nhung++] = req;
    atomic_fetch_add(&s->nhung_seen, 1);
}

static void on_release(evutil_socket_t fd, short what, void *arg)
{
    struct server *s = arg;
    char b;
    (void)what;
    if (read(fd, &b, 1) != 1)
        return;
    for (int i = 0; i < s->nhung; i++)
        fair_httpd_reply(s->hung[i], 200, "text/plain", "released\n", 9);
    s->nhung = 0;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static void *server_main(void *arg)
{
    struct server *s = arg;
    struct fair_error err = {0};
    struct event *stop_ev = NULL, *rel_ev = NULL;
    s->base = event_base_new();
    if (!s->base || fair_httpd_new(s->base, "127.0.0.1", 0, &s->ho, &s->srv, &err)) {
        fprintf(stderr, "server: %s\n", err.msg);
        atomic_store(&s->ready, -1);
        goto out;
    }
    fair_httpd_route(s->srv, "GET", "/healthz", healthz, s);
    fair_httpd_route(s->srv, "GET", "/metrics", metrics, s);
    fair_httpd_route_async(s->srv, "GET", "/hang", hang, s);
    if (s->ledger) {
        struct fair_querypool_options po = {
            .path = s->ledger, .threads = 1, .timeout_ms = s->query_timeout_ms};
        if (fair_querypool_new(s->base, &po, &s->pool, &err) ||
            fair_dashboard_register(s->srv, s->pool)) {
            fprintf(stderr, "server: %s\n", err.msg);
            atomic_store(&s->ready, -1);
            goto out;
        }
    } else {
        fair_httpd_route(s->srv, "GET", "/", fair_dashboard_page, NULL);
    }
    stop_ev = event_new(s->base, s->stop[0], EV_READ, on_stop, s->base);
    rel_ev = event_new(s->base, s->release[0], EV_READ | EV_PERSIST, on_release, s);
    event_add(stop_ev, NULL);
    event_add(rel_ev, NULL);
    s->port = fair_httpd_port(s->srv);
    atomic_store(&s->ready, 1);
    event_base_dispatch(s->base);
out:
    for (int i = 0; i < s->nhung; i++)
        fair_httpd_reply(s->hung[i], 503, "text/plain", "bye\n", 4);
    fair_querypool_free(s->pool);
    fair_httpd_free(s->srv);
    if (stop_ev)
        event_free(stop_ev);
    if (rel_ev)
        event_free(rel_ev);
    if (s->base)
        event_base_free(s->base);
    return NULL;
}

static void server_start(struct server *s)
{
    assert_int_equal(pipe(s->stop), 0);
    assert_int_equal(pipe(s->release), 0);
    atomic_init(&s->ready, 0);
    atomic_init(&s->hang_cancels, 0);
    atomic_init(&s->nhung_seen, 0);
    assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
    assert_true(WAIT_UNTIL(atomic_load(&s->ready) != 0));
    assert_int_equal(atomic_load(&s->ready), 1);
}

static void server_stop(struct server *s)
{
    assert_int_equal(write(s->stop[1], "x", 1), 1);
    pthread_join(s->th, NULL);
    close(s->stop[0]);
    close(s->stop[1]);
    close(s->release[0]);
    close(s->release[1]);
}

/* ---- the client ---- */

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* Reads until the server closes; the raw response in out. Returns the
 * status code, 0 when the connection closed without a response. */
static int read_response(int fd, struct fair_buf *out)
{
    char buf[4096];
    fair_buf_reset(out);
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        fair_buf_append(out, buf, (size_t)n);
    }
    int code = 0;
    if (sscanf(fair_buf_str(out), "HTTP/1.%*d %d", &code) != 1)
        code = 0;
    return code;
}

/* One request (Connection: close); the raw response in out. */
static int request(int port, const char *method, const char *target, struct fair_buf *out)
{
    char req[1024];
    int fd = dial(port);
    int n =
        snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                 method, target);
    assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    int code = read_response(fd, out);
    close(fd);
    return code;
}

static const char *body_of(const struct fair_buf *resp)
{
    const char *b = strstr(fair_buf_str(resp), "\r\n\r\n");
    return b ? b + 4 : "";
}

/* The value of a metric series, -1 when absent. */
static double metric(int port, const char *series)
{
    struct fair_buf out;
    fair_buf_init(&out, 0);
    double v = -1;
    size_t n = strlen(series);
    if (request(port, "GET", "/metrics", &out) == 200)
        for (const char *line = body_of(&out); line && *line;) {
            if (strncmp(line, series, n) == 0 && line[n] == ' ')
                v = strtod(line + n + 1, NULL);
            line = strchr(line, '\n');
            line = line ? line + 1 : NULL;
        }
    fair_buf_release(&out);
    return v;
}

/* Whether nothing has arrived on fd yet (no answer, no close). */
static bool nothing_yet(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Whether the server closed fd (EOF or reset), without waiting. */
static bool peer_closed(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* ---- tests ---- */

/* Paths match exactly: "//metrics" is not "/metrics" (evhttp's URI parser
 * reads "//metrics" as a host and an empty path, which served "/").
 * Methods the server has no route for get the JSON 405 with Allow, not
 * libevent's HTML 501. */
static void test_exact_paths_and_methods(void **state)
{
    (void)state;
    static struct server s;
    memset(&s, 0, sizeof s);
    server_start(&s);
    struct fair_buf r;
    fair_buf_init(&r, 0);
    assert_int_equal(request(s.port, "GET", "/", &r), 200);
    assert_non_null(strstr(body_of(&r), "<title>Fairshare GPU ledger</title>"));
    assert_int_equal(request(s.port, "GET", "/metrics", &r), 200);
    assert_int_equal(request(s.port, "GET", "//metrics", &r), 404);
    assert_string_equal(body_of(&r), "{\"error\":\"not found\"}\n");
    assert_int_equal(request(s.port, "GET", "//", &r), 404);
    assert_int_equal(request(s.port, "GET", "/metrics/", &r), 404);
    assert_int_equal(request(s.port, "GET", "/healthz?x=1#frag", &r), 200);
    /* absolute-form: matched by its path */
    assert_int_equal(request(s.port, "GET", "http://127.0.0.1/healthz", &r), 200);
    static const char *const methods[] = {"OPTIONS", "PUT", "DELETE", "PATCH", "POST", "TRACE"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        assert_int_equal(request(s.port, methods[i], "/", &r), 405);
        assert_non_null(strstr(fair_buf_str(&r), "Content-Type: application/json\r\n"));
        assert_non_null(strstr(fair_buf_str(&r), "Allow: GET, HEAD\r\n"));
        assert_string_equal(body_of(&r), "{\"error\":\"method not allowed\"}\n");
        assert_int_equal(request(s.port, methods[i], "/nope", &r), 404);
        assert_string_equal(body_of(&r), "{\"error\":\"not found\"}\n");
    }
    assert_int_equal(request(s.port, "HEAD", "/healthz", &r), 200);
    assert_string_equal(body_of(&r), "");
    fair_buf_release(&r);
    server_stop(&s);
}

/* A request trickled one byte at a time never completes within the header
 * deadline: the server closes the connection (libevent's own timeout
 * restarts with every byte). An idle kept-alive connection is closed the
 * same way. */
static void test_header_deadline(void **state)
{
    (void)state;
    static struct server s;
    memset(&s, 0, sizeof s);
    s.ho.header_timeout_ms = 300;
    server_start(&s);
    char req[400];
    int n = snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ");
    while (n < (int)sizeof req - 5)
        req[n++] = 'a';
    memcpy(req + n, "\r\n\r\n", 4);
    n += 4;
    int fd = dial(s.port);
    int sent = 0;
    while (sent < n && !peer_closed(fd)) {
        if (send(fd, req + sent, 1, MSG_NOSIGNAL) != 1)
            break;
        sent++;
        nap(20);
    }
    assert_true(sent < n); /* closed before the request was complete */
    struct fair_buf r;
    fair_buf_init(&r, 0);
    assert_int_equal(read_response(fd, &r), 0); /* and never answered */
    close(fd);
    assert_true(
        metric(s.port, "fairshare_http_connections_closed_total{reason=\"header_timeout\"}") >= 1);
    /* Kept alive, then idle: closed at the deadline too. */
    fd = dial(s.port);
    const char *get = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    assert_int_equal(send(fd, get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
    char buf[512];
    assert_true(recv(fd, buf, sizeof buf, 0) > 0);
    assert_true(WAIT_UNTIL(peer_closed(fd)));
    close(fd);
    fair_buf_release(&r);
    server_stop(&s);
}

/* 60 idle connections against a cap of 8: the oldest waiting ones are
 * closed to make room, so /healthz still answers; when every connection
 * is BUSY (deferred requests waiting), a new one is refused; a client
 * that leaves cancels its deferred request. */
static void test_connection_cap(void **state)
{
    (void)state;
    static struct server s;
    memset(&s, 0, sizeof s);
    s.ho.max_connections = 8;
    s.ho.header_timeout_ms = 60000;
    server_start(&s);
    int idle[60];
    for (int i = 0; i < 60; i++)
        idle[i] = dial(s.port);
    struct fair_buf r;
    fair_buf_init(&r, 0);
    assert_int_equal(request(s.port, "GET", "/healthz", &r), 200);
    /* Closed right at accept (refused) or after waiting (evicted). */
    assert_true(metric(s.port, "fairshare_http_connections_closed_total{reason=\"evicted\"}") +
                    metric(s.port, "fairshare_http_connections_closed_total{reason=\"refused\"}") >=
                52);
    assert_true(metric(s.port, "fairshare_http_connections") <= 8);
    for (int i = 0; i < 60; i++)
        close(idle[i]);
    assert_true(WAIT_UNTIL(metric(s.port, "fairshare_http_connections") == 1));

    /* 8 BUSY connections: a 9th is refused (closed unanswered). */
    int busy[8];
    const char *get = "GET /hang HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    for (int i = 0; i < 8; i++) {
        busy[i] = dial(s.port);
        assert_int_equal(send(busy[i], get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
    }
    assert_true(WAIT_UNTIL(atomic_load(&s.nhung_seen) == 8));
    assert_int_equal(request(s.port, "GET", "/healthz", &r), 0);
    /* A client of /hang leaves: its request is cancelled. */
    close(busy[0]);
    assert_true(WAIT_UNTIL(atomic_load(&s.hang_cancels) == 1));
    assert_int_equal(write(s.release[1], "x", 1), 1);
    for (int i = 1; i < 8; i++) {
        assert_int_equal(read_response(busy[i], &r), 200);
        assert_string_equal(body_of(&r), "released\n");
        close(busy[i]);
    }
    assert_true(metric(s.port, "fairshare_http_connections_closed_total{reason=\"refused\"}") >= 1);
    assert_true(metric(s.port, "fairshare_http_cancelled_requests_total") == 1);
    assert_true(metric(s.port, "fairshare_http_deferred_requests") == 0);
    fair_buf_release(&r);
    server_stop(&s);
}

/* ---- the query pool over a large ledger ---- */

/* A ledger with 2 days of samples every second for 10 queues (1.7 M rows):
 * written straight into the tables, as bench_ledger does. */
static void big_ledger(void)
{
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = db;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    fair_ledger_free(l);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "BEGIN;"
             "INSERT INTO dims(id, namespace, queue, project, team, cost_center, gpu_model)"
             " WITH RECURSIVE q(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM q WHERE i < 10)"
             " SELECT i, '', 'queue-' || i, 'p', 'team-' || i, '', '' FROM q;"
             "INSERT INTO samples(t_ms, dur_ms, dim_id, allocated, guaranteed, fair_share,"
             " pending, in_quota, borrowed, lent)"
             " WITH RECURSIVE t(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM t WHERE i < %d)"
             " SELECT %lld + (t.i / 10) * 1000, 1000, t.i %% 10 + 1, 1000, 2000, 1500, 0, 1000,"
             " 0, 0 FROM t;"
             "COMMIT;",
             2 * 86400 * 10, (long long)T0);
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("generate: %s", msg);
    sqlite3_close(h);
}

static int setup_big(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/fair_httpd_unit_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/ledger.db", dir);
    big_ledger();
    return 0;
}

static int teardown_big(void **state)
{
    (void)state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#define SLOW_QUERY "/api/v1/queues/samples?from=2026-10-01&to=2026-10-03"

/* The slow query runs on a pool thread: /healthz answers meanwhile, and
 * the query's own answer comes after. A query past its deadline answers
 * 503 with a JSON message; a client that leaves stops its query. */
static void test_querypool(void **state)
{
    (void)state;
    static struct server s;
    memset(&s, 0, sizeof s);
    s.ledger = db;
    s.query_timeout_ms = 120000;
    server_start(&s);
    struct fair_buf r;
    fair_buf_init(&r, 0);
    /* Ordering: the query is running, /healthz answers, then the query. */
    int q = dial(s.port);
    char req[256];
    int n = snprintf(req, sizeof req,
                     "GET " SLOW_QUERY " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    assert_int_equal(send(q, req, (size_t)n, MSG_NOSIGNAL), n);
    assert_true(WAIT_UNTIL(metric(s.port, "fairshare_http_queries_running") == 1));
    assert_int_equal(request(s.port, "GET", "/healthz", &r), 200);
    assert_true(nothing_yet(q)); /* the query has not answered yet */
    assert_int_equal(read_response(q, &r), 200);
    close(q);
    assert_non_null(
        strstr(body_of(&r), "{\"queue\":\"queue-1\",\"team\":\"team-1\",\"points\":[["));
    assert_non_null(strstr(body_of(&r), ",1000,1500,2000]"));
    /* Cancel: the client leaves while its query runs. */
    q = dial(s.port);
    assert_int_equal(send(q, req, (size_t)n, MSG_NOSIGNAL), n);
    assert_true(WAIT_UNTIL(metric(s.port, "fairshare_http_queries_running") == 1));
    close(q);
    assert_true(
        WAIT_UNTIL(metric(s.port, "fairshare_http_queries_total{result=\"cancelled\"}") == 1));
    assert_true(metric(s.port, "fairshare_http_queries_running") == 0);
    fair_buf_release(&r);
    server_stop(&s);

    /* The deadline: a query that cannot finish within it is stopped. */
    memset(&s, 0, sizeof s);
    s.ledger = db;
    s.query_timeout_ms = 20;
    server_start(&s);
    fair_buf_init(&r, 0);
    assert_int_equal(request(s.port, "GET", SLOW_QUERY, &r), 503);
    assert_non_null(strstr(fair_buf_str(&r), "Content-Type: application/json\r\n"));
    assert_non_null(strstr(body_of(&r), "{\"error\":\"the query ran past its deadline of 20 ms"));
    assert_true(metric(s.port, "fairshare_http_queries_total{result=\"timeout\"}") == 1);
    /* A fast query still answers. */
    assert_int_equal(request(s.port, "GET", "/api/v1/queues/current", &r), 200);
    fair_buf_release(&r);
    server_stop(&s);
}

/* ---- the dashboard's daily rollups ---- */

static int64_t raw_mean(sqlite3 *h, const char *col, const char *queue, int64_t a, int64_t b)
{
    char sql[400];
    snprintf(sql, sizeof sql,
             "SELECT sum(s.%s * s.dur_ms) / sum(s.dur_ms) FROM samples s JOIN dims d ON"
             " d.id = s.dim_id WHERE d.queue = '%s' AND s.t_ms > %lld AND s.t_ms <= %lld",
             col, queue, (long long)a, (long long)b);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Points of queue in a samples answer (new reference). */
static json_t *points_of(const char *body, const char *queue)
{
    json_error_t e;
    json_t *j = json_loads(body, 0, &e);
    assert_non_null(j);
    size_t i;
    json_t *q, *out = NULL;
    json_array_foreach(json_object_get(j, "queues"), i, q)
    {
        if (strcmp(json_string_value(json_object_get(q, "queue")), queue) == 0)
            out = json_incref(json_object_get(q, "points"));
    }
    json_decref(j);
    assert_non_null(out);
    return out;
}

/* A period longer than 7 days is drawn from the daily rollups: one point
 * per UTC day, equal to the duration-weighted mean of that day's raw
 * samples; the partial days at the edges (a zone other than UTC) come
 * from the raw samples, one point each. */
static void test_dashboard_rollups(void **state)
{
    (void)state;
    char p2[160];
    snprintf(p2, sizeof p2, "%s/rollup.db", dir);
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = p2;
    o.sample_period_ms = 600000;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    int64_t t0 = 1793491200000LL; /* 2026-11-01T00:00:00Z */
    for (int i = 1; i <= 10 * 144; i++) {
        struct fair_ledger_sample_row rows[2] = {
            {.queue = "qa",
             .team = "alpha",
             .allocated = (i * 37) % 8000,
             .guaranteed = 4000 + (i / 144) * 100,
             .fair_share = 3000 + (i * 11) % 900,
             .lent = -1},
            {.queue = "qb",
             .team = "beta",
             .allocated = 500,
             .guaranteed = 0,
             .fair_share = 1000,
             .lent = -1},
        };
        assert_int_equal(fair_ledger_sample(l, t0 + i * 600000LL, rows, 2, &err), 0);
    }
    assert_int_equal(fair_ledger_flush(l, &err), 0);
    fair_ledger_free(l);
    o.readonly = 1;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(p2, &h), SQLITE_OK);
    struct fair_buf body;
    fair_buf_init(&body, 0);
    const char *ct = NULL;
    int status = 0;
    assert_int_equal(
        fair_dashboard_samples(l, "from=2026-11-01&to=2026-11-11", &body, &ct, &status), 0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(fair_buf_str(&body), "\"step_ms\":86400000,"));
    json_t *pts = points_of(fair_buf_str(&body), "qa");
    assert_int_equal(json_array_size(pts), 10);
    for (size_t d = 0; d < 10; d++) {
        json_t *p = json_array_get(pts, d);
        int64_t a = t0 + (int64_t)d * DAY, b = a + DAY;
        assert_int_equal(json_integer_value(json_array_get(p, 0)), b);
        assert_int_equal(json_integer_value(json_array_get(p, 1)),
                         raw_mean(h, "allocated", "qa", a, b));
        assert_int_equal(json_integer_value(json_array_get(p, 2)),
                         raw_mean(h, "fair_share", "qa", a, b));
        assert_int_equal(json_integer_value(json_array_get(p, 3)),
                         raw_mean(h, "guaranteed", "qa", a, b));
    }
    json_decref(pts);
    /* +05:00: whole UTC days Nov 1 to 9, then the raw edge to 19:00 UTC. */
    assert_int_equal(
        fair_dashboard_samples(l, "from=2026-11-01&to=2026-11-11&tz=%2B05:00", &body, &ct, &status),
        0);
    assert_int_equal(status, 200);
    pts = points_of(fair_buf_str(&body), "qa");
    assert_int_equal(json_array_size(pts), 10);
    int64_t to = t0 + 10 * DAY - 5 * 3600000LL, d1 = t0 + 9 * DAY;
    json_t *last = json_array_get(pts, 9);
    assert_int_equal(json_integer_value(json_array_get(last, 0)), to);
    assert_int_equal(json_integer_value(json_array_get(last, 1)),
                     raw_mean(h, "allocated", "qa", d1, to));
    assert_int_equal(json_integer_value(json_array_get(json_array_get(pts, 8), 1)),
                     raw_mean(h, "allocated", "qa", d1 - DAY, d1));
    json_decref(pts);
    /* 7 days or less: the raw samples, as before. */
    assert_int_equal(
        fair_dashboard_samples(l, "from=2026-11-01&to=2026-11-08", &body, &ct, &status), 0);
    assert_non_null(strstr(fair_buf_str(&body), "\"step_ms\":2016000,"));
    fair_buf_release(&body);
    sqlite3_close(h);
    fair_ledger_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_paths_and_methods), cmocka_unit_test(test_header_deadline),
        cmocka_unit_test(test_connection_cap),          cmocka_unit_test(test_querypool),
        cmocka_unit_test(test_dashboard_rollups),
    };
    return cmocka_run_group_tests(tests, setup_big, teardown_big);
}
