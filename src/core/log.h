/* log.h - levelled logging to stderr with a timestamp.
 *
 * The level check is inline so that a disabled debug line costs one compare.
 */
#ifndef SHOOTOUT_LOG_H
#define SHOOTOUT_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

extern enum log_level log_threshold;

void log_set_level(enum log_level level);
void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_at(level, ...)                      \
    do {                                        \
        if ((level) <= log_threshold)           \
            log_write((level), __VA_ARGS__);    \
    } while (0)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif
