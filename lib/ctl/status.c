/* Queue and Project status documents and their write memory (status.h).
 * The status is rendered with sorted keys, so that an unchanged status has
 * an identical text and comparing texts detects change. */
#include "ctl/status.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/duration.h"
#include "base/error.h"
#include "base/quantity.h"
#include "ledger/report.h"

static const char *cond_names[FAIR_CTL_COND_COUNT] = {"Ready", "Invalid", "Overcommitted"};

void fair_ctl_status_table_init(struct fair_ctl_status_table *t)
{
    memset(t, 0, sizeof *t);
    fair_ctl_index_init(&t->by_key);
}

static void entry_free(struct fair_ctl_status_entry *e)
{
    if (!e)
        return;
    fair_free(e->key);
    fair_free(e->last_text);
    fair_free(e);
}

void fair_ctl_status_table_release(struct fair_ctl_status_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        entry_free(t->v[i]);
    fair_free(t->v);
    fair_ctl_index_release(&t->by_key);
    memset(t, 0, sizeof *t);
}

static struct fair_ctl_status_entry *lookup(struct fair_ctl_status_table *t, const char *kind,
                                            const char *name, bool create)
{
    char key[300];
    snprintf(key, sizeof key, "%s/%s", kind, name);
    int32_t i = fair_ctl_index_get(&t->by_key, key);
    if (i >= 0)
        return t->v[i];
    if (!create)
        return NULL;
    if (fair_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v))
        return NULL;
    struct fair_ctl_status_entry *e = fair_calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->key = fair_strdup(key);
    if (!e->key || fair_ctl_index_put(&t->by_key, e->key, (int32_t)t->n)) {
        entry_free(e);
        return NULL;
    }
    t->v[t->n++] = e;
    return e;
}

static json_t *resources_json(const struct fair_resources *r)
{
    char g[40], c[40], m[40];
    fair_milli_format(r->v[FAIR_RES_GPU] == FAIR_UNLIMITED ? 0 : r->v[FAIR_RES_GPU], g, sizeof g);
    fair_milli_format(r->v[FAIR_RES_CPU] == FAIR_UNLIMITED ? 0 : r->v[FAIR_RES_CPU], c, sizeof c);
    fair_bytes_format(r->v[FAIR_RES_MEM] == FAIR_UNLIMITED ? 0 : r->v[FAIR_RES_MEM], m, sizeof m);
    return json_pack("{s:s, s:s, s:s}", "gpu", g, "cpu", c, "memory", m);
}

/* ---- issue 15: status.gpuModels ---- */
static json_t *models_json(const struct fair_ctl_status_input *in)
{
    json_t *o = json_object();
    for (size_t m = 0; o && m < in->nmodels; m++) {
        const struct fair_model_status *x = &in->models[m];
        char g[40], fs[40], a[40], b[40], l[40], lb[40];
        fair_milli_format(x->guaranteed, g, sizeof g);
        fair_milli_format(x->fair_share, fs, sizeof fs);
        fair_milli_format(x->allocated, a, sizeof a);
        fair_milli_format(x->borrowed, b, sizeof b);
        fair_milli_format(x->lent, l, sizeof l);
        fair_milli_format(x->lendable, lb, sizeof lb);
        json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "guaranteed", g, "fairShare", fs,
                              "allocated", a, "borrowed", b, "lent", l, "lendable", lb);
        if (!e || json_object_set_new(o, in->model_names[m], e)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* The status is sent as a JSON merge patch, which keeps keys it does not
 * name: a pool written last time and gone now is sent as null, once. */
static int models_gone(json_t *status, const char *last_text)
{
    json_t *last = last_text ? json_loads(last_text, 0, NULL) : NULL;
    json_t *old = json_object_get(json_object_get(last, "status"), "gpuModels");
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach(old, k, v)
    {
        json_t *now = json_object_get(status, "gpuModels");
        if (json_is_null(v) || json_object_get(now, k))
            continue;
        if (!now && (json_object_set_new(status, "gpuModels", json_object()) ||
                     !(now = json_object_get(status, "gpuModels")))) {
            rc = FAIR_ENOMEM;
            break;
        }
        if (json_object_set_new(now, k, json_null())) {
            rc = FAIR_ENOMEM;
            break;
        }
    }
    json_decref(last);
    return rc;
}

static int time_json(json_t *status, const struct fair_ctl_status_time *t)
{
    char a[40], b[40], h[40];
    int an = (int)sizeof a, bn = (int)sizeof b;
    if (t->has_schedule) {
        a[0] = 0;
        if (t->next_switch_ms)
            fair_time_format_rfc3339(t->next_switch_ms, a, an);
        json_t *o = json_pack("{s:s}", "activeWindow", t->window ? t->window : "");
        if (!o || (t->next_switch_ms && json_object_set_new(o, "nextSwitch", json_string(a))) ||
            json_object_set_new(status, "schedule", o))
            return FAIR_ENOMEM;
    }
    if (t->has_budget) {
        fair_time_format_rfc3339(t->period_start_ms, a, an);
        fair_time_format_rfc3339(t->period_end_ms, b, bn);
        fair_gpu_hours_format(t->budget_mms, h, sizeof h);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "period", t->period ? t->period : "",
                              "periodStart", a, "periodEnd", b, "gpuHours", h);
        if (!o)
            return FAIR_ENOMEM;
        if (t->budget_known) {
            char u[40], r[40];
            int64_t rem = t->budget_mms - t->used_mms;
            fair_gpu_hours_format(t->used_mms, u, sizeof u);
            fair_gpu_hours_format(rem > 0 ? rem : 0, r, sizeof r);
            if (json_object_set_new(o, "usedGpuHours", json_string(u)) ||
                json_object_set_new(o, "remainingGpuHours", json_string(r))) {
                json_decref(o);
                return FAIR_ENOMEM;
            }
        }
        if (json_object_set_new(o, "state",
                                json_string(t->budget_known ? t->budget_state : "Unknown")) ||
            json_object_set_new(status, "budget", o))
            return FAIR_ENOMEM;
    }
    if (t->has_usage) {
        char hl[40];
        fair_gpu_hours_format(t->usage_mms, h, sizeof h);
        fair_duration_format_ms(t->half_life_ms, hl, sizeof hl);
        if (json_object_set_new(status, "usage",
                                json_pack("{s:s, s:s}", "decayedGpuHours", h, "halfLife", hl)))
            return FAIR_ENOMEM;
    }
    return 0;
}

/* The transition time of condition c with status st on this process's
 * first write: the server's, when it holds that status (not in the
 * future), else now. */
static int64_t seen_since(const struct fair_ctl_status_input *in, int c, bool st)
{
    for (size_t i = 0; in->seen && i < in->nseen; i++)
        if (!strcmp(in->seen[i].type, cond_names[c]))
            return in->seen[i].status == st && in->seen[i].since_ms <= in->now_ms
                       ? in->seen[i].since_ms
                       : in->now_ms;
    return in->now_ms;
}

int fair_ctl_status_update(struct fair_ctl_status_table *t, const struct fair_ctl_status_input *in,
                           char **patch_out)
{
    int rc = 0;
    json_t *status = NULL, *conds = NULL, *patch = NULL;
    char *text = NULL;
    *patch_out = NULL;
    struct fair_ctl_status_entry *e = lookup(t, in->kind, in->name, true);
    if (!e)
        return FAIR_ENOMEM;

    struct fair_share_status zero = {0};
    const struct fair_share_status *f = in->figures ? in->figures : &zero;
    struct fair_resources pend;
    for (int r = 0; r < FAIR_RES_COUNT; r++) {
        int64_t d = f->demand.v[r] - f->allocated.v[r];
        pend.v[r] = d > 0 ? d : 0;
    }
    status = json_object();
    conds = json_array();
    if (!status || !conds) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    if (json_object_set_new(status, "lendable", resources_json(&f->lendable)) ||
        (in->figures && in->nmodels && json_object_set_new(status, "gpuModels", models_json(in))) ||
        models_gone(status, e->last_text)) {
        rc = FAIR_ENOMEM; /* issue 15 */
        goto out;
    }
    if (json_object_set_new(status, "guaranteed",
                            resources_json(in->figures ? &f->guaranteed : &in->spec_guaranteed)) ||
        json_object_set_new(status, "fairShare", resources_json(&f->fair_share)) ||
        json_object_set_new(status, "allocated", resources_json(&f->allocated)) ||
        json_object_set_new(status, "borrowed", resources_json(&f->borrowed)) ||
        json_object_set_new(status, "lent", resources_json(&f->lent)) ||
        json_object_set_new(status, "pending",
                            json_pack("{s:I, s:o}", "pods", (json_int_t)f->pending_pods,
                                      "resources", resources_json(&pend))) ||
        json_object_set_new(status, "observedGeneration", json_integer(in->generation)) ||
        (in->team && json_object_set_new(status, "team", json_string(in->team)))) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    if (in->time && (rc = time_json(status, in->time)))
        goto out;
    int64_t since_of[FAIR_CTL_COND_COUNT];
    for (int c = 0; c < FAIR_CTL_COND_COUNT; c++) {
        const struct fair_ctl_cond *cd = &in->conds[c];
        bool st = cd->status;
        /* A condition keeps its transition time while its status holds. */
        int64_t since = e->cond_known[c] && e->cond_status[c] == st ? e->cond_since_ms[c]
                        : e->cond_known[c]                          ? in->now_ms
                                                                    : seen_since(in, c, st);
        since_of[c] = since;
        char ts[40];
        fair_time_format_rfc3339(since, ts, sizeof ts);
        json_t *o =
            json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "type", cond_names[c], "status",
                      st ? "True" : "False", "observedGeneration", (json_int_t)in->generation,
                      "lastTransitionTime", ts, "reason", cd->reason ? cd->reason : "Unknown",
                      "message", cd->message ? cd->message : "");
        if (!o || json_array_append_new(conds, o)) {
            rc = FAIR_ENOMEM;
            goto out;
        }
    }
    if (json_object_set(status, "conditions", conds)) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    patch = json_pack("{s:O}", "status", status);
    if (!patch) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    text = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    if (e->last_text && strcmp(e->last_text, text) == 0)
        goto out; /* unchanged */
    if (e->last_text && in->mono_ms - e->last_write_ms < in->min_interval_ms)
        goto out; /* changed, but written too recently: next cycle */
    char *copy = fair_strdup(text);
    if (!copy) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    fair_free(e->last_text);
    e->last_text = copy;
    e->last_write_ms = in->mono_ms;
    for (int c = 0; c < FAIR_CTL_COND_COUNT; c++) {
        e->cond_since_ms[c] = since_of[c];
        e->cond_known[c] = true;
        e->cond_status[c] = in->conds[c].status;
    }
    *patch_out = fair_strdup(text);
    if (!*patch_out)
        rc = FAIR_ENOMEM;
out:
    free(text); /* jansson's allocator */
    json_decref(patch);
    json_decref(conds);
    json_decref(status);
    return rc;
}

void fair_ctl_status_failed(struct fair_ctl_status_table *t, const char *kind, const char *name)
{
    struct fair_ctl_status_entry *e = lookup(t, kind, name, false);
    if (e) {
        fair_free(e->last_text);
        e->last_text = NULL;
    }
}

void fair_ctl_status_forget(struct fair_ctl_status_table *t, const char *kind, const char *name)
{
    char key[300];
    snprintf(key, sizeof key, "%s/%s", kind, name);
    int32_t i = fair_ctl_index_get(&t->by_key, key);
    if (i < 0)
        return;
    struct fair_ctl_status_entry *e = t->v[i];
    fair_ctl_index_del(&t->by_key, e->key);
    size_t last = t->n - 1;
    if ((size_t)i != last) {
        t->v[i] = t->v[last];
        fair_ctl_index_put(&t->by_key, t->v[i]->key, i);
    }
    t->n--;
    entry_free(e);
}
