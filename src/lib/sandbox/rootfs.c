/* The sandbox's filesystem: a tmpfs root holding read-only binds of the
 * host's system directories (or of a dedicated rootfs), tmpfs /workspace and
 * /tmp with size caps, a fresh /proc with dangerous files masked, and a
 * minimal /dev. Then pivot_root(2) into it and detach the old root.
 *
 * Runs in the child between clone and exec, with every capability of the new
 * user namespace; any failure reports the step and dies (bubblewrap style). */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#include <dirent.h>

#include "common/util.h"
#include "sandbox/internal.h"

/* The new root is assembled on a private scratch tmpfs: we mount it on /tmp
 * and pivot into it at once, so the host's root (with its own /tmp, which
 * the scratch mount would otherwise hide) stays reachable at /oldroot while
 * we bind from it (bubblewrap's approach). Nothing here is visible to the
 * host: the mount namespace is private. */
#define BASE "/tmp"
#define HOST "/oldroot"
#define NEWROOT "/newroot"

static int g_sync = -1;

#define DIE(...) sb_die(g_sync, 125, errno, __VA_ARGS__)

static void xmount(const char *src, const char *dst, const char *type, unsigned long flags,
                   const char *data)
{
  if (mount(src, dst, type, flags, data) < 0)
    DIE("mount %s on `%s`", type ? type : (src ? src : "(remount)"), dst);
}

/* Make the mount at dst (and all below) read-only, nosuid, nodev. Uses
 * mount_setattr(2) (Linux 5.12) so submounts are covered too; falls back to
 * a remount of the top mount. */
static void make_ro(const char *dst, bool noexec)
{
  struct mount_attr attr = {0};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (noexec)
    attr.attr_set |= MOUNT_ATTR_NOEXEC;
  if (syscall(SYS_mount_setattr, AT_FDCWD, dst, AT_RECURSIVE, &attr, sizeof attr) == 0)
    return;
  if (errno != ENOSYS && errno != EINVAL)
    DIE("mount_setattr read-only `%s`", dst);
  unsigned long fl = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV;
  if (noexec)
    fl |= MS_NOEXEC;
  xmount(NULL, dst, NULL, fl, NULL);
}

static void bind_ro(const char *src, const char *dst, bool noexec)
{
  xmount(src, dst, NULL, MS_BIND | MS_REC, NULL);
  make_ro(dst, noexec);
}

static void mkdir_p(const char *path, mode_t mode)
{
  /* Usually the parent exists: one mkdir(2), not one per component. */
  if (mkdir(path, mode) == 0 || errno == EEXIST)
    return;
  if (errno != ENOENT)
    DIE("mkdir `%s`", path);
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    DIE("path too long `%s`", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, mode) < 0 && errno != EEXIST)
        DIE("mkdir `%s`", buf);
      *p = '/';
    }
  }
  if (mkdir(buf, mode) < 0 && errno != EEXIST)
    DIE("mkdir `%s`", buf);
}

static void touch(const char *path)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    DIE("create `%s`", path);
  close(fd);
}

static void write_text(const char *path, const char *text)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 || al_write_all(fd, text, strlen(text)) < 0)
    DIE("write `%s`", path);
  close(fd);
}

/* Bind host path `src` at newroot path `dst` read-only, creating a mount
 * point of the right kind; copies symlinks as symlinks. Missing sources are
 * skipped when optional. (Copying the small /etc files into the root tmpfs
 * instead was measured and did not pay: bench/README.md.) */
static void bind_host_entry(const char *src, const char *dst, bool optional)
{
  struct stat st;
  if (lstat(src, &st) < 0) {
    if (optional && errno == ENOENT)
      return;
    DIE("stat `%s`", src);
  }
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlink(src, target, sizeof target - 1);
    if (n < 0)
      DIE("readlink `%s`", src);
    target[n] = '\0';
    if (symlink(target, dst) < 0 && errno != EEXIST)
      DIE("symlink `%s`", dst);
    return;
  }
  if (S_ISDIR(st.st_mode))
    mkdir_p(dst, 0755);
  else
    touch(dst);
  bind_ro(src, dst, false);
}

static char *nr(const char *path)
{
  static char bufs[4][4096];
  static int i;
  char *b = bufs[i++ & 3];
  snprintf(b, sizeof bufs[0], NEWROOT "%s", path);
  return b;
}

/* A host path, as seen from the scratch root. */
static char *hp(const char *path)
{
  static char bufs[4][4096];
  static int i;
  char *b = bufs[i++ & 3];
  snprintf(b, sizeof bufs[0], HOST "%s", path);
  return b;
}

static void setup_host_view(uint32_t uid, const char *hosts)
{
  /* /usr and the merged-usr links (or real directories on older hosts). */
  bind_host_entry(hp("/usr"), nr("/usr"), false);
  static const char *const top[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(top); i++)
    bind_host_entry(hp(top[i]), nr(top[i]), true);

  /* /etc: only what programs need to run, resolve users and verify TLS. */
  mkdir_p(nr("/etc"), 0755);
  static const char *const etc[] = {
      "/etc/ld.so.cache",  "/etc/ld.so.conf",      "/etc/ld.so.conf.d",
      "/etc/ssl",          "/etc/ca-certificates", "/etc/ca-certificates.conf",
      "/etc/alternatives", "/etc/nsswitch.conf",   "/etc/localtime",
      "/etc/mime.types",   "/etc/protocols",       "/etc/services",
      "/etc/gitconfig",    "/etc/bash.bashrc",     "/etc/profile",
      "/etc/inputrc",      "/etc/environment",     "/etc/login.defs",
      "/etc/python3",      "/etc/python3.11"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(etc); i++)
    bind_host_entry(hp(etc[i]), nr(etc[i]), true);

  char buf[512];
  snprintf(buf, sizeof buf,
           "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
           "airlock:x:%u:%u:airlock sandbox user:/tmp/home:/bin/sh\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
           uid, uid);
  write_text(nr("/etc/passwd"), buf);
  snprintf(buf, sizeof buf, "root:x:0:\nairlock:x:%u:\nnogroup:x:65534:\n", uid);
  write_text(nr("/etc/group"), buf);
  static const char local[] = "127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost\n";
  if (!hosts || !hosts[0]) {
    write_text(nr("/etc/hosts"), local);
  } else { /* the transparent path's names (al_sandbox_opts.hosts); no malloc here */
    int fd = open(nr("/etc/hosts"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      DIE("create /etc/hosts");
    if (al_write_all(fd, local, sizeof local - 1) < 0 || al_write_all(fd, hosts, strlen(hosts)) < 0)
      DIE("write /etc/hosts");
    close(fd);
  }
  write_text(nr("/etc/hostname"), "airlock\n");
}

/* Where filesystem.root's detached tree is attached while its entries are
 * bound from it (on the scratch root, detached before the pivot). */
#define ROOTSRC "/rootsrc"

static void setup_rootfs_dir(struct sb_hostpath *rootfs)
{
  char root[4096];
  if (rootfs->fd >= 0) {
    if (mkdir(ROOTSRC, 0755) < 0)
      DIE("mkdir " ROOTSRC);
    if (syscall(SYS_move_mount, rootfs->fd, "", AT_FDCWD, ROOTSRC, MOVE_MOUNT_F_EMPTY_PATH) < 0)
      DIE("attach filesystem.root `%s`", rootfs->path);
    sb_hostpaths_close_one(rootfs);
    snprintf(root, sizeof root, "%s", ROOTSRC);
  } else {
    snprintf(root, sizeof root, HOST "%s", rootfs->path);
  }
  DIR *d = opendir(root);
  if (!d)
    DIE("open rootfs `%s`", root);
  struct dirent *e;
  static const char *const skip[] = {".",   "..",        "proc", "dev",  "sys", "tmp",
                                     "run", "workspace", "home", "root", "mnt", "media"};
  while ((e = readdir(d)) != NULL) {
    bool s = false;
    for (size_t i = 0; i < AL_ARRAY_SIZE(skip); i++)
      if (strcmp(e->d_name, skip[i]) == 0)
        s = true;
    if (s)
      continue;
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/%s", root, e->d_name);
    snprintf(dst, sizeof dst, NEWROOT "/%s", e->d_name);
    bind_host_entry(src, dst, true);
  }
  closedir(d);
  if (strcmp(root, ROOTSRC) == 0 && umount2(ROOTSRC, MNT_DETACH) < 0)
    DIE("detach " ROOTSRC);
}

static void setup_proc(void)
{
  mkdir_p(nr("/proc"), 0555);
  xmount("proc", nr("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  /* Read-only: the kernel's writable knobs. */
  static const char *const ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus",
                                   "/proc/fs"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(ro); i++) {
    struct stat st;
    if (lstat(nr(ro[i]), &st) < 0)
      continue;
    bind_ro(nr(ro[i]), nr(ro[i]), true);
  }
  /* Masked: files that reveal kernel memory, keys or timing of the host. */
  static const char *const mask_files[] = {
      "/proc/kcore",         "/proc/keys",        "/proc/key-users",
      "/proc/timer_list",    "/proc/sched_debug", "/proc/kallsyms",
      "/proc/latency_stats", "/proc/kmsg",        "/proc/config.gz"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(mask_files); i++) {
    struct stat st;
    if (lstat(nr(mask_files[i]), &st) < 0)
      continue;
    xmount(hp("/dev/null"), nr(mask_files[i]), NULL, MS_BIND, NULL);
  }
  static const char *const mask_dirs[] = {"/proc/acpi", "/proc/scsi", "/proc/asound",
                                          "/proc/driver"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(mask_dirs); i++) {
    struct stat st;
    if (lstat(nr(mask_dirs[i]), &st) < 0 || !S_ISDIR(st.st_mode))
      continue;
    xmount("tmpfs", nr(mask_dirs[i]), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
           "size=0,mode=0555");
  }
}

static void setup_dev(void)
{
  mkdir_p(nr("/dev"), 0755);
  xmount("tmpfs", nr("/dev"), "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755");
  static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(nodes); i++) {
    char dev[64];
    snprintf(dev, sizeof dev, "/dev/%s", nodes[i]);
    touch(nr(dev));
    xmount(hp(dev), nr(dev), NULL, MS_BIND, NULL);
  }
  mkdir_p(nr("/dev/pts"), 0755);
  xmount("devpts", nr("/dev/pts"), "devpts", MS_NOSUID | MS_NOEXEC,
         "newinstance,ptmxmode=0666,mode=0620");
  if (symlink("pts/ptmx", nr("/dev/ptmx")) < 0)
    DIE("symlink /dev/ptmx");
  mkdir_p(nr("/dev/shm"), 01777);
  xmount("tmpfs", nr("/dev/shm"), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64m,mode=1777");
  static const char *const links[][2] = {{"/proc/self/fd", "/dev/fd"},
                                         {"/proc/self/fd/0", "/dev/stdin"},
                                         {"/proc/self/fd/1", "/dev/stdout"},
                                         {"/proc/self/fd/2", "/dev/stderr"}};
  for (size_t i = 0; i < AL_ARRAY_SIZE(links); i++)
    if (symlink(links[i][0], nr(links[i][1])) < 0)
      DIE("symlink `%s`", links[i][1]);
}

static void setup_rw(const al_policy *policy, uint32_t uid)
{
  char opts[128];
  mkdir_p(nr("/workspace"), 0755);
  snprintf(opts, sizeof opts, "size=%llu,mode=0755,uid=%u,gid=%u",
           (unsigned long long)policy->filesystem.workspace_size, uid, uid);
  xmount("tmpfs", nr("/workspace"), "tmpfs", MS_NOSUID | MS_NODEV, opts);
  mkdir_p(nr("/tmp"), 01777);
  snprintf(opts, sizeof opts, "size=%llu,mode=1777",
           (unsigned long long)policy->filesystem.tmp_size);
  xmount("tmpfs", nr("/tmp"), "tmpfs", MS_NOSUID | MS_NODEV, opts);
  mkdir_p(nr("/tmp/home"), 0700);
  if (chown(nr("/tmp/home"), uid, uid) < 0)
    DIE("chown /tmp/home");
}

/* One read-only path at the same place in the new root: the supervisor's
 * detached copy of it when there is one (hostpaths.c: the host path is
 * never resolved here, where the sandbox's uid may not traverse it), else
 * a bind of the path. */
static void bind_ro_path(struct sb_hostpath *h)
{
  const char *p = h->path;
  bool dir = h->dir;
  if (h->fd < 0) {
    struct stat st;
    if (stat(hp(p), &st) < 0)
      DIE("read-only path `%s`", p);
    dir = S_ISDIR(st.st_mode);
  }
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", nr(p));
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) {
    *slash = '\0';
    mkdir_p(parent, 0755);
  }
  if (dir)
    mkdir_p(nr(p), 0755);
  else
    touch(nr(p));
  if (h->fd < 0) {
    bind_ro(hp(p), nr(p), false);
    return;
  }
  if (syscall(SYS_move_mount, h->fd, "", AT_FDCWD, nr(p), MOVE_MOUNT_F_EMPTY_PATH) < 0)
    DIE("attach read-only path `%s`", p);
  sb_hostpaths_close_one(h);
  /* already private and read-only (hostpaths.c); said again in this
   * namespace, as for every other mount here */
  xmount(NULL, nr(p), NULL, MS_REC | MS_PRIVATE, NULL);
  make_ro(nr(p), false);
}

/* The supervisor's read-only files (the CA bundle), on the root tmpfs,
 * which is made read-only after the pivot. Paths were checked by
 * al_sandbox_start (AL_SANDBOX_FILES_DIR + a plain name); /run is neither
 * in the host view nor taken from a rootfs directory, so the directory is
 * ours in both. */
static void write_files(const al_sandbox_file *files, size_t n)
{
  if (n == 0)
    return;
  mkdir_p(nr("/run/airlock"), 0755);
  for (size_t i = 0; i < n; i++) {
    int fd = open(nr(files[i].path), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0 || al_write_all(fd, files[i].data, files[i].len) < 0)
      DIE("write `%s`", files[i].path);
    close(fd);
  }
}

void sb_setup_rootfs(int sync_fd, const al_policy *policy, struct sb_hostpaths *hpaths,
                     const al_sandbox_file *files, size_t n_files, uint32_t uid, const char *hosts)
{
  g_sync = sync_fd;
  /* Nothing we mount may propagate back to the host. */
  xmount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
  /* A private scratch tmpfs to assemble the root in; pivot into it with
   * the host's root kept at /oldroot. */
  xmount("tmpfs", BASE, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755");
  if (mkdir(BASE HOST, 0755) < 0 || mkdir(BASE NEWROOT, 0755) < 0)
    DIE("mkdir scratch directories");
  if (syscall(SYS_pivot_root, BASE, BASE HOST) < 0)
    DIE("pivot_root into the scratch root");
  if (chdir("/") < 0)
    DIE("chdir /");
  xmount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755");

  if (policy->filesystem.root)
    setup_rootfs_dir(&hpaths->root);
  else
    setup_host_view(uid, hosts);
  setup_proc();
  setup_dev();
  setup_rw(policy, uid);
  write_files(files, n_files);
  /* After the writable mounts, so a path under /tmp is not hidden by them. */
  for (size_t i = 0; i < hpaths->n_ro; i++)
    bind_ro_path(&hpaths->ro[i]);
  /* The host's root is not needed any more. */
  if (umount2(HOST, MNT_DETACH) < 0)
    DIE("detach the host's root");

  /* pivot_root(".", ".") then detach the old root: the old root is stacked
   * under the new one and lazily unmounted, so no path leads back to the
   * host (see pivot_root(2), "new_root and put_old may be the same"). */
  if (chdir(NEWROOT) < 0)
    DIE("chdir new root");
  if (syscall(SYS_pivot_root, ".", ".") < 0)
    DIE("pivot_root");
  if (umount2(".", MNT_DETACH) < 0)
    DIE("detach old root");
  if (chdir("/") < 0)
    DIE("chdir /");
  /* The root tmpfs itself becomes read-only; /workspace, /tmp, /dev/shm and
   * /dev/pts keep their own (writable) mounts. */
  xmount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
  if (chdir("/workspace") < 0)
    DIE("chdir /workspace");
}
