/* The host paths the sandbox sees besides the system directories: the
 * policy's filesystem.ro_paths and filesystem.root, and the caller's extra
 * read-only paths (airlock's own binary for the probe and the relay, the
 * agent's directory). Supervisor side, before clone.
 *
 * Why here and not in the child: the child resolves paths as the sandbox's
 * uid, which maps to an unused host id when airlock runs as root and so
 * cannot traverse a directory of mode 0700 (root's home, where a checkout
 * usually is): "read-only path ...: Permission denied". The supervisor
 * resolves each path with its own credentials and makes a detached copy of
 * the mount tree there (open_tree(2) OPEN_TREE_CLONE | AT_RECURSIVE), made
 * read-only, nosuid, nodev and private (mount_setattr(2)) before the
 * sandbox ever holds it; the child attaches it in the new root with
 * move_mount(2) (rootfs.c). A detached tree may be attached in another
 * mount namespace (fs/namespace.c do_move_mount: "either ours or the root
 * of anon namespace"); a bind from a path of the supervisor's namespace
 * may not (do_loopback's check_mnt), which is why /proc/self/fd/N would
 * not do.
 *
 * Without the privilege to clone mounts (an unprivileged supervisor:
 * EPERM) the sandbox's uid is the supervisor's own, which can resolve what
 * the supervisor can: the child binds by path as before. Either way a path
 * the supervisor cannot reach is reported here, before anything starts. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"
#include "sandbox/internal.h"

/* A detached, read-only, private copy of the mount tree at path, or -1
 * with errno. */
static int clone_tree_ro(const char *path)
{
  int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path,
                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (fd < 0)
    return -1;
  /* MS_PRIVATE: a clone of a shared mount joins its peer group, and a
   * mount made under it later (an ro_path inside another) would then
   * propagate back to the host. */
  struct mount_attr attr = {
      .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
      .propagation = MS_PRIVATE,
  };
  if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* Open one path into h (fd, or -1 to bind by path). On EPERM/ENOSYS
 * (no privilege to clone a mount, or a kernel before 5.12) and EINVAL (an
 * unbindable mount) the child binds the path itself. */
static int open_one(const char *path, const char *what, struct sb_hostpath *h, al_error *err)
{
  h->path = path;
  h->fd = -1;
  if (!path || path[0] != '/')
    return al_make_error(err, EINVAL, "%s `%s`: not an absolute path", what, path ? path : "");
  struct stat st;
  int fd = clone_tree_ro(path);
  if (fd >= 0) {
    if (fstat(fd, &st) < 0) {
      int e = errno;
      close(fd);
      return al_make_error(err, e, "%s `%s`", what, path);
    }
    h->fd = fd;
  } else if (errno == EPERM || errno == ENOSYS || errno == EINVAL) {
    if (stat(path, &st) < 0)
      return al_make_error(err, errno, "%s `%s` (the sandbox reaches it as uid %u)", what, path,
                           (unsigned)getuid());
  } else {
    return al_make_error(err, errno, "%s `%s`", what, path);
  }
  h->dir = S_ISDIR(st.st_mode);
  if (!h->dir && !S_ISREG(st.st_mode)) {
    sb_hostpaths_close_one(h);
    return al_make_error(err, EINVAL,
                         "%s `%s`: neither a directory nor a regular file (a socket, a device "
                         "or a FIFO is never bound into the sandbox)",
                         what, path);
  }
  return 0;
}

void sb_hostpaths_close_one(struct sb_hostpath *h)
{
  if (h->fd >= 0)
    close(h->fd);
  h->fd = -1;
}

int sb_hostpaths_open(struct sb_hostpaths *hp, const al_sandbox_opts *o, al_error *err)
{
  const al_policy_filesystem *fs = &o->policy->filesystem;
  memset(hp, 0, sizeof *hp);
  hp->root.fd = -1;
  size_t n = fs->n_ro_paths + fs->n_sensitive_ro_paths;
  for (const char *const *p = o->extra_ro_paths; p && *p; p++)
    n++;
  if (n + 1 > SB_HOSTPATHS_MAX)
    return al_make_error(err, E2BIG, "more than %d read-only paths", SB_HOSTPATHS_MAX - 1);
  hp->ro = al_xcalloc(n ? n : 1, sizeof *hp->ro);
  for (size_t i = 0; i < fs->n_ro_paths; i++, hp->n_ro++)
    if (open_one(fs->ro_paths[i], "read-only path", &hp->ro[hp->n_ro], err) < 0)
      goto fail;
  for (size_t i = 0; i < fs->n_sensitive_ro_paths; i++, hp->n_ro++)
    if (open_one(fs->sensitive_ro_paths[i], "read-only path", &hp->ro[hp->n_ro], err) < 0)
      goto fail;
  for (const char *const *p = o->extra_ro_paths; p && *p; p++, hp->n_ro++)
    if (open_one(*p, "read-only path", &hp->ro[hp->n_ro], err) < 0)
      goto fail;
  if (fs->root) {
    if (open_one(fs->root, "filesystem.root", &hp->root, err) < 0)
      goto fail;
    if (!hp->root.dir) {
      al_make_error(err, ENOTDIR, "filesystem.root `%s`", fs->root);
      goto fail;
    }
  }
  return 0;
fail:
  sb_hostpaths_close(hp);
  return -1;
}

size_t sb_hostpaths_fds(const struct sb_hostpaths *hp, int *out, size_t cap)
{
  size_t n = 0;
  for (size_t i = 0; i < hp->n_ro && n < cap; i++)
    if (hp->ro[i].fd >= 0)
      out[n++] = hp->ro[i].fd;
  if (hp->root.fd >= 0 && n < cap)
    out[n++] = hp->root.fd;
  return n;
}

void sb_hostpaths_close(struct sb_hostpaths *hp)
{
  for (size_t i = 0; i < hp->n_ro; i++)
    sb_hostpaths_close_one(&hp->ro[i]);
  sb_hostpaths_close_one(&hp->root);
  free(hp->ro);
  hp->ro = NULL;
  hp->n_ro = 0;
}

int al_sandbox_check_paths(const al_sandbox_opts *o, al_error *err)
{
  struct sb_hostpaths hp;
  if (sb_hostpaths_open(&hp, o, err) < 0)
    return -1;
  sb_hostpaths_close(&hp);
  return 0;
}
