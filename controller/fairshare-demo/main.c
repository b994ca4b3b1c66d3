/* fairshare-demo: runs the fair-share engine over a small built-in example
 * and explains each step in words: lending idle GPUs, reclaiming them,
 * sharing by weight, and packing GPU fractions. `make demo` runs it. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"

#define MAXPODS 128
#define GIB ((int64_t)1 << 30)

struct demo {
    struct fair_node nodes[4];
    size_t nn;
    struct fair_project projects[4];
    size_t np;
    struct fair_queue queues[4];
    size_t nq;
    struct fair_pod pods[MAXPODS];
    size_t npods;
    char names[MAXPODS][40];
    int next_name[4];
    int64_t now;
};

static void quota(struct fair_quota *q, const char *name, int64_t gpus, int64_t weight)
{
    memset(q, 0, sizeof(*q));
    q->name = name;
    q->guaranteed.v[FAIR_RES_GPU] = gpus * 1000;
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        q->limit.v[r] = FAIR_UNLIMITED;
    q->over_quota_weight = weight;
}

static void add_node(struct demo *d, const char *name, int gpus)
{
    struct fair_node *n = &d->nodes[d->nn++];
    memset(n, 0, sizeof(*n));
    n->name = name;
    n->gpu_model = "A100";
    n->gpu_count = gpus;
    n->allocatable.v[FAIR_RES_GPU] = gpus * 1000;
    n->allocatable.v[FAIR_RES_CPU] = 96000;
    n->allocatable.v[FAIR_RES_MEM] = 1024 * GIB;
}

static void add_team(struct demo *d, const char *project, const char *queue, int64_t gpus,
                     int64_t weight)
{
    quota(&d->projects[d->np].q, project, gpus, weight);
    struct fair_queue *q = &d->queues[d->nq];
    quota(&q->q, queue, gpus, weight);
    q->project = (int32_t)d->np;
    q->project_name = project;
    d->np++;
    d->nq++;
}

static void submit(struct demo *d, int queue, int count, int64_t gpu_milli)
{
    for (int i = 0; i < count && d->npods < MAXPODS; i++) {
        struct fair_pod *p = &d->pods[d->npods];
        memset(p, 0, sizeof(*p));
        snprintf(d->names[d->npods], sizeof(d->names[0]), "%s-%d", d->queues[queue].q.name,
                 ++d->next_name[queue]);
        p->name = p->uid = d->names[d->npods];
        p->namespace_ = "demo";
        p->queue = queue;
        p->state = FAIR_POD_PENDING;
        p->created_ms = d->now + (int64_t)d->npods;
        p->preemptible = true;
        p->node = -1;
        p->request.v[FAIR_RES_GPU] = gpu_milli;
        p->request.v[FAIR_RES_CPU] = 4000;
        p->request.v[FAIR_RES_MEM] = 32 * GIB;
        d->npods++;
    }
}

static void gpus_str(char *buf, size_t n, int64_t milli)
{
    if (milli % 1000 == 0)
        snprintf(buf, n, "%lld", (long long)(milli / 1000));
    else
        snprintf(buf, n, "%.2f", (double)milli / 1000.0);
}

static void devices_str(char *buf, size_t n, uint64_t mask)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < 64 && len + 4 < n; i++)
        if (mask >> i & 1) {
            int w = snprintf(buf + len, n - len, "%s%d", len ? "," : "", i);
            if (w < 0)
                break;
            len += (size_t)w;
        }
}

/* Runs one cycle, prints the table and the actions, applies the binds. */
static int step(struct demo *d, const char *title)
{
    struct fair_snapshot s = {.now_ms = d->now,
                              .nodes = d->nodes,
                              .nnodes = d->nn,
                              .projects = d->projects,
                              .nprojects = d->np,
                              .queues = d->queues,
                              .nqueues = d->nq,
                              .pods = d->pods,
                              .npods = d->npods,
                              .placement = FAIR_PLACE_PACK};
    struct fair_result res;
    struct fair_error err = {0};
    if (fair_engine_run(&s, &res, &err) != 0) {
        fprintf(stderr, "fairshare-demo: the engine failed: %s\n", err.msg);
        return 1;
    }
    printf("\n== %s\n\n", title);
    printf("  %-10s %10s %10s %8s %8s %8s\n", "queue", "guaranteed", "fair share", "using",
           "waiting", "after");
    for (size_t i = 0; i < d->nq; i++) {
        const struct fair_share_status *st = &res.queues[i];
        char g[32], f[32], a[32], after[32];
        gpus_str(g, sizeof(g), st->guaranteed.v[FAIR_RES_GPU]);
        gpus_str(f, sizeof(f), st->fair_share.v[FAIR_RES_GPU]);
        gpus_str(a, sizeof(a), st->allocated.v[FAIR_RES_GPU]);
        gpus_str(after, sizeof(after), st->allocated_after.v[FAIR_RES_GPU]);
        printf("  %-10s %10s %10s %8s %8d %8s\n", d->queues[i].q.name, g, f, a, st->pending_pods,
               after);
    }
    printf("  (in GPUs: \"fair share\" is what the queue is entitled to now; \"waiting\" counts\n"
           "   pending pods; \"after\" is what it holds once this step's actions are done)\n\n");
    size_t binds = 0, shown = 0;
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        const struct fair_pod *p = &d->pods[a->pod];
        char dev[256], amount[32];
        gpus_str(amount, sizeof(amount), p->request.v[FAIR_RES_GPU]);
        if (a->kind == FAIR_ACTION_BIND) {
            binds++;
            if (shown++ < 6) {
                devices_str(dev, sizeof(dev), a->gpu_devices);
                printf("  start  %-14s on %s, GPU %s (%s GPU)\n", p->name, d->nodes[a->node].name,
                       dev, amount);
            }
        } else {
            if (shown++ < 12)
                printf("  evict  %-14s from %s: %s; makes room for %s (queue %s)\n", p->name,
                       d->nodes[a->node].name,
                       a->reason == FAIR_EVICT_RECLAIM ? "its queue borrowed these GPUs"
                                                       : "a higher-priority pod needs the room",
                       d->pods[a->for_pod].name, d->queues[a->for_queue].q.name);
        }
    }
    if (shown > 12 || (binds > 6 && shown > 6))
        printf("  ... %zu actions in all\n", res.nactions);
    for (size_t q = 0; q < d->nq && binds > 6; q++) {
        size_t n = 0;
        for (size_t i = 0; i < res.nactions; i++)
            if (res.actions[i].kind == FAIR_ACTION_BIND &&
                d->pods[res.actions[i].pod].queue == (int)q)
                n++;
        if (n)
            printf("  %s: %zu pod(s) started\n", d->queues[q].q.name, n);
    }
    if (res.nactions == 0)
        printf("  no action: nothing to change\n");
    size_t waiting = 0;
    for (size_t i = 0; i < d->npods; i++)
        if (d->pods[i].state == FAIR_POD_PENDING &&
            res.pending_reasons[i] == FAIR_PENDING_WAITING_RECLAIM)
            waiting++;
    if (waiting)
        printf("  %zu pod(s) wait for the evicted pods to leave (%s)\n", waiting,
               fair_pending_reason_str(FAIR_PENDING_WAITING_RECLAIM));
    /* What the cluster then does: binds happen, evicted pods terminate. */
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        struct fair_pod *p = &d->pods[a->pod];
        if (a->kind == FAIR_ACTION_BIND) {
            p->state = FAIR_POD_BOUND;
            p->node = a->node;
            p->gpu_devices = a->gpu_devices;
            p->started_ms = d->now;
        } else {
            p->terminating = true;
        }
    }
    fair_result_release(&res);
    d->now += 60000;
    return 0;
}

/* Deletes pods: the terminating ones, or all of one queue. */
static void remove_pods(struct demo *d, int queue, bool terminating_only)
{
    size_t k = 0;
    for (size_t i = 0; i < d->npods; i++) {
        bool gone = terminating_only ? d->pods[i].terminating : d->pods[i].queue == queue;
        if (gone)
            continue;
        if (k != i) {
            d->pods[k] = d->pods[i];
            memcpy(d->names[k], d->names[i], sizeof(d->names[0]));
            d->pods[k].name = d->pods[k].uid = d->names[k];
        }
        k++;
    }
    d->npods = k;
}

/* Evicted pods come back as new pending pods: the controller requeues an
 * evicted bare pod (<name>-rq1), and a Job recreates its own. */
static void resubmit_evicted(struct demo *d, int queue, int count)
{
    submit(d, queue, count, 1000);
}

static int lending_story(void)
{
    static struct demo d;
    memset(&d, 0, sizeof(d));
    d.now = 1700000000000LL;
    add_node(&d, "gpu-node-1", 8);
    add_node(&d, "gpu-node-2", 8);
    add_team(&d, "team-a", "team-a", 8, 1);
    add_team(&d, "team-b", "team-b", 8, 1);
    printf("Cluster: 2 nodes x 8 GPUs. team-a and team-b are each guaranteed 8 GPUs.\n");

    submit(&d, 1, 16, 1000);
    if (step(&d, "Step 1: team-b submits 16 one-GPU pods; team-a is idle, so its 8 GPUs are lent"))
        return 1;
    submit(&d, 0, 8, 1000);
    if (step(&d, "Step 2: team-a submits 8 pods: its guarantee is reclaimed from team-b"))
        return 1;
    if (step(&d, "Step 3: the evicted pods are still shutting down: nothing new is evicted"))
        return 1;
    remove_pods(&d, -1, true);
    resubmit_evicted(&d, 1, 8);
    if (step(&d, "Step 4: the evicted pods are gone and requeued, pending (the controller\n"
                 "   creates each evicted bare pod again): team-a starts"))
        return 1;
    /* team-a's work finishes; a third team with weight 2 arrives. */
    remove_pods(&d, 0, false);
    quota(&d.projects[2].q, "team-c", 0, 2);
    quota(&d.queues[2].q, "team-c", 0, 2);
    d.queues[2].project = 2;
    d.queues[2].project_name = "team-c";
    d.np = d.nq = 3;
    submit(&d, 2, 8, 1000);
    return step(&d, "Step 5: team-a is done; team-c (weight 2, nothing guaranteed) arrives.\n"
                    "   team-a's idle 8 GPUs are lent 1:2 to team-b and team-c");
}

static int fractions_story(void)
{
    static struct demo d;
    memset(&d, 0, sizeof(d));
    d.now = 1700000000000LL;
    add_node(&d, "small-node", 4);
    add_team(&d, "notebooks", "notebooks", 4, 1);
    printf("\nCluster: 1 node x 4 GPUs; notebooks ask for GPU fractions.\n");
    submit(&d, 0, 2, 500);
    submit(&d, 0, 2, 250);
    submit(&d, 0, 1, 2000);
    return step(&d, "Step 6: two 0.5-GPU and two 0.25-GPU notebooks share 2 GPUs (packed),\n"
                    "   which leaves 2 whole GPUs free for a 2-GPU job");
}

int main(void)
{
    printf("fairshare-demo: the fair-share engine on a built-in example\n");
    if (lending_story() || fractions_story())
        return 1;
    printf("\nSee docs/engine.md for the rules behind each decision.\n");
    return 0;
}
