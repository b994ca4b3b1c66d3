/* spec.usageHalfLife, spec.budget and spec.schedule of Projects and Queues
 * into struct fair_ktime. Bad values become problems (the object's Invalid
 * condition), never failures; lists and strings are bounded. */
#include "kube/timequota.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/duration.h"
#include "kube/decode.h"

void fair_ktime_free(struct fair_ktime *t)
{
    if (!t)
        return;
    fair_free(t->windows);
    fair_free(t);
}

__attribute__((format(printf, 3, 4))) static void problem_add(char *out, size_t n, const char *fmt,
                                                              ...)
{
    size_t used = strlen(out);
    if (used + 3 >= n)
        return;
    if (used) {
        memcpy(out + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + used, n - used, fmt, ap);
    va_end(ap);
}

/* "HH:MM", 00:00 to 24:00 (24:00 only where allow_24). */
static int parse_hhmm(const char *s, bool allow_24, int16_t *out)
{
    if (!s || strlen(s) != 5 || s[2] != ':')
        return -1;
    for (int i = 0; i < 5; i++)
        if (i != 2 && (s[i] < '0' || s[i] > '9'))
            return -1;
    int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
    if (m > 59 || h > 24 || (h == 24 && (m || !allow_24)))
        return -1;
    *out = (int16_t)(h * 60 + m);
    return 0;
}

static const char *const day_names[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

/* A partial resource map: only the keys given are set (mask). */
static void res_partial(const json_t *m, const char *path, struct fair_resources *r, uint8_t *mask,
                        char *problem, size_t n)
{
    *mask = 0;
    if (!m || json_is_null(m))
        return;
    if (!json_is_object(m)) {
        problem_add(problem, n, "%s: want a map of gpu, cpu, memory", path);
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        int i;
        for (i = 0; i < FAIR_RES_COUNT; i++)
            if (!strcmp(k, fair_res_name((enum fair_res)i)))
                break;
        if (i == FAIR_RES_COUNT) {
            problem_add(problem, n, "%s.%.40s: unknown resource (want gpu, cpu or memory)", path,
                        k);
            continue;
        }
        char what[128];
        snprintf(what, sizeof what, "%s.%s", path, k);
        struct fair_error qe = {0};
        int64_t x;
        if (fair_kquantity_decode(v, i != FAIR_RES_MEM, &x, what, &qe)) {
            problem_add(problem, n, "%s", qe.msg);
            continue;
        }
        if (x < 0) {
            problem_add(problem, n, "%s: must not be negative", what);
            continue;
        }
        r->v[i] = x;
        *mask |= (uint8_t)(1u << i);
    }
}

static void decode_window(const json_t *w, size_t i, struct fair_kwindow *out, char *problem,
                          size_t n)
{
    char path[48];
    snprintf(path, sizeof path, "spec.schedule[%zu]", i);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "window-%zu", i);
    if (!json_is_object(w)) {
        problem_add(problem, n, "%s: want an object", path);
        return;
    }
    const json_t *v = json_object_get(w, "name");
    if (v && !json_is_null(v)) {
        const char *s = json_string_value(v);
        if (!s || !*s || strlen(s) > 63)
            problem_add(problem, n, "%s.name: want 1 to 63 characters", path);
        else
            snprintf(out->name, sizeof out->name, "%s", s);
    }
    v = json_object_get(w, "days");
    if (!v || json_is_null(v)) {
        out->days = 0x7f;
    } else if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 7) {
        problem_add(problem, n, "%s.days: want a list of 1 to 7 days (Mon, Tue, ... Sun)", path);
    } else {
        size_t j;
        const json_t *d;
        json_array_foreach(v, j, d)
        {
            const char *s = json_string_value(d);
            int k = 0;
            while (k < 7 && !(s && !strcmp(s, day_names[k])))
                k++;
            if (k == 7)
                problem_add(problem, n, "%s.days[%zu]: want Mon, Tue, Wed, Thu, Fri, Sat or Sun",
                            path, j);
            else
                out->days |= (uint8_t)(1u << k);
        }
    }
    const char *st = json_string_value(json_object_get(w, "start"));
    const char *en = json_string_value(json_object_get(w, "end"));
    bool ok = true;
    if (parse_hhmm(st, false, &out->start_min)) {
        problem_add(problem, n, "%s.start: want \"HH:MM\" from 00:00 to 23:59", path);
        ok = false;
    }
    if (parse_hhmm(en, true, &out->end_min) || out->end_min == 0) {
        if (en && !strcmp(en, "00:00"))
            out->end_min = 1440;
        else {
            problem_add(problem, n, "%s.end: want \"HH:MM\" from 00:01 to 24:00", path);
            ok = false;
        }
    }
    if (ok && out->start_min == out->end_min % 1440 && out->end_min != 1440)
        problem_add(problem, n, "%s: start and end are the same time", path);
    v = json_object_get(w, "timeZone");
    if (v && !json_is_null(v)) {
        const char *s = json_string_value(v);
        if (!s || !*s || strlen(s) > 64)
            problem_add(problem, n, "%s.timeZone: want an IANA name such as Europe/Berlin", path);
        else
            snprintf(out->time_zone, sizeof out->time_zone, "%s", s);
    }
    char sub[64];
    snprintf(sub, sizeof sub, "%s.guaranteed", path);
    res_partial(json_object_get(w, "guaranteed"), sub, &out->guaranteed, &out->g_set, problem, n);
    snprintf(sub, sizeof sub, "%s.limit", path);
    res_partial(json_object_get(w, "limit"), sub, &out->limit, &out->l_set, problem, n);
    v = json_object_get(w, "overQuotaWeight");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000)
            problem_add(problem, n, "%s.overQuotaWeight: want an integer from 1 to 1000000", path);
        else
            out->weight = json_integer_value(v);
    }
}

int fair_ktime_decode(const json_t *spec, bool project, struct fair_ktime **out, char *problem,
                      size_t n)
{
    *out = NULL;
    if (n)
        problem[0] = 0;
    if (!spec)
        return 0;
    const json_t *hl = json_object_get(spec, "usageHalfLife");
    const json_t *bu = json_object_get(spec, "budget");
    const json_t *sc = json_object_get(spec, "schedule");
    hl = json_is_null(hl) ? NULL : hl;
    bu = json_is_null(bu) ? NULL : bu;
    sc = json_is_null(sc) ? NULL : sc;
    if (!hl && !bu && !sc)
        return 0;
    struct fair_ktime *t = fair_calloc(1, sizeof *t);
    if (!t)
        return FAIR_ENOMEM;
    t->usage_half_life_ms = -1;
    if (hl && !project) {
        problem_add(problem, n, "spec.usageHalfLife: only a Project has one");
    } else if (hl) {
        struct fair_error de = {0};
        int64_t ms = 0;
        if (!json_is_string(hl) || strlen(json_string_value(hl)) > 64)
            problem_add(problem, n, "spec.usageHalfLife: want a duration such as \"168h\"");
        else if (fair_duration_parse_ms(json_string_value(hl), &ms, &de))
            problem_add(problem, n, "spec.usageHalfLife: %s", de.msg);
        else if (ms != 0 && (ms < 60000 || ms > 3660LL * 86400000))
            problem_add(problem, n,
                        "spec.usageHalfLife: want 0 (off) or from 1m to 3660 days (87840h)");
        else
            t->usage_half_life_ms = ms;
    }
    if (bu && !project) {
        problem_add(problem, n, "spec.budget: only a Project has one");
    } else if (bu && !json_is_object(bu)) {
        problem_add(problem, n, "spec.budget: want {gpuHours, period, action}");
    } else if (bu) {
        int64_t mh = 0;
        struct fair_error qe = {0};
        const json_t *g = json_object_get(bu, "gpuHours");
        bool ok = true;
        if (!g || fair_kquantity_decode(g, 1, &mh, "spec.budget.gpuHours", &qe) || mh < 0 ||
            mh > 1000000000000LL) {
            problem_add(problem, n, "spec.budget.gpuHours: want GPU-hours from 0 to 10^9%s%s",
                        qe.msg[0] ? ": " : "", qe.msg);
            ok = false;
        }
        const char *p = json_string_value(json_object_get(bu, "period"));
        enum fair_kbudget_period per = FAIR_KBUDGET_NONE;
        if (p && !strcmp(p, "day"))
            per = FAIR_KBUDGET_DAY;
        else if (p && !strcmp(p, "week"))
            per = FAIR_KBUDGET_WEEK;
        else if (p && !strcmp(p, "month"))
            per = FAIR_KBUDGET_MONTH;
        else {
            problem_add(problem, n, "spec.budget.period: want \"day\", \"week\" or \"month\"");
            ok = false;
        }
        const json_t *a = json_object_get(bu, "action");
        const char *as = json_string_value(a);
        enum fair_kbudget_action act = FAIR_KBUDGET_OVER_QUOTA_ONLY;
        if (a && !json_is_null(a)) {
            if (as && !strcmp(as, "block"))
                act = FAIR_KBUDGET_BLOCK;
            else if (!as || strcmp(as, "overQuotaOnly")) {
                problem_add(problem, n, "spec.budget.action: want \"overQuotaOnly\" or \"block\"");
                ok = false;
            }
        }
        if (ok) {
            t->budget_milli_hours = mh;
            t->budget_period = per;
            t->budget_action = act;
        }
    }
    if (sc) {
        if (!json_is_array(sc) || json_array_size(sc) > FAIR_KWINDOW_MAX) {
            problem_add(problem, n, "spec.schedule: want a list of at most %d windows",
                        FAIR_KWINDOW_MAX);
        } else if (json_array_size(sc)) {
            t->windows = fair_calloc(json_array_size(sc), sizeof *t->windows);
            if (!t->windows) {
                fair_ktime_free(t);
                return FAIR_ENOMEM;
            }
            size_t i;
            const json_t *w;
            json_array_foreach(sc, i, w)
            {
                decode_window(w, i, &t->windows[i], problem, n);
                for (size_t j = 0; j < i; j++)
                    if (!strcmp(t->windows[j].name, t->windows[i].name))
                        problem_add(problem, n, "spec.schedule[%zu].name: \"%s\" is used twice", i,
                                    t->windows[i].name);
            }
            t->nwindows = json_array_size(sc);
        }
    }
    *out = t;
    return 0;
}
