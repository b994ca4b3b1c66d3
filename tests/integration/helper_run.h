/* Integration-test helper: runs a program of the build (fairsharectl) as a
 * child process with its output captured, and reads files whole. The
 * functions fail the running cmocka test on unexpected errors. */
#ifndef FAIR_TEST_HELPER_RUN_H
#define FAIR_TEST_HELPER_RUN_H

#include "base/buf.h"

#include <stddef.h>
#include <sys/types.h>

/* Reads the file at path into b (reset first); fails the test when the
 * file cannot be opened or b cannot grow. */
void fair_test_slurp(const char *path, struct fair_buf *b);

/* Writes text to dir/name (path: the full name, n bytes); fails the test
 * when the file cannot be written. */
void fair_test_write_file(char *path, size_t n, const char *dir, const char *name,
                          const char *text);

/* Runs prog with args (NULL-terminated; at most 22 are passed on) and
 * waits for it. Its stdout and stderr go to dir/stdout and dir/stderr
 * (overwritten), then into out and err (reset first). Fails the test
 * unless the program exits normally; returns its exit status. */
int fair_test_run(const char *dir, const char *prog, const char *const *args, struct fair_buf *out,
                  struct fair_buf *err);

/* Starts fairsharectl dashboard on db, listening on a free loopback port,
 * and reads the URL it prints ("http://127.0.0.1:PORT") into url (n
 * bytes). *pid is set as soon as the child exists, so that a teardown can
 * stop it when a later step fails the test. */
void fair_test_dashboard_start(const char *db, pid_t *pid, char *url, size_t n);

/* Stops the child *pid (SIGTERM, then waits) when it is > 0, and sets
 * *pid to 0: for teardowns after a test that failed midway. */
void fair_test_stop_child(pid_t *pid);

/* Removes dir and everything below it (rm -rf). Returns 0 or -1. */
int fair_test_remove_dir(const char *dir);

#endif
