/* The sandbox's seccomp programs, compiled once at build time by
 * seccomp_gen.c (libseccomp, from the table in syscalls_table.c) into the
 * generated seccomp_bpf.c. tests/unit/test_seccomp.c checks that they are
 * what libseccomp makes from the table, so the two cannot drift. Load one
 * with seccomp(2) SECCOMP_SET_MODE_FILTER (needs no_new_privs). */
#ifndef AL_SANDBOX_SECCOMP_BPF_H
#define AL_SANDBOX_SECCOMP_BPF_H

#include <linux/filter.h>
#include <stddef.h>

/* The sandbox's filter: the table (syscalls.h). */
extern const struct sock_filter al_seccomp_bpf_sandbox[];
extern const size_t al_seccomp_bpf_sandbox_len; /* instructions */

/* A confined service's filter (al_confine_service): the table plus EPERM
 * for execve and execveat. */
extern const struct sock_filter al_seccomp_bpf_service[];
extern const size_t al_seccomp_bpf_service_len;
#define AL_SECCOMP_SERVICE_EXTRA                                                                   \
  {                                                                                                \
    "execve", "execveat", NULL                                                                     \
  }

/* Per rule of al_seccomp_rules(): what the build's libseccomp resolved
 * its name to (al_seccomp_build_rule_nr in seccomp_build.h): -1 for a
 * name it does not know, which the Docker profile leaves out. */
extern const int al_seccomp_rule_nr[];
extern const size_t al_seccomp_rule_nr_len;

/* The names the build's libseccomp has for the native syscall numbers
 * 0..al_seccomp_build_newest(), in number order: the Docker profile's
 * allow-list (syscalls.c) is these less the table's. */
extern const char *const al_seccomp_known[];
extern const size_t al_seccomp_known_len;

/* The libseccomp version the programs were made with ("2.5.4"). */
extern const char al_seccomp_bpf_libseccomp[];

#endif
