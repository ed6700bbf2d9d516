/* cred.run-tokens (issue #15): is any of the run's real forge tokens
 * anywhere in the sandbox? The tokens never come inside, not even hashed:
 * this side collects every token-like string it can find — runs of
 * [A-Za-z0-9_] of 20 to 255 bytes in the environment and command line of
 * every process (/proc/PID/environ, cmdline) and in the files under the
 * workspace, /tmp, /run/airlock and /dev/shm — and sends out their digests
 * SHA-256(nonce ":" string)[0..16) (the nonce is per probe run). The judge
 * on the host (outer.c) computes the same digests of the real tokens and
 * looks them up. A set that had to be cut is said so: no match in an
 * incomplete set is inconclusive, never a pass. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/internal.h"
#include "probe/probes.h"

#define WORD_MIN 20
#define WORD_MAX 255
#define FILE_CAP (2u << 20)
#define SCAN_CAP (64u << 20)
#define FILES_CAP 5000

struct scan {
  const pr_ctx *ctx;
  pr_result *r;
  size_t n; /* digests in r->digests */
  bool cut; /* more distinct strings than PR_MAX_DIGESTS, or a cap hit */
  size_t procs, files;
  uint64_t bytes;
  char *buf;
};

static struct scan *g_scan; /* for the nftw callback */

static bool word_char(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void add_word(struct scan *s, const char *w, size_t n)
{
  char in[16 + 1 + WORD_MAX + 1];
  int k = snprintf(in, sizeof in, "%s:%.*s", s->ctx->nonce, (int)n, w);
  char hex[65];
  al_sha256_hex(in, (size_t)k, hex);
  explicit_bzero(in, sizeof in);
  for (size_t i = 0; i < s->n; i++)
    if (memcmp(s->r->digests + i * 17, hex, 16) == 0)
      return;
  if (s->n >= PR_MAX_DIGESTS) {
    s->cut = true;
    return;
  }
  if (s->n > 0)
    s->r->digests[s->n * 17 - 1] = ' ';
  memcpy(s->r->digests + s->n * 17, hex, 16);
  s->r->digests[s->n * 17 + 16] = '\0';
  s->n++;
}

static void scan_bytes(struct scan *s, const char *b, size_t n)
{
  size_t i = 0;
  while (i < n) {
    while (i < n && !word_char((unsigned char)b[i]))
      i++;
    size_t st = i;
    while (i < n && word_char((unsigned char)b[i]))
      i++;
    size_t l = i - st;
    if (l >= WORD_MIN && l <= WORD_MAX)
      add_word(s, b + st, l);
  }
}

static void scan_fd(struct scan *s, int fd)
{
  size_t n = 0;
  for (;;) {
    if (n >= FILE_CAP || s->bytes >= SCAN_CAP) {
      s->cut = true;
      break;
    }
    ssize_t k = read(fd, s->buf + n, FILE_CAP - n);
    if (k <= 0)
      break;
    n += (size_t)k;
    s->bytes += (uint64_t)k;
  }
  scan_bytes(s, s->buf, n);
}

static int file_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)ftw;
  struct scan *s = g_scan;
  if (flag != FTW_F || !S_ISREG(st->st_mode))
    return 0;
  if (++s->files > FILES_CAP) {
    s->cut = true;
    return 1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return 0;
  scan_fd(s, fd);
  close(fd);
  return 0;
}

PR_DECL(pr_cred_run_tokens)
{
  struct scan s = {.ctx = ctx, .r = r, .buf = malloc(FILE_CAP)};
  if (!s.buf) {
    pr_inconclusive(r, "no memory to scan");
    return;
  }
  g_scan = &s;
  DIR *d = opendir("/proc");
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (atoi(de->d_name) <= 0)
      continue;
    static const char *const what[] = {"environ", "cmdline"};
    bool any = false;
    for (size_t i = 0; i < 2; i++) {
      char p[64];
      snprintf(p, sizeof p, "/proc/%s/%s", de->d_name, what[i]);
      int fd = open(p, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        continue;
      any = true;
      scan_fd(&s, fd);
      close(fd);
    }
    s.procs += any;
  }
  if (d)
    closedir(d);
  const char *dirs[] = {ctx->ws_path, ctx->tmp_path, "/run/airlock", "/dev/shm"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(dirs); i++)
    if (dirs[i][0])
      nftw(dirs[i], file_cb, 32, FTW_PHYS | FTW_MOUNT);
  free(s.buf);
  g_scan = NULL;
  /* judged outside: the host holds the tokens */
  pr_pending(r, "%zu token-like string(s) in %zu process(es) and %zu file(s), %llu bytes%s", s.n,
             s.procs, s.files, (unsigned long long)s.bytes,
             s.cut ? "; INCOMPLETE: a cap was reached" : "");
}
