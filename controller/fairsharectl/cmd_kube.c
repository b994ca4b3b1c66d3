/* fairsharectl queues and fairsharectl why: what a data scientist asks the
 * cluster, read from the API server with the user's own kubeconfig and
 * credentials, as kubectl would (lib/kube's client on a private event
 * loop, one synchronous request at a time). The figures are the ones the
 * controller writes into each Project's and Queue's status; the reason a
 * pod waits is its PodScheduled condition and its Events.
 *
 * Flags follow kubectl's: --kubeconfig, --context, -n/--namespace,
 * -A/--all-namespaces, -o table|wide|json|yaml. */
#include <curl/curl.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/version.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/decode.h"

#include "cmd.h"

/* ---- kubectl's flags ---- */

int fair_cmd_kube_flag(struct fair_cmd_kube *k, int argc, char **argv, int *i)
{
    static const struct {
        const char *long_name, *short_name;
        size_t off;
    } table[] = {
        {"--kubeconfig", NULL, offsetof(struct fair_cmd_kube, kubeconfig)},
        {"--context", NULL, offsetof(struct fair_cmd_kube, context)},
        {"--namespace", "-n", offsetof(struct fair_cmd_kube, namespace_)},
        {"--output", "-o", offsetof(struct fair_cmd_kube, output)},
    };
    const char *a = argv[*i];
    if (strcmp(a, "-A") == 0 || strcmp(a, "--all-namespaces") == 0 ||
        strcmp(a, "--all-namespaces=true") == 0) {
        k->all_namespaces = true;
        return 1;
    }
    for (size_t t = 0; t < sizeof table / sizeof *table; t++) {
        const char *val = NULL;
        size_t len = strlen(table[t].long_name);
        if (strncmp(a, table[t].long_name, len) == 0 && (a[len] == '\0' || a[len] == '=')) {
            if (a[len] == '=')
                val = a + len + 1;
            else if (*i + 1 < argc)
                val = argv[++*i];
            else
                return -1;
        } else if (table[t].short_name && strcmp(a, table[t].short_name) == 0) {
            if (*i + 1 >= argc)
                return -1;
            val = argv[++*i];
        } else if (table[t].short_name && strncmp(a, table[t].short_name, 2) == 0 && a[2]) {
            val = a[2] == '=' ? a + 3 : a + 2; /* -nteam-a, -ojson, -o=json */
        } else {
            continue;
        }
        const char **slot = (const char **)((char *)k + table[t].off);
        if (*slot || !*val)
            return -1;
        *slot = val;
        return 1;
    }
    return 0;
}

void fair_cmd_kube_usage(FILE *f)
{
    fprintf(f, "  --kubeconfig FILE     the kubeconfig (default: $KUBECONFIG, the pod's service\n"
               "                        account, then ~/.kube/config)\n"
               "  --context NAME        a context of it other than the current one\n"
               "  -n, --namespace NS    the namespace (default: the context's)\n"
               "  -A, --all-namespaces  every namespace\n"
               "  -o, --output FORMAT   table (default), wide, json or yaml\n");
}

/* ---- a synchronous client ---- */

struct kube {
    struct event_base *base;
    struct fair_kclient *client;
    struct fair_kconfig cfg;
};

static int kube_open(const struct fair_cmd_kube *k, struct kube *kc, struct fair_error *err)
{
    int rc;
    memset(kc, 0, sizeof *kc);
    fair_kconfig_init(&kc->cfg);
    if (k->context) {
        char *path = k->kubeconfig ? fair_strdup(k->kubeconfig) : fair_cmd_default_kubeconfig();
        rc = path ? fair_kconfig_load_kubeconfig(path, k->context, &kc->cfg, err)
                  : fair_error_set(err, FAIR_EINVAL, "no kubeconfig to find --context in");
        fair_free(path);
    } else {
        rc = fair_kconfig_load(k->kubeconfig, &kc->cfg, err);
    }
    if (rc)
        return rc;
    if (!(kc->base = event_base_new()))
        return fair_error_set(err, FAIR_ENOMEM, "cannot create an event loop");
    static char ua[64];
    struct fair_kclient_options o = {0};
    snprintf(ua, sizeof ua, "fairsharectl/%s", fair_version);
    o.user_agent = ua;
    o.request_timeout_ms = 30000;
    return fair_kclient_new(kc->base, &kc->cfg, &o, &kc->client, err);
}

static void kube_close(struct kube *kc)
{
    fair_kclient_free(kc->client);
    if (kc->base) {
        event_base_loop(kc->base, EVLOOP_NONBLOCK); /* TLS finalizers (see main.c) */
        event_base_free(kc->base);
    }
    fair_kconfig_release(&kc->cfg);
}

/* GETs path; *out is the parsed body (new reference). FAIR_ENOTFOUND for
 * 404; other errors name the path and what the server said. */
static int kube_get(struct kube *kc, const char *path, json_t **out, struct fair_error *err)
{
    long status = 0;
    char *body = NULL;
    *out = NULL;
    int rc = fair_kclient_request_sync(kc->client, "GET", path, NULL, 0, &status, &body, err);
    if (rc == 0) {
        json_error_t je;
        *out = json_loads(body ? body : "", JSON_REJECT_DUPLICATES, &je);
        if (!*out)
            rc = fair_error_set(err, FAIR_EPARSE, "GET %s: the answer is not JSON: %s", path,
                                je.text);
    } else if (status == 403) {
        fair_error_prefix(err, "forbidden: your user may not read this (ask for a role with "
                               "get/list on it): ");
    }
    free(body);
    return rc;
}

static int kube_list(struct kube *kc, const struct fair_kres *r, const char *ns, const char *query,
                     json_t **items, struct fair_error *err)
{
    struct fair_buf path;
    json_t *list = NULL;
    fair_buf_init(&path, 8192);
    int rc = fair_kpath(&path, r, ns, NULL, NULL, err);
    if (!rc && query)
        rc = fair_buf_appendf(&path, "?%s", query) ? fair_error_set(err, FAIR_ENOMEM, "path") : 0;
    if (!rc)
        rc = kube_get(kc, fair_buf_str(&path), &list, err);
    if (!rc) {
        *items = json_incref(json_object_get(list, "items"));
        if (!json_is_array(*items)) {
            json_decref(*items);
            *items = json_array();
        }
    }
    json_decref(list);
    fair_buf_release(&path);
    return rc;
}

/* ---- JSON helpers ---- */

/* The value at a dotted path ("status.fairShare.gpu"), borrowed, or NULL. */
static json_t *at(json_t *j, const char *path)
{
    char part[128];
    while (j && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof part)
            return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        j = json_object_get(j, part);
        path += n + (path[n] == '.');
    }
    return j;
}

static const char *str_at(json_t *j, const char *path)
{
    return json_string_value(at(j, path));
}

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

/* A quantity or count for a table cell: "-" when absent. */
static void cell(json_t *j, const char *path, char *out, size_t n)
{
    json_t *v = at(j, path);
    if (json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, n, "%g", json_real_value(v));
    else
        snprintf(out, n, "-");
}

/* The types of conditions that are True, "Ready" or "Invalid" first. */
static void conditions(json_t *obj, char *out, size_t n)
{
    size_t i, len = 0;
    json_t *c;
    out[0] = '\0';
    json_array_foreach(at(obj, "status.conditions"), i, c)
    {
        const char *type = str_at(c, "type"), *st = str_at(c, "status");
        if (!type || !st || strcmp(st, "True") != 0)
            continue;
        int w = snprintf(out + len, n - len, "%s%s", len ? "," : "", type);
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
    if (!out[0])
        snprintf(out, n, "-");
}

/* JSON as YAML (block style). Strings are written as JSON strings, which
 * are valid YAML double-quoted scalars; keys plainly when they are safe. */
static int yaml_key_plain(const char *k)
{
    if (!*k || strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") !=
                   strlen(k))
        return 0;
    static const char *const special[] = {"true", "false", "null", "yes", "no",
                                          "on",   "off",   "y",    "n",   "~"};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        if (strcasecmp(k, special[i]) == 0)
            return 0;
    return !(k[0] == '-' || k[0] == '.' || (k[0] >= '0' && k[0] <= '9'));
}

static int yaml_scalar(struct fair_buf *b, json_t *v)
{
    if (json_is_object(v))
        return fair_buf_appends(b, "{}");
    if (json_is_array(v))
        return fair_buf_appends(b, "[]");
    char *s = json_dumps(v, JSON_ENCODE_ANY);
    if (!s)
        return FAIR_ENOMEM;
    int rc = fair_buf_appends(b, s);
    free(s);
    return rc;
}

static int is_nonempty_container(json_t *v)
{
    return (json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v));
}

/* Emits v at indentation ind; with inline_first the first line's
 * indentation is already written (after "- "). */
static int yaml_emit(struct fair_buf *b, json_t *v, int ind, bool inline_first, int depth)
{
    int rc = 0;
    bool first = true;
    if (depth > 64)
        return FAIR_ERANGE;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            if (!(first && inline_first))
                rc = rc || fair_buf_appendf(b, "%*s", ind, "");
            first = false;
            if (yaml_key_plain(k)) {
                rc = rc || fair_buf_appends(b, k);
            } else {
                json_t *ks = json_string(k);
                rc = rc || !ks || yaml_scalar(b, ks);
                json_decref(ks);
            }
            rc = rc || fair_buf_appends(b, ":");
            if (is_nonempty_container(x))
                rc = rc || fair_buf_appends(b, "\n") || yaml_emit(b, x, ind + 2, false, depth + 1);
            else
                rc = rc || fair_buf_appends(b, " ") || yaml_scalar(b, x) ||
                     fair_buf_appends(b, "\n");
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (!(first && inline_first))
                rc = rc || fair_buf_appendf(b, "%*s", ind, "");
            first = false;
            rc = rc || fair_buf_appends(b, "- ");
            if (json_is_object(x) && json_object_size(x))
                rc = rc || yaml_emit(b, x, ind + 2, true, depth + 1);
            else if (is_nonempty_container(x))
                rc = rc || fair_buf_appends(b, "\n") || yaml_emit(b, x, ind + 2, false, depth + 1);
            else
                rc = rc || yaml_scalar(b, x) || fair_buf_appends(b, "\n");
        }
    } else {
        rc = yaml_scalar(b, v) || fair_buf_appends(b, "\n");
    }
    return rc;
}

/* Prints v as JSON (indented, like kubectl) or YAML. */
static int print_structured(json_t *v, const char *output)
{
    if (strcmp(output, "json") == 0) {
        if (json_dumpf(v, stdout, JSON_INDENT(4) | JSON_PRESERVE_ORDER) ||
            fputc('\n', stdout) == EOF)
            return 1;
        return 0;
    }
    struct fair_buf b;
    fair_buf_init(&b, 0);
    int rc = yaml_emit(&b, v, 0, false, 0);
    if (!rc)
        fwrite(fair_buf_str(&b), 1, b.len, stdout);
    else
        fprintf(stderr, "fairsharectl: cannot write YAML (too deep or out of memory)\n");
    fair_buf_release(&b);
    return rc ? 1 : 0;
}

static int output_ok(const char *o, bool wide_ok)
{
    return !o || strcmp(o, "table") == 0 || strcmp(o, "json") == 0 || strcmp(o, "yaml") == 0 ||
           (wide_ok && strcmp(o, "wide") == 0);
}

__attribute__((format(printf, 3, 4))) static int
usage_error(const char *prog, void (*usage)(FILE *), const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fairsharectl %s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n");
    usage(stderr);
    return 2;
}

/* ---- fairsharectl queues ---- */

static void queues_usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl queues [-n NAMESPACE | -A] [-o table|wide|json|yaml]\n"
               "         [--kubeconfig FILE] [--context NAME]\n"
               "\n"
               "Every Project and its Queues, as a tree, with what each is guaranteed, its\n"
               "fair share (what it is entitled to now), what it has allocated, borrowed\n"
               "and lent, and its pending pods, in GPUs, from the status the controller\n"
               "writes. -n shows only the projects whose namespaces include NAMESPACE.\n"
               "-o wide adds pending GPUs, the limit, the weight and the conditions that\n"
               "are True; -o json and -o yaml print the objects as a List.\n"
               "Exit status: 0 ok, 1 error, 2 usage.\n\n");
    fair_cmd_kube_usage(f);
}

static int has_namespace(json_t *project, const char *ns)
{
    size_t i;
    json_t *v;
    json_array_foreach(at(project, "spec.namespaces"), i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), ns) == 0)
            return 1;
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    const char *x = str_at(*(json_t *const *)a, "metadata.name");
    const char *y = str_at(*(json_t *const *)b, "metadata.name");
    return strcmp(x ? x : "", y ? y : "");
}

/* The array's objects sorted by name, in a new C array (borrowed items). */
static json_t **sorted(json_t *arr, size_t *n)
{
    *n = json_array_size(arr);
    json_t **v = fair_calloc(*n ? *n : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < *n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, *n, sizeof *v, by_name);
    return v;
}

/* When an Event last happened: lastTimestamp, else eventTime, else its
 * creation (RFC 3339 strings of one format, comparable as strings). */
static const char *event_time(json_t *e)
{
    const char *t = str_at(e, "lastTimestamp");
    if (!t)
        t = str_at(e, "eventTime");
    if (!t)
        t = str_at(e, "metadata.creationTimestamp");
    return t ? t : "";
}

static int by_time(const void *a, const void *b)
{
    return strcmp(event_time(*(json_t *const *)a), event_time(*(json_t *const *)b));
}

static json_t **sorted_by_time(json_t *arr, size_t *n)
{
    *n = json_array_size(arr);
    json_t **v = fair_calloc(*n ? *n : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < *n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, *n, sizeof *v, by_time);
    return v;
}

struct row_fmt {
    bool wide;
    int w; /* name column */
};

static void print_header(const struct row_fmt *f)
{
    printf("%-*s %10s %10s %10s %9s %6s %8s", f->w, "NAME", "GUARANTEED", "FAIR-SHARE", "ALLOCATED",
           "BORROWED", "LENT", "PENDING");
    if (f->wide)
        printf(" %12s %8s %7s  %s", "PENDING-GPUS", "LIMIT", "WEIGHT", "CONDITIONS");
    printf("\n");
}

/* Columns on a terminal: UTF-8 sequences count once (the tree's lines). */
static int display_width(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void print_row(const struct row_fmt *f, const char *prefix, json_t *o)
{
    char name[320], g[32], fs[32], al[32], bo[32], le[32], pe[32];
    snprintf(name, sizeof name, "%s%s", prefix, or_dash(str_at(o, "metadata.name")));
    int pad = f->w - display_width(name);
    cell(o, "status.guaranteed.gpu", g, sizeof g);
    cell(o, "status.fairShare.gpu", fs, sizeof fs);
    cell(o, "status.allocated.gpu", al, sizeof al);
    cell(o, "status.borrowed.gpu", bo, sizeof bo);
    cell(o, "status.lent.gpu", le, sizeof le);
    cell(o, "status.pending.pods", pe, sizeof pe);
    printf("%s%*s %10s %10s %10s %9s %6s %8s", name, pad > 0 ? pad : 0, "", g, fs, al, bo, le, pe);
    if (f->wide) {
        char pg[32], li[32], we[32], co[128];
        cell(o, "status.pending.resources.gpu", pg, sizeof pg);
        cell(o, "spec.limit.gpu", li, sizeof li);
        cell(o, "spec.overQuotaWeight", we, sizeof we);
        conditions(o, co, sizeof co);
        printf(" %12s %8s %7s  %s", pg, li, we, co);
    }
    printf("\n");
}

int fair_cmd_queues(int argc, char **argv)
{
    struct fair_cmd_kube k = {0};
    struct fair_error err = {0};
    struct kube kc;
    json_t *projects = NULL, *queues = NULL, *shown = NULL;
    json_t **ps = NULL, **qs = NULL;
    size_t np = 0, nq = 0;
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            queues_usage(stdout);
            return 0;
        }
        int r = fair_cmd_kube_flag(&k, argc, argv, &i);
        if (r < 0)
            return usage_error("queues", queues_usage, "option %s needs a value (once)", argv[i]);
        if (r == 0)
            return usage_error("queues", queues_usage, "unknown argument \"%s\"", argv[i]);
    }
    if (!output_ok(k.output, true))
        return usage_error("queues", queues_usage, "bad -o \"%s\": use table, wide, json or yaml",
                           k.output);
    if (k.all_namespaces && k.namespace_)
        return usage_error("queues", queues_usage, "give -n or -A, not both");
    const char *o = k.output ? k.output : "table";
    if (kube_open(&k, &kc, &err) ||
        kube_list(&kc, &fair_kres_projects, NULL, NULL, &projects, &err) ||
        kube_list(&kc, &fair_kres_queues, NULL, NULL, &queues, &err)) {
        fprintf(stderr, "fairsharectl queues: %s\n", err.msg);
        if (err.code == FAIR_ENOTFOUND)
            fprintf(stderr, "fairsharectl queues: are Fairshare's CRDs installed? "
                            "(kubectl apply -f crds/)\n");
        goto out;
    }
    if (!(ps = sorted(projects, &np)) || !(qs = sorted(queues, &nq)) || !(shown = json_array())) {
        fprintf(stderr, "fairsharectl queues: out of memory\n");
        goto out;
    }
    /* Which projects (and so queues) to show. */
    bool *keep = fair_calloc(np ? np : 1, sizeof *keep);
    if (!keep)
        goto out;
    for (size_t p = 0; p < np; p++)
        keep[p] = !k.namespace_ || has_namespace(ps[p], k.namespace_);
    if (strcmp(o, "json") == 0 || strcmp(o, "yaml") == 0) {
        for (size_t p = 0; p < np; p++)
            if (keep[p])
                json_array_append(shown, ps[p]);
        for (size_t q = 0; q < nq; q++) {
            const char *proj = str_at(qs[q], "spec.project");
            bool show = !k.namespace_;
            for (size_t p = 0; p < np && !show; p++)
                show = keep[p] && proj && strcmp(proj, str_at(ps[p], "metadata.name")) == 0;
            if (show)
                json_array_append(shown, qs[q]);
        }
        json_t *list =
            json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", shown);
        rc = list ? print_structured(list, o) : 1;
        json_decref(list);
        fair_free(keep);
        goto out;
    }
    struct row_fmt f = {.wide = strcmp(o, "wide") == 0, .w = 4};
    for (size_t q = 0; q < nq; q++) {
        int w =
            (int)strlen(str_at(qs[q], "metadata.name") ? str_at(qs[q], "metadata.name") : "") + 4;
        if (w > f.w)
            f.w = w;
    }
    for (size_t p = 0; p < np; p++) {
        int w = (int)strlen(str_at(ps[p], "metadata.name") ? str_at(ps[p], "metadata.name") : "");
        if (w > f.w)
            f.w = w;
    }
    if (f.w > 80)
        f.w = 80;
    size_t shown_rows = 0;
    print_header(&f);
    for (size_t p = 0; p < np; p++) {
        if (!keep[p])
            continue;
        const char *pname = str_at(ps[p], "metadata.name");
        print_row(&f, "", ps[p]);
        shown_rows++;
        size_t mine = 0, seen = 0;
        for (size_t q = 0; q < nq; q++)
            mine += str_at(qs[q], "spec.project") && pname &&
                    strcmp(str_at(qs[q], "spec.project"), pname) == 0;
        for (size_t q = 0; q < nq; q++) {
            const char *proj = str_at(qs[q], "spec.project");
            if (!proj || !pname || strcmp(proj, pname) != 0)
                continue;
            print_row(&f, ++seen == mine ? "└── " : "├── ", qs[q]);
        }
    }
    /* Queues whose project does not exist (their status says Invalid). */
    if (!k.namespace_) {
        bool header = false;
        for (size_t q = 0; q < nq; q++) {
            const char *proj = str_at(qs[q], "spec.project");
            bool found = false;
            for (size_t p = 0; p < np && !found; p++)
                found = proj && strcmp(proj, str_at(ps[p], "metadata.name")) == 0;
            if (found)
                continue;
            if (!header)
                printf("%-*s\n", f.w, "(no such project)");
            header = true;
            print_row(&f, "    ", qs[q]);
            shown_rows++;
        }
    }
    if (!shown_rows) {
        if (k.namespace_)
            fprintf(stderr, "fairsharectl queues: no project lists namespace %s\n", k.namespace_);
        else
            fprintf(stderr, "fairsharectl queues: no Projects or Queues yet\n");
    }
    printf("(GPUs; PENDING counts pods. Figures from the status the controller writes.)\n");
    fair_free(keep);
    rc = 0;
out:
    fair_free(ps);
    fair_free(qs);
    json_decref(shown);
    json_decref(projects);
    json_decref(queues);
    kube_close(&kc);
    return rc;
}

/* ---- fairsharectl why ---- */

static void why_usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl why POD [-n NAMESPACE] [-o table|json|yaml]\n"
               "         [--kubeconfig FILE] [--context NAME]\n"
               "\n"
               "Why a pod waits (or where it runs): its PodScheduled condition, the\n"
               "scheduler's recent Events about it, its queue (the fairshare.dev/queue label,\n"
               "else its project's defaultQueue) with the queue's guarantee, fair share and\n"
               "allocation, and how many of the queue's pending pods are ahead of it.\n"
               "Exit status: 0 ok, 1 error (e.g. no such pod), 2 usage.\n\n");
    fair_cmd_kube_usage(f);
}

/* The queue's figures in words: where it stands against its fair share. */
static void queue_position(json_t *q, char *out, size_t n)
{
    json_t *fs = at(q, "status.fairShare.gpu"), *al = at(q, "status.allocated.gpu");
    if (!json_is_string(fs) || !json_is_string(al)) {
        snprintf(out, n, "no status yet: the controller has not computed this queue's figures");
        return;
    }
    double f = strtod(json_string_value(fs), NULL), a = strtod(json_string_value(al), NULL);
    if (a + 1e-9 < f)
        snprintf(out, n,
                 "below its fair share (%s of %s GPUs): the queue is owed GPUs; its pods that fit "
                 "their limits start as GPUs free up or are reclaimed",
                 json_string_value(al), json_string_value(fs));
    else if (a > f + 1e-9)
        snprintf(out, n,
                 "above its fair share (%s of %s GPUs): its borrowed pods may be "
                 "reclaimed, and new pods wait",
                 json_string_value(al), json_string_value(fs));
    else
        snprintf(out, n,
                 "at its fair share (%s GPUs): new pods wait until its own pods finish "
                 "or others stop using idle GPUs",
                 json_string_value(al));
}

int fair_cmd_why(int argc, char **argv)
{
    struct fair_cmd_kube k = {0};
    struct fair_error err = {0};
    struct kube kc;
    const char *pod_name = NULL;
    json_t *pod = NULL, *queue = NULL, *project = NULL, *events = NULL, *pending = NULL,
           *projects = NULL, *doc = NULL;
    struct fair_buf path, query;
    int rc = 1;
    fair_buf_init(&path, 8192);
    fair_buf_init(&query, 8192);
    memset(&kc, 0, sizeof kc);
    fair_kconfig_init(&kc.cfg);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            why_usage(stdout);
            rc = 0;
            goto out;
        }
        int r = fair_cmd_kube_flag(&k, argc, argv, &i);
        if (r < 0) {
            rc = usage_error("why", why_usage, "option %s needs a value (once)", argv[i]);
            goto out;
        }
        if (r > 0)
            continue;
        if (argv[i][0] == '-' || pod_name) {
            rc = usage_error("why", why_usage, "unknown argument \"%s\"", argv[i]);
            goto out;
        }
        pod_name = argv[i];
    }
    if (!pod_name) {
        rc = usage_error("why", why_usage, "which pod? give its name");
        goto out;
    }
    if (k.all_namespaces) {
        rc = usage_error("why", why_usage, "-A does not apply: a pod is in one namespace (-n)");
        goto out;
    }
    if (!output_ok(k.output, false)) {
        rc = usage_error("why", why_usage, "bad -o \"%s\": use table, json or yaml", k.output);
        goto out;
    }
    fair_kconfig_release(&kc.cfg);
    if (kube_open(&k, &kc, &err))
        goto fail;
    const char *ns = k.namespace_ ? k.namespace_ : fair_kclient_namespace(kc.client);
    if (fair_kpath(&path, &fair_kres_pods, ns, pod_name, NULL, &err))
        goto fail;
    if (kube_get(&kc, fair_buf_str(&path), &pod, &err)) {
        if (err.code == FAIR_ENOTFOUND)
            fair_error_set(&err, FAIR_ENOTFOUND, "pod %s/%s not found", ns, pod_name);
        goto fail;
    }
    /* The PodScheduled condition. */
    json_t *cond = NULL, *c;
    size_t i;
    json_array_foreach(at(pod, "status.conditions"), i, c)
    {
        const char *type = str_at(c, "type");
        if (type && strcmp(type, "PodScheduled") == 0)
            cond = c;
    }
    const char *node = str_at(pod, "spec.nodeName");
    const char *phase = str_at(pod, "status.phase");
    const char *sched = str_at(pod, "spec.schedulerName");
    /* The queue: its label, else the defaultQueue of the project that
     * lists the pod's namespace (as the controller resolves it). */
    const char *qname = str_at(pod, "metadata.labels." FAIR_LABEL_QUEUE);
    const char *qsource = "label " FAIR_LABEL_QUEUE;
    json_t *labels = at(pod, "metadata.labels");
    if (json_is_object(labels))
        qname = json_string_value(json_object_get(labels, FAIR_LABEL_QUEUE));
    if (!qname) {
        if (kube_list(&kc, &fair_kres_projects, NULL, NULL, &projects, &err))
            goto fail;
        json_array_foreach(projects, i, c)
        {
            if (has_namespace(c, ns) && str_at(c, "spec.defaultQueue")) {
                qname = str_at(c, "spec.defaultQueue");
                qsource = "its project's defaultQueue";
                break;
            }
        }
    }
    if (qname) {
        fair_buf_reset(&path);
        if (fair_kpath(&path, &fair_kres_queues, NULL, qname, NULL, &err))
            goto fail;
        if (kube_get(&kc, fair_buf_str(&path), &queue, &err) && err.code != FAIR_ENOTFOUND)
            goto fail;
        const char *pname = str_at(queue, "spec.project");
        if (pname) {
            fair_buf_reset(&path);
            if (fair_kpath(&path, &fair_kres_projects, NULL, pname, NULL, &err))
                goto fail;
            if (kube_get(&kc, fair_buf_str(&path), &project, &err) && err.code != FAIR_ENOTFOUND)
                goto fail;
        }
    }
    /* Its Events, newest last, and the queue's pending pods ahead of it
     * (created earlier): both best effort, a user may not list them. */
    struct fair_error soft = {0};
    CURL *cu = curl_easy_init();
    if (cu) {
        char *en = curl_easy_escape(cu, pod_name, 0);
        fair_buf_appendf(&query,
                         "fieldSelector=involvedObject.kind%%3DPod%%2CinvolvedObject.name%%3D%s",
                         en ? en : "");
        curl_free(en);
        if (kube_list(&kc, &fair_kres_events, ns, fair_buf_str(&query), &events, &soft))
            events = NULL;
        if (qname && !node) {
            fair_buf_reset(&query);
            char *eq = curl_easy_escape(cu, qname, 0);
            fair_buf_appendf(&query,
                             "labelSelector=fairshare.dev%%2Fqueue%%3D%s&fieldSelector=status."
                             "phase%%3DPending%%2Cspec.nodeName%%3D",
                             eq ? eq : "");
            curl_free(eq);
            if (kube_list(&kc, &fair_kres_pods, NULL, fair_buf_str(&query), &pending, &soft))
                pending = NULL;
        }
        curl_easy_cleanup(cu);
    }
    if (events && json_array_size(events) > 1) {
        size_t n = 0;
        json_t **ev = sorted_by_time(events, &n);
        json_t *copy = ev ? json_array() : NULL;
        for (size_t e = 0; copy && e < n; e++)
            json_array_append(copy, ev[e]);
        fair_free(ev);
        if (copy) {
            json_decref(events);
            events = copy;
        }
    }
    /* The engine's order within a queue (engine.md, "Admission order"):
     * higher spec.priority first, then older, then uid. RFC 3339 UTC times
     * of one format sort as strings. */
    long ahead = -1;
    const char *created = str_at(pod, "metadata.creationTimestamp");
    const char *uid = str_at(pod, "metadata.uid");
    json_int_t prio = json_integer_value(at(pod, "spec.priority"));
    if (pending && created && uid) {
        ahead = 0;
        json_array_foreach(pending, i, c)
        {
            const char *t = str_at(c, "metadata.creationTimestamp");
            const char *u = str_at(c, "metadata.uid");
            json_int_t p = json_integer_value(at(c, "spec.priority"));
            if (!t || !u || at(c, "metadata.deletionTimestamp") || strcmp(u, uid) == 0)
                continue;
            int cmp = strcmp(t, created);
            if (p > prio || (p == prio && (cmp < 0 || (cmp == 0 && strcmp(u, uid) < 0))))
                ahead++;
        }
    }
    char position[256] = "";
    if (queue)
        queue_position(queue, position, sizeof position);

    const char *o = k.output ? k.output : "table";
    if (strcmp(o, "table") != 0) {
        doc = json_pack("{s:s, s:s, s:s?, s:s?, s:s?}", "pod", pod_name, "namespace", ns, "phase",
                        phase, "node", node, "schedulerName", sched);
        if (!doc)
            goto nomem;
        if (cond)
            json_object_set_new(doc, "podScheduled",
                                json_pack("{s:s?, s:s?, s:s?}", "status", str_at(cond, "status"),
                                          "reason", str_at(cond, "reason"), "message",
                                          str_at(cond, "message")));
        if (qname) {
            json_t *qj = json_pack("{s:s, s:s, s:b}", "name", qname, "from", qsource, "exists",
                                   queue != NULL);
            if (qj && queue) {
                json_object_set(qj, "project", at(queue, "spec.project"));
                json_object_set(qj, "status", at(queue, "status"));
                json_object_set_new(qj, "position", json_string(position));
            }
            if (qj && ahead >= 0)
                json_object_set_new(qj, "pendingAhead", json_integer(ahead));
            json_object_set_new(doc, "queue", qj);
        }
        json_t *evs = json_array();
        json_array_foreach(events, i, c)
        {
            json_array_append_new(evs,
                                  json_pack("{s:s?, s:s?, s:s?, s:s}", "type", str_at(c, "type"),
                                            "reason", str_at(c, "reason"), "message",
                                            str_at(c, "message"), "time", event_time(c)));
        }
        json_object_set_new(doc, "events", evs);
        rc = print_structured(doc, o);
        goto out;
    }
    printf("Pod:        %s/%s (%s)\n", ns, pod_name, or_dash(phase));
    printf("Scheduler:  %s\n", or_dash(sched));
    if (node)
        printf("Node:       %s\n", node);
    if (cond)
        printf("Scheduled:  %s %s: %s\n", or_dash(str_at(cond, "status")),
               or_dash(str_at(cond, "reason")), or_dash(str_at(cond, "message")));
    else if (!node)
        printf("Scheduled:  no PodScheduled condition yet: %s\n",
               sched && strcmp(sched, "fairshare") != 0
                   ? "this pod is for another scheduler"
                   : "the scheduler has not looked at it (is fairshare-controller running?)");
    if (!qname) {
        printf("Queue:      none: no %s label, and no project lists namespace %s with a "
               "defaultQueue\n",
               FAIR_LABEL_QUEUE, ns);
    } else if (!queue) {
        printf("Queue:      %s (from %s) does not exist\n", qname, qsource);
    } else {
        char g[32], fs[32], al[32], bo[32], pe[32];
        cell(queue, "status.guaranteed.gpu", g, sizeof g);
        cell(queue, "status.fairShare.gpu", fs, sizeof fs);
        cell(queue, "status.allocated.gpu", al, sizeof al);
        cell(queue, "status.borrowed.gpu", bo, sizeof bo);
        cell(queue, "status.pending.pods", pe, sizeof pe);
        printf("Queue:      %s (from %s), project %s\n", qname, qsource,
               or_dash(str_at(queue, "spec.project")));
        printf("            GPUs: guaranteed %s, fair share %s, allocated %s, borrowed %s; "
               "%s pending pod(s)\n",
               g, fs, al, bo, pe);
        printf("            %s\n", position);
        char co[128];
        conditions(queue, co, sizeof co);
        if (strcmp(co, "-") != 0 && strcmp(co, "Ready") != 0)
            printf("            conditions: %s\n", co);
        if (project) {
            cell(project, "status.fairShare.gpu", fs, sizeof fs);
            cell(project, "status.allocated.gpu", al, sizeof al);
            printf("Project:    %s: fair share %s, allocated %s GPUs\n",
                   str_at(project, "metadata.name"), fs, al);
        }
        if (ahead >= 0)
            printf("Order:      %ld pending pod(s) of this queue come before it (higher "
                   "priority, or older)\n",
                   ahead);
    }
    if (json_array_size(events)) {
        printf("Events:\n");
        size_t n = json_array_size(events), from = n > 5 ? n - 5 : 0;
        for (i = from; i < n; i++) {
            c = json_array_get(events, i);
            printf("  %-8s %-18s %s\n", or_dash(str_at(c, "type")), or_dash(str_at(c, "reason")),
                   or_dash(str_at(c, "message")));
        }
    }
    rc = 0;
    goto out;
nomem:
    fair_error_set(&err, FAIR_ENOMEM, "out of memory");
fail:
    fprintf(stderr, "fairsharectl why: %s\n", err.msg);
    rc = 1;
out:
    json_decref(doc);
    json_decref(pod);
    json_decref(queue);
    json_decref(project);
    json_decref(events);
    json_decref(pending);
    json_decref(projects);
    fair_buf_release(&path);
    fair_buf_release(&query);
    kube_close(&kc);
    return rc;
}
