/* See seccomp_build.h. seccomp_init(3), seccomp_rule_add(3),
 * seccomp_export_bpf(3). */
#include "sandbox/seccomp_build.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/syscalls.h"

static enum scmp_compare scmp_op(al_sc_op op)
{
  switch (op) {
  case AL_SC_GT:
    return SCMP_CMP_GT;
  case AL_SC_MASKED_EQ:
    return SCMP_CMP_MASKED_EQ;
  case AL_SC_EQ:
  default:
    return SCMP_CMP_EQ;
  }
}

int al_seccomp_build_rule_nr(size_t i)
{
  size_t n;
  const al_sc_rule *rules = al_seccomp_rules(&n);
  if (i >= n)
    return -1;
  return seccomp_syscall_resolve_name(rules[i].name); /* __NR_SCMP_ERROR is -1 */
}

int al_seccomp_build_newest(void)
{
  for (int nr = 600; nr > 0; nr--) { /* x86_64 is near 470 today */
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr); /* malloc'd */
    free(name);
    if (name)
      return nr;
  }
  return 0;
}

/* The exported program, read back from a memfd (libseccomp 2.5 exports to
 * a file descriptor only). */
static int export_prog(scmp_filter_ctx ctx, struct sock_filter **prog, size_t *len, al_error *err)
{
  int fd = memfd_create("airlock-seccomp", MFD_CLOEXEC);
  if (fd < 0)
    return al_make_error(err, errno, "memfd_create for the seccomp filter");
  int rc = seccomp_export_bpf(ctx, fd);
  if (rc < 0) {
    close(fd);
    return al_make_error(err, -rc, "seccomp_export_bpf");
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter)) {
    close(fd);
    return al_make_error(err, EPROTO, "seccomp_export_bpf: a program of %lld bytes",
                         (long long)st.st_size);
  }
  struct sock_filter *p = malloc((size_t)st.st_size);
  if (!p || pread(fd, p, (size_t)st.st_size, 0) != st.st_size) {
    free(p);
    close(fd);
    return al_make_error(err, EIO, "read back the seccomp filter");
  }
  close(fd);
  *prog = p;
  *len = (size_t)st.st_size / sizeof(struct sock_filter);
  return 0;
}

int al_seccomp_build(const char *const *extra_deny, struct sock_filter **prog, size_t *len,
                     al_error *err)
{
  *prog = NULL;
  *len = 0;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx)
    return al_make_error(err, ENOMEM, "seccomp_init");
  int ret = -1;
  /* Any other architecture (i386 via int 0x80, x32) kills the process:
   * only the native ABI is in the filter, and libseccomp's x86_64 filter
   * treats x32 syscall numbers as a bad architecture. */
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) {
    al_make_error(err, -rc, "seccomp bad-arch action");
    goto out;
  }
  size_t n_rules;
  const al_sc_rule *rules = al_seccomp_rules(&n_rules);
  for (size_t i = 0; i < n_rules; i++) {
    const al_sc_rule *r = &rules[i];
    int nr = seccomp_syscall_resolve_name(r->name);
    if (nr == __NR_SCMP_ERROR)
      continue;
    struct scmp_arg_cmp cmp[2];
    for (unsigned k = 0; k < r->n_cmp; k++) {
      /* for SCMP_CMP_MASKED_EQ datum_a is the mask, datum_b the value */
      cmp[k] = (struct scmp_arg_cmp){.arg = r->cmp[k].arg,
                                     .op = scmp_op(r->cmp[k].op),
                                     .datum_a = r->cmp[k].a,
                                     .datum_b = r->cmp[k].b};
    }
    rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((uint32_t)r->errno_ret), nr, r->n_cmp, cmp);
    if (rc < 0) {
      al_make_error(err, -rc, "seccomp rule for %s", r->name);
      goto out;
    }
  }
  /* Syscalls newer than this libseccomp (it resolves no name for them:
   * statmount, listmount, open_tree_attr, ...) answer ENOSYS, as if the
   * kernel were older; anything the kernel adds later is refused until
   * airlock knows it. Numbers below the newest libseccomp knows are the
   * kernel's own gaps, which answer ENOSYS already. */
  int newest = al_seccomp_build_newest();
  /* 55 numbers: years of new syscalls at the kernel's pace (x86_64: 457..511) */
  int last = newest + 55;
  for (int nr = newest + 1; newest && nr <= last; nr++) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
    if (rc < 0) {
      al_make_error(err, -rc, "seccomp rule for syscall %d", nr);
      goto out;
    }
  }
  /* A binary tree of syscall numbers keeps the filter's cost logarithmic. */
  (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  for (const char *const *x = extra_deny; x && *x; x++) {
    int nr = seccomp_syscall_resolve_name(*x);
    if (nr == __NR_SCMP_ERROR)
      continue;
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc < 0) {
      al_make_error(err, -rc, "seccomp rule for %s", *x);
      goto out;
    }
  }
  ret = export_prog(ctx, prog, len, err);
out:
  seccomp_release(ctx);
  return ret;
}
