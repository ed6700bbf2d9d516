/* The one sealed, fixed-size memfd (memfd_create(2), fcntl(2) F_ADD_SEALS):
 * what airlock hands a child to write a bounded stream into (the proxy's
 * decisions, the agent's stdout, the relay's calls) or shares as one page
 * (the run's egress counter). */
#ifndef AL_COMMON_MEMFD_H
#define AL_COMMON_MEMFD_H

#include <stddef.h>

#include "common/error.h"

/* A memfd named `name` (MFD_CLOEXEC), sized to cap bytes and sealed
 * against growing and shrinking (F_SEAL_GROW | F_SEAL_SHRINK, plus
 * extra_seals, e.g. F_SEAL_SEAL): a chatty writer cannot fill the host's
 * memory, writes past the cap fail, and the shared file offset tells the
 * reader afterwards how much was written. Returns the fd (the caller owns
 * it), or -1 with err: "memfd_create NAME" or "size NAME" and the errno. */
int al_sealed_memfd(const char *name, size_t cap, unsigned extra_seals, al_error *err);

#endif
