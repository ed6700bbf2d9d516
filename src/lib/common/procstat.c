#include "common/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int al_proc_stat_read(pid_t pid, al_proc_stat *out)
{
  memset(out, 0, sizeof *out);
  char path[64] = "/proc/self/stat", buf[4096];
  if (pid > 0)
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  int e = errno;
  close(fd);
  if (n <= 0) {
    errno = n < 0 ? e : ENOENT;
    return -1;
  }
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ' || !p[2]) {
    errno = EINVAL;
    return -1;
  }
  out->state = p[2];
  /* p+2 is field 3 (state); the others follow, one space apart */
  unsigned long long v[52] = {0};
  int field = 3;
  char *save = NULL;
  for (char *tok = strtok_r(p + 2, " \n", &save); tok && field <= 51;
       tok = strtok_r(NULL, " \n", &save), field++)
    v[field] = field == 3 ? 0 : strtoull(tok, NULL, 10);
  out->start_time = v[22];
  out->arg_start = v[48];
  out->arg_end = v[49];
  out->env_start = v[50];
  out->env_end = v[51];
  return 0;
}
