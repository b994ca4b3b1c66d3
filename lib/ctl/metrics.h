/* The controller's metrics in the Prometheus text exposition format
 * (version 0.0.4): per-queue gauges (guaranteed, fair share, allocated,
 * borrowed, pending pods and GPUs), counters (cycles, binds, preemptions by
 * reason, evictions refused by a PodDisruptionBudget, API errors by HTTP
 * code) and a histogram of cycle durations.
 *
 * The struct is caller-owned (_init/_release); it owns the copies of queue
 * names it holds. Updated on the loop, rendered on request. */
#ifndef FAIR_CTL_METRICS_H
#define FAIR_CTL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "engine/engine.h"

#define FAIR_CTL_HIST_BUCKETS 12
#define FAIR_CTL_MAX_CODES 16
/* projects, queues, nodes, pods, namespaces, persistentvolumeclaims,
 * persistentvolumes, storageclasses (the controller's informer order) */
#define FAIR_CTL_INFORMERS 8

struct fair_ctl_queue_metrics {
    char *queue;
    char *project;
    struct fair_share_status figures;
};

struct fair_ctl_metrics {
    uint64_t cycles;
    uint64_t binds;
    uint64_t bind_errors;
    uint64_t bind_conflicts;  /* 409: already bound; not retried until seen */
    uint64_t gpu_env_missing; /* fractions bound without the webhook's mark */
    uint64_t preemptions_reclaim;
    uint64_t preemptions_preempt;
    uint64_t preemptions_fair_share; /* reclaim beyond a guarantee, up to a fair share */
    uint64_t evictions_blocked;      /* 429 from a PodDisruptionBudget */
    uint64_t pdb_overrides;          /* victims deleted after eviction.pdbMaxWait */
    uint64_t notices;                /* preemption notices given */
    uint64_t notices_cancelled;      /* ...and cancelled (the need went away) */
    uint64_t requeues;               /* bare pods created again after eviction */
    uint64_t requeue_retries;        /* requeue creates tried again */
    uint64_t events_sent;
    uint64_t events_dropped; /* Scheduled/Preempted Events over the queue's cap */
    uint64_t status_writes;
    /* API errors by HTTP status (0: no answer). */
    long codes[FAIR_CTL_MAX_CODES];
    uint64_t code_counts[FAIR_CTL_MAX_CODES];
    size_t ncodes;
    /* Cycle durations: cumulative buckets in seconds. */
    uint64_t hist[FAIR_CTL_HIST_BUCKETS];
    uint64_t hist_count;
    double hist_sum;
    double last_cycle_s;
    /* Gauges. */
    bool leader;
    bool synced;
    uint64_t pods_pending;
    uint64_t inflight;
    struct fair_ctl_queue_metrics *queues;
    size_t nqueues;
    /* Per informer (projects, queues, nodes, pods): objects it could not
     * read and skipped, list pages it asked again at half the size, and
     * the nodes taking no new pods because of a pod it cannot read. */
    uint64_t inf_oversized[FAIR_CTL_INFORMERS];
    uint64_t inf_undecodable[FAIR_CTL_INFORMERS];
    uint64_t inf_page_shrinks[FAIR_CTL_INFORMERS];
    uint64_t inf_watch_stalls[FAIR_CTL_INFORMERS]; /* watches closed for delivering nothing */
    uint64_t nodes_blocked_unreadable;
};

/* Upper bounds of the histogram buckets, in seconds (+Inf is implicit). */
extern const double fair_ctl_hist_bounds[FAIR_CTL_HIST_BUCKETS];

void fair_ctl_metrics_init(struct fair_ctl_metrics *m);
void fair_ctl_metrics_release(struct fair_ctl_metrics *m);

void fair_ctl_metrics_observe_cycle(struct fair_ctl_metrics *m, double seconds);
void fair_ctl_metrics_api_error(struct fair_ctl_metrics *m, long http_status);
/* Replaces the per-queue gauges (names copied). Returns 0 or FAIR_ENOMEM
 * (then the old gauges are kept). */
int fair_ctl_metrics_set_queues(struct fair_ctl_metrics *m, const char *const *queues,
                                const char *const *projects,
                                const struct fair_share_status *figures, size_t n);
/* Appends the exposition text to out. */
int fair_ctl_metrics_render(const struct fair_ctl_metrics *m, struct fair_buf *out);

#endif
