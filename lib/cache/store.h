/* The informer's local store: decoded objects (kube/objects.h structs of
 * one fair_ktype) keyed by UID, with a second index by namespace/name.
 * Open addressing with linear probing: two pointer arrays, so the
 * per-object overhead is about 32 bytes.
 *
 * Ownership: the store owns the objects it holds; lookups return borrowed
 * pointers valid until the object is replaced or removed (in the informer:
 * until the next event is processed, so never keep them across loop
 * callbacks). Not thread-safe: used from the event loop only. */
#ifndef FAIR_CACHE_STORE_H
#define FAIR_CACHE_STORE_H

#include <stddef.h>

#include "base/error.h"
#include "kube/decode.h"

#define FAIR_STORE_MAX_OBJECTS (1u << 24)

struct fair_store;

/* type is borrowed (the static fair_ktype_*). */
int fair_store_new(const struct fair_ktype *type, struct fair_store **out);
/* Frees the store and every object in it; NULL is a no-op. */
void fair_store_free(struct fair_store *s);

const struct fair_ktype *fair_store_type(const struct fair_store *s);
size_t fair_store_len(const struct fair_store *s);

/* Inserts obj (taken over; it must have a uid) or replaces the object with
 * the same uid. *old_out (may be NULL: then the old object is freed)
 * receives the replaced object, owned by the caller, or NULL. On failure
 * (FAIR_ENOMEM, FAIR_ERANGE, FAIR_EINVAL without uid) obj is freed. */
int fair_store_put_take(struct fair_store *s, void *obj, void **old_out);

/* Removes and returns the object with uid (caller owns it), or NULL. */
void *fair_store_remove(struct fair_store *s, const char *uid);

/* Borrowed lookups; NULL when absent. ns NULL or "" for cluster-scoped. */
void *fair_store_get(const struct fair_store *s, const char *uid);
void *fair_store_get_by_name(const struct fair_store *s, const char *ns, const char *name);

/* Iteration: *pos starts at 0; returns the next object (borrowed) or NULL
 * at the end. The store must not change during an iteration. */
void *fair_store_next(const struct fair_store *s, size_t *pos);

/* Empties the store, handing each object to take (which owns it from
 * then on). */
void fair_store_drain(struct fair_store *s, void (*take)(void *obj, void *ctx), void *ctx);

/* Bytes the store itself uses (tables, not the objects). */
size_t fair_store_overhead_bytes(const struct fair_store *s);

#endif
