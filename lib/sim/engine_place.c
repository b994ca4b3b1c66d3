/* Engine nodes built from the trace, and the engine as a placement policy
 * for the fragmentation experiment. */
#include "sim/engine_place.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

int fair_sim_enodes_init(struct fair_sim_enodes *en, const struct fair_sim_trace *t,
                         struct fair_error *err)
{
    int rc = 0;
    memset(en, 0, sizeof(*en));
    size_t nl = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        for (size_t s = 0; s < t->nspecs; s++)
            nl += t->nodes[i].model >= 0 && (t->spec_masks[s] >> t->nodes[i].model) & 1;
    en->nodes = fair_calloc(t->nnodes ? t->nnodes : 1, sizeof(*en->nodes));
    en->labels = fair_calloc(nl ? nl : 1, sizeof(*en->labels));
    en->spec_labels = fair_calloc(t->nspecs ? t->nspecs : 1, sizeof(*en->spec_labels));
    en->keys = fair_calloc(t->nspecs ? t->nspecs : 1, sizeof(*en->keys));
    if (!en->nodes || !en->labels || !en->spec_labels || !en->keys) {
        rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for engine nodes");
        goto out;
    }
    en->nspecs = t->nspecs;
    en->models = t->models;
    en->nmodels = t->nmodels;
    for (size_t s = 0; s < t->nspecs; s++) {
        char key[64];
        snprintf(key, sizeof(key), FAIR_SIM_SPEC_LABEL "%zu", s);
        en->keys[s] = fair_strdup(key);
        if (!en->keys[s]) {
            rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for engine nodes");
            goto out;
        }
        en->spec_labels[s].key = en->keys[s];
        en->spec_labels[s].value = "true";
    }
    size_t li = 0;
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct fair_sim_node *sn = &t->nodes[i];
        struct fair_node *n = &en->nodes[i];
        n->name = sn->name;
        n->gpu_model = sn->model >= 0 ? t->models[sn->model] : NULL;
        n->gpu_count = sn->gpu_count;
        n->allocatable.v[FAIR_RES_GPU] = (int64_t)sn->gpu_count * FAIR_GPU_DEVICE_MILLI;
        n->allocatable.v[FAIR_RES_CPU] = sn->cpu_milli;
        n->allocatable.v[FAIR_RES_MEM] = sn->memory_bytes;
        n->labels = &en->labels[li];
        for (size_t s = 0; s < t->nspecs; s++)
            if (sn->model >= 0 && (t->spec_masks[s] >> sn->model) & 1)
                en->labels[li++] = en->spec_labels[s];
        n->nlabels = (size_t)(&en->labels[li] - n->labels);
    }
    en->nnodes = t->nnodes;
out:
    if (rc)
        fair_sim_enodes_release(en);
    return rc;
}

void fair_sim_enodes_release(struct fair_sim_enodes *en)
{
    for (size_t s = 0; en->keys && s < en->nspecs; s++)
        fair_free(en->keys[s]);
    fair_free(en->keys);
    fair_free(en->spec_labels);
    fair_free(en->labels);
    fair_free(en->nodes);
    memset(en, 0, sizeof(*en));
}

void fair_sim_enodes_pod(const struct fair_sim_enodes *en, const struct fair_sim_job *job,
                         struct fair_pod *pod)
{
    memset(pod, 0, sizeof(*pod));
    pod->uid = job->name;
    pod->namespace_ = "sim";
    pod->name = job->name;
    pod->priority = job->priority;
    pod->created_ms = job->submit_ms;
    pod->preemptible = job->preemptible;
    pod->request.v[FAIR_RES_GPU] = job->gpu_milli;
    pod->request.v[FAIR_RES_CPU] = job->cpu_milli;
    pod->request.v[FAIR_RES_MEM] = job->memory_bytes;
    pod->node = -1;
    if (job->gpu_milli > 0 && job->spec >= 0 && (size_t)job->spec < en->nspecs) {
        pod->node_selector = &en->spec_labels[job->spec];
        pod->nnode_selector = 1;
        uint64_t m = job->model_mask;
        if (m && !(m & (m - 1)) && (size_t)__builtin_ctzll(m) < en->nmodels)
            pod->gpu_model = en->models[__builtin_ctzll(m)]; /* one model: named */
    }
    if (job->gang && job->gang_size > 1) {
        pod->gang = job->gang;
        pod->gang_size = job->gang_size;
    }
}

int fair_sim_engine_placer_init(struct fair_sim_engine_placer *ep, const struct fair_sim_trace *t,
                                struct fair_error *err)
{
    memset(ep, 0, sizeof(*ep));
    ep->trace = t;
    int rc = fair_sim_enodes_init(&ep->en, t, err);
    if (rc)
        return rc;
    int64_t cap = fair_sim_trace_gpu_capacity(t);
    struct fair_quota *q[2] = {&ep->project.q, &ep->queue.q};
    for (int i = 0; i < 2; i++) {
        q[i]->name = "default";
        q[i]->guaranteed.v[FAIR_RES_GPU] = cap;
        for (int r = 0; r < FAIR_RES_COUNT; r++)
            q[i]->limit.v[r] = FAIR_UNLIMITED;
        q[i]->over_quota_weight = 1;
    }
    ep->queue.project = 0;
    ep->queue.project_name = "default";
    return 0;
}

void fair_sim_engine_placer_release(struct fair_sim_engine_placer *ep)
{
    fair_sim_enodes_release(&ep->en);
    fair_free(ep->pods);
    fair_free(ep->uids);
    memset(ep, 0, sizeof(*ep));
}

int fair_sim_place_engine(void *ctx, struct fair_sim_cluster *c, const struct fair_sim_job *job,
                          int32_t *node, uint64_t *devices, struct fair_error *err)
{
    struct fair_sim_engine_placer *ep = ctx;
    (void)c;
    if (ep->npods + 1 > ep->cap) {
        size_t cap = ep->cap, ucap = ep->cap;
        if (fair_grow((void **)&ep->pods, &cap, ep->npods + 1, sizeof(*ep->pods)) ||
            fair_grow((void **)&ep->uids, &ucap, ep->npods + 1, sizeof(*ep->uids)))
            return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for pods");
        ep->cap = cap < ucap ? cap : ucap;
    }
    /* Pods drawn twice share a name: uids are the arrival number. */
    snprintf(ep->uids[ep->npods], sizeof(ep->uids[0]), "p%zu", ep->npods);
    struct fair_pod *pod = &ep->pods[ep->npods];
    fair_sim_enodes_pod(&ep->en, job, pod);
    pod->uid = ep->uids[ep->npods];
    pod->queue = 0;
    pod->state = FAIR_POD_PENDING;
    pod->created_ms = (int64_t)ep->npods;
    /* uids moved when the array grew: point every pod at its own again. */
    for (size_t i = 0; i < ep->npods; i++)
        ep->pods[i].uid = ep->uids[i];
    struct fair_snapshot snap = {
        .now_ms = (int64_t)ep->npods,
        .nodes = ep->en.nodes,
        .nnodes = ep->en.nnodes,
        .projects = &ep->project,
        .nprojects = 1,
        .queues = &ep->queue,
        .nqueues = 1,
        .pods = ep->pods,
        .npods = ep->npods + 1,
    };
    struct fair_result res;
    memset(&res, 0, sizeof(res));
    int rc = fair_engine_run(&snap, &res, err);
    ep->cycles++;
    if (rc)
        return rc;
    rc = FAIR_ENOTFOUND;
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->kind == FAIR_ACTION_BIND && (size_t)a->pod == ep->npods) {
            *node = a->node;
            *devices = a->gpu_devices;
            pod->state = FAIR_POD_BOUND;
            pod->node = a->node;
            pod->gpu_devices = a->gpu_devices;
            pod->started_ms = snap.now_ms;
            ep->npods++;
            rc = 0;
        }
    }
    fair_result_release(&res);
    return rc;
}
