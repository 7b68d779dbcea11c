/* log.c - levelled logging to stderr. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

enum log_level log_threshold = LOG_INFO;

void log_set_level(enum log_level level) { log_threshold = level; }

void log_write(enum log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per line so lines from threads never interleave. */
    fprintf(stderr, "%s.%03ldZ %-5s %s\n", stamp, ts.tv_nsec / 1000000, names[level], line);
}
