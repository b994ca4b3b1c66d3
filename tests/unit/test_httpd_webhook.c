/* Unit tests for lib/httpd/webhook.h's patch builder: a table of
 * AdmissionReviews (not a fraction, a fraction, the user's env present,
 * several containers and init containers, other kinds and operations, bad
 * pods, malformed reviews) and the patch each must give, decoded from the
 * answer's base64 and applied by the test's own JSONPatch "add". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "httpd/webhook.h"

#define FRAC "\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.25\"}"
#define REVIEW(op, obj)                                                                            \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"           \
    "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"               \
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"                      \
    "\"operation\":\"" op "\",\"object\":" obj "}}"
#define POD(md, spec) "{\"metadata\":{\"name\":\"p\"," md "},\"spec\":{" spec "}}"
#define OURS "\"schedulerName\":\"fairshare\","
#define ONE_C "\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]"

/* The answer's patch, decoded (NULL when none). */
static json_t *answer_patch(const json_t *ans)
{
    const json_t *resp = json_object_get(ans, "response");
    const char *p = json_string_value(json_object_get(resp, "patch"));
    if (!p)
        return NULL;
    assert_string_equal(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
    size_t n = strlen(p);
    unsigned char *raw = calloc(1, n + 1);
    int m = EVP_DecodeBlock(raw, (const unsigned char *)p, (int)n);
    assert_true(m > 0);
    while (m > 0 && raw[m - 1] == '\0') /* EVP_DecodeBlock pads with zeros */
        m--;
    json_t *patch = json_loadb((const char *)raw, (size_t)m, 0, NULL);
    free(raw);
    assert_non_null(patch);
    return patch;
}

/* The names of container idx's env after the patch ops on it, in order,
 * joined by ',' (the user's entries first), or "-" when it has none. */
static void env_after(const json_t *pod, const json_t *patch, const char *field, size_t idx,
                      char *out, size_t outn)
{
    json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), field), idx);
    const json_t *e0 = json_object_get(c, "env");
    json_t *env = json_is_array(e0) ? json_deep_copy(e0) : NULL; /* null: as absent */
    char whole[96], item[96];
    snprintf(whole, sizeof whole, "/spec/%s/%zu/env", field, idx);
    snprintf(item, sizeof item, "/spec/%s/%zu/env/-", field, idx);
    size_t i;
    json_t *op;
    json_array_foreach(patch, i, op)
    {
        assert_string_equal(json_string_value(json_object_get(op, "op")), "add");
        const char *path = json_string_value(json_object_get(op, "path"));
        if (strcmp(path, whole) == 0) {
            assert_null(env); /* the list is created only where there was none */
            env = json_deep_copy(json_object_get(op, "value"));
        } else if (strcmp(path, item) == 0) {
            assert_non_null(env);
            json_array_append(env, json_object_get(op, "value"));
        }
    }
    out[0] = '\0';
    if (!env) {
        snprintf(out, outn, "-");
        return;
    }
    json_t *e;
    json_array_foreach(env, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *fp = json_string_value(json_object_get(
            json_object_get(json_object_get(e, "valueFrom"), "fieldRef"), "fieldPath"));
        size_t l = strlen(out);
        snprintf(out + l, outn - l, "%s%s%s", i ? "," : "", name, fp ? "*" : "");
    }
    json_decref(env);
}

struct row {
    const char *name;
    const char *review;
    bool cuda;
    enum fair_webhook_outcome outcome;
    int status;
    size_t added;
    const char *env0;    /* containers[0] after the patch ("*": from the downward API) */
    const char *env1;    /* containers[1], or NULL */
    const char *init0;   /* initContainers[0], or NULL */
    const char *message; /* a substring of res.message, or NULL */
};

#define ALL "NVIDIA_VISIBLE_DEVICES*,CUDA_DEVICE_MEMORY_LIMIT*,CUDA_DEVICE_SM_LIMIT*"

static const struct row rows[] = {
    {"no fraction", REVIEW("CREATE", POD("\"labels\":{}", OURS ONE_C)), false, FAIR_WEBHOOK_IGNORED,
     200, 0, "-", NULL, NULL, NULL},
    {"fraction", REVIEW("CREATE", POD(FRAC, OURS ONE_C)), false, FAIR_WEBHOOK_PATCHED, 200, 3, ALL,
     NULL, NULL, NULL},
    {"fraction with CUDA_VISIBLE_DEVICES", REVIEW("CREATE", POD(FRAC, OURS ONE_C)), true,
     FAIR_WEBHOOK_PATCHED, 200, 4,
     "NVIDIA_VISIBLE_DEVICES*,CUDA_VISIBLE_DEVICES*,CUDA_DEVICE_MEMORY_LIMIT*,CUDA_DEVICE_SM_"
     "LIMIT*",
     NULL, NULL, NULL},
    {"gpu-memory instead of a fraction",
     REVIEW("CREATE", POD("\"annotations\":{\"fairshare.dev/gpu-memory\":\"10Gi\"}", OURS ONE_C)),
     false, FAIR_WEBHOOK_PATCHED, 200, 3, ALL, NULL, NULL, NULL},
    {"empty fraction annotation",
     REVIEW("CREATE", POD("\"annotations\":{\"fairshare.dev/gpu-fraction\":\"\"}", OURS ONE_C)),
     false, FAIR_WEBHOOK_IGNORED, 200, 0, "-", NULL, NULL, NULL},
    {"user env present: theirs wins, the rest appended",
     REVIEW("CREATE",
            POD(FRAC, OURS "\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"A\",\"value\":"
                           "\"1\"},{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}]}]")),
     false, FAIR_WEBHOOK_PATCHED, 200, 2,
     "A,NVIDIA_VISIBLE_DEVICES,CUDA_DEVICE_MEMORY_LIMIT*,"
     "CUDA_DEVICE_SM_LIMIT*",
     NULL, NULL, NULL},
    {"user set everything: only the mark",
     REVIEW("CREATE",
            POD(FRAC, OURS "\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":"
                           "\"NVIDIA_VISIBLE_DEVICES\"},{\"name\":\"CUDA_DEVICE_MEMORY_LIMIT\"},"
                           "{\"name\":\"CUDA_DEVICE_SM_LIMIT\"}]}]")),
     false, FAIR_WEBHOOK_UNCHANGED, 200, 0,
     "NVIDIA_VISIBLE_DEVICES,CUDA_DEVICE_MEMORY_LIMIT,CUDA_DEVICE_SM_LIMIT", NULL, NULL, NULL},
    {"several containers and an init container",
     REVIEW("CREATE",
            POD(FRAC, OURS "\"initContainers\":[{\"name\":\"i\",\"env\":null}],"
                           "\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"env\":[]}]")),
     false, FAIR_WEBHOOK_PATCHED, 200, 9, ALL, ALL, ALL, NULL},
    {"another scheduler", REVIEW("CREATE", POD(FRAC, "\"schedulerName\":\"other\"," ONE_C)), false,
     FAIR_WEBHOOK_IGNORED, 200, 0, "-", NULL, NULL, NULL},
    {"no schedulerName", REVIEW("CREATE", POD(FRAC, ONE_C)), false, FAIR_WEBHOOK_IGNORED, 200, 0,
     "-", NULL, NULL, NULL},
    {"an UPDATE", REVIEW("UPDATE", POD(FRAC, OURS ONE_C)), false, FAIR_WEBHOOK_IGNORED, 200, 0, "-",
     NULL, NULL, NULL},
    {"bad pod: containers not a list", REVIEW("CREATE", POD(FRAC, OURS "\"containers\":{}")), false,
     FAIR_WEBHOOK_BAD_OBJECT, 200, 0, NULL, NULL, NULL, "spec.containers is not a list"},
    {"bad pod: env not a list",
     REVIEW("CREATE", POD(FRAC, OURS "\"containers\":[{\"name\":\"a\",\"env\":\"x\"}]")), false,
     FAIR_WEBHOOK_BAD_OBJECT, 200, 0, NULL, NULL, NULL, "spec.containers[0].env is not a list"},
    {"bad pod: no containers", REVIEW("CREATE", POD(FRAC, OURS "\"x\":1")), false,
     FAIR_WEBHOOK_BAD_OBJECT, 200, 0, NULL, NULL, NULL, "spec.containers is missing"},
    {"bad pod: object not an object", REVIEW("CREATE", "[]"), false, FAIR_WEBHOOK_BAD_OBJECT, 200,
     0, NULL, NULL, NULL, "not a pod"},
    {"not JSON", "{\"apiVersion\":", false, FAIR_WEBHOOK_MALFORMED, 400, 0, NULL, NULL, NULL,
     "not JSON"},
    {"duplicate keys", "{\"request\":{\"uid\":\"a\",\"uid\":\"b\"}}", false, FAIR_WEBHOOK_MALFORMED,
     400, 0, NULL, NULL, NULL, "not JSON"},
    {"no uid",
     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}", false,
     FAIR_WEBHOOK_MALFORMED, 400, 0, NULL, NULL, NULL, "request.uid"},
    {"v1beta1",
     "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{"
     "\"uid\":\"u\"}}",
     false, FAIR_WEBHOOK_MALFORMED, 400, 0, NULL, NULL, NULL, "admission.k8s.io/v1"},
};

static void run_row(const struct row *r)
{
    struct fair_webhook_options o = {.scheduler_name = "fairshare",
                                     .cuda_visible_devices = r->cuda};
    struct fair_buf out;
    struct fair_webhook_result res;
    fair_buf_init(&out, 0);
    print_message("row: %s\n", r->name);
    assert_int_equal(fair_webhook_review(&o, r->review, strlen(r->review), &out, &res), 0);
    assert_int_equal(res.outcome, r->outcome);
    assert_int_equal(res.status, r->status);
    assert_int_equal(res.env_added, r->added);
    if (r->message && !strstr(res.message, r->message))
        fail_msg("message \"%s\" lacks \"%s\"", res.message, r->message);
    json_t *ans = json_loadb(fair_buf_str(&out), out.len, 0, NULL);
    assert_non_null(ans);
    assert_string_equal(json_string_value(json_object_get(ans, "apiVersion")),
                        "admission.k8s.io/v1");
    assert_string_equal(json_string_value(json_object_get(ans, "kind")), "AdmissionReview");
    const json_t *resp = json_object_get(ans, "response");
    assert_true(json_is_object(resp));
    json_t *patch = answer_patch(ans);
    if (r->status == 400) {
        assert_true(json_is_false(json_object_get(resp, "allowed")));
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(resp, "status"), "code")), 400);
        assert_null(patch);
    } else {
        assert_string_equal(json_string_value(json_object_get(resp, "uid")), "u-1");
        assert_true(json_is_true(json_object_get(resp, "allowed")));
        if (r->outcome == FAIR_WEBHOOK_BAD_OBJECT)
            assert_true(json_array_size(json_object_get(resp, "warnings")) == 1);
        if (r->outcome == FAIR_WEBHOOK_IGNORED || r->outcome == FAIR_WEBHOOK_BAD_OBJECT) {
            assert_null(patch);
        } else {
            /* The mark is the last op; the env ops are checked below. */
            json_t *last = json_array_get(patch, json_array_size(patch) - 1);
            assert_string_equal(json_string_value(json_object_get(last, "path")),
                                "/metadata/annotations/fairshare.dev~1gpu-env");
            assert_string_equal(json_string_value(json_object_get(last, "value")), "webhook");
        }
        json_t *review = json_loads(r->review, 0, NULL);
        const json_t *pod = json_object_get(json_object_get(review, "request"), "object");
        char got[512];
        json_t *empty = json_array();
        const json_t *p = patch ? patch : empty;
        if (r->env0) {
            env_after(pod, p, "containers", 0, got, sizeof got);
            assert_string_equal(got, r->env0);
        }
        if (r->env1) {
            env_after(pod, p, "containers", 1, got, sizeof got);
            assert_string_equal(got, r->env1);
        }
        if (r->init0) {
            env_after(pod, p, "initContainers", 0, got, sizeof got);
            assert_string_equal(got, r->init0);
        }
        json_decref(empty);
        json_decref(review);
    }
    json_decref(patch);
    json_decref(ans);
    fair_buf_release(&out);
}

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        run_row(&rows[i]);
}

/* The downward-API paths name the annotations the controller writes. */
static void test_field_paths(void **state)
{
    (void)state;
    const char *rv = REVIEW("CREATE", POD(FRAC, OURS ONE_C));
    struct fair_webhook_options o = {.cuda_visible_devices = true}; /* default scheduler name */
    struct fair_buf out;
    struct fair_webhook_result res;
    fair_buf_init(&out, 0);
    assert_int_equal(fair_webhook_review(&o, rv, strlen(rv), &out, &res), 0);
    assert_int_equal(res.outcome, FAIR_WEBHOOK_PATCHED);
    json_t *ans = json_loadb(fair_buf_str(&out), out.len, 0, NULL);
    json_t *patch = answer_patch(ans);
    const json_t *env = json_object_get(json_array_get(patch, 0), "value");
    static const char *const want[][2] = {
        {"NVIDIA_VISIBLE_DEVICES", "metadata.annotations['fairshare.dev/gpu-devices']"},
        {"CUDA_VISIBLE_DEVICES", "metadata.annotations['fairshare.dev/gpu-devices']"},
        {"CUDA_DEVICE_MEMORY_LIMIT", "metadata.annotations['fairshare.dev/gpu-memory-limit']"},
        {"CUDA_DEVICE_SM_LIMIT", "metadata.annotations['fairshare.dev/gpu-sm-limit']"},
    };
    assert_int_equal(json_array_size(env), 4);
    for (size_t i = 0; i < 4; i++) {
        const json_t *e = json_array_get(env, i);
        assert_string_equal(json_string_value(json_object_get(e, "name")), want[i][0]);
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_object_get(e, "valueFrom"), "fieldRef"), "fieldPath")),
            want[i][1]);
    }
    json_decref(patch);
    json_decref(ans);
    fair_buf_release(&out);
}

/* Size and depth limits answer 400, and so does a body of nested brackets
 * inside a string (which is not nesting) only when it is not JSON. */
static void test_limits(void **state)
{
    (void)state;
    struct fair_webhook_options o = {0};
    struct fair_buf out;
    struct fair_webhook_result res;
    fair_buf_init(&out, 0);
    char deep[4096];
    size_t n = 0;
    for (int i = 0; i < 65; i++)
        deep[n++] = '[';
    for (int i = 0; i < 65; i++)
        deep[n++] = ']';
    assert_int_equal(fair_webhook_review(&o, deep, n, &out, &res), 0);
    assert_int_equal(res.status, 400);
    assert_non_null(strstr(res.message, "deeper than 64"));
    /* 64 levels of brackets inside a string are just text */
    fair_buf_reset(&out);
    char str[512];
    int m = snprintf(str, sizeof str,
                     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                     "\"request\":{\"uid\":\"u\",\"operation\":\"DELETE\",\"x\":\"%.*s\"}}",
                     100,
                     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
    assert_int_equal(fair_webhook_review(&o, str, (size_t)m, &out, &res), 0);
    assert_int_equal(res.status, 200);
    assert_int_equal(res.outcome, FAIR_WEBHOOK_IGNORED);
    fair_buf_reset(&out);
    assert_int_equal(fair_webhook_review(&o, str, FAIR_WEBHOOK_MAX_BODY + 1, &out, &res), 0);
    assert_int_equal(res.status, 400);
    /* a container list over the cap is a bad object, not a crash */
    struct fair_buf big;
    fair_buf_init(&big, 0);
    fair_buf_appends(&big,
                     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                     "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},\"resource\":{"
                     "\"resource\":\"pods\"},\"operation\":\"CREATE\",\"object\":"
                     "{\"metadata\":{\"name\":\"p\"," FRAC "},\"spec\":{" OURS "\"containers\":[");
    for (int i = 0; i <= FAIR_WEBHOOK_MAX_CONTAINERS; i++)
        fair_buf_appendf(&big, "%s{\"name\":\"c%d\"}", i ? "," : "", i);
    fair_buf_appends(&big, "]}}}}");
    fair_buf_reset(&out);
    assert_int_equal(fair_webhook_review(&o, fair_buf_str(&big), big.len, &out, &res), 0);
    assert_int_equal(res.outcome, FAIR_WEBHOOK_BAD_OBJECT);
    assert_non_null(strstr(res.message, "more than 256"));
    fair_buf_release(&big);
    fair_buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_field_paths),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
