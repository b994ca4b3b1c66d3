/* fairsharectl ledger backup/check/prune on real files while a writer holds
 * the ledger open, and the documented restore procedure: restore the backup,
 * reconcile with the live pods, and running pods lose no time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper_run.h"

#include "base/buf.h"
#include "base/clock.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

static char dir[64], db[128], bak[128];

static int64_t T(const char *s)
{
    int64_t ms = 0;
    assert_int_equal(fair_time_parse_rfc3339(s, &ms), 0);
    return ms;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fair_ledger_backup_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/ledger.db", dir);
    snprintf(bak, sizeof(bak), "%s/backup.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return fair_test_remove_dir(dir);
}

/* Runs fairsharectl with args (NULL-terminated); returns the exit status. */
static int ctl(const char *const *args, struct fair_buf *out, struct fair_buf *err)
{
    return fair_test_run(dir, FAIR_BIN_DIR "/fairsharectl", args, out, err);
}

static struct fair_ledger_interval_info info(const char *uid, int64_t milli, int64_t start)
{
    struct fair_ledger_interval_info in = {.uid = uid,
                                           .namespace_ = "ns",
                                           .pod = uid,
                                           .queue = "q",
                                           .project = "alpha",
                                           .team = "alpha",
                                           .cost_center = "",
                                           .node = "n",
                                           .gpu_model = "A100",
                                           .gpu_milli = milli,
                                           .inquota_milli = milli,
                                           .start_ms = start};
    return in;
}

static void report_csv(const char *file, const char *to, struct fair_buf *out)
{
    struct fair_buf err;
    fair_buf_init(&err, 0);
    const char *a[] = {"report",   "--from", "2026-11-01", "--to", to,
                       "--format", "csv",    "--db",       file,   NULL};
    assert_int_equal(ctl(a, out, &err), 0);
    fair_buf_release(&err);
}

static void test_backup_restore(void **state)
{
    (void)state;
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    struct fair_buf out, e, before;
    fair_buf_init(&out, 0);
    fair_buf_init(&e, 0);
    fair_buf_init(&before, 0);
    fair_ledger_options_init(&o);
    o.path = db;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    /* 30 one-hour intervals of 2 GPUs on Nov 2, and a pod still running
     * since Nov 3 00:00; heartbeat Nov 3 06:00. The writer stays open. */
    for (int i = 0; i < 30; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "h%d", i);
        struct fair_ledger_interval_info in =
            info(uid, 2000, T("2026-11-02T00:00:00Z") + i * 1800000LL);
        assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
        assert_int_equal(
            fair_ledger_interval_close(l, uid, in.start_ms + 3600000, FAIR_LEDGER_COMPLETED, &err),
            0);
    }
    struct fair_ledger_interval_info live = info("live", 1000, T("2026-11-03T00:00:00Z"));
    assert_int_equal(fair_ledger_interval_open(l, &live, &err), 0);
    assert_int_equal(fair_ledger_sample(l, T("2026-11-03T06:00:00Z"), NULL, 0, &err), 0);
    assert_int_equal(fair_ledger_flush(l, &err), 0);

    const char *b[] = {"ledger", "backup", "--db", db, "--out", bak, NULL};
    assert_int_equal(ctl(b, &out, &e), 0);
    report_csv(db, "2026-12-01", &before);
    report_csv(bak, "2026-12-01", &out);
    assert_string_equal(fair_buf_str(&out), fair_buf_str(&before));
    assert_non_null(strstr(fair_buf_str(&before), "\nalpha,66.000,66.000,0.000,0.000,0.000,"));

    const char *c[] = {"ledger", "check", "--db", bak, NULL};
    assert_int_equal(ctl(c, &out, &e), 0);
    assert_non_null(strstr(fair_buf_str(&out), "integrity: ok\n"));
    assert_non_null(strstr(fair_buf_str(&out), "schema_version: 5\n"));
    assert_non_null(strstr(fair_buf_str(&out), "intervals: 31 (1 open)\n"));
    assert_non_null(strstr(fair_buf_str(&out), "heartbeat: 2026-11-03T06:00:00Z\n"));

    /* After the backup: h0 is deleted (nothing), one more interval, then the
     * volume is lost. Restore: copy the backup, reconcile with the pods that
     * are live now; "live" keeps running from its own start. */
    struct fair_ledger_interval_info late = info("late", 1000, T("2026-11-03T07:00:00Z"));
    assert_int_equal(fair_ledger_interval_open(l, &late, &err), 0);
    assert_int_equal(fair_ledger_sample(l, T("2026-11-03T08:00:00Z"), NULL, 0, &err), 0);
    assert_int_equal(fair_ledger_flush(l, &err), 0);
    fair_ledger_free(l);
    l = NULL;
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "rm -f %s %s-wal %s-shm && cp %s %s", db, db, db, bak, db);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    struct fair_ledger_interval_info now_live[2] = {live, late};
    size_t closed = 9, opened = 9;
    assert_int_equal(
        fair_ledger_reconcile(l, T("2026-11-03T10:00:00Z"), now_live, 2, &closed, &opened, &err),
        0);
    assert_int_equal(closed, 0);
    assert_int_equal(opened, 1); /* "late", from its own start */
    fair_ledger_free(l);
    report_csv(db, "2026-12-01", &out);
    /* 60 closed + live 10 h + late 3 h */
    assert_non_null(strstr(fair_buf_str(&out), "\nalpha,73.000,73.000,0.000,0.000,0.000,"));

    /* Prune with a 1-day retention "now" in December: reports over whole
     * UTC days do not change. */
    report_csv(db, "2026-11-03", &before);
    const char *p[] = {
        "ledger", "prune", "--db", db, "--retention", "1d", "--now", "2026-12-01T00:00:00Z", NULL};
    assert_int_equal(ctl(p, &out, &e), 0);
    assert_string_equal(fair_buf_str(&out), "pruned 30 rows\n");
    report_csv(db, "2026-11-03", &out);
    assert_string_equal(fair_buf_str(&out), fair_buf_str(&before));

    /* Usage and damage. */
    const char *u1[] = {"ledger", "backup", "--db", db, NULL};
    assert_int_equal(ctl(u1, &out, &e), 2);
    assert_non_null(strstr(fair_buf_str(&e), "usage: fairsharectl ledger"));
    const char *u2[] = {"ledger", "prune", "--db", db, "--retention", "1y", NULL};
    assert_int_equal(ctl(u2, &out, &e), 2);
    const char *u3[] = {"ledger", "--db", db, NULL};
    assert_int_equal(ctl(u3, &out, &e), 2);
    char garbage[160];
    snprintf(garbage, sizeof(garbage), "%s/garbage.db", dir);
    FILE *f = fopen(garbage, "w");
    assert_non_null(f);
    for (int i = 0; i < 3000; i++)
        fputc('x', f);
    fclose(f);
    const char *g[] = {"ledger", "check", "--db", garbage, NULL};
    assert_int_equal(ctl(g, &out, &e), 1);
    assert_non_null(strstr(fair_buf_str(&e), "not a valid ledger database"));
    fair_buf_release(&out);
    fair_buf_release(&e);
    fair_buf_release(&before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backup_restore, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
