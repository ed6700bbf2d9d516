#include "common/memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

int al_sealed_memfd(const char *name, size_t cap, unsigned extra_seals, al_error *err)
{
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return al_make_error(err, errno, "memfd_create %s", name);
  if (ftruncate(fd, (off_t)cap) < 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | (int)extra_seals) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, "size %s", name);
  }
  return fd;
}
