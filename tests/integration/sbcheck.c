/* sbcheck: one escape attempt per invocation, for the sandbox tests.
 *
 *   sbcheck ATTEMPT [ARGS...]
 *
 * Exit 0 when the attempt SUCCEEDED (the protection did not hold), 1 when
 * it was refused, 2 on a usage error. One line on stdout says what
 * happened (with the errno name), so a test log shows the evidence. The
 * same binary runs outside the sandbox as the positive control (it must
 * exit 0 there) and inside (it must exit 1, or be killed). */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <termios.h>
#include <unistd.h>

static int result(int ok, const char *what, int e)
{
  printf("%s: %s%s%s\n", ok ? "ESCAPED" : "blocked", what, e ? ": " : "",
         e ? strerrorname_np(e) : "");
  return ok ? 0 : 1;
}

static int do_write(const char *path)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return result(0, path, errno);
  close(fd);
  unlink(path);
  return result(1, path, 0);
}

static int do_read(const char *path)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return result(0, path, errno);
  char b[1];
  ssize_t n = read(fd, b, 1);
  int e = errno;
  close(fd);
  if (n < 0 && e != EISDIR)
    return result(0, path, e);
  return result(1, path, 0);
}

static int do_exists(const char *path)
{
  struct stat st;
  if (lstat(path, &st) < 0)
    return result(0, path, errno);
  return result(1, path, 0);
}

static int do_connect(const char *addr, const char *port)
{
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
  if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
    return 2;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return result(0, "socket", errno);
  struct timeval tv = {2, 0};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(s, (struct sockaddr *)&sin, sizeof sin) < 0)
    return result(0, "connect", errno);
  (void)!write(s, "sbcheck\n", 8);
  close(s);
  return result(1, "connect", 0);
}

static int do_abstract(const char *name)
{
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  size_t n = strlen(name);
  if (n + 1 > sizeof sun.sun_path)
    return 2;
  memcpy(sun.sun_path + 1, name, n);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(s, (struct sockaddr *)&sun,
              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0)
    return result(0, "abstract connect", errno);
  close(s);
  return result(1, "abstract connect", 0);
}

static int do_tiocsti(void)
{
  int m, s;
  if (openpty(&m, &s, NULL, NULL, NULL) < 0)
    return result(0, "openpty", errno);
  char c = 'x';
  if (ioctl(s, TIOCSTI, &c) < 0)
    return result(0, "TIOCSTI", errno);
  return result(1, "TIOCSTI", 0);
}

static int do_tioclinux(void)
{
  char sub = 2; /* TIOCL_SETSEL: needs a VT; EPERM from seccomp is the point */
  int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
  if (fd < 0)
    fd = 0;
  if (ioctl(fd, TIOCLINUX, &sub) < 0)
    return result(errno == EINVAL || errno == ENOTTY || errno == ENXIO, "TIOCLINUX", errno);
  return result(1, "TIOCLINUX", 0);
}

static int do_x32(void)
{
  long r = syscall(0x40000000L + SYS_getpid);
  /* Reaching here means the call was not killed: outside, the kernel
   * either serves it or answers ENOSYS when x32 is not built in. */
  return result(1, "x32 getpid returned", r < 0 ? errno : 0);
}

static int do_i386(void)
{
  /* die by SIGSEGV itself where int 0x80 faults (no i386 entry): no
   * sanitizer handler (rt_sigaction directly, SIG_DFL) */
  struct {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
  } dfl = {.handler = NULL};
  (void)syscall(SYS_rt_sigaction, SIGSEGV, &dfl, NULL, sizeof dfl.mask);
  long r;
  /* int $0x80 with eax = 20 (getpid in the i386 table) */
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
  return result(1, "int 0x80 getpid returned", r < 0 ? (int)-r : 0);
}

static int do_io_uring(void)
{
  char params[120];
  memset(params, 0, sizeof params);
  long fd = syscall(425, 4, params);
  if (fd < 0)
    return result(0, "io_uring_setup", errno);
  close((int)fd);
  return result(1, "io_uring_setup", 0);
}

static int do_unshare_user(void)
{
  if (unshare(CLONE_NEWUSER) < 0)
    return result(0, "unshare(CLONE_NEWUSER)", errno);
  return result(1, "unshare(CLONE_NEWUSER)", 0);
}

static int do_mount(void)
{
  /* outside (as root) run this under `unshare -m` so the host is untouched */
  if (mount("none", "/tmp", "tmpfs", 0, "size=1m") < 0)
    return result(0, "mount tmpfs", errno);
  umount("/tmp");
  return result(1, "mount tmpfs", 0);
}

static int do_ptrace(void)
{
  pid_t c = fork();
  if (c == 0) {
    pause();
    _exit(0);
  }
  int ok = ptrace(PTRACE_ATTACH, c, NULL, NULL) == 0;
  int e = errno;
  kill(c, SIGKILL);
  waitpid(c, NULL, 0);
  return result(ok, "ptrace(PTRACE_ATTACH)", ok ? 0 : e);
}

static int do_clone3(void)
{
  long r = syscall(435, NULL, 0);
  /* outside: EINVAL/EFAULT (it parsed the call); inside: ENOSYS */
  return result(r >= 0 || errno != ENOSYS, "clone3", errno);
}

static int do_raw(void)
{
  int s = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
  if (s < 0)
    return result(0, "raw socket", errno);
  close(s);
  return result(1, "raw socket", 0);
}

static int do_packet(void)
{
  int s = socket(AF_PACKET, SOCK_RAW, 0);
  if (s < 0)
    return result(0, "packet socket", errno);
  close(s);
  return result(1, "packet socket", 0);
}

static int do_vsock(void)
{
  int s = socket(40 /* AF_VSOCK */, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return result(0, "AF_VSOCK socket", errno);
  close(s);
  return result(1, "AF_VSOCK socket", 0);
}

static int do_family_highbits(void)
{
  /* AF_PACKET with bits above 32 set: the kernel reads an int */
  long s = syscall(SYS_socket, 0x100000011L, SOCK_RAW, 0);
  if (s < 0)
    return result(0, "socket(0x1_0000_0011)", errno);
  close((int)s);
  return result(1, "socket(0x1_0000_0011)", 0);
}

static int do_newsyscall(void)
{
  /* open_tree_attr (467 on x86_64), newer than Debian 12's libseccomp: the
   * kernel parses it (EFAULT/EINVAL/EBADF) unless the filter answers ENOSYS */
  long r = syscall(467, -1, NULL, 0, NULL, 0);
  return result(r >= 0 || errno != ENOSYS, "syscall 467 (open_tree_attr)", errno);
}

static int do_fd(const char *n)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%s", n);
  return do_exists(path);
}

static int do_forkbomb(const char *maxs)
{
  int max = atoi(maxs), n = 0;
  pid_t *kids = calloc((size_t)max, sizeof(pid_t));
  for (; n < max; n++) {
    pid_t p = fork();
    if (p < 0)
      break;
    if (p == 0) {
      pause();
      _exit(0);
    }
    kids[n] = p;
  }
  int e = errno;
  for (int i = 0; i < n; i++)
    kill(kids[i], SIGKILL);
  for (int i = 0; i < n; i++)
    waitpid(kids[i], NULL, 0);
  printf("forked %d of %d\n", n, max);
  return result(n == max, "fork bomb", n == max ? 0 : e);
}

static int do_memhog(const char *mbs)
{
  size_t mb = (size_t)atol(mbs);
  for (size_t i = 0; i < mb; i++) {
    char *p = malloc(1 << 20);
    if (!p)
      return result(0, "malloc", ENOMEM);
    memset(p, (int)i, 1 << 20);
  }
  return result(1, "allocated and touched", 0);
}

static int do_statfs(const char *path)
{
  struct statfs sf;
  if (statfs(path, &sf) < 0)
    return result(0, "statfs", errno);
  printf("%s type=0x%lx bytes=%llu\n", path, (unsigned long)sf.f_type,
         (unsigned long long)sf.f_blocks * (unsigned long long)sf.f_bsize);
  return 0;
}

static int do_sleep_detached(void)
{
  /* A process that tries to outlive the run: double fork + setsid. */
  pid_t p = fork();
  if (p == 0) {
    setsid();
    if (fork() == 0) {
      for (;;)
        pause();
    }
    _exit(0);
  }
  waitpid(p, NULL, 0);
  for (;;)
    pause();
}

/* stdin-read NAME: read NAME relative to fd 0 (a directory handed in as
 * stdin is a handle on the host's tree: issue #14). */
static int do_stdin_read(const char *name)
{
  int fd = openat(0, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    printf("refused: openat(0, %s): %s\n", name, strerrorname_np(errno));
    return 1;
  }
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  printf("SUCCEEDED: read through fd 0: %s", buf);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2)
    return 2;
  const char *a = argv[1];
  const char *x = argc > 2 ? argv[2] : "";
  const char *y = argc > 3 ? argv[3] : "";
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(a, "write"))
    return do_write(x);
  if (!strcmp(a, "stdin-read"))
    return do_stdin_read(x);
  if (!strcmp(a, "read"))
    return do_read(x);
  if (!strcmp(a, "exists"))
    return do_exists(x);
  if (!strcmp(a, "connect"))
    return do_connect(x, y);
  if (!strcmp(a, "abstract"))
    return do_abstract(x);
  if (!strcmp(a, "tiocsti"))
    return do_tiocsti();
  if (!strcmp(a, "tioclinux"))
    return do_tioclinux();
  if (!strcmp(a, "x32"))
    return do_x32();
  if (!strcmp(a, "i386"))
    return do_i386();
  if (!strcmp(a, "io_uring"))
    return do_io_uring();
  if (!strcmp(a, "unshare_user"))
    return do_unshare_user();
  if (!strcmp(a, "mount"))
    return do_mount();
  if (!strcmp(a, "ptrace"))
    return do_ptrace();
  if (!strcmp(a, "clone3"))
    return do_clone3();
  if (!strcmp(a, "raw"))
    return do_raw();
  if (!strcmp(a, "packet"))
    return do_packet();
  if (!strcmp(a, "fd"))
    return do_fd(x);
  if (!strcmp(a, "vsock"))
    return do_vsock();
  if (!strcmp(a, "family_highbits"))
    return do_family_highbits();
  if (!strcmp(a, "newsyscall"))
    return do_newsyscall();
  if (!strcmp(a, "forkbomb"))
    return do_forkbomb(x);
  if (!strcmp(a, "memhog"))
    return do_memhog(x);
  if (!strcmp(a, "statfs"))
    return do_statfs(x);
  if (!strcmp(a, "linger"))
    return do_sleep_detached();
  return 2;
}
