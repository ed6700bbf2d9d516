/* Memory for secrets (installation tokens): its own mmap'd pages, locked
 * with mlock(2) where the limit allows, excluded from core dumps with
 * madvise(MADV_DONTDUMP), wiped with OPENSSL_cleanse before it is unmapped. */
#ifndef AL_BROKER_SECMEM_H
#define AL_BROKER_SECMEM_H

#include <stddef.h>

/* Copy the first len bytes of s into secret memory, NUL-terminated. Returns
 * NULL when mmap fails (errno set). Free with al_secret_free(). */
char *al_secret_dupn(const char *s, size_t len);
/* Wipe and unmap memory from al_secret_dupn(); NULL is a no-op. */
void al_secret_free(char *p);
/* Wipe a NUL-terminated buffer in place (e.g. a jansson string that held a
 * token, a received line). NULL is a no-op. */
void al_wipe_str(char *s);

#endif
