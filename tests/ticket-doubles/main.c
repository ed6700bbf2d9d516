/* ticket-double: one Jira or Linear test double (double.c) as a process,
 * for the TAP tests (TEST ONLY). Usage:
 *   ticket-double --kind jira|linear --key KEY --title T --body B
 *                 [--user E-MAIL] --token-file FILE [--tls-dir DIR]
 *                 --ports-file FILE --state FILE
 * Serves on 127.0.0.1 (TLS with DIR/server.key and DIR/server.crt of
 * scripts/make-test-ca.sh when --tls-dir is given), writes {"port": N} to
 * the ports file, and on SIGTERM or SIGINT writes {"comments": [TEXT...],
 * "auth_refused": N, "requests": ["METHOD URL UA"...], "writes": ["edit
 * KEY"...]} (double.h) to the state file and exits 0. */
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double.h"

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *p = calloc(1, 1 << 20);
  size_t n = p ? fread(p, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (p)
    p[n] = '\0';
  return p;
}

int main(int argc, char **argv)
{
  const char *kind = NULL, *key = NULL, *title = "", *body = "", *user = NULL, *tokf = NULL,
             *tls = NULL, *ports = NULL, *state = NULL;
  static const struct option lo[] = {{"kind", 1, 0, 'k'},    {"key", 1, 0, 'K'},
                                     {"title", 1, 0, 't'},   {"body", 1, 0, 'b'},
                                     {"user", 1, 0, 'u'},    {"token-file", 1, 0, 'f'},
                                     {"tls-dir", 1, 0, 'T'}, {"ports-file", 1, 0, 'p'},
                                     {"state", 1, 0, 's'},   {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 'k':
      kind = optarg;
      break;
    case 'K':
      key = optarg;
      break;
    case 't':
      title = optarg;
      break;
    case 'b':
      body = optarg;
      break;
    case 'u':
      user = optarg;
      break;
    case 'f':
      tokf = optarg;
      break;
    case 'T':
      tls = optarg;
      break;
    case 'p':
      ports = optarg;
      break;
    case 's':
      state = optarg;
      break;
    default:
      return 2;
    }
  }
  if (!kind || !key || !tokf || !ports || !state ||
      (strcmp(kind, "jira") != 0 && strcmp(kind, "linear") != 0)) {
    fprintf(stderr, "usage: ticket-double --kind jira|linear --key KEY --token-file FILE "
                    "--ports-file FILE --state FILE [--title T --body B --user E --tls-dir D]\n");
    return 2;
  }
  char *token = slurp(tokf);
  if (!token) {
    perror(tokf);
    return 1;
  }
  token[strcspn(token, "\r\n")] = '\0';
  char *kp = NULL, *cp = NULL;
  if (tls) {
    char path[4096];
    snprintf(path, sizeof path, "%s/server.key", tls);
    kp = slurp(path);
    snprintf(path, sizeof path, "%s/server.crt", tls);
    cp = slurp(path);
    if (!kp || !cp) {
      fprintf(stderr, "ticket-double: %s/server.{key,crt} not readable\n", tls);
      return 1;
    }
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, NULL); /* before the daemon's threads start */
  unsigned port = 0;
  td *d =
      td_start_tls(strcmp(kind, "jira") == 0 ? 1 : 2, key, title, body, user, token, kp, cp, &port);
  if (!d || !port) {
    fprintf(stderr, "ticket-double: cannot start\n");
    return 1;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", ports);
  FILE *f = fopen(tmp, "w");
  if (!f || fprintf(f, "{\"port\": %u}\n", port) < 0 || fclose(f) != 0 || rename(tmp, ports) != 0) {
    perror(ports);
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  json_t *list = json_array();
  for (size_t i = 0; i < td_comments(d); i++)
    json_array_append_new(list, json_string(td_comment(d, i)));
  json_t *reqs = json_array(), *writes = json_array();
  for (size_t i = 0; i < td_requests(d); i++)
    json_array_append_new(reqs, json_string(td_request(d, i)));
  for (size_t i = 0; i < td_writes(d); i++)
    json_array_append_new(writes, json_string(td_write(d, i)));
  json_t *st = json_pack("{s:o, s:I, s:o, s:o}", "comments", list, "auth_refused",
                         (json_int_t)td_auth_refused(d), "requests", reqs, "writes", writes);
  td_stop(d);
  int rc = json_dump_file(st, state, JSON_COMPACT) == 0 ? 0 : 1;
  json_decref(st);
  free(token);
  free(kp);
  free(cp);
  return rc;
}
