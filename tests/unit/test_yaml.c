/* YAML to JSON: scalar typing, documents, limits, errors with positions,
 * and every allocation failing in turn without a crash or a leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/yaml.h"

static json_t *parse_ok(const char *text)
{
    json_t *docs = NULL;
    struct fair_error err = {0};
    int rc = fair_yaml_parse("t.yaml", text, strlen(text), NULL, &docs, &err);
    if (rc)
        fail_msg("parse failed: %s", err.msg);
    return docs;
}

static void test_scalars_and_structure(void **state)
{
    (void)state;
    json_t *docs = parse_ok("apiVersion: fairshare.dev/v1alpha1\n"
                            "kind: Project\n"
                            "spec:\n"
                            "  guaranteed: {gpu: 2.5, cpu: \"8\", memory: 16Gi}\n"
                            "  overQuotaWeight: 2\n"
                            "  namespaces: [a, \"b\"]\n"
                            "  enabled: true\n"
                            "  nothing: ~\n"
                            "  octal: 010\n"
                            "---\n"
                            "kind: Queue\n");
    assert_int_equal(json_array_size(docs), 2);
    json_t *d = json_array_get(docs, 0);
    json_t *spec = json_object_get(d, "spec");
    assert_string_equal(json_string_value(json_object_get(json_object_get(spec, "guaranteed"), "gpu")),
                        "2.5");
    assert_string_equal(json_string_value(json_object_get(json_object_get(spec, "guaranteed"), "cpu")),
                        "8");
    assert_int_equal(json_integer_value(json_object_get(spec, "overQuotaWeight")), 2);
    assert_true(json_is_true(json_object_get(spec, "enabled")));
    assert_true(json_is_null(json_object_get(spec, "nothing")));
    assert_true(json_is_string(json_object_get(spec, "octal")));
    assert_int_equal(json_array_size(json_object_get(spec, "namespaces")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(docs, 1), "kind")),
                        "Queue");
    json_decref(docs);
}

static void expect_error(const char *text, const struct fair_yaml_limits *lim, int code,
                         const char *needle)
{
    json_t *docs = NULL;
    struct fair_error err = {0};
    int rc = fair_yaml_parse("bad.yaml", text, strlen(text), lim, &docs, &err);
    if (rc != code)
        fail_msg("\"%s\": rc %d, want %d (%s)", text, rc, code, err.msg);
    assert_null(docs);
    if (!strstr(err.msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_errors_and_limits(void **state)
{
    (void)state;
    expect_error("a: [1, 2\n", NULL, FAIR_EPARSE, "bad.yaml:");
    expect_error("a: &x 1\nb: *x\n", NULL, FAIR_EPARSE, "aliases");
    expect_error("? [a]\n: 1\n", NULL, FAIR_EPARSE, "keys must be scalars");
    struct fair_yaml_limits lim = {.max_depth = 3};
    expect_error("a: {b: {c: {d: 1}}}\n", &lim, FAIR_ERANGE, "deeper than 3");
    struct fair_yaml_limits small = {.max_bytes = 8};
    expect_error("a: 123456789\n", &small, FAIR_ERANGE, "larger than 8 bytes");
    struct fair_yaml_limits few = {.max_nodes = 4};
    expect_error("[1, 2, 3, 4, 5]\n", &few, FAIR_ERANGE, "more than 4 YAML nodes");
    struct fair_yaml_limits docs1 = {.max_docs = 1};
    expect_error("a: 1\n---\nb: 2\n", &docs1, FAIR_ERANGE, "more than 1 documents");

    json_t *docs = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_yaml_load_file("/nonexistent/x.yaml", NULL, &docs, &err), FAIR_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.yaml"));
}

static void test_allocation_failures(void **state)
{
    (void)state;
    const char *text = "a: {b: [1, 2, {c: d}]}\ne: f\n---\ng: [h]\n";
    json_set_alloc_funcs(fair_malloc, fair_free);
    int failures = 0;
    for (long n = 0; n < 500; n++) {
        fair_alloc_fail_after(n);
        json_t *docs = NULL;
        struct fair_error err = {0};
        int rc = fair_yaml_parse("t.yaml", text, strlen(text), NULL, &docs, &err);
        fair_alloc_fail_after(-1);
        if (rc == 0) {
            /* No failure was reached: the document must be complete. */
            assert_int_equal(json_array_size(docs), 2);
            json_decref(docs);
            break;
        }
        failures++;
        assert_null(docs);
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(failures > 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars_and_structure),
        cmocka_unit_test(test_errors_and_limits),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
