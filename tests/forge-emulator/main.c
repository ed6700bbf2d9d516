/* airlock-forge main: options, listeners (libmicrohttpd, TLS through GnuTLS),
 * request body accumulation with size caps, and dispatch on Host/path.
 *
 * Usage: airlock-forge --fixture F --data DIR [--tls-dir DIR] [--port N]
 *          [--http-port N] [--admin-port N] [--ports-file F]
 *          [--api-host H] [--git-host H] [--key APPID=PEM]...
 * Port 0 picks a free port; the chosen ports go to --ports-file as JSON. */
#include "forge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

struct forge g_forge = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1000};

enum listener_kind { L_MAIN, L_ADMIN };

struct conn_ctx {
  char *body;
  size_t len, cap;
  bool too_large;
};

void forge_resp_json(struct forge_resp *resp, int status, json_t *j)
{
  if (!j) { /* a json_pack mistake: never crash, say so */
    j = json_pack("{s:s, s:s}", "message", "Server Error (forge: bad JSON template)",
                  "documentation_url", FORGE_DOCS);
    status = 500;
  }
  resp->status = status;
  free(resp->body);
  resp->body = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  resp->body_len = resp->body ? strlen(resp->body) : 0;
  resp->content_type = "application/json; charset=utf-8";
  json_decref(j);
}

void forge_resp_error(struct forge_resp *resp, int status, const char *message, const char *doc)
{
  char st[16];
  snprintf(st, sizeof st, "%d", status);
  forge_resp_json(resp, status,
                  json_pack("{s:s, s:s, s:s}", "message", message, "documentation_url",
                            doc ? doc : FORGE_DOCS, "status", st));
}

void forge_resp_text(struct forge_resp *resp, int status, const char *text)
{
  resp->status = status;
  free(resp->body);
  resp->body = al_xstrdup(text);
  resp->body_len = strlen(text);
  resp->content_type = "text/plain; charset=utf-8";
}

char *forge_query_param(const char *query, const char *name)
{
  if (!query)
    return NULL;
  size_t nl = strlen(name);
  const char *p = query;
  while (*p) {
    const char *amp = strchr(p, '&');
    size_t seg = amp ? (size_t)(amp - p) : strlen(p);
    if (seg > nl && !strncmp(p, name, nl) && p[nl] == '=') {
      char *out = al_xmalloc(seg - nl);
      size_t o = 0;
      for (size_t i = nl + 1; i < seg; i++) {
        if (p[i] == '%' && i + 2 < seg + 1 && al_hex_digit(p[i + 1]) >= 0 &&
            al_hex_digit(p[i + 2]) >= 0) {
          out[o++] = (char)(al_hex_digit(p[i + 1]) * 16 + al_hex_digit(p[i + 2]));
          i += 2;
        } else if (p[i] == '+') {
          out[o++] = ' ';
        } else {
          out[o++] = p[i];
        }
      }
      out[o] = '\0';
      return out;
    }
    if (!amp)
      break;
    p = amp + 1;
  }
  return NULL;
}

struct qbuf {
  char *s;
};

/* Append k=v (percent-encoded) to the rebuilt query string. */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
  struct qbuf *qb = cls;
  size_t old = qb->s ? strlen(qb->s) : 0;
  if (old > 8192)
    return MHD_NO;
  const char *parts[2] = {k, v ? v : ""};
  size_t need = old + 2 + 3 * (strlen(parts[0]) + strlen(parts[1])) + 2;
  qb->s = al_xrealloc(qb->s, need);
  char *o = qb->s + old;
  if (old)
    *o++ = '&';
  for (int p = 0; p < 2; p++) {
    for (const char *c = parts[p]; *c; c++) {
      unsigned char u = (unsigned char)*c;
      if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') ||
          strchr("-_.~/", u))
        *o++ = (char)u;
      else
        o += sprintf(o, "%%%02X", u);
    }
    if (p == 0)
      *o++ = '=';
  }
  *o = '\0';
  return MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
  enum listener_kind kind = (enum listener_kind)(intptr_t)cls;
  struct conn_ctx *ctx = *con_cls;
  if (!ctx) {
    ctx = al_xcalloc(1, sizeof *ctx);
    *con_cls = ctx;
    return MHD_YES;
  }
  const char *host_hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
  char host[256] = "";
  if (host_hdr) {
    snprintf(host, sizeof host, "%s", host_hdr);
    char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
    if (colon)
      *(host[0] == '[' ? colon + 1 : colon) = '\0';
  }
  /* the git host serves the API under /api/v3 and /api/graphql as GitHub
   * Enterprise does (gh with GH_HOST = that host) */
  bool ghe_api = !strncmp(url, "/api/v3/", 8) || !strcmp(url, "/api/graphql");
  bool is_git = kind == L_MAIN && !ghe_api &&
                (!strcasecmp(host, g_forge.git_host) ||
                 (strcasecmp(host, g_forge.api_host) && forge_git_path(url)));
  size_t cap = is_git ? FORGE_GIT_BODY_MAX : FORGE_API_BODY_MAX;
  if (*upload_data_size) {
    if (!ctx->too_large) {
      if (ctx->len + *upload_data_size > cap) {
        ctx->too_large = true;
        free(ctx->body);
        ctx->body = NULL;
        ctx->len = ctx->cap = 0;
      } else {
        if (ctx->len + *upload_data_size + 1 > ctx->cap) {
          ctx->cap = (ctx->len + *upload_data_size + 1) * 2;
          if (ctx->cap > cap + 1)
            ctx->cap = cap + 1;
          ctx->body = al_xrealloc(ctx->body, ctx->cap);
        }
        memcpy(ctx->body + ctx->len, upload_data, *upload_data_size);
        ctx->len += *upload_data_size;
        ctx->body[ctx->len] = '\0';
      }
    }
    *upload_data_size = 0;
    return MHD_YES;
  }

  struct forge_resp resp = {.status = 500};
  if (ctx->too_large) {
    forge_resp_error(&resp, 413, "Request body too large", NULL);
  } else {
    /* MHD splits and decodes the query; rebuild a canonical one. */
    struct qbuf qb = {0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_arg, &qb);
    char *query = qb.s;
    struct forge_req rq = {
        .method = method,
        .path = url,
        .query = query,
        .host = host,
        .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"),
        .content_encoding = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Encoding"),
        .git_protocol = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Git-Protocol"),
        .body = ctx->body ? ctx->body : "",
        .body_len = ctx->len,
        .conn = conn,
    };
    if (kind == L_ADMIN)
      forge_admin_handle(&rq, &resp);
    else if (is_git)
      forge_git_handle(&rq, &resp);
    else
      forge_api_handle(&rq, &resp);
    if (kind == L_MAIN) {
      const char *inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
      bool nm = !is_git && forge_etag_apply(&rq, &resp, inm);
      long long rem = forge_ratelimit_apply(&rq, &resp, is_git, nm);
      forge_reqlog_write(&rq, &resp, is_git, inm != NULL, nm, rem,
                         MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "User-Agent"));
    }
    free(query);
  }
  struct MHD_Response *r =
      MHD_create_response_from_buffer(resp.body_len, resp.body ? resp.body : (char *)"",
                                      resp.body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (resp.content_type)
    MHD_add_response_header(r, "Content-Type", resp.content_type);
  if (kind == L_MAIN && !is_git) {
    MHD_add_response_header(r, "X-GitHub-Media-Type", "github.v3; format=json");
    MHD_add_response_header(r, "X-GitHub-Api-Version-Selected", "2022-11-28");
  }
  const char *k;
  json_t *v;
  json_object_foreach(resp.headers, k, v) MHD_add_response_header(r, k, json_string_value(v));
  json_decref(resp.headers);
  enum MHD_Result ret = MHD_queue_response(conn, (unsigned)resp.status, r);
  MHD_destroy_response(r);
  return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
  struct conn_ctx *ctx = *con_cls;
  if (ctx) {
    free(ctx->body);
    free(ctx);
  }
  *con_cls = NULL;
}

/* The listeners' address: loopback, or --bind (the forge in a test
 * container, on a network the test made internal). */
static struct in_addr g_bind = {.s_addr = 0};

static struct MHD_Daemon *start(enum listener_kind kind, int port, const char *key,
                                const char *cert, int *bound)
{
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr = g_bind;
  unsigned flags =
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (key)
    flags |= MHD_USE_TLS;
  struct MHD_Daemon *d;
  if (key)
    d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, (void *)(intptr_t)kind,
                         MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                         MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_HTTPS_MEM_CERT, cert,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
  else
    d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, (void *)(intptr_t)kind,
                         MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
  if (!d)
    return NULL;
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  *bound = info ? info->port : port;
  return d;
}

static void usage(FILE *f)
{
  fprintf(f,
          "usage: airlock-forge --fixture FILE --data DIR [--tls-dir DIR] [--port N]\n"
          "         [--http-port N] [--admin-port N] [--ports-file FILE]\n"
          "         [--api-host NAME] [--git-host NAME] [--key APPID=PUBKEY.pem]...\n"
          "         [--bind IPV4] [--webhook-url http://IPV4:PORT/PATH [--webhook-secret FILE]]\n"
          "         [--request-log FILE]\n"
          "A local GitHub-compatible TEST host. Port 0 = pick a free port.\n"
          "--bind: listen on IPV4 instead of 127.0.0.1 (only inside a test container).\n"
          "--tls-dir holds server.key, server.crt, ca.crt (scripts/make-test-ca.sh).\n"
          "--request-log: append one JSON line per REST or git request answered.\n");
}

static int parse_port(const char *s)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < 0 || v > 65535) {
    fprintf(stderr, "airlock-forge: bad port `%s`\n", s);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv)
{
  const char *base = strrchr(argv[0], '/');
  base = base ? base + 1 : argv[0];
  if (!strcmp(base, "pre-receive"))
    return forge_hook_main();

  const char *fixture = NULL, *data = NULL, *tls_dir = NULL, *ports_file = NULL;
  int port = 0, http_port = -1, admin_port = 0;
  g_bind.s_addr = htonl(INADDR_LOOPBACK);
  char **keys = NULL;
  size_t n_keys = 0;
  g_forge.api_host = "api.forge.test";
  g_forge.git_host = "forge.test";
  static const struct option opts[] = {{"fixture", required_argument, NULL, 'f'},
                                       {"data", required_argument, NULL, 'd'},
                                       {"tls-dir", required_argument, NULL, 't'},
                                       {"port", required_argument, NULL, 'p'},
                                       {"http-port", required_argument, NULL, 'H'},
                                       {"admin-port", required_argument, NULL, 'a'},
                                       {"ports-file", required_argument, NULL, 'P'},
                                       {"api-host", required_argument, NULL, 'A'},
                                       {"git-host", required_argument, NULL, 'G'},
                                       {"key", required_argument, NULL, 'k'},
                                       {"bind", required_argument, NULL, 'b'},
                                       {"webhook-url", required_argument, NULL, 'W'},
                                       {"webhook-secret", required_argument, NULL, 'S'},
                                       {"request-log", required_argument, NULL, 'R'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  int c;
  const char *webhook_url = NULL, *webhook_secret = NULL, *request_log = NULL;
  while ((c = getopt_long(argc, argv, "f:d:t:p:H:a:P:A:G:k:b:h", opts, NULL)) != -1) {
    switch (c) {
    case 'f':
      fixture = optarg;
      break;
    case 'd':
      data = optarg;
      break;
    case 't':
      tls_dir = optarg;
      break;
    case 'p':
      port = parse_port(optarg);
      break;
    case 'H':
      http_port = parse_port(optarg);
      break;
    case 'a':
      admin_port = parse_port(optarg);
      break;
    case 'P':
      ports_file = optarg;
      break;
    case 'A':
      g_forge.api_host = optarg;
      break;
    case 'G':
      g_forge.git_host = optarg;
      break;
    case 'k':
      keys = al_xrealloc(keys, (n_keys + 1) * sizeof *keys);
      keys[n_keys++] = optarg;
      break;
    case 'b':
      if (inet_pton(AF_INET, optarg, &g_bind) != 1) {
        fprintf(stderr, "airlock-forge: --bind `%s`: not an IPv4 address\n", optarg);
        return 2;
      }
      break;
    case 'W':
      webhook_url = optarg;
      break;
    case 'S':
      webhook_secret = optarg;
      break;
    case 'R':
      request_log = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (!fixture || !data) {
    usage(stderr);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  /* Git children must not read the user's config. */
  setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
  unsetenv("GIT_DIR");

  static char self[PATH_MAX]; /* kept in g_forge: static storage */
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    perror("airlock-forge: readlink /proc/self/exe");
    return 1;
  }
  self[n] = '\0';
  g_forge.self_exe = self;
  static char dr[PATH_MAX];
  if (mkdir(data, 0700) < 0 && errno != EEXIST) {
    fprintf(stderr, "airlock-forge: mkdir `%s`: %s\n", data, strerror(errno));
    return 1;
  }
  if (!realpath(data, dr)) {
    fprintf(stderr, "airlock-forge: data dir `%s`: %s\n", data, strerror(errno));
    return 1;
  }
  g_forge.data_dir = dr;
  g_forge.repos_dir = al_strdup_printf("%s/repos", dr);
  g_forge.push_log = al_strdup_printf("%s/pushes.jsonl", dr);
  // NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker): al_strdup_printf aborts, never NULL
  if (mkdir(g_forge.repos_dir, 0755) < 0 && errno != EEXIST) {
    fprintf(stderr, "airlock-forge: mkdir `%s`: %s\n", g_forge.repos_dir, strerror(errno));
    return 1;
  }
  g_forge.tokens = json_array();
  g_forge.comments = json_array();
  g_forge.pulls = json_array();
  g_forge.reviews = json_array();

  al_error err = {0};
  if ((request_log && forge_reqlog_open(request_log, &err) < 0) ||
      forge_webhooks_config(webhook_url, webhook_secret, &err) < 0 ||
      forge_load_fixture(fixture, keys, n_keys, &err) < 0) {
    fprintf(stderr, "airlock-forge: %s\n", err.msg);
    return 1;
  }

  char *key = NULL, *cert = NULL, *ca_path = NULL;
  if (tls_dir) {
    al_autofree char *kp = al_strdup_printf("%s/server.key", tls_dir);
    al_autofree char *cp = al_strdup_printf("%s/server.crt", tls_dir);
    if (al_read_file(kp, 1 << 20, &key, NULL, &err) < 0 ||
        al_read_file(cp, 1 << 20, &cert, NULL, &err) < 0) {
      fprintf(stderr, "airlock-forge: TLS: %s (make one with scripts/make-test-ca.sh DIR)\n",
              err.msg);
      return 1;
    }
    char cr[PATH_MAX];
    al_autofree char *cap = al_strdup_printf("%s/ca.crt", tls_dir);
    ca_path = al_xstrdup(realpath(cap, cr) ? cr : cap);
    if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
      fprintf(stderr, "airlock-forge: this libmicrohttpd has no TLS support\n");
      return 1;
    }
  } else if (http_port < 0) {
    http_port = port; /* no TLS: the main listener is plain HTTP */
    port = -1;
  }

  /* Block before the listener threads exist so only signalfd sees them;
   * children unblock after fork. */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int https_bound = -1, http_bound = -1, admin_bound = -1;
  struct MHD_Daemon *d_https = NULL, *d_http = NULL, *d_admin = NULL;
  if (tls_dir && !(d_https = start(L_MAIN, port, key, cert, &https_bound))) {
    fprintf(stderr, "airlock-forge: cannot listen on 127.0.0.1:%d (https)\n", port);
    return 1;
  }
  if (http_port >= 0 && !(d_http = start(L_MAIN, http_port, NULL, NULL, &http_bound))) {
    fprintf(stderr, "airlock-forge: cannot listen on 127.0.0.1:%d (http)\n", http_port);
    return 1;
  }
  if (!(d_admin = start(L_ADMIN, admin_port, NULL, NULL, &admin_bound))) {
    fprintf(stderr, "airlock-forge: cannot listen on 127.0.0.1:%d (admin)\n", admin_port);
    return 1;
  }
  if (https_bound >= 0) {
    g_forge.base_url = al_strdup_printf("https://%s:%d", g_forge.api_host, https_bound);
    g_forge.git_base_url = al_strdup_printf("https://%s:%d", g_forge.git_host, https_bound);
  } else {
    g_forge.base_url = al_strdup_printf("http://%s:%d", g_forge.api_host, http_bound);
    g_forge.git_base_url = al_strdup_printf("http://%s:%d", g_forge.git_host, http_bound);
  }

  json_t *ports = json_pack("{s:i, s:i, s:i, s:s?, s:s, s:s, s:s}", "https", https_bound, "http",
                            http_bound, "admin", admin_bound, "ca", ca_path, "api_host",
                            g_forge.api_host, "git_host", g_forge.git_host, "data", dr);
  char *ports_s = json_dumps(ports, JSON_COMPACT);
  if (ports_file) {
    al_autofree char *tmp = al_strdup_printf("%s.tmp", ports_file);
    if (al_write_file(tmp, ports_s, strlen(ports_s), 0644, &err) < 0 ||
        rename(tmp, ports_file) < 0) {
      fprintf(stderr, "airlock-forge: ports file: %s\n", err.msg[0] ? err.msg : strerror(errno));
      return 1;
    }
  }
  printf("airlock-forge: listening %s\n", ports_s);
  if (ca_path)
    printf("airlock-forge: CA certificate %s\n", ca_path);
  fflush(stdout);
  free(ports_s);
  json_decref(ports);

  int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  struct signalfd_siginfo si;
  while (read(sfd, &si, sizeof si) < 0 && errno == EINTR)
    ;
  if (d_https)
    MHD_stop_daemon(d_https);
  if (d_http)
    MHD_stop_daemon(d_http);
  MHD_stop_daemon(d_admin);
  free(key);
  free(cert);
  return 0;
}
