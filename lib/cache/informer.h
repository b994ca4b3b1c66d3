/* Reflector + informer for one resource type, as client-go has them:
 *
 *   LISTING --(all pages read; diff applied to the store)--> WATCHING
 *   WATCHING --(stream ends cleanly, is cut, or delivers nothing, not
 *        even a bookmark, for stall_timeout_ms)--> WATCHING again from the
 *        last resourceVersion seen: at once when the watch was established
 *        (it delivered an event or a bookmark), after a backoff when it
 *        could not be opened
 *   WATCHING --(410 Gone: HTTP 410 or an ERROR event with code 410,
 *        or an event over the size limit)--> LISTING
 *   LISTING --(a page over the client's max_body, or one still arriving
 *        at the request timeout, while the page size is above 1)-->
 *        LISTING: the same page again with half the page size
 *   LISTING --(410 on a continue token: it expired)--> LISTING from the
 *        first page, paged, resourceVersion unset (a consistent read)
 *   LISTING --(any other failure)--> LISTING from the first page after a
 *        backoff
 *
 * Lists are paged (page_size per page, 500 by default) and every page is
 * read as a stream (fair_kclient_list_stream()): memory is bounded by one
 * object's kept fields, never by a page. The page size halves while pages
 * come in over the byte cap, down to 1 (a page of one object is read
 * whatever its size), and doubles back, up to page_size, after a page that
 * used less than a quarter of the cap; it carries over to later lists.
 * A list is never asked for unpaged: after an expired continue token it
 * starts again from the first page, as client-go's reflector does after
 * an expired resourceVersion (relistResourceVersion: "" for a consistent
 * read), not with client-go's pager fallback to one unpaged LIST, which is
 * exactly the response that can pass any cap. A second expiry in a row
 * waits for the backoff first.
 *
 * Unreadable objects: an object whose kept fields pass the per-object cap
 * (the client's max_event) or that fails to decode is skipped, never
 * blocking the rest: it is counted (stats.oversized or
 * stats.decode_errors), logged with its name, and listed in the
 * unreadable set (fair_informer_unreadable_at()) with its skeleton (uid,
 * namespace, name, node, phase: see kube/decode.h), read even when the
 * object is too large. If the store holds an earlier readable version of
 * it, that version stays (no delete handler runs): a pod's resources and
 * node do not change after it is bound, so the last readable version is
 * the best account of what it holds. The set is rebuilt by every list and
 * kept up to date by the watch (a readable event or a deletion takes an
 * object out of it); at most FAIR_INFORMER_MAX_UNREADABLE entries. What a
 * consumer must make of it: a pod in the set may hold resources on the
 * node its skeleton names; unless the store still has a readable version
 * of it, that node must count as holding an unknown amount (no room for
 * new placements), never as free.
 *
 * Invariants: after a list the store equals the list, apart from the
 * unreadable objects above (objects that vanished are deleted, changed
 * ones updated, new ones added, each with exactly one handler call;
 * objects whose resourceVersion did not change produce no call). BOOKMARK
 * events only advance the resourceVersion. Backoff doubles from
 * backoff_base_ms with +-25% jitter up to backoff_cap_ms; it applies to
 * failed lists and to watches that could not be established, and resets
 * after a complete list and whenever a watch is established (as
 * client-go's reflector: a watch that worked and ended is resumed at
 * once, whatever cut it, so a leader never acts on a store left behind by
 * a backoff earned earlier). has_synced becomes true after the first
 * list.
 *
 * Each watch asks the server to end it after a random timeoutSeconds in
 * [watch_timeout_s, 2 * watch_timeout_s) (client-go: 5 to 10 minutes),
 * so that the watches of many clients do not end together, and asks for
 * bookmarks. A watch that delivers nothing for stall_timeout_ms (default
 * three bookmark periods of kube-apiserver's watch cache, which sends one
 * a minute, bounded by the watch's timeoutSeconds) is closed by the
 * client's stall timer (kube/client.h, stall_ms), counted in
 * stats.stalls, logged, and watched again: a hung stream costs at most
 * that long, not curl's 660 s low-speed limit. Set it to a few periods of
 * the server's bookmarks where they come faster.
 *
 * Transitions: start_list() -> LISTING; on_list_done() pages on, halves,
 * restarts or fails; apply_list() -> WATCHING; on_watch_done() ->
 * WATCHING again or LISTING; failures go through WAITING (the timer).
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
    long watch_timeout_s;          /* default 300: each watch asks for 1x to 2x that */
    int64_t stall_timeout_ms;      /* default 180000 (see above); < 0: none */
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
    uint64_t oversized;     /* objects over the per-object cap (skipped) */
    uint64_t page_shrinks;  /* list pages retried with half the page size */
    uint64_t stalls;        /* watches closed for delivering nothing */
};

/* An object the informer knows of but could not read (see above). */
struct fair_informer_unreadable {
    struct fair_kskeleton id; /* what could be read; fields may be NULL */
    char *reason;             /* why, in words */
    size_t bytes;             /* its size in the list; 0 when seen in a watch */
};

#define FAIR_INFORMER_MAX_UNREADABLE 4096

/* handlers and opts are copied. The informer does nothing until started. */
int fair_informer_new(struct fair_kclient *c, const struct fair_informer_options *opts,
                      const struct fair_informer_handlers *h, struct fair_informer **out,
                      struct fair_error *err);
int fair_informer_start(struct fair_informer *inf, struct fair_error *err);
/* Stops (cancels requests and timers) and frees, with its store. Not from
 * inside one of its own handlers: stop the loop first (or defer the free
 * to a timer). */
void fair_informer_free(struct fair_informer *inf);

/* The server answered that object uid is gone (a 404 to a write to it)
 * while the watch has not delivered its deletion yet (a watch that is
 * behind, down, or hung): takes it out of the store now, with the delete
 * handler, as its DELETED event would. Should it still exist, the watch
 * (its next change) or the next list brings it back. Returns whether the
 * store held it. Not from inside one of the informer's own handlers. */
bool fair_informer_forget(struct fair_informer *inf, const char *uid);

bool fair_informer_has_synced(const struct fair_informer *inf);
/* Borrowed; owned by the informer. */
struct fair_store *fair_informer_store(struct fair_informer *inf);
/* The last resourceVersion seen ("" before the first list). Borrowed. */
const char *fair_informer_resource_version(const struct fair_informer *inf);
void fair_informer_get_stats(const struct fair_informer *inf, struct fair_informer_stats *out);
/* The current LIST page size. */
long fair_informer_page_size(const struct fair_informer *inf);
/* The unreadable objects: count, and the i-th (borrowed until the
 * informer next handles a response). */
size_t fair_informer_unreadable_count(const struct fair_informer *inf);
const struct fair_informer_unreadable *fair_informer_unreadable_at(const struct fair_informer *inf,
                                                                   size_t i);

#endif
