/* Prometheus text rendering of the controller's metrics (see metrics.h).
 * GPU figures are exported in GPUs (milli / 1000), durations in seconds. */
#include "ctl/metrics.h"

#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/version.h"

const double fair_ctl_hist_bounds[FAIR_CTL_HIST_BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
};

void fair_ctl_metrics_init(struct fair_ctl_metrics *m)
{
    memset(m, 0, sizeof *m);
}

static void free_queues(struct fair_ctl_queue_metrics *q, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fair_free(q[i].queue);
        fair_free(q[i].project);
    }
    fair_free(q);
}

void fair_ctl_metrics_release(struct fair_ctl_metrics *m)
{
    free_queues(m->queues, m->nqueues);
    memset(m, 0, sizeof *m);
}

void fair_ctl_metrics_observe_cycle(struct fair_ctl_metrics *m, double seconds)
{
    m->cycles++;
    m->hist_count++;
    m->hist_sum += seconds;
    m->last_cycle_s = seconds;
    for (int i = 0; i < FAIR_CTL_HIST_BUCKETS; i++)
        if (seconds <= fair_ctl_hist_bounds[i])
            m->hist[i]++;
}

void fair_ctl_metrics_api_error(struct fair_ctl_metrics *m, long http_status)
{
    for (size_t i = 0; i < m->ncodes; i++)
        if (m->codes[i] == http_status) {
            m->code_counts[i]++;
            return;
        }
    size_t at = m->ncodes < FAIR_CTL_MAX_CODES ? m->ncodes++ : FAIR_CTL_MAX_CODES - 1;
    if (m->codes[at] != http_status) {
        m->codes[at] = http_status; /* the last slot collects the rest */
        m->code_counts[at] = 0;
    }
    m->code_counts[at]++;
}

int fair_ctl_metrics_set_queues(struct fair_ctl_metrics *m, const char *const *queues,
                                const char *const *projects,
                                const struct fair_share_status *figures, size_t n)
{
    struct fair_ctl_queue_metrics *q = fair_calloc(n ? n : 1, sizeof *q);
    if (!q)
        return FAIR_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        q[i].queue = fair_strdup(queues[i]);
        q[i].project = fair_strdup(projects[i] ? projects[i] : "");
        q[i].figures = figures[i];
        if (!q[i].queue || !q[i].project) {
            free_queues(q, i + 1);
            return FAIR_ENOMEM;
        }
    }
    free_queues(m->queues, m->nqueues);
    m->queues = q;
    m->nqueues = n;
    return 0;
}

static double gpus(int64_t milli)
{
    return milli == FAIR_UNLIMITED ? 0 : (double)milli / 1000.0;
}

struct gauge {
    const char *name;
    const char *help;
    int what; /* 0 guaranteed, 1 fair share, 2 allocated, 3 borrowed, 4 lent, 5 pending gpus,
                 6 pending pods, 7 running pods */
};

static const struct gauge gauges[] = {
    {"fairshare_queue_guaranteed_gpus", "GPUs guaranteed to the queue.", 0},
    {"fairshare_queue_fair_share_gpus", "GPUs the queue is entitled to now.", 1},
    {"fairshare_queue_allocated_gpus", "GPUs held by the queue's bound pods.", 2},
    {"fairshare_queue_borrowed_gpus", "GPUs the queue uses above its guarantee.", 3},
    {"fairshare_queue_lent_gpus", "Guaranteed GPUs of the queue in use by others.", 4},
    {"fairshare_queue_pending_gpus", "GPUs requested by the queue's pending pods.", 5},
    {"fairshare_queue_pending_pods", "Pods of the queue waiting to be scheduled.", 6},
    {"fairshare_queue_running_pods", "Bound pods of the queue.", 7},
};

int fair_ctl_metrics_render(const struct fair_ctl_metrics *m, struct fair_buf *o)
{
    int rc = 0;
#define P(...)                                                                                     \
    do {                                                                                           \
        if ((rc = fair_buf_appendf(o, __VA_ARGS__)))                                               \
            return rc;                                                                             \
    } while (0)
    /* The version's strings hold only [0-9A-Za-z.:+-]: valid label values. */
    P("# HELP fairshare_build_info The running build: version, git commit and build date.\n"
      "# TYPE fairshare_build_info gauge\n"
      "fairshare_build_info{version=\"%s\",commit=\"%s\",build_date=\"%s\"} 1\n",
      fair_version, fair_git_commit, fair_build_date);
    for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
        P("# HELP %s %s\n# TYPE %s gauge\n", gauges[g].name, gauges[g].help, gauges[g].name);
        for (size_t i = 0; i < m->nqueues; i++) {
            const struct fair_share_status *f = &m->queues[i].figures;
            double v = 0;
            switch (gauges[g].what) {
            case 0:
                v = gpus(f->guaranteed.v[FAIR_RES_GPU]);
                break;
            case 1:
                v = gpus(f->fair_share.v[FAIR_RES_GPU]);
                break;
            case 2:
                v = gpus(f->allocated.v[FAIR_RES_GPU]);
                break;
            case 3:
                v = gpus(f->borrowed.v[FAIR_RES_GPU]);
                break;
            case 4:
                v = gpus(f->lent.v[FAIR_RES_GPU]);
                break;
            case 5: {
                int64_t d = f->demand.v[FAIR_RES_GPU] - f->allocated.v[FAIR_RES_GPU];
                v = gpus(d > 0 ? d : 0);
                break;
            }
            case 6:
                v = f->pending_pods;
                break;
            case 7:
                v = f->running_pods;
                break;
            }
            P("%s{queue=\"%s\",project=\"%s\"} %g\n", gauges[g].name, m->queues[i].queue,
              m->queues[i].project, v);
        }
    }
    P("# HELP fairshare_preemptions_total Pods evicted by the controller.\n"
      "# TYPE fairshare_preemptions_total counter\n"
      "fairshare_preemptions_total{reason=\"reclaim\"} %llu\n"
      "fairshare_preemptions_total{reason=\"fair_share\"} %llu\n"
      "fairshare_preemptions_total{reason=\"priority\"} %llu\n",
      (unsigned long long)m->preemptions_reclaim, (unsigned long long)m->preemptions_fair_share,
      (unsigned long long)m->preemptions_preempt);
    P("# HELP fairshare_evictions_blocked_total Evictions refused by a PodDisruptionBudget.\n"
      "# TYPE fairshare_evictions_blocked_total counter\n"
      "fairshare_evictions_blocked_total %llu\n",
      (unsigned long long)m->evictions_blocked);
    P("# HELP fairshare_evictions_pdb_overridden_total Victims deleted after a "
      "PodDisruptionBudget refused their eviction for eviction.pdbMaxWait.\n"
      "# TYPE fairshare_evictions_pdb_overridden_total counter\n"
      "fairshare_evictions_pdb_overridden_total %llu\n",
      (unsigned long long)m->pdb_overrides);
    P("# HELP fairshare_preemption_notices_total Victims told before their eviction "
      "(fairshare.dev/preemption-notice).\n"
      "# TYPE fairshare_preemption_notices_total counter\n"
      "fairshare_preemption_notices_total %llu\n",
      (unsigned long long)m->notices);
    P("# HELP fairshare_preemption_notices_cancelled_total Notices cancelled because the pod "
      "they made room for went away.\n"
      "# TYPE fairshare_preemption_notices_cancelled_total counter\n"
      "fairshare_preemption_notices_cancelled_total %llu\n",
      (unsigned long long)m->notices_cancelled);
    P("# HELP fairshare_requeues_total Bare pods created again after their eviction.\n"
      "# TYPE fairshare_requeues_total counter\n"
      "fairshare_requeues_total %llu\n",
      (unsigned long long)m->requeues);
    P("# HELP fairshare_requeue_retries_total Requeue creates tried again after a failure that "
      "may pass (no answer, HTTP 429 or 5xx).\n"
      "# TYPE fairshare_requeue_retries_total counter\n"
      "fairshare_requeue_retries_total %llu\n",
      (unsigned long long)m->requeue_retries);
    P("# HELP fairshare_binds_total Pods bound to nodes.\n"
      "# TYPE fairshare_binds_total counter\nfairshare_binds_total %llu\n",
      (unsigned long long)m->binds);
    P("# HELP fairshare_bind_errors_total Binds the API server refused.\n"
      "# TYPE fairshare_bind_errors_total counter\nfairshare_bind_errors_total %llu\n",
      (unsigned long long)m->bind_errors);
    P("# HELP fairshare_bind_conflicts_total Binds refused with 409 (the pod was already bound: "
      "the cache was behind).\n"
      "# TYPE fairshare_bind_conflicts_total counter\nfairshare_bind_conflicts_total %llu\n",
      (unsigned long long)m->bind_conflicts);
    P("# HELP fairshare_gpu_env_not_injected_total Fractional pods bound that the GPU env "
      "webhook had not mutated (each told with a GPUEnvNotInjected Event).\n"
      "# TYPE fairshare_gpu_env_not_injected_total counter\nfairshare_gpu_env_not_injected_total "
      "%llu\n",
      (unsigned long long)m->gpu_env_missing);
    P("# HELP fairshare_events_total Events written.\n"
      "# TYPE fairshare_events_total counter\nfairshare_events_total %llu\n",
      (unsigned long long)m->events_sent);
    P("# HELP fairshare_events_dropped_total Scheduled and Preempted Events dropped because their "
      "low-priority queue was full.\n"
      "# TYPE fairshare_events_dropped_total counter\nfairshare_events_dropped_total %llu\n",
      (unsigned long long)m->events_dropped);
    P("# HELP fairshare_status_writes_total Queue and Project status writes.\n"
      "# TYPE fairshare_status_writes_total counter\nfairshare_status_writes_total %llu\n",
      (unsigned long long)m->status_writes);
    P("# HELP fairshare_api_errors_total Failed API requests by HTTP status (0: no answer).\n"
      "# TYPE fairshare_api_errors_total counter\n");
    for (size_t i = 0; i < m->ncodes; i++)
        P("fairshare_api_errors_total{code=\"%ld\"} %llu\n", m->codes[i],
          (unsigned long long)m->code_counts[i]);
    P("# HELP fairshare_cycle_duration_seconds Time of one scheduling cycle.\n"
      "# TYPE fairshare_cycle_duration_seconds histogram\n");
    for (int i = 0; i < FAIR_CTL_HIST_BUCKETS; i++)
        P("fairshare_cycle_duration_seconds_bucket{le=\"%g\"} %llu\n", fair_ctl_hist_bounds[i],
          (unsigned long long)m->hist[i]);
    P("fairshare_cycle_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
      "fairshare_cycle_duration_seconds_sum %.6f\n"
      "fairshare_cycle_duration_seconds_count %llu\n",
      (unsigned long long)m->hist_count, m->hist_sum, (unsigned long long)m->hist_count);
    P("# HELP fairshare_cycles_total Scheduling cycles run.\n"
      "# TYPE fairshare_cycles_total counter\nfairshare_cycles_total %llu\n",
      (unsigned long long)m->cycles);
    P("# HELP fairshare_leader 1 when this replica is the leader.\n"
      "# TYPE fairshare_leader gauge\nfairshare_leader %d\n",
      m->leader ? 1 : 0);
    P("# HELP fairshare_informers_synced 1 once every informer has listed.\n"
      "# TYPE fairshare_informers_synced gauge\nfairshare_informers_synced %d\n",
      m->synced ? 1 : 0);
    static const char *const inf_names[FAIR_CTL_INFORMERS] = {"projects",
                                                              "queues",
                                                              "nodes",
                                                              "pods",
                                                              "namespaces",
                                                              "persistentvolumeclaims",
                                                              "persistentvolumes",
                                                              "storageclasses"};
    P("# HELP fairshare_informer_objects_skipped_total Objects an informer could not read "
      "(over the per-object cap, or not decodable) and skipped.\n"
      "# TYPE fairshare_informer_objects_skipped_total counter\n");
    for (int i = 0; i < FAIR_CTL_INFORMERS; i++)
        P("fairshare_informer_objects_skipped_total{resource=\"%s\",reason=\"oversized\"} %llu\n"
          "fairshare_informer_objects_skipped_total{resource=\"%s\",reason=\"undecodable\"} "
          "%llu\n",
          inf_names[i], (unsigned long long)m->inf_oversized[i], inf_names[i],
          (unsigned long long)m->inf_undecodable[i]);
    P("# HELP fairshare_informer_page_shrinks_total List pages asked again at half the size.\n"
      "# TYPE fairshare_informer_page_shrinks_total counter\n");
    for (int i = 0; i < FAIR_CTL_INFORMERS; i++)
        P("fairshare_informer_page_shrinks_total{resource=\"%s\"} %llu\n", inf_names[i],
          (unsigned long long)m->inf_page_shrinks[i]);
    P("# HELP fairshare_informer_watch_stalls_total Watches closed and started again because "
      "they delivered nothing, not even a bookmark, for kubeAPI.watchStallTimeout.\n"
      "# TYPE fairshare_informer_watch_stalls_total counter\n");
    for (int i = 0; i < FAIR_CTL_INFORMERS; i++)
        P("fairshare_informer_watch_stalls_total{resource=\"%s\"} %llu\n", inf_names[i],
          (unsigned long long)m->inf_watch_stalls[i]);
    P("# HELP fairshare_nodes_blocked_unreadable Nodes taking no new pods because they hold a pod "
      "the controller cannot read.\n"
      "# TYPE fairshare_nodes_blocked_unreadable gauge\nfairshare_nodes_blocked_unreadable %llu\n",
      (unsigned long long)m->nodes_blocked_unreadable);
    P("# HELP fairshare_pods_pending Pods of ours waiting to be scheduled.\n"
      "# TYPE fairshare_pods_pending gauge\nfairshare_pods_pending %llu\n",
      (unsigned long long)m->pods_pending);
    P("# HELP fairshare_operations_in_flight Binds and evictions not yet confirmed.\n"
      "# TYPE fairshare_operations_in_flight gauge\nfairshare_operations_in_flight %llu\n",
      (unsigned long long)m->inflight);
#undef P
    return 0;
}
