/* Per-pod memory of the controller (see podmem.h): a pointer array with a
 * UID index; removal moves the last entry into the hole. */
#include "ctl/podmem.h"

#include <string.h>

#include "base/alloc.h"
#include "base/error.h"

void fair_ctl_podmem_init(struct fair_ctl_podmem *m)
{
    memset(m, 0, sizeof *m);
    fair_ctl_index_init(&m->by_uid);
    fair_ctl_index_init(&m->by_lineage);
}

static void entry_free(struct fair_ctl_podmem_entry *e)
{
    if (!e)
        return;
    fair_free(e->uid);
    fair_free(e->op_node);
    fair_free(e->hold_node);
    fair_free(e->charge.queue);
    fair_free(e->charge.project);
    fair_free(e->charge.gang);
    fair_free(e);
}

void fair_ctl_podmem_release(struct fair_ctl_podmem *m)
{
    for (size_t i = 0; i < m->n; i++)
        entry_free(m->v[i]);
    fair_free(m->v);
    fair_ctl_index_release(&m->by_uid);
    for (size_t i = 0; i < m->nlin; i++)
        fair_free(m->lin_keys[i]);
    fair_free(m->lin_keys);
    fair_free(m->lin_count);
    fair_ctl_index_release(&m->by_lineage);
    memset(m, 0, sizeof *m);
}

struct fair_ctl_podmem_entry *fair_ctl_podmem_get(const struct fair_ctl_podmem *m, const char *uid)
{
    int32_t i = fair_ctl_index_get(&m->by_uid, uid);
    return i < 0 ? NULL : m->v[i];
}

struct fair_ctl_podmem_entry *fair_ctl_podmem_ensure(struct fair_ctl_podmem *m, const char *uid)
{
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(m, uid);
    if (e)
        return e;
    if (m->n >= FAIR_CTL_PODMEM_MAX)
        return NULL;
    if (fair_grow((void **)&m->v, &m->cap, m->n + 1, sizeof *m->v))
        return NULL;
    e = fair_calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->uid = fair_strdup(uid);
    e->last_event_why = -1;
    e->last_cond_why = -1;
    if (!e->uid || fair_ctl_index_put(&m->by_uid, e->uid, (int32_t)m->n)) {
        entry_free(e);
        return NULL;
    }
    m->v[m->n++] = e;
    return e;
}

int fair_ctl_podmem_begin(struct fair_ctl_podmem *m, const char *uid, enum fair_ctl_op op,
                          const char *node, uint64_t devices, int64_t now_ms)
{
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_ensure(m, uid);
    if (!e)
        return FAIR_ENOMEM;
    if (e->op != FAIR_CTL_OP_NONE)
        return FAIR_EBUSY;
    char *copy = NULL;
    if (node && !(copy = fair_strdup(node)))
        return FAIR_ENOMEM;
    fair_free(e->op_node);
    e->op_node = copy;
    e->op = op;
    if (op == FAIR_CTL_OP_PROVISIONING)
        e->provision_expired = false;
    e->op_devices = devices;
    e->op_start_ms = now_ms;
    m->inflight++;
    return 0;
}

static void end_entry(struct fair_ctl_podmem *m, struct fair_ctl_podmem_entry *e)
{
    if (e->op == FAIR_CTL_OP_NONE)
        return;
    e->op = FAIR_CTL_OP_NONE;
    e->notice_due_ms = 0;
    e->provision_ready = false;
    e->provision_seen = 0;
    e->provision_rv = 0;
    fair_free(e->op_node);
    e->op_node = NULL;
    e->op_devices = 0;
    m->inflight--;
}

void fair_ctl_podmem_end(struct fair_ctl_podmem *m, const char *uid)
{
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(m, uid);
    if (e)
        end_entry(m, e);
}

size_t fair_ctl_podmem_expire(struct fair_ctl_podmem *m, int64_t now_ms, int64_t timeout_ms,
                              int64_t provision_timeout_ms)
{
    size_t n = 0;
    if (!m->inflight)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        struct fair_ctl_podmem_entry *e = m->v[i];
        int64_t t = e->op == FAIR_CTL_OP_PROVISIONING ? provision_timeout_ms : timeout_ms;
        if (e->op != FAIR_CTL_OP_NONE && now_ms - e->op_start_ms >= t) {
            if (e->op == FAIR_CTL_OP_PROVISIONING)
                e->provision_expired = true;
            end_entry(m, e);
            n++;
        }
    }
    return n;
}

void fair_ctl_podmem_remove(struct fair_ctl_podmem *m, const char *uid)
{
    int32_t i = fair_ctl_index_get(&m->by_uid, uid);
    if (i < 0)
        return;
    struct fair_ctl_podmem_entry *e = m->v[i];
    end_entry(m, e);
    fair_ctl_index_del(&m->by_uid, e->uid);
    size_t last = m->n - 1;
    if ((size_t)i != last) {
        m->v[i] = m->v[last];
        fair_ctl_index_put(&m->by_uid, m->v[i]->uid, i); /* replaces: no allocation */
    }
    m->n--;
    entry_free(e);
}

void fair_ctl_podmem_clear_ops(struct fair_ctl_podmem *m)
{
    for (size_t i = 0; i < m->n; i++)
        end_entry(m, m->v[i]);
}

int fair_ctl_podmem_set_hold(struct fair_ctl_podmem *m, const char *uid, const char *node,
                             int64_t since_ms)
{
    /* node NULL with since_ms > 0: a hold that timed out (its cooldown). */
    bool keep = node || since_ms > 0;
    struct fair_ctl_podmem_entry *e =
        keep ? fair_ctl_podmem_ensure(m, uid) : fair_ctl_podmem_get(m, uid);
    if (!e)
        return keep ? FAIR_ENOMEM : 0;
    if (node && e->hold_node && !strcmp(e->hold_node, node)) {
        e->hold_since_ms = since_ms;
        return 0;
    }
    char *copy = node ? fair_strdup(node) : NULL;
    if (node && !copy)
        return FAIR_ENOMEM;
    fair_free(e->hold_node);
    e->hold_node = copy;
    e->hold_since_ms = since_ms;
    return 0;
}

/* The position of lineage's count, created at 0 when absent; FAIR_ERANGE
 * past FAIR_CTL_LINEAGE_MAX lineages, FAIR_ENOMEM. */
static int32_t lineage_slot(struct fair_ctl_podmem *m, const char *lineage)
{
    int32_t i = fair_ctl_index_get(&m->by_lineage, lineage);
    if (i >= 0)
        return i;
    if (m->nlin >= FAIR_CTL_LINEAGE_MAX)
        return FAIR_ERANGE;
    if (fair_grow((void **)&m->lin_keys, &m->lin_cap, m->nlin + 1, sizeof *m->lin_keys) ||
        fair_grow((void **)&m->lin_count, &m->lin_cnt_cap, m->nlin + 1, sizeof *m->lin_count))
        return FAIR_ENOMEM;
    char *key = fair_strdup(lineage);
    if (!key || fair_ctl_index_put(&m->by_lineage, key, (int32_t)m->nlin)) {
        fair_free(key);
        return FAIR_ENOMEM;
    }
    m->lin_keys[m->nlin] = key;
    m->lin_count[m->nlin] = 0;
    return (int32_t)m->nlin++;
}

int fair_ctl_podmem_count_eviction(struct fair_ctl_podmem *m, const char *lineage)
{
    int32_t i = lineage_slot(m, lineage);
    if (i < 0)
        return i;
    if (m->lin_count[i] < INT32_MAX)
        m->lin_count[i]++;
    return 0;
}

int fair_ctl_podmem_restore_evictions(struct fair_ctl_podmem *m, const char *lineage, int64_t n)
{
    int32_t i = lineage_slot(m, lineage);
    if (i < 0)
        return i;
    if (n > m->lin_count[i])
        m->lin_count[i] = n < INT32_MAX ? (int32_t)n : INT32_MAX;
    return 0;
}

int32_t fair_ctl_podmem_evictions(const struct fair_ctl_podmem *m, const char *lineage)
{
    int32_t i = lineage ? fair_ctl_index_get(&m->by_lineage, lineage) : -1;
    return i < 0 ? 0 : m->lin_count[i];
}

int fair_ctl_podmem_set_charge(struct fair_ctl_podmem *m, const char *uid, const char *queue,
                               const char *project, bool preemptible, int64_t gpu_milli,
                               const char *gang, int32_t gang_size, uint64_t devices)
{
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_ensure(m, uid);
    if (!e)
        return FAIR_ENOMEM;
    char *q = fair_strdup(queue ? queue : "");
    char *p = fair_strdup(project ? project : "");
    char *g = gang && *gang ? fair_strdup(gang) : NULL;
    if (!q || !p || (gang && *gang && !g)) {
        fair_free(q);
        fair_free(p);
        fair_free(g);
        return FAIR_ENOMEM;
    }
    fair_free(e->charge.queue);
    fair_free(e->charge.project);
    fair_free(e->charge.gang);
    e->charge = (struct fair_ctl_charge){.set = true,
                                         .queue = q,
                                         .project = p,
                                         .preemptible = preemptible,
                                         .gpu_milli = gpu_milli,
                                         .gang = g,
                                         .gang_size = gang_size,
                                         .devices = devices};
    return 0;
}

void fair_ctl_podmem_fix_notice(struct fair_ctl_podmem *m, const char *uid, int64_t notice_ms)
{
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(m, uid);
    if (!e || !e->charge.set || e->charge.notice_set)
        return;
    e->charge.notice_set = true;
    e->charge.notice_ms = notice_ms > 0 ? notice_ms : 0;
}
