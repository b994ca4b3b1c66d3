/* The query pool: runs the ledger's report and dashboard queries off the
 * event loop, so that a long query (a year of samples, a locked file) can
 * never delay /healthz, the lease renewals or the scheduling cycles that
 * share the loop.
 *
 * A route registered here is an async route of lib/httpd (httpd.h): the
 * loop copies the query string into a job and queues it; one of the pool's
 * threads runs the route's handler (the same fair_httpd_handler as a sync
 * route, given the thread's own read-only ledger instead of a context)
 * under a deadline; the finished job goes back to the loop through a pipe,
 * and the loop sends the reply.
 *
 * Design note: a job's life.
 *
 *   QUEUED  --a thread takes it------------------------> RUNNING
 *   QUEUED  --the queue holds max_queued already-------> answered 503 at once
 *   RUNNING --handler returns--------------------------> DONE (its answer)
 *   RUNNING --deadline passes (progress handler)-------> DONE, 503 "deadline"
 *   QUEUED/RUNNING --client goes away------------------> DONE, nothing sent
 *   DONE    --the loop reads the pipe------------------> replied, freed
 *
 * The deadline (timeout_ms) runs from when the request arrives, so time
 * spent waiting in the queue counts; a job whose deadline passed while it
 * waited is not started. SQLite's progress handler checks the deadline and
 * the job's cancel flag every 1,000 virtual machine instructions
 * (fair_ledger_set_deadline), so a stopped query gives its thread back
 * within microseconds.
 *
 * Threads: the fair_querypool_* functions run on the loop thread. A worker
 * thread touches only its job, its own read-only SQLite connection (opened
 * on its first job, kept until the pool is freed) and, under the pool's
 * mutex, the queue and the done list; it never calls libevent or lib/httpd.
 * The handler must therefore use nothing but its arguments (the dashboard's
 * and the report's handlers only read the ledger they are given). */
#ifndef FAIR_HTTPD_QUERYPOOL_H
#define FAIR_HTTPD_QUERYPOOL_H

#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "httpd/httpd.h"

struct event_base;
struct fair_querypool;

struct fair_querypool_options {
    const char *path;         /* the ledger file; each thread opens it read-only */
    int threads;              /* 0: 2 (at most 16) */
    int64_t timeout_ms;       /* 0: 10000; a job's deadline, from its arrival */
    int max_queued;           /* 0: 32 jobs waiting; more are answered 503 */
    int64_t sample_period_ms; /* the ledger's sample period (dashboard buckets); 0: 60000 */
};

/* Starts the threads. base is borrowed and must outlive the pool; the
 * options' strings are copied. *out is new. */
int fair_querypool_new(struct event_base *base, const struct fair_querypool_options *o,
                       struct fair_querypool **out, struct fair_error *err);
/* Stops the threads (a running query is stopped through its cancel flag),
 * answers the jobs still queued with 503 and the finished ones with their
 * answer, then frees. Call it on the loop thread, before or after
 * fair_httpd_free(). NULL: no-op. */
void fair_querypool_free(struct fair_querypool *pool);

/* Registers GET path on srv, answered by handler on a pool thread with the
 * thread's read-only struct fair_ledger as its ctx. srv must outlive the
 * pool's use of it (free the pool first, or the server first: either way
 * a pending request is dropped cleanly). */
int fair_querypool_route(struct fair_querypool *pool, struct fair_httpd *srv, const char *path,
                         fair_httpd_handler handler);

struct fair_querypool_stats {
    uint64_t queued;    /* waiting for a thread now */
    uint64_t running;   /* on a thread now */
    uint64_t answered;  /* finished with the handler's answer */
    uint64_t timeouts;  /* stopped at, or past, their deadline: 503 */
    uint64_t rejected;  /* the queue was full: 503 */
    uint64_t cancelled; /* the client went away */
};
void fair_querypool_stats(struct fair_querypool *pool, struct fair_querypool_stats *out);
/* fairshare_http_queries_queued, fairshare_http_queries_running,
 * fairshare_http_queries_total{result="answered"|"timeout"|"rejected"|
 * "cancelled"}. */
int fair_querypool_metrics(struct fair_querypool *pool, struct fair_buf *out);

#endif
