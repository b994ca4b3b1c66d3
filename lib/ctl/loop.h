/* The controller loop's state, shared by the files that run it (internal
 * to lib/ctl; users include ctl/controller.h): controller.c runs the loop
 * (informers, the cycle's timer, leadership, lifecycle), cycle.c runs one
 * scheduling cycle (snapshot, engine, actions, ledger samples), tell.c
 * sends Events and the conditions of waiting pods, podgroups.c reads the
 * optional PodGroup CRDs, bind.c carries out the engine's binds
 * (reservation pods, claims given their node), evict.c its evictions
 * (preemption notices, requeues of bare pods) and statuswrite.c writes
 * what the status of Queues, Projects and PodGroups should say.
 * Every request's context is a struct req on c->reqs; its callback frees
 * it. */
#ifndef FAIR_CTL_LOOP_H
#define FAIR_CTL_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "cache/informer.h"
#include "cache/leader.h"
#include "cache/workqueue.h"
#include "ctl/controller.h"
#include "ctl/index.h"
#include "ctl/metrics.h"
#include "ctl/podmem.h"
#include "ctl/snapshot.h"
#include "ctl/status.h"
#include "ctl/tqstate.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/decode.h"
#include "ledger/ledger.h"

#define COMP "controller"
#define CYCLE_KEY "cycle"
/* Writes about pending pods (conditions + Events) per cycle: binds and
 * evictions always go first; the rest waits for the next cycle. */
#define MAX_TELLS_PER_CYCLE 200
/* Binds in flight at once. Every request waits for a connection inside the
 * client, and its timeout runs while it waits: queueing 10,000 binds at
 * once makes the last ones time out. The rest waits for the next cycle,
 * which the answers trigger. */
#define MAX_BINDS_IN_FLIGHT 256
/* Least time between change-triggered cycles while binds are queued. */
#define BUSY_CYCLE_GAP_MS 200
/* Scheduled and Preempted Events wait in a low-priority queue: sent only
 * while no planned bind waits for a slot, a few at a time, so that a burst
 * of binds is not slowed by twice as many writes; past the cap they are
 * dropped and counted (client-go's broadcaster queues 1,000 and drops the
 * rest the same way). */
#define EVENT_QUEUE_MAX 1000
#define MAX_EVENTS_IN_FLIGHT 16
/* Other requests (Events, conditions) outstanding at once. */
#define MAX_REQS_OUTSTANDING 2048
/* Status writes per cycle. */
#define MAX_STATUS_PER_CYCLE 100
/* How often old ledger rows are pruned. */
#define PRUNE_INTERVAL_MS (6LL * 3600 * 1000)
/* The largest pod a requeue copies (etcd's default object limit is 1.5
 * MiB; the copy is kept in memory while its victim is evicted). */
#define REQUEUE_MAX_BYTES ((size_t)2 << 20)
/* A requeue's create that fails for a reason that may pass (no answer, or
 * HTTP 429, 500, 502, 503, 504) is tried again after 1 s, then twice as
 * long each time up to 30 s, REQUEUE_TRIES tries in all (about 1.5 min). */
#define REQUEUE_TRIES 8
#define REQUEUE_RETRY_MS 1000LL
#define REQUEUE_RETRY_MAX_MS 30000LL

/* Namespaces: their labels, for pod (anti-)affinity namespaceSelectors;
 * claims, volumes and storage classes, for where a pod's volumes are. */
enum {
    INF_PROJECTS,
    INF_QUEUES,
    INF_NODES,
    INF_PODS,
    INF_NAMESPACES,
    INF_PVCS,
    INF_PVS,
    INF_SCS,
    INF_COUNT
};

/* PodGroups, optional CRDs (index: enum fair_kpodgroup_flavor): an
 * informer runs only once discovery says the resource is served. Until
 * then (404) the controller says so once and asks again every
 * PG_RECHECK_MS; other discovery failures are retried sooner. */
#define PG_COUNT 2
#define PG_RECHECK_MS (5LL * 60 * 1000)
#define PG_RETRY_MS (30LL * 1000)
struct pgwatch {
    struct fair_ctl *c;
    int flavor;
    struct fair_informer *inf; /* NULL until the CRD is served */
    struct event *timer;       /* the next discovery */
    bool said_absent;          /* "not installed" logged since it was last seen */
    bool synced;
};

/* Context of one API request; listed so that shutdown frees those whose
 * callbacks will never run. */
struct req {
    struct fair_ctl *c;
    struct req *prev, *next;
    int kind;
    char *uid, *ns, *name, *node, *devices;
    char *queue, *project, *team, *cost_center, *gpu_model;
    char *for_queue, *for_pod;
    char *obj_kind;                  /* status writes: "Queue" / "Project" */
    char *message;                   /* queued Events */
    const char *ev_type, *ev_reason; /* queued Events; static strings */
    char *lineage;                   /* evictions, binds: whose eviction count grows */
    char *gang;                      /* binds: the pod's gang, NULL: none */
    char *creator;                   /* binds: ledger.creatorLabel's value, NULL: none */
    int32_t gang_size;               /* binds */
    bool non_preemptible;            /* binds */
    bool gpu_env_missing;            /* binds: a fraction the webhook did not see */
    uint64_t devmask;                /* binds: the devices given */
    int64_t gpu_milli, inquota_milli;
    int evict_reason;
    /* Evictions: the owed pod's uid ("": none); the grace period to ask
     * for (-1: the pod's own); the notice's due time (monotonic; for a
     * requeue waiting in c->requeues, when to try again); the pod to
     * create when the eviction is accepted (requeue: name and body, NULL:
     * none), and what the Preempted Event adds about it. */
    char *for_uid;
    int64_t grace_s;
    int64_t due_ms;
    char *rq_name, *rq_body, *rq_note;
    int tries;               /* requeues: creates sent so far */
    bool pdb_override;       /* an eviction sent as a DELETE: a PDB refused it too long */
    struct req *evict_after; /* a mark: the eviction to send once it is answered */
    bool keep_spec;          /* a mark under notice: keep the answer for the requeue */
    struct req *qnext;       /* binds waiting for a slot; queued Events; notices */
    bool bind_slot;          /* holds one of the MAX_BINDS_IN_FLIGHT slots */
    bool event_slot;         /* holds one of the MAX_EVENTS_IN_FLIGHT slots */
    /* Binds of fractions with reservations on: the device slot (plus one;
     * 0: none) and its text for the gpu-slot annotation; while waiting
     * for the reservation (REQ_RESV_WAIT), since when and when it was
     * last asked to be created (monotonic). */
    int slot1;
    char slot_s[12];
    int64_t wait_since_ms, resv_asked_ms;
    /* Binds of fractions on nodes labelled fairshare.dev/gpu-isolation:
     * hami-core: the annotations for HAMi-core's CUDA_DEVICE_MEMORY_LIMIT
     * and CUDA_DEVICE_SM_LIMIT ("" when not written). */
    char mem_limit_s[24];
    char sm_limit_s[24];
};

enum {
    REQ_QUEUED_BIND,
    REQ_BIND,
    REQ_EVICT_MARK,
    REQ_EVICT,
    REQ_EVENT,
    REQ_QUEUED_EVENT,
    REQ_POD_STATUS,
    REQ_OBJ_STATUS,
    REQ_UNMARK,
    REQ_NOTICE,  /* an eviction waiting for its preemption notice to pass */
    REQ_REQUEUE, /* the pod created again after its eviction */
    /* Reservation pods (docs/fractions.md): a fraction's bind waiting for
     * its reservation pod's device; creating one; deleting one. */
    REQ_RESV_WAIT,
    REQ_RESV_CREATE,
    REQ_RESV_DELETE,
    REQ_OBJ_PATCH, /* a claim's selected-node, a volume's claimRef; uid: the pod */
};

/* How often a waiting bind asks again for its reservation pod. */
#define RESV_RECREATE_MS 5000

struct fair_ctl {
    /* issue 15: the GPU model figures of the status being written. */
    const struct fair_model_status *status_models;
    const char *const *status_model_names;
    size_t status_nmodels;
    struct fair_ctl_gpu_alias gpu_aliases[FAIR_CTL_MAX_GPU_ALIASES];
    size_t ngpu_aliases;
    bool gpu_aliases_parsed;
    struct event_base *base;
    struct fair_ctl_tq *tq; /* time-based quota (ctl/tqstate.h) */
    const struct fair_ctl_config *cfg;
    const struct fair_clock *clock;
    char *kubeconfig;
    char *identity;
    struct fair_kconfig kcfg;
    struct fair_kclient *kc;
    struct fair_kclient *lease_kc; /* leader election's own client */
    struct fair_informer *inf[INF_COUNT];
    bool synced[INF_COUNT];
    struct fair_leader *leader;
    struct fair_ledger *ledger;
    struct fair_workqueue *wq;
    struct event *cycle_ev;
    int64_t cycle_due;          /* monotonic ms the timer is armed for; -1: not armed */
    int64_t last_cycle_ms;      /* monotonic end of the last cycle */
    int64_t last_cycle_cost_ms; /* how long it took */
    bool more_work;             /* the last cycle left writes for later */
    struct event *flush_ev;
    bool leader_now;
    bool started;
    bool stopping;
    int exit_code;
    bool need_reconcile;
    int64_t last_sample_ms; /* wall */
    int64_t last_prune_ms;  /* monotonic */
    struct fair_ctl_podmem pods;
    struct fair_ctl_status_table status;
    struct fair_ctl_metrics metrics;
    struct req *reqs; /* outstanding */
    size_t nreqs;
    size_t binds_in_flight;              /* binds sent and not answered */
    struct req *bindq_head, *bindq_tail; /* planned binds waiting for a slot */
    size_t nbindq;
    size_t events_in_flight;         /* queued Events sent and not answered */
    struct req *evq_head, *evq_tail; /* Events waiting to be sent */
    size_t nevq;
    struct req *notices;  /* evictions under notice (REQ_NOTICE, by qnext) */
    struct req *requeues; /* requeues to try again (REQ_REQUEUE, by qnext) */
    /* Binds waiting for a reservation pod's device (REQ_RESV_WAIT, by
     * qnext), and how many. */
    struct req *resv_wait;
    size_t nresv_wait;
    /* Nodes holding a pod the pods informer cannot read (borrowed names). */
    const char *full_nodes[FAIR_INFORMER_MAX_UNREADABLE];
    /* Scratch arrays for the snapshot input, reused between cycles. */
    const void **arr[INF_COUNT];
    size_t arr_cap[INF_COUNT];
    struct pgwatch pg[PG_COUNT];
    /* While a snapshot is built: owner uid -> its live pods (keys borrowed
     * from the pod store), for owner_evictions. */
    struct fair_ctl_index owner_width;
    const void **pg_arr; /* both flavors' PodGroups, for the snapshot */
    size_t pg_arr_cap, npg;
    void (*shutdown_done)(void *ctx);
    void *shutdown_ctx;
};

static inline int64_t mono(const struct fair_ctl *c)
{
    return fair_mono_ms(c->clock);
}

static inline int64_t wall(const struct fair_ctl *c)
{
    return fair_now_ms(c->clock);
}

/* strdup that accepts NULL (gives ""), for request contexts. */
static inline char *dup0(const char *s)
{
    return fair_strdup(s ? s : "");
}

/* The lineage whose evictions count for pod: its controller owner (a Job's
 * replacement pods share the Job's count), else the pod itself. */
static inline const char *lineage_of(const struct fair_kpod *p)
{
    return p->owner_uid && *p->owner_uid ? p->owner_uid : p->meta.uid;
}

static inline bool is_ours(const struct fair_ctl *c, const struct fair_kpod *p)
{
    return p->scheduler_name && strcmp(p->scheduler_name, c->cfg->scheduler_name) == 0;
}

/* ---- controller.c ---- */

/* PodGroups: the API resource of each flavor (index: enum
 * fair_kpodgroup_flavor). */
extern const struct fair_kres *const fair_ctl_pg_res[PG_COUNT];

/* A request context of kind on c->reqs (NULL: out of memory); freed by
 * fair_ctl_req_free(), which unlinks it. */
struct req *fair_ctl_req_new(struct fair_ctl *c, int kind);
void fair_ctl_req_free(struct req *r);
/* Arms a cycle in delay_ms, unless one is armed for that time or sooner. */
void fair_ctl_arm_cycle(struct fair_ctl *c, int64_t delay_ms);
/* Something changed: a cycle soon, not sooner than cycleMinInterval (or
 * the last cycle's cost) after the last one. */
void fair_ctl_mark_dirty(struct fair_ctl *c);
void fair_ctl_note_api_error(struct fair_ctl *c, const struct fair_kresponse *resp);
/* Completes a request whose answer needs no more than bookkeeping (an
 * Event, a condition, a status, a claim's or volume's patch). */
void fair_ctl_on_simple_done(const struct fair_kresponse *resp, void *ctx);

/* ---- tell.c ---- */

/* An Event about pod p, sent now. */
void fair_ctl_send_event(struct fair_ctl *c, const struct fair_kpod *p, const char *type,
                         const char *reason, const char *message);
/* An Event about pod ns/name (uid) in the low-priority queue (type and
 * reason: static strings; dropped and counted past EVENT_QUEUE_MAX). */
void fair_ctl_queue_event(struct fair_ctl *c, const char *ns, const char *name, const char *uid,
                          const char *type, const char *reason, const char *message);
/* Sets one pod condition (type, status, reason, message, now) with a
 * strategic merge patch of pods/status, which merges conditions by type;
 * kind: the request's REQ_* kind. */
void fair_ctl_patch_condition(struct fair_ctl *c, const struct fair_kpod *p, int kind,
                              const char *type, const char *status, const char *reason,
                              const char *message);
/* Tells the owner of a pending pod why it waits: PodScheduled=False when
 * its reason changes, a FailedScheduling Event then or at most once per
 * events.perPodInterval. Returns how many writes were sent. */
int fair_ctl_tell_pending(struct fair_ctl *c, const struct fair_kpod *p, int why,
                          const char *message);
/* Sends queued Events while no bind waits for a slot and a slot is free. */
void fair_ctl_pump_events(struct fair_ctl *c);

/* A resourceVersion as a number, or 0 when it is not one. The API calls
 * them opaque; kube-scheduler's assume cache and ours read them as the
 * etcd revision they are, which grows with every write. */
static inline uint64_t fair_ctl_rv_number(const char *s)
{
    if (!s || !*s || strlen(s) > 19)
        return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    return v;
}

/* ---- cycle.c ---- */

/* Whether every informer has synced (the cycle runs only then). */
bool fair_ctl_all_synced(const struct fair_ctl *c);
/* One scheduling cycle: snapshot, engine, actions, ledger samples. */
void fair_ctl_run_cycle(struct fair_ctl *c);
/* At a clean stop, the leader's last ledger reconcile: the heartbeat moves
 * to now, so the running time of live pods counts up to the stop. */
void fair_ctl_ledger_final_heartbeat(struct fair_ctl *c);

/* ---- podgroups.c ---- */

/* Starts discovery of both PodGroup flavors (informers follow once served). */
int fair_ctl_podgroups_start(struct fair_ctl *c, struct fair_error *err);
/* Both flavors' PodGroups into c->pg_arr (c->npg); FAIR_ENOMEM. */
int fair_ctl_collect_podgroups(struct fair_ctl *c);
/* Stops the informers and timers; frees c->pg_arr. */
void fair_ctl_podgroups_free(struct fair_ctl *c);

/* ---- bind.c ---- */

/* Commits one BIND of the plan: the pod counts as bound on its node from
 * now on (podmem overlay), and the requests go out as slots free up.
 * preemptible: what the pod is charged as; -1: as the snapshot says. */
void fair_ctl_bind(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                   const struct fair_action *a, int64_t *queue_alloc, int preemptible);
/* Sends queued binds while slots are free. */
void fair_ctl_pump_binds(struct fair_ctl *c);
/* Drops the binds not sent yet (leadership lost, shutdown): never placed. */
void fair_ctl_drop_bind_queue(struct fair_ctl *c);
/* The pod's creator for the ledger (ledger.creatorLabel's value,
 * borrowed), or NULL. */
const char *fair_ctl_creator_of(const struct fair_ctl *c, const struct fair_pod *p);
/* Each cycle: binds waiting for a reservation pod move on; reservations no
 * longer needed are deleted. */
void fair_ctl_resv_cycle(struct fair_ctl *c, const struct fair_ctl_snapshot *s);
/* A pod whose claims wait for their node: selected-node written, static
 * volumes prebound, the pod's room held until they are bound. */
void fair_ctl_select_node(struct fair_ctl *c, struct fair_ctl_snapshot *s,
                          const struct fair_action *a);
/* Binds the held pods whose claims are bound now; returns the binds. */
size_t fair_ctl_bind_provisioned(struct fair_ctl *c, struct fair_ctl_snapshot *s,
                                 int64_t *queue_alloc);

/* ---- statuswrite.c ---- */

/* Writes the status of the Queues and Projects that changed (at most
 * MAX_STATUS_PER_CYCLE a cycle). */
void fair_ctl_write_statuses(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                             const struct fair_result *res);
/* Writes the status of the PodGroups of our pods that changed. */
void fair_ctl_write_podgroup_statuses(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                                      const struct fair_result *res);
/* A budget alert (ctl/tqstate.h's callback): an Event on the Project, sent
 * by the leader only. */
void fair_ctl_budget_alert(void *ctx, size_t project, int level, const char *message);

/* ---- evict.c ---- */

/* Evicts the victim of action a (a notice first, when the pod asked for
 * one; a requeue of a bare pod after). */
void fair_ctl_evict(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                    const struct fair_action *a);
/* Sends the evictions whose notice has passed, cancels those no longer
 * needed; arms a cycle for the next one due. */
void fair_ctl_pump_notices(struct fair_ctl *c);
/* Sends again the requeues whose retry is due; arms a cycle for the next. */
void fair_ctl_pump_requeues(struct fair_ctl *c);
/* Sets back to False the DisruptionTarget conditions of ours from before
 * this process on pods this cycle did not choose. */
void fair_ctl_unmark_stale(struct fair_ctl *c, const struct fair_ctl_snapshot *s);

#endif
