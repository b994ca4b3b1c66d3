/* Scheduling constraints (engine/constraints.c): required node affinity
 * with the cases of kube-scheduler's NodeAffinity plugin tests (filter and
 * score), checked both as pure functions and through the placement's node
 * filter (fair_place_static_ok, where the nodeSelector is ANDed), then
 * through whole engine cycles: pods placed only on matching nodes, and no
 * reclaim on nodes the pod cannot use. Then host ports (NodePorts' cases)
 * and resources other than GPU, CPU and memory (NodeResourcesFit's
 * extended-resource and hugepages cases), within a cycle too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "engine/constraints.h"
#include "engine/interpod.h"
#include "engine/placement.h"
#include "test_engine_fixture.h"

#define MAXR 4
#define MAXT 3
#define UNKNOWN_OP 99

struct rspec {
    const char *key;
    int op;
    bool field;
    const char *v[3];
};

struct tspec {
    struct rspec r[MAXR];
};

struct acase {
    const char *name;
    const char *sel[2][2]; /* nodeSelector */
    bool has_aff;          /* spec.affinity.nodeAffinity present */
    bool required;         /* requiredDuringScheduling... set */
    int nterms;
    struct tspec t[MAXT];
    const char *labels[3][2];
    const char *node; /* node name ("" when unset) */
    bool want;
};

/* Affinity built from a case, as the decoder builds it. */
struct built {
    struct fair_node_affinity a;
    struct fair_node_term terms[MAXT];
    struct fair_node_req reqs[MAXT][MAXR];
    struct fair_label sel[2];
    size_t nsel;
    struct fair_label labels[3];
    size_t nlabels;
};

static size_t nvals(const struct rspec *r)
{
    size_t n = 0;
    while (n < 3 && r->v[n])
        n++;
    return n;
}

static void build(struct built *b, const struct acase *c)
{
    memset(b, 0, sizeof(*b));
    for (int t = 0; t < c->nterms; t++) {
        struct fair_node_term *term = &b->terms[t];
        term->reqs = b->reqs[t];
        for (int i = 0; i < MAXR && c->t[t].r[i].key; i++) {
            const struct rspec *rs = &c->t[t].r[i];
            struct fair_node_req *r = &b->reqs[t][i];
            r->key = rs->key;
            r->op = (uint8_t)(rs->op == UNKNOWN_OP ? 0 : rs->op);
            r->field = rs->field;
            r->values = rs->v;
            r->nvalues = (uint32_t)nvals(rs);
            if (rs->op == UNKNOWN_OP || !fair_node_req_valid(r))
                term->invalid = true;
            term->nreqs++;
        }
    }
    b->a.required = c->required;
    b->a.terms = b->terms;
    b->a.nterms = (size_t)c->nterms;
    for (int i = 0; i < 2 && c->sel[i][0]; i++)
        b->sel[b->nsel++] = (struct fair_label){c->sel[i][0], c->sel[i][1]};
    for (int i = 0; i < 3 && c->labels[i][0]; i++)
        b->labels[b->nlabels++] = (struct fair_label){c->labels[i][0], c->labels[i][1]};
}

#define IN FAIR_SEL_IN
#define NOTIN FAIR_SEL_NOT_IN
#define EXISTS FAIR_SEL_EXISTS
#define DNE FAIR_SEL_DOES_NOT_EXIST
#define GT FAIR_SEL_GT
#define LT FAIR_SEL_LT
#define NAME "metadata.name"

/* kube-scheduler's TestNodeAffinity (pkg/scheduler/framework/plugins/
 * nodeaffinity), filter outcomes; then the edge cases of labels.Requirement
 * and fields.Selector. */
static const struct acase cases[] = {
    {"missing labels", {{"foo", "bar"}}, false, false, 0, {{{{0}}}}, {{0}}, "", false},
    {"same labels", {{"foo", "bar"}}, false, false, 0, {{{{0}}}}, {{"foo", "bar"}}, "", true},
    {"node labels are superset",
     {{"foo", "bar"}},
     false,
     false,
     0,
     {{{{0}}}},
     {{"foo", "bar"}, {"baz", "blah"}},
     "",
     true},
    {"node labels are subset",
     {{"foo", "bar"}, {"baz", "blah"}},
     false,
     false,
     0,
     {{{{0}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"In matches",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", IN, false, {"bar", "value2"}}}}},
     {{"foo", "bar"}},
     "",
     true},
    {"Gt matches",
     {{0}},
     true,
     true,
     1,
     {{{{"kernel-version", GT, false, {"0204"}}}}},
     {{"kernel-version", "0206"}},
     "",
     true},
    {"NotIn matches",
     {{0}},
     true,
     true,
     1,
     {{{{"mem-type", NOTIN, false, {"DDR", "DDR2"}}}}},
     {{"mem-type", "DDR3"}},
     "",
     true},
    {"Exists matches",
     {{0}},
     true,
     true,
     1,
     {{{{"GPU", EXISTS, false, {0}}}}},
     {{"GPU", "NVIDIA-GRID-K1"}},
     "",
     true},
    {"affinity does not match labels",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", IN, false, {"value1", "value2"}}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"empty matchExpressions matches nothing",
     {{0}},
     true,
     true,
     1,
     {{{{0}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"no affinity", {{0}}, false, false, 0, {{{{0}}}}, {{"foo", "bar"}}, "", true},
    {"affinity with nil required", {{0}}, true, false, 0, {{{{0}}}}, {{"foo", "bar"}}, "", true},
    {"ANDed expressions match",
     {{0}},
     true,
     true,
     1,
     {{{{"GPU", EXISTS, false, {0}}, {"GPU", NOTIN, false, {"AMD", "INTER"}}}}},
     {{"GPU", "NVIDIA-GRID-K1"}},
     "",
     true},
    {"ANDed expressions do not match",
     {{0}},
     true,
     true,
     1,
     {{{{"GPU", EXISTS, false, {0}}, {"GPU", IN, false, {"AMD", "INTER"}}}}},
     {{"GPU", "NVIDIA-GRID-K1"}},
     "",
     false},
    {"ORed terms, one matches",
     {{0}},
     true,
     true,
     2,
     {{{{"foo", IN, false, {"bar", "value2"}}}}, {{{"diffkey", IN, false, {"wrong", "value2"}}}}},
     {{"foo", "bar"}},
     "",
     true},
    {"nodeSelector and affinity both satisfied",
     {{"foo", "bar"}},
     true,
     true,
     1,
     {{{{"foo", EXISTS, false, {0}}}}},
     {{"foo", "bar"}},
     "",
     true},
    {"affinity satisfied, nodeSelector not",
     {{"foo", "bar"}},
     true,
     true,
     1,
     {{{{"foo", EXISTS, false, {0}}}}},
     {{"foo", "barrrrrr"}},
     "",
     false},
    {"invalid value in term",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", NOTIN, false, {"invalid value: ___@#$%^"}}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"matchFields In matches",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, IN, true, {"node1"}}}}},
     {{0}},
     "node1",
     true},
    {"matchFields In does not match",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, IN, true, {"node1"}}}}},
     {{0}},
     "node2",
     false},
    {"two terms: fields do not match, expressions do",
     {{0}},
     true,
     true,
     2,
     {{{{NAME, IN, true, {"node1"}}, {NAME, IN, true, {"node2"}}}},
      {{{"foo", IN, false, {"bar"}}}}},
     {{"foo", "bar"}},
     "node2",
     true},
    {"one term: fields do not match, expressions do",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, IN, true, {"node1"}}, {"foo", IN, false, {"bar"}}}}},
     {{"foo", "bar"}},
     "node2",
     false},
    {"one term: fields and expressions match",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, IN, true, {"node1"}}, {"foo", IN, false, {"bar"}}}}},
     {{"foo", "bar"}},
     "node1",
     true},
    {"two terms: neither matches",
     {{0}},
     true,
     true,
     2,
     {{{{NAME, IN, true, {"node1"}}}}, {{{"foo", IN, false, {"not-match-to-bar"}}}}},
     {{"foo", "bar"}},
     "node2",
     false},
    {"two terms of node name",
     {{0}},
     true,
     true,
     2,
     {{{{NAME, IN, true, {"node1"}}}}, {{{NAME, IN, true, {"node2"}}}}},
     {{0}},
     "node2",
     true},
    {"two conflicting field requirements",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, IN, true, {"node1"}}, {NAME, IN, true, {"node2"}}}}},
     {{"foo", "bar"}},
     "node2",
     false},
    /* Edge cases of the selectors. */
    {"required with no terms matches nothing",
     {{0}},
     true,
     true,
     0,
     {{{{0}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"NotIn on a missing label matches",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", NOTIN, false, {"x"}}}}},
     {{0}},
     "",
     true},
    {"DoesNotExist matches a missing label",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", DNE, false, {0}}}}},
     {{"bar", "x"}},
     "",
     true},
    {"DoesNotExist fails on a present label",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", DNE, false, {0}}}}},
     {{"foo", ""}},
     "",
     false},
    {"Gt is strict", {{0}}, true, true, 1, {{{{"v", GT, false, {"5"}}}}}, {{"v", "5"}}, "", false},
    {"Lt matches", {{0}}, true, true, 1, {{{{"v", LT, false, {"5"}}}}}, {{"v", "-3"}}, "", true},
    {"Gt on a label that is no integer",
     {{0}},
     true,
     true,
     1,
     {{{{"v", GT, false, {"1"}}}}},
     {{"v", "abc"}},
     "",
     false},
    {"Gt on a missing label",
     {{0}},
     true,
     true,
     1,
     {{{{"v", GT, false, {"1"}}}}},
     {{0}},
     "",
     false},
    {"Gt with a value that is no integer is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{"v", GT, false, {"x"}}}}},
     {{"v", "5"}},
     "",
     false},
    {"Gt with two values is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{"v", GT, false, {"1", "2"}}}}},
     {{"v", "5"}},
     "",
     false},
    {"In without values is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", IN, false, {0}}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"Exists with values is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", EXISTS, false, {"bar"}}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"unknown operator is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{"foo", UNKNOWN_OP, false, {"bar"}}}}},
     {{"foo", "bar"}},
     "",
     false},
    {"an invalid term does not stop a valid one",
     {{0}},
     true,
     true,
     2,
     {{{{"foo", UNKNOWN_OP, false, {"bar"}}}}, {{{"foo", IN, false, {"bar"}}}}},
     {{"foo", "bar"}},
     "",
     true},
    {"bad label key is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{"-foo", EXISTS, false, {0}}}}},
     {{"-foo", "bar"}},
     "",
     false},
    {"prefixed label key",
     {{0}},
     true,
     true,
     1,
     {{{{"topology.kubernetes.io/zone", IN, false, {"z1"}}}}},
     {{"topology.kubernetes.io/zone", "z1"}},
     "",
     true},
    {"matchFields NotIn",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, NOTIN, true, {"node1"}}}}},
     {{0}},
     "node2",
     true},
    {"matchFields Exists is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, EXISTS, true, {0}}}}},
     {{0}},
     "node1",
     false},
    {"matchFields In with two values is invalid",
     {{0}},
     true,
     true,
     1,
     {{{{NAME, IN, true, {"node1", "node2"}}}}},
     {{0}},
     "node1",
     false},
};

static void test_affinity_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct acase *c = &cases[i];
        struct built b;
        build(&b, c);
        struct ts *t = ts_new();
        int n = ts_node(t, c->node[0] ? c->node : "unnamed", 1);
        t->nodes[n].name = c->node;
        t->nodes[n].labels = b.labels;
        t->nodes[n].nlabels = b.nlabels;
        int q = ts_team(t, "a", 0, 1);
        int p = ts_pod(t, q, 1000);
        t->pods[p].node_selector = b.sel;
        t->pods[p].nnode_selector = b.nsel;
        t->pods[p].node_affinity = c->has_aff ? &b.a : NULL;
        /* The pure matcher (nodeSelector aside). */
        bool sel_ok = true;
        for (size_t s = 0; s < b.nsel; s++) {
            bool found = false;
            for (size_t l = 0; l < b.nlabels; l++)
                found |= !strcmp(b.labels[l].key, b.sel[s].key) &&
                         !strcmp(b.labels[l].value, b.sel[s].value);
            sel_ok &= found;
        }
        bool got = sel_ok && fair_node_affinity_match(t->pods[p].node_affinity, &t->nodes[n]);
        if (got != c->want)
            fail_msg("case \"%s\": match %d, want %d", c->name, got, c->want);
        /* Through the placement's filter, cached and not. */
        struct fair_snapshot s;
        ts_snapshot(t, &s);
        bool ok[1] = {true};
        uint64_t masks[1];
        struct fair_place pl;
        assert_int_equal(fair_place_init(&pl, &s, ok, masks), 0);
        assert_true((pl.cons != NULL) == (c->has_aff && c->required));
        got = fair_place_static_ok(&pl, 0, &t->pods[p]);
        if (got != c->want)
            fail_msg("case \"%s\": placement %d, want %d", c->name, got, c->want);
        struct fair_pod copy = t->pods[p]; /* not in the snapshot: evaluated directly */
        assert_int_equal(fair_place_static_ok(&pl, 0, &copy), c->want);
        fair_place_release(&pl);
        /* A whole cycle binds the pod exactly when the node matches. */
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_BIND), c->want ? 1 : 0);
        if (!c->want)
            assert_int_equal(t->res.pending_reasons[p], FAIR_PENDING_NO_NODE_FITS);
        ts_free(t);
    }
}

/* TestNodeAffinityPriority, raw scores (before kube-scheduler normalises
 * them to 0..100): the sum of the weights of the matching terms. */
static void test_preferred_score(void **state)
{
    (void)state;
    static const char *const bar[] = {"bar"}, *const value[] = {"value"}, *const az1[] = {"az1"};
    struct fair_node_req foo_bar = {"foo", bar, 1, FAIR_SEL_IN, false};
    struct fair_node_req key_value = {"key", value, 1, FAIR_SEL_IN, false};
    struct fair_node_req three[] = {foo_bar, key_value, {"az", az1, 1, FAIR_SEL_IN, false}};
    struct fair_node_term terms[] = {
        {&foo_bar, 1, 2, false}, {&key_value, 1, 4, false}, {three, 3, 5, false}};
    struct fair_node_affinity a1 = {.preferred = terms, .npreferred = 1};
    struct fair_node_affinity a2 = {.preferred = terms, .npreferred = 3};
    struct fair_label l1[] = {{"foo", "bar"}};
    struct fair_label l2[] = {{"key", "value"}};
    struct fair_label l4[] = {{"abc", "az11"}, {"def", "az22"}};
    struct fair_label l5[] = {{"foo", "bar"}, {"key", "value"}, {"az", "az1"}};
    struct fair_node n1 = {.name = "node1", .labels = l1, .nlabels = 1};
    struct fair_node n2 = {.name = "node2", .labels = l2, .nlabels = 1};
    struct fair_node n4 = {.name = "node4", .labels = l4, .nlabels = 2};
    struct fair_node n5 = {.name = "node5", .labels = l5, .nlabels = 3};
    assert_int_equal(fair_node_affinity_score(NULL, &n1), 0);
    assert_int_equal(fair_node_affinity_score(&a1, &n4), 0);
    assert_int_equal(fair_node_affinity_score(&a1, &n1), 2);
    assert_int_equal(fair_node_affinity_score(&a1, &n2), 0);
    assert_int_equal(fair_node_affinity_score(&a2, &n1), 2);
    assert_int_equal(fair_node_affinity_score(&a2, &n5), 11);
    assert_int_equal(fair_node_affinity_score(&a2, &n2), 4);
    /* Preferred terms never filter. */
    assert_true(fair_node_affinity_match(&a2, &n4));
}

static void test_syntax(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_true(fair_parse_int64("0204", &v) && v == 204);
    assert_true(fair_parse_int64("-9223372036854775808", &v) && v == INT64_MIN);
    assert_true(fair_parse_int64("+9223372036854775807", &v) && v == INT64_MAX);
    assert_false(fair_parse_int64("9223372036854775808", &v));
    assert_false(fair_parse_int64("", &v));
    assert_false(fair_parse_int64("-", &v));
    assert_false(fair_parse_int64(" 1", &v));
    assert_false(fair_parse_int64("1e3", &v));
    assert_true(fair_label_key_valid("pool"));
    assert_true(fair_label_key_valid("kubernetes.io/hostname"));
    assert_true(fair_label_key_valid("a.b-c_d"));
    assert_false(fair_label_key_valid(""));
    assert_false(fair_label_key_valid("/x"));
    assert_false(fair_label_key_valid("Example.com/x"));
    assert_false(fair_label_key_valid("a/b/c"));
    assert_false(fair_label_key_valid("x."));
    char long_name[70];
    memset(long_name, 'a', 64);
    long_name[64] = 0;
    assert_false(fair_label_key_valid(long_name));
    assert_false(fair_label_value_valid(long_name));
    long_name[63] = 0;
    assert_true(fair_label_value_valid(long_name));
    assert_true(fair_label_value_valid(""));
    assert_false(fair_label_value_valid("a b"));
}

/* A Job-like set of pods with pool In [b] goes only to the pool-b nodes,
 * and waits (NoNodeFits) once they are full, while other nodes are free. */
static void test_engine_places_only_matching(void **state)
{
    (void)state;
    static const char *const b_only[] = {"b"};
    struct fair_node_req req = {"pool", b_only, 1, FAIR_SEL_IN, false};
    struct fair_node_term term = {&req, 1, 0, false};
    struct fair_node_affinity aff = {.required = true, .terms = &term, .nterms = 1};
    struct fair_label pool_a[] = {{"pool", "a"}}, pool_b[] = {{"pool", "b"}};
    struct ts *t = ts_new();
    for (int i = 0; i < 4; i++) {
        int n = ts_node(t, ts_str(t, "n%d", i), 4);
        t->nodes[n].labels = i % 2 ? pool_b : pool_a;
        t->nodes[n].nlabels = 1;
    }
    int q = ts_team(t, "a", 0, 1);
    int first = (int)t->npods;
    for (int i = 0; i < 10; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].node_affinity = &aff;
    }
    int plain = ts_pod(t, q, 1000);
    assert_int_equal(ts_run(t), 0);
    int bound = 0;
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *a = &t->res.actions[i];
        assert_int_equal(a->kind, FAIR_ACTION_BIND);
        if (a->pod == plain)
            continue;
        assert_true(a->node == 1 || a->node == 3);
        bound++;
    }
    assert_int_equal(bound, 8);
    int waiting = 0;
    for (int i = first; i < first + 10; i++)
        if (t->res.pending_reasons[i] == FAIR_PENDING_NO_NODE_FITS)
            waiting++;
    assert_int_equal(waiting, 2);
    assert_int_equal(t->res.pending_reasons[plain], FAIR_PENDING_NONE);
    ts_free(t);
}

/* Reclaim for a pod with node affinity takes victims only on nodes the
 * pod may use: queue b borrows both nodes, queue a's pod needs pool=b. */
static void test_reclaim_respects_affinity(void **state)
{
    (void)state;
    static const char *const b_only[] = {"b"};
    struct fair_node_req req = {"pool", b_only, 1, FAIR_SEL_IN, false};
    struct fair_node_term term = {&req, 1, 0, false};
    struct fair_node_affinity aff = {.required = true, .terms = &term, .nterms = 1};
    struct fair_label pool_a[] = {{"pool", "a"}}, pool_b[] = {{"pool", "b"}};
    struct ts *t = ts_new();
    int na = ts_node(t, "na", 2);
    int nb = ts_node(t, "nb", 2);
    t->nodes[na].labels = pool_a;
    t->nodes[na].nlabels = 1;
    t->nodes[nb].labels = pool_b;
    t->nodes[nb].nlabels = 1;
    int qa = ts_team(t, "a", 2000, 1);
    int qb = ts_team(t, "b", 0, 1);
    ts_bound(t, qb, 1000, na, 0x1, 0);
    ts_bound(t, qb, 1000, na, 0x2, 0);
    ts_bound(t, qb, 1000, nb, 0x1, 0);
    ts_bound(t, qb, 1000, nb, 0x2, 0);
    int p = ts_pod(t, qa, 1000);
    t->pods[p].node_affinity = &aff;
    assert_int_equal(ts_run(t), 0);
    assert_true(ts_count(t, FAIR_ACTION_EVICT) >= 1);
    for (size_t i = 0; i < t->res.nactions; i++)
        if (t->res.actions[i].kind == FAIR_ACTION_EVICT)
            assert_int_equal(t->pods[t->res.actions[i].pod].node, nb);
    ts_free(t);
}

/* Pods of one class share one computation, and distinct affinities do not
 * mix: two Jobs with pool In [a] and pool In [b]. */
static void test_classes(void **state)
{
    (void)state;
    static const char *const va[] = {"a"}, *const vb[] = {"b"};
    struct fair_node_req ra = {"pool", va, 1, FAIR_SEL_IN, false};
    struct fair_node_req rb = {"pool", vb, 1, FAIR_SEL_IN, false};
    struct fair_node_term ta = {&ra, 1, 0, false}, tb = {&rb, 1, 0, false};
    struct fair_node_affinity affs[4] = {{.required = true, .terms = &ta, .nterms = 1},
                                         {.required = true, .terms = &tb, .nterms = 1},
                                         {.required = true, .terms = &ta, .nterms = 1},
                                         {.required = true, .terms = &tb, .nterms = 1}};
    struct fair_label pool_a[] = {{"pool", "a"}}, pool_b[] = {{"pool", "b"}};
    struct ts *t = ts_new();
    for (int i = 0; i < 4; i++) {
        int n = ts_node(t, ts_str(t, "n%d", i), 8);
        t->nodes[n].labels = i < 2 ? pool_a : pool_b;
        t->nodes[n].nlabels = 1;
    }
    int q = ts_team(t, "a", 0, 1);
    for (int i = 0; i < 16; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].node_affinity = &affs[i % 4];
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 16);
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *a = &t->res.actions[i];
        bool want_a = t->pods[a->pod].node_affinity->terms == &ta;
        assert_int_equal(a->node < 2, want_a);
    }
    ts_free(t);
}

/* "PROTO/IP/PORT" into a host port. */
static struct fair_host_port hp_of(struct ts *t, const char *spec)
{
    const char *a = strchr(spec, '/'), *b = a ? strchr(a + 1, '/') : NULL;
    if (!b)
        abort();
    struct fair_host_port h = {ts_str(t, "%.*s", (int)(b - a - 1), a + 1),
                               (int32_t)strtol(b + 1, NULL, 10), FAIR_PROTO_TCP};
    if (!strncmp(spec, "UDP", 3))
        h.protocol = FAIR_PROTO_UDP;
    return h;
}

struct pcase {
    const char *name;
    const char *pod[4];
    const char *existing[4];
    bool want;
};

/* kube-scheduler's TestNodePorts and TestFits (plugins/nodeports), the
 * cases of Kubernetes 1.24 (containers only). */
static const struct pcase port_cases[] = {
    {"nothing running", {"TCP/127.0.0.1/8080"}, {0}, true},
    {"other port", {"UDP/127.0.0.1/8080"}, {"UDP/127.0.0.1/9090"}, true},
    {"same udp port", {"UDP/127.0.0.1/8080"}, {"UDP/127.0.0.1/8080"}, false},
    {"same tcp port", {"TCP/127.0.0.1/8080"}, {"TCP/127.0.0.1/8080"}, false},
    {"different host ip", {"TCP/127.0.0.1/8080"}, {"TCP/127.0.0.2/8080"}, true},
    {"different protocol", {"UDP/127.0.0.1/8080"}, {"TCP/127.0.0.1/8080"}, true},
    {"second udp port conflict",
     {"UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"},
     {"UDP/127.0.0.1/8080"},
     false},
    {"first tcp port conflict",
     {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"},
     {"TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"},
     false},
    {"first tcp port conflict due to 0.0.0.0 hostIP",
     {"TCP/0.0.0.0/8001"},
     {"TCP/127.0.0.1/8001"},
     false},
    {"TCP hostPort conflict due to 0.0.0.0 hostIP",
     {"TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"},
     {"TCP/127.0.0.1/8001"},
     false},
    {"second tcp port conflict to 0.0.0.0 hostIP",
     {"TCP/127.0.0.1/8001"},
     {"TCP/0.0.0.0/8001"},
     false},
    {"second different protocol", {"UDP/127.0.0.1/8001"}, {"TCP/0.0.0.0/8001"}, true},
    {"UDP hostPort conflict due to 0.0.0.0 hostIP",
     {"UDP/127.0.0.1/8001"},
     {"TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"},
     false},
    {"non-conflicting ports", {"TCP/127.0.0.1/80"}, {"TCP/127.0.0.1/9090"}, true},
    {"multiple non-conflicting ports",
     {"TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"},
     {"TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"},
     true},
    {"same ports on different protocols", {"TCP/127.0.0.1/80"}, {"UDP/127.0.0.1/80"}, true},
    {"conflicting ports", {"TCP/127.0.0.1/80"}, {"TCP/127.0.0.1/80"}, false},
    {"multiple ports, some conflicting",
     {"TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"},
     {"TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"},
     false},
    {"unset host IP is 0.0.0.0", {"TCP//8080"}, {"TCP/10.1.1.1/8080"}, false},
};

static void test_host_ports_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(port_cases) / sizeof(port_cases[0]); i++) {
        const struct pcase *c = &port_cases[i];
        struct ts *t = ts_new();
        struct fair_host_port want[4], have[4];
        size_t nw = 0, nh = 0;
        for (; nw < 4 && c->pod[nw]; nw++)
            want[nw] = hp_of(t, c->pod[nw]);
        for (; nh < 4 && c->existing[nh]; nh++)
            have[nh] = hp_of(t, c->existing[nh]);
        ts_node(t, "m1", 8);
        int q = ts_team(t, "a", 0, 1);
        if (nh) {
            /* Held by a pod of another scheduler. */
            int e = ts_bound(t, -1, 0, 0, 0, 0);
            t->pods[e].host_ports = have;
            t->pods[e].nhost_ports = nh;
        }
        int p = ts_pod(t, q, 1000);
        t->pods[p].host_ports = want;
        t->pods[p].nhost_ports = nw;
        assert_int_equal(ts_run(t), 0);
        if ((ts_count(t, FAIR_ACTION_BIND) == 1) != c->want)
            fail_msg("case \"%s\": bound %zu, want %d", c->name, ts_count(t, FAIR_ACTION_BIND),
                     c->want);
        ts_free(t);
    }
}

/* Binds of one cycle hold their ports: four pods with the same host port
 * on three nodes, three bound, one on each node. */
static void test_host_ports_within_cycle(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    struct fair_host_port port = {NULL, 8080, FAIR_PROTO_TCP};
    for (int i = 0; i < 3; i++)
        ts_node(t, ts_str(t, "n%d", i), 8);
    int q = ts_team(t, "a", 0, 1);
    for (int i = 0; i < 4; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].host_ports = &port;
        t->pods[p].nhost_ports = 1;
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 3);
    int per[3] = {0};
    for (size_t i = 0; i < t->res.nactions; i++)
        per[t->res.actions[i].node]++;
    assert_true(per[0] == 1 && per[1] == 1 && per[2] == 1);
    ts_free(t);
}

struct rcase {
    const char *name;
    const char *res; /* the resource asked for */
    int64_t alloc;   /* the node's allocatable of it; -1: not advertised */
    int64_t used;    /* requests of the pods already there */
    int64_t want;    /* the pod's request */
    bool fits;
};

/* kube-scheduler's TestEnoughRequests (plugins/noderesources/fit_test.go):
 * its extended-resource and hugepages cases, each with the node's 5
 * allocatable units. The pod's own request (containers' sum, init
 * containers' max) is the decoder's: test_kube_decode. */
static const struct rcase res_cases[] = {
    {"extended resource fits", "example.com/aaa", 5, 0, 1, true},
    {"extended resource fits for init container", "example.com/aaa", 5, 0, 1, true},
    {"extended resource capacity enforced", "example.com/aaa", 5, 0, 10, false},
    {"extended resource capacity enforced for init container", "example.com/aaa", 5, 0, 10, false},
    {"extended resource allocatable enforced", "example.com/aaa", 5, 5, 1, false},
    {"extended resource allocatable enforced for init container", "example.com/aaa", 5, 5, 1,
     false},
    {"extended resource allocatable enforced for multiple containers", "example.com/aaa", 5, 2, 6,
     false},
    {"extended resource allocatable admits for multiple init containers", "example.com/aaa", 5, 2,
     3, true},
    {"extended resource allocatable enforced for multiple init containers", "example.com/aaa", 5, 2,
     4, false},
    {"extended resource allocatable enforced for unknown resource", "example.com/bbb", -1, 0, 1,
     false},
    {"hugepages resource capacity enforced", "hugepages-2Mi", 5, 0, 10, false},
    {"hugepages resource allocatable enforced for multiple containers", "hugepages-2Mi", 5, 2, 6,
     false},
    {"hugepages fits", "hugepages-2Mi", 5, 2, 3, true},
    {"rdma fits exactly", "rdma/ib", 5, 0, 5, true},
};

static void test_resources_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(res_cases) / sizeof(res_cases[0]); i++) {
        const struct rcase *c = &res_cases[i];
        struct ts *t = ts_new();
        int n = ts_node(t, "n0", 8);
        struct fair_scalar alloc = {c->res, c->alloc};
        if (c->alloc >= 0) {
            t->nodes[n].scalars = &alloc;
            t->nodes[n].nscalars = 1;
        }
        int q = ts_team(t, "a", 0, 1);
        struct fair_scalar used = {c->res, c->used}, want = {c->res, c->want};
        if (c->used) {
            int e = ts_bound(t, -1, 0, n, 0, 0);
            t->pods[e].scalars = &used;
            t->pods[e].nscalars = 1;
        }
        int p = ts_pod(t, q, 1000);
        t->pods[p].scalars = &want;
        t->pods[p].nscalars = 1;
        assert_int_equal(ts_run(t), 0);
        if ((ts_count(t, FAIR_ACTION_BIND) == 1) != c->fits)
            fail_msg("case \"%s\": bound %zu, want %d", c->name, ts_count(t, FAIR_ACTION_BIND),
                     c->fits);
        ts_free(t);
    }
}

/* Binds of one cycle take the resource: 5 rdma/ib per node, pods of 2;
 * a gang that does not fit gives back what its members took. */
static void test_resources_within_cycle(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    struct fair_scalar five = {"rdma/ib", 5}, two = {"rdma/ib", 2}, four = {"rdma/ib", 4};
    for (int i = 0; i < 2; i++) {
        int n = ts_node(t, ts_str(t, "n%d", i), 8);
        t->nodes[n].scalars = &five;
        t->nodes[n].nscalars = 1;
    }
    int q = ts_team(t, "a", 0, 1);
    /* A gang of three pods of 4: only two nodes can hold one each. */
    for (int i = 0; i < 3; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].scalars = &four;
        t->pods[p].nscalars = 1;
        t->pods[p].gang = "g";
        t->pods[p].gang_size = 3;
        t->pods[p].priority = 10;
    }
    for (int i = 0; i < 5; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].scalars = &two;
        t->pods[p].nscalars = 1;
    }
    assert_int_equal(ts_run(t), 0);
    /* The gang rolled back; then 2 + 2 pods of 2 on each node. */
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 4);
    for (size_t i = 0; i < t->res.nactions; i++)
        assert_null(t->pods[t->res.actions[i].pod].gang);
    ts_free(t);
}

/* ---- inter-pod affinity ---------------------------------------------- */

struct sreq {
    const char *key;
    int op;
    const char *v[3];
};

struct ptspec {
    const char *key; /* NULL: no term */
    struct sreq r[2];
    const char *ns; /* the one namespace listed, or NULL */
};

struct ipcase {
    const char *name;
    const char *labels[2][2];
    struct ptspec aff[2], anti[2];
    bool existing; /* a pod already on machine1 */
    const char *elabels[2][2];
    struct ptspec eanti;
    const char *ens; /* its namespace (NULL: "ns") */
    bool want;
};

/* Terms built from specs. */
struct ptbuilt {
    struct fair_pod_term terms[2];
    struct fair_node_req reqs[2][2];
    size_t n;
};

static void build_terms(struct ptbuilt *b, const struct ptspec *spec, size_t max)
{
    memset(b, 0, sizeof(*b));
    for (size_t i = 0; i < max && spec[i].key; i++) {
        struct fair_pod_term *t = &b->terms[b->n];
        t->topology_key = spec[i].key;
        t->selector.exprs = b->reqs[b->n];
        for (int k = 0; k < 2 && spec[i].r[k].key; k++) {
            struct fair_node_req *r = &b->reqs[b->n][k];
            r->key = spec[i].r[k].key;
            r->op = (uint8_t)spec[i].r[k].op;
            r->values = spec[i].r[k].v;
            while (r->nvalues < 3 && spec[i].r[k].v[r->nvalues])
                r->nvalues++;
            t->selector.nexprs++;
        }
        if (spec[i].ns) {
            t->namespaces = &spec[i].ns;
            t->nnamespaces = 1;
        }
        b->n++;
    }
}

static size_t mk_labels(struct fair_label *out, const char *const (*l)[2])
{
    size_t n = 0;
    for (int i = 0; i < 2 && l[i][0]; i++)
        out[n++] = (struct fair_label){l[i][0], l[i][1]};
    return n;
}

#define SEC                                                                                        \
    {                                                                                              \
        "securityscan", "value2"                                                                   \
    }
#define SVC_IN(...)                                                                                \
    {                                                                                              \
        "service", IN,                                                                             \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }

/* kube-scheduler's TestRequiredAffinitySingleNode (plugins/
 * interpodaffinity/filtering_test.go): node machine1 with region=r1,
 * zone=z11; pods labelled service=securityscan (podLabel) or security=S1
 * (podLabel2). A pod the Go test puts on another node is left out (it is
 * not in the node's snapshot either). Then cases of the rules' edges. */
/* Terms and requirements left out of a case are zero. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct ipcase ip_cases[] = {
    {"no terms, no pods", {{0}}, {{0}}, {{0}}, false, {{0}}, {0}, NULL, true},
    {"affinity In matches the existing pod",
     {{"security", "S1"}},
     {{"region", {SVC_IN("securityscan", "value2")}}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     true},
    {"affinity NotIn matches the existing pod",
     {{"security", "S1"}},
     {{"region", {{"service", NOTIN, {"securityscan3", "value3"}}}}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     true},
    {"affinity in another namespace",
     {{"security", "S1"}},
     {{"", {SVC_IN("securityscan", "value2")}, "DiffNameSpace"}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     false},
    {"affinity selector does not match",
     {{"service", "securityscan"}},
     {{"", {SVC_IN("antivirusscan", "value2")}}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     false},
    {"two affinity terms, different operators",
     {{"security", "S1"}},
     {{"region", {{"service", EXISTS, {0}}, {"wrongkey", DNE, {0}}}},
      {"region", {SVC_IN("securityscan"), {"service", NOTIN, {"WrongValue"}}}}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     true},
    {"expressions are ANDed: one does not match",
     {{"security", "S1"}},
     {{"region", {{"service", EXISTS, {0}}, {"wrongkey", DNE, {0}}}},
      {"region", {SVC_IN("securityscan2"), {"service", NOTIN, {"WrongValue"}}}}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     false},
    {"affinity and anti-affinity satisfied",
     {{"security", "S1"}},
     {{"region", {SVC_IN("securityscan", "value2")}}},
     {{"node", {SVC_IN("antivirusscan", "value2")}}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     true},
    {"and the existing pod's anti-affinity too",
     {{"security", "S1"}},
     {{"region", {SVC_IN("securityscan", "value2")}}},
     {{"node", {SVC_IN("antivirusscan", "value2")}}},
     true,
     {{"service", "securityscan"}},
     {"node", {SVC_IN("antivirusscan", "value2")}},
     NULL,
     true},
    {"anti-affinity not satisfied",
     {{"security", "S1"}},
     {{"region", {SVC_IN("securityscan", "value2")}}},
     {{"zone", {SVC_IN("securityscan", "value2")}}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     false},
    {"existing pod's anti-affinity not satisfied (symmetry)",
     {{"service", "securityscan"}},
     {{"region", {SVC_IN("securityscan", "value2")}}},
     {{"node", {SVC_IN("antivirusscan", "value2")}}},
     true,
     {{"service", "securityscan"}},
     {"zone", {SVC_IN("securityscan", "value2")}},
     NULL,
     false},
    {"pod does not match its own affinity, no pod matches",
     {{"service", "securityscan"}},
     {{"region", {{"service", NOTIN, {"securityscan", "value2"}}}}},
     {{0}},
     false,
     {{0}},
     {0},
     NULL,
     false},
    {"existing anti-affinity against a pod without terms",
     {{"service", "securityscan"}},
     {{0}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {"zone", {SVC_IN("securityscan", "value2")}},
     NULL,
     false},
    {"existing anti-affinity NotIn: satisfied",
     {{"service", "securityscan"}},
     {{0}},
     {{0}},
     true,
     {{"service", "securityscan"}},
     {"zone", {{"service", NOTIN, {"securityscan", "value2"}}}},
     NULL,
     true},
    /* Edges. */
    {"first pod of a group matches itself",
     {{"service", "securityscan"}},
     {{"region", {SVC_IN("securityscan")}}},
     {{0}},
     false,
     {{0}},
     {0},
     NULL,
     true},
    {"first pod, but the node lacks the key",
     {{"service", "securityscan"}},
     {{"rack", {SVC_IN("securityscan")}}},
     {{0}},
     false,
     {{0}},
     {0},
     NULL,
     false},
    {"anti-affinity: a matching pod in another namespace",
     {{"app", "x"}},
     {{0}},
     {{"zone", {SVC_IN("securityscan")}}},
     true,
     {{"service", "securityscan"}},
     {0},
     "other",
     true},
    {"existing anti-affinity of another namespace still applies",
     {{"service", "securityscan"}},
     {{0}},
     {{0}},
     true,
     {{"app", "y"}},
     {"zone", {SVC_IN("securityscan")}, "ns"},
     "other",
     false},
    {"anti-affinity on a key the node lacks",
     {{"app", "x"}},
     {{0}},
     {{"rack", {SVC_IN("securityscan")}}},
     true,
     {{"service", "securityscan"}},
     {0},
     NULL,
     true},
};
#pragma GCC diagnostic pop

static void test_interpod_table(void **state)
{
    (void)state;
    struct fair_label node_labels[] = {{"region", "r1"}, {"zone", "z11"}};
    for (size_t i = 0; i < sizeof(ip_cases) / sizeof(ip_cases[0]); i++) {
        const struct ipcase *c = &ip_cases[i];
        struct ptbuilt aff, anti, eanti;
        build_terms(&aff, c->aff, 2);
        build_terms(&anti, c->anti, 2);
        build_terms(&eanti, &c->eanti, 1);
        struct fair_label pl[2], el[2];
        struct fair_pod_affinity pa = {aff.terms, aff.n, anti.terms, anti.n, NULL, 0, NULL, 0};
        struct fair_pod_affinity ea = {NULL, 0, eanti.terms, eanti.n, NULL, 0, NULL, 0};
        struct ts *t = ts_new();
        int n = ts_node(t, "machine1", 8);
        t->nodes[n].labels = node_labels;
        t->nodes[n].nlabels = 2;
        int q = ts_team(t, "a", 0, 1);
        if (c->existing) {
            int e = ts_bound(t, -1, 0, n, 0, 0);
            t->pods[e].labels = el;
            t->pods[e].nlabels = mk_labels(el, c->elabels);
            t->pods[e].namespace_ = c->ens ? c->ens : "ns";
            if (eanti.n)
                t->pods[e].pod_affinity = &ea;
        }
        int p = ts_pod(t, q, 1000);
        t->pods[p].labels = pl;
        t->pods[p].nlabels = mk_labels(pl, c->labels);
        if (aff.n || anti.n)
            t->pods[p].pod_affinity = &pa;
        assert_int_equal(ts_run(t), 0);
        if ((ts_count(t, FAIR_ACTION_BIND) == 1) != c->want)
            fail_msg("case \"%s\": bound %zu, want %d", c->name, ts_count(t, FAIR_ACTION_BIND),
                     c->want);
        ts_free(t);
    }
}

/* namespaceSelector: kube-scheduler's TestRequiredAffinitySingleNode
 * cases for it (node machine1: region=r1, zone=z11; namespaces
 * subteam1.team1 and subteam2.team1 labelled team=team1, subteam1.team2
 * team=team2; the incoming pod security=S1, the existing one
 * service=securityscan; the term selects service In [securityscan,
 * value2] on region for affinity, zone for anti-affinity, in the
 * namespaces whose team is In [team1]), then edges: the union with
 * namespaces, the pod's own namespace not added, matchLabels, a namespace
 * not known, and an existing pod's anti-affinity term against the incoming
 * pod's namespace labels. */
struct nscase {
    const char *name;
    const char *pod_ns; /* the incoming pod's */
    int kind;           /* 1 affinity, -1 anti-affinity (incoming), -2 the existing pod's anti */
    int sel;            /* 0: {} (all), 1: team In [team1], 2: matchLabels team=team1,
                           3: team NotIn [team2] */
    const char *listed; /* namespaces: the one listed, or NULL */
    const char *ens;    /* the existing pod's namespace */
    bool want;
};

static const struct nscase ns_cases[] = {
    {"affinity with NamespaceSelector", "default", 1, 1, NULL, "subteam1.team1", true},
    {"affinity with non-matching NamespaceSelector", "default", 1, 1, NULL, "subteam1.team2",
     false},
    {"anti-affinity with matching NamespaceSelector", "subteam1.team1", -1, 1, NULL,
     "subteam2.team1", false},
    {"anti-affinity with matching all NamespaceSelector", "subteam1.team1", -1, 0, NULL,
     "subteam2.team1", false},
    {"anti-affinity with non-matching NamespaceSelector", "subteam1.team1", -1, 1, NULL,
     "subteam1.team2", true},
    /* Edges. */
    {"namespaces and namespaceSelector: a union", "default", 1, 1, "subteam1.team2",
     "subteam1.team2", true},
    {"a selector with labels leaves out the pod's own namespace", "default", -1, 1, NULL, "default",
     true},
    {"matchLabels", "default", -1, 2, NULL, "subteam2.team1", false},
    {"matchLabels, not matching", "default", -1, 2, NULL, "subteam1.team2", true},
    {"a namespace not known has no labels (NotIn matches)", "default", -1, 3, NULL, "ghost", false},
    {"a namespace not known has no labels (In does not)", "default", -1, 1, NULL, "ghost", true},
    {"existing pod's anti-affinity selects the incoming pod's namespace", "subteam1.team1", -2, 1,
     NULL, "subteam1.team2", false},
    {"existing pod's anti-affinity, another team's namespace", "subteam1.team2", -2, 1, NULL,
     "subteam1.team2", true},
};

static void ns_labels_of(struct fair_pod *p)
{
    static const struct fair_label t1[] = {{"team", "team1"}}, t2[] = {{"team", "team2"}};
    p->ns_labels = NULL;
    p->nns_labels = 0;
    if (!strcmp(p->namespace_, "subteam1.team1") || !strcmp(p->namespace_, "subteam2.team1"))
        p->ns_labels = t1;
    else if (!strcmp(p->namespace_, "subteam1.team2"))
        p->ns_labels = t2;
    if (p->ns_labels)
        p->nns_labels = 1;
}

static void test_interpod_ns_selector_table(void **state)
{
    (void)state;
    struct fair_label node_labels[] = {{"region", "r1"}, {"zone", "z11"}};
    static const char *const svc[] = {"securityscan", "value2"}, *const s1[] = {"S1"};
    static const char *const team1[] = {"team1"}, *const team2[] = {"team2"};
    struct fair_node_req svc_in = {"service", svc, 2, FAIR_SEL_IN, false};
    struct fair_node_req sec_in = {"security", s1, 1, FAIR_SEL_IN, false};
    struct fair_node_req team_in = {"team", team1, 1, FAIR_SEL_IN, false};
    struct fair_node_req team_notin = {"team", team2, 1, FAIR_SEL_NOT_IN, false};
    struct fair_label team_ml = {"team", "team1"};
    struct fair_label podlabel = {"service", "securityscan"}, podlabel2 = {"security", "S1"};
    for (size_t i = 0; i < sizeof ns_cases / sizeof ns_cases[0]; i++) {
        const struct nscase *c = &ns_cases[i];
        struct fair_pod_term term;
        memset(&term, 0, sizeof term);
        term.topology_key = c->kind == 1 ? "region" : "zone";
        term.selector.exprs = c->kind == -2 ? &sec_in : &svc_in;
        term.selector.nexprs = 1;
        if (c->listed) {
            term.namespaces = &c->listed;
            term.nnamespaces = 1;
        }
        if (c->sel == 0) {
            term.all_namespaces = true;
        } else {
            term.ns_by_labels = true;
            if (c->sel == 2) {
                term.ns_selector.match_labels = &team_ml;
                term.ns_selector.nmatch_labels = 1;
            } else {
                term.ns_selector.exprs = c->sel == 1 ? &team_in : &team_notin;
                term.ns_selector.nexprs = 1;
            }
        }
        struct fair_pod_affinity pa = {0};
        if (c->kind == 1)
            pa = (struct fair_pod_affinity){.affinity = &term, .naffinity = 1};
        else
            pa = (struct fair_pod_affinity){.anti = &term, .nanti = 1};
        struct ts *t = ts_new();
        int n = ts_node(t, "machine1", 8);
        t->nodes[n].labels = node_labels;
        t->nodes[n].nlabels = 2;
        int q = ts_team(t, "a", 0, 1);
        int e = ts_bound(t, -1, 0, n, 0, 0);
        t->pods[e].labels = &podlabel;
        t->pods[e].nlabels = 1;
        t->pods[e].namespace_ = c->ens;
        ns_labels_of(&t->pods[e]);
        if (c->kind == -2)
            t->pods[e].pod_affinity = &pa;
        int p = ts_pod(t, q, 1000);
        t->pods[p].labels = &podlabel2;
        t->pods[p].nlabels = 1;
        t->pods[p].namespace_ = c->pod_ns;
        ns_labels_of(&t->pods[p]);
        if (c->kind != -2)
            t->pods[p].pod_affinity = &pa;
        assert_int_equal(ts_run(t), 0);
        if ((ts_count(t, FAIR_ACTION_BIND) == 1) != c->want)
            fail_msg("case \"%s\": bound %zu, want %d", c->name, ts_count(t, FAIR_ACTION_BIND),
                     c->want);
        ts_free(t);
    }
}

/* A preferred anti-affinity term with a namespaceSelector steers a pod
 * away from the node of a pod in a selected namespace, and not from one in
 * a namespace the selector leaves out; the same selector, labels changed
 * between two snapshots, turns the choice round. */
static void test_preferred_ns_selector(void **state)
{
    (void)state;
    static const char *const team1[] = {"team1"};
    struct fair_node_req team_in = {"team", team1, 1, FAIR_SEL_IN, false};
    struct fair_label nl[2] = {{"kubernetes.io/hostname", "m1"}, {"kubernetes.io/hostname", "m2"}};
    struct fair_label web = {"app", "web"};
    static const char *const webv[] = {"web"};
    struct fair_node_req web_in = {"app", webv, 1, FAIR_SEL_IN, false};
    struct fair_label t1 = {"team", "team1"}, t2 = {"team", "team2"};
    for (int round = 0; round < 2; round++) {
        struct fair_pod_term term;
        memset(&term, 0, sizeof term);
        term.topology_key = "kubernetes.io/hostname";
        term.selector.exprs = &web_in;
        term.selector.nexprs = 1;
        term.weight = 50;
        term.ns_by_labels = true;
        term.ns_selector.exprs = &team_in;
        term.ns_selector.nexprs = 1;
        struct fair_pod_affinity pa = {.pref_anti = &term, .npref_anti = 1};
        struct ts *t = ts_new();
        for (int n = 0; n < 2; n++) {
            ts_node(t, ts_str(t, "m%d", n + 1), 8);
            t->nodes[n].labels = &nl[n];
            t->nodes[n].nlabels = 1;
        }
        int q = ts_team(t, "a", 0, 1);
        /* A web pod in namespace x on m1 and one in y on m2, each with one
         * GPU, so packing alone does not choose. */
        for (int n = 0; n < 2; n++) {
            int e = ts_bound(t, -1, 1000, n, 1, 0);
            t->pods[e].labels = &web;
            t->pods[e].nlabels = 1;
            t->pods[e].namespace_ = n ? "y" : "x";
            /* Round 0: x is team1; round 1: the labels moved to y. */
            t->pods[e].ns_labels = (n == round) ? &t1 : &t2;
            t->pods[e].nns_labels = 1;
        }
        int p = ts_pod(t, q, 1000);
        t->pods[p].pod_affinity = &pa;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
        assert_int_equal(t->res.actions[0].node, round ? 0 : 1);
        ts_free(t);
    }
}

/* A Deployment-like set of 5 pods with anti-affinity to themselves on the
 * hostname spreads one per node over 4 nodes; the fifth waits. A pod of
 * another scheduler with anti-affinity keeps them off its node too. */
static void test_anti_affinity_spreads(void **state)
{
    (void)state;
    static const char *const app[] = {"web"};
    struct fair_node_req req = {"app", app, 1, FAIR_SEL_IN, false};
    struct fair_pod_term term = {.topology_key = "kubernetes.io/hostname",
                                 .selector = {NULL, 0, &req, 1, false, false},
                                 .weight = 0};
    struct fair_pod_affinity anti = {NULL, 0, &term, 1, NULL, 0, NULL, 0};
    struct fair_label web[] = {{"app", "web"}};
    struct fair_label host[5][1];
    struct ts *t = ts_new();
    for (int i = 0; i < 5; i++) {
        int n = ts_node(t, ts_str(t, "n%d", i), 8);
        host[i][0] = (struct fair_label){"kubernetes.io/hostname", t->nodes[n].name};
        t->nodes[n].labels = host[i];
        t->nodes[n].nlabels = 1;
    }
    int q = ts_team(t, "a", 0, 1);
    /* Another scheduler's web pod, with the same term, on n4. */
    int e = ts_bound(t, -1, 1000, 4, 0x1, 0);
    t->pods[e].labels = web;
    t->pods[e].nlabels = 1;
    t->pods[e].pod_affinity = &anti;
    int first = (int)t->npods;
    for (int i = 0; i < 5; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].labels = web;
        t->pods[p].nlabels = 1;
        t->pods[p].pod_affinity = &anti;
    }
    /* A pod without labels or terms may go anywhere. */
    int plain = ts_pod(t, q, 1000);
    assert_int_equal(ts_run(t), 0);
    int per[5] = {0}, bound = 0;
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *a = &t->res.actions[i];
        if (a->pod == plain)
            continue;
        per[a->node]++;
        bound++;
    }
    assert_int_equal(bound, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(per[i], 1);
    assert_int_equal(per[4], 0);
    int waiting = 0;
    for (int i = first; i < first + 5; i++)
        waiting += t->res.pending_reasons[i] == FAIR_PENDING_NO_NODE_FITS;
    assert_int_equal(waiting, 1);
    assert_int_equal(t->res.pending_reasons[plain], FAIR_PENDING_NONE);
    ts_free(t);
}

/* ---- topology spread ------------------------------------------------- */

struct spcon {
    const char *key; /* NULL: none */
    int32_t skew;
    const char *exists; /* the selector: this label Exists */
    int32_t min_domains;
};

struct spcase {
    const char *name;
    const char *label; /* the incoming pod's one label */
    struct spcon c[2];
    const char *aff[2]; /* node affinity: node In [..] (NULL: none) */
    const char *pods;   /* existing pods' nodes, "aabyyy" ('A': in another namespace) */
    bool zon_b;         /* node-b has "zon" instead of "zone" */
    bool want[4];       /* node-a, node-b, node-x, node-y */
};

/* kube-scheduler's TestPodTopologySpread_Filter_SingleConstraint and
 * _MultipleConstraints (plugins/podtopologyspread): nodes node-a, node-b
 * (zone1) and node-x, node-y (zone2), each labelled node=<name>; existing
 * pods labelled foo. The Go test checks the node affinity case without the
 * NodeAffinity filter and lets node-b and node-x pass ("in real case,
 * it's false"): here the placement applies both, so they do not. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct spcase sp_cases[] = {
    {"no existing pods", "foo", {{"zone", 1, "foo"}}, {0}, "", false, {1, 1, 1, 1}},
    /* minDomains (PodTopologySpread, Kubernetes 1.25+): 1/1 over two
     * zones fits everywhere; with minDomains 3 the global minimum is 0, so
     * nowhere; with minDomains 2 (as many as there are) as without. */
    {"1/1, minDomains 3: global minimum 0",
     "foo",
     {{"zone", 1, "foo", 3}},
     {0},
     "ax",
     false,
     {0, 0, 0, 0}},
    {"1/1, minDomains 2: as without",
     "foo",
     {{"zone", 1, "foo", 2}},
     {0},
     "ax",
     false,
     {1, 1, 1, 1}},
    {"1/1, no minDomains", "foo", {{"zone", 1, "foo"}}, {0}, "ax", false, {1, 1, 1, 1}},
    {"0/1, minDomains 3, maxSkew 2: both zones",
     "foo",
     {{"zone", 2, "foo", 3}},
     {0},
     "x",
     false,
     {1, 1, 1, 1}},
    {"no existing pods, pod does not match itself",
     "foo",
     {{"zone", 1, "bar"}},
     {0},
     "",
     false,
     {1, 1, 1, 1}},
    {"existing pods in another namespace do not count",
     "foo",
     {{"zone", 1, "foo"}},
     {0},
     "AAxy",
     false,
     {1, 1, 0, 0}},
    {"spread across zones as 3/3, all nodes fit",
     "foo",
     {{"zone", 1, "foo"}},
     {0},
     "aabyyy",
     false,
     {1, 1, 1, 1}},
    {"1/2 as node-b lacks the zone label",
     "foo",
     {{"zone", 1, "foo"}},
     {0},
     "abxy",
     true,
     {1, 0, 0, 0}},
    {"nodes as 2/1/0/3, only node-x fits",
     "foo",
     {{"node", 1, "foo"}},
     {0},
     "aabyyy",
     false,
     {0, 0, 1, 0}},
    {"nodes as 2/1/0/3, maxSkew 2: node-b and node-x",
     "foo",
     {{"node", 2, "foo"}},
     {0},
     "aabyyy",
     false,
     {0, 1, 1, 0}},
    {"nodes as 2/1/0/3, pod does not match itself",
     "bar",
     {{"node", 1, "foo"}},
     {0},
     "aabyyy",
     false,
     {0, 1, 1, 0}},
    {"node affinity: 2/~1~/~0~/3, node-a fits",
     "foo",
     {{"node", 1, "foo"}},
     {"node-a", "node-y"},
     "aabyyy",
     false,
     {1, 0, 0, 0}},
    {"zone and node, spreads [3/3, 2/1/0/3]",
     "foo",
     {{"zone", 1, "foo"}, {"node", 1, "foo"}},
     {0},
     "aabyyy",
     false,
     {0, 0, 1, 0}},
    {"zone and node, spreads [3/4, 2/1/0/4]",
     "foo",
     {{"zone", 1, "foo"}, {"node", 1, "foo"}},
     {0},
     "aabyyyy",
     false,
     {0, 0, 0, 0}},
};
#pragma GCC diagnostic pop

static void test_spread_table(void **state)
{
    (void)state;
    static const char *const names[4] = {"node-a", "node-b", "node-x", "node-y"};
    for (size_t i = 0; i < sizeof(sp_cases) / sizeof(sp_cases[0]); i++) {
        const struct spcase *c = &sp_cases[i];
        struct fair_label nl[4][2];
        struct fair_label foo = {"foo", ""}, own = {c->label, ""};
        struct fair_node_req sel[2];
        struct fair_spread sp[2];
        size_t nsp = 0;
        for (; nsp < 2 && c->c[nsp].key; nsp++) {
            sel[nsp] = (struct fair_node_req){c->c[nsp].exists, NULL, 0, FAIR_SEL_EXISTS, false};
            sp[nsp] = (struct fair_spread){c->c[nsp].key,
                                           c->c[nsp].skew,
                                           {NULL, 0, &sel[nsp], 1, false, false},
                                           c->c[nsp].min_domains};
        }
        struct fair_node_req areq = {"node", c->aff, 2, FAIR_SEL_IN, false};
        struct fair_node_term aterm = {&areq, 1, 0, false};
        struct fair_node_affinity aff = {.required = true, .terms = &aterm, .nterms = 1};
        struct ts *t = ts_new();
        for (int n = 0; n < 4; n++) {
            ts_node(t, names[n], 8);
            nl[n][0] =
                (struct fair_label){n == 1 && c->zon_b ? "zon" : "zone", n < 2 ? "zone1" : "zone2"};
            nl[n][1] = (struct fair_label){"node", names[n]};
            t->nodes[n].labels = nl[n];
            t->nodes[n].nlabels = 2;
        }
        int q = ts_team(t, "a", 0, 1);
        for (const char *e = c->pods; *e; e++) {
            int n = *e == 'A' ? 0 : (*e == 'a' ? 0 : *e == 'b' ? 1 : *e == 'x' ? 2 : 3);
            int b = ts_bound(t, -1, 0, n, 0, 0);
            t->pods[b].labels = &foo;
            t->pods[b].nlabels = 1;
            t->pods[b].namespace_ = *e == 'A' ? "ns1" : "default";
        }
        int p = ts_pod(t, q, 1000);
        t->pods[p].namespace_ = "default";
        t->pods[p].labels = &own;
        t->pods[p].nlabels = 1;
        t->pods[p].spread = sp;
        t->pods[p].nspread = nsp;
        t->pods[p].node_affinity = c->aff[0] ? &aff : NULL;
        struct fair_snapshot s;
        ts_snapshot(t, &s);
        bool ok[4] = {true, true, true, true};
        uint64_t masks[TS_MAXPODS];
        struct fair_place pl;
        assert_int_equal(fair_place_init(&pl, &s, ok, masks), 0);
        for (int n = 0; n < 4; n++) {
            bool got = fair_place_static_ok(&pl, pl.rank_of[n], &t->pods[p]);
            if (got != c->want[n])
                fail_msg("case \"%s\": %s %d, want %d", c->name, names[n], got, c->want[n]);
        }
        fair_place_release(&pl);
        ts_free(t);
    }
}

/* Within a cycle: six replicas with maxSkew 1 over two zones of two nodes
 * go three and three. */
static void test_spread_within_cycle(void **state)
{
    (void)state;
    struct fair_label nl[4][1], web = {"app", "web"};
    static const char *const webv[] = {"web"};
    struct fair_node_req sel = {"app", webv, 1, FAIR_SEL_IN, false};
    struct fair_spread sp = {"zone", 1, {NULL, 0, &sel, 1, false, false}, 0};
    struct ts *t = ts_new();
    for (int n = 0; n < 4; n++) {
        ts_node(t, ts_str(t, "n%d", n), 8);
        nl[n][0] = (struct fair_label){"zone", n < 2 ? "z1" : "z2"};
        t->nodes[n].labels = nl[n];
        t->nodes[n].nlabels = 1;
    }
    int q = ts_team(t, "a", 0, 1);
    for (int i = 0; i < 6; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].labels = &web;
        t->pods[p].nlabels = 1;
        t->pods[p].spread = &sp;
        t->pods[p].nspread = 1;
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 6);
    int z1 = 0;
    for (size_t i = 0; i < t->res.nactions; i++)
        z1 += t->res.actions[i].node < 2;
    assert_int_equal(z1, 3);
    ts_free(t);
}

/* Every allocation of a cycle with all kinds of constraints fails once in
 * turn: the engine returns FAIR_ENOMEM (or succeeds), never crashes, and
 * (under ASan) leaks nothing. */
static void test_alloc_failures(void **state)
{
    (void)state;
    static const char *const b_only[] = {"b"}, *const app[] = {"web"};
    struct fair_node_req req = {"pool", b_only, 1, FAIR_SEL_IN, false};
    struct fair_node_term term = {&req, 1, 0, false};
    struct fair_node_affinity aff = {.required = true, .terms = &term, .nterms = 1};
    struct fair_node_req preq = {"app", app, 1, FAIR_SEL_IN, false};
    struct fair_pod_term pterm = {.topology_key = "kubernetes.io/hostname",
                                  .selector = {NULL, 0, &preq, 1, false, false},
                                  .weight = 0};
    struct fair_pod_affinity anti = {&pterm, 1, &pterm, 1, NULL, 0, NULL, 0};
    struct fair_label web[] = {{"app", "web"}};
    struct fair_scalar five = {"rdma/ib", 5}, one = {"rdma/ib", 1};
    struct fair_host_port port = {NULL, 80, FAIR_PROTO_TCP};
    struct fair_label labels[4][2];
    struct ts *t = ts_new();
    for (int i = 0; i < 4; i++) {
        int n = ts_node(t, ts_str(t, "n%d", i), 8);
        labels[i][0] = (struct fair_label){"kubernetes.io/hostname", t->nodes[n].name};
        labels[i][1] = (struct fair_label){"pool", i % 2 ? "b" : "a"};
        t->nodes[n].labels = labels[i];
        t->nodes[n].nlabels = 2;
        t->nodes[n].scalars = &five;
        t->nodes[n].nscalars = 1;
    }
    int q = ts_team(t, "a", 0, 1);
    int e = ts_bound(t, -1, 1000, 0, 0x1, 0);
    t->pods[e].labels = web;
    t->pods[e].nlabels = 1;
    t->pods[e].pod_affinity = &anti;
    t->pods[e].host_ports = &port;
    t->pods[e].nhost_ports = 1;
    for (int i = 0; i < 6; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].node_affinity = i % 2 ? &aff : NULL;
        t->pods[p].labels = web;
        t->pods[p].nlabels = 1;
        t->pods[p].pod_affinity = i % 3 ? &anti : NULL;
        t->pods[p].scalars = &one;
        t->pods[p].nscalars = 1;
        t->pods[p].host_ports = i % 2 ? NULL : &port;
        t->pods[p].nhost_ports = i % 2 ? 0 : 1;
    }
    struct fair_spread sp[2] = {{"kubernetes.io/hostname", 1, {NULL, 0, &preq, 1, false, false}, 0},
                                {"pool", 1, {NULL, 0, &preq, 1, false, false}, 0}};
    t->pods[t->npods - 1].spread = sp;
    t->pods[t->npods - 1].nspread = 1;
    t->pods[t->npods - 1].nspread_soft = 1;
    /* Preferred terms: node affinity, pod affinity and anti-affinity (the
     * existing pod's too), a ScheduleAnyway spread, all scored. */
    struct fair_node_term pref = {&req, 1, 10, false};
    struct fair_node_affinity paff = {.preferred = &pref, .npreferred = 1};
    struct fair_pod_term wterm = {
        .topology_key = "pool", .selector = {NULL, 0, &preq, 1, false, false}, .weight = 7};
    struct fair_pod_affinity soft = {.anti = &pterm,
                                     .nanti = 1,
                                     .pref_affinity = &wterm,
                                     .npref_affinity = 1,
                                     .pref_anti = &pterm,
                                     .npref_anti = 1};
    t->pods[e].pod_affinity = &soft;
    for (int i = 0; i < 3; i++) {
        int p = ts_pod(t, q, 1000);
        t->pods[p].node_affinity = &paff;
        t->pods[p].labels = web;
        t->pods[p].nlabels = 1;
        t->pods[p].pod_affinity = i ? &soft : NULL;
        t->pods[p].spread = sp + 1;
        t->pods[p].nspread_soft = (size_t)(i == 2);
    }
    int ok = 0;
    for (long n = 0; n < 600; n++) {
        fair_alloc_fail_after(n);
        int rc = ts_run(t);
        fair_alloc_fail_after(-1);
        assert_true(rc == 0 || rc == FAIR_ENOMEM);
        if (rc == 0 && ++ok > 3)
            break;
    }
    assert_true(ok > 0);
    ts_free(t);
}

/* ---- scores of preferred terms ------------------------------------------ */

/* The three plugins' NormalizeScore: TestNodeAffinityPriority's expected
 * lists (raw 2, 11, 4 become 18, 100, 36), InterPodAffinity's min-max
 * scaling, and PodTopologySpread's reversal with ignored nodes. */
static void test_score_normalize(void **state)
{
    (void)state;
    static const struct {
        int64_t raw[3];
        int64_t want[3];
    } na[] = {
        {{0, 0, 0}, {0, 0, 0}},     /* no affinity */
        {{2, 0, 0}, {100, 0, 0}},   /* only machine1 matches */
        {{2, 11, 4}, {18, 100, 36}} /* all match, different priorities */
    };
    for (size_t i = 0; i < sizeof na / sizeof na[0]; i++) {
        int64_t s[3];
        memcpy(s, na[i].raw, sizeof s);
        fair_score_normalize_max(s, 3);
        for (int k = 0; k < 3; k++)
            if (s[k] != na[i].want[k])
                fail_msg("node affinity case %zu node %d: %lld, want %lld", i, k, (long long)s[k],
                         (long long)na[i].want[k]);
    }
    int64_t ipa[4] = {-5, 0, 5, 0};
    fair_score_normalize_minmax(ipa, 4);
    assert_int_equal(ipa[0], 0);
    assert_int_equal(ipa[1], 50);
    assert_int_equal(ipa[2], 100);
    int64_t same[2] = {3, 3};
    fair_score_normalize_minmax(same, 2);
    assert_int_equal(same[0], 0);
    assert_int_equal(same[1], 0);
    /* Spread: fewer matching pods, higher score; a node lacking the key
     * scores 0; all raw 0: all 100. */
    int64_t sp[4] = {3, 1, 0, 2};
    bool ign[4] = {false, false, true, false};
    fair_score_normalize_spread(sp, ign, 4);
    assert_int_equal(sp[0], 100 * (3 + 1 - 3) / 3);
    assert_int_equal(sp[1], 100);
    assert_int_equal(sp[2], 0);
    assert_int_equal(sp[3], 100 * (3 + 1 - 2) / 3);
    int64_t zero[2] = {0, 0};
    bool none[2] = {false, false};
    fair_score_normalize_spread(zero, none, 2);
    assert_int_equal(zero[0], 100);
    assert_int_equal(zero[1], 100);
}

/* Preferred node affinity chooses among the nodes GPU packing leaves
 * equal, and never overrides packing: with node 0 partly used, the pod
 * goes there although it prefers node 2. */
static void test_preferred_node_affinity_places(void **state)
{
    (void)state;
    static const char *const bar[] = {"bar"};
    struct fair_node_req foo_bar = {"foo", bar, 1, FAIR_SEL_IN, false};
    struct fair_node_term pref = {&foo_bar, 1, 2, false};
    struct fair_node_affinity a = {.preferred = &pref, .npreferred = 1};
    struct fair_label l[] = {{"foo", "bar"}};
    for (int used = 0; used < 2; used++) {
        struct ts *t = ts_new();
        for (int n = 0; n < 3; n++)
            ts_node(t, ts_str(t, "n%d", n), 8);
        t->nodes[2].labels = l;
        t->nodes[2].nlabels = 1;
        int q = ts_team(t, "a", 0, 1);
        if (used)
            ts_bound(t, q, 4000, 0, 0xf, 0);
        int p = ts_pod(t, q, 1000);
        t->pods[p].node_affinity = &a;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
        assert_int_equal(t->res.actions[0].node, used ? 0 : 2);
        ts_free(t);
    }
}

/* InterPodAffinity's score, the cases of kube-scheduler's
 * TestPreferredAffinity reduced to three empty nodes (machine1
 * region=China, machine2 region=India, machine3 az=az1, no region) and
 * one pod of another scheduler on machine1 labelled security=S1 (kind
 * below): the incoming pod (labelled security=S2 for the symmetric cases)
 * goes to the node the highest normalised score picks, ties to the first. */
struct prefcase {
    const char *name;
    int own; /* incoming pod's preferred term to security=S1 on region: 1 affinity, -1 anti, 0 none
              */
    int existing; /* existing pod's term to security=S2 on region: 1 preferred affinity,
                     -1 preferred anti, 2 required affinity, 0 none */
    int want;     /* node index */
};

static const struct prefcase pref_cases[] = {
    {"no terms: packing order", 0, 0, 0},
    {"preferred affinity to the pod in China", 1, 0, 0},
    {"preferred anti-affinity: away from China, first of the rest", -1, 0, 1},
    {"existing pod's preferred affinity draws the pod to China", 0, 1, 0},
    {"existing pod's preferred anti-affinity pushes it away", 0, -1, 1},
    {"existing pod's required affinity (hardPodAffinityWeight)", 0, 2, 0},
    {"both anti: away", -1, -1, 1},
};

static void test_preferred_pod_affinity_table(void **state)
{
    (void)state;
    static const char *const s1[] = {"S1"}, *const s2[] = {"S2"};
    struct fair_node_req r1 = {"security", s1, 1, FAIR_SEL_IN, false};
    struct fair_node_req r2 = {"security", s2, 1, FAIR_SEL_IN, false};
    struct fair_label nl[3] = {{"region", "China"}, {"region", "India"}, {"az", "az1"}};
    struct fair_label el = {"security", "S1"}, pl = {"security", "S2"};
    for (size_t i = 0; i < sizeof pref_cases / sizeof pref_cases[0]; i++) {
        const struct prefcase *c = &pref_cases[i];
        /* Move the node labels round so that packing order alone does not
         * pick the wanted node: the nodes are ranked by name. */
        struct fair_pod_term own = {
            .topology_key = "region", .selector = {NULL, 0, &r1, 1, false, false}, .weight = 5};
        struct fair_pod_term ex = {
            .topology_key = "region", .selector = {NULL, 0, &r2, 1, false, false}, .weight = 5};
        struct fair_pod_affinity pa = {0}, ea = {0};
        if (c->own > 0)
            pa = (struct fair_pod_affinity){.pref_affinity = &own, .npref_affinity = 1};
        else if (c->own < 0)
            pa = (struct fair_pod_affinity){.pref_anti = &own, .npref_anti = 1};
        if (c->existing == 1)
            ea = (struct fair_pod_affinity){.pref_affinity = &ex, .npref_affinity = 1};
        else if (c->existing == -1)
            ea = (struct fair_pod_affinity){.pref_anti = &ex, .npref_anti = 1};
        else if (c->existing == 2)
            ea = (struct fair_pod_affinity){.affinity = &ex, .naffinity = 1};
        struct ts *t = ts_new();
        for (int n = 0; n < 3; n++) {
            ts_node(t, ts_str(t, "machine%d", n + 1), 8);
            t->nodes[n].labels = &nl[n];
            t->nodes[n].nlabels = 1;
        }
        int q = ts_team(t, "a", 0, 1);
        int e = ts_bound(t, -1, 0, 0, 0, 0);
        t->pods[e].labels = &el;
        t->pods[e].nlabels = 1;
        if (c->existing)
            t->pods[e].pod_affinity = &ea;
        int p = ts_pod(t, q, 1000);
        t->pods[p].labels = &pl;
        t->pods[p].nlabels = 1;
        if (c->own)
            t->pods[p].pod_affinity = &pa;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
        if (t->res.actions[0].node != c->want)
            fail_msg("case \"%s\": node %d, want %d", c->name, t->res.actions[0].node, c->want);
        ts_free(t);
    }
}

/* ScheduleAnyway: a tie between four empty nodes goes to the zone with
 * fewer matching pods; a node without the key is the last choice; within
 * a cycle, replicas of zero GPU (no packing preference) alternate zones. */
static void test_soft_spread(void **state)
{
    (void)state;
    struct fair_label nl[5][1], web = {"app", "web"};
    static const char *const webv[] = {"web"};
    struct fair_node_req sel = {"app", webv, 1, FAIR_SEL_IN, false};
    struct fair_spread sp = {"zone", 1, {NULL, 0, &sel, 1, false, false}, 0};
    struct ts *t = ts_new();
    for (int n = 0; n < 5; n++) {
        ts_node(t, ts_str(t, "n%d", n), 8);
        nl[n][0] = (struct fair_label){n == 0 ? "other" : "zone", n < 3 ? "z1" : "z2"};
        t->nodes[n].labels = nl[n];
        t->nodes[n].nlabels = 1;
    }
    int q = ts_team(t, "a", 0, 1);
    int e = ts_bound(t, -1, 0, 1, 0, 0); /* a web pod in z1 */
    t->pods[e].labels = &web;
    t->pods[e].nlabels = 1;
    t->pods[e].namespace_ = "ns";
    int p = ts_pod(t, q, 1000);
    t->pods[p].labels = &web;
    t->pods[p].nlabels = 1;
    t->pods[p].spread = &sp;
    t->pods[p].nspread_soft = 1;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
    assert_int_equal(t->res.actions[0].node, 3);
    ts_free(t);

    /* Four zero-GPU replicas: z1 (n1, n2) and z2 (n3, n4) get two each. */
    t = ts_new();
    for (int n = 0; n < 5; n++) {
        ts_node(t, ts_str(t, "n%d", n), 8);
        t->nodes[n].labels = nl[n];
        t->nodes[n].nlabels = 1;
    }
    q = ts_team(t, "a", 0, 1);
    for (int i = 0; i < 4; i++) {
        p = ts_pod(t, q, 0);
        t->pods[p].labels = &web;
        t->pods[p].nlabels = 1;
        t->pods[p].spread = &sp;
        t->pods[p].nspread_soft = 1;
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 4);
    int z1 = 0, none = 0;
    for (size_t i = 0; i < t->res.nactions; i++) {
        z1 += t->res.actions[i].node == 1 || t->res.actions[i].node == 2;
        none += t->res.actions[i].node == 0;
    }
    assert_int_equal(z1, 2);
    assert_int_equal(none, 0);
    ts_free(t);
}

/* Within one cycle: a pod placed earlier whose preferred affinity term
 * matches a later pod draws it to its node (InterPodAffinity's existing
 * pods' side), and one whose preferred anti-affinity term matches pushes
 * it away. Zero-GPU pods, so that packing leaves the three nodes equal;
 * the first pod prefers node n2 by node affinity. */
static void test_preferred_symmetry_within_cycle(void **state)
{
    (void)state;
    static const char *const n2[] = {"n2"}, *const y[] = {"y"};
    struct fair_node_req on_n2 = {"kubernetes.io/hostname", n2, 1, FAIR_SEL_IN, false};
    struct fair_node_term pref_n2 = {&on_n2, 1, 10, false};
    struct fair_node_affinity na = {.preferred = &pref_n2, .npreferred = 1};
    struct fair_node_req sel_y = {"app", y, 1, FAIR_SEL_IN, false};
    struct fair_pod_term term = {.topology_key = "kubernetes.io/hostname",
                                 .selector = {NULL, 0, &sel_y, 1, false, false},
                                 .weight = 10};
    struct fair_label host[3][1], ly = {"app", "y"};
    for (int anti = 0; anti < 2; anti++) {
        struct fair_pod_affinity a = {0};
        if (anti)
            a = (struct fair_pod_affinity){.pref_anti = &term, .npref_anti = 1};
        else
            a = (struct fair_pod_affinity){.pref_affinity = &term, .npref_affinity = 1};
        struct ts *t = ts_new();
        for (int n = 0; n < 3; n++) {
            ts_node(t, ts_str(t, "n%d", n), 8);
            host[n][0] = (struct fair_label){"kubernetes.io/hostname", t->nodes[n].name};
            t->nodes[n].labels = host[n];
            t->nodes[n].nlabels = 1;
        }
        int q = ts_team(t, "a", 0, 1);
        int x = ts_pod(t, q, 0);
        t->pods[x].node_affinity = &na;
        t->pods[x].pod_affinity = &a;
        int py = ts_pod(t, q, 0);
        t->pods[py].labels = &ly;
        t->pods[py].nlabels = 1;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 2);
        int nx = -1, ny = -1;
        for (size_t i = 0; i < t->res.nactions; i++) {
            if (t->res.actions[i].pod == x)
                nx = t->res.actions[i].node;
            if (t->res.actions[i].pod == py)
                ny = t->res.actions[i].node;
        }
        assert_int_equal(nx, 2);
        assert_int_equal(ny, anti ? 0 : 2);
        ts_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_affinity_table),
        cmocka_unit_test(test_preferred_score),
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_engine_places_only_matching),
        cmocka_unit_test(test_reclaim_respects_affinity),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_host_ports_table),
        cmocka_unit_test(test_host_ports_within_cycle),
        cmocka_unit_test(test_resources_table),
        cmocka_unit_test(test_resources_within_cycle),
        cmocka_unit_test(test_interpod_table),
        cmocka_unit_test(test_interpod_ns_selector_table),
        cmocka_unit_test(test_preferred_ns_selector),
        cmocka_unit_test(test_anti_affinity_spreads),
        cmocka_unit_test(test_spread_table),
        cmocka_unit_test(test_spread_within_cycle),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_score_normalize),
        cmocka_unit_test(test_preferred_node_affinity_places),
        cmocka_unit_test(test_preferred_pod_affinity_table),
        cmocka_unit_test(test_soft_spread),
        cmocka_unit_test(test_preferred_symmetry_within_cycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
