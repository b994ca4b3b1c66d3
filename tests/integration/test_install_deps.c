/* scripts/install-deps.sh with stand-ins for apt-get, dpkg-query and id
 * (in front of PATH; nothing is installed): it installs only the set asked
 * for (Chromium only with "browser"), waits for a held apt/dpkg lock with
 * one message instead of failing with apt's error, gives up with a clear
 * message when the lock stays held, and stops at once on other errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helper_run.h"

#include "base/buf.h"

static char dir[64], stubs[128], log_path[160], path_env[4096];

static void stub(const char *name, const char *body)
{
    char p[256];
    fair_test_write_file(p, sizeof p, stubs, name, body);
    assert_int_equal(chmod(p, 0755), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/fair_install_deps_XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(stubs, sizeof stubs, "%s/bin", dir);
    assert_int_equal(mkdir(stubs, 0755), 0);
    snprintf(log_path, sizeof log_path, "%s/apt.log", dir);
    /* Nothing is installed; we are root. */
    stub("dpkg-query", "#!/bin/sh\nexit 1\n");
    stub("id", "#!/bin/sh\necho 0\n");
    /* apt-get: logs its arguments; `update` fails on a held lock the first
     * $LOCKED_UPDATES times (a count kept in a file); with FAIL_OTHER it
     * fails as apt does on an unknown package. */
    char body[1024];
    snprintf(body, sizeof body,
             "#!/bin/sh\n"
             "echo \"$*\" >>%s\n"
             "if [ -n \"${FAIL_OTHER:-}\" ]; then\n"
             "  echo 'E: Unable to locate package cmake' >&2; exit 100\n"
             "fi\n"
             "case \" $* \" in *' update '*)\n"
             "  n=$(cat %s/count 2>/dev/null || echo 0)\n"
             "  echo $((n + 1)) >%s/count\n"
             "  if [ \"$n\" -lt \"${LOCKED_UPDATES:-0}\" ]; then\n"
             "    echo 'E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 "
             "(apt-get)' >&2\n"
             "    echo 'E: Unable to lock directory /var/lib/apt/lists/' >&2\n"
             "    exit 100\n"
             "  fi;;\n"
             "esac\n"
             "exit 0\n",
             log_path, dir, dir);
    stub("apt-get", body);
    snprintf(path_env, sizeof path_env, "%s:%s", stubs,
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path_env, 1);
    setenv("INSTALL_DEPS_LOCK_WAIT", "3", 1);
    setenv("INSTALL_DEPS_LOCK_RETRY", "1", 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return fair_test_remove_dir(dir);
}

/* Runs install-deps.sh [set] from a clean log; returns the exit status. */
static int install(const char *set, struct fair_buf *out, struct fair_buf *err,
                   struct fair_buf *log)
{
    char count[128];
    unlink(log_path);
    snprintf(count, sizeof count, "%s/count", dir);
    unlink(count);
    const char *args[] = {FAIR_SOURCE_DIR "/scripts/install-deps.sh", set, NULL};
    int st = fair_test_run(dir, "/bin/sh", args, out, err);
    fair_buf_reset(log);
    FILE *f = fopen(log_path, "r");
    if (f) {
        fclose(f);
        fair_test_slurp(log_path, log);
    }
    return st;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_sets(void **state)
{
    (void)state;
    struct fair_buf out, err, log;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    fair_buf_init(&log, 0);
    unsetenv("LOCKED_UPDATES");
    unsetenv("FAIL_OTHER");
    /* The default set: what the build and the demo need, not Chromium. */
    assert_int_equal(install(NULL, &out, &err, &log), 0);
    assert_non_null(strstr(fair_buf_str(&out), "install-deps: installing"));
    assert_non_null(strstr(fair_buf_str(&log), "-o DPkg::Lock::Timeout=1 update -qq\n"));
    assert_non_null(strstr(fair_buf_str(&log), " install -y -qq --no-install-recommends "));
    assert_non_null(strstr(fair_buf_str(&log), " cmake "));
    assert_non_null(strstr(fair_buf_str(&log), " libcmocka-dev "));
    assert_null(strstr(fair_buf_str(&log), "chromium"));
    assert_null(strstr(fair_buf_str(&log), "clang"));
    /* The dashboard test's set adds Chromium. */
    assert_int_equal(install("browser", &out, &err, &log), 0);
    assert_non_null(strstr(fair_buf_str(&log), " chromium"));
    assert_int_equal(install("fuzz", &out, &err, &log), 0);
    assert_non_null(strstr(fair_buf_str(&log), " clang "));
    assert_null(strstr(fair_buf_str(&log), "chromium"));
    /* An unknown set is a usage error, before apt runs. */
    assert_int_equal(install("everything", &out, &err, &log), 2);
    assert_non_null(strstr(fair_buf_str(&err), "unknown set \"everything\""));
    assert_int_equal(log.len, 0);
    fair_buf_release(&out);
    fair_buf_release(&err);
    fair_buf_release(&log);
}

static void test_lock_wait(void **state)
{
    (void)state;
    struct fair_buf out, err, log;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    fair_buf_init(&log, 0);
    unsetenv("FAIL_OTHER");
    /* Held for two tries: one message naming the holder, then it goes on. */
    setenv("LOCKED_UPDATES", "2", 1);
    assert_int_equal(install(NULL, &out, &err, &log), 0);
    const char *msg = "install-deps: another package manager holds the apt/dpkg lock (held by "
                      "process 4242 (apt-get)); waiting up to 3s for it to finish...\n";
    assert_int_equal(count_of(fair_buf_str(&err), msg), 1);
    assert_null(strstr(fair_buf_str(&err), "E: Could not get lock"));
    assert_int_equal(count_of(fair_buf_str(&log), " update "), 3);
    assert_int_equal(count_of(fair_buf_str(&log), " install "), 1);
    /* Held for good: gives up after the wait, saying what holds it. */
    setenv("LOCKED_UPDATES", "1000", 1);
    assert_int_equal(install(NULL, &out, &err, &log), 1);
    assert_non_null(strstr(fair_buf_str(&err), "the apt/dpkg lock is still held after 3s"));
    assert_non_null(strstr(fair_buf_str(&err), "held by process 4242"));
    assert_int_equal(count_of(fair_buf_str(&log), " install "), 0);
    unsetenv("LOCKED_UPDATES");
    /* Any other apt error: at once, with apt's own words. */
    setenv("FAIL_OTHER", "1", 1);
    assert_int_equal(install(NULL, &out, &err, &log), 1);
    assert_non_null(strstr(fair_buf_str(&err), "E: Unable to locate package cmake"));
    assert_non_null(strstr(fair_buf_str(&err), "apt-get update failed"));
    assert_int_equal(count_of(fair_buf_str(&log), " update "), 1);
    unsetenv("FAIL_OTHER");
    fair_buf_release(&out);
    fair_buf_release(&err);
    fair_buf_release(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sets),
        cmocka_unit_test(test_lock_wait),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
