/* A TZif reader (RFC 8536) with its POSIX TZ footer: UTC offsets of IANA
 * zones without setenv("TZ")/tzset(), so any thread may use any zone. See
 * tz.h for why. Every count and string read from a file is bounded. */
#include "base/tz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"

/* A rule date: Jn (julian, no Feb 29), n (zero-based day of year) or
 * Mm.w.d; and the local time of the change, seconds (may be negative or
 * past 24 h, RFC 8536 section 3.3.1). */
struct rule_date {
    char kind; /* 'J', 'D' (zero-based n), 'M' */
    int n, m, w, d;
    int32_t secs;
};

struct posix_tz {
    bool set;
    int32_t std_off; /* seconds east */
    bool has_dst;
    int32_t dst_off;
    struct rule_date start, end;
};

struct fair_tz {
    char name[FAIR_TZ_NAME_MAX + 1];
    size_t ntrans;
    int64_t *trans; /* ntrans UTC seconds, ascending */
    uint8_t *idx;   /* ntrans type indexes */
    int32_t *offs;  /* ntypes */
    size_t ntypes;
    struct posix_tz footer;
};

/* ---- civil calendar (days since 1970-01-01, proleptic Gregorian) ---- */

int64_t fair_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void fair_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

int fair_weekday(int64_t days)
{
    int64_t w = (days + 4) % 7; /* 1970-01-01 was a Thursday */
    return (int)(w < 0 ? w + 7 : w);
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(int64_t y, int m)
{
    static const int md[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : md[m - 1];
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- POSIX TZ strings ---- */

static const char *parse_name(const char *s)
{
    if (*s == '<') {
        const char *e = strchr(s, '>');
        return e && e - s >= 2 ? e + 1 : NULL;
    }
    const char *p = s;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    return p - s >= 3 ? p : NULL;
}

/* [+-]h[h][:mm[:ss]], h up to max_h; *out in seconds, sign applied. */
static const char *parse_hms(const char *s, int max_h, int32_t *out)
{
    int sign = 1;
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    int h = 0, m = 0, sec = 0, nd = 0;
    while (*s >= '0' && *s <= '9' && nd < 3)
        h = h * 10 + (*s++ - '0'), nd++;
    if (!nd || h > max_h)
        return NULL;
    if (*s == ':') {
        s++;
        if (!(s[0] >= '0' && s[0] <= '5' && s[1] >= '0' && s[1] <= '9'))
            return NULL;
        m = (s[0] - '0') * 10 + (s[1] - '0');
        s += 2;
        if (*s == ':') {
            s++;
            if (!(s[0] >= '0' && s[0] <= '5' && s[1] >= '0' && s[1] <= '9'))
                return NULL;
            sec = (s[0] - '0') * 10 + (s[1] - '0');
            s += 2;
        }
    }
    *out = sign * (h * 3600 + m * 60 + sec);
    return s;
}

static const char *parse_int(const char *s, int lo, int hi, int *out)
{
    int v = 0, nd = 0;
    while (*s >= '0' && *s <= '9' && nd < 4)
        v = v * 10 + (*s++ - '0'), nd++;
    if (!nd || v < lo || v > hi)
        return NULL;
    *out = v;
    return s;
}

static const char *parse_rule(const char *s, struct rule_date *r)
{
    if (*s == 'J') {
        r->kind = 'J';
        s = parse_int(s + 1, 1, 365, &r->n);
    } else if (*s == 'M') {
        r->kind = 'M';
        if (!(s = parse_int(s + 1, 1, 12, &r->m)) || *s++ != '.' ||
            !(s = parse_int(s, 1, 5, &r->w)) || *s++ != '.')
            return NULL;
        s = parse_int(s, 0, 6, &r->d);
    } else {
        r->kind = 'D';
        s = parse_int(s, 0, 365, &r->n);
    }
    if (!s)
        return NULL;
    r->secs = 7200;
    if (*s == '/')
        s = parse_hms(s + 1, 167, &r->secs);
    return s;
}

static int parse_posix(const char *s, struct posix_tz *p)
{
    memset(p, 0, sizeof *p);
    int32_t off;
    if (!(s = parse_name(s)) || !(s = parse_hms(s, 24, &off)))
        return -1;
    p->std_off = -off; /* POSIX offsets count west */
    p->set = true;
    if (!*s)
        return 0;
    if (!(s = parse_name(s)))
        return -1;
    p->has_dst = true;
    p->dst_off = p->std_off + 3600;
    if (*s && *s != ',') {
        if (!(s = parse_hms(s, 24, &off)))
            return -1;
        p->dst_off = -off;
    }
    if (!*s) { /* no rule: the US rule, as glibc assumes */
        p->start = (struct rule_date){'M', 0, 3, 2, 0, 7200};
        p->end = (struct rule_date){'M', 0, 11, 1, 0, 7200};
        return 0;
    }
    if (*s++ != ',' || !(s = parse_rule(s, &p->start)) || *s++ != ',' ||
        !(s = parse_rule(s, &p->end)) || *s)
        return -1;
    return 0;
}

/* The local day (days since the epoch) of rule date r in year y. */
static int64_t rule_day(const struct rule_date *r, int64_t y)
{
    int64_t jan1 = fair_days_from_civil(y, 1, 1);
    if (r->kind == 'J')
        return jan1 + r->n - 1 + (is_leap(y) && r->n >= 60);
    if (r->kind == 'D')
        return jan1 + r->n;
    int64_t first = fair_days_from_civil(y, r->m, 1);
    int dom = 1 + (r->d - fair_weekday(first) + 7) % 7 + 7 * (r->w - 1);
    while (dom > month_days(y, r->m))
        dom -= 7;
    return first + dom - 1;
}

/* The offset of footer p at t (UTC seconds) and the next change after t. */
static int32_t posix_offset(const struct posix_tz *p, int64_t t, int64_t *next)
{
    *next = INT64_MAX;
    if (!p->has_dst)
        return p->std_off;
    int64_t y;
    int m, d;
    fair_civil_from_days(floor_div(t + p->std_off, 86400), &y, &m, &d);
    /* Changes of y-1, y and y+1 in UTC: the start is in standard time,
     * the end in daylight time. */
    int64_t ch[6];
    bool to_dst[6];
    size_t n = 0;
    for (int64_t yy = y - 1; yy <= y + 1; yy++) {
        ch[n] = rule_day(&p->start, yy) * 86400 + p->start.secs - p->std_off;
        to_dst[n++] = true;
        ch[n] = rule_day(&p->end, yy) * 86400 + p->end.secs - p->dst_off;
        to_dst[n++] = false;
    }
    /* The state at t is the one set by the latest change at or before t. */
    int64_t best = INT64_MIN;
    bool dst = false;
    for (size_t i = 0; i < n; i++)
        if (ch[i] <= t && ch[i] >= best) {
            if (ch[i] > best || !to_dst[i]) /* same instant: the end wins ("all year" rules) */
                dst = to_dst[i];
            best = ch[i];
        }
    for (size_t i = 0; i < n; i++)
        if (ch[i] > t && ch[i] < *next && to_dst[i] != dst)
            *next = ch[i];
    return dst ? p->dst_off : p->std_off;
}

/* ---- TZif ---- */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int bad(struct fair_error *err, const char *name, const char *why)
{
    return fair_error_set(err, FAIR_EINVAL, "time zone \"%s\": %s", name, why);
}

void fair_tz_free(struct fair_tz *z)
{
    if (!z)
        return;
    fair_free(z->trans);
    fair_free(z->idx);
    fair_free(z->offs);
    fair_free(z);
}

const char *fair_tz_name(const struct fair_tz *z)
{
    return z->name;
}

int fair_tz_parse(const char *name, const unsigned char *data, size_t n, struct fair_tz **out,
                  struct fair_error *err)
{
    *out = NULL;
    if (n < 44 || memcmp(data, "TZif", 4))
        return bad(err, name, "not a TZif file");
    int version = data[4] ? data[4] - '0' : 1;
    size_t cnt[6];
    const unsigned char *h = data;
    size_t tsize = 4, pos = 0;
    for (int pass = 0;; pass++) {
        if (pos + 44 > n || memcmp(h, "TZif", 4))
            return bad(err, name, "damaged header");
        for (int i = 0; i < 6; i++)
            cnt[i] = be32(h + 20 + 4 * i);
        /* isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt */
        if (cnt[3] > 100000 || cnt[4] == 0 || cnt[4] > 256 || cnt[5] > 65536 || cnt[2] > 100000 ||
            (cnt[0] && cnt[0] != cnt[4]) || (cnt[1] && cnt[1] != cnt[4]))
            return bad(err, name, "counts out of range");
        size_t body =
            cnt[3] * tsize + cnt[3] + cnt[4] * 6 + cnt[5] + cnt[2] * (tsize + 4) + cnt[1] + cnt[0];
        if (pos + 44 + body > n)
            return bad(err, name, "truncated");
        if (pass == 0 && version >= 2) {
            pos += 44 + body;
            h = data + pos;
            tsize = 8;
            continue;
        }
        break;
    }
    int rc = FAIR_ENOMEM;
    struct fair_tz *z = fair_calloc(1, sizeof *z);
    if (!z)
        goto fail;
    snprintf(z->name, sizeof z->name, "%s", name);
    z->ntrans = cnt[3];
    z->ntypes = cnt[4];
    z->trans = fair_calloc(z->ntrans ? z->ntrans : 1, sizeof *z->trans);
    z->idx = fair_calloc(z->ntrans ? z->ntrans : 1, 1);
    z->offs = fair_calloc(z->ntypes, sizeof *z->offs);
    if (!z->trans || !z->idx || !z->offs)
        goto fail;
    rc = FAIR_EINVAL;
    const unsigned char *p = h + 44;
    for (size_t i = 0; i < z->ntrans; i++, p += tsize) {
        z->trans[i] = tsize == 8 ? be64(p) : (int64_t)(int32_t)be32(p);
        if (i && z->trans[i] <= z->trans[i - 1]) {
            bad(err, name, "transitions out of order");
            goto fail;
        }
    }
    for (size_t i = 0; i < z->ntrans; i++) {
        z->idx[i] = *p++;
        if (z->idx[i] >= z->ntypes) {
            bad(err, name, "transition names an unknown type");
            goto fail;
        }
    }
    for (size_t i = 0; i < z->ntypes; i++, p += 6) {
        int32_t o = (int32_t)be32(p);
        if (o <= -25 * 3600 || o >= 26 * 3600) {
            bad(err, name, "offset out of range");
            goto fail;
        }
        z->offs[i] = o;
    }
    p += cnt[5] + cnt[2] * (tsize + 4) + cnt[1] + cnt[0];
    if (version >= 2) {
        /* The footer: "\n" TZ-string "\n". */
        size_t left = (size_t)(data + n - p);
        if (left < 2 || p[0] != '\n') {
            bad(err, name, "missing footer");
            goto fail;
        }
        const unsigned char *e = memchr(p + 1, '\n', left - 1);
        if (!e || e - p - 1 > 255) {
            bad(err, name, "damaged footer");
            goto fail;
        }
        char spec[256];
        memcpy(spec, p + 1, (size_t)(e - p - 1));
        spec[e - p - 1] = 0;
        if (spec[0] && parse_posix(spec, &z->footer)) {
            bad(err, name, "footer is not a POSIX TZ string");
            goto fail;
        }
    }
    *out = z;
    return 0;
fail:
    fair_tz_free(z);
    if (rc == FAIR_ENOMEM)
        return fair_error_set(err, FAIR_ENOMEM, "time zone \"%s\": out of memory", name);
    return rc;
}

int fair_tz_posix(const char *spec, struct fair_tz **out, struct fair_error *err)
{
    *out = NULL;
    struct fair_tz *z = fair_calloc(1, sizeof *z);
    if (!z)
        return fair_error_set(err, FAIR_ENOMEM, "time zone: out of memory");
    snprintf(z->name, sizeof z->name, "%s", spec);
    z->offs = fair_calloc(1, sizeof *z->offs);
    z->trans = fair_calloc(1, sizeof *z->trans);
    z->idx = fair_calloc(1, 1);
    if (!z->offs || !z->trans || !z->idx) {
        fair_tz_free(z);
        return fair_error_set(err, FAIR_ENOMEM, "time zone: out of memory");
    }
    z->ntypes = 1;
    if (strlen(spec) > 255 || parse_posix(spec, &z->footer)) {
        fair_tz_free(z);
        return bad(err, spec, "not a POSIX TZ string");
    }
    z->offs[0] = z->footer.std_off;
    *out = z;
    return 0;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > FAIR_TZ_NAME_MAX || s[0] == '/' || strstr(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '/' || c == '_' || c == '+' || c == '-'))
            return false;
    }
    return true;
}

int fair_tz_load(const char *name, struct fair_tz **out, struct fair_error *err)
{
    *out = NULL;
    if (!name || !name_ok(name))
        return fair_error_set(err, FAIR_EINVAL,
                              "time zone \"%.64s\": want an IANA name such as Europe/Berlin "
                              "(letters, digits, '/', '_', '+', '-')",
                              name ? name : "");
    const char *dir = getenv("TZDIR");
    if (!dir || !*dir)
        dir = "/usr/share/zoneinfo";
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (!strcmp(name, "UTC") || !strcmp(name, "Etc/UTC")) {
            int prc = fair_tz_posix("UTC0", out, err);
            if (!prc)
                snprintf((*out)->name, sizeof(*out)->name, "%s", name);
            return prc;
        }
        return fair_error_set(err, FAIR_EINVAL, "time zone \"%s\": unknown (%s: %s)", name, path,
                              strerror(errno));
    }
    int rc;
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > FAIR_TZ_FILE_MAX) {
        rc = bad(err, name, "not a zone file");
        goto out;
    }
    buf = fair_malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = fair_error_set(err, FAIR_ENOMEM, "time zone: out of memory");
        goto out;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    rc = fair_tz_parse(name, buf, got, out, err);
out:
    fair_free(buf);
    close(fd);
    return rc;
}

int32_t fair_tz_offset(const struct fair_tz *z, int64_t utc_ms, int64_t *next_ms)
{
    int64_t t = floor_div(utc_ms, 1000);
    int64_t next = INT64_MAX;
    int32_t off;
    if (z->ntrans == 0 || t >= z->trans[z->ntrans - 1]) {
        if (z->footer.set) {
            off = posix_offset(&z->footer, t, &next);
        } else {
            off = z->ntrans ? z->offs[z->idx[z->ntrans - 1]] : z->offs[0];
        }
    } else if (t < z->trans[0]) {
        off = z->offs[0];
        next = z->trans[0];
    } else {
        size_t lo = 0, hi = z->ntrans - 1; /* trans[lo] <= t < trans[hi] */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (z->trans[mid] <= t)
                lo = mid;
            else
                hi = mid;
        }
        off = z->offs[z->idx[lo]];
        next = z->trans[hi];
        /* A transition may keep the offset (only the name or isdst
         * changes): skip to the first real change. */
        for (size_t k = hi; k < z->ntrans && z->offs[z->idx[k]] == off; k++)
            next = k + 1 < z->ntrans ? z->trans[k + 1] : INT64_MAX;
        if (next == INT64_MAX && z->footer.set) {
            int64_t n2;
            int64_t last = z->trans[z->ntrans - 1];
            if (posix_offset(&z->footer, last, &n2) != off)
                next = last;
            else
                next = n2;
        }
    }
    if (next_ms)
        *next_ms = next == INT64_MAX || next > INT64_MAX / 1000 ? INT64_MAX : next * 1000;
    return off;
}
