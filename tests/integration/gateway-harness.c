/* Test harness for the forge gateway (issue #15): the egress proxy and the
 * gateway as the supervisor runs them, without `airlock ticket`.
 *
 *   gateway-harness -p POLICY --repo O/R --ticket N --branch B [--max-comments N]
 *                   [--project-id N] [--ticket-key KEY [--ticket-id ID]]
 *                   --run-id ID --dir DIR  < tokens
 *
 * The policy's forge.kind picks the gateway's table: gitlab reads --repo
 * as the project's full path and needs --project-id (its numeric id). A
 * policy `ticket:` block of kind jira or linear with --ticket-key makes
 * its url the gateway's ticket host (gateway.h .tk; --ticket 0 then).
 *
 * stdin: two lines, the git token and the ticket token, and with a
 * ticket host a third, the vendor credential (never argv/env).
 * The policy's network section is the proxy's allowlist, its forge section
 * names the gateway's hosts. Two proxy listeners on 127.0.0.1: "gateway"
 * (forge CONNECTs handed off) and "tunnel" (the same allowlist, no
 * hand-off: the positive control). Writes into DIR: ports.json
 * {"gateway":P,"tunnel":P,"gateway_pid":N}, ca.pem (the run CA),
 * placeholder (the agent's placeholder), proxy.jsonl (proxy decisions),
 * gateway.jsonl (gateway decisions). Runs until SIGTERM/SIGINT. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/gateway.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "run/run.h"

static int listen_any(uint16_t *port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0 ||
      getsockname(fd, (struct sockaddr *)&a, &l) < 0)
    return -1;
  *port = ntohs(a.sin_port);
  return fd;
}

static void die(const char *what, const char *msg)
{
  fprintf(stderr, "gateway-harness: %s: %s\n", what, msg);
  exit(1);
}

int main(int argc, char **argv)
{
  const char *policy_path = NULL, *repo = NULL, *branch = NULL, *run_id = "harness", *dir = NULL,
             *tk_key = NULL, *tk_id = NULL;
  unsigned long ticket = 0, project_id = 0;
  unsigned max_comments = 0;
  al_error err = {0};

  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-p"))
      policy_path = argv[i + 1];
    else if (!strcmp(argv[i], "--repo"))
      repo = argv[i + 1];
    else if (!strcmp(argv[i], "--ticket"))
      ticket = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--branch"))
      branch = argv[i + 1];
    else if (!strcmp(argv[i], "--project-id"))
      project_id = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--max-comments"))
      max_comments = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--ticket-key"))
      tk_key = argv[i + 1];
    else if (!strcmp(argv[i], "--ticket-id"))
      tk_id = argv[i + 1];
    else if (!strcmp(argv[i], "--run-id"))
      run_id = argv[i + 1];
    else if (!strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
    else
      die("usage", argv[i]);
  }
  if (!policy_path || !repo || !branch || !dir)
    die("usage", "-p POLICY --repo O/R --ticket N --branch B --dir DIR");
  al_policy *pol = NULL;
  if (al_policy_load_file(policy_path, &pol, &err) < 0)
    die("policy", err.msg);

  const al_policy_ticket *pt = &pol->ticket;
  bool tk = tk_key && pt->present && pt->kind != 0;
  char tokens[3][4096];
  memset(tokens, 0, sizeof tokens);
  for (int i = 0; i < (tk ? 3 : 2); i++) {
    if (!fgets(tokens[i], sizeof tokens[i], stdin))
      die("stdin", "two lines: git token, ticket token (a third: the vendor credential)");
    tokens[i][strcspn(tokens[i], "\r\n")] = '\0';
  }
  char ph[65];
  if (al_gateway_placeholder(ph, &err) < 0)
    die("placeholder", err.msg);

  char path[4096];
  snprintf(path, sizeof path, "%s/gateway.jsonl", dir);
  int gw_decisions = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  snprintf(path, sizeof path, "%s/proxy.jsonl", dir);
  int px_decisions = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (gw_decisions < 0 || px_decisions < 0)
    die("decision files", strerror(errno));

  al_gateway_opts o = {.api_url = pol->forge.api_url,
                       .git_url = pol->forge.git_url,
                       .ca_file = pol->forge.ca_file,
                       .repo = repo,
                       .forge_kind = pol->forge.kind,
                       .project_id = project_id,
                       .ticket = ticket,
                       .branch = branch,
                       .max_comments = max_comments,
                       .git_token = tokens[0],
                       .ticket_token = tokens[1],
                       .placeholder = ph,
                       .lifetime_ms = 3600 * 1000,
                       .run_id = run_id,
                       .decisions_fd = gw_decisions,
                       .egress_budget = pol->network.egress_budget};
  if (tk)
    o.tk = (__typeof__(o.tk)){.kind = pt->kind,
                              .url = pt->url,
                              .ca_file = pt->ca_file,
                              .project = pt->kind == 1 ? pt->project : pt->team,
                              .key = tk_key,
                              .id = tk_id,
                              .user = pt->kind == 1 ? pt->user : NULL,
                              .credential = tokens[2]};
  al_gateway *gw = NULL;
  if (al_gateway_start(&o, &gw, &err) < 0)
    die("gateway", err.msg);
  memset(tokens, 0, sizeof tokens);

  uint16_t gport = 0, tport = 0;
  int gfd = listen_any(&gport), tfd = listen_any(&tport);
  if (gfd < 0 || tfd < 0)
    die("listen", strerror(errno));
  al_proxy_listener ls[2] = {
      {.fd = gfd, .run_id = run_id, .policy = pol, .handoff = al_gateway_handoff(gw)},
      {.fd = tfd, .run_id = run_id, .policy = pol, .handoff = NULL}};
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  pid_t proxy = al_run_start_proxy(ls, 2, px_decisions, &err);
  if (proxy < 0)
    die("proxy", err.msg);

  snprintf(path, sizeof path, "%s/ca.pem", dir);
  const char *pem = al_gateway_ca_pem(gw);
  if (al_write_file(path, pem, strlen(pem), 0644, &err) < 0)
    die("ca.pem", err.msg);
  snprintf(path, sizeof path, "%s/placeholder", dir);
  if (al_write_file(path, ph, strlen(ph), 0600, &err) < 0)
    die("placeholder", err.msg);
  char ports[128];
  int n = snprintf(ports, sizeof ports, "{\"gateway\":%u,\"tunnel\":%u,\"gateway_pid\":%d}\n",
                   gport, tport, (int)al_gateway_pid(gw));
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s/ports.json.tmp", dir);
  snprintf(path, sizeof path, "%s/ports.json", dir);
  if (al_write_file(tmp, ports, (size_t)n, 0644, &err) < 0 || rename(tmp, path) < 0)
    die("ports.json", err.msg);

  int sig = 0;
  sigwait(&mask, &sig);
  al_run_stop_proxy(proxy);
  if (al_gateway_stop(gw, &err) < 0)
    fprintf(stderr, "gateway-harness: %s\n", err.msg);
  al_gateway_free(gw);
  al_policy_free(pol);
  return 0;
}
