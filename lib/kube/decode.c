/* JSON to plain structs for Pods, Nodes, Projects and Queues (see
 * decode.h). Structural errors fail the decode; invalid values go to the
 * object's `problem` so the controller can report them. */
#include "kube/decode.h"
#include "kube/timequota.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/mig.h"
#include "base/clock.h"
#include "base/duration.h"
#include "base/quantity.h"
#include "engine/constraints.h"

/* ---- small readers ---------------------------------------------------- */

/* Returns the member if it is an object, NULL when absent or null; sets
 * *rc to FAIR_EINVAL when present with another type. */
static const json_t *get_obj(const json_t *parent, const char *key, const char *path, int *rc,
                             struct fair_error *err)
{
    const json_t *v = parent ? json_object_get(parent, key) : NULL;
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_object(v)) {
        *rc = fair_error_set(err, FAIR_EINVAL, "%s: want an object", path);
        return NULL;
    }
    return v;
}

static const json_t *get_arr(const json_t *parent, const char *key, const char *path, int *rc,
                             struct fair_error *err)
{
    const json_t *v = parent ? json_object_get(parent, key) : NULL;
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_array(v)) {
        *rc = fair_error_set(err, FAIR_EINVAL, "%s: want an array", path);
        return NULL;
    }
    if (json_array_size(v) > FAIR_DECODE_MAX_ITEMS) {
        *rc =
            fair_error_set(err, FAIR_ERANGE, "%s: more than %d items", path, FAIR_DECODE_MAX_ITEMS);
        return NULL;
    }
    return v;
}

/* A borrowed string member: NULL when absent or null; FAIR_EINVAL for
 * another type. */
static int peek_str(const json_t *parent, const char *key, const char *path, const char **out,
                    struct fair_error *err)
{
    *out = NULL;
    const json_t *v = parent ? json_object_get(parent, key) : NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return fair_error_set(err, FAIR_EINVAL, "%s: want a string", path);
    if (json_string_length(v) > FAIR_DECODE_MAX_STR)
        return fair_error_set(err, FAIR_ERANGE, "%s: longer than %d bytes", path,
                              FAIR_DECODE_MAX_STR);
    *out = json_string_value(v);
    return 0;
}

static int dup_str(const char *s, char **out)
{
    *out = NULL;
    if (!s)
        return 0;
    *out = fair_strdup(s);
    return *out ? 0 : FAIR_ENOMEM;
}

static int get_str(const json_t *parent, const char *key, const char *path, char **out,
                   struct fair_error *err)
{
    const char *s;
    *out = NULL;
    int rc = peek_str(parent, key, path, &s, err);
    if (rc)
        return rc;
    rc = dup_str(s, out);
    if (rc)
        fair_error_set(err, rc, "%s: out of memory", path);
    return rc;
}

/* A string member borrowed from the document (pods are decoded with
 * borrowed strings, then packed into one allocation: see pod_pack()). */
static int borrow_str(const json_t *parent, const char *key, const char *path, char **out,
                      struct fair_error *err)
{
    const char *s;
    int rc = peek_str(parent, key, path, &s, err);
    *out = (char *)s;
    return rc;
}

static int get_int(const json_t *parent, const char *key, const char *path, int64_t *out,
                   struct fair_error *err)
{
    const json_t *v = parent ? json_object_get(parent, key) : NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return fair_error_set(err, FAIR_EINVAL, "%s: want an integer", path);
    *out = json_integer_value(v);
    return 0;
}

/* Set by add_problem() when it could not record a message. The decoders
 * clear it on entry and fail with FAIR_ENOMEM when it is set on exit: an
 * object whose problem was lost must not pass for a valid one. Per thread,
 * since the simulator may decode on several. */
static _Thread_local bool problem_lost;

/* Appends a message to *problem ("a; b"). On allocation failure the
 * message is lost and problem_lost is set. */
__attribute__((format(printf, 2, 3))) static void add_problem(char **problem, const char *fmt, ...)
{
    struct fair_buf b;
    int rc = 0;
    fair_buf_init(&b, 2048);
    if (*problem) {
        rc = fair_buf_appends(&b, *problem);
        if (rc != FAIR_ENOMEM)
            rc = fair_buf_appends(&b, "; ");
    }
    if (rc != FAIR_ENOMEM) {
        va_list ap;
        va_start(ap, fmt);
        rc = fair_buf_vappendf(&b, fmt, ap);
        va_end(ap);
    }
    /* FAIR_ERANGE (over 2048 bytes) keeps what fits. */
    char *s = rc == FAIR_ENOMEM ? NULL : fair_buf_detach(&b);
    if (s) {
        fair_free(*problem);
        *problem = s;
    } else {
        problem_lost = true;
    }
    fair_buf_release(&b);
}

int fair_kquantity_decode(const json_t *v, int milli, int64_t *out, const char *what,
                          struct fair_error *err)
{
    char tmp[64];
    const char *s;
    if (json_is_string(v)) {
        s = json_string_value(v);
    } else if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (!milli) {
            *out = i;
            return 0;
        }
        if (i > INT64_MAX / 1000 || i < INT64_MIN / 1000)
            return fair_error_set(err, FAIR_ERANGE, "%s: %" PRId64 " is out of range", what,
                                  (int64_t)i);
        *out = i * 1000;
        return 0;
    } else if (json_is_real(v)) {
        /* %.15g gives back the decimal text the user wrote (0.1, not
         * 0.1000000000000000055). */
        snprintf(tmp, sizeof tmp, "%.15g", json_real_value(v));
        s = tmp;
    } else {
        return fair_error_set(err, FAIR_EINVAL, "%s: want a quantity (string or number)", what);
    }
    int rc = milli ? fair_quantity_parse_milli(s, out, err) : fair_quantity_parse(s, out, err);
    if (rc)
        fair_error_prefix(err, "%s: ", what);
    return rc;
}

/* Completes the message of a failed decode: an out-of-memory failure that
 * set none gets one, and the message names the object (kind and name). */
static void name_failure(int rc, struct fair_error *err, const char *kind, const char *name)
{
    if (rc == FAIR_ENOMEM && err && !err->msg[0])
        fair_error_set(err, rc, "out of memory");
    fair_error_prefix(err, "%s %s: ", kind, name ? name : "?");
}

static int64_t parse_time(const json_t *parent, const char *key)
{
    const json_t *v = json_object_get(parent, key);
    int64_t ms = 0;
    if (json_is_string(v) && fair_time_parse_rfc3339(json_string_value(v), &ms) == 0)
        return ms;
    return 0;
}

static int kmeta_decode(const json_t *obj, struct fair_kmeta *m, bool borrow,
                        struct fair_error *err)
{
    int rc = 0;
    int (*str)(const json_t *, const char *, const char *, char **, struct fair_error *) =
        borrow ? borrow_str : get_str;
    memset(m, 0, sizeof *m);
    if (!json_is_object(obj))
        return fair_error_set(err, FAIR_EINVAL, "object: want a JSON object");
    const json_t *md = get_obj(obj, "metadata", "metadata", &rc, err);
    if (rc)
        return rc;
    if (!md)
        return fair_error_set(err, FAIR_EINVAL, "metadata: missing");
    if ((rc = str(md, "name", "metadata.name", &m->name, err)))
        goto out;
    if (!m->name || !m->name[0]) {
        rc = fair_error_set(err, FAIR_EINVAL, "metadata.name: missing");
        goto out;
    }
    if ((rc = str(md, "uid", "metadata.uid", &m->uid, err)) ||
        (rc = str(md, "namespace", "metadata.namespace", &m->namespace_, err)) ||
        (rc = str(md, "resourceVersion", "metadata.resourceVersion", &m->resource_version, err)) ||
        (rc = get_int(md, "generation", "metadata.generation", &m->generation, err)))
        goto out;
    if (m->namespace_ && !m->namespace_[0]) {
        if (!borrow)
            fair_free(m->namespace_);
        m->namespace_ = NULL;
    }
    m->creation_ms = parse_time(md, "creationTimestamp");
    m->deletion_ms = parse_time(md, "deletionTimestamp");
out:
    if (rc && !borrow)
        fair_kmeta_release(m);
    if (rc && borrow)
        memset(m, 0, sizeof *m);
    return rc;
}

int fair_kmeta_decode(const json_t *obj, struct fair_kmeta *m, struct fair_error *err)
{
    return kmeta_decode(obj, m, false, err);
}

/* The spec, status and metadata.labels objects of a pod or node that
 * kmeta_decode has accepted; each NULL where absent or null. */
static int get_sections(const json_t *obj, const json_t **spec, const json_t **status,
                        const json_t **labels, struct fair_error *err)
{
    int rc = 0;
    *status = *labels = NULL;
    *spec = get_obj(obj, "spec", "spec", &rc, err);
    if (rc)
        return rc;
    *status = get_obj(obj, "status", "status", &rc, err);
    if (rc)
        return rc;
    *labels = get_obj(json_object_get(obj, "metadata"), "labels", "metadata.labels", &rc, err);
    return rc;
}

/* String-to-string maps (labels, annotations, nodeSelector). */
static int map_get(const json_t *map, const char *key, const char *path, const char **out,
                   struct fair_error *err)
{
    return peek_str(map, key, path, out, err);
}

static int decode_labels(const json_t *map, const char *path, bool borrow, struct fair_label **out,
                         size_t *n, struct fair_error *err)
{
    *out = NULL;
    *n = 0;
    if (!map)
        return 0;
    size_t cnt = json_object_size(map);
    if (cnt == 0)
        return 0;
    if (cnt > FAIR_DECODE_MAX_ITEMS)
        return fair_error_set(err, FAIR_ERANGE, "%s: more than %d entries", path,
                              FAIR_DECODE_MAX_ITEMS);
    struct fair_label *l = fair_calloc(cnt, sizeof *l);
    if (!l)
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", path);
    const char *k;
    json_t *v;
    size_t i = 0;
    int rc = 0;
    json_object_foreach((json_t *)map, k, v)
    {
        if (!json_is_string(v)) {
            rc = fair_error_set(err, FAIR_EINVAL, "%s[\"%s\"]: want a string", path, k);
            break;
        }
        l[i].key = borrow ? k : fair_strdup(k);
        l[i].value = borrow ? json_string_value(v) : fair_strdup(json_string_value(v));
        i++;
        if (!l[i - 1].key || !l[i - 1].value) {
            rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", path);
            break;
        }
    }
    if (rc) {
        for (size_t j = 0; !borrow && j < i; j++) {
            fair_free((char *)l[j].key);
            fair_free((char *)l[j].value);
        }
        fair_free(l);
        return rc;
    }
    *out = l;
    *n = i;
    return 0;
}

static int parse_effect(const char *s, enum fair_taint_effect *e)
{
    if (!strcmp(s, "NoSchedule"))
        *e = FAIR_TAINT_NO_SCHEDULE;
    else if (!strcmp(s, "PreferNoSchedule"))
        *e = FAIR_TAINT_PREFER_NO_SCHEDULE;
    else if (!strcmp(s, "NoExecute"))
        *e = FAIR_TAINT_NO_EXECUTE;
    else
        return FAIR_EINVAL;
    return 0;
}

/* ---- pods ------------------------------------------------------------- */

static const char *const res_keys[FAIR_RES_COUNT] = {FAIR_RES_NAME_GPU, "cpu", "memory"};

/* Requests of one container (limits where a request is absent). */
static int container_resources(const json_t *c, const char *list, size_t idx,
                               struct fair_resources *r, char **problem, struct fair_error *err)
{
    int rc = 0;
    memset(r, 0, sizeof *r);
    const json_t *res = get_obj(c, "resources", "resources", &rc, err);
    if (rc || !res)
        return rc;
    const json_t *req = get_obj(res, "requests", "resources.requests", &rc, err);
    if (rc)
        return rc;
    const json_t *lim = get_obj(res, "limits", "resources.limits", &rc, err);
    if (rc)
        return rc;
    for (int i = 0; i < FAIR_RES_COUNT; i++) {
        const json_t *v = req ? json_object_get(req, res_keys[i]) : NULL;
        const char *which = "requests";
        if (!v) {
            v = lim ? json_object_get(lim, res_keys[i]) : NULL;
            which = "limits";
        }
        if (!v)
            continue;
        /* The field's name is only formatted when needed: this runs for
         * every container of every pod event. */
        char what[160];
        struct fair_error qe = {0};
        int64_t x = 0;
        if (fair_kquantity_decode(v, i != FAIR_RES_MEM, &x, "", &qe))
            snprintf(what, sizeof what, "spec.%s[%zu].resources.%s[\"%s\"]", list, idx, which,
                     res_keys[i]);
        else
            what[0] = '\0';
        if (what[0]) {
            add_problem(problem, "%s%s", what, qe.msg);
            continue;
        }
        if (x < 0 || (i == FAIR_RES_GPU && x % 1000))
            snprintf(what, sizeof what, "spec.%s[%zu].resources.%s[\"%s\"]", list, idx, which,
                     res_keys[i]);
        if (x < 0) {
            add_problem(problem, "%s: negative", what);
            continue;
        }
        if (i == FAIR_RES_GPU && x % 1000) {
            add_problem(problem,
                        "%s: %s must be a whole number of GPUs (use the %s annotation "
                        "for fractions)",
                        what, FAIR_RES_NAME_GPU, FAIR_ANN_GPU_FRACTION);
            continue;
        }
        r->v[i] = x;
    }
    return 0;
}

static int pod_requests(const json_t *spec, struct fair_kpod *p, struct fair_error *err)
{
    int rc = 0;
    const json_t *cs = get_arr(spec, "containers", "spec.containers", &rc, err);
    if (rc)
        return rc;
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c)
    {
        if (!json_is_object(c))
            return fair_error_set(err, FAIR_EINVAL, "spec.containers[%zu]: want an object", i);
        struct fair_resources r;
        if ((rc = container_resources(c, "containers", i, &r, &p->problem, err)))
            return rc;
        for (int k = 0; k < FAIR_RES_COUNT; k++)
            if (r.v[k] <= INT64_MAX - p->request.v[k])
                p->request.v[k] += r.v[k];
    }
    /* Init containers run one at a time before the others: the pod needs
     * the larger of their maximum and the containers' sum. */
    const json_t *ics = get_arr(spec, "initContainers", "spec.initContainers", &rc, err);
    if (rc)
        return rc;
    json_array_foreach(ics, i, c)
    {
        if (!json_is_object(c))
            return fair_error_set(err, FAIR_EINVAL, "spec.initContainers[%zu]: want an object", i);
        struct fair_resources r;
        if ((rc = container_resources(c, "initContainers", i, &r, &p->problem, err)))
            return rc;
        for (int k = 0; k < FAIR_RES_COUNT; k++)
            if (r.v[k] > p->request.v[k])
                p->request.v[k] = r.v[k];
    }
    return 0;
}

static int pod_tolerations(const json_t *spec, struct fair_kpod *p, struct fair_error *err)
{
    int rc = 0;
    const json_t *ts = get_arr(spec, "tolerations", "spec.tolerations", &rc, err);
    if (rc || !ts || json_array_size(ts) == 0)
        return rc;
    p->tolerations = fair_calloc(json_array_size(ts), sizeof *p->tolerations);
    if (!p->tolerations)
        return fair_error_set(err, FAIR_ENOMEM, "spec.tolerations: out of memory");
    size_t i;
    const json_t *t;
    json_array_foreach(ts, i, t)
    {
        /* Formatted only for messages: this runs for every pod event. */
        const char *path = "spec.tolerations[]";
        if (!json_is_object(t))
            return fair_error_set(err, FAIR_EINVAL, "spec.tolerations[%zu]: want an object", i);
        struct fair_toleration *o = &p->tolerations[p->ntolerations];
        const char *key, *op, *value, *effect;
        if ((rc = peek_str(t, "key", path, &key, err)) ||
            (rc = peek_str(t, "operator", path, &op, err)) ||
            (rc = peek_str(t, "value", path, &value, err)) ||
            (rc = peek_str(t, "effect", path, &effect, err)))
            return rc;
        if (!op || !op[0] || !strcmp(op, "Equal")) {
            o->op = FAIR_TOLERATE_EQUAL;
        } else if (!strcmp(op, "Exists")) {
            o->op = FAIR_TOLERATE_EXISTS;
        } else {
            add_problem(&p->problem, "spec.tolerations[%zu].operator: unknown operator \"%s\"", i,
                        op);
            continue;
        }
        if (!effect || !effect[0]) {
            o->any_effect = true;
        } else if (parse_effect(effect, &o->effect)) {
            add_problem(&p->problem, "spec.tolerations[%zu].effect: unknown effect \"%s\"", i,
                        effect);
            continue;
        }
        o->key = key;
        o->value = value;
        p->ntolerations++;
    }
    if (p->ntolerations == 0) {
        fair_free(p->tolerations);
        p->tolerations = NULL;
    }
    return 0;
}

/* ---- other resources and host ports ------------------------------------ */

/* Whether name is one of the resources the engine counts on its own (GPU,
 * CPU, memory) or none at all (pods). */
static bool own_resource(const char *name)
{
    for (int i = 0; i < FAIR_RES_COUNT; i++)
        if (!strcmp(name, res_keys[i]))
            return true;
    return !strcmp(name, "pods");
}

/* A quantity in whole units, a fraction rounded up (as Value() does). */
static bool scalar_value(const json_t *v, int64_t *out)
{
    int64_t m = 0;
    struct fair_error qe = {0};
    if (fair_kquantity_decode(v, 1, &m, "", &qe) || m < 0)
        return false;
    *out = m / 1000 + (m % 1000 != 0);
    return true;
}

struct scal_acc {
    const char *name[FAIR_POD_MAX_SCALARS];
    int64_t sum[FAIR_POD_MAX_SCALARS]; /* containers */
    int64_t max[FAIR_POD_MAX_SCALARS]; /* init containers */
    size_t n;
    bool over;
};

static int scal_slot(struct scal_acc *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->name[i], name))
            return (int)i;
    if (a->n == FAIR_POD_MAX_SCALARS) {
        a->over = true;
        return -1;
    }
    a->name[a->n] = name;
    a->sum[a->n] = a->max[a->n] = 0;
    return (int)a->n++;
}

/* One container's requests (limits where no request) of other resources. */
static void container_scalars(const json_t *c, bool init, struct scal_acc *a, char **problem)
{
    const json_t *res = json_object_get(c, "resources");
    const json_t *req = json_is_object(res) ? json_object_get(res, "requests") : NULL;
    const json_t *lim = json_is_object(res) ? json_object_get(res, "limits") : NULL;
    for (int pass = 0; pass < 2; pass++) {
        const json_t *m = pass ? lim : req;
        if (!json_is_object(m))
            continue;
        const char *name;
        const json_t *v;
        json_object_foreach((json_t *)m, name, v)
        {
            if (own_resource(name) || (pass && json_is_object(req) && json_object_get(req, name)))
                continue;
            int64_t x = 0;
            if (strlen(name) > 253 || !scalar_value(v, &x)) {
                add_problem(problem, "resources[\"%.64s\"]: not a quantity this scheduler reads",
                            name);
                continue;
            }
            int k = scal_slot(a, name);
            if (k < 0)
                continue;
            if (init) {
                if (x > a->max[k])
                    a->max[k] = x;
            } else if (x <= INT64_MAX - a->sum[k]) {
                a->sum[k] += x;
            }
        }
    }
}

/* Most MIG instances one pod may ask for, all profiles together: more than
 * any node holds (64 GPUs x 7), and it keeps the charge far from overflow. */
#define FAIR_POD_MAX_MIG 448

/* The charge of the MIG instances in p's other resources (mig_milli). A
 * profile that does not parse, too many instances, or MIG next to a GPU
 * request, a fraction or a GPU memory ask makes the pod invalid: its GPU
 * charge would be ambiguous. */
static void pod_mig(struct fair_kpod *p)
{
    int64_t milli = 0, count = 0;
    bool bad = false;
    for (size_t i = 0; i < p->nscalars; i++) {
        const struct fair_scalar *sc = &p->scalars[i];
        if (!fair_mig_is_resource(sc->name) || sc->value <= 0)
            continue;
        struct fair_error e = {0};
        int64_t share = 0;
        if (fair_mig_share_milli(sc->name, &share, &e)) {
            add_problem(&p->problem, "resources[\"%.80s\"]: %s", sc->name, e.msg);
            bad = true;
            continue;
        }
        if (sc->value > FAIR_POD_MAX_MIG - count) {
            add_problem(&p->problem, "resources: more than %d MIG instances in one pod",
                        FAIR_POD_MAX_MIG);
            return;
        }
        count += sc->value;
        milli += sc->value * share;
    }
    if (bad || count == 0)
        return;
    if (p->request.v[FAIR_RES_GPU] > 0 || p->gpu_fraction_milli > 0 || p->gpu_memory_bytes > 0) {
        add_problem(&p->problem,
                    "resources: MIG instances (%s<profile>) next to %s, %s or %s; ask for one "
                    "kind of GPU per pod",
                    FAIR_MIG_PREFIX, FAIR_RES_NAME_GPU, FAIR_ANN_GPU_FRACTION, FAIR_ANN_GPU_MEMORY);
        return;
    }
    p->mig_milli = milli;
}

static int pod_scalars_ports(const json_t *spec, struct fair_kpod *p)
{
    struct scal_acc a;
    a.n = 0;
    a.over = false;
    size_t nports = 0, nbytes = 0;
    const json_t *cs = spec ? json_object_get(spec, "containers") : NULL;
    const json_t *ics = spec ? json_object_get(spec, "initContainers") : NULL;
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c)
    {
        container_scalars(c, false, &a, &p->problem);
        size_t j;
        const json_t *port;
        json_array_foreach(json_object_get(c, "ports"), j, port)
        {
            json_int_t hp = json_integer_value(json_object_get(port, "hostPort"));
            if (hp <= 0)
                continue;
            const char *ip = json_string_value(json_object_get(port, "hostIP"));
            nports++;
            nbytes += ip ? strlen(ip) + 1 : 0;
        }
    }
    json_array_foreach(ics, i, c) container_scalars(c, true, &a, &p->problem);
    if (a.over)
        add_problem(&p->problem,
                    "resources: more than %d resources other than CPU, memory and "
                    "GPU; Fairshare does not schedule this pod",
                    FAIR_POD_MAX_SCALARS);
    if (nports > FAIR_POD_MAX_HOST_PORTS) {
        add_problem(&p->problem,
                    "spec.containers[].ports: more than %d host ports; Fairshare "
                    "does not schedule this pod",
                    FAIR_POD_MAX_HOST_PORTS);
        nports = 0;
    }
    if (a.over || a.n + nports == 0)
        return 0;
    for (size_t k = 0; k < a.n; k++)
        nbytes += strlen(a.name[k]) + 1;
    size_t size =
        a.n * sizeof(struct fair_scalar) + nports * sizeof(struct fair_host_port) + nbytes;
    char *block = fair_calloc(1, size);
    if (!block)
        return FAIR_ENOMEM;
    struct fair_scalar *sc = (struct fair_scalar *)block;
    struct fair_host_port *hp = (struct fair_host_port *)(block + a.n * sizeof(*sc));
    char *str = (char *)(hp + nports);
    for (size_t k = 0; k < a.n; k++) {
        size_t l = strlen(a.name[k]) + 1;
        memcpy(str, a.name[k], l);
        sc[k].name = str;
        sc[k].value = a.sum[k] > a.max[k] ? a.sum[k] : a.max[k];
        str += l;
    }
    size_t np = 0;
    json_array_foreach(cs, i, c)
    {
        size_t j;
        const json_t *port;
        json_array_foreach(json_object_get(c, "ports"), j, port)
        {
            json_int_t v = json_integer_value(json_object_get(port, "hostPort"));
            if (v <= 0 || np == nports)
                continue;
            const char *ip = json_string_value(json_object_get(port, "hostIP"));
            const char *proto = json_string_value(json_object_get(port, "protocol"));
            hp[np].port = v > INT32_MAX ? INT32_MAX : (int32_t)v;
            hp[np].protocol = proto && !strcmp(proto, "UDP")    ? FAIR_PROTO_UDP
                              : proto && !strcmp(proto, "SCTP") ? FAIR_PROTO_SCTP
                                                                : FAIR_PROTO_TCP;
            if (ip) {
                size_t l = strlen(ip) + 1;
                memcpy(str, ip, l);
                hp[np].host_ip = str;
                str += l;
            }
            np++;
        }
    }
    p->sched_extra = block;
    p->scalars = a.n ? sc : NULL;
    p->nscalars = a.n;
    p->host_ports = nports ? hp : NULL;
    p->nhost_ports = nports;
    return 0;
}

/* ---- spec.affinity.nodeAffinity ---------------------------------------- */

/* The node affinity is read in two passes over the JSON: the first counts
 * (and enforces the limits of engine/constraints.h), the second fills one
 * allocation laid out as: the struct, the terms (required then preferred),
 * the requirements, the value pointers, then the strings. A shape the API
 * server would never produce, or one over the limits, is a problem of the
 * pod (it is rejected with the message), never half-read. */
struct aff_build {
    bool fill;
    size_t nterms, npref, nreqs, nvalues, nbytes;
    struct fair_node_term *terms;
    struct fair_node_req *reqs;
    const char **values;
    char *str;
    const char *bad; /* first problem found: a static description */
    char where[96];
};

/* The string step of a two-pass build (the node and pod affinity builders
 * below): the counting pass adds s's size to *nbytes, the filling pass
 * copies s to *str and moves it on. */
static const char *two_pass_str(bool fill, size_t *nbytes, char **str, const char *s)
{
    size_t n = strlen(s) + 1;
    if (!fill) {
        *nbytes += n;
        return NULL;
    }
    memcpy(*str, s, n);
    const char *r = *str;
    *str += n;
    return r;
}

static const char *aff_str(struct aff_build *b, const char *s)
{
    return two_pass_str(b->fill, &b->nbytes, &b->str, s);
}

static bool aff_fail(struct aff_build *b, const char *what, const char *where)
{
    if (!b->bad) {
        b->bad = what;
        snprintf(b->where, sizeof b->where, "%s", where);
    }
    return false;
}

static bool parse_sel_op(const char *s, uint8_t *op)
{
    static const char *const names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    for (uint8_t i = 0; i < 6; i++)
        if (!strcmp(s, names[i])) {
            *op = i;
            return true;
        }
    return false;
}

/* One matchExpressions or matchFields list of a term. */
static bool aff_reqs(struct aff_build *b, const json_t *list, bool field, struct fair_node_term *t,
                     size_t *count, const char *path)
{
    if (!list || json_is_null(list))
        return true;
    if (!json_is_array(list))
        return aff_fail(b, "want an array", path);
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e)
    {
        if (++*count > FAIR_AFFINITY_MAX_REQS)
            return aff_fail(b, "too many requirements in one term", path);
        const json_t *key = json_object_get(e, "key"), *op = json_object_get(e, "operator");
        const json_t *vals = json_object_get(e, "values");
        if (!json_is_object(e) || !json_is_string(key) || !json_is_string(op) ||
            (vals && !json_is_null(vals) && !json_is_array(vals)))
            return aff_fail(b, "want {key, operator, values}", path);
        if (json_string_length(key) > FAIR_DECODE_MAX_STR || json_string_length(op) > 64)
            return aff_fail(b, "string too long", path);
        size_t nv = json_is_array(vals) ? json_array_size(vals) : 0;
        if (nv > FAIR_AFFINITY_MAX_VALUES)
            return aff_fail(b, "too many values in one requirement", path);
        struct fair_node_req *r = b->fill ? &b->reqs[b->nreqs] : NULL;
        b->nreqs++;
        const char *k = aff_str(b, json_string_value(key));
        uint8_t o = 0;
        bool known = parse_sel_op(json_string_value(op), &o);
        if (r) {
            r->key = k;
            r->op = o;
            r->field = field;
            r->nvalues = (uint32_t)nv;
            r->values = nv ? &b->values[b->nvalues] : NULL;
        }
        for (size_t j = 0; j < nv; j++) {
            const json_t *v = json_array_get(vals, j);
            if (!json_is_string(v) || json_string_length(v) > FAIR_DECODE_MAX_STR)
                return aff_fail(b, "values must be strings", path);
            const char *sv = aff_str(b, json_string_value(v));
            if (b->fill)
                b->values[b->nvalues] = sv;
            b->nvalues++;
        }
        if (b->nvalues > FAIR_AFFINITY_MAX_TOTAL)
            return aff_fail(b, "too many values in all", path);
        /* An unknown operator or a bad value is Kubernetes' parse error:
         * the term matches nothing. */
        if (t && (!known || !fair_node_req_valid(r)))
            t->invalid = true;
    }
    return true;
}

static bool aff_term(struct aff_build *b, const json_t *term, int32_t weight, const char *path)
{
    if (!json_is_object(term))
        return aff_fail(b, "want an object", path);
    struct fair_node_term *t = b->fill ? &b->terms[b->nterms + b->npref] : NULL;
    size_t first = b->nreqs, count = 0;
    if (t) {
        t->reqs = &b->reqs[first];
        t->weight = weight;
    }
    if (!aff_reqs(b, json_object_get(term, "matchExpressions"), false, t, &count, path) ||
        !aff_reqs(b, json_object_get(term, "matchFields"), true, t, &count, path))
        return false;
    if (t)
        t->nreqs = (uint32_t)(b->nreqs - first);
    return true;
}

static bool aff_walk(struct aff_build *b, const json_t *na)
{
    const json_t *req = json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution");
    const json_t *pref = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
    b->nterms = b->npref = b->nreqs = b->nvalues = 0;
    if (req && !json_is_null(req)) {
        const char *path = "spec.affinity.nodeAffinity.required...nodeSelectorTerms";
        const json_t *terms = json_object_get(req, "nodeSelectorTerms");
        if (!json_is_object(req) || (terms && !json_is_null(terms) && !json_is_array(terms)))
            return aff_fail(b, "want {nodeSelectorTerms: [...]}", path);
        if (json_array_size(terms) > FAIR_AFFINITY_MAX_TERMS)
            return aff_fail(b, "too many terms", path);
        size_t i;
        const json_t *t;
        json_array_foreach(terms, i, t)
        {
            if (!aff_term(b, t, 0, path))
                return false;
            b->nterms++;
        }
    }
    if (pref && !json_is_null(pref)) {
        const char *path = "spec.affinity.nodeAffinity.preferred...";
        if (!json_is_array(pref))
            return aff_fail(b, "want an array", path);
        if (json_array_size(pref) > FAIR_AFFINITY_MAX_TERMS)
            return aff_fail(b, "too many terms", path);
        size_t i;
        const json_t *t;
        json_array_foreach(pref, i, t)
        {
            const json_t *w = json_object_get(t, "weight");
            if (!json_is_object(t) || !json_is_integer(w) || json_integer_value(w) < 0 ||
                json_integer_value(w) > 100)
                return aff_fail(b, "want {weight: 0..100, preference}", path);
            if (!aff_term(b, json_object_get(t, "preference"), (int32_t)json_integer_value(w),
                          path))
                return false;
            b->npref++;
        }
    }
    return true;
}

/* Builds *out from a nodeAffinity object na (required and preferred
 * terms); a problem is told through *problem, prefixed by what (wrapped:
 * na wraps a node selector of another object, so the paths of a pod's
 * affinity would mislead), and leaves *out NULL. Returns 0 or
 * FAIR_ENOMEM. */
static int node_affinity_build(const json_t *na, const char *what, bool wrapped, char **problem,
                               struct fair_node_affinity **out)
{
    *out = NULL;
    struct aff_build b;
    memset(&b, 0, sizeof b);
    if (!json_is_object(na) || !aff_walk(&b, na)) {
        add_problem(problem, "%s: %s; Fairshare does not schedule this pod",
                    b.bad && !wrapped ? b.where : what, b.bad ? b.bad : "want an object");
        return 0;
    }
    bool required =
        !json_is_null(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution")) &&
        json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution");
    if (!required && b.npref == 0)
        return 0;
    size_t size = sizeof(struct fair_node_affinity);
    size_t t_off = size;
    size += (b.nterms + b.npref) * sizeof(struct fair_node_term);
    size_t r_off = size;
    size += b.nreqs * sizeof(struct fair_node_req);
    size_t v_off = size;
    size += b.nvalues * sizeof(const char *);
    size_t s_off = size;
    size += b.nbytes;
    char *block = fair_calloc(1, size);
    if (!block)
        return FAIR_ENOMEM;
    size_t nterms = b.nterms, npref = b.npref;
    b.fill = true;
    b.terms = (struct fair_node_term *)(block + t_off);
    b.reqs = (struct fair_node_req *)(block + r_off);
    b.values = (const char **)(block + v_off);
    b.str = block + s_off;
    aff_walk(&b, na);
    struct fair_node_affinity *a = (struct fair_node_affinity *)block;
    a->required = required;
    a->terms = nterms ? b.terms : NULL;
    a->nterms = nterms;
    a->preferred = npref ? b.terms + nterms : NULL;
    a->npreferred = npref;
    *out = a;
    return 0;
}

static int pod_affinity(const json_t *spec, struct fair_kpod *p)
{
    const json_t *aff = spec ? json_object_get(spec, "affinity") : NULL;
    const json_t *na = json_is_object(aff) ? json_object_get(aff, "nodeAffinity") : NULL;
    if (!na || json_is_null(na))
        return 0;
    return node_affinity_build(na, "spec.affinity.nodeAffinity", false, &p->problem,
                               &p->node_affinity);
}

/* A NodeSelector (PersistentVolume spec.nodeAffinity.required) as
 * required node affinity terms. */
static int node_selector_build(const json_t *sel, const char *what, char **problem,
                               struct fair_node_affinity **out)
{
    json_t *na = json_object();
    if (!na ||
        json_object_set(na, "requiredDuringSchedulingIgnoredDuringExecution", (json_t *)sel)) {
        json_decref(na);
        return FAIR_ENOMEM;
    }
    int rc = node_affinity_build(na, what, true, problem, out);
    json_decref(na);
    return rc;
}

/* ---- spec.volumes: the claims ------------------------------------------ */

#define POD_MAX_CLAIMS 256

/* The claim of volume v ("" and NULL: none): persistentVolumeClaim's
 * claimName, or "<pod>-<volume>" for a generic ephemeral volume, written
 * to buf. */
static const char *volume_claim(const json_t *v, const char *pod, char *buf, size_t n)
{
    const json_t *pvc = json_object_get(v, "persistentVolumeClaim");
    if (json_is_object(pvc)) {
        const char *c = json_string_value(json_object_get(pvc, "claimName"));
        return c && *c && strlen(c) <= 253 ? c : NULL;
    }
    const json_t *eph = json_object_get(v, "ephemeral");
    const char *vn = json_string_value(json_object_get(v, "name"));
    if (json_is_object(eph) && vn && pod) {
        int w = snprintf(buf, n, "%s-%s", pod, vn);
        return w > 0 && (size_t)w < n && w <= 253 ? buf : NULL;
    }
    return NULL;
}

static int pod_claims(const json_t *spec, struct fair_kpod *p)
{
    const json_t *vols = spec ? json_object_get(spec, "volumes") : NULL;
    if (!json_is_array(vols) || json_array_size(vols) == 0)
        return 0;
    if (json_array_size(vols) > POD_MAX_CLAIMS) {
        add_problem(&p->problem, "spec.volumes: more than %d volumes", POD_MAX_CLAIMS);
        return 0;
    }
    char buf[512];
    size_t n = 0, bytes = 0, i;
    const json_t *v;
    json_array_foreach(vols, i, v)
    {
        const char *c = volume_claim(v, p->meta.name, buf, sizeof buf);
        if (c) {
            n++;
            bytes += strlen(c) + 1;
        }
    }
    if (!n)
        return 0;
    char *block = fair_malloc(n * sizeof(char *) + bytes);
    if (!block)
        return FAIR_ENOMEM;
    const char **arr = (const char **)block;
    char *str = block + n * sizeof(char *);
    size_t k = 0;
    json_array_foreach(vols, i, v)
    {
        const char *c = volume_claim(v, p->meta.name, buf, sizeof buf);
        if (!c)
            continue;
        size_t len = strlen(c) + 1;
        memcpy(str, c, len);
        arr[k++] = str;
        str += len;
    }
    p->claims = arr;
    p->nclaims = n;
    p->claims_mem = block;
    return 0;
}

/* ---- spec.affinity.podAffinity and podAntiAffinity ----------------------- */

/* Required terms only (preferred ones are not read). Two passes like the
 * node affinity: count (limits), then fill one allocation: the struct,
 * the terms, the matchLabels, the expressions, the value and namespace
 * pointers, the strings. */
#define POD_AFF_MAX_TERMS 32
#define POD_AFF_MAX_REQS 32
#define POD_AFF_MAX_VALUES 256

struct paff_build {
    bool fill;
    size_t nterms, nlabels, nreqs, nptrs, nbytes;
    struct fair_pod_term *terms;
    struct fair_label *labels;
    struct fair_node_req *reqs;
    const char **ptrs;
    char *str;
    const char *bad;
};

static const char *paff_str(struct paff_build *b, const char *s)
{
    return two_pass_str(b->fill, &b->nbytes, &b->str, s);
}

static bool paff_fail(struct paff_build *b, const char *what)
{
    if (!b->bad)
        b->bad = what;
    return false;
}

static bool short_str(const json_t *v)
{
    return json_is_string(v) && json_string_length(v) <= FAIR_DECODE_MAX_STR;
}

/* A metav1.LabelSelector into sel (fill pass); null: matches nothing. */
static bool paff_selector(struct paff_build *b, const json_t *js, struct fair_label_selector *sel)
{
    if (!js || json_is_null(js)) {
        if (sel)
            sel->nothing = true;
        return true;
    }
    if (!json_is_object(js))
        return paff_fail(b, "labelSelector: want an object");
    const json_t *ml = json_object_get(js, "matchLabels");
    const json_t *me = json_object_get(js, "matchExpressions");
    if ((ml && !json_is_null(ml) && !json_is_object(ml)) ||
        (me && !json_is_null(me) && !json_is_array(me)))
        return paff_fail(b, "labelSelector: bad matchLabels or matchExpressions");
    if (json_object_size(ml) + json_array_size(me) > POD_AFF_MAX_REQS)
        return paff_fail(b, "labelSelector: too many requirements");
    if (sel)
        sel->match_labels = &b->labels[b->nlabels];
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)ml, k, v)
    {
        if (!short_str(v) || strlen(k) > FAIR_DECODE_MAX_STR)
            return paff_fail(b, "labelSelector.matchLabels: want strings");
        const char *ks = paff_str(b, k), *vs = paff_str(b, json_string_value(v));
        if (sel) {
            b->labels[b->nlabels] = (struct fair_label){ks, vs};
            sel->nmatch_labels++;
            if (!fair_label_key_valid(ks) || !fair_label_value_valid(vs))
                sel->invalid = true;
        }
        b->nlabels++;
    }
    if (sel)
        sel->exprs = &b->reqs[b->nreqs];
    size_t i;
    const json_t *e;
    json_array_foreach(me, i, e)
    {
        const json_t *key = json_object_get(e, "key"), *op = json_object_get(e, "operator");
        const json_t *vals = json_object_get(e, "values");
        if (!json_is_object(e) || !short_str(key) || !short_str(op) ||
            (vals && !json_is_null(vals) && !json_is_array(vals)))
            return paff_fail(b, "labelSelector.matchExpressions: want {key, operator, values}");
        size_t nv = json_array_size(vals);
        if (nv > POD_AFF_MAX_VALUES)
            return paff_fail(b, "labelSelector.matchExpressions: too many values");
        struct fair_node_req *r = sel ? &b->reqs[b->nreqs] : NULL;
        b->nreqs++;
        const char *ks = paff_str(b, json_string_value(key));
        uint8_t o = 0;
        const char *ops = json_string_value(op);
        /* Label selectors know In, NotIn, Exists and DoesNotExist only. */
        bool known = parse_sel_op(ops, &o) && o <= FAIR_SEL_DOES_NOT_EXIST;
        if (r) {
            r->key = ks;
            r->op = o;
            r->nvalues = (uint32_t)nv;
            r->values = nv ? &b->ptrs[b->nptrs] : NULL;
        }
        for (size_t j = 0; j < nv; j++) {
            const json_t *x = json_array_get(vals, j);
            if (!short_str(x))
                return paff_fail(b, "labelSelector.matchExpressions: values must be strings");
            const char *xs = paff_str(b, json_string_value(x));
            if (b->fill)
                b->ptrs[b->nptrs] = xs;
            b->nptrs++;
        }
        if (sel) {
            sel->nexprs++;
            if (!known || !fair_node_req_valid(r))
                sel->invalid = true;
        }
    }
    return true;
}

/* A list of terms; weighted: preferredDuringScheduling entries,
 * {weight, podAffinityTerm}. */
static bool paff_terms(struct paff_build *b, const json_t *list, bool weighted)
{
    if (!list || json_is_null(list))
        return true;
    if (!json_is_array(list))
        return paff_fail(b, weighted ? "preferredDuringSchedulingIgnoredDuringExecution: want "
                                       "an array"
                                     : "requiredDuringSchedulingIgnoredDuringExecution: want "
                                       "an array");
    if (json_array_size(list) > POD_AFF_MAX_TERMS)
        return paff_fail(b, "too many terms");
    size_t i;
    const json_t *t;
    json_array_foreach(list, i, t)
    {
        json_int_t weight = 0;
        if (weighted) {
            const json_t *w = json_is_object(t) ? json_object_get(t, "weight") : NULL;
            if (!json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 100)
                return paff_fail(b, "a preferred term's weight must be 1 to 100");
            weight = json_integer_value(w);
            t = json_object_get(t, "podAffinityTerm");
            if (!json_is_object(t))
                return paff_fail(b, "a preferred term wants a podAffinityTerm object");
        }
        const json_t *tk = json_object_get(t, "topologyKey");
        const json_t *nss = json_object_get(t, "namespaces");
        const json_t *nsel = json_object_get(t, "namespaceSelector");
        if (!json_is_object(t) || (tk && !short_str(tk)) ||
            (nss && !json_is_null(nss) && !json_is_array(nss)) ||
            (nsel && !json_is_null(nsel) && !json_is_object(nsel)))
            return paff_fail(b, "want {labelSelector, topologyKey, namespaces}");
        if (json_array_size(nss) > POD_AFF_MAX_VALUES)
            return paff_fail(b, "too many namespaces");
        struct fair_pod_term *term = b->fill ? &b->terms[b->nterms] : NULL;
        b->nterms++;
        const char *tks = paff_str(b, tk ? json_string_value(tk) : "");
        if (term) {
            term->topology_key = tks;
            term->weight = (int32_t)weight;
        }
        if (!paff_selector(b, json_object_get(t, "labelSelector"), term ? &term->selector : NULL))
            return false;
        if (term)
            term->namespaces = json_array_size(nss) ? &b->ptrs[b->nptrs] : NULL;
        size_t j;
        const json_t *n;
        json_array_foreach(nss, j, n)
        {
            if (!short_str(n))
                return paff_fail(b, "namespaces: want strings");
            const char *ns = paff_str(b, json_string_value(n));
            if (b->fill)
                b->ptrs[b->nptrs] = ns;
            b->nptrs++;
            if (term)
                term->nnamespaces++;
        }
        if (nsel && json_is_object(nsel)) {
            /* {} selects every namespace; one with requirements, the
             * namespaces whose labels it matches (with those listed). */
            if (!paff_selector(b, nsel, term ? &term->ns_selector : NULL))
                return false;
            if (term && !term->ns_selector.nmatch_labels && !term->ns_selector.nexprs)
                term->all_namespaces = true;
            else if (term)
                term->ns_by_labels = true;
        }
    }
    return true;
}

/* The terms in order: required affinity, required anti-affinity,
 * preferred affinity, preferred anti-affinity; n[0..3] their counts. */
static bool paff_walk(struct paff_build *b, const json_t *pa, const json_t *anti, size_t n[4])
{
    b->nterms = b->nlabels = b->nreqs = b->nptrs = 0;
    const char *req = "requiredDuringSchedulingIgnoredDuringExecution";
    const char *pref = "preferredDuringSchedulingIgnoredDuringExecution";
    for (int k = 0; k < 4; k++) {
        const json_t *o = k % 2 ? anti : pa;
        size_t before = b->nterms;
        if (!paff_terms(b, json_is_object(o) ? json_object_get(o, k < 2 ? req : pref) : NULL,
                        k >= 2))
            return false;
        n[k] = b->nterms - before;
    }
    return true;
}

static int pod_pod_affinity(const json_t *spec, struct fair_kpod *p)
{
    const json_t *aff = spec ? json_object_get(spec, "affinity") : NULL;
    const json_t *pa = json_is_object(aff) ? json_object_get(aff, "podAffinity") : NULL;
    const json_t *anti = json_is_object(aff) ? json_object_get(aff, "podAntiAffinity") : NULL;
    if ((!pa || json_is_null(pa)) && (!anti || json_is_null(anti)))
        return 0;
    struct paff_build b;
    memset(&b, 0, sizeof b);
    size_t n[4] = {0, 0, 0, 0};
    if ((pa && !json_is_null(pa) && !json_is_object(pa)) ||
        (anti && !json_is_null(anti) && !json_is_object(anti)) || !paff_walk(&b, pa, anti, n)) {
        add_problem(&p->problem,
                    "spec.affinity pod (anti-)affinity: %s; Fairshare does not "
                    "schedule this pod",
                    b.bad ? b.bad : "want objects");
        return 0;
    }
    if (b.nterms == 0)
        return 0;
    size_t size = sizeof(struct fair_pod_affinity);
    size_t t_off = size;
    size += b.nterms * sizeof(struct fair_pod_term);
    size_t l_off = size;
    size += b.nlabels * sizeof(struct fair_label);
    size_t r_off = size;
    size += b.nreqs * sizeof(struct fair_node_req);
    size_t p_off = size;
    size += b.nptrs * sizeof(const char *);
    size_t s_off = size;
    size += b.nbytes;
    char *block = fair_calloc(1, size);
    if (!block)
        return FAIR_ENOMEM;
    size_t nterms = b.nterms;
    b.fill = true;
    b.terms = (struct fair_pod_term *)(block + t_off);
    b.labels = (struct fair_label *)(block + l_off);
    b.reqs = (struct fair_node_req *)(block + r_off);
    b.ptrs = (const char **)(block + p_off);
    b.str = block + s_off;
    paff_walk(&b, pa, anti, n);
    struct fair_pod_affinity *a = (struct fair_pod_affinity *)block;
    struct fair_pod_term *at = b.terms;
    a->affinity = n[0] ? at : NULL;
    a->naffinity = n[0];
    at += n[0];
    a->anti = n[1] ? at : NULL;
    a->nanti = n[1];
    at += n[1];
    a->pref_affinity = n[2] ? at : NULL;
    a->npref_affinity = n[2];
    at += n[2];
    a->pref_anti = n[3] ? at : NULL;
    a->npref_anti = n[3];
    for (size_t i = 0; i < nterms; i++)
        if (b.terms[i].selector.invalid) {
            add_problem(&p->problem, "spec.affinity: a pod (anti-)affinity term's labelSelector "
                                     "does not parse; Fairshare does not schedule this pod");
            break;
        }
    p->pod_affinity = a;
    return 0;
}

/* ---- spec.topologySpreadConstraints ------------------------------------ */

/* The DoNotSchedule ones, in one allocation like the pod affinity: the
 * constraints, the matchLabels, the expressions, the value pointers, the
 * strings (the selectors are read by paff_selector). */
struct spread_build {
    struct paff_build b;
    size_t n, nhard;
    struct fair_spread *v;
};

static bool spread_pass(struct spread_build *sb, const json_t *list, int soft)
{
    struct paff_build *b = &sb->b;
    size_t i;
    const json_t *c;
    json_array_foreach(list, i, c)
    {
        const json_t *wu = json_object_get(c, "whenUnsatisfiable");
        const json_t *tk = json_object_get(c, "topologyKey");
        const json_t *ms = json_object_get(c, "maxSkew");
        if (!json_is_object(c) || !short_str(wu) || !short_str(tk) || !json_is_integer(ms))
            return paff_fail(b, "want {maxSkew, topologyKey, whenUnsatisfiable, labelSelector}");
        bool hard = strcmp(json_string_value(wu), "DoNotSchedule") == 0;
        if (soft ? hard || strcmp(json_string_value(wu), "ScheduleAnyway") : !hard)
            continue;
        if (json_integer_value(ms) < 1 || json_integer_value(ms) > INT32_MAX)
            return paff_fail(b, "maxSkew must be 1 or more");
        const json_t *md = json_object_get(c, "minDomains");
        if (md && !json_is_null(md) &&
            (!json_is_integer(md) || json_integer_value(md) < 1 ||
             json_integer_value(md) > INT32_MAX || !hard))
            return paff_fail(b, "minDomains must be 1 or more, with whenUnsatisfiable: "
                                "DoNotSchedule");
        struct fair_spread *sp = b->fill ? &sb->v[sb->n] : NULL;
        sb->n++;
        const char *k = paff_str(b, json_string_value(tk));
        if (sp) {
            sp->topology_key = k;
            sp->max_skew = (int32_t)json_integer_value(ms);
            sp->min_domains = json_is_integer(md) ? (int32_t)json_integer_value(md) : 0;
        }
        if (!paff_selector(b, json_object_get(c, "labelSelector"), sp ? &sp->selector : NULL))
            return false;
    }
    return true;
}

/* DoNotSchedule constraints first (nhard of them), then ScheduleAnyway
 * ones. */
static bool spread_walk(struct spread_build *sb, const json_t *list)
{
    struct paff_build *b = &sb->b;
    b->nlabels = b->nreqs = b->nptrs = 0;
    sb->n = 0;
    if (!json_is_array(list))
        return paff_fail(b, "want an array");
    if (json_array_size(list) > POD_AFF_MAX_TERMS)
        return paff_fail(b, "too many constraints");
    for (int soft = 0; soft < 2; soft++) {
        if (soft)
            sb->nhard = sb->n;
        if (!spread_pass(sb, list, soft))
            return false;
    }
    return true;
}

static int pod_spread(const json_t *spec, struct fair_kpod *p)
{
    const json_t *list = spec ? json_object_get(spec, "topologySpreadConstraints") : NULL;
    if (!list || json_is_null(list))
        return 0;
    struct spread_build sb;
    memset(&sb, 0, sizeof sb);
    if (!spread_walk(&sb, list)) {
        add_problem(&p->problem,
                    "spec.topologySpreadConstraints: %s; Fairshare does not "
                    "schedule this pod",
                    sb.b.bad);
        return 0;
    }
    if (sb.n == 0)
        return 0;
    size_t size = sb.n * sizeof(struct fair_spread);
    size_t l_off = size;
    size += sb.b.nlabels * sizeof(struct fair_label);
    size_t r_off = size;
    size += sb.b.nreqs * sizeof(struct fair_node_req);
    size_t p_off = size;
    size += sb.b.nptrs * sizeof(const char *);
    size_t s_off = size;
    size += sb.b.nbytes;
    char *block = fair_calloc(1, size);
    if (!block)
        return FAIR_ENOMEM;
    sb.b.fill = true;
    sb.v = (struct fair_spread *)block;
    sb.b.labels = (struct fair_label *)(block + l_off);
    sb.b.reqs = (struct fair_node_req *)(block + r_off);
    sb.b.ptrs = (const char **)(block + p_off);
    sb.b.str = block + s_off;
    spread_walk(&sb, list);
    for (size_t i = 0; i < sb.n; i++)
        if (sb.v[i].selector.invalid) {
            add_problem(&p->problem, "spec.topologySpreadConstraints: a labelSelector does not "
                                     "parse; Fairshare does not schedule this pod");
            break;
        }
    p->spread = sb.v;
    p->nspread = sb.nhard;
    p->nspread_soft = sb.n - sb.nhard;
    return 0;
}

static int pod_conditions(const json_t *status, struct fair_kpod *p, struct fair_error *err)
{
    int rc = 0;
    const json_t *cs = get_arr(status, "conditions", "status.conditions", &rc, err);
    if (rc)
        return rc;
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (!type || !st)
            continue;
        if (!strcmp(type, "PodScheduled") && !strcmp(st, "False")) {
            p->scheduled_condition_false = true;
            const char *reason;
            if ((rc = peek_str(c, "reason", "status.conditions[].reason", &reason, err)))
                return rc;
            p->scheduled_reason = (char *)reason;
        } else if (!strcmp(type, "DisruptionTarget") && !strcmp(st, "True")) {
            p->disruption_target = true;
            const char *reason;
            if ((rc = peek_str(c, "reason", "status.conditions[].reason", &reason, err)))
                return rc;
            p->disruption_reason = (char *)reason;
            int64_t ms = parse_time(c, "lastTransitionTime");
            p->disruption_since_ms = ms > 0 ? ms : 0;
        }
    }
    return 0;
}

static int pod_annotations(const json_t *md, struct fair_kpod *p, struct fair_error *err)
{
    int rc = 0;
    const json_t *ann = get_obj(md, "annotations", "metadata.annotations", &rc, err);
    if (rc || !ann)
        return rc;
    const char *s;
    if ((rc = map_get(ann, FAIR_ANN_GPU_FRACTION,
                      "metadata.annotations[\"" FAIR_ANN_GPU_FRACTION "\"]", &s, err)))
        return rc;
    if (s) {
        struct fair_error qe = {0};
        int64_t m = 0;
        if (fair_quantity_parse_milli(s, &m, &qe))
            add_problem(&p->problem, "annotation %s: %s", FAIR_ANN_GPU_FRACTION, qe.msg);
        else if (m <= 0 || m >= FAIR_GPU_DEVICE_MILLI)
            add_problem(&p->problem, "annotation %s: \"%s\" must be between 0 and 1 (exclusive)",
                        FAIR_ANN_GPU_FRACTION, s);
        else
            p->gpu_fraction_milli = m;
    }
    if ((rc = map_get(ann, FAIR_ANN_GPU_MEMORY, "annotation " FAIR_ANN_GPU_MEMORY, &s, err)))
        return rc;
    if (s) {
        struct fair_error qe = {0};
        int64_t b = 0;
        if (fair_quantity_parse(s, &b, &qe))
            add_problem(&p->problem, "annotation %s: %s", FAIR_ANN_GPU_MEMORY, qe.msg);
        else if (b <= 0)
            add_problem(&p->problem, "annotation %s: \"%s\" must be above 0", FAIR_ANN_GPU_MEMORY,
                        s);
        else if (p->gpu_fraction_milli > 0)
            add_problem(&p->problem, "annotations %s and %s are both set; use one of them",
                        FAIR_ANN_GPU_FRACTION, FAIR_ANN_GPU_MEMORY);
        else
            p->gpu_memory_bytes = b;
    }
    if ((rc = map_get(ann, FAIR_ANN_GPU_DEVICES, "annotation " FAIR_ANN_GPU_DEVICES, &s, err)))
        return rc;
    p->gpu_devices = (char *)s;
    if ((rc = map_get(ann, FAIR_ANN_GPU_ENV, "annotation " FAIR_ANN_GPU_ENV, &s, err)))
        return rc;
    p->gpu_env_webhook = s && *s;
    if ((rc = map_get(ann, FAIR_ANN_GPU_SLOT, "annotation " FAIR_ANN_GPU_SLOT, &s, err)))
        return rc;
    if (s && strlen(s) >= 1 && strlen(s) <= 2 && strspn(s, "0123456789") == strlen(s) &&
        !(s[0] == '0' && s[1])) {
        int v = s[1] ? (s[0] - '0') * 10 + (s[1] - '0') : s[0] - '0';
        if (v < FAIR_MAX_GPUS_PER_NODE)
            p->gpu_slot1 = (int8_t)(v + 1);
    }
    if ((rc = map_get(ann, FAIR_ANN_RESERVED_DEVICE, "annotation " FAIR_ANN_RESERVED_DEVICE, &s,
                      err)))
        return rc;
    if (s && *s && strlen(s) <= FAIR_RESERVED_DEVICE_MAX &&
        strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") ==
            strlen(s))
        p->reserved_device = (char *)s;
    if ((rc = map_get(ann, FAIR_ANN_GANG, "annotation " FAIR_ANN_GANG, &s, err)))
        return rc;
    if (s && s[0])
        p->gang = (char *)s;
    if ((rc = map_get(ann, FAIR_ANN_GANG_SIZE, "annotation " FAIR_ANN_GANG_SIZE, &s, err)))
        return rc;
    if (s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (!s[0] || *end || v < 1 || v > FAIR_GANG_SIZE_MAX)
            add_problem(&p->problem, "annotation %s: \"%s\" must be an integer from 1 to %d",
                        FAIR_ANN_GANG_SIZE, s, FAIR_GANG_SIZE_MAX);
        else
            p->gang_size = (int32_t)v;
    }
    if (p->gang_size && !p->gang)
        add_problem(&p->problem, "annotation %s is set without %s", FAIR_ANN_GANG_SIZE,
                    FAIR_ANN_GANG);
    if ((rc = map_get(ann, FAIR_ANN_SIM_DURATION, "annotation " FAIR_ANN_SIM_DURATION, &s, err)))
        return rc;
    if (s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (!s[0] || *end || v < 0)
            add_problem(&p->problem, "annotation %s: \"%s\" must be a non-negative integer",
                        FAIR_ANN_SIM_DURATION, s);
        else
            p->sim_duration_s = v;
    }
    if ((rc = map_get(ann, FAIR_ANN_CHECKPOINT_INTERVAL, "annotation " FAIR_ANN_CHECKPOINT_INTERVAL,
                      &s, err)))
        return rc;
    if (s) {
        struct fair_error de = {0};
        int64_t ms = 0;
        if (fair_duration_parse_ms(s, &ms, &de) || ms <= 0)
            add_problem(&p->problem,
                        "annotation %s: \"%s\" must be a positive duration such as "
                        "\"30m\"",
                        FAIR_ANN_CHECKPOINT_INTERVAL, s);
        else
            p->checkpoint_interval_ms = ms;
    }
    if ((rc = map_get(ann, FAIR_ANN_PREEMPTION_NOTICE, "annotation " FAIR_ANN_PREEMPTION_NOTICE, &s,
                      err)))
        return rc;
    if (s) {
        struct fair_error de = {0};
        int64_t ms = 0;
        if (fair_duration_parse_ms(s, &ms, &de) || ms < 0 || ms > FAIR_PREEMPTION_NOTICE_MAX_MS)
            add_problem(&p->problem,
                        "annotation %s: \"%s\" must be a duration from 0 to 24h such as \"60s\"",
                        FAIR_ANN_PREEMPTION_NOTICE, s);
        else
            p->preemption_notice_ms = ms;
    }
    if ((rc = map_get(ann, FAIR_ANN_REQUEUE, "annotation " FAIR_ANN_REQUEUE, &s, err)))
        return rc;
    if (s) {
        if (!strcmp(s, "false"))
            p->requeue_opt_out = true;
        else if (strcmp(s, "true"))
            add_problem(&p->problem, "annotation %s: \"%s\" must be \"true\" or \"false\"",
                        FAIR_ANN_REQUEUE, s);
    }
    if ((rc = map_get(ann, FAIR_ANN_REQUEUE_COUNT, "annotation " FAIR_ANN_REQUEUE_COUNT, &s, err)))
        return rc;
    if (s) {
        /* Written by the controller; an edited value is ignored, not an
         * error (the pod still runs), and counts as 0. */
        char *end;
        long long v = strtoll(s, &end, 10);
        if (s[0] && !*end && v > 0 && v <= FAIR_REQUEUE_COUNT_MAX)
            p->requeue_count = (int32_t)v;
    }
    return 0;
}

/* A Kubernetes object name (a DNS subdomain): [a-z0-9.-], at most 253. */
static bool is_object_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
              s[i] == '.'))
            return false;
    return true;
}

/* The PodGroup a pod belongs to: the scheduler-plugins label first, then
 * Volcano's annotation (borrowed). A value that cannot name a PodGroup is
 * a problem of the pod. */
static int pod_group_of(const json_t *md, const json_t *labels, struct fair_kpod *p,
                        struct fair_error *err)
{
    int rc = 0;
    const char *s = NULL, *what = FAIR_LABEL_POD_GROUP;
    if ((rc = map_get(labels, FAIR_LABEL_POD_GROUP, "label " FAIR_LABEL_POD_GROUP, &s, err)))
        return rc;
    p->pod_group_flavor = FAIR_KPG_COSCHED;
    if (!s || !s[0]) {
        const json_t *ann = get_obj(md, "annotations", "metadata.annotations", &rc, err);
        if (rc)
            return rc;
        s = NULL;
        if (ann && (rc = map_get(ann, FAIR_ANN_VC_GROUP, "annotation " FAIR_ANN_VC_GROUP, &s, err)))
            return rc;
        p->pod_group_flavor = FAIR_KPG_VOLCANO;
        what = FAIR_ANN_VC_GROUP;
    }
    if (!s || !s[0])
        return 0;
    if (!is_object_name(s)) {
        add_problem(&p->problem, "%s: \"%.64s\" is not a PodGroup name", what, s);
        return 0;
    }
    p->pod_group = (char *)s;
    return 0;
}

/* The uid of the controller owner (ownerReferences entry with controller:
 * true), borrowed; the Job, ReplicaSet or operator that recreates the
 * pod. */
static int pod_owner(const json_t *md, struct fair_kpod *p, struct fair_error *err)
{
    int rc = 0;
    const json_t *refs = get_arr(md, "ownerReferences", "metadata.ownerReferences", &rc, err);
    if (rc || !refs)
        return rc;
    size_t i;
    const json_t *ref;
    json_array_foreach(refs, i, ref)
    {
        if (!json_is_object(ref) || !json_is_true(json_object_get(ref, "controller")))
            continue;
        if ((rc =
                 borrow_str(ref, "kind", "metadata.ownerReferences[].kind", &p->owner_kind, err)) ||
            (rc = borrow_str(ref, "name", "metadata.ownerReferences[].name", &p->owner_name, err)))
            return rc;
        return borrow_str(ref, "uid", "metadata.ownerReferences[].uid", &p->owner_uid, err);
    }
    return 0;
}

/* The latest containerStatuses[].state.terminated.finishedAt when every
 * listed container has terminated, else 0. Lenient: the kubelet writes
 * these, and a malformed entry only means "not known". */
static int64_t pod_finished(const json_t *status)
{
    const json_t *cs = json_object_get(status, "containerStatuses");
    if (!json_is_array(cs) || json_array_size(cs) == 0)
        return 0;
    int64_t latest = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c)
    {
        int64_t t =
            parse_time(json_object_get(json_object_get(c, "state"), "terminated"), "finishedAt");
        if (t <= 0)
            return 0; /* still running or waiting, or not readable */
        if (t > latest)
            latest = t;
    }
    return latest;
}

static enum fair_kpod_phase parse_phase(const char *s)
{
    if (!s || !strcmp(s, "Pending"))
        return FAIR_KPOD_PENDING;
    if (!strcmp(s, "Running"))
        return FAIR_KPOD_RUNNING;
    if (!strcmp(s, "Succeeded"))
        return FAIR_KPOD_SUCCEEDED;
    if (!strcmp(s, "Failed"))
        return FAIR_KPOD_FAILED;
    return FAIR_KPOD_UNKNOWN;
}

/* Fills t with strings borrowed from obj (arrays and problem allocated). */
/* ---- issue 15: the GPU model a pod names ---- */

static bool is_model_name(const char *s);

/* annotation fairshare.dev/gpu-model: a product or an alias. */
static int pod_model_annotation(const json_t *md, struct fair_kpod *p, struct fair_error *err)
{
    int rc = 0;
    const json_t *ann = get_obj(md, "annotations", "metadata.annotations", &rc, err);
    if (rc || !ann)
        return rc;
    const char *s;
    if ((rc = map_get(ann, FAIR_ANN_GPU_MODEL, "annotation " FAIR_ANN_GPU_MODEL, &s, err)))
        return rc;
    if (!s)
        return 0;
    if (!is_model_name(s))
        add_problem(&p->problem, "annotation %s: \"%.64s\" is not a GPU model name",
                    FAIR_ANN_GPU_MODEL, s);
    else
        p->gpu_model = (char *)s;
    return 0;
}

/* A required node affinity whose every term holds nvidia.com/gpu.product
 * In [one value], the same in all terms, names that model. */
static void pod_model_affinity(struct fair_kpod *p)
{
    const struct fair_node_affinity *a = p->node_affinity;
    if (!a || !a->required || a->nterms == 0)
        return;
    const char *model = NULL;
    for (size_t t = 0; t < a->nterms; t++) {
        const char *found = NULL;
        for (uint32_t r = 0; r < a->terms[t].nreqs; r++) {
            const struct fair_node_req *q = &a->terms[t].reqs[r];
            if (!q->field && q->op == FAIR_SEL_IN && q->nvalues == 1 && q->key &&
                !strcmp(q->key, FAIR_LABEL_GPU_PRODUCT))
                found = q->values[0];
        }
        if (!found || (model && strcmp(model, found)))
            return;
        model = found;
    }
    p->gpu_model = (char *)model;
}

static int pod_fill(const json_t *obj, struct fair_kpod *p, struct fair_error *err)
{
    int rc = 0;
    p->preemptible = true;
    if ((rc = kmeta_decode(obj, &p->meta, true, err)))
        return rc;
    const json_t *md = json_object_get(obj, "metadata");
    const json_t *spec, *status, *labels;
    if ((rc = get_sections(obj, &spec, &status, &labels, err)))
        return rc;
    const char *s;
    if ((rc = map_get(labels, FAIR_LABEL_QUEUE, "label " FAIR_LABEL_QUEUE, &s, err)))
        return rc;
    if (s && s[0])
        p->queue = (char *)s;
    if ((rc = map_get(labels, FAIR_LABEL_RESERVATION, "label " FAIR_LABEL_RESERVATION, &s, err)))
        return rc;
    p->reservation = s && !strcmp(s, "true");
    if ((rc = map_get(labels, FAIR_LABEL_PREEMPTIBLE, "label " FAIR_LABEL_PREEMPTIBLE, &s, err)))
        return rc;
    if (s) {
        p->preemptible = strcmp(s, "false") != 0;
        if (strcmp(s, "true") && strcmp(s, "false"))
            add_problem(&p->problem, "label %s: \"%s\" must be \"true\" or \"false\"",
                        FAIR_LABEL_PREEMPTIBLE, s);
    }
    if ((rc = map_get(labels, FAIR_ANN_REQUEUE, "label " FAIR_ANN_REQUEUE, &s, err)))
        return rc;
    if (s) {
        p->requeue_opt_out = !strcmp(s, "false");
        if (strcmp(s, "true") && strcmp(s, "false"))
            add_problem(&p->problem, "label %s: \"%s\" must be \"true\" or \"false\"",
                        FAIR_ANN_REQUEUE, s);
    }
    if ((rc = pod_annotations(md, p, err)) || (rc = pod_owner(md, p, err)) ||
        (rc = pod_group_of(md, labels, p, err)))
        return rc;
    if ((rc = borrow_str(spec, "schedulerName", "spec.schedulerName", &p->scheduler_name, err)) ||
        (rc = borrow_str(spec, "nodeName", "spec.nodeName", &p->node_name, err)))
        return rc;
    if (p->node_name && !p->node_name[0])
        p->node_name = NULL;
    p->grace_s = -1;
    if (json_object_get(spec, "terminationGracePeriodSeconds")) {
        int64_t g = 0;
        if ((rc = get_int(spec, "terminationGracePeriodSeconds",
                          "spec.terminationGracePeriodSeconds", &g, err)))
            return rc;
        p->grace_s = g < 0 ? 0 : g;
    }
    /* The declared maximum run time: the kubelet stops the pod this long
     * after its start, and an update may only lower it. */
    const json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
    if (ads && !json_is_null(ads)) {
        json_int_t v = json_is_integer(ads) ? json_integer_value(ads) : 0;
        if (v < 1)
            add_problem(&p->problem, "spec.activeDeadlineSeconds: want a positive integer");
        else
            p->active_deadline_ms = (v > FAIR_MAX_DEADLINE_S ? FAIR_MAX_DEADLINE_S : v) * 1000;
    }
    int64_t prio = 0;
    if ((rc = get_int(spec, "priority", "spec.priority", &prio, err)))
        return rc;
    if (prio < INT32_MIN || prio > INT32_MAX)
        add_problem(&p->problem, "spec.priority: %" PRId64 " out of range", prio);
    else
        p->priority = (int32_t)prio;
    if ((rc = pod_requests(spec, p, err)))
        return rc;
    if (p->gpu_fraction_milli) {
        if (p->request.v[FAIR_RES_GPU])
            add_problem(&p->problem, "annotation %s and resource %s are both set",
                        FAIR_ANN_GPU_FRACTION, FAIR_RES_NAME_GPU);
        else
            p->request.v[FAIR_RES_GPU] = p->gpu_fraction_milli;
    }
    const json_t *sel = get_obj(spec, "nodeSelector", "spec.nodeSelector", &rc, err);
    if (rc)
        return rc;
    if ((rc = decode_labels(sel, "spec.nodeSelector", true, &p->node_selector, &p->nnode_selector,
                            err)))
        return rc;
    if ((rc = map_get(sel, FAIR_LABEL_GPU_PRODUCT, "spec.nodeSelector", &s, err)))
        return rc;
    p->gpu_model = (char *)s;
    if (!p->gpu_model && (rc = pod_model_annotation(json_object_get(obj, "metadata"), p, err)))
        return rc;
    if ((rc = pod_tolerations(spec, p, err)))
        return rc;
    if ((rc = pod_affinity(spec, p)))
        return fair_error_set(err, rc, "spec.affinity: out of memory");
    if (!p->gpu_model)
        pod_model_affinity(p);
    if ((rc = pod_scalars_ports(spec, p)))
        return fair_error_set(err, rc, "spec.containers: out of memory");
    pod_mig(p);
    if ((rc = pod_pod_affinity(spec, p)))
        return fair_error_set(err, rc, "spec.affinity: out of memory");
    if ((rc = pod_spread(spec, p)))
        return fair_error_set(err, rc, "spec.topologySpreadConstraints: out of memory");
    if ((rc = pod_claims(spec, p)))
        return fair_error_set(err, rc, "spec.volumes: out of memory");
    if ((rc = decode_labels(labels, "metadata.labels", true, &p->labels, &p->nlabels, err)))
        return rc;
    if ((rc = peek_str(status, "phase", "status.phase", &s, err)))
        return rc;
    p->phase = parse_phase(s);
    if (status)
        p->start_ms = parse_time(status, "startTime");
    p->finished_ms = pod_finished(status);
    return pod_conditions(status, p, err);
}

/* Copies a pod filled with borrowed strings into one allocation: the
 * struct, then its arrays, then every string. One malloc and one free per
 * pod instead of ~15, and no per-string malloc overhead in the store. */
static void pack_str(char **field, char **cursor)
{
    if (!*field)
        return;
    size_t n = strlen(*field) + 1;
    memcpy(*cursor, *field, n);
    *field = *cursor;
    *cursor += n;
}

static void pack_cstr(const char **field, char **cursor)
{
    pack_str((char **)field, cursor);
}

static size_t slen(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static struct fair_kpod *pod_pack(const struct fair_kpod *t)
{
    size_t size = sizeof *t;
    size_t sel_off = size;
    size += t->nnode_selector * sizeof *t->node_selector;
    size_t tol_off = size;
    size += t->ntolerations * sizeof *t->tolerations;
    size_t lab_off = size;
    size += t->nlabels * sizeof *t->labels;
    size_t str_off = size;
    size += slen(t->meta.uid) + slen(t->meta.namespace_) + slen(t->meta.name) +
            slen(t->meta.resource_version) + slen(t->scheduler_name) + slen(t->node_name) +
            slen(t->queue) + slen(t->gpu_devices) + slen(t->reserved_device) + slen(t->gang) +
            slen(t->gpu_model) + slen(t->scheduled_reason) + slen(t->disruption_reason) +
            slen(t->problem) + slen(t->owner_uid) + slen(t->owner_kind) + slen(t->owner_name) +
            slen(t->pod_group);
    for (size_t i = 0; i < t->nnode_selector; i++)
        size += slen(t->node_selector[i].key) + slen(t->node_selector[i].value);
    for (size_t i = 0; i < t->ntolerations; i++)
        size += slen(t->tolerations[i].key) + slen(t->tolerations[i].value);
    for (size_t i = 0; i < t->nlabels; i++)
        size += slen(t->labels[i].key) + slen(t->labels[i].value);
    char *block = fair_malloc(size);
    if (!block)
        return NULL;
    struct fair_kpod *p = (struct fair_kpod *)block;
    *p = *t;
    p->packed = true;
    p->node_selector = t->nnode_selector ? (struct fair_label *)(block + sel_off) : NULL;
    p->tolerations = t->ntolerations ? (struct fair_toleration *)(block + tol_off) : NULL;
    if (t->nnode_selector)
        memcpy(p->node_selector, t->node_selector, t->nnode_selector * sizeof *t->node_selector);
    if (t->ntolerations)
        memcpy(p->tolerations, t->tolerations, t->ntolerations * sizeof *t->tolerations);
    p->labels = t->nlabels ? (struct fair_label *)(block + lab_off) : NULL;
    if (t->nlabels)
        memcpy(p->labels, t->labels, t->nlabels * sizeof *t->labels);
    char *c = block + str_off;
    pack_str(&p->meta.uid, &c);
    pack_str(&p->meta.namespace_, &c);
    pack_str(&p->meta.name, &c);
    pack_str(&p->meta.resource_version, &c);
    pack_str(&p->scheduler_name, &c);
    pack_str(&p->node_name, &c);
    pack_str(&p->queue, &c);
    pack_str(&p->gpu_devices, &c);
    pack_str(&p->reserved_device, &c);
    pack_str(&p->gang, &c);
    pack_str(&p->gpu_model, &c);
    pack_str(&p->scheduled_reason, &c);
    pack_str(&p->disruption_reason, &c);
    pack_str(&p->problem, &c);
    pack_str(&p->owner_uid, &c);
    pack_str(&p->pod_group, &c);
    pack_str(&p->owner_kind, &c);
    pack_str(&p->owner_name, &c);
    for (size_t i = 0; i < p->nnode_selector; i++) {
        pack_cstr(&p->node_selector[i].key, &c);
        pack_cstr(&p->node_selector[i].value, &c);
    }
    for (size_t i = 0; i < p->ntolerations; i++) {
        pack_cstr(&p->tolerations[i].key, &c);
        pack_cstr(&p->tolerations[i].value, &c);
    }
    for (size_t i = 0; i < p->nlabels; i++) {
        pack_cstr(&p->labels[i].key, &c);
        pack_cstr(&p->labels[i].value, &c);
    }
    return p;
}

int fair_kpod_decode(const json_t *obj, struct fair_kpod **out, struct fair_error *err)
{
    struct fair_kpod t;
    memset(&t, 0, sizeof t);
    *out = NULL;
    problem_lost = false;
    int rc = pod_fill(obj, &t, err);
    if (!rc && problem_lost)
        rc = FAIR_ENOMEM;
    if (!rc && !(*out = pod_pack(&t)))
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
    if (rc) {
        if (rc == FAIR_ENOMEM && err && !err->msg[0])
            fair_error_set(err, rc, "out of memory");
        /* t's names are borrowed from obj, still alive here */
        fair_error_prefix(err, "pod %s/%s: ", t.meta.namespace_ ? t.meta.namespace_ : "",
                          t.meta.name ? t.meta.name : "?");
    }
    /* Only the arrays and the problem text were allocated. */
    fair_free(t.node_selector);
    fair_free(t.tolerations);
    fair_free(t.problem);
    fair_free(t.labels); /* packed: copied */
    if (rc) {
        fair_free(t.node_affinity); /* else the packed pod owns them */
        fair_free(t.sched_extra);
        fair_free(t.pod_affinity);
        fair_free(t.spread);
        fair_free(t.claims_mem);
    }
    return rc;
}

/* ---- nodes ------------------------------------------------------------ */

/* Allocatable of the other resources, in one allocation (n->scalars).
 * Values that do not parse count as 0 (nothing fits there). */
static int node_scalars(const json_t *alloc, struct fair_knode *n)
{
    size_t cnt = 0, bytes = 0;
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)alloc, name, v)
    {
        if (own_resource(name) || strlen(name) > 253)
            continue;
        if (++cnt > FAIR_NODE_MAX_SCALARS)
            break;
        bytes += strlen(name) + 1;
    }
    if (cnt > FAIR_NODE_MAX_SCALARS)
        cnt = FAIR_NODE_MAX_SCALARS;
    if (!cnt)
        return 0;
    char *block = fair_calloc(1, cnt * sizeof(struct fair_scalar) + bytes);
    if (!block)
        return FAIR_ENOMEM;
    struct fair_scalar *sc = (struct fair_scalar *)block;
    char *str = block + cnt * sizeof(*sc);
    size_t k = 0;
    json_object_foreach((json_t *)alloc, name, v)
    {
        if (own_resource(name) || strlen(name) > 253)
            continue;
        if (k == cnt)
            break;
        size_t l = strlen(name) + 1;
        memcpy(str, name, l);
        sc[k].name = str;
        str += l;
        int64_t x = 0;
        sc[k].value = scalar_value(v, &x) ? x : 0;
        k++;
    }
    n->scalars = sc;
    n->nscalars = cnt;
    return 0;
}

int fair_knamespace_decode(const json_t *obj, struct fair_knamespace **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    struct fair_knamespace *n = fair_calloc(1, sizeof *n);
    if (!n)
        return fair_error_set(err, FAIR_ENOMEM, "namespace: out of memory");
    const json_t *labels = NULL;
    if (!(rc = fair_kmeta_decode(obj, &n->meta, err)))
        labels = get_obj(json_object_get(obj, "metadata"), "labels", "metadata.labels", &rc, err);
    if (!rc)
        rc = decode_labels(labels, "metadata.labels", false, &n->labels, &n->nlabels, err);
    if (rc) {
        name_failure(rc, err, "namespace", n->meta.name);
        fair_knamespace_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

int fair_knode_decode(const json_t *obj, struct fair_knode **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    struct fair_knode *n = fair_calloc(1, sizeof *n);
    if (!n)
        return fair_error_set(err, FAIR_ENOMEM, "node: out of memory");
    if ((rc = fair_kmeta_decode(obj, &n->meta, err)))
        goto out;
    const json_t *spec, *status, *labels;
    if ((rc = get_sections(obj, &spec, &status, &labels, err)))
        goto out;
    if ((rc = decode_labels(labels, "metadata.labels", false, &n->labels, &n->nlabels, err)))
        goto out;
    const char *s;
    if ((rc = map_get(labels, FAIR_LABEL_GPU_PRODUCT, "metadata.labels", &s, err)))
        goto out;
    if (dup_str(s, &n->gpu_model)) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    const json_t *u = spec ? json_object_get(spec, "unschedulable") : NULL;
    n->unschedulable = json_is_true(u);
    const json_t *alloc = get_obj(status, "allocatable", "status.allocatable", &rc, err);
    if (rc)
        goto out;
    for (int i = 0; i < FAIR_RES_COUNT; i++) {
        const json_t *v = alloc ? json_object_get(alloc, res_keys[i]) : NULL;
        if (!v)
            continue;
        char what[96];
        snprintf(what, sizeof what, "status.allocatable[\"%s\"]", res_keys[i]);
        if ((rc = fair_kquantity_decode(v, i != FAIR_RES_MEM, &n->allocatable.v[i], what, err)))
            goto out;
    }
    n->gpu_count = (int)(n->allocatable.v[FAIR_RES_GPU] / 1000);
    n->allocatable.v[FAIR_RES_GPU] = (int64_t)n->gpu_count * 1000;
    if (alloc && (rc = node_scalars(alloc, n)))
        goto out;
    const json_t *pods = alloc ? json_object_get(alloc, "pods") : NULL;
    if (pods) {
        int64_t np = 0;
        if ((rc = fair_kquantity_decode(pods, 0, &np, "status.allocatable[\"pods\"]", err)))
            goto out;
        n->max_pods = np > INT32_MAX ? INT32_MAX : (int)np;
    }
    const json_t *ts = get_arr(spec, "taints", "spec.taints", &rc, err);
    if (rc)
        goto out;
    if (ts && json_array_size(ts)) {
        n->taints = fair_calloc(json_array_size(ts), sizeof *n->taints);
        if (!n->taints) {
            rc = FAIR_ENOMEM;
            goto out;
        }
        size_t i;
        const json_t *t;
        json_array_foreach(ts, i, t)
        {
            const char *key, *value, *effect;
            if ((rc = peek_str(t, "key", "spec.taints[].key", &key, err)) ||
                (rc = peek_str(t, "value", "spec.taints[].value", &value, err)) ||
                (rc = peek_str(t, "effect", "spec.taints[].effect", &effect, err)))
                goto out;
            struct fair_taint *o = &n->taints[n->ntaints];
            if (!key || !effect || parse_effect(effect, &o->effect)) {
                rc = fair_error_set(err, FAIR_EINVAL, "spec.taints[%zu]: bad key or effect", i);
                goto out;
            }
            if (dup_str(key, (char **)&o->key) || dup_str(value, (char **)&o->value)) {
                fair_free((char *)o->key);
                o->key = NULL;
                rc = FAIR_ENOMEM;
                goto out;
            }
            n->ntaints++;
        }
    }
    const json_t *conds = get_arr(status, "conditions", "status.conditions", &rc, err);
    if (rc)
        goto out;
    size_t i;
    const json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (type && st && !strcmp(type, "Ready"))
            n->ready = !strcmp(st, "True");
    }
out:
    if (rc) {
        name_failure(rc, err, "node", n->meta.name);
        fair_knode_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

/* ---- projects and queues ---------------------------------------------- */

static void decode_res_map(const json_t *spec, const char *key, struct fair_resources *r,
                           int64_t absent, char **problem)
{
    for (int i = 0; i < FAIR_RES_COUNT; i++)
        r->v[i] = absent;
    const json_t *m = json_object_get(spec, key);
    if (!m || json_is_null(m))
        return;
    if (!json_is_object(m)) {
        add_problem(problem, "spec.%s: want an object of quantities (gpu, cpu, memory)", key);
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        if (!strncmp(k, "gpu/", 4))
            continue; /* a GPU model: decode_model_quotas */
        int i;
        for (i = 0; i < FAIR_RES_COUNT; i++)
            if (!strcmp(k, fair_res_name((enum fair_res)i)) || !strcmp(k, res_keys[i]))
                break;
        if (i == FAIR_RES_COUNT) {
            add_problem(problem, "spec.%s.%s: unknown resource (want gpu, cpu or memory)", key, k);
            continue;
        }
        char what[96];
        snprintf(what, sizeof what, "spec.%s.%s", key, k);
        struct fair_error qe = {0};
        int64_t x;
        if (fair_kquantity_decode(v, i != FAIR_RES_MEM, &x, what, &qe)) {
            add_problem(problem, "%s", qe.msg);
            continue;
        }
        if (x < 0) {
            add_problem(problem, "%s: must not be negative", what);
            continue;
        }
        r->v[i] = x;
    }
}

/* ---- issue 15 items 1-2: gpu/<model> keys and spec.lendingLimit ---- */

/* A label value: 1-63 characters [A-Za-z0-9._-], alphanumeric at both
 * ends. */
static bool is_model_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > FAIR_KMODEL_MAX || !isalnum((unsigned char)s[0]) ||
        !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* The gpu/<model> keys of spec.<key> (which = 0 guaranteed, 1 limit, 2
 * lendingLimit) into q->models. */
static void decode_model_map(const json_t *spec, const char *key, int which, struct fair_kquota *q,
                             char **problem)
{
    const json_t *m = json_object_get(spec, key);
    if (!json_is_object(m))
        return;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        if (strncmp(k, "gpu/", 4))
            continue;
        const char *model = k + 4;
        if (!is_model_name(model)) {
            add_problem(problem,
                        "spec.%s.%s: want gpu/<model>, the model a label value (1 to 63 "
                        "letters, digits, '-', '_' or '.')",
                        key, k);
            continue;
        }
        char what[128];
        snprintf(what, sizeof what, "spec.%s.%s", key, k);
        struct fair_error qe = {0};
        int64_t x;
        if (fair_kquantity_decode(v, true, &x, what, &qe)) {
            add_problem(problem, "%s", qe.msg);
            continue;
        }
        if (x < 0) {
            add_problem(problem, "%s: must not be negative", what);
            continue;
        }
        size_t i;
        for (i = 0; i < q->nmodels; i++)
            if (!strcmp(q->models[i].model, model))
                break;
        if (i == q->nmodels) {
            if (q->nmodels == FAIR_KQUOTA_MAX_MODELS) {
                add_problem(problem, "spec: more than %d GPU models named", FAIR_KQUOTA_MAX_MODELS);
                return;
            }
            memset(&q->models[i], 0, sizeof q->models[i]);
            snprintf(q->models[i].model, sizeof q->models[i].model, "%s", model);
            q->nmodels++;
        }
        struct fair_kmodel_quota *mq = &q->models[i];
        if (which == 0) {
            mq->guaranteed = x;
        } else if (which == 1) {
            mq->limit = x;
            mq->has_limit = true;
        } else {
            mq->lending_limit = x;
            mq->has_lending_limit = true;
        }
    }
}

static void decode_model_quotas(const json_t *spec, struct fair_kquota *q, char **problem)
{
    q->nmodels = 0;
    struct fair_resources ll;
    decode_res_map(spec, "lendingLimit", &ll, -1, problem);
    q->lending_set = 0;
    for (int i = 0; i < FAIR_RES_COUNT; i++) {
        q->lending_limit.v[i] = ll.v[i] < 0 ? 0 : ll.v[i];
        if (ll.v[i] >= 0)
            q->lending_set |= (uint8_t)(1u << i);
    }
    decode_model_map(spec, "guaranteed", 0, q, problem);
    decode_model_map(spec, "limit", 1, q, problem);
    decode_model_map(spec, "lendingLimit", 2, q, problem);
    for (size_t i = 0; i < q->nmodels; i++) {
        const struct fair_kmodel_quota *mq = &q->models[i];
        if (mq->has_limit && mq->limit < mq->guaranteed)
            add_problem(problem, "spec.limit.gpu/%s is below spec.guaranteed.gpu/%s", mq->model,
                        mq->model);
        if (q->limit.v[FAIR_RES_GPU] != FAIR_UNLIMITED && mq->guaranteed > q->limit.v[FAIR_RES_GPU])
            add_problem(problem, "spec.guaranteed.gpu/%s is above spec.limit.gpu", mq->model);
    }
}

static void decode_quota(const json_t *spec, struct fair_kquota *q, char **problem)
{
    decode_res_map(spec, "guaranteed", &q->guaranteed, 0, problem);
    decode_res_map(spec, "limit", &q->limit, FAIR_UNLIMITED, problem);
    decode_model_quotas(spec, q, problem); /* issue 15 */
    for (int i = 0; i < FAIR_RES_COUNT; i++)
        if (q->limit.v[i] < q->guaranteed.v[i])
            add_problem(problem, "spec.limit.%s is below spec.guaranteed.%s",
                        fair_res_name((enum fair_res)i), fair_res_name((enum fair_res)i));
    q->over_quota_weight = 1;
    const json_t *w = json_object_get(spec, "overQuotaWeight");
    if (w && !json_is_null(w)) {
        int64_t x = 0;
        struct fair_error qe = {0};
        if (json_is_integer(w))
            x = json_integer_value(w);
        else if (!json_is_string(w) || fair_quantity_parse(json_string_value(w), &x, &qe))
            x = -1;
        if (json_is_real(w) && json_real_value(w) == (double)(int64_t)json_real_value(w))
            x = (int64_t)json_real_value(w);
        if (x < 1 || x > 1000000)
            add_problem(problem, "spec.overQuotaWeight: want an integer from 1 to 1000000");
        else
            q->over_quota_weight = x;
    }
    const json_t *p = json_object_get(spec, "overQuotaPriority");
    if (p && !json_is_null(p)) {
        if (!json_is_integer(p) || json_integer_value(p) < -1000 || json_integer_value(p) > 1000)
            add_problem(problem, "spec.overQuotaPriority: want an integer from -1000 to 1000");
        else
            q->over_quota_priority = (int32_t)json_integer_value(p);
    }
    const json_t *up = json_object_get(spec, "reclaimUpTo");
    if (up && !json_is_null(up)) {
        const char *v = json_string_value(up);
        if (v && !strcmp(v, "FairShare"))
            q->reclaim_up_to = FAIR_KRECLAIM_FAIR_SHARE;
        else if (v && !strcmp(v, "Guarantee"))
            q->reclaim_up_to = FAIR_KRECLAIM_GUARANTEE;
        else
            add_problem(problem, "spec.reclaimUpTo: want \"FairShare\" or \"Guarantee\"");
    }
}

/* A spec string that is optional; a wrong type is a problem, not a
 * failure. */
static int spec_str(const json_t *spec, const char *key, char **out, char **problem)
{
    *out = NULL;
    const json_t *v = json_object_get(spec, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) > FAIR_DECODE_MAX_STR) {
        add_problem(problem, "spec.%s: want a string", key);
        return 0;
    }
    return dup_str(json_string_value(v), out);
}

static const json_t *get_spec(const json_t *obj, char **problem)
{
    const json_t *spec = json_object_get(obj, "spec");
    if (spec && !json_is_object(spec) && !json_is_null(spec)) {
        add_problem(problem, "spec: want an object");
        return NULL;
    }
    return json_is_object(spec) ? spec : NULL;
}

/* ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$, at most 63 characters */
static bool is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* status.conditions of a Project or Queue: type, status and
 * lastTransitionTime of the first FAIR_KCOND_MAX that parse; the others
 * (and anything malformed: the status is ours, but whoever may write it
 * could write anything) are skipped. */
static size_t status_conds(const json_t *obj, struct fair_kcond *out)
{
    const json_t *cs = json_object_get(json_object_get(obj, "status"), "conditions");
    size_t n = 0, i;
    const json_t *c;
    if (!json_is_array(cs))
        return 0;
    json_array_foreach(cs, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        int64_t ms = parse_time(c, "lastTransitionTime");
        if (n == FAIR_KCOND_MAX)
            break;
        if (!type || !st || strlen(type) >= sizeof out[n].type ||
            (strcmp(st, "True") && strcmp(st, "False")) || ms <= 0)
            continue;
        snprintf(out[n].type, sizeof out[n].type, "%s", type);
        out[n].status = !strcmp(st, "True");
        out[n].since_ms = ms;
        n++;
    }
    return n;
}

/* status.budget of a Project: *level from its state (Warning 80,
 * Exhausted 100, anything else 0) and *from_ms from its periodStart (0
 * when missing or malformed). Never an error, as for the conditions. */
static void status_budget(const json_t *obj, int *level, int64_t *from_ms)
{
    const json_t *b = json_object_get(json_object_get(obj, "status"), "budget");
    const char *st = json_string_value(json_object_get(b, "state"));
    int64_t ms = parse_time(b, "periodStart");
    *level = !st ? 0 : !strcmp(st, "Exhausted") ? 100 : !strcmp(st, "Warning") ? 80 : 0;
    *from_ms = ms > 0 ? ms : 0;
}

int fair_kproject_decode(const json_t *obj, struct fair_kproject **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    problem_lost = false;
    struct fair_kproject *p = fair_calloc(1, sizeof *p);
    if (!p)
        return fair_error_set(err, FAIR_ENOMEM, "project: out of memory");
    if ((rc = fair_kmeta_decode(obj, &p->meta, err)))
        goto out;
    p->nconds = status_conds(obj, p->conds);
    status_budget(obj, &p->budget_level_seen, &p->budget_from_seen_ms);
    const json_t *spec = get_spec(obj, &p->problem);
    decode_quota(spec, &p->quota, &p->problem);
    if ((rc = spec_str(spec, "team", &p->team, &p->problem)) ||
        (rc = spec_str(spec, "costCenter", &p->cost_center, &p->problem)) ||
        (rc = spec_str(spec, "defaultQueue", &p->default_queue, &p->problem)))
        goto out;
    if (!p->team && (rc = dup_str(p->meta.name, &p->team)))
        goto out;
    {
        const json_t *fr = spec ? json_object_get(spec, "fractions") : NULL;
        const json_t *sh = json_is_object(fr) ? json_object_get(fr, "shareAcrossProjects") : NULL;
        if (fr && !json_is_null(fr) && !json_is_object(fr))
            add_problem(&p->problem, "spec.fractions: want an object");
        else if (sh && !json_is_null(sh) && !json_is_boolean(sh))
            add_problem(&p->problem, "spec.fractions.shareAcrossProjects: want true or false");
        else
            p->share_fractions = json_is_true(sh);
    }
    { /* usageHalfLife, budget, schedule (kube/timequota.c) */
        char tmsg[512] = "";
        if ((rc = fair_ktime_decode(spec, true, &p->time, tmsg, sizeof tmsg)))
            goto out;
        if (tmsg[0])
            add_problem(&p->problem, "%s", tmsg);
    }
    /* The CRD schema enforces these too; a client that skips validation
     * still gets a clear Invalid condition. */
    if (!p->team[0] || strlen(p->team) > 63)
        add_problem(&p->problem, "spec.team: want 1 to 63 characters");
    if (p->cost_center && strlen(p->cost_center) > 128)
        add_problem(&p->problem, "spec.costCenter: longer than 128 characters");
    const json_t *ns = spec ? json_object_get(spec, "namespaces") : NULL;
    if (ns && !json_is_null(ns)) {
        if (!json_is_array(ns) || json_array_size(ns) > FAIR_DECODE_MAX_ITEMS) {
            add_problem(&p->problem, "spec.namespaces: want a list of at most %d names",
                        FAIR_DECODE_MAX_ITEMS);
        } else if (json_array_size(ns)) {
            p->namespaces = fair_calloc(json_array_size(ns), sizeof *p->namespaces);
            if (!p->namespaces) {
                rc = FAIR_ENOMEM;
                goto out;
            }
            size_t i;
            const json_t *v;
            json_array_foreach(ns, i, v)
            {
                if (!json_is_string(v) || !is_dns_label(json_string_value(v))) {
                    add_problem(&p->problem,
                                "spec.namespaces[%zu]: want a namespace name "
                                "(a DNS label)",
                                i);
                    continue;
                }
                bool dup = false;
                for (size_t j = 0; j < p->nnamespaces; j++)
                    dup = dup || !strcmp(p->namespaces[j], json_string_value(v));
                if (dup) {
                    add_problem(&p->problem, "spec.namespaces[%zu]: \"%s\" is listed twice", i,
                                json_string_value(v));
                    continue;
                }
                if ((rc = dup_str(json_string_value(v), &p->namespaces[p->nnamespaces])))
                    goto out;
                p->nnamespaces++;
            }
        }
    }
out:
    if (!rc && problem_lost)
        rc = FAIR_ENOMEM;
    if (rc) {
        name_failure(rc, err, "project", p->meta.name);
        fair_kproject_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int fair_kqueue_decode(const json_t *obj, struct fair_kqueue **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    problem_lost = false;
    struct fair_kqueue *q = fair_calloc(1, sizeof *q);
    if (!q)
        return fair_error_set(err, FAIR_ENOMEM, "queue: out of memory");
    if ((rc = fair_kmeta_decode(obj, &q->meta, err)))
        goto out;
    q->nconds = status_conds(obj, q->conds);
    const json_t *spec = get_spec(obj, &q->problem);
    decode_quota(spec, &q->quota, &q->problem);
    if ((rc = spec_str(spec, "project", &q->project, &q->problem)))
        goto out;
    if (!q->project || !q->project[0])
        add_problem(&q->problem, "spec.project: missing (every queue belongs to a project)");
    { /* schedule (kube/timequota.c) */
        char tmsg[512] = "";
        if ((rc = fair_ktime_decode(spec, false, &q->time, tmsg, sizeof tmsg)))
            goto out;
        if (tmsg[0])
            add_problem(&q->problem, "%s", tmsg);
    }
    const json_t *r = spec ? json_object_get(spec, "reclaimMinRuntime") : NULL;
    if (r && !json_is_null(r)) {
        struct fair_error de = {0};
        if (!json_is_string(r))
            add_problem(&q->problem, "spec.reclaimMinRuntime: want a duration such as \"10m\"");
        else if (fair_duration_parse_ms(json_string_value(r), &q->reclaim_min_runtime_ms, &de))
            add_problem(&q->problem, "spec.reclaimMinRuntime: %s", de.msg);
    }
    const json_t *ag = spec ? json_object_get(spec, "agingHalfLife") : NULL;
    if (ag && !json_is_null(ag)) {
        struct fair_error de = {0};
        if (!json_is_string(ag))
            add_problem(&q->problem, "spec.agingHalfLife: want a duration such as \"1h\"");
        else if (fair_duration_parse_ms(json_string_value(ag), &q->aging_half_life_ms, &de))
            add_problem(&q->problem, "spec.agingHalfLife: %s", de.msg);
    }
    const json_t *fr = spec ? json_object_get(spec, "fractions") : NULL;
    const json_t *iso = json_is_object(fr) ? json_object_get(fr, "isolation") : NULL;
    if (fr && !json_is_null(fr) && !json_is_object(fr))
        add_problem(&q->problem, "spec.fractions: want an object");
    if (iso && !json_is_null(iso)) {
        const char *v = json_string_value(iso);
        if (v && !strcmp(v, "required"))
            q->fractions_isolated = true;
        else if (!v || strcmp(v, "none"))
            add_problem(&q->problem, "spec.fractions.isolation: want \"none\" or \"required\"");
    }
out:
    if (!rc && problem_lost)
        rc = FAIR_ENOMEM;
    if (rc) {
        name_failure(rc, err, "queue", q->meta.name);
        fair_kqueue_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

/* ---- PodGroups --------------------------------------------------------- */

/* A status or spec integer that fits int32 and is >= 0; else 0 (and a
 * problem for a spec field). */
static int32_t pg_count(const json_t *parent, const char *key, const char *path, char **problem)
{
    const json_t *v = json_object_get(parent, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
        if (problem)
            add_problem(problem, "%s: want a non-negative integer", path);
        return 0;
    }
    return (int32_t)json_integer_value(v);
}

int fair_kpodgroup_decode(const json_t *obj, enum fair_kpodgroup_flavor flavor,
                          struct fair_kpodgroup **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    problem_lost = false;
    struct fair_kpodgroup *g = fair_calloc(1, sizeof *g);
    if (!g)
        return fair_error_set(err, FAIR_ENOMEM, "podgroup: out of memory");
    g->flavor = flavor;
    if ((rc = fair_kmeta_decode(obj, &g->meta, err)))
        goto out;
    const json_t *spec = get_spec(obj, &g->problem);
    int32_t mm = pg_count(spec, "minMember", "spec.minMember", &g->problem);
    if (mm > FAIR_GANG_SIZE_MAX) {
        add_problem(&g->problem, "spec.minMember: %d is above %d", mm, FAIR_GANG_SIZE_MAX);
        mm = FAIR_GANG_SIZE_MAX;
    }
    g->min_member = mm > 0 ? mm : 1;
    g->schedule_timeout_s =
        pg_count(spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", &g->problem);
    const json_t *mr = spec ? json_object_get(spec, "minResources") : NULL;
    if (json_is_object(mr)) {
        for (int i = 0; i < FAIR_RES_COUNT; i++) {
            const json_t *v = json_object_get(mr, res_keys[i]);
            if (!v)
                continue;
            char what[64];
            snprintf(what, sizeof what, "spec.minResources.%s", res_keys[i]);
            struct fair_error qe = {0};
            int64_t x = 0;
            if (fair_kquantity_decode(v, i != FAIR_RES_MEM, &x, what, &qe) || x < 0)
                add_problem(&g->problem, "%s: want a non-negative quantity", what);
            else
                g->min_resources.v[i] = x;
        }
    }
    const json_t *st = json_object_get(obj, "status");
    if (json_is_object(st)) {
        const char *ph = json_string_value(json_object_get(st, "phase"));
        if (ph && strlen(ph) <= 64 && (rc = dup_str(ph, &g->phase)))
            goto out;
        g->running = pg_count(st, "running", "status.running", NULL);
        g->succeeded = pg_count(st, "succeeded", "status.succeeded", NULL);
        g->failed = pg_count(st, "failed", "status.failed", NULL);
        const json_t *conds = json_object_get(st, "conditions");
        size_t i;
        const json_t *c;
        if (json_is_array(conds) && json_array_size(conds) <= FAIR_DECODE_MAX_ITEMS)
            json_array_foreach(conds, i, c)
            {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *cs = json_string_value(json_object_get(c, "status"));
                const char *reason = json_string_value(json_object_get(c, "reason"));
                if (type && !strcmp(type, "Unschedulable") && cs && !strcmp(cs, "True") && reason &&
                    strlen(reason) <= 64 && !g->condition_reason &&
                    (rc = dup_str(reason, &g->condition_reason)))
                    goto out;
            }
    }
out:
    if (!rc && problem_lost)
        rc = FAIR_ENOMEM;
    if (rc) {
        name_failure(rc, err, "podgroup", g->meta.name);
        fair_kpodgroup_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* ---- volumes ----------------------------------------------------------- */

/* spec.accessModes as FAIR_KACCESS_* bits; an unknown mode is a problem. */
static uint8_t access_modes(const json_t *spec, const char *path, char **problem)
{
    const json_t *am = spec ? json_object_get(spec, "accessModes") : NULL;
    uint8_t bits = 0;
    if (!am || json_is_null(am))
        return 0;
    if (!json_is_array(am) || json_array_size(am) > 8) {
        add_problem(problem, "%s: want at most 8 modes", path);
        return 0;
    }
    size_t i;
    const json_t *m;
    json_array_foreach(am, i, m)
    {
        const char *s = json_string_value(m);
        if (s && !strcmp(s, "ReadWriteOnce"))
            bits |= FAIR_KACCESS_RWO;
        else if (s && !strcmp(s, "ReadOnlyMany"))
            bits |= FAIR_KACCESS_ROX;
        else if (s && !strcmp(s, "ReadWriteMany"))
            bits |= FAIR_KACCESS_RWX;
        else if (s && !strcmp(s, "ReadWriteOncePod"))
            bits |= FAIR_KACCESS_RWOP;
        else
            add_problem(problem, "%s: unknown mode", path);
    }
    return bits;
}

/* spec.volumeMode: Block or Filesystem (the default). */
static bool volume_block(const json_t *spec, const char *path, char **problem)
{
    const json_t *vm = spec ? json_object_get(spec, "volumeMode") : NULL;
    const char *s = json_string_value(vm);
    if (!vm || json_is_null(vm) || (s && !strcmp(s, "Filesystem")))
        return false;
    if (s && !strcmp(s, "Block"))
        return true;
    add_problem(problem, "%s: want Block or Filesystem", path);
    return false;
}

/* A storage quantity (bytes) at obj[key].storage; 0 when absent. */
static int64_t storage_of(const json_t *obj, const char *key, const char *path, char **problem)
{
    const json_t *m = obj ? json_object_get(obj, key) : NULL;
    const json_t *v = json_is_object(m) ? json_object_get(m, "storage") : NULL;
    if (!v || json_is_null(v))
        return 0;
    struct fair_error qe = {0};
    int64_t x = 0;
    if (fair_kquantity_decode(v, 0, &x, path, &qe) || x < 0) {
        add_problem(problem, "%s: want a non-negative quantity", path);
        return 0;
    }
    return x;
}

/* A claim's spec.selector.matchExpressions (a non-empty array) into
 * c->selector_exprs: the node affinity parser reads them as one term, then
 * what a label selector does not allow (Gt, Lt, values against the
 * operator, a bad key) becomes the claim's problem, as the volume binder's
 * LabelSelectorAsSelector error would. Returns 0 or FAIR_ENOMEM. */
static int claim_selector_exprs(const json_t *me, struct fair_kpvc *c, struct fair_error *err)
{
    json_t *term = json_object(), *terms = json_array(), *sel = json_object();
    int rc = FAIR_ENOMEM;
    if (!term || !terms || !sel || json_object_set(term, "matchExpressions", (json_t *)me) ||
        json_array_append(terms, term) || json_object_set(sel, "nodeSelectorTerms", terms))
        goto out;
    rc =
        node_selector_build(sel, "spec.selector.matchExpressions", &c->problem, &c->selector_exprs);
    const struct fair_node_affinity *a = c->selector_exprs;
    if (rc || !a)
        goto out;
    bool ok = a->nterms == 1 && !a->terms[0].invalid;
    for (size_t i = 0; ok && i < a->terms[0].nreqs; i++)
        ok = a->terms[0].reqs[i].op <= FAIR_SEL_DOES_NOT_EXIST;
    if (!ok) {
        add_problem(&c->problem, "spec.selector.matchExpressions: not a label selector (operators "
                                 "In and NotIn take values, Exists and DoesNotExist none)");
        fair_free(c->selector_exprs);
        c->selector_exprs = NULL;
    }
out:
    json_decref(term);
    json_decref(terms);
    json_decref(sel);
    return rc ? fair_error_set(err, rc, "persistentvolumeclaim: out of memory") : 0;
}

int fair_kpvc_decode(const json_t *obj, struct fair_kpvc **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    struct fair_kpvc *c = fair_calloc(1, sizeof *c);
    if (!c)
        return fair_error_set(err, FAIR_ENOMEM, "persistentvolumeclaim: out of memory");
    if ((rc = fair_kmeta_decode(obj, &c->meta, err)))
        goto out;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *md = json_object_get(obj, "metadata");
    const json_t *ann = json_is_object(md) ? json_object_get(md, "annotations") : NULL;
    const json_t *st = json_object_get(obj, "status");
    if ((rc = get_str(json_is_object(spec) ? spec : NULL, "volumeName", "spec.volumeName",
                      &c->volume_name, err)) ||
        (rc = get_str(json_is_object(spec) ? spec : NULL, "storageClassName",
                      "spec.storageClassName", &c->storage_class, err)) ||
        (rc = get_str(json_is_object(ann) ? ann : NULL, FAIR_ANN_SELECTED_NODE,
                      "annotation " FAIR_ANN_SELECTED_NODE, &c->selected_node, err)))
        goto out;
    problem_lost = false;
    const json_t *spo = json_is_object(spec) ? spec : NULL;
    c->access_modes = access_modes(spo, "spec.accessModes", &c->problem);
    c->block = volume_block(spo, "spec.volumeMode", &c->problem);
    const json_t *res = spo ? json_object_get(spo, "resources") : NULL;
    c->request_bytes = storage_of(json_is_object(res) ? res : NULL, "requests",
                                  "spec.resources.requests.storage", &c->problem);
    const json_t *sel = spo ? json_object_get(spo, "selector") : NULL;
    if (sel && !json_is_null(sel)) {
        const json_t *ml = json_is_object(sel) ? json_object_get(sel, "matchLabels") : NULL;
        const json_t *me = json_is_object(sel) ? json_object_get(sel, "matchExpressions") : NULL;
        if (!json_is_object(sel) || (ml && !json_is_null(ml) && !json_is_object(ml)) ||
            (me && !json_is_null(me) && !json_is_array(me)))
            add_problem(&c->problem, "spec.selector: want a label selector");
        else if ((json_is_object(ml) && (rc = decode_labels(ml, "spec.selector.matchLabels", false,
                                                            &c->selector, &c->nselector, err))) ||
                 (json_array_size(me) && (rc = claim_selector_exprs(me, c, err))))
            goto out;
    }
    if (problem_lost) {
        rc = fair_error_set(err, FAIR_ENOMEM, "persistentvolumeclaim: out of memory");
        goto out;
    }
    if (c->volume_name && !*c->volume_name) {
        fair_free(c->volume_name);
        c->volume_name = NULL;
    }
    const char *ph = json_is_object(st) ? json_string_value(json_object_get(st, "phase")) : NULL;
    c->bound = ph && !strcmp(ph, "Bound");
    c->lost = ph && !strcmp(ph, "Lost");
    size_t kn = strlen(c->meta.namespace_ ? c->meta.namespace_ : "") +
                strlen(c->meta.name ? c->meta.name : "") + 2;
    if (!(c->key = fair_malloc(kn))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "persistentvolumeclaim: out of memory");
        goto out;
    }
    snprintf(c->key, kn, "%s/%s", c->meta.namespace_ ? c->meta.namespace_ : "",
             c->meta.name ? c->meta.name : "");
out:
    if (rc) {
        name_failure(rc, err, "persistentvolumeclaim", c->meta.name);
        fair_kpvc_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int fair_kpv_decode(const json_t *obj, struct fair_kpv **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    problem_lost = false;
    struct fair_kpv *v = fair_calloc(1, sizeof *v);
    if (!v)
        return fair_error_set(err, FAIR_ENOMEM, "persistentvolume: out of memory");
    if ((rc = fair_kmeta_decode(obj, &v->meta, err)))
        goto out;
    const json_t *spec = get_spec(obj, &v->problem);
    const json_t *na = spec ? json_object_get(spec, "nodeAffinity") : NULL;
    const json_t *req = json_is_object(na) ? json_object_get(na, "required") : NULL;
    if (req && !json_is_null(req) &&
        (rc = node_selector_build(req, "spec.nodeAffinity.required", &v->problem,
                                  &v->node_affinity))) {
        rc = fair_error_set(err, rc, "spec.nodeAffinity: out of memory");
        goto out;
    }
    const json_t *md = json_object_get(obj, "metadata");
    const json_t *labels = json_is_object(md) ? json_object_get(md, "labels") : NULL;
    if ((rc = decode_labels(json_is_object(labels) ? labels : NULL, "metadata.labels", false,
                            &v->labels, &v->nlabels, err)) ||
        (rc = get_str(spec, "storageClassName", "spec.storageClassName", &v->storage_class, err)))
        goto out;
    const json_t *cr = spec ? json_object_get(spec, "claimRef") : NULL;
    if (json_is_object(cr) &&
        ((rc = get_str(cr, "namespace", "spec.claimRef.namespace", &v->claim_ns, err)) ||
         (rc = get_str(cr, "name", "spec.claimRef.name", &v->claim_name, err)) ||
         (rc = get_str(cr, "uid", "spec.claimRef.uid", &v->claim_uid, err))))
        goto out;
    if (json_is_object(cr) && !v->claim_name)
        add_problem(&v->problem, "spec.claimRef: no name");
    v->capacity_bytes = storage_of(spec, "capacity", "spec.capacity.storage", &v->problem);
    v->access_modes = access_modes(spec, "spec.accessModes", &v->problem);
    v->block = volume_block(spec, "spec.volumeMode", &v->problem);
    const json_t *st = json_object_get(obj, "status");
    const char *ph = json_is_object(st) ? json_string_value(json_object_get(st, "phase")) : NULL;
    v->available = ph && !strcmp(ph, "Available");
out:
    if (!rc && problem_lost)
        rc = FAIR_ENOMEM;
    if (rc) {
        name_failure(rc, err, "persistentvolume", v->meta.name);
        fair_kpv_free(v);
        return rc;
    }
    *out = v;
    return 0;
}

/* allowedTopologies: [{matchLabelExpressions: [{key, values}]}] ORed, as
 * nodeSelectorTerms with In requirements. */
static json_t *topologies_as_selector(const json_t *topo)
{
    json_t *terms = json_array(), *sel = json_object();
    if (!terms || !sel || json_object_set(sel, "nodeSelectorTerms", terms))
        goto fail;
    size_t i;
    const json_t *t;
    json_array_foreach(topo, i, t)
    {
        const json_t *exprs =
            json_is_object(t) ? json_object_get(t, "matchLabelExpressions") : NULL;
        json_t *me = json_array(), *term = json_object();
        if (!me || !term || json_object_set_new(term, "matchExpressions", me) ||
            json_array_append_new(terms, term)) {
            json_decref(me);
            json_decref(term);
            goto fail;
        }
        size_t j;
        const json_t *e;
        json_array_foreach(exprs, j, e)
        {
            json_t *r = json_pack("{s:O?,s:s,s:O?}", "key", json_object_get(e, "key"), "operator",
                                  "In", "values", json_object_get(e, "values"));
            if (!r || json_array_append_new(me, r))
                goto fail;
        }
    }
    json_decref(terms);
    return sel;
fail:
    json_decref(terms);
    json_decref(sel);
    return NULL;
}

int fair_ksc_decode(const json_t *obj, struct fair_ksc **out, struct fair_error *err)
{
    int rc = 0;
    *out = NULL;
    problem_lost = false;
    struct fair_ksc *c = fair_calloc(1, sizeof *c);
    if (!c)
        return fair_error_set(err, FAIR_ENOMEM, "storageclass: out of memory");
    if ((rc = fair_kmeta_decode(obj, &c->meta, err)) ||
        (rc = get_str(obj, "provisioner", "provisioner", &c->provisioner, err)))
        goto out;
    const char *mode = json_string_value(json_object_get(obj, "volumeBindingMode"));
    c->wait_for_first_consumer = mode && !strcmp(mode, "WaitForFirstConsumer");
    const json_t *topo = json_object_get(obj, "allowedTopologies");
    if (json_is_array(topo) && json_array_size(topo) > 0) {
        if (json_array_size(topo) > FAIR_AFFINITY_MAX_TERMS) {
            add_problem(&c->problem, "allowedTopologies: more than %d terms",
                        FAIR_AFFINITY_MAX_TERMS);
        } else {
            json_t *sel = topologies_as_selector(topo);
            if (!sel)
                rc = fair_error_set(err, FAIR_ENOMEM, "allowedTopologies: out of memory");
            else
                rc = node_selector_build(sel, "allowedTopologies", &c->problem, &c->allowed);
            json_decref(sel);
            if (rc)
                fair_error_set(err, rc, "allowedTopologies: out of memory");
        }
    }
out:
    if (!rc && problem_lost)
        rc = FAIR_ENOMEM;
    if (rc) {
        name_failure(rc, err, "storageclass", c->meta.name);
        fair_ksc_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- generic table, Status -------------------------------------------- */

static int dec_pod(const json_t *o, void **out, struct fair_error *err)
{
    return fair_kpod_decode(o, (struct fair_kpod **)out, err);
}
static int dec_node(const json_t *o, void **out, struct fair_error *err)
{
    return fair_knode_decode(o, (struct fair_knode **)out, err);
}
static int dec_namespace(const json_t *o, void **out, struct fair_error *err)
{
    return fair_knamespace_decode(o, (struct fair_knamespace **)out, err);
}
static void free_namespace(void *o)
{
    fair_knamespace_free(o);
}
static int dec_project(const json_t *o, void **out, struct fair_error *err)
{
    return fair_kproject_decode(o, (struct fair_kproject **)out, err);
}
static int dec_queue(const json_t *o, void **out, struct fair_error *err)
{
    return fair_kqueue_decode(o, (struct fair_kqueue **)out, err);
}
static int dec_sp_podgroup(const json_t *o, void **out, struct fair_error *err)
{
    return fair_kpodgroup_decode(o, FAIR_KPG_COSCHED, (struct fair_kpodgroup **)out, err);
}
static int dec_vc_podgroup(const json_t *o, void **out, struct fair_error *err)
{
    return fair_kpodgroup_decode(o, FAIR_KPG_VOLCANO, (struct fair_kpodgroup **)out, err);
}
static int dec_pvc(const json_t *o, void **out, struct fair_error *err)
{
    return fair_kpvc_decode(o, (struct fair_kpvc **)out, err);
}
static int dec_pv(const json_t *o, void **out, struct fair_error *err)
{
    return fair_kpv_decode(o, (struct fair_kpv **)out, err);
}
static int dec_sc(const json_t *o, void **out, struct fair_error *err)
{
    return fair_ksc_decode(o, (struct fair_ksc **)out, err);
}
static void free_pvc(void *o)
{
    fair_kpvc_free(o);
}
static void free_pv(void *o)
{
    fair_kpv_free(o);
}
static void free_sc(void *o)
{
    fair_ksc_free(o);
}
static void free_podgroup(void *o)
{
    fair_kpodgroup_free(o);
}
static void free_pod(void *o)
{
    fair_kpod_free(o);
}
static void free_node(void *o)
{
    fair_knode_free(o);
}
static void free_project(void *o)
{
    fair_kproject_free(o);
}
static void free_queue(void *o)
{
    fair_kqueue_free(o);
}

/* What the decoders above read; keep these in step with them (the unit
 * tests decode every case both ways and compare). */
#define META_FIELDS                                                                                \
    {"name", NULL}, {"namespace", NULL}, {"uid", NULL}, {"resourceVersion", NULL},                 \
        {"generation", NULL}, {"creationTimestamp", NULL},                                         \
    {                                                                                              \
        "deletionTimestamp", NULL                                                                  \
    }
#define STATUS_FIELDS                                                                              \
    {"kind", NULL}, {"apiVersion", NULL}, {"code", NULL}, {"reason", NULL},                        \
    {                                                                                              \
        "message", NULL                                                                            \
    }

static const struct fair_jfield pod_ann_filter[] = {{FAIR_ANN_GPU_FRACTION, NULL},
                                                    {FAIR_ANN_GPU_DEVICES, NULL},
                                                    {FAIR_ANN_GPU_ENV, NULL},
                                                    {FAIR_ANN_GPU_SLOT, NULL},
                                                    {FAIR_ANN_GPU_MEMORY, NULL},
                                                    {FAIR_ANN_RESERVED_DEVICE, NULL},
                                                    {FAIR_ANN_GANG, NULL},
                                                    {FAIR_ANN_GANG_SIZE, NULL},
                                                    {FAIR_ANN_SIM_DURATION, NULL},
                                                    {FAIR_ANN_CHECKPOINT_INTERVAL, NULL},
                                                    {FAIR_ANN_PREEMPTION_NOTICE, NULL},
                                                    {FAIR_ANN_REQUEUE, NULL},
                                                    {FAIR_ANN_REQUEUE_COUNT, NULL},
                                                    {FAIR_ANN_VC_GROUP, NULL},
                                                    {FAIR_ANN_GPU_MODEL, NULL}, /* issue 15 */
                                                    {NULL, NULL}};
static const struct fair_jfield owner_ref[] = {
    {"uid", NULL}, {"kind", NULL}, {"name", NULL}, {"controller", NULL}, {NULL, NULL}};
/* Every label: other pods' affinity terms select on them. */
static const struct fair_jfield pod_meta[] = {META_FIELDS,
                                              {"labels", NULL},
                                              {"annotations", pod_ann_filter},
                                              {"ownerReferences", owner_ref},
                                              {NULL, NULL}};
/* Every resource: the other ones are constraints (NodeResourcesFit). */
static const struct fair_jfield res_lists[] = {{"requests", NULL}, {"limits", NULL}, {NULL, NULL}};
static const struct fair_jfield container_port[] = {
    {"hostPort", NULL}, {"hostIP", NULL}, {"protocol", NULL}, {NULL, NULL}};
static const struct fair_jfield container[] = {
    {"resources", res_lists}, {"ports", container_port}, {NULL, NULL}};
static const struct fair_jfield toleration[] = {
    {"key", NULL}, {"operator", NULL}, {"value", NULL}, {"effect", NULL}, {NULL, NULL}};
static const struct fair_jfield pod_aff_terms[] = {
    {"requiredDuringSchedulingIgnoredDuringExecution", NULL},
    {"preferredDuringSchedulingIgnoredDuringExecution", NULL},
    {NULL, NULL}};
static const struct fair_jfield pod_affinity_filter[] = {{"nodeAffinity", NULL},
                                                         {"podAffinity", pod_aff_terms},
                                                         {"podAntiAffinity", pod_aff_terms},
                                                         {NULL, NULL}};
static const struct fair_jfield pvc_source[] = {{"claimName", NULL}, {NULL, NULL}};
static const struct fair_jfield eph_source[] = {{"volumeClaimTemplate", NULL}, {NULL, NULL}};
static const struct fair_jfield pod_volume[] = {
    {"name", NULL}, {"persistentVolumeClaim", pvc_source}, {"ephemeral", eph_source}, {NULL, NULL}};
static const struct fair_jfield pod_spec[] = {{"schedulerName", NULL},
                                              {"nodeName", NULL},
                                              {"terminationGracePeriodSeconds", NULL},
                                              {"affinity", pod_affinity_filter},
                                              {"topologySpreadConstraints", NULL},
                                              {"priority", NULL},
                                              {"nodeSelector", NULL},
                                              {"tolerations", toleration},
                                              {"containers", container},
                                              {"initContainers", container},
                                              {"volumes", pod_volume},
                                              {NULL, NULL}};
static const struct fair_jfield condition[] = {{"type", NULL},
                                               {"status", NULL},
                                               {"reason", NULL},
                                               {"lastTransitionTime", NULL},
                                               {NULL, NULL}};
static const struct fair_jfield terminated[] = {{"finishedAt", NULL}, {NULL, NULL}};
static const struct fair_jfield cstate[] = {{"terminated", terminated}, {NULL, NULL}};
static const struct fair_jfield cstatus[] = {{"state", cstate}, {NULL, NULL}};
static const struct fair_jfield pod_status[] = {{"phase", NULL},
                                                {"startTime", NULL},
                                                {"conditions", condition},
                                                {"containerStatuses", cstatus},
                                                {NULL, NULL}};
static const struct fair_jfield pod_filter[] = {STATUS_FIELDS,
                                                {"metadata", pod_meta},
                                                {"spec", pod_spec},
                                                {"status", pod_status},
                                                {NULL, NULL}};

static const struct fair_jfield node_meta[] = {META_FIELDS, {"labels", NULL}, {NULL, NULL}};
static const struct fair_jfield taint[] = {
    {"key", NULL}, {"value", NULL}, {"effect", NULL}, {NULL, NULL}};
static const struct fair_jfield node_spec[] = {
    {"unschedulable", NULL}, {"taints", taint}, {NULL, NULL}};
static const struct fair_jfield node_status[] = {
    {"allocatable", NULL}, {"conditions", condition}, {NULL, NULL}};
static const struct fair_jfield node_filter[] = {STATUS_FIELDS,
                                                 {"metadata", node_meta},
                                                 {"spec", node_spec},
                                                 {"status", node_status},
                                                 {NULL, NULL}};

static const struct fair_jfield ns_filter[] = {
    STATUS_FIELDS, {"metadata", node_meta}, {NULL, NULL}};

const struct fair_ktype fair_ktype_pod = {"Pod", dec_pod, free_pod, pod_filter};
const struct fair_ktype fair_ktype_namespace = {"Namespace", dec_namespace, free_namespace,
                                                ns_filter};
const struct fair_ktype fair_ktype_node = {"Node", dec_node, free_node, node_filter};
const struct fair_ktype fair_ktype_project = {"Project", dec_project, free_project, NULL};
const struct fair_ktype fair_ktype_queue = {"Queue", dec_queue, free_queue, NULL};
const struct fair_ktype fair_ktype_sp_podgroup = {"PodGroup", dec_sp_podgroup, free_podgroup, NULL};
const struct fair_ktype fair_ktype_vc_podgroup = {"PodGroup", dec_vc_podgroup, free_podgroup, NULL};

static const struct fair_jfield pvc_ann[] = {{FAIR_ANN_SELECTED_NODE, NULL}, {NULL, NULL}};
static const struct fair_jfield pvc_meta[] = {META_FIELDS, {"annotations", pvc_ann}, {NULL, NULL}};
static const struct fair_jfield pvc_requests[] = {{"storage", NULL}, {NULL, NULL}};
static const struct fair_jfield pvc_resources[] = {{"requests", pvc_requests}, {NULL, NULL}};
static const struct fair_jfield pvc_spec[] = {
    {"volumeName", NULL},  {"storageClassName", NULL}, {"resources", pvc_resources},
    {"accessModes", NULL}, {"volumeMode", NULL},       {"selector", NULL},
    {NULL, NULL}};
static const struct fair_jfield pvc_status[] = {{"phase", NULL}, {NULL, NULL}};
static const struct fair_jfield pvc_filter[] = {STATUS_FIELDS,
                                                {"metadata", pvc_meta},
                                                {"spec", pvc_spec},
                                                {"status", pvc_status},
                                                {NULL, NULL}};
static const struct fair_jfield pv_meta[] = {META_FIELDS, {NULL, NULL}};
static const struct fair_jfield pv_meta_labels[] = {META_FIELDS, {"labels", NULL}, {NULL, NULL}};
static const struct fair_jfield pv_claim_ref[] = {
    {"namespace", NULL}, {"name", NULL}, {"uid", NULL}, {NULL, NULL}};
static const struct fair_jfield pv_capacity[] = {{"storage", NULL}, {NULL, NULL}};
static const struct fair_jfield pv_spec[] = {{"nodeAffinity", NULL},
                                             {"storageClassName", NULL},
                                             {"claimRef", pv_claim_ref},
                                             {"capacity", pv_capacity},
                                             {"accessModes", NULL},
                                             {"volumeMode", NULL},
                                             {NULL, NULL}};
static const struct fair_jfield pv_status[] = {{"phase", NULL}, {NULL, NULL}};
static const struct fair_jfield pv_filter[] = {STATUS_FIELDS,
                                               {"metadata", pv_meta_labels},
                                               {"spec", pv_spec},
                                               {"status", pv_status},
                                               {NULL, NULL}};
static const struct fair_jfield sc_filter[] = {STATUS_FIELDS,
                                               {"metadata", pv_meta},
                                               {"provisioner", NULL},
                                               {"volumeBindingMode", NULL},
                                               {"allowedTopologies", NULL},
                                               {NULL, NULL}};
const struct fair_ktype fair_ktype_pvc = {"PersistentVolumeClaim", dec_pvc, free_pvc, pvc_filter};
const struct fair_ktype fair_ktype_pv = {"PersistentVolume", dec_pv, free_pv, pv_filter};
const struct fair_ktype fair_ktype_storageclass = {"StorageClass", dec_sc, free_sc, sc_filter};

static const struct fair_jfield skel_meta[] = {
    {"name", NULL}, {"namespace", NULL}, {"uid", NULL}, {"resourceVersion", NULL}, {NULL, NULL}};
static const struct fair_jfield skel_spec[] = {
    {"nodeName", NULL}, {"schedulerName", NULL}, {NULL, NULL}};
static const struct fair_jfield skel_status[] = {{"phase", NULL}, {NULL, NULL}};
const struct fair_jfield fair_kskeleton_filter[] = {
    {"metadata", skel_meta}, {"spec", skel_spec}, {"status", skel_status}, {NULL, NULL}};

static int skel_str(const json_t *obj, const char *a, const char *b, char **out)
{
    const char *s = json_string_value(json_object_get(json_object_get(obj, a), b));
    *out = NULL;
    if (!s || strlen(s) > FAIR_DECODE_MAX_STR)
        return 0;
    *out = fair_strdup(s);
    return *out ? 0 : FAIR_ENOMEM;
}

int fair_kskeleton_decode(const json_t *obj, struct fair_kskeleton *sk)
{
    memset(sk, 0, sizeof *sk);
    if (!json_is_object(obj))
        return 0;
    if (skel_str(obj, "metadata", "uid", &sk->uid) ||
        skel_str(obj, "metadata", "namespace", &sk->namespace_) ||
        skel_str(obj, "metadata", "name", &sk->name) ||
        skel_str(obj, "metadata", "resourceVersion", &sk->resource_version) ||
        skel_str(obj, "spec", "nodeName", &sk->node_name) ||
        skel_str(obj, "spec", "schedulerName", &sk->scheduler_name) ||
        skel_str(obj, "status", "phase", &sk->phase)) {
        fair_kskeleton_release(sk);
        return FAIR_ENOMEM;
    }
    return 0;
}

void fair_kskeleton_release(struct fair_kskeleton *sk)
{
    fair_free(sk->uid);
    fair_free(sk->namespace_);
    fair_free(sk->name);
    fair_free(sk->resource_version);
    fair_free(sk->node_name);
    fair_free(sk->scheduler_name);
    fair_free(sk->phase);
    memset(sk, 0, sizeof *sk);
}

int fair_kstatus_decode(const json_t *obj, struct fair_kstatus *st)
{
    memset(st, 0, sizeof *st);
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (!kind || strcmp(kind, "Status"))
        return FAIR_EINVAL;
    const json_t *c = json_object_get(obj, "code");
    if (json_is_integer(c) && json_integer_value(c) >= 0 && json_integer_value(c) < 1000)
        st->code = (int)json_integer_value(c);
    const char *s = json_string_value(json_object_get(obj, "reason"));
    snprintf(st->reason, sizeof st->reason, "%s", s ? s : "");
    s = json_string_value(json_object_get(obj, "message"));
    snprintf(st->message, sizeof st->message, "%s", s ? s : "");
    return 0;
}

int fair_khttp_code(long s)
{
    if (s >= 200 && s < 300)
        return 0;
    switch (s) {
    case 404:
        return FAIR_ENOTFOUND;
    case 409:
        return FAIR_ECONFLICT;
    case 410:
        return FAIR_EGONE;
    case 429:
        return FAIR_ETOOMANY;
    default:
        return FAIR_EHTTP;
    }
}
