/* The end-to-end suite's access to a real Kubernetes cluster (the one
 * $KUBECONFIG names; `make test` starts ../shared/k8s's control plane for
 * it). Scenarios create their objects through our own client (lib/kube),
 * run the real fairshare-controller of this build as a child process, run
 * kubectl where the admin path is under test, and poll the API server
 * (never sleeping a fixed time) until a condition holds or a deadline
 * passes.
 *
 * What the cluster must offer (checked by e2e_setup, which fails with a
 * message saying what is missing): exactly two schedulable nodes with 8
 * `nvidia.com/gpu` each and no GPU in use, a kubelet that runs bound pods
 * (the simulated one of ../shared/k8s, or a real one), the Job controller,
 * the garbage collector, the disruption controller and kube-scheduler.
 *
 * Every object a scenario creates is recorded and deleted by
 * e2e_scenario_end() (also when the scenario failed midway, from the
 * cmocka teardown), and the scenario waits until their pods are gone, so
 * that the next one finds all 16 GPUs free. Names carry a run id, so that
 * namespaces still terminating from an earlier run never collide.
 *
 * Test code only: every call blocks, and failures fail the cmocka test. */
#ifndef FAIR_E2E_H
#define FAIR_E2E_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/buf.h"

/* Deadline of every wait: generous, since the machine is shared. */
#define E2E_WAIT_MS 60000
#define E2E_GPUS_PER_NODE 8
#define E2E_NODES 2

/* Polls expr every 50 ms until it holds or ms pass; evaluates to whether
 * it held. */
#define E2E_WAIT(expr, ms)                                                                         \
    ({                                                                                             \
        long long deadline_ = e2e_now_ms() + (ms);                                                 \
        bool ok_ = false;                                                                          \
        for (;;) {                                                                                 \
            if (expr) {                                                                            \
                ok_ = true;                                                                        \
                break;                                                                             \
            }                                                                                      \
            if (e2e_now_ms() > deadline_)                                                          \
                break;                                                                             \
            e2e_nap(50);                                                                           \
        }                                                                                          \
        ok_;                                                                                       \
    })

long long e2e_now_ms(void);
void e2e_nap(long ms);

/* cmocka group setup and teardown: connect with $KUBECONFIG, check the
 * cluster's shape, make sure the CRDs are installed; and the reverse. */
int e2e_setup(void **state);
/* The same without installing the CRDs (for the admin path, which
 * installs them with kubectl). */
int e2e_setup_no_crds(void **state);
int e2e_teardown(void **state);

/* The run id ("r" + 6 hex digits) and the work folder (logs, ledgers). */
const char *e2e_runid(void);
const char *e2e_dir(void);
/* The scheduler name the suite's pods and controllers use. */
const char *e2e_scheduler(void);
/* The names of the two GPU nodes, sorted. */
const char *e2e_node(int i);

/* ---- API requests (our own client) ---- */

/* One request; body may be NULL. PATCH is a JSON merge patch. Returns the
 * HTTP status (0 on a transport failure); *out (may be NULL) gets the
 * parsed answer (new reference, or NULL when not JSON). */
long e2e_req(const char *method, const char *path, const char *body, json_t **out);
/* GET path; the object (new reference) or NULL when the status is not 200. */
json_t *e2e_get(const char *path);
/* POST body (printf format) to path; fails the test unless 201. */
void e2e_create(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string at a dotted path of j (borrowed), or NULL. */
const char *e2e_str(const json_t *j, const char *dotted);

/* ---- a scenario's objects ---- */

/* Starts a scenario: names are "e2e-NAME-RUNID" (written to prefix, n
 * bytes). */
void e2e_scenario_begin(const char *name, char *prefix, size_t n);
/* Deletes what the scenario created (pods with no grace period), waits
 * until its pods are gone, stops its controllers. Safe after a failure. */
void e2e_scenario_end(void);
/* cmocka teardown that calls e2e_scenario_end(). */
int e2e_scenario_teardown(void **state);

void e2e_namespace(const char *ns);
/* A Project guaranteeing gpus ("8") to namespace ns, with defaultQueue
 * dq (NULL: none). */
void e2e_project(const char *name, const char *ns, const char *gpus, const char *dq);
/* A Queue of project with guaranteed gpus and weight (0: the default). */
void e2e_queue(const char *name, const char *project, const char *gpus, int weight);
/* Records an object created some other way (kubectl), for deletion:
 * path is its API path. */
void e2e_track(const char *path);

/* A one-container pod of this suite's scheduler in queue (NULL: the
 * project's default), asking gpus whole GPUs ("1"; NULL: none).
 * labels, annotations: extra members (",\"k\":\"v\"" or NULL). */
void e2e_pod(const char *ns, const char *name, const char *queue, const char *gpus,
             const char *labels, const char *annotations);
/* The same with res, the container's resources as JSON
 * ("{\"limits\":{...},\"requests\":{...}}"). */
void e2e_pod_res(const char *ns, const char *name, const char *queue, const char *res,
                 const char *labels, const char *annotations);
/* n such pods named PREFIX-0..n-1. */
void e2e_pods(const char *ns, const char *prefix, int n, const char *queue, const char *gpus,
              const char *labels);

/* A batch/v1 Job name in ns of n one-GPU pods (parallelism and
 * completions n, backoffLimit 100, restartPolicy Never, grace 0) in queue
 * (NULL: ns) with our scheduler; spec_extra: "" or more members of the pod
 * spec, each after a comma (NULL: none). */
void e2e_job(const char *ns, const char *name, int n, const char *queue, const char *spec_extra);

/* Pod counts of namespace ns with label selector sel (NULL: all). */
struct e2e_counts {
    int total;       /* present (terminating included) */
    int bound;       /* spec.nodeName set, not terminating, not finished */
    int running;     /* status.phase Running and not terminating */
    int pending;     /* no spec.nodeName */
    int terminating; /* deletionTimestamp set */
};
struct e2e_counts e2e_count(const char *ns, const char *sel);
/* Events with reason (NULL: any) about objects in ns, summed over count. */
int e2e_events(const char *ns, const char *reason);
/* The reason of the pod's PodScheduled condition (malloc'd) or NULL. */
char *e2e_pod_reason(const char *ns, const char *name);
/* Prints every pod of ns (node, phase, PodScheduled reason and message) to stderr. */
void e2e_dump_pods(const char *ns);
/* The GPUs that live bound pods request on each of the two nodes (any
 * scheduler, fractions excluded), into gpus[E2E_NODES]. */
void e2e_node_gpus(int gpus[E2E_NODES]);

/* ---- kubectl ---- */

/* Whether a kubectl was found (KUBECTL, PATH, or the newest
 * /usr/lib/google-cloud-sdk/bin/kubectl.1.2x). */
bool e2e_have_kubectl(void);
/* Runs kubectl with $KUBECONFIG and args (NULL-terminated) in the source
 * folder; stdout and stderr together into out. Returns the exit status. */
int e2e_kubectl(struct fair_buf *out, const char *const *args);

/* ---- the controller ---- */

struct e2e_ctl {
    pid_t pid;
    int port;        /* metricsAddress: /metrics, reports, the dashboard */
    int health_port; /* healthAddress: /healthz, /readyz */
    bool secure;     /* set before starting: HTTPS with token reviews (a
                        self-signed certificate); else plain HTTP on loopback
                        (http.secureServing false), which e2e_ctl_metric reads */
    /* Set before starting: the address of --listen (a secure ctl only, e.g.
     * for the API server's service proxy); "" for 127.0.0.1. */
    char listen_host[64];
    char log[512];
    char ledger[512];
    char config[512];
};

/* Starts BUILD/fairshare-controller with a config of this suite's
 * scheduler, leader election off, the ledger in the work folder, and the
 * YAML lines extra (NULL: none) appended; waits until /readyz (on the
 * health port) says 200. tag names its files. Restarting a stopped ctl
 * keeps its ledger and ports. */
void e2e_ctl_start(struct e2e_ctl *c, const char *tag, const char *extra);
/* SIGTERM and wait; returns the exit status (-1: killed). */
int e2e_ctl_stop(struct e2e_ctl *c);
void e2e_ctl_kill9(struct e2e_ctl *c);
/* A metric's value (series "name" or "name{labels}"), -1 when absent (and
 * always for a secure ctl, whose /metrics needs a token). */
double e2e_ctl_metric(struct e2e_ctl *c, const char *series);
/* Prints the last lines of its log to stderr. */
void e2e_ctl_dump(const struct e2e_ctl *c, int lines);

#endif
