/* A ticket's name, per vendor. See tickets.h. */
#include "tickets/tickets.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "forge/names.h"

const char *al_tk_kind_name(al_tk_kind k)
{
  switch (k) {
  case AL_TK_JIRA:
    return "jira";
  case AL_TK_LINEAR:
    return "linear";
  case AL_TK_GITHUB:
  default:
    return "github";
  }
}

bool al_tk_project_ok(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  if (n < 2 || n > 10 || !(s[0] >= 'A' && s[0] <= 'Z'))
    return false;
  for (size_t i = 1; i < n; i++)
    if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
      return false;
  return true;
}

/* 1..2^31-1, the whole of s[0..n), by the one number rule (common/util.h
 * al_parse_decimal: decimal, no sign, no leading zero). */
static bool number_ok(const char *s, size_t n, unsigned long *out)
{
  const char *p = s;
  uint64_t v;
  if (al_parse_decimal(&p, &v) < 0 || p != s + n || v < 1 || v > 2147483647U)
    return false;
  *out = (unsigned long)v;
  return true;
}

int al_tk_key_parse(const char *s, const char *vendor, char project[AL_TK_PROJECT_MAX],
                    unsigned long *number, al_error *err)
{
  const char *dash = s ? strrchr(s, '-') : NULL;
  size_t pl = dash ? (size_t)(dash - s) : 0;
  project[0] = '\0';
  *number = 0;
  if (!dash || pl >= AL_TK_PROJECT_MAX)
    return al_error_set(err, EINVAL, "ticket `%.80s`: a %s ticket is KEY-N, like ENG-42",
                        s ? s : "", vendor);
  memcpy(project, s, pl);
  project[pl] = '\0';
  if (!al_tk_project_ok(project)) {
    al_error_set(err, EINVAL,
                 "ticket `%.80s`: `%s` is not a %s key (KEY-N: KEY an upper-case letter, then 1 "
                 "to 9 upper-case letters, digits or _)",
                 s, project, vendor);
    project[0] = '\0';
    return -1;
  }
  if (!number_ok(dash + 1, strlen(dash + 1), number)) {
    project[0] = '\0';
    return al_error_set(err, EINVAL,
                        "ticket `%.80s`: the number after `-` must be 1 to 2147483647, no leading "
                        "zero (a %s ticket is KEY-N, like ENG-42)",
                        s, vendor);
  }
  return 0;
}

int al_tk_target_parse(al_tk_kind k, const char *s, const char *project, al_tk_target *t,
                       al_error *err)
{
  memset(t, 0, sizeof *t);
  t->kind = k;
  if (!s)
    return al_error_set(err, EINVAL, "ticket: no ticket given");
  if (k == AL_TK_GITHUB) {
    /* OWNER/REPO by the one rule (forge/names.h) */
    const char *hash = strrchr(s, '#'), *why;
    char repo[AL_REPO_MAX];
    size_t rl = hash ? (size_t)(hash - s) : 0;
    if (hash && rl < sizeof repo)
      memcpy(repo, s, rl);
    repo[hash && rl < sizeof repo ? rl : 0] = '\0';
    if (!hash || rl >= sizeof repo || al_repo_name_check(repo, &why) < 0 ||
        !number_ok(hash + 1, strlen(hash + 1), &t->number))
      return al_error_set(err, EINVAL,
                          "ticket `%.80s`: a GitHub ticket is OWNER/REPO#N (N a number from 1)", s);
    snprintf(t->repo, sizeof t->repo, "%.*s", (int)(hash - s), s);
    return 0;
  }
  const char *vendor = al_tk_kind_name(k);
  if (al_tk_key_parse(s, vendor, t->project, &t->number, err) < 0)
    return -1;
  if (project && project[0] && strcmp(project, t->project) != 0)
    return al_error_set(err, EINVAL,
                        "ticket `%.80s`: its %s is `%s`, but the policy's is `%s` (ticket.%s): a "
                        "run reaches only its one project",
                        s, k == AL_TK_JIRA ? "project" : "team", t->project, project,
                        k == AL_TK_JIRA ? "project" : "team");
  snprintf(t->key, sizeof t->key, "%s-%lu", t->project, t->number);
  return 0;
}

static void comment_free(al_tk_comment *c)
{
  free(c->id);
  free(c->author);
  free(c->body);
}

void al_tk_ticket_free(al_tk_ticket *t)
{
  if (!t)
    return;
  free(t->id);
  free(t->key);
  free(t->title);
  free(t->body);
  free(t->url);
  free(t->project);
  for (size_t i = 0; i < t->n_comments; i++)
    comment_free(&t->comments[i]);
  free(t->comments);
  memset(t, 0, sizeof *t);
}
