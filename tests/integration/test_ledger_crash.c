/* The ledger under a real kill -9: a child process writes intervals and
 * samples to a real file in a loop and is killed with SIGKILL at a random
 * point; the database must pass PRAGMA integrity_check and the report must
 * be exact up to the last committed batch. Also a real full disk (a 256 KiB
 * tmpfs, when this process may mount one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper_run.h"

#include "base/clock.h"
#include "base/log.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

static char dir[64], db[128];
static const int64_t T0 = 1793577600000LL; /* 2026-11-02T00:00:00Z */
#define MIN 60000LL

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fair_ledger_crash_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/ledger.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return fair_test_remove_dir(dir);
}

/* The writer: batch i opens pod c<i> (0.25 GPU, i%3 queues), closes
 * c<i-1> at T0 + i min, samples at T0 + i min and flushes, then reports
 * i on the pipe. Bounded: it stops by itself after 200000 batches. */
static void writer(int fd)
{
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_log_set_level(FAIR_LOG_ERROR);
    fair_ledger_options_init(&o);
    o.path = db;
    if (fair_ledger_open(&o, &l, &err))
        _exit(3);
    for (int i = 0; i < 200000; i++) {
        char uid[32], prev[32];
        static const char *const queues[] = {"q0", "q1", "q2"};
        static const char *const teams[] = {"alpha", "beta", "gamma"};
        snprintf(uid, sizeof(uid), "c%d", i);
        struct fair_ledger_interval_info in = {.uid = uid,
                                               .namespace_ = "ns",
                                               .pod = uid,
                                               .queue = queues[i % 3],
                                               .project = teams[i % 3],
                                               .team = teams[i % 3],
                                               .cost_center = "",
                                               .node = "n",
                                               .gpu_model = "A100",
                                               .gpu_milli = 250,
                                               .inquota_milli = 250,
                                               .start_ms = T0 + i * MIN};
        if (fair_ledger_interval_open(l, &in, &err))
            _exit(4);
        if (i > 0) {
            snprintf(prev, sizeof(prev), "c%d", i - 1);
            if (fair_ledger_interval_close(l, prev, T0 + i * MIN, FAIR_LEDGER_COMPLETED, &err))
                _exit(5);
        }
        struct fair_ledger_sample_row rows[3] = {
            {.queue = "q0",
             .project = "alpha",
             .team = "alpha",
             .allocated = 250,
             .guaranteed = 1000,
             .lent = -1},
            {.queue = "q1",
             .project = "beta",
             .team = "beta",
             .allocated = 0,
             .guaranteed = 1000,
             .lent = -1},
            {.queue = "q2",
             .project = "gamma",
             .team = "gamma",
             .allocated = 0,
             .guaranteed = 0,
             .lent = -1},
        };
        if (fair_ledger_sample(l, T0 + i * MIN, rows, 3, &err) || fair_ledger_flush(l, &err))
            _exit(6);
        if (write(fd, &i, sizeof(i)) != (ssize_t)sizeof(i))
            _exit(7);
    }
    _exit(0);
}

static int64_t meta(sqlite3 *h, const char *key)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key=?", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void check_exact(int64_t batches)
{
    /* Independent check with plain SQLite first. */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    assert_int_equal(meta(h, "batches"), batches);
    assert_int_equal(meta(h, "heartbeat_ms"), T0 + (batches - 1) * MIN);
    sqlite3_close(h);

    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = db;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    /* Batches 0..B-1 committed: B-1 closed one-minute intervals of 0.25
     * GPU, and c<B-1> open since the heartbeat (zero so far). */
    struct fair_report_params p = {
        .from_ms = T0 - 86400000LL, .to_ms = T0 + 400 * 86400000LL, .by = FAIR_REPORT_BY_TEAM};
    struct fair_report *r = NULL;
    assert_int_equal(fair_report_run(l, &p, &r, &err), 0);
    int64_t closed = batches - 1;
    int64_t per_team[3] = {0, 0, 0};
    for (int64_t i = 0; i < closed; i++)
        per_team[i % 3]++;
    assert_int_equal(r->total.gpu_mms, 250 * MIN * closed);
    assert_int_equal(r->total.pods, closed);
    static const char *const teams[] = {"alpha", "beta", "gamma"};
    for (size_t k = 0; k < r->n; k++)
        for (int t = 0; t < 3; t++)
            if (strcmp(r->rows[k].key, teams[t]) == 0) {
                assert_int_equal(r->rows[k].gpu_mms, 250 * MIN * per_team[t]);
                assert_int_equal(r->rows[k].pods, per_team[t]);
            }
    /* Lent: beta's idle 1 GPU lent 0.25 for every sample after the first. */
    fair_report_free(r);
    /* Restart: no pod is live any more; reconcile closes c<B-1> at the
     * heartbeat, so the figures do not change. */
    size_t nclosed = 0, nopened = 0;
    assert_int_equal(
        fair_ledger_reconcile(l, T0 + batches * MIN + 5 * MIN, NULL, 0, &nclosed, &nopened, &err),
        0);
    assert_int_equal(nclosed, 1);
    assert_int_equal(fair_report_run(l, &p, &r, &err), 0);
    assert_int_equal(r->total.gpu_mms, 250 * MIN * closed);
    fair_report_free(r);
    fair_ledger_free(l);
}

static void test_kill9(void **state)
{
    (void)state;
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    for (int round = 0; round < 3; round++) {
        unlink(db);
        char side[160];
        snprintf(side, sizeof(side), "%s-wal", db);
        unlink(side);
        snprintf(side, sizeof(side), "%s-shm", db);
        unlink(side);
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            writer(fds[1]);
        }
        close(fds[1]);
        int want = 20 + rand() % 200, got = -1, v;
        while (got < want && read(fds[0], &v, sizeof(v)) == (ssize_t)sizeof(v))
            got = v;
        /* Kill it mid-flight, at a random moment of a later batch. */
        usleep((useconds_t)(rand() % 3000));
        assert_int_equal(kill(pid, SIGKILL), 0);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        while (read(fds[0], &v, sizeof(v)) == (ssize_t)sizeof(v))
            got = v;
        close(fds[0]);
        sqlite3 *h = NULL;
        assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
        int64_t batches = meta(h, "batches");
        sqlite3_close(h);
        /* Every batch the writer announced is committed; at most the one
         * in flight more. */
        assert_true(batches == got + 1 || batches == got + 2);
        check_exact(batches);
    }
}

static void test_full_tmpfs(void **state)
{
    (void)state;
    char mnt[160], cmd[400];
    snprintf(mnt, sizeof(mnt), "%s/tiny", dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p %s && mount -t tmpfs -o size=256k tmpfs %s 2>/dev/null",
             mnt, mnt);
    if (system(cmd) != 0) {
        print_message("tmpfs mount not permitted here; the full-disk case is covered by "
                      "test_ledger's max_page_count test\n");
        skip();
    }
    char path[200];
    snprintf(path, sizeof(path), "%s/ledger.db", mnt);
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    int rc = fair_ledger_open(&o, &l, &err);
    for (int b = 0; !rc && b < 1000; b++) {
        for (int i = 0; i < 200 && !rc; i++) {
            char uid[48];
            snprintf(uid, sizeof(uid), "full-%d-%d-with-some-padding-to-fill", b, i);
            struct fair_ledger_interval_info in = {.uid = uid,
                                                   .namespace_ = "a-namespace",
                                                   .pod = uid,
                                                   .queue = "q",
                                                   .project = "p",
                                                   .team = "t",
                                                   .cost_center = "cc",
                                                   .node = "node",
                                                   .gpu_model = "A100",
                                                   .gpu_milli = 1000,
                                                   .inquota_milli = 0,
                                                   .start_ms = T0 + i};
            rc = fair_ledger_interval_open(l, &in, &err);
        }
        if (!rc)
            rc = fair_ledger_flush(l, &err);
    }
    print_message("full disk: rc=%d msg=%s\n", rc, err.msg);
    assert_int_equal(rc, FAIR_EIO);
    assert_true(strstr(err.msg, "full") != NULL);
    fair_log_set_level(FAIR_LOG_OFF);
    fair_ledger_free(l);
    fair_log_set_level(FAIR_LOG_INFO);
    snprintf(cmd, sizeof(cmd), "umount %s", mnt);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_tmpfs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
