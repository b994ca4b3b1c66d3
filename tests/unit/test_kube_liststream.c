/* Unit tests of lib/kube/liststream.c: a List fed in every split gives,
 * for each item, kept text that parses to exactly what the filtered parser
 * makes of the whole item; skipped fields are never held (the peak buffer
 * stays small however large they are); an item over the cap is reported
 * oversized with its skeleton, and the items after it still arrive;
 * malformed and truncated lists fail with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/alloc.h"
#include "kube/decode.h"
#include "kube/jsonfilter.h"
#include "kube/liststream.h"

#define MAX_SEEN 16

/* What the callback saw. */
struct seen {
    size_t n;
    char *json[MAX_SEEN]; /* kept text, or NULL when oversized */
    char *skel[MAX_SEEN];
    size_t raw[MAX_SEEN];
    int stop_at; /* return 1 at this item (-1: never) */
};

static int on_item(const struct fair_klist_item *it, void *ctx)
{
    struct seen *s = ctx;
    assert_int_equal(it->index, s->n);
    assert_true(s->n < MAX_SEEN);
    s->json[s->n] = it->json ? strndup(it->json, it->len) : NULL;
    s->skel[s->n] = it->skeleton ? strndup(it->skeleton, it->skeleton_len) : NULL;
    assert_int_equal(it->oversized, it->json == NULL);
    s->raw[s->n] = it->raw_len;
    s->n++;
    return (int)s->n - 1 == s->stop_at ? 1 : 0;
}

static void seen_release(struct seen *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->json[i]);
        free(s->skel[i]);
    }
    memset(s, 0, sizeof *s);
}

static const char *pod_a =
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u-a\",\"resourceVersion\":\"7\","
    "\"labels\":{\"fairshare.dev/queue\":\"q\",\"other\":\"x\"},\"annotations\":{"
    "\"fairshare.dev/gang\":\"g\",\"big\":\"{\\\"x\\\":[1,2,\\\"]\\\"]}\"},\"managedFields\":[{"
    "\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}]},\"spec\":{\"schedulerName\":"
    "\"fairshare\",\"nodeName\":\"n1\",\"priority\":-5,\"containers\":[{\"name\":\"c\",\"env\":[{"
    "\"name\":\"A\",\"value\":\"B\\\\\"}],\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":"
    "\"1Gi\"},\"limits\":{\"nvidia.com/gpu\":\"2\"}}}],\"tolerations\":[{\"key\":\"k\","
    "\"operator\":\"Exists\"}],\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]},\"status\":{"
    "\"phase\":\"Running\",\"startTime\":\"2026-11-23T19:00:01Z\",\"conditions\":[{\"type\":"
    "\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null}]}}";
/* Escaped keys (\u0065 is 'e', \/ is '/'), numbers, literals, whitespace. */
static const char *pod_b =
    " { \"metadata\" : { \"name\" : \"b\" , \"uid\" : \"u-b\" , \"labels\" : { "
    "\"fairshare.dev\\/queue\" : \"q2\" } } , \"sp\\u0065c\" : { \"priority\" : 1500 , "
    "\"containers\" : [ ] , \"x\" : [ true , false , null , -0.0 , 1.5e3 ] } , \"status\" : { } "
    "} ";

static char *make_list(const char *const *items, size_t n, int meta_last)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    const char *meta = "\"metadata\":{\"resourceVersion\":\"42\",\"continue\":\"tok\","
                       "\"remainingItemCount\":3},";
    fprintf(f, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",%s\"items\":[", meta_last ? "" : meta);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", items[i]);
    fprintf(f, "]%s%.*s}\n", meta_last ? "," : "", (int)strlen(meta) - 1, meta_last ? meta : "");
    fclose(f);
    return out;
}

/* Feeds doc in chunks of `step` bytes (0: all at once). */
static int feed_all(const char *doc, size_t step, const struct fair_jfield *filter, size_t max_item,
                    struct seen *s, char **meta_out, struct fair_error *err)
{
    struct fair_kliststream *ls = NULL;
    assert_int_equal(fair_kliststream_new(filter, fair_kskeleton_filter, max_item, on_item, s, &ls),
                     0);
    size_t len = strlen(doc);
    int rc = 0;
    for (size_t off = 0; off < len && !rc;) {
        size_t n = step && len - off > step ? step : len - off;
        rc = fair_kliststream_feed(ls, doc + off, n, err);
        off += n;
    }
    const char *meta = NULL;
    size_t mlen = 0;
    if (!rc)
        rc = fair_kliststream_finish(ls, &meta, &mlen, err);
    if (meta_out)
        *meta_out = rc ? NULL : strndup(meta, mlen);
    fair_kliststream_free(ls);
    return rc;
}

static json_t *parse(const char *s, const struct fair_jfield *filter)
{
    json_t *j = NULL;
    struct fair_error err = {0};
    if (fair_json_parse_filtered(s, strlen(s), filter, &j, &err))
        fail_msg("cannot parse %s: %s", s, err.msg);
    return j;
}

static void assert_json_equal(json_t *a, json_t *b)
{
    if (!json_equal(a, b)) {
        char *x = json_dumps(a, JSON_SORT_KEYS), *y = json_dumps(b, JSON_SORT_KEYS);
        fail_msg("%s\n!=\n%s", x, y);
    }
}

static void test_items_equal_filtered_parse(void **state)
{
    (void)state;
    const char *items[] = {pod_a, pod_b, "{}", pod_a};
    const struct fair_jfield *filters[] = {fair_ktype_pod.filter, NULL};
    for (int meta_last = 0; meta_last < 2; meta_last++) {
        char *doc = make_list(items, 4, meta_last);
        for (size_t fi = 0; fi < 2; fi++) {
            size_t steps[] = {0, 1, 2, 3, 7, 64};
            for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++) {
                struct seen s = {.stop_at = -1};
                char *meta = NULL;
                struct fair_error err = {0};
                if (feed_all(doc, steps[si], filters[fi], 0, &s, &meta, &err))
                    fail_msg("step %zu: %s", steps[si], err.msg);
                assert_int_equal(s.n, 4);
                for (size_t i = 0; i < 4; i++) {
                    assert_non_null(s.json[i]);
                    json_t *want = parse(items[i], filters[fi]);
                    json_t *got = parse(s.json[i], filters[fi]);
                    assert_json_equal(got, want);
                    json_decref(want);
                    json_decref(got);
                    /* The skeleton names the object. */
                    json_t *sk = parse(s.skel[i], NULL);
                    json_t *whole = parse(items[i], fair_kskeleton_filter);
                    assert_json_equal(sk, whole);
                    json_decref(sk);
                    json_decref(whole);
                }
                /* raw_len covers the item's bytes (pod_b's outer blanks
                 * are separators, not item bytes). */
                assert_int_equal(s.raw[0], strlen(pod_a));
                assert_int_equal(s.raw[1], strlen(pod_b) - 2);
                json_t *m = parse(meta, NULL);
                json_t *mwant = json_pack("{s:s,s:s,s:{s:s,s:s,s:i}}", "kind", "PodList",
                                          "apiVersion", "v1", "metadata", "resourceVersion", "42",
                                          "continue", "tok", "remainingItemCount", 3);
                assert_json_equal(m, mwant);
                json_decref(m);
                json_decref(mwant);
                free(meta);
                seen_release(&s);
            }
        }
        free(doc);
    }
}

/* The pod filter reaches spec through an escaped key, and skipped parts
 * are gone from the kept text. */
static void test_kept_text_is_compact(void **state)
{
    (void)state;
    const char *items[] = {pod_a, pod_b};
    char *doc = make_list(items, 2, 0);
    struct seen s = {.stop_at = -1};
    assert_int_equal(feed_all(doc, 5, fair_ktype_pod.filter, 0, &s, NULL, NULL), 0);
    assert_null(strstr(s.json[0], "managedFields"));
    assert_null(strstr(s.json[0], "env"));
    /* spec.volumes stays for its claims, without the other sources */
    assert_null(strstr(s.json[0], "emptyDir"));
    assert_null(strstr(s.json[0], "\"big\""));
    assert_null(strstr(s.json[1], "null"));
    json_t *b = parse(s.json[1], fair_ktype_pod.filter);
    struct fair_kpod *p = NULL;
    assert_int_equal(fair_kpod_decode(b, &p, NULL), 0);
    assert_string_equal(p->queue, "q2");
    assert_int_equal(p->priority, 1500);
    fair_kpod_free(p);
    json_decref(b);
    seen_release(&s);
    free(doc);
}

/* 4 MiB of skipped env and annotations: the stream holds a few hundred
 * bytes at its peak, not the item. */
static void test_skipped_fields_never_held(void **state)
{
    (void)state;
    size_t big = (size_t)4 << 20;
    char *val = malloc(big + 1);
    memset(val, 'x', big);
    /* Escaped quotes and backslashes all along, as in real env values. */
    for (size_t i = 0; i + 2 < big; i += 1000) {
        val[i] = '\\';
        val[i + 1] = (i / 1000) % 2 ? '"' : '\\';
    }
    val[big] = '\0';
    size_t n = 2 * big + 1024;
    char *doc = malloc(n);
    snprintf(doc, n,
             "{\"kind\":\"PodList\",\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"p\","
             "\"uid\":\"u\",\"annotations\":{\"huge\":\"%s\"}},\"spec\":{\"containers\":[{"
             "\"env\":[{\"name\":\"E\",\"value\":\"%s\"}],\"resources\":{}}]}}]}",
             val, val);
    json_t *ref = json_loads(doc, 0, NULL);
    assert_non_null(ref); /* the test document itself is valid JSON */
    json_decref(ref);
    struct fair_kliststream *ls = NULL;
    struct seen s = {.stop_at = -1};
    assert_int_equal(
        fair_kliststream_new(fair_ktype_pod.filter, fair_kskeleton_filter, 0, on_item, &s, &ls), 0);
    size_t len = strlen(doc);
    for (size_t off = 0; off < len; off += 16384)
        assert_int_equal(
            fair_kliststream_feed(ls, doc + off, len - off < 16384 ? len - off : 16384, NULL), 0);
    assert_int_equal(fair_kliststream_finish(ls, NULL, NULL, NULL), 0);
    assert_int_equal(s.n, 1);
    assert_non_null(s.json[0]);
    assert_true(fair_kliststream_peak(ls) <= 4096);
    fair_kliststream_free(ls);
    seen_release(&s);
    free(doc);
    free(val);
}

/* An item whose kept part passes the cap is reported oversized with its
 * skeleton; the next item arrives whole. The same for kept nesting past
 * the depth limit; deep nesting in skipped parts is fine. */
static void test_oversized_items(void **state)
{
    (void)state;
    char big[3000];
    memset(big, 'g', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char first[4096], deep[1024], deep_skipped[1024];
    snprintf(first, sizeof first,
             "{\"metadata\":{\"name\":\"big\",\"namespace\":\"t\",\"uid\":\"u1\","
             "\"annotations\":{\"fairshare.dev/gang\":\"%s\"}},\"spec\":{\"nodeName\":\"n7\"},"
             "\"status\":{\"phase\":\"Running\"}}",
             big);
    int o = snprintf(deep, sizeof deep,
                     "{\"metadata\":{\"name\":\"deep\",\"uid\":\"u3\"},"
                     "\"spec\":{\"nodeSelector\":");
    for (int i = 0; i < 70; i++)
        o += snprintf(deep + o, sizeof deep - (size_t)o, "[");
    for (int i = 0; i < 70; i++)
        o += snprintf(deep + o, sizeof deep - (size_t)o, "]");
    snprintf(deep + o, sizeof deep - (size_t)o, "}}");
    o = snprintf(deep_skipped, sizeof deep_skipped, "{\"metadata\":{\"name\":\"ok\"},\"x\":");
    for (int i = 0; i < 200; i++)
        o += snprintf(deep_skipped + o, sizeof deep_skipped - (size_t)o, "[");
    for (int i = 0; i < 200; i++)
        o += snprintf(deep_skipped + o, sizeof deep_skipped - (size_t)o, "]");
    snprintf(deep_skipped + o, sizeof deep_skipped - (size_t)o, "}");
    const char *items[] = {first, pod_a, deep, deep_skipped};
    char *doc = make_list(items, 4, 0);
    struct seen s = {.stop_at = -1};
    struct fair_error err = {0};
    if (feed_all(doc, 3, fair_ktype_pod.filter, 1024, &s, NULL, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.n, 4);
    assert_null(s.json[0]);
    json_t *sk = parse(s.skel[0], NULL);
    struct fair_kskeleton id;
    assert_int_equal(fair_kskeleton_decode(sk, &id), 0);
    assert_string_equal(id.name, "big");
    assert_string_equal(id.namespace_, "t");
    assert_string_equal(id.uid, "u1");
    assert_string_equal(id.node_name, "n7");
    assert_string_equal(id.phase, "Running");
    assert_null(id.scheduler_name);
    fair_kskeleton_release(&id);
    json_decref(sk);
    assert_non_null(s.json[1]);
    assert_null(s.json[2]);
    assert_non_null(strstr(s.skel[2], "u3"));
    assert_non_null(s.json[3]);
    seen_release(&s);
    free(doc);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",
        "[]",
        "{\"items\":[{]}",
        "{\"items\":[{\"a\" 1}]}",
        "{\"items\":[{\"a\":1,}]}",
        "{\"items\":[1,]}",
        "{\"items\":[{\"a\":\"unterminated}]}",
        "{\"items\":[{\"a\":1}]",
        "{\"items\":[{\"a\":1}]}x",
        "{\"items\":[{\"a\":1}]}{}",
        "{\"metadata\":{\"a\":#}}",
        "{\"kind\":\"x\" \"items\":[]}",
        "{\"items\":[{}],\"metadata\":{},\"it\\u0065ms\":[{}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (size_t step = 0; step < 3; step++) {
            struct seen s = {.stop_at = -1};
            struct fair_error err = {0};
            int rc = feed_all(bad[i], step, fair_ktype_pod.filter, 0, &s, NULL, &err);
            if (rc != FAIR_EPARSE)
                fail_msg("doc %zu (%s) step %zu: rc %d", i, bad[i], step, rc);
            assert_non_null(strstr(err.msg, "list: "));
            seen_release(&s);
        }
    }
    /* The list's own fields are capped. */
    size_t n = FAIR_KLIST_MAX_META + 100;
    char *doc = malloc(n + 64);
    int o = snprintf(doc, n + 64, "{\"metadata\":{\"continue\":\"");
    memset(doc + o, 'c', n);
    snprintf(doc + o + n, 64, "\"},\"items\":[]}");
    struct seen s = {.stop_at = -1};
    assert_int_equal(feed_all(doc, 0, NULL, 0, &s, NULL, NULL), FAIR_ERANGE);
    free(doc);
}

static void test_empty_and_null_items(void **state)
{
    (void)state;
    const char *docs[] = {"{\"kind\":\"PodList\",\"items\":[]}",
                          "{\"kind\":\"PodList\",\"items\":null,\"metadata\":{}}",
                          "{\"kind\":\"PodList\"}", "{}"};
    for (size_t i = 0; i < 4; i++) {
        struct seen s = {.stop_at = -1};
        char *meta = NULL;
        assert_int_equal(feed_all(docs[i], 1, fair_ktype_pod.filter, 0, &s, &meta, NULL), 0);
        assert_int_equal(s.n, 0);
        assert_null(strstr(meta, "items"));
        free(meta);
    }
}

static void test_callback_stops(void **state)
{
    (void)state;
    const char *items[] = {pod_a, pod_a, pod_a};
    char *doc = make_list(items, 3, 0);
    struct seen s = {.stop_at = 1};
    struct fair_error err = {0};
    assert_int_equal(feed_all(doc, 11, fair_ktype_pod.filter, 0, &s, NULL, &err), 1);
    assert_int_equal(s.n, 2);
    seen_release(&s);
    free(doc);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *items[] = {pod_a, pod_b};
    char *doc = make_list(items, 2, 0);
    for (long n = 0; n < 30; n++) {
        struct seen s = {.stop_at = -1};
        struct fair_kliststream *ls = NULL;
        fair_alloc_fail_after(n);
        int rc =
            fair_kliststream_new(fair_ktype_pod.filter, fair_kskeleton_filter, 0, on_item, &s, &ls);
        if (!rc) {
            rc = fair_kliststream_feed(ls, doc, strlen(doc), NULL);
            if (!rc)
                rc = fair_kliststream_finish(ls, NULL, NULL, NULL);
        }
        fair_alloc_fail_after(-1);
        assert_true(rc == 0 || rc == FAIR_ENOMEM);
        fair_kliststream_free(ls);
        seen_release(&s);
    }
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_items_equal_filtered_parse),
        cmocka_unit_test(test_kept_text_is_compact),
        cmocka_unit_test(test_skipped_fields_never_held),
        cmocka_unit_test(test_oversized_items),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_empty_and_null_items),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
