/* fs.etc-curated (docs/probes.md, group "filesystem"): the sandbox's /etc
 * holds only the curated entries of docs/sandbox.md "Filesystem" step 3
 * (copied or bound from the host) and the four airlock writes, none of
 * them writable, on a read-only, size-capped root tmpfs; the host's
 * secrets (shadow, SSH host keys, sudoers, TLS private keys) are neither
 * there nor readable. Only lstat, opendir, open(O_RDONLY), faccessat and
 * statfs: nothing is written. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/internal.h"
#include "probe/probes.h"

/* rootfs.c setup_host_view's list, plus what it writes itself. */
static const char *const curated[] = {"ld.so.cache",  "ld.so.conf",      "ld.so.conf.d",
                                      "ssl",          "ca-certificates", "ca-certificates.conf",
                                      "alternatives", "nsswitch.conf",   "localtime",
                                      "mime.types",   "protocols",       "services",
                                      "gitconfig",    "bash.bashrc",     "profile",
                                      "inputrc",      "environment",     "login.defs",
                                      "python3",      "python3.11",      "passwd",
                                      "group",        "hosts",           "hostname"};

/* Files whose content would be a host secret (readable = escaped). */
static const char *const secrets[] = {"/etc/shadow",
                                      "/etc/gshadow",
                                      "/etc/sudoers",
                                      "/etc/ssh/ssh_host_ed25519_key",
                                      "/etc/ssh/ssh_host_ecdsa_key",
                                      "/etc/ssh/ssh_host_rsa_key",
                                      "/etc/ssl/private",
                                      "/etc/machine-id"};

#define ROOT_CAP (16ull << 20) /* the root tmpfs is 4 MiB; anything near a disk is not it */

static void add(char *buf, size_t cap, const char *s)
{
  size_t l = strlen(buf);
  if (l + 2 < cap)
    snprintf(buf + l, cap - l, "%s%s", l ? "," : "", s);
}

PR_DECL(pr_fs_etc_curated)
{
  char bad[400] = "";
  size_t n_bad = 0;

  /* 1. host secrets: readable (a file opened, a directory listed) escapes.
   * The docker backend's /etc is the agent image's: only this check, and
   * its machine-id is the image's own. */
  for (size_t i = 0; i < AL_ARRAY_SIZE(secrets); i++) {
    if (ctx->docker && strcmp(secrets[i], "/etc/machine-id") == 0)
      continue;
    int fd = open(secrets[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd >= 0) {
      close(fd);
      n_bad++;
      add(bad, sizeof bad, secrets[i]);
    }
  }
  if (n_bad) {
    pr_escaped(r, "host secrets readable: %s", bad);
    return;
  }
  if (ctx->docker) {
    pr_blocked(r, "the agent image's /etc: no secret readable (shadow, SSH host keys, sudoers, "
                  "ssl/private)");
    return;
  }

  struct stat st_root, st_etc;
  if (stat("/", &st_root) < 0 || stat("/etc", &st_etc) < 0) {
    pr_inconclusive(r, "stat / or /etc: %s", pr_errname(errno));
    return;
  }
  /* With filesystem.root: PATH, /etc is the rootfs's own (a bind): only
   * the secret check above applies. */
  bool host_view = st_root.st_dev == st_etc.st_dev;

  /* 2. the entries of /etc: the curated set only; none writable */
  DIR *d = opendir("/etc");
  if (!d) {
    pr_inconclusive(r, "opendir /etc: %s", pr_errname(errno));
    return;
  }
  size_t n_entries = 0, n_writable = 0;
  char writable[200] = "";
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    n_entries++;
    bool known = false;
    for (size_t i = 0; i < AL_ARRAY_SIZE(curated) && !known; i++)
      known = strcmp(e->d_name, curated[i]) == 0;
    if (!known && host_view) {
      n_bad++;
      add(bad, sizeof bad, e->d_name);
    }
    /* W_OK as the kernel would judge a write: a read-only mount answers
     * EROFS, Landlock EACCES (never opened for writing) */
    if (faccessat(dirfd(d), e->d_name, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0) {
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode)) {
        n_writable++;
        add(writable, sizeof writable, e->d_name);
      }
    }
  }
  closedir(d);
  if (n_bad || n_writable) {
    pr_escaped(r, "/etc holds %zu entries outside the curated set (%s); %zu writable (%s)", n_bad,
               bad, n_writable, writable);
    return;
  }

  /* 3. the root: a read-only tmpfs of a few MiB */
  struct statvfs vfs;
  struct statfs fs;
  if (statvfs("/etc", &vfs) < 0 || statfs("/", &fs) < 0) {
    pr_inconclusive(r, "statvfs: %s", pr_errname(errno));
    return;
  }
  if (!(vfs.f_flag & ST_RDONLY)) {
    pr_escaped(r, "/etc is on a writable mount");
    return;
  }
  unsigned long long size = (unsigned long long)fs.f_blocks * (unsigned long long)fs.f_bsize;
  if ((unsigned long)fs.f_type != TMPFS_MAGIC || size > ROOT_CAP) {
    pr_escaped(r, "/ is not a small tmpfs (type 0x%lx, %llu bytes)", (unsigned long)fs.f_type,
               size);
    return;
  }
  pr_blocked(r, "%zu entries, all curated, none writable; / is a read-only %llu KiB tmpfs%s",
             n_entries, size >> 10, host_view ? "" : " (a rootfs's /etc: secrets only)");
}
