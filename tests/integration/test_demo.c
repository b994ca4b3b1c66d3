/* make demo's script end to end (scripts/demo.sh with this build's
 * programs): it succeeds, its output is plain text when it is not a
 * terminal (no escape sequences), it shows the kubectl plugin's answers and
 * the build, and it ends with the next steps, whose ledger it leaves in
 * the build folder. About 20 s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper_run.h"

#include "base/buf.h"

static void test_demo(void **state)
{
    (void)state;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fair_demo_XXXXXX",
             getenv("TMPDIR") && strlen(getenv("TMPDIR")) < 64 ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    unlink(FAIR_BIN_DIR "/demo-ledger.db");
    const char *args[] = {FAIR_SOURCE_DIR "/scripts/demo.sh", FAIR_BIN_DIR, NULL};
    int st = fair_test_run(dir, "/bin/sh", args, &out, &err);
    if (st != 0)
        fail_msg("demo.sh exited %d:\n%s\n%s", st, fair_buf_str(&out), fair_buf_str(&err));
    const char *o = fair_buf_str(&out);
    assert_null(memchr(o, '\033', out.len));
    static const char *const want[] = {
        "\n== Team B submits 16 one-GPU jobs; team A is idle\n",
        "\n== Final allocation per queue (kubectl fairshare queues",
        "   └── team-a-train ",
        "kubectl fairshare why -n team-b not-allowed:\n",
        "Scheduled:  False NamespaceNotAllowed: namespace not allowed",
        "   fairshare_build_info{version=\"",
        "\n== Next steps\n",
        "/fairsharectl dashboard --db ",
        "/fairsharectl simulate --nodes tests/data/sim/nodes_2x8.csv",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(o, want[i]))
            fail_msg("the demo's output lacks \"%s\":\n%s", want[i], o);
    assert_int_equal(access(FAIR_BIN_DIR "/demo-ledger.db", R_OK), 0);
    /* The kept ledger answers the report the next steps print. */
    const char *r[] = {"report",     "--db",     FAIR_BIN_DIR "/demo-ledger.db",
                       "--from",     "-1d",      "--to",
                       "2100-01-01", "--format", "csv",
                       NULL}; /* not "today": the clock may pass midnight */
    assert_int_equal(fair_test_run(dir, FAIR_BIN_DIR "/fairsharectl", r, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "\nvision,"));
    assert_non_null(strstr(fair_buf_str(&out), "\nlanguage,"));
    fair_buf_release(&out);
    fair_buf_release(&err);
    fair_test_remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
