/* Simulator benchmark: loading the Alibaba openb trace, replaying it
 * through the engine (on the whole cluster, and on a contended 414-GPU
 * slice under static partitions and lending, where the useful-work
 * figures have the most to measure), and one workload-inflation run per
 * placement policy. Prints medians. The trace is looked up in
 * $FAIR_TRACE_DIR, else in ../shared/traces/alibaba-openb-2023 (from the
 * source tree, where `make bench` runs, as are tests/data/sim's node slice
 * and team files); without it the benchmark says so and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/log.h"
#include "sim/config.h"
#include "sim/engine_place.h"
#include "sim/frag.h"
#include "sim/replay.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return v[n / 2];
}

static int load(struct fair_sim_trace *t, const char *dir, struct fair_error *err)
{
    char nodes[1024], pods[1024];
    snprintf(nodes, sizeof(nodes), "%s/openb_node_list_gpu_node.csv", dir);
    snprintf(pods, sizeof(pods), "%s/openb_pod_list_default.csv", dir);
    fair_sim_trace_init(t);
    int rc = fair_sim_trace_load_nodes(t, nodes, NULL, err);
    if (!rc)
        rc = fair_sim_trace_load_jobs(t, pods, NULL, err);
    if (rc)
        fair_sim_trace_release(t);
    return rc;
}

/* The 414-GPU slice of tests/data/sim at 100x for 48 h, static partitions
 * then lending: the replays where pods wait, get evicted and lose work. */
static int contended(const char *dir, double *v)
{
    static const char *const files[2] = {"tests/data/sim/teams3_static.yaml",
                                         "tests/data/sim/teams3_lending.yaml"};
    char pods[1024];
    snprintf(pods, sizeof(pods), "%s/openb_pod_list_default.csv", dir);
    struct fair_error err = {0};
    struct fair_sim_trace t;
    fair_sim_trace_init(&t);
    if (fair_sim_trace_load_nodes(&t, "tests/data/sim/openb_nodes_every16.csv", NULL, &err) ||
        fair_sim_trace_load_jobs(&t, pods, NULL, &err)) {
        printf("bench_sim: contended replays skipped: %s (run from the source tree)\n", err.msg);
        fair_sim_trace_release(&t);
        return 0;
    }
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        struct fair_sim_config cfg;
        int32_t *queue_of = NULL;
        fair_sim_config_init(&cfg);
        rc = fair_sim_config_load(&cfg, files[k], &err);
        if (!rc)
            rc = fair_sim_config_assign(&cfg, &t, &queue_of, &err);
        struct fair_sim_opts o; /* the controller's reclaim settings */
        fair_sim_opts_default(&o);
        o.speedup = 100;
        o.horizon_ms = 48 * 3600000LL;
        struct fair_sim_run run;
        size_t cycles = 0;
        double lost = 0, idle = 0;
        for (int i = 0; i < 3 && !rc; i++) {
            double t0 = now_ms();
            rc = fair_sim_replay(&t, &cfg, queue_of, &o, &run, &err);
            if (rc)
                break;
            v[i] = now_ms() - t0;
            cycles = run.cycles;
            lost = (double)run.qstats[run.nqueues].lost_gpu_ms / 3.6e9;
            idle = (double)run.idle_fit.gpu_ms / 3.6e9;
            fair_sim_run_release(&run);
        }
        if (rc) {
            printf("bench_sim: %s\n", err.msg);
        } else {
            double m = median(v, 3);
            printf("replay_every16_speedup100_48h_%s cycles=%zu median_ms=%.1f "
                   "per_cycle_us=%.1f lost_gpu_h=%.1f idle_fit_gpu_h=%.1f\n",
                   k == 0 ? "static" : "lending", cycles, m,
                   cycles ? 1000.0 * m / (double)cycles : 0, lost, idle);
        }
        fair_free(queue_of);
        fair_sim_config_release(&cfg);
    }
    fair_sim_trace_release(&t);
    return rc ? 1 : 0;
}

int main(void)
{
    const char *dir = getenv("FAIR_TRACE_DIR");
    if (!dir)
        dir = "../shared/traces/alibaba-openb-2023";
    fair_log_set_level(FAIR_LOG_ERROR);
    struct fair_error err = {0};
    struct fair_sim_trace t;
    double v[5];
    for (int i = 0; i < 5; i++) {
        double t0 = now_ms();
        if (load(&t, dir, &err)) {
            printf("bench_sim: skipped: %s (set FAIR_TRACE_DIR)\n", err.msg);
            return 0;
        }
        v[i] = now_ms() - t0;
        if (i < 4)
            fair_sim_trace_release(&t);
    }
    printf("trace_load nodes=%zu jobs=%zu median_ms=%.1f\n", t.nnodes, t.njobs, median(v, 5));

    struct fair_sim_config cfg;
    int32_t *queue_of = NULL;
    fair_sim_config_init(&cfg);
    if (fair_sim_config_default(&cfg, &t, &err) ||
        fair_sim_config_assign(&cfg, &t, &queue_of, &err)) {
        printf("bench_sim: %s\n", err.msg);
        return 1;
    }
    const struct {
        const char *name;
        struct fair_sim_opts o;
    } replays[] = {
        {"replay_default", {.policy = FAIR_SIM_POLICY_ENGINE}},
        {"replay_speedup200_48h",
         {.policy = FAIR_SIM_POLICY_ENGINE, .speedup = 200, .horizon_ms = 48 * 3600000LL}},
    };
    for (size_t k = 0; k < sizeof(replays) / sizeof(replays[0]); k++) {
        struct fair_sim_run run;
        size_t cycles = 0;
        for (int i = 0; i < 3; i++) {
            double t0 = now_ms();
            if (fair_sim_replay(&t, &cfg, queue_of, &replays[k].o, &run, &err)) {
                printf("bench_sim: %s\n", err.msg);
                return 1;
            }
            v[i] = now_ms() - t0;
            cycles = run.cycles;
            fair_sim_run_release(&run);
        }
        double m = median(v, 3);
        printf("%s cycles=%zu median_ms=%.1f per_cycle_us=%.1f\n", replays[k].name, cycles, m,
               cycles ? 1000.0 * m / (double)cycles : 0);
    }
    if (contended(dir, v))
        return 1;
    for (int p = 0; p < FAIR_SIM_POLICY_COUNT; p++) {
        int reps = p == FAIR_SIM_POLICY_ENGINE ? 1 : 3;
        struct fair_sim_frag_result res;
        for (int i = 0; i < reps; i++) {
            struct fair_sim_frag_opts fo = {.seed = 1};
            double t0 = now_ms();
            int rc;
            if (p == FAIR_SIM_POLICY_ENGINE) {
                struct fair_sim_engine_placer ep;
                rc = fair_sim_engine_placer_init(&ep, &t, &err);
                if (!rc)
                    rc = fair_sim_frag_run(&t, fair_sim_place_engine, &ep, &fo, &res, &err);
                fair_sim_engine_placer_release(&ep);
            } else {
                struct fair_sim_placer pl;
                rc = fair_sim_placer_init(&pl, (enum fair_sim_policy)p, 1, &t, &err);
                if (!rc)
                    rc = fair_sim_frag_run(&t, fair_sim_place_baseline, &pl, &fo, &res, &err);
                fair_sim_placer_release(&pl);
            }
            if (rc) {
                printf("bench_sim: %s\n", err.msg);
                return 1;
            }
            v[i] = now_ms() - t0;
        }
        double m = median(v, reps);
        printf("frag_%s arrivals=%zu runs=%d median_ms=%.1f per_arrival_us=%.1f "
               "unallocated_gpu=%.1f\n",
               fair_sim_policy_name((enum fair_sim_policy)p), res.pods_arrived, reps, m,
               1000.0 * m / (double)res.pods_arrived, (double)res.unallocated_milli / 1000.0);
    }
    fair_free(queue_of);
    fair_sim_config_release(&cfg);
    fair_sim_trace_release(&t);
    return 0;
}
