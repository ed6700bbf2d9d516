/* The one check of a webhook signature written as hex: HMAC-SHA256
 * (RFC 2104, FIPS 180-4) of the raw body, compared in constant time
 * (OpenSSL's HMAC(3ossl) and CRYPTO_memcmp(3ossl)). Used by GitHub's
 * X-Hub-Signature-256 (forge/github_hook.c), Jira's X-Hub-Signature and
 * Linear-Signature (serve/webhook_jira.c, webhook_linear.c). Pure. */
#ifndef AL_COMMON_HMAC_H
#define AL_COMMON_HMAC_H

#include <stddef.h>

#include "common/error.h"

/* Check hex (the header's value after any prefix the caller took off:
 * exactly 64 hex digits, either case; NULL when the header is absent)
 * against HMAC-SHA256(key, body[0..len)). name is the header's, shape its
 * expected form ("sha256=<64 hex>"), both for messages. In this order:
 * -1 with err (EACCES) "NAME missing (every delivery is signed)", "NAME
 * malformed (expected SHAPE)", "no usable webhook secret" (key_len 0 or
 * over 4096), (EIO) "HMAC-SHA256 failed", (EACCES) "NAME does not match
 * the body"; 0 when it matches. The computed MAC is cleansed. */
int al_hmac_sha256_hex_verify(const char *name, const char *shape, const void *key, size_t key_len,
                              const char *hex, const void *body, size_t len, al_error *err);

#endif
