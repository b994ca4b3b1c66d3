/* The informer store: objects by UID and by namespace/name in two
 * open-addressing tables of pointers (see store.h). Deletions leave
 * tombstones, cleared when the tables are rebuilt. */
#include "cache/store.h"

#include <stdint.h>
#include <string.h>

#include "base/alloc.h"

static char tombstone_mark;
#define TOMB ((void *)&tombstone_mark)

struct fair_store {
    const struct fair_ktype *type;
    void **by_uid;
    void **by_name;
    size_t cap;       /* power of two, both tables */
    size_t len;       /* live objects */
    size_t used_uid;  /* live + tombstones in by_uid */
    size_t used_name; /* live + tombstones in by_name */
};

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

#define FNV_SEED 14695981039346656037ULL

static uint64_t hash_uid(const char *uid)
{
    return fnv(FNV_SEED, uid);
}

static uint64_t hash_name(const char *ns, const char *name)
{
    uint64_t h = fnv(FNV_SEED, ns ? ns : "");
    h ^= '/';
    h *= 1099511628211ULL;
    return fnv(h, name);
}

static bool name_eq(void *obj, const char *ns, const char *name)
{
    struct fair_kmeta *m = fair_kobj_meta(obj);
    const char *ons = m->namespace_ ? m->namespace_ : "";
    return !strcmp(m->name, name) && !strcmp(ons, ns ? ns : "");
}

int fair_store_new(const struct fair_ktype *type, struct fair_store **out)
{
    *out = NULL;
    struct fair_store *s = fair_calloc(1, sizeof *s);
    if (!s)
        return FAIR_ENOMEM;
    s->type = type;
    s->cap = 64;
    s->by_uid = fair_calloc(s->cap, sizeof(void *));
    s->by_name = fair_calloc(s->cap, sizeof(void *));
    if (!s->by_uid || !s->by_name) {
        fair_free(s->by_uid);
        fair_free(s->by_name);
        fair_free(s);
        return FAIR_ENOMEM;
    }
    *out = s;
    return 0;
}

void fair_store_free(struct fair_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cap; i++)
        if (s->by_uid[i] && s->by_uid[i] != TOMB)
            s->type->free(s->by_uid[i]);
    fair_free(s->by_uid);
    fair_free(s->by_name);
    fair_free(s);
}

const struct fair_ktype *fair_store_type(const struct fair_store *s)
{
    return s->type;
}

size_t fair_store_len(const struct fair_store *s)
{
    return s->len;
}

size_t fair_store_overhead_bytes(const struct fair_store *s)
{
    return sizeof *s + 2 * s->cap * sizeof(void *);
}

static size_t find_uid_slot(const struct fair_store *s, const char *uid)
{
    size_t mask = s->cap - 1;
    for (size_t i = hash_uid(uid) & mask;; i = (i + 1) & mask) {
        void *o = s->by_uid[i];
        if (!o)
            return SIZE_MAX;
        if (o != TOMB && !strcmp(fair_kobj_meta(o)->uid, uid))
            return i;
    }
}

static size_t find_name_slot(const struct fair_store *s, const char *ns, const char *name)
{
    size_t mask = s->cap - 1;
    for (size_t i = hash_name(ns, name) & mask;; i = (i + 1) & mask) {
        void *o = s->by_name[i];
        if (!o)
            return SIZE_MAX;
        if (o != TOMB && name_eq(o, ns, name))
            return i;
    }
}

/* Puts obj in the first free or tombstone slot of each table. The caller
 * has checked that it is absent and that there is room. */
static void insert_raw(void **uidt, void **namet, size_t cap, void *obj, bool *new_uid,
                       bool *new_name)
{
    struct fair_kmeta *m = fair_kobj_meta(obj);
    size_t mask = cap - 1, i;
    for (i = hash_uid(m->uid) & mask; uidt[i] && uidt[i] != TOMB; i = (i + 1) & mask)
        ;
    *new_uid = uidt[i] == NULL;
    uidt[i] = obj;
    for (i = hash_name(m->namespace_, m->name) & mask; namet[i] && namet[i] != TOMB;
         i = (i + 1) & mask)
        ;
    *new_name = namet[i] == NULL;
    namet[i] = obj;
}

static int rebuild(struct fair_store *s, size_t ncap)
{
    void **u = fair_calloc(ncap, sizeof(void *));
    void **n = fair_calloc(ncap, sizeof(void *));
    if (!u || !n) {
        fair_free(u);
        fair_free(n);
        return FAIR_ENOMEM;
    }
    bool d1, d2;
    for (size_t i = 0; i < s->cap; i++)
        if (s->by_uid[i] && s->by_uid[i] != TOMB)
            insert_raw(u, n, ncap, s->by_uid[i], &d1, &d2);
    fair_free(s->by_uid);
    fair_free(s->by_name);
    s->by_uid = u;
    s->by_name = n;
    s->cap = ncap;
    s->used_uid = s->used_name = s->len;
    return 0;
}

int fair_store_put_take(struct fair_store *s, void *obj, void **old_out)
{
    if (old_out)
        *old_out = NULL;
    struct fair_kmeta *m = fair_kobj_meta(obj);
    if (!m->uid || !m->name) {
        s->type->free(obj);
        return FAIR_EINVAL;
    }
    size_t slot = find_uid_slot(s, m->uid);
    if (slot != SIZE_MAX) {
        void *old = s->by_uid[slot];
        struct fair_kmeta *om = fair_kobj_meta(old);
        s->by_uid[slot] = obj;
        /* The name cannot change for one uid, but stay correct if it does. */
        size_t ns = find_name_slot(s, om->namespace_, om->name);
        if (ns != SIZE_MAX && s->by_name[ns] == old) {
            if (name_eq(obj, om->namespace_, om->name)) {
                s->by_name[ns] = obj;
            } else {
                s->by_name[ns] = TOMB;
                size_t mask = s->cap - 1, i;
                for (i = hash_name(m->namespace_, m->name) & mask;
                     s->by_name[i] && s->by_name[i] != TOMB; i = (i + 1) & mask)
                    ;
                s->used_name += s->by_name[i] == NULL;
                s->by_name[i] = obj;
            }
        }
        if (old_out)
            *old_out = old;
        else
            s->type->free(old);
        return 0;
    }
    if (s->len >= FAIR_STORE_MAX_OBJECTS) {
        s->type->free(obj);
        return FAIR_ERANGE;
    }
    /* Keep the load (with tombstones) under 1/2 so probes stay short. */
    size_t used = s->used_uid > s->used_name ? s->used_uid : s->used_name;
    if ((used + 1) * 2 > s->cap) {
        /* After the rebuild the load is at most 1/4: tombstones go, and
         * the table doubles as long as live objects need it. */
        size_t ncap = s->cap;
        while ((s->len + 1) * 4 > ncap)
            ncap *= 2;
        int rc = rebuild(s, ncap);
        if (rc) {
            s->type->free(obj);
            return rc;
        }
    }
    bool new_uid, new_name;
    insert_raw(s->by_uid, s->by_name, s->cap, obj, &new_uid, &new_name);
    s->len++;
    s->used_uid += new_uid;
    s->used_name += new_name;
    return 0;
}

void *fair_store_remove(struct fair_store *s, const char *uid)
{
    size_t slot = find_uid_slot(s, uid);
    if (slot == SIZE_MAX)
        return NULL;
    void *obj = s->by_uid[slot];
    s->by_uid[slot] = TOMB;
    struct fair_kmeta *m = fair_kobj_meta(obj);
    size_t mask = s->cap - 1;
    for (size_t i = hash_name(m->namespace_, m->name) & mask; s->by_name[i]; i = (i + 1) & mask) {
        if (s->by_name[i] == obj) {
            s->by_name[i] = TOMB;
            break;
        }
    }
    s->len--;
    return obj;
}

void *fair_store_get(const struct fair_store *s, const char *uid)
{
    if (!uid)
        return NULL;
    size_t slot = find_uid_slot(s, uid);
    return slot == SIZE_MAX ? NULL : s->by_uid[slot];
}

void *fair_store_get_by_name(const struct fair_store *s, const char *ns, const char *name)
{
    if (!name)
        return NULL;
    size_t slot = find_name_slot(s, ns, name);
    return slot == SIZE_MAX ? NULL : s->by_name[slot];
}

void *fair_store_next(const struct fair_store *s, size_t *pos)
{
    while (*pos < s->cap) {
        void *o = s->by_uid[(*pos)++];
        if (o && o != TOMB)
            return o;
    }
    return NULL;
}

void fair_store_drain(struct fair_store *s, void (*take)(void *obj, void *ctx), void *ctx)
{
    for (size_t i = 0; i < s->cap; i++) {
        void *o = s->by_uid[i];
        s->by_uid[i] = NULL;
        s->by_name[i] = NULL;
        if (o && o != TOMB)
            take(o, ctx);
    }
    s->len = s->used_uid = s->used_name = 0;
}
