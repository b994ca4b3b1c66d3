/* Project/Queue manifests into engine structs for the simulator, and the
 * queue-assignment rule for trace jobs. */
#include "sim/config.h"

#include <string.h>

#include "base/alloc.h"
#include "base/yaml.h"
#include "kube/decode.h"

void fair_sim_config_init(struct fair_sim_config *c)
{
    memset(c, 0, sizeof(*c));
}

void fair_sim_config_release(struct fair_sim_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; c->kprojects && i < c->nprojects; i++)
        fair_kproject_free(c->kprojects[i]);
    for (size_t i = 0; c->kqueues && i < c->nqueues; i++)
        fair_kqueue_free(c->kqueues[i]);
    fair_free(c->kprojects);
    fair_free(c->kqueues);
    for (size_t i = 0; i < c->nnames; i++)
        fair_free(c->names[i]);
    fair_free(c->names);
    fair_free(c->projects);
    fair_free(c->queues);
    fair_free(c->mquotas);
    memset(c, 0, sizeof(*c));
}

int32_t fair_sim_config_queue(const struct fair_sim_config *c, const char *name)
{
    for (size_t i = 0; i < c->nqueues; i++)
        if (strcmp(c->queues[i].q.name, name) == 0)
            return (int32_t)i;
    return -1;
}

static void quota_from(struct fair_quota *q, const char *name, const struct fair_kquota *k)
{
    q->name = name;
    q->guaranteed = k->guaranteed;
    q->limit = k->limit;
    q->over_quota_weight = k->over_quota_weight;
    q->over_quota_priority = k->over_quota_priority;
}

/* ---- issue 15: lending limits and per-model quotas of the file ---- */
static void models_one(struct fair_sim_config *c, struct fair_quota *q, const struct fair_kquota *k)
{
    q->lending_limit = k->lending_limit;
    q->lending_set = k->lending_set;
    q->models = k->nmodels ? &c->mquotas[c->nmquotas] : NULL;
    q->nmodels = k->nmodels;
    for (size_t i = 0; i < k->nmodels; i++)
        c->mquotas[c->nmquotas++] =
            (struct fair_model_quota){.model = k->models[i].model,
                                      .guaranteed = k->models[i].guaranteed,
                                      .limit = k->models[i].limit,
                                      .lending_limit = k->models[i].lending_limit,
                                      .has_limit = k->models[i].has_limit,
                                      .has_lending_limit = k->models[i].has_lending_limit};
}

static int models_link(struct fair_sim_config *c, struct fair_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nprojects; i++)
        n += c->kprojects[i]->quota.nmodels;
    for (size_t i = 0; i < c->nqueues; i++)
        n += c->kqueues[i]->quota.nmodels;
    c->nmquotas = 0;
    if (n && !(c->mquotas = fair_calloc(n, sizeof(*c->mquotas))))
        return fair_error_set(err, FAIR_ENOMEM, "projects: out of memory");
    for (size_t i = 0; i < c->nprojects; i++)
        models_one(c, &c->projects[i].q, &c->kprojects[i]->quota);
    for (size_t i = 0; i < c->nqueues; i++)
        models_one(c, &c->queues[i].q, &c->kqueues[i]->quota);
    return 0;
}

static int parse_docs(struct fair_sim_config *c, const char *name, json_t *docs,
                      struct fair_error *err)
{
    size_t ndocs = json_array_size(docs);
    if (ndocs > 2 * FAIR_SIM_MAX_QUEUES)
        return fair_error_set(err, FAIR_ERANGE, "%s: more than %d objects", name,
                              2 * FAIR_SIM_MAX_QUEUES);
    c->kprojects = fair_calloc(ndocs + 1, sizeof(*c->kprojects));
    c->kqueues = fair_calloc(ndocs + 1, sizeof(*c->kqueues));
    c->projects = fair_calloc(ndocs + 1, sizeof(*c->projects));
    c->queues = fair_calloc(ndocs + 1, sizeof(*c->queues));
    if (!c->kprojects || !c->kqueues || !c->projects || !c->queues)
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
    for (size_t i = 0; i < ndocs; i++) {
        json_t *d = json_array_get(docs, i);
        if (json_is_null(d))
            continue; /* a stray "---" at the end of a file */
        const char *api = json_string_value(json_object_get(d, "apiVersion"));
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (!json_is_object(d) || !api || strcmp(api, "fairshare.dev/v1alpha1") != 0)
            return fair_error_set(err, FAIR_EINVAL,
                                  "%s: document %zu: apiVersion must be fairshare.dev/v1alpha1",
                                  name, i + 1);
        int rc;
        if (kind && strcmp(kind, "Project") == 0) {
            struct fair_kproject *p = NULL;
            rc = fair_kproject_decode(d, &p, err);
            if (rc)
                return fair_error_prefix(err, "%s: document %zu (Project): ", name, i + 1);
            c->kprojects[c->nprojects] = p;
            quota_from(&c->projects[c->nprojects].q, p->meta.name, &p->quota);
            c->projects[c->nprojects].share_fractions = p->share_fractions;
            c->nprojects++;
            if (p->problem)
                return fair_error_set(err, FAIR_EINVAL, "%s: Project %s: %s", name, p->meta.name,
                                      p->problem);
        } else if (kind && strcmp(kind, "Queue") == 0) {
            struct fair_kqueue *q = NULL;
            rc = fair_kqueue_decode(d, &q, err);
            if (rc)
                return fair_error_prefix(err, "%s: document %zu (Queue): ", name, i + 1);
            c->kqueues[c->nqueues] = q;
            struct fair_queue *eq = &c->queues[c->nqueues];
            c->nqueues++;
            quota_from(&eq->q, q->meta.name, &q->quota);
            eq->project_name = q->project;
            eq->reclaim_min_runtime_ms = q->reclaim_min_runtime_ms;
            eq->aging_half_life_ms = q->aging_half_life_ms;
            if (q->problem)
                return fair_error_set(err, FAIR_EINVAL, "%s: Queue %s: %s", name, q->meta.name,
                                      q->problem);
        } else {
            return fair_error_set(err, FAIR_EINVAL,
                                  "%s: document %zu: kind must be Project or Queue, not %s", name,
                                  i + 1, kind ? kind : "(missing)");
        }
    }
    if (c->nqueues == 0)
        return fair_error_set(err, FAIR_EINVAL, "%s: no Queue: define at least one", name);
    if (c->nqueues > FAIR_SIM_MAX_QUEUES)
        return fair_error_set(err, FAIR_ERANGE, "%s: more than %d queues", name,
                              FAIR_SIM_MAX_QUEUES);
    for (size_t i = 0; i < c->nprojects; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->projects[i].q.name, c->projects[j].q.name) == 0)
                return fair_error_set(err, FAIR_EINVAL, "%s: Project %s is defined twice", name,
                                      c->projects[i].q.name);
    for (size_t i = 0; i < c->nqueues; i++) {
        struct fair_queue *q = &c->queues[i];
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->q.name, c->queues[j].q.name) == 0)
                return fair_error_set(err, FAIR_EINVAL, "%s: Queue %s is defined twice", name,
                                      q->q.name);
        q->project = -1;
        for (size_t j = 0; q->project_name && j < c->nprojects; j++)
            if (strcmp(q->project_name, c->projects[j].q.name) == 0)
                q->project = (int32_t)j;
        if (q->project < 0)
            return fair_error_set(err, FAIR_EINVAL,
                                  "%s: Queue %s: spec.project \"%s\" is not a Project of this file",
                                  name, q->q.name, q->project_name ? q->project_name : "");
    }
    fair_sim_config_reclaim_default(c, FAIR_RECLAIM_FAIR_SHARE);
    return models_link(c, err);
}

void fair_sim_config_reclaim_default(struct fair_sim_config *c, enum fair_reclaim_mode mode)
{
    for (size_t i = 0; i < c->nqueues; i++) {
        enum fair_kreclaim up = FAIR_KRECLAIM_UNSET;
        const struct fair_kqueue *kq = c->kqueues ? c->kqueues[i] : NULL;
        int32_t p = c->queues[i].project;
        if (kq)
            up = kq->quota.reclaim_up_to;
        if (up == FAIR_KRECLAIM_UNSET && kq && c->kprojects && p >= 0 && (size_t)p < c->nprojects &&
            c->kprojects[p])
            up = c->kprojects[p]->quota.reclaim_up_to;
        c->queues[i].reclaim_up_to = up == FAIR_KRECLAIM_GUARANTEE    ? FAIR_RECLAIM_GUARANTEE
                                     : up == FAIR_KRECLAIM_FAIR_SHARE ? FAIR_RECLAIM_FAIR_SHARE
                                                                      : mode;
    }
}

int fair_sim_config_parse(struct fair_sim_config *c, const char *name, const char *data, size_t len,
                          struct fair_error *err)
{
    json_t *docs = NULL;
    int rc = fair_yaml_parse(name, data, len, NULL, &docs, err);
    if (rc)
        return rc;
    rc = parse_docs(c, name, docs, err);
    json_decref(docs);
    return rc;
}

int fair_sim_config_load(struct fair_sim_config *c, const char *path, struct fair_error *err)
{
    json_t *docs = NULL;
    int rc = fair_yaml_load_file(path, NULL, &docs, err);
    if (rc)
        return rc;
    rc = parse_docs(c, path, docs, err);
    json_decref(docs);
    return rc;
}

static char *keep(struct fair_sim_config *c, const char *s)
{
    char **nn = fair_realloc(c->names, (c->nnames + 1) * sizeof(*nn));
    if (!nn)
        return NULL;
    c->names = nn;
    char *copy = fair_strdup(s);
    if (copy)
        c->names[c->nnames++] = copy;
    return copy;
}

int fair_sim_config_default(struct fair_sim_config *c, const struct fair_sim_trace *t,
                            struct fair_error *err)
{
    size_t nq = t->simple_format ? t->nqueue_names : 1;
    if (nq == 0)
        nq = 1;
    c->projects = fair_calloc(1, sizeof(*c->projects));
    c->queues = fair_calloc(nq, sizeof(*c->queues));
    if (!c->projects || !c->queues)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    int64_t cap = fair_sim_trace_gpu_capacity(t);
    const char *pname = keep(c, "default");
    if (!pname)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    struct fair_quota *pq = &c->projects[0].q;
    pq->name = pname;
    pq->guaranteed.v[FAIR_RES_GPU] = cap;
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        pq->limit.v[r] = FAIR_UNLIMITED;
    pq->over_quota_weight = 1;
    c->nprojects = 1;
    /* Whole GPUs per queue, so that guarantees stay meaningful. */
    int64_t gpus = cap / 1000, each = gpus / (int64_t)nq;
    for (size_t i = 0; i < nq; i++) {
        const char *qn = t->simple_format && t->nqueue_names ? t->queue_names[i] : "default";
        struct fair_queue *q = &c->queues[i];
        q->q.name = keep(c, qn);
        if (!q->q.name)
            return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
        q->q.guaranteed.v[FAIR_RES_GPU] = (each + (i == 0 ? gpus - each * (int64_t)nq : 0)) * 1000;
        for (int r = 0; r < FAIR_RES_COUNT; r++)
            q->q.limit.v[r] = FAIR_UNLIMITED;
        q->q.over_quota_weight = 1;
        q->project = 0;
        q->project_name = pname;
        c->nqueues++;
    }
    return 0;
}

int fair_sim_config_assign(const struct fair_sim_config *c, const struct fair_sim_trace *t,
                           int32_t **queue_of, struct fair_error *err)
{
    *queue_of = NULL;
    int32_t *map = fair_calloc(t->njobs ? t->njobs : 1, sizeof(*map));
    if (!map)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    for (size_t i = 0; i < t->njobs; i++) {
        const struct fair_sim_job *j = &t->jobs[i];
        if (t->simple_format && j->queue >= 0) {
            const char *qn = t->queue_names[j->queue];
            map[i] = fair_sim_config_queue(c, qn);
            if (map[i] < 0) {
                fair_free(map);
                return fair_error_set(err, FAIR_EINVAL,
                                      "job %s (line %lld): queue \"%s\" is not a Queue of the "
                                      "projects file",
                                      j->name, (long long)j->line, qn);
            }
        } else {
            map[i] = (int32_t)(fair_sim_hash(j->name) % c->nqueues);
        }
    }
    *queue_of = map;
    return 0;
}
