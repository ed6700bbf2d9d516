/* al_error: the one way a library function reports failure.
 *
 * Every fallible function returns int (negative on failure, 0 or a count
 * on success) and fills the caller's al_error with the errno and a message.
 * Callers add context on the way up with al_error_wrap(); only main() turns
 * an error into an exit status. Modelled on crun's libcrun_error_t. */
#ifndef AL_ERROR_H
#define AL_ERROR_H

#include <stddef.h>

#define AL_ERROR_MSG_MAX 1024

typedef struct al_error {
  int code;                   /* errno value, or 0 when not a system error */
  char msg[AL_ERROR_MSG_MAX]; /* NUL-terminated, already includes strerror(code) when code != 0 */
} al_error;

/* Fill err with errno `code` and a printf-style message; the message gets
 * ": <strerror(code)>" appended when code != 0. Returns -1 always, so the
 * idiom is `return al_make_error(err, errno, "open `%s`", path);`.
 * err may be NULL (the error is then dropped). */
int al_make_error(al_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like al_make_error, but the message is used as it is (no strerror
 * suffix): for errors about input, where the text names the rule broken
 * and `code` (often EINVAL or 0) is for the caller's logic only. */
int al_error_set(al_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the existing message with context ("context: old message").
 * Returns -1 always. */
int al_error_wrap(al_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reset to "no error". */
void al_error_clear(al_error *err);

#endif
