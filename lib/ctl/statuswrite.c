/* Status writes (see ctl/loop.h): Queue and Project status (documents
 * built by ctl/status.h, written only on change), PodGroup status, and
 * budget alerts as Events on the Project. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "ctl/loop.h"
#include "ctl/reasons.h"
#include "engine/engine.h"

/* ---- Queue and Project status ---- */

static const struct fair_problem *find_problem(const struct fair_result *res,
                                               enum fair_problem_kind kind,
                                               enum fair_object_kind obj, int32_t index)
{
    for (size_t i = 0; i < res->nproblems; i++)
        if (res->problems[i].kind == kind && res->problems[i].object == obj &&
            res->problems[i].index == index)
            return &res->problems[i];
    return NULL;
}

static void write_status(struct fair_ctl *c, const char *kind, const char *name, const char *team,
                         int64_t gen, const struct fair_share_status *fig,
                         const struct fair_kquota *spec, const char *invalid,
                         const char *overcommit, const struct fair_ctl_status_time *tm,
                         const struct fair_kcond *seen, size_t nseen, int *budget)
{
    struct fair_ctl_status_input in = {.time = tm,
                                       .seen = seen,
                                       .nseen = nseen,
                                       .kind = kind,
                                       .name = name,
                                       .team = team,
                                       .generation = gen,
                                       .figures = fig,
                                       .spec_guaranteed = spec->guaranteed,
                                       .now_ms = wall(c),
                                       .mono_ms = mono(c),
                                       .min_interval_ms = c->cfg->status_interval_ms,
                                       .models = c->status_models, /* issue 15 */
                                       .model_names = c->status_model_names,
                                       .nmodels = c->status_nmodels};
    in.conds[FAIR_CTL_COND_READY] = (struct fair_ctl_cond){
        !invalid, invalid ? "Invalid" : "Active",
        invalid ? "the spec cannot be used; see the Invalid condition" : "scheduling"};
    in.conds[FAIR_CTL_COND_INVALID] = (struct fair_ctl_cond){
        invalid != NULL, invalid ? "InvalidSpec" : "Valid", invalid ? invalid : ""};
    in.conds[FAIR_CTL_COND_OVERCOMMITTED] =
        (struct fair_ctl_cond){overcommit != NULL, overcommit ? "Overcommitted" : "WithinParent",
                               overcommit ? overcommit : ""};
    char *patch = NULL;
    if (*budget <= 0)
        return;
    if (fair_ctl_status_update(&c->status, &in, &patch) || !patch)
        return;
    struct fair_error err = {0};
    struct req *r = fair_ctl_req_new(c, REQ_OBJ_STATUS);
    if (!r || !(r->name = dup0(name)) || !(r->obj_kind = dup0(kind))) {
        fair_ctl_req_free(r);
        fair_ctl_status_failed(&c->status, kind, name);
        fair_free(patch);
        return;
    }
    const struct fair_kres *res =
        strcmp(kind, "Queue") == 0 ? &fair_kres_queues : &fair_kres_projects;
    if (fair_kclient_merge_patch(c->kc, res, NULL, name, "status", patch, fair_ctl_on_simple_done,
                                 r, &err)) {
        fair_ctl_status_failed(&c->status, kind, name);
        fair_ctl_req_free(r);
    }
    (*budget)--;
    fair_free(patch);
}

/* The status of one Project (obj FAIR_OBJ_PROJECT) or Queue: the engine's
 * figures and problems where the snapshot kept it (ix >= 0, its index in
 * res), else dropped, the snapshot's reason for leaving it out. */
static void write_object_status(struct fair_ctl *c, const struct fair_result *res,
                                enum fair_object_kind obj, int32_t ix, const char *dropped,
                                const struct fair_kmeta *meta, const char *team,
                                const struct fair_kquota *quota,
                                const struct fair_ctl_status_time *tm,
                                const struct fair_kcond *seen, size_t nseen, int *budget)
{
    bool project = obj == FAIR_OBJ_PROJECT;
    const char *invalid = ix < 0 ? dropped : NULL;
    const struct fair_problem *pi =
        ix >= 0 ? find_problem(res, FAIR_PROBLEM_INVALID, obj, ix) : NULL;
    const struct fair_problem *po =
        ix >= 0 ? find_problem(res, FAIR_PROBLEM_OVERCOMMITTED, obj, ix) : NULL;
    if (pi)
        invalid = pi->message;
    const struct fair_share_status *fig = NULL;
    if (ix >= 0)
        fig = project ? &res->projects[ix] : &res->queues[ix];
    /* issue 15: the object's GPU model pools, for status.gpuModels. */
    c->status_nmodels = ix >= 0 ? res->nmodels : 0;
    c->status_model_names = res->models;
    c->status_models = !c->status_nmodels ? NULL
                       : project          ? &res->project_models[(size_t)ix * res->nmodels]
                                          : &res->queue_models[(size_t)ix * res->nmodels];
    write_status(c, project ? "Project" : "Queue", meta->name, team, meta->generation, fig, quota,
                 invalid, po ? po->message : NULL, tm, seen, nseen, budget);
}

void fair_ctl_write_statuses(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                             const struct fair_result *res)
{
    int budget = MAX_STATUS_PER_CYCLE;
    const struct fair_kproject *const *kp =
        (const struct fair_kproject *const *)c->arr[INF_PROJECTS];
    const struct fair_kqueue *const *kq = (const struct fair_kqueue *const *)c->arr[INF_QUEUES];
    for (size_t i = 0; i < s->ninput_projects; i++)
        write_object_status(
            c, res, FAIR_OBJ_PROJECT, s->project_index[i], s->project_problem[i], &kp[i]->meta,
            kp[i]->team && *kp[i]->team ? kp[i]->team : kp[i]->meta.name, &kp[i]->quota,
            fair_ctl_tq_project_status(c->tq, i), kp[i]->conds, kp[i]->nconds, &budget);
    for (size_t i = 0; i < s->ninput_queues; i++)
        write_object_status(c, res, FAIR_OBJ_QUEUE, s->queue_index[i], s->queue_problem[i],
                            &kq[i]->meta, NULL, &kq[i]->quota, fair_ctl_tq_queue_status(c->tq, i),
                            kq[i]->conds, kq[i]->nconds, &budget);
}

/* A budget alert (ctl/tqstate.h): an Event on the Project, which is
 * cluster-scoped, so the Event lives in "default". */
void fair_ctl_budget_alert(void *ctx, size_t project, int level, const char *message)
{
    struct fair_ctl *c = ctx;
    if (!c->leader_now)
        return;
    const struct fair_kproject *p =
        ((const struct fair_kproject *const *)c->arr[INF_PROJECTS])[project];
    FAIR_INFO(COMP, "msg=\"budget alert\" project=%s level=%d", p->meta.name, level);
    struct fair_error err = {0};
    struct req *r = fair_ctl_req_new(c, REQ_EVENT);
    if (!r)
        return;
    struct fair_kevent_ref ref = {.api_version = "fairshare.dev/v1alpha1",
                                  .kind = "Project",
                                  .name = p->meta.name,
                                  .uid = p->meta.uid};
    if (fair_kclient_event(c->kc, &ref, level >= 100 ? "Warning" : "Normal",
                           level >= 100 ? "BudgetExhausted" : "BudgetWarning", message,
                           c->cfg->scheduler_name, fair_ctl_on_simple_done, r, &err)) {
        FAIR_WARN(COMP, "msg=\"event not sent\" project=%s err=\"%s\"", p->meta.name, err.msg);
        fair_ctl_req_free(r);
    }
}

/* ---- PodGroup status ---- */

/* At most this many PodGroup status patches per cycle; the rest next. */
#define MAX_PG_STATUS_PER_CYCLE 100

/* One PodGroup's status patch: phase and counts, and for Volcano one
 * condition whose message is why its first pending pod waits. */
static void write_podgroup_status(struct fair_ctl *c, const struct fair_kpodgroup *g,
                                  const struct fair_ctl_pg_status *st, const char *message)
{
    char ts[40];
    fair_time_format_rfc3339(wall(c), ts, sizeof ts);
    json_t *status = json_pack("{s:s,s:i,s:i,s:i}", "phase", st->phase, "running", st->running,
                               "succeeded", st->succeeded, "failed", st->failed);
    if (status && st->cond_type)
        json_object_set_new(status, "conditions",
                            json_pack("[{s:s,s:s,s:s,s:s,s:s,s:s}]", "type", st->cond_type,
                                      "status", "True", "reason", st->cond_reason, "message",
                                      message ? message : "", "lastTransitionTime", ts,
                                      "transitionID", "fairshare"));
    json_t *doc = status ? json_pack("{s:o}", "status", status) : NULL;
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    struct fair_error err = {0};
    struct req *r = body ? fair_ctl_req_new(c, REQ_OBJ_STATUS) : NULL;
    if (!r || !(r->name = dup0(g->meta.name)) || !(r->ns = dup0(g->meta.namespace_)) ||
        !(r->obj_kind = dup0("PodGroup")) ||
        fair_kclient_merge_patch(c->kc, fair_ctl_pg_res[g->flavor], g->meta.namespace_,
                                 g->meta.name, "status", body, fair_ctl_on_simple_done, r, &err)) {
        if (err.msg[0])
            FAIR_WARN(COMP, "msg=\"PodGroup status not sent\" podgroup=%s/%s err=\"%s\"",
                      g->meta.namespace_, g->meta.name, err.msg);
        fair_ctl_req_free(r);
    }
    free(body);
    json_decref(doc);
}

/* Writes back the status of the PodGroups whose pods Fairshare schedules
 * (those of other schedulers are theirs to write), when it changed. */
void fair_ctl_write_podgroup_statuses(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                                      const struct fair_result *res)
{
    size_t ng = s->npodgroups;
    if (!ng)
        return;
    int32_t *binds = fair_calloc(ng, sizeof *binds);
    int32_t *pending = fair_calloc(ng, sizeof *pending); /* a pending member + 1; 0: none */
    bool *ours = fair_calloc(ng, sizeof *ours);
    if (!binds || !pending || !ours)
        goto out;
    for (size_t i = 0; i < s->snap.npods; i++) {
        int32_t gi = s->pod_pg[i];
        if (gi < 0)
            continue;
        ours[gi] = true;
        if (s->snap.pods[i].state == FAIR_POD_PENDING && !pending[gi])
            pending[gi] = (int32_t)i + 1;
    }
    for (size_t k = 0; k < res->nactions; k++) {
        const struct fair_action *a = &res->actions[k];
        if (a->kind != FAIR_ACTION_BIND || s->pod_pg[a->pod] < 0)
            continue;
        binds[s->pod_pg[a->pod]]++;
        if (pending[s->pod_pg[a->pod]] == a->pod + 1)
            pending[s->pod_pg[a->pod]] = 0;
    }
    int budget = MAX_PG_STATUS_PER_CYCLE;
    for (size_t gi = 0; gi < ng && budget > 0; gi++) {
        const struct fair_kpodgroup *g = s->podgroups[gi];
        if (!ours[gi] || !g->meta.name || !g->meta.namespace_)
            continue;
        struct fair_ctl_pg_status st;
        fair_ctl_podgroup_status(g, &s->pg_counts[gi], binds[gi], &st);
        bool same = g->phase && !strcmp(g->phase, st.phase) && g->running == st.running &&
                    g->succeeded == st.succeeded && g->failed == st.failed;
        if (g->flavor == FAIR_KPG_VOLCANO)
            same =
                same && (!strcmp(st.cond_type, "Scheduled")
                             ? !g->condition_reason
                             : g->condition_reason && !strcmp(g->condition_reason, st.cond_reason));
        if (same)
            continue;
        char msg[480] = "";
        if (pending[gi])
            fair_ctl_pending_message(s, res, (size_t)(pending[gi] - 1), msg, sizeof msg);
        else if (!strcmp(st.phase, "Running") || !strcmp(st.phase, "Scheduling"))
            snprintf(msg, sizeof msg, "all %d pods of the gang are scheduled", g->min_member);
        write_podgroup_status(c, g, &st, msg);
        budget--;
    }
out:
    fair_free(binds);
    fair_free(pending);
    fair_free(ours);
}
