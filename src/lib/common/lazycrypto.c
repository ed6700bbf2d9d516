/* See lazycrypto.h. */
#include "common/lazycrypto.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* The prototypes come from OpenSSL's own header, so a signature change
 * there is a compile error here. */
static __typeof__(&EVP_Digest) p_digest;
static __typeof__(&EVP_sha256) p_sha256;
static __typeof__(&EVP_EncodeBlock) p_encode;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
  /* RTLD_NOLOAD first: a binary linked with libcrypto has it already */
  void *h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h)
    h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    fprintf(stderr, "airlock: cannot load libcrypto.so.3 (OpenSSL 3): %s\n", why ? why : "?");
    abort();
  }
  p_digest = (__typeof__(&EVP_Digest))dlsym(h, "EVP_Digest");
  p_sha256 = (__typeof__(&EVP_sha256))dlsym(h, "EVP_sha256");
  p_encode = (__typeof__(&EVP_EncodeBlock))dlsym(h, "EVP_EncodeBlock");
  if (!p_digest || !p_sha256 || !p_encode) {
    fprintf(stderr, "airlock: libcrypto.so.3 lacks EVP_Digest, EVP_sha256 or EVP_EncodeBlock\n");
    abort();
  }
  /* h stays open for the life of the process (the pointers above use it) */
  // cppcheck-suppress resourceLeak ; the library stays loaded until exit, on purpose
}

void al_lazy_sha256(const void *buf, size_t len, unsigned char md[32])
{
  pthread_once(&g_once, load);
  unsigned int mdlen = 0;
  if (!p_digest(buf, len, md, &mdlen, p_sha256(), NULL) || mdlen != 32) {
    fprintf(stderr, "airlock: EVP_Digest(SHA-256) failed\n");
    abort();
  }
}

int al_lazy_base64(char *out, const void *in, size_t n)
{
  pthread_once(&g_once, load);
  return p_encode((unsigned char *)out, (const unsigned char *)in, (int)n);
}
