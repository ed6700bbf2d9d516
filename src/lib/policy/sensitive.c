/* What a policy may not hand the sandbox without saying so (issue 27):
 * host trees that hold service sockets, other users' files or the
 * invoker's credentials, as filesystem.ro_paths; and variables that look
 * like secrets, as process.env_pass. A read-only bind does not stop
 * connect(2) on a Unix socket under it (unix(7): connecting needs write
 * permission on the socket file, which a read-only mount does not take
 * away), so a directory holding one opens a door to a host service.
 *
 * The tables below are the catalogue; schema.c applies them to ro_paths
 * and env_pass, and the explicit overrides (filesystem.sensitive_ro_paths,
 * process.secret_env) skip them, with a warning on every run. */
#include "policy/sensitive.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* Trees refused at, under or above them. */
static const struct {
  const char *path;
  const char *why;
} trees[] = {
    {"/run", "runtime state and service sockets (docker, containerd, D-Bus, systemd)"},
    {"/var/run", "runtime state and service sockets (docker, containerd, D-Bus, systemd)"},
    {"/proc", "the host's processes and kernel knobs (the sandbox has its own /proc)"},
    {"/sys", "the host's devices and kernel knobs"},
    {"/dev", "the host's devices (the sandbox has its own /dev)"},
    {"/boot", "the host's kernels and boot secrets"},
    {"/etc", "the host's configuration and keys (the sandbox gets a curated /etc)"},
    {"/var/lib/docker", "the Docker engine's state (every container's files)"},
    {"/var/lib/containerd", "containerd's state (every container's files)"},
    {"/var/lib/kubelet", "the kubelet's state (pod secrets and service-account tokens)"},
    {"/var/lib/sss", "the SSSD caches and their sockets"},
    {"/var/log", "the host's logs"},
    {"/tmp/.X11-unix", "the X server's sockets"},
};

/* Under a home directory: what holds the user's credentials. */
static const char *const home_secrets[] = {
    ".ssh",
    ".gnupg",
    ".aws",
    ".kube",
    ".docker",
    ".config/gh",
    ".config/gcloud",
    ".azure",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".password-store",
    ".config/hub",
    ".local/share/keyrings",
};

#define SOCKET_WALK_MAX_ENTRIES 20000
#define SOCKET_WALK_MAX_DEPTH 24

/* Is a at or under b (both normalized absolute paths)? */
static bool under(const char *a, const char *b)
{
  size_t l = strlen(b);
  if (l == 1 && b[0] == '/')
    return true;
  return strncmp(a, b, l) == 0 && (a[l] == '\0' || a[l] == '/');
}

/* The home directory p is in or at, as "/root", "/home" or "/home/NAME",
 * or the invoker's $HOME: written into out (size n); false when none. */
static bool home_of(const char *p, char *out, size_t n)
{
  const char *home = getenv("HOME");
  if (home && home[0] == '/' && strcmp(home, "/") != 0 && under(p, home)) {
    snprintf(out, n, "%s", home);
    return true;
  }
  if (under(p, "/root")) {
    snprintf(out, n, "/root");
    return true;
  }
  if (strncmp(p, "/home/", 6) == 0 && p[6]) {
    size_t l = strcspn(p + 6, "/");
    snprintf(out, n, "/home/%.*s", (int)l, p + 6);
    return true;
  }
  return false;
}

/* Is some home directory (or its credential files) at or under p? */
static bool holds_home(const char *p, const char **what)
{
  static const char *const homes[] = {"/root", "/home"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(homes); i++)
    if (under(homes[i], p)) {
      *what = homes[i];
      return true;
    }
  const char *home = getenv("HOME");
  if (home && home[0] == '/' && strcmp(home, "/") != 0 && under(home, p)) {
    *what = home;
    return true;
  }
  return false;
}

/* The table's verdict on one spelling of the path. */
static bool table_refuses(const char *p, char *why, size_t n)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(trees); i++) {
    const char *t = trees[i].path;
    if (strcmp(p, t) == 0) {
      snprintf(why, n, "`%s` is a sensitive tree (%s)", p, trees[i].why);
      return true;
    }
    if (under(p, t) || under(t, p)) {
      snprintf(why, n, "`%s` %s %s (%s)", p, under(p, t) ? "is under" : "holds", t, trees[i].why);
      return true;
    }
  }
  const char *what = NULL;
  if (holds_home(p, &what)) {
    snprintf(why, n, "`%s` is or holds the home directory %s (every file of a user)", p, what);
    return true;
  }
  char home[PATH_MAX];
  if (home_of(p, home, sizeof home)) {
    if (strcmp(p, home) == 0) {
      snprintf(why, n, "`%s` is a home directory (every file of a user)", p);
      return true;
    }
    for (size_t i = 0; i < AL_ARRAY_SIZE(home_secrets); i++) {
      char s[PATH_MAX + 64];
      snprintf(s, sizeof s, "%s/%s", home, home_secrets[i]);
      if (under(p, s) || under(s, p)) {
        snprintf(why, n, "`%s` is or holds %s (credentials)", p, s);
        return true;
      }
    }
  }
  return false;
}

/* A Unix socket at or under dir (fd open on it), depth and entries
 * bounded; written into found. 1 found, 0 none, -1 the bound was hit. */
static int find_socket(int fd, const char *path, int depth, size_t *budget, char *found, size_t n)
{
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return 0; /* unreadable: the sandbox's uid cannot list it either */
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if ((*budget)-- == 0) {
      rc = -1;
      break;
    }
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", strcmp(path, "/") == 0 ? "" : path, e->d_name);
    if (S_ISSOCK(st.st_mode)) {
      snprintf(found, n, "%s", sub);
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      if (depth >= SOCKET_WALK_MAX_DEPTH) {
        rc = -1;
        break;
      }
      int sfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sfd >= 0)
        rc = find_socket(sfd, sub, depth + 1, budget, found, n);
    }
  }
  closedir(d);
  return rc;
}

bool al_policy_ro_path_sensitive(const char *path, char *why, size_t n)
{
  if (table_refuses(path, why, n))
    return true;
  /* what the path is on this host: a symlink to a sensitive tree is one */
  char real[PATH_MAX];
  if (!realpath(path, real))
    return false; /* absent here: the sandbox refuses it at the start */
  if (strcmp(real, path) != 0 && table_refuses(real, why, n)) {
    size_t l = strlen(why);
    snprintf(why + l, n > l ? n - l : 0, " (`%s` resolves to it)", path);
    return true;
  }
  struct stat st;
  if (stat(real, &st) < 0)
    return false;
  if (S_ISSOCK(st.st_mode)) {
    snprintf(why, n, "`%s` is a Unix socket (a read-only bind does not stop connect(2))", path);
    return true;
  }
  if (!S_ISDIR(st.st_mode))
    return false;
  int fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return false;
  size_t budget = SOCKET_WALK_MAX_ENTRIES;
  char found[PATH_MAX];
  int r = find_socket(fd, real, 0, &budget, found, sizeof found);
  if (r > 0) {
    snprintf(why, n,
             "`%s` holds the Unix socket %s (a read-only bind does not stop connect(2): the "
             "sandbox could talk to the service behind it)",
             path, found);
    return true;
  }
  if (r < 0) {
    snprintf(why, n,
             "`%s` is too large to check for Unix sockets (more than %d entries or %d levels); "
             "bind a narrower path",
             path, SOCKET_WALK_MAX_ENTRIES, SOCKET_WALK_MAX_DEPTH);
    return true;
  }
  return false;
}

bool al_policy_env_secret_like(const char *name)
{
  static const char *const parts[] = {"TOKEN",  "SECRET",     "KEY",     "PASSWORD",
                                      "PASSWD", "CREDENTIAL", "PRIVATE", "COOKIE"};
  static const char *const prefixes[] = {"AWS_",   "GH_",     "GITHUB_",    "GITLAB_", "GOOGLE_",
                                         "AZURE_", "OPENAI_", "ANTHROPIC_", "NPM_",    "VAULT_"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(prefixes); i++)
    if (strncasecmp(name, prefixes[i], strlen(prefixes[i])) == 0)
      return true;
  for (size_t i = 0; i < AL_ARRAY_SIZE(parts); i++)
    if (strcasestr(name, parts[i]))
      return true;
  return false;
}

const char *al_policy_env_secret_rule(void)
{
  return "looks like a secret (*TOKEN*, *SECRET*, *KEY*, *PASSWORD*, AWS_*, GH_*, GITHUB_*, ...): "
         "whatever runs in the sandbox holds its value";
}
