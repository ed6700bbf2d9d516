/* A run's ticket in Jira or Linear (issue #31, docs/tickets.md): when the
 * policy's `ticket:` block names jira or linear, the supervisor reads the
 * ticket through the ticket seam (tickets/tickets.h al_tk_read) before any
 * token is minted (phase "ticket") and posts the run's closing comment
 * through al_tk_post_comment (ticket_outputs.c gives the text, made inert
 * by common/safetext.h as for GitHub).
 *
 * The vendor credential is ticket.token_file: a regular file of the
 * supervisor's user, mode 0600 or stricter, one line of printable ASCII
 * (the rule relay.key_file has). It is read into secret memory here and
 * goes nowhere but the one Authorization header of the seam's requests:
 * not into the sandbox's environment or files, not on a command line, not
 * into a message or the record (which hold its path only). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ticket/ticket_internal.h"
#include "common/owned.h"
#include "common/redact.h"
#include "common/secmem.h"
#include "common/secretfile.h"
#include "common/util.h"

#define TOKEN_CAP 4096

bool tk_vendor(const struct ticket *t)
{
  return t->policy && t->policy->ticket.present && t->policy->ticket.kind != AL_TK_GITHUB;
}

int tk_vendor_target(struct ticket *t, const char *key, al_error *err)
{
  const al_policy_ticket *pt = &t->policy->ticket;
  if (!tk_vendor(t)) {
    if (key[0])
      return al_error_set(err, EINVAL,
                          "ticket `%s`: %s keeps its tickets as issues of the repository "
                          "(OWNER/REPO#N); `%s` is a Jira or Linear key, which needs a policy "
                          "`ticket:` block (docs/tickets.md)",
                          t->o->target, t->policy->source, key);
    snprintf(t->slug, sizeof t->slug, "%lu", t->number);
    return 0;
  }
  const char *kind = al_tk_kind_name((al_tk_kind)pt->kind);
  const char *project = pt->kind == AL_TK_JIRA ? pt->project : pt->team;
  if (!key[0])
    return al_error_set(err, EINVAL,
                        "ticket `%s`: the policy's tickets are in %s: name one as OWNER/REPO#KEY "
                        "(like %s#%s-7)",
                        t->o->target, kind, t->repo, project ? project : "PROJ");
  if (al_tk_target_parse((al_tk_kind)pt->kind, key, project, &t->tk, err) < 0)
    return -1;
  t->number = t->tk.number;
  snprintf(t->slug, sizeof t->slug, "%s", t->tk.key);
  json_t *rt = json_object_get(t->rec, "ticket");
  json_object_set_new(rt, "number", json_integer((json_int_t)t->number));
  json_object_set_new(rt, "kind", json_string(kind));
  json_object_set_new(rt, "key", json_string(t->tk.key));
  return 0;
}

/* ticket.token_file (common/secretfile.h's rule): one credential of
 * printable ASCII, no spaces, into secret memory. */
static int read_token(const char *path, char **out, al_error *err)
{
  return al_secret_file_read(path, "ticket.token_file", TOKEN_CAP - 2, al_secret_byte_printable,
                             "one credential of printable ASCII, no spaces", out, NULL, err);
}

/* The seam's configuration from the policy; the ticket host's pin
 * (network.pin) as curl's HOST:PORT:ADDR into resolve (n bytes). */
static void config(const struct ticket *t, al_tk_config *c, char *resolve, size_t n)
{
  const al_policy *p = t->policy;
  *c = (al_tk_config){.kind = (al_tk_kind)p->ticket.kind,
                      .url = p->ticket.url,
                      .ca_file = p->ticket.ca_file,
                      .user = p->ticket.kind == AL_TK_JIRA ? p->ticket.user : NULL,
                      .timeout_ms = 20000};
  resolve[0] = '\0';
  const char *h = p->ticket.url ? strstr(p->ticket.url, "://") : NULL;
  if (!h)
    return;
  bool https = strncmp(p->ticket.url, "https://", 8) == 0;
  h += 3;
  size_t hl = strcspn(h, ":/");
  unsigned port = https ? 443 : 80;
  if (h[hl] == ':')
    port = (unsigned)strtoul(h + hl + 1, NULL, 10);
  for (size_t i = 0; i < p->network.n_pin; i++) {
    const char *ph = p->network.pin[i].host, *pa = p->network.pin[i].address;
    if (strlen(ph) == hl && strncasecmp(ph, h, hl) == 0) {
      bool v6 = strchr(pa, ':') != NULL;
      snprintf(resolve, n, "%s:%u:%s%s%s", ph, port, v6 ? "[" : "", pa, v6 ? "]" : "");
      c->resolve = resolve;
      return;
    }
  }
}

int tk_do_vendor_read(struct ticket *t, al_error *err)
{
  if (!tk_vendor(t))
    return 0;
  uint64_t s = tk_phase_begin(t, "ticket");
  json_t *rt = json_object_get(t->rec, "ticket");
  al_tk_config c;
  char resolve[400];
  config(t, &c, resolve, sizeof resolve);
  if (!t->policy->ticket.token_file) {
    al_error_set(err, EINVAL,
                 "%s: ticket.token_file is required for a %s ticket: the vendor credential "
                 "(docs/tickets.md)",
                 t->policy->source, al_tk_kind_name(c.kind));
    goto fail;
  }
  json_object_set_new(rt, "token_file", json_string(t->policy->ticket.token_file));
  if (read_token(t->policy->ticket.token_file, &t->tk_token, err) < 0)
    goto fail;
  /* every text that may reach a log, a phase message or the record is
   * redacted of it, as the lease's tokens are */
  al_redact_register(t->tk_token);
  if (al_tk_read(&c, &t->tk, t->tk_token, &t->tk_read, err) < 0)
    goto fail;
  json_object_set_new(rt, "id", json_string(t->tk_read.id ? t->tk_read.id : ""));
  json_object_set_new(rt, "url", json_string(t->tk_read.url ? t->tk_read.url : ""));
  json_object_set_new(rt, "comments", json_integer((json_int_t)t->tk_read.n_comments));
  /* the title and body are the filer's text: not printed on the terminal */
  tk_phase_end(t, s, "ok", "%s %s read (%zu comments)", al_tk_kind_name(c.kind), t->tk.key,
               t->tk_read.n_comments);
  return 0;
fail:
  json_object_set_new(rt, "error", json_string(err->msg));
  tk_phase_end(t, s, "failed", "%s", err->msg);
  return -1;
}

const char *tk_vendor_title(const struct ticket *t)
{
  return t->tk_read.title && t->tk_read.title[0] ? t->tk_read.title : NULL;
}

void tk_vendor_comment(struct ticket *t, const char *text, json_t *outputs)
{
  al_tk_config c;
  char resolve[400];
  config(t, &c, resolve, sizeof resolve);
  al_error e = {0};
  char *url = NULL;
  if (!t->tk_token)
    al_error_set(&e, EINVAL, "no %s credential: the ticket was not read", al_tk_kind_name(c.kind));
  else if (al_tk_post_comment(&c, &t->tk, t->tk_token, text, &url, &e) == 0) {
    json_object_set_new(outputs, "ticket_comment",
                        json_pack("{s:s, s:s, s:s, s:s}", "system", al_tk_kind_name(c.kind), "key",
                                  t->tk.key, "url", url ? url : "", "body", text));
    free(url);
    return;
  }
  json_object_set_new(outputs, "ticket_comment",
                      json_pack("{s:s, s:s, s:s}", "system", al_tk_kind_name(c.kind), "key",
                                t->tk.key, "error", e.msg));
}

void tk_vendor_end(struct ticket *t)
{
  al_redact_unregister(t->tk_token);
  al_secret_free(t->tk_token);
  t->tk_token = NULL;
  al_tk_ticket_free(&t->tk_read);
}
