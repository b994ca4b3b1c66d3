/* Queue and Project status: the status subresource as the CRDs in crds/
 * describe it (guaranteed, fairShare, allocated, borrowed, lent, pending
 * {pods, resources}, observedGeneration, a Project's team, conditions Ready / Invalid /
 * Overcommitted), built from the engine's figures, and a memory of what was
 * last written per object so that a status is written only when it
 * changes, at most once per interval, and conditions keep their
 * lastTransitionTime while their status stays the same (across a restart
 * too: the first write takes it from the object as the server holds it).
 *
 * Ownership: the table owns its entries; patches returned are new strings
 * the caller frees with fair_free(). */
#ifndef FAIR_CTL_STATUS_H
#define FAIR_CTL_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/index.h"
#include "engine/engine.h"
#include "kube/objects.h"

enum fair_ctl_cond_type {
    FAIR_CTL_COND_READY,
    FAIR_CTL_COND_INVALID,
    FAIR_CTL_COND_OVERCOMMITTED,
    FAIR_CTL_COND_COUNT
};

struct fair_ctl_cond {
    bool status; /* True / False */
    const char *reason;
    const char *message; /* may be NULL: "" */
};

struct fair_ctl_status_entry {
    char *key;             /* "Queue/name" or "Project/name" */
    char *last_text;       /* status JSON last written; NULL: never */
    int64_t last_write_ms; /* monotonic */
    bool cond_known[FAIR_CTL_COND_COUNT];
    bool cond_status[FAIR_CTL_COND_COUNT];
    int64_t cond_since_ms[FAIR_CTL_COND_COUNT]; /* wall clock */
};

struct fair_ctl_status_table {
    struct fair_ctl_status_entry **v;
    size_t n, cap;
    struct fair_ctl_index by_key;
};

void fair_ctl_status_table_init(struct fair_ctl_status_table *t);
void fair_ctl_status_table_release(struct fair_ctl_status_table *t);

/* Time-based quota in status (ctl/tqstate.h): status.schedule,
 * status.budget and status.usage. */
struct fair_ctl_status_time {
    bool has_schedule;
    const char *window;     /* the active window's name; NULL: none (the spec) */
    int64_t next_switch_ms; /* wall clock; 0: none within 8 days */
    bool has_budget;
    const char *period; /* "day", "week", "month" */
    bool budget_known;  /* false: no ledger to measure it */
    int64_t budget_mms; /* milli-GPU x ms */
    int64_t used_mms;
    int64_t period_start_ms, period_end_ms;
    const char *budget_state; /* "Ok", "Warning" (80%), "Exhausted" */
    bool has_usage;
    int64_t usage_mms; /* decayed */
    int64_t half_life_ms;
};

struct fair_ctl_status_input {
    const struct fair_ctl_status_time *time; /* NULL: none */
    const char *kind; /* "Queue" or "Project" */
    const char *name;
    const char *team; /* Projects: the team reports group by (spec.team or the name); NULL: none */
    int64_t generation;
    const struct fair_share_status *figures; /* NULL: object left out of the cycle */
    struct fair_resources spec_guaranteed;   /* used when figures is NULL */
    struct fair_ctl_cond conds[FAIR_CTL_COND_COUNT];
    int64_t now_ms;  /* wall clock, for lastTransitionTime */
    int64_t mono_ms; /* monotonic, for the interval */
    int64_t min_interval_ms;
    /* issue 15: the object's figures per GPU model pool (nmodels of them,
     * names[m] the product), written as status.gpuModels; none: left out. */
    const struct fair_model_status *models;
    const char *const *model_names;
    size_t nmodels;
    /* The object's conditions as the server holds them (NULL: none): on
     * the first write of this process, one whose status is unchanged keeps
     * its lastTransitionTime (a restart, a new leader). */
    const struct fair_kcond *seen;
    size_t nseen;
};

/* Computes the status. *patch_out receives a new JSON merge patch
 * ({"status": {...}}) to send, or NULL when nothing changed or the last
 * write is more recent than min_interval_ms (then call again later: the
 * change is not lost, since the status is recomputed every cycle). The
 * entry records the patch as written; call fair_ctl_status_failed() if the
 * request fails. Returns 0 or FAIR_ENOMEM. */
int fair_ctl_status_update(struct fair_ctl_status_table *t, const struct fair_ctl_status_input *in,
                           char **patch_out);
/* The write of key failed: forget it, so the next cycle writes again. */
void fair_ctl_status_failed(struct fair_ctl_status_table *t, const char *kind, const char *name);
/* Forgets an object that was deleted. */
void fair_ctl_status_forget(struct fair_ctl_status_table *t, const char *kind, const char *name);

#endif
