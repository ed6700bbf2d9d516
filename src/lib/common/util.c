#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "common/lazycrypto.h"

void al_freep(void *p)
{
  free(*(void **)p);
}

void al_closep(int *fd)
{
  if (*fd >= 0) {
    int saved = errno;
    close(*fd);
    errno = saved;
    *fd = -1;
  }
}

void *al_steal_ptr_(void **pp)
{
  void *p = *pp;
  *pp = NULL;
  return p;
}

int al_steal_fd(int *fd)
{
  int r = *fd;
  *fd = -1;
  return r;
}

int al_write_all(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

ssize_t al_read_all(int fd, void *buf, size_t len)
{
  char *p = buf;
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, p + got, len - got);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

int al_read_file(const char *path, size_t max, char **out, size_t *len_out, al_error *err)
{
  al_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return al_make_error(err, errno, "open `%s`", path);
  size_t cap = 4096, len = 0;
  al_autofree char *buf = al_xmalloc(cap + 1);
  for (;;) {
    if (len == cap) {
      if (cap >= max)
        return al_make_error(err, EFBIG, "read `%s` (larger than %zu bytes)", path, max);
      cap = cap * 2 > max ? max : cap * 2;
      buf = al_xrealloc(buf, cap + 1);
    }
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return al_make_error(err, errno, "read `%s`", path);
    }
    if (n == 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  if (len_out)
    *len_out = len;
  *out = al_steal_ptr(&buf);
  return 0;
}

int al_write_file(const char *path, const void *buf, size_t len, int mode, al_error *err)
{
  al_autoclose int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return al_make_error(err, errno, "open `%s`", path);
  int r = al_write_all(fd, buf, len);
  if (r < 0)
    return al_make_error(err, -r, "write `%s`", path);
  return 0;
}

static void oom(void)
{
  static const char m[] = "airlock: out of memory\n";
  (void)!write(2, m, sizeof m - 1);
  abort();
}

void *al_xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (!p)
    oom();
  return p;
}

void *al_xcalloc(size_t n, size_t size)
{
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    oom();
  return p;
}

void *al_xrealloc(void *p, size_t n)
{
  void *q = realloc(p, n ? n : 1);
  if (!q)
    oom();
  return q;
}

char *al_xstrdup(const char *s)
{
  char *p = strdup(s ? s : "");
  if (!p)
    oom();
  return p;
}

char *al_strdup_printf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0)
    oom();
  return s;
}

bool al_http_header_number(const char *line, size_t n, const char *name, long long *out)
{
  size_t nl = strlen(name);
  if (n <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
    return false;
  size_t i = nl + 1;
  while (i < n && (line[i] == ' ' || line[i] == '\t'))
    i++;
  long long v = 0;
  size_t d = 0;
  while (i < n && isdigit((unsigned char)line[i]) && d < 18) {
    v = v * 10 + (line[i++] - '0');
    d++;
  }
  if (d == 0)
    return false;
  *out = v;
  return true;
}

int al_hex_digit(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

uint64_t al_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t al_now_ms(void)
{
  return al_now_ns() / 1000000ull;
}

void al_time_iso_ms(char out[32])
{
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, 32 - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void al_sha256_hex(const void *buf, size_t len, char hex[65])
{
  unsigned char md[32];
  al_lazy_sha256(buf, len, md);
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < 32; i++) {
    hex[2 * i] = digits[md[i] >> 4];
    hex[2 * i + 1] = digits[md[i] & 15];
  }
  hex[64] = '\0';
}

int al_random_hex(char *out, size_t bytes, al_error *err)
{
  unsigned char buf[64];
  if (bytes > sizeof buf)
    return al_error_set(err, EINVAL, "random id of %zu bytes", bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return al_make_error(err, errno, "getrandom");
    }
    got += (size_t)n;
  }
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < bytes; i++) {
    out[2 * i] = digits[buf[i] >> 4];
    out[2 * i + 1] = digits[buf[i] & 15];
  }
  out[2 * bytes] = '\0';
  return 0;
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int al_close_fds_from(int lowfd, const int *keep, size_t nkeep)
{
  int sorted[16];
  if (nkeep > AL_ARRAY_SIZE(sorted))
    return -EINVAL;
  for (size_t i = 0; i < nkeep; i++)
    sorted[i] = keep[i];
  qsort(sorted, nkeep, sizeof(int), cmp_int);
  unsigned int from = (unsigned int)lowfd;
  for (size_t i = 0; i <= nkeep; i++) {
    unsigned int to = i < nkeep ? (unsigned int)sorted[i] - 1 : UINT_MAX;
    if (i < nkeep && sorted[i] < lowfd)
      continue;
    if (to >= from || i == nkeep) {
      if (syscall(SYS_close_range, from, to, 0) < 0) {
        if (errno != ENOSYS)
          return -errno;
        /* Fallback for old kernels: close one by one up to the rlimit. */
        long max = sysconf(_SC_OPEN_MAX);
        unsigned int end = to == UINT_MAX ? (unsigned int)(max > 0 ? max : 65536) : to;
        for (unsigned int fd = from; fd <= end; fd++)
          close((int)fd);
      }
    }
    if (i < nkeep)
      from = (unsigned int)sorted[i] + 1;
  }
  return 0;
}

int al_set_cloexec(int fd, bool on)
{
  int fl = fcntl(fd, F_GETFD);
  if (fl < 0)
    return -errno;
  fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
  return fcntl(fd, F_SETFD, fl) < 0 ? -errno : 0;
}

int al_set_nonblock(int fd, bool on)
{
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0)
    return -errno;
  fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
  return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

int al_parse_decimal(const char **s, uint64_t *out)
{
  const char *p = *s;
  if (!isdigit((unsigned char)*p) || (p[0] == '0' && isdigit((unsigned char)p[1])))
    return -1;
  uint64_t v = 0;
  while (isdigit((unsigned char)*p)) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10)
      return -1;
    v = v * 10 + d;
    p++;
  }
  *s = p;
  *out = v;
  return 0;
}

int al_parse_size(const char *s, uint64_t *out, const char **why)
{
  static const struct {
    const char *suffix;
    uint64_t mult;
  } units[] = {
      {"", 1},
      {"B", 1},
      {"k", 1024},
      {"K", 1024},
      {"KiB", 1024},
      {"kB", 1000},
      {"M", 1024 * 1024},
      {"MiB", 1024 * 1024},
      {"MB", 1000000},
      {"G", 1ull << 30},
      {"GiB", 1ull << 30},
      {"GB", 1000000000ull},
      {"T", 1ull << 40},
      {"TiB", 1ull << 40},
      {"TB", 1000000000000ull},
  };
  const char *p = s;
  uint64_t v;
  if (!s || al_parse_decimal(&p, &v) < 0) {
    *why = "a size is a whole number (no sign, no leading zero) with an optional unit (B; KiB, "
           "MiB, GiB, TiB or K, M, G, T; kB, MB, GB, TB)";
    return -1;
  }
  for (size_t i = 0; i < AL_ARRAY_SIZE(units); i++) {
    if (strcmp(p, units[i].suffix) == 0) {
      if (units[i].mult && v > UINT64_MAX / units[i].mult) {
        *why = "size too large";
        return -1;
      }
      *out = v * units[i].mult;
      return 0;
    }
  }
  *why = *p == '.' || *p == ','
             ? "a size is a whole number: no fraction (write 1536MiB, not 1.5GiB)"
             : "unknown size unit (use B; KiB, MiB, GiB, TiB or K, M, G, T for powers of 1024; "
               "kB, MB, GB or TB for powers of 1000; case matters)";
  return -1;
}

int al_parse_duration_ms(const char *s, uint64_t *out, const char **why)
{
  static const struct {
    const char *suffix;
    uint64_t mult;
  } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
  const char *p = s;
  uint64_t total = 0;
  if (!s || !*s) {
    *why = "a duration is a number with a unit, e.g. 500ms, 30s, 15m, 1h, 1h30m";
    return -1;
  }
  while (*p) {
    uint64_t v;
    if (al_parse_decimal(&p, &v) < 0) {
      *why = "a duration is a number (no sign, no leading zero) with a unit, e.g. 500ms, 30s, "
             "15m, 1h, 1h30m";
      return -1;
    }
    size_t best = SIZE_MAX, bestlen = 0;
    for (size_t i = 0; i < AL_ARRAY_SIZE(units); i++) {
      size_t l = strlen(units[i].suffix);
      if (strncmp(p, units[i].suffix, l) == 0 && l > bestlen && !isalpha((unsigned char)p[l])) {
        best = i;
        bestlen = l;
      }
    }
    if (best == SIZE_MAX) {
      *why = "a duration needs a unit: ms, s, m, h or d";
      return -1;
    }
    if (v > UINT64_MAX / units[best].mult / 2) {
      *why = "duration too large";
      return -1;
    }
    total += v * units[best].mult;
    p += bestlen;
  }
  *out = total;
  return 0;
}

int al_wait_exited(pid_t pid, int timeout_ms)
{
  int pfd = pidfd_open(pid, 0);
  if (pfd >= 0) {
    uint64_t end = al_now_ms() + (uint64_t)timeout_ms;
    int r;
    for (;;) {
      uint64_t now = al_now_ms();
      struct pollfd p = {.fd = pfd, .events = POLLIN};
      r = poll(&p, 1, now >= end ? 0 : (int)(end - now));
      if (r >= 0 || errno != EINTR)
        break;
    }
    close(pfd);
    return r > 0 ? 1 : 0;
  }
  for (int i = 0; i < timeout_ms; i++) {
    siginfo_t si = {0};
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == pid)
      return 1;
    usleep(1000);
  }
  return 0;
}

long al_utf8_decode(const unsigned char *p, size_t n, size_t *len)
{
  *len = 1;
  if (p[0] < 0x80)
    return p[0];
  size_t k = (p[0] >> 5) == 6 ? 2 : (p[0] >> 4) == 14 ? 3 : (p[0] >> 3) == 30 ? 4 : 0;
  if (!k || k > n)
    return -1;
  long cp = p[0] & (0x7f >> k);
  for (size_t i = 1; i < k; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return -1;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  static const long min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return -1;
  *len = k;
  return cp;
}

void al_utf8_cut(char *s)
{
  size_t n = strlen(s);
  size_t i = n;
  while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80 && n - i < 3)
    i--; /* back over at most three continuation bytes to the lead */
  if (i == 0 || (unsigned char)s[i - 1] < 0x80)
    return;
  size_t len;
  if (al_utf8_decode((const unsigned char *)s + i - 1, n - i + 1, &len) < 0 || len != n - i + 1)
    s[i - 1] = '\0';
}
