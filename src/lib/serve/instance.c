/* One instance per queue: the lock on the state directory (flock(2) on
 * STATE_DIR/serve.lock, held for the life of the process). A serve
 * without an election takes it exclusively; the replicas of one election
 * (election.lease) take it shared, since they share the queue on purpose
 * and the Lease and the fencing tokens keep them apart (docs/serve.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/internal.h"

int serve_lock_state_dir(const char *state_dir, bool shared, int *fd_out, al_error *err)
{
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/serve.lock", state_dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return al_make_error(err, errno, "state_dir lock `%s`", path);
  if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
    int e = errno;
    char holder[32] = "";
    ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
    close(fd);
    holder[n > 0 ? n : 0] = '\0';
    holder[strcspn(holder, "\r\n")] = '\0';
    if (e != EWOULDBLOCK)
      return al_error_set(err, e, "state_dir lock `%s`: %s", path, strerror(e));
    if (shared)
      return al_error_set(err, EBUSY,
                          "state_dir `%s` is in use by an airlock serve without an election "
                          "(pid %s, holding %s): one instance per queue; stop it, or give the "
                          "replicas another state_dir",
                          state_dir, holder[0] ? holder : "unknown", path);
    return al_error_set(err, EBUSY,
                        "state_dir `%s` is in use by another airlock serve (%s%s, holding %s): "
                        "one instance per queue; stop it first, or give this one another "
                        "state_dir",
                        state_dir, holder[0] ? "pid " : "the replicas of an election",
                        holder[0] ? holder : "", path);
  }
  if (shared) {
    /* no exclusive holder now: a pid left by one is stale */
    if (ftruncate(fd, 0) < 0) {
      close(fd);
      return al_make_error(err, errno, "state_dir lock `%s`", path);
    }
  } else {
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
      close(fd);
      return al_make_error(err, errno, "state_dir lock `%s`: writing the pid", path);
    }
  }
  *fd_out = fd;
  return 0;
}
