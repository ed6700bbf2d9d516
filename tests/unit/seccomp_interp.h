/* A classic-BPF interpreter over struct seccomp_data for the unit tests
 * of the seccomp programs (test_seccomp_eval.c, test_seccomp_profile.c):
 * seccomp(2) "Filter return values", the instruction set of the kernel's
 * Documentation/networking/filter.rst. Header-only (static functions). */
#ifndef AL_TEST_SECCOMP_INTERP_H
#define AL_TEST_SECCOMP_INTERP_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((uint32_t)(e)&SECCOMP_RET_DATA))
#define BAD_PROG 0xdeadbeefu /* the interpreter met an instruction it does not know */

/* Run prog on d as the kernel's seccomp does (kernel/seccomp.c
 * seccomp_check_filter lists the instructions a filter may use). */
static uint32_t bpf_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *d)
{
  uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};
  const unsigned char *data = (const unsigned char *)d;
  for (size_t pc = 0; pc < len; pc++) {
    const struct sock_filter *f = &prog[pc];
    uint32_t k = f->k;
    switch (f->code) {
    case BPF_LD | BPF_W | BPF_ABS:
      if (k > sizeof *d - 4 || k % 4)
        return BAD_PROG;
      memcpy(&A, data + k, 4);
      break;
    case BPF_LD | BPF_W | BPF_LEN:
      A = sizeof *d;
      break;
    case BPF_LDX | BPF_W | BPF_LEN:
      X = sizeof *d;
      break;
    case BPF_LD | BPF_IMM:
      A = k;
      break;
    case BPF_LDX | BPF_IMM:
      X = k;
      break;
    case BPF_LD | BPF_MEM:
      if (k >= BPF_MEMWORDS)
        return BAD_PROG;
      A = M[k];
      break;
    case BPF_LDX | BPF_MEM:
      if (k >= BPF_MEMWORDS)
        return BAD_PROG;
      X = M[k];
      break;
    case BPF_ST:
      if (k >= BPF_MEMWORDS)
        return BAD_PROG;
      M[k] = A;
      break;
    case BPF_STX:
      if (k >= BPF_MEMWORDS)
        return BAD_PROG;
      M[k] = X;
      break;
    case BPF_ALU | BPF_ADD | BPF_K:
      A += k;
      break;
    case BPF_ALU | BPF_SUB | BPF_K:
      A -= k;
      break;
    case BPF_ALU | BPF_AND | BPF_K:
      A &= k;
      break;
    case BPF_ALU | BPF_OR | BPF_K:
      A |= k;
      break;
    case BPF_ALU | BPF_LSH | BPF_K:
      A <<= (k & 31);
      break;
    case BPF_ALU | BPF_RSH | BPF_K:
      A >>= (k & 31);
      break;
    case BPF_ALU | BPF_AND | BPF_X:
      A &= X;
      break;
    case BPF_ALU | BPF_NEG:
      A = (uint32_t)-A;
      break;
    case BPF_MISC | BPF_TAX:
      X = A;
      break;
    case BPF_MISC | BPF_TXA:
      A = X;
      break;
    case BPF_RET | BPF_K:
      return k;
    case BPF_RET | BPF_A:
      return A;
    case BPF_JMP | BPF_JA:
      pc += k;
      break;
    case BPF_JMP | BPF_JEQ | BPF_K:
      pc += A == k ? f->jt : f->jf;
      break;
    case BPF_JMP | BPF_JGT | BPF_K:
      pc += A > k ? f->jt : f->jf;
      break;
    case BPF_JMP | BPF_JGE | BPF_K:
      pc += A >= k ? f->jt : f->jf;
      break;
    case BPF_JMP | BPF_JSET | BPF_K:
      pc += (A & k) ? f->jt : f->jf;
      break;
    case BPF_JMP | BPF_JEQ | BPF_X:
      pc += A == X ? f->jt : f->jf;
      break;
    case BPF_JMP | BPF_JGT | BPF_X:
      pc += A > X ? f->jt : f->jf;
      break;
    case BPF_JMP | BPF_JGE | BPF_X:
      pc += A >= X ? f->jt : f->jf;
      break;
    default:
      return BAD_PROG;
    }
  }
  return BAD_PROG; /* fell off the end: the kernel's checker refuses such a program */
}

#endif
