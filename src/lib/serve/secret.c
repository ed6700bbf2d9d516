/* The webhook secrets (GitHub's, Jira's, Linear's): read once at start
 * into a page of their own, locked (mlock(2)) and left out of core dumps
 * (madvise(2) MADV_DONTDUMP), wiped (OPENSSL_cleanse) at the end. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/internal.h"

#define SECRET_MAP 4097 /* 4096 bytes at most, and one to tell a longer file */

int serve_secret_load(const char *key, const char *path, struct serve_secret *out, al_error *err)
{
  out->b = NULL;
  out->len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return al_make_error(err, errno, "%s `%s`", key, path);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
    close(fd);
    return al_error_set(
        err, EPERM, "%s `%s`: must be a regular file of this user, mode 0600 or 0400", key, path);
  }
  void *m = mmap(NULL, SECRET_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    close(fd);
    return al_make_error(err, errno, "mmap");
  }
  out->b = m;
  (void)mlock(out->b, SECRET_MAP);
  (void)madvise(out->b, SECRET_MAP, MADV_DONTDUMP);
  ssize_t n = al_read_all(fd, out->b, SECRET_MAP);
  close(fd);
  if (n > 0 && out->b[n - 1] == '\n')
    n--;
  if (n > 0 && out->b[n - 1] == '\r')
    n--;
  if (n <= 0 || n > 4096) {
    serve_secret_wipe(out);
    return al_error_set(err, EINVAL, "%s `%s`: must hold 1 to 4096 bytes", key, path);
  }
  out->len = (size_t)n;
  return 0;
}

void serve_secret_wipe(struct serve_secret *sec)
{
  if (sec->b) {
    OPENSSL_cleanse(sec->b, SECRET_MAP);
    munmap(sec->b, SECRET_MAP);
  }
  sec->b = NULL;
  sec->len = 0;
}
