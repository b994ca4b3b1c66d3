/* fakekube's object store: one hash map per resource type keyed by
 * "ns/name", the global resourceVersion counter, the watch history ring,
 * and persistence of the objects and counter to DIR/state.json. */
#include "fakekube.h"

#include "base/alloc.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static const struct fk_type type_table[FK_NTYPES] = {
    [FK_NAMESPACES] = {"", "v1", "namespaces", "Namespace", "v1", 0, 1, 0, 1, NULL, NULL, 0, 0},
    [FK_PODS] = {"", "v1", "pods", "Pod", "v1", 1, 1, 1, 1, NULL, NULL, 0, 0},
    [FK_NODES] = {"", "v1", "nodes", "Node", "v1", 0, 1, 0, 1, NULL, NULL, 0, 0},
    [FK_EVENTS] = {"", "v1", "events", "Event", "v1", 1, 0, 0, 1, NULL, NULL, 0, 0},
    [FK_PDBS] = {"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", 1, 1,
                 1, 1, NULL, NULL, 0, 0},
    [FK_LEASES] = {"coordination.k8s.io", "v1", "leases", "Lease", "coordination.k8s.io/v1", 1, 0,
                   0, 1, NULL, NULL, 0, 0},
    [FK_CRDS] = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                 "CustomResourceDefinition", "apiextensions.k8s.io/v1", 0, 1, 1, 1, NULL, NULL, 0,
                 0},
    [FK_CONFIGMAPS] = {"", "v1", "configmaps", "ConfigMap", "v1", 1, 0, 0, 1, NULL, NULL, 0, 0},
    [FK_PROJECTS] = {"fairshare.dev", "v1alpha1", "projects", "Project", "fairshare.dev/v1alpha1",
                     0, 1, 1, 0, NULL, NULL, 0, 0},
    [FK_QUEUES] = {"fairshare.dev", "v1alpha1", "queues", "Queue", "fairshare.dev/v1alpha1", 0, 1,
                   1, 0, NULL, NULL, 0, 0},
    [FK_SP_PODGROUPS] = {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup",
                         "scheduling.x-k8s.io/v1alpha1", 1, 1, 1, 0, NULL, NULL, 0, 0,
                         "podgroups.scheduling.x-k8s.io"},
    [FK_VC_PODGROUPS] = {"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup",
                         "scheduling.volcano.sh/v1beta1", 1, 1, 1, 0, NULL, NULL, 0, 0,
                         "podgroups.scheduling.volcano.sh"},
    [FK_SECRETS] = {"", "v1", "secrets", "Secret", "v1", 1, 0, 0, 1, NULL, NULL, 0, 0},
    [FK_MUTATING_WEBHOOKS] = {"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                              "MutatingWebhookConfiguration", "admissionregistration.k8s.io/v1", 0,
                              0, 1, 1, NULL, NULL, 0, 0},
    [FK_JOBS] = {"batch", "v1", "jobs", "Job", "batch/v1", 1, 1, 1, 1, NULL, NULL, 0, 0},
    [FK_PVS] = {"", "v1", "persistentvolumes", "PersistentVolume", "v1", 0, 1, 0, 1, NULL, NULL, 0,
                0},
    [FK_PVCS] = {"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", "v1", 1, 1, 0, 1,
                 NULL, NULL, 0, 0},
    [FK_STORAGECLASSES] = {"storage.k8s.io", "v1", "storageclasses", "StorageClass",
                           "storage.k8s.io/v1", 0, 0, 0, 1, NULL, NULL, 0, 0},
};

int fk_type_served(const struct fk_server *s, int type)
{
    const char *crd = s->types[type].crd;
    return !crd || json_object_get(s->types[FK_CRDS].objects, crd) != NULL;
}

int fk_store_init(struct fk_server *s, size_t history)
{
    for (int i = 0; i < FK_NTYPES; i++) {
        s->types[i] = type_table[i];
        s->types[i].objects = json_object();
        if (!s->types[i].objects)
            return -1;
        s->types[i].sorted_dirty = 1;
    }
    s->hist_cap = history ? history : 1;
    s->hist = fair_calloc(s->hist_cap, sizeof(*s->hist));
    if (!s->hist)
        return -1;
    s->hist_head = s->hist_len = 0;
    s->rv = 1;
    s->hist_floor = 1;
    s->continue_floor = 0;
    return 0;
}

static void event_clear(struct fk_event *e)
{
    json_decref(e->obj);
    json_decref(e->old);
    fair_free(e->line);
    memset(e, 0, sizeof(*e));
}

void fk_store_release(struct fk_server *s)
{
    for (int i = 0; i < FK_NTYPES; i++) {
        json_decref(s->types[i].objects);
        s->types[i].objects = NULL;
        fair_free(s->types[i].sorted);
        s->types[i].sorted = NULL;
    }
    if (s->hist) {
        for (size_t i = 0; i < s->hist_len; i++)
            event_clear(&s->hist[(s->hist_head + i) % s->hist_cap]);
        fair_free(s->hist);
        s->hist = NULL;
    }
}

int fk_type_find(const struct fk_server *s, const char *group, const char *version,
                 const char *plural)
{
    for (int i = 0; i < FK_NTYPES; i++) {
        const struct fk_type *t = &s->types[i];
        if (strcmp(t->group, group) == 0 && strcmp(t->version, version) == 0 &&
            strcmp(t->plural, plural) == 0)
            return fk_type_served(s, i) ? i : -1;
    }
    return -1;
}

int fk_key(const struct fk_type *t, const char *ns, const char *name, char *out, size_t n)
{
    int w = t->namespaced ? snprintf(out, n, "%s/%s", ns ? ns : "", name)
                          : snprintf(out, n, "%s", name);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

json_t *fk_get(struct fk_server *s, int type, const char *key)
{
    return json_object_get(s->types[type].objects, key);
}

static const char *etype_name(int etype)
{
    return etype == FK_ADDED ? "ADDED" : etype == FK_MODIFIED ? "MODIFIED" : "DELETED";
}

static void set_rv(json_t *obj, uint64_t rv)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRIu64, rv);
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(obj, "metadata", meta);
    }
    json_object_set_new(meta, "resourceVersion", json_string(buf));
}

static void record(struct fk_server *s, int type, int etype, json_t *obj, json_t *old)
{
    struct fk_event ev = {0};
    ev.rv = s->rv;
    ev.type = type;
    ev.etype = etype;
    ev.obj = json_incref(obj);
    ev.old = old ? json_incref(old) : NULL;
    json_t *wrap = json_pack("{s:s,s:O}", "type", etype_name(etype), "object", obj);
    char *line = wrap ? json_dumps(wrap, JSON_COMPACT) : NULL;
    json_decref(wrap);
    if (line) {
        size_t len = strlen(line);
        ev.line = fair_malloc(len + 2);
        if (ev.line) {
            memcpy(ev.line, line, len);
            ev.line[len] = '\n';
            ev.line[len + 1] = '\0';
            ev.line_len = len + 1;
        }
        free(line);
    }
    if (s->hist_len == s->hist_cap) {
        struct fk_event *oldest = &s->hist[s->hist_head];
        /* Events up to and including the dropped one are gone. */
        s->hist_floor = oldest->rv;
        event_clear(oldest);
        s->hist_head = (s->hist_head + 1) % s->hist_cap;
        s->hist_len--;
    }
    struct fk_event *slot = &s->hist[(s->hist_head + s->hist_len) % s->hist_cap];
    *slot = ev;
    s->hist_len++;
    s->dirty = 1;
    if (type == FK_PDBS || (type == FK_PODS && json_object_size(s->types[FK_PDBS].objects) > 0))
        s->pdb_dirty = 1;
    if (type == FK_JOBS || (type == FK_PODS && json_object_size(s->types[FK_JOBS].objects) > 0))
        s->job_dirty = 1;
    fk_watch_notify(s, slot);
}

json_t *fk_put(struct fk_server *s, int type, const char *key, json_t *obj, int etype)
{
    struct fk_type *t = &s->types[type];
    json_t *old = json_object_get(t->objects, key);
    if (old)
        json_incref(old);
    else
        t->sorted_dirty = 1;
    s->rv++;
    set_rv(obj, s->rv);
    json_object_set_new(t->objects, key, obj);
    record(s, type, etype, obj, old);
    json_decref(old);
    if (type == FK_PODS)
        fk_sim_pod_written(s, key, obj);
    return obj;
}

json_t *fk_remove(struct fk_server *s, int type, const char *key)
{
    struct fk_type *t = &s->types[type];
    json_t *old = json_object_get(t->objects, key);
    if (!old)
        return NULL;
    json_incref(old);
    json_t *fin = json_deep_copy(old);
    json_object_del(t->objects, key);
    t->sorted_dirty = 1;
    s->rv++;
    if (fin) {
        set_rv(fin, s->rv);
        record(s, type, FK_DELETED, fin, old);
    }
    json_decref(old);
    return fin;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **fk_sorted_keys(struct fk_server *s, int type, size_t *n)
{
    struct fk_type *t = &s->types[type];
    if (t->sorted_dirty) {
        size_t cnt = json_object_size(t->objects);
        char **keys = fair_calloc(cnt ? cnt : 1, sizeof(char *));
        if (!keys) {
            *n = 0;
            return NULL;
        }
        size_t i = 0;
        const char *k;
        json_t *v;
        json_object_foreach(t->objects, k, v)
        {
            (void)v;
            keys[i++] = (char *)k; /* borrowed from the map until next write */
        }
        qsort(keys, i, sizeof(char *), key_cmp);
        fair_free(t->sorted);
        t->sorted = keys;
        t->nsorted = i;
        t->sorted_dirty = 0;
    }
    *n = t->nsorted;
    return t->sorted;
}

const struct fk_event *fk_hist_at(const struct fk_server *s, uint64_t rv)
{
    if (s->hist_len == 0)
        return NULL;
    uint64_t first = s->hist[s->hist_head].rv;
    if (rv < first || rv - first >= s->hist_len)
        return NULL;
    const struct fk_event *e = &s->hist[(s->hist_head + (rv - first)) % s->hist_cap];
    return e->rv == rv ? e : NULL;
}

void fk_hist_compact(struct fk_server *s)
{
    for (size_t i = 0; i < s->hist_len; i++)
        event_clear(&s->hist[(s->hist_head + i) % s->hist_cap]);
    s->hist_head = s->hist_len = 0;
    s->hist_floor = s->rv;
    /* Tokens issued before the compaction, even at this rv, expire (they
     * carry the count of compactions before them); later ones do not. */
    s->compactions++;
}

const char *fk_meta_str(const json_t *obj, const char *field)
{
    const char *v = json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
    return v ? v : "";
}

const char *fk_path_str(const json_t *obj, const char *dotted)
{
    char part[128];
    const json_t *cur = obj;
    const char *p = dotted;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len >= sizeof(part))
            return "";
        memcpy(part, p, len);
        part[len] = '\0';
        cur = json_object_get(cur, part);
        p = dot ? dot + 1 : p + len;
    }
    const char *v = json_string_value(cur);
    return v ? v : "";
}

void fk_now_rfc3339(char *out, size_t n)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t t = tv.tv_sec;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void fk_random_alnum(char *out, size_t n)
{
    /* The alphabet of Kubernetes' generateName suffixes (no vowels). */
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char rnd[64];
    if (n == 0)
        return;
    if (n - 1 > sizeof(rnd))
        n = sizeof(rnd) + 1;
    if (RAND_bytes(rnd, (int)(n - 1)) != 1)
        memset(rnd, 7, sizeof(rnd));
    for (size_t i = 0; i + 1 < n; i++)
        out[i] = alpha[rnd[i] % (sizeof(alpha) - 1)];
    out[n - 1] = '\0';
}

void fk_uuid(char *out, size_t n)
{
    unsigned char b[16];
    if (RAND_bytes(b, sizeof(b)) != 1)
        memset(b, 1, sizeof(b));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    snprintf(out, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* ---- persistence ---- */

static int state_path(const struct fk_server *s, const char *name, char *out, size_t n)
{
    int w = snprintf(out, n, "%s/%s", s->state_dir, name);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

int fk_persist(struct fk_server *s, int clean)
{
    char path[600], tmp[600];
    int rc = -1;
    json_t *root = NULL;
    if (state_path(s, "state.json", path, sizeof(path)) ||
        state_path(s, "state.json.tmp", tmp, sizeof(tmp)))
        goto out;
    char rvbuf[32];
    snprintf(rvbuf, sizeof(rvbuf), "%" PRIu64, s->rv);
    root = json_pack("{s:s,s:b,s:{}}", "resourceVersion", rvbuf, "cleanShutdown", clean, "objects");
    if (!root)
        goto out;
    json_t *objs = json_object_get(root, "objects");
    for (int i = 0; i < FK_NTYPES; i++) {
        char name[160];
        snprintf(name, sizeof(name), "%s%s%s", s->types[i].plural, s->types[i].group[0] ? "." : "",
                 s->types[i].group);
        json_t *arr = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(s->types[i].objects, k, v)
        {
            (void)k;
            json_array_append(arr, v);
        }
        json_object_set_new(objs, name, arr);
    }
    if (json_dump_file(root, tmp, JSON_COMPACT) != 0) {
        FAIR_ERROR("fakekube", "msg=\"cannot write state\" path=%s", tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        FAIR_ERROR("fakekube", "msg=\"cannot rename state\" path=%s errno=%d", path, errno);
        goto out;
    }
    s->dirty = 0;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int fk_load(struct fk_server *s)
{
    char path[600];
    int rc = -1;
    json_t *root = NULL;
    if (state_path(s, "state.json", path, sizeof(path)))
        goto out;
    if (access(path, F_OK) != 0) {
        rc = 0; /* a fresh state dir */
        goto out;
    }
    json_error_t jerr;
    root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        FAIR_ERROR("fakekube", "msg=\"cannot load state\" path=%s line=%d error=\"%s\"", path,
                   jerr.line, jerr.text);
        goto out;
    }
    const char *rvs = json_string_value(json_object_get(root, "resourceVersion"));
    char *end = NULL;
    unsigned long long rv = rvs ? strtoull(rvs, &end, 10) : 0;
    if (!rvs || *end || rv == 0) {
        FAIR_ERROR("fakekube", "msg=\"bad resourceVersion in state\" path=%s", path);
        goto out;
    }
    s->rv = rv;
    if (!json_is_true(json_object_get(root, "cleanShutdown"))) {
        /* Saved while running, then killed: clients may have seen later
         * resourceVersions. Skip ahead so that none is ever reused; their
         * watches from those get 410, as after a real apiserver restart. */
        s->rv += FK_CRASH_RV_GAP;
        FAIR_WARN("fakekube",
                  "msg=\"state was not saved at exit; skipping resourceVersions\" "
                  "gap=%d resourceVersion=%llu",
                  FK_CRASH_RV_GAP, (unsigned long long)s->rv);
    }
    json_t *objs = json_object_get(root, "objects");
    for (int i = 0; i < FK_NTYPES; i++) {
        struct fk_type *t = &s->types[i];
        char name[160];
        snprintf(name, sizeof(name), "%s%s%s", t->plural, t->group[0] ? "." : "", t->group);
        json_t *arr = json_object_get(objs, name);
        size_t idx;
        json_t *v;
        json_array_foreach(arr, idx, v)
        {
            char key[600];
            if (fk_key(t, fk_meta_str(v, "namespace"), fk_meta_str(v, "name"), key, sizeof(key)))
                continue;
            json_object_set(t->objects, key, v);
        }
        t->sorted_dirty = 1;
    }
    /* A restarted apiserver has an empty watch cache: older rvs get 410. */
    s->hist_floor = s->rv;
    s->continue_floor = s->rv;
    rc = 0;
out:
    json_decref(root);
    return rc;
}
