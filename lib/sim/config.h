/* The Projects and Queues a simulation runs under: read from the same YAML
 * manifests admins `kubectl apply` (apiVersion fairshare.dev/v1alpha1,
 * kind Project or Queue), decoded by lib/kube, and turned into the
 * engine's structs. Also the rule that assigns trace jobs to queues.
 *
 * Ownership: a config owns the decoded objects and the engine arrays,
 * whose strings point into those objects; release with
 * fair_sim_config_release(). */
#ifndef FAIR_SIM_CONFIG_H
#define FAIR_SIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "kube/objects.h"
#include "sim/trace.h"

#define FAIR_SIM_MAX_QUEUES 1000

struct fair_sim_config {
    struct fair_project *projects;
    size_t nprojects;
    struct fair_queue *queues;
    size_t nqueues;
    /* Owned storage behind the names above. */
    struct fair_kproject **kprojects;
    struct fair_kqueue **kqueues;
    char **names; /* names made up for the defaults */
    size_t nnames;
    /* issue 15: the per-model quotas of the objects (lendingLimit and
     * gpu/<model> keys of the file), behind their fair_quota.models. */
    struct fair_model_quota *mquotas;
    size_t nmquotas;
};

void fair_sim_config_init(struct fair_sim_config *c);
void fair_sim_config_release(struct fair_sim_config *c);

/* Reads a multi-document YAML file of Projects and Queues. Every object
 * must be valid (a decode "problem" is an error here: a simulation under a
 * config the controller would reject is meaningless), every Queue must
 * name a Project of the file, names must be unique, and there must be at
 * least one Queue. */
int fair_sim_config_load(struct fair_sim_config *c, const char *path, struct fair_error *err);
/* The same over a buffer; name is used in messages. */
int fair_sim_config_parse(struct fair_sim_config *c, const char *name, const char *data, size_t len,
                          struct fair_error *err);

/* The config used without a projects file: one Project "default" with
 * one Queue per queue name of a simple job list (or one Queue "default"
 * for an openb trace), each Queue guaranteeing an equal share of the
 * cluster's GPUs (the first takes the remainder), no limits, weight 1. */
int fair_sim_config_default(struct fair_sim_config *c, const struct fair_sim_trace *t,
                            struct fair_error *err);

/* How far the queues whose Queue and Project leave spec.reclaimUpTo unset
 * take GPUs back from borrowers (the controller's reclaim.upTo): each
 * Queue's spec.reclaimUpTo wins, then its Project's, then mode. The
 * config starts with FAIR_RECLAIM_FAIR_SHARE, the controller's default. */
void fair_sim_config_reclaim_default(struct fair_sim_config *c, enum fair_reclaim_mode mode);

/* Index of the queue named name, or -1. */
int32_t fair_sim_config_queue(const struct fair_sim_config *c, const char *name);

/* Sets the queue of every job of t (a new array of t->njobs indexes into
 * c->queues, owned by the caller): for a simple job list, by its queue
 * column (a queue missing from the config is an error); for an openb
 * trace, FNV-1a(pod name) modulo the number of queues, queues in file
 * order. */
int fair_sim_config_assign(const struct fair_sim_config *c, const struct fair_sim_trace *t,
                           int32_t **queue_of, struct fair_error *err);

#endif
