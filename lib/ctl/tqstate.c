/* The controller's time-based quota state: windows, budgets and decayed
 * usage per cycle, from the objects and the ledger (see tqstate.h). */
#include "ctl/tqstate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "ctl/index.h"
#include "ctl/timequota.h"
#include "ledger/report.h"
#include "ledger/usage.h"

#define COMP "timequota"
#define MAX_ZONES 256
#define HORIZON_MS (8 * 86400000LL)

struct zone_ent {
    char name[FAIR_TZ_NAME_MAX + 1];
    struct fair_tz *z; /* NULL: does not load */
};

/* Ledger figures of one project, and its announced alert; or of one
 * queue (queue set, name "project/queue", decayed usage only). */
struct pstate {
    char *name;
    const char *queue; /* points into name; NULL: a project */
    int64_t half_life_ms;
    int64_t from_ms, to_ms; /* the budget period read; to <= from: none */
    double decayed_mms;
    int64_t used_mms;
    int announced;          /* 0, 80, 100 */
    int64_t announced_from; /* the period it was announced in */
};

struct alert {
    size_t project;
    int level;
    char msg[320];
};

struct fair_ctl_tq {
    struct fair_tz *tz;
    int64_t default_hl, refresh_ms;
    struct zone_ent *zones;
    size_t nzones;
    struct pstate *ps;
    size_t nps;
    struct fair_ctl_index ps_by_name;
    int64_t next_refresh_mono;
    bool read_once;
    bool queue_rows; /* ps holds queue entries */
    uint64_t reads, read_errors, alerts80, alerts100;
    /* This cycle, per input project / queue. */
    size_t np, nq;
    struct fair_kquota *pquota, *qquota;
    const char **pinvalid, **qinvalid, **phold, **pnote;
    char (*pbad)[200];
    char (*qbad)[200];
    char (*pmsg)[320];
    int64_t *pusage, *qusage;
    struct fair_ctl_status_time *pst, *qst;
    bool *pst_set, *qst_set;
    int *plevel;
    int64_t *pbudget;
    char (*pname)[FAIR_LEDGER_NAME_MAX + 1]; /* copies, for the metrics */
    struct alert *alerts;
    size_t nalerts;
};

int fair_ctl_tq_new(const struct fair_ctl_tq_options *o, struct fair_ctl_tq **out,
                    struct fair_error *err)
{
    *out = NULL;
    struct fair_ctl_tq *t = fair_calloc(1, sizeof *t);
    if (!t)
        return fair_error_set(err, FAIR_ENOMEM, "time-based quota: out of memory");
    int rc = fair_tz_load(o->time_zone ? o->time_zone : "UTC", &t->tz, err);
    if (rc) {
        fair_free(t);
        return rc;
    }
    t->default_hl = o->default_half_life_ms;
    t->refresh_ms = o->refresh_ms > 0 ? o->refresh_ms : 60000;
    fair_ctl_index_init(&t->ps_by_name);
    *out = t;
    return 0;
}

static void free_ps(struct pstate *ps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fair_free(ps[i].name);
    fair_free(ps);
}

static void free_cycle(struct fair_ctl_tq *t)
{
    fair_free(t->pquota);
    fair_free(t->qquota);
    fair_free(t->pinvalid);
    fair_free(t->qinvalid);
    fair_free(t->phold);
    fair_free(t->pnote);
    fair_free(t->pbad);
    fair_free(t->qbad);
    fair_free(t->pmsg);
    fair_free(t->pusage);
    fair_free(t->qusage);
    fair_free(t->pst);
    fair_free(t->qst);
    fair_free(t->pst_set);
    fair_free(t->qst_set);
    fair_free(t->plevel);
    fair_free(t->pbudget);
    fair_free(t->pname);
    t->pname = NULL;
    t->pquota = t->qquota = NULL;
    t->pinvalid = t->qinvalid = t->phold = t->pnote = NULL;
    t->pbad = t->qbad = NULL;
    t->pmsg = NULL;
    t->pusage = t->pbudget = t->qusage = NULL;
    t->pst = t->qst = NULL;
    t->pst_set = t->qst_set = NULL;
    t->plevel = NULL;
    t->np = t->nq = 0;
}

void fair_ctl_tq_free(struct fair_ctl_tq *t)
{
    if (!t)
        return;
    free_cycle(t);
    for (size_t i = 0; i < t->nzones; i++)
        fair_tz_free(t->zones[i].z);
    fair_free(t->zones);
    fair_ctl_index_release(&t->ps_by_name);
    free_ps(t->ps, t->nps);
    fair_free(t->alerts);
    fair_tz_free(t->tz);
    fair_free(t);
}

/* The zone called name ("" : the controller's), loaded once; NULL when it
 * does not load (or the cache is full). */
static const struct fair_tz *zone_of(struct fair_ctl_tq *t, const char *name)
{
    if (!name || !*name)
        return t->tz;
    for (size_t i = 0; i < t->nzones; i++)
        if (!strcmp(t->zones[i].name, name))
            return t->zones[i].z;
    if (t->nzones >= MAX_ZONES)
        return NULL;
    if (!t->zones) {
        t->zones = fair_calloc(MAX_ZONES, sizeof *t->zones);
        if (!t->zones)
            return NULL;
    }
    struct zone_ent *e = &t->zones[t->nzones++];
    snprintf(e->name, sizeof e->name, "%s", name);
    struct fair_error err = {0};
    if (fair_tz_load(name, &e->z, &err))
        FAIR_WARN(COMP, "msg=\"time zone does not load\" zone=%s err=\"%s\"", name, err.msg);
    return e->z;
}

static const char *period_name(enum fair_kbudget_period p)
{
    return p == FAIR_KBUDGET_DAY ? "day" : p == FAIR_KBUDGET_WEEK ? "week" : "month";
}

static int64_t half_life_of(const struct fair_ctl_tq *t, const struct fair_kproject *k)
{
    if (k->time && k->time->usage_half_life_ms >= 0)
        return k->time->usage_half_life_ms;
    return t->default_hl;
}

/* Reads the ledger figures of every project that needs them, and the
 * decayed usage of the queues of those with a half-life. */
static int refresh(struct fair_ctl_tq *t, struct fair_ledger *l, int64_t now_ms,
                   const struct fair_kproject *const *kp, size_t np,
                   const struct fair_kqueue *const *kq, size_t nq)
{
    size_t n = 0;
    struct pstate *ps = fair_calloc(np + nq ? np + nq : 1, sizeof *ps);
    struct fair_ledger_usage *rows = fair_calloc(np + nq ? np + nq : 1, sizeof *rows);
    struct fair_ctl_index ix;
    fair_ctl_index_init(&ix);
    int rc = FAIR_ENOMEM;
    if (!ps || !rows)
        goto out;
    for (size_t i = 0; i < np; i++) {
        const struct fair_kproject *k = kp[i];
        int64_t hl = half_life_of(t, k);
        bool budget = k->time && k->time->budget_period != FAIR_KBUDGET_NONE;
        if (!k->meta.name || (hl <= 0 && !budget) || fair_ctl_index_get(&ix, k->meta.name) >= 0)
            continue;
        struct pstate *p = &ps[n];
        if (!(p->name = fair_strdup(k->meta.name)))
            goto out;
        p->half_life_ms = hl > 0 ? hl : 0;
        if (budget)
            fair_ctl_budget_period(k->time->budget_period, t->tz, now_ms, &p->from_ms, &p->to_ms);
        /* The announced alert carries over within its period; a process
         * that has announced none in it yet takes the level the Project's
         * status shows for it as announced (written by this or an earlier
         * process, or another replica while it led), so that a restart or
         * a change of leader does not send the same alert again. */
        int32_t old = fair_ctl_index_get(&t->ps_by_name, p->name);
        if (old >= 0 && t->ps[old].announced_from == p->from_ms) {
            p->announced = t->ps[old].announced;
            p->announced_from = t->ps[old].announced_from;
        } else if (budget && k->budget_from_seen_ms == p->from_ms) {
            p->announced = k->budget_level_seen;
            p->announced_from = p->from_ms;
        }
        if (old >= 0) { /* kept if the read fails */
            p->decayed_mms = t->ps[old].decayed_mms;
            p->used_mms = t->ps[old].from_ms == p->from_ms ? t->ps[old].used_mms : 0;
        }
        if ((rc = fair_ctl_index_put(&ix, p->name, (int32_t)n)))
            goto out;
        rows[n] = (struct fair_ledger_usage){.project = p->name,
                                             .half_life_ms = p->half_life_ms,
                                             .from_ms = p->from_ms,
                                             .to_ms = p->to_ms};
        n++;
    }
    /* Queues of projects with a half-life: their own pods' usage, the
     * project's half-life (docs/engine.md, "Decayed usage"). */
    size_t nprow = n;
    for (size_t i = 0; i < nq; i++) {
        const struct fair_kqueue *k = kq[i];
        if (!k->meta.name || !k->project)
            continue;
        int32_t pe = fair_ctl_index_get(&ix, k->project);
        if (pe < 0 || (size_t)pe >= nprow || ps[pe].half_life_ms <= 0)
            continue;
        char key[2 * FAIR_LEDGER_NAME_MAX + 2];
        if ((size_t)snprintf(key, sizeof key, "%s/%s", k->project, k->meta.name) >= sizeof key ||
            fair_ctl_index_get(&ix, key) >= 0)
            continue;
        struct pstate *p = &ps[n];
        if (!(p->name = fair_strdup(key)))
            goto out;
        p->queue = p->name + strlen(k->project) + 1;
        p->half_life_ms = ps[pe].half_life_ms;
        int32_t old = fair_ctl_index_get(&t->ps_by_name, p->name);
        if (old >= 0)
            p->decayed_mms = t->ps[old].decayed_mms; /* kept if the read fails */
        if ((rc = fair_ctl_index_put(&ix, p->name, (int32_t)n)))
            goto out;
        rows[n] = (struct fair_ledger_usage){
            .project = ps[pe].name, .queue = p->queue, .half_life_ms = p->half_life_ms};
        n++;
    }
    if (l && n) {
        struct fair_error err = {0};
        t->reads++;
        if (fair_ledger_usage_read(l, now_ms, rows, n, &err)) {
            t->read_errors++;
            FAIR_WARN(COMP, "msg=\"ledger usage read failed; the last figures hold\" err=\"%s\"",
                      err.msg);
        } else {
            for (size_t i = 0; i < n; i++) {
                ps[i].decayed_mms = rows[i].decayed_mms;
                ps[i].used_mms = rows[i].period_mms;
            }
            t->read_once = true;
        }
    }
    fair_ctl_index_release(&t->ps_by_name);
    free_ps(t->ps, t->nps);
    t->ps = ps;
    t->nps = n;
    t->queue_rows = n > nprow;
    t->ps_by_name = ix;
    ps = NULL;
    fair_ctl_index_init(&ix);
    rc = 0;
out:
    if (ps)
        free_ps(ps, n);
    fair_ctl_index_release(&ix);
    fair_free(rows);
    return rc;
}

static bool need_refresh(const struct fair_ctl_tq *t, int64_t now_ms, int64_t mono_ms,
                         const struct fair_kproject *const *kp, size_t np)
{
    if (mono_ms >= t->next_refresh_mono)
        return true;
    for (size_t i = 0; i < np; i++) {
        const struct fair_kproject *k = kp[i];
        bool budget = k->time && k->time->budget_period != FAIR_KBUDGET_NONE;
        if (!k->meta.name || (half_life_of(t, k) <= 0 && !budget))
            continue;
        int32_t e = fair_ctl_index_get(&t->ps_by_name, k->meta.name);
        if (e < 0)
            return true; /* a new project */
        const struct pstate *p = &t->ps[e];
        if (budget && (now_ms >= p->to_ms || now_ms < p->from_ms))
            return true; /* a new period */
    }
    return false;
}

#define ALLOC(field, n) ((t->field = fair_calloc((n) ? (n) : 1, sizeof *t->field)) != NULL)

/* Windows of one object: the active one applied to spec into *eff, the
 * status, and a problem when a zone does not load. */
static void windows(struct fair_ctl_tq *t, const struct fair_ktime *tm,
                    const struct fair_kquota *spec, int64_t now_ms, struct fair_kquota *eff,
                    struct fair_ctl_status_time *st, bool *st_set, char *bad, size_t badn,
                    const char **bad_out)
{
    *eff = *spec;
    if (!tm || !tm->nwindows)
        return;
    const struct fair_tz *zs[FAIR_KWINDOW_MAX];
    for (size_t w = 0; w < tm->nwindows && w < FAIR_KWINDOW_MAX; w++) {
        zs[w] = zone_of(t, tm->windows[w].time_zone);
        if (!zs[w] && !*bad_out) {
            snprintf(bad, badn,
                     "spec.schedule[%zu].timeZone: unknown time zone \"%s\" (want an IANA "
                     "name such as Europe/Berlin)",
                     w, tm->windows[w].time_zone);
            *bad_out = bad;
        }
    }
    size_t n = tm->nwindows < FAIR_KWINDOW_MAX ? tm->nwindows : FAIR_KWINDOW_MAX;
    int a = fair_ctl_window_active(tm->windows, n, zs, now_ms);
    fair_ctl_window_apply(spec, a >= 0 ? &tm->windows[a] : NULL, eff);
    st->has_schedule = true;
    st->window = a >= 0 ? tm->windows[a].name : NULL;
    st->next_switch_ms = fair_ctl_window_next(tm->windows, n, zs, now_ms, HORIZON_MS);
    *st_set = true;
}

int fair_ctl_tq_prepare(struct fair_ctl_tq *t, struct fair_ledger *ledger, int64_t now_ms,
                        int64_t mono_ms, struct fair_ctl_snapshot_input *in)
{
    free_cycle(t);
    size_t np = in->nprojects, nq = in->nqueues;
    if (!ALLOC(pquota, np) || !ALLOC(qquota, nq) || !ALLOC(pinvalid, np) || !ALLOC(qinvalid, nq) ||
        !ALLOC(phold, np) || !ALLOC(pnote, np) || !ALLOC(pbad, np) || !ALLOC(qbad, nq) ||
        !ALLOC(pmsg, np) || !ALLOC(pusage, np) || !ALLOC(qusage, nq) || !ALLOC(pst, np) ||
        !ALLOC(qst, nq) || !ALLOC(pst_set, np) || !ALLOC(qst_set, nq) || !ALLOC(plevel, np) ||
        !ALLOC(pbudget, np) || !ALLOC(pname, np)) {
        free_cycle(t);
        return FAIR_ENOMEM;
    }
    t->np = np;
    t->nq = nq;
    for (size_t i = 0; i < np; i++)
        snprintf(t->pname[i], sizeof t->pname[i], "%s",
                 in->projects[i]->meta.name ? in->projects[i]->meta.name : "");
    if (need_refresh(t, now_ms, mono_ms, in->projects, np)) {
        int rc = refresh(t, ledger, now_ms, in->projects, np, in->queues, nq);
        if (rc) {
            free_cycle(t);
            return rc;
        }
        t->next_refresh_mono = mono_ms + t->refresh_ms;
    }
    bool any_usage = false, any_qusage = false;
    for (size_t i = 0; i < np; i++) {
        const struct fair_kproject *k = in->projects[i];
        const struct fair_ktime *tm = k->time;
        struct fair_ctl_status_time *st = &t->pst[i];
        windows(t, tm, &k->quota, now_ms, &t->pquota[i], st, &t->pst_set[i], t->pbad[i],
                sizeof t->pbad[i], &t->pinvalid[i]);
        int32_t e = k->meta.name ? fair_ctl_index_get(&t->ps_by_name, k->meta.name) : -1;
        struct pstate *p = e >= 0 ? &t->ps[e] : NULL;
        int64_t hl = half_life_of(t, k);
        if (hl > 0) {
            double u = p ? p->decayed_mms : 0;
            t->pusage[i] = u > 0 ? (u < 9e18 ? (int64_t)llround(u) : INT64_MAX) : 0;
            any_usage = any_usage || t->pusage[i] > 0;
            st->has_usage = ledger != NULL;
            st->usage_mms = t->pusage[i];
            st->half_life_ms = hl;
            t->pst_set[i] = t->pst_set[i] || st->has_usage;
        }
        if (!tm || tm->budget_period == FAIR_KBUDGET_NONE)
            continue;
        t->pst_set[i] = true;
        st->has_budget = true;
        st->period = period_name(tm->budget_period);
        fair_ctl_budget_period(tm->budget_period, t->tz, now_ms, &st->period_start_ms,
                               &st->period_end_ms);
        st->budget_mms = tm->budget_milli_hours * (FAIR_LEDGER_GPU_HOUR_MMS / 1000);
        t->pbudget[i] = st->budget_mms;
        st->budget_known = ledger != NULL && t->read_once && p;
        if (!st->budget_known)
            continue;
        st->used_mms = p->from_ms == st->period_start_ms ? p->used_mms : 0;
        int level = fair_ctl_budget_level(st->used_mms, st->budget_mms);
        t->plevel[i] = level;
        st->budget_state = level == 100 ? "Exhausted" : level == 80 ? "Warning" : "Ok";
        char used[40], budget[40], until[40];
        fair_gpu_hours_format(st->used_mms, used, sizeof used);
        fair_gpu_hours_format(st->budget_mms, budget, sizeof budget);
        fair_time_format_rfc3339(st->period_end_ms, until, (int)sizeof until);
        if (level == 100) {
            if (tm->budget_action == FAIR_KBUDGET_BLOCK) {
                snprintf(t->pmsg[i], sizeof t->pmsg[i],
                         "project %s spent its GPU-hour budget for this %s (%s of %s GPU-hours; "
                         "action block): no new pods start until %s",
                         k->meta.name, st->period, used, budget, until);
                t->phold[i] = t->pmsg[i];
            } else {
                /* overQuotaOnly: the guarantee stays, nothing borrowed. */
                for (int r = 0; r < FAIR_RES_COUNT; r++)
                    if (t->pquota[i].limit.v[r] > t->pquota[i].guaranteed.v[r])
                        t->pquota[i].limit.v[r] = t->pquota[i].guaranteed.v[r];
                snprintf(t->pmsg[i], sizeof t->pmsg[i],
                         "project %s spent its GPU-hour budget for this %s (%s of %s GPU-hours; "
                         "action overQuotaOnly): it runs within its guarantee only, borrowing "
                         "nothing, until %s",
                         k->meta.name, st->period, used, budget, until);
                t->pnote[i] = t->pmsg[i];
            }
        }
        /* Alerts: each level once per period. */
        if (p->announced_from != st->period_start_ms) {
            p->announced = 0;
            p->announced_from = st->period_start_ms;
        }
        if (level > p->announced) {
            struct alert *na = fair_realloc(t->alerts, (t->nalerts + 1) * sizeof *na);
            if (na) {
                t->alerts = na;
                struct alert *a = &na[t->nalerts++];
                a->project = i;
                a->level = level;
                snprintf(a->msg, sizeof a->msg,
                         "project %s used %s of its %s GPU-hour budget for this %s (%d%% or more); "
                         "%s",
                         k->meta.name, used, budget, st->period, level,
                         level < 100 ? "at 100% it is enforced"
                         : tm->budget_action == FAIR_KBUDGET_BLOCK
                             ? "no new pods start until the period ends"
                             : "it borrows nothing until the period ends");
                p->announced = level;
                if (level == 100)
                    t->alerts100++;
                else
                    t->alerts80++;
            }
        }
    }
    for (size_t i = 0; i < nq; i++) {
        const struct fair_kqueue *k = in->queues[i];
        windows(t, k->time, &k->quota, now_ms, &t->qquota[i], &t->qst[i], &t->qst_set[i],
                t->qbad[i], sizeof t->qbad[i], &t->qinvalid[i]);
        char key[2 * FAIR_LEDGER_NAME_MAX + 2];
        if (!t->queue_rows || !k->meta.name || !k->project ||
            (size_t)snprintf(key, sizeof key, "%s/%s", k->project, k->meta.name) >= sizeof key)
            continue;
        int32_t e = fair_ctl_index_get(&t->ps_by_name, key);
        if (e < 0 || !t->ps[e].queue)
            continue;
        double u = t->ps[e].decayed_mms;
        t->qusage[i] = u > 0 ? (u < 9e18 ? (int64_t)llround(u) : INT64_MAX) : 0;
        any_qusage = any_qusage || t->qusage[i] > 0;
    }
    in->project_quota = t->pquota;
    in->queue_quota = t->qquota;
    in->project_invalid = t->pinvalid;
    in->queue_invalid = t->qinvalid;
    in->project_usage = any_usage ? t->pusage : NULL;
    in->queue_usage = any_qusage ? t->qusage : NULL;
    in->project_hold = t->phold;
    in->project_note = t->pnote;
    return 0;
}

const struct fair_ctl_status_time *fair_ctl_tq_project_status(const struct fair_ctl_tq *t, size_t i)
{
    return i < t->np && t->pst_set[i] ? &t->pst[i] : NULL;
}

const struct fair_ctl_status_time *fair_ctl_tq_queue_status(const struct fair_ctl_tq *t, size_t i)
{
    return i < t->nq && t->qst_set[i] ? &t->qst[i] : NULL;
}

void fair_ctl_tq_alerts(struct fair_ctl_tq *t,
                        void (*cb)(void *ctx, size_t project, int level, const char *message),
                        void *ctx)
{
    for (size_t i = 0; i < t->nalerts; i++)
        cb(ctx, t->alerts[i].project, t->alerts[i].level, t->alerts[i].msg);
    t->nalerts = 0;
}

static int label_escape(struct fair_buf *b, const char *s)
{
    int rc = 0;
    for (; *s && !rc; s++) {
        if (*s == '\\' || *s == '"')
            rc = fair_buf_appendf(b, "\\%c", *s);
        else if (*s == '\n')
            rc = fair_buf_appends(b, "\\n");
        else
            rc = fair_buf_appendf(b, "%c", *s);
    }
    return rc;
}

static int gauge(struct fair_buf *b, const char *metric, const char *project, double v)
{
    int rc = fair_buf_appendf(b, "%s{project=\"", metric);
    if (!rc)
        rc = label_escape(b, project);
    if (!rc)
        rc = fair_buf_appendf(b, "\"} %.6g\n", v);
    return rc;
}

int fair_ctl_tq_metrics(const struct fair_ctl_tq *t, struct fair_buf *out)
{
    int rc = fair_buf_appendf(
        out, "# HELP fairshare_project_budget_gpu_hours GPU-hour budget of the current period.\n"
             "# TYPE fairshare_project_budget_gpu_hours gauge\n"
             "# HELP fairshare_project_budget_used_gpu_hours GPU-hours used in the current budget "
             "period (from the ledger).\n"
             "# TYPE fairshare_project_budget_used_gpu_hours gauge\n"
             "# HELP fairshare_project_budget_used_ratio Budget used, 1 = spent.\n"
             "# TYPE fairshare_project_budget_used_ratio gauge\n"
             "# HELP fairshare_project_budget_alert_level 0, 80 (warning) or 100 (spent).\n"
             "# TYPE fairshare_project_budget_alert_level gauge\n"
             "# HELP fairshare_project_usage_decayed_gpu_hours GPU usage decayed with the "
             "project's usageHalfLife.\n"
             "# TYPE fairshare_project_usage_decayed_gpu_hours gauge\n");
    for (size_t i = 0; i < t->np && !rc; i++) {
        const struct fair_ctl_status_time *st = t->pst_set[i] ? &t->pst[i] : NULL;
        const char *name = t->pname[i];
        if (!st || !*name)
            continue;
        if (st->has_budget && st->budget_known) {
            double g = (double)st->budget_mms / FAIR_LEDGER_GPU_HOUR_MMS;
            double u = (double)st->used_mms / FAIR_LEDGER_GPU_HOUR_MMS;
            rc = gauge(out, "fairshare_project_budget_gpu_hours", name, g);
            if (!rc)
                rc = gauge(out, "fairshare_project_budget_used_gpu_hours", name, u);
            if (!rc)
                rc = gauge(out, "fairshare_project_budget_used_ratio", name,
                           st->budget_mms > 0 ? u / g : 1);
            if (!rc)
                rc = gauge(out, "fairshare_project_budget_alert_level", name, t->plevel[i]);
        }
        if (!rc && st->has_usage)
            rc = gauge(out, "fairshare_project_usage_decayed_gpu_hours", name,
                       (double)st->usage_mms / FAIR_LEDGER_GPU_HOUR_MMS);
    }
    if (!rc)
        rc = fair_buf_appendf(
            out,
            "# HELP fairshare_project_budget_alerts_total Budget alerts sent (Events).\n"
            "# TYPE fairshare_project_budget_alerts_total counter\n"
            "fairshare_project_budget_alerts_total{level=\"80\"} %llu\n"
            "fairshare_project_budget_alerts_total{level=\"100\"} %llu\n"
            "# HELP fairshare_ledger_usage_reads_total Reads of usage and budgets from the "
            "ledger.\n"
            "# TYPE fairshare_ledger_usage_reads_total counter\n"
            "fairshare_ledger_usage_reads_total %llu\n"
            "# TYPE fairshare_ledger_usage_read_errors_total counter\n"
            "fairshare_ledger_usage_read_errors_total %llu\n",
            (unsigned long long)t->alerts80, (unsigned long long)t->alerts100,
            (unsigned long long)t->reads, (unsigned long long)t->read_errors);
    return rc;
}
