/* Memory-failure paths of the parsers: each operation is run with the Nth
 * allocation failing (base/alloc.h's hook), for N = 0, 1, 2, ... until it
 * succeeds, with jansson's allocations routed through fair_malloc so that
 * they fail too. Each failed run must return FAIR_ENOMEM and leave nothing
 * behind (the ASan build's LeakSanitizer checks the leaks); the run that
 * succeeds must give the same result as a run without failures.
 *
 * Covered here: the filtering JSON parser and the watch stream (framing,
 * event parsing, Pod decoding) with jansson failing, the Node, Project and
 * Queue decoders, the kubeconfig reader, the controller config file with
 * jansson failing (test_ctl_config.c covers fair_malloc only), and the
 * simulator's simple jobs CSV. Already covered elsewhere, not repeated:
 * the Pod decoder (test_kube_decode.c), the YAML reader (test_yaml.c), the
 * engine (test_engine.c), the OpenB trace (test_sim_trace.c), the ledger
 * (test_ledger.c), replay (test_sim_replay.c), the snapshot
 * (test_ctl_snapshot.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "ctl/config.h"
#include "kube/config.h"
#include "kube/decode.h"
#include "kube/jsonfilter.h"
#include "kube/watch.h"
#include "sim/trace.h"
#include "test_alloc_sweep.h"

/* No operation here needs more allocations than this. */
#define MAX_SITES 20000

/* Runs op(ctx) with allocation k failing for k = 0, 1, ... until it
 * succeeds. op returns 0 or a FAIR_E* code and must clean up after itself
 * on failure. Returns the number of failed runs. */
static long each_failure_named(const char *name, int (*op)(void *ctx), void *ctx);
#define each_failure(op, ctx) each_failure_named(#op, op, ctx)

static long each_failure_named(const char *name, int (*op)(void *ctx), void *ctx)
{
    json_set_alloc_funcs(fair_malloc, fair_free);
    long failures = fair_test_alloc_sweep(op, ctx, MAX_SITES);
    json_set_alloc_funcs(malloc, free);
    printf("oom: op=%s allocation_sites_failed=%ld\n", name, failures);
    return failures;
}

static const char POD_JSON[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-1\",\"namespace\":"
    "\"ml\",\"uid\":\"p-1\",\"resourceVersion\":\"12\",\"labels\":{\"fairshare.dev/queue\":"
    "\"q-a\",\"app\":\"x\"},\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.5\","
    "\"sim.fairshare.dev/duration-seconds\":\"30\",\"big\":\"" /* skipped by the filter */
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"},\"managedFields\":[{"
    "\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}]},\"spec\":{\"schedulerName\":"
    "\"fairshare\",\"priority\":10,\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":"
    "{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"},\"limits\":{\"nvidia.com/gpu\":\"2\"}}}"
    "],\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
    "\"nodeSelector\":{\"zone\":\"a\"}},\"status\":{\"phase\":\"Pending\"}}";

/* ---- the filtering JSON parser ---- */

struct jf_ctx {
    const struct fair_jfield *filter;
    json_t *want;
};

static int jf_op(void *p)
{
    struct jf_ctx *c = p;
    json_t *out = NULL;
    int rc = fair_json_parse_filtered(POD_JSON, strlen(POD_JSON), c->filter, &out, NULL);
    if (rc == 0) {
        assert_true(json_equal(out, c->want));
        json_decref(out);
    } else {
        assert_null(out);
    }
    return rc;
}

static void test_jsonfilter(void **state)
{
    (void)state;
    for (int f = 0; f < 2; f++) {
        struct jf_ctx c = {f ? fair_ktype_pod.filter : NULL, NULL};
        assert_int_equal(
            fair_json_parse_filtered(POD_JSON, strlen(POD_JSON), c.filter, &c.want, NULL), 0);
        long failures = each_failure(jf_op, &c);
        /* Every object, array, string and number is one allocation at
         * least: the whole document has over 60 values, the filtered one
         * over 30. */
        assert_true(failures > (f ? 30 : 60));
        json_decref(c.want);
    }
}

/* ---- the watch stream: framing, event parsing, Pod decoding ---- */

struct watch_ctx {
    char stream[8192];
    size_t len;
    int events;      /* decoded in this run */
    char names[256]; /* their names, ',' separated */
};

static int watch_line(const char *line, size_t len, void *p)
{
    struct watch_ctx *c = p;
    struct fair_kwatch_event ev;
    json_t *root = NULL;
    int rc = fair_kwatch_event_parse_filtered(line, len, fair_ktype_pod.filter, &ev, &root, NULL);
    if (rc != 0) {
        assert_null(root);
        return rc;
    }
    struct fair_kpod *pod = NULL;
    if (ev.type != FAIR_KWATCH_ERROR && ev.type != FAIR_KWATCH_BOOKMARK) {
        rc = fair_kpod_decode(ev.object, &pod, NULL);
        if (rc == 0) {
            size_t l = strlen(c->names);
            snprintf(c->names + l, sizeof c->names - l, "%s,", pod->meta.name);
            fair_kpod_free(pod);
        }
    }
    c->events++;
    json_decref(root);
    return rc;
}

static int watch_op(void *p)
{
    struct watch_ctx *c = p;
    struct fair_kframer f;
    c->events = 0;
    c->names[0] = '\0';
    fair_kframer_init(&f, 4096);
    int rc = 0;
    /* 7-byte chunks: lines are both handed out in place and assembled. */
    for (size_t off = 0; off < c->len && rc == 0; off += 7)
        rc = fair_kframer_feed(&f, c->stream + off, c->len - off < 7 ? c->len - off : 7, watch_line,
                               c, NULL);
    fair_kframer_release(&f);
    return rc;
}

static void test_watch_stream(void **state)
{
    (void)state;
    struct watch_ctx c = {.len = 0};
    const char *types[] = {"ADDED", "MODIFIED", "DELETED"};
    for (int i = 0; i < 3; i++)
        c.len += (size_t)snprintf(c.stream + c.len, sizeof c.stream - c.len,
                                  "{\"type\":\"%s\",\"object\":%s}\n", types[i], POD_JSON);
    c.len += (size_t)snprintf(c.stream + c.len, sizeof c.stream - c.len, "%s",
                              "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
                              "{\"resourceVersion\":\"99\"}}}\n{\"type\":\"ERROR\",\"object\":"
                              "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n");
    assert_int_equal(watch_op(&c), 0);
    assert_int_equal(c.events, 5);
    assert_string_equal(c.names, "train-1,train-1,train-1,");
    long failures = each_failure(watch_op, &c);
    assert_int_equal(c.events, 5);
    assert_string_equal(c.names, "train-1,train-1,train-1,");
    assert_true(failures > 30);
}

/* ---- Node, Project and Queue decoders ---- */

struct dec_ctx {
    const struct fair_ktype *type;
    json_t *obj;
};

static int dec_op(void *p)
{
    struct dec_ctx *c = p;
    void *out = NULL;
    int rc = c->type->decode(c->obj, &out, NULL);
    if (rc == 0) {
        assert_non_null(out);
        c->type->free(out);
    } else {
        assert_null(out);
    }
    return rc;
}

static void test_decoders(void **state)
{
    (void)state;
    static const struct {
        const struct fair_ktype *type;
        const char *json;
        long min_failures;
    } cases[] = {
        {&fair_ktype_node,
         "{\"metadata\":{\"name\":\"gpu-1\",\"uid\":\"n-1\",\"labels\":{"
         "\"nvidia.com/gpu.product\":\"H100\",\"zone\":\"a\"}},\"spec\":{\"unschedulable\":true,"
         "\"taints\":[{\"key\":\"gpu\",\"value\":\"yes\",\"effect\":\"NoSchedule\"},{\"key\":\"t\","
         "\"effect\":\"NoExecute\"}]},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\","
         "\"cpu\":\"95500m\",\"memory\":\"1Ti\",\"pods\":\"110\"},\"conditions\":[{\"type\":"
         "\"Ready\",\"status\":\"True\"}]}}",
         6},
        {&fair_ktype_namespace,
         "{\"metadata\":{\"name\":\"team-x\",\"uid\":\"ns-1\",\"labels\":{\"team\":\"x\","
         "\"kubernetes.io/metadata.name\":\"team-x\"}},\"status\":{\"phase\":\"Active\"}}",
         4},
        {&fair_ktype_project,
         "{\"metadata\":{\"name\":\"vision\",\"uid\":\"p-1\"},\"spec\":{\"guaranteed\":{\"gpu\":"
         "2.5,\"cpu\":\"8\"},\"limit\":{\"gpu\":8},\"overQuotaWeight\":3,\"costCenter\":\"CC-1\","
         "\"namespaces\":[\"a\",\"b\"],\"defaultQueue\":\"d\"}}",
         6},
        {&fair_ktype_queue,
         "{\"metadata\":{\"name\":\"research\",\"uid\":\"q-1\"},\"spec\":{\"project\":\"vision\","
         "\"guaranteed\":{\"gpu\":1.5},\"limit\":{\"gpu\":\"4\"},\"reclaimMinRuntime\":\"10m\"}}",
         2},
        /* An invalid value: decoded with a problem message, which is
         * allocated too. */
        {&fair_ktype_queue,
         "{\"metadata\":{\"name\":\"q\",\"uid\":\"q-2\"},\"spec\":{\"reclaimMinRuntime\":\"soon\"}"
         "}",
         2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct dec_ctx c = {cases[i].type, json_loads(cases[i].json, 0, NULL)};
        assert_non_null(c.obj);
        long failures = each_failure(dec_op, &c);
        if (failures < cases[i].min_failures)
            fail_msg("case %zu: only %ld allocation sites", i, failures);
        json_decref(c.obj);
    }
}

/* ---- kubeconfig ---- */

struct kc_ctx {
    char path[128];
    const char *context;
};

static int kc_op(void *p)
{
    struct kc_ctx *c = p;
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    fair_kconfig_init(&cfg);
    int rc = fair_kconfig_load_kubeconfig(c->path, c->context, &cfg, &err);
    if (rc == 0) {
        assert_string_equal(cfg.server, "https://127.0.0.1:6443");
        assert_string_equal(cfg.namespace_, "ml");
        assert_non_null(cfg.ca);
        assert_memory_equal(cfg.ca, "CA-PEM", 6);
        assert_non_null(cfg.token);
    } else {
        assert_true(err.msg[0] != '\0');
    }
    fair_kconfig_release(&cfg);
    return rc;
}

static void test_kubeconfig(void **state)
{
    (void)state;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fair-oom-kc-XXXXXX");
    assert_non_null(mkdtemp(dir));
    struct kc_ctx c;
    snprintf(c.path, sizeof c.path, "%s/config", dir);
    char tok[128];
    snprintf(tok, sizeof tok, "%s/token", dir);
    FILE *f = fopen(tok, "w");
    assert_non_null(f);
    fputs("tok-123\n", f);
    fclose(f);
    f = fopen(c.path, "w");
    assert_non_null(f);
    fputs("apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
          "clusters:\n- name: other\n  cluster: {server: https://other:1}\n"
          "- name: c1\n  cluster:\n    server: https://127.0.0.1:6443/\n"
          "    certificate-authority-data: Q0EtUEVN\n"
          "contexts:\n- name: dev\n  context: {cluster: c1, user: u1, namespace: ml}\n"
          "- name: prod\n  context: {cluster: c1, user: u2, namespace: ml}\n"
          "users:\n- name: u1\n  user: {tokenFile: token}\n"
          "- name: u2\n  user: {token: abc}\n",
          f);
    fclose(f);
    c.context = NULL;
    assert_int_equal(kc_op(&c), 0);
    long failures = each_failure(kc_op, &c);
    assert_true(failures > 40); /* the YAML tree alone is dozens of values */
    c.context = "prod";
    failures = each_failure(kc_op, &c);
    assert_true(failures > 40);
    unlink(tok);
    unlink(c.path);
    rmdir(dir);
}

/* ---- the controller config file, with jansson failing too ---- */

static const char CTL_CONFIG[] = "apiVersion: config.fairshare.dev/v1alpha1\n"
                                 "kind: ControllerConfig\n"
                                 "schedulerName: gpu-sched\n"
                                 "cycleInterval: 2s\n"
                                 "leaderElection:\n"
                                 "  enabled: true\n"
                                 "  leaseName: fs-lease\n"
                                 "  leaseNamespace: kube-system\n";

static int ctl_op(void *p)
{
    (void)p;
    struct fair_ctl_config c;
    struct fair_error err = {0};
    int rc = fair_ctl_config_init(&c);
    if (rc == 0)
        rc = fair_ctl_config_load_text(&c, "cfg.yaml", CTL_CONFIG, strlen(CTL_CONFIG), &err);
    if (rc == 0) {
        assert_string_equal(c.scheduler_name, "gpu-sched");
        assert_string_equal(c.lease_name, "fs-lease");
        assert_string_equal(c.lease_namespace, "kube-system");
        assert_true(c.leader_elect);
    }
    fair_ctl_config_release(&c);
    return rc;
}

static void test_ctl_config(void **state)
{
    (void)state;
    assert_int_equal(ctl_op(NULL), 0);
    assert_true(each_failure(ctl_op, NULL) > 20);
}

/* ---- the simulator's simple jobs CSV ---- */

static int jobs_op(void *p)
{
    (void)p;
    static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                                "node-a,64000,262144,8,V100M16\nnode-b,64000,262144,8,T4\n";
    static const char jobs[] =
        "name,queue,submit_s,duration_s,gpu,cpu,memory,priority,preemptible,gpu_model\n"
        "train-1,research,0,100,8,32,128Gi,0,true,\n"
        "infer-1,prod,10,50,0.5,4,16Gi,100,false,T4\n"
        "tune-1,prod,10.5,inf,2,8,32Gi,,,V100M16|T4\n"
        "eval-1,other,3,5,1,1,1Gi,,,\n";
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    int rc = fair_sim_trace_parse_nodes(&t, "nodes.csv", nodes, sizeof nodes - 1, NULL, &err);
    if (rc == 0)
        rc = fair_sim_trace_parse_jobs(&t, "jobs.csv", jobs, sizeof jobs - 1, NULL, &err);
    if (rc == 0) {
        assert_int_equal(t.njobs, 4);
        assert_int_equal(t.nqueue_names, 3);
        assert_string_equal(t.jobs[1].name, "eval-1"); /* sorted by submit time */
        assert_true(t.simple_format);
    }
    fair_sim_trace_release(&t);
    return rc;
}

static void test_sim_simple_jobs(void **state)
{
    (void)state;
    assert_int_equal(jobs_op(NULL), 0);
    assert_true(each_failure(jobs_op, NULL) > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonfilter), cmocka_unit_test(test_watch_stream),
        cmocka_unit_test(test_decoders),   cmocka_unit_test(test_kubeconfig),
        cmocka_unit_test(test_ctl_config), cmocka_unit_test(test_sim_simple_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
