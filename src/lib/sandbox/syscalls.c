/* The sandbox's seccomp table as a Docker profile (an allow-list whose
 * default is ENOSYS). See syscalls.h;
 * seccomp(2), seccomp_rule_add(3), moby's profiles/seccomp/default.json
 * for the profile format. The table is in syscalls_table.c; which of its
 * names this architecture has comes from the build (seccomp_bpf.h). */
#include <errno.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/util.h"
#include "sandbox/seccomp_bpf.h"
#include "sandbox/syscalls.h"

static const char *native_arch(void)
{
#if defined(__x86_64__)
  return "SCMP_ARCH_X86_64";
#elif defined(__aarch64__)
  return "SCMP_ARCH_AARCH64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "SCMP_ARCH_RISCV64";
#elif defined(__s390x__)
  return "SCMP_ARCH_S390X";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "SCMP_ARCH_PPC64LE";
#else
#error "add this architecture's SCMP_ARCH_ name"
#endif
}

static const char *op_name(al_sc_op op)
{
  switch (op) {
  case AL_SC_EQ:
    return "SCMP_CMP_EQ";
  case AL_SC_GT:
    return "SCMP_CMP_GT";
  case AL_SC_MASKED_EQ:
    return "SCMP_CMP_MASKED_EQ";
  default:
    return "SCMP_CMP_EQ";
  }
}

/* The profile is an allow-list (default ERRNO(ENOSYS)), so what the table
 * refuses by argument must be allowed by argument too: for each such call
 * the entries below allow exactly the arguments the table's rules do not
 * refuse, and no argument both. Overlapping ALLOW and ERRNO entries for one
 * call would leave the answer to libseccomp's tree order, which it does not
 * promise (an unconditional ALLOW swallows every conditional ERRNO of the
 * call). tests/unit/test_seccomp_profile.c checks the complement against
 * the native program, argument by argument. Plain comparisons first: */
#define NS_FLAGS                                                                                   \
  (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |       \
   CLONE_NEWCGROUP)
static const al_sc_rule allow_if[] = {
    /* clone: no namespace flag (the table refuses each one) */
    {.name = "clone", .n_cmp = 1, .cmp = {{0, AL_SC_MASKED_EQ, NS_FLAGS, 0}}},
    /* personality: PER_LINUX only (the table refuses anything above 0) */
    {.name = "personality", .n_cmp = 1, .cmp = {{0, AL_SC_EQ, 0, 0}}},
    /* socket: the families the table lets through whatever the type */
    {.name = "socket", .n_cmp = 1, .cmp = {{0, AL_SC_EQ, AF_UNIX, 0}}},
    {.name = "socket", .n_cmp = 1, .cmp = {{0, AL_SC_EQ, AF_NETLINK, 0}}},
};

/* ...then "(argument & mask) is none of these values", after an optional
 * comparison on another argument, which emit_unless() spells as a union
 * of MASKED_EQ entries. */
typedef struct allow_unless {
  const char *name;
  unsigned n_pre; /* 0 or 1 */
  al_sc_cmp pre;
  unsigned arg;
  uint64_t mask;
  unsigned n_val; /* 1..2, each within mask */
  uint64_t val[2];
} allow_unless;
static const allow_unless allow_unless_tab[] = {
    /* ioctl: any request but TIOCSTI and TIOCLINUX (as a 32-bit value) */
    {"ioctl", 0, {0}, 1, 0xffffffffUL, 2, {TIOCSTI, TIOCLINUX}},
    /* socket(AF_INET | AF_INET6, ...): no raw or packet type */
    {"socket", 1, {0, AL_SC_EQ, AF_INET, 0}, 1, 0xf, 2, {SOCK_RAW, SOCK_PACKET}},
    {"socket", 1, {0, AL_SC_EQ, AF_INET6, 0}, 1, 0xf, 1, {SOCK_RAW}},
};

static bool has_conditional_rule(const char *name)
{
  size_t n;
  const al_sc_rule *rules = al_seccomp_rules(&n);
  for (size_t i = 0; i < n; i++)
    if (rules[i].n_cmp && strcmp(rules[i].name, name) == 0)
      return true;
  return false;
}

static bool has_rule(const char *name)
{
  size_t n;
  const al_sc_rule *rules = al_seccomp_rules(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(rules[i].name, name) == 0)
      return true;
  return false;
}

static json_t *cmp_json(const al_sc_cmp *c)
{
  return json_pack("{s:I,s:I,s:I,s:s}", "index", (json_int_t)c->arg, "value", (json_int_t)c->a,
                   "valueTwo", (json_int_t)c->b, "op", op_name(c->op));
}

/* One entry: names [name], action, errnoRet when errno_ret > 0, the ANDed
 * comparisons. NULL when out of memory. */
static json_t *entry(const char *name, int errno_ret, const al_sc_cmp *cmp, unsigned n_cmp)
{
  json_t *args = json_array();
  for (unsigned k = 0; args && k < n_cmp; k++)
    json_array_append_new(args, cmp_json(&cmp[k]));
  json_t *e = errno_ret > 0 ? json_pack("{s:[s],s:s,s:i,s:o}", "names", name, "action",
                                        "SCMP_ACT_ERRNO", "errnoRet", errno_ret, "args", args)
                            : json_pack("{s:[s],s:s,s:o}", "names", name, "action",
                                        "SCMP_ACT_ALLOW", "args", args);
  return e;
}

/* Append to list the ALLOW entries matching exactly the x with
 * (x & u->mask) not in u->val (and u->pre): one entry per bit that all the
 * values share, set the other way; then, with every shared bit as the
 * values have it, each pattern of the bits they differ in that is not one
 * of them. -1 when the values differ in more than 4 bits (16 patterns;
 * widen the table's shape rather than the profile). */
static int emit_unless(json_t *list, const allow_unless *u)
{
  uint64_t differ = 0;
  for (unsigned i = 1; i < u->n_val; i++)
    differ |= u->val[0] ^ u->val[i];
  uint64_t same = u->mask & ~differ;
  al_sc_cmp cmp[2];
  unsigned k = 0;
  if (u->n_pre)
    cmp[k++] = u->pre;
  for (unsigned bit = 0; bit < 64; bit++) {
    uint64_t b = 1ULL << bit;
    if (!(same & b))
      continue;
    cmp[k] = (al_sc_cmp){u->arg, AL_SC_MASKED_EQ, b, ~u->val[0] & b};
    if (json_array_append_new(list, entry(u->name, 0, cmp, k + 1)) < 0)
      return -1;
  }
  unsigned nd = (unsigned)__builtin_popcountll(differ);
  if (nd > 4)
    return -1;
  for (uint64_t p = 0; p < (1ULL << nd); p++) {
    /* spread the nd bits of p over the bits of differ */
    uint64_t v = u->val[0] & same, rest = differ;
    for (unsigned j = 0; rest; j++, rest &= rest - 1)
      if (p & (1ULL << j))
        v |= rest & -rest;
    bool is_val = false;
    for (unsigned i = 0; i < u->n_val; i++)
      is_val |= v == u->val[i];
    if (is_val)
      continue;
    cmp[k] = (al_sc_cmp){u->arg, AL_SC_MASKED_EQ, u->mask, v};
    if (json_array_append_new(list, entry(u->name, 0, cmp, k + 1)) < 0)
      return -1;
  }
  return 0;
}

int al_seccomp_profile_json(char **out, al_error *err)
{
  *out = NULL;
  json_t *root = json_object();
  json_t *list = json_array();
  json_t *allowed = json_array();
  if (!root || !list || !allowed) {
    json_decref(allowed);
    json_decref(list);
    goto oom;
  }
  json_object_set_new(root, "defaultAction", json_string("SCMP_ACT_ERRNO"));
  json_object_set_new(root, "defaultErrnoRet", json_integer(ENOSYS));
  json_object_set_new(root, "architectures", json_pack("[s]", native_arch()));
  json_object_set_new(root, "syscalls", list);
  /* 1. every call the build's libseccomp knows that the table leaves alone */
  for (size_t i = 0; i < al_seccomp_known_len; i++)
    if (!has_rule(al_seccomp_known[i]))
      json_array_append_new(allowed, json_string(al_seccomp_known[i]));
  if (json_array_append_new(list, json_pack("{s:o,s:s,s:[]}", "names", allowed, "action",
                                            "SCMP_ACT_ALLOW", "args")) < 0)
    goto oom;
  /* 2. the table's refusals. clone3's ENOSYS is the default too, but an
   * engine that drops defaultErrnoRet (Docker 20.10 does: its default is
   * then EPERM, and glibc falls back to clone(2) on ENOSYS only) still
   * needs the entry; runc leaves out an entry equal to the default. */
  size_t n_rules;
  const al_sc_rule *rules = al_seccomp_rules(&n_rules);
  for (size_t i = 0; i < n_rules; i++) {
    const al_sc_rule *r = &rules[i];
    if (i >= al_seccomp_rule_nr_len || al_seccomp_rule_nr[i] == -1)
      continue; /* the native filter skips it too */
    if (json_array_append_new(list, entry(r->name, r->errno_ret, r->cmp, r->n_cmp)) < 0)
      goto oom;
  }
  /* 3. the rest of what the table refuses by argument */
  for (size_t i = 0; i < AL_ARRAY_SIZE(allow_if); i++) {
    const al_sc_rule *r = &allow_if[i];
    if (has_conditional_rule(r->name) &&
        json_array_append_new(list, entry(r->name, 0, r->cmp, r->n_cmp)) < 0)
      goto oom;
  }
  for (size_t i = 0; i < AL_ARRAY_SIZE(allow_unless_tab); i++)
    if (has_conditional_rule(allow_unless_tab[i].name) &&
        emit_unless(list, &allow_unless_tab[i]) < 0)
      goto oom;
  *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!*out)
    return al_make_error(err, ENOMEM, "seccomp profile: out of memory");
  return 0;
oom:
  json_decref(root);
  return al_make_error(err, ENOMEM, "seccomp profile: out of memory");
}
