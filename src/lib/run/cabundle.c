/* The sandbox's CA bundle (cabundle.h). */
#include "run/cabundle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

static const char *const system_bundles[] = {
    "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"};

static void append(char **buf, size_t *len, const char *s, size_t n)
{
  *buf = al_xrealloc(*buf, *len + n + 2);
  memcpy(*buf + *len, s, n);
  *len += n;
  if (n && s[n - 1] != '\n')
    (*buf)[(*len)++] = '\n';
  (*buf)[*len] = '\0';
}

static bool has_cert(const char *s)
{
  return strstr(s, "-----BEGIN CERTIFICATE-----") != NULL;
}

char *al_ca_bundle_text(const char *const *files, const char *const *pems, size_t *len,
                        al_error *err)
{
  char *buf = al_xstrdup("");
  *len = 0;
  for (size_t i = 0; i < AL_ARRAY_SIZE(system_bundles); i++) {
    char *text = NULL;
    size_t n = 0;
    al_error e = {0};
    if (access(system_bundles[i], R_OK) == 0 &&
        al_read_file(system_bundles[i], 16u << 20, &text, &n, &e) == 0) {
      append(&buf, len, text, n);
      free(text);
      break;
    }
  }
  for (const char *const *f = files; f && *f; f++) {
    char *text = NULL;
    size_t n = 0;
    if (al_read_file(*f, 1u << 20, &text, &n, err) < 0) {
      free(buf);
      al_error_wrap(err, "CA file `%s`", *f);
      return NULL;
    }
    if (!has_cert(text)) {
      free(text);
      free(buf);
      al_make_error(err, EINVAL, "CA file `%s`: no PEM certificate in it", *f);
      return NULL;
    }
    append(&buf, len, text, n);
    free(text);
  }
  for (const char *const *p = pems; p && *p; p++) {
    if (!has_cert(*p) || strlen(*p) > (1u << 20)) {
      free(buf);
      al_make_error(err, EINVAL, "a run CA: not one PEM certificate");
      return NULL;
    }
    append(&buf, len, *p, strlen(*p));
  }
  return buf;
}

int al_ca_bundle_write(const char *const *files, const char *const *pems, char *path, size_t len,
                       al_error *err)
{
  path[0] = '\0';
  size_t n = 0;
  al_autofree char *text = al_ca_bundle_text(files, pems, &n, err);
  if (!text)
    return -1;
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/airlock-ca.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return al_make_error(err, errno, "mkdtemp `%s`", dir);
  /* the sandbox user reads it through the bind: traversable, not writable */
  if (chmod(dir, 0755) < 0) {
    int e = errno;
    rmdir(dir);
    return al_make_error(err, e, "chmod `%s`", dir);
  }
  snprintf(path, len, "%s/ca-bundle.pem", dir);
  if (al_write_file(path, text, n, 0644, err) < 0) {
    rmdir(dir);
    path[0] = '\0';
    return al_error_wrap(err, "the sandbox's CA bundle");
  }
  return 0;
}

void al_ca_bundle_remove(const char *path)
{
  if (!path || !path[0])
    return;
  unlink(path);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    rmdir(dir);
  }
}
