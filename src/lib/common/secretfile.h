/* The one reader of a secret kept in a file (a token, a key, a webhook
 * secret): every `*_file` / `*.key` setting that names one goes through it,
 * so one rule decides what a private file is.
 *
 * The rule: opened with O_NOFOLLOW | O_NOCTTY (a symlink is refused by
 * open(2) with ELOOP), a regular file, owned by the effective uid, no bit
 * for group or others (mode 0600 or 0400), 1..max bytes of value. The
 * bytes read pass through one heap buffer that is wiped before it is
 * freed; the value is returned in secret memory (secmem.h). */
#ifndef AL_COMMON_SECRETFILE_H
#define AL_COMMON_SECRETFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

/* Read the secret in `path`. `what` names the setting in every message
 * ("relay.key_file", "private key"); the value itself never appears in one.
 *
 * ok_byte NULL: the value is the file's bytes with one trailing "\n" (or
 * "\r\n") dropped, any bytes (a webhook secret, a PEM key). ok_byte set:
 * surrounding whitespace is dropped and each byte of the rest must pass
 * ok_byte (al_secret_byte_printable: a token of printable ASCII without
 * spaces); `shape` then says what it must hold ("one token of
 * [A-Za-z0-9_]"), for the message.
 *
 * On success *out is the value in secret memory, NUL-terminated (free with
 * al_secret_free), *out_len its length (out_len may be NULL). Errors (-1,
 * *out NULL): open(2)'s errno ("WHAT `PATH`: No such file..."); EINVAL
 * "not a regular file"; EPERM "owned by uid X, not by this user (uid U)"
 * or "mode M: readable or writable by group or others; it must be mode
 * 0600 or stricter (chmod 600)"; EINVAL "expected SHAPE, 1 to MAX bytes"
 * for an empty, longer or ill-shaped value; ENOMEM when secret memory
 * cannot be had. */
int al_secret_file_read(const char *path, const char *what, size_t max,
                        bool (*ok_byte)(unsigned char), const char *shape, char **out,
                        size_t *out_len, al_error *err);

/* A byte of printable ASCII other than space (0x21..0x7e). */
bool al_secret_byte_printable(unsigned char c);

#endif
