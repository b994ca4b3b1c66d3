/* fakekube-bench: measures the fake API server under the load the
 * controller benchmarks put on it: N nodes, P pods created, then bound,
 * over C concurrent keep-alive TLS connections; then a full list and the
 * server's resident memory. Prints medians of R rounds.
 *   build/fakekube-bench [--nodes 1000] [--pods 10000] [--conns 8] [--rounds 3]
 * Not run by ctest: numbers go to docs/performance.md. */
#include "helper_fakekube.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CONNS 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t discard(char *b, size_t s, size_t n, void *u)
{
    (void)b;
    (void)u;
    return s * n;
}

struct slot {
    CURL *easy;
    struct curl_slist *hdrs;
    char url[256];
    char body[1024];
};

typedef void (*make_req)(int i, char *url, size_t un, char *body, size_t bn, const char *base);

static void make_create(int i, char *url, size_t un, char *body, size_t bn, const char *base)
{
    snprintf(url, un, "%s/api/v1/namespaces/bench/pods", base);
    snprintf(body, bn,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%06d\","
             "\"labels\":{\"fairshare.dev/queue\":\"q%d\"}},\"spec\":{\"schedulerName\":"
             "\"fairshare\",\"containers\":[{\"name\":\"main\",\"image\":\"trainer:1\","
             "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
             i, i % 50);
}

static int g_nodes = 1000;

static void make_bind(int i, char *url, size_t un, char *body, size_t bn, const char *base)
{
    snprintf(url, un, "%s/api/v1/namespaces/bench/pods/pod-%06d/binding", base, i);
    snprintf(body, bn,
             "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"pod-%06d\"},"
             "\"target\":{\"kind\":\"Node\",\"name\":\"node-%04d\"}}",
             i, i % g_nodes);
}

/* Runs n POSTs over conns connections; returns requests per second, or
 * -1 when any answer was not 201. */
static double run(struct fair_fake *f, int n, int conns, make_req mk)
{
    CURLM *multi = curl_multi_init();
    struct slot slots[MAX_CONNS];
    char auth[256];
    int next = 0, done = 0, bad = 0;
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", f->token);
    double t0 = now_s();
    for (int c = 0; c < conns; c++) {
        slots[c].easy = curl_easy_init();
        slots[c].hdrs = curl_slist_append(NULL, auth);
        slots[c].hdrs = curl_slist_append(slots[c].hdrs, "Content-Type: application/json");
        curl_easy_setopt(slots[c].easy, CURLOPT_CAINFO, f->ca_path);
        curl_easy_setopt(slots[c].easy, CURLOPT_HTTPHEADER, slots[c].hdrs);
        curl_easy_setopt(slots[c].easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(slots[c].easy, CURLOPT_PRIVATE, &slots[c]);
        if (next < n) {
            mk(next++, slots[c].url, sizeof(slots[c].url), slots[c].body, sizeof(slots[c].body),
               f->base_url);
            curl_easy_setopt(slots[c].easy, CURLOPT_URL, slots[c].url);
            curl_easy_setopt(slots[c].easy, CURLOPT_POSTFIELDS, slots[c].body);
            curl_multi_add_handle(multi, slots[c].easy);
        }
    }
    while (done < n) {
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int q;
        while ((m = curl_multi_info_read(multi, &q)) != NULL) {
            if (m->msg != CURLMSG_DONE)
                continue;
            struct slot *sl;
            long code = 0;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&sl);
            curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
            if (code != 201)
                bad++;
            done++;
            curl_multi_remove_handle(multi, sl->easy);
            if (next < n) {
                mk(next++, sl->url, sizeof(sl->url), sl->body, sizeof(sl->body), f->base_url);
                curl_easy_setopt(sl->easy, CURLOPT_URL, sl->url);
                curl_easy_setopt(sl->easy, CURLOPT_POSTFIELDS, sl->body);
                curl_multi_add_handle(multi, sl->easy);
            }
        }
        if (done < n)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    double dt = now_s() - t0;
    for (int c = 0; c < conns; c++) {
        curl_easy_cleanup(slots[c].easy);
        curl_slist_free_all(slots[c].hdrs);
    }
    curl_multi_cleanup(multi);
    if (bad) {
        fprintf(stderr, "fakekube-bench: %d requests failed\n", bad);
        return -1;
    }
    return n / dt;
}

static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    while (fgets(line, sizeof(line), fp))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    fclose(fp);
    return kib;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int pods = 10000, conns = 8, rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = strtol(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--nodes"))
            g_nodes = (int)v;
        else if (!strcmp(argv[i], "--pods"))
            pods = (int)v;
        else if (!strcmp(argv[i], "--conns"))
            conns = (int)(v < 1 ? 1 : v > MAX_CONNS ? MAX_CONNS : v);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = (int)(v < 1 ? 1 : v > 9 ? 9 : v);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    double creates[9], binds[9], lists[9], paged[9];
    long rss = 0;
    for (int r = 0; r < rounds; r++) {
        struct fair_fake f;
        struct fair_fake_opts o = {
            .nodes = g_nodes, .gpus_per_node = 8, .persist_ms = -1, .history = 10000};
        if (fair_fake_start(&f, &o) != 0 || fair_fake_create_namespace(&f, "bench") != 0)
            return 1;
        creates[r] = run(&f, pods, conns, make_create);
        binds[r] = run(&f, pods, conns, make_bind);
        double t0 = now_s();
        long code = 0;
        char *body = NULL;
        fair_fake_request(&f, "GET", "/api/v1/pods", NULL, &code, &body);
        lists[r] = (now_s() - t0) * 1000;
        free(body);
        /* The informer's way: pages of 500. */
        t0 = now_s();
        char path[1024], cont[600] = "";
        int items = 0;
        do {
            snprintf(path, sizeof(path), "/api/v1/namespaces/bench/pods?limit=500%s%s",
                     cont[0] ? "&continue=" : "", cont);
            json_t *page = fair_fake_request_json(&f, "GET", path, NULL, &code);
            items += (int)json_array_size(json_object_get(page, "items"));
            const char *c =
                json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
            snprintf(cont, sizeof(cont), "%s", c ? c : "");
            json_decref(page);
        } while (cont[0] && code == 200);
        paged[r] = (now_s() - t0) * 1000;
        if (items != pods) {
            fprintf(stderr, "fakekube-bench: paged list saw %d of %d pods\n", items, pods);
            return 1;
        }
        rss = rss_kib(f.pid);
        if (creates[r] < 0 || binds[r] < 0 || code != 200)
            return 1;
        fair_fake_kill9(&f); /* skip saving a large state at exit */
        fair_fake_release(&f);
    }
    qsort(creates, (size_t)rounds, sizeof(double), cmp_d);
    qsort(binds, (size_t)rounds, sizeof(double), cmp_d);
    qsort(lists, (size_t)rounds, sizeof(double), cmp_d);
    qsort(paged, (size_t)rounds, sizeof(double), cmp_d);
    char load[64] = "?";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (!fgets(load, sizeof(load), la))
            load[0] = '\0';
        fclose(la);
        load[strcspn(load, "\n")] = '\0';
    }
    printf("fakekube-bench nodes=%d pods=%d conns=%d rounds=%d loadavg=\"%s\"\n", g_nodes, pods,
           conns, rounds, load);
    printf("  create pods/s (median) %.0f\n", creates[rounds / 2]);
    printf("  bind pods/s   (median) %.0f\n", binds[rounds / 2]);
    printf("  list all pods ms (median) %.1f\n", lists[rounds / 2]);
    printf("  list all pods in pages of 500 ms (median) %.1f\n", paged[rounds / 2]);
    printf("  server RSS after run KiB %ld (%.0f bytes/pod incl. nodes and history)\n", rss,
           rss * 1024.0 / pods);
    curl_global_cleanup();
    return 0;
}
