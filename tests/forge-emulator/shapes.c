/* Schema-required fields of the test forge's objects: see shapes.h. */
#include "shapes.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"

static void add(json_t *o, const char *k, json_t *v)
{
  if (!json_object_get(o, k))
    json_object_set_new(o, k, v);
  else
    json_decref(v);
}

static const char *str_or_empty(json_t *v)
{
  return json_is_string(v) ? json_string_value(v) : "";
}

/* json_string of a malloc'd string, freeing it. */
static json_t *json_string_take(char *s)
{
  json_t *j = json_string(s);
  free(s);
  return j;
}

static void add_url(json_t *o, const char *k, const char *fmt_base, const char *suffix)
{
  char *u = al_strdup_printf("%s%s", fmt_base, suffix);
  add(o, k, json_string(u));
  free(u);
}

json_t *forge_shape_user(json_t *o)
{
  if (!o)
    return o;
  const char *login = json_string_value(json_object_get(o, "login"));
  al_autofree char *api = al_strdup_printf("%s/users/%s", g_forge.base_url, login ? login : "");
  static const struct {
    const char *k, *s;
  } urls[] = {{"url", ""},
              {"events_url", "/events{/privacy}"},
              {"followers_url", "/followers"},
              {"following_url", "/following{/other_user}"},
              {"gists_url", "/gists{/gist_id}"},
              {"organizations_url", "/orgs"},
              {"received_events_url", "/received_events"},
              {"repos_url", "/repos"},
              {"starred_url", "/starred{/owner}{/repo}"},
              {"subscriptions_url", "/subscriptions"}};
  for (size_t i = 0; i < AL_ARRAY_SIZE(urls); i++)
    add_url(o, urls[i].k, api, urls[i].s);
  add(o, "avatar_url", json_string("https://avatars.forge.test/u/0"));
  add(o, "gravatar_id", json_string(""));
  al_autofree char *html = al_strdup_printf("%s/%s", g_forge.git_base_url, login ? login : "");
  add(o, "html_url", json_string(html));
  add(o, "site_admin", json_false());
  return o;
}

json_t *forge_shape_repo(json_t *o)
{
  if (!o)
    return o;
  const char *full = json_string_value(json_object_get(o, "full_name"));
  al_autofree char *api = al_strdup_printf("%s/repos/%s", g_forge.base_url, full ? full : "");
  static const struct {
    const char *k, *s;
  } urls[] = {{"archive_url", "/{archive_format}{/ref}"},
              {"assignees_url", "/assignees{/user}"},
              {"blobs_url", "/git/blobs{/sha}"},
              {"branches_url", "/branches{/branch}"},
              {"collaborators_url", "/collaborators{/collaborator}"},
              {"comments_url", "/comments{/number}"},
              {"commits_url", "/commits{/sha}"},
              {"compare_url", "/compare/{base}...{head}"},
              {"contents_url", "/contents/{+path}"},
              {"contributors_url", "/contributors"},
              {"deployments_url", "/deployments"},
              {"downloads_url", "/downloads"},
              {"events_url", "/events"},
              {"forks_url", "/forks"},
              {"git_commits_url", "/git/commits{/sha}"},
              {"git_refs_url", "/git/refs{/sha}"},
              {"git_tags_url", "/git/tags{/sha}"},
              {"hooks_url", "/hooks"},
              {"issue_comment_url", "/issues/comments{/number}"},
              {"issue_events_url", "/issues/events{/number}"},
              {"issues_url", "/issues{/number}"},
              {"keys_url", "/keys{/key_id}"},
              {"labels_url", "/labels{/name}"},
              {"languages_url", "/languages"},
              {"merges_url", "/merges"},
              {"milestones_url", "/milestones{/number}"},
              {"notifications_url", "/notifications{?since,all,participating}"},
              {"pulls_url", "/pulls{/number}"},
              {"releases_url", "/releases{/id}"},
              {"stargazers_url", "/stargazers"},
              {"statuses_url", "/statuses/{sha}"},
              {"subscribers_url", "/subscribers"},
              {"subscription_url", "/subscription"},
              {"tags_url", "/tags"},
              {"teams_url", "/teams"},
              {"trees_url", "/git/trees{/sha}"}};
  for (size_t i = 0; i < AL_ARRAY_SIZE(urls); i++)
    add_url(o, urls[i].k, api, urls[i].s);
  al_autofree char *git = al_strdup_printf("git://forge.test/%s.git", full ? full : "");
  al_autofree char *ssh = al_strdup_printf("git@forge.test:%s.git", full ? full : "");
  add(o, "git_url", json_string(git));
  add(o, "ssh_url", json_string(ssh));
  add(o, "svn_url",
      json_string(json_string_value(json_object_get(o, "html_url"))
                      ? json_string_value(json_object_get(o, "html_url"))
                      : ""));
  add(o, "description", json_null());
  add(o, "homepage", json_null());
  add(o, "language", json_null());
  add(o, "mirror_url", json_null());
  add(o, "license", json_null());
  static const char *const zero[] = {
      "forks",         "forks_count",      "open_issues", "open_issues_count",
      "size",          "stargazers_count", "watchers",    "watchers_count",
      "network_count", "subscribers_count"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(zero); i++)
    add(o, zero[i], json_integer(0));
  static const char *const yes[] = {"has_issues", "has_projects", "has_wiki", "has_downloads"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(yes); i++)
    add(o, yes[i], json_true());
  add(o, "has_pages", json_false());
  add(o, "has_discussions", json_false());
  add(o, "pushed_at", json_string("2024-01-01T00:00:00Z"));
  add(o, "created_at", json_string("2024-01-01T00:00:00Z"));
  add(o, "updated_at", json_string("2024-01-01T00:00:00Z"));
  return o;
}

json_t *forge_shape_app(json_t *o)
{
  if (!o)
    return o;
  const char *slug = json_string_value(json_object_get(o, "slug"));
  al_autofree char *html = al_strdup_printf("%s/apps/%s", g_forge.git_base_url, slug ? slug : "");
  add(o, "description", json_string("test App of airlock-forge"));
  add(o, "external_url", json_string("https://forge.test/"));
  add(o, "html_url", json_string(html));
  add(o, "created_at", json_string("2024-01-01T00:00:00Z"));
  add(o, "updated_at", json_string("2024-01-01T00:00:00Z"));
  return o;
}

json_t *forge_shape_installation(json_t *o)
{
  if (!o)
    return o;
  json_t *acct = json_object_get(o, "account");
  add(o, "target_id", json_integer(json_integer_value(json_object_get(acct, "id"))));
  add(o, "single_file_name", json_null());
  al_autofree char *html =
      al_strdup_printf("%s/organizations/settings/installations/%lld", g_forge.git_base_url,
                       (long long)json_integer_value(json_object_get(o, "id")));
  add(o, "html_url", json_string(html));
  add(o, "updated_at", json_string("2024-01-01T00:00:00Z"));
  add(o, "suspended_by", json_null());
  return o;
}

json_t *forge_shape_issue(json_t *o, const char *full)
{
  if (!o)
    return o;
  long long n = json_integer_value(json_object_get(o, "number"));
  al_autofree char *api = al_strdup_printf("%s/repos/%s/issues/%lld", g_forge.base_url, full, n);
  al_autofree char *repo = al_strdup_printf("%s/repos/%s", g_forge.base_url, full);
  add(o, "url", json_string(api));
  add_url(o, "comments_url", api, "/comments");
  add_url(o, "events_url", api, "/events");
  add_url(o, "labels_url", api, "/labels{/name}");
  add(o, "repository_url", json_string(repo));
  add(o, "assignee", json_null());
  add(o, "milestone", json_null());
  add(o, "closed_at", json_null());
  add(o, "locked", json_false());
  add(o, "node_id", json_string("I_forge"));
  add(o, "created_at", json_string("2024-01-01T00:00:00Z"));
  add(o, "updated_at", json_string("2024-01-01T00:00:00Z"));
  forge_shape_user(json_object_get(o, "user"));
  return o;
}

json_t *forge_shape_comment(json_t *o, const char *full)
{
  if (!o)
    return o;
  long long id = json_integer_value(json_object_get(o, "id"));
  al_autofree char *api =
      al_strdup_printf("%s/repos/%s/issues/comments/%lld", g_forge.base_url, full, id);
  add(o, "url", json_string(api));
  add(o, "node_id", json_string("IC_forge"));
  add(o, "updated_at",
      json_incref(json_object_get(o, "created_at") ? json_object_get(o, "created_at")
                                                   : json_string("2024-01-01T00:00:00Z")));
  forge_shape_user(json_object_get(o, "user"));
  return o;
}

json_t *forge_shape_pull(json_t *o, const char *full)
{
  if (!o)
    return o;
  long long n = json_integer_value(json_object_get(o, "number"));
  al_autofree char *api = al_strdup_printf("%s/repos/%s/pulls/%lld", g_forge.base_url, full, n);
  al_autofree char *iss = al_strdup_printf("%s/repos/%s/issues/%lld", g_forge.base_url, full, n);
  al_autofree char *html = al_strdup_printf("%s/%s/pull/%lld", g_forge.git_base_url, full, n);
  al_autofree char *st =
      al_strdup_printf("%s/repos/%s/statuses/%s", g_forge.base_url, full,
                       str_or_empty(json_object_get(json_object_get(o, "head"), "sha")));
  add_url(o, "commits_url", api, "/commits");
  add_url(o, "review_comments_url", api, "/comments");
  add(o, "review_comment_url",
      json_string_take(
          al_strdup_printf("%s/repos/%s/pulls/comments{/number}", g_forge.base_url, full)));
  add_url(o, "comments_url", iss, "/comments");
  add(o, "issue_url", json_string(iss));
  add_url(o, "diff_url", html, ".diff");
  add_url(o, "patch_url", html, ".patch");
  add(o, "statuses_url", json_string(st));
  add(o, "_links",
      json_pack("{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s+}, s:{s:s+}, s:{s:s+}, s:{s:s}, s:{s:s}}",
                "self", "href", api, "html", "href", html, "issue", "href", iss, "comments", "href",
                iss, "/comments", "review_comments", "href", api, "/comments", "commits", "href",
                api, "/commits", "statuses", "href", st, "review_comment", "href", api));
  add(o, "assignee", json_null());
  add(o, "milestone", json_null());
  add(o, "auto_merge", json_null());
  add(o, "merged_by", json_null());
  add(o, "author_association", json_string("NONE"));
  add(o, "maintainer_can_modify", json_false());
  add(o, "mergeable_state", json_string("unknown"));
  static const char *const zero[] = {"additions", "changed_files", "comments",
                                     "commits",   "deletions",     "review_comments"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(zero); i++)
    add(o, zero[i], json_integer(0));
  return o;
}

json_t *forge_shape_review(json_t *o, const char *full, long long pull)
{
  if (!o)
    return o;
  al_autofree char *api = al_strdup_printf("%s/repos/%s/pulls/%lld", g_forge.base_url, full, pull);
  al_autofree char *html =
      al_strdup_printf("%s/%s/pull/%lld#pullrequestreview-%lld", g_forge.git_base_url, full, pull,
                       (long long)json_integer_value(json_object_get(o, "id")));
  add(o, "html_url", json_string(html));
  add(o, "pull_request_url", json_string(api));
  add(o, "_links",
      json_pack("{s:{s:s}, s:{s:s}}", "html", "href", html, "pull_request", "href", api));
  add(o, "author_association", json_string("NONE"));
  forge_shape_user(json_object_get(o, "user"));
  return o;
}
