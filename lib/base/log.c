/* key=value logging (see log.h). */
#include "base/log.h"

#include <stdarg.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static enum fair_log_level cur_level = FAIR_LOG_INFO;
static FILE *cur_stream;

void fair_log_set_level(enum fair_log_level level)
{
    cur_level = level;
}

enum fair_log_level fair_log_get_level(void)
{
    return cur_level;
}

void fair_log_set_stream(FILE *f)
{
    cur_stream = f;
}

int fair_log_level_parse(const char *s)
{
    static const char *names[] = {"debug", "info", "warn", "error", "off"};
    for (int i = 0; i < 5; i++)
        if (s && strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void fair_log(enum fair_log_level level, const char *comp, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error", "off"};
    if (level < cur_level || level >= FAIR_LOG_OFF)
        return;
    FILE *out = cur_stream ? cur_stream : stderr;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(out, "ts=%s.%03ldZ level=%s comp=%s %s\n", ts, (long)(tv.tv_usec / 1000),
            names[level], comp ? comp : "-", msg);
    fflush(out);
}
