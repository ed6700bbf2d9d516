/* The one reader of /proc/PID/stat (proc(5)): the fields airlock uses. */
#ifndef AL_COMMON_PROCSTAT_H
#define AL_COMMON_PROCSTAT_H

#include <sys/types.h>

typedef struct al_proc_stat {
  char state;                                                /* field 3: R, S, D, T, t, Z, ... */
  unsigned long long start_time;                             /* field 22: clock ticks after boot */
  unsigned long long arg_start, arg_end, env_start, env_end; /* fields 48-51 (0: not shown) */
} al_proc_stat;

/* Read /proc/PID/stat (pid 0: /proc/self/stat) into *out, parsed after
 * the last ')' (the command name may hold spaces and parentheses); fields
 * the kernel does not show are 0. No allocation, no stdio: safe in a
 * clone that has not exec'd. Returns 0, or -1 with errno (ENOENT: the
 * process is gone; EINVAL: no ')' in what was read). */
int al_proc_stat_read(pid_t pid, al_proc_stat *out);

#endif
