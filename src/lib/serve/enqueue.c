/* `airlock serve enqueue -c CONFIG OWNER/REPO#N | OWNER/REPO#KEY`: a local
 * trigger, written into the queue file directly (docs/serve.md). The key
 * form (a Jira or Linear ticket, issue #31) is checked against the
 * repository's policy here, as the webhook's routing is: its `ticket:`
 * must be that vendor's, the key in its project or team; a forge number
 * for a repository whose tickets are in Jira or Linear is refused too. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/util.h"
#include "policy/policy.h"
#include "serve/serve.h"
#include "serve/config.h"
#include "serve/queue.h"
#include "ticket/ticket.h"
#include "tickets/tickets.h"

/* The ticket's name against the repository's policy: *number becomes the
 * key's N. */
static int check_ticket(const al_serve_repo *sr, const char *target, const char *key,
                        unsigned long *number, al_error *err)
{
  al_policy *p = NULL;
  if (al_policy_load_file(sr->policy, &p, err) < 0)
    return al_error_wrap(err, "%s: its policy", sr->repo);
  int kind = p->ticket.kind;
  const char *proj = kind == AL_TK_JIRA ? p->ticket.project : p->ticket.team;
  int r = 0;
  if (!key[0] && kind != AL_TK_GITHUB)
    r = al_error_set(err, EINVAL,
                     "%s: the policy of %s keeps its tickets in %s (ticket:): name the ticket by "
                     "its key, OWNER/REPO#KEY-N",
                     target, sr->repo, al_tk_kind_name((al_tk_kind)kind));
  else if (key[0] && kind == AL_TK_GITHUB)
    r = al_error_set(err, EINVAL,
                     "%s: the policy of %s has no Jira or Linear ticket: block; its tickets are "
                     "its GitHub issues (OWNER/REPO#N)",
                     target, sr->repo);
  else if (key[0]) {
    al_tk_target t;
    r = al_tk_target_parse((al_tk_kind)kind, key, proj, &t, err);
    if (r == 0)
      *number = t.number;
    else
      al_error_wrap(err, "%s", target);
  }
  al_policy_free(p);
  return r;
}

int al_serve_enqueue(const al_serve_config *cfg, const char *target, const char *sender,
                     int64_t *id, al_error *err)
{
  char repo[201], key[AL_TK_KEY_MAX];
  unsigned long number;
  if (al_ticket_parse_target_key(target, repo, sizeof repo, &number, key, sizeof key, err) < 0)
    return -1;
  const al_serve_repo *sr = al_serve_config_repo(cfg, repo);
  if (!sr)
    return al_error_set(err, EINVAL, "%s is not served (not in `repositories` of %s)", repo,
                        cfg->source);
  if (check_ticket(sr, target, key, &number, err) < 0)
    return -1;
  al_autofree char *dbp = al_strdup_printf("%s/queue.db", cfg->state_dir);
  struct stat st;
  if (stat(cfg->state_dir, &st) < 0)
    return al_make_error(err, errno, "state_dir `%s` (start `airlock serve` first)",
                         cfg->state_dir);
  al_queue *q;
  if (al_queue_open(dbp, &q, err) < 0)
    return -1;
  int r = al_queue_enqueue_key(q, repo, number, key, "enqueue", sender, NULL, id, err);
  al_queue_close(q);
  return r;
}
