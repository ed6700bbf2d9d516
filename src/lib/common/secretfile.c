#include "common/secretfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secmem.h"
#include "common/util.h"

bool al_secret_byte_printable(unsigned char c)
{
  return c > 0x20 && c < 0x7f;
}

int al_secret_file_read(const char *path, const char *what, size_t max,
                        bool (*ok_byte)(unsigned char), const char *shape, char **out,
                        size_t *out_len, al_error *err)
{
  *out = NULL;
  if (out_len)
    *out_len = 0;
  al_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0)
    return al_make_error(err, errno, "%s `%s`", what, path);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return al_make_error(err, errno, "%s `%s`", what, path);
  if (!S_ISREG(st.st_mode))
    return al_error_set(err, EINVAL, "%s `%s`: not a regular file", what, path);
  if (st.st_uid != geteuid())
    return al_error_set(err, EPERM, "%s `%s`: owned by uid %u, not by this user (uid %u)", what,
                        path, (unsigned)st.st_uid, (unsigned)geteuid());
  if (st.st_mode & 077)
    return al_error_set(err, EPERM,
                        "%s `%s`: mode %04o: readable or writable by group or others; it must be "
                        "mode 0600 or stricter (chmod 600)",
                        what, path, (unsigned)(st.st_mode & 07777));
  if (!shape)
    shape = "a value";
  char *buf = al_xmalloc(max + 2); /* one byte more than the limit, to see a longer file */
  ssize_t n = al_read_all(fd, buf, max + 1);
  int rc = 0;
  if (n < 0) {
    rc = al_make_error(err, (int)-n, "reading the %s `%s`", what, path);
    goto out;
  }
  size_t a = 0, b = (size_t)n;
  if (ok_byte) {
    while (a < b && isspace((unsigned char)buf[a]))
      a++;
    while (b > a && isspace((unsigned char)buf[b - 1]))
      b--;
  } else {
    if (b > 0 && buf[b - 1] == '\n')
      b--;
    if (b > 0 && buf[b - 1] == '\r')
      b--;
  }
  bool ok = b > a && (size_t)n <= max;
  for (size_t i = a; ok && ok_byte && i < b; i++)
    ok = ok_byte((unsigned char)buf[i]);
  if (!ok) {
    rc = al_error_set(err, EINVAL, "%s `%s`: expected %s, 1 to %zu bytes", what, path, shape, max);
    goto out;
  }
  *out = al_secret_dupn(buf + a, b - a);
  if (!*out) {
    rc = al_make_error(err, errno ? errno : ENOMEM, "secret memory for the %s", what);
    goto out;
  }
  if (out_len)
    *out_len = b - a;
out:
  explicit_bzero(buf, max + 2);
  free(buf);
  return rc;
}
