/* The Fairshare controller: informers for Projects, Queues, Pods and Nodes
 * feed a work queue; a scheduling cycle runs when something changed
 * (changes within cycleMinInterval are coalesced) and at least every
 * cycleInterval. A cycle builds the engine snapshot from the stores
 * (ctl/snapshot.h), runs the engine and carries out its actions: binds
 * (with the gpu-devices annotation), evictions through the Eviction API
 * (after marking the victim with a DisruptionTarget condition), Events and
 * PodScheduled conditions for pending pods, Queue and Project status, the
 * metrics and the GPU-hour ledger.
 *
 * Leadership: with leader election on, every replica keeps its informers
 * warm but only the leader runs cycles and writes. Losing the lease while
 * running makes fair_ctl_exit_code() non-zero and stops the loop, as
 * client-go controllers exit, so that the replica restarts clean.
 *
 * Level-triggered: each cycle starts from the stores only, plus the
 * operations still in flight (ctl/podmem.h), so a restart rebuilds
 * everything from the API server and never repeats a bind or an eviction
 * that the server has already applied.
 *
 * Ownership: fair_ctl_new() borrows base and the config (both must outlive
 * the controller). Everything else is owned by the controller. */
#ifndef FAIR_CTL_CONTROLLER_H
#define FAIR_CTL_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "ctl/config.h"

struct event_base;
struct fair_ctl;
struct fair_kconfig;
struct fair_ledger;

struct fair_ctl_options {
    const struct fair_ctl_config *cfg; /* required, borrowed */
    const char *kubeconfig;            /* NULL: kube/config.h lookup order */
    const char *identity;              /* leader identity; NULL: $POD_NAME or hostname */
    const struct fair_clock *clock;    /* NULL: the system clock */
};

int fair_ctl_new(struct event_base *base, const struct fair_ctl_options *o, struct fair_ctl **out,
                 struct fair_error *err);
/* Opens the ledger, starts the informers and the leader election. */
int fair_ctl_start(struct fair_ctl *c, struct fair_error *err);
/* Clean shutdown: stops cycles, releases the Lease when held, flushes the
 * ledger, then calls done (may be NULL) from the loop. */
void fair_ctl_shutdown(struct fair_ctl *c, void (*done)(void *ctx), void *ctx);
/* Frees (cancelling whatever is in flight). NULL is a no-op. */
void fair_ctl_free(struct fair_ctl *c);

/* True once every informer has listed. */
bool fair_ctl_ready(const struct fair_ctl *c);
bool fair_ctl_is_leader(const struct fair_ctl *c);
/* Non-zero when the controller stopped on its own (leadership lost). */
int fair_ctl_exit_code(const struct fair_ctl *c);
/* Appends the Prometheus text of the metrics. */
int fair_ctl_metrics_text(struct fair_ctl *c, struct fair_buf *out);
/* The ledger (NULL when off), for the report endpoint. Borrowed. */
struct fair_ledger *fair_ctl_ledger(struct fair_ctl *c);
/* The API server configuration the controller loaded (borrowed, valid
 * until fair_ctl_free()): the HTTP endpoints make their own client from
 * it for TokenReviews and SubjectAccessReviews. */
const struct fair_kconfig *fair_ctl_kconfig(const struct fair_ctl *c);

#endif
