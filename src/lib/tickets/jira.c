/* Jira Cloud REST v3 codecs. See tickets.h. Pages followed:
 * developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues
 * (Get issue: `id`, `key`, `fields.summary`, `fields.description` in ADF,
 * `fields.project.key`) and .../api-group-issue-comments (Get comments:
 * PageOfComments {startAt, maxResults, total, comments: [Comment {id,
 * author {displayName}, body (ADF)}]}; Add comment: {"body": ADF}). */
#include "tickets/tickets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tickets/adf.h"
#include "tickets/codec_int.h"

json_t *al_tk_json_object(const char *vendor, const char *body, size_t len, al_error *err)
{
  json_error_t je;
  json_t *j = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    al_error_set(err, EINVAL, "%s: the answer is not JSON (%s at byte %d)", vendor, je.text,
                 je.position);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    al_error_set(err, EINVAL, "%s: the answer is not a JSON object", vendor);
    return NULL;
  }
  return j;
}

const char *al_tk_str(const json_t *j, const char *path)
{
  char part[64];
  const char *p = path;
  while (j && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= sizeof part)
      return NULL;
    memcpy(part, p, n);
    part[n] = '\0';
    j = json_is_object(j) ? json_object_get(j, part) : NULL;
    p += n + (dot ? 1 : 0);
  }
  return json_is_string(j) ? json_string_value(j) : NULL;
}

char *al_tk_dup(const char *s)
{
  if (!s)
    return al_xstrdup("");
  size_t n = strlen(s);
  if (n <= AL_TK_TEXT_MAX)
    return al_xstrdup(s);
  n = AL_TK_TEXT_MAX;
  while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
    n--;
  char *o = al_xmalloc(n + 1);
  memcpy(o, s, n);
  o[n] = '\0';
  return o;
}

void al_tk_add_comment(al_tk_ticket *t, const char *id, const char *author, const char *body)
{
  if (t->n_comments >= AL_TK_COMMENTS_MAX) {
    t->comments_dropped++;
    return;
  }
  al_tk_comment *nc = realloc(t->comments, (t->n_comments + 1) * sizeof *nc);
  if (!nc)
    abort();
  t->comments = nc;
  nc[t->n_comments].id = al_tk_dup(id);
  nc[t->n_comments].author = al_tk_dup(author);
  nc[t->n_comments].body = al_tk_dup(body);
  t->n_comments++;
}

int al_tk_jira_read_issue(const char *body, size_t len, const al_tk_target *want, al_tk_ticket *t,
                          al_error *err)
{
  json_t *j = al_tk_json_object("jira", body, len, err);
  if (!j)
    return -1;
  int rc = -1;
  const char *id = al_tk_str(j, "id"), *key = al_tk_str(j, "key");
  const char *summary = al_tk_str(j, "fields.summary");
  const char *project = al_tk_str(j, "fields.project.key");
  const json_t *fields = json_object_get(j, "fields");
  const json_t *desc = json_is_object(fields) ? json_object_get(fields, "description") : NULL;
  char *text = NULL;
  if (!id || !key || !summary) {
    al_error_set(err, EINVAL, "jira: the issue lacks %s (a string)",
                 !id    ? "`id`"
                 : !key ? "`key`"
                        : "`fields.summary`");
  } else if (strcmp(key, want->key) != 0) {
    al_error_set(err, EINVAL, "jira: asked for %s, the answer is %.60s", want->key, key);
  } else if (!project || strcmp(project, want->project) != 0) {
    al_error_set(err, EINVAL, "jira: the issue's `fields.project.key` is not %s", want->project);
  } else if (al_adf_to_text(desc, &text, err) < 0) {
    al_error_wrap(err, "jira: fields.description");
  } else {
    t->id = al_tk_dup(id);
    t->key = al_tk_dup(key);
    t->title = al_tk_dup(summary);
    t->body = text;
    text = NULL;
    t->project = al_tk_dup(project);
    t->url = al_tk_dup(al_tk_str(j, "self"));
    rc = 0;
  }
  free(text);
  json_decref(j);
  return rc;
}

int al_tk_jira_read_comments(const char *body, size_t len, al_tk_ticket *t, bool *more,
                             al_error *err)
{
  *more = false;
  json_t *j = al_tk_json_object("jira", body, len, err);
  if (!j)
    return -1;
  const json_t *list = json_object_get(j, "comments");
  const json_t *total = json_object_get(j, "total"), *start = json_object_get(j, "startAt");
  if (!json_is_array(list)) {
    json_decref(j);
    return al_error_set(err, EINVAL, "jira: the comments page lacks `comments` (an array)");
  }
  size_t i;
  const json_t *c;
  json_array_foreach(list, i, c)
  {
    const char *id = al_tk_str(c, "id");
    char *text = NULL;
    if (!id || al_adf_to_text(json_object_get(c, "body"), &text, err) < 0) {
      if (!id)
        al_error_set(err, EINVAL, "jira: comments[%zu] lacks `id`", i);
      else
        al_error_wrap(err, "jira: comments[%zu].body", i);
      json_decref(j);
      return -1;
    }
    al_tk_add_comment(t, id, al_tk_str(c, "author.displayName"), text);
    free(text);
  }
  if (json_is_integer(total) && json_is_integer(start) && json_array_size(list) > 0 &&
      json_integer_value(start) >= 0 &&
      json_integer_value(start) + (json_int_t)json_array_size(list) < json_integer_value(total))
    *more = true;
  json_decref(j);
  return 0;
}

json_t *al_tk_jira_comment_body(const char *text)
{
  return json_pack("{s:o}", "body", al_adf_from_text(text));
}
