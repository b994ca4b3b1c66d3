/* One format-checked logging function with levels and a component tag.
 * Lines are key=value so that they can be grepped and parsed:
 *   ts=2026-11-23T19:31:15.123Z level=info comp=engine msg="cycle done" binds=3
 * The caller writes the key=value fields after the message in fmt. */
#ifndef FAIR_BASE_LOG_H
#define FAIR_BASE_LOG_H

#include <stdio.h>

enum fair_log_level { FAIR_LOG_DEBUG, FAIR_LOG_INFO, FAIR_LOG_WARN, FAIR_LOG_ERROR, FAIR_LOG_OFF };

/* Process-wide settings, set once at start-up by the programs (never lib/). */
void fair_log_set_level(enum fair_log_level level);
void fair_log_set_stream(FILE *f);
enum fair_log_level fair_log_get_level(void);
/* Parses "debug", "info", "warn", "error", "off"; -1 when unknown. */
int fair_log_level_parse(const char *s);

void fair_log(enum fair_log_level level, const char *comp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define FAIR_DEBUG(comp, ...) fair_log(FAIR_LOG_DEBUG, comp, __VA_ARGS__)
#define FAIR_INFO(comp, ...) fair_log(FAIR_LOG_INFO, comp, __VA_ARGS__)
#define FAIR_WARN(comp, ...) fair_log(FAIR_LOG_WARN, comp, __VA_ARGS__)
#define FAIR_ERROR(comp, ...) fair_log(FAIR_LOG_ERROR, comp, __VA_ARGS__)

#endif
