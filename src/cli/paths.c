#include "paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int al_cli_self_dir(char *out, size_t outlen)
{
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash)
    return -1;
  *slash = '\0';
  snprintf(out, outlen, "%s", self);
  return 0;
}

/* The prefix an installed binary runs from: its directory without the
 * trailing bindir ("/opt/x/usr/local/bin" -> "/opt/x/usr/local"), so a
 * tree installed with --destdir or moved as a whole finds its data. */
static int self_prefix(char *out, size_t outlen)
{
  char self[PATH_MAX];
  if (al_cli_self_dir(self, sizeof self) < 0)
    return -1;
  size_t sl = strlen(self), bl = strlen(AIRLOCK_REL_BINDIR);
  if (AIRLOCK_REL_BINDIR[0] == '/' || sl <= bl + 1 || self[sl - bl - 1] != '/' ||
      strcmp(self + sl - bl, AIRLOCK_REL_BINDIR) != 0)
    return -1;
  snprintf(out, outlen, "%.*s", (int)(sl - bl - 1), self);
  return 0;
}

static int try(const char *dir, const char *rel, char *out, size_t outlen)
{
  if (!dir || !dir[0])
    return -1;
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  if (access(p, R_OK) != 0)
    return -1;
  if (!realpath(p, out))
    return -1;
  (void)outlen;
  return 0;
}

int al_cli_find_data(const char *rel, char *out, size_t outlen)
{
  if (try(getenv("AIRLOCK_DATA_DIR"), rel, out, outlen) == 0)
    return 0;
  /* build tree first when running from it, then the install location */
  char self[PATH_MAX];
  if (al_cli_self_dir(self, sizeof self) == 0 &&
      strncmp(self, AIRLOCK_BUILD_ROOT, strlen(AIRLOCK_BUILD_ROOT)) == 0) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/examples", AIRLOCK_SOURCE_ROOT);
    if (try(p, rel, out, outlen) == 0 || try(AIRLOCK_SOURCE_ROOT, rel, out, outlen) == 0)
      return 0;
  }
  char pre[PATH_MAX], p2[PATH_MAX + 64];
  if (self_prefix(pre, sizeof pre) == 0) {
    snprintf(p2, sizeof p2, "%s/%s", pre, AIRLOCK_REL_DATADIR);
    if (try(p2, rel, out, outlen) == 0)
      return 0;
  }
  if (try(AIRLOCK_DATADIR, rel, out, outlen) == 0)
    return 0;
  errno = ENOENT;
  return -1;
}

int al_cli_find_libexec(const char *name, char *out, size_t outlen)
{
  if (try(getenv("AIRLOCK_LIBEXEC_DIR"), name, out, outlen) == 0)
    return 0;
  char self[PATH_MAX];
  if (al_cli_self_dir(self, sizeof self) == 0) {
    if (try(self, name, out, outlen) == 0)
      return 0;
    if (strncmp(self, AIRLOCK_BUILD_ROOT, strlen(AIRLOCK_BUILD_ROOT)) == 0) {
      char p[PATH_MAX];
      snprintf(p, sizeof p, "%s/tests/forge-emulator", AIRLOCK_BUILD_ROOT);
      if (try(p, name, out, outlen) == 0)
        return 0;
      /* the Jira and Linear doubles (`airlock demo --ticket`): build tree only */
      snprintf(p, sizeof p, "%s/tests/integration", AIRLOCK_BUILD_ROOT);
      if (try(p, name, out, outlen) == 0)
        return 0;
      /* the GitLab test forge (`airlock demo --forge gitlab`): build tree only */
      snprintf(p, sizeof p, "%s/tests/gitlab-forge", AIRLOCK_BUILD_ROOT);
      if (try(p, name, out, outlen) == 0)
        return 0;
    }
  }
  char pre[PATH_MAX], p2[PATH_MAX + 64];
  if (self_prefix(pre, sizeof pre) == 0) {
    snprintf(p2, sizeof p2, "%s/%s", pre, AIRLOCK_REL_LIBEXECDIR);
    if (try(p2, name, out, outlen) == 0)
      return 0;
  }
  if (try(AIRLOCK_LIBEXECDIR, name, out, outlen) == 0)
    return 0;
  errno = ENOENT;
  return -1;
}

int al_cli_exec_net(int argc, char **argv, const char *why)
{
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 16);
  if (n <= 0) {
    fprintf(stderr, "airlock: cannot find my own binary: %s\n", strerror(errno));
    return 125;
  }
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  snprintf(slash + 1, sizeof self - (size_t)(slash + 1 - self), "airlock-net");
  char **nargv = calloc((size_t)argc + 2, sizeof(char *));
  if (!nargv) {
    fprintf(stderr, "airlock: out of memory\n");
    return 125;
  }
  nargv[0] = self;
  for (int i = 0; i < argc; i++)
    nargv[i + 1] = argv[i];
  execv(self, nargv);
  fprintf(stderr, "airlock: %s needs `%s`: %s\n", why, self, strerror(errno));
  free(nargv);
  return 127;
}
