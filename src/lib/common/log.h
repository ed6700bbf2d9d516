/* Logging to stderr (or a file) for every component. Every message goes
 * through al_redact() first, so no live token value or token-shaped string
 * ever reaches a log. */
#ifndef AL_LOG_H
#define AL_LOG_H

#include <stdio.h>

enum al_log_level { AL_LOG_ERROR = 0, AL_LOG_WARN = 1, AL_LOG_INFO = 2, AL_LOG_DEBUG = 3 };

/* Global settings: the program name prefix and the most verbose level shown. */
void al_log_init(const char *progname, enum al_log_level level);
void al_log_set_file(FILE *f);
enum al_log_level al_log_get_level(void);

/* One line: `PROGNAME: [error: |warning: ]MESSAGE`, redacted and escaped.
 * A MESSAGE that starts with the last word of PROGNAME and `: ` (a
 * component naming itself, "proxy: ...", under `airlock proxy`) has that
 * word dropped, so the command is said once. */
void al_log(enum al_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define al_error_log(...) al_log(AL_LOG_ERROR, __VA_ARGS__)
#define al_warn(...) al_log(AL_LOG_WARN, __VA_ARGS__)
#define al_info(...) al_log(AL_LOG_INFO, __VA_ARGS__)
#define al_debug(...) al_log(AL_LOG_DEBUG, __VA_ARGS__)

#endif
