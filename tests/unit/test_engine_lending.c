/* Lending that pays (docs/engine.md, "Reclaim and preemption", "Held
 * nodes", "Victim order"): queues below their fair share take room back
 * from queues above theirs whatever the arrival order, within a hysteresis
 * and a minimum run time; no GPU stays idle for a pod that cannot use it
 * (a node is held for it instead); victims lose the least work; pods
 * evicted too often stay within their fair share, and within their
 * guarantee where reclaim never takes them again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_engine_fixture.h"

#define G 1000

static int64_t alloc_of(const struct ts *t, int q)
{
    int64_t a = 0;
    for (size_t i = 0; i < t->npods; i++)
        if (t->pods[i].queue == q && t->pods[i].state == FAIR_POD_BOUND && !t->pods[i].terminating)
            a += t->pods[i].request.v[FAIR_RES_GPU];
    return a;
}

/* Runs cycles (victims deleted at once) until one has no action; returns
 * how many cycles had actions. */
static int settle(struct ts *t, int max)
{
    int busy = 0;
    for (int i = 0; i < max; i++) {
        assert_int_equal(ts_run(t), 0);
        if (t->res.nactions == 0)
            return busy;
        busy++;
        ts_apply(t, false);
    }
    fail_msg("no quiet cycle after %d", max);
    return busy;
}

/* Weights 1:2:1 and no guarantees on 16 GPUs: queue a arrives first and
 * takes all 16; b and c arrive later. Reclaim up to the fair share brings
 * it to 4/8/4, taking victims from a only, and then nothing moves. */
static void test_staggered_arrivals_end_at_fair_share(void **state)
{
    (void)state;
    static const int orders[3][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}};
    for (int o = 0; o < 3; o++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int q[3];
        q[0] = ts_team(t, "qa", 0, 1);
        q[1] = ts_team(t, "qb", 0, 2);
        q[2] = ts_team(t, "qc", 0, 1);
        for (int k = 0; k < 3; k++) {
            int qi = q[orders[o][k]];
            for (int i = 0; i < 20; i++)
                ts_pod(t, qi, G);
            settle(t, 20);
            t->now += 1000;
        }
        assert_int_equal(alloc_of(t, q[0]), 4 * G);
        assert_int_equal(alloc_of(t, q[1]), 8 * G);
        assert_int_equal(alloc_of(t, q[2]), 4 * G);
        /* And it stays there. */
        for (int i = 0; i < 5; i++) {
            t->now += 600000;
            assert_int_equal(ts_run(t), 0);
            assert_int_equal(t->res.nactions, 0);
        }
        ts_free(t);
    }
}

/* The same arrivals with reclaimUpTo: Guarantee keep what the first queue
 * took: nothing is evicted, the late queues wait. */
static void test_guarantee_only_keeps_borrowers(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    int a = ts_team(t, "qa", 0, 1);
    int b = ts_team(t, "qb", 0, 2);
    t->queues[b].reclaim_up_to = FAIR_RECLAIM_GUARANTEE;
    for (int i = 0; i < 20; i++)
        ts_pod(t, a, G);
    settle(t, 5);
    for (int i = 0; i < 20; i++)
        ts_pod(t, b, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_NO_NODE_FITS), 20); /* b's */
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_FAIR_SHARE), 4);    /* a's beyond 16 */
    ts_free(t);
}

/* A queue 2 GPUs below a fair share of 8 is within a 50% threshold: the
 * reclaim is held back (and says so); with 20% it goes ahead. Each
 * eviction comes from the queue above its share and leaves it at it. */
static void test_hysteresis(void **state)
{
    (void)state;
    for (int pct = 50; pct >= 20; pct -= 30) {
        struct ts *t = ts_new();
        t->threshold_pct = pct;
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "qa", 0, 1);
        int b = ts_team(t, "qb", 0, 1);
        for (int i = 0; i < 8; i++)
            ts_bound(t, a, G, 0, 1ULL << i, t->now - 3600000);
        for (int i = 0; i < 2; i++)
            ts_bound(t, a, G, 1, 1ULL << i, t->now - 3600000);
        for (int i = 2; i < 8; i++)
            ts_bound(t, b, G, 1, 1ULL << i, t->now - 3600000);
        ts_pod(t, b, G);
        ts_pod(t, b, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(t->res.queues[b].fair_share.v[FAIR_RES_GPU], 8 * G);
        if (pct == 50) {
            assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
            assert_int_equal(ts_reason_count(t, FAIR_PENDING_RECLAIM_HELD), 2);
        } else {
            assert_int_equal(ts_count_q(t, FAIR_ACTION_EVICT, a), 2);
            for (size_t i = 0; i < t->res.nactions; i++)
                assert_int_equal(t->res.actions[i].reason, FAIR_EVICT_FAIR_SHARE);
        }
        ts_free(t);
    }
}

/* Reclaim up to the fair share spares pods younger than its minimum run
 * time (the waiting pods say so), and takes them once they are old enough;
 * a queue owed its guarantee is not held back by it. */
static void test_over_quota_min_runtime(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    t->oq_min_runtime = 600000;
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    int a = ts_team(t, "qa", 0, 1);
    int b = ts_team(t, "qb", 0, 1);
    for (int i = 0; i < 16; i++)
        ts_bound(t, a, G, i / 8, 1ULL << (i % 8), t->now - 60000);
    for (int i = 0; i < 8; i++)
        ts_pod(t, b, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_RECLAIM_HELD), 8);
    t->now += 600000;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_EVICT, a), 8);
    ts_free(t);

    /* Owed a guarantee: no minimum run time but the queue's own. */
    t = ts_new();
    t->oq_min_runtime = 600000;
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    a = ts_team(t, "qa", 0, 1);
    b = ts_team(t, "qb", 8 * G, 1);
    for (int i = 0; i < 16; i++)
        ts_bound(t, a, G, i / 8, 1ULL << (i % 8), t->now - 60000);
    for (int i = 0; i < 8; i++)
        ts_pod(t, b, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_EVICT, a), 8);
    for (size_t i = 0; i < t->res.nactions; i++)
        assert_int_equal(t->res.actions[i].reason, FAIR_EVICT_RECLAIM);
    ts_free(t);
}

/* Two nodes each with 2 GPUs held by non-preemptible pods of queue x; queue
 * a is owed an 8-GPU pod that no node can hold now, and nothing can be
 * evicted for it. Queue c's pods beyond its fair share still get the idle
 * GPUs (the engine used to hand out nothing in that case), except on the
 * node held for a's pod; once that node frees up, a's pod binds there. */
static void test_idle_gpus_go_to_waiting_pods(void **state)
{
    (void)state;
    for (int holds = 0; holds < 2; holds++) {
        struct ts *t = ts_new();
        t->hold_timeout = holds ? 600000 : 0;
        int n0 = ts_node(t, "node-0", 8);
        int n1 = ts_node(t, "node-1", 8);
        int x = ts_team(t, "qx", 4 * G, 1);
        int a = ts_team(t, "qa", 8 * G, 1);
        int c = ts_team(t, "qc", 0, 1);
        int x0 = ts_bound(t, x, 2 * G, n0, 0x3, t->now - 1000);
        int x1 = ts_bound(t, x, 2 * G, n1, 0x3, t->now - 1000);
        t->pods[x0].preemptible = false;
        t->pods[x1].preemptible = false;
        int big = ts_pod(t, a, 8 * G);
        for (int i = 0; i < 8; i++)
            ts_pod(t, c, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(t->res.queues[c].fair_share.v[FAIR_RES_GPU], 4 * G);
        size_t binds_c = ts_count_q(t, FAIR_ACTION_BIND, c);
        if (!holds) {
            /* Every idle GPU goes to c: 12 free, 8 pods. */
            assert_int_equal(binds_c, 8);
            assert_int_equal(t->res.pending_reasons[big], FAIR_PENDING_NO_NODE_FITS);
            ts_free(t);
            continue;
        }
        /* c's 4 within its share pack node-0; the rest may not use node-1,
         * which is held for the big pod: 2 more on node-0. */
        assert_int_equal(binds_c, 6);
        assert_int_equal(t->res.pending_reasons[big], FAIR_PENDING_NODE_HELD);
        assert_int_equal(t->res.hold_node[big], n1);
        assert_int_equal(t->res.hold_since_ms[big], t->now);
        for (size_t i = 0; i < t->res.nactions; i++)
            assert_int_not_equal(t->res.actions[i].node, n1);
        ts_apply(t, true);
        /* Held across cycles; nothing else lands on node-1. */
        for (int i = 0; i < 3; i++)
            ts_pod(t, c, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(t->res.hold_node[big], n1);
        for (size_t i = 0; i < t->res.nactions; i++)
            assert_int_not_equal(t->res.actions[i].node, n1);
        ts_apply(t, true);
        /* x's pod on node-1 finishes: the big pod takes the node. */
        t->pods[x1].terminating = true;
        ts_reap(t);
        assert_int_equal(ts_run(t), 0);
        bool bound = false;
        for (size_t i = 0; i < t->res.nactions; i++)
            if (t->res.actions[i].kind == FAIR_ACTION_BIND &&
                t->pods[t->res.actions[i].pod].queue == a) {
                assert_int_equal(t->res.actions[i].node, n1);
                bound = true;
            }
        assert_true(bound);
        ts_free(t);
    }
}

/* A hold lasts hold_timeout; then the node is free for others for as long
 * again, after which the pod may hold a node again. */
static void test_hold_timeout(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    t->hold_timeout = 60000;
    int n0 = ts_node(t, "node-0", 8);
    int n1 = ts_node(t, "node-1", 8);
    int x = ts_team(t, "qx", 4 * G, 1);
    int a = ts_team(t, "qa", 8 * G, 1);
    int c = ts_team(t, "qc", 0, 1);
    int x0 = ts_bound(t, x, 2 * G, n0, 0x3, t->now - 1000);
    int x1 = ts_bound(t, x, 2 * G, n1, 0x3, t->now - 1000);
    t->pods[x0].preemptible = false;
    t->pods[x1].preemptible = false;
    int big = ts_pod(t, a, 8 * G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.hold_node[big], n0); /* equal room: the first by name */
    int64_t since = t->res.hold_since_ms[big];
    ts_apply(t, true);
    t->now = since + 60000; /* timed out */
    for (int i = 0; i < 12; i++)
        ts_pod(t, c, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.hold_node[big], -1);
    assert_int_equal(t->res.hold_since_ms[big], since);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, c), 12);
    ts_apply(t, true);
    /* c's pods finish; within the cooldown no new hold is made. */
    for (size_t i = 0; i < t->npods; i++)
        if (t->pods[i].queue == c)
            t->pods[i].terminating = true;
    ts_reap(t);
    big = -1;
    for (size_t i = 0; i < t->npods; i++)
        if (t->pods[i].queue == a)
            big = (int)i;
    t->now = since + 100000;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.hold_node[big], -1);
    ts_apply(t, true);
    t->now = since + 120000;
    assert_int_equal(ts_run(t), 0);
    assert_true(t->res.hold_node[big] >= 0);
    assert_int_equal(t->res.hold_since_ms[big], t->now);
    ts_free(t);
}

/* Two nodes of 8 GPUs: qx's non-preemptible pods take 4 on node-0 and
 * x1_gpu on node-1; big (qa, 4 GPUs) holds node-1 from an earlier cycle;
 * c1 and c2 (qc, no guarantee, 1 GPU each) are pending. */
struct held_case {
    struct ts *t;
    int n0, n1, a, big, c1, c2;
};

static struct held_case held_case(int64_t x_guar, int64_t x1_gpu, uint64_t x1_mask)
{
    struct held_case h;
    h.t = ts_new();
    struct ts *t = h.t;
    t->hold_timeout = 600000;
    h.n0 = ts_node(t, "node-0", 8);
    h.n1 = ts_node(t, "node-1", 8);
    int x = ts_team(t, "qx", x_guar, 1);
    h.a = ts_team(t, "qa", 4 * G, 1);
    int c = ts_team(t, "qc", 0, 1);
    int xs[] = {ts_bound(t, x, 4 * G, h.n0, 0x0f, t->now - 1000),
                ts_bound(t, x, x1_gpu, h.n1, x1_mask, t->now - 1000)};
    for (int i = 0; i < 2; i++)
        t->pods[xs[i]].preemptible = false;
    h.big = ts_pod(t, h.a, 4 * G);
    t->pods[h.big].hold_node = h.n1;
    t->pods[h.big].hold_since_ms = t->now - 1000;
    h.c1 = ts_pod(t, c, G);
    h.c2 = ts_pod(t, c, G);
    return h;
}

/* A hold let go in a cycle hands its node's free room out in the same
 * cycle. big holds node-1 (3 free) and, node-0 having 4 free GPUs, binds
 * there in pass 1. c's two pods, within c's fair share, came after it in
 * pass 1 and found node-0 full and node-1 held. The hold ends with big
 * bound; they bind on node-1 in the same cycle (they used to wait a cycle
 * with node-1's GPUs idle). */
static void test_freed_hold_room_goes_out_at_once(void **state)
{
    (void)state;
    struct held_case h = held_case(9 * G, 5 * G, 0x1f);
    struct ts *t = h.t;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    assert_int_equal(ts_bind_node(t, h.big), h.n0);
    assert_int_equal(t->res.hold_node[h.big], -1);
    assert_int_equal(ts_bind_node(t, h.c1), h.n1);
    assert_int_equal(ts_bind_node(t, h.c2), h.n1);
    ts_free(t);
}

/* The same when the hold ends after reclaim: node-0 is full (a's bound
 * 4-GPU pod), and big's queue is at its limit, so big's hold of node-1
 * goes at the end of the reclaim phase. c's two pods, within c's fair
 * share, found node-0 full and node-1 held in pass 1 (and the first of
 * them got a hold of node-0 meanwhile); pass 2 binds both on node-1, and
 * the hold of the first ends with it. */
static void test_hold_ended_by_reclaim_goes_out_in_pass2(void **state)
{
    (void)state;
    struct held_case h = held_case(8 * G, 4 * G, 0x0f);
    struct ts *t = h.t;
    t->queues[h.a].q.limit.v[FAIR_RES_GPU] = 4 * G;
    t->projects[t->queues[h.a].project].q.limit.v[FAIR_RES_GPU] = 4 * G;
    ts_bound(t, h.a, 4 * G, h.n0, 0xf0, t->now - 1000);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    assert_int_equal(t->res.pending_reasons[h.big], FAIR_PENDING_OVER_LIMIT);
    assert_int_equal(t->res.hold_node[h.big], -1);
    assert_int_equal(ts_bind_node(t, h.c1), h.n1);
    assert_int_equal(ts_bind_node(t, h.c2), h.n1);
    assert_int_equal(t->res.hold_node[h.c1], -1);
    assert_int_equal(t->res.hold_node[h.c2], -1);
    ts_free(t);
}

/* The same when the pods that the hold kept out were told to wait for
 * young victims (RECLAIM_HELD): qc is owed room (weight 3 to qa's 1, so qa
 * holds more than its fair share), but qa's pods on node-0 are a second
 * old, younger than the 10 minutes reclaim spares. big's hold ends after
 * reclaim; qc's pods take node-1's free GPUs
 * in pass 2 (they waited a cycle with those GPUs idle). */
static void test_hold_ended_after_young_victims(void **state)
{
    (void)state;
    struct held_case h = held_case(8 * G, 4 * G, 0x0f);
    struct ts *t = h.t;
    t->oq_min_runtime = 600000;
    t->queues[h.a].q.limit.v[FAIR_RES_GPU] = 4 * G;
    t->projects[t->queues[h.a].project].q.limit.v[FAIR_RES_GPU] = 4 * G;
    t->queues[h.a].q.guaranteed.v[FAIR_RES_GPU] = 0;
    t->projects[t->queues[h.a].project].q.guaranteed.v[FAIR_RES_GPU] = 0;
    int c = t->pods[h.c1].queue;
    t->queues[c].q.over_quota_weight = 3;
    t->projects[t->queues[c].project].q.over_quota_weight = 3;
    ts_bound(t, h.a, 4 * G, h.n0, 0xf0, t->now - 1000);
    int more[4];
    for (int i = 0; i < 4; i++)
        more[i] = ts_pod(t, c, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    assert_int_equal(t->res.hold_node[h.big], -1);
    assert_int_equal(ts_bind_node(t, h.c1), h.n1);
    assert_int_equal(ts_bind_node(t, h.c2), h.n1);
    int bound = 0;
    for (int i = 0; i < 4; i++) {
        if (ts_bind_of(t, more[i]))
            bound++;
        else
            assert_int_equal(t->res.pending_reasons[more[i]], FAIR_PENDING_RECLAIM_HELD);
    }
    assert_int_equal(bound, 2);
    ts_free(t);
}

/* A hold lasts only while its pod is owed room: once its queue is at its
 * fair share the node goes back to everyone (it used to stay held, and in
 * the controller a late queue then found both nodes held and reclaimed
 * nothing). And a pod holding a node searches there even when a pod of
 * the same shape before it found nothing (the failure cache skipped it). */
static void test_holds_follow_the_need(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    t->hold_timeout = 600000;
    ts_node(t, "node-0", 8);
    int n1 = ts_node(t, "node-1", 8);
    int a = ts_team(t, "qa", 0, 1);
    int b = ts_team(t, "qb", 0, 1);
    for (int i = 0; i < 8; i++)
        ts_bound(t, a, G, 0, 1ULL << i, t->now - 3600000);
    for (int i = 0; i < 8; i++)
        ts_bound(t, b, G, n1, 1ULL << i, t->now - 3600000);
    /* a is at its fair share (8 of 16) yet its pod holds node-1. */
    int stale = ts_pod(t, a, G);
    t->pods[stale].hold_node = n1;
    t->pods[stale].hold_since_ms = t->now - 1000;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.pending_reasons[stale], FAIR_PENDING_FAIR_SHARE);
    assert_int_equal(t->res.hold_node[stale], -1);
    assert_int_equal(t->res.hold_since_ms[stale], 0);
    ts_free(t);

    /* qc arrives: 1 GPU of fair share... make it owed 4 by weights. Both
     * nodes are held: node-0 by qc's own second pod, node-1 by a pod of
     * qa. qc's first pod finds nothing; the holder must still search. */
    t = ts_new();
    t->hold_timeout = 600000;
    int n0 = ts_node(t, "node-0", 8);
    n1 = ts_node(t, "node-1", 8);
    a = ts_team(t, "qa", 8 * G, 1);
    b = ts_team(t, "qb", 0, 1);
    int c = ts_team(t, "qc", 0, 1);
    for (int i = 0; i < 8; i++)
        ts_bound(t, b, G, n0, 1ULL << i, t->now - 3600000);
    for (int i = 0; i < 8; i++)
        ts_bound(t, a, G, n1, 1ULL << i, t->now - 3600000);
    int big = ts_pod(t, a, 8 * G); /* owed by a's guarantee? a is at 8: no */
    t->pods[big].hold_node = n1;
    t->pods[big].hold_since_ms = t->now - 1000;
    int first = ts_pod(t, c, G);
    int holder = ts_pod(t, c, G);
    t->pods[holder].hold_node = n0;
    t->pods[holder].hold_since_ms = t->now - 1000;
    assert_int_equal(ts_run(t), 0);
    (void)first;
    /* The holder reclaims on its node from qb, above its fair share. */
    assert_int_equal(t->res.pending_reasons[holder], FAIR_PENDING_WAITING_RECLAIM);
    bool evicted_on_n0 = false;
    for (size_t i = 0; i < t->res.nactions; i++)
        if (t->res.actions[i].kind == FAIR_ACTION_EVICT && t->res.actions[i].for_pod == holder &&
            t->pods[t->res.actions[i].pod].node == n0)
            evicted_on_n0 = true;
    assert_true(evicted_on_n0);
    ts_free(t);
}

/* A pod told of an eviction before (notice_since_ms: a notice given
 * before the controller restarted) loses only the work since: the oldest
 * of 8 borrowed pods, told 10 s ago, goes before pods started 100-107 s
 * ago. A notice time in the future counts for nothing. */
static void test_victim_noticed_before(void **state)
{
    (void)state;
    for (int future = 0; future < 2; future++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        int a = ts_team(t, "qa", 8 * G, 1);
        int b = ts_team(t, "qb", 0, 1);
        int told = -1, youngest = -1;
        for (int i = 0; i < 8; i++) {
            int p = ts_bound(t, b, G, 0, 1ULL << i, t->now - (100 + i) * 1000LL);
            if (i == 0)
                youngest = p;
            if (i == 7) {
                t->pods[p].started_ms = t->now - 7200000;
                t->pods[p].notice_since_ms = future ? t->now + 60000 : t->now - 10000;
                told = p;
            }
        }
        ts_pod(t, a, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
        assert_int_equal(t->res.actions[0].pod, future ? youngest : told);
        ts_free(t);
    }
}

/* Victims lose the least work: with 16 borrowed pods of b started at
 * different times, the one evicted for a's pod is the one with the
 * shortest run since its last checkpoint (here an old pod that just
 * checkpointed), not simply the youngest. */
static void test_victims_lose_least_work(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    int a = ts_team(t, "qa", 8 * G, 1);
    int b = ts_team(t, "qb", 0, 1);
    int want = -1;
    for (int i = 0; i < 16; i++) {
        int p = ts_bound(t, b, G, i / 8, 1ULL << (i % 8), t->now - (100 + i) * 1000LL);
        if (i == 10) {
            t->pods[p].started_ms = t->now - 1000000;
            t->pods[p].checkpoint_interval_ms = 999000; /* checkpointed 1 s ago */
            want = p;
        }
    }
    ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
    assert_int_equal(t->res.actions[0].pod, want);
    ts_free(t);

    /* Equal work lost: the smaller request goes first. */
    t = ts_new();
    ts_node(t, "node-0", 8);
    a = ts_team(t, "qa", 4 * G, 1);
    b = ts_team(t, "qb", 0, 1);
    int two = ts_bound(t, b, 2 * G, 0, 0x3, t->now - 5000);
    int one = ts_bound(t, b, G, 0, 0x4, t->now - 5000);
    for (int i = 3; i < 8; i++)
        ts_bound(t, b, G, 0, 1ULL << i, t->now - 900000);
    (void)two;
    ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
    assert_int_equal(t->res.actions[0].pod, one);
    ts_free(t);
}

/* A pod evicted max_evictions times runs only within its queue's fair
 * share: pass 2 leaves it pending while a pod of its queue evicted fewer
 * times borrows. Queue x is owed 4 GPUs its pods cannot use (they want a
 * model no node has), so pass 2 has 4 GPUs to hand out beyond c's share. */
static void test_evicted_too_often_stays_within_share(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    t->max_evictions = 3;
    ts_node(t, "node-0", 8);
    int x = ts_team(t, "qx", 4 * G, 1);
    int c = ts_team(t, "qc", 0, 1);
    for (int i = 0; i < 4; i++) {
        int p = ts_pod(t, x, G);
        t->pods[p].gpu_model = "H100";
    }
    for (int i = 0; i < 4; i++)
        ts_pod(t, c, G);
    int tired = ts_pod(t, c, G);
    t->pods[tired].evictions = 3;
    int fresh = ts_pod(t, c, G);
    t->pods[fresh].evictions = 2;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.queues[c].fair_share.v[FAIR_RES_GPU], 4 * G);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, c), 5);
    assert_int_equal(t->res.pending_reasons[tired], FAIR_PENDING_FAIR_SHARE);
    assert_int_equal(t->res.pending_reasons[fresh], FAIR_PENDING_NONE);
    /* Without the bound both borrow. */
    t->max_evictions = 0;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, c), 6);
    ts_free(t);
}

/* The bound on evictions is strict for a queue with a guarantee: a pod
 * evicted max_evictions times is never a reclaim victim again, even as
 * the one that would lose the least work, and it starts again only within
 * its queue's guarantee, so it never holds room another queue is owed. */
static void test_eviction_bound_is_strict(void **state)
{
    (void)state;
    for (int bound = 0; bound <= 3; bound += 3) {
        struct ts *t = ts_new();
        t->max_evictions = bound;
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "qa", 8 * G, 1);
        int b = ts_team(t, "qb", 4 * G, 1);
        int tired = -1;
        for (int i = 0; i < 16; i++) {
            int p = ts_bound(t, b, G, i / 8, 1ULL << (i % 8), t->now - 3600000LL - i * 1000LL);
            if (i == 3) {
                /* The youngest: the first victim without the bound. */
                t->pods[p].started_ms = t->now - 120000;
                t->pods[p].evictions = 3;
                tired = p;
            }
        }
        ts_pod(t, a, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
        if (bound)
            assert_int_not_equal(t->res.actions[0].pod, tired);
        else
            assert_int_equal(t->res.actions[0].pod, tired);
        ts_free(t);
    }

    /* Pods that reached the bound while they ran (their Job's other pods
     * were evicted) and hold room above their queue's guarantee: the bound
     * does not keep them there. qb (guaranteed 4) runs 16 such pods; qa is
     * owed 8 and gets them, and qb keeps its fair share of 8. */
    {
        struct ts *t = ts_new();
        t->max_evictions = 3;
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "qa", 8 * G, 1);
        int b = ts_team(t, "qb", 4 * G, 1);
        for (int i = 0; i < 16; i++) {
            int p = ts_bound(t, b, G, i / 8, 1ULL << (i % 8), t->now - 3600000LL - i * 1000LL);
            t->pods[p].evictions = 3;
        }
        for (int i = 0; i < 8; i++)
            ts_pod(t, a, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 8);
        ts_free(t);
    }

    /* Admission: qb (guaranteed 2) runs 2 pods; its fair share is the
     * whole node. A pod at the bound waits, though it is first in line; a
     * fresh one starts. With one pod running, the tired one fits in the
     * guarantee and starts. */
    for (int running = 2; running >= 1; running--) {
        struct ts *t = ts_new();
        t->max_evictions = 3;
        ts_node(t, "node-0", 8);
        int b = ts_team(t, "qb", 2 * G, 1);
        ts_team(t, "qc", 0, 1);
        for (int i = 0; i < running; i++)
            ts_bound(t, b, G, 0, 1ULL << i, t->now - 3600000);
        int tired = ts_pod(t, b, G);
        t->pods[tired].evictions = 3;
        int fresh = ts_pod(t, b, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(t->res.pending_reasons[fresh], FAIR_PENDING_NONE);
        assert_int_equal(t->res.pending_reasons[tired],
                         running == 2 ? FAIR_PENDING_FAIR_SHARE : FAIR_PENDING_NONE);
        ts_free(t);
    }
}

/* Aging (spec.agingHalfLife): one free GPU, two pending pods of one queue,
 * a young one of priority hi and an old one of priority 0 that waited
 * `wait`. The old one ranks first once its boost, 2^(wait/h) - 1 (linear
 * between doublings, at most 2^40 - 1), reaches hi; equal ranks go to the
 * older pod, as without aging. */
static void test_aging_table(void **state)
{
    (void)state;
    static const struct {
        int64_t h, wait;
        int32_t hi;
        bool old_first;
    } rows[] = {
        {0, 100 * 60000, 5, false},         /* off: priority first, whatever the wait */
        {10 * 60000, 0, 5, false},          /* no wait, no boost */
        {10 * 60000, 20 * 60000, 5, false}, /* boost 3 < 5 */
        {10 * 60000, 24 * 60000, 5, false}, /* 3 + 4 * 4/10 = 4 < 5 */
        {10 * 60000, 25 * 60000, 5, true},  /* 3 + 4 * 5/10 = 5: a tie, the older first */
        {10 * 60000, 30 * 60000, 5, true},  /* boost 7 > 5 */
        {10 * 60000, 30 * 60000, 7, true},  /* 7 = 7: a tie, the older first */
        {10 * 60000, 30 * 60000, 8, false}, /* 7 < 8 */
        {1, 86400000, 2147483647, true},    /* capped at 2^40 - 1, above any int32 */
        {-5, 100 * 60000, 1, false},        /* negative: off */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 1);
        int q = ts_team(t, "q", 1 * G, 1);
        t->queues[q].aging_half_life_ms = rows[i].h;
        t->now = 1000 * 60000;
        int old = ts_pod(t, q, G);
        t->pods[old].created_ms = t->now - rows[i].wait;
        int young = ts_pod(t, q, G);
        t->pods[young].created_ms = t->now;
        t->pods[young].priority = rows[i].hi;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
        int want = rows[i].old_first ? old : young;
        if (t->res.actions[0].pod != want)
            fail_msg("row %zu: pod %d bound, want %d", i, (int)t->res.actions[0].pod, want);
        ts_free(t);
    }
}

/* lendMaxRuntime: a GPU pod takes its queue above its GPU guarantee only
 * when it declares a run time (spec.activeDeadlineSeconds) of at most
 * lend_max_runtime, or checkpoints; within the guarantee, and with the
 * rule off, nothing changes. One 8-GPU node; queue x guarantees 4 GPUs and
 * runs nothing, queue c guarantees 2 and already runs `running` GPUs. */
static void test_lend_max_runtime_table(void **state)
{
    (void)state;
    static const int64_t H = 3600000;
    static const struct {
        int64_t lend, deadline, checkpoint, running, gpu;
        bool binds;
    } rows[] = {
        {0, 0, 0, 2, 1, true},         /* 0 off: any pod borrows */
        {0, 100 * H, 0, 2, 1, true},   /* 1 off: a long one too */
        {H, H / 2, 0, 2, 1, true},     /* 2 declared shorter */
        {H, H, 0, 2, 1, true},         /* 3 declared exactly the limit */
        {H, H + 1000, 0, 2, 1, false}, /* 4 a second longer */
        {H, 0, 0, 2, 1, false},        /* 5 declares nothing */
        {H, 0, H / 2, 2, 1, true},     /* 6 checkpoints */
        {H, 0, 0, 0, 2, true},         /* 7 within the guarantee */
        {H, 0, 0, 1, 2, false},        /* 8 crossing the guarantee */
        {H, 0, 0, 2, 0, true},         /* 9 no GPU: not GPU lending */
        {2 * H, 2 * H, 0, 2, 1, true}, /* 10 a longer limit */
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        struct ts *t = ts_new();
        t->lend_max_runtime = rows[r].lend;
        ts_node(t, "node-0", 8);
        ts_team(t, "qx", 4 * G, 1);
        int c = ts_team(t, "qc", 2 * G, 1);
        for (int64_t i = 0; i < rows[r].running; i++)
            ts_bound(t, c, G, 0, 1ull << i, t->now - 1000);
        int p = ts_pod(t, c, rows[r].gpu * G);
        t->pods[p].max_runtime_ms = rows[r].deadline;
        t->pods[p].checkpoint_interval_ms = rows[r].checkpoint;
        assert_int_equal(ts_run(t), 0);
        if (rows[r].binds != (t->res.pending_reasons[p] == FAIR_PENDING_NONE))
            fail_msg("row %zu: reason %s", r, fair_pending_reason_str(t->res.pending_reasons[p]));
        assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, c), rows[r].binds ? 1 : 0);
        if (!rows[r].binds)
            assert_int_equal(t->res.pending_reasons[p], FAIR_PENDING_FAIR_SHARE);
        ts_free(t);
    }
}

/* Reclaim up to the fair share does not take a queue above its guarantee
 * for a pod that may not borrow: queue a (no guarantee) runs 8 short pods
 * on the only node; queue b (no guarantee, same weight) asks for GPUs with
 * pods that declare nothing. Without the rule b takes 4 back; with it,
 * nothing is evicted. A declared-short pod of b still reclaims. */
static void test_lend_max_runtime_fair_share_reclaim(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        struct ts *t = ts_new();
        t->lend_max_runtime = mode == 0 ? 0 : 3600000;
        ts_node(t, "node-0", 8);
        int a = ts_team(t, "qa", 0, 1);
        int b = ts_team(t, "qb", 0, 1);
        for (int i = 0; i < 8; i++) {
            int p = ts_bound(t, a, G, 0, 1ull << i, t->now - 3600000);
            t->pods[p].max_runtime_ms = 1800000;
        }
        for (int i = 0; i < 4; i++) {
            int p = ts_pod(t, b, G);
            t->pods[p].max_runtime_ms = mode == 2 ? 1800000 : 0;
        }
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), mode == 1 ? 0 : 4);
        ts_free(t);
    }
}

/* Under lendMaxRuntime the pods that may not borrow are not reclaimed
 * while they hold no more than their queue's guarantee: queue c (4 GPUs
 * guaranteed) runs 4 long pods (no deadline) started 10 minutes ago on
 * node-0 and 4 short borrowers (1 h deadline) started 50 minutes ago on
 * node-1; queue x (4 guaranteed) wants 4 GPUs back. Without the rule the
 * victims are the pods that lose least, the long ones; with it, the short
 * borrowers go. */
static void test_lend_max_runtime_protects_long_pods(void **state)
{
    (void)state;
    for (int on = 0; on < 2; on++) {
        struct ts *t = ts_new();
        t->lend_max_runtime = on ? 3600000 : 0;
        ts_node(t, "node-0", 4);
        ts_node(t, "node-1", 4);
        int x = ts_team(t, "qx", 4 * G, 1);
        int c = ts_team(t, "qc", 4 * G, 1);
        int first_long = (int)t->npods;
        for (int i = 0; i < 4; i++)
            ts_bound(t, c, G, 0, 1ull << i, t->now - 600000);
        int first_short = (int)t->npods;
        for (int i = 0; i < 4; i++) {
            int p = ts_bound(t, c, G, 1, 1ull << i, t->now - 3000000);
            t->pods[p].max_runtime_ms = 3600000;
        }
        ts_pod(t, x, 4 * G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 4);
        int first = on ? first_short : first_long;
        for (size_t i = 0; i < t->res.nactions; i++)
            if (t->res.actions[i].kind == FAIR_ACTION_EVICT &&
                (t->res.actions[i].pod < first || t->res.actions[i].pod >= first + 4))
                fail_msg("on=%d: evicted pod %d", on, (int)t->res.actions[i].pod);
        ts_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_staggered_arrivals_end_at_fair_share),
        cmocka_unit_test(test_guarantee_only_keeps_borrowers),
        cmocka_unit_test(test_hysteresis),
        cmocka_unit_test(test_over_quota_min_runtime),
        cmocka_unit_test(test_idle_gpus_go_to_waiting_pods),
        cmocka_unit_test(test_hold_timeout),
        cmocka_unit_test(test_holds_follow_the_need),
        cmocka_unit_test(test_freed_hold_room_goes_out_at_once),
        cmocka_unit_test(test_hold_ended_by_reclaim_goes_out_in_pass2),
        cmocka_unit_test(test_hold_ended_after_young_victims),
        cmocka_unit_test(test_victims_lose_least_work),
        cmocka_unit_test(test_victim_noticed_before),
        cmocka_unit_test(test_evicted_too_often_stays_within_share),
        cmocka_unit_test(test_eviction_bound_is_strict),
        cmocka_unit_test(test_aging_table),
        cmocka_unit_test(test_lend_max_runtime_table),
        cmocka_unit_test(test_lend_max_runtime_fair_share_reclaim),
        cmocka_unit_test(test_lend_max_runtime_protects_long_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
