/* Workload inflation (see frag.h): draw, place or fail, until the arrived
 * GPU requests reach the stop ratio; then count the unallocated GPUs. */
#include "sim/frag.h"

#include <string.h>

int fair_sim_place_baseline(void *ctx, struct fair_sim_cluster *c, const struct fair_sim_job *job,
                            int32_t *node, uint64_t *devices, struct fair_error *err)
{
    (void)err;
    return fair_sim_place(ctx, c, job, node, devices);
}

int fair_sim_frag_draw_init(struct fair_sim_frag_draw *d, const struct fair_sim_trace *t,
                            const struct fair_sim_frag_opts *opts_in, struct fair_error *err)
{
    struct fair_sim_frag_opts opts = opts_in ? *opts_in : (struct fair_sim_frag_opts){0};
    if (opts.stop_percent <= 0)
        opts.stop_percent = 100;
    if (opts.max_pods == 0)
        opts.max_pods = 10000000;
    memset(d, 0, sizeof(*d));
    d->trace = t;
    d->capacity_milli = fair_sim_trace_gpu_capacity(t);
    if (t->njobs == 0 || d->capacity_milli == 0)
        return fair_error_set(err, FAIR_EINVAL,
                              "fragmentation: needs at least one job and one GPU node");
    bool any_gpu = false;
    for (size_t i = 0; i < t->njobs; i++)
        any_gpu |= t->jobs[i].gpu_milli > 0;
    if (!any_gpu)
        return fair_error_set(err, FAIR_EINVAL,
                              "fragmentation: no job in the trace asks for a GPU");
    d->rng = opts.seed * 0x9E3779B97F4A7C15ULL + 1;
    d->stop_milli = d->capacity_milli * opts.stop_percent / 100;
    d->max_pods = opts.max_pods;
    return 0;
}

int fair_sim_frag_draw_next(struct fair_sim_frag_draw *d, const struct fair_sim_job **job,
                            struct fair_error *err)
{
    if (d->arrived_milli >= d->stop_milli)
        return 0;
    if (d->pods >= d->max_pods)
        return fair_error_set(err, FAIR_ERANGE, "fragmentation: more than %zu arrivals",
                              d->max_pods);
    *job = &d->trace->jobs[fair_sim_rand(&d->rng) % d->trace->njobs];
    d->pods++;
    d->arrived_milli += (*job)->gpu_milli;
    return 1;
}

int fair_sim_frag_run(const struct fair_sim_trace *t, fair_sim_place_fn place, void *ctx,
                      const struct fair_sim_frag_opts *opts, struct fair_sim_frag_result *res,
                      struct fair_error *err)
{
    int rc = 0;
    memset(res, 0, sizeof(*res));
    res->first_fail_unallocated_milli = -1;
    res->first_fail_arrived_milli = -1;
    struct fair_sim_frag_draw draw;
    rc = fair_sim_frag_draw_init(&draw, t, opts, err);
    if (rc)
        return rc;
    struct fair_sim_cluster c;
    rc = fair_sim_cluster_init(&c, t, err);
    if (rc)
        return rc;
    res->capacity_milli = c.gpu_capacity;
    int next_point = 0;
    for (;;) {
        const struct fair_sim_job *job = NULL;
        rc = fair_sim_frag_draw_next(&draw, &job, err);
        if (rc <= 0)
            break;
        /* Record the curve before this arrival crosses each 5% mark (the
         * draw itself leaves the cluster unchanged). */
        while (next_point < FAIR_SIM_FRAG_CURVE &&
               res->arrived_milli >= c.gpu_capacity * next_point * 5 / 100)
            res->curve_unallocated[next_point++] = fair_sim_cluster_unallocated(&c);
        res->pods_arrived = draw.pods;
        res->arrived_milli = draw.arrived_milli;
        int32_t node = -1;
        uint64_t dev = 0;
        rc = place(ctx, &c, job, &node, &dev, err);
        if (rc == 0) {
            rc = fair_sim_cluster_bind(&c, (size_t)node, dev, job);
            if (rc) {
                rc = fair_error_set(err, FAIR_EINVAL,
                                    "fragmentation: the policy chose node %d devices %#llx for "
                                    "pod %s, which do not fit",
                                    node, (unsigned long long)dev, job->name);
                goto out;
            }
            res->pods_placed++;
        } else if (rc == FAIR_ENOTFOUND) {
            rc = 0;
            res->pods_failed++;
            if (job->gpu_milli > 0) {
                res->gpu_failed_milli += job->gpu_milli;
                if (res->first_fail_unallocated_milli < 0) {
                    res->first_fail_unallocated_milli = fair_sim_cluster_unallocated(&c);
                    res->first_fail_arrived_milli = res->arrived_milli - job->gpu_milli;
                }
            }
        } else {
            goto out;
        }
    }
    if (rc < 0)
        goto out;
    rc = 0;
    while (next_point < FAIR_SIM_FRAG_CURVE)
        res->curve_unallocated[next_point++] = fair_sim_cluster_unallocated(&c);
    res->allocated_milli = c.gpu_allocated;
    res->unallocated_milli = fair_sim_cluster_unallocated(&c);
out:
    fair_sim_cluster_release(&c);
    return rc;
}
