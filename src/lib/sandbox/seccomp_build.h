/* The sandbox's seccomp programs compiled with libseccomp from the table
 * in syscalls_table.c. Used at build time by seccomp_gen.c (which writes
 * them into seccomp_bpf.c, so airlock neither links libseccomp nor
 * compiles a filter per run) and by tests/unit/test_seccomp.c, which
 * checks that the built-in programs are byte for byte what this
 * machine's libseccomp makes from the table. Not linked into airlock. */
#ifndef AL_SANDBOX_SECCOMP_BUILD_H
#define AL_SANDBOX_SECCOMP_BUILD_H

#include <linux/filter.h>
#include <stddef.h>

#include "common/error.h"

/* Compile the table plus EPERM for the NULL-terminated extra syscall
 * names (may be NULL) for the native architecture: default allow, any
 * other architecture kills the process, syscall numbers above the newest
 * one libseccomp knows (+55) answer ENOSYS, binary-tree layout
 * (seccomp_init(3), seccomp_rule_add(3), seccomp_attr_set(3),
 * seccomp_export_bpf(3)). On success *prog is a malloc'd array of *len
 * instructions. Returns 0, or -1 with err. */
int al_seccomp_build(const char *const *extra_deny, struct sock_filter **prog, size_t *len,
                     al_error *err);

/* What seccomp_syscall_resolve_name(3) says of the table's rule i: the
 * native syscall number; -1 (__NR_SCMP_ERROR) when libseccomp knows no
 * such name (the rule is left out of the programs and of the Docker
 * profile); or one of libseccomp's negative pseudo-numbers for a name it
 * knows that this architecture lacks (e.g. umount on x86_64: no rule in
 * the program, kept in the profile). */
int al_seccomp_build_rule_nr(size_t i);

/* The highest native syscall number libseccomp has a name for (0 if none):
 * the programs answer ENOSYS above it, the Docker profile allows by name
 * only what resolves at or below it (seccomp_syscall_resolve_num_arch(3)). */
int al_seccomp_build_newest(void);

#endif
