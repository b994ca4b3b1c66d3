/* CSV loaders for the simulator's node and job lists (openb and the simple
 * job format). Columns are looked up by header name; each row is checked
 * and any problem fails the load with "file:line: column: why". */
#include "sim/trace.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/quantity.h"
#include "base/yaml.h"
#include "engine/engine.h"

#define MAX_FIELDS 32

void fair_sim_limits_default(struct fair_sim_limits *lim)
{
    if (!lim->max_bytes)
        lim->max_bytes = (size_t)256 << 20;
    if (!lim->max_line)
        lim->max_line = 4096;
    if (!lim->max_rows)
        lim->max_rows = 2000000;
}

void fair_sim_trace_init(struct fair_sim_trace *t)
{
    memset(t, 0, sizeof(*t));
}

void fair_sim_trace_release(struct fair_sim_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nnodes; i++)
        fair_free(t->nodes[i].name);
    fair_free(t->nodes);
    for (size_t i = 0; i < t->njobs; i++) {
        fair_free(t->jobs[i].name);
        if (t->jobs[i].member == 0)
            fair_free(t->jobs[i].gang);
    }
    fair_free(t->jobs);
    for (size_t i = 0; i < t->nmodels; i++)
        fair_free(t->models[i]);
    for (size_t i = 0; i < t->nspecs; i++)
        fair_free(t->specs[i]);
    fair_free(t->specs);
    fair_free(t->spec_masks);
    for (size_t i = 0; i < t->nqueue_names; i++)
        fair_free(t->queue_names[i]);
    fair_free(t->queue_names);
    memset(t, 0, sizeof(*t));
}

uint64_t fair_sim_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 offset basis */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

int fair_sim_trace_model(struct fair_sim_trace *t, const char *name)
{
    for (size_t i = 0; i < t->nmodels; i++)
        if (strcmp(t->models[i], name) == 0)
            return (int)i;
    if (t->nmodels >= FAIR_SIM_MAX_MODELS)
        return -1;
    char *copy = fair_strdup(name);
    if (!copy)
        return -2;
    t->models[t->nmodels] = copy;
    return (int)t->nmodels++;
}

int64_t fair_sim_trace_gpu_capacity(const struct fair_sim_trace *t)
{
    int64_t sum = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        sum += (int64_t)t->nodes[i].gpu_count * FAIR_GPU_DEVICE_MILLI;
    return sum;
}

/* ---- CSV rows ---------------------------------------------------------- */

struct csv_row {
    char *field[MAX_FIELDS];
    size_t n;
    char storage[8192];
};

/* Splits one line (without its newline) into fields. Double-quoted fields
 * may contain commas and "" for a quote. */
static int csv_split(const char *line, size_t len, struct csv_row *row, const char *name,
                     long lineno, struct fair_error *err)
{
    size_t out = 0, i = 0;
    row->n = 0;
    for (;;) {
        if (row->n >= MAX_FIELDS)
            return fair_error_set(err, FAIR_EPARSE, "%s:%ld: more than %d fields", name, lineno,
                                  MAX_FIELDS);
        row->field[row->n++] = row->storage + out;
        bool quoted = i < len && line[i] == '"';
        if (quoted)
            i++;
        for (;;) {
            if (i >= len) {
                if (quoted)
                    return fair_error_set(err, FAIR_EPARSE, "%s:%ld: unterminated quote", name,
                                          lineno);
                break;
            }
            char c = line[i];
            if (quoted && c == '"') {
                if (i + 1 < len && line[i + 1] == '"') {
                    i++;
                } else {
                    quoted = false;
                    i++;
                    if (i < len && line[i] != ',')
                        return fair_error_set(err, FAIR_EPARSE,
                                              "%s:%ld: text after a closing quote", name, lineno);
                    continue;
                }
            } else if (!quoted && c == ',') {
                break;
            }
            if (out + 1 >= sizeof(row->storage))
                return fair_error_set(err, FAIR_ERANGE, "%s:%ld: line too long", name, lineno);
            row->storage[out++] = c;
            i++;
        }
        if (out + 1 >= sizeof(row->storage))
            return fair_error_set(err, FAIR_ERANGE, "%s:%ld: line too long", name, lineno);
        row->storage[out++] = '\0';
        if (i >= len)
            break;
        i++; /* the comma */
    }
    /* Trim surrounding blanks: hand-written fixtures often have them. */
    for (size_t f = 0; f < row->n; f++) {
        char *s = row->field[f];
        while (*s == ' ' || *s == '\t')
            s++;
        size_t l = strlen(s);
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
            s[--l] = '\0';
        row->field[f] = s;
    }
    return 0;
}

/* Iterates over the lines of a buffer, enforcing the limits. */
struct line_iter {
    const char *data;
    size_t len, pos;
    long lineno;
    const char *name;
    const struct fair_sim_limits *lim;
};

/* 1: a line in (*line, *llen); 0: end; <0: error. Blank lines are skipped. */
static int next_line(struct line_iter *it, const char **line, size_t *llen, struct fair_error *err)
{
    while (it->pos < it->len) {
        const char *s = it->data + it->pos;
        const char *nl = memchr(s, '\n', it->len - it->pos);
        size_t l = nl ? (size_t)(nl - s) : it->len - it->pos;
        it->pos += l + (nl ? 1 : 0);
        it->lineno++;
        if (l > 0 && s[l - 1] == '\r')
            l--;
        if (l > it->lim->max_line)
            return fair_error_set(err, FAIR_ERANGE, "%s:%ld: line longer than %zu bytes", it->name,
                                  it->lineno, it->lim->max_line);
        if (memchr(s, '\0', l))
            return fair_error_set(err, FAIR_EPARSE, "%s:%ld: NUL byte", it->name, it->lineno);
        bool blank = true;
        for (size_t i = 0; i < l; i++)
            if (s[i] != ' ' && s[i] != '\t')
                blank = false;
        if (blank)
            continue;
        *line = s;
        *llen = l;
        return 1;
    }
    return 0;
}

/* The checks both trace kinds make before their rows, then the header line
 * into hdr. what names the rows ("nodes", "jobs"); loaded is how many the
 * trace holds already. 0 or a negative FAIR_E* code. */
static int read_header(struct line_iter *it, size_t loaded, const char *what, struct csv_row *hdr,
                       const struct csv_row *row, struct fair_error *err)
{
    const char *line;
    size_t llen;
    if (!hdr || !row)
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", it->name);
    if (it->len > it->lim->max_bytes)
        return fair_error_set(err, FAIR_ERANGE, "%s: larger than %zu bytes", it->name,
                              it->lim->max_bytes);
    if (loaded)
        return fair_error_set(err, FAIR_EINVAL, "%s: %s already loaded", it->name, what);
    int rc = next_line(it, &line, &llen, err);
    if (rc == 0)
        return fair_error_set(err, FAIR_EPARSE, "%s: empty file: expected a header line", it->name);
    if (rc < 0)
        return rc;
    return csv_split(line, llen, hdr, it->name, it->lineno, err);
}

/* The next data row into row, checked against the header's width and the
 * row limit (count rows of kind what are in already).
 * 1: a row; 0: end of file; <0: error. */
static int next_row(struct line_iter *it, const struct csv_row *hdr, struct csv_row *row,
                    size_t count, const char *what, struct fair_error *err)
{
    const char *line;
    size_t llen;
    int rc = next_line(it, &line, &llen, err);
    if (rc != 1)
        return rc;
    rc = csv_split(line, llen, row, it->name, it->lineno, err);
    if (rc)
        return rc;
    if (row->n != hdr->n)
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: %zu fields, the header has %zu", it->name,
                              it->lineno, row->n, hdr->n);
    if (count >= it->lim->max_rows)
        return fair_error_set(err, FAIR_ERANGE, "%s:%ld: more than %zu %s", it->name, it->lineno,
                              it->lim->max_rows, what);
    return 1;
}

static int column(const struct csv_row *hdr, const char *name)
{
    for (size_t i = 0; i < hdr->n; i++)
        if (strcmp(hdr->field[i], name) == 0)
            return (int)i;
    return -1;
}

static const char *field(const struct csv_row *row, int col)
{
    if (col < 0 || (size_t)col >= row->n)
        return "";
    return row->field[col];
}

static int parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!*s)
        return FAIR_EINVAL;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return FAIR_EINVAL;
    *out = v;
    return 0;
}

/* Interns a "A|B|C" model set and returns its spec index (-1 for ""). */
static int intern_spec(struct fair_sim_trace *t, const char *spec, int *idx, uint64_t *mask)
{
    *idx = -1;
    *mask = 0;
    if (!*spec)
        return 0;
    for (size_t i = 0; i < t->nspecs; i++)
        if (strcmp(t->specs[i], spec) == 0) {
            *idx = (int)i;
            *mask = t->spec_masks[i];
            return 0;
        }
    uint64_t m = 0;
    const char *p = spec;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        char name[128];
        if (l == 0 || l >= sizeof(name))
            return FAIR_EINVAL;
        memcpy(name, p, l);
        name[l] = '\0';
        int mi = fair_sim_trace_model(t, name);
        if (mi == -2)
            return FAIR_ENOMEM;
        if (mi < 0)
            return FAIR_ERANGE;
        m |= (uint64_t)1 << mi;
        p += l;
        if (*p == '|')
            p++;
    }
    size_t cap = t->nspecs; /* arrays grow one by one: specs are few */
    char **ns = fair_realloc(t->specs, (cap + 1) * sizeof(*ns));
    if (!ns)
        return FAIR_ENOMEM;
    t->specs = ns;
    uint64_t *nm = fair_realloc(t->spec_masks, (cap + 1) * sizeof(*nm));
    if (!nm)
        return FAIR_ENOMEM;
    t->spec_masks = nm;
    char *copy = fair_strdup(spec);
    if (!copy)
        return FAIR_ENOMEM;
    t->specs[cap] = copy;
    t->spec_masks[cap] = m;
    t->nspecs++;
    *idx = (int)cap;
    *mask = m;
    return 0;
}

static int intern_queue(struct fair_sim_trace *t, const char *name, int32_t *idx)
{
    for (size_t i = 0; i < t->nqueue_names; i++)
        if (strcmp(t->queue_names[i], name) == 0) {
            *idx = (int32_t)i;
            return 0;
        }
    if (t->nqueue_names >= 10000)
        return FAIR_ERANGE;
    char **nq = fair_realloc(t->queue_names, (t->nqueue_names + 1) * sizeof(*nq));
    if (!nq)
        return FAIR_ENOMEM;
    t->queue_names = nq;
    char *copy = fair_strdup(name);
    if (!copy)
        return FAIR_ENOMEM;
    t->queue_names[t->nqueue_names] = copy;
    *idx = (int32_t)t->nqueue_names++;
    return 0;
}

/* ---- nodes -------------------------------------------------------------- */

int fair_sim_trace_parse_nodes(struct fair_sim_trace *t, const char *name, const char *data,
                               size_t len, const struct fair_sim_limits *lim_in,
                               struct fair_error *err)
{
    int rc = 0;
    struct fair_sim_limits lim = lim_in ? *lim_in : (struct fair_sim_limits){0};
    fair_sim_limits_default(&lim);
    struct line_iter it = {.data = data, .len = len, .name = name, .lim = &lim};
    struct csv_row *hdr = fair_malloc(sizeof(*hdr));
    struct csv_row *row = fair_malloc(sizeof(*row));
    size_t cap = t->nnodes;
    rc = read_header(&it, t->nnodes, "nodes", hdr, row, err);
    if (rc)
        goto out;
    int c_name = column(hdr, "sn");
    if (c_name < 0)
        c_name = column(hdr, "name");
    int c_cpu = column(hdr, "cpu_milli"), c_mem = column(hdr, "memory_mib");
    int c_gpu = column(hdr, "gpu"), c_model = column(hdr, "model");
    if (c_name < 0 || c_cpu < 0 || c_mem < 0 || c_gpu < 0) {
        rc = fair_error_set(err, FAIR_EPARSE,
                            "%s:%ld: header must name the columns sn (or name), cpu_milli, "
                            "memory_mib and gpu (model is optional)",
                            name, it.lineno);
        goto out;
    }
    while ((rc = next_row(&it, hdr, row, t->nnodes, "nodes", err)) == 1) {
        struct fair_sim_node n = {.model = -1};
        int64_t v;
        const char *nm = field(row, c_name);
        if (!*nm || strlen(nm) > 253) {
            rc = fair_error_set(err, FAIR_EPARSE, "%s:%ld: sn: empty or longer than 253 bytes",
                                name, it.lineno);
            goto out;
        }
        if (parse_int(field(row, c_cpu), 0, INT64_MAX / 4, &v)) {
            rc = fair_error_set(err, FAIR_EPARSE, "%s:%ld: cpu_milli: \"%s\" is not a count >= 0",
                                name, it.lineno, field(row, c_cpu));
            goto out;
        }
        n.cpu_milli = v;
        if (parse_int(field(row, c_mem), 0, (int64_t)1 << 40, &v)) {
            rc = fair_error_set(err, FAIR_EPARSE,
                                "%s:%ld: memory_mib: \"%s\" is not a count of MiB >= 0", name,
                                it.lineno, field(row, c_mem));
            goto out;
        }
        n.memory_bytes = v << 20;
        if (parse_int(field(row, c_gpu), 0, FAIR_MAX_GPUS_PER_NODE, &v)) {
            rc = fair_error_set(err, FAIR_EPARSE, "%s:%ld: gpu: \"%s\" is not a count in 0..%d",
                                name, it.lineno, field(row, c_gpu), FAIR_MAX_GPUS_PER_NODE);
            goto out;
        }
        n.gpu_count = (int)v;
        const char *model = field(row, c_model);
        if (*model) {
            n.model = fair_sim_trace_model(t, model);
            if (n.model < 0) {
                rc = fair_error_set(err, n.model == -2 ? FAIR_ENOMEM : FAIR_ERANGE,
                                    "%s:%ld: model: more than %d GPU models", name, it.lineno,
                                    FAIR_SIM_MAX_MODELS);
                goto out;
            }
        }
        if (fair_grow((void **)&t->nodes, &cap, t->nnodes + 1, sizeof(*t->nodes))) {
            rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
            goto out;
        }
        n.name = fair_strdup(nm);
        if (!n.name) {
            rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
            goto out;
        }
        t->nodes[t->nnodes++] = n;
    }
    if (rc < 0)
        goto out;
    rc = 0;
    if (t->nnodes == 0)
        rc = fair_error_set(err, FAIR_EPARSE, "%s: no nodes after the header", name);
out:
    fair_free(hdr);
    fair_free(row);
    return rc;
}

/* ---- jobs --------------------------------------------------------------- */

struct job_cols {
    int name, queue, submit, duration, gpu, cpu, mem, prio, preempt, model, pods;   /* simple */
    int cpu_milli, mem_mib, num_gpu, gpu_milli, spec, qos, created, deleted, sched; /* openb */
};

static int parse_openb(struct fair_sim_trace *t, const struct job_cols *c,
                       const struct csv_row *row, const char *name, long ln, struct fair_sim_job *j,
                       struct fair_error *err)
{
    int64_t v, ngpu, gm;
    if (parse_int(field(row, c->cpu_milli), 0, INT64_MAX / 4, &v))
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: cpu_milli: \"%s\" is not a count >= 0",
                              name, ln, field(row, c->cpu_milli));
    j->cpu_milli = v;
    if (parse_int(field(row, c->mem_mib), 0, (int64_t)1 << 40, &v))
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: memory_mib: \"%s\" is not a count >= 0",
                              name, ln, field(row, c->mem_mib));
    j->memory_bytes = v << 20;
    if (parse_int(field(row, c->num_gpu), 0, FAIR_MAX_GPUS_PER_NODE, &ngpu))
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: num_gpu: \"%s\" is not a count in 0..%d",
                              name, ln, field(row, c->num_gpu), FAIR_MAX_GPUS_PER_NODE);
    if (parse_int(field(row, c->gpu_milli), 0, 1000, &gm))
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: gpu_milli: \"%s\" is not in 0..1000", name,
                              ln, field(row, c->gpu_milli));
    if (ngpu == 0)
        j->gpu_milli = 0;
    else if (ngpu == 1)
        j->gpu_milli = gm == 0 ? 1000 : gm;
    else if (gm == 1000 || gm == 0)
        j->gpu_milli = ngpu * 1000;
    else
        return fair_error_set(err, FAIR_EPARSE,
                              "%s:%ld: gpu_milli: %lld with num_gpu %lld: only single-GPU pods "
                              "may share a GPU",
                              name, ln, (long long)gm, (long long)ngpu);
    const char *qos = field(row, c->qos);
    if (strlen(qos) >= sizeof(j->qos))
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: qos: longer than %zu bytes", name, ln,
                              sizeof(j->qos) - 1);
    memcpy(j->qos, qos, strlen(qos) + 1);
    int rc = intern_spec(t, field(row, c->spec), &j->spec, &j->model_mask);
    if (rc)
        return fair_error_set(err, rc, "%s:%ld: gpu_spec: \"%s\": %s", name, ln,
                              field(row, c->spec),
                              rc == FAIR_ERANGE ? "too many GPU models" : "malformed model list");
    j->preemptible = true;
    j->priority = 0;
    j->queue = -1;
    /* Times: arrival at creation; the run lasts deletion - scheduled (or
     * deletion - creation for pods the real cluster never scheduled). */
    if (c->created < 0) {
        j->submit_ms = 0;
        j->duration_ms = FAIR_SIM_FOREVER;
        return 0;
    }
    int64_t cr, del = -1, sch = -1;
    const int64_t tmax = (int64_t)1 << 40;
    if (parse_int(field(row, c->created), 0, tmax, &cr))
        return fair_error_set(err, FAIR_EPARSE,
                              "%s:%ld: creation_time: \"%s\" is not a time in seconds >= 0", name,
                              ln, field(row, c->created));
    if (*field(row, c->deleted) && parse_int(field(row, c->deleted), 0, tmax, &del))
        return fair_error_set(err, FAIR_EPARSE,
                              "%s:%ld: deletion_time: \"%s\" is not a time in seconds >= 0", name,
                              ln, field(row, c->deleted));
    if (*field(row, c->sched) && parse_int(field(row, c->sched), 0, tmax, &sch))
        return fair_error_set(err, FAIR_EPARSE,
                              "%s:%ld: scheduled_time: \"%s\" is not a time in seconds >= 0", name,
                              ln, field(row, c->sched));
    int64_t from = sch >= 0 ? sch : cr;
    if (sch >= 0 && sch < cr)
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: scheduled_time before creation_time", name,
                              ln);
    if (del >= 0 && del < from)
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: deletion_time before %s", name, ln,
                              sch >= 0 ? "scheduled_time" : "creation_time");
    j->submit_ms = cr * 1000;
    j->duration_ms = del >= 0 ? (del - from) * 1000 : FAIR_SIM_FOREVER;
    return 0;
}

static int parse_seconds(const char *s, int64_t *ms)
{
    struct fair_error e = {0};
    if (!*s || fair_quantity_parse_milli(s, ms, &e) || *ms < 0 || *ms > ((int64_t)1 << 50))
        return FAIR_EINVAL;
    return 0;
}

static int parse_simple(struct fair_sim_trace *t, const struct job_cols *c,
                        const struct csv_row *row, const char *name, long ln,
                        struct fair_sim_job *j, struct fair_error *err)
{
    struct fair_error qe = {0};
    int64_t v;
    const char *q = field(row, c->queue);
    if (!*q || strlen(q) > 253)
        return fair_error_set(err, FAIR_EPARSE, "%s:%ld: queue: empty or longer than 253 bytes",
                              name, ln);
    int rc = intern_queue(t, q, &j->queue);
    if (rc)
        return fair_error_set(err, rc, "%s:%ld: queue: too many queues", name, ln);
    if (parse_seconds(field(row, c->submit), &j->submit_ms))
        return fair_error_set(err, FAIR_EPARSE,
                              "%s:%ld: submit_s: \"%s\" is not a number of seconds >= 0", name, ln,
                              field(row, c->submit));
    const char *d = field(row, c->duration);
    if (!*d || strcmp(d, "inf") == 0) {
        j->duration_ms = FAIR_SIM_FOREVER;
    } else if (parse_seconds(d, &j->duration_ms)) {
        return fair_error_set(err, FAIR_EPARSE,
                              "%s:%ld: duration_s: \"%s\" is not a number of seconds >= 0 "
                              "(or empty/inf for never)",
                              name, ln, d);
    }
    if (fair_quantity_parse_milli(field(row, c->gpu), &v, &qe) || v < 0 ||
        v > (int64_t)FAIR_MAX_GPUS_PER_NODE * 1000 || (v > 1000 && v % 1000))
        return fair_error_set(err, FAIR_EPARSE,
                              "%s:%ld: gpu: \"%s\" must be whole GPUs (at most %d) or a "
                              "fraction below 1",
                              name, ln, field(row, c->gpu), FAIR_MAX_GPUS_PER_NODE);
    j->gpu_milli = v;
    j->cpu_milli = 0;
    if (*field(row, c->cpu)) {
        if (fair_quantity_parse_milli(field(row, c->cpu), &v, &qe) || v < 0)
            return fair_error_set(err, FAIR_EPARSE, "%s:%ld: cpu: \"%s\" is not a quantity >= 0",
                                  name, ln, field(row, c->cpu));
        j->cpu_milli = v;
    }
    j->memory_bytes = 0;
    if (*field(row, c->mem)) {
        if (fair_quantity_parse(field(row, c->mem), &v, &qe) || v < 0)
            return fair_error_set(err, FAIR_EPARSE, "%s:%ld: memory: \"%s\" is not a quantity >= 0",
                                  name, ln, field(row, c->mem));
        j->memory_bytes = v;
    }
    j->priority = 0;
    if (*field(row, c->prio)) {
        if (parse_int(field(row, c->prio), INT32_MIN, INT32_MAX, &v))
            return fair_error_set(err, FAIR_EPARSE, "%s:%ld: priority: \"%s\" is not an int32",
                                  name, ln, field(row, c->prio));
        j->priority = (int32_t)v;
    }
    j->preemptible = true;
    const char *p = field(row, c->preempt);
    if (*p) {
        if (strcmp(p, "true") == 0)
            j->preemptible = true;
        else if (strcmp(p, "false") == 0)
            j->preemptible = false;
        else
            return fair_error_set(err, FAIR_EPARSE,
                                  "%s:%ld: preemptible: \"%s\" is not true or false", name, ln, p);
    }
    rc = intern_spec(t, field(row, c->model), &j->spec, &j->model_mask);
    if (rc)
        return fair_error_set(err, rc, "%s:%ld: gpu_model: \"%s\": %s", name, ln,
                              field(row, c->model),
                              rc == FAIR_ERANGE ? "too many GPU models" : "malformed model list");
    j->gang_size = 1;
    if (*field(row, c->pods)) {
        if (parse_int(field(row, c->pods), 1, FAIR_SIM_MAX_GANG, &v))
            return fair_error_set(err, FAIR_EPARSE,
                                  "%s:%ld: pods: \"%s\" is not a count of pods in 1..%d", name, ln,
                                  field(row, c->pods), FAIR_SIM_MAX_GANG);
        j->gang_size = (int32_t)v;
    }
    return 0;
}

static int job_cmp(const void *a, const void *b)
{
    const struct fair_sim_job *x = a, *y = b;
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    if (x->line != y->line)
        return (x->line > y->line) - (x->line < y->line);
    return (x->member > y->member) - (x->member < y->member);
}

static int name_cmp(const void *a, const void *b)
{
    const struct fair_sim_job *x = *(const struct fair_sim_job *const *)a;
    const struct fair_sim_job *y = *(const struct fair_sim_job *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* The simple format names pods (the engine's uids, the gang members'
 * names): two alike would be one pod to the engine. */
static int check_unique_names(const struct fair_sim_trace *t, const char *name,
                              struct fair_error *err)
{
    const struct fair_sim_job **v = fair_malloc(t->njobs * sizeof(*v));
    if (!v)
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
    for (size_t i = 0; i < t->njobs; i++)
        v[i] = &t->jobs[i];
    qsort(v, t->njobs, sizeof(*v), name_cmp);
    int rc = 0;
    for (size_t i = 1; i < t->njobs && !rc; i++)
        if (strcmp(v[i - 1]->name, v[i]->name) == 0)
            rc = fair_error_set(err, FAIR_EPARSE,
                                "%s:%lld: name: \"%s\" is already the name of a pod (line "
                                "%lld); pods of a multi-pod job are named NAME-0, NAME-1, ...",
                                name, (long long)v[i]->line, v[i]->name, (long long)v[i - 1]->line);
    fair_free(v);
    return rc;
}

/* Appends job j to t (taking its strings): gang_size pods for a gang, with
 * the row limit counting pods. */
static int add_job(struct fair_sim_trace *t, size_t *cap, struct fair_sim_job *j, const char *nm,
                   const char *name, long ln, const struct fair_sim_limits *lim,
                   struct fair_error *err)
{
    size_t n = j->gang_size > 1 ? (size_t)j->gang_size : 1;
    if (n > lim->max_rows || t->njobs > lim->max_rows - n)
        return fair_error_set(err, FAIR_ERANGE, "%s:%ld: more than %zu pods", name, ln,
                              lim->max_rows);
    if (fair_grow((void **)&t->jobs, cap, t->njobs + n, sizeof(*t->jobs)))
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
    if (n == 1) {
        j->gang = NULL;
        j->gang_size = 1;
        j->member = 0;
        j->name = fair_strdup(nm);
        if (!j->name)
            return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
        t->jobs[t->njobs++] = *j;
        return 0;
    }
    char *gang = fair_strdup(nm);
    if (!gang)
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
    for (size_t i = 0; i < n; i++) {
        char pod[300];
        snprintf(pod, sizeof(pod), "%s-%zu", nm, i);
        struct fair_sim_job m = *j;
        m.gang = gang;
        m.member = (int32_t)i;
        m.name = fair_strdup(pod);
        if (!m.name) {
            if (i == 0)
                fair_free(gang);
            return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
        }
        t->jobs[t->njobs++] = m;
    }
    return 0;
}

int fair_sim_trace_parse_jobs(struct fair_sim_trace *t, const char *name, const char *data,
                              size_t len, const struct fair_sim_limits *lim_in,
                              struct fair_error *err)
{
    int rc = 0;
    struct fair_sim_limits lim = lim_in ? *lim_in : (struct fair_sim_limits){0};
    fair_sim_limits_default(&lim);
    struct line_iter it = {.data = data, .len = len, .name = name, .lim = &lim};
    struct csv_row *hdr = fair_malloc(sizeof(*hdr));
    struct csv_row *row = fair_malloc(sizeof(*row));
    size_t cap = t->njobs;
    rc = read_header(&it, t->njobs, "jobs", hdr, row, err);
    if (rc)
        goto out;
    struct job_cols c = {
        .name = column(hdr, "name"),
        .queue = column(hdr, "queue"),
        .submit = column(hdr, "submit_s"),
        .duration = column(hdr, "duration_s"),
        .gpu = column(hdr, "gpu"),
        .cpu = column(hdr, "cpu"),
        .mem = column(hdr, "memory"),
        .prio = column(hdr, "priority"),
        .preempt = column(hdr, "preemptible"),
        .model = column(hdr, "gpu_model"),
        .pods = column(hdr, "pods"),
        .cpu_milli = column(hdr, "cpu_milli"),
        .mem_mib = column(hdr, "memory_mib"),
        .num_gpu = column(hdr, "num_gpu"),
        .gpu_milli = column(hdr, "gpu_milli"),
        .spec = column(hdr, "gpu_spec"),
        .qos = column(hdr, "qos"),
        .created = column(hdr, "creation_time"),
        .deleted = column(hdr, "deletion_time"),
        .sched = column(hdr, "scheduled_time"),
    };
    bool simple = c.queue >= 0;
    if (c.name < 0) {
        rc = fair_error_set(err, FAIR_EPARSE, "%s:%ld: header has no \"name\" column", name,
                            it.lineno);
        goto out;
    }
    if (simple && (c.submit < 0 || c.gpu < 0)) {
        rc = fair_error_set(err, FAIR_EPARSE,
                            "%s:%ld: a simple job list needs the columns name, queue, submit_s "
                            "and gpu (duration_s, cpu, memory, priority, preemptible, "
                            "gpu_model and pods are optional)",
                            name, it.lineno);
        goto out;
    }
    if (!simple && (c.cpu_milli < 0 || c.mem_mib < 0 || c.num_gpu < 0 || c.gpu_milli < 0)) {
        rc = fair_error_set(err, FAIR_EPARSE,
                            "%s:%ld: unknown job list: expected the simple format (name,queue,"
                            "submit_s,duration_s,gpu,...) or an openb pod list (name,cpu_milli,"
                            "memory_mib,num_gpu,gpu_milli,...)",
                            name, it.lineno);
        goto out;
    }
    t->simple_format = simple;
    t->has_times = simple || c.created >= 0;
    while ((rc = next_row(&it, hdr, row, t->njobs, "jobs", err)) == 1) {
        struct fair_sim_job j = {.line = it.lineno, .spec = -1, .gang_size = 1};
        const char *nm = field(row, c.name);
        if (!*nm || strlen(nm) > 253) {
            rc = fair_error_set(err, FAIR_EPARSE, "%s:%ld: name: empty or longer than 253 bytes",
                                name, it.lineno);
            goto out;
        }
        rc = simple ? parse_simple(t, &c, row, name, it.lineno, &j, err)
                    : parse_openb(t, &c, row, name, it.lineno, &j, err);
        if (rc)
            goto out;
        rc = add_job(t, &cap, &j, nm, name, it.lineno, &lim, err);
        if (rc)
            goto out;
    }
    if (rc < 0)
        goto out;
    rc = 0;
    if (t->njobs == 0) {
        rc = fair_error_set(err, FAIR_EPARSE, "%s: no jobs after the header", name);
        goto out;
    }
    if (simple && (rc = check_unique_names(t, name, err)))
        goto out;
    qsort(t->jobs, t->njobs, sizeof(*t->jobs), job_cmp);
out:
    fair_free(hdr);
    fair_free(row);
    return rc;
}

static int load(struct fair_sim_trace *t, const char *path, const struct fair_sim_limits *lim_in,
                bool nodes, struct fair_error *err)
{
    struct fair_sim_limits lim = lim_in ? *lim_in : (struct fair_sim_limits){0};
    fair_sim_limits_default(&lim);
    char *data = NULL;
    size_t len = 0;
    int rc = fair_read_file(path, lim.max_bytes, &data, &len, err);
    if (rc)
        return rc;
    rc = nodes ? fair_sim_trace_parse_nodes(t, path, data, len, &lim, err)
               : fair_sim_trace_parse_jobs(t, path, data, len, &lim, err);
    fair_free(data);
    return rc;
}

int fair_sim_trace_load_nodes(struct fair_sim_trace *t, const char *path,
                              const struct fair_sim_limits *lim, struct fair_error *err)
{
    return load(t, path, lim, true, err);
}

int fair_sim_trace_load_jobs(struct fair_sim_trace *t, const char *path,
                             const struct fair_sim_limits *lim, struct fair_error *err)
{
    return load(t, path, lim, false, err);
}
