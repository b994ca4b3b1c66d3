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

int fair_sim_frag_run(const struct fair_sim_trace *t, fair_sim_place_fn place, void *ctx,
                      const struct fair_sim_frag_opts *opts_in, struct fair_sim_frag_result *res,
                      struct fair_error *err)
{
    int rc = 0;
    struct fair_sim_frag_opts opts = opts_in ? *opts_in : (struct fair_sim_frag_opts){0};
    if (opts.stop_percent <= 0)
        opts.stop_percent = 100;
    if (opts.max_pods == 0)
        opts.max_pods = 10000000;
    memset(res, 0, sizeof(*res));
    res->first_fail_unallocated_milli = -1;
    res->first_fail_arrived_milli = -1;
    struct fair_sim_cluster c;
    rc = fair_sim_cluster_init(&c, t, err);
    if (rc)
        return rc;
    res->capacity_milli = c.gpu_capacity;
    if (t->njobs == 0 || c.gpu_capacity == 0) {
        rc = fair_error_set(err, FAIR_EINVAL,
                            "fragmentation: needs at least one job and one GPU node");
        goto out;
    }
    bool any_gpu = false;
    for (size_t i = 0; i < t->njobs; i++)
        any_gpu |= t->jobs[i].gpu_milli > 0;
    if (!any_gpu) {
        rc = fair_error_set(err, FAIR_EINVAL, "fragmentation: no job in the trace asks for a GPU");
        goto out;
    }
    uint64_t rng = opts.seed * 0x9E3779B97F4A7C15ULL + 1;
    const int64_t stop = c.gpu_capacity * opts.stop_percent / 100;
    int next_point = 0;
    while (res->arrived_milli < stop) {
        if (res->pods_arrived >= opts.max_pods) {
            rc = fair_error_set(err, FAIR_ERANGE, "fragmentation: more than %zu arrivals",
                                opts.max_pods);
            goto out;
        }
        /* Record the curve before this arrival crosses each 5% mark. */
        while (next_point < FAIR_SIM_FRAG_CURVE &&
               res->arrived_milli >= c.gpu_capacity * next_point * 5 / 100)
            res->curve_unallocated[next_point++] = fair_sim_cluster_unallocated(&c);
        const struct fair_sim_job *job = &t->jobs[fair_sim_rand(&rng) % t->njobs];
        res->pods_arrived++;
        res->arrived_milli += job->gpu_milli;
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
    while (next_point < FAIR_SIM_FRAG_CURVE)
        res->curve_unallocated[next_point++] = fair_sim_cluster_unallocated(&c);
    res->allocated_milli = c.gpu_allocated;
    res->unallocated_milli = fair_sim_cluster_unallocated(&c);
out:
    fair_sim_cluster_release(&c);
    return rc;
}
