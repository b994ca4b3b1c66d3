/* fairsharectl queues and fairsharectl why (the kubectl plugin's reads)
 * against the fake API server over real HTTPS: Projects and Queues whose
 * status is written through the status subresource, as the controller
 * does, and pods with a PodScheduled condition and Events. Checks the
 * tree and its figures, -n, -o json and -o yaml (the YAML read back equals
 * the JSON), the reason and queue of a waiting pod, its place in the
 * queue, and the errors (no such pod, bad flags, unknown context). */
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

#include "helper_fakekube.h"
#include "helper_run.h"

#include "base/buf.h"
#include "base/yaml.h"

static struct fair_fake fake;

static void req(const char *method, const char *path, const char *body, long want)
{
    long status = 0;
    char *resp = NULL;
    assert_int_equal(
        fair_fake_request_ct(&fake, method, path,
                             strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : NULL,
                             body, &status, &resp),
        0);
    if (status != want)
        fail_msg("%s %s: %ld, want %ld: %s", method, path, status, want, resp ? resp : "");
    free(resp);
}

static void project(const char *name, const char *ns, const char *status)
{
    char body[1024], path[256];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":"
             "{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],\"defaultQueue\":\"%s-train\","
             "\"guaranteed\":{\"gpu\":8}}}",
             name, ns, name);
    req("POST", "/apis/fairshare.dev/v1alpha1/projects", body, 201);
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s/status", name);
    req("PATCH", path, status, 200);
}

static void queue(const char *name, const char *proj, const char *status)
{
    char body[1024], path[256];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":"
             "{\"name\":\"%s\"},\"spec\":{\"project\":\"%s\",\"overQuotaWeight\":2}}",
             name, proj);
    req("POST", "/apis/fairshare.dev/v1alpha1/queues", body, 201);
    if (status) {
        snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s/status", name);
        req("PATCH", path, status, 200);
    }
}

static void pod(const char *ns, const char *name, const char *queue_label)
{
    char body[1024], path[256], labels[160] = "";
    if (queue_label)
        snprintf(labels, sizeof labels, ",\"labels\":{\"fairshare.dev/queue\":\"%s\"}",
                 queue_label);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"%s},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"containers\":[{\"name\":\"c\","
             "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
             name, labels);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    req("POST", path, body, 201);
}

static int setup(void **state)
{
    (void)state;
    struct fair_fake_opts o = {.nodes = 1};
    assert_int_equal(fair_fake_start(&fake, &o), 0);
    assert_int_equal(fair_fake_create_namespace(&fake, "team-a"), 0);
    assert_int_equal(fair_fake_create_namespace(&fake, "team-b"), 0);
    project("team-a", "team-a",
            "{\"status\":{\"guaranteed\":{\"gpu\":\"8\"},\"fairShare\":{\"gpu\":\"9.5\"},"
            "\"allocated\":{\"gpu\":\"9.5\"},\"borrowed\":{\"gpu\":\"1.5\"},\"lent\":{\"gpu\":"
            "\"0\"},\"pending\":{\"pods\":2,\"resources\":{\"gpu\":\"3\"}}}}");
    project("team-b", "team-b",
            "{\"status\":{\"guaranteed\":{\"gpu\":\"8\"},\"fairShare\":{\"gpu\":\"6.5\"},"
            "\"allocated\":{\"gpu\":\"6.5\"},\"borrowed\":{\"gpu\":\"0\"},\"lent\":{\"gpu\":"
            "\"1.5\"},\"pending\":{\"pods\":0}}}");
    queue("team-a-train", "team-a",
          "{\"status\":{\"guaranteed\":{\"gpu\":\"6\"},\"fairShare\":{\"gpu\":\"7.5\"},"
          "\"allocated\":{\"gpu\":\"7.5\"},\"borrowed\":{\"gpu\":\"1.5\"},\"lent\":{\"gpu\":"
          "\"0\"},\"pending\":{\"pods\":2,\"resources\":{\"gpu\":\"3\"}},\"conditions\":[{"
          "\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Accepted\",\"message\":\"ok\","
          "\"lastTransitionTime\":\"2026-11-26T10:00:00Z\"}]}}");
    queue("team-a-dev", "team-a",
          "{\"status\":{\"guaranteed\":{\"gpu\":\"2\"},\"fairShare\":{\"gpu\":\"2\"},"
          "\"allocated\":{\"gpu\":\"2\"},\"borrowed\":{\"gpu\":\"0\"},\"lent\":{\"gpu\":\"0\"},"
          "\"pending\":{\"pods\":0}}}");
    queue("team-b-train", "team-b", NULL); /* no status yet */
    queue("orphan", "ghost", NULL);
    /* Two waiting pods of team-a-train, a second apart (creation times
     * have second precision): the second has no label, so it goes to its
     * project's defaultQueue. */
    pod("team-a", "first", "team-a-train");
    sleep(1);
    pod("team-a", "second", NULL);
    req("PATCH", "/api/v1/namespaces/team-a/pods/second/status",
        "{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
        "\"reason\":\"Unschedulable\",\"message\":\"at fair share: queue team-a-train uses 7.5 "
        "GPUs, its fair share\"}]}}",
        200);
    req("POST", "/api/v1/namespaces/team-a/events",
        "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"second.1\"},"
        "\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"team-a\",\"name\":\"second\"},"
        "\"type\":\"Warning\",\"reason\":\"FailedScheduling\",\"message\":\"at fair share\","
        "\"lastTimestamp\":\"2026-11-26T10:00:01Z\"}",
        201);
    req("POST", "/api/v1/namespaces/team-a/events",
        "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"first.1\"},"
        "\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"team-a\",\"name\":\"first\"},"
        "\"type\":\"Warning\",\"reason\":\"Other\",\"message\":\"not about second\","
        "\"lastTimestamp\":\"2026-11-26T10:00:02Z\"}",
        201);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fair_fake_release(&fake);
    return 0;
}

static const char *ctl(void)
{
    return FAIR_BIN_DIR "/fairsharectl";
}

/* Runs fairsharectl with args then --kubeconfig of the fake server. */
static int run(const char *const *args, struct fair_buf *out, struct fair_buf *err)
{
    const char *all[24];
    size_t n = 0;
    for (; args[n] && n < 20; n++)
        all[n] = args[n];
    all[n++] = "--kubeconfig";
    all[n++] = fake.kubeconfig;
    all[n] = NULL;
    return fair_test_run(fake.dir, ctl(), all, out, err);
}

/* The line of out that starts with prefix (copied into line), or fails. */
static void line_of(const char *out, const char *prefix, char *line, size_t n)
{
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            size_t len = strcspn(p, "\n");
            snprintf(line, n, "%.*s", (int)len, p);
            return;
        }
    }
    fail_msg("no line starting with \"%s\" in:\n%s", prefix, out);
}

/* The whitespace-separated words after the name. */
static void expect_row(const char *out, const char *prefix, const char *figures)
{
    char line[512], words[512] = "";
    line_of(out, prefix, line, sizeof line);
    const char *p = line + strlen(prefix);
    size_t len = 0;
    while (*p) {
        p += strspn(p, " ");
        size_t w = strcspn(p, " ");
        if (w)
            len += (size_t)snprintf(words + len, sizeof words - len, "%s%.*s", len ? " " : "",
                                    (int)w, p);
        p += w;
    }
    if (strcmp(words, figures) != 0)
        fail_msg("row %s: \"%s\", want \"%s\"", prefix, words, figures);
}

static void test_queues_tree(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a[] = {"queues", NULL};
    assert_int_equal(run(a, &out, &err), 0);
    const char *o = fair_buf_str(&out);
    assert_int_equal(strncmp(o, "NAME ", 5), 0);
    expect_row(o, "team-a ", "8 9.5 9.5 1.5 0 2");
    expect_row(o, "├── team-a-dev ", "2 2 2 0 0 0");
    expect_row(o, "└── team-a-train ", "6 7.5 7.5 1.5 0 2");
    expect_row(o, "team-b ", "8 6.5 6.5 0 1.5 0");
    expect_row(o, "└── team-b-train ", "- - - - - -");
    assert_non_null(strstr(o, "\n(no such project)"));
    expect_row(o, "    orphan ", "- - - - - -");
    /* Projects in name order, each followed by its queues. */
    assert_true(strstr(o, "team-a ") < strstr(o, "├── team-a-dev"));
    assert_true(strstr(o, "└── team-a-train") < strstr(o, "\nteam-b "));
    /* The columns line up under the header (the tree's lines count once). */
    char hdr[512], row[512];
    line_of(o, "NAME", hdr, sizeof hdr);
    line_of(o, "└── team-a-train", row, sizeof row);
    /* "└──" is 9 bytes for 3 columns: 6 bytes more than it shows. */
    assert_int_equal(strlen(hdr) + 6, strlen(row));

    /* -n: the projects that list the namespace, and -o wide. */
    const char *b[] = {"queues", "-n", "team-b", "-o", "wide", NULL};
    assert_int_equal(run(b, &out, &err), 0);
    o = fair_buf_str(&out);
    assert_null(strstr(o, "team-a"));
    assert_null(strstr(o, "orphan"));
    assert_non_null(strstr(o, "PENDING-GPUS"));
    expect_row(o, "└── team-b-train ", "- - - - - - - - 2 -");
    const char *c[] = {"queues", "-nteam-a", "-owide", NULL};
    assert_int_equal(run(c, &out, &err), 0);
    expect_row(fair_buf_str(&out), "└── team-a-train ", "6 7.5 7.5 1.5 0 2 3 - 2 Ready");
    const char *d[] = {"queues", "-n", "nobody", NULL};
    assert_int_equal(run(d, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&err), "no project lists namespace nobody"));
    fair_buf_release(&out);
    fair_buf_release(&err);
}

static void test_queues_json_yaml(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a[] = {"queues", "-o", "json", NULL};
    assert_int_equal(run(a, &out, &err), 0);
    json_error_t je;
    json_t *j = json_loads(fair_buf_str(&out), 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "List");
    json_t *items = json_object_get(j, "items");
    assert_int_equal(json_array_size(items), 6);
    assert_string_equal(fair_fake_json_str(json_array_get(items, 0), "kind"), "Project");
    /* Projects, then Queues, each in name order. */
    assert_string_equal(fair_fake_json_str(json_array_get(items, 2), "metadata.name"), "orphan");
    assert_string_equal(fair_fake_json_str(json_array_get(items, 4), "metadata.name"),
                        "team-a-train");
    assert_string_equal(fair_fake_json_str(json_array_get(items, 4), "status.fairShare.gpu"),
                        "7.5");
    /* YAML says the same: read back, it equals the JSON. */
    const char *b[] = {"queues", "--output=yaml", NULL};
    assert_int_equal(run(b, &out, &err), 0);
    json_t *docs = NULL;
    struct fair_error e = {0};
    if (fair_yaml_parse("queues.yaml", fair_buf_str(&out), out.len, NULL, &docs, &e))
        fail_msg("%s\n%s", e.msg, fair_buf_str(&out));
    assert_int_equal(json_array_size(docs), 1);
    if (!json_equal(json_array_get(docs, 0), j)) {
        char *x = json_dumps(json_array_get(docs, 0), JSON_SORT_KEYS);
        fail_msg("YAML differs from JSON: %s", x);
    }
    json_decref(docs);
    json_decref(j);
    /* -n filters the List too. */
    const char *c[] = {"queues", "-n", "team-a", "-o", "json", NULL};
    assert_int_equal(run(c, &out, &err), 0);
    j = json_loads(fair_buf_str(&out), 0, &je);
    assert_int_equal(json_array_size(json_object_get(j, "items")), 3);
    json_decref(j);
    fair_buf_release(&out);
    fair_buf_release(&err);
}

static void test_why(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a[] = {"why", "second", "-n", "team-a", NULL};
    assert_int_equal(run(a, &out, &err), 0);
    const char *o = fair_buf_str(&out);
    assert_non_null(strstr(o, "Pod:        team-a/second (Pending)\n"));
    assert_non_null(strstr(o, "Scheduled:  False Unschedulable: at fair share: queue "
                              "team-a-train uses 7.5 GPUs, its fair share\n"));
    assert_non_null(strstr(o, "Queue:      team-a-train (from its project's defaultQueue), "
                              "project team-a\n"));
    assert_non_null(strstr(o, "GPUs: guaranteed 6, fair share 7.5, allocated 7.5, borrowed "
                              "1.5; 2 pending pod(s)\n"));
    assert_non_null(strstr(o, "at its fair share (7.5 GPUs)"));
    assert_non_null(strstr(o, "Project:    team-a: fair share 9.5, allocated 9.5 GPUs\n"));
    assert_non_null(strstr(o, "Order:      1 pending pod(s) of this queue come before it "
                              "(higher priority, or older)\n"));
    assert_non_null(strstr(o, "FailedScheduling"));
    assert_null(strstr(o, "not about second"));
    /* The first pod: its label, nobody ahead. */
    const char *b[] = {"why", "--namespace=team-a", "first", "-o", "json", NULL};
    assert_int_equal(run(b, &out, &err), 0);
    json_error_t je;
    json_t *j = json_loads(fair_buf_str(&out), 0, &je);
    assert_non_null(j);
    assert_string_equal(fair_fake_json_str(j, "queue.name"), "team-a-train");
    assert_string_equal(fair_fake_json_str(j, "queue.from"), "label fairshare.dev/queue");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "queue"), "pendingAhead")), 0);
    assert_string_equal(fair_fake_json_str(j, "queue.status.fairShare.gpu"), "7.5");
    assert_int_equal(json_array_size(json_object_get(j, "events")), 1);
    json_decref(j);
    fair_buf_release(&out);
    fair_buf_release(&err);
}

/* A pod bound to node-0000 (the fake's first node, 8 GPUs) holding gpus
 * whole GPUs, or the fraction frac (annotation) when gpus is NULL. */
static void bound_pod(const char *ns, const char *name, const char *queue_label, const char *gpus,
                      const char *frac)
{
    char body[1024], path[256];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"fairshare.dev/queue\":\"%s\"}%s%s%s},\"spec\":{\"nodeName\":"
             "\"node-0000\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"%s%s%s}]}}",
             name, queue_label, frac ? ",\"annotations\":{\"fairshare.dev/gpu-fraction\":\"" : "",
             frac ? frac : "", frac ? "\"}" : "",
             gpus ? ",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"" : "", gpus ? gpus : "",
             gpus ? "\"}}" : "");
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    req("POST", path, body, 201);
}

static void test_top(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    bound_pod("team-b", "top-whole", "team-b-train", "2", NULL);
    bound_pod("team-b", "top-half", "team-b-train", NULL, "0.5");
    bound_pod("team-a", "top-quarter", "team-a-dev", NULL, "0.25");
    /* Not counted: a finished pod, and a pod without GPUs. */
    bound_pod("team-a", "top-done", "team-a-dev", "4", NULL);
    req("PATCH", "/api/v1/namespaces/team-a/pods/top-done/status",
        "{\"status\":{\"phase\":\"Succeeded\"}}", 200);
    bound_pod("team-a", "top-cpu", "team-a-dev", NULL, NULL);

    const char *a[] = {"top", NULL};
    assert_int_equal(run(a, &out, &err), 0);
    const char *o = fair_buf_str(&out);
    /* GPUS USED FREE FRACTIONAL(sum/pods) PODS USE% */
    expect_row(o, "node-0000 ", "8 2.75 5.25 0.75/2 3 34%");
    /* USED FRACTIONAL PODS FAIRSHARE OF-FAIR% (team-b-train has no status) */
    expect_row(o, "team-b-train ", "team-b 2.5 0.5/1 2 - -");
    expect_row(o, "team-a-dev ", "team-a 0.25 0.25/1 1 2 13%");

    /* -n: only that namespace's pods. */
    const char *b[] = {"top", "-n", "team-a", NULL};
    assert_int_equal(run(b, &out, &err), 0);
    expect_row(fair_buf_str(&out), "node-0000 ", "8 0.25 7.75 0.25/1 1 3%");

    const char *c[] = {"top", "-o", "json", NULL};
    assert_int_equal(run(c, &out, &err), 0);
    json_error_t je;
    json_t *j = json_loads(fair_buf_str(&out), 0, &je);
    assert_non_null(j);
    json_t *n0 = json_array_get(json_object_get(j, "nodes"), 0);
    assert_string_equal(fair_fake_json_str(n0, "name"), "node-0000");
    assert_string_equal(fair_fake_json_str(n0, "used"), "2.75");
    assert_string_equal(fair_fake_json_str(n0, "fractional"), "0.75");
    assert_int_equal(json_integer_value(json_object_get(n0, "fractionalPods")), 2);
    json_decref(j);
    const char *d[] = {"top", "-n", "a", "-A", NULL};
    assert_int_equal(run(d, &out, &err), 2);
    fair_buf_release(&out);
    fair_buf_release(&err);
}

/* What a pod waits for: the node held for it, its gang's members, and the
 * victims that reclaim is evicting for it (from their DisruptionTarget
 * condition, in any namespace). */
static void test_why_waits_for(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    req("POST", "/api/v1/namespaces/team-a/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"g-0\","
        "\"labels\":{\"fairshare.dev/queue\":\"team-a-train\"},\"annotations\":{"
        "\"fairshare.dev/gang\":\"g\",\"fairshare.dev/gang-size\":\"3\"}},\"spec\":{"
        "\"schedulerName\":\"fairshare\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
        201);
    req("POST", "/api/v1/namespaces/team-a/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"g-1\","
        "\"annotations\":{\"fairshare.dev/gang\":\"g\",\"fairshare.dev/gang-size\":\"3\"}},"
        "\"spec\":{\"nodeName\":\"node-0000\",\"containers\":[{\"name\":\"c\",\"image\":"
        "\"x\"}]}}",
        201);
    req("PATCH", "/api/v1/namespaces/team-a/pods/g-0/status",
        "{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
        "\"reason\":\"NodeHeld\",\"message\":\"waiting for node node-0000, held for this pod: "
        "no node has 1 GPUs free\"}]}}",
        200);
    /* Two marked pods in another namespace: one for g-0, one for g-01. */
    static const char *const marks[][2] = {{"v-for-g0", "team-a/g-0"}, {"v-other", "team-a/g-01"}};
    for (int i = 0; i < 2; i++) {
        char body[1024], path[256];
        bound_pod("team-b", marks[i][0], "team-b-train", "1", NULL);
        snprintf(body, sizeof body,
                 "{\"status\":{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":"
                 "\"True\",\"reason\":\"PreemptionByScheduler\",\"message\":\"Fairshare "
                 "reclaim: queue team-a-train needs these GPUs (for pod %s)\"}]}}",
                 marks[i][1]);
        snprintf(path, sizeof path, "/api/v1/namespaces/team-b/pods/%s/status", marks[i][0]);
        req("PATCH", path, body, 200);
    }
    const char *a[] = {"why", "g-0", "-n", "team-a", NULL};
    assert_int_equal(run(a, &out, &err), 0);
    const char *o = fair_buf_str(&out);
    if (!strstr(o, "Held:       node node-0000 is held for this pod") ||
        !strstr(o, "Gang:       g: 2 of 3 pod(s) present in team-a, 1 bound\n") ||
        !strstr(o, "Reclaim:    1 pod(s) being evicted for it:\n") ||
        !strstr(o, "team-b/v-for-g0 on node-0000\n") || strstr(o, "v-other"))
        fail_msg("why g-0:\n%s", o);
    const char *b[] = {"why", "g-0", "-n", "team-a", "-o", "json", NULL};
    assert_int_equal(run(b, &out, &err), 0);
    json_error_t je;
    json_t *j = json_loads(fair_buf_str(&out), 0, &je);
    assert_non_null(j);
    assert_string_equal(fair_fake_json_str(j, "heldNode"), "node-0000");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "gang"), "present")), 2);
    json_t *v = json_object_get(j, "reclaimVictims");
    assert_int_equal(json_array_size(v), 1);
    assert_string_equal(fair_fake_json_str(json_array_get(v, 0), "name"), "v-for-g0");
    json_decref(j);
    fair_buf_release(&out);
    fair_buf_release(&err);
}

static void test_errors(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a[] = {"why", "nope", "-n", "team-a", NULL};
    assert_int_equal(run(a, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "pod team-a/nope not found"));
    /* The context's namespace (default) when -n is not given. */
    const char *b[] = {"why", "second", NULL};
    assert_int_equal(run(b, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "pod default/second not found"));
    static const char *const usage[][8] = {
        {"why", NULL},
        {"why", "a", "b", NULL},
        {"why", "a", "-A", NULL},
        {"why", "a", "-o", "wide", NULL},
        {"why", "a", "-n", NULL},
        {"queues", "-o", "xml", NULL},
        {"queues", "-n", "a", "-A", NULL},
        {"queues", "--colour", NULL},
        {"queues", "-n", "a", "-n", "b", NULL},
    };
    for (size_t i = 0; i < sizeof usage / sizeof *usage; i++) {
        int st = run(usage[i], &out, &err);
        if (st != 2)
            fail_msg("case %zu: status %d: %s", i, st, fair_buf_str(&err));
        assert_non_null(strstr(fair_buf_str(&err), "usage: fairsharectl "));
    }
    const char *c[] = {"queues", "--context", "elsewhere", NULL};
    assert_int_equal(run(c, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "context \"elsewhere\" not found"));
    fair_buf_release(&out);
    fair_buf_release(&err);
}

/* The bash completion script, sourced into a real bash: the function
 * completes commands, flags and flag values. */
static void test_completion(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    char script[512];
    const char *a[] = {"completion", "bash", NULL};
    assert_int_equal(fair_test_run(fake.dir, ctl(), a, &out, &err), 0);
    fair_test_write_file(script, sizeof script, fake.dir, "completion.bash", fair_buf_str(&out));
    static const struct {
        const char *words, *want;
    } cases[] = {
        {"fairsharectl qu", "queues"},
        {"kubectl-fairshare wh", "why"},
        {"fairsharectl queues -o ", "table wide json yaml"},
        {"fairsharectl why -o ", "table json yaml"},
        {"fairsharectl report --unit ", "hours days"},
        {"fairsharectl report --from la", "last-month"},
        {"fairsharectl report --per", "--percent"},
        {"fairsharectl ledger ", "backup check prune"},
        {"fairsharectl completion ", "bash zsh"},
        {"fairsharectl to", "top"},
        {"fairsharectl report -o ", "table csv json"},
        {"fairsharectl report --by u", "user"},
        {"fairsharectl top -o ", "table wide json yaml"},
        {"fairsharectl top --all", "--all-namespaces"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[1024];
        /* COMP_WORDS as bash splits the line; a trailing space means an
         * empty word to complete. */
        snprintf(cmd, sizeof cmd,
                 "source '%s'; read -ra COMP_WORDS <<< '%s'; %s COMP_CWORD=$((${#COMP_WORDS[@]} "
                 "- 1)); _fairsharectl; echo \"${COMPREPLY[*]}\"",
                 script, cases[i].words,
                 cases[i].words[strlen(cases[i].words) - 1] == ' ' ? "COMP_WORDS+=('');" : "");
        const char *b[] = {"-c", cmd, NULL};
        assert_int_equal(fair_test_run(fake.dir, "/bin/bash", b, &out, &err), 0);
        char want[256];
        snprintf(want, sizeof want, "%s\n", cases[i].want);
        if (strcmp(fair_buf_str(&out), want) != 0)
            fail_msg("\"%s\": \"%s\", want \"%s\" (%s)", cases[i].words, fair_buf_str(&out),
                     cases[i].want, fair_buf_str(&err));
    }
    const char *z[] = {"completion", "zsh", NULL};
    assert_int_equal(fair_test_run(fake.dir, ctl(), z, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "bashcompinit"));
    assert_non_null(strstr(fair_buf_str(&out), "complete -o default -F _fairsharectl"));
    const char *bad[] = {"completion", "fish", NULL};
    assert_int_equal(fair_test_run(fake.dir, ctl(), bad, &out, &err), 2);
    fair_buf_release(&out);
    fair_buf_release(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queues_tree),   cmocka_unit_test(test_queues_json_yaml),
        cmocka_unit_test(test_why),           cmocka_unit_test(test_errors),
        cmocka_unit_test(test_completion),    cmocka_unit_test(test_top),
        cmocka_unit_test(test_why_waits_for),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
