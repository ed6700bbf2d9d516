/* The built-in seccomp programs (sandbox/seccomp_bpf.h), run through a
 * classic-BPF interpreter over struct seccomp_data (seccomp(2), "Filter
 * return values"; the BPF instruction set of
 * Documentation/networking/filter.rst) for every syscall of the table, the
 * foreign ABIs and the unknown numbers, without making a single system
 * call. test_seccomp.c checks that the programs are libseccomp's; this one
 * checks that what libseccomp made refuses what DESIGN.md §2 and
 * docs/sandbox.md say, on x86-64:
 *
 * - every rule of the table (by the number the build resolved) answers its
 *   errno, with arguments that satisfy its comparisons, also when the
 *   32-bit comparisons get garbage in the high half;
 * - the calls next to a rule are allowed (socket(AF_INET, SOCK_STREAM),
 *   clone(SIGCHLD), ioctl(TCGETS), personality(PER_LINUX), getpid);
 * - i386 (int 0x80, AUDIT_ARCH_I386), any other arch, and x32 numbers
 *   (0x40000000 | nr, also of a denied call) kill the process;
 * - the syscalls newer than the build's libseccomp (statmount 457,
 *   listmount 458, ..., open_tree_attr 467) answer ENOSYS.
 *
 * Positive controls: the same checks against an allow-everything program
 * and against the sandbox's program with its arch check broken count
 * failures. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "sandbox/seccomp_bpf.h"
#include "sandbox/syscalls.h"

#include "seccomp_interp.h"

static uint32_t eval(const struct sock_filter *p, size_t n, uint32_t arch, int nr,
                     const uint64_t args[6])
{
  struct seccomp_data d;
  memset(&d, 0, sizeof d);
  d.nr = nr;
  d.arch = arch;
  d.instruction_pointer = 0x401000;
  for (int i = 0; i < 6; i++)
    d.args[i] = args ? args[i] : 0;
  return bpf_run(p, n, &d);
}

static bool is_kill(uint32_t r)
{
  uint32_t a = r & SECCOMP_RET_ACTION_FULL;
  return a == SECCOMP_RET_KILL_PROCESS || a == SECCOMP_RET_KILL_THREAD;
}

static int failures;
static bool verbose_fail;

static void expect(bool ok, const char *what, long nr, uint32_t got)
{
  if (!ok) {
    failures++;
    if (verbose_fail)
      print_message("#   %s (nr %ld): got action 0x%08x\n", what, nr, got);
  }
}

/* Every check of this file against program p; the number of failures. */
static int check_program(const struct sock_filter *p, size_t n, bool verbose)
{
  failures = 0;
  verbose_fail = verbose;
  size_t n_rules;
  const al_sc_rule *rules = al_seccomp_rules(&n_rules);
  assert_int_equal(n_rules, al_seccomp_rule_nr_len);
  int checked = 0;
  for (size_t i = 0; i < n_rules; i++) {
    const al_sc_rule *r = &rules[i];
    int nr = al_seccomp_rule_nr[i];
    if (nr < 0)
      continue; /* not on this architecture (create_module, ...) */
    uint64_t args[6] = {0};
    /* arguments that satisfy every comparison of the rule */
    for (unsigned c = 0; c < r->n_cmp; c++) {
      const al_sc_cmp *cmp = &r->cmp[c];
      args[cmp->arg] = cmp->op == AL_SC_EQ ? cmp->a : cmp->op == AL_SC_GT ? cmp->a + 1 : cmp->b;
    }
    uint32_t got = eval(p, n, AUDIT_ARCH_X86_64, nr, args);
    expect(got == RET_ERRNO(r->errno_ret), r->name, nr, got);
    /* the 32-bit comparisons (the ioctl request, as the kernel reads an
     * unsigned int) hold whatever the upper half says */
    for (unsigned c = 0; c < r->n_cmp; c++)
      if (r->cmp[c].op == AL_SC_MASKED_EQ && r->cmp[c].a == 0xffffffffUL) {
        uint64_t hi[6];
        memcpy(hi, args, sizeof hi);
        hi[r->cmp[c].arg] |= 0xdead000000000000ULL;
        got = eval(p, n, AUDIT_ARCH_X86_64, nr, hi);
        expect(got == RET_ERRNO(r->errno_ret), "high bits on a 32-bit comparison", nr, got);
      }
    checked++;
  }
  assert_true(checked > 60);

  /* a family with high bits set is a small int to the kernel: refused */
  uint64_t sock_hi[6] = {0x100000011ULL /* AF_PACKET */, SOCK_RAW, 0};
  uint32_t got = eval(p, n, AUDIT_ARCH_X86_64, SYS_socket, sock_hi);
  expect(got == RET_ERRNO(EPERM), "socket(0x1_0000_0011 = AF_PACKET)", SYS_socket, got);
  uint64_t vsock[6] = {AF_VSOCK, SOCK_STREAM, 0};
  got = eval(p, n, AUDIT_ARCH_X86_64, SYS_socket, vsock);
  expect(got == RET_ERRNO(EPERM), "socket(AF_VSOCK)", SYS_socket, got);
  uint64_t raw6[6] = {AF_INET6, SOCK_RAW | SOCK_CLOEXEC, 58};
  got = eval(p, n, AUDIT_ARCH_X86_64, SYS_socket, raw6);
  expect(got == RET_ERRNO(EPERM), "socket(AF_INET6, SOCK_RAW|SOCK_CLOEXEC)", SYS_socket, got);
  uint64_t userns[6] = {CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0};
  got = eval(p, n, AUDIT_ARCH_X86_64, SYS_clone, userns);
  expect(got == RET_ERRNO(EPERM), "clone(CLONE_NEWUSER|CLONE_NEWNS)", SYS_clone, got);
  uint64_t pers[6] = {0xffffffffULL, 0};
  got = eval(p, n, AUDIT_ARCH_X86_64, SYS_personality, pers);
  expect(got == RET_ERRNO(EPERM), "personality(0xffffffff)", SYS_personality, got);

  /* next to the rules: allowed */
  static const struct {
    int nr;
    uint64_t a0, a1;
    const char *what;
  } allowed[] = {
      {SYS_socket, AF_INET, SOCK_STREAM, "socket(AF_INET, SOCK_STREAM)"},
      {SYS_socket, AF_INET6, SOCK_DGRAM, "socket(AF_INET6, SOCK_DGRAM)"},
      {SYS_socket, AF_UNIX, SOCK_STREAM, "socket(AF_UNIX)"},
      {SYS_socket, AF_NETLINK, SOCK_RAW, "socket(AF_NETLINK)"},
      {SYS_clone, SIGCHLD, 0, "clone(SIGCHLD)"},
      {SYS_clone, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD, 0,
       "clone(thread)"},
      {SYS_ioctl, 1, TCGETS, "ioctl(TCGETS)"},
      {SYS_personality, 0, 0, "personality(PER_LINUX)"},
      {SYS_getpid, 0, 0, "getpid"},
      {SYS_execve, 0, 0, "execve"},
      {SYS_openat, 0, 0, "openat"},
  };
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
    uint64_t a[6] = {allowed[i].a0, allowed[i].a1, 0};
    if (allowed[i].nr == SYS_ioctl) {
      a[0] = 1;
      a[1] = allowed[i].a1;
    }
    got = eval(p, n, AUDIT_ARCH_X86_64, allowed[i].nr, a);
    expect(got == SECCOMP_RET_ALLOW, allowed[i].what, allowed[i].nr, got);
  }

  /* foreign ABIs: i386 through int 0x80 (its getpid is 20, its mount 21),
   * any other arch, and x32 numbers */
  static const uint32_t foreign[] = {AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM, 0, 1};
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
    for (int nr = 0; nr < 480; nr += 7) {
      got = eval(p, n, foreign[i], nr, NULL);
      expect(is_kill(got), "a foreign architecture", nr, got);
    }
  static const int x32[] = {SYS_getpid, SYS_mount, SYS_ptrace, SYS_unshare, 512, 520, 547};
  for (size_t i = 0; i < sizeof x32 / sizeof x32[0]; i++) {
    got = eval(p, n, AUDIT_ARCH_X86_64, 0x40000000 | x32[i], NULL);
    expect(is_kill(got), "an x32 syscall", 0x40000000L | x32[i], got);
  }
  got = eval(p, n, AUDIT_ARCH_X86_64, 0x7fffffff, NULL);
  expect(is_kill(got), "the highest syscall number (x32 bit set)", 0x7fffffff, got);

  /* newer than the build's libseccomp: ENOSYS, as on an older kernel */
  for (int nr = 457; nr <= 467; nr++) {
    got = eval(p, n, AUDIT_ARCH_X86_64, nr, NULL);
    expect(got == RET_ERRNO(ENOSYS), "a syscall newer than libseccomp", nr, got);
  }
  return failures;
}

static void sandbox_program_refuses_what_the_docs_say(void **state)
{
  (void)state;
  assert_int_equal(check_program(al_seccomp_bpf_sandbox, al_seccomp_bpf_sandbox_len, true), 0);
}

static void service_program_refuses_the_same_and_exec(void **state)
{
  (void)state;
  const struct sock_filter *p = al_seccomp_bpf_service;
  size_t n = al_seccomp_bpf_service_len;
  /* everything of the sandbox's program but execve, which it refuses */
  assert_int_equal(check_program(p, n, false), 1); /* the one "execve allowed" expectation */
  uint32_t got = eval(p, n, AUDIT_ARCH_X86_64, SYS_execve, NULL);
  assert_int_equal(got, RET_ERRNO(EPERM));
  got = eval(p, n, AUDIT_ARCH_X86_64, SYS_execveat, NULL);
  assert_int_equal(got, RET_ERRNO(EPERM));
}

/* Positive control: an allow-everything program fails every refusal. */
static void control_allow_all_fails(void **state)
{
  (void)state;
  static const struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  int f = check_program(allow, 1, false);
  assert_true(f > 100);
}

/* Positive control: the sandbox's program with its architecture check
 * broken (the first comparison with AUDIT_ARCH_X86_64 made to accept
 * anything) lets i386 calls through. */
static void control_broken_arch_check_fails(void **state)
{
  (void)state;
  size_t n = al_seccomp_bpf_sandbox_len;
  struct sock_filter *p = malloc(n * sizeof *p);
  assert_non_null(p);
  memcpy(p, al_seccomp_bpf_sandbox, n * sizeof *p);
  bool patched = false;
  for (size_t i = 0; i < n && !patched; i++)
    if (p[i].code == (BPF_JMP | BPF_JEQ | BPF_K) && p[i].k == AUDIT_ARCH_X86_64) {
      p[i].jf = p[i].jt; /* any arch goes where x86-64 goes */
      patched = true;
    }
  assert_true(patched);
  int f = check_program(p, n, false);
  assert_true(f > 0);
  uint32_t got = eval(p, n, AUDIT_ARCH_I386, 20, NULL);
  assert_false(is_kill(got));
  free(p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sandbox_program_refuses_what_the_docs_say),
      cmocka_unit_test(service_program_refuses_the_same_and_exec),
      cmocka_unit_test(control_allow_all_fails),
      cmocka_unit_test(control_broken_arch_check_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
