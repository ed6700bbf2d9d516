#include "forge/jwt.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secmem.h"
#include "common/secretfile.h"
#include "common/util.h"

int al_app_key_load(const char *path, EVP_PKEY **out, al_error *err)
{
  char *buf = NULL;
  size_t len = 0;
  if (al_secret_file_read(path, "private key", 64 * 1024, NULL, "a PEM private key", &buf, &len,
                          err) < 0)
    return -1;
  BIO *bio = BIO_new_mem_buf(buf, (int)len);
  EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"") : NULL;
  BIO_free(bio);
  al_secret_free(buf);
  if (!key)
    return al_error_set(err, EINVAL, "private key `%s`: not a PEM private key", path);
  if (!EVP_PKEY_is_a(key, "RSA") || EVP_PKEY_get_bits(key) < 2048) {
    EVP_PKEY_free(key);
    return al_error_set(err, EINVAL, "private key `%s`: not an RSA key of at least 2048 bits",
                        path);
  }
  *out = key;
  return 0;
}

char *al_base64url(const unsigned char *buf, size_t len)
{
  char *out = al_xmalloc(4 * ((len + 2) / 3) + 1);
  int n = EVP_EncodeBlock((unsigned char *)out, buf, (int)len);
  while (n > 0 && out[n - 1] == '=')
    n--;
  out[n] = '\0';
  for (int i = 0; i < n; i++) {
    if (out[i] == '+')
      out[i] = '-';
    else if (out[i] == '/')
      out[i] = '_';
  }
  return out;
}

int al_app_jwt(EVP_PKEY *key, const char *iss, bool iss_numeric, time_t now, char **out,
               al_error *err)
{
  static const char header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
  al_autofree char *payload =
      iss_numeric ? al_strdup_printf("{\"iat\":%lld,\"exp\":%lld,\"iss\":%s}", (long long)now - 60,
                                     (long long)now + 540, iss)
                  : al_strdup_printf("{\"iat\":%lld,\"exp\":%lld,\"iss\":\"%s\"}",
                                     (long long)now - 60, (long long)now + 540, iss);
  al_autofree char *h64 = al_base64url((const unsigned char *)header, sizeof header - 1);
  al_autofree char *p64 = al_base64url((const unsigned char *)payload, strlen(payload));
  al_autofree char *signing_input = al_strdup_printf("%s.%s", h64, p64);

  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx)
    return al_make_error(err, ENOMEM, "JWT: EVP_MD_CTX_new");
  size_t siglen = 0;
  unsigned char *sig = NULL;
  int ok = EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
           EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)signing_input,
                          strlen(signing_input)) == 1;
  if (ok) {
    sig = al_xmalloc(siglen);
    ok = EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)signing_input,
                        strlen(signing_input)) == 1;
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    free(sig);
    return al_error_set(err, EINVAL, "JWT: RS256 signing failed");
  }
  al_autofree char *s64 = al_base64url(sig, siglen);
  free(sig);
  *out = al_strdup_printf("%s.%s", signing_input, s64);
  return 0;
}
