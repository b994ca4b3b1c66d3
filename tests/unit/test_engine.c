/* Engine tests: fair share (guarantees, weights, tiers, limits, remainders),
 * admission, lending and reclaim, preemption, validation, stability and
 * determinism. Expected figures are exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "test_engine_fixture.h"

#define G 1000

/* Fair share with nothing guaranteed: 16 GPUs among weights 1:2:1, and
 * among 3 equal teams on 10 GPUs (remainder rule: the milli left over goes
 * to the largest fractional part, ties by name). */
struct share_case {
    const char *title;
    int gpus_per_node, nodes;
    struct {
        const char *name;
        int64_t guaranteed, weight, limit;
        int32_t priority;
        int pods;
    } teams[4];
    int nteams;
    int64_t want_fs[4];
    int want_binds[4];
};

static void test_fair_share_table(void **state)
{
    (void)state;
    static const struct share_case cases[] = {
        {"weights 1:2:1",
         8,
         2,
         {{"a", 0, 1, 0, 0, 16}, {"b", 0, 2, 0, 0, 16}, {"c", 0, 1, 0, 0, 16}},
         3,
         {4 * G, 8 * G, 4 * G},
         {4, 8, 4}},
        {"remainder 10/3",
         10,
         1,
         {{"c", 0, 1, 0, 0, 10}, {"a", 0, 1, 0, 0, 10}, {"b", 0, 1, 0, 0, 10}},
         3,
         {3333, 3334, 3333},
         {3, 4, 3}},
        {"guarantee then weights",
         8,
         2,
         {{"a", 6 * G, 1, 0, 0, 16}, {"b", 2 * G, 1, 0, 0, 16}},
         2,
         {10 * G, 6 * G},
         {10, 6}},
        {"demand caps, rest redistributed",
         8,
         2,
         {{"a", 0, 1, 0, 0, 2}, {"b", 0, 1, 0, 0, 16}, {"c", 0, 2, 0, 0, 16}},
         3,
         {2 * G, 4667, 9333},
         {2, 5, 9}},
        {"priority tiers",
         8,
         2,
         {{"hi", 0, 1, 0, 1, 10}, {"lo", 0, 5, 0, 0, 16}},
         2,
         {10 * G, 6 * G},
         {10, 6}},
        {"limit",
         8,
         2,
         {{"a", 0, 1, 5 * G, 0, 16}, {"b", 0, 1, 0, 0, 16}},
         2,
         {5 * G, 11 * G},
         {5, 11}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct share_case *k = &cases[c];
        struct ts *t = ts_new();
        for (int n = 0; n < k->nodes; n++)
            ts_node(t, ts_str(t, "node-%d", n), k->gpus_per_node);
        for (int i = 0; i < k->nteams; i++) {
            int q = ts_team(t, k->teams[i].name, k->teams[i].guaranteed, k->teams[i].weight);
            t->projects[q].q.over_quota_priority = k->teams[i].priority;
            t->queues[q].q.over_quota_priority = k->teams[i].priority;
            if (k->teams[i].limit)
                t->queues[q].q.limit.v[FAIR_RES_GPU] = k->teams[i].limit;
            for (int j = 0; j < k->teams[i].pods; j++)
                ts_pod(t, q, G);
        }
        assert_int_equal(ts_run(t), 0);
        for (int i = 0; i < k->nteams; i++) {
            if (t->res.queues[i].fair_share.v[FAIR_RES_GPU] != k->want_fs[i])
                fail_msg("%s: team %s fair share %lld, want %lld", k->title, k->teams[i].name,
                         (long long)t->res.queues[i].fair_share.v[FAIR_RES_GPU],
                         (long long)k->want_fs[i]);
            if ((int)ts_count_q(t, FAIR_ACTION_BIND, i) != k->want_binds[i])
                fail_msg("%s: team %s got %zu binds, want %d", k->title, k->teams[i].name,
                         ts_count_q(t, FAIR_ACTION_BIND, i), k->want_binds[i]);
        }
        ts_free(t);
    }
}

/* A project's limit caps its queues: 6 GPUs shared 3/3. */
static void test_project_caps_queues(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    ts_node(t, "n1", 8);
    int p = ts_project(t, "proj", 0, 1);
    t->projects[p].q.limit.v[FAIR_RES_GPU] = 6 * G;
    int q1 = ts_queue(t, "q1", p, 0, 1);
    int q2 = ts_queue(t, "q2", p, 0, 1);
    for (int i = 0; i < 8; i++) {
        ts_pod(t, q1, G);
        ts_pod(t, q2, G);
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.projects[p].fair_share.v[FAIR_RES_GPU], 6 * G);
    assert_int_equal(t->res.projects[p].demand.v[FAIR_RES_GPU], 6 * G);
    assert_int_equal(t->res.queues[q1].fair_share.v[FAIR_RES_GPU], 3 * G);
    assert_int_equal(t->res.queues[q2].fair_share.v[FAIR_RES_GPU], 3 * G);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, q1), 3);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, q2), 3);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_OVER_LIMIT), 10);
    ts_free(t);
}

/* The story of the README: B borrows A's idle guarantee, A comes back,
 * exactly 8 of B's pods are reclaimed, and A's pods bind once they leave. */
static void test_lend_then_reclaim(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    int a = ts_team(t, "team-a", 8 * G, 1);
    int b = ts_team(t, "team-b", 8 * G, 1);
    for (int i = 0; i < 16; i++)
        ts_pod(t, b, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, b), 16);
    assert_int_equal(t->res.queues[b].fair_share.v[FAIR_RES_GPU], 16 * G);
    assert_int_equal(t->res.queues[a].fair_share.v[FAIR_RES_GPU], 0);
    assert_int_equal(t->res.queues[b].allocated_after.v[FAIR_RES_GPU], 16 * G);
    ts_apply(t, true);
    /* The figures after lending: B borrows 8, A lends 8. */
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    assert_int_equal(t->res.queues[b].borrowed.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.queues[a].lent.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.projects[a].lent.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.cluster.borrowed.v[FAIR_RES_GPU], 8 * G);
    ts_apply(t, true);

    t->now += 60000;
    for (int i = 0; i < 8; i++)
        ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 8);
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *x = &t->res.actions[i];
        assert_int_equal(t->pods[x->pod].queue, b);
        assert_int_equal(x->reason, FAIR_EVICT_RECLAIM);
        assert_int_equal(x->for_queue, a);
        assert_int_equal(t->pods[x->for_pod].queue, a);
    }
    assert_int_equal(t->res.queues[a].fair_share.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.queues[b].fair_share.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.queues[b].allocated_after.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_WAITING_RECLAIM), 8);
    /* Next cycle, victims still terminating: no new evictions. */
    ts_apply(t, true);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_WAITING_RECLAIM), 8);
    ts_apply(t, true);
    /* The victims are gone: A's 8 pods bind, then nothing more happens. */
    ts_reap(t);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, a), 8);
    assert_int_equal(t->res.nactions, 8);
    ts_apply(t, true);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    assert_int_equal(t->res.queues[a].allocated.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.queues[b].allocated.v[FAIR_RES_GPU], 8 * G);
    ts_free(t);
}

/* Young borrowed pods (under reclaimMinRuntime) are not reclaimed. */
static void test_min_runtime(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    int a = ts_team(t, "a", 8 * G, 1);
    int b = ts_team(t, "b", 0, 1);
    t->queues[b].reclaim_min_runtime_ms = 600000;
    for (int i = 0; i < 8; i++)
        ts_bound(t, b, G, 0, (uint64_t)1 << i, t->now - (i < 3 ? 1000000 : 1000));
    for (int i = 0; i < 8; i++)
        ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    /* Only the 3 pods older than 10 minutes may go. */
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 3);
    for (size_t i = 0; i < t->res.nactions; i++)
        assert_true(t->pods[t->res.actions[i].pod].started_ms == t->now - 1000000);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_WAITING_RECLAIM), 3);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_NO_NODE_FITS), 5);
    ts_free(t);
}

/* Non-preemptible pods only within the guaranteed share, and never victims. */
static void test_non_preemptible(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    int a = ts_team(t, "a", 2 * G, 1);
    for (int i = 0; i < 4; i++)
        t->pods[ts_pod(t, a, G)].preemptible = false;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 2);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_OVER_GUARANTEE), 2);
    ts_free(t);

    /* Borrowed non-preemptible pods (guarantee shrunk since) are no victims. */
    t = ts_new();
    ts_node(t, "n0", 4);
    a = ts_team(t, "a", 4 * G, 1);
    int b = ts_team(t, "b", 0, 1);
    for (int i = 0; i < 4; i++)
        t->pods[ts_bound(t, b, G, 0, (uint64_t)1 << i, 0)].preemptible = i >= 2;
    ts_pod(t, a, 2 * G);
    ts_pod(t, a, 2 * G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 2);
    for (size_t i = 0; i < t->res.nactions; i++)
        assert_true(t->pods[t->res.actions[i].pod].preemptible);
    ts_free(t);
}

/* Minimal victim sets on one node. */
static void test_minimal_victims(void **state)
{
    (void)state;
    /* A 4-GPU pod: one 4-GPU victim on node-1 rather than four 1-GPU ones. */
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    int a = ts_team(t, "a", 8 * G, 1);
    int b = ts_team(t, "b", 8 * G, 1);
    for (int i = 0; i < 8; i++)
        ts_bound(t, b, G, 0, (uint64_t)1 << i, 100 + i);
    int big = ts_bound(t, b, 4 * G, 1, 0x0f, 50);
    for (int i = 4; i < 8; i++)
        ts_bound(t, a, G, 1, (uint64_t)1 << i, 10);
    int want = ts_pod(t, a, 4 * G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 1);
    assert_int_equal(t->res.actions[0].kind, FAIR_ACTION_EVICT);
    assert_int_equal(t->res.actions[0].pod, big);
    assert_int_equal(t->res.actions[0].for_pod, want);
    ts_free(t);

    /* Enough free GPUs in total (2 + 2) but not on one node: victims are
     * taken, 2 per pod, each set on one node. */
    t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    a = ts_team(t, "a", 8 * G, 1);
    b = ts_team(t, "b", 0, 1);
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 6; i++)
            ts_bound(t, b, G, n, (uint64_t)1 << i, 100 + i);
    int p1 = ts_pod(t, a, 4 * G);
    int p2 = ts_pod(t, a, 4 * G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 4);
    int per[2][2] = {{0, 0}, {0, 0}};
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *x = &t->res.actions[i];
        assert_true(x->for_pod == p1 || x->for_pod == p2);
        per[x->for_pod == p2][t->pods[x->pod].node]++;
    }
    assert_true((per[0][0] == 2 && per[1][1] == 2) || (per[0][1] == 2 && per[1][0] == 2));
    ts_free(t);
}

/* A higher-priority pod of a queue at its fair share preempts a lower one. */
static void test_preempt_in_queue(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 4);
    int a = ts_team(t, "a", 4 * G, 1);
    for (int i = 0; i < 4; i++)
        t->pods[ts_bound(t, a, G, 0, (uint64_t)1 << i, 10 + i)].priority = i == 2 ? 5 : 10;
    int hp = ts_pod(t, a, G);
    t->pods[hp].priority = 100;
    int lp = ts_pod(t, a, G);
    t->pods[lp].priority = 1;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 1);
    assert_int_equal(t->res.actions[0].kind, FAIR_ACTION_EVICT);
    assert_int_equal(t->res.actions[0].reason, FAIR_EVICT_PREEMPT);
    assert_int_equal(t->pods[t->res.actions[0].pod].priority, 5);
    assert_int_equal(t->res.actions[0].for_pod, hp);
    assert_int_equal(t->res.pending_reasons[hp], FAIR_PENDING_WAITING_RECLAIM);
    assert_int_equal(t->res.pending_reasons[lp], FAIR_PENDING_FAIR_SHARE);
    /* Victim terminating: no more evictions; gone: the pod binds. */
    ts_apply(t, true);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    ts_apply(t, true);
    ts_reap(t);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 1);
    assert_int_equal(t->res.actions[0].kind, FAIR_ACTION_BIND);
    assert_int_equal(t->pods[t->res.actions[0].pod].priority, 100);
    ts_free(t);
}

/* Bad input: problems that name the object and the field, the rest still
 * scheduled; indices out of range fail the call. */
static void test_bad_input(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    int good = ts_team(t, "good", 2 * G, 1);
    int pneg = ts_project(t, "neg", 0, 1);
    t->projects[pneg].q.guaranteed.v[FAIR_RES_CPU] = -5;
    int qneg = ts_queue(t, "in-neg", pneg, 0, 1);
    int pw = ts_project(t, "ok-proj", 4 * G, 1);
    int qzero = ts_queue(t, "zero-weight", pw, 0, 0);
    int qorph = ts_queue(t, "orphan", -1, 0, 1);
    t->queues[qorph].project_name = "nowhere";
    /* Queues guaranteeing more than their project. */
    int qa = ts_queue(t, "big-1", pw, 3 * G, 1);
    int qb = ts_queue(t, "big-2", pw, 3 * G, 1);
    int p1 = ts_pod(t, qneg, G);
    int p2 = ts_pod(t, qzero, G);
    int p3 = ts_pod(t, qorph, G);
    int p4 = ts_pod(t, good, 1500);
    int p5 = ts_pod(t, good, G);
    t->pods[p5].request.v[FAIR_RES_MEM] = -1;
    int p6 = ts_pod(t, good, G);
    int p7 = ts_pod(t, -1, G);
    int p8 = ts_pod(t, qa, 3 * G);
    int p9 = ts_pod(t, qb, 3 * G);
    assert_int_equal(ts_run(t), 0);
    static const struct {
        enum fair_problem_kind kind;
        enum fair_object_kind obj;
        const char *text;
    } want[] = {
        {FAIR_PROBLEM_INVALID, FAIR_OBJ_PROJECT,
         "project \"neg\": guaranteed cpu is negative (-5)"},
        {FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, "queue \"in-neg\": its project \"neg\" is invalid"},
        {FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, "queue \"zero-weight\": overQuotaWeight is 0"},
        {FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, "queue \"orphan\": project \"nowhere\" is unknown"},
        {FAIR_PROBLEM_INVALID, FAIR_OBJ_POD, "pod ns/good-"},
        {FAIR_PROBLEM_INVALID, FAIR_OBJ_POD, "memory request is negative (-1)"},
        {FAIR_PROBLEM_OVERCOMMITTED, FAIR_OBJ_PROJECT,
         "project \"ok-proj\": its queues guarantee 6000 gpu in total, more than the project's "
         "4000"},
    };
    for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
        bool found = false;
        for (size_t i = 0; i < t->res.nproblems; i++)
            if (t->res.problems[i].kind == want[w].kind &&
                t->res.problems[i].object == want[w].obj &&
                strstr(t->res.problems[i].message, want[w].text))
                found = true;
        if (!found) {
            for (size_t i = 0; i < t->res.nproblems; i++)
                print_message("problem: %s\n", t->res.problems[i].message);
            fail_msg("no problem \"%s\"", want[w].text);
        }
    }
    assert_non_null(strstr(t->res.problems[4].message, "gpu request 1500 milli is neither"));
    assert_int_equal(t->res.pending_reasons[p1], FAIR_PENDING_INVALID_QUEUE);
    assert_int_equal(t->res.pending_reasons[p2], FAIR_PENDING_INVALID_QUEUE);
    assert_int_equal(t->res.pending_reasons[p3], FAIR_PENDING_INVALID_QUEUE);
    assert_int_equal(t->res.pending_reasons[p4], FAIR_PENDING_INVALID_POD);
    assert_int_equal(t->res.pending_reasons[p5], FAIR_PENDING_INVALID_POD);
    assert_int_equal(t->res.pending_reasons[p6], FAIR_PENDING_NONE);
    assert_int_equal(t->res.pending_reasons[p7], FAIR_PENDING_UNKNOWN_QUEUE);
    /* Scaled down guarantees: 3:3 of 4 GPUs -> 2000 each. */
    assert_int_equal(t->res.queues[qa].guaranteed.v[FAIR_RES_GPU], 2 * G);
    assert_int_equal(t->res.queues[qb].guaranteed.v[FAIR_RES_GPU], 2 * G);
    assert_int_equal(t->res.pending_reasons[p8], FAIR_PENDING_NONE);
    assert_int_equal(t->res.pending_reasons[p9], FAIR_PENDING_NONE);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 3);

    /* Projects guaranteeing more than the cluster: OVERCOMMITTED cluster. */
    ts_team(t, "huge", 100 * G, 1);
    assert_int_equal(ts_run(t), 0);
    bool cluster = false;
    for (size_t i = 0; i < t->res.nproblems; i++)
        if (t->res.problems[i].object == FAIR_OBJ_CLUSTER &&
            t->res.problems[i].kind == FAIR_PROBLEM_OVERCOMMITTED &&
            strstr(t->res.problems[i].message, "projects guarantee 106000 gpu in total but the "
                                               "cluster has 8000"))
            cluster = true;
    assert_true(cluster);

    /* Index out of range: the whole call fails, result empty. */
    t->pods[p6].queue = 99;
    assert_int_equal(ts_run(t), FAIR_EINVAL);
    assert_non_null(strstr(t->err.msg, "queue index 99 out of range"));
    assert_null(t->res.actions);
    t->pods[p6].queue = good;
    t->pods[p6].state = FAIR_POD_BOUND;
    t->pods[p6].node = 7;
    assert_int_equal(ts_run(t), FAIR_EINVAL);
    assert_non_null(strstr(t->err.msg, "bound to node index 7"));
    ts_free(t);
}

/* Bad nodes are skipped with a problem. */
static void test_bad_nodes(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int n0 = ts_node(t, "too-many", 65);
    int n1 = ts_node(t, "mismatch", 8);
    t->nodes[n1].allocatable.v[FAIR_RES_GPU] = 7000;
    ts_node(t, "fine", 2);
    int a = ts_team(t, "a", 0, 1);
    for (int i = 0; i < 3; i++)
        ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nproblems, 2);
    assert_int_equal(t->res.problems[0].index, n0);
    assert_non_null(strstr(t->res.problems[0].message, "node \"too-many\": gpu_count 65"));
    assert_non_null(strstr(t->res.problems[1].message,
                           "node \"mismatch\": allocatable gpu 7000 milli does not match"));
    assert_int_equal(t->res.capacity.v[FAIR_RES_GPU], 2 * G);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 2);
    ts_free(t);
}

/* Runs cycles, applying actions, until one has none; returns the count.
 * No flip-flop: a pod the engine bound is not reclaimed in the next round
 * (preemption may take it: a higher-priority pod of its own queue). */
static int converge(struct ts *t, int max_rounds, bool terminate_first)
{
    static char fresh[TS_MAXPODS][48];
    static char unserved[TS_MAXPODS][48];
    size_t nfresh = 0, nunserved = 0;
    for (int round = 1; round <= max_rounds; round++) {
        assert_int_equal(ts_run(t), 0);
        for (size_t i = 0; i < t->res.nactions; i++) {
            const struct fair_action *a = &t->res.actions[i];
            if (a->kind != FAIR_ACTION_EVICT)
                continue;
            if (a->reason == FAIR_EVICT_PREEMPT) {
                assert_int_equal(a->for_queue, t->pods[a->pod].queue);
                assert_true(t->pods[a->for_pod].priority > t->pods[a->pod].priority);
                continue;
            }
            /* Without held nodes, room lent in pass 2 next to a pod owed
             * room whose search found nothing may be taken back by that
             * pod next cycle (docs/engine.md, "Stability";
             * test_lent_next_to_owed_pod). */
            bool lent_by_design = false;
            for (size_t j = 0; j < nunserved && t->hold_timeout == 0; j++)
                if (strcmp(unserved[j], t->pods[a->for_pod].uid) == 0)
                    lent_by_design = true;
            for (size_t j = 0; j < nfresh && !lent_by_design; j++)
                if (strcmp(fresh[j], t->pods[a->pod].uid) == 0) {
                    if (getenv("TS_DEBUG"))
                        ts_dump(t);
                    fail_msg("round %d: pod %s bound last round is evicted", round, fresh[j]);
                }
        }
        nfresh = 0;
        for (size_t i = 0; i < t->res.nactions && nfresh < TS_MAXPODS; i++)
            if (t->res.actions[i].kind == FAIR_ACTION_BIND)
                snprintf(fresh[nfresh++], sizeof(fresh[0]), "%s",
                         t->pods[t->res.actions[i].pod].uid);
        nunserved = 0;
        for (size_t i = 0; i < t->npods && nunserved < TS_MAXPODS; i++)
            if (t->res.pending_reasons[i] == FAIR_PENDING_NO_NODE_FITS)
                snprintf(unserved[nunserved++], sizeof(unserved[0]), "%s", t->pods[i].uid);
        if (t->res.nactions == 0)
            return round;
        if (terminate_first && ts_count(t, FAIR_ACTION_EVICT)) {
            /* With the victims terminating, the next cycle evicts nothing. */
            ts_apply(t, true);
            assert_int_equal(ts_run(t), 0);
            if (ts_count(t, FAIR_ACTION_EVICT) != 0) {
                if (getenv("TS_DEBUG"))
                    ts_dump(t);
                fail_msg("round %d: %zu new evictions while victims terminate", round,
                         ts_count(t, FAIR_ACTION_EVICT));
            }
            ts_apply(t, true);
            ts_reap(t);
        } else {
            ts_apply(t, false);
        }
    }
    return -1;
}

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

static void random_cluster(struct ts *t, uint64_t seed)
{
    rng_state = seed;
    for (int n = 0; n < 6; n++)
        ts_node(t, ts_str(t, "node-%02d", n), 8);
    int p0 = ts_project(t, "p0", 16 * G, 1);
    int p1 = ts_project(t, "p1", 8 * G, 2);
    int p2 = ts_project(t, "p2", 0, 1);
    ts_queue(t, "q0", p0, 10 * G, 1);
    ts_queue(t, "q1", p0, 6 * G, 3);
    ts_queue(t, "q2", p1, 8 * G, 1);
    ts_queue(t, "q3", p2, 0, 1);
    ts_queue(t, "q4", p2, 0, 2);
    static const int64_t sizes[] = {250, 500, 1000, 1000, 2000, 4000, 8000};
    for (int i = 0; i < 60; i++) {
        int q = (int)rnd(5);
        int p = ts_pod(t, q, sizes[rnd(7)]);
        t->pods[p].priority = (int32_t)rnd(3);
    }
}

static void test_stability(void **state)
{
    (void)state;
    /* The engine's defaults, then the controller's (a 10% hysteresis and
     * nodes held for pods owed room). */
    for (uint64_t seed = 1; seed <= 120; seed++) {
        struct ts *t = ts_new();
        if (seed > 60) {
            t->threshold_pct = 10;
            t->hold_timeout = 600000;
        }
        random_cluster(t, seed > 60 ? seed - 60 : seed);
        /* Fill the cluster, then a new wave of demand arrives. */
        int r = converge(t, 6, true);
        if (r < 0)
            fail_msg("seed %llu: no fixed point (first wave)", (unsigned long long)seed);
        for (int i = 0; i < 30; i++) {
            int p = ts_pod(t, (int)rnd(5), (int64_t)(1 + rnd(4)) * G);
            t->pods[p].priority = (int32_t)rnd(3);
        }
        /* Two gangs: 3 x 2 GPUs and 2 x 4 GPUs. */
        int gq = (int)rnd(5);
        for (int i = 0; i < 3; i++) {
            int p = ts_pod(t, gq, 2 * G);
            t->pods[p].gang = "g3";
            t->pods[p].gang_size = 3;
        }
        gq = (int)rnd(5);
        for (int i = 0; i < 2; i++) {
            int p = ts_pod(t, gq, 4 * G);
            t->pods[p].gang = "g2";
            t->pods[p].gang_size = 2;
        }
        r = converge(t, 8, true);
        if (r < 0)
            fail_msg("seed %llu: no fixed point (second wave)", (unsigned long long)seed);
        ts_free(t);
    }
}

/* Room lent in pass 2 next to a pod owed room whose search found nothing:
 * a needs 2 GPUs on one node; n0 has 1 free, 1 held by c's pod (c at its
 * fair share, so no victim) and 2 by d's; n1 has 1 free (e, at its
 * guarantee, holds the other 3). Pass 2 lends n0's free GPU to b and n1's
 * to c; that puts c above its fair share, so next cycle a's search takes
 * c's old pod and b's pod bound the cycle before. A held node (the
 * controller's default, reclaim.nodeHoldTimeout) keeps n0 for a: nothing
 * is lent there and nothing is evicted. With holds off the engine lends
 * the GPU, by design (docs/engine.md, "Stability"). */
static void test_lent_next_to_owed_pod(void **state)
{
    (void)state;
    for (int hold = 0; hold <= 1; hold++) {
        struct ts *t = ts_new();
        t->hold_timeout = hold ? 600000 : 0;
        int n0 = ts_node(t, "n0", 4);
        int n1 = ts_node(t, "n1", 4); /* as big as n0, so n0 ranks first */
        int a = ts_team(t, "a", 2 * G, 1);
        int b = ts_team(t, "b", 0, 1);
        int c = ts_team(t, "c", 1 * G, 1);
        int d = ts_team(t, "d", 2 * G, 1);
        int e = ts_team(t, "e", 3 * G, 1);
        ts_bound(t, d, 2 * G, n0, 0x3, 0);
        ts_bound(t, c, G, n0, 0x4, 0);
        ts_bound(t, e, 3 * G, n1, 0x7, 0);
        int pa = ts_pod(t, a, 2 * G);
        int pb = ts_pod(t, b, G);
        int pc = ts_pod(t, c, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(t->res.queues[a].fair_share.v[FAIR_RES_GPU], 2 * G);
        assert_int_equal(t->res.queues[c].fair_share.v[FAIR_RES_GPU], G);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
        assert_int_equal(t->res.pending_reasons[pa],
                         hold ? FAIR_PENDING_NODE_HELD : FAIR_PENDING_NO_NODE_FITS);
        /* b's pod goes to n0 only without the hold; c's fits n1 either way
         * (with the hold, b and c compete for n1). */
        bool b_on_n0 = false;
        for (size_t i = 0; i < t->res.nactions; i++)
            if (t->res.actions[i].pod == pb && t->res.actions[i].node == n0)
                b_on_n0 = true;
        assert_int_equal(b_on_n0, !hold);
        (void)pc;
        ts_apply(t, false);
        assert_int_equal(ts_run(t), 0);
        bool b_evicted = false;
        for (size_t i = 0; i < t->res.nactions; i++)
            if (t->res.actions[i].kind == FAIR_ACTION_EVICT &&
                t->pods[t->res.actions[i].pod].queue == b)
                b_evicted = true;
        assert_int_equal(b_evicted, !hold);
        if (hold)
            assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
        ts_free(t);
    }
}

/* Same snapshot twice: the same actions. Nodes in another order: the same
 * decisions by name. */
static void test_determinism(void **state)
{
    (void)state;
    struct ts *t1 = ts_new(), *t2 = ts_new();
    random_cluster(t1, 7);
    random_cluster(t2, 7);
    assert_int_equal(ts_run(t1), 0);
    struct fair_result first = t1->res;
    memset(&t1->res, 0, sizeof(t1->res));
    assert_int_equal(ts_run(t1), 0);
    assert_int_equal(first.nactions, t1->res.nactions);
    assert_true(t1->res.nactions > 0);
    assert_memory_equal(first.actions, t1->res.actions, first.nactions * sizeof(*first.actions));
    fair_result_release(&first);
    /* Reverse t2's nodes and remap its pods (none bound yet). */
    for (size_t i = 0; i < t2->nn / 2; i++) {
        struct fair_node x = t2->nodes[i];
        t2->nodes[i] = t2->nodes[t2->nn - 1 - i];
        t2->nodes[t2->nn - 1 - i] = x;
    }
    /* And reverse its pods too. */
    for (size_t i = 0; i < t2->npods / 2; i++) {
        struct fair_pod x = t2->pods[i];
        t2->pods[i] = t2->pods[t2->npods - 1 - i];
        t2->pods[t2->npods - 1 - i] = x;
    }
    assert_int_equal(ts_run(t2), 0);
    assert_int_equal(t2->res.nactions, t1->res.nactions);
    for (size_t i = 0; i < t1->res.nactions; i++) {
        const struct fair_action *x = &t1->res.actions[i], *y = &t2->res.actions[i];
        assert_int_equal(x->kind, y->kind);
        assert_string_equal(t1->pods[x->pod].uid, t2->pods[y->pod].uid);
        assert_string_equal(t1->nodes[x->node].name, t2->nodes[y->node].name);
        assert_int_equal(x->gpu_devices, y->gpu_devices);
    }
    ts_free(t1);
    ts_free(t2);
}

/* The higher overQuotaPriority tier keeps its surplus: the victims come
 * from the lower tier, the only queue above its fair share. */
static void test_victim_order(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    ts_node(t, "n1", 8);
    int a = ts_team(t, "a", 8 * G, 1);
    int hi = ts_team(t, "hi", 0, 1);
    int lo = ts_team(t, "lo", 0, 1);
    t->projects[hi].q.over_quota_priority = 1;
    t->queues[hi].q.over_quota_priority = 1;
    for (int i = 0; i < 8; i++) {
        ts_bound(t, hi, G, i % 2, (uint64_t)1 << (i / 2), 0);
        ts_bound(t, lo, G, i % 2, (uint64_t)1 << (4 + i / 2), 0);
    }
    for (int i = 0; i < 4; i++)
        ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 4);
    for (size_t i = 0; i < t->res.nactions; i++)
        assert_int_equal(t->pods[t->res.actions[i].pod].queue, lo);
    /* a's fair share: 4 (its demand); "hi" is served first from the rest. */
    assert_int_equal(t->res.queues[a].fair_share.v[FAIR_RES_GPU], 4 * G);
    assert_int_equal(t->res.queues[hi].fair_share.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.queues[lo].fair_share.v[FAIR_RES_GPU], 4 * G);
    ts_free(t);
}

/* A pod deleted because its work is done (its queue within its fair share)
 * does not hold back reclaim; a borrower's terminating pod does. */
static void test_unrelated_deletion(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    ts_node(t, "n1", 8);
    int a = ts_team(t, "a", 8 * G, 1);
    int b = ts_team(t, "b", 8 * G, 1);
    int c = ts_team(t, "c", 0, 1);
    for (int i = 0; i < 8; i++)
        ts_bound(t, b, G, 0, (uint64_t)1 << i, 0);
    for (int i = 0; i < 7; i++)
        ts_bound(t, c, G, 1, (uint64_t)1 << i, 0);
    int done = ts_bound(t, b, 0, 1, 0, 0);
    t->pods[done].terminating = true;
    ts_pod(t, a, G);
    ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    /* One GPU is free on n1: one pod binds, one eviction from c. */
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_EVICT, c), 1);
    /* Now a pod of the borrower c is terminating on the free GPU: one of
     * a's pods waits for that room, the other gets no new victim. */
    t->pods[done].terminating = false;
    int going = ts_bound(t, c, G, 1, 0x80, 0);
    t->pods[going].terminating = true;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_WAITING_RECLAIM), 1);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_NO_NODE_FITS), 1);
    /* The same pod under a preemption notice (its eviction not sent yet):
     * its room still counts for one of a's pods, but it holds back no
     * other reclaim: the other pod gets a victim of its own, one only. */
    t->pods[going].noticed = true;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_EVICT, c), 1);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_WAITING_RECLAIM), 2);
    ts_free(t);
}

/* A gang owed room gets it for every member, or nothing is evicted. */
static void test_gang_reclaim(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    int h = ts_node(t, "node-1", 8);
    int a = ts_team(t, "a", 8 * G, 1);
    int b = ts_team(t, "b", 0, 1);
    for (int i = 0; i < 16; i++)
        ts_bound(t, b, G, i / 8, (uint64_t)1 << (i % 8), 0);
    int m[2];
    for (int i = 0; i < 2; i++) {
        m[i] = ts_pod(t, a, 4 * G);
        t->pods[m[i]].gang = "train";
        t->pods[m[i]].gang_size = 2;
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 8);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    assert_int_equal(t->res.pending_reasons[m[0]], FAIR_PENDING_WAITING_RECLAIM);
    assert_int_equal(t->res.pending_reasons[m[1]], FAIR_PENDING_WAITING_RECLAIM);
    ts_apply(t, true);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    ts_apply(t, true);
    ts_reap(t);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 2);
    assert_int_equal(t->res.nactions, 2);
    ts_apply(t, false);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    ts_free(t);

    /* Both members need an H100 node, and there is one: room for the
     * first could be made, not for the second, so nothing is evicted. */
    t = ts_new();
    ts_node(t, "node-0", 8);
    h = ts_node(t, "node-1", 8);
    t->nodes[h].gpu_model = "H100";
    a = ts_team(t, "a", 16 * G, 1);
    b = ts_team(t, "b", 0, 1);
    for (int i = 0; i < 16; i++)
        ts_bound(t, b, G, i / 8, (uint64_t)1 << (i % 8), 0);
    for (int i = 0; i < 2; i++) {
        m[i] = ts_pod(t, a, 8 * G);
        t->pods[m[i]].gang = "train";
        t->pods[m[i]].gang_size = 2;
        t->pods[m[i]].gpu_model = "H100";
    }
    int solo = ts_pod(t, a, 1 * G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.pending_reasons[m[0]], FAIR_PENDING_GANG_NO_FIT);
    assert_int_equal(t->res.pending_reasons[m[1]], FAIR_PENDING_GANG_NO_FIT);
    /* The lone 1-GPU pod still gets its single victim. */
    assert_int_equal(t->res.nactions, 1);
    assert_int_equal(t->res.actions[0].for_pod, solo);
    ts_free(t);
}

/* Reclaim decisions do not depend on input order: the same victims (by
 * uid) and the same nodes (by name) with nodes and pods reversed. */
static void build_reclaim(struct ts *t, bool reversed)
{
    const char *names[3] = {"node-a", "node-b", "node-c"};
    for (int i = 0; i < 3; i++)
        ts_node(t, names[reversed ? 2 - i : i], 8);
    int a = ts_team(t, "a", 12 * G, 1);
    int b = ts_team(t, "b", 0, 1);
    struct fair_pod tmp[40];
    size_t n = 0;
    for (int i = 0; i < 24; i++) {
        int node = i % 3;
        int p = ts_bound(t, b, G, reversed ? 2 - node : node, (uint64_t)1 << (i / 3), 100 + i % 5);
        t->pods[p].priority = i % 2;
    }
    for (int i = 0; i < 3; i++)
        ts_pod(t, a, 4 * G);
    ts_pod(t, a, 500);
    if (reversed) {
        for (size_t i = 0; i < t->npods; i++)
            tmp[n++] = t->pods[t->npods - 1 - i];
        memcpy(t->pods, tmp, n * sizeof(tmp[0]));
    }
}

static void test_determinism_reclaim(void **state)
{
    (void)state;
    struct ts *t1 = ts_new(), *t2 = ts_new();
    build_reclaim(t1, false);
    build_reclaim(t2, true);
    assert_int_equal(ts_run(t1), 0);
    assert_int_equal(ts_run(t2), 0);
    assert_true(ts_count(t1, FAIR_ACTION_EVICT) >= 8);
    assert_int_equal(t1->res.nactions, t2->res.nactions);
    for (size_t i = 0; i < t1->res.nactions; i++) {
        const struct fair_action *x = &t1->res.actions[i], *y = &t2->res.actions[i];
        assert_int_equal(x->kind, y->kind);
        assert_string_equal(t1->pods[x->pod].uid, t2->pods[y->pod].uid);
        assert_string_equal(t1->nodes[x->node].name, t2->nodes[y->node].name);
        if (x->kind == FAIR_ACTION_EVICT)
            assert_string_equal(t1->pods[x->for_pod].uid, t2->pods[y->for_pod].uid);
        else
            assert_int_equal(x->gpu_devices, y->gpu_devices);
    }
    ts_free(t1);
    ts_free(t2);
}

/* Every allocation failing in turn: FAIR_ENOMEM, an empty result, no leak
 * (the sanitizer build checks), and success once allocations work. */
static void test_out_of_memory(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    random_cluster(t, 3);
    t->pods[0].gang = "g";
    t->pods[0].gang_size = 2;
    t->pods[1].gang = "g";
    t->pods[1].gang_size = 2;
    t->pods[1].queue = t->pods[0].queue;
    assert_int_equal(ts_run(t), 0);
    size_t want = t->res.nactions;
    int failures = 0;
    for (long k = 0; k < 10000; k++) {
        fair_alloc_fail_after(k);
        int rc = ts_run(t);
        fair_alloc_fail_after(-1);
        if (rc == 0) {
            assert_int_equal(t->res.nactions, want);
            break;
        }
        assert_int_equal(rc, FAIR_ENOMEM);
        assert_null(t->res.actions);
        assert_int_equal(t->res.nactions, 0);
        failures++;
    }
    assert_true(failures > 10);
    ts_free(t);
}

/* Random values in every field the engine reads: never a crash, and
 * either a result or FAIR_EINVAL. */
static void test_random_input(void **state)
{
    (void)state;
    static const int64_t vals[] = {
        -1000, -1, 0, 1, 250, 999, 1000, 1500, 8000, 64000, (int64_t)1 << 52, INT64_MAX};
    for (uint64_t seed = 1; seed <= 200; seed++) {
        struct ts *t = ts_new();
        random_cluster(t, seed);
        for (int k = 0; k < 12; k++) {
            int64_t v = vals[rnd(sizeof(vals) / sizeof(vals[0]))];
            int r = (int)rnd(3);
            switch (rnd(8)) {
            case 0:
                t->pods[rnd((uint32_t)t->npods)].request.v[r] = v;
                break;
            case 1:
                t->nodes[rnd((uint32_t)t->nn)].allocatable.v[r] = v;
                break;
            case 2:
                t->nodes[rnd((uint32_t)t->nn)].gpu_count = (int)(v % 100);
                break;
            case 3:
                t->queues[rnd((uint32_t)t->nq)].q.guaranteed.v[r] = v;
                break;
            case 4:
                t->projects[rnd((uint32_t)t->np)].q.limit.v[r] = v;
                break;
            case 5:
                t->queues[rnd((uint32_t)t->nq)].q.over_quota_weight = v;
                break;
            case 6: {
                struct fair_pod *p = &t->pods[rnd((uint32_t)t->npods)];
                p->state = FAIR_POD_BOUND;
                p->node = (int32_t)rnd((uint32_t)t->nn);
                p->gpu_devices = (uint64_t)v;
                p->terminating = rnd(2);
                break;
            }
            default:
                t->pods[rnd((uint32_t)t->npods)].queue = (int32_t)rnd((uint32_t)t->nq + 1) - 1;
            }
        }
        int rc = ts_run(t);
        assert_true(rc == 0 || rc == FAIR_EINVAL);
        if (rc == 0)
            assert_int_equal(t->res.npods, t->npods);
        ts_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fair_share_table),    cmocka_unit_test(test_project_caps_queues),
        cmocka_unit_test(test_lend_then_reclaim),   cmocka_unit_test(test_min_runtime),
        cmocka_unit_test(test_non_preemptible),     cmocka_unit_test(test_minimal_victims),
        cmocka_unit_test(test_preempt_in_queue),    cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_bad_nodes),           cmocka_unit_test(test_stability),
        cmocka_unit_test(test_lent_next_to_owed_pod),
        cmocka_unit_test(test_determinism),         cmocka_unit_test(test_victim_order),
        cmocka_unit_test(test_out_of_memory),       cmocka_unit_test(test_random_input),
        cmocka_unit_test(test_unrelated_deletion),  cmocka_unit_test(test_gang_reclaim),
        cmocka_unit_test(test_determinism_reclaim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
