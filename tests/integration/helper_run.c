/* Integration-test helper: runs programs with captured output and reads
 * files whole (see helper_run.h), for the tests of fairsharectl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "helper_run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void fair_test_slurp(const char *path, struct fair_buf *b)
{
    FILE *f = fopen(path, "r");
    char chunk[4096];
    size_t n;
    fair_buf_reset(b);
    assert_non_null(f);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(fair_buf_append(b, chunk, n), 0);
    fclose(f);
}

void fair_test_write_file(char *path, size_t n, const char *dir, const char *name, const char *text)
{
    int len = snprintf(path, n, "%s/%s", dir, name);
    assert_true(len > 0 && (size_t)len < n);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

int fair_test_run(const char *dir, const char *prog, const char *const *args, struct fair_buf *out,
                  struct fair_buf *err)
{
    char outp[160], errp[160];
    snprintf(outp, sizeof(outp), "%s/stdout", dir);
    snprintf(errp, sizeof(errp), "%s/stderr", dir);
    const char *argv[24];
    int n = 0;
    argv[n++] = prog;
    for (; args[n - 1] && n < 23; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(outp, "w", stdout) || !freopen(errp, "w", stderr))
            _exit(127);
        execv(prog, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    fair_test_slurp(outp, out);
    fair_test_slurp(errp, err);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

void fair_test_dashboard_start(const char *db, pid_t *pid, char *url, size_t n)
{
    int fds[2];
    const char *ctl = FAIR_BIN_DIR "/fairsharectl";
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(ctl, ctl, "dashboard", "--db", db, "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    *pid = child;
    FILE *f = fdopen(fds[0], "r");
    assert_non_null(f);
    assert_non_null(fgets(url, (int)n, f));
    fclose(f);
    url[strcspn(url, "\n")] = '\0';
}

void fair_test_stop_child(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGTERM);
        waitpid(*pid, NULL, 0);
        *pid = 0;
    }
}

int fair_test_remove_dir(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}
