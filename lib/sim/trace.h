/* Traces for the simulator: a node list and a job list read from CSV.
 * Two job formats are accepted, told apart by their header line:
 *   - the Alibaba PAI "openb" pod list (name,cpu_milli,memory_mib,num_gpu,
 *     gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,
 *     scheduled_time]), times in seconds;
 *   - the simple job list (name,queue,submit_s,duration_s,gpu[,cpu,memory,
 *     priority,preemptible,gpu_model,pods]) whose gpu/cpu/memory are
 *     Kubernetes quantities ("0.5", "500m", "16Gi"); a row with pods = N > 1
 *     is a job of N identical pods that start together (a gang), loaded as
 *     N consecutive jobs named NAME-0 .. NAME-(N-1).
 * Nodes use the openb node list's header (sn,cpu_milli,memory_mib,gpu,model;
 * "name" is accepted for "sn"). Columns are found by name, in any order.
 * See docs/simulator.md for the semantics of every column.
 *
 * Every parser has limits (file size, line length, row count, GPUs per
 * node); a bad row fails the whole load with "file:line: what" in the error.
 * Ownership: a loaded struct fair_sim_trace owns all its strings and arrays
 * and is released with fair_sim_trace_release(). */
#ifndef FAIR_SIM_TRACE_H
#define FAIR_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* GPU models and GPU-model sets are interned; a set is a bit mask over the
 * trace's models, so at most this many distinct models. */
#define FAIR_SIM_MAX_MODELS 64

struct fair_sim_limits {
    size_t max_bytes; /* per file; default 256 MiB */
    size_t max_line;  /* bytes per line; default 4096 */
    size_t max_rows;  /* data rows per file; default 2,000,000 */
};

void fair_sim_limits_default(struct fair_sim_limits *lim);

struct fair_sim_node {
    char *name;
    int64_t cpu_milli;
    int64_t memory_bytes;
    int gpu_count; /* 0..FAIR_MAX_GPUS_PER_NODE */
    int model;     /* index into trace->models, -1 when none */
};

/* Sentinel duration: the job never ends on its own. */
#define FAIR_SIM_FOREVER INT64_MAX
/* Most pods in one multi-pod job (the simple format's pods column). */
#define FAIR_SIM_MAX_GANG 4096

struct fair_sim_job {
    char *name;
    int32_t queue;       /* index into trace->queue_names, -1: assigned later */
    int64_t submit_ms;   /* virtual time of arrival */
    int64_t duration_ms; /* run time once started; FAIR_SIM_FOREVER */
    /* Requests: gpu in milli-GPU (a multiple of 1000, or a fraction of one
     * device when below 1000), cpu in millicores, memory in bytes. */
    int64_t gpu_milli;
    int64_t cpu_milli;
    int64_t memory_bytes;
    int32_t priority;
    bool preemptible;
    /* Models the job may run on: a mask over trace->models; 0 = any. */
    uint64_t model_mask;
    int spec; /* index into trace->specs, -1 when unconstrained */
    char qos[16];
    int64_t line; /* line in the job file (1 = header); also the sort tie-break */
    /* Multi-pod jobs (gangs): the job's name, shared by its gang_size pods
     * (member 0 .. gang_size-1, consecutive in trace->jobs), which the
     * engine places all together or not at all. NULL and gang_size 1 for a
     * single pod. Owned by member 0, borrowed by the others. */
    char *gang;
    int32_t gang_size;
    int32_t member;
};

struct fair_sim_trace {
    struct fair_sim_node *nodes;
    size_t nnodes;
    struct fair_sim_job *jobs;
    size_t njobs;
    char *models[FAIR_SIM_MAX_MODELS]; /* interned GPU model names */
    size_t nmodels;
    /* Distinct model sets named by jobs (e.g. "V100M16|V100M32"). */
    char **specs;
    uint64_t *spec_masks;
    size_t nspecs;
    /* Queue names found in a simple job list, in order of appearance. */
    char **queue_names;
    size_t nqueue_names;
    bool simple_format; /* the job list was the simple format */
    bool has_times;     /* the job list had arrival times */
};

void fair_sim_trace_init(struct fair_sim_trace *t);
void fair_sim_trace_release(struct fair_sim_trace *t);

/* Loads the node list from path (lim may be NULL for the defaults). The
 * trace may already hold jobs; nodes are appended to an empty list only. */
int fair_sim_trace_load_nodes(struct fair_sim_trace *t, const char *path,
                              const struct fair_sim_limits *lim, struct fair_error *err);

/* Loads the job list (either format) from path. Load nodes first, so that
 * GPU models named by jobs share the nodes' model indexes. Jobs end up
 * sorted by submit time (stable: ties keep file order, a gang's pods stay
 * together in member order). In the simple format, pod names (a gang's
 * NAME-i included) must be unique; max_rows caps the pods, not the rows. */
int fair_sim_trace_load_jobs(struct fair_sim_trace *t, const char *path,
                             const struct fair_sim_limits *lim, struct fair_error *err);

/* The same two loaders over a buffer (name is used in messages). */
int fair_sim_trace_parse_nodes(struct fair_sim_trace *t, const char *name, const char *data,
                               size_t len, const struct fair_sim_limits *lim,
                               struct fair_error *err);
int fair_sim_trace_parse_jobs(struct fair_sim_trace *t, const char *name, const char *data,
                              size_t len, const struct fair_sim_limits *lim,
                              struct fair_error *err);

/* Index of model name in t->models, interning it when new; -1 when the
 * table is full (FAIR_SIM_MAX_MODELS). */
int fair_sim_trace_model(struct fair_sim_trace *t, const char *name);

/* Total GPU capacity of the nodes, in milli-GPU. */
int64_t fair_sim_trace_gpu_capacity(const struct fair_sim_trace *t);

/* FNV-1a of s: the documented rule that assigns openb pods to queues. */
uint64_t fair_sim_hash(const char *s);

#endif
