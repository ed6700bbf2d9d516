/* The Docker/OCI seccomp profile (al_seccomp_profile_json, `airlock render
 * seccomp`) against the native program. The profile is compiled with this
 * machine's libseccomp the way runc does it (an entry's names resolved,
 * the unknown ones skipped, an entry whose action is the default one
 * skipped, comparisons ANDed per entry; opencontainers/runtime-spec
 * config-linux.md "Seccomp"), then both programs run through the BPF
 * interpreter (seccomp_interp.h) and must answer alike:
 *
 * - every native syscall number with zero arguments, up to far past the
 *   newest this libseccomp knows: the same action, except that the profile
 *   answers ENOSYS where the native program leaves a number without a name
 *   to the kernel (a gap, or above the native program's 55 ENOSYS numbers),
 *   which is ENOSYS or stricter;
 * - the calls the table refuses by argument (clone, ioctl, personality,
 *   socket), over argument values made from every constant of both sides
 *   (each value, its neighbours, each bit of a mask flipped, garbage in the
 *   high half): the same action for each, so the profile's allow entries are
 *   the exact complement of the table's rules;
 * - the probe priv.syscall-new's numbers (statmount 457 .. file_setattr
 *   469) answer ENOSYS.
 *
 * Also: the build's list of names (seccomp_bpf.h al_seccomp_known) is what
 * libseccomp says now. Positive controls: the profile of the old shape
 * (default allow), a profile missing one complement entry, and one that
 * allows clone outright each fail the comparison. */
#include <errno.h>
#include <jansson.h>
#include <linux/audit.h>
#include <sched.h>
#include <seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/seccomp_bpf.h"
#include "sandbox/seccomp_build.h"
#include "sandbox/syscalls.h"
#include "seccomp_interp.h"

static enum scmp_compare op_of(const char *s)
{
  if (strcmp(s, "SCMP_CMP_EQ") == 0)
    return SCMP_CMP_EQ;
  if (strcmp(s, "SCMP_CMP_GT") == 0)
    return SCMP_CMP_GT;
  if (strcmp(s, "SCMP_CMP_MASKED_EQ") == 0)
    return SCMP_CMP_MASKED_EQ;
  fail_msg("profile: unexpected op %s", s);
  return SCMP_CMP_EQ;
}

static uint32_t action_of(json_t *e, uint32_t *ret)
{
  const char *a = json_string_value(json_object_get(e, "action"));
  assert_non_null(a);
  if (strcmp(a, "SCMP_ACT_ALLOW") == 0)
    return *ret = SCMP_ACT_ALLOW;
  assert_string_equal(a, "SCMP_ACT_ERRNO");
  json_t *r = json_object_get(e, "errnoRet");
  return *ret = SCMP_ACT_ERRNO((uint32_t)(r ? json_integer_value(r) : EPERM));
}

/* Compile the profile JSON as runc does (libcontainer/seccomp); the program
 * in *prog (malloc'd, *len instructions). */
static void compile_profile(json_t *prof, struct sock_filter **prog, size_t *len)
{
  uint32_t def;
  const char *da = json_string_value(json_object_get(prof, "defaultAction"));
  assert_non_null(da);
  json_t *der = json_object_get(prof, "defaultErrnoRet");
  if (strcmp(da, "SCMP_ACT_ALLOW") == 0)
    def = SCMP_ACT_ALLOW;
  else
    def = SCMP_ACT_ERRNO((uint32_t)(der ? json_integer_value(der) : EPERM));
  json_t *arches = json_object_get(prof, "architectures");
  assert_int_equal(json_array_size(arches), 1); /* the native one only */
  scmp_filter_ctx ctx = seccomp_init(def);
  assert_non_null(ctx);
  assert_int_equal(seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), 0);
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(prof, "syscalls"), i, e)
  {
    uint32_t act;
    action_of(e, &act);
    if (act == def)
      continue; /* runc: an entry with the default action is left out */
    json_t *args = json_object_get(e, "args");
    struct scmp_arg_cmp cmp[6];
    size_t n_cmp = json_array_size(args);
    assert_true(n_cmp <= 6);
    for (size_t k = 0; k < n_cmp; k++) {
      json_t *a = json_array_get(args, k);
      cmp[k] = (struct scmp_arg_cmp){
          .arg = (unsigned)json_integer_value(json_object_get(a, "index")),
          .op = op_of(json_string_value(json_object_get(a, "op"))),
          .datum_a = (uint64_t)json_integer_value(json_object_get(a, "value")),
          .datum_b = (uint64_t)json_integer_value(json_object_get(a, "valueTwo"))};
    }
    size_t j;
    json_t *nm;
    json_array_foreach(json_object_get(e, "names"), j, nm)
    {
      int nr = seccomp_syscall_resolve_name(json_string_value(nm));
      if (nr == __NR_SCMP_ERROR)
        continue; /* runc skips a name its libseccomp does not know */
      int rc = seccomp_rule_add_array(ctx, act, nr, (unsigned)n_cmp, cmp);
      if (rc < 0)
        fail_msg("profile entry %zu, %s: seccomp_rule_add: %s", i, json_string_value(nm),
                 strerror(-rc));
    }
  }
  int fd = memfd_create("profile", MFD_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(seccomp_export_bpf(ctx, fd), 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  *prog = malloc((size_t)st.st_size);
  assert_non_null(*prog);
  assert_int_equal(pread(fd, *prog, (size_t)st.st_size, 0), st.st_size);
  *len = (size_t)st.st_size / sizeof **prog;
  close(fd);
  seccomp_release(ctx);
}

static json_t *profile(void)
{
  al_error err = {0};
  char *s = NULL;
  assert_int_equal(al_seccomp_profile_json(&s, &err), 0);
  json_t *p = json_loads(s, 0, NULL);
  free(s);
  assert_non_null(p);
  return p;
}

static uint32_t run(const struct sock_filter *p, size_t n, int nr, uint64_t a0, uint64_t a1)
{
  struct seccomp_data d;
  memset(&d, 0, sizeof d);
  d.nr = nr;
  d.arch = AUDIT_ARCH_X86_64;
  d.args[0] = a0;
  d.args[1] = a1;
  return bpf_run(p, n, &d);
}

#define ENOSYS_RET (SECCOMP_RET_ERRNO | ENOSYS)

static bool has_name(int nr)
{
  char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
  free(name);
  return name != NULL;
}

/* Argument values for call `name` at index `arg`: every constant of the
 * profile's entries for it, and around them. At most cap values in out. */
static size_t values_for(json_t *prof, const char *name, unsigned arg, uint64_t *out, size_t cap)
{
  size_t n = 0;
#define ADD(v)                                                                                     \
  do {                                                                                             \
    uint64_t v_ = (v);                                                                             \
    bool dup_ = false;                                                                             \
    for (size_t q_ = 0; q_ < n && !dup_; q_++)                                                     \
      dup_ = out[q_] == v_;                                                                        \
    if (!dup_ && n < cap)                                                                          \
      out[n++] = v_;                                                                               \
  } while (0)
  ADD(0);
  ADD(1);
  ADD(~0ULL);
  ADD(SIGCHLD);
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(prof, "syscalls"), i, e)
  {
    if (strcmp(json_string_value(json_array_get(json_object_get(e, "names"), 0)), name) != 0)
      continue;
    size_t k;
    json_t *a;
    json_array_foreach(json_object_get(e, "args"), k, a)
    {
      if ((unsigned)json_integer_value(json_object_get(a, "index")) != arg)
        continue;
      uint64_t v = (uint64_t)json_integer_value(json_object_get(a, "value"));
      uint64_t w = (uint64_t)json_integer_value(json_object_get(a, "valueTwo"));
      uint64_t base[] = {v, w, v + 1, v - 1, w + 1, w - 1, v | w, v | SIGCHLD};
      for (size_t b = 0; b < sizeof base / sizeof base[0]; b++) {
        ADD(base[b]);
        ADD(base[b] | 0xdead000000000000ULL);
      }
      for (unsigned bit = 0; bit < 64; bit++)
        if (v & (1ULL << bit))
          ADD(w ^ (1ULL << bit));
    }
  }
#undef ADD
  return n;
}

static int mismatches;

static void differ(const char *what, int nr, uint64_t a0, uint64_t a1, uint32_t native,
                   uint32_t prof, bool verbose)
{
  mismatches++;
  if (verbose && mismatches < 20)
    print_message("#   %s nr %d (0x%llx, 0x%llx): native 0x%08x, profile 0x%08x\n", what, nr,
                  (unsigned long long)a0, (unsigned long long)a1, native, prof);
}

/* Compare the profile's program with the native one; the mismatches. */
static int compare(json_t *prof, bool verbose)
{
  struct sock_filter *p = NULL;
  size_t n = 0;
  compile_profile(prof, &p, &n);
  const struct sock_filter *s = al_seccomp_bpf_sandbox;
  size_t sn = al_seccomp_bpf_sandbox_len;
  mismatches = 0;
  int newest = al_seccomp_build_newest();
  assert_true(newest > 400);
  for (int nr = 0; nr <= newest + 120; nr++) {
    uint32_t a = run(s, sn, nr, 0, 0), b = run(p, n, nr, 0, 0);
    if (a == b)
      continue;
    /* the profile may answer ENOSYS where the native program leaves a
     * number without a name to the kernel */
    if (b == ENOSYS_RET && a == SECCOMP_RET_ALLOW && (nr > newest || !has_name(nr)))
      continue;
    differ("zero arguments", nr, 0, 0, a, b, verbose);
  }
  /* the probe priv.syscall-new's numbers */
  for (int nr = 457; nr <= 469; nr++) {
    uint32_t b = run(p, n, nr, (uint64_t)-1, 0);
    if (b != ENOSYS_RET)
      differ("newer than the table", nr, (uint64_t)-1, 0, run(s, sn, nr, (uint64_t)-1, 0), b,
             verbose);
  }
  /* the calls refused by argument, value by value */
  size_t n_rules;
  const al_sc_rule *rules = al_seccomp_rules(&n_rules);
  for (size_t r = 0; r < n_rules; r++) {
    if (!rules[r].n_cmp || (r > 0 && strcmp(rules[r - 1].name, rules[r].name) == 0))
      continue;
    int nr = seccomp_syscall_resolve_name(rules[r].name);
    if (nr < 0)
      continue;
    static uint64_t v0[512], v1[512];
    size_t n0 = values_for(prof, rules[r].name, 0, v0, 512);
    size_t n1 = values_for(prof, rules[r].name, 1, v1, 512);
    for (size_t i = 0; i < n0; i++)
      for (size_t j = 0; j < n1; j++) {
        uint32_t a = run(s, sn, nr, v0[i], v1[j]), b = run(p, n, nr, v0[i], v1[j]);
        if (a != b)
          differ(rules[r].name, nr, v0[i], v1[j], a, b, verbose);
      }
  }
  free(p);
  return mismatches;
}

static void known_names_are_libseccomps(void **state)
{
  (void)state;
  size_t k = 0;
  for (int nr = 0; nr <= al_seccomp_build_newest(); nr++) {
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (!name)
      continue;
    assert_true(k < al_seccomp_known_len);
    assert_string_equal(al_seccomp_known[k], name);
    free(name);
    k++;
  }
  assert_int_equal(k, al_seccomp_known_len);
}

static void profile_answers_as_the_native_program(void **state)
{
  (void)state;
  json_t *p = profile();
  assert_string_equal(json_string_value(json_object_get(p, "defaultAction")), "SCMP_ACT_ERRNO");
  assert_int_equal(json_integer_value(json_object_get(p, "defaultErrnoRet")), ENOSYS);
  assert_int_equal(compare(p, true), 0);
  json_decref(p);
}

/* Control: the old shape (default allow, the table's refusals only). */
static void control_default_allow_fails(void **state)
{
  (void)state;
  json_t *p = profile();
  json_object_set_new(p, "defaultAction", json_string("SCMP_ACT_ALLOW"));
  json_object_del(p, "defaultErrnoRet");
  int m = compare(p, false);
  assert_true(m >= 13); /* at least the probe's numbers */
  json_decref(p);
}

/* Drop the entries `drop` returns true for. */
static void drop_entries(json_t *p, bool (*drop)(json_t *))
{
  json_t *list = json_object_get(p, "syscalls");
  for (size_t i = json_array_size(list); i-- > 0;)
    if (drop(json_array_get(list, i)))
      json_array_remove(list, i);
}

static bool is_allow(json_t *e, const char *name)
{
  return strcmp(json_string_value(json_object_get(e, "action")), "SCMP_ACT_ALLOW") == 0 &&
         strcmp(json_string_value(json_array_get(json_object_get(e, "names"), 0)), name) == 0;
}

static bool first_socket_complement(json_t *e)
{
  static int seen;
  json_t *args = json_object_get(e, "args");
  return is_allow(e, "socket") && json_array_size(args) == 2 && seen++ == 0;
}

/* Control: one complement entry missing (socket(AF_INET, ...) of one bit
 * pattern): those arguments answer ENOSYS instead of being allowed. */
static void control_missing_complement_fails(void **state)
{
  (void)state;
  json_t *p = profile();
  size_t before = json_array_size(json_object_get(p, "syscalls"));
  drop_entries(p, first_socket_complement);
  assert_int_equal(json_array_size(json_object_get(p, "syscalls")), before - 1);
  assert_true(compare(p, false) > 0);
  json_decref(p);
}

/* Control: clone allowed outright besides its refusals, which libseccomp
 * folds into one unconditional ALLOW: clone(CLONE_NEWUSER) gets through. */
static void control_unconditional_allow_fails(void **state)
{
  (void)state;
  json_t *p = profile();
  json_array_append_new(
      json_object_get(p, "syscalls"),
      json_pack("{s:[s],s:s,s:[]}", "names", "clone", "action", "SCMP_ACT_ALLOW", "args"));
  assert_true(compare(p, false) > 0);
  json_decref(p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(known_names_are_libseccomps),
      cmocka_unit_test(profile_answers_as_the_native_program),
      cmocka_unit_test(control_default_allow_fails),
      cmocka_unit_test(control_missing_complement_fails),
      cmocka_unit_test(control_unconditional_allow_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
