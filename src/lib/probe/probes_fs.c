/* Filesystem probes (docs/probes.md, group "filesystem"). Writes are
 * zero-byte O_EXCL creations removed at once; kernel tunables are only
 * opened for writing, never written. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/internal.h"
#include "probe/probes.h"

static void write_probe(const pr_ctx *ctx, pr_result *r, const char *dir)
{
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/.airlock-probe-%s", strcmp(dir, "/") ? dir : "", ctx->nonce);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    pr_blocked(r, "create %s: %s", path, pr_errname(errno));
    return;
  }
  close(fd);
  unlink(path);
  pr_escaped(r, "created (and removed) %s", path);
}

PR_DECL(pr_fs_write_root)
{
  write_probe(ctx, r, "/");
}

PR_DECL(pr_fs_write_etc)
{
  write_probe(ctx, r, "/etc");
}

PR_DECL(pr_fs_write_usr)
{
  write_probe(ctx, r, "/usr");
}

PR_DECL(pr_fs_write_var_tmp)
{
  write_probe(ctx, r, "/var/tmp");
}

PR_DECL(pr_fs_write_home)
{
  write_probe(ctx, r, ctx->host_home);
}

/* The host's /dev/shm: the outer process put a canary file there. */
PR_DECL(pr_fs_host_shm)
{
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/dev/shm/airlock-probe-%s", ctx->nonce);
  struct stat st;
  if (lstat(path, &st) == 0)
    pr_escaped(r, "the host's /dev/shm canary is visible (%s)", path);
  else
    pr_blocked(r, "the host's /dev/shm canary is absent (%s): /dev/shm is private",
               pr_errname(errno));
}

PR_DECL(pr_fs_host_tmp_canary)
{
  char path[PATH_MAX + 8];
  snprintf(path, sizeof path, "%s/secret", ctx->canary_dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    pr_blocked(r, "host canary file %s: %s", path, pr_errname(errno));
    return;
  }
  close(fd);
  pr_escaped(r, "read the host canary file %s", path);
}

static void home_probe(const pr_ctx *ctx, pr_result *r, const char *rel)
{
  char path[PATH_MAX * 2];
  if (rel[0] == '/')
    snprintf(path, sizeof path, "%s", rel);
  else
    snprintf(path, sizeof path, "%s/%s", ctx->host_home, rel);
  struct stat st;
  if (lstat(path, &st) < 0) {
    pr_blocked(r, "%s: %s", path, pr_errname(errno));
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) {
      pr_blocked(r, "%s exists but cannot be listed: %s", path, pr_errname(errno));
      return;
    }
    closedir(d);
    pr_escaped(r, "listed %s", path);
    return;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    pr_blocked(r, "%s exists but: %s", path, pr_errname(errno));
    return;
  }
  char b[1];
  ssize_t n = read(fd, b, 1);
  close(fd);
  pr_escaped(r, "read %s (%zd bytes)", path, n);
}

PR_DECL(pr_fs_read_ssh)
{
  home_probe(ctx, r, ".ssh");
}
PR_DECL(pr_fs_read_aws)
{
  home_probe(ctx, r, ".aws");
}
PR_DECL(pr_fs_read_kube)
{
  home_probe(ctx, r, ".kube/config");
}
PR_DECL(pr_fs_read_gh)
{
  home_probe(ctx, r, ".config/gh");
}
PR_DECL(pr_fs_read_git_credentials)
{
  home_probe(ctx, r, ".git-credentials");
}
PR_DECL(pr_fs_read_netrc)
{
  home_probe(ctx, r, ".netrc");
}
PR_DECL(pr_fs_read_docker_config)
{
  home_probe(ctx, r, ".docker/config.json");
}
PR_DECL(pr_fs_read_run_secrets)
{
  struct stat st;
  if (lstat("/run/secrets", &st) == 0 || lstat("/var/run/secrets", &st) == 0)
    home_probe(ctx, r, lstat("/run/secrets", &st) == 0 ? "/run/secrets" : "/var/run/secrets");
  else if (lstat("/run", &st) == 0)
    pr_escaped(r, "no /run/secrets, but the host's /run is visible (secrets mounts land there)");
  else
    pr_blocked(r, "/run: %s (nothing of /run/secrets is reachable)", pr_errname(errno));
}

PR_DECL(pr_fs_container_sockets)
{
  (void)ctx;
  static const char *const socks[] = {"/var/run/docker.sock", "/run/docker.sock",
                                      "/run/containerd/containerd.sock", "/run/podman/podman.sock",
                                      "/run/crio/crio.sock"};
  struct stat st;
  for (size_t i = 0; i < AL_ARRAY_SIZE(socks); i++)
    if (lstat(socks[i], &st) == 0) {
      pr_escaped(r, "%s exists", socks[i]);
      return;
    }
  bool run = lstat("/run", &st) == 0, varrun = lstat("/var/run", &st) == 0;
  if (run || varrun)
    pr_escaped(r, "no engine socket, but the host's %s is visible", run ? "/run" : "/var/run");
  else
    pr_blocked(r, "/run and /var/run are absent: no engine socket can be reached");
}

/* Does PATH exist as a directory with at least one entry besides . and ..? */
static bool dir_has_entries(const char *path)
{
  DIR *d = opendir(path);
  if (!d)
    return false;
  bool any = false;
  struct dirent *e;
  while (!any && (e = readdir(d)) != NULL)
    any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return any;
}

/* fs.ro-path-sockets: every Unix socket under every ro_path, connected
 * to. A read-only bind does not stop connect(2) (unix(7): it needs write
 * permission on the socket file, not on the mount), so the policy refuses
 * such a directory unless filesystem.sensitive_ro_paths overrides it; this
 * is the check on what was actually bound. Bounded walk, symlinks not
 * followed. */
#define RO_SOCK_MAX_ENTRIES 20000
#define RO_SOCK_MAX_DEPTH 24

struct ro_sock_walk {
  size_t budget;
  int found, connected;
  char first[PATH_MAX];
  int first_errno;
  bool bounded;
};

static void ro_sock_try(struct ro_sock_walk *w, const char *path)
{
  w->found++;
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sun.sun_path) {
    if (!w->first[0]) {
      snprintf(w->first, sizeof w->first, "%s", path);
      w->first_errno = ENAMETOOLONG;
    }
    return;
  }
  memcpy(sun.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int e = 0;
  if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
    e = errno;
    if (e == EPROTOTYPE) { /* a datagram socket: connect that way */
      if (fd >= 0)
        close(fd);
      fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      e = fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof sun) < 0 ? errno : 0;
    }
  }
  if (fd >= 0)
    close(fd);
  if (e == 0 && !w->connected++)
    snprintf(w->first, sizeof w->first, "%s", path);
  else if (e && !w->connected && !w->first[0]) {
    snprintf(w->first, sizeof w->first, "%s", path);
    w->first_errno = e;
  }
}

static void ro_sock_walk(struct ro_sock_walk *w, const char *dir, int depth)
{
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (w->budget == 0) {
      w->bounded = true;
      break;
    }
    w->budget--;
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, e->d_name) >=
        (int)sizeof p)
      continue;
    struct stat st;
    if (lstat(p, &st) < 0)
      continue;
    if (S_ISSOCK(st.st_mode))
      ro_sock_try(w, p);
    else if (S_ISDIR(st.st_mode) && depth < RO_SOCK_MAX_DEPTH)
      ro_sock_walk(w, p, depth + 1);
    else if (S_ISDIR(st.st_mode))
      w->bounded = true;
  }
  closedir(d);
}

PR_DECL(pr_fs_ro_path_sockets)
{
  struct ro_sock_walk w = {.budget = RO_SOCK_MAX_ENTRIES};
  struct stat st;
  for (size_t i = 0; i < ctx->n_ro_paths; i++) {
    if (lstat(ctx->ro_paths[i], &st) < 0)
      continue;
    if (S_ISSOCK(st.st_mode))
      ro_sock_try(&w, ctx->ro_paths[i]);
    else if (S_ISDIR(st.st_mode))
      ro_sock_walk(&w, ctx->ro_paths[i], 0);
  }
  /* the host's canary socket: absent inside; reached outside (control) */
  if (ctx->canary_sock[0] && lstat(ctx->canary_sock, &st) == 0 && S_ISSOCK(st.st_mode))
    ro_sock_try(&w, ctx->canary_sock);
  if (w.connected) {
    pr_escaped(r, "connected to %s (%d of %d socket(s) under the ro_paths answered)", w.first,
               w.connected, w.found);
    return;
  }
  if (w.found) {
    pr_blocked(r, "%d socket(s) under the ro_paths, none answered (first: %s: %s)%s", w.found,
               w.first, pr_errname(w.first_errno), w.bounded ? "; the walk was bounded" : "");
    return;
  }
  pr_blocked(r, "no Unix socket under %zu ro_path(s)%s", ctx->n_ro_paths,
             w.bounded ? " (the walk was bounded)" : "");
}

/* Does text name path as a whole path (at the start of a field or of an
 * option value, ending with the path or a component)? "/root" is named
 * in "... /root/x ..." but not in "/srv/root/x". */
static bool names_path(const char *text, const char *path)
{
  size_t pl = strlen(path);
  for (const char *h = strstr(text, path); h; h = strstr(h + 1, path)) {
    bool start = h == text || strchr(" =,:", h[-1]);
    bool end = h[pl] == '\0' || h[pl] == '/' || h[pl] == ' ' || h[pl] == ',' || h[pl] == '\n';
    if (start && end)
      return true;
  }
  return false;
}

/* Is the mount point mp one airlock made on purpose at the host path's
 * own place: an ro_path of the policy (or below one), or the probe's own
 * binary? Such a line names a host path because it was asked for. */
static bool asked_for(const pr_ctx *ctx, const char *mp, const char *self)
{
  if (self[0] && strcmp(mp, self) == 0)
    return true;
  for (size_t i = 0; i < ctx->n_ro_paths; i++) {
    size_t l = strlen(ctx->ro_paths[i]);
    if (strncmp(mp, ctx->ro_paths[i], l) == 0 && (mp[l] == '\0' || mp[l] == '/'))
      return true;
  }
  return false;
}

PR_DECL(pr_fs_mountinfo)
{
  al_autofree char *buf = NULL;
  al_error e = {0};
  if (al_read_file("/proc/self/mountinfo", 1u << 20, &buf, NULL, &e) < 0) {
    pr_blocked(r, "/proc/self/mountinfo: %s", pr_errname(e.code));
    return;
  }
  char self[PATH_MAX] = "";
  ssize_t sn = ctx->unconfined ? -1 : readlink("/proc/self/exe", self, sizeof self - 1);
  self[sn > 0 ? sn : 0] = '\0';
  /* the home or the canary directory named on a line airlock did not
   * make on purpose (field 5 of each line is the mount point, proc(5)) */
  for (char *l = buf; l && *l;) {
    char *nl = strchr(l, '\n');
    char mp[PATH_MAX];
    size_t ll = nl ? (size_t)(nl - l) : strlen(l);
    char line[8192];
    snprintf(line, sizeof line, "%.*s", (int)(ll < sizeof line ? ll : sizeof line - 1), l);
    if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || !asked_for(ctx, mp, self)) {
      if (ctx->host_home[0] && strcmp(ctx->host_home, "/") != 0 &&
          names_path(line, ctx->host_home)) {
        pr_escaped(r, "mountinfo names the invoker's home %s", ctx->host_home);
        return;
      }
      if (ctx->canary_dir[0] && names_path(line, ctx->canary_dir)) {
        pr_escaped(r, "mountinfo names the host directory %s", ctx->canary_dir);
        return;
      }
    }
    l = nl ? nl + 1 : NULL;
  }
  /* field 5 of each line is the mount point (proc(5)) */
  static const char *const host[] = {"/home", "/root", "/run", "/var", "/boot", "/sys"};
  for (char *l = buf; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl)
      *nl = '\0';
    char mp[PATH_MAX];
    if (sscanf(l, "%*s %*s %*s %*s %4095s", mp) == 1)
      for (size_t i = 0; i < AL_ARRAY_SIZE(host); i++) {
        size_t hl = strlen(host[i]);
        /* What counts is what can be read there: a mount point that is
         * shadowed by a later mount (gone from view) or an empty directory
         * (an empty tmpfs masking it) shows nothing of the host. */
        if (strncmp(mp, host[i], hl) == 0 && (mp[hl] == '\0' || mp[hl] == '/') &&
            dir_has_entries(mp)) {
          pr_escaped(r, "mountinfo shows the host mount %s, and it has entries", mp);
          return;
        }
      }
    l = nl ? nl + 1 : NULL;
  }
  pr_blocked(r, "mountinfo names no host home or canary path, and no /run, /var, /sys... mount "
                "with entries in view");
}

static void open_w_probe(pr_result *r, const char *path)
{
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    pr_blocked(r, "open %s for writing: %s", path, pr_errname(errno));
    return;
  }
  close(fd); /* opened, never written */
  pr_escaped(r, "%s opened for writing (nothing written)", path);
}

PR_DECL(pr_fs_core_pattern)
{
  (void)ctx;
  open_w_probe(r, "/proc/sys/kernel/core_pattern");
}
/* Kernel tunables: modprobe_path first, then sysctls that exist on every
 * kernel (a kernel without modules has no modprobe). Opened, never
 * written. */
PR_DECL(pr_fs_sysctl_write)
{
  (void)ctx;
  static const char *const paths[] = {"/proc/sys/kernel/modprobe", "/proc/sys/kernel/panic",
                                      "/proc/sys/vm/drop_caches", "/proc/sys/kernel/hostname"};
  int last = ENOENT;
  for (size_t i = 0; i < AL_ARRAY_SIZE(paths); i++) {
    int fd = open(paths[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
      close(fd);
      pr_escaped(r, "%s opened for writing (nothing written)", paths[i]);
      return;
    }
    if (errno != ENOENT)
      last = errno;
  }
  pr_blocked(r, "modprobe, panic, drop_caches, hostname not writable: %s", pr_errname(last));
}

/* /proc files that the sandbox masks: sysrq-trigger (write), and the
 * kernel-address and keyring leaks (read). */
PR_DECL(pr_fs_proc_sensitive)
{
  (void)ctx;
  int fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    pr_escaped(r, "/proc/sysrq-trigger opened for writing (nothing written)");
    return;
  }
  int wr = errno;
  static const char *const leaks[] = {"/proc/kallsyms", "/proc/timer_list", "/proc/keys",
                                      "/proc/sched_debug", "/proc/kcore"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(leaks); i++) {
    fd = open(leaks[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    char b[64];
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    if (n > 0) {
      pr_escaped(r, "%s is readable (%zd bytes)", leaks[i], n);
      return;
    }
  }
  pr_blocked(r, "sysrq-trigger: %s; kallsyms, timer_list, keys, sched_debug, kcore empty or absent",
             pr_errname(wr));
}

PR_DECL(pr_fs_release_agent)
{
  (void)ctx;
  static const char *const paths[] = {
      "/sys/fs/cgroup/memory/release_agent", "/sys/fs/cgroup/pids/release_agent",
      "/sys/fs/cgroup/cpu/release_agent", "/sys/fs/cgroup/systemd/release_agent",
      "/sys/fs/cgroup/release_agent"};
  int last = ENOENT;
  for (size_t i = 0; i < AL_ARRAY_SIZE(paths); i++) {
    int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      pr_escaped(r, "%s opened for writing (nothing written)", paths[i]);
      return;
    }
    if (errno != ENOENT)
      last = errno;
  }
  pr_blocked(r, "no cgroup v1 release_agent writable: %s", pr_errname(last));
}

static int binfmt_child(void *arg)
{
  (void)arg;
  /* Mount only in a private mount namespace: the positive control must
   * not touch the host's mounts. */
  int ue = 0;
  bool private_ns = unshare(CLONE_NEWNS) == 0 || (ue = errno, false);
  if (private_ns && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    private_ns = false;
  if (access("/proc/sys/fs/binfmt_misc/register", F_OK) != 0) {
    if (!private_ns)
      return -(ue ? ue : EPERM);
    if (mount("binfmt_misc", "/proc/sys/fs/binfmt_misc", "binfmt_misc", 0, NULL) < 0)
      return -errno;
  }
  int fd = open("/proc/sys/fs/binfmt_misc/register", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  close(fd);
  return 0;
}

PR_DECL(pr_fs_binfmt_misc)
{
  (void)ctx;
  int rc = pr_in_child(binfmt_child, NULL, 2000);
  if (rc == 0)
    pr_escaped(r, "binfmt_misc register opened for writing (nothing written)");
  else if (rc <= -128)
    pr_blocked(r, "killed by signal %d", -rc - 128);
  else
    pr_blocked(r, "binfmt_misc register: %s", pr_errname(-rc));
}

PR_DECL(pr_fs_mknod)
{
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/.airlock-probe-mem-%s", ctx->tmp_path, ctx->nonce);
  if (mknod(path, S_IFCHR | 0600, makedev(1, 1)) < 0) { /* /dev/mem */
    pr_blocked(r, "mknod c 1 1: %s", pr_errname(errno));
    return;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  int e = errno;
  unlink(path);
  if (fd >= 0) {
    close(fd);
    pr_escaped(r, "made and opened a /dev/mem node");
  } else {
    pr_escaped(r, "made a /dev/mem node (open: %s)", pr_errname(e));
  }
}

PR_DECL(pr_fs_dev_nodes)
{
  (void)ctx;
  DIR *d = opendir("/dev");
  if (!d) {
    pr_blocked(r, "/dev: %s", pr_errname(errno));
    return;
  }
  struct dirent *de;
  char found[128] = "";
  while ((de = readdir(d))) {
    char p[300];
    snprintf(p, sizeof p, "/dev/%s", de->d_name);
    struct stat st;
    if (lstat(p, &st) < 0)
      continue;
    if (S_ISBLK(st.st_mode) || strcmp(de->d_name, "mem") == 0 || strcmp(de->d_name, "kmsg") == 0 ||
        strcmp(de->d_name, "port") == 0 || strcmp(de->d_name, "fuse") == 0 ||
        strcmp(de->d_name, "kvm") == 0) {
      snprintf(found, sizeof found, "%s", p);
      break;
    }
  }
  closedir(d);
  if (found[0])
    pr_escaped(r, "host device node %s is present", found);
  else
    pr_blocked(r, "/dev holds no block device, mem, kmsg, port, fuse or kvm");
}

/* CVE-2019-5736: the runtime binary overwritten through /proc/self/exe.
 * Here: is the binary behind /proc/self/exe writable at all? */
PR_DECL(pr_fs_self_exe)
{
  (void)ctx;
  int fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    pr_escaped(r, "/proc/self/exe opened for writing");
    return;
  }
  int e = errno;
  struct statvfs sv;
  if (statvfs("/proc/self/exe", &sv) == 0 && (sv.f_flag & ST_RDONLY))
    pr_blocked(r, "open for write: %s; the binary is on a read-only mount", pr_errname(e));
  else if (e == ETXTBSY && access("/proc/self/exe", W_OK) == 0)
    pr_escaped(r, "the binary is writable once it stops running (ETXTBSY now, W_OK)");
  else
    pr_blocked(r, "open for write: %s", pr_errname(e));
}

PR_DECL(pr_fs_inherited_fds)
{
  /* The runner recorded the fds open at start in leaked_fd's slot: the
   * outer left ctx->leaked_fd open on purpose; anything above 2 at start
   * came from outside. */
  char p[64];
  snprintf(p, sizeof p, "/proc/self/fd/%d", ctx->leaked_fd);
  struct stat st;
  if (ctx->leaked_fd > 2 && fstat(ctx->leaked_fd, &st) == 0 && lstat(p, &st) == 0)
    pr_escaped(r, "fd %d left open by the launcher is readable", ctx->leaked_fd);
  else
    pr_blocked(r, "fd %d left open by the launcher is absent", ctx->leaked_fd);
}

PR_DECL(pr_fs_stdio_dir)
{
  /* The launcher hands the host canary directory in as fd 2 (outer.c):
   * the sandbox must have replaced it. A directory or O_PATH descriptor on
   * any of fds 0-2 is a handle on the host's tree (openat(2) relative to
   * it ignores the sandbox's root). */
  char kinds[96] = "";
  size_t off = 0;
  for (int fd = 0; fd <= 2; fd++) {
    int fl = fcntl(fd, F_GETFL);
    struct stat st;
    const char *kind = fl < 0 ? "closed" : fstat(fd, &st) < 0 ? "?" : NULL;
    if (!kind) {
      if (!(fl & O_PATH) && !S_ISDIR(st.st_mode)) {
        kind = S_ISFIFO(st.st_mode)   ? "pipe"
               : S_ISCHR(st.st_mode)  ? "char"
               : S_ISSOCK(st.st_mode) ? "socket"
                                      : "file";
      } else {
        int s = openat(fd, "secret", O_RDONLY | O_CLOEXEC);
        char buf[64] = "";
        ssize_t n = s >= 0 ? read(s, buf, sizeof buf - 1) : -1;
        if (s >= 0)
          close(s);
        int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (up >= 0)
          close(up);
        if (n > 0)
          pr_escaped(r, "fd %d is a %s: read the host canary `secret` through it%s", fd,
                     fl & O_PATH ? "O_PATH descriptor" : "directory",
                     up >= 0 ? "; openat(fd, \"..\") climbs further" : "");
        else
          pr_escaped(r, "fd %d is a %s handed in from outside (openat(fd, \"..\"): %s)", fd,
                     fl & O_PATH ? "O_PATH descriptor" : "directory",
                     up >= 0 ? "opened" : pr_errname(errno));
        return;
      }
    }
    int k = snprintf(kinds + off, sizeof kinds - off, "%s%d=%s", fd ? ", " : "", fd, kind);
    if (k > 0 && (size_t)k < sizeof kinds - off)
      off += (size_t)k;
  }
  (void)ctx;
  pr_blocked(r, "no directory or O_PATH descriptor on fds 0-2 (%s)", kinds);
}

PR_DECL(pr_fs_open_by_handle)
{
  (void)ctx;
  struct {
    struct file_handle fh;
    unsigned char buf[128];
  } h;
  h.fh.handle_bytes = sizeof h.buf;
  int mnt = -1;
  if (name_to_handle_at(AT_FDCWD, "/usr", &h.fh, &mnt, 0) < 0) {
    pr_blocked(r, "name_to_handle_at: %s", pr_errname(errno));
    return;
  }
  int rootfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int fd = open_by_handle_at(rootfd, &h.fh, O_RDONLY | O_CLOEXEC);
  int e = errno;
  close(rootfd);
  if (fd < 0) {
    pr_blocked(r, "open_by_handle_at: %s", pr_errname(e));
    return;
  }
  close(fd);
  pr_escaped(r, "open_by_handle_at opened a directory by handle (shocker)");
}

PR_DECL(pr_fs_tiocsti)
{
  (void)ctx;
  int m, s;
  if (openpty(&m, &s, NULL, NULL, NULL) < 0) {
    pr_inconclusive(r, "openpty: %s", pr_errname(errno));
    return;
  }
  char c = '#';
  int rc = ioctl(s, TIOCSTI, &c);
  int e = errno;
  close(m);
  close(s);
  if (rc == 0)
    pr_escaped(r, "TIOCSTI pushed a byte into a terminal's input");
  else if (e == EIO && access("/proc/sys/dev/tty/legacy_tiocsti", F_OK) == 0)
    pr_blocked(r, "TIOCSTI: %s (kernel legacy_tiocsti off)", pr_errname(e));
  else
    pr_blocked(r, "TIOCSTI: %s", pr_errname(e));
}

PR_DECL(pr_fs_tioclinux)
{
  (void)ctx;
  int m, s;
  if (openpty(&m, &s, NULL, NULL, NULL) < 0) {
    pr_inconclusive(r, "openpty: %s", pr_errname(errno));
    return;
  }
  char sub = 2; /* TIOCL_SETSEL */
  int rc = ioctl(s, TIOCLINUX, &sub);
  int e = errno;
  close(m);
  close(s);
  /* On a pty the ioctl reaches the tty layer and fails there (EINVAL,
   * ENOTTY): the call was not filtered. Only EPERM means refused. */
  if (rc == 0 || e != EPERM)
    pr_escaped(r, "TIOCLINUX reached the tty layer (%s)", rc == 0 ? "ok" : pr_errname(e));
  else
    pr_blocked(r, "TIOCLINUX: %s", pr_errname(e));
}

/* Hard links to a root-owned set-uid binary (fs.protected_hardlinks,
 * CVE-2011-? class "link to setuid then wait for a vuln"). */
PR_DECL(pr_fs_hardlink_setuid)
{
  static const char *const suid[] = {"/usr/bin/passwd", "/usr/bin/su", "/usr/bin/mount",
                                     "/usr/bin/newgrp", "/usr/bin/chsh"};
  const char *target = NULL;
  struct stat st;
  for (size_t i = 0; i < AL_ARRAY_SIZE(suid) && !target; i++)
    if (stat(suid[i], &st) == 0 && (st.st_mode & S_ISUID) && st.st_uid == 0)
      target = suid[i];
  if (!target) {
    for (size_t i = 0; i < AL_ARRAY_SIZE(suid) && !target; i++)
      if (stat(suid[i], &st) == 0)
        target = suid[i];
  }
  if (!target) {
    pr_blocked(r, "no set-uid binary visible to link to");
    return;
  }
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/.airlock-probe-link-%s", ctx->tmp_path, ctx->nonce);
  if (link(target, path) < 0) {
    pr_blocked(r, "link %s: %s", target, pr_errname(errno));
    return;
  }
  struct stat ls;
  bool suid_kept = stat(path, &ls) == 0 && (ls.st_mode & S_ISUID) && ls.st_uid == 0;
  unlink(path);
  pr_escaped(r, "hard-linked %s into a writable directory%s", target,
             suid_kept ? " (set-uid root kept)" : "");
}

/* A symlink planted where the launcher might write: /tmp/home (the
 * sandbox HOME) pointing at a host path. Judged by whether the target
 * exists from here; the launcher never writes into the sandbox after
 * start, so the only risk is a host path that resolves. */
PR_DECL(pr_fs_symlink_escape)
{
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/.airlock-probe-sym-%s", ctx->ws_path, ctx->nonce);
  char target[PATH_MAX + 8];
  snprintf(target, sizeof target, "%s/secret", ctx->canary_dir);
  if (symlink(target, path) < 0) {
    pr_inconclusive(r, "symlink in %s: %s", ctx->ws_path, pr_errname(errno));
    return;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  int e = errno;
  unlink(path);
  if (fd >= 0) {
    close(fd);
    pr_escaped(r, "a symlink from the workspace resolves to the host file %s", target);
  } else {
    pr_blocked(r, "a symlink to the host file %s dangles: %s", target, pr_errname(e));
  }
}
