/* The ticket host's rules for Jira Cloud REST v3. See rules_tickets.h.
 * Pages followed (developer.atlassian.com/cloud/jira/platform/rest/v3):
 * "Get issue" (query: fields, fieldsByKeys, expand, properties,
 * updateHistory, failFast), "Get comments" (startAt, maxResults, orderBy,
 * expand), "Get comment" (expand), "Add comment" (body: a Comment with
 * `body` in ADF, `visibility`, `properties`). */
#include "gateway/rules_tickets.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickets/adf.h"
#include "tickets/tickets.h"

/* Get issue returns every field when `fields` is absent, and some fields
 * are other issues (issuelinks, subtasks, parent: their keys, summaries
 * and statuses), as is the changelog: so `fields` is required and each
 * field named must be one of the ticket's own (jira_fields), `expand`
 * takes only rendered text and names, and `updateHistory` (a write: the
 * bot's recently-viewed list) and `properties` / `fieldsByKeys` are not
 * listed. The single-comment route (GET .../comment/{id}) is not served:
 * nothing ties the id to the ticket but the vendor, and the list of the
 * ticket's comments holds every one. */
static const al_gw_rule jira_rules[] = {
    {"jira-issue", AL_GW_SIDE_TICKET, "GET", "/rest/api/3/issue/{key}", AL_GW_QUERY_LISTED,
     "fields expand failfast", AL_GW_TOKEN_TICKET, AL_GW_BODY_NONE, false,
     "Jira REST v3: Get issue (the ticket only; fields required, its own fields only)"},
    {"jira-issue-comments", AL_GW_SIDE_TICKET, "GET", "/rest/api/3/issue/{key}/comment",
     AL_GW_QUERY_LISTED, "startat maxresults orderby expand", AL_GW_TOKEN_TICKET, AL_GW_BODY_NONE,
     false, "Jira REST v3: Get comments (the ticket only)"},
    {"jira-comment-create", AL_GW_SIDE_TICKET, "POST", "/rest/api/3/issue/{key}/comment",
     AL_GW_QUERY_NONE, NULL, AL_GW_TOKEN_TICKET, AL_GW_BODY_JIRA_COMMENT, true,
     "Jira REST v3: Add comment, on the ticket, at most max_comments times, rewritten"},
};

/* The fields of Get issue that describe the ticket itself (lower case) */
static const char jira_fields[] = "summary description status labels assignee reporter creator "
                                  "created updated priority issuetype project resolution comment "
                                  "components fixversions versions duedate environment";
/* What `expand` may ask for on each route (lower case) */
static const char jira_issue_expand[] = "renderedfields names schema";
static const char jira_comments_expand[] = "renderedbody";

/* Is every comma-separated item of v[0..n) listed (case-insensitive)? */
static bool items_listed(const char *v, size_t n, const char *listed)
{
  if (n == 0)
    return false;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && v[e] != ',')
      e++;
    char item[40];
    size_t il = e - i;
    if (il == 0 || il >= sizeof item)
      return false;
    for (size_t k = 0; k < il; k++)
      item[k] = (char)((v[i + k] >= 'A' && v[i + k] <= 'Z') ? v[i + k] + 32 : v[i + k]);
    item[il] = '\0';
    if (!al_gw_word_listed(listed, item))
      return false;
    i = e + 1;
    if (e + 1 == n)
      return false; /* a trailing comma */
  }
  return true;
}

/* The values a Jira route's parameters may take (see the table's
 * comment): 0, or -1 with *reason and *param. */
static int query_values_ok(const al_gw_rule *rule, const al_gw_qparams *qp, const char **reason,
                           const char **param)
{
  bool issue = rule == &jira_rules[0];
  bool have_fields = false;
  for (size_t i = 0; qp && i < qp->n; i++) {
    const al_gw_qparam *q = &qp->p[i];
    bool ok = true;
    if (strcmp(q->name, "fields") == 0) {
      have_fields = true;
      ok = items_listed(q->value, q->value_len, jira_fields);
    } else if (strcmp(q->name, "expand") == 0) {
      ok = items_listed(q->value, q->value_len, issue ? jira_issue_expand : jira_comments_expand);
    }
    if (!ok) {
      *reason = "query-value-refused";
      *param = q->name;
      return -1;
    }
  }
  if (issue && !have_fields) {
    *reason = "query-fields-required";
    *param = "fields";
    return -1;
  }
  return 0;
}

static bool seg_chars_ok(const char *s, size_t n, const char *extra)
{
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          (extra && strchr(extra, c))))
      return false;
  }
  return true;
}

int al_gw_tk_rules_init(al_gw_tk_rules *r, int kind, const char *key, const char *id,
                        const char *prefix, unsigned max_comments, al_error *err)
{
  memset(r, 0, sizeof *r);
  if (kind != AL_TK_JIRA && kind != AL_TK_LINEAR)
    return al_error_set(err, EINVAL, "gateway: ticket kind %d has no host rules", kind);
  al_tk_target t;
  if (al_tk_target_parse((al_tk_kind)kind, key, NULL, &t, err) < 0)
    return al_error_wrap(err, "gateway");
  r->kind = kind;
  snprintf(r->key, sizeof r->key, "%s", t.key);
  size_t il = id ? strlen(id) : 0;
  if (il >= sizeof r->id || (il && !seg_chars_ok(id, il, "-")))
    return al_error_set(err, EINVAL, "gateway: ticket id `%.70s` is not [0-9A-Za-z-]{1,63}", id);
  snprintf(r->id, sizeof r->id, "%s", id ? id : "");
  size_t pl = prefix ? strlen(prefix) : 0;
  if (pl >= sizeof r->prefix ||
      (pl && (prefix[0] != '/' || prefix[pl - 1] == '/' || strstr(prefix, "//") ||
              strstr(prefix, "/.") || !seg_chars_ok(prefix, pl, "/._~-"))))
    return al_error_set(err, EINVAL, "gateway: ticket URL path `%.100s` is not canonical", prefix);
  snprintf(r->prefix, sizeof r->prefix, "%s", prefix ? prefix : "");
  r->max_comments = max_comments;
  return 0;
}

/* Is s[0..n) this ticket, by key or by id, exactly? */
static bool this_ticket(const al_gw_tk_rules *r, const char *s, size_t n)
{
  return (strlen(r->key) == n && memcmp(r->key, s, n) == 0) ||
         (r->id[0] && strlen(r->id) == n && memcmp(r->id, s, n) == 0);
}

static bool query_ok(const al_gw_rule *rule, const al_gw_qparams *qp, const char **reason,
                     const char **param)
{
  return al_gw_query_names_ok(rule, qp, reason, param);
}

static bool digits(const char *s, size_t n)
{
  if (n == 0 || n > 19)
    return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

const al_gw_rule *al_gw_jira_match(const al_gw_tk_rules *r, const char *method, size_t method_len,
                                   const char *path, const al_gw_qparams *qp, const char **reason,
                                   const char **param)
{
  *param = NULL;
  bool get = method_len == 3 && memcmp(method, "GET", 3) == 0;
  bool post = method_len == 4 && memcmp(method, "POST", 4) == 0;
  *reason = get ? "no-rule" : "write-refused";
  size_t pl = strlen(r->prefix);
  if (strncmp(path, r->prefix, pl) != 0)
    return NULL;
  const char *p = path + pl;
  static const char base[] = "/rest/api/3/issue/";
  if (strncmp(p, base, sizeof base - 1) != 0)
    return NULL;
  p += sizeof base - 1;
  const char *slash = strchr(p, '/');
  size_t kl = slash ? (size_t)(slash - p) : strlen(p);
  const char *rest = p + kl;
  if (!seg_chars_ok(p, kl, "-"))
    return NULL;
  /* which route the rest names: 0 the issue, 1 its comments, 2 one comment
   * (not served: see the table) */
  int route = -1;
  if (*rest == '\0')
    route = 0;
  else if (strcmp(rest, "/comment") == 0)
    route = 1;
  else if (strncmp(rest, "/comment/", 9) == 0 && digits(rest + 9, strlen(rest + 9)))
    route = 2;
  const al_gw_rule *rule = NULL;
  if (route == 0 && get)
    rule = &jira_rules[0];
  else if (route == 1 && get)
    rule = &jira_rules[1];
  else if (route == 1 && post)
    rule = &jira_rules[2];
  if (!this_ticket(r, p, kl)) {
    /* another issue: whatever the route, it is not this run's ticket */
    if (route >= 0 || !get)
      *reason = "other-ticket";
    return NULL;
  }
  if (!rule || (rule->needs_comments && r->max_comments == 0))
    return NULL; /* an edit (PUT), a transition, a deletion, ...: write-refused; else no-rule */
  if (!query_ok(rule, qp, reason, param) || query_values_ok(rule, qp, reason, param) < 0)
    return NULL;
  *reason = rule->name;
  return rule;
}

int al_gw_jira_comment_rewrite(const char *in, size_t len, const char *const *hosts, char **out,
                               size_t *out_len, struct al_safetext_counts *counts, const char **why,
                               char *bad)
{
  *out = NULL;
  *out_len = 0;
  bad[0] = '\0';
  json_error_t je;
  json_t *j = json_loadb(in, len, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    *why = "comment-not-json";
    return -1;
  }
  int rc = -1;
  if (!json_is_object(j)) {
    *why = "comment-not-object";
    goto done;
  }
  const char *k;
  json_t *v;
  json_object_foreach(j, k, v)
  {
    if (strcmp(k, "body") != 0) {
      size_t o = 0;
      for (; o < 64 && k[o]; o++)
        bad[o] = (char)((k[o] >= 0x20 && k[o] < 0x7f) ? k[o] : '?');
      bad[o] = '\0';
      *why = "comment-member-refused";
      goto done;
    }
  }
  json_t *doc = json_object_get(j, "body");
  if (!doc) {
    *why = "comment-body-missing";
    goto done;
  }
  char *text = NULL;
  al_error e = {0};
  if (json_is_null(doc) || al_adf_to_text(doc, &text, &e) < 0) {
    *why = "comment-body-not-adf";
    goto done;
  }
  struct al_safetext_opts o = {.forge_hosts = hosts, .counts = counts};
  char *safe = NULL;
  if (al_safetext_render(text, strlen(text), &o, &safe, &e) < 0) {
    free(text);
    *why = "comment-rewrite-failed";
    goto done;
  }
  free(text);
  json_t *nb = json_pack("{s:o}", "body", al_adf_from_text(safe));
  free(safe);
  *out = json_dumps(nb, JSON_COMPACT);
  json_decref(nb);
  if (!*out) {
    *why = "comment-rewrite-failed";
    goto done;
  }
  *out_len = strlen(*out);
  rc = 0;
done:
  json_decref(j);
  return rc;
}
