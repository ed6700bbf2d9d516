/* Resource limits through cgroups, on whatever tree the machine has:
 *  - pure or hybrid cgroup v2 with the controllers enabled: one leaf
 *    cgroup under ours with memory.max, pids.max, cpu.max;
 *  - cgroup v1 (or a hybrid tree whose v2 part lacks the controllers):
 *    one directory per controller (memory, pids, cpu);
 *  - neither writable (usually: unprivileged without delegation): nothing,
 *    and the caller says so; rlimits still apply.
 * See cgroups(7), Documentation/admin-guide/cgroup-v2.rst. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "sandbox/internal.h"

static int write_str(const char *dir, const char *file, const char *val)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int r = al_write_all(fd, val, strlen(val));
  close(fd);
  return r;
}

/* Our own cgroup path for a v1 controller (or "" for v2), from
 * /proc/self/cgroup. Returns a malloc'd path or NULL. */
static char *self_cgroup(const char *controller)
{
  al_autofree char *buf = NULL;
  if (al_read_file("/proc/self/cgroup", 65536, &buf, NULL, NULL) < 0)
    return NULL;
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c2 = '\0';
    const char *ctrls = c1 + 1;
    if (controller[0] == '\0' ? ctrls[0] == '\0' : false)
      return al_xstrdup(c2 + 1);
    if (controller[0]) {
      char tmp[256];
      snprintf(tmp, sizeof tmp, ",%s,", ctrls);
      char want[64];
      snprintf(want, sizeof want, ",%s,", controller);
      if (strstr(tmp, want))
        return al_xstrdup(c2 + 1);
    }
  }
  return NULL;
}

static bool v2_has(const char *dir, const char *ctrl)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/cgroup.controllers", dir);
  al_autofree char *buf = NULL;
  if (al_read_file(path, 4096, &buf, NULL, NULL) < 0)
    return false;
  char *save = NULL;
  for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
    if (strcmp(w, ctrl) == 0)
      return true;
  return false;
}

static int try_v2(struct sb_cgroup *cg, const char *name, const al_policy_limits *lim, pid_t pid)
{
  const char *mnt = NULL;
  struct stat st;
  if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0)
    mnt = "/sys/fs/cgroup";
  else if (stat("/sys/fs/cgroup/unified/cgroup.controllers", &st) == 0)
    mnt = "/sys/fs/cgroup/unified";
  if (!mnt)
    return -1;
  al_autofree char *self = self_cgroup("");
  if (!self)
    return -1;
  char parent[4096];
  snprintf(parent, sizeof parent, "%s%s", mnt, strcmp(self, "/") == 0 ? "" : self);
  if (!v2_has(parent, "memory") || !v2_has(parent, "pids"))
    return -1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", parent, name);
  if (mkdir(dir, 0755) < 0)
    return -1;
  cg->paths[cg->n++] = al_xstrdup(dir);
  cg->kind = "v2";
  /* Controllers must be enabled in the parent's subtree_control. */
  write_str(parent, "cgroup.subtree_control", "+memory");
  write_str(parent, "cgroup.subtree_control", "+pids");
  write_str(parent, "cgroup.subtree_control", "+cpu");
  char v[64];
  snprintf(v, sizeof v, "%llu", (unsigned long long)lim->memory);
  cg->mem = write_str(dir, "memory.max", v) == 0;
  write_str(dir, "memory.swap.max", "0");
  snprintf(v, sizeof v, "%u", lim->pids);
  cg->pids = write_str(dir, "pids.max", v) == 0;
  if (lim->cpu_milli) {
    snprintf(v, sizeof v, "%u 100000", lim->cpu_milli * 100);
    cg->cpu = write_str(dir, "cpu.max", v) == 0;
  } else {
    cg->cpu = true;
  }
  snprintf(v, sizeof v, "%d", (int)pid);
  if (write_str(dir, "cgroup.procs", v) < 0) {
    cg->mem = cg->pids = cg->cpu = false;
    return -1;
  }
  return 0;
}

static char *v1_dir(const char *ctrl, const char *name)
{
  char mnt[256];
  snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", ctrl);
  struct stat st;
  if (stat(mnt, &st) < 0)
    return NULL;
  al_autofree char *self = self_cgroup(ctrl);
  if (!self)
    return NULL;
  return al_strdup_printf("%s%s/%s", mnt, strcmp(self, "/") == 0 ? "" : self, name);
}

/* One v1 controller: make the directory, write the limits, open its
 * `tasks` file for the child to join through (see sb_cgroup_join). */
static bool v1_one(struct sb_cgroup *cg, const char *ctrl, const char *name,
                   const char *const *files, const char *const *vals, size_t nfiles)
{
  al_autofree char *dir = v1_dir(ctrl, name);
  if (!dir || mkdir(dir, 0755) < 0)
    return false;
  cg->paths[cg->n++] = al_xstrdup(dir);
  bool ok = true;
  for (size_t i = 0; i < nfiles; i++)
    if (vals[i] && write_str(dir, files[i], vals[i]) < 0 && i == 0)
      ok = false;
  char path[4096];
  snprintf(path, sizeof path, "%s/tasks", dir);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || cg->n_join >= AL_ARRAY_SIZE(cg->join_fds)) {
    if (fd >= 0)
      close(fd);
    return false;
  }
  cg->join_fds[cg->n_join++] = fd;
  return ok;
}

void sb_cgroup_join(int sync_fd, const int *fds, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    /* pid 0: the calling thread (cgroups(7), "tasks"); this process has
     * only the one */
    if (write(fds[i], "0", 1) != 1)
      sb_die(sync_fd, 125, errno, "join the run's cgroup");
  }
}

void sb_cgroup_close_join(struct sb_cgroup *cg)
{
  for (size_t i = 0; i < cg->n_join; i++)
    if (cg->join_fds[i] >= 0)
      close(cg->join_fds[i]);
  cg->n_join = 0;
}

int sb_cgroup_create(struct sb_cgroup *cg, const char *name, const al_policy_limits *lim, pid_t pid)
{
  memset(cg, 0, sizeof *cg);
  cg->kind = "none";
  if (try_v2(cg, name, lim, pid) == 0 && cg->mem && cg->pids)
    goto done;
  sb_cgroup_destroy(cg);
  memset(cg, 0, sizeof *cg);
  cg->kind = "none";
  for (size_t i = 0; i < AL_ARRAY_SIZE(cg->join_fds); i++)
    cg->join_fds[i] = -1;

  char mem[32], pids[32], quota[32];
  snprintf(mem, sizeof mem, "%llu", (unsigned long long)lim->memory);
  snprintf(pids, sizeof pids, "%u", lim->pids);
  snprintf(quota, sizeof quota, "%u", lim->cpu_milli * 100);
  {
    const char *files[] = {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"};
    const char *vals[] = {mem, mem};
    cg->mem = v1_one(cg, "memory", name, files, vals, 2);
  }
  {
    const char *files[] = {"pids.max"};
    const char *vals[] = {pids};
    cg->pids = v1_one(cg, "pids", name, files, vals, 1);
  }
  if (lim->cpu_milli) {
    const char *files[] = {"cpu.cfs_quota_us", "cpu.cfs_period_us"};
    const char *vals[] = {quota, "100000"};
    /* period first so the quota is accepted */
    const char *files2[] = {files[1], files[0]};
    const char *vals2[] = {vals[1], vals[0]};
    cg->cpu = v1_one(cg, "cpu", name, files2, vals2, 2);
  } else {
    cg->cpu = true;
  }
  if (cg->n > 0)
    cg->kind = "v1";
done:
  snprintf(cg->why, sizeof cg->why, "%s%s%s", cg->mem ? "" : " memory", cg->pids ? "" : " pids",
           cg->cpu ? "" : " cpu");
  return 0;
}

void sb_cgroup_kill(struct sb_cgroup *cg)
{
  for (size_t i = 0; i < cg->n; i++) {
    if (write_str(cg->paths[i], "cgroup.kill", "1") == 0)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/cgroup.procs", cg->paths[i]);
    al_autofree char *buf = NULL;
    if (al_read_file(path, 1 << 20, &buf, NULL, NULL) < 0)
      continue;
    char *save = NULL;
    for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      long pid = strtol(l, NULL, 10);
      if (pid > 0) /* never kill(0) or kill(-1) on a line that is not a pid */
        kill((pid_t)pid, SIGKILL);
    }
  }
}

void sb_cgroup_destroy(struct sb_cgroup *cg)
{
  sb_cgroup_close_join(cg);
  for (size_t i = 0; i < cg->n; i++) {
    /* A cgroup can be removed once its last process is gone; exiting
     * processes may linger for a moment. */
    for (int tries = 0; tries < 200; tries++) {
      if (rmdir(cg->paths[i]) == 0 || errno == ENOENT)
        break;
      if (errno != EBUSY)
        break;
      usleep(5000);
    }
    free(cg->paths[i]);
    cg->paths[i] = NULL;
  }
  cg->n = 0;
}
