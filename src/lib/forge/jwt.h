/* The GitHub App's key and its JSON Web Token.
 *
 * Follows GitHub's "Generating a JSON Web Token (JWT) for a GitHub App":
 * RS256 (RFC 7518 §3.3), claims iat (60 s in the past, against clock
 * drift), exp (at most 10 minutes after iat) and iss (the app id or the
 * client id); compact serialisation per RFC 7519 §3 / RFC 7515 §7.1. */
#ifndef AL_BROKER_JWT_H
#define AL_BROKER_JWT_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <time.h>

#include "common/error.h"

/* Load the App's private key (PEM, RSA, at least 2048 bits, at most 64 KiB)
 * from a private file by common/secretfile.h's rule: a regular file (not a
 * symlink), owned by the effective uid, mode 0600 or stricter; an owner or
 * mode that breaks it is refused with EPERM before the key is read. The
 * file's bytes are wiped after parsing. On success *out is a new key the caller frees with
 * EVP_PKEY_free(). */
int al_app_key_load(const char *path, EVP_PKEY **out, al_error *err);

/* Build the app JWT for time `now` (seconds since the epoch):
 * header {"alg":"RS256","typ":"JWT"}, payload {"iat":now-60,"exp":now+540,
 * "iss":iss} with iss a JSON number when iss_numeric (an app id) or a
 * string (a client id). *out is malloc'd; the caller wipes and frees it. */
int al_app_jwt(EVP_PKEY *key, const char *iss, bool iss_numeric, time_t now, char **out,
               al_error *err);

/* base64url without padding (RFC 4648 §5), malloc'd. */
char *al_base64url(const unsigned char *buf, size_t len);

#endif
