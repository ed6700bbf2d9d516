/* The command's stdin, stdout and stderr: checked like every other
 * descriptor that crosses into the sandbox (issue #14). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"

static const char *const stdio_names[3] = {"stdin", "stdout", "stderr"};

/* What is wrong with fd as a stdio descriptor of the sandbox, or NULL. A
 * directory, or any O_PATH descriptor, is a handle on the host's file
 * tree: openat(fd, "..") climbs from it to the host's / whatever the
 * sandbox's mount namespace holds (openat(2), open(2) O_PATH). A closed one
 * would be reused by the command's first open. */
static const char *stdio_problem(int fd)
{
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0)
    return "closed";
  if (fl & O_PATH)
    return "an O_PATH descriptor";
  struct stat st;
  if (fstat(fd, &st) < 0)
    return "not a file (fstat failed)";
  if (S_ISDIR(st.st_mode))
    return "a directory";
  return NULL;
}

int sb_stdio_check(const al_sandbox_opts *o, int out[3], int *devnull, al_error *err)
{
  *devnull = -1;
  const int given[3] = {o->stdin_fd, o->stdout_fd, o->stderr_fd};
  for (int i = 0; i < 3; i++) {
    int fd = given[i] > 0 ? given[i] : i;
    out[i] = fd;
    const char *why = stdio_problem(fd);
    if (!why)
      continue;
    if (*devnull < 0) {
      *devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
      if (*devnull < 0)
        return al_make_error(err, errno, "open /dev/null for the sandbox's %s", stdio_names[i]);
    }
    out[i] = *devnull;
    char link[64], target[256] = "";
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = strcmp(why, "closed") ? readlink(link, target, sizeof target - 1) : -1;
    target[n > 0 ? n : 0] = '\0';
    if (!o->quiet)
      al_warn("the sandbox's %s (fd %d%s%s%s) is %s, which would reach the host's files from "
              "inside; the command gets /dev/null instead",
              stdio_names[i], fd, target[0] ? ": " : "", target, "", why);
  }
  return 0;
}
