/* GitHub App manifests for the run's App and the audit App (manifest.h). */
#include "broker/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* https://..., or http://localhost / 127.x / [::1]; no byte a URL or the
 * HTML page could be broken with. */
static int check_url(const char *opt, const char *u, al_error *err)
{
  size_t n = strlen(u);
  bool https = strncmp(u, "https://", 8) == 0;
  bool local = strncmp(u, "http://localhost", 16) == 0 || strncmp(u, "http://127.", 11) == 0 ||
               strncmp(u, "http://[::1]", 12) == 0;
  if (n > 2048 || (!https && !local))
    return al_error_set(err, EINVAL,
                        "%s `%s`: must be an https:// URL (http:// only for localhost) of at "
                        "most 2048 bytes",
                        opt, u);
  const char *host = u + (https ? 8 : 7);
  if (!*host || *host == '/')
    return al_error_set(err, EINVAL, "%s `%s`: no host", opt, u);
  for (const unsigned char *p = (const unsigned char *)u; *p; p++)
    if (*p <= 0x20 || *p >= 0x7f || *p == '"' || *p == '\'' || *p == '<' || *p == '>' ||
        *p == '\\' || *p == '`')
      return al_error_set(err, EINVAL,
                          "%s `%s`: no spaces, controls, quotes, <, >, \\ or non-ASCII bytes "
                          "(percent-encode them)",
                          opt, u);
  return 0;
}

static int check_name(const char *s, al_error *err)
{
  size_t n = strlen(s);
  bool ok = n >= 1 && n <= 34;
  for (size_t i = 0; ok && i < n; i++)
    ok = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '<' && s[i] != '>';
  if (!ok)
    return al_error_set(err, EINVAL,
                        "--name `%s`: 1 to 34 printable ASCII characters (GitHub's limit), no "
                        "quotes, < or >",
                        s);
  return 0;
}

/* perms[name] = the higher of its level there and this one. */
static void add_perm(json_t *perms, const char *name, bool write)
{
  const char *have = json_string_value(json_object_get(perms, name));
  if (!have || (write && strcmp(have, "write") != 0))
    json_object_set_new(perms, name, json_string(write ? "write" : "read"));
}

int al_app_manifest(const al_app_manifest_opts *o, json_t **out, al_error *err)
{
  *out = NULL;
  if (o->audit && o->webhook_url)
    return al_error_set(err, EINVAL,
                        "--webhook-url: the audit App takes no webhooks (only the run's App "
                        "delivers to `airlock serve`)");
  const char *name = o->name ? o->name : o->audit ? "airlock-auditor" : "airlock-bot";
  const char *url = o->url ? o->url : o->webhook_url ? o->webhook_url : "https://github.com";
  if (check_name(name, err) < 0 || check_url("--url", url, err) < 0 ||
      (o->webhook_url && check_url("--webhook-url", o->webhook_url, err) < 0) ||
      (o->redirect_url && check_url("--redirect-url", o->redirect_url, err) < 0))
    return -1;
  json_t *perms = json_object();
  if (o->audit) {
    al_perm_set a;
    al_audit_app_perms(&a);
    for (size_t i = 0; i < a.n; i++)
      add_perm(perms, a.items[i].name, a.items[i].write);
  } else {
    al_perm_set dflt[AL_ROLE_COUNT];
    al_broker_default_roles(dflt);
    const al_perm_set *roles = o->cfg ? o->cfg->roles : dflt;
    for (int r = 0; r < AL_ROLE_COUNT; r++)
      for (size_t i = 0; i < roles[r].n; i++) {
        if (al_perm_never_granted(roles[r].items[i].name)) { /* the config refuses it too */
          json_decref(perms);
          return al_error_set(err, EINVAL, "role %s: `%s` is never granted",
                              al_role_name((al_role)r), roles[r].items[i].name);
        }
        add_perm(perms, roles[r].items[i].name, roles[r].items[i].write);
      }
  }
  add_perm(perms, "metadata", false); /* GitHub gives it to every token */
  json_t *m = json_pack(
      "{s:s, s:s, s:s, s:b, s:o}", "name", name, "url", url, "description",
      o->audit ? "airlock's audit App: reads branch protection, rulesets and CODEOWNERS before "
                 "each run (read-only; never leased to a run)"
               : "airlock: runs a coding agent on one ticket in a sandbox; its only output is a "
                 "pull request a human reviews",
      "public", false, "default_permissions", perms);
  if (o->webhook_url) {
    json_object_set_new(m, "hook_attributes",
                        json_pack("{s:s, s:b}", "url", o->webhook_url, "active", true));
    json_object_set_new(m, "default_events", json_pack("[s, s]", "issues", "issue_comment"));
  }
  if (o->redirect_url)
    json_object_set_new(m, "redirect_url", json_string(o->redirect_url));
  *out = m;
  return 0;
}

char *al_app_manifest_html(const json_t *manifest, const char *owner, al_error *err)
{
  if (owner) {
    size_t n = strlen(owner);
    bool ok = n >= 1 && n <= 39 && owner[0] != '-';
    for (size_t i = 0; ok && i < n; i++)
      ok = (owner[i] >= 'a' && owner[i] <= 'z') || (owner[i] >= 'A' && owner[i] <= 'Z') ||
           (owner[i] >= '0' && owner[i] <= '9') || owner[i] == '-';
    if (!ok) {
      al_error_set(err, EINVAL, "--org `%s`: a GitHub login is 1 to 39 of [A-Za-z0-9-]", owner);
      return NULL;
    }
  }
  al_autofree char *json = json_dumps(manifest, JSON_INDENT(2) | JSON_SORT_KEYS);
  if (!json) {
    al_error_set(err, ENOMEM, "manifest");
    return NULL;
  }
  /* HTML-escape for the textarea's content (HTML §13.1.2.6: escapable raw
   * text; & and < are enough, > and quotes for good measure) */
  size_t n = strlen(json);
  char *esc = al_xmalloc(n * 6 + 1), *q = esc;
  for (const char *p = json; *p; p++) {
    const char *rep = *p == '&'    ? "&amp;"
                      : *p == '<'  ? "&lt;"
                      : *p == '>'  ? "&gt;"
                      : *p == '"'  ? "&quot;"
                      : *p == '\'' ? "&#39;"
                                   : NULL;
    if (rep) {
      memcpy(q, rep, strlen(rep));
      q += strlen(rep);
    } else {
      *q++ = *p;
    }
  }
  *q = '\0';
  al_autofree char *action =
      owner ? al_strdup_printf("https://github.com/organizations/%s/settings/apps/new", owner)
            : al_xstrdup("https://github.com/settings/apps/new");
  char *page = al_strdup_printf(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Create the GitHub "
      "App</title></head>\n<body>\n<p>Press the button to create this GitHub App on %s "
      "(docs/github-app.md).</p>\n<form action=\"%s\" method=\"post\">\n<textarea "
      "name=\"manifest\" rows=\"30\" cols=\"100\" readonly>%s</textarea>\n<p><input "
      "type=\"submit\" value=\"Create the GitHub App\"></p>\n</form>\n</body></html>\n",
      owner ? owner : "your account", action, esc);
  free(esc);
  return page;
}
