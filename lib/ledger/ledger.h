/* The GPU-hour ledger: an SQLite file that records one allocation interval
 * per pod placement and a sample of every queue each sample period, so that
 * finance can ask how many GPU-hours each team used (see report.h).
 *
 * Design note: the interval state machine.
 *
 *   (none) --fair_ledger_interval_open()-------------------> OPEN
 *   OPEN   --fair_ledger_interval_close(uid, end, reason)--> CLOSED(reason)
 *   OPEN   --fair_ledger_reconcile(), pod not live---------> CLOSED(UNKNOWN)
 *                                               at the last heartbeat
 *
 * Invariants:
 *  - At most one interval per pod UID, ever: a second open of the same UID
 *    is ignored (so the controller may re-send opens; it is level-triggered).
 *  - An OPEN interval is known alive up to the ledger's heartbeat, the
 *    `now` of the last committed fair_ledger_sample()/reconcile(). Reports
 *    count open intervals up to min(period end, heartbeat); reconcile closes
 *    intervals of vanished pods at the heartbeat. A crash therefore loses at
 *    most the time since the last committed flush (one sample period when
 *    the controller flushes every period), and nothing is counted twice.
 *  - A CLOSED interval never changes again. When it closes, in the same
 *    transaction, its GPU-milli x ms are added to the per-UTC-day rollups
 *    (table interval_day), which is what lets reports stay exact after raw
 *    intervals are pruned and what makes a one-year report fast.
 *
 * Writes never block the scheduling loop: open/close/sample only copy the
 * record into a bounded in-memory queue (O(1), no I/O). The controller calls
 * fair_ledger_flush() from a timer; it writes the whole queue in ONE
 * transaction. A failed flush (database locked, disk full) rolls back and
 * keeps the queue for the next try.
 *
 * Design note: the flush retry.
 *
 *   OK   --flush fails (locked, full, I/O)--> FAILING(streak = 1)
 *   FAILING --flush fails------------------> FAILING(streak + 1)
 *   FAILING --flush commits----------------> OK (one line logs the recovery)
 *
 * A writer that must never wait (the controller's loop) sets its lock wait
 * to 0 (fair_ledger_set_lock_wait): a flush that meets another process's
 * lock fails at once with FAIR_EBUSY instead of sleeping in SQLite's busy
 * handler, and the caller retries after fair_ledger_retry_delay_ms(), which
 * backs off from 50 ms up to its regular interval while FAILING. The first
 * failure of a streak is logged at warn level, then one line a minute and
 * one at recovery, never one per attempt. Records stay queued meanwhile;
 * only a record that finds the queue full is dropped: while OK the enqueue
 * flushes first (backpressure), while FAILING it drops without trying
 * (the retry timer owns the database), counts the drop
 * (fair_ledger_stats().dropped) and logs the first drop of the streak.
 * At shutdown the caller gives the lock a bounded wait
 * (fair_ledger_set_lock_wait(l, ms)) so that a lock that clears in time
 * loses nothing.
 *
 * Threads: one connection, used from one thread (the controller's event
 * loop); a struct fair_ledger is never shared between threads. Readers
 * (fairsharectl report, the dashboard's query threads, lib/httpd/
 * querypool.h) open their own read-only connection each, with a deadline
 * (fair_ledger_set_deadline); WAL mode lets them read while the controller
 * writes, and a reader never blocks the writer. */
#ifndef FAIR_LEDGER_LEDGER_H
#define FAIR_LEDGER_LEDGER_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

struct sqlite3;
struct fair_ledger;

#define FAIR_LEDGER_SCHEMA_VERSION 5
#define FAIR_LEDGER_NAME_MAX 253 /* Kubernetes names (DNS subdomain) */
#define FAIR_LEDGER_UID_MAX 128
#define FAIR_LEDGER_DAY_MS 86400000LL
/* 1 GPU-hour in the ledger's unit, milli-GPU x ms. */
#define FAIR_LEDGER_GPU_HOUR_MMS 3600000000LL

enum fair_ledger_end {
    FAIR_LEDGER_OPEN = 0, /* still running */
    FAIR_LEDGER_COMPLETED = 1,
    FAIR_LEDGER_FAILED = 2,
    FAIR_LEDGER_PREEMPTED = 3, /* evicted by a reclaim: the work is lost */
    FAIR_LEDGER_DELETED = 4,
    FAIR_LEDGER_UNKNOWN = 5, /* gone while nobody watched; closed by reconcile */
};
/* "completed", "failed", ...; "invalid" for an unknown value. */
const char *fair_ledger_end_name(int reason);

struct fair_ledger_options {
    const char *path;            /* the database file; created when missing */
    int readonly;                /* reports: no writes, no migration, no queue */
    int64_t sample_period_ms;    /* 0: 60000. A sample counts for at most this */
    int64_t retention_ms;        /* 0: 400 days. Raw rows older are pruned */
    int64_t sample_retention_ms; /* 0: same as retention_ms */
    size_t queue_max;            /* 0: 65536 queued records */
    int busy_timeout_ms;         /* 0: 5000; -1: fail at once when locked. The
                                  * lock wait of the open and of later writes
                                  * until fair_ledger_set_lock_wait() */
    int64_t max_pages;           /* 0: unlimited. Caps the file (tests: "disk full") */
};

/* Fills o with the defaults above (path NULL). */
void fair_ledger_options_init(struct fair_ledger_options *o);

/* Opens (creating when missing) and migrates the ledger at o->path: WAL
 * journal, synchronous=NORMAL, the busy timeout, schema migrations by
 * PRAGMA user_version. A new file is created with mode 0600 (owner only:
 * it holds every team's usage), and SQLite gives its -wal and -shm files
 * the same mode. A garbage file, a locked database or a full disk fail
 * with FAIR_EDB/FAIR_EBUSY/FAIR_EIO and a message naming the file.
 * Returns a new ledger in *out, to be freed with fair_ledger_free(). */
int fair_ledger_open(const struct fair_ledger_options *o, struct fair_ledger **out,
                     struct fair_error *err);

/* Flushes what is queued (errors are logged), then closes. NULL: no-op. */
void fair_ledger_free(struct fair_ledger *l);

/* One placement. All strings are borrowed and copied, at most
 * FAIR_LEDGER_NAME_MAX bytes. uid, namespace_, pod and queue are required;
 * project, team, cost_center, node and gpu_model may be NULL or "" (stored
 * as "", reported as "(none)"), so that a pod is never left out of the
 * ledger because its project lacks a label. */
struct fair_ledger_interval_info {
    const char *uid;
    const char *namespace_;
    const char *pod;
    const char *queue;
    const char *project;
    const char *team;
    const char *cost_center;
    const char *node;
    const char *gpu_model;
    int64_t gpu_milli; /* > 0 */
    /* The part of gpu_milli that was within the queue's guarantee when the
     * pod was placed (0..gpu_milli); the rest was borrowed. The engine
     * knows this at bind time: min(gpu_milli, max(0, guaranteed -
     * allocated before this bind)). See docs/ledger.md for the rule. */
    int64_t inquota_milli;
    int64_t start_ms; /* bind time, ms since the epoch */
    /* What the pod is charged as, fixed at bind time (the controller reads
     * it back after a restart, so that labels edited later change nothing):
     * whether it may be evicted, its devices, its gang (NULL or "": none). */
    bool non_preemptible;
    uint64_t devices;
    const char *gang;
    int32_t gang_size;
    /* Who created the pod (NULL or "": unknown), for reports by user: the
     * value of the label ledger.creatorLabel names, read at bind time. */
    const char *creator;
    /* The workload whose evictions the pod's count for (NULL or "": none):
     * its controller owner's uid, else its own, fixed at bind time. */
    const char *lineage;
};

/* Queue an open. FAIR_EINVAL on bad fields (nothing queued). */
int fair_ledger_interval_open(struct fair_ledger *l, const struct fair_ledger_interval_info *info,
                              struct fair_error *err);
/* Queue a close. end_ms before the start is clamped to the start. A close
 * of a UID with no open interval is ignored at flush. */
int fair_ledger_interval_close(struct fair_ledger *l, const char *uid, int64_t end_ms,
                               enum fair_ledger_end reason, struct fair_error *err);

/* One queue at one sample time, GPU milli-units. */
struct fair_ledger_sample_row {
    const char *queue; /* borrowed, copied; project and team may be NULL or "" */
    const char *project;
    const char *team;
    int64_t allocated;
    int64_t guaranteed;
    int64_t fair_share;
    int64_t pending; /* demand of pending pods */
    /* Derived by fair_ledger_sample_derive() (or given by the caller): */
    int64_t in_quota; /* min(allocated, guaranteed) */
    int64_t borrowed; /* allocated - in_quota */
    int64_t lent;     /* guaranteed left idle and used by others; < 0: derive */
};

/* Fills in_quota and borrowed of each row, and lent where it is < 0: the
 * total borrowed B is spread over the queues' idle guarantees
 * I_q = guaranteed - in_quota, lent_q = floor(I_q * min(B, I) / I) with
 * I = sum I_q, the remainder going one milli at a time to the largest
 * fractional parts (ties: row order), so that sum lent = min(B, I). */
void fair_ledger_sample_derive(struct fair_ledger_sample_row *rows, size_t n);

/* Queue one sample of n queues at now_ms (derived fields filled as above).
 * The sample stands for [now - d, now) with d = min(now - previous sample,
 * sample period) (the first sample ever: one period). Also advances the
 * heartbeat to now at the flush that commits it. */
int fair_ledger_sample(struct fair_ledger *l, int64_t now_ms,
                       const struct fair_ledger_sample_row *rows, size_t n, struct fair_error *err);

/* Writes everything queued in one transaction. 0, or FAIR_EBUSY (locked),
 * FAIR_EIO (disk full, I/O), FAIR_EDB; the queue is then kept. Failures are
 * logged as the retry note above says (first, then once a minute). */
int fair_ledger_flush(struct fair_ledger *l, struct fair_error *err);

/* How long a write waits for a lock held by another connection, from now
 * on: 0 never waits (FAIR_EBUSY at once; the loop's setting), ms > 0 waits
 * until now + ms in total, across every write made until the next call
 * (so a shutdown's last reconcile and flush share one bound). */
void fair_ledger_set_lock_wait(struct fair_ledger *l, int64_t ms);

/* When to flush next: interval_ms after a flush that committed (or when
 * nothing failed); after failures, 50 ms doubling per consecutive failure,
 * capped at interval_ms. */
int64_t fair_ledger_retry_delay_ms(const struct fair_ledger *l, int64_t interval_ms);

/* At start-up (and whenever the controller resyncs): flushes, then in one
 * transaction closes every open interval whose UID is not among live[] at
 * max(start, heartbeat) with reason UNKNOWN, opens live pods that have no
 * interval yet (with their own start_ms, so no running time is lost), and
 * sets the heartbeat to now_ms. Idempotent. *closed / *opened (may be NULL)
 * receive the counts. */
int fair_ledger_reconcile(struct fair_ledger *l, int64_t now_ms,
                          const struct fair_ledger_interval_info *live, size_t n, size_t *closed,
                          size_t *opened, struct fair_error *err);

/* Calls cb for every open interval committed to the file (namespace, pod,
 * queue, project, team, cost center, node, model, GPU, start and the
 * charge fields; strings borrowed for the call), in no particular order,
 * until cb returns non-zero (returned). Synchronous, on the writer's
 * connection: for start-up, before the loop runs. */
int fair_ledger_open_intervals(struct fair_ledger *l,
                               int (*cb)(void *ctx, const struct fair_ledger_interval_info *in),
                               void *ctx, struct fair_error *err);

/* Calls cb once per lineage with the number of its intervals that ended
 * preempted (among the raw intervals kept: retention), until cb returns
 * non-zero (returned). Synchronous, on the writer's connection: for
 * start-up, so that the eviction bound survives a restart. */
int fair_ledger_preemptions(struct fair_ledger *l,
                            int (*cb)(void *ctx, const char *lineage, int64_t count), void *ctx,
                            struct fair_error *err);

/* Deletes closed intervals that ended, and samples taken, before the start
 * of the UTC day that holds now - retention (their figures stay in the daily
 * rollups). Chunked; returns the number of rows deleted in *deleted. */
int fair_ledger_prune(struct fair_ledger *l, int64_t now_ms, int64_t *deleted,
                      struct fair_error *err);

struct fair_ledger_stats {
    size_t queued;    /* records waiting for the next flush */
    uint64_t flushed; /* records committed since open */
    uint64_t dropped; /* records lost: queue full and flush failed */
    uint64_t flushes; /* committed transactions */
    uint64_t flush_errors;
    uint64_t fail_streak; /* consecutive failed flushes; 0 when the last committed */
    int64_t heartbeat_ms; /* last committed heartbeat, 0 if none */
};
void fair_ledger_stats(const struct fair_ledger *l, struct fair_ledger_stats *out);

/* Appends the stats in the Prometheus text format, for /metrics:
 * fairshare_ledger_queued_records, fairshare_ledger_flushed_records_total,
 * fairshare_ledger_dropped_records_total, fairshare_ledger_flushes_total,
 * fairshare_ledger_flush_errors_total, fairshare_ledger_flush_failing
 * (consecutive failed flushes), fairshare_ledger_heartbeat_seconds. */
int fair_ledger_metrics(const struct fair_ledger *l, struct fair_buf *out);

/* Online backup (SQLite's backup API) of the whole database into dest,
 * written to dest + ".tmp" and renamed, so dest is always a complete
 * database. Safe while the controller writes: readers see a consistent
 * snapshot in WAL mode. Flushes this handle's queue first. */
int fair_ledger_backup(struct fair_ledger *l, const char *dest, struct fair_error *err);

struct fair_ledger_check {
    int ok;           /* PRAGMA integrity_check said "ok" */
    char detail[256]; /* its first message otherwise */
    int schema_version;
    int64_t intervals, open_intervals, samples, rollup_days;
    int64_t first_start_ms, last_end_ms; /* 0 when no interval */
    int64_t heartbeat_ms, pruned_before_ms;
};
/* Runs PRAGMA integrity_check and collects counts. 0 even when the check
 * finds damage (see out->ok); an error only when it cannot run. */
int fair_ledger_check(struct fair_ledger *l, struct fair_ledger_check *out, struct fair_error *err);

/* A deadline for the statements of a reader (the dashboard's query
 * threads): from now on, a statement still running at deadline_mono_ms
 * (CLOCK_MONOTONIC, ms) or once *cancel (may be NULL) is non-zero is
 * stopped through SQLite's progress handler and fails with FAIR_ETIMEDOUT.
 * cancel is borrowed and may be set from another thread. deadline 0: none.
 * fair_ledger_deadline_hit() then says whether it stopped one (1 deadline,
 * 2 cancel) since this call. Readers only: the writer never gets one. */
void fair_ledger_set_deadline(struct fair_ledger *l, int64_t deadline_mono_ms,
                              const _Atomic int *cancel);
int fair_ledger_deadline_hit(const struct fair_ledger *l);

/* The configured sample period (ms). */
int64_t fair_ledger_sample_period(const struct fair_ledger *l);

/* For report.c and the dashboard: the connection (borrowed, same thread
 * only) and the meta values. */
struct sqlite3 *fair_ledger_db(struct fair_ledger *l);
/* Reads meta key (heartbeat_ms, pruned_before_ms, max_closed_len_ms,
 * max_sample_dur_ms, batches); 0 when unset. */
int fair_ledger_meta_get(struct fair_ledger *l, const char *key, int64_t *out,
                         struct fair_error *err);

/* Maps an SQLite result code to FAIR_E* and sets err to "<what>: <sqlite
 * message>" with a hint for locked, full and corrupt databases. */
int fair_ledger_sql_error(struct fair_ledger *l, int rc, const char *what, struct fair_error *err);

#endif
