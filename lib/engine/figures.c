/* The result's figures: guaranteed, fair share, allocated, borrowed, lent
 * and pod counts per queue, project and cluster (docs/engine.md,
 * "Figures"). */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/cycle.h"
#include "engine/share.h"

static void fill_status(struct fair_share_status *st, const struct acct *a)
{
    for (int r = 0; r < NRES; r++) {
        st->guaranteed.v[r] = a->g[r];
        st->fair_share.v[r] = a->fs[r];
        st->allocated.v[r] = a->alloc0[r];
        st->allocated_after.v[r] = a->alloc[r] - a->evicted[r];
        st->demand.v[r] = a->demand[r];
        int64_t b = a->alloc0[r] - a->g[r];
        st->borrowed.v[r] = b > 0 ? b : 0;
        st->lendable.v[r] = a->lendable[r];
    }
    st->pending_pods = a->npending;
    st->running_pods = a->nrunning;
}

/* lent: idle guarantee (guaranteed - allocated, at least 0), scaled down to
 * what the siblings actually borrow, with the usual remainder rule. */
static int fill_lent(struct eng *e, struct fair_share_status *st, const struct acct *a, size_t n,
                     const char *const *names)
{
    int rc = FAIR_ENOMEM;
    int64_t *idle = fair_calloc(n ? n : 1, sizeof(int64_t));
    int64_t *out = fair_calloc(n ? n : 1, sizeof(int64_t));
    void *scratch = fair_calloc(1, FAIR_SHARE_SCRATCH(n ? n : 1));
    if (!idle || !out || !scratch)
        goto out;
    e->bytes += 2 * n * sizeof(int64_t) + FAIR_SHARE_SCRATCH(n);
    for (int r = 0; r < NRES; r++) {
        i128 borrowed = 0;
        for (size_t i = 0; i < n; i++) {
            /* Only the lendable part of the guarantee is lent. */
            int64_t held = a[i].alloc0[r] > a[i].keep[r] ? a[i].alloc0[r] : a[i].keep[r];
            idle[i] = a[i].valid && a[i].g[r] > held ? a[i].g[r] - held : 0;
            if (a[i].valid)
                borrowed += st[i].borrowed.v[r];
        }
        fair_share_scale(idle, names, n, borrowed > INT64_MAX ? INT64_MAX : (int64_t)borrowed, out,
                         scratch);
        for (size_t i = 0; i < n; i++)
            st[i].lent.v[r] = out[i];
    }
    rc = 0;
out:
    fair_free(idle);
    fair_free(out);
    fair_free(scratch);
    return rc;
}

int fair_eng_figures(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    struct fair_result *res = e->res;
    int rc = FAIR_ENOMEM;
    size_t n = s->nprojects > s->nqueues ? s->nprojects : s->nqueues;
    const char **names = fair_calloc(n ? n : 1, sizeof(char *));
    if (!names)
        goto out;
    for (size_t i = 0; i < s->nqueues; i++) {
        fill_status(&res->queues[i], &e->q[i]);
        names[i] = s->queues[i].q.name;
    }
    rc = fill_lent(e, res->queues, e->q, s->nqueues, names);
    if (rc)
        goto out;
    for (size_t i = 0; i < s->nprojects; i++) {
        fill_status(&res->projects[i], &e->p[i]);
        names[i] = s->projects[i].q.name;
    }
    rc = fill_lent(e, res->projects, e->p, s->nprojects, names);
    if (rc)
        goto out;
    struct fair_share_status *c = &res->cluster;
    for (size_t i = 0; i < s->nprojects; i++) {
        if (!e->p[i].valid)
            continue;
        const struct fair_share_status *p = &res->projects[i];
        for (int r = 0; r < NRES; r++) {
            c->guaranteed.v[r] += p->guaranteed.v[r];
            c->allocated.v[r] += p->allocated.v[r];
            c->allocated_after.v[r] += p->allocated_after.v[r];
            c->demand.v[r] = fair_sat_add(c->demand.v[r], p->demand.v[r]);
            c->borrowed.v[r] += p->borrowed.v[r];
            c->lent.v[r] += p->lent.v[r];
            c->lendable.v[r] += p->lendable.v[r];
        }
        c->pending_pods += p->pending_pods;
        c->running_pods += p->running_pods;
    }
    c->fair_share = res->capacity;
    rc = 0;
out:
    fair_free(names);
    return rc;
}
