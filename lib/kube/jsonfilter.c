/* Filtered JSON parsing (see jsonfilter.h): recursive descent over the
 * input; kept values become jansson values, skipped ones are scanned. */
#include "kube/jsonfilter.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

struct parser {
    const char *s, *end, *p;
    int depth;
    struct fair_error *err;
    int rc;
    char *tmp; /* scratch for unescaping, grown as needed */
    size_t tmp_cap;
};

static int fail(struct parser *ps, int code, const char *what)
{
    if (!ps->rc)
        ps->rc =
            fair_error_set(ps->err, code, "JSON: %s at byte %zu", what, (size_t)(ps->p - ps->s));
    return ps->rc;
}

static void ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

/* ---- skipping -------------------------------------------------------- */

static int skip_string(struct parser *ps)
{
    ps->p++; /* the opening quote */
    for (;;) {
        const char *q = memchr(ps->p, '"', (size_t)(ps->end - ps->p));
        if (!q)
            return fail(ps, FAIR_EPARSE, "unterminated string");
        /* The quote is escaped if an odd number of backslashes precede it. */
        const char *b = q;
        while (b > ps->p && b[-1] == '\\')
            b--;
        ps->p = q + 1;
        if (((q - b) & 1) == 0)
            return 0;
    }
}

static int skip_value(struct parser *ps)
{
    ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, FAIR_EPARSE, "value expected");
    char c = *ps->p;
    if (c == '"')
        return skip_string(ps);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (ps->p < ps->end) {
            c = *ps->p;
            if (c == '"') {
                if (skip_string(ps))
                    return ps->rc;
                continue;
            }
            if (c == '{' || c == '[') {
                if (ps->depth + ++depth > FAIR_JSON_MAX_DEPTH)
                    return fail(ps, FAIR_ERANGE, "nested too deeply");
            } else if (c == '}' || c == ']') {
                if (--depth == 0) {
                    ps->p++;
                    return 0;
                }
            }
            ps->p++;
        }
        return fail(ps, FAIR_EPARSE, "unterminated object or array");
    }
    const char *start = ps->p;
    while (ps->p < ps->end &&
           ((*ps->p >= '0' && *ps->p <= '9') || (*ps->p >= 'a' && *ps->p <= 'z') || *ps->p == '-' ||
            *ps->p == '+' || *ps->p == '.' || *ps->p == 'E'))
        ps->p++;
    if (ps->p == start)
        return fail(ps, FAIR_EPARSE, "unexpected character");
    return 0;
}

/* ---- kept values ------------------------------------------------------ */

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* Whether s[0..n) is valid UTF-8 by jansson's rules (no overlong forms,
 * no surrogates, nothing above U+10FFFF), checked here so that jansson's
 * constructors can be the _nocheck ones: their NULL then means out of
 * memory only, never bad input. */
static bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        int more;
        unsigned v, min;
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1, v = c & 0x1F, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2, v = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3, v = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (end - p < more)
            return false;
        for (int i = 0; i < more; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            v = (v << 6) | (p[i] & 0x3F);
        }
        p += more;
        if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return false;
    }
    return true;
}

/* Reads a string at ps->p into out and len: borrowed from the input when it
 * has no escapes, else unescaped into ps->tmp. */
static int read_string(struct parser *ps, const char **out, size_t *len)
{
    const char *start = ++ps->p;
    const char *q = start;
    while (q < ps->end && *q != '"' && *q != '\\') {
        if ((unsigned char)*q < 0x20)
            return fail(ps, FAIR_EPARSE, "control character in string");
        q++;
    }
    if (q >= ps->end)
        return fail(ps, FAIR_EPARSE, "unterminated string");
    if (*q == '"') {
        *out = start;
        *len = (size_t)(q - start);
        ps->p = q + 1;
        return 0;
    }
    /* Escapes: unescaped text is never longer than the escaped one. */
    const char *close = start;
    for (;;) {
        const char *e = memchr(close, '"', (size_t)(ps->end - close));
        if (!e)
            return fail(ps, FAIR_EPARSE, "unterminated string");
        const char *b = e;
        while (b > start && b[-1] == '\\')
            b--;
        close = e + 1;
        if (((e - b) & 1) == 0) {
            close = e;
            break;
        }
    }
    size_t need = (size_t)(close - start) + 1;
    if (need > ps->tmp_cap) {
        char *t = fair_realloc(ps->tmp, need);
        if (!t)
            return fail(ps, FAIR_ENOMEM, "out of memory");
        ps->tmp = t;
        ps->tmp_cap = need;
    }
    char *o = ps->tmp;
    for (const char *p = start; p < close;) {
        if (*p != '\\') {
            if ((unsigned char)*p < 0x20)
                return fail(ps, FAIR_EPARSE, "control character in string");
            *o++ = *p++;
            continue;
        }
        if (p + 1 >= close)
            return fail(ps, FAIR_EPARSE, "bad escape");
        char c = p[1];
        p += 2;
        switch (c) {
        case '"':
            *o++ = '"';
            break;
        case '\\':
            *o++ = '\\';
            break;
        case '/':
            *o++ = '/';
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
            if (close - p < 4 || hex4(p, &cp))
                return fail(ps, FAIR_EPARSE, "bad \\u escape");
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (close - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return fail(ps, FAIR_EPARSE, "bad surrogate pair");
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return fail(ps, FAIR_EPARSE, "lone surrogate");
            }
            if (cp == 0)
                return fail(ps, FAIR_EPARSE, "\\u0000 is not supported");
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
            return fail(ps, FAIR_EPARSE, "bad escape");
        }
    }
    *out = ps->tmp;
    *len = (size_t)(o - ps->tmp);
    ps->p = close + 1;
    return 0;
}

static json_t *parse_number(struct parser *ps)
{
    const char *start = ps->p, *p = ps->p;
    bool real = false;
    if (p < ps->end && *p == '-')
        p++;
    if (p >= ps->end || *p < '0' || *p > '9')
        goto bad;
    if (*p == '0')
        p++;
    else
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    if (p < ps->end && *p == '.') {
        real = true;
        p++;
        if (p >= ps->end || *p < '0' || *p > '9')
            goto bad;
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
        real = true;
        p++;
        if (p < ps->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= ps->end || *p < '0' || *p > '9')
            goto bad;
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    }
    char buf[64];
    size_t n = (size_t)(p - start);
    if (n >= sizeof buf)
        goto bad;
    memcpy(buf, start, n);
    buf[n] = '\0';
    ps->p = p;
    errno = 0;
    if (!real) {
        long long v = strtoll(buf, NULL, 10);
        if (errno == 0)
            return json_integer(v);
        /* too large for int64: a real, as jansson does */
    }
    return json_real(strtod(buf, NULL));
bad:
    fail(ps, FAIR_EPARSE, "bad number");
    return NULL;
}

static json_t *parse_value(struct parser *ps, const struct fair_jfield *filter);

static const struct fair_jfield *find_field(const struct fair_jfield *f, const char *k, size_t n,
                                            bool *found)
{
    *found = false;
    for (; f->key; f++)
        if (n && f->key[0] == k[0] && strnlen(f->key, n + 1) == n && !memcmp(f->key, k, n)) {
            *found = true;
            return f->sub;
        }
    return NULL;
}

static json_t *parse_object(struct parser *ps, const struct fair_jfield *filter)
{
    json_t *obj = json_object();
    if (!obj) {
        fail(ps, FAIR_ENOMEM, "out of memory");
        return NULL;
    }
    ps->p++; /* '{' */
    ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return obj;
    }
    char keybuf[256];
    for (;;) {
        ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            fail(ps, FAIR_EPARSE, "object key expected");
            goto bad;
        }
        const char *k;
        size_t klen;
        if (read_string(ps, &k, &klen))
            goto bad;
        bool keep = true;
        const struct fair_jfield *sub = NULL;
        if (filter)
            sub = find_field(filter, k, klen, &keep);
        json_t *key_owner = NULL;
        const char *key = NULL;
        if (keep) {
            if (klen < sizeof keybuf && !memchr(k, '\0', klen)) {
                memcpy(keybuf, k, klen);
                keybuf[klen] = '\0';
                key = keybuf;
            } else {
                if (memchr(k, '\0', klen) || !utf8_valid(k, klen)) {
                    fail(ps, FAIR_EPARSE, "bad object key");
                    goto bad;
                }
                key_owner = json_stringn_nocheck(k, klen);
                key = key_owner ? json_string_value(key_owner) : NULL;
                if (!key) {
                    fail(ps, FAIR_ENOMEM, "out of memory");
                    goto bad;
                }
            }
        }
        ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            json_decref(key_owner);
            fail(ps, FAIR_EPARSE, "':' expected");
            goto bad;
        }
        ps->p++;
        if (keep) {
            json_t *v = parse_value(ps, sub);
            if (v && !utf8_valid(key, strlen(key))) {
                json_decref(v);
                json_decref(key_owner);
                fail(ps, FAIR_EPARSE, "bad object key (not UTF-8)");
                goto bad;
            }
            if (!v || json_object_set_new_nocheck(obj, key, v)) {
                json_decref(key_owner);
                if (v)
                    fail(ps, FAIR_ENOMEM, "out of memory");
                goto bad;
            }
        } else if (skip_value(ps)) {
            goto bad;
        }
        json_decref(key_owner);
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return obj;
        }
        fail(ps, FAIR_EPARSE, "',' or '}' expected");
        goto bad;
    }
bad:
    json_decref(obj);
    return NULL;
}

static json_t *parse_array(struct parser *ps, const struct fair_jfield *filter)
{
    json_t *arr = json_array();
    if (!arr) {
        fail(ps, FAIR_ENOMEM, "out of memory");
        return NULL;
    }
    ps->p++; /* '[' */
    ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return arr;
    }
    for (;;) {
        json_t *v = parse_value(ps, filter);
        if (!v || json_array_append_new(arr, v)) {
            if (v)
                fail(ps, FAIR_ENOMEM, "out of memory");
            goto bad;
        }
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return arr;
        }
        fail(ps, FAIR_EPARSE, "',' or ']' expected");
        goto bad;
    }
bad:
    json_decref(arr);
    return NULL;
}

static bool lit(struct parser *ps, const char *word, size_t n)
{
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
        return false;
    ps->p += n;
    return true;
}

static json_t *parse_value(struct parser *ps, const struct fair_jfield *filter)
{
    ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, FAIR_EPARSE, "value expected");
        return NULL;
    }
    json_t *v = NULL;
    switch (*ps->p) {
    case '{':
    case '[':
        if (++ps->depth > FAIR_JSON_MAX_DEPTH) {
            fail(ps, FAIR_ERANGE, "nested too deeply");
            return NULL;
        }
        v = *ps->p == '{' ? parse_object(ps, filter) : parse_array(ps, filter);
        ps->depth--;
        return v;
    case '"': {
        const char *s;
        size_t n;
        if (read_string(ps, &s, &n))
            return NULL;
        if (!utf8_valid(s, n)) {
            fail(ps, FAIR_EPARSE, "string is not valid UTF-8");
            return NULL;
        }
        v = json_stringn_nocheck(s, n);
        if (!v)
            fail(ps, FAIR_ENOMEM, "out of memory");
        return v;
    }
    case 't':
        if (lit(ps, "true", 4))
            return json_true();
        break;
    case 'f':
        if (lit(ps, "false", 5))
            return json_false();
        break;
    case 'n':
        if (lit(ps, "null", 4))
            return json_null();
        break;
    default:
        return parse_number(ps);
    }
    fail(ps, FAIR_EPARSE, "unexpected character");
    return NULL;
}

int fair_json_parse_filtered(const char *s, size_t len, const struct fair_jfield *filter,
                             json_t **out, struct fair_error *err)
{
    struct parser ps = {.s = s, .end = s + len, .p = s, .err = err};
    *out = NULL;
    json_t *v = parse_value(&ps, filter);
    if (v) {
        ws(&ps);
        if (ps.p != ps.end) {
            fail(&ps, FAIR_EPARSE, "trailing characters");
            json_decref(v);
            v = NULL;
        }
    }
    fair_free(ps.tmp);
    if (!v)
        return ps.rc ? ps.rc : fair_error_set(err, FAIR_ENOMEM, "JSON: out of memory");
    *out = v;
    return 0;
}
