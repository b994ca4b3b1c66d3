/* Open-addressing string index (see index.h). Deleted slots become
 * tombstones so probe chains stay intact; a rehash drops them. */
#include "ctl/index.h"

#include <string.h>

#include "base/alloc.h"
#include "base/error.h"

static const char tomb_key[] = "";
#define TOMB (tomb_key)

static uint32_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return (uint32_t)(h ^ (h >> 32));
}

void fair_ctl_index_init(struct fair_ctl_index *ix)
{
    memset(ix, 0, sizeof *ix);
}

void fair_ctl_index_release(struct fair_ctl_index *ix)
{
    fair_free(ix->slots);
    memset(ix, 0, sizeof *ix);
}

static int rehash(struct fair_ctl_index *ix, size_t ncap)
{
    if (ncap > FAIR_CTL_INDEX_MAX)
        return FAIR_ERANGE;
    struct fair_ctl_index_slot *ns = fair_calloc(ncap, sizeof *ns);
    if (!ns)
        return FAIR_ENOMEM;
    for (size_t i = 0; i < ix->cap; i++) {
        const char *k = ix->slots[i].key;
        if (!k || k == TOMB)
            continue;
        size_t j = (size_t)ix->slots[i].hash & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = ix->slots[i];
    }
    fair_free(ix->slots);
    ix->slots = ns;
    ix->cap = ncap;
    ix->used = ix->count;
    return 0;
}

static size_t find(const struct fair_ctl_index *ix, const char *key);

int fair_ctl_index_put(struct fair_ctl_index *ix, const char *key, int32_t value)
{
    size_t at = find(ix, key);
    if (at != (size_t)-1) { /* replacing never allocates */
        ix->slots[at].key = key;
        ix->slots[at].value = value;
        return 0;
    }
    /* At most half full (tombstones included): short probe chains. */
    if ((ix->used + 1) * 2 >= ix->cap) {
        size_t ncap = ix->cap ? ix->cap : 16;
        while ((ix->count + 1) * 4 >= ncap)
            ncap *= 2;
        int rc = rehash(ix, ncap);
        if (rc)
            return rc;
    }
    size_t mask = ix->cap - 1;
    uint32_t h = hash(key);
    size_t j = (size_t)h & mask;
    size_t first_tomb = (size_t)-1;
    while (ix->slots[j].key) {
        const char *k = ix->slots[j].key;
        if (k == TOMB) {
            if (first_tomb == (size_t)-1)
                first_tomb = j;
        } else if (ix->slots[j].hash == h && strcmp(k, key) == 0) {
            ix->slots[j].key = key;
            ix->slots[j].value = value;
            return 0;
        }
        j = (j + 1) & mask;
    }
    if (first_tomb != (size_t)-1) {
        j = first_tomb;
    } else {
        ix->used++;
    }
    ix->slots[j].key = key;
    ix->slots[j].hash = h;
    ix->slots[j].value = value;
    ix->count++;
    return 0;
}

static size_t find(const struct fair_ctl_index *ix, const char *key)
{
    if (!ix->cap || !key)
        return (size_t)-1;
    size_t mask = ix->cap - 1;
    uint32_t h = hash(key);
    size_t j = (size_t)h & mask;
    while (ix->slots[j].key) {
        const char *k = ix->slots[j].key;
        if (k != TOMB && ix->slots[j].hash == h && strcmp(k, key) == 0)
            return j;
        j = (j + 1) & mask;
    }
    return (size_t)-1;
}

int32_t fair_ctl_index_get(const struct fair_ctl_index *ix, const char *key)
{
    size_t j = find(ix, key);
    return j == (size_t)-1 ? -1 : ix->slots[j].value;
}

int fair_ctl_index_del(struct fair_ctl_index *ix, const char *key)
{
    size_t j = find(ix, key);
    if (j == (size_t)-1)
        return 0;
    ix->slots[j].key = TOMB;
    ix->count--;
    return 1;
}
