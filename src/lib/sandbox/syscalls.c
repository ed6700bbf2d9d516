/* The sandbox's seccomp table as a Docker profile. See syscalls.h;
 * seccomp(2), seccomp_rule_add(3), moby's profiles/seccomp/default.json
 * for the profile format. The table is in syscalls_table.c; which of its
 * names this architecture has comes from the build (seccomp_bpf.h). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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

int al_seccomp_profile_json(char **out, al_error *err)
{
  *out = NULL;
  json_t *root = json_object();
  json_t *list = json_array();
  if (!root || !list)
    goto oom;
  json_object_set_new(root, "defaultAction", json_string("SCMP_ACT_ALLOW"));
  json_object_set_new(root, "architectures", json_pack("[s]", native_arch()));
  json_object_set_new(root, "syscalls", list);
  size_t n_rules;
  const al_sc_rule *rules = al_seccomp_rules(&n_rules);
  for (size_t i = 0; i < n_rules; i++) {
    const al_sc_rule *r = &rules[i];
    if (i >= al_seccomp_rule_nr_len || al_seccomp_rule_nr[i] == -1)
      continue; /* the native filter skips it too */
    json_t *args = json_array();
    for (unsigned k = 0; k < r->n_cmp; k++) {
      const al_sc_cmp *c = &r->cmp[k];
      json_array_append_new(args, json_pack("{s:I,s:I,s:I,s:s}", "index", (json_int_t)c->arg,
                                            "value", (json_int_t)c->a, "valueTwo", (json_int_t)c->b,
                                            "op", op_name(c->op)));
    }
    json_t *e = json_pack("{s:[s],s:s,s:i,s:o}", "names", r->name, "action", "SCMP_ACT_ERRNO",
                          "errnoRet", r->errno_ret, "args", args);
    if (!e)
      goto oom;
    json_array_append_new(list, e);
  }
  *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!*out)
    return al_make_error(err, ENOMEM, "seccomp profile: out of memory");
  return 0;
oom:
  json_decref(root);
  return al_make_error(err, ENOMEM, "seccomp profile: out of memory");
}
