/* The one base64 alphabet table, and the one lenient decoder (RFC 4648 §4 alphabet) for what a
 * forge API sends wrapped in lines (GitHub's contents and blobs APIs wrap at 60 characters). Strict
 * checks of a credential or a signature are elsewhere (gateway/rules.c, serve/webhook_gitlab.c).
 * Pure. */
#ifndef AL_COMMON_BASE64_H
#define AL_COMMON_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* The 6-bit value of one base64 character: RFC 4648 §4's alphabet
 * (`+` 62, `/` 63), and with url_too §5's URL-safe one as well (`-` 62,
 * `_` 63). Returns 0..63, or -1 for any other byte ('=' included). */
int al_base64_value(unsigned char c, bool url_too);

/* Decode in[0..n): characters outside the alphabet (line breaks, spaces)
 * are skipped, the first '=' ends the data. Returns a malloc'd buffer the
 * caller frees, NUL-terminated after the *outlen decoded bytes (which may
 * hold NULs); never NULL (al_xmalloc). The caller compares *outlen with
 * the size the forge stated when it states one. */
char *al_base64_decode_lines(const char *in, size_t n, size_t *outlen);

#endif
