/* The GPU-hour ledger (see ledger.h): schema and migrations, the bounded
 * write queue, the flush transaction, daily rollups, reconcile and pruning. */
#include "ledger/ledger.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"

enum op_kind { OP_OPEN, OP_CLOSE, OP_SAMPLE };

#define DCACHE_SLOTS 8192 /* open addressing, filled at most half */
#define DCACHE_KEY_MAX (6 * (FAIR_LEDGER_NAME_MAX + 8))

struct dim_entry {
    char *key; /* NULL: free slot */
    int64_t id;
};

struct sample_op {
    int64_t now_ms;
    size_t n;
    struct fair_ledger_sample_row *rows; /* strings point into strs */
    char *strs;
};

struct op {
    enum op_kind kind;
    struct fair_ledger_interval_info info; /* OPEN: strings point into strs; CLOSE: uid */
    char *strs;
    int64_t end_ms;
    int reason;
    struct sample_op sample;
};

struct fair_ledger {
    sqlite3 *db;
    char *path;
    int readonly;
    int64_t sample_period_ms;
    int64_t retention_ms;
    int64_t sample_retention_ms;
    struct op *ops; /* ring buffer */
    size_t cap, head, count;
    struct fair_ledger_stats st;
    /* dims rows already in the database: key -> id, so that a flush does
     * not look them up again. Entries are added inside a transaction, so
     * the cache is cleared whenever one rolls back. */
    struct dim_entry *dcache;
    size_t ndcache;
    int64_t tx_maxlen; /* longest interval closed in the open transaction */
    /* The retry (see "the flush retry" in ledger.h). */
    int64_t fail_since_ms;    /* monotonic start of the failing streak */
    int64_t fail_logged_ms;   /* monotonic time of the last failure line */
    uint64_t dropped_streak;  /* records dropped in this streak */
    int64_t lock_deadline_ms; /* monotonic; the busy handler waits until it */
    /* Readers: the statement deadline (fair_ledger_set_deadline). */
    int64_t deadline_ms;
    const _Atomic int *cancel;
    int deadline_hit; /* 1: deadline, 2: cancelled */
};

/* A failing streak logs its first failure and then at most one line per
 * this many ms. */
#define FAIL_LOG_EVERY_MS 60000
/* First retry after a failed flush; doubles up to the flush interval. */
#define RETRY_MIN_MS 50

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *const end_names[] = {"open",      "completed", "failed",
                                        "preempted", "deleted",   "unknown"};

const char *fair_ledger_end_name(int reason)
{
    if (reason < 0 || reason > FAIR_LEDGER_UNKNOWN)
        return "invalid";
    return end_names[reason];
}

void fair_ledger_options_init(struct fair_ledger_options *o)
{
    memset(o, 0, sizeof(*o));
    o->sample_period_ms = 60000;
    o->retention_ms = 400 * FAIR_LEDGER_DAY_MS;
    o->sample_retention_ms = 0; /* same as retention_ms */
    o->queue_max = 65536;
    o->busy_timeout_ms = 5000;
}

int fair_ledger_sql_error(struct fair_ledger *l, int rc, const char *what, struct fair_error *err)
{
    const char *path = l && l->path ? l->path : "?";
    const char *msg = l && l->db ? sqlite3_errmsg(l->db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return fair_error_set(err, FAIR_EBUSY,
                              "ledger %s: %s: database is locked by another process (%s); "
                              "retry later or stop the other writer",
                              path, what, msg);
    case SQLITE_FULL:
        return fair_error_set(err, FAIR_EIO,
                              "ledger %s: %s: database or disk is full (%s); free space "
                              "or prune the ledger",
                              path, what, msg);
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
        return fair_error_set(err, FAIR_EIO, "ledger %s: %s: %s", path, what, msg);
    case SQLITE_INTERRUPT:
        return fair_error_set(err, FAIR_ETIMEDOUT,
                              "ledger %s: %s: the query was stopped %s; ask for a shorter "
                              "period",
                              path, what,
                              l && l->deadline_hit == 2 ? "(cancelled)" : "at its deadline");
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return fair_error_set(err, FAIR_EDB,
                              "ledger %s: %s: the file is not a valid ledger database (%s); "
                              "restore it from a backup (docs/operations.md)",
                              path, what, msg);
    default:
        return fair_error_set(err, FAIR_EDB, "ledger %s: %s: %s", path, what, msg);
    }
}

static int exec(struct fair_ledger *l, const char *sql, struct fair_error *err)
{
    char *emsg = NULL;
    int rc = sqlite3_exec(l->db, sql, NULL, NULL, &emsg);
    sqlite3_free(emsg);
    if (rc != SQLITE_OK)
        return fair_ledger_sql_error(l, rc, "exec", err);
    return 0;
}

/* Switching a new file to WAL takes an exclusive lock, and SQLite answers
 * SQLITE_BUSY at once, without its busy handler, when another process holds
 * the file: two replicas starting together on a new ledger. Retry for as
 * long as the busy timeout allows. The mode is kept in the file, so a later
 * opener finds WAL already set. */
static int set_wal(struct fair_ledger *l, int busy_ms, struct fair_error *err)
{
    int waited = 0;
    for (;;) {
        int rc = sqlite3_exec(l->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return 0;
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited >= busy_ms)
            return fair_ledger_sql_error(l, rc, "set WAL mode", err);
        int slept = sqlite3_sleep(10);
        waited += slept > 0 ? slept : 10;
    }
}

static int prepare(struct fair_ledger *l, const char *sql, sqlite3_stmt **st,
                   struct fair_error *err)
{
    int rc = sqlite3_prepare_v2(l->db, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        return fair_ledger_sql_error(l, rc, "prepare", err);
    return 0;
}

/* Schema version 1. Units: GPU milli-units, ms since the Unix epoch, and
 * milli x ms ("mms") for GPU time; days are UTC days since the epoch. */
static const char schema_v1[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE dims(id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, queue TEXT NOT NULL,"
    " project TEXT NOT NULL, team TEXT NOT NULL, cost_center TEXT NOT NULL,"
    " gpu_model TEXT NOT NULL,"
    " UNIQUE(namespace, queue, project, team, cost_center, gpu_model));"
    "CREATE TABLE intervals(id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE,"
    " dim_id INTEGER NOT NULL REFERENCES dims(id), pod TEXT NOT NULL, node TEXT NOT NULL,"
    " gpu_milli INTEGER NOT NULL CHECK(gpu_milli > 0),"
    " inquota_milli INTEGER NOT NULL CHECK(inquota_milli BETWEEN 0 AND gpu_milli),"
    " start_ms INTEGER NOT NULL,"
    " end_ms INTEGER CHECK(end_ms IS NULL OR end_ms >= start_ms),"
    " reason INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX intervals_start ON intervals(start_ms);"
    "CREATE INDEX intervals_open ON intervals(start_ms) WHERE end_ms IS NULL;"
    "CREATE TABLE interval_day(day INTEGER NOT NULL, dim_id INTEGER NOT NULL,"
    " gpu_mms INTEGER NOT NULL, inquota_mms INTEGER NOT NULL, preempted_mms INTEGER NOT NULL,"
    " pods_started INTEGER NOT NULL, pods_alive INTEGER NOT NULL,"
    " PRIMARY KEY(day, dim_id)) WITHOUT ROWID;"
    "CREATE TABLE samples(id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL,"
    " dur_ms INTEGER NOT NULL, dim_id INTEGER NOT NULL REFERENCES dims(id),"
    " allocated INTEGER NOT NULL, guaranteed INTEGER NOT NULL, fair_share INTEGER NOT NULL,"
    " pending INTEGER NOT NULL, in_quota INTEGER NOT NULL, borrowed INTEGER NOT NULL,"
    " lent INTEGER NOT NULL);"
    "CREATE INDEX samples_t ON samples(t_ms);"
    "CREATE TABLE sample_day(day INTEGER NOT NULL, dim_id INTEGER NOT NULL,"
    " allocated_mms INTEGER NOT NULL, guaranteed_mms INTEGER NOT NULL,"
    " in_quota_mms INTEGER NOT NULL, borrowed_mms INTEGER NOT NULL,"
    " lent_mms INTEGER NOT NULL, pending_mms INTEGER NOT NULL,"
    " PRIMARY KEY(day, dim_id)) WITHOUT ROWID;";

/* Version 2: sample_day also keeps the fair share and the ms its samples
 * cover, so that the dashboard draws long periods from the daily rollups
 * (mean = x_mms / sampled_ms) instead of reading every raw sample. Days
 * whose raw samples are all still there are filled in from them; older
 * days keep sampled_ms = 0 and are left out of the charts, as their raw
 * samples already were. A sample covers [t - dur, t) and dur is at most a
 * day, so it touches at most two days. */
static const char schema_v2[] =
    "ALTER TABLE sample_day ADD COLUMN fair_share_mms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE sample_day ADD COLUMN sampled_ms INTEGER NOT NULL DEFAULT 0;"
    "UPDATE sample_day SET fair_share_mms = f.fs, sampled_ms = f.ms FROM ("
    " SELECT day, dim_id, sum(fair_share * ms) AS fs, sum(ms) AS ms FROM ("
    "  SELECT (t_ms - dur_ms) / 86400000 AS day, dim_id, fair_share,"
    "   min(t_ms, ((t_ms - dur_ms) / 86400000 + 1) * 86400000) - (t_ms - dur_ms) AS ms"
    "   FROM samples WHERE dur_ms > 0"
    "  UNION ALL"
    "  SELECT (t_ms - 1) / 86400000, dim_id, fair_share,"
    "   t_ms - ((t_ms - 1) / 86400000) * 86400000"
    "   FROM samples WHERE dur_ms > 0 AND (t_ms - 1) / 86400000 > (t_ms - dur_ms) / 86400000)"
    " GROUP BY day, dim_id) AS f"
    " WHERE sample_day.day = f.day AND sample_day.dim_id = f.dim_id"
    " AND sample_day.day >= coalesce((SELECT value FROM meta"
    " WHERE key = 'samples_pruned_before_ms'), 0) / 86400000;";

/* Version 3: an interval keeps what its pod is charged as, fixed at bind
 * time: evictable or not, its devices (a 64-bit mask stored as a signed
 * integer) and its gang; rows from before default to an evictable pod with
 * no devices and no gang. */
static const char schema_v3[] =
    "ALTER TABLE intervals ADD COLUMN preemptible INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE intervals ADD COLUMN devices INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE intervals ADD COLUMN gang TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE intervals ADD COLUMN gang_size INTEGER NOT NULL DEFAULT 0;";

/* Version 4: an interval keeps its pod's creator, fixed at bind time from
 * the label that ledger.creatorLabel names (docs/ledger.md, "Creator");
 * rows from before have none (''), reported as "(none)" by --by user.
 * Reports by user read the intervals (the daily rollups are per dims
 * row, which has no creator). */
static const char schema_v4[] =
    "ALTER TABLE intervals ADD COLUMN creator TEXT NOT NULL DEFAULT '';";

/* Version 5: an interval keeps its pod's lineage (its controller owner's
 * uid, else its own), fixed at bind time, so that a controller that starts
 * again counts each workload's evictions from the preempted intervals
 * (fair_ledger_preemptions); rows from before have none ('') and count for
 * no workload. The partial index keeps that count to the preempted rows. */
static const char schema_v5[] =
    "ALTER TABLE intervals ADD COLUMN lineage TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX intervals_preempted ON intervals(lineage) WHERE reason = 3;";

/* Migrations: index i brings the schema from version i to i + 1. */
static const char *const migrations[] = {schema_v1, schema_v2, schema_v3, schema_v4, schema_v5};

static int read_version(struct fair_ledger *l, int *version, struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(l, "PRAGMA user_version", &st, err);
    if (rc)
        return rc;
    int src = sqlite3_step(st);
    *version = src == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    if (src != SQLITE_ROW)
        return fair_ledger_sql_error(l, src, "read schema version", err);
    if (*version > FAIR_LEDGER_SCHEMA_VERSION)
        return fair_error_set(err, FAIR_EDB,
                              "ledger %s: schema version %d is newer than this program's %d; "
                              "upgrade fairshare",
                              l->path, *version, FAIR_LEDGER_SCHEMA_VERSION);
    return 0;
}

/* Several processes may open a new (or old) file at once: two controller
 * replicas starting together. The version read outside a transaction only
 * says whether there is anything to do; the one that counts is read again
 * inside BEGIN IMMEDIATE, which holds the write lock, so the openers
 * migrate one after another and a later one finds the schema migrated. */
static int migrate(struct fair_ledger *l, struct fair_error *err)
{
    int version = 0;
    int rc = read_version(l, &version, err);
    if (rc || version == FAIR_LEDGER_SCHEMA_VERSION)
        return rc;
    if (l->readonly)
        return fair_error_set(err, FAIR_EDB,
                              "ledger %s: schema version %d, expected %d; open it once "
                              "read-write (the controller migrates it)",
                              l->path, version, FAIR_LEDGER_SCHEMA_VERSION);
    rc = exec(l, "BEGIN IMMEDIATE", err);
    if (rc)
        return rc;
    rc = read_version(l, &version, err);
    if (rc)
        goto fail;
    for (int v = version; v < FAIR_LEDGER_SCHEMA_VERSION; v++) {
        rc = exec(l, migrations[v], err);
        if (rc)
            goto fail;
        FAIR_INFO("ledger", "msg=\"schema migrated\" path=%s from=%d to=%d", l->path, v, v + 1);
    }
    if (version < FAIR_LEDGER_SCHEMA_VERSION) {
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", FAIR_LEDGER_SCHEMA_VERSION);
        rc = exec(l, sql, err);
        if (rc)
            goto fail;
    }
    rc = exec(l, "COMMIT", err);
    if (rc)
        goto fail;
    return 0;
fail:
    sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int fair_ledger_open(const struct fair_ledger_options *o, struct fair_ledger **out,
                     struct fair_error *err)
{
    struct fair_ledger *l = NULL;
    int rc = 0;
    *out = NULL;
    if (!o || !o->path || !*o->path)
        return fair_error_set(err, FAIR_EINVAL, "ledger: no database path given");
    l = fair_calloc(1, sizeof(*l));
    if (!l)
        return fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
    l->path = fair_strdup(o->path);
    l->cap = o->readonly ? 1 : o->queue_max ? o->queue_max : 65536;
    l->ops = fair_calloc(l->cap, sizeof(*l->ops));
    if (!l->path || !l->ops) {
        rc = fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
        goto out;
    }
    l->readonly = o->readonly;
    l->sample_period_ms = o->sample_period_ms > 0 ? o->sample_period_ms : 60000;
    l->retention_ms = o->retention_ms > 0 ? o->retention_ms : 400 * FAIR_LEDGER_DAY_MS;
    l->sample_retention_ms = o->sample_retention_ms > 0 ? o->sample_retention_ms : l->retention_ms;
    if (!o->readonly) {
        /* SQLite would create the file 0644; create it 0600 first (an empty
         * file is an empty database), and SQLite gives the -wal and -shm
         * files the mode of the database file. An existing file keeps its
         * mode. */
        int fd = open(o->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    int flags = o->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int src = sqlite3_open_v2(o->path, &l->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (src != SQLITE_OK) {
        rc = fair_ledger_sql_error(l, src, "open", err);
        goto out;
    }
    sqlite3_extended_result_codes(l->db, 0);
    int busy = o->busy_timeout_ms == 0 ? 5000 : o->busy_timeout_ms < 0 ? 0 : o->busy_timeout_ms;
    sqlite3_busy_timeout(l->db, busy);
    if (!o->readonly) {
        /* WAL: readers never block the writer. synchronous=NORMAL: in WAL
         * mode a commit is atomic and durable against a process crash
         * (kill -9); only a power loss may lose the last commits, never
         * consistency. See docs/ledger.md. */
        rc = set_wal(l, busy, err);
        if (rc)
            goto out;
        rc = exec(l, "PRAGMA synchronous=NORMAL", err);
        if (rc)
            goto out;
    }
    rc = exec(l, "PRAGMA foreign_keys=ON", err);
    if (rc)
        goto out;
    if (o->max_pages > 0) {
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA max_page_count=%" PRId64, o->max_pages);
        rc = exec(l, sql, err);
        if (rc)
            goto out;
    }
    rc = migrate(l, err);
    if (rc)
        goto out;
    rc = fair_ledger_meta_get(l, "heartbeat_ms", &l->st.heartbeat_ms, err);
out:
    if (rc) {
        fair_ledger_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

static void op_release(struct op *op)
{
    fair_free(op->strs);
    fair_free(op->sample.rows);
    fair_free(op->sample.strs);
    memset(op, 0, sizeof(*op));
}

void fair_ledger_free(struct fair_ledger *l)
{
    if (!l)
        return;
    if (l->db && l->count) {
        struct fair_error e = {0};
        if (fair_ledger_flush(l, &e))
            FAIR_ERROR("ledger", "msg=\"flush at close failed\" lost=%zu err=\"%s\"", l->count,
                       e.msg);
    }
    while (l->count) {
        op_release(&l->ops[l->head]);
        l->head = (l->head + 1) % l->cap;
        l->count--;
    }
    if (l->db)
        sqlite3_close(l->db);
    for (size_t i = 0; l->dcache && i < DCACHE_SLOTS; i++)
        fair_free(l->dcache[i].key);
    fair_free(l->dcache);
    fair_free(l->ops);
    fair_free(l->path);
    fair_free(l);
}

struct sqlite3 *fair_ledger_db(struct fair_ledger *l)
{
    return l->db;
}

/* SQLite's busy handler while a lock wait is set: sleep in short steps
 * until the lock clears or the deadline passes. */
static int busy_until_deadline(void *arg, int count)
{
    struct fair_ledger *l = arg;
    (void)count;
    int64_t left = l->lock_deadline_ms - mono_ms();
    if (left <= 0)
        return 0;
    struct timespec ts = {0, (long)(left < 10 ? left : 10) * 1000000L};
    nanosleep(&ts, NULL);
    return 1;
}

void fair_ledger_set_lock_wait(struct fair_ledger *l, int64_t ms)
{
    if (!l->db)
        return;
    if (ms <= 0) {
        l->lock_deadline_ms = 0;
        sqlite3_busy_timeout(l->db, 0); /* removes any busy handler */
        return;
    }
    l->lock_deadline_ms = mono_ms() + ms;
    sqlite3_busy_handler(l->db, busy_until_deadline, l);
}

int64_t fair_ledger_retry_delay_ms(const struct fair_ledger *l, int64_t interval_ms)
{
    if (!l->st.fail_streak || interval_ms <= RETRY_MIN_MS)
        return interval_ms;
    int64_t d = RETRY_MIN_MS;
    for (uint64_t i = 1; i < l->st.fail_streak && d < interval_ms; i++)
        d *= 2;
    return d < interval_ms ? d : interval_ms;
}

/* The progress handler of a reader with a deadline: non-zero stops the
 * statement with SQLITE_INTERRUPT. */
static int past_deadline(void *arg)
{
    struct fair_ledger *l = arg;
    if (l->cancel && atomic_load(l->cancel)) {
        l->deadline_hit = 2;
        return 1;
    }
    if (l->deadline_ms && mono_ms() >= l->deadline_ms) {
        l->deadline_hit = 1;
        return 1;
    }
    return 0;
}

void fair_ledger_set_deadline(struct fair_ledger *l, int64_t deadline_mono_ms,
                              const _Atomic int *cancel)
{
    l->deadline_ms = deadline_mono_ms;
    l->cancel = cancel;
    l->deadline_hit = 0;
    if (!l->db)
        return;
    /* Every 1,000 virtual machine instructions: microseconds apart. */
    if (deadline_mono_ms || cancel)
        sqlite3_progress_handler(l->db, 1000, past_deadline, l);
    else
        sqlite3_progress_handler(l->db, 0, NULL, NULL);
}

int fair_ledger_deadline_hit(const struct fair_ledger *l)
{
    return l->deadline_hit;
}

int64_t fair_ledger_sample_period(const struct fair_ledger *l)
{
    return l->sample_period_ms;
}

void fair_ledger_stats(const struct fair_ledger *l, struct fair_ledger_stats *out)
{
    *out = l->st;
    out->queued = l->readonly ? 0 : l->count;
}

int fair_ledger_metrics(const struct fair_ledger *l, struct fair_buf *out)
{
    struct fair_ledger_stats s;
    fair_ledger_stats(l, &s);
    int rc = fair_buf_appendf(
        out,
        "# HELP fairshare_ledger_queued_records Ledger records waiting for the next flush.\n"
        "# TYPE fairshare_ledger_queued_records gauge\n"
        "fairshare_ledger_queued_records %zu\n"
        "# HELP fairshare_ledger_flushed_records_total Ledger records committed.\n"
        "# TYPE fairshare_ledger_flushed_records_total counter\n"
        "fairshare_ledger_flushed_records_total %" PRIu64 "\n"
        "# HELP fairshare_ledger_dropped_records_total Ledger records lost (queue full and "
        "flush failed).\n"
        "# TYPE fairshare_ledger_dropped_records_total counter\n"
        "fairshare_ledger_dropped_records_total %" PRIu64 "\n"
        "# HELP fairshare_ledger_flushes_total Ledger transactions committed.\n"
        "# TYPE fairshare_ledger_flushes_total counter\n"
        "fairshare_ledger_flushes_total %" PRIu64 "\n"
        "# HELP fairshare_ledger_flush_errors_total Ledger flushes that failed and were "
        "retried.\n"
        "# TYPE fairshare_ledger_flush_errors_total counter\n"
        "fairshare_ledger_flush_errors_total %" PRIu64 "\n"
        "# HELP fairshare_ledger_flush_failing Consecutive failed ledger flushes (0: the last "
        "one committed).\n"
        "# TYPE fairshare_ledger_flush_failing gauge\n"
        "fairshare_ledger_flush_failing %" PRIu64 "\n"
        "# HELP fairshare_ledger_heartbeat_seconds Last committed heartbeat (Unix time).\n"
        "# TYPE fairshare_ledger_heartbeat_seconds gauge\n"
        "fairshare_ledger_heartbeat_seconds %" PRId64 ".%03" PRId64 "\n",
        s.queued, s.flushed, s.dropped, s.flushes, s.flush_errors, s.fail_streak,
        s.heartbeat_ms / 1000, s.heartbeat_ms % 1000);
    return rc ? FAIR_ENOMEM : 0;
}

int fair_ledger_meta_get(struct fair_ledger *l, const char *key, int64_t *out,
                         struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    *out = 0;
    int rc = prepare(l, "SELECT value FROM meta WHERE key=?", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else if (src != SQLITE_DONE)
        rc = fair_ledger_sql_error(l, src, "read meta", err);
    sqlite3_finalize(st);
    return rc;
}

/* ---- the write queue ---- */

/* Optional names may be NULL or "": both are stored as "". */
static const char *nz(const char *s)
{
    return s ? s : "";
}

static int check_name(const char *field, const char *s, int may_be_empty, struct fair_error *err)
{
    if (!s && may_be_empty)
        return 0;
    if (!s)
        return fair_error_set(err, FAIR_EINVAL, "ledger: interval field %s is missing", field);
    size_t n = strnlen(s, FAIR_LEDGER_NAME_MAX + 1);
    if (n > FAIR_LEDGER_NAME_MAX)
        return fair_error_set(err, FAIR_EINVAL, "ledger: interval field %s is longer than %d",
                              field, FAIR_LEDGER_NAME_MAX);
    if (!n && !may_be_empty)
        return fair_error_set(err, FAIR_EINVAL, "ledger: interval field %s is empty", field);
    return 0;
}

/* Copies strings s[0..n) into one block; dst[i] point into it. */
static char *pack_strings(const char *const *s, const char **dst, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += strlen(nz(s[i])) + 1;
    char *block = fair_malloc(total ? total : 1);
    if (!block)
        return NULL;
    char *p = block;
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(nz(s[i])) + 1;
        memcpy(p, nz(s[i]), k);
        dst[i] = p;
        p += k;
    }
    return block;
}

/* Appends op (taken over) to the queue; flushes first when full. */
static int enqueue_take(struct fair_ledger *l, struct op *op, struct fair_error *err)
{
    if (l->readonly) {
        op_release(op);
        return fair_error_set(err, FAIR_EINVAL, "ledger %s: opened read-only", l->path);
    }
    if (l->count == l->cap) {
        /* While flushes fail, the retry timer owns the database: drop
         * without trying, so that a locked database costs nothing per
         * record. Otherwise flush first (backpressure). */
        int rc = l->st.fail_streak
                     ? fair_error_set(err, FAIR_EBUSY,
                                      "ledger %s: queue full (%zu records) while flushes "
                                      "fail; record dropped",
                                      l->path, l->cap)
                     : fair_ledger_flush(l, err);
        if (rc) {
            l->st.dropped++;
            if (l->dropped_streak++ == 0)
                FAIR_ERROR("ledger",
                           "msg=\"queue full and the database cannot be written: dropping "
                           "records until a flush commits (counted in "
                           "fairshare_ledger_dropped_records_total)\" path=%s queue_max=%zu "
                           "err=\"%s\"",
                           l->path, l->cap, err ? err->msg : "");
            op_release(op);
            return rc;
        }
    }
    l->ops[(l->head + l->count) % l->cap] = *op;
    l->count++;
    memset(op, 0, sizeof(*op));
    return 0;
}

static int check_info(const struct fair_ledger_interval_info *in, struct fair_error *err)
{
    int rc;
    if (!in->uid || !*in->uid || strnlen(in->uid, FAIR_LEDGER_UID_MAX + 1) > FAIR_LEDGER_UID_MAX)
        return fair_error_set(err, FAIR_EINVAL, "ledger: interval uid is missing or too long");
    if ((rc = check_name("namespace", in->namespace_, 0, err)) ||
        (rc = check_name("pod", in->pod, 0, err)) ||
        (rc = check_name("queue", in->queue, 0, err)) ||
        (rc = check_name("project", in->project, 1, err)) ||
        (rc = check_name("team", in->team, 1, err)) ||
        (rc = check_name("cost_center", in->cost_center, 1, err)) ||
        (rc = check_name("node", in->node, 1, err)) ||
        (rc = check_name("gpu_model", in->gpu_model, 1, err)) ||
        (rc = check_name("gang", in->gang, 1, err)) ||
        (rc = check_name("creator", in->creator, 1, err)) ||
        (rc = check_name("lineage", in->lineage, 1, err)))
        return rc;
    if (in->gang_size < 0)
        return fair_error_set(err, FAIR_EINVAL, "ledger: pod %s/%s: negative gang size",
                              in->namespace_, in->pod);
    if (in->gpu_milli <= 0 || in->gpu_milli > 1000000000)
        return fair_error_set(err, FAIR_EINVAL,
                              "ledger: pod %s/%s: gpu_milli %" PRId64 " out of range",
                              in->namespace_, in->pod, in->gpu_milli);
    if (in->inquota_milli < 0 || in->inquota_milli > in->gpu_milli)
        return fair_error_set(err, FAIR_EINVAL,
                              "ledger: pod %s/%s: inquota_milli %" PRId64 " not in 0..%" PRId64,
                              in->namespace_, in->pod, in->inquota_milli, in->gpu_milli);
    if (in->start_ms < 0)
        return fair_error_set(err, FAIR_EINVAL, "ledger: pod %s/%s: negative start time",
                              in->namespace_, in->pod);
    return 0;
}

static int info_copy(struct op *op, const struct fair_ledger_interval_info *in)
{
    const char *src[12] = {in->uid,       in->namespace_, in->pod,         in->queue,
                           in->project,   in->team,       in->cost_center, in->node,
                           in->gpu_model, in->gang,       in->creator,     in->lineage};
    const char *dst[12];
    op->info = *in;
    op->strs = pack_strings(src, dst, 12);
    if (!op->strs)
        return FAIR_ENOMEM;
    op->info.uid = dst[0];
    op->info.namespace_ = dst[1];
    op->info.pod = dst[2];
    op->info.queue = dst[3];
    op->info.project = dst[4];
    op->info.team = dst[5];
    op->info.cost_center = dst[6];
    op->info.node = dst[7];
    op->info.gpu_model = dst[8];
    op->info.gang = dst[9];
    op->info.creator = dst[10];
    op->info.lineage = dst[11];
    return 0;
}

int fair_ledger_interval_open(struct fair_ledger *l, const struct fair_ledger_interval_info *info,
                              struct fair_error *err)
{
    struct op op = {0};
    int rc = check_info(info, err);
    if (rc)
        return rc;
    op.kind = OP_OPEN;
    if (info_copy(&op, info))
        return fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
    return enqueue_take(l, &op, err);
}

int fair_ledger_interval_close(struct fair_ledger *l, const char *uid, int64_t end_ms,
                               enum fair_ledger_end reason, struct fair_error *err)
{
    struct op op = {0};
    if (!uid || !*uid || strnlen(uid, FAIR_LEDGER_UID_MAX + 1) > FAIR_LEDGER_UID_MAX)
        return fair_error_set(err, FAIR_EINVAL, "ledger: close: uid is missing or too long");
    if (reason < FAIR_LEDGER_COMPLETED || reason > FAIR_LEDGER_UNKNOWN)
        return fair_error_set(err, FAIR_EINVAL, "ledger: close %s: bad reason %d", uid,
                              (int)reason);
    op.kind = OP_CLOSE;
    op.strs = fair_strdup(uid);
    if (!op.strs)
        return fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
    op.info.uid = op.strs;
    op.end_ms = end_ms;
    op.reason = reason;
    return enqueue_take(l, &op, err);
}

void fair_ledger_sample_derive(struct fair_ledger_sample_row *rows, size_t n)
{
    int64_t borrowed = 0, idle = 0;
    int need_lent = 0;
    for (size_t i = 0; i < n; i++) {
        struct fair_ledger_sample_row *r = &rows[i];
        int64_t g = r->guaranteed > 0 ? r->guaranteed : 0;
        int64_t a = r->allocated > 0 ? r->allocated : 0;
        r->in_quota = a < g ? a : g;
        r->borrowed = a - r->in_quota;
        borrowed += r->borrowed;
        idle += g - r->in_quota;
        if (r->lent < 0)
            need_lent = 1;
    }
    if (!need_lent)
        return;
    int64_t total = borrowed < idle ? borrowed : idle;
    int64_t given = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t g = rows[i].guaranteed > 0 ? rows[i].guaranteed : 0;
        int64_t iq = g - rows[i].in_quota;
        /* 128-bit: idle x total may exceed int64 on huge clusters. */
        rows[i].lent = idle ? (int64_t)((__int128)iq * total / idle) : 0;
        given += rows[i].lent;
    }
    /* Largest remainder: hand out what floor() left, one milli each. */
    while (given < total) {
        size_t best = n;
        __int128 best_rem = -1;
        for (size_t i = 0; i < n; i++) {
            int64_t g = rows[i].guaranteed > 0 ? rows[i].guaranteed : 0;
            int64_t iq = g - rows[i].in_quota;
            if (rows[i].lent >= iq)
                continue;
            __int128 rem = (__int128)iq * total - (__int128)rows[i].lent * idle;
            if (rem > best_rem) {
                best_rem = rem;
                best = i;
            }
        }
        if (best == n)
            break;
        rows[best].lent++;
        given++;
    }
}

int fair_ledger_sample(struct fair_ledger *l, int64_t now_ms,
                       const struct fair_ledger_sample_row *rows, size_t n, struct fair_error *err)
{
    struct op op = {0};
    int rc = 0;
    if (n > 1000000)
        return fair_error_set(err, FAIR_ERANGE, "ledger: sample of %zu queues is too large", n);
    const char **src = NULL, **dst = NULL;
    op.kind = OP_SAMPLE;
    op.sample.now_ms = now_ms;
    op.sample.n = n;
    op.sample.rows = fair_calloc(n ? n : 1, sizeof(*rows));
    src = fair_calloc(3 * n + 1, sizeof(*src));
    dst = fair_calloc(3 * n + 1, sizeof(*dst));
    if (!op.sample.rows || !src || !dst) {
        rc = fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = check_name("sample queue", rows[i].queue, 0, err)) ||
            (rc = check_name("sample project", rows[i].project, 1, err)) ||
            (rc = check_name("sample team", rows[i].team, 1, err)))
            goto out;
        op.sample.rows[i] = rows[i];
        src[3 * i] = rows[i].queue;
        src[3 * i + 1] = rows[i].project;
        src[3 * i + 2] = rows[i].team;
    }
    op.sample.strs = pack_strings(src, dst, 3 * n);
    if (!op.sample.strs) {
        rc = fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        op.sample.rows[i].queue = dst[3 * i];
        op.sample.rows[i].project = dst[3 * i + 1];
        op.sample.rows[i].team = dst[3 * i + 2];
    }
    fair_ledger_sample_derive(op.sample.rows, n);
    rc = enqueue_take(l, &op, err);
out:
    op_release(&op);
    fair_free(src);
    fair_free(dst);
    return rc;
}

/* ---- the flush transaction ---- */

/* Prepared statements of one flush. */
struct stmts {
    sqlite3_stmt *dim_ins, *dim_get, *open, *find, *close, *iday, *meta_set, *meta_max, *meta_get,
        *sample, *sday;
};

static const char *const stmt_sql[] = {
    "INSERT OR IGNORE INTO dims(namespace, queue, project, team, cost_center, gpu_model)"
    " VALUES(?,?,?,?,?,?)",
    "SELECT id FROM dims WHERE namespace=? AND queue=? AND project=? AND team=? AND"
    " cost_center=? AND gpu_model=?",
    "INSERT OR IGNORE INTO intervals(uid, dim_id, pod, node, gpu_milli, inquota_milli, start_ms,"
    " preemptible, devices, gang, gang_size, creator, lineage) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "SELECT id, dim_id, gpu_milli, inquota_milli, start_ms FROM intervals"
    " WHERE uid=? AND end_ms IS NULL",
    "UPDATE intervals SET end_ms=?, reason=? WHERE id=?",
    "INSERT INTO interval_day(day, dim_id, gpu_mms, inquota_mms, preempted_mms, pods_started,"
    " pods_alive) VALUES(?1,?2,?3,?4,?5,?6,?7) ON CONFLICT(day, dim_id) DO UPDATE SET"
    " gpu_mms=gpu_mms+?3, inquota_mms=inquota_mms+?4, preempted_mms=preempted_mms+?5,"
    " pods_started=pods_started+?6, pods_alive=pods_alive+?7",
    "INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET value=?2",
    "INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET"
    " value=max(value, ?2)",
    "SELECT value FROM meta WHERE key=?",
    "INSERT INTO samples(t_ms, dur_ms, dim_id, allocated, guaranteed, fair_share, pending,"
    " in_quota, borrowed, lent) VALUES(?,?,?,?,?,?,?,?,?,?)",
    "INSERT INTO sample_day(day, dim_id, allocated_mms, guaranteed_mms, in_quota_mms,"
    " borrowed_mms, lent_mms, pending_mms, fair_share_mms, sampled_ms)"
    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"
    " ON CONFLICT(day, dim_id) DO UPDATE SET allocated_mms=allocated_mms+?3,"
    " guaranteed_mms=guaranteed_mms+?4, in_quota_mms=in_quota_mms+?5,"
    " borrowed_mms=borrowed_mms+?6, lent_mms=lent_mms+?7, pending_mms=pending_mms+?8,"
    " fair_share_mms=fair_share_mms+?9, sampled_ms=sampled_ms+?10",
};
#define NSTMTS (sizeof(stmt_sql) / sizeof(stmt_sql[0]))

static void stmts_free(struct stmts *s)
{
    sqlite3_stmt **a = (sqlite3_stmt **)s;
    for (size_t i = 0; i < NSTMTS; i++)
        sqlite3_finalize(a[i]);
    memset(s, 0, sizeof(*s));
}

static int stmts_prepare(struct fair_ledger *l, struct stmts *s, struct fair_error *err)
{
    _Static_assert(sizeof(struct stmts) == NSTMTS * sizeof(sqlite3_stmt *), "stmt table");
    sqlite3_stmt **a = (sqlite3_stmt **)s;
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < NSTMTS; i++) {
        int rc = prepare(l, stmt_sql[i], &a[i], err);
        if (rc) {
            stmts_free(s);
            return rc;
        }
    }
    return 0;
}

/* Steps a write statement to completion and resets it. */
static int step_done(struct fair_ledger *l, sqlite3_stmt *st, const char *what,
                     struct fair_error *err)
{
    int src = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (src != SQLITE_DONE && src != SQLITE_ROW)
        return fair_ledger_sql_error(l, src, what, err);
    return 0;
}

static void dcache_clear(struct fair_ledger *l)
{
    for (size_t i = 0; l->dcache && i < DCACHE_SLOTS; i++) {
        fair_free(l->dcache[i].key);
        l->dcache[i].key = NULL;
    }
    l->ndcache = 0;
}

/* Length-prefixed, so that no name can collide with another split. */
static size_t dcache_key(const char *const v[6], char *key, size_t n)
{
    size_t len = 0;
    for (int i = 0; i < 6 && len < n; i++)
        len += (size_t)snprintf(key + len, n - len, "%zu:%s", strlen(v[i]), v[i]);
    return len;
}

static struct dim_entry *dcache_slot(struct fair_ledger *l, const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    size_t i = (size_t)h & (DCACHE_SLOTS - 1);
    while (l->dcache[i].key && strcmp(l->dcache[i].key, key) != 0)
        i = (i + 1) & (DCACHE_SLOTS - 1);
    return &l->dcache[i];
}

static int dim_id(struct fair_ledger *l, struct stmts *s, const char *const v[6], int64_t *id,
                  struct fair_error *err)
{
    char key[DCACHE_KEY_MAX];
    size_t klen = dcache_key(v, key, sizeof(key));
    struct dim_entry *slot = NULL;
    if (!l->dcache)
        l->dcache = fair_calloc(DCACHE_SLOTS, sizeof(*l->dcache)); /* NULL: no cache */
    if (l->dcache && klen < sizeof(key)) {
        slot = dcache_slot(l, key, klen);
        if (slot->key) {
            *id = slot->id;
            return 0;
        }
    }
    for (int i = 0; i < 6; i++) {
        sqlite3_bind_text(s->dim_ins, i + 1, v[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(s->dim_get, i + 1, v[i], -1, SQLITE_STATIC);
    }
    int rc = step_done(l, s->dim_ins, "insert dimension", err);
    if (rc)
        return rc;
    int src = sqlite3_step(s->dim_get);
    if (src == SQLITE_ROW)
        *id = sqlite3_column_int64(s->dim_get, 0);
    sqlite3_reset(s->dim_get);
    sqlite3_clear_bindings(s->dim_get);
    if (src != SQLITE_ROW)
        return fair_ledger_sql_error(l, src == SQLITE_DONE ? SQLITE_INTERNAL : src,
                                     "read dimension", err);
    if (slot && l->ndcache < DCACHE_SLOTS / 2 && (slot->key = fair_strdup(key)) != NULL) {
        slot->id = *id;
        l->ndcache++;
    }
    return 0;
}

static int meta_set(struct fair_ledger *l, struct stmts *s, const char *key, int64_t v, int max,
                    struct fair_error *err)
{
    sqlite3_stmt *st = max ? s->meta_max : s->meta_set;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v);
    return step_done(l, st, "write meta", err);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int do_open(struct fair_ledger *l, struct stmts *s,
                   const struct fair_ledger_interval_info *in, struct fair_error *err)
{
    const char *v[6] = {in->namespace_, in->queue,           nz(in->project),
                        nz(in->team),   nz(in->cost_center), nz(in->gpu_model)};
    int64_t dim = 0;
    int rc = dim_id(l, s, v, &dim, err);
    if (rc)
        return rc;
    sqlite3_bind_text(s->open, 1, in->uid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s->open, 2, dim);
    sqlite3_bind_text(s->open, 3, in->pod, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->open, 4, nz(in->node), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s->open, 5, in->gpu_milli);
    sqlite3_bind_int64(s->open, 6, in->inquota_milli);
    sqlite3_bind_int64(s->open, 7, in->start_ms);
    sqlite3_bind_int(s->open, 8, in->non_preemptible ? 0 : 1);
    sqlite3_bind_int64(s->open, 9, (int64_t)in->devices);
    sqlite3_bind_text(s->open, 10, nz(in->gang), -1, SQLITE_STATIC);
    sqlite3_bind_int(s->open, 11, in->gang_size);
    sqlite3_bind_text(s->open, 12, nz(in->creator), -1, SQLITE_STATIC);
    sqlite3_bind_text(s->open, 13, nz(in->lineage), -1, SQLITE_STATIC);
    return step_done(l, s->open, "open interval", err);
}

/* Closes the open interval of uid (if any) and adds it to the daily
 * rollups. *closed = 1 when one was closed. end < 0 means "at
 * max(start, -end - 1)" (used by reconcile: the heartbeat). */
static int do_close(struct fair_ledger *l, struct stmts *s, const char *uid, int64_t end,
                    int reason, int *closed, struct fair_error *err)
{
    int rc = 0;
    if (closed)
        *closed = 0;
    sqlite3_bind_text(s->find, 1, uid, -1, SQLITE_STATIC);
    int src = sqlite3_step(s->find);
    if (src != SQLITE_ROW) {
        sqlite3_reset(s->find);
        sqlite3_clear_bindings(s->find);
        if (src == SQLITE_DONE)
            return 0; /* not open: a duplicate or unknown close */
        return fair_ledger_sql_error(l, src, "find interval", err);
    }
    int64_t id = sqlite3_column_int64(s->find, 0);
    int64_t dim = sqlite3_column_int64(s->find, 1);
    int64_t milli = sqlite3_column_int64(s->find, 2);
    int64_t inq = sqlite3_column_int64(s->find, 3);
    int64_t start = sqlite3_column_int64(s->find, 4);
    sqlite3_reset(s->find);
    sqlite3_clear_bindings(s->find);
    if (end < start)
        end = start;
    sqlite3_bind_int64(s->close, 1, end);
    sqlite3_bind_int(s->close, 2, reason);
    sqlite3_bind_int64(s->close, 3, id);
    rc = step_done(l, s->close, "close interval", err);
    if (rc)
        return rc;
    /* Rollups: one row per UTC day the interval overlaps. */
    if (end > start) {
        int64_t d0 = floor_div(start, FAIR_LEDGER_DAY_MS);
        int64_t d1 = floor_div(end - 1, FAIR_LEDGER_DAY_MS);
        for (int64_t d = d0; d <= d1; d++) {
            int64_t a = d * FAIR_LEDGER_DAY_MS, b = a + FAIR_LEDGER_DAY_MS;
            int64_t ov = (end < b ? end : b) - (start > a ? start : a);
            sqlite3_bind_int64(s->iday, 1, d);
            sqlite3_bind_int64(s->iday, 2, dim);
            sqlite3_bind_int64(s->iday, 3, milli * ov);
            sqlite3_bind_int64(s->iday, 4, inq * ov);
            sqlite3_bind_int64(s->iday, 5, reason == FAIR_LEDGER_PREEMPTED ? milli * ov : 0);
            sqlite3_bind_int64(s->iday, 6, d == d0 ? 1 : 0);
            sqlite3_bind_int64(s->iday, 7, d == d0 ? 0 : 1);
            rc = step_done(l, s->iday, "write daily rollup", err);
            if (rc)
                return rc;
        }
        if (end - start > l->tx_maxlen)
            l->tx_maxlen = end - start; /* written once, before the commit */
    }
    if (closed)
        *closed = 1;
    return 0;
}

static int meta_read(struct fair_ledger *l, struct stmts *s, const char *key, int64_t *v,
                     int *found, struct fair_error *err)
{
    sqlite3_bind_text(s->meta_get, 1, key, -1, SQLITE_STATIC);
    int src = sqlite3_step(s->meta_get);
    *found = src == SQLITE_ROW;
    *v = *found ? sqlite3_column_int64(s->meta_get, 0) : 0;
    sqlite3_reset(s->meta_get);
    sqlite3_clear_bindings(s->meta_get);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return fair_ledger_sql_error(l, src, "read meta", err);
    return 0;
}

static int sday_add(struct fair_ledger *l, struct stmts *s, int64_t day, int64_t dim,
                    const struct fair_ledger_sample_row *r, int64_t ms, struct fair_error *err)
{
    sqlite3_bind_int64(s->sday, 1, day);
    sqlite3_bind_int64(s->sday, 2, dim);
    sqlite3_bind_int64(s->sday, 3, r->allocated * ms);
    sqlite3_bind_int64(s->sday, 4, r->guaranteed * ms);
    sqlite3_bind_int64(s->sday, 5, r->in_quota * ms);
    sqlite3_bind_int64(s->sday, 6, r->borrowed * ms);
    sqlite3_bind_int64(s->sday, 7, r->lent * ms);
    sqlite3_bind_int64(s->sday, 8, r->pending * ms);
    sqlite3_bind_int64(s->sday, 9, r->fair_share * ms);
    sqlite3_bind_int64(s->sday, 10, ms);
    return step_done(l, s->sday, "write sample rollup", err);
}

static int do_sample(struct fair_ledger *l, struct stmts *s, const struct sample_op *so,
                     struct fair_error *err)
{
    int64_t last = 0;
    int found = 0;
    int rc = meta_read(l, s, "last_sample_ms", &last, &found, err);
    if (rc)
        return rc;
    int64_t dur = l->sample_period_ms;
    if (found) {
        if (so->now_ms <= last)
            return 0; /* a late or duplicate sample: it would count twice */
        if (so->now_ms - last < dur)
            dur = so->now_ms - last;
    }
    int64_t t0 = so->now_ms - dur;
    int64_t d0 = floor_div(t0, FAIR_LEDGER_DAY_MS),
            d1 = floor_div(so->now_ms - 1, FAIR_LEDGER_DAY_MS);
    for (size_t i = 0; i < so->n; i++) {
        const struct fair_ledger_sample_row *r = &so->rows[i];
        const char *v[6] = {"", r->queue, r->project, r->team, "", ""};
        int64_t dim = 0;
        rc = dim_id(l, s, v, &dim, err);
        if (rc)
            return rc;
        int64_t vals[10] = {so->now_ms,    dur,        dim,         r->allocated, r->guaranteed,
                            r->fair_share, r->pending, r->in_quota, r->borrowed,  r->lent};
        for (int k = 0; k < 10; k++)
            sqlite3_bind_int64(s->sample, k + 1, vals[k]);
        rc = step_done(l, s->sample, "write sample", err);
        if (rc)
            return rc;
        for (int64_t d = d0; d <= d1; d++) {
            int64_t a = d * FAIR_LEDGER_DAY_MS, b = a + FAIR_LEDGER_DAY_MS;
            int64_t ov = (so->now_ms < b ? so->now_ms : b) - (t0 > a ? t0 : a);
            rc = sday_add(l, s, d, dim, r, ov, err);
            if (rc)
                return rc;
        }
    }
    if ((rc = meta_set(l, s, "last_sample_ms", so->now_ms, 0, err)) ||
        (rc = meta_set(l, s, "max_sample_dur_ms", dur, 1, err)) ||
        (rc = meta_set(l, s, "heartbeat_ms", so->now_ms, 1, err)))
        return rc;
    return 0;
}

static int begin(struct fair_ledger *l, struct fair_error *err)
{
    int src = sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (src != SQLITE_OK)
        return fair_ledger_sql_error(l, src, "begin transaction", err);
    return 0;
}

static int commit(struct fair_ledger *l, struct fair_error *err)
{
    int src = sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
    if (src != SQLITE_OK) {
        int rc = fair_ledger_sql_error(l, src, "commit", err);
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return 0;
}

/* The retry state and its log lines (see "the flush retry" in ledger.h). */
static void note_flush(struct fair_ledger *l, int rc, const struct fair_error *err)
{
    int64_t now = mono_ms();
    if (!rc) {
        if (l->st.fail_streak)
            FAIR_INFO("ledger",
                      "msg=\"flush committed again\" path=%s failed_attempts=%" PRIu64
                      " failing_ms=%" PRId64 " dropped=%" PRIu64,
                      l->path, l->st.fail_streak, now - l->fail_since_ms, l->dropped_streak);
        l->st.fail_streak = 0;
        l->dropped_streak = 0;
        return;
    }
    l->st.flush_errors++;
    if (l->st.fail_streak++ == 0) {
        l->fail_since_ms = now;
        l->fail_logged_ms = now;
        FAIR_WARN("ledger",
                  "msg=\"flush failed; records kept and retried with backoff\" queued=%zu "
                  "err=\"%s\"",
                  l->count, err ? err->msg : "");
    } else if (now - l->fail_logged_ms >= FAIL_LOG_EVERY_MS) {
        l->fail_logged_ms = now;
        FAIR_WARN("ledger",
                  "msg=\"flush still failing; records kept\" queued=%zu failed_attempts=%" PRIu64
                  " failing_ms=%" PRId64 " err=\"%s\"",
                  l->count, l->st.fail_streak, now - l->fail_since_ms, err ? err->msg : "");
    } else {
        FAIR_DEBUG("ledger", "msg=\"flush failed\" failed_attempts=%" PRIu64 " err=\"%s\"",
                   l->st.fail_streak, err ? err->msg : "");
    }
}

static int refresh_heartbeat(struct fair_ledger *l, struct fair_error *err)
{
    return fair_ledger_meta_get(l, "heartbeat_ms", &l->st.heartbeat_ms, err);
}

int fair_ledger_flush(struct fair_ledger *l, struct fair_error *err)
{
    struct stmts s;
    int rc = 0, in_tx = 0;
    if (!l->count)
        return 0;
    memset(&s, 0, sizeof(s));
    rc = begin(l, err);
    if (rc)
        goto out;
    in_tx = 1;
    rc = stmts_prepare(l, &s, err);
    if (rc)
        goto out;
    for (size_t i = 0; i < l->count && !rc; i++) {
        struct op *op = &l->ops[(l->head + i) % l->cap];
        switch (op->kind) {
        case OP_OPEN:
            rc = do_open(l, &s, &op->info, err);
            break;
        case OP_CLOSE:
            rc = do_close(l, &s, op->info.uid, op->end_ms, op->reason, NULL, err);
            break;
        case OP_SAMPLE:
            rc = do_sample(l, &s, &op->sample, err);
            break;
        }
    }
    if (!rc && l->tx_maxlen)
        rc = meta_set(l, &s, "max_closed_len_ms", l->tx_maxlen, 1, err);
    if (rc)
        goto out;
    /* "batches" counts committed flushes (the crash test reads it). */
    sqlite3_stmt *inc = NULL;
    rc = prepare(l,
                 "INSERT INTO meta(key, value) VALUES('batches', 1) ON CONFLICT(key) DO "
                 "UPDATE SET value=value+1",
                 &inc, err);
    if (rc)
        goto out;
    rc = step_done(l, inc, "count batch", err);
    sqlite3_finalize(inc);
    if (rc)
        goto out;
    stmts_free(&s);
    rc = commit(l, err);
    in_tx = 0;
    if (rc)
        goto out;
    l->st.flushed += l->count;
    l->st.flushes++;
    while (l->count) {
        op_release(&l->ops[l->head]);
        l->head = (l->head + 1) % l->cap;
        l->count--;
    }
    rc = refresh_heartbeat(l, err);
out:
    stmts_free(&s);
    if (in_tx)
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    l->tx_maxlen = 0;
    if (rc)
        dcache_clear(l); /* it may hold ids of rows that were rolled back */
    note_flush(l, rc, err);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int fair_ledger_open_intervals(struct fair_ledger *l,
                               int (*cb)(void *ctx, const struct fair_ledger_interval_info *in),
                               void *ctx, struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(l,
                     "SELECT i.uid, d.namespace, i.pod, d.queue, d.project, d.team, d.cost_center,"
                     " i.node, d.gpu_model, i.gpu_milli, i.inquota_milli, i.start_ms,"
                     " i.preemptible, i.devices, i.gang, i.gang_size, i.creator"
                     " FROM intervals i JOIN dims d ON d.id = i.dim_id WHERE i.end_ms IS NULL",
                     &st, err);
    if (rc)
        return rc;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        struct fair_ledger_interval_info in = {
            .uid = (const char *)sqlite3_column_text(st, 0),
            .namespace_ = (const char *)sqlite3_column_text(st, 1),
            .pod = (const char *)sqlite3_column_text(st, 2),
            .queue = (const char *)sqlite3_column_text(st, 3),
            .project = (const char *)sqlite3_column_text(st, 4),
            .team = (const char *)sqlite3_column_text(st, 5),
            .cost_center = (const char *)sqlite3_column_text(st, 6),
            .node = (const char *)sqlite3_column_text(st, 7),
            .gpu_model = (const char *)sqlite3_column_text(st, 8),
            .gpu_milli = sqlite3_column_int64(st, 9),
            .inquota_milli = sqlite3_column_int64(st, 10),
            .start_ms = sqlite3_column_int64(st, 11),
            .non_preemptible = sqlite3_column_int(st, 12) == 0,
            .devices = (uint64_t)sqlite3_column_int64(st, 13),
            .gang = (const char *)sqlite3_column_text(st, 14),
            .gang_size = sqlite3_column_int(st, 15),
            .creator = (const char *)sqlite3_column_text(st, 16),
        };
        if (!in.uid || !in.queue)
            continue;
        if ((rc = cb(ctx, &in)))
            break;
    }
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = fair_error_set(err, FAIR_EIO, "ledger %s: reading open intervals: %s", l->path,
                            sqlite3_errmsg(l->db));
    sqlite3_finalize(st);
    return rc;
}

int fair_ledger_preemptions(struct fair_ledger *l,
                            int (*cb)(void *ctx, const char *lineage, int64_t count), void *ctx,
                            struct fair_error *err)
{
    /* schema_v5's partial index names the value (3) in its WHERE; SQLite
     * 3.40 uses it for the bound value too (EXPLAIN QUERY PLAN). */
    _Static_assert(FAIR_LEDGER_PREEMPTED == 3, "schema_v5's index names reason 3");
    sqlite3_stmt *st = NULL;
    int rc = prepare(l,
                     "SELECT lineage, count(*) FROM intervals WHERE reason = ? AND lineage <> ''"
                     " GROUP BY lineage",
                     &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int(st, 1, FAIR_LEDGER_PREEMPTED);
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *lin = (const char *)sqlite3_column_text(st, 0);
        if (lin && (rc = cb(ctx, lin, sqlite3_column_int64(st, 1))))
            break;
    }
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = fair_error_set(err, FAIR_EIO, "ledger %s: counting preempted intervals: %s", l->path,
                            sqlite3_errmsg(l->db));
    sqlite3_finalize(st);
    return rc;
}

int fair_ledger_reconcile(struct fair_ledger *l, int64_t now_ms,
                          const struct fair_ledger_interval_info *live, size_t n, size_t *closed,
                          size_t *opened, struct fair_error *err)
{
    struct stmts s;
    const char **uids = NULL;
    char **gone = NULL;
    size_t ngone = 0, capgone = 0, nclosed = 0, nopened = 0;
    sqlite3_stmt *q = NULL;
    int rc = 0, in_tx = 0;
    memset(&s, 0, sizeof(s));
    if (l->readonly)
        return fair_error_set(err, FAIR_EINVAL, "ledger %s: opened read-only", l->path);
    for (size_t i = 0; i < n; i++) {
        rc = check_info(&live[i], err);
        if (rc)
            return rc;
    }
    rc = fair_ledger_flush(l, err);
    if (rc)
        return rc;
    uids = fair_calloc(n ? n : 1, sizeof(*uids));
    if (!uids) {
        rc = fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        uids[i] = live[i].uid;
    qsort(uids, n, sizeof(*uids), cmp_str);
    rc = begin(l, err);
    if (rc)
        goto out;
    in_tx = 1;
    rc = stmts_prepare(l, &s, err);
    if (rc)
        goto out;
    int64_t hb = 0;
    int found = 0;
    rc = meta_read(l, &s, "heartbeat_ms", &hb, &found, err);
    if (rc)
        goto out;
    if (hb > now_ms)
        hb = now_ms;
    rc = prepare(l, "SELECT uid FROM intervals WHERE end_ms IS NULL", &q, err);
    if (rc)
        goto out;
    int src;
    while ((src = sqlite3_step(q)) == SQLITE_ROW) {
        const char *u = (const char *)sqlite3_column_text(q, 0);
        if (n && bsearch(&u, uids, n, sizeof(*uids), cmp_str))
            continue;
        if (fair_grow((void **)&gone, &capgone, ngone + 1, sizeof(*gone)) ||
            !(gone[ngone] = fair_strdup(u))) {
            rc = fair_error_set(err, FAIR_ENOMEM, "ledger: out of memory");
            goto out;
        }
        ngone++;
    }
    if (src != SQLITE_DONE) {
        rc = fair_ledger_sql_error(l, src, "list open intervals", err);
        goto out;
    }
    sqlite3_finalize(q);
    q = NULL;
    for (size_t i = 0; i < ngone; i++) {
        int c = 0;
        rc = do_close(l, &s, gone[i], hb, FAIR_LEDGER_UNKNOWN, &c, err);
        if (rc)
            goto out;
        nclosed += (size_t)c;
    }
    for (size_t i = 0; i < n; i++) {
        rc = do_open(l, &s, &live[i], err);
        if (rc)
            goto out;
        /* sqlite3_changes() reflects the last statement: the interval insert */
        if (sqlite3_changes(l->db) > 0)
            nopened++;
    }
    rc = meta_set(l, &s, "heartbeat_ms", now_ms, 1, err);
    if (!rc && l->tx_maxlen)
        rc = meta_set(l, &s, "max_closed_len_ms", l->tx_maxlen, 1, err);
    if (rc)
        goto out;
    stmts_free(&s);
    rc = commit(l, err);
    in_tx = 0;
    if (rc)
        goto out;
    rc = refresh_heartbeat(l, err);
    FAIR_INFO("ledger", "msg=\"reconciled\" live=%zu closed=%zu opened=%zu heartbeat_ms=%" PRId64,
              n, nclosed, nopened, hb);
out:
    sqlite3_finalize(q);
    stmts_free(&s);
    if (in_tx)
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    l->tx_maxlen = 0;
    if (rc)
        dcache_clear(l);
    if (rc != FAIR_ENOMEM)
        note_flush(l, rc, err); /* a write like a flush: one retry streak */
    for (size_t i = 0; i < ngone; i++)
        fair_free(gone[i]);
    fair_free(gone);
    fair_free(uids);
    if (!rc) {
        if (closed)
            *closed = nclosed;
        if (opened)
            *opened = nopened;
    }
    return rc;
}

static int delete_chunked(struct fair_ledger *l, const char *sql, int64_t cutoff, int64_t *total,
                          struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(l, sql, &st, err);
    if (rc)
        return rc;
    for (;;) {
        rc = begin(l, err);
        if (rc)
            break;
        sqlite3_bind_int64(st, 1, cutoff);
        rc = step_done(l, st, "prune", err);
        int changed = sqlite3_changes(l->db);
        if (rc) {
            sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
            break;
        }
        rc = commit(l, err);
        if (rc)
            break;
        *total += changed;
        if (changed == 0)
            break;
    }
    sqlite3_finalize(st);
    return rc;
}

int fair_ledger_prune(struct fair_ledger *l, int64_t now_ms, int64_t *deleted,
                      struct fair_error *err)
{
    int64_t total = 0;
    int rc = 0;
    if (l->readonly)
        return fair_error_set(err, FAIR_EINVAL, "ledger %s: opened read-only", l->path);
    rc = fair_ledger_flush(l, err);
    if (rc)
        return rc;
    int64_t cut = floor_div(now_ms - l->retention_ms, FAIR_LEDGER_DAY_MS) * FAIR_LEDGER_DAY_MS;
    int64_t scut =
        floor_div(now_ms - l->sample_retention_ms, FAIR_LEDGER_DAY_MS) * FAIR_LEDGER_DAY_MS;
    /* Closed intervals that ended by the cut: their every day is in the
     * rollups, and no range starting at or after the cut overlaps them. */
    rc = delete_chunked(l,
                        "DELETE FROM intervals WHERE id IN (SELECT id FROM intervals WHERE"
                        " start_ms < ?1 AND end_ms IS NOT NULL AND end_ms <= ?1 LIMIT 20000)",
                        cut, &total, err);
    if (rc)
        goto out;
    /* A sample covers [t - dur, t): it lies before the cut when t <= cut. */
    rc = delete_chunked(l,
                        "DELETE FROM samples WHERE id IN (SELECT id FROM samples WHERE"
                        " t_ms <= ?1 LIMIT 20000)",
                        scut, &total, err);
    if (rc)
        goto out;
    char sql[200];
    snprintf(sql, sizeof(sql),
             "INSERT INTO meta(key, value) VALUES('pruned_before_ms', %" PRId64 "),"
             " ('samples_pruned_before_ms', %" PRId64 ") ON CONFLICT(key) DO UPDATE SET"
             " value=max(value, excluded.value)",
             cut, scut);
    rc = exec(l, sql, err);
    if (rc)
        goto out;
    FAIR_INFO("ledger",
              "msg=\"pruned\" before_ms=%" PRId64 " samples_before_ms=%" PRId64 " rows=%" PRId64,
              cut, scut, total);
out:
    if (deleted)
        *deleted = total;
    return rc;
}

int fair_ledger_backup(struct fair_ledger *l, const char *dest, struct fair_error *err)
{
    sqlite3 *out = NULL;
    sqlite3_backup *b = NULL;
    char tmp[4096];
    int rc = 0;
    if (!dest || !*dest || strlen(dest) + 5 > sizeof(tmp))
        return fair_error_set(err, FAIR_EINVAL, "ledger backup: bad destination path");
    if (!l->readonly && (rc = fair_ledger_flush(l, err)))
        return rc;
    snprintf(tmp, sizeof(tmp), "%s.tmp", dest);
    unlink(tmp);
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600); /* like the ledger */
    if (fd >= 0)
        close(fd);
    int src = sqlite3_open_v2(tmp, &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (src != SQLITE_OK) {
        rc = fair_error_set(err, FAIR_EIO, "ledger backup: cannot create %s: %s", tmp,
                            out ? sqlite3_errmsg(out) : sqlite3_errstr(src));
        goto out;
    }
    b = sqlite3_backup_init(out, "main", l->db, "main");
    if (!b) {
        rc = fair_error_set(err, FAIR_EDB, "ledger backup %s: %s", dest, sqlite3_errmsg(out));
        goto out;
    }
    /* All pages in one step: one consistent snapshot of the source. */
    src = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    b = NULL;
    if (src != SQLITE_DONE) {
        rc = fair_error_set(err, src == SQLITE_FULL ? FAIR_EIO : FAIR_EDB, "ledger backup %s: %s",
                            dest, sqlite3_errstr(src));
        goto out;
    }
    src = sqlite3_close(out);
    out = NULL;
    if (src != SQLITE_OK) {
        rc =
            fair_error_set(err, FAIR_EIO, "ledger backup %s: close: %s", dest, sqlite3_errstr(src));
        goto out;
    }
    if (rename(tmp, dest) != 0)
        rc = fair_error_set(err, FAIR_EIO, "ledger backup: rename %s to %s failed", tmp, dest);
out:
    if (out)
        sqlite3_close(out);
    if (rc)
        unlink(tmp);
    return rc;
}

static int scalar(struct fair_ledger *l, const char *sql, int64_t *v, struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(l, sql, &st, err);
    if (rc)
        return rc;
    int src = sqlite3_step(st);
    *v = src == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        rc = fair_ledger_sql_error(l, src, "check", err);
    sqlite3_finalize(st);
    return rc;
}

int fair_ledger_check(struct fair_ledger *l, struct fair_ledger_check *out, struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    memset(out, 0, sizeof(*out));
    int rc = prepare(l, "PRAGMA integrity_check(10)", &st, err);
    if (rc)
        return rc;
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 0);
        out->ok = m && strcmp(m, "ok") == 0;
        snprintf(out->detail, sizeof(out->detail), "%s", m ? m : "");
    }
    sqlite3_finalize(st);
    if (src != SQLITE_ROW)
        return fair_ledger_sql_error(l, src, "integrity check", err);
    if ((rc = scalar(l, "PRAGMA user_version", &v, err)))
        return rc;
    out->schema_version = (int)v;
    if ((rc = scalar(l, "SELECT count(*) FROM intervals", &out->intervals, err)) ||
        (rc = scalar(l, "SELECT count(*) FROM intervals WHERE end_ms IS NULL", &out->open_intervals,
                     err)) ||
        (rc = scalar(l, "SELECT count(*) FROM samples", &out->samples, err)) ||
        (rc = scalar(l, "SELECT count(DISTINCT day) FROM interval_day", &out->rollup_days, err)) ||
        (rc = scalar(l, "SELECT min(start_ms) FROM intervals", &out->first_start_ms, err)) ||
        (rc = scalar(l, "SELECT max(end_ms) FROM intervals", &out->last_end_ms, err)) ||
        (rc = fair_ledger_meta_get(l, "heartbeat_ms", &out->heartbeat_ms, err)) ||
        (rc = fair_ledger_meta_get(l, "pruned_before_ms", &out->pruned_before_ms, err)))
        return rc;
    return 0;
}
