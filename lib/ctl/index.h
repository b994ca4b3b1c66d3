/* A string-keyed index for the controller: borrowed keys to int32 values,
 * open addressing with linear probing. Used to find nodes, queues,
 * projects and namespaces by name while a snapshot is built, and pods by
 * UID for in-flight operations.
 *
 * Ownership: keys are borrowed and must outlive the index (or be removed);
 * the table itself is owned by the struct (caller-owned storage,
 * _init/_release). Capacity is bounded by FAIR_CTL_INDEX_MAX. */
#ifndef FAIR_CTL_INDEX_H
#define FAIR_CTL_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define FAIR_CTL_INDEX_MAX ((size_t)1 << 25)

struct fair_ctl_index_slot {
    const char *key; /* NULL: empty; tomb: removed */
    uint32_t hash;   /* compared before the key */
    int32_t value;
};

struct fair_ctl_index {
    struct fair_ctl_index_slot *slots;
    size_t cap;   /* power of two, or 0 */
    size_t count; /* live keys */
    size_t used;  /* live keys + tombstones */
};

void fair_ctl_index_init(struct fair_ctl_index *ix);
void fair_ctl_index_release(struct fair_ctl_index *ix);
/* Inserts or replaces key (replacing never allocates nor fails). Returns
 * 0, FAIR_ENOMEM or FAIR_ERANGE (full). */
int fair_ctl_index_put(struct fair_ctl_index *ix, const char *key, int32_t value);
/* The value for key, or -1 when absent. */
int32_t fair_ctl_index_get(const struct fair_ctl_index *ix, const char *key);
/* Removes key; returns 1 when it was there, 0 otherwise. */
int fair_ctl_index_del(struct fair_ctl_index *ix, const char *key);

#endif
