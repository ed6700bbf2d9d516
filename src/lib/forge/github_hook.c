/* The GitHub driver's webhook check (forge/forge.h webhook_verify): pure,
 * no HTTP, so the service's fuzzed webhook parser links it alone. */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "common/util.h"
#include "forge/forge.h"

/* "Validating webhook deliveries": X-Hub-Signature-256 = "sha256=" + hex
 * HMAC-SHA256 of the raw body with the webhook secret, compared in
 * constant time. */
int al_github_webhook_verify(const void *secret, size_t secret_len, const char *header,
                             const void *body, size_t len, al_error *err)
{
  if (!header)
    return al_error_set(err, EACCES, "X-Hub-Signature-256 missing (every delivery is signed)");
  if (strncmp(header, "sha256=", 7) != 0 || strlen(header) != 7 + 64)
    return al_error_set(err, EACCES, "X-Hub-Signature-256 malformed (expected sha256=<64 hex>)");
  unsigned char want[32];
  for (size_t i = 0; i < 32; i++) {
    int hi = al_hex_digit(header[7 + 2 * i]), lo = al_hex_digit(header[8 + 2 * i]);
    if (hi < 0 || lo < 0)
      return al_error_set(err, EACCES, "X-Hub-Signature-256 malformed (expected sha256=<64 hex>)");
    want[i] = (unsigned char)(hi * 16 + lo);
  }
  if (secret_len == 0 || secret_len > 4096)
    return al_error_set(err, EACCES, "no usable webhook secret");
  unsigned char got[EVP_MAX_MD_SIZE];
  unsigned int got_len = 0;
  if (!HMAC(EVP_sha256(), secret, (int)secret_len, body, len, got, &got_len) || got_len != 32)
    return al_error_set(err, EIO, "HMAC-SHA256 failed");
  int diff = CRYPTO_memcmp(want, got, 32);
  OPENSSL_cleanse(got, sizeof got);
  if (diff != 0)
    return al_error_set(err, EACCES, "X-Hub-Signature-256 does not match the body");
  return 0;
}
