/* The starter policies: see starter.h. */
#include "policy/starter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "forge/names.h"
#include "policy/policy.h"
#include "policy/starter_github.h"
#include "policy/starter_gitlab.h"

int al_policy_starter(al_forge_kind kind, const char *repo, char **out, al_error *err)
{
  *out = NULL;
  bool gl = kind == AL_FORGE_GITLAB;
  const char *tmpl = gl ? starter_gitlab : starter_github;
  const char *ph = gl ? "GROUP/PROJECT" : "OWNER/REPO";
  const char *why = NULL;
  size_t pieces = 0;
  if (repo && gl && al_gitlab_path_check(repo, &pieces, &why) < 0)
    return al_error_set(err, EINVAL, "`%s`: expected GROUP/PROJECT: %s", repo, why);
  if (gl && pieces > 2)
    return al_error_set(err, EINVAL,
                        "`%s`: expected GROUP/PROJECT, one group level: a project in a subgroup "
                        "(GROUP/SUB/PROJECT) is not accepted yet (the policy's credentials.*.repo "
                        "and the broker's repositories take one group level; docs/gitlab.md)",
                        repo);
  /* the policy's credentials take the GitHub rule for now (a GitLab
   * group is checked as an OWNER) */
  if (!repo || al_repo_name_check(repo, &why) < 0)
    return al_error_set(err, EINVAL, "`%s`: expected %s%s%s%s", repo ? repo : "", ph,
                        gl ? ", GROUP spelt as a GitHub login for now (the policy's credentials)"
                           : "",
                        why ? ": " : "", why ? why : "");
  if (strcasecmp(repo, "OWNER/REPO") == 0 || strcasecmp(repo, "GROUP/PROJECT") == 0)
    return al_error_set(err, EINVAL,
                        "`%s` is the docs' placeholder: give the %s the tickets are in, e.g. "
                        "`airlock policy init %sacme/tally`",
                        repo, gl ? "project" : "repository", gl ? "--forge gitlab " : "");
  size_t rl = strlen(repo), pl = strlen(ph), n = 0;
  for (const char *q = strstr(tmpl, ph); q; q = strstr(q + pl, ph))
    n++;
  char *s = al_xmalloc(strlen(tmpl) + n * rl + 1);
  size_t o = 0;
  for (const char *q = tmpl; *q;) {
    if (strncmp(q, ph, pl) == 0) {
      memcpy(s + o, repo, rl);
      o += rl;
      q += pl;
    } else {
      s[o++] = *q++;
    }
  }
  s[o] = '\0';
  /* what is printed passes what is promised: `check --for ticket` */
  al_policy *p = NULL;
  al_error e = {0};
  int lr = al_policy_load_buffer("<starter policy>", s, o, &p, &e);
  if (lr < 0 || al_policy_check_for(p, AL_POLICY_FOR_TICKET, repo, &e) < 0) {
    al_policy_free(p);
    free(s);
    return al_error_set(err, EPROTO, "internal: the starter policy does not pass: %s", e.msg);
  }
  al_policy_free(p);
  *out = s;
  return 0;
}
