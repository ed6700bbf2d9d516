/* Unit test for the docker backend's door to the forge gateway (issue #15,
 * gateway.h "the docker backend", docs/docker.md): a connection on the
 * gateway's socket from any process but the proxy's is closed, never
 * adopted; the proxy's is (its packets reach the gateway: a packet on it
 * is audited); once adopted nobody else can connect; closing removes the
 * socket and its directory. The refused stranger and the adopted proxy
 * differ only by their pid: that is the positive control of the check.
 * The proxy gets the run's egress counter on that connection, and what it
 * adds there is what the gateway reads (one budget, gateway.h); a counter
 * packet that is not a sealed one-page memfd is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "proxy/handoff.h"

static int connect_to(const char *path)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
    return -1;
  return fd;
}

/* A child that connects (after a byte on `go`, when go >= 0), says 'c' on
 * `said`, then for `send_source` sends a source packet on its connection;
 * it writes what its connection's recv returned ('E' for EOF) on `said` and
 * exits. */
static pid_t peer(const char *path, int listener, int go, int said, bool send_source)
{
  pid_t p = fork();
  if (p != 0)
    return p;
  close(listener); /* the listener is the supervisor's alone */
  char b;
  if (go >= 0 && read(go, &b, 1) != 1)
    _exit(2);
  int fd = connect_to(path);
  if (fd < 0)
    _exit(3);
  if (write(said, "c", 1) != 1)
    _exit(4);
  if (send_source) {
    /* the proxy first gets the run's egress counter from the supervisor
     * (a sealed page shared with the gateway) and counts 1000 bytes */
    uint64_t *counter = NULL;
    al_error ce = {0};
    if (al_handoff_recv_counter(fd, 10000, &counter, &ce) < 0)
      _exit(8);
    __atomic_add_fetch(counter, 1000, __ATOMIC_RELAXED);
    if (write(said, "n", 1) != 1)
      _exit(9);
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) < 0)
      _exit(5);
    al_error e = {0};
    if (al_handoff_send_source(fd, sp[0], &e) < 0)
      _exit(6);
  }
  ssize_t n = recv(fd, &b, 1, 0);
  if (write(said, n == 0 ? "E" : "x", 1) != 1)
    _exit(7);
  _exit(0);
}

static void test_door(void **state)
{
  (void)state;
  char ph[65];
  al_error e = {0};
  assert_int_equal(al_gateway_placeholder(ph, &e), 0);
  int audit = memfd_create("audit", MFD_CLOEXEC);
  assert_true(audit >= 0);
  al_gateway_opts o = {.api_url = "https://api.forge.test:8443",
                       .git_url = "https://forge.test:8443",
                       .repo = "acme/tally",
                       .ticket = 1,
                       .branch = "airlock/1-ab12cd34",
                       .git_token = "test-git-token-not-a-secret",
                       .ticket_token = "test-ticket-token-not-a-secret",
                       .placeholder = ph,
                       .lifetime_ms = 60000,
                       .run_id = "doortest",
                       .audit_fd = audit};
  al_gateway *g = NULL;
  assert_int_equal(al_gateway_start(&o, &g, &e), 0);

  al_gateway_listener l;
  assert_int_equal(al_gateway_listen(&l, &e), 0);
  struct stat st;
  assert_int_equal(stat(l.dir, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700); /* no other user of the host gets in */
  assert_int_equal(stat(l.path, &st), 0);
  assert_true(S_ISSOCK(st.st_mode));
  char dir[sizeof l.dir], path[sizeof l.path];
  snprintf(dir, sizeof dir, "%s", l.dir);
  snprintf(path, sizeof path, "%s", l.path);

  int sa[2], sb[2], go[2];
  assert_int_equal(pipe(sa), 0);
  assert_int_equal(pipe(sb), 0);
  assert_int_equal(pipe(go), 0);
  /* the stranger connects first; the proxy only once told to */
  pid_t stranger = peer(path, l.fd, -1, sa[1], false);
  pid_t proxy = peer(path, l.fd, go[0], sb[1], true);
  char c = 0;
  assert_int_equal(read(sa[0], &c, 1), 1);
  assert_int_equal(c, 'c');
  assert_int_equal(write(go[1], "g", 1), 1);
  assert_int_equal(al_gateway_adopt(g, &l, proxy, 10000, &e), 0);
  /* the stranger's connection was closed, not adopted */
  assert_int_equal(read(sa[0], &c, 1), 1);
  assert_int_equal(c, 'E');
  /* nobody connects after the adoption; the file is still there */
  assert_int_equal(connect_to(path), -1);
  assert_int_equal(stat(path, &st), 0);

  /* the proxy's connection is the gateway's now: it audits the packet the
   * proxy sent (a source offered on a proxy's socket: refused) */
  assert_int_equal(read(sb[0], &c, 1), 1);
  assert_int_equal(c, 'c');
  /* the counter the proxy mapped is the gateway's (one budget for both) */
  assert_int_equal(read(sb[0], &c, 1), 1);
  assert_int_equal(c, 'n');
  assert_int_equal(al_gateway_egress_used(g), 1000);
  char buf[4096] = "";
  for (int i = 0; i < 1000 && !strstr(buf, "a source offered on a proxy's socket"); i++) {
    ssize_t n = pread(audit, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    usleep(10000); /* up to 10 s for the gateway's thread: a wait, not a timing check */
  }
  assert_non_null(strstr(buf, "a source offered on a proxy's socket"));
  assert_int_equal(al_gateway_stop(g, &e), 0);
  al_gateway_free(g);
  assert_int_equal(read(sb[0], &c, 1), 1);
  assert_int_equal(c, 'E'); /* the gateway is gone: EOF on the proxy's side */

  int ws;
  assert_int_equal(waitpid(stranger, &ws, 0), stranger);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  assert_int_equal(waitpid(proxy, &ws, 0), proxy);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);

  al_gateway_listener_close(&l);
  al_gateway_listener_close(&l); /* idempotent */
  assert_int_equal(stat(path, &st), -1);
  assert_int_equal(stat(dir, &st), -1);
  close(audit);
}

/* No connection from the proxy: a timeout with a clear error, and the
 * stranger's connection is said to have been refused. */
static void test_door_timeout(void **state)
{
  (void)state;
  char ph[65];
  al_error e = {0};
  assert_int_equal(al_gateway_placeholder(ph, &e), 0);
  al_gateway_opts o = {.api_url = "https://api.forge.test:8443",
                       .git_url = "https://forge.test:8443",
                       .repo = "acme/tally",
                       .ticket = 1,
                       .branch = "airlock/1-ab12cd34",
                       .git_token = "test-git-token-not-a-secret",
                       .ticket_token = "test-ticket-token-not-a-secret",
                       .placeholder = ph,
                       .lifetime_ms = 60000,
                       .run_id = "doortest",
                       .audit_fd = -1};
  al_gateway *g = NULL;
  assert_int_equal(al_gateway_start(&o, &g, &e), 0);
  al_gateway_listener l;
  assert_int_equal(al_gateway_listen(&l, &e), 0);
  int s = connect_to(l.path); /* our own pid: not the "proxy" below */
  assert_true(s >= 0);
  pid_t nobody = fork(); /* the "proxy", which never connects */
  if (nobody == 0) {
    pause();
    _exit(0);
  }
  assert_int_equal(al_gateway_adopt(g, &l, nobody, 300, &e), -1);
  kill(nobody, SIGKILL);
  waitpid(nobody, NULL, 0);
  assert_int_equal(e.code, ETIMEDOUT);
  assert_non_null(strstr(e.msg, "refused"));
  close(s);
  al_gateway_listener_close(&l);
  al_gateway_free(g);
}

/* al_handoff_recv_counter refuses a memfd the sender could still shrink
 * (a mapping of it would SIGBUS the reader); control: the sealed one maps. */
static void test_counter_seals(void **state)
{
  (void)state;
  for (int sealed = 0; sealed < 2; sealed++) {
    int sp[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), 0);
    int m = memfd_create("c", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    assert_true(m >= 0);
    assert_int_equal(ftruncate(m, AL_HANDOFF_COUNTER_SIZE), 0);
    if (sealed)
      assert_int_equal(fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    al_error e = {0};
    assert_int_equal(al_handoff_send_counter(sp[0], m, &e), 0);
    uint64_t *c = NULL;
    int r = al_handoff_recv_counter(sp[1], 1000, &c, &e);
    if (sealed) {
      assert_int_equal(r, 0);
      assert_non_null(c);
      munmap(c, AL_HANDOFF_COUNTER_SIZE);
    } else {
      assert_int_equal(r, -1);
      assert_non_null(strstr(e.msg, "sealed"));
    }
    close(m);
    close(sp[0]);
    close(sp[1]);
  }
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  (void)remove(path);
  return 0;
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  /* the sockets go under a directory of this test's own, removed at the
   * end even when a test failed half-way (al_gateway_listen uses $TMPDIR) */
  char tmp[] = "/tmp/airlock-door-XXXXXX";
  if (!mkdtemp(tmp) || setenv("TMPDIR", tmp, 1) < 0)
    return 1;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_door),
                                     cmocka_unit_test(test_door_timeout),
                                     cmocka_unit_test(test_counter_seals)};
  int r = cmocka_run_group_tests(tests, NULL, NULL);
  nftw(tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  return r;
}
