/* A List parsed as a stream (see liststream.h): a byte-at-a-time JSON
 * scanner with a stack of open containers. Each container remembers which
 * outputs ("views") are writing it and, per view, the filter for its keys.
 * The views are the list's own fields (META), the current item's kept
 * fields (ITEM) and its skeleton (SKEL). A value that no view keeps is
 * skipped by counting brackets, strings being jumped over with memchr(),
 * which is where the bytes of a large object go. */
#include "kube/liststream.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"

enum { VI_META, VI_ITEM, VI_SKEL, NVIEW };
#define V_META (1u << VI_META)
#define V_ITEM (1u << VI_ITEM)
#define V_SKEL (1u << VI_SKEL)

/* The list object, its items array, then FAIR_JSON_MAX_DEPTH levels
 * inside an item (the depth fair_json_parse_filtered() allows). */
#define MAX_FRAMES (FAIR_JSON_MAX_DEPTH + 2)

/* An item buffer that grew past this is given back after the item. */
#define KEEP_CAP ((size_t)1 << 20)

enum expect {
    EX_KEY_OR_END,
    EX_KEY,
    EX_COLON,
    EX_MEMBER,
    EX_COMMA_OR_END,
    EX_ELEM_OR_END,
    EX_ELEM,
    EX_ELEM_COMMA_OR_END,
};

enum tok {
    TOK_NONE,
    TOK_STRING, /* a kept string value: copied to tok_views */
    TOK_KEY,    /* an object key: read into key */
    TOK_SCALAR, /* a kept number or literal */
    TOK_SKIP_STRING,
    TOK_SKIP_SCALAR,
    TOK_SKIP_NEST, /* a skipped object or array */
};

struct frame {
    char kind; /* '{' or '[' */
    uint8_t expect;
    uint8_t views;   /* views writing this container */
    uint8_t written; /* views that already hold a member or element of it */
    bool list;       /* the list object */
    bool saw_items;  /* the list object: its items member came */
    bool items;      /* the list's items array */
    const struct fair_jfield *filt[NVIEW];
    /* objects: the member whose value comes next */
    uint8_t mviews;
    bool m_items;
    const struct fair_jfield *mfilt[NVIEW];
};

struct fair_kliststream {
    const struct fair_jfield *filter, *skeleton;
    fair_klist_item_cb cb;
    void *ctx;
    struct fair_buf out[NVIEW];
    struct fair_buf key;
    bool key_long;    /* the key passed FAIR_KLIST_MAX_KEY */
    uint8_t poisoned; /* item views that passed their limit */
    struct frame stack[MAX_FRAMES];
    int depth;
    enum tok tok;
    uint8_t tok_views;
    bool esc;         /* inside a string: the next byte is escaped */
    bool skip_in_str; /* TOK_SKIP_NEST: inside a string */
    size_t skip_depth;
    bool done;
    int rc;
    struct fair_error err;
    const char *chunk; /* the chunk being fed, for offsets */
    uint64_t pos;      /* bytes before it */
    uint64_t item_start;
    size_t nitems;
    size_t peak;
};

static const struct fair_jfield list_fields[] = {
    {"kind", NULL}, {"apiVersion", NULL}, {"metadata", NULL}, {NULL, NULL}};

static uint64_t at(const struct fair_kliststream *ls, const char *p)
{
    return ls->pos + (uint64_t)(p - ls->chunk);
}

static void fail(struct fair_kliststream *ls, const char *p, int code, const char *what)
{
    if (ls->rc)
        return;
    ls->rc = code;
    if (p)
        fair_error_set(&ls->err, code, "list: %s at byte %llu", what,
                       (unsigned long long)at(ls, p));
    else
        fair_error_set(&ls->err, code, "list: %s", what);
}

static void note_peak(struct fair_kliststream *ls)
{
    for (int v = 0; v < NVIEW; v++)
        if (ls->out[v].cap > ls->peak)
            ls->peak = ls->out[v].cap;
    if (ls->key.cap > ls->peak)
        ls->peak = ls->key.cap;
}

/* Appends to every view in views that is still writing. An item view
 * that passes its limit stops writing (the item is then oversized). */
static void emit(struct fair_kliststream *ls, uint8_t views, const char *s, size_t n)
{
    views &= (uint8_t)~ls->poisoned;
    for (int v = 0; views; v++) {
        uint8_t bit = (uint8_t)(1u << v);
        if (!(views & bit))
            continue;
        views &= (uint8_t)~bit;
        struct fair_buf *b = &ls->out[v];
        if (b->len + n < b->cap && b->len + n <= b->max) { /* the common case, inline */
            memcpy(b->data + b->len, s, n);
            b->len += n;
            b->data[b->len] = '\0';
            continue;
        }
        int rc = fair_buf_append(b, s, n);
        if (!rc)
            continue;
        if (rc == FAIR_ERANGE && bit != V_META) {
            ls->poisoned |= bit;
            continue;
        }
        fail(ls, NULL, rc,
             rc == FAIR_ERANGE ? "the list's own fields (kind, apiVersion, metadata) are too large"
                               : "out of memory");
    }
}

/* The closing quote of a string whose bytes continue at p, or NULL when
 * the chunk ends first (*esc then says whether the next byte is escaped). */
static const char *string_end(const char *p, const char *end, bool *esc)
{
    if (*esc) {
        if (p == end)
            return NULL;
        p++;
        *esc = false;
    }
    const char *from = p;
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        const char *stop = q ? q : end;
        size_t k = 0;
        while (stop - k > from && stop[-1 - (ptrdiff_t)k] == '\\')
            k++;
        if (!q) {
            *esc = (k & 1) != 0;
            return NULL;
        }
        if (!(k & 1))
            return q;
        p = q + 1;
    }
}

static bool scalar_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' ||
           c == 'E';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = (v << 4) | (unsigned)h;
    }
    *out = v;
    return 0;
}

/* Unescapes a key (the text between its quotes) into out, which has room
 * for n bytes (the unescaped text is never longer). -1 when malformed. */
static int unescape_key(const char *s, size_t n, char *out, size_t *outlen)
{
    char *o = out;
    const char *end = s + n;
    while (s < end) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        if (end - s < 2)
            return -1;
        char c = s[1];
        s += 2;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            *o++ = c;
            break;
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case 'u': {
            unsigned cp, lo;
            if (end - s < 4 || hex4(s, &cp))
                return -1;
            s += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - s < 6 || s[0] != '\\' || s[1] != 'u' || hex4(s + 2, &lo) || lo < 0xDC00 ||
                    lo > 0xDFFF)
                    return -1;
                s += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if ((cp >= 0xDC00 && cp <= 0xDFFF) || cp == 0) {
                return -1;
            }
            if (cp < 0x80) {
                *o++ = (char)cp;
            } else if (cp < 0x800) {
                *o++ = (char)(0xC0 | (cp >> 6));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | (cp >> 12));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xF0 | (cp >> 18));
                *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            return -1;
        }
    }
    *outlen = (size_t)(o - out);
    return 0;
}

static bool find_field(const struct fair_jfield *f, const char *k, size_t n,
                       const struct fair_jfield **sub)
{
    for (; f->key; f++)
        if (n && f->key[0] == k[0] && strnlen(f->key, n + 1) == n && !memcmp(f->key, k, n)) {
            *sub = f->sub;
            return true;
        }
    return false;
}

/* ---- items ---------------------------------------------------------------- */

static void finish_item(struct fair_kliststream *ls, const char *after)
{
    struct fair_klist_item it = {0};
    it.index = ls->nitems++;
    it.raw_len = (size_t)(at(ls, after) - ls->item_start);
    it.oversized = (ls->poisoned & V_ITEM) != 0;
    if (!it.oversized) {
        it.json = fair_buf_str(&ls->out[VI_ITEM]);
        it.len = ls->out[VI_ITEM].len;
    }
    if (ls->skeleton && !(ls->poisoned & V_SKEL)) {
        it.skeleton = fair_buf_str(&ls->out[VI_SKEL]);
        it.skeleton_len = ls->out[VI_SKEL].len;
    }
    note_peak(ls);
    int rc = ls->cb ? ls->cb(&it, ls->ctx) : 0;
    for (int v = VI_ITEM; v <= VI_SKEL; v++) {
        if (ls->out[v].cap > KEEP_CAP)
            fair_buf_release(&ls->out[v]);
        else
            fair_buf_reset(&ls->out[v]);
    }
    ls->poisoned = 0;
    if (rc && !ls->rc) {
        ls->rc = rc;
        fair_error_set(&ls->err, rc < 0 ? rc : FAIR_EIO, "list: stopped at item %zu", it.index);
    }
}

/* ---- structure ------------------------------------------------------------ */

/* A value ended just before after. */
static void value_done(struct fair_kliststream *ls, const char *after)
{
    if (ls->depth == 0) {
        ls->done = true;
        return;
    }
    struct frame *f = &ls->stack[ls->depth - 1];
    if (f->kind == '{') {
        f->expect = EX_COMMA_OR_END;
        return;
    }
    f->expect = EX_ELEM_COMMA_OR_END;
    if (f->items)
        finish_item(ls, after);
}

static struct frame *push(struct fair_kliststream *ls, char kind, uint8_t views,
                          const struct fair_jfield *const *filt)
{
    struct frame *f = &ls->stack[ls->depth++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->expect = kind == '{' ? EX_KEY_OR_END : EX_ELEM_OR_END;
    f->views = views;
    for (int v = 0; v < NVIEW; v++)
        f->filt[v] = filt ? filt[v] : NULL;
    return f;
}

/* Starts the value at p, written to views with filt; returns where the
 * scan goes on (p itself for a scalar, which its token then reads). */
static const char *begin_value(struct fair_kliststream *ls, const char *p, uint8_t views,
                               const struct fair_jfield *const *filt, bool items)
{
    char c = *p;
    if (c == '{' || c == '[') {
        if (items && c == '[') {
            push(ls, '[', 0, NULL)->items = true;
            return p + 1;
        }
        if (views && ls->depth == MAX_FRAMES) {
            if (views & V_META) {
                fail(ls, p, FAIR_ERANGE, "the list's metadata is nested too deeply");
                return p;
            }
            ls->poisoned |= views; /* an item nested too deeply: oversized */
            views = 0;
        }
        if (!views) {
            ls->tok = TOK_SKIP_NEST;
            ls->skip_depth = 1;
            ls->skip_in_str = false;
            return p + 1;
        }
        push(ls, c, views, filt);
        emit(ls, views, p, 1);
        return p + 1;
    }
    if (c == '"') {
        ls->tok = views ? TOK_STRING : TOK_SKIP_STRING;
        ls->tok_views = views;
        ls->esc = false;
        emit(ls, views, p, 1);
        return p + 1;
    }
    if (scalar_char(c)) {
        ls->tok = views ? TOK_SCALAR : TOK_SKIP_SCALAR;
        ls->tok_views = views;
        return p;
    }
    fail(ls, p, FAIR_EPARSE, "unexpected character");
    return p;
}

static const char *begin_elem(struct fair_kliststream *ls, struct frame *f, const char *p)
{
    if (f->items) {
        ls->item_start = at(ls, p);
        ls->poisoned = 0;
        fair_buf_reset(&ls->out[VI_ITEM]);
        fair_buf_reset(&ls->out[VI_SKEL]);
        const struct fair_jfield *filt[NVIEW] = {NULL, ls->filter, ls->skeleton};
        uint8_t views = (uint8_t)(V_ITEM | (ls->skeleton ? V_SKEL : 0));
        return begin_value(ls, p, views, filt, false);
    }
    uint8_t views = f->views & (uint8_t)~ls->poisoned;
    for (int v = 0; v < NVIEW; v++) {
        uint8_t bit = (uint8_t)(1u << v);
        if ((views & bit) && (f->written & bit))
            emit(ls, bit, ",", 1);
    }
    f->written |= views;
    return begin_value(ls, p, views, f->filt, false);
}

static const char *close_frame(struct fair_kliststream *ls, const char *p)
{
    struct frame *f = &ls->stack[ls->depth - 1];
    emit(ls, f->views, p, 1);
    ls->depth--;
    value_done(ls, p + 1);
    return p + 1;
}

/* The key just read names the member that follows: decide, per view,
 * whether it is kept and with which filter, and write its key. */
static void key_done(struct fair_kliststream *ls, const char *q)
{
    struct frame *f = &ls->stack[ls->depth - 1];
    const char *k = fair_buf_str(&ls->key);
    size_t kn = ls->key.len;
    char tmp[FAIR_KLIST_MAX_KEY];
    const char *mk = k;
    size_t mn = kn;
    bool comparable = !ls->key_long;
    if (comparable && memchr(k, '\\', kn)) {
        if (unescape_key(k, kn, tmp, &mn) == 0)
            mk = tmp;
        else
            comparable = false;
    }
    f->mviews = 0;
    f->m_items = f->list && comparable && mn == 5 && !memcmp(mk, "items", 5);
    if (f->m_items && f->saw_items) { /* which one would the server mean? */
        fail(ls, q, FAIR_EPARSE, "the list has two items members");
        return;
    }
    f->saw_items |= f->m_items;
    uint8_t views = f->views & (uint8_t)~ls->poisoned;
    for (int v = 0; v < NVIEW; v++) {
        uint8_t bit = (uint8_t)(1u << v);
        if (!(views & bit))
            continue;
        const struct fair_jfield *sub = NULL;
        bool keep = !f->filt[v] || (comparable && find_field(f->filt[v], mk, mn, &sub));
        if (!keep)
            continue;
        if (ls->key_long) { /* kept whole, but the key is gone */
            if (bit == V_META) {
                fail(ls, q, FAIR_ERANGE, "object key too long");
                return;
            }
            ls->poisoned |= bit;
            continue;
        }
        f->mviews |= bit;
        f->mfilt[v] = sub;
        if (f->written & bit)
            emit(ls, bit, ",", 1);
        f->written |= bit;
    }
    /* The key as it came (escapes kept), to every view that keeps it. */
    emit(ls, f->mviews, "\"", 1);
    emit(ls, f->mviews, k, kn);
    emit(ls, f->mviews, "\":", 2);
    f->expect = EX_COLON;
}

static const char *structural(struct fair_kliststream *ls, const char *p)
{
    char c = *p;
    if (ls->done) {
        fail(ls, p, FAIR_EPARSE, "trailing characters after the list");
        return p;
    }
    if (ls->depth == 0) {
        if (c != '{') {
            fail(ls, p, FAIR_EPARSE, "a List object expected");
            return p;
        }
        const struct fair_jfield *filt[NVIEW] = {list_fields, NULL, NULL};
        push(ls, '{', V_META, filt)->list = true;
        emit(ls, V_META, p, 1);
        return p + 1;
    }
    struct frame *f = &ls->stack[ls->depth - 1];
    switch ((enum expect)f->expect) {
    case EX_KEY_OR_END:
        if (c == '}')
            return close_frame(ls, p);
        /* fall through */
    case EX_KEY:
        if (c != '"')
            break;
        ls->tok = TOK_KEY;
        ls->esc = false;
        ls->key_long = false;
        fair_buf_reset(&ls->key);
        return p + 1;
    case EX_COLON:
        if (c != ':')
            break;
        f->expect = EX_MEMBER;
        return p + 1;
    case EX_MEMBER:
        return begin_value(ls, p, f->mviews & (uint8_t)~ls->poisoned, f->mfilt, f->m_items);
    case EX_COMMA_OR_END:
        if (c == ',') {
            f->expect = EX_KEY;
            return p + 1;
        }
        if (c == '}')
            return close_frame(ls, p);
        break;
    case EX_ELEM_OR_END:
        if (c == ']')
            return close_frame(ls, p);
        /* fall through */
    case EX_ELEM:
        return begin_elem(ls, f, p);
    case EX_ELEM_COMMA_OR_END:
        if (c == ',') {
            f->expect = EX_ELEM;
            return p + 1;
        }
        if (c == ']')
            return close_frame(ls, p);
        break;
    }
    static const char *const want[] = {"'}' or a key expected", "object key expected",
                                       "':' expected",          "value expected",
                                       "',' or '}' expected",   "']' or a value expected",
                                       "value expected",        "',' or ']' expected"};
    fail(ls, p, FAIR_EPARSE,
         f->expect < sizeof want / sizeof want[0] ? want[f->expect] : "syntax error");
    return p;
}

/* ---- tokens --------------------------------------------------------------- */

static const char *scan_string(struct fair_kliststream *ls, const char *p, const char *end)
{
    const char *q = string_end(p, end, &ls->esc);
    const char *stop = q ? q : end;
    if (ls->tok == TOK_STRING) {
        emit(ls, ls->tok_views, p, (size_t)(stop - p));
    } else if (ls->tok == TOK_KEY && !ls->key_long) {
        int rc = fair_buf_append(&ls->key, p, (size_t)(stop - p));
        if (rc == FAIR_ERANGE)
            ls->key_long = true;
        else if (rc)
            fail(ls, p, rc, "out of memory");
    }
    if (!q)
        return end;
    enum tok t = ls->tok;
    ls->tok = TOK_NONE;
    if (t == TOK_KEY) {
        key_done(ls, q);
    } else {
        if (t == TOK_STRING)
            emit(ls, ls->tok_views, q, 1);
        value_done(ls, q + 1);
    }
    return q + 1;
}

static const char *scan_scalar(struct fair_kliststream *ls, const char *p, const char *end)
{
    const char *q = p;
    while (q < end && scalar_char(*q))
        q++;
    if (ls->tok == TOK_SCALAR)
        emit(ls, ls->tok_views, p, (size_t)(q - p));
    if (q == end)
        return end;
    ls->tok = TOK_NONE;
    value_done(ls, q);
    return q;
}

static const char *scan_nest(struct fair_kliststream *ls, const char *p, const char *end)
{
    while (p < end) {
        if (ls->skip_in_str) {
            const char *q = string_end(p, end, &ls->esc);
            if (!q)
                return end;
            ls->skip_in_str = false;
            p = q + 1;
            continue;
        }
        switch (*p++) {
        case '"':
            ls->skip_in_str = true;
            ls->esc = false;
            break;
        case '{':
        case '[':
            ls->skip_depth++;
            break;
        case '}':
        case ']':
            if (--ls->skip_depth == 0) {
                ls->tok = TOK_NONE;
                value_done(ls, p);
                return p;
            }
            break;
        default:
            break;
        }
    }
    return end;
}

/* ---- public --------------------------------------------------------------- */

int fair_kliststream_new(const struct fair_jfield *filter, const struct fair_jfield *skeleton,
                         size_t max_item, fair_klist_item_cb cb, void *ctx,
                         struct fair_kliststream **out)
{
    struct fair_kliststream *ls = fair_calloc(1, sizeof *ls);
    *out = NULL;
    if (!ls)
        return FAIR_ENOMEM;
    ls->filter = filter;
    ls->skeleton = skeleton;
    ls->cb = cb;
    ls->ctx = ctx;
    fair_buf_init(&ls->out[VI_META], FAIR_KLIST_MAX_META);
    fair_buf_init(&ls->out[VI_ITEM], max_item ? max_item : (size_t)4 << 20);
    fair_buf_init(&ls->out[VI_SKEL], FAIR_KLIST_MAX_SKELETON);
    fair_buf_init(&ls->key, FAIR_KLIST_MAX_KEY);
    *out = ls;
    return 0;
}

void fair_kliststream_free(struct fair_kliststream *ls)
{
    if (!ls)
        return;
    for (int v = 0; v < NVIEW; v++)
        fair_buf_release(&ls->out[v]);
    fair_buf_release(&ls->key);
    fair_free(ls);
}

static int report(const struct fair_kliststream *ls, struct fair_error *err)
{
    if (err)
        *err = ls->err;
    return ls->rc;
}

int fair_kliststream_feed(struct fair_kliststream *ls, const char *data, size_t n,
                          struct fair_error *err)
{
    if (ls->rc)
        return report(ls, err);
    const char *p = data, *end = data + n;
    ls->chunk = data;
    while (p < end && !ls->rc) {
        switch (ls->tok) {
        case TOK_STRING:
        case TOK_KEY:
        case TOK_SKIP_STRING:
            p = scan_string(ls, p, end);
            continue;
        case TOK_SCALAR:
        case TOK_SKIP_SCALAR:
            p = scan_scalar(ls, p, end);
            continue;
        case TOK_SKIP_NEST:
            p = scan_nest(ls, p, end);
            continue;
        case TOK_NONE:
            break;
        }
        char c = *p;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            p++;
            continue;
        }
        p = structural(ls, p);
    }
    ls->pos += (uint64_t)(p - data);
    note_peak(ls);
    return ls->rc ? report(ls, err) : 0;
}

int fair_kliststream_finish(struct fair_kliststream *ls, const char **meta, size_t *meta_len,
                            struct fair_error *err)
{
    if (!ls->rc && !ls->done) {
        fail(ls, NULL, FAIR_EPARSE,
             ls->depth || ls->tok != TOK_NONE ? "truncated list" : "empty response");
    }
    if (ls->rc)
        return report(ls, err);
    if (meta)
        *meta = fair_buf_str(&ls->out[VI_META]);
    if (meta_len)
        *meta_len = ls->out[VI_META].len;
    return 0;
}

size_t fair_kliststream_items(const struct fair_kliststream *ls)
{
    return ls->nitems;
}

size_t fair_kliststream_peak(const struct fair_kliststream *ls)
{
    return ls->peak;
}
