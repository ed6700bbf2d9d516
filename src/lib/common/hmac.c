/* A webhook's hex HMAC-SHA256 signature: see hmac.h. */
#include "common/hmac.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "common/util.h"

int al_hmac_sha256_hex_verify(const char *name, const char *shape, const void *key, size_t key_len,
                              const char *hex, const void *body, size_t len, al_error *err)
{
  if (!hex)
    return al_error_set(err, EACCES, "%s missing (every delivery is signed)", name);
  if (strlen(hex) != 64)
    return al_error_set(err, EACCES, "%s malformed (expected %s)", name, shape);
  unsigned char want[32];
  for (size_t i = 0; i < 32; i++) {
    int hi = al_hex_digit(hex[2 * i]), lo = al_hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return al_error_set(err, EACCES, "%s malformed (expected %s)", name, shape);
    want[i] = (unsigned char)(hi * 16 + lo);
  }
  if (key_len == 0 || key_len > 4096)
    return al_error_set(err, EACCES, "no usable webhook secret");
  unsigned char got[EVP_MAX_MD_SIZE];
  unsigned int got_len = 0;
  if (!HMAC(EVP_sha256(), key, (int)key_len, body, len, got, &got_len) || got_len != 32)
    return al_error_set(err, EIO, "HMAC-SHA256 failed");
  int diff = CRYPTO_memcmp(want, got, 32);
  OPENSSL_cleanse(got, sizeof got);
  if (diff != 0)
    return al_error_set(err, EACCES, "%s does not match the body", name);
  return 0;
}
