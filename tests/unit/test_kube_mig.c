/* MIG pods through kube/decode.c: nvidia.com/mig-<profile> requests become
 * the pod's MIG charge (mig_milli), and a profile that does not parse or
 * MIG next to another GPU ask is a problem (the pod is InvalidPod), never
 * a failed decode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kube/decode.h"

#define HEAD                                                                                       \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"m\",\"namespace\":\"t\","    \
    "\"uid\":\"u\",\"resourceVersion\":\"1\"%s},\"spec\":{\"containers\":[%s]%s}}"

static struct fair_kpod *decode(const char *ann, const char *containers, const char *extra)
{
    char text[4096];
    snprintf(text, sizeof text, HEAD, ann, containers, extra);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s: %s", je.text, text);
    struct fair_kpod *p = NULL;
    struct fair_error err = {0};
    int rc = fair_kpod_decode(j, &p, &err);
    json_decref(j);
    if (rc)
        fail_msg("decode failed: %s", err.msg);
    return p;
}

#define C(res) "{\"name\":\"c\",\"resources\":{\"limits\":{" res "}}}"

struct dcase {
    const char *what;
    const char *ann;
    const char *containers;
    const char *extra;
    int64_t mig_milli;   /* want, when no problem */
    const char *problem; /* substring of the problem, or NULL: none */
};

static const struct dcase cases[] = {
    {"one 1g.10gb", "", C("\"nvidia.com/mig-1g.10gb\":1"), "", 143, NULL},
    {"two containers, two profiles", "",
     C("\"nvidia.com/mig-1g.10gb\":2") "," C("\"nvidia.com/mig-3g.40gb+me\":\"1\""), "",
     2 * 143 + 429, NULL},
    {"A30 share", "", C("\"nvidia.com/mig-2g.12gb\":1"), "", 500, NULL},
    {"init container counts as its max", "", C("\"nvidia.com/mig-1g.10gb\":1"),
     ",\"initContainers\":[" C("\"nvidia.com/mig-1g.10gb\":3") "]", 3 * 143, NULL},
    {"zero instances is no MIG", "", C("\"nvidia.com/mig-1g.10gb\":0"), "", 0, NULL},
    {"no MIG", "", C("\"cpu\":\"1\""), "", 0, NULL},
    {"unknown profile", "", C("\"nvidia.com/mig-1g.11gb\":1"), "", 0, "unknown MIG profile"},
    {"bad suffix", "", C("\"nvidia.com/mig-1g.10gb+zz\":1"), "", 0, "unknown MIG profile"},
    {"with nvidia.com/gpu", "", C("\"nvidia.com/mig-1g.10gb\":1,\"nvidia.com/gpu\":1"), "", 0,
     "one kind of GPU"},
    {"with a fraction", ",\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.5\"}",
     C("\"nvidia.com/mig-1g.10gb\":1"), "", 0, "one kind of GPU"},
    {"with GPU memory", ",\"annotations\":{\"fairshare.dev/gpu-memory\":\"10Gi\"}",
     C("\"nvidia.com/mig-1g.10gb\":1"), "", 0, "one kind of GPU"},
    {"too many instances", "", C("\"nvidia.com/mig-1g.10gb\":449"), "", 0, "MIG instances"},
};

static void test_decode_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct dcase *c = &cases[i];
        struct fair_kpod *p = decode(c->ann, c->containers, c->extra);
        if (c->problem) {
            if (!p->problem || !strstr(p->problem, c->problem))
                fail_msg("%s: problem \"%s\", want one with \"%s\"", c->what,
                         p->problem ? p->problem : "(none)", c->problem);
            if (p->mig_milli != 0)
                fail_msg("%s: mig_milli %lld on an invalid pod", c->what, (long long)p->mig_milli);
        } else {
            if (p->problem)
                fail_msg("%s: unexpected problem \"%s\"", c->what, p->problem);
            if (p->mig_milli != c->mig_milli)
                fail_msg("%s: mig_milli %lld, want %lld", c->what, (long long)p->mig_milli,
                         (long long)c->mig_milli);
            /* The instances stay in scalars: that is how they are placed. */
            if (c->mig_milli && p->nscalars == 0)
                fail_msg("%s: no scalars", c->what);
            if (c->mig_milli && p->request.v[FAIR_RES_GPU] != 0)
                fail_msg("%s: request.v[GPU] %lld", c->what, (long long)p->request.v[FAIR_RES_GPU]);
        }
        fair_kpod_free(p);
    }
}

/* A node's MIG resources are kept among its scalars (allocatable). */
static void test_node_keeps_mig(void **state)
{
    (void)state;
    json_error_t je;
    json_t *j = json_loads("{\"metadata\":{\"name\":\"n1\",\"uid\":\"nu\"},\"status\":{"
                           "\"allocatable\":{\"cpu\":\"8\",\"memory\":\"1Gi\",\"pods\":\"110\","
                           "\"nvidia.com/mig-1g.10gb\":\"7\",\"nvidia.com/mig-3g.40gb\":\"2\"}}}",
                           0, &je);
    assert_non_null(j);
    struct fair_knode *n = NULL;
    assert_int_equal(fair_knode_decode(j, &n, NULL), 0);
    json_decref(j);
    assert_int_equal(n->gpu_count, 0);
    assert_int_equal(n->nscalars, 2);
    int64_t one = 0, three = 0;
    for (size_t i = 0; i < n->nscalars; i++) {
        if (!strcmp(n->scalars[i].name, "nvidia.com/mig-1g.10gb"))
            one = n->scalars[i].value;
        if (!strcmp(n->scalars[i].name, "nvidia.com/mig-3g.40gb"))
            three = n->scalars[i].value;
    }
    assert_int_equal(one, 7);
    assert_int_equal(three, 2);
    fair_knode_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_table),
        cmocka_unit_test(test_node_keeps_mig),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
