/* Small shared helpers: cleanup attributes, full reads and writes, string
 * building. Nothing here knows about airlock's components. */
#ifndef AL_UTIL_H
#define AL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

void al_freep(void *p);
void al_closep(int *fd);

/* Free / close automatically when the variable goes out of scope. */
#define al_autofree __attribute__((cleanup(al_freep)))
#define al_autoclose __attribute__((cleanup(al_closep)))

/* Move ownership out of an autofree/autoclose variable. */
#define al_steal_ptr(pp) al_steal_ptr_((void **)(pp))
void *al_steal_ptr_(void **pp);
int al_steal_fd(int *fd);

#define AL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* write(2) all of buf, retrying on EINTR and short writes. Returns 0 or -errno. */
int al_write_all(int fd, const void *buf, size_t len);
/* read(2) until len bytes or EOF. Returns bytes read (< len only at EOF) or -errno. */
ssize_t al_read_all(int fd, void *buf, size_t len);

/* Read a whole file (at most max bytes, else EFBIG) into a NUL-terminated
 * malloc'd buffer the caller frees. *len_out (may be NULL) gets the length. */
int al_read_file(const char *path, size_t max, char **out, size_t *len_out, al_error *err);
/* Write buf to path (O_CREAT|O_TRUNC|O_CLOEXEC|O_NOFOLLOW, mode). */
int al_write_file(const char *path, const void *buf, size_t len, int mode, al_error *err);

/* malloc'd sprintf; aborts on out-of-memory (there is nothing to unwind). */
char *al_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *al_xmalloc(size_t n);
void *al_xcalloc(size_t n, size_t size);
void *al_xrealloc(void *p, size_t n);
char *al_xstrdup(const char *s);

/* If the header line (n bytes, as libcurl hands it over, CRLF included)
 * is `name: DIGITS...` (name compared case-insensitively, RFC 9110 §5.1),
 * store the leading decimal value (at most 18 digits) in *out and return
 * true; else false. For Retry-After and the x-ratelimit-* headers. */
bool al_http_header_number(const char *line, size_t n, const char *name, long long *out);

/* Value of a hex digit (either case), or -1. */
int al_hex_digit(char c);

/* Wait up to timeout_ms for pid (a child of the caller) to exit, by event:
 * a pidfd (pidfd_open(2)) is readable once the process has exited, so a
 * child that stops at once is seen at once, not at the next tick of a poll
 * interval. Returns 1 once it has exited (it is not reaped: the caller
 * waits for it), 0 at the timeout. Without pidfds (ENOSYS before Linux
 * 5.3) it falls back to waitid(WNOWAIT) every millisecond. */
int al_wait_exited(pid_t pid, int timeout_ms);

/* Monotonic clock in milliseconds / nanoseconds. */
uint64_t al_now_ms(void);

/* The wall clock now, UTC, as RFC 3339 with milliseconds:
 * "2026-12-01T13:45:07.123Z" (24 bytes and NUL). The one timestamp of every
 * JSON-lines log (proxy, gateway, relay, serve). */
void al_time_iso_ms(char out[32]);
uint64_t al_now_ns(void);

/* Lower-case hex SHA-256 of buf into hex (65 bytes incl. NUL). */
void al_sha256_hex(const void *buf, size_t len, char hex[65]);

/* A random id of `bytes` random bytes as lower-case hex into out (2*bytes+1). */
int al_random_hex(char *out, size_t bytes, al_error *err);

/* Close every fd >= lowfd except those listed in keep[0..nkeep). Uses
 * close_range(2) where possible. Returns 0 or -errno. Async-signal-safe. */
int al_close_fds_from(int lowfd, const int *keep, size_t nkeep);

/* Set or clear O_CLOEXEC / O_NONBLOCK on fd. Returns 0 or -errno. */
int al_set_cloexec(int fd, bool on);
int al_set_nonblock(int fd, bool on);

/* The one number rule of airlock's inputs (every option, config and policy
 * number, and the numbers in sizes and durations): decimal digits, no sign,
 * no leading zero ("0" itself is fine), no spaces, no hex, at most
 * UINT64_MAX. Parses the digits at *s and moves *s past them; what follows
 * (a unit) is the caller's. Returns 0, or -1 with *s unchanged.
 * docs/cli.md, "Numbers". */
int al_parse_decimal(const char **s, uint64_t *out);

/* The code point of the UTF-8 sequence at p (n > 0 bytes left), its
 * length in *len; -1 (and *len = 1) for a malformed one (RFC 3629 §3: no
 * overlong form, no surrogate, at most U+10FFFF, no truncated sequence). */
long al_utf8_decode(const unsigned char *p, size_t n, size_t *len);

/* Cut the NUL-terminated s back to its longest prefix of whole UTF-8
 * sequences (RFC 3629 §3), in place: after a truncating snprintf of valid
 * UTF-8, what jansson and a terminal are given must not end mid-sequence.
 * A malformed sequence before the end stays; only the tail is cut. */
void al_utf8_cut(char *s);

/* Parse "2GiB", "512MiB", "100k", "4096" (bytes). Units: B, k/K/KiB, M/MiB, G/GiB, T/TiB
 * (powers of 1024; kB/MB/GB powers of 1000). Returns 0 or -1 with a reason in *why. */
int al_parse_size(const char *s, uint64_t *out, const char **why);
/* Parse "60m", "15m", "30s", "500ms", "1h", "1h30m" into milliseconds. */
int al_parse_duration_ms(const char *s, uint64_t *out, const char **why);

#endif
