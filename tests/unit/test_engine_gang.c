/* The engine's running gangs as victims: a gang is evicted whole or not at
 * all, counted with all its GPUs; an elastic gang's members above its
 * gang_size (minMember) go first, one by one, never below it
 * (docs/engine.md, "Running gangs"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_engine_fixture.h"

#define G 1000

/* A running gang member of queue q on node, device dev. */
static int gang_bound(struct ts *t, int q, const char *gang, int size, int node, int dev,
                      int64_t started)
{
    int p = ts_bound(t, q, G, node, (uint64_t)1 << dev, started);
    t->pods[p].gang = gang;
    t->pods[p].gang_size = size;
    return p;
}

/* The evictions of the last run, as a bitset of pod indices. */
static void evicted(const struct ts *t, bool *out)
{
    memset(out, 0, TS_MAXPODS * sizeof(*out));
    for (size_t i = 0; i < t->res.nactions; i++)
        if (t->res.actions[i].kind == FAIR_ACTION_EVICT)
            out[t->res.actions[i].pod] = true;
}

static bool ev[TS_MAXPODS];

/* Table: the victim unit. Each row is a cluster of two 8-GPU nodes where
 * team b borrows everything and team a (guaranteed `a_g` GPUs) asks for
 * `a_pods` one-GPU pods. b runs gangs (sizes in `gangs`, their members
 * spread over both nodes) and `plain` plain pods; plain pods started
 * before the gangs (they would lose more work, so the per-pod victim order
 * alone would take gang members first). */
struct unit_case {
    const char *name;
    int a_g, a_pods;
    int gangs[3]; /* members (= gang_size) of each gang, 0: none */
    int plain;
    int want_evict;      /* evictions in the first cycle */
    int want_gang_whole; /* gangs evicted whole */
    bool plain_only;     /* only plain pods evicted */
};

static const struct unit_case unit_cases[] = {
    /* A single plain victim suffices: no gang member goes, although gang
     * members lose less work. */
    {"plain pod before a gang member", 8, 1, {8, 0, 0}, 8, 1, 0, true},
    /* Two gangs of 8: one goes whole (b keeps its fair share of 8). */
    {"one of two gangs, whole", 8, 8, {8, 8, 0}, 0, 8, 1, false},
    /* One 16-pod gang borrowing 8: it goes whole, or b would keep 8
     * borrowed GPUs for good. */
    {"a gang larger than the excess goes whole", 8, 8, {16, 0, 0}, 0, 16, 1, false},
    /* a asks for 1 GPU: still the whole 8-pod gang, never one member. */
    {"one GPU owed, whole gang", 8, 1, {8, 8, 0}, 0, 8, 1, false},
};

static void test_victim_unit(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(unit_cases) / sizeof(unit_cases[0]); c++) {
        const struct unit_case *uc = &unit_cases[c];
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "a", (int64_t)uc->a_g * G, 1);
        int b = ts_team(t, "b", 0, 1);
        int used[2] = {0, 0};
        int gang_first[3] = {-1, -1, -1};
        for (int i = 0; i < uc->plain; i++) {
            int n = i % 2;
            ts_bound(t, b, G, n, (uint64_t)1 << used[n], 1000);
            used[n]++;
        }
        for (int g = 0; g < 3 && uc->gangs[g]; g++) {
            const char *name = ts_str(t, "ns/g%d", g);
            for (int m = 0; m < uc->gangs[g]; m++) {
                int n = m % 2;
                int p = gang_bound(t, b, name, uc->gangs[g], n, used[n], 500000 + g);
                used[n]++;
                if (m == 0)
                    gang_first[g] = p;
            }
        }
        for (int i = 0; i < uc->a_pods; i++)
            ts_pod(t, a, G);
        assert_int_equal(ts_run(t), 0);
        if (ts_count(t, FAIR_ACTION_EVICT) != (size_t)uc->want_evict)
            ts_dump(t);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), uc->want_evict);
        evicted(t, ev);
        int whole = 0;
        for (int g = 0; g < 3 && uc->gangs[g]; g++) {
            int n = 0;
            for (size_t i = 0; i < t->npods; i++)
                if (t->pods[i].gang && !strcmp(t->pods[i].gang, t->pods[gang_first[g]].gang) &&
                    ev[i])
                    n++;
            /* whole or not at all */
            if (n != 0 && n != uc->gangs[g]) {
                fprintf(stderr, "case %s: gang %d lost %d of %d\n", uc->name, g, n, uc->gangs[g]);
                fail();
            }
            whole += n == uc->gangs[g];
        }
        assert_int_equal(whole, uc->want_gang_whole);
        if (uc->plain_only)
            for (size_t i = 0; i < t->npods; i++)
                assert_false(ev[i] && t->pods[i].gang);
        /* The next cycles, with the victims terminating and then gone, take
         * nothing more and start a's pods. */
        ts_apply(t, true);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
        ts_apply(t, true);
        ts_reap(t);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
        assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, a), uc->a_pods);
        ts_free(t);
    }
}

/* A gang too young to reclaim (reclaimMinRuntime) is not taken, not even
 * in part, and a non-preemptible member shields its whole gang. */
static void test_unit_not_eligible(void **state)
{
    (void)state;
    for (int variant = 0; variant < 2; variant++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "a", 8 * G, 1);
        int b = ts_team(t, "b", 0, 1);
        t->queues[b].reclaim_min_runtime_ms = variant == 0 ? 3600 * 1000 : 0;
        for (int g = 0; g < 2; g++)
            for (int m = 0; m < 8; m++) {
                int p =
                    gang_bound(t, b, g ? "ns/g1" : "ns/g0", 8, m % 2, g * 4 + m / 2, t->now - 1000);
                if (variant == 1 && m == 0)
                    t->pods[p].preemptible = false;
            }
        ts_pod(t, a, G);
        assert_int_equal(ts_run(t), 0);
        if (variant == 0) {
            assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
        } else {
            /* Each gang has one non-preemptible member: neither goes. */
            assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
        }
        ts_free(t);
    }
}

/* Elastic gangs: members above gang_size are the first victims, the
 * youngest first, one by one; the gang never drops below gang_size. */
static void test_elastic(void **state)
{
    (void)state;
    /* One 8-GPU node. b: an elastic gang of 6 members, gang_size 2, plus 2
     * plain pods that started last (they would lose the least work). a
     * (guaranteed 1) asks for 1 GPU: the youngest extra goes, not a plain
     * pod, not the core. */
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    int a = ts_team(t, "a", 1 * G, 1);
    int b = ts_team(t, "b", 0, 1);
    int mem[6];
    for (int m = 0; m < 6; m++)
        mem[m] = gang_bound(t, b, "ns/el", 2, 0, m, 1000 + m);
    ts_bound(t, b, G, 0, 1u << 6, 900000);
    ts_bound(t, b, G, 0, 1u << 7, 900000);
    ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
    evicted(t, ev);
    assert_true(ev[mem[5]]);
    ts_free(t);

    /* Table: a asks for k GPUs on a node that b fills with an elastic gang
     * of 8 (gang_size 3): the k youngest members go while k <= 5 (the
     * extras); past that, the whole gang. */
    static const struct {
        int a_pods, want;
    } rows[] = {{1, 1}, {3, 3}, {5, 5}, {6, 8}, {8, 8}};
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        t = ts_new();
        ts_node(t, "node-0", 8);
        a = ts_team(t, "a", 8 * G, 1);
        b = ts_team(t, "b", 0, 1);
        int m8[8];
        for (int m = 0; m < 8; m++)
            m8[m] = gang_bound(t, b, "ns/el", 3, 0, m, 1000 + m);
        for (int i = 0; i < rows[r].a_pods; i++)
            ts_pod(t, a, G);
        assert_int_equal(ts_run(t), 0);
        if (ts_count(t, FAIR_ACTION_EVICT) != (size_t)rows[r].want)
            ts_dump(t);
        assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), rows[r].want);
        evicted(t, ev);
        int kept = 0;
        for (int m = 0; m < 8; m++)
            kept += !ev[m8[m]];
        /* Never below gang_size, unless the whole gang went. */
        assert_true(kept == 0 || kept >= 3);
        if (rows[r].want < 8)
            for (int m = 0; m < 8; m++)
                assert_int_equal(ev[m8[m]], m >= 8 - rows[r].want);
        ts_free(t);
    }
}

/* A pending gang larger than the cluster (20 one-GPU pods on 16 GPUs):
 * none is bound, and every member keeps a pending reason, also after pass
 * 2 placed 16 of them tentatively and rolled them back (the rolled-back
 * ones used to be left with no reason, as if scheduled). */
static void test_gang_larger_than_cluster(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    int a = ts_team(t, "a", 8 * G, 1);
    ts_team(t, "b", 8 * G, 1);
    for (int i = 0; i < 20; i++) {
        int p = ts_pod(t, a, G);
        t->pods[p].gang = "team-a/big";
        t->pods[p].gang_size = 20;
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    for (int i = 0; i < 20; i++)
        assert_int_not_equal(t->res.pending_reasons[i], FAIR_PENDING_NONE);
    ts_free(t);
}

/* An elastic gang starts at its size: its unit (the members it lacks to
 * reach gang_size) all at once, then the members above one by one, as far
 * as room goes; without room for the unit, none starts. Table: pending
 * members, gang_size, GPUs already taken on the one 8-GPU node, bound. */
static void test_elastic_admission(void **state)
{
    (void)state;
    static const struct {
        int members, size, used, want;
    } rows[] = {
        {10, 4, 0, 8}, /* unit of 4, then 4 of the 6 extras */
        {8, 4, 2, 6},  /* 6 free: unit and 2 extras */
        {8, 4, 5, 0},  /* 3 free: no room for the unit, none */
        {4, 4, 0, 4},  /* not elastic */
        {3, 1, 6, 2},  /* unit of 1, one extra */
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        int a = ts_team(t, "a", 8 * G, 1);
        int o = ts_team(t, "other", 8 * G, 1);
        for (int i = 0; i < rows[r].used; i++)
            ts_bound(t, o, G, 0, 1u << i, 1000);
        for (int i = 0; i < rows[r].members; i++) {
            int p = ts_pod(t, a, G);
            t->pods[p].gang = "ns/el";
            t->pods[p].gang_size = rows[r].size;
        }
        assert_int_equal(ts_run(t), 0);
        if (ts_count_q(t, FAIR_ACTION_BIND, a) != (size_t)rows[r].want)
            ts_dump(t);
        assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, a), rows[r].want);
        for (size_t i = 0; i < t->npods; i++)
            if (t->pods[i].state == FAIR_POD_PENDING) {
                bool bound = false;
                for (size_t k = 0; k < t->res.nactions; k++)
                    bound |= t->res.actions[k].pod == (int32_t)i;
                if (!bound)
                    assert_int_not_equal(t->res.pending_reasons[i], FAIR_PENDING_NONE);
            }
        /* Stable: the next cycle does nothing more. */
        ts_apply(t, true);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(t->res.nactions, 0);
        ts_free(t);
    }
}

/* A gang with a non-preemptible member is never a victim unit
 * (test_unit_not_eligible), so it is non-preemptible as a whole: it starts
 * only within its queue's guarantee, all its members counted. Table: the
 * gang's size, whether one member is non-preemptible, bound. Team a is
 * guaranteed 4 of the 16 GPUs; nobody else asks for any. */
static void test_shielded_gang_admission(void **state)
{
    (void)state;
    static const struct {
        int members;
        bool one_np;
        int want;
    } rows[] = {
        {8, false, 8}, /* preemptible: borrows 4 */
        {8, true, 0},  /* would borrow what reclaim could never take back */
        {4, true, 4},  /* within the guarantee */
        {1, true, 1},  /* a lone non-preemptible pod, as before */
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "a", 4 * G, 1);
        ts_team(t, "b", 0, 1);
        for (int i = 0; i < rows[r].members; i++) {
            int p = ts_pod(t, a, G);
            t->pods[p].gang = "team-a/job";
            t->pods[p].gang_size = rows[r].members;
            t->pods[p].preemptible = !(rows[r].one_np && i == rows[r].members - 1);
        }
        assert_int_equal(ts_run(t), 0);
        if (ts_count_q(t, FAIR_ACTION_BIND, a) != (size_t)rows[r].want)
            ts_dump(t);
        assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, a), rows[r].want);
        if (rows[r].want == 0)
            for (size_t i = 0; i < t->npods; i++)
                assert_int_not_equal(t->res.pending_reasons[i], FAIR_PENDING_NONE);
        ts_free(t);
    }
}

/* A running gang with a non-preemptible member counts whole in its
 * queue's running non-preemptible total: team a (guaranteed 4) runs a
 * 4-pod gang with one non-preemptible member, so its guarantee is all
 * shielded, and a new non-preemptible pod of a must wait, while a
 * preemptible one may still borrow. Before the fix only the marked member
 * counted (1 of 4), and the new pod was bound: 5 shielded GPUs on a
 * guarantee of 4. */
static void test_shielded_gang_running(void **state)
{
    (void)state;
    for (int np_new = 0; np_new <= 1; np_new++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "a", 4 * G, 1);
        ts_team(t, "b", 0, 1);
        for (int i = 0; i < 4; i++) {
            int p = gang_bound(t, a, "team-a/job", 4, 0, i, 1000);
            t->pods[p].preemptible = i != 3;
        }
        int lone = ts_pod(t, a, G);
        t->pods[lone].preemptible = !np_new;
        assert_int_equal(ts_run(t), 0);
        size_t want = np_new ? 0 : 1;
        if (ts_count_q(t, FAIR_ACTION_BIND, a) != want)
            ts_dump(t);
        assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, a), want);
        if (np_new)
            assert_int_not_equal(t->res.pending_reasons[lone], FAIR_PENDING_NONE);
        ts_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_victim_unit),
        cmocka_unit_test(test_unit_not_eligible),
        cmocka_unit_test(test_elastic),
        cmocka_unit_test(test_gang_larger_than_cluster),
        cmocka_unit_test(test_elastic_admission),
        cmocka_unit_test(test_shielded_gang_admission),
        cmocka_unit_test(test_shielded_gang_running),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
