/* The gateway's refusal messages and the receive-pack report. See refusal.h. */
#include "gateway/refusal.h"

#include <stdio.h>
#include <string.h>

#define SUPERVISOR_PR "the supervisor opens the pull request after the agent exits"

/* reason -> what it means for the agent; %B is the run branch. Catalogue:
 * one line per reason the gateway gives (rules.h, wire.h, conn_request.c).
 * A reason not here gets the generic sentence. Prefix match when the entry
 * ends in ':' ("graphql-refused:" covers "graphql-refused: mutation"). */
static const struct {
  const char *reason, *text;
} texts[] = {
    {"push-other-branch", "only refs/heads/%B may be pushed (the run's branch; " SUPERVISOR_PR ")"},
    {"push-other-ref", "only refs/heads/%B may be pushed (the run's branch; " SUPERVISOR_PR ")"},
    {"push-tag", "tags may not be pushed; only refs/heads/%B (the run's branch)"},
    {"push-delete", "refs may not be deleted; push new commits to refs/heads/%B instead"},
    {"push-option-refused", "push options (git push -o) are refused: push the commits to "
                            "refs/heads/%B alone; " SUPERVISOR_PR},
    {"push-options-not-advertised",
     "the forge did not advertise push-options, so it cannot be asked to skip the pipeline "
     "(ci.skip) the pushed branch would run; the push is refused (GitLab)"},
    {"other-repository", "this run may reach only its own repository"},
    {"other-ticket", "this run may read and comment on only its own ticket"},
    {"write-refused",
     "the agent may not write to the forge here; push to refs/heads/%B and exit: " SUPERVISOR_PR},
    {"comment-budget", "the run's ticket comments (credentials.agent_comments) are used up"},
    {"graphql-refused: mutation", "only read-only GraphQL queries of this run's repository are "
                                  "allowed; the agent writes nothing: push to refs/heads/%B and "
                                  "exit, " SUPERVISOR_PR},
    {"graphql-refused", "only read-only GraphQL queries of this run's repository are allowed"},
    {"query-param-refused:", "this route does not take that query parameter"},
    {"graphql-refused:", "only read-only GraphQL queries of this run's repository are allowed"},
    {"pulls-not-run-branch", "only this run's pull request (head=OWNER:%B) may be listed"},
    {"no-rule", "the gateway has no rule for this request (default deny)"},
    {"foreign-credential", "only the placeholder in $GH_TOKEN / the credential helper is accepted; "
                           "never a token of your own"},
    {"credential-missing", "send the placeholder ($GH_TOKEN) as the credential"},
    {"egress-budget", "the run's egress budget (network.egress_budget) is spent"},
    {"body-not-allowed", "this route takes no request body"},
    {"content-encoding-refused", "this route's body must not be compressed"},
};

static const char *text_for(const char *reason, const char *method, const char *path,
                            const char **shown)
{
  *shown = reason;
  /* POST .../pulls is the agent opening its PR: say who does it */
  size_t pl = path ? strlen(path) : 0;
  if (method && strcmp(method, "POST") == 0 && pl > 6 && strcmp(path + pl - 6, "/pulls") == 0 &&
      strcmp(reason, "write-refused") == 0)
    return "the agent does not open the pull request: push to refs/heads/%B and "
           "exit; " SUPERVISOR_PR;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    size_t n = strlen(texts[i].reason);
    if (texts[i].reason[n - 1] == ':' ? strncmp(reason, texts[i].reason, n) == 0
                                      : strcmp(reason, texts[i].reason) == 0)
      return texts[i].text;
  }
  if (strncmp(reason, "upstream", 8) == 0)
    return "the gateway could not complete the request to the forge";
  return "refused by the forge gateway's rules";
}

static size_t put(char *out, size_t cap, size_t n, const char *s, size_t len)
{
  for (size_t i = 0; i < len && n + 1 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    char ch = '?';
    if (c >= 0x20 && c < 0x7f)
      ch = s[i];
    out[n++] = ch;
  }
  return n;
}

size_t al_gw_refusal_text(const al_gw_rules *r, const char *reason, const char *method,
                          const char *path, char *out, size_t cap)
{
  if (cap == 0)
    return 0;
  const char *shown;
  if (!reason)
    reason = "unknown";
  const char *t = text_for(reason, method, path, &shown);
  size_t n = put(out, cap, 0, "airlock: ", 9);
  n = put(out, cap, n, shown, strlen(shown));
  n = put(out, cap, n, ": ", 2);
  for (const char *p = t; *p; p++) {
    if (p[0] == '%' && p[1] == 'B') {
      const char *b = r && r->branch[0] ? r->branch : "<run branch>";
      n = put(out, cap, n, b, strlen(b));
      p++;
    } else {
      n = put(out, cap, n, p, 1);
    }
  }
  n = put(out, cap, n, " (see " AL_GW_REFUSAL_DOC ")", strlen(" (see " AL_GW_REFUSAL_DOC ")"));
  out[n] = '\0';
  return n;
}

size_t al_gw_refusal_json(const al_gw_rules *r, const char *reason, const char *method,
                          const char *path, char *out, size_t cap)
{
  char t[768];
  al_gw_refusal_text(r, reason, method, path, t, sizeof t);
  char esc[1600];
  size_t e = 0;
  for (const char *p = t; *p && e + 3 < sizeof esc; p++) {
    if (*p == '"' || *p == '\\')
      esc[e++] = '\\';
    esc[e++] = *p;
  }
  esc[e] = '\0';
  int n = snprintf(out, cap, "{\"message\":\"%s\",\"documentation_url\":\"%s\"}\n", esc,
                   AL_GW_REFUSAL_DOC);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

bool al_gw_path_is_git(const char *path)
{
  static const char *const tails[] = {"/info/refs", "/git-upload-pack", "/git-receive-pack"};
  size_t pl = path ? strlen(path) : 0;
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    size_t tl = strlen(tails[i]);
    if (pl > tl && strcmp(path + pl - tl, tails[i]) == 0)
      return true;
  }
  return false;
}

/* Append one pkt-line holding s[0..n) (gitprotocol-common(5)). */
static size_t pkt(char *out, size_t cap, size_t o, const char *s, size_t n)
{
  if (o + n + 4 >= cap || n + 4 > AL_PKT_MAX)
    return (size_t)-1;
  snprintf(out + o, 5, "%04zx", n + 4);
  memcpy(out + o + 4, s, n);
  return o + 4 + n;
}

size_t al_gw_rp_report(const al_gw_rules *r, const al_rp_request *rq, const char *reason,
                       size_t bad, char *out, size_t cap)
{
  char rep[AL_GW_RP_REPORT_MAX], text[768], line[1100];
  size_t o = 0;
  if (!rq->report_status || rq->n_cmds == 0)
    return 0;
  o = pkt(rep, sizeof rep, o, "unpack ok\n", 10);
  al_gw_refusal_text(r, reason, "POST", NULL, text, sizeof text);
  for (size_t i = 0; i < rq->n_cmds && o != (size_t)-1; i++) {
    int n = i == bad ? snprintf(line, sizeof line, "ng %s %s\n", rq->cmd[i].ref, text)
                     : snprintf(line, sizeof line,
                                "ng %s airlock: refused with the rest of the push (%s is "
                                "refused: %s)\n",
                                rq->cmd[i].ref, rq->cmd[bad].ref, reason);
    if (n <= 0 || (size_t)n >= sizeof line)
      return 0;
    o = pkt(rep, sizeof rep, o, line, (size_t)n);
  }
  if (o == (size_t)-1 || o + 4 > sizeof rep)
    return 0;
  // NOLINTNEXTLINE(bugprone-not-null-terminated-result): wire bytes, not a C string
  memcpy(rep + o, "0000", 4);
  o += 4;
  if (!rq->side_band) {
    if (o > cap)
      return 0;
    memcpy(out, rep, o);
    return o;
  }
  /* band 2 first (git prints it as "remote: ..."), then the report in band
   * 1, then the flush that ends the side-band stream (receive-pack.c) */
  size_t w = 0;
  int n = snprintf(line, sizeof line, "\2%s\n", text);
  if (n <= 0 || (size_t)n >= sizeof line || (size_t)n + 4 > rq->side_band)
    return 0;
  w = pkt(out, cap, w, line, (size_t)n);
  size_t max = rq->side_band - 5;
  for (size_t i = 0; i < o && w != (size_t)-1; i += max) {
    size_t k = o - i < max ? o - i : max;
    if (w + k + 5 >= cap)
      return 0;
    snprintf(out + w, 5, "%04zx", k + 5);
    out[w + 4] = '\1';
    memcpy(out + w + 5, rep + i, k);
    w += 5 + k;
  }
  if (w == (size_t)-1 || w + 4 > cap)
    return 0;
  // NOLINTNEXTLINE(bugprone-not-null-terminated-result): wire bytes, not a C string
  memcpy(out + w, "0000", 4);
  return w + 4;
}
