/* Decoding of spec.usageHalfLife, spec.budget and spec.schedule
 * (kube/timequota.c) through the Project and Queue decoders: good values,
 * defaults, and each bad value as a problem naming the field. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kube/decode.h"

static struct fair_kproject *project(const char *spec)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":%s}", spec);
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    if (!o)
        fail_msg("bad test JSON: %s: %s", je.text, buf);
    struct fair_kproject *p = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_kproject_decode(o, &p, &err), 0);
    json_decref(o);
    return p;
}

static void test_good(void **state)
{
    (void)state;
    struct fair_kproject *p = project(
        "{\"guaranteed\":{\"gpu\":4},\"usageHalfLife\":\"168h\","
        "\"budget\":{\"gpuHours\":1500,\"period\":\"week\",\"action\":\"block\"},"
        "\"schedule\":[{\"name\":\"day\",\"days\":[\"Mon\",\"Fri\"],\"start\":\"08:00\","
        "\"end\":\"20:00\",\"timeZone\":\"Europe/Berlin\",\"guaranteed\":{\"gpu\":16},"
        "\"limit\":{\"cpu\":\"500m\"},\"overQuotaWeight\":3},"
        "{\"start\":\"22:00\",\"end\":\"06:00\"},{\"start\":\"00:00\",\"end\":\"24:00\"}]}");
    assert_null(p->problem);
    assert_non_null(p->time);
    const struct fair_ktime *t = p->time;
    assert_int_equal(t->usage_half_life_ms, 168 * 3600000LL);
    assert_int_equal(t->budget_milli_hours, 1500000);
    assert_int_equal(t->budget_period, FAIR_KBUDGET_WEEK);
    assert_int_equal(t->budget_action, FAIR_KBUDGET_BLOCK);
    assert_int_equal(t->nwindows, 3);
    assert_string_equal(t->windows[0].name, "day");
    assert_int_equal(t->windows[0].days, (1 << 1) | (1 << 5));
    assert_int_equal(t->windows[0].start_min, 480);
    assert_int_equal(t->windows[0].end_min, 1200);
    assert_string_equal(t->windows[0].time_zone, "Europe/Berlin");
    assert_int_equal(t->windows[0].g_set, 1 << FAIR_RES_GPU);
    assert_int_equal(t->windows[0].guaranteed.v[FAIR_RES_GPU], 16000);
    assert_int_equal(t->windows[0].l_set, 1 << FAIR_RES_CPU);
    assert_int_equal(t->windows[0].limit.v[FAIR_RES_CPU], 500);
    assert_int_equal(t->windows[0].weight, 3);
    assert_string_equal(t->windows[1].name, "window-1");
    assert_int_equal(t->windows[1].days, 0x7f);
    assert_int_equal(t->windows[1].end_min, 360);
    assert_string_equal(t->windows[1].time_zone, "");
    assert_int_equal(t->windows[2].end_min, 1440);
    fair_kproject_free(p);
    /* None of the fields: no struct; defaults of budget.action. */
    p = project("{\"guaranteed\":{\"gpu\":4}}");
    assert_null(p->time);
    fair_kproject_free(p);
    p = project("{\"budget\":{\"gpuHours\":\"12.5\",\"period\":\"day\"},\"usageHalfLife\":\"0\"}");
    assert_null(p->problem);
    assert_int_equal(p->time->budget_milli_hours, 12500);
    assert_int_equal(p->time->budget_action, FAIR_KBUDGET_OVER_QUOTA_ONLY);
    assert_int_equal(p->time->usage_half_life_ms, 0);
    fair_kproject_free(p);
}

static void test_bad(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *want;
    } tab[] = {
        {"{\"usageHalfLife\":\"7 days\"}", "spec.usageHalfLife"},
        {"{\"usageHalfLife\":\"10s\"}", "spec.usageHalfLife: want 0 (off) or from 1m"},
        {"{\"usageHalfLife\":5}", "spec.usageHalfLife: want a duration"},
        {"{\"budget\":{\"gpuHours\":-1,\"period\":\"day\"}}", "spec.budget.gpuHours"},
        {"{\"budget\":{\"gpuHours\":10,\"period\":\"year\"}}", "spec.budget.period"},
        {"{\"budget\":{\"gpuHours\":10}}", "spec.budget.period"},
        {"{\"budget\":{\"gpuHours\":10,\"period\":\"day\",\"action\":\"stop\"}}",
         "spec.budget.action"},
        {"{\"budget\":7}", "spec.budget: want"},
        {"{\"schedule\":{}}", "spec.schedule: want a list"},
        {"{\"schedule\":[{\"start\":\"8:00\",\"end\":\"20:00\"}]}", "spec.schedule[0].start"},
        {"{\"schedule\":[{\"start\":\"08:00\",\"end\":\"24:01\"}]}", "spec.schedule[0].end"},
        {"{\"schedule\":[{\"start\":\"24:00\",\"end\":\"08:00\"}]}", "spec.schedule[0].start"},
        {"{\"schedule\":[{\"start\":\"08:00\",\"end\":\"08:00\"}]}", "same time"},
        {"{\"schedule\":[{\"start\":\"08:00\",\"end\":\"09:00\",\"days\":[\"Monday\"]}]}",
         "spec.schedule[0].days[0]"},
        {"{\"schedule\":[{\"start\":\"08:00\",\"end\":\"09:00\",\"days\":[]}]}",
         "spec.schedule[0].days"},
        {"{\"schedule\":[{\"start\":\"08:00\",\"end\":\"09:00\",\"guaranteed\":{\"tpu\":1}}]}",
         "spec.schedule[0].guaranteed.tpu"},
        {"{\"schedule\":[{\"start\":\"08:00\",\"end\":\"09:00\",\"limit\":{\"gpu\":\"-1\"}}]}",
         "spec.schedule[0].limit.gpu"},
        {"{\"schedule\":[{\"start\":\"08:00\",\"end\":\"09:00\",\"overQuotaWeight\":0}]}",
         "spec.schedule[0].overQuotaWeight"},
        {"{\"schedule\":[{\"name\":\"a\",\"start\":\"08:00\",\"end\":\"09:00\"},"
         "{\"name\":\"a\",\"start\":\"10:00\",\"end\":\"11:00\"}]}",
         "\"a\" is used twice"},
        {"{\"schedule\":[7]}", "spec.schedule[0]: want an object"},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        struct fair_kproject *p = project(tab[i].spec);
        if (!p->problem || !strstr(p->problem, tab[i].want))
            fail_msg("%s: problem \"%s\", want \"%s\"", tab[i].spec,
                     p->problem ? p->problem : "(none)", tab[i].want);
        fair_kproject_free(p);
    }
    /* 33 windows: too many. */
    char big[4096];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"schedule\":[");
    for (int i = 0; i < 33; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s{\"start\":\"01:00\",\"end\":\"02:00\"}",
                              i ? "," : "");
    snprintf(big + n, sizeof big - n, "]}");
    struct fair_kproject *p = project(big);
    assert_non_null(p->problem);
    assert_non_null(strstr(p->problem, "at most 32"));
    fair_kproject_free(p);
}

static void test_queue(void **state)
{
    (void)state;
    static const char *objs[] = {
        "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"project\":\"p\",\"schedule\":"
        "[{\"start\":\"08:00\",\"end\":\"20:00\",\"guaranteed\":{\"gpu\":2}}]}}",
        "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"project\":\"p\",\"budget\":"
        "{\"gpuHours\":1,\"period\":\"day\"},\"usageHalfLife\":\"1h\"}}",
    };
    for (int i = 0; i < 2; i++) {
        json_t *o = json_loads(objs[i], 0, NULL);
        struct fair_kqueue *q = NULL;
        struct fair_error err = {0};
        assert_int_equal(fair_kqueue_decode(o, &q, &err), 0);
        if (i == 0) {
            assert_null(q->problem);
            assert_int_equal(q->time->nwindows, 1);
            assert_int_equal(q->time->windows[0].guaranteed.v[FAIR_RES_GPU], 2000);
        } else {
            assert_non_null(strstr(q->problem, "spec.usageHalfLife: only a Project"));
            assert_non_null(strstr(q->problem, "spec.budget: only a Project"));
        }
        fair_kqueue_free(q);
        json_decref(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
