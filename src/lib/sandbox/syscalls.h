/* The seccomp policy of the sandbox as data: one table read by the native
 * filter (confine.c, libseccomp) and by the Docker/Kubernetes seccomp
 * profile generator (render/), so both backends refuse the same calls.
 *
 * Semantics follow seccomp_rule_add(3): the default action is "allow";
 * each rule returns errno `errno_ret` for syscall `name` when all of its
 * argument comparisons hold (no comparison: always). Names libseccomp
 * cannot resolve on this architecture are skipped by both consumers. */
#ifndef AL_SANDBOX_SYSCALLS_H
#define AL_SANDBOX_SYSCALLS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum al_sc_op {
  AL_SC_EQ,        /* arg == a */
  AL_SC_GT,        /* arg > a */
  AL_SC_MASKED_EQ, /* (arg & a) == b */
} al_sc_op;

typedef struct al_sc_cmp {
  unsigned arg; /* argument index, 0..5 */
  al_sc_op op;
  uint64_t a; /* value, or the mask for AL_SC_MASKED_EQ */
  uint64_t b; /* the datum for AL_SC_MASKED_EQ, else 0 */
} al_sc_cmp;

typedef struct al_sc_rule {
  const char *name; /* syscall name as libseccomp spells it */
  int errno_ret;    /* EPERM, or ENOSYS for clone3 */
  unsigned n_cmp;   /* 0..2, ANDed */
  al_sc_cmp cmp[2];
} al_sc_rule;

/* The table: a static array of *n rules (never NULL). The same for every
 * caller; DESIGN.md §2 "capabilities" lists what it covers. */
const al_sc_rule *al_seccomp_rules(size_t *n);

/* The table as a Docker/OCI seccomp profile (JSON as read by
 * `docker run --security-opt seccomp=FILE`, runc and the kubelet's
 * Localhost profiles; opencontainers/runtime-spec config-linux.md
 * "Seccomp"): an allow-list, defaultAction SCMP_ACT_ERRNO with
 * defaultErrnoRet ENOSYS, so calls newer than the table answer ENOSYS as
 * under the native filter; the native architecture only, so foreign ABIs
 * are refused; one SCMP_ACT_ALLOW entry with every name the build's
 * libseccomp knows (al_seccomp_known) less the table's; one SCMP_ACT_ERRNO
 * entry with errnoRet per rule; then SCMP_ACT_ALLOW entries for exactly
 * the arguments the table's conditional rules do not refuse (never
 * overlapping a refusal). Masked comparisons put the mask in "value" and
 * the datum in "valueTwo", per moby's profiles/seccomp/default.json. On
 * success *out is a new NUL-terminated, pretty-printed string the caller
 * frees. -1 with err (ENOMEM) on failure. */
int al_seccomp_profile_json(char **out, al_error *err);

#endif
