/* The query pool (see querypool.h): worker threads with their own
 * read-only ledger connections, a bounded job queue, and a pipe that wakes
 * the event loop when a job is done. */
#include "httpd/querypool.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

#define MAX_THREADS 16
#define MAX_ROUTES 16

struct job {
    struct fair_querypool *pool;
    struct fair_httpd_req *req; /* the loop's: never touched by a worker */
    fair_httpd_handler fn;
    char *query; /* owned; NULL when none */
    char path[128];
    int64_t deadline_ms; /* monotonic */
    _Atomic int cancel;  /* set by the loop when the client goes away */
    /* Filled by the worker, read by the loop after the hand-off. */
    struct fair_buf body;
    const char *ctype;
    int status;
    int rc;
    int hit; /* 1: deadline, 2: cancelled */
    struct job *next;
};

struct route_ctx {
    struct fair_querypool *pool;
    fair_httpd_handler fn;
    char path[128];
};

struct worker {
    struct fair_querypool *pool;
    pthread_t thread;
    bool started;
    struct fair_ledger *ledger; /* the thread's own; opened on first use */
    struct job *current;        /* under the pool's mutex */
};

struct fair_querypool {
    struct event_base *base;
    char *path;
    int64_t timeout_ms;
    int64_t sample_period_ms;
    int max_queued;
    int nthreads;
    struct worker workers[MAX_THREADS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool mu_init, cv_init;
    bool stopping;
    struct job *qhead, *qtail; /* QUEUED */
    struct job *done;          /* DONE, newest first */
    int pipe_r, pipe_w;
    struct event *wake;
    struct fair_querypool_stats st; /* under mu */
    struct route_ctx routes[MAX_ROUTES];
    int nroutes;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* {"error": msg} into the job's answer; status code. */
static void job_error(struct job *j, int code, const char *msg)
{
    fair_buf_reset(&j->body);
    j->status = code;
    j->ctype = "application/json";
    int rc = fair_buf_appends(&j->body, "{\"error\":");
    rc = rc || fair_json_str(&j->body, msg);
    rc = rc || fair_buf_appends(&j->body, "}\n");
    j->rc = rc ? FAIR_ENOMEM : 0;
}

static void job_free(struct job *j)
{
    fair_free(j->query);
    fair_buf_release(&j->body);
    fair_free(j);
}

/* ---- the worker threads ---- */

static void run_job(struct worker *w, struct job *j)
{
    struct fair_querypool *pool = w->pool;
    char msg[FAIR_ERROR_MSG_MAX + 128];
    if (atomic_load(&j->cancel)) {
        j->hit = 2;
        return;
    }
    if (mono_ms() >= j->deadline_ms) {
        j->hit = 1;
        return;
    }
    if (!w->ledger) {
        struct fair_ledger_options o;
        struct fair_error err = {0};
        fair_ledger_options_init(&o);
        o.path = pool->path;
        o.readonly = 1;
        o.sample_period_ms = pool->sample_period_ms;
        /* A reader waits for a lock (rare in WAL mode) no longer than the
         * deadline allows. */
        int64_t left = j->deadline_ms - mono_ms();
        o.busy_timeout_ms = left < 1 ? -1 : left > 1000000 ? 1000000 : (int)left;
        if (fair_ledger_open(&o, &w->ledger, &err)) {
            snprintf(msg, sizeof(msg), "the ledger cannot be read now: %s", err.msg);
            job_error(j, 503, msg);
            return;
        }
    }
    fair_ledger_set_deadline(w->ledger, j->deadline_ms, &j->cancel);
    j->status = 200;
    j->ctype = "text/plain; charset=utf-8";
    j->rc = j->fn(w->ledger, j->query, &j->body, &j->ctype, &j->status);
    j->hit = fair_ledger_deadline_hit(w->ledger);
    fair_ledger_set_deadline(w->ledger, 0, NULL);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct fair_querypool *pool = w->pool;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->stopping && !pool->qhead)
            pthread_cond_wait(&pool->cv, &pool->mu);
        if (pool->stopping)
            break; /* jobs still queued are answered by fair_querypool_free */
        struct job *j = pool->qhead;
        pool->qhead = j->next;
        if (!pool->qhead)
            pool->qtail = NULL;
        j->next = NULL;
        pool->st.queued--;
        pool->st.running++;
        w->current = j;
        pthread_mutex_unlock(&pool->mu);

        run_job(w, j);

        pthread_mutex_lock(&pool->mu);
        w->current = NULL;
        pool->st.running--;
        j->next = pool->done;
        pool->done = j;
        pthread_mutex_unlock(&pool->mu);
        /* Wake the loop. A full pipe already holds a wake-up. */
        char b = 1;
        ssize_t n;
        do {
            n = write(pool->pipe_w, &b, 1);
        } while (n < 0 && errno == EINTR);
        pthread_mutex_lock(&pool->mu);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

/* ---- the loop side ---- */

/* Sends a finished job's answer (or nothing, when its client left). */
static void job_answer(struct fair_querypool *pool, struct job *j)
{
    pthread_mutex_lock(&pool->mu);
    if (j->hit == 2 || fair_httpd_req_cancelled(j->req)) {
        pool->st.cancelled++;
    } else if (j->hit == 1) {
        pool->st.timeouts++;
    } else {
        pool->st.answered++;
    }
    pthread_mutex_unlock(&pool->mu);
    if (j->hit == 1) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "the query ran past its deadline of %" PRId64 " ms (ledger.queryTimeout) and "
                 "was stopped; ask for a shorter period",
                 pool->timeout_ms);
        job_error(j, 503, msg);
        FAIR_WARN("httpd", "msg=\"query stopped at its deadline\" path=%s timeout_ms=%" PRId64,
                  j->path, pool->timeout_ms);
    }
    if (j->rc < 0) {
        static const char ie[] = "{\"error\":\"internal error\"}\n";
        FAIR_WARN("httpd", "msg=\"handler failed\" path=%s rc=%d", j->path, j->rc);
        fair_httpd_reply(j->req, 500, "application/json", ie, sizeof(ie) - 1);
    } else {
        fair_httpd_reply(j->req, j->status, j->ctype ? j->ctype : "text/plain",
                         fair_buf_str(&j->body), j->body.len);
    }
    job_free(j);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct fair_querypool *pool = arg;
    char buf[256];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    pthread_mutex_lock(&pool->mu);
    struct job *list = pool->done;
    pool->done = NULL;
    pthread_mutex_unlock(&pool->mu);
    /* Oldest first. */
    struct job *rev = NULL;
    while (list) {
        struct job *n = list->next;
        list->next = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        struct job *n = rev->next;
        job_answer(pool, rev);
        rev = n;
    }
}

static void on_cancel(void *arg)
{
    struct job *j = arg;
    atomic_store(&j->cancel, 1);
}

static void on_request(void *ctx, struct fair_httpd_req *req, const char *query)
{
    struct route_ctx *rc = ctx;
    struct fair_querypool *pool = rc->pool;
    static const char busy[] = "{\"error\":\"too many report queries are waiting; retry "
                               "later\"}\n";
    static const char oom[] = "{\"error\":\"out of memory\"}\n";
    pthread_mutex_lock(&pool->mu);
    bool full = pool->stopping || pool->st.queued >= (uint64_t)pool->max_queued;
    if (full)
        pool->st.rejected++;
    pthread_mutex_unlock(&pool->mu);
    if (full) {
        fair_httpd_reply(req, 503, "application/json", busy, sizeof(busy) - 1);
        return;
    }
    struct job *j = fair_calloc(1, sizeof(*j));
    if (!j || (query && !(j->query = fair_strdup(query)))) {
        if (j)
            job_free(j);
        fair_httpd_reply(req, 500, "application/json", oom, sizeof(oom) - 1);
        return;
    }
    j->pool = pool;
    j->req = req;
    j->fn = rc->fn;
    snprintf(j->path, sizeof(j->path), "%s", rc->path);
    j->deadline_ms = mono_ms() + pool->timeout_ms;
    atomic_init(&j->cancel, 0);
    fair_buf_init(&j->body, 64 << 20);
    fair_httpd_req_on_cancel(req, on_cancel, j);
    pthread_mutex_lock(&pool->mu);
    if (pool->qtail)
        pool->qtail->next = j;
    else
        pool->qhead = j;
    pool->qtail = j;
    pool->st.queued++;
    pthread_cond_signal(&pool->cv);
    pthread_mutex_unlock(&pool->mu);
}

int fair_querypool_route(struct fair_querypool *pool, struct fair_httpd *srv, const char *path,
                         fair_httpd_handler handler)
{
    if (!handler || !path || strlen(path) >= sizeof(pool->routes[0].path))
        return FAIR_EINVAL;
    if (pool->nroutes == MAX_ROUTES)
        return FAIR_ERANGE;
    struct route_ctx *rc = &pool->routes[pool->nroutes];
    rc->pool = pool;
    rc->fn = handler;
    snprintf(rc->path, sizeof(rc->path), "%s", path);
    int r = fair_httpd_route_async(srv, "GET", path, on_request, rc);
    if (r == 0)
        pool->nroutes++;
    return r;
}

/* ---- lifecycle ---- */

int fair_querypool_new(struct event_base *base, const struct fair_querypool_options *o,
                       struct fair_querypool **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    if (!o || !o->path || !*o->path)
        return fair_error_set(err, FAIR_EINVAL, "query pool: no ledger path given");
    struct fair_querypool *pool = fair_calloc(1, sizeof(*pool));
    if (!pool)
        return fair_error_set(err, FAIR_ENOMEM, "query pool: out of memory");
    pool->base = base;
    pool->pipe_r = pool->pipe_w = -1;
    pool->nthreads = o->threads > 0 ? (o->threads < MAX_THREADS ? o->threads : MAX_THREADS) : 2;
    pool->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    pool->max_queued = o->max_queued > 0 ? o->max_queued : 32;
    pool->sample_period_ms = o->sample_period_ms > 0 ? o->sample_period_ms : 60000;
    if (!(pool->path = fair_strdup(o->path))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "query pool: out of memory");
        goto out;
    }
    if (pthread_mutex_init(&pool->mu, NULL) != 0) {
        rc = fair_error_set(err, FAIR_ENOMEM, "query pool: cannot create a mutex");
        goto out;
    }
    pool->mu_init = true;
    if (pthread_cond_init(&pool->cv, NULL) != 0) {
        rc = fair_error_set(err, FAIR_ENOMEM, "query pool: cannot create a condition");
        goto out;
    }
    pool->cv_init = true;
    int fds[2];
    if (pipe(fds) != 0) {
        rc = fair_error_set(err, FAIR_EIO, "query pool: pipe: %s", strerror(errno));
        goto out;
    }
    pool->pipe_r = fds[0];
    pool->pipe_w = fds[1];
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    pool->wake = event_new(base, pool->pipe_r, EV_READ | EV_PERSIST, on_wake, pool);
    if (!pool->wake || event_add(pool->wake, NULL) != 0) {
        rc = fair_error_set(err, FAIR_ENOMEM, "query pool: cannot watch the pipe");
        goto out;
    }
    for (int i = 0; i < pool->nthreads; i++) {
        struct worker *w = &pool->workers[i];
        w->pool = pool;
        int e = pthread_create(&w->thread, NULL, worker_main, w);
        if (e != 0) {
            rc =
                fair_error_set(err, FAIR_EIO, "query pool: cannot start a thread: %s", strerror(e));
            goto out;
        }
        w->started = true;
    }
out:
    if (rc) {
        fair_querypool_free(pool);
        return rc;
    }
    *out = pool;
    return 0;
}

void fair_querypool_free(struct fair_querypool *pool)
{
    if (!pool)
        return;
    if (pool->mu_init) {
        pthread_mutex_lock(&pool->mu);
        pool->stopping = true;
        for (struct job *j = pool->qhead; j; j = j->next)
            atomic_store(&j->cancel, 1);
        for (int i = 0; i < pool->nthreads; i++)
            if (pool->workers[i].current)
                atomic_store(&pool->workers[i].current->cancel, 1);
        if (pool->cv_init)
            pthread_cond_broadcast(&pool->cv);
        pthread_mutex_unlock(&pool->mu);
    }
    for (int i = 0; i < pool->nthreads; i++) {
        struct worker *w = &pool->workers[i];
        if (w->started)
            pthread_join(w->thread, NULL);
        fair_ledger_free(w->ledger);
    }
    /* The threads are gone: no lock needed from here. */
    static const char bye[] = "{\"error\":\"shutting down\"}\n";
    while (pool->qhead) {
        struct job *j = pool->qhead;
        pool->qhead = j->next;
        fair_httpd_reply(j->req, 503, "application/json", bye, sizeof(bye) - 1);
        job_free(j);
    }
    struct job *d = pool->done;
    pool->done = NULL;
    while (d) {
        struct job *n = d->next;
        if (d->hit == 2 && !fair_httpd_req_cancelled(d->req)) {
            /* stopped by this shutdown, not by its client */
            fair_httpd_reply(d->req, 503, "application/json", bye, sizeof(bye) - 1);
            job_free(d);
        } else {
            job_answer(pool, d);
        }
        d = n;
    }
    if (pool->wake)
        event_free(pool->wake);
    if (pool->pipe_r >= 0)
        close(pool->pipe_r);
    if (pool->pipe_w >= 0)
        close(pool->pipe_w);
    if (pool->cv_init)
        pthread_cond_destroy(&pool->cv);
    if (pool->mu_init)
        pthread_mutex_destroy(&pool->mu);
    fair_free(pool->path);
    fair_free(pool);
}

void fair_querypool_stats(struct fair_querypool *pool, struct fair_querypool_stats *out)
{
    pthread_mutex_lock(&pool->mu);
    *out = pool->st;
    pthread_mutex_unlock(&pool->mu);
}

int fair_querypool_metrics(struct fair_querypool *pool, struct fair_buf *out)
{
    struct fair_querypool_stats s;
    fair_querypool_stats(pool, &s);
    int rc = fair_buf_appendf(
        out,
        "# HELP fairshare_http_queries_queued Report and dashboard queries waiting for a "
        "thread.\n"
        "# TYPE fairshare_http_queries_queued gauge\n"
        "fairshare_http_queries_queued %" PRIu64 "\n"
        "# HELP fairshare_http_queries_running Report and dashboard queries running.\n"
        "# TYPE fairshare_http_queries_running gauge\n"
        "fairshare_http_queries_running %" PRIu64 "\n"
        "# HELP fairshare_http_queries_total Report and dashboard queries by result.\n"
        "# TYPE fairshare_http_queries_total counter\n"
        "fairshare_http_queries_total{result=\"answered\"} %" PRIu64 "\n"
        "fairshare_http_queries_total{result=\"timeout\"} %" PRIu64 "\n"
        "fairshare_http_queries_total{result=\"rejected\"} %" PRIu64 "\n"
        "fairshare_http_queries_total{result=\"cancelled\"} %" PRIu64 "\n",
        s.queued, s.running, s.answered, s.timeouts, s.rejected, s.cancelled);
    return rc ? FAIR_ENOMEM : 0;
}
