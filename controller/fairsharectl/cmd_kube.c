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
#include "base/quantity.h"
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
           *projects = NULL, *doc = NULL, *bound = NULL, *nspods = NULL, *victims = NULL;
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
    /* What it waits for. Reclaim in progress: the pods the controller
     * marked for it (DisruptionTarget=True, reason PreemptionByScheduler,
     * "... (for pod NS/NAME)"), in every namespace the user may list. */
    bool victims_partial = false;
    if (!node && !(victims = json_array()))
        goto nomem;
    if (!node) {
        char forpod[600];
        snprintf(forpod, sizeof forpod, "for pod %s/%s)", ns, pod_name);
        if (kube_list(&kc, &fair_kres_pods, NULL, "fieldSelector=spec.nodeName%21%3D", &bound,
                      &soft)) {
            /* No right to list every namespace: the pod's own. */
            victims_partial = true;
            bound = NULL;
            kube_list(&kc, &fair_kres_pods, ns, "fieldSelector=spec.nodeName%21%3D", &bound, &soft);
        }
        json_array_foreach(bound, i, c)
        {
            size_t j;
            json_t *vc;
            json_array_foreach(at(c, "status.conditions"), j, vc)
            {
                const char *t = str_at(vc, "type"), *st = str_at(vc, "status"),
                           *re = str_at(vc, "reason"), *msg = str_at(vc, "message");
                if (t && st && re && msg && strcmp(t, "DisruptionTarget") == 0 &&
                    strcmp(st, "True") == 0 && strcmp(re, "PreemptionByScheduler") == 0 &&
                    strstr(msg, forpod)) {
                    json_array_append_new(victims,
                                          json_pack("{s:s?, s:s?, s:s?, s:b}", "namespace",
                                                    str_at(c, "metadata.namespace"), "name",
                                                    str_at(c, "metadata.name"), "node",
                                                    str_at(c, "spec.nodeName"), "terminating",
                                                    at(c, "metadata.deletionTimestamp") != NULL));
                    break;
                }
            }
        }
    }
    /* Its gang (fairshare.dev/gang, the coscheduling pod-group label or
     * Volcano's group annotation): the members present in its namespace. */
    json_t *ann = at(pod, "metadata.annotations");
    const char *gang_key = FAIR_ANN_GANG, *gang_where = "annotations";
    const char *gang = json_string_value(json_object_get(ann, FAIR_ANN_GANG));
    if (!gang && (gang = json_string_value(json_object_get(labels, FAIR_LABEL_POD_GROUP))))
        gang_key = FAIR_LABEL_POD_GROUP, gang_where = "labels";
    if (!gang && (gang = json_string_value(json_object_get(ann, FAIR_ANN_VC_GROUP))))
        gang_key = FAIR_ANN_VC_GROUP;
    const char *gang_size = json_string_value(json_object_get(ann, FAIR_ANN_GANG_SIZE));
    long gang_present = -1, gang_bound = 0;
    if (gang && !kube_list(&kc, &fair_kres_pods, ns, NULL, &nspods, &soft)) {
        gang_present = 0;
        json_array_foreach(nspods, i, c)
        {
            json_t *m = json_object_get(at(c, "metadata"), gang_where);
            const char *g = json_string_value(json_object_get(m, gang_key));
            if (!g || strcmp(g, gang) != 0 || at(c, "metadata.deletionTimestamp"))
                continue;
            gang_present++;
            if (str_at(c, "spec.nodeName"))
                gang_bound++;
        }
    }
    /* The node held for it: the controller's message says "waiting for
     * node X, held for this pod"; the nominatedNodeName field if set. */
    char held[256] = "";
    const char *cmsg = cond ? str_at(cond, "message") : NULL;
    const char *h = cmsg ? strstr(cmsg, "waiting for node ") : NULL;
    if (h) {
        h += strlen("waiting for node ");
        size_t len = strcspn(h, ", ");
        snprintf(held, sizeof held, "%.*s", (int)len, h);
    } else if (str_at(pod, "status.nominatedNodeName")) {
        snprintf(held, sizeof held, "%s", str_at(pod, "status.nominatedNodeName"));
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
        if (victims)
            json_object_set(doc, "reclaimVictims", victims);
        if (gang)
            json_object_set_new(doc, "gang",
                                json_pack("{s:s, s:s?, s:I, s:I}", "name", gang, "size", gang_size,
                                          "present", (json_int_t)gang_present, "bound",
                                          (json_int_t)gang_bound));
        if (held[0])
            json_object_set_new(doc, "heldNode", json_string(held));
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
    if (held[0])
        printf("Held:       node %s is held for this pod: no other pod is placed there until "
               "it fits\n",
               held);
    if (gang) {
        if (gang_present >= 0)
            printf("Gang:       %s: %ld of %s pod(s) present in %s, %ld bound\n", gang,
                   gang_present, gang_size ? gang_size : "?", ns, gang_bound);
        else
            printf("Gang:       %s (cannot list the pods of %s)\n", gang, ns);
    }
    if (json_array_size(victims)) {
        printf("Reclaim:    %zu pod(s) being evicted for it:\n", json_array_size(victims));
        json_array_foreach(victims, i, c)
            printf("              %s/%s on %s%s\n", or_dash(str_at(c, "namespace")),
                   or_dash(str_at(c, "name")), or_dash(str_at(c, "node")),
                   json_is_true(json_object_get(c, "terminating")) ? " (terminating)" : "");
    } else if (victims && cond && str_at(cond, "reason") &&
               strcmp(str_at(cond, "reason"), "WaitingForReclaim") == 0) {
        printf("Reclaim:    no pod is marked for eviction for it now\n");
    }
    if (victims && victims_partial)
        printf("            (searched namespace %s only: you may not list pods in every "
               "namespace)\n",
               ns);
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
    json_decref(bound);
    json_decref(nspods);
    json_decref(victims);
    fair_buf_release(&path);
    fair_buf_release(&query);
    kube_close(&kc);
    return rc;
}

/* ---- fairsharectl top ---- */

static void top_usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl top [-n NAMESPACE | -A] [-o table|wide|json|yaml]\n"
               "         [--kubeconfig FILE] [--context NAME]\n"
               "\n"
               "GPU use now, by node and by queue, from the bound pods that have not\n"
               "finished (any scheduler): whole GPUs (nvidia.com/gpu limits) and fractions\n"
               "(the fairshare.dev/gpu-fraction annotation; a fractional pod shares one\n"
               "device). By node: the GPUs it offers (allocatable), in use, free. By\n"
               "queue (the fairshare.dev/queue label, else the project's defaultQueue):\n"
               "its pods' GPUs against the fair share in its status.\n"
               "Every namespace by default (-A); -n counts only that namespace's pods.\n"
               "-o wide adds the node's GPU model and the queue's guarantee.\n"
               "Exit status: 0 ok, 1 error, 2 usage.\n\n");
    fair_cmd_kube_usage(f);
}

/* The GPUs (in thousandths) that a pod holds: its containers' whole
 * nvidia.com/gpu limits, else its fraction annotation. *frac is set when
 * the figure is a fraction. */
static int64_t pod_gpu_milli(json_t *pod, bool *frac)
{
    int64_t whole = 0, m;
    size_t i;
    json_t *c;
    *frac = false;
    json_array_foreach(at(pod, "spec.containers"), i, c)
    {
        json_t *lim = json_object_get(json_object_get(json_object_get(c, "resources"), "limits"),
                                      FAIR_RES_NAME_GPU);
        struct fair_error qe = {0};
        if (json_is_string(lim) && !fair_quantity_parse_milli(json_string_value(lim), &m, &qe) &&
            m > 0)
            whole += m;
    }
    if (whole)
        return whole;
    json_t *ann = at(pod, "metadata.annotations");
    const char *s = json_string_value(json_object_get(ann, FAIR_ANN_GPU_FRACTION));
    struct fair_error qe = {0};
    if (s && !fair_quantity_parse_milli(s, &m, &qe) && m > 0 && m < 1000) {
        *frac = true;
        return m;
    }
    return 0;
}

/* A label's value (borrowed) or NULL; label keys hold dots, so at() cannot. */
static const char *label_of(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(at(obj, "metadata.labels"), key));
}

/* "3.5" from 3500 thousandths (three decimals at most, no trailing zeros). */
static void milli_str(int64_t m, char *out, size_t n)
{
    snprintf(out, n, "%lld.%03lld", (long long)(m / 1000), (long long)(m % 1000));
    char *dot = strchr(out, '.'), *end = out + strlen(out) - 1;
    while (end > dot && *end == '0')
        *end-- = '\0';
    if (end == dot)
        *end = '\0';
}

struct top_row {
    const char *name;
    json_t *obj; /* the Node or the Queue (borrowed), or NULL */
    int64_t whole, frac, cap;
    int pods, frac_pods;
};

static struct top_row *top_row(struct top_row **rows, size_t *n, size_t *cap, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*rows)[i].name, name) == 0)
            return &(*rows)[i];
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct top_row *r = fair_realloc(*rows, nc * sizeof *r);
        if (!r)
            return NULL;
        *rows = r;
        *cap = nc;
    }
    struct top_row *r = &(*rows)[(*n)++];
    memset(r, 0, sizeof *r);
    r->name = name;
    return r;
}

static int by_row_name(const void *a, const void *b)
{
    return strcmp(((const struct top_row *)a)->name, ((const struct top_row *)b)->name);
}

int fair_cmd_top(int argc, char **argv)
{
    struct fair_cmd_kube k = {0};
    struct fair_error err = {0};
    struct kube kc;
    json_t *nodes = NULL, *pods = NULL, *queues = NULL, *projects = NULL, *doc = NULL;
    struct top_row *nr = NULL, *qr = NULL;
    size_t nn = 0, ncap = 0, nq = 0, qcap = 0;
    int rc = 1;
    memset(&kc, 0, sizeof kc);
    fair_kconfig_init(&kc.cfg);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            top_usage(stdout);
            rc = 0;
            goto out;
        }
        int r = fair_cmd_kube_flag(&k, argc, argv, &i);
        if (r <= 0) {
            rc = r < 0 ? usage_error("top", top_usage, "option %s needs a value (once)", argv[i])
                       : usage_error("top", top_usage, "unknown argument \"%s\"", argv[i]);
            goto out;
        }
    }
    if (!output_ok(k.output, true)) {
        rc =
            usage_error("top", top_usage, "bad -o \"%s\": use table, wide, json or yaml", k.output);
        goto out;
    }
    if (k.all_namespaces && k.namespace_) {
        rc = usage_error("top", top_usage, "give -n or -A, not both");
        goto out;
    }
    fair_kconfig_release(&kc.cfg);
    if (kube_open(&k, &kc, &err) || kube_list(&kc, &fair_kres_nodes, NULL, NULL, &nodes, &err) ||
        kube_list(&kc, &fair_kres_pods, k.namespace_,
                  "fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2C"
                  "status.phase%21%3DFailed",
                  &pods, &err) ||
        kube_list(&kc, &fair_kres_queues, NULL, NULL, &queues, &err) ||
        kube_list(&kc, &fair_kres_projects, NULL, NULL, &projects, &err))
        goto fail;
    size_t i;
    json_t *c;
    json_array_foreach(nodes, i, c)
    {
        const char *name = str_at(c, "metadata.name");
        json_t *alloc = at(c, "status.allocatable");
        const char *g = json_string_value(json_object_get(alloc, FAIR_RES_NAME_GPU));
        struct fair_error qe = {0};
        int64_t m = 0;
        if (!name || !g || fair_quantity_parse_milli(g, &m, &qe) || m <= 0)
            continue; /* not a GPU node */
        struct top_row *r = top_row(&nr, &nn, &ncap, name);
        if (!r)
            goto nomem;
        r->obj = c;
        r->cap = m;
    }
    json_array_foreach(queues, i, c)
    {
        const char *name = str_at(c, "metadata.name");
        struct top_row *r = name ? top_row(&qr, &nq, &qcap, name) : NULL;
        if (name && !r)
            goto nomem;
        if (r)
            r->obj = c;
    }
    json_array_foreach(pods, i, c)
    {
        bool frac;
        int64_t m = pod_gpu_milli(c, &frac);
        const char *node = str_at(c, "spec.nodeName");
        if (!m || !node || at(c, "metadata.deletionTimestamp"))
            continue;
        struct top_row *r = top_row(&nr, &nn, &ncap, node);
        if (!r)
            goto nomem;
        /* The queue: the label, else the defaultQueue of the project
         * listing the namespace (as the controller resolves it). */
        json_t *labels = at(c, "metadata.labels");
        const char *q = json_string_value(json_object_get(labels, FAIR_LABEL_QUEUE));
        const char *ns = str_at(c, "metadata.namespace");
        size_t j;
        json_t *p;
        json_array_foreach(q ? NULL : projects, j, p)
        {
            if (ns && has_namespace(p, ns) && str_at(p, "spec.defaultQueue")) {
                q = str_at(p, "spec.defaultQueue");
                break;
            }
        }
        struct top_row *rq = top_row(&qr, &nq, &qcap, q ? q : "(none)");
        if (!rq)
            goto nomem;
        struct top_row *both[2] = {r, rq};
        for (int b = 0; b < 2; b++) {
            both[b]->pods++;
            if (frac) {
                both[b]->frac += m;
                both[b]->frac_pods++;
            } else {
                both[b]->whole += m;
            }
        }
    }
    if (nn)
        qsort(nr, nn, sizeof *nr, by_row_name);
    if (nq)
        qsort(qr, nq, sizeof *qr, by_row_name);
    const char *o = k.output ? k.output : "table";
    bool wide = strcmp(o, "wide") == 0;
    char a[32], b[32], f[32], u[32], fr[32];
    if (strcmp(o, "json") == 0 || strcmp(o, "yaml") == 0) {
        json_t *jn = json_array(), *jq = json_array();
        doc = json_pack("{s:o, s:o}", "nodes", jn, "queues", jq);
        if (!doc)
            goto nomem;
        for (size_t r = 0; r < nn; r++) {
            milli_str(nr[r].cap, a, sizeof a);
            milli_str(nr[r].whole + nr[r].frac, u, sizeof u);
            milli_str(nr[r].frac, f, sizeof f);
            milli_str(nr[r].cap > nr[r].whole + nr[r].frac ? nr[r].cap - nr[r].whole - nr[r].frac
                                                           : 0,
                      fr, sizeof fr);
            json_array_append_new(jn, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:s?}", "name",
                                                nr[r].name, "allocatable", a, "used", u,
                                                "fractional", f, "free", fr, "pods", nr[r].pods,
                                                "fractionalPods", nr[r].frac_pods, "gpuProduct",
                                                label_of(nr[r].obj, FAIR_LABEL_GPU_PRODUCT)));
        }
        for (size_t r = 0; r < nq; r++) {
            milli_str(qr[r].whole + qr[r].frac, u, sizeof u);
            milli_str(qr[r].frac, f, sizeof f);
            json_array_append_new(
                jq, json_pack("{s:s, s:s?, s:s, s:s, s:i, s:i, s:s?, s:s?}", "name", qr[r].name,
                              "project", str_at(qr[r].obj, "spec.project"), "used", u, "fractional",
                              f, "pods", qr[r].pods, "fractionalPods", qr[r].frac_pods, "fairShare",
                              str_at(qr[r].obj, "status.fairShare.gpu"), "guaranteed",
                              str_at(qr[r].obj, "status.guaranteed.gpu")));
        }
        rc = print_structured(doc, o);
        goto out;
    }
    printf("%-24s %6s %6s %6s %10s %6s %5s%s\n", "NODE", "GPUS", "USED", "FREE", "FRACTIONAL",
           "PODS", "USE%", wide ? "  GPU-PRODUCT" : "");
    for (size_t r = 0; r < nn; r++) {
        int64_t used = nr[r].whole + nr[r].frac;
        milli_str(nr[r].cap, a, sizeof a);
        milli_str(used, u, sizeof u);
        milli_str(nr[r].cap > used ? nr[r].cap - used : 0, fr, sizeof fr);
        milli_str(nr[r].frac, f, sizeof f);
        snprintf(b, sizeof b, "%lld%%",
                 nr[r].cap ? (long long)((used * 100 + nr[r].cap / 2) / nr[r].cap) : 0LL);
        char fcell[48];
        snprintf(fcell, sizeof fcell, "%s/%d", f, nr[r].frac_pods);
        printf("%-24s %6s %6s %6s %10s %6d %5s", nr[r].name, nr[r].cap ? a : "-", u,
               nr[r].cap ? fr : "-", fcell, nr[r].pods, nr[r].cap ? b : "-");
        if (wide)
            printf("  %s", or_dash(label_of(nr[r].obj, FAIR_LABEL_GPU_PRODUCT)));
        printf("\n");
    }
    printf("\n%-24s %-16s %6s %10s %6s %10s %8s%s\n", "QUEUE", "PROJECT", "USED", "FRACTIONAL",
           "PODS", "FAIRSHARE", "OF-FAIR%", wide ? "  GUARANTEED" : "");
    for (size_t r = 0; r < nq; r++) {
        int64_t used = qr[r].whole + qr[r].frac, fs = 0;
        const char *fss = str_at(qr[r].obj, "status.fairShare.gpu");
        struct fair_error qe = {0};
        bool have_fs = fss && !fair_quantity_parse_milli(fss, &fs, &qe);
        milli_str(used, u, sizeof u);
        milli_str(qr[r].frac, f, sizeof f);
        char fcell[48];
        snprintf(fcell, sizeof fcell, "%s/%d", f, qr[r].frac_pods);
        if (have_fs && fs > 0)
            snprintf(b, sizeof b, "%lld%%", (long long)((used * 100 + fs / 2) / fs));
        else
            snprintf(b, sizeof b, "-");
        printf("%-24s %-16s %6s %10s %6d %10s %8s", qr[r].name,
               or_dash(str_at(qr[r].obj, "spec.project")), u, fcell, qr[r].pods, or_dash(fss), b);
        if (wide)
            printf("  %s", or_dash(str_at(qr[r].obj, "status.guaranteed.gpu")));
        printf("\n");
    }
    printf("(GPUs; FRACTIONAL is GPU fractions in use/the pods holding them.%s)\n",
           k.namespace_ ? " Only this namespace's pods." : "");
    rc = 0;
    goto out;
nomem:
    fair_error_set(&err, FAIR_ENOMEM, "out of memory");
fail:
    fprintf(stderr, "fairsharectl top: %s\n", err.msg);
    rc = 1;
out:
    fair_free(nr);
    fair_free(qr);
    json_decref(doc);
    json_decref(nodes);
    json_decref(pods);
    json_decref(queues);
    json_decref(projects);
    kube_close(&kc);
    return rc;
}
