/* The built-in seccomp programs (sandbox/seccomp_bpf.h, generated at build
 * time) against what this machine's libseccomp makes from the table now
 * (sandbox/seccomp_build.c): byte for byte, so the table, the generator
 * and the programs airlock loads cannot drift apart. Then the programs
 * are loaded in a child and a few of the table's calls are refused, each
 * beside a control without the filter. The probe suite (tests/integration/
 * probe.sh) attacks the whole sandbox. */
#include <errno.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/seccomp_bpf.h"
#include "sandbox/seccomp_build.h"
#include "sandbox/syscalls.h"

static void same_program(const struct sock_filter *built, size_t built_len,
                         const char *const *extra)
{
  al_error err = {0};
  struct sock_filter *now = NULL;
  size_t n = 0;
  assert_int_equal(al_seccomp_build(extra, &now, &n, &err), 0);
  assert_int_equal(n, built_len);
  assert_memory_equal(now, built, n * sizeof *now);
  free(now);
}

static void sandbox_program_is_libseccomps(void **state)
{
  (void)state;
  same_program(al_seccomp_bpf_sandbox, al_seccomp_bpf_sandbox_len, NULL);
}

static void service_program_is_libseccomps(void **state)
{
  (void)state;
  static const char *const extra[] = AL_SECCOMP_SERVICE_EXTRA;
  same_program(al_seccomp_bpf_service, al_seccomp_bpf_service_len, extra);
}

/* The comparison notices a change: one more denied call is another
 * program (the control for the two tests above). */
static void a_changed_table_is_noticed(void **state)
{
  (void)state;
  static const char *const extra[] = {"getpid", NULL};
  al_error err = {0};
  struct sock_filter *p = NULL;
  size_t n = 0;
  assert_int_equal(al_seccomp_build(extra, &p, &n, &err), 0);
  assert_true(n != al_seccomp_bpf_sandbox_len ||
              memcmp(p, al_seccomp_bpf_sandbox, n * sizeof *p) != 0);
  free(p);
}

static void rule_numbers_are_libseccomps(void **state)
{
  (void)state;
  size_t n;
  (void)al_seccomp_rules(&n);
  assert_int_equal(al_seccomp_rule_nr_len, n);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(al_seccomp_rule_nr[i], al_seccomp_build_rule_nr(i));
}

/* In a child: optionally load prog, then try three of the table's calls;
 * exit code bit i set when call i was refused as the table says. */
static int refused_in_child(const struct sock_filter *prog, size_t len)
{
  pid_t pid = fork();
  if (pid == 0) {
    if (prog) {
      struct sock_fprog f = {.len = (unsigned short)len, .filter = (struct sock_filter *)prog};
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
          syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f) < 0)
        _exit(100);
    }
    int bits = 0;
    /* clone3: ENOSYS by the table (libc falls back to clone); without the
     * filter a NULL argument is EFAULT or EINVAL */
    errno = 0;
    if (syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS)
      bits |= 1;
    /* personality: anything but PER_LINUX is EPERM */
    errno = 0;
    if (personality(PER_LINUX32) == -1 && errno == EPERM)
      bits |= 2;
    /* io_uring_setup with no arguments: EPERM by the table; EFAULT or
     * EINVAL without it */
    errno = 0;
    if (syscall(SYS_io_uring_setup, 1, NULL) < 0 && errno == EPERM)
      bits |= 4;
    _exit(bits);
  }
  int ws = 0;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFEXITED(ws));
  return WEXITSTATUS(ws);
}

static void programs_refuse_the_tables_calls(void **state)
{
  (void)state;
  assert_int_equal(refused_in_child(NULL, 0), 0); /* control: nothing refused */
  assert_int_equal(refused_in_child(al_seccomp_bpf_sandbox, al_seccomp_bpf_sandbox_len), 7);
  assert_int_equal(refused_in_child(al_seccomp_bpf_service, al_seccomp_bpf_service_len), 7);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sandbox_program_is_libseccomps),
      cmocka_unit_test(service_program_is_libseccomps),
      cmocka_unit_test(a_changed_table_is_noticed),
      cmocka_unit_test(rule_numbers_are_libseccomps),
      cmocka_unit_test(programs_refuse_the_tables_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
