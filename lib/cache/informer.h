/* Reflector + informer for one resource type, as client-go has them:
 *
 *   LISTING --(all pages read; diff applied to the store)--> WATCHING
 *   WATCHING --(stream ends cleanly, or a transport error)--> WATCHING
 *        again from the last resourceVersion seen (after a backoff when it
 *        failed)
 *   WATCHING --(410 Gone: HTTP 410 or an ERROR event with code 410,
 *        or an event over the size limit)--> LISTING
 *   LISTING --(failure)--> LISTING again after a backoff
 *
 * Invariants: after a list the store equals the list (objects that
 * vanished are deleted, changed ones updated, new ones added, each with
 * exactly one handler call; objects whose resourceVersion did not change
 * produce no call). BOOKMARK events only advance the resourceVersion.
 * Backoff doubles from backoff_base_ms with +-25% jitter up to
 * backoff_cap_ms and resets once a watch has been healthy for
 * healthy_reset_ms. has_synced becomes true after the first list.
 *
 * Handlers run on the loop; the objects they get are borrowed: `obj` and
 * `new_` are in the store, `old` (update) and the deleted object are freed
 * right after the handler returns. */
#ifndef FAIR_CACHE_INFORMER_H
#define FAIR_CACHE_INFORMER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "cache/store.h"
#include "kube/client.h"
#include "kube/decode.h"

struct fair_informer;

struct fair_informer_handlers {
    void (*on_add)(void *obj, void *ctx);
    void (*on_update)(void *old, void *new_, void *ctx);
    void (*on_delete)(void *obj, void *ctx);
    void (*on_synced)(void *ctx); /* once, after the first list */
    void *ctx;
};

struct fair_informer_options {
    const struct fair_kres *res;   /* required, borrowed */
    const struct fair_ktype *type; /* required, borrowed */
    const char *ns;                /* NULL: all namespaces */
    const char *label_selector;    /* copied; may be NULL */
    const char *field_selector;    /* copied; may be NULL */
    long page_size;                /* default 500 */
    long watch_timeout_s;          /* default 300 (the server ends the watch) */
    int64_t backoff_base_ms;       /* default 800 */
    int64_t backoff_cap_ms;        /* default 30000 */
    int64_t healthy_reset_ms;      /* default 60000 */
};

struct fair_informer_stats {
    uint64_t lists;   /* completed lists (1 + relists) */
    uint64_t watches; /* watch streams started */
    uint64_t events;  /* watch events applied (bookmarks excluded) */
    uint64_t bookmarks;
    uint64_t gone;          /* 410s seen */
    uint64_t errors;        /* failed requests / streams */
    uint64_t decode_errors; /* objects that could not be decoded (skipped) */
};

/* handlers and opts are copied. The informer does nothing until started. */
int fair_informer_new(struct fair_kclient *c, const struct fair_informer_options *opts,
                      const struct fair_informer_handlers *h, struct fair_informer **out,
                      struct fair_error *err);
int fair_informer_start(struct fair_informer *inf, struct fair_error *err);
/* Stops (cancels requests and timers) and frees, with its store. Not from
 * inside one of its own handlers: stop the loop first (or defer the free
 * to a timer). */
void fair_informer_free(struct fair_informer *inf);

bool fair_informer_has_synced(const struct fair_informer *inf);
/* Borrowed; owned by the informer. */
struct fair_store *fair_informer_store(struct fair_informer *inf);
/* The last resourceVersion seen ("" before the first list). Borrowed. */
const char *fair_informer_resource_version(const struct fair_informer *inf);
void fair_informer_get_stats(const struct fair_informer *inf, struct fair_informer_stats *out);

#endif
