#include "common/secmem.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The mapping starts with its total size; the secret follows at +16. */
#define HDR 16

char *al_secret_dupn(const char *s, size_t len)
{
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t total = (HDR + len + 1 + page - 1) / page * page;
  char *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  (void)mlock(base, total); /* best effort: RLIMIT_MEMLOCK may be small */
#ifdef MADV_DONTDUMP
  (void)madvise(base, total, MADV_DONTDUMP);
#endif
#ifdef MADV_WIPEONFORK
  /* A forked child (the supervisor forks the egress proxy) sees zeros here:
   * secrets never cross fork(2) by accident. Linux 4.14. */
  (void)madvise(base, total, MADV_WIPEONFORK);
#endif
  memcpy(base, &total, sizeof total);
  memcpy(base + HDR, s, len);
  base[HDR + len] = '\0';
  return base + HDR;
}

void al_secret_free(char *p)
{
  if (!p)
    return;
  char *base = p - HDR;
  size_t total;
  memcpy(&total, base, sizeof total);
  if (total == 0)
    return; /* a forked child's wiped copy: nothing to free here */
  explicit_bzero(base, total);
  munlock(base, total);
  munmap(base, total);
}

void al_wipe_str(char *s)
{
  if (s)
    explicit_bzero(s, strlen(s));
}
