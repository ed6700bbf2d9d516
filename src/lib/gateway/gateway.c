/* The forge gateway's process: start, hand-shake with the supervisor, serve,
 * stop. See gateway.h for the picture; conn.c serves one connection.
 *
 * Supervisor -> gateway, on the token pipe: three strings, each a 4-byte
 * length (host order) and the bytes: git token, ticket token, placeholder;
 * with a ticket host (o->tk.kind) two more: the vendor credential's
 * Authorization value upstream, and the credential itself (for redaction).
 * Gateway -> supervisor, on the status pipe: "CA <n>\n" + n bytes of PEM,
 * then "READY\n", or at any point "ERR <message>\n" and exit. */
#include "gateway/gateway.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/secmem.h"
#include "common/log.h"
#include "common/redact.h"
#include "common/memfd.h"
#include "common/util.h"
#include "gateway/server.h"
#include "net/host.h"
#include "sandbox/sandbox.h"
#include "tickets/tickets.h"

#define START_TIMEOUT_MS 10000
#define TOKEN_MAX 8192

struct al_gateway {
  pid_t pid;
  char *ca_pem;
  al_proxy_handoff handoff;
  int status_fd;
  int egress_fd;        /* the shared egress counter's memfd (sealed), for a proxy in a container */
  uint64_t *egress_map; /* its page, MAP_SHARED: the child and the proxy inherit it */
  bool stopped;
  int exit_status;
};

/* ---- URLs ---- */

/* "https://host[:port][/prefix]" -> canonical host, port, prefix ("" or
 * "/a/b", no trailing slash). */
/* The run's rule table: GitLab's (rules_gitlab.h; its generic half in
 * rules, for the refusal texts and the push checks) or GitHub's. */
static int bind_rules(const al_gateway_opts *o, al_gw_rules *rules, al_gw_gl_rules *gl,
                      const char *ap, const char *gp, al_error *err)
{
  if (o->forge_kind != AL_FORGE_GITLAB)
    return al_gw_rules_init(rules, o->repo, o->ticket, o->branch, o->max_comments, ap, gp, err);
  if (al_gw_gl_rules_init(gl, o->repo, o->project_id, o->ticket, o->branch, o->max_comments, ap, gp,
                          err) < 0)
    return -1;
  *rules = gl->base;
  return 0;
}

static int parse_url(const char *what, const char *url, al_host *host, uint16_t *port, char *prefix,
                     size_t prefix_cap, al_error *err)
{
  const char *why = "not https://host[:port][/prefix]";
  if (!url || strncmp(url, "https://", 8) != 0)
    goto bad;
  const char *a = url + 8;
  size_t al = strcspn(a, "/?#");
  if (a[al] == '?' || a[al] == '#' || memchr(a, '@', al))
    goto bad;
  const char *colon = NULL;
  if (al > 0 && a[0] == '[') {
    const char *rb = memchr(a, ']', al);
    if (!rb)
      goto bad;
    colon = rb + 1 < a + al && rb[1] == ':' ? rb + 1 : NULL;
  } else {
    colon = memchr(a, ':', al);
  }
  if (colon) {
    if (al_authority_parse(a, al, host, port, &why) < 0)
      goto bad;
  } else {
    const char *h = a;
    size_t hl = al;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
      h++;
      hl -= 2;
    }
    if (al_host_canonicalize(h, hl, host, &why) < 0)
      goto bad;
    *port = 443;
  }
  const char *p = a + al;
  size_t pl = strlen(p);
  while (pl > 0 && p[pl - 1] == '/')
    pl--;
  if (pl >= prefix_cap)
    goto bad;
  memcpy(prefix, p, pl);
  prefix[pl] = '\0';
  return 0;
bad:
  return al_error_set(err, EINVAL, "gateway: %s `%s`: %s", what, url ? url : "(null)", why);
}

/* The ticket host of o->tk (kind 1 or 2): its URL parsed, the rules bound
 * to the key (which must be of tk.project), and a host:port that is none
 * of the forge's (a request to it is decided by one table only). */
static int tk_bind(const al_gateway_opts *o, const al_host *ah, uint16_t apn, const al_host *gh,
                   uint16_t gpn, al_host *th, uint16_t *tpn, al_gw_tk_rules *rules, al_error *err)
{
  char tp[128];
  if (o->tk.kind != AL_TK_JIRA && o->tk.kind != AL_TK_LINEAR)
    return al_error_set(err, EINVAL, "gateway: ticket kind %d has no host rules", o->tk.kind);
  if (parse_url("ticket.url", o->tk.url, th, tpn, tp, sizeof tp, err) < 0)
    return -1;
  if ((strcmp(th->name, ah->name) == 0 && *tpn == apn) ||
      (strcmp(th->name, gh->name) == 0 && *tpn == gpn))
    return al_error_set(err, EINVAL,
                        "gateway: ticket.url `%s` names a forge host and port; the ticket host "
                        "must be its own",
                        o->tk.url);
  al_tk_target t;
  if (!o->tk.key ||
      al_tk_target_parse((al_tk_kind)o->tk.kind, o->tk.key, o->tk.project, &t, err) < 0)
    return o->tk.key ? al_error_wrap(err, "gateway")
                     : al_error_set(err, EINVAL, "gateway: no ticket key");
  return al_gw_tk_rules_init(rules, o->tk.kind, t.key, o->tk.id ? o->tk.id : "", tp,
                             o->max_comments, err);
}

/* The Authorization value the vendor takes for this credential, as
 * tickets/client.c sends it (Atlassian "Basic auth for REST APIs": Basic
 * base64(e-mail:API token); OAuth 2.0: Bearer; Linear "Authentication": an
 * API key bare, an OAuth token as Bearer). Secret memory, or NULL. */
static char *tk_auth_value(const al_gateway_opts *o)
{
  const char *cred = o->tk.credential;
  bool basic = o->tk.kind == AL_TK_JIRA && o->tk.user && o->tk.user[0];
  bool bare = o->tk.kind == AL_TK_LINEAR && strncmp(cred, "lin_api_", 8) == 0;
  size_t pl = strlen(cred) + (basic ? strlen(o->tk.user) + 1 : 0);
  size_t cap = 4 * ((pl + 2) / 3) + 16;
  char *plain = malloc(pl + 1), *b64 = malloc(cap), *out = NULL;
  if (plain && b64) {
    int n;
    if (basic) {
      snprintf(plain, pl + 1, "%s:%s", o->tk.user, cred);
      int bl = EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)plain, (int)pl);
      if (bl > 0) {
        char *v = malloc((size_t)bl + 8);
        if (v) {
          n = snprintf(v, (size_t)bl + 8, "Basic %.*s", bl, b64);
          out = n > 0 ? al_secret_dupn(v, (size_t)n) : NULL;
          OPENSSL_cleanse(v, (size_t)bl + 8);
          free(v);
        }
      }
    } else {
      n = snprintf(b64, cap, "%s%s", bare ? "" : "Bearer ", cred);
      out = n > 0 ? al_secret_dupn(b64, (size_t)n) : NULL;
    }
  }
  if (plain)
    OPENSSL_cleanse(plain, pl + 1);
  if (b64)
    OPENSSL_cleanse(b64, cap);
  free(plain);
  free(b64);
  return out;
}

/* ---- the serving process ---- */

static al_gw_server *g_server; /* the child's one server, for al_gw_decision */

void al_gw_decision(al_gw_server *s, void *line_object)
{
  json_t *j = line_object;
  json_t *out = json_object();
  char b[32];
  al_time_iso_ms(b);
  json_object_set_new(out, "time", json_string(b));
  json_object_set_new(out, "component", json_string("gateway"));
  json_object_set_new(out, "run", json_string(s->run_id));
  json_object_update(out, j);
  json_decref(j);
  char *line = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(out);
  if (!line)
    return;
  char *red = al_redact(line); /* the tokens and the placeholder are registered */
  free(line);
  size_t l = strlen(red);
  red[l] = '\n';
  if (s->decisions_fd >= 0) {
    pthread_mutex_lock(&s->mu);
    (void)al_write_all(s->decisions_fd, red, l + 1);
    pthread_mutex_unlock(&s->mu);
  }
  free(red);
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
  char b[AL_ERROR_MSG_MAX + 16];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (n > 0)
    (void)al_write_all(fd, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

static char *read_secret(int fd, al_error *err)
{
  uint32_t n;
  char tmp[TOKEN_MAX + 1];
  if (al_read_all(fd, &n, sizeof n) != (ssize_t)sizeof n || n == 0 || n > TOKEN_MAX) {
    al_error_set(err, EPROTO, "gateway: bad secret on the pipe");
    return NULL;
  }
  if (al_read_all(fd, tmp, n) != (ssize_t)n || memchr(tmp, 0, n)) {
    OPENSSL_cleanse(tmp, sizeof tmp);
    al_error_set(err, EPROTO, "gateway: short secret on the pipe");
    return NULL;
  }
  char *buf = al_secret_dupn(tmp, n);
  OPENSSL_cleanse(tmp, sizeof tmp);
  if (!buf)
    al_make_error(err, errno, "gateway: secret memory");
  return buf;
}

/* A verifying TLS client context (*ctx) trusting ca_file (named `what` in
 * messages), or the system store when NULL. */
static int upstream_ctx(SSL_CTX **ctx, const char *what, const char *ca_file, al_error *err)
{
  SSL_CTX *x = *ctx = SSL_CTX_new(TLS_client_method());
  if (!x)
    return al_error_set(err, EIO, "gateway: SSL_CTX_new (client)");
  SSL_CTX_set_min_proto_version(x, TLS1_2_VERSION);
  SSL_CTX_set_options(x, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                             SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(x, SSL_MODE_AUTO_RETRY);
  SSL_CTX_set_verify(x, SSL_VERIFY_PEER, NULL);
  /* Loaded now, before the process confines itself. */
  if (ca_file) {
    if (SSL_CTX_load_verify_locations(x, ca_file, NULL) != 1)
      return al_error_set(err, EIO, "gateway: %s `%s`: not a readable PEM bundle", what, ca_file);
  } else if (SSL_CTX_load_verify_locations(x, X509_get_default_cert_file(), NULL) != 1 &&
             SSL_CTX_set_default_verify_paths(x) != 1) {
    return al_error_set(err, EIO, "gateway: the system CA store");
  }
  ERR_clear_error();
  return 0;
}

/* One packet from fd (the supervisor's socketpair). Returns 0 to go on, 1
 * when the proxy is done (EOF or a socket error). */
static int serve_one(al_gw_server *s, int fd, char *early)
{
  al_handoff_msg m;
  int cfd, ufd;
  al_error e = {0};
  int r = al_handoff_recv(fd, &m, early, &cfd, &ufd, &e);
  if (r == 0)
    return 1;
  if (r < 0) {
    json_t *j = json_pack("{s:s,s:s,s:s}", "event", "handoff", "decision", "deny", "reason",
                          "handoff-malformed");
    json_object_set_new(j, "detail", json_string(e.msg));
    al_gw_decision(s, j);
    return e.code != EPROTO ? 1 : 0;
  }
  al_gw_conn_spawn(s, &m, early, cfd, ufd);
  return 0;
}

/* Serve hand-off packets from hsock (the supervisor's socketpair, the
 * proxy's packets) until SIGTERM or hsock's EOF. */
static void serve(al_gw_server *s, int hsock)
{
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  static char early[AL_HANDOFF_EARLY_MAX];
  struct pollfd p[2];
  p[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
  p[1] = (struct pollfd){.fd = hsock, .events = POLLIN};
  for (;;) {
    int n = poll(p, 2, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 || (p[0].revents & POLLIN))
      break;
    if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && serve_one(s, hsock, early) == 1)
      break; /* the proxy and the supervisor closed their ends */
  }
  al_gw_conn_shutdown_all(s, 3000);
}

/* The child, from fork to exit. Dying is right here (nothing to unwind):
 * every failure writes "ERR ..." to the supervisor and exits. */
__attribute__((noreturn)) static void child_main(const al_gateway_opts *o, int tok_fd, int st_fd,
                                                 int hsock, pid_t parent, uint64_t *egress_map)
{
  static al_gw_server srv;
  al_gw_server *s = &srv;
  al_error e = {0};
  al_host ah, gh;
  char ap[128], gp[128];

  memset(s, 0, sizeof *s);
  g_server = s;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->idle, NULL);
  s->decisions_fd = o->decisions_fd;
  s->egress_budget = o->egress_budget;
  s->egress_used = egress_map;
  snprintf(s->run_id, sizeof s->run_id, "%s", o->run_id ? o->run_id : "");
  signal(SIGPIPE, SIG_IGN);
  if (parse_url("forge.api_url", o->api_url, &ah, &s->api_port, ap, sizeof ap, &e) < 0 ||
      parse_url("forge.git_url", o->git_url, &gh, &s->git_port, gp, sizeof gp, &e) < 0 ||
      bind_rules(o, &s->rules, &s->gl, ap, gp, &e) < 0)
    goto fail;
  s->gitlab = o->forge_kind == AL_FORGE_GITLAB;
  snprintf(s->api_host, sizeof s->api_host, "%s", ah.name);
  snprintf(s->git_host, sizeof s->git_host, "%s", gh.name);
  if (o->tk.kind) {
    al_host th;
    if (tk_bind(o, &ah, s->api_port, &gh, s->git_port, &th, &s->tk_port, &s->tk, &e) < 0)
      goto fail;
    s->has_tk = true;
    snprintf(s->tk_host, sizeof s->tk_host, "%s", th.name);
  }
  if (!(s->git_token = read_secret(tok_fd, &e)) || !(s->ticket_token = read_secret(tok_fd, &e)) ||
      !(s->placeholder = read_secret(tok_fd, &e)) ||
      (s->has_tk &&
       (!(s->tk_auth = read_secret(tok_fd, &e)) || !(s->tk_credential = read_secret(tok_fd, &e)))))
    goto fail;
  close(tok_fd);
  al_redact_register(s->git_token);
  al_redact_register(s->ticket_token);
  al_redact_register(s->placeholder);
  if (s->has_tk) {
    al_redact_register(s->tk_auth);
    al_redact_register(s->tk_credential);
  }
  const char *hosts[3] = {s->api_host, s->git_host, s->tk_host};
  if (al_gw_ca_make(&s->ca, hosts, s->has_tk ? 3 : 2, o->lifetime_ms, o->run_id, &e) < 0)
    goto fail;
  say(st_fd, "CA %zu\n", strlen(s->ca.ca_pem));
  if (al_write_all(st_fd, s->ca.ca_pem, strlen(s->ca.ca_pem)) < 0)
    _exit(1);
  if (al_gw_tls_setup(s, &e) < 0 || upstream_ctx(&s->up_ctx, "forge.ca_file", o->ca_file, &e) < 0 ||
      (s->has_tk && upstream_ctx(&s->tk_up_ctx, "ticket.ca_file", o->tk.ca_file, &e) < 0))
    goto fail;
  /* The gateway parses what a hostile agent sends: nobody, no capabilities,
   * no filesystem writes, no exec; it makes no socket of its own. */
  if (al_confine_service(&e) < 0)
    goto fail;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
    _exit(1);
  prctl(PR_SET_DUMPABLE, 0);
  say(st_fd, "READY\n");
  close(st_fd);
  serve(s, hsock);
  _exit(0);
fail:
  say(st_fd, "ERR %s\n", e.msg);
  _exit(1);
}

/* ---- the supervisor's side ---- */

static int put_secret(int fd, const char *s)
{
  uint32_t n = (uint32_t)strlen(s);
  return al_write_all(fd, &n, sizeof n) < 0 || al_write_all(fd, s, n) < 0 ? -1 : 0;
}

/* Read a line from fd within the deadline (into b, NUL-terminated). */
static int read_line(int fd, char *b, size_t cap, uint64_t deadline)
{
  size_t n = 0;
  while (n + 1 < cap) {
    int64_t left = (int64_t)(deadline - al_now_ms());
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
      return -1;
    ssize_t r = read(fd, b + n, 1);
    if (r <= 0)
      return -1;
    if (b[n] == '\n') {
      b[n] = '\0';
      return 0;
    }
    n++;
  }
  return -1;
}

static int read_exact(int fd, char *b, size_t n, uint64_t deadline)
{
  size_t got = 0;
  while (got < n) {
    int64_t left = (int64_t)(deadline - al_now_ms());
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
      return -1;
    ssize_t r = read(fd, b + got, n - got);
    if (r <= 0)
      return -1;
    got += (size_t)r;
  }
  return 0;
}

int al_gateway_start(const al_gateway_opts *o, al_gateway **out, al_error *err)
{
  al_host ah = {0}, gh = {0};
  uint16_t apn = 0, gpn = 0;
  char ap[128], gp[128];
  al_gw_rules rules;
  al_gw_gl_rules gl;

  *out = NULL;
  if (parse_url("forge.api_url", o->api_url, &ah, &apn, ap, sizeof ap, err) < 0 ||
      parse_url("forge.git_url", o->git_url, &gh, &gpn, gp, sizeof gp, err) < 0 ||
      bind_rules(o, &rules, &gl, ap, gp, err) < 0)
    return -1;
  if (!o->git_token || !o->git_token[0] || !o->ticket_token || !o->ticket_token[0] ||
      strlen(o->git_token) > TOKEN_MAX || strlen(o->ticket_token) > TOKEN_MAX)
    return al_error_set(err, EINVAL, "gateway: a token is empty or too long");
  if (!o->placeholder || strlen(o->placeholder) < 16 || strlen(o->placeholder) > 64)
    return al_error_set(err, EINVAL, "gateway: the placeholder must be 16..64 characters");
  al_host th = {0};
  uint16_t tpn = 0;
  al_gw_tk_rules tkr;
  if (o->tk.kind) {
    if (tk_bind(o, &ah, apn, &gh, gpn, &th, &tpn, &tkr, err) < 0)
      return -1;
    if (!o->tk.credential || !o->tk.credential[0] || strlen(o->tk.credential) > TOKEN_MAX / 2 ||
        (o->tk.user && strlen(o->tk.user) > 256))
      return al_error_set(err, EINVAL, "gateway: the ticket credential is empty or too long");
  }

  /* The run's egress counter, shared by the proxy and this gateway (one
   * sealed page: a proxy in a container maps it too, and can neither
   * shrink it under us nor grow it). */
  int efd = al_sealed_memfd("airlock-egress", AL_HANDOFF_COUNTER_SIZE, F_SEAL_SEAL, err);
  if (efd < 0)
    return al_error_wrap(err, "gateway: the shared egress counter");
  uint64_t *emap = mmap(NULL, AL_HANDOFF_COUNTER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, efd, 0);
  if (emap == MAP_FAILED) {
    int e = errno;
    close(efd);
    return al_make_error(err, e, "gateway: the shared egress counter");
  }
  int sp[2] = {-1, -1}, tp[2] = {-1, -1}, bp[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(tp, O_CLOEXEC) < 0 ||
      pipe2(bp, O_CLOEXEC) < 0) {
    int e = errno;
    for (int i = 0; i < 2; i++) {
      if (sp[i] >= 0)
        close(sp[i]);
      if (tp[i] >= 0)
        close(tp[i]);
      if (bp[i] >= 0)
        close(bp[i]);
    }
    munmap(emap, AL_HANDOFF_COUNTER_SIZE);
    close(efd);
    return al_make_error(err, e, "gateway: socketpair/pipe");
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sp[0]), close(sp[1]), close(tp[0]), close(tp[1]), close(bp[0]), close(bp[1]);
    munmap(emap, AL_HANDOFF_COUNTER_SIZE);
    close(efd);
    return al_make_error(err, e, "fork the forge gateway");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NAME, "airlock-gateway");
    prctl(PR_SET_DUMPABLE, 0);
    int keep[4] = {o->decisions_fd, tp[0], bp[1], sp[1]};
    al_close_fds_from(3, keep, 4);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    child_main(o, tp[0], bp[1], sp[1], parent, emap);
  }
  close(sp[1]);
  close(tp[0]);
  close(bp[1]);
  al_gateway *g = al_xcalloc(1, sizeof *g);
  g->pid = pid;
  g->status_fd = bp[0];
  g->handoff.fd = sp[0];
  g->egress_fd = efd;
  g->egress_map = emap;
  g->handoff.egress_used = emap;
  snprintf(g->handoff.hosts[0].host, sizeof g->handoff.hosts[0].host, "%s", ah.name);
  g->handoff.hosts[0].port = apn;
  g->handoff.n_hosts = 1;
  if (strcmp(ah.name, gh.name) != 0 || apn != gpn) {
    snprintf(g->handoff.hosts[1].host, sizeof g->handoff.hosts[1].host, "%s", gh.name);
    g->handoff.hosts[1].port = gpn;
    g->handoff.n_hosts = 2;
  }
  if (o->tk.kind) {
    size_t i = g->handoff.n_hosts++;
    snprintf(g->handoff.hosts[i].host, sizeof g->handoff.hosts[i].host, "%s", th.name);
    g->handoff.hosts[i].port = tpn;
  }
  /* the secrets: over the pipe, never argv, env or disk */
  signal(SIGPIPE, SIG_IGN);
  char *tk_auth = o->tk.kind ? tk_auth_value(o) : NULL;
  int wr = (o->tk.kind && !tk_auth) || put_secret(tp[1], o->git_token) < 0 ||
                   put_secret(tp[1], o->ticket_token) < 0 ||
                   put_secret(tp[1], o->placeholder) < 0 ||
                   (o->tk.kind &&
                    (put_secret(tp[1], tk_auth) < 0 || put_secret(tp[1], o->tk.credential) < 0))
               ? -1
               : 0;
  al_secret_free(tk_auth);
  close(tp[1]);
  uint64_t deadline = al_now_ms() + START_TIMEOUT_MS;
  char line[AL_ERROR_MSG_MAX + 16];
  size_t pem_len = 0;
  if (read_line(bp[0], line, sizeof line, deadline) < 0)
    goto died;
  if (strncmp(line, "ERR ", 4) == 0)
    goto child_err;
  char *end = NULL;
  if (strncmp(line, "CA ", 3) == 0)
    pem_len = strtoul(line + 3, &end, 10);
  if (!end || *end || pem_len == 0 || pem_len > 65536)
    goto died;
  g->ca_pem = al_xmalloc(pem_len + 1);
  if (read_exact(bp[0], g->ca_pem, pem_len, deadline) < 0)
    goto died;
  g->ca_pem[pem_len] = '\0';
  if (read_line(bp[0], line, sizeof line, deadline) < 0)
    goto died;
  if (strncmp(line, "ERR ", 4) == 0)
    goto child_err;
  if (strcmp(line, "READY") != 0 || wr < 0)
    goto died;
  *out = g;
  return 0;
child_err:
  al_error_set(err, EIO, "%s", line + 4);
  al_gateway_free(g);
  return -1;
died:
  al_error_set(err, EIO, "forge gateway: did not start (no answer within %d s or it died)",
               START_TIMEOUT_MS / 1000);
  al_gateway_free(g);
  return -1;
}

int al_gateway_placeholder(char out[65], al_error *err)
{
  static const char prefix[] = "airlock-placeholder-";
  char hex[45];
  if (al_random_hex(hex, 22, err) < 0)
    return al_error_wrap(err, "placeholder");
  snprintf(out, 65, "%s%s", prefix, hex);
  return 0;
}

const char *al_gateway_ca_pem(const al_gateway *g)
{
  return g ? g->ca_pem : NULL;
}

const al_proxy_handoff *al_gateway_handoff(const al_gateway *g)
{
  return g ? &g->handoff : NULL;
}

pid_t al_gateway_pid(const al_gateway *g)
{
  return g && !g->stopped ? g->pid : -1;
}

int al_gateway_stop(al_gateway *g, al_error *err)
{
  if (!g || g->stopped)
    return 0;
  int ws = 0;
  pid_t r = waitpid(g->pid, &ws, WNOHANG);
  bool died_before = r == g->pid;
  if (!died_before) {
    kill(g->pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
      r = waitpid(g->pid, &ws, WNOHANG);
      if (r == g->pid || (r < 0 && errno != EINTR))
        break;
      usleep(10000);
    }
    if (r != g->pid) {
      kill(g->pid, SIGKILL);
      while (waitpid(g->pid, &ws, 0) < 0 && errno == EINTR)
        ;
    }
  }
  g->stopped = true;
  g->exit_status = ws;
  if (g->handoff.fd >= 0)
    close(g->handoff.fd);
  g->handoff.fd = -1;
  if (g->status_fd >= 0)
    close(g->status_fd);
  g->status_fd = -1;
  if (died_before)
    return al_error_set(err, EIO, "forge gateway: had exited before the stop (status %d)",
                        WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
  return 0;
}

uint64_t al_gateway_egress_used(const al_gateway *g)
{
  return __atomic_load_n(g->egress_map, __ATOMIC_RELAXED);
}

void al_gateway_free(al_gateway *g)
{
  if (!g)
    return;
  al_error e;
  (void)al_gateway_stop(g, &e);
  if (g->egress_map)
    munmap(g->egress_map, AL_HANDOFF_COUNTER_SIZE);
  if (g->egress_fd >= 0)
    close(g->egress_fd);
  free(g->ca_pem);
  free(g);
}
