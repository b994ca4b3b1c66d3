/* The controller's HTTP endpoints and ledger under load and faults, as a
 * real process against the fake API server, with leader election on a
 * short lease (renew deadline 3 s): a loop blocked for seconds would lose
 * the lease and exit 1, as it did before report queries and lock waits
 * left the loop.
 *
 *  - slow_query_keeps_lease: a dashboard query over a million samples runs
 *    on a query thread; /healthz answers while it runs and before it, the
 *    leader keeps its lease; a 30-day range comes from the daily rollups;
 *    with ledger.queryTimeout at 50 ms the same query answers 503.
 *  - locked_ledger: another process holds the ledger's EXCLUSIVE lock for
 *    seconds while pods are bound: the controller keeps scheduling and its
 *    lease, the flushes fail and are retried, and once the lock is gone
 *    every interval is there; at SIGTERM with the lock held, the last
 *    writes wait for it and nothing is lost.
 *  - descriptors_run_out: with 128 file descriptors and 200 idle
 *    connections, accept() fails with EMFILE: the listener backs off,
 *    /healthz (on its own listener, which closes an idle connection of
 *    the other to make room) still answers and the log holds a few lines,
 *    not millions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include "test_controller_common.h"

#include "ledger/ledger.h"

static void write_config(const struct fair_fake *fake, struct ctl *c, const char *tag,
                         bool leader_election, const char *extra)
{
    config_write(c->config, sizeof c->config, fake, tag, "%scycleInterval: 500ms\n%s",
                 leader_election ? CTL_LEASE("4s", "3s", "300ms")
                                 : "leaderElection:\n  enabled: false\n",
                 extra ? extra : "");
}

static void start_fake(struct fair_fake *fake)
{
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(fake, &o), 0);
    const char *ns[] = {"fairshare-system", "team-a", NULL};
    mk_namespaces(fake, ns);
    mk_project(fake, "a", "8", "[\"team-a\"]", NULL);
    mk_queue(fake, "qa", "a", "8", 1);
}

static void start_leader(struct ctl *c, struct fair_fake *fake, const char *tag)
{
    c->identity = tag;
    assert_int_equal(ctl_start_args(c, fake, tag, NULL), 0);
    if (!WAIT_UNTIL(ctl_ready(c) && ctl_metric(c, "fairshare_leader") == 1, WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("controller %s not ready and leading", tag);
    }
}

/* Alive, still leading, and /healthz answers. */
static void assert_healthy(struct ctl *c)
{
    long code = 0;
    free(ctl_get(c, "/healthz", &code));
    if (code != 200 || !ctl_alive(c) || ctl_metric(c, "fairshare_leader") != 1) {
        ctl_dump_log(c, 40);
        fail_msg("controller unhealthy: healthz %ld", code);
    }
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {120, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static int send_get(int port, const char *target)
{
    char req[512];
    int fd = dial(port);
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", target);
    assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    return fd;
}

/* Reads the whole answer (the server closes); its status, 0 for none. */
static int read_all(int fd, char **out)
{
    size_t len = 0, cap = 1 << 16;
    char *b = malloc(cap);
    assert_non_null(b);
    for (;;) {
        if (cap - len < 4096) {
            cap *= 2;
            b = realloc(b, cap);
            assert_non_null(b);
        }
        ssize_t n = recv(fd, b + len, cap - len - 1, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    b[len] = '\0';
    int code = 0;
    if (sscanf(b, "HTTP/1.%*d %d", &code) != 1)
        code = 0;
    *out = b;
    return code;
}

static bool nothing_yet(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static int64_t scalar(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

static bool log_has(const struct ctl *c, const char *what)
{
    FILE *f = fopen(c->log, "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return found;
}

static int log_count(const struct ctl *c, const char *what)
{
    FILE *f = fopen(c->log, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* Waits for the process to end (no signal sent); its exit status, or -1. */
static int wait_exit(struct ctl *c)
{
    int st = 0;
    long long deadline = now_ms() + WAIT_MS;
    while (waitpid(c->pid, &st, WNOHANG) != c->pid) {
        if (now_ms() > deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &st, 0);
            c->pid = 0;
            return -1;
        }
        nap(20);
    }
    c->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* 100 queues x 30 days of samples every minute (4.3 million rows, the
 * size that took 13 s on the loop), and their daily rollups. */
#define SEP1 1788220800000LL /* 2026-09-01T00:00:00Z */
static void big_ledger(const char *path)
{
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    fair_ledger_free(l);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    char sql[2048];
    snprintf(sql, sizeof sql,
             "BEGIN;"
             "INSERT INTO dims(id, namespace, queue, project, team, cost_center, gpu_model)"
             " WITH RECURSIVE q(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM q WHERE i < 100)"
             " SELECT i, '', printf('queue-%%03d', i), 'p', 'team', '', '' FROM q;"
             "INSERT INTO samples(t_ms, dur_ms, dim_id, allocated, guaranteed, fair_share,"
             " pending, in_quota, borrowed, lent)"
             " WITH RECURSIVE t(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM t WHERE i < %d)"
             " SELECT %lld + (t.i / 100 + 1) * 60000, 60000, t.i %% 100 + 1, 1000, 2000, 1500,"
             " 0, 1000, 0, 0 FROM t;"
             "INSERT INTO sample_day(day, dim_id, allocated_mms, guaranteed_mms, in_quota_mms,"
             " borrowed_mms, lent_mms, pending_mms, fair_share_mms, sampled_ms)"
             " SELECT (t_ms - 1) / 86400000, dim_id, sum(allocated * dur_ms),"
             " sum(guaranteed * dur_ms), sum(in_quota * dur_ms), 0, 0, 0,"
             " sum(fair_share * dur_ms), sum(dur_ms) FROM samples GROUP BY 1, 2;"
             "COMMIT;",
             30 * 1440 * 100 - 1, (long long)SEP1);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("generate: %s", msg);
    sqlite3_close(h);
}

#define SLOW "/api/v1/queues/samples?from=2026-09-01&to=2026-09-08"

static void test_slow_query_keeps_lease(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c, d;
    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    c.plain = true; /* raw HTTP requests below (d is served over HTTPS) */
    start_fake(&fake);
    snprintf(c.ledger, sizeof c.ledger, "%s/big.db", fake.dir);
    big_ledger(c.ledger);
    write_config(&fake, &c, "a", true, "ledger:\n  queryTimeout: 2m\n");
    start_leader(&c, &fake, "a");

    /* A week of raw samples (a million rows): the query runs on a query
     * thread while /healthz answers, before the query does. */
    int q = send_get(c.port, SLOW);
    if (!WAIT_UNTIL(ctl_metric(&c, "fairshare_http_queries_running") == 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the query is not running on a query thread");
    }
    long code = 0;
    free(ctl_get(&c, "/healthz", &code));
    assert_int_equal(code, 200);
    assert_true(nothing_yet(q)); /* /healthz answered first */
    char *body = NULL;
    assert_int_equal(read_all(q, &body), 200);
    close(q);
    assert_non_null(strstr(body, "{\"queue\":\"queue-001\",\"team\":\"team\",\"points\":[["));
    assert_non_null(strstr(body, ",1000,1500,2000]"));
    free(body);
    assert_healthy(&c);

    /* 30 days: the daily rollups, one point per day and queue. */
    body = ctl_get(&c, "/api/v1/queues/samples?from=2026-09-01&to=2026-10-01", &code);
    assert_int_equal(code, 200);
    assert_non_null(strstr(body, "\"step_ms\":86400000,"));
    assert_non_null(strstr(body, "{\"queue\":\"queue-100\",\"team\":\"team\",\"points\":[["
                                 "1788307200000,1000,1500,2000],"));
    assert_non_null(strstr(body, "[1790812800000,1000,1500,2000]]}]}"));
    free(body);
    assert_healthy(&c);
    assert_int_equal(ctl_stop(&c), 0);

    /* The deadline: the same query answers 503 and stops. */
    snprintf(d.ledger, sizeof d.ledger, "%s", c.ledger);
    write_config(&fake, &d, "d", true, "ledger:\n  queryTimeout: 50ms\n");
    start_leader(&d, &fake, "d");
    body = ctl_get(&d, SLOW, &code);
    assert_int_equal(code, 503);
    assert_non_null(strstr(body, "{\"error\":\"the query ran past its deadline of 50 ms "
                                 "(ledger.queryTimeout) and was stopped"));
    free(body);
    assert_true(ctl_metric(&d, "fairshare_http_queries_total{result=\"timeout\"}") == 1);
    assert_healthy(&d);
    assert_int_equal(ctl_stop(&d), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static void test_locked_ledger(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    write_config(&fake, &c, "l", true, "ledger:\n  flushInterval: 500ms\n  shutdownTimeout: 60s\n");
    start_leader(&c, &fake, "l");

    /* Another process holds the lock while 8 pods are bound. */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(c.ledger, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "p-%d", i);
        mk_pod(&fake, "team-a", name, "qa", "1");
    }
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 8, WAIT_MS));
    /* Held for seconds: several flushes fail and are retried. */
    if (!WAIT_UNTIL(ctl_metric(&c, "fairshare_ledger_flush_failing") >= 8, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("flushes do not fail while the ledger is locked");
    }
    assert_healthy(&c);
    assert_true(ctl_metric(&c, "fairshare_ledger_queued_records") >= 8);
    assert_int_equal(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    /* The lock is gone: every interval is committed. */
    assert_true(WAIT_UNTIL(ctl_metric(&c, "fairshare_ledger_flush_failing") == 0 &&
                               ctl_metric(&c, "fairshare_ledger_queued_records") == 0,
                           WAIT_MS));
    assert_int_equal(scalar(h, "SELECT count(*) FROM intervals WHERE end_ms IS NULL"), 8);
    assert_int_equal(scalar(h, "SELECT count(*) FROM intervals"), 8);
    assert_true(ctl_metric(&c, "fairshare_ledger_dropped_records_total") == 0);
    assert_healthy(&c);

    /* Locked again; the pods end; SIGTERM: the last writes wait for the
     * lock (ledger.shutdownTimeout), which goes away meanwhile. */
    assert_int_equal(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof name, "p-%d", i);
        delete_pod(&fake, "team-a", name);
    }
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", -1) == 0, WAIT_MS));
    assert_true(WAIT_UNTIL(ctl_metric(&c, "fairshare_ledger_queued_records") >= 8, WAIT_MS));
    kill(c.pid, SIGTERM);
    assert_true(WAIT_UNTIL(log_has(&c, "msg=\"shutting down\""), WAIT_MS));
    assert_int_equal(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    int rc = wait_exit(&c);
    if (rc != 0)
        ctl_dump_log(&c, 40);
    assert_int_equal(rc, 0);
    assert_int_equal(scalar(h, "SELECT count(*) FROM intervals WHERE end_ms IS NULL"), 0);
    assert_int_equal(scalar(h, "SELECT count(*) FROM intervals"), 8);
    assert_false(log_has(&c, "flush at close failed"));
    assert_false(log_has(&c, "final ledger flush failed"));
    sqlite3_close(h);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static void test_descriptors_run_out(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    /* Slow clients are not closed by the header deadline here: only the
     * accept back-off can make room. No leader election: with every
     * descriptor taken, a new connection to the API server could fail too,
     * which is not what this test is about. */
    write_config(&fake, &c, "f", false, "http:\n  headerTimeout: 10m\n");
    c.plain = true; /* idle plain-HTTP clients below */
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 128; /* inherited by the controller through fork and exec */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    c.identity = "f";
    int rc = ctl_start_args(&c, &fake, "f", NULL);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready");
    }
    int fds[200];
    for (int i = 0; i < 200; i++)
        fds[i] = dial(c.port);
    /* /healthz answers although the slow clients took every descriptor. */
    long code = 0;
    if (!WAIT_UNTIL((free(ctl_get(&c, "/healthz", &code)), code == 200), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("/healthz does not answer");
    }
    assert_true(ctl_metric(&c, "fairshare_http_accept_errors_total") >= 1);
    assert_healthy(&c);
    for (int i = 0; i < 200; i++)
        close(fds[i]);
    /* A handful of lines, not one per failed accept(). */
    int lines = log_count(&c, "accept failed");
    assert_true(lines >= 1);
    assert_true(lines <= 6);
    assert_int_equal(log_count(&c, "Error from accept() call"), 0);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_slow_query_keeps_lease, tc_teardown),
        cmocka_unit_test_teardown(test_locked_ledger, tc_teardown),
        cmocka_unit_test_teardown(test_descriptors_run_out, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
