/* IANA time zones without the C library's global TZ state: a reader for
 * the compiled tz database (TZif files, RFC 8536, versions 1 to 4) and its
 * POSIX TZ footer, so that the controller can ask for the UTC offset of any
 * zone at any instant from any thread. glibc's localtime_r() only reads
 * the zone named by the environment variable TZ (changing it means
 * setenv() and tzset(), which are MT-Unsafe: the glibc manual marks
 * localtime_r "MT-Safe env locale", safe only while nobody changes the
 * environment), so one process cannot use two zones through it safely.
 *
 * A struct fair_tz is immutable once loaded: share it between threads
 * freely. Leap-second ("right/") files are read with their leap seconds
 * ignored. */
#ifndef FAIR_BASE_TZ_H
#define FAIR_BASE_TZ_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct fair_tz;

/* Longest zone name accepted, and the largest TZif file read. */
#define FAIR_TZ_NAME_MAX 64
#define FAIR_TZ_FILE_MAX (256 * 1024)

/* Loads the zone called name ("Europe/Berlin", "UTC") from $TZDIR, else
 * /usr/share/zoneinfo. The name must be 1 to 64 characters of
 * [A-Za-z0-9/_+-], not start with '/' and hold no "..". "UTC" (and "Etc/UTC"
 * when no file exists) works without a database. Returns 0 and a new zone,
 * or FAIR_EINVAL (bad name, unknown zone, damaged file; err says which). */
int fair_tz_load(const char *name, struct fair_tz **out, struct fair_error *err);

/* Parses TZif data (for tests and the fuzzer). name is copied for
 * messages. */
int fair_tz_parse(const char *name, const unsigned char *data, size_t n, struct fair_tz **out,
                  struct fair_error *err);

/* A zone from a POSIX TZ string alone ("CET-1CEST,M3.5.0,M10.5.0/3"). */
int fair_tz_posix(const char *spec, struct fair_tz **out, struct fair_error *err);

void fair_tz_free(struct fair_tz *z);

const char *fair_tz_name(const struct fair_tz *z);

/* The offset of local time from UTC (seconds east) at utc_ms, and the
 * first instant after utc_ms at which it changes (INT64_MAX when it never
 * does; may be NULL). Never fails: instants outside the file's range use
 * its first type or its footer rule. */
int32_t fair_tz_offset(const struct fair_tz *z, int64_t utc_ms, int64_t *next_ms);

/* Civil calendar helpers (proleptic Gregorian): days since 1970-01-01 of
 * y-m-d, its inverse, and the weekday of a day number (0 = Sunday). */
int64_t fair_days_from_civil(int64_t y, int m, int d);
void fair_civil_from_days(int64_t days, int64_t *y, int *m, int *d);
int fair_weekday(int64_t days);

#endif
