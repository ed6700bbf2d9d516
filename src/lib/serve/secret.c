/* The webhook secrets (GitHub's, Jira's, Linear's): read once at start by
 * the one reader of a secret kept in a file (common/secretfile.h: a
 * regular file of this user, mode 0600 or 0400, 1 to 4096 bytes, one
 * trailing newline dropped) into secret memory (locked, out of core
 * dumps), wiped at the end. */
#include "common/secmem.h"
#include "common/secretfile.h"
#include "serve/internal.h"

#define SECRET_MAX 4096

int serve_secret_load(const char *key, const char *path, struct serve_secret *out, al_error *err)
{
  char *v = NULL;
  out->b = NULL;
  out->len = 0;
  if (al_secret_file_read(path, key, SECRET_MAX, NULL, "the webhook's secret", &v, &out->len, err) <
      0)
    return -1;
  out->b = (unsigned char *)v;
  return 0;
}

void serve_secret_wipe(struct serve_secret *sec)
{
  al_secret_free((char *)sec->b);
  sec->b = NULL;
  sec->len = 0;
}
