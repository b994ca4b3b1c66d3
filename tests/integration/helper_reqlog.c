/* Request logs, the authorizer's view of a request, and RBAC matching (see
 * helper_reqlog.h). */
#include "helper_reqlog.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#define MAX_PARTS 16

static int copy(char *dst, size_t n, const char *src, size_t len)
{
    if (len >= n)
        return -1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes (and '+' as space, as Go's url.ParseQuery) src[0..len)
 * into out; -1 when it does not fit or an escape is bad. */
static int unescape(const char *src, size_t len, char *out, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '%') {
            if (i + 2 >= len)
                return -1;
            int h = hexval(src[i + 1]), l = hexval(src[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (char)(h * 16 + l);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (o + 1 >= n)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* The first value of key in the query (decoded into out); false when the
 * key is absent. */
static bool query_get(const char *query, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t namelen = eq ? (size_t)(eq - p) : len;
        char name[128];
        if (unescape(p, namelen, name, sizeof name) == 0 && strlen(name) == kl &&
            memcmp(name, key, kl) == 0) {
            if (!eq) {
                out[0] = '\0';
                return true;
            }
            return unescape(eq + 1, len - namelen - 1, out, n) == 0;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

/* fieldSelector "metadata.name=X" or "metadata.name==X" alone (what
 * fields.Selector.RequiresExactMatch accepts for one term). */
static bool selector_name(const char *sel, char *out, size_t n)
{
    const char *p = NULL;
    if (strncmp(sel, "metadata.name==", 15) == 0)
        p = sel + 15;
    else if (strncmp(sel, "metadata.name=", 14) == 0)
        p = sel + 14;
    if (!p || strchr(p, ',') || !*p || strchr(p, '/') || !strcmp(p, ".") || !strcmp(p, ".."))
        return false;
    return copy(out, n, p, strlen(p)) == 0;
}

int fair_reqinfo_parse(const char *method, const char *path_query, struct fair_reqinfo *q)
{
    memset(q, 0, sizeof *q);
    const char *qm = strchr(path_query, '?');
    size_t plen = qm ? (size_t)(qm - path_query) : strlen(path_query);
    const char *query = qm ? qm + 1 : "";
    if (copy(q->path, sizeof q->path, path_query, plen))
        return -1;
    size_t i;
    for (i = 0; method[i] && i + 1 < sizeof q->verb; i++)
        q->verb[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
    q->verb[i] = '\0';

    /* splitPath: trim the slashes at both ends, split at '/'. */
    char buf[512];
    if (copy(buf, sizeof buf, q->path, strlen(q->path)))
        return -1;
    char *parts[MAX_PARTS];
    int np = 0;
    char *s = buf;
    while (*s == '/')
        s++;
    size_t sl = strlen(s);
    while (sl > 0 && s[sl - 1] == '/')
        s[--sl] = '\0';
    if (*s) {
        for (char *tok = s;;) {
            if (np == MAX_PARTS)
                return -1;
            parts[np++] = tok;
            char *slash = strchr(tok, '/');
            if (!slash)
                break;
            *slash = '\0';
            tok = slash + 1;
        }
    }
    if (np < 3)
        return 0; /* non-resource */
    bool core = !strcmp(parts[0], "api");
    if (!core && strcmp(parts[0], "apis"))
        return 0;
    int at = 1;
    if (!core) {
        if (np - at < 3)
            return 0;
        if (copy(q->group, sizeof q->group, parts[at], strlen(parts[at])))
            return -1;
        at++;
    }
    q->resource = true;
    if (copy(q->version, sizeof q->version, parts[at], strlen(parts[at])))
        return -1;
    at++;
    if (!strcmp(parts[at], "watch") || !strcmp(parts[at], "proxy")) {
        if (np - at < 2)
            return -1;
        snprintf(q->verb, sizeof q->verb, "%s", parts[at]);
        at++;
    } else {
        static const char *const m[][2] = {{"POST", "create"}, {"GET", "get"},
                                           {"HEAD", "get"},    {"PUT", "update"},
                                           {"PATCH", "patch"}, {"DELETE", "delete"}};
        q->verb[0] = '\0';
        for (size_t k = 0; k < sizeof m / sizeof *m; k++)
            if (!strcmp(method, m[k][0]))
                snprintf(q->verb, sizeof q->verb, "%s", m[k][1]);
    }
    if (!strcmp(parts[at], "namespaces")) {
        if (np - at > 1) {
            if (copy(q->ns, sizeof q->ns, parts[at + 1], strlen(parts[at + 1])))
                return -1;
            if (np - at > 2 && strcmp(parts[at + 2], "status") && strcmp(parts[at + 2], "finalize"))
                at += 2;
        }
    }
    int rest = np - at;
    if (rest >= 3 && strcmp(q->verb, "proxy") &&
        copy(q->sub, sizeof q->sub, parts[at + 2], strlen(parts[at + 2])))
        return -1;
    if (rest >= 2 && copy(q->name, sizeof q->name, parts[at + 1], strlen(parts[at + 1])))
        return -1;
    if (rest >= 1 && copy(q->res, sizeof q->res, parts[at], strlen(parts[at])))
        return -1;
    if (!q->name[0] && !strcmp(q->verb, "get")) {
        char v[64], sel[512];
        bool watch = query_get(query, "watch", v, sizeof v) && strcasecmp(v, "false") != 0 &&
                     strcmp(v, "0") != 0;
        snprintf(q->verb, sizeof q->verb, "%s", watch ? "watch" : "list");
        if (query_get(query, "fieldSelector", sel, sizeof sel))
            selector_name(sel, q->name, sizeof q->name);
    }
    if (!q->name[0] && !strcmp(q->verb, "delete"))
        snprintf(q->verb, sizeof q->verb, "deletecollection");
    return 0;
}

void fair_reqinfo_resource(const struct fair_reqinfo *q, char *out, size_t n)
{
    if (q->sub[0])
        snprintf(out, n, "%s/%s", q->res, q->sub);
    else
        snprintf(out, n, "%s", q->res);
}

long fair_reqlog_read(const char *path, fair_reqlog_fn fn, void *ctx, bool *full)
{
    FILE *f = fopen(path, "r");
    if (full)
        *full = false;
    if (!f)
        return -1;
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    assert_non_null(line);
    long n = 0;
    while (fgets(line, (int)cap, f)) {
        n++;
        size_t len = strlen(line);
        if (len == cap - 1 && line[len - 1] != '\n')
            fail_msg("%s:%ld: line over %zu bytes", path, n, cap);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        if (line[0] == '#') {
            if (full && strstr(line, "full"))
                *full = true;
            continue;
        }
        struct fair_reqlog_entry e = {.file = path, .line = n};
        char kind[8], *rest = NULL;
        long long ms;
        int used = 0;
        if (sscanf(line, "%lld %ld %7s %15s %n", &ms, &e.pid, kind, e.method, &used) != 4 ||
            used == 0)
            fail_msg("%s:%ld: malformed request log line: %s", path, n, line);
        e.ms = ms;
        rest = line + used;
        if (!strcmp(kind, "done")) {
            char *sp = strrchr(rest, ' ');
            if (!sp)
                fail_msg("%s:%ld: a done line without a status: %s", path, n, line);
            *sp = '\0';
            char *end;
            e.status = strtol(sp + 1, &end, 10);
            if (*end)
                fail_msg("%s:%ld: bad status in: %s", path, n, line);
            e.done = true;
        } else if (strcmp(kind, "send") != 0) {
            fail_msg("%s:%ld: unknown event \"%s\"", path, n, kind);
        }
        if (rest[0] != '/' || strchr(rest, ' '))
            fail_msg("%s:%ld: bad path in: %s", path, n, line);
        e.path = rest;
        fn(&e, ctx);
    }
    free(line);
    fclose(f);
    return n;
}

static const char *str_of(json_t *v)
{
    const char *s = json_string_value(v);
    return s ? s : "";
}

static int grant_add(struct fair_rbac_grant **out, size_t *n, size_t *cap,
                     const struct fair_rbac_grant *g)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct fair_rbac_grant *p = realloc(*out, nc * sizeof *p);
        if (!p)
            return -1;
        *out = p;
        *cap = nc;
    }
    (*out)[(*n)++] = *g;
    return 0;
}

int fair_rbac_grants(json_t *docs, struct fair_rbac_grant **out, size_t *n, char *why,
                     size_t whylen)
{
    size_t cap = *n, i, r, gi, ri, vi, ni;
    json_t *doc, *rule, *gv, *rv, *vv, *nv;
    json_array_foreach(docs, i, doc)
    {
        const char *kind = str_of(json_object_get(doc, "kind"));
        bool cluster = !strcmp(kind, "ClusterRole");
        if (!cluster && strcmp(kind, "Role") != 0)
            continue;
        json_t *meta = json_object_get(doc, "metadata");
        struct fair_rbac_grant g;
        memset(&g, 0, sizeof g);
        const char *ns = cluster ? "" : str_of(json_object_get(meta, "namespace"));
        if (!cluster && !*ns) {
            snprintf(why, whylen, "Role %s has no namespace",
                     str_of(json_object_get(meta, "name")));
            return -1;
        }
        snprintf(g.ns, sizeof g.ns, "%s", ns);
        if (cluster)
            snprintf(g.role, sizeof g.role, "ClusterRole/%s",
                     str_of(json_object_get(meta, "name")));
        else
            snprintf(g.role, sizeof g.role, "Role/%s/%s", ns,
                     str_of(json_object_get(meta, "name")));
        json_array_foreach(json_object_get(doc, "rules"), r, rule)
        {
            json_t *names = json_object_get(rule, "resourceNames");
            if (json_object_get(rule, "nonResourceURLs")) {
                snprintf(why, whylen, "%s rule %zu has nonResourceURLs", g.role, r);
                return -1;
            }
            if (!json_array_size(json_object_get(rule, "apiGroups")) ||
                !json_array_size(json_object_get(rule, "resources")) ||
                !json_array_size(json_object_get(rule, "verbs"))) {
                snprintf(why, whylen, "%s rule %zu lacks apiGroups, resources or verbs", g.role, r);
                return -1;
            }
            json_array_foreach(json_object_get(rule, "apiGroups"), gi, gv)
                json_array_foreach(json_object_get(rule, "resources"), ri, rv)
                    json_array_foreach(json_object_get(rule, "verbs"), vi, vv)
            {
                size_t nn = json_array_size(names) ? json_array_size(names) : 1;
                for (ni = 0; ni < nn; ni++) {
                    nv = json_array_get(names, ni);
                    snprintf(g.group, sizeof g.group, "%s", str_of(gv));
                    snprintf(g.res, sizeof g.res, "%s", str_of(rv));
                    snprintf(g.verb, sizeof g.verb, "%s", str_of(vv));
                    snprintf(g.name, sizeof g.name, "%s", nv ? str_of(nv) : "");
                    if (grant_add(out, n, &cap, &g)) {
                        snprintf(why, whylen, "out of memory");
                        return -1;
                    }
                }
            }
        }
    }
    return 0;
}

bool fair_rbac_allows(const struct fair_rbac_grant *g, const struct fair_reqinfo *q)
{
    if (!q->resource)
        return false;
    if (g->ns[0] && strcmp(g->ns, q->ns) != 0)
        return false;
    if (strcmp(g->verb, "*") && strcmp(g->verb, q->verb))
        return false;
    if (strcmp(g->group, "*") && strcmp(g->group, q->group))
        return false;
    char combined[256];
    fair_reqinfo_resource(q, combined, sizeof combined);
    bool res = !strcmp(g->res, "*") || !strcmp(g->res, combined) ||
               (q->sub[0] && strlen(g->res) == strlen(q->sub) + 2 && !strncmp(g->res, "*/", 2) &&
                !strcmp(g->res + 2, q->sub));
    if (!res)
        return false;
    return !g->name[0] || !strcmp(g->name, q->name);
}
