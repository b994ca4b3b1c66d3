/* The controller's work queue (see workqueue.h): a hash of items, a FIFO
 * of ready items and a min-heap of delayed ones.
 *
 * Item flags: dirty (must be processed: in the FIFO, or re-queued at
 * done()), processing (handed out by get()), waiting (in the heap).
 * Invariant: an item is in the FIFO iff dirty && !processing. An item with
 * no flag and no failures is freed. */
#include "cache/workqueue.h"

#include <stdbool.h>
#include <string.h>

#include "base/alloc.h"

struct item {
    char *key;
    struct item *next; /* hash chain */
    bool dirty, processing, waiting, in_fifo;
    int failures;
    int64_t ready_at;
    size_t heap_idx;
};

struct fair_workqueue {
    struct fair_workqueue_options opt;
    struct item **buckets;
    size_t nbuckets, nitems;
    struct item **fifo; /* ring */
    size_t fifo_cap, fifo_head, fifo_len;
    struct item **heap;
    size_t heap_cap, heap_len;
    size_t pending; /* items dirty or waiting: bounded by max_len */
    size_t processing;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

int fair_workqueue_new(const struct fair_workqueue_options *opt, struct fair_workqueue **out)
{
    *out = NULL;
    struct fair_workqueue *q = fair_calloc(1, sizeof *q);
    if (!q)
        return FAIR_ENOMEM;
    if (opt)
        q->opt = *opt;
    if (!q->opt.max_len)
        q->opt.max_len = FAIR_WORKQUEUE_DEFAULT_MAX;
    if (q->opt.base_delay_ms <= 0)
        q->opt.base_delay_ms = 5;
    if (q->opt.max_delay_ms <= 0)
        q->opt.max_delay_ms = 1000000;
    if (!q->opt.clock)
        q->opt.clock = fair_clock_system();
    q->nbuckets = 64;
    q->buckets = fair_calloc(q->nbuckets, sizeof *q->buckets);
    if (!q->buckets) {
        fair_free(q);
        return FAIR_ENOMEM;
    }
    *out = q;
    return 0;
}

void fair_workqueue_free(struct fair_workqueue *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->nbuckets; i++) {
        struct item *it = q->buckets[i], *next;
        for (; it; it = next) {
            next = it->next;
            fair_free(it->key);
            fair_free(it);
        }
    }
    fair_free(q->buckets);
    fair_free(q->fifo);
    fair_free(q->heap);
    fair_free(q);
}

static struct item *lookup(const struct fair_workqueue *q, const char *key)
{
    struct item *it = q->buckets[hash(key) & (q->nbuckets - 1)];
    while (it && strcmp(it->key, key))
        it = it->next;
    return it;
}

static void rehash(struct fair_workqueue *q)
{
    size_t n = q->nbuckets * 2;
    struct item **b = fair_calloc(n, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < q->nbuckets; i++) {
        struct item *it = q->buckets[i], *next;
        for (; it; it = next) {
            next = it->next;
            size_t h = hash(it->key) & (n - 1);
            it->next = b[h];
            b[h] = it;
        }
    }
    fair_free(q->buckets);
    q->buckets = b;
    q->nbuckets = n;
}

static int get_or_create(struct fair_workqueue *q, const char *key, struct item **out)
{
    size_t klen = strlen(key);
    if (klen == 0 || klen > FAIR_WORKQUEUE_MAX_KEY)
        return FAIR_ERANGE;
    struct item *it = lookup(q, key);
    if (!it) {
        it = fair_calloc(1, sizeof *it);
        if (!it || !(it->key = fair_strndup(key, klen))) {
            fair_free(it);
            return FAIR_ENOMEM;
        }
        if (q->nitems >= q->nbuckets)
            rehash(q);
        size_t h = hash(key) & (q->nbuckets - 1);
        it->next = q->buckets[h];
        q->buckets[h] = it;
        q->nitems++;
    }
    *out = it;
    return 0;
}

static void maybe_drop(struct fair_workqueue *q, struct item *it)
{
    if (it->dirty || it->processing || it->waiting || it->failures)
        return;
    struct item **pp = &q->buckets[hash(it->key) & (q->nbuckets - 1)];
    while (*pp != it)
        pp = &(*pp)->next;
    *pp = it->next;
    q->nitems--;
    fair_free(it->key);
    fair_free(it);
}

static int fifo_push(struct fair_workqueue *q, struct item *it)
{
    if (q->fifo_len == q->fifo_cap) {
        size_t ncap = q->fifo_cap ? q->fifo_cap * 2 : 64;
        struct item **f = fair_malloc(ncap * sizeof *f);
        if (!f)
            return FAIR_ENOMEM;
        for (size_t i = 0; i < q->fifo_len; i++)
            f[i] = q->fifo[(q->fifo_head + i) % q->fifo_cap];
        fair_free(q->fifo);
        q->fifo = f;
        q->fifo_cap = ncap;
        q->fifo_head = 0;
    }
    q->fifo[(q->fifo_head + q->fifo_len) % q->fifo_cap] = it;
    q->fifo_len++;
    it->in_fifo = true;
    return 0;
}

/* ---- delay heap (min on ready_at) ------------------------------------- */

static void heap_swap(struct fair_workqueue *q, size_t a, size_t b)
{
    struct item *t = q->heap[a];
    q->heap[a] = q->heap[b];
    q->heap[b] = t;
    q->heap[a]->heap_idx = a;
    q->heap[b]->heap_idx = b;
}

static void sift_up(struct fair_workqueue *q, size_t i)
{
    while (i > 0 && q->heap[(i - 1) / 2]->ready_at > q->heap[i]->ready_at) {
        heap_swap(q, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(struct fair_workqueue *q, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->heap_len && q->heap[l]->ready_at < q->heap[m]->ready_at)
            m = l;
        if (r < q->heap_len && q->heap[r]->ready_at < q->heap[m]->ready_at)
            m = r;
        if (m == i)
            return;
        heap_swap(q, i, m);
        i = m;
    }
}

static struct item *heap_pop(struct fair_workqueue *q)
{
    struct item *top = q->heap[0];
    q->heap_len--;
    if (q->heap_len) {
        q->heap[0] = q->heap[q->heap_len];
        q->heap[0]->heap_idx = 0;
        sift_down(q, 0);
    }
    top->waiting = false;
    return top;
}

/* ---- operations ------------------------------------------------------- */

static int make_dirty(struct fair_workqueue *q, struct item *it)
{
    if (it->dirty)
        return 0;
    if (!it->waiting) {
        if (q->pending >= q->opt.max_len)
            return FAIR_ERANGE;
        q->pending++;
    }
    it->dirty = true;
    if (!it->processing) {
        int rc = fifo_push(q, it);
        if (rc) {
            it->dirty = false;
            if (!it->waiting)
                q->pending--;
            return rc;
        }
    }
    return 0;
}

int fair_workqueue_add(struct fair_workqueue *q, const char *key)
{
    struct item *it;
    int rc = get_or_create(q, key, &it);
    if (rc)
        return rc;
    rc = make_dirty(q, it);
    maybe_drop(q, it);
    return rc;
}

int fair_workqueue_add_after(struct fair_workqueue *q, const char *key, int64_t delay_ms)
{
    if (delay_ms <= 0)
        return fair_workqueue_add(q, key);
    struct item *it;
    int rc = get_or_create(q, key, &it);
    if (rc)
        return rc;
    int64_t at = fair_mono_ms(q->opt.clock) + delay_ms;
    if (it->waiting) {
        if (at < it->ready_at) {
            it->ready_at = at;
            sift_up(q, it->heap_idx);
        }
        return 0;
    }
    if (!it->dirty && q->pending >= q->opt.max_len) {
        maybe_drop(q, it);
        return FAIR_ERANGE;
    }
    if (q->heap_len == q->heap_cap) {
        void *h = q->heap;
        if ((rc = fair_grow(&h, &q->heap_cap, q->heap_len + 1, sizeof *q->heap))) {
            maybe_drop(q, it);
            return rc;
        }
        q->heap = h;
    }
    if (!it->dirty)
        q->pending++;
    it->waiting = true;
    it->ready_at = at;
    it->heap_idx = q->heap_len;
    q->heap[q->heap_len++] = it;
    sift_up(q, it->heap_idx);
    return 0;
}

static int64_t backoff_ms(const struct fair_workqueue *q, int failures)
{
    int64_t d = q->opt.base_delay_ms;
    for (int i = 0; i < failures && d < q->opt.max_delay_ms; i++)
        d *= 2;
    return d > q->opt.max_delay_ms ? q->opt.max_delay_ms : d;
}

int fair_workqueue_add_rate_limited(struct fair_workqueue *q, const char *key)
{
    struct item *it;
    int rc = get_or_create(q, key, &it);
    if (rc)
        return rc;
    int64_t d = backoff_ms(q, it->failures);
    if (it->failures < 1000)
        it->failures++;
    return fair_workqueue_add_after(q, key, d);
}

void fair_workqueue_forget(struct fair_workqueue *q, const char *key)
{
    struct item *it = lookup(q, key);
    if (!it)
        return;
    it->failures = 0;
    maybe_drop(q, it);
}

int fair_workqueue_failures(const struct fair_workqueue *q, const char *key)
{
    struct item *it = lookup(q, key);
    return it ? it->failures : 0;
}

/* Moves delayed items whose time has come into the FIFO. */
static void promote(struct fair_workqueue *q)
{
    int64_t now = fair_mono_ms(q->opt.clock);
    while (q->heap_len && q->heap[0]->ready_at <= now) {
        struct item *it = heap_pop(q);
        if (it->dirty)
            continue; /* already queued; still counted once as dirty */
        q->pending--;
        if (make_dirty(q, it))
            maybe_drop(q, it); /* only on ENOMEM: the key is lost */
    }
}

int fair_workqueue_get(struct fair_workqueue *q, char **key_out)
{
    *key_out = NULL;
    promote(q);
    if (!q->fifo_len)
        return FAIR_ENOTFOUND;
    struct item *it = q->fifo[q->fifo_head];
    char *k = fair_strdup(it->key);
    if (!k)
        return FAIR_ENOMEM;
    q->fifo_head = (q->fifo_head + 1) % q->fifo_cap;
    q->fifo_len--;
    it->in_fifo = false;
    it->dirty = false;
    it->processing = true;
    q->processing++;
    if (!it->waiting)
        q->pending--;
    *key_out = k;
    return 0;
}

void fair_workqueue_done(struct fair_workqueue *q, const char *key)
{
    struct item *it = lookup(q, key);
    if (!it || !it->processing)
        return;
    it->processing = false;
    q->processing--;
    if (it->dirty && fifo_push(q, it)) {
        it->dirty = false; /* ENOMEM: drop the re-queue */
        if (!it->waiting)
            q->pending--;
    }
    maybe_drop(q, it);
}

size_t fair_workqueue_len(const struct fair_workqueue *q)
{
    return q->fifo_len;
}

size_t fair_workqueue_waiting(const struct fair_workqueue *q)
{
    return q->heap_len + q->processing;
}

int64_t fair_workqueue_next_delay_ms(struct fair_workqueue *q)
{
    promote(q);
    if (q->fifo_len)
        return 0;
    if (!q->heap_len)
        return -1;
    int64_t d = q->heap[0]->ready_at - fair_mono_ms(q->opt.clock);
    return d < 0 ? 0 : d;
}
