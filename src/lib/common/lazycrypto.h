/* libcrypto (OpenSSL 3) for the core binary, loaded on first use.
 *
 * The core binary (`airlock run`, the sandbox and the proxy) needs only
 * SHA-256 and base64 from libcrypto, and most runs need neither; linking it
 * costs every start ~1.3 ms of CPU in the dynamic loader (16,900
 * relocations, bench/README.md). These wrappers dlopen(3) libcrypto.so.3
 * the first time one is called (thread-safe, pthread_once) and call
 * OpenSSL's own EVP_Digest(EVP_sha256()) and EVP_EncodeBlock
 * (EVP_DigestInit(3ossl), EVP_EncodeInit(3ossl)). A process that already
 * has libcrypto loaded (airlock-net, the tests) gets the same copy. */
#ifndef AL_COMMON_LAZYCRYPTO_H
#define AL_COMMON_LAZYCRYPTO_H

#include <stddef.h>

/* SHA-256 of buf[0..len) into md. Aborts with a message when libcrypto
 * cannot be loaded (it is a hard dependency of airlock: see
 * scripts/install-deps.sh); never fails otherwise. */
void al_lazy_sha256(const void *buf, size_t len, unsigned char md[32]);

/* Base64 (RFC 4648 §4, with '=' padding) of in[0..n) into out, which must
 * hold 4 * ((n + 2) / 3) + 1 bytes; NUL-terminated. Returns the length
 * written (without the NUL). n must be at most INT_MAX / 2. Aborts like
 * al_lazy_sha256. */
int al_lazy_base64(char *out, const void *in, size_t n);

#endif
