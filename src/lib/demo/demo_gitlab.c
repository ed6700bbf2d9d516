/* `airlock demo --forge gitlab` (issue #30): the same demo on a GitLab-
 * shaped test forge (tests/gitlab-forge, airlock-gitlab-forge). What it
 * builds, in order (demo/internal.h al_demo_gitlab_setup):
 *
 *   make-test-ca.sh tls gitlab.test     the forge's certificate
 *   secret/gitlab.token (0600)          the Maintainer's token: the broker
 *                                       mints the run's project access
 *                                       tokens with it; never in the sandbox
 *   secret/repos/acme/tools/tally.git   a bare repository of the demo's
 *                                       project (git add/commit into it)
 *   secret/gitlab-fixture.json          acme/tools/tally (id 3001, a project
 *                                       in a subgroup) with issues #1 and
 *                                       #2: the GitHub fixture's acme/tally
 *                                       #1 and #2 (the prompt injection)
 *   airlock-gitlab-forge --tls-dir      HTTPS on 127.0.0.1 (ports.json)
 *   broker.yaml gitlab: + the broker    per lease two project access tokens
 *   airlock.yaml forge.kind gitlab      gitlab.test pinned to 127.0.0.1
 *
 * The forge is read afterwards with the Maintainer's token (main's head,
 * the merge requests): the demo's own view, on loopback. */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "demo/internal.h"

#define GL_PROJECT_ID 3001
#define GL_PROJECT AL_DEMO_GITLAB_PROJECT

/* The GitHub fixture's acme/tally: its source directory (beside the
 * fixture) and issue #number's title and body, malloc'd. -1 when missing. */
static int tally_from_fixture(const char *fixture, int number, char **src, char **title,
                              char **body)
{
  *src = *title = *body = NULL;
  json_t *f = json_load_file(fixture, 0, NULL);
  size_t i, k;
  json_t *r, *is;
  json_array_foreach(json_object_get(f, "repositories"), i, r)
  {
    const char *name = json_string_value(json_object_get(r, "full_name"));
    const char *source = json_string_value(json_object_get(r, "source"));
    if (!name || strcmp(name, "acme/tally") != 0 || !source || *src)
      continue;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", fixture);
    char *slash = strrchr(dir, '/');
    *src =
        slash ? al_strdup_printf("%.*s/%s", (int)(slash - dir), dir, source) : al_xstrdup(source);
    json_array_foreach(json_object_get(r, "issues"), k, is)
    {
      const char *b = json_string_value(json_object_get(is, "body"));
      const char *t = json_string_value(json_object_get(is, "title"));
      if (json_integer_value(json_object_get(is, "number")) == number && b && t && !*body) {
        *body = al_xstrdup(b);
        *title = al_xstrdup(t);
      }
    }
  }
  json_decref(f);
  return *src && *body ? 0 : -1;
}

/* The bare repository REPOS/acme/tools/tally.git holding src's files as one
 * commit on main (git's index in the bare repository, src as the work
 * tree: nothing is copied). */
static int make_repo(al_demo *d, const char *src, const char *repos, al_error *err)
{
  char bare[PATH_MAX + 32], gd[PATH_MAX + 48], wt[PATH_MAX + 16], log[PATH_MAX + 16],
      acme[PATH_MAX + 8], tools[PATH_MAX + 16];
  snprintf(acme, sizeof acme, "%s/acme", repos);
  snprintf(tools, sizeof tools, "%s/acme/tools", repos);
  snprintf(bare, sizeof bare, "%s/" GL_PROJECT ".git", repos);
  snprintf(gd, sizeof gd, "--git-dir=%s", bare);
  snprintf(wt, sizeof wt, "--work-tree=%s", src);
  snprintf(log, sizeof log, "%s/setup.log", d->secret);
  if ((mkdir(repos, 0700) < 0 && errno != EEXIST) || (mkdir(acme, 0700) < 0 && errno != EEXIST) ||
      (mkdir(tools, 0700) < 0 && errno != EEXIST))
    return al_make_error(err, errno, "mkdir %s", tools);
  const char *const init[] = {"/usr/bin/env", "git", "init", "--quiet", "--bare", bare, NULL};
  const char *const head[] = {"/usr/bin/env",    "git", gd, "symbolic-ref", "HEAD",
                              "refs/heads/main", NULL};
  /* GitLab advertises push options; the gateway adds ci.skip to the run's
   * push and refuses it to a forge that does not (gateway/conn_request.c) */
  const char *const popt[] = {"/usr/bin/env", "git", gd, "config", "receive.advertisePushOptions",
                              "true",         NULL};
  const char *const add[] = {"/usr/bin/env", "git", gd, wt, "add", "--all", NULL};
  const char *const commit[] = {"/usr/bin/env",
                                "git",
                                "-c",
                                "user.name=airlock demo",
                                "-c",
                                "user.email=demo@airlock.invalid",
                                "-c",
                                "commit.gpgsign=false",
                                gd,
                                wt,
                                "commit",
                                "--quiet",
                                "-m",
                                "tally: a line counter",
                                NULL};
  if (al_demo_run_script(init, log) < 0 || al_demo_run_script(head, log) < 0 ||
      al_demo_run_script(popt, log) < 0 || al_demo_run_script(add, log) < 0 ||
      al_demo_run_script(commit, log) < 0) {
    snprintf(d->log, sizeof d->log, "%s", log);
    return al_error_set(err, 0, "making the GitLab demo's repository failed (git):");
  }
  return 0;
}

/* What the GitLab audit (forge/audit_gitlab.h) reads of the project, set
 * as a careful project is: main protected (push No one, merge Maintainers,
 * no force push, code owners), one approval from a person, author approval
 * off, approvals reset on push and not overridable per MR, a push rule
 * allowing only main and airlock/ branches, no CI variable, deploy token
 * or CI file, no standing bot user. */
static const char gl_settings[] =
    "{\"builds_access_level\": \"enabled\", \"ci_config_path\": null, "
    "\"auto_devops_enabled\": false,"
    " \"protected_branches\": [{\"id\": 1, \"name\": \"main\","
    "  \"push_access_levels\": [{\"id\": 1, \"access_level\": 0, \"access_level_description\": "
    "\"No one\", \"user_id\": null, \"group_id\": null, \"deploy_key_id\": null}],"
    "  \"merge_access_levels\": [{\"id\": 2, \"access_level\": 40, \"access_level_description\": "
    "\"Maintainers\", \"user_id\": null, \"group_id\": null}],"
    "  \"unprotect_access_levels\": [], \"allow_force_push\": false, "
    "\"code_owner_approval_required\": true}],"
    " \"approval_rules\": [{\"id\": 1, \"name\": \"Reviewers\", \"rule_type\": \"regular\", "
    "\"approvals_required\": 1, \"eligible_approvers\": [{\"id\": 7, \"username\": \"alice\"}], "
    "\"users\": [{\"id\": 7, \"username\": \"alice\"}], \"groups\": [], \"protected_branches\": "
    "[], "
    "\"applies_to_all_protected_branches\": false, \"contains_hidden_groups\": false}],"
    " \"push_rule\": {\"id\": 1, \"project_id\": 3001, \"branch_name_regex\": "
    "\"^(main|airlock/.*)$\", \"deny_delete_tag\": true, \"commit_committer_check\": false},"
    " \"audit\": {\"approvals\": {\"approvals_before_merge\": 0, \"reset_approvals_on_push\": true,"
    "  \"disable_overriding_approvers_per_merge_request\": true, "
    "\"merge_requests_author_approval\": false,"
    "  \"merge_requests_disable_committers_approval\": true, \"require_password_to_approve\": "
    "false},"
    "  \"variables\": [], \"deploy_tokens\": [], \"members\": [], \"files\": {}}}";

/* The GitLab forge's fixture: acme/tools/tally with issue #1 and #2 (the
 * prompt injection `--hostile` runs). */
static int write_fixture(const char *path, const char *const title[2], const char *const body[2],
                         al_error *err)
{
  json_t *f = json_pack(
      "{s:[{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:[{s:i, s:i, s:i, s:s, s:s, s:s, s:[], s:[]}, "
      "{s:i, s:i, s:i, s:s, s:s, s:s, s:[], s:[]}], s:[{s:s, s:b, s:b, s:{s:s}}]}]}",
      "projects", "id", GL_PROJECT_ID, "name", "tally", "path", "tally", "path_with_namespace",
      GL_PROJECT, "default_branch", "main", "visibility", "private", "web_url",
      "https://gitlab.test/" GL_PROJECT, "issues", "id", 9001, "iid", 1, "project_id",
      GL_PROJECT_ID, "title", title[0], "description", body[0], "state", "opened", "labels",
      "notes", "id", 9002, "iid", 2, "project_id", GL_PROJECT_ID, "title", title[1], "description",
      body[1], "state", "opened", "labels", "notes", "branches", "name", "main", "protected", 1,
      "default", 1, "commit", "id", "0000000000000000000000000000000000000000");
  json_t *settings = json_loads(gl_settings, 0, NULL);
  if (f && settings)
    json_object_update(json_array_get(json_object_get(f, "projects"), 0), settings);
  char *text = f && settings ? json_dumps(f, JSON_INDENT(1)) : NULL;
  json_decref(settings);
  json_decref(f);
  if (!text)
    return al_error_set(err, ENOMEM, "the GitLab fixture");
  int r = al_write_file(path, text, strlen(text), 0600, err);
  free(text);
  return r;
}

static int start_forge(al_demo *d, const al_demo_files *files, const char *tls, const char *fixture,
                       const char *token, const char *repos, al_error *err)
{
  char ports[PATH_MAX + 24], log[PATH_MAX + 16];
  snprintf(ports, sizeof ports, "%s/gitlab.ports.json", d->secret);
  snprintf(log, sizeof log, "%s/forge.log", d->secret);
  const char *const argv[] = {files->gitlab_forge,
                              "--fixture",
                              fixture,
                              "--token-file",
                              token,
                              "--ports-file",
                              ports,
                              "--repos",
                              repos,
                              "--tls-dir",
                              tls,
                              NULL};
  if (al_demo_spawn(d, argv, log) < 0 || !al_demo_wait_for(ports, 10000)) {
    snprintf(d->log, sizeof d->log, "%s", log);
    return al_error_set(err, 0, "the GitLab test forge did not start:");
  }
  json_t *pj = json_load_file(ports, 0, NULL);
  d->https_port = (int)json_integer_value(json_object_get(pj, "https"));
  json_decref(pj);
  if (d->https_port <= 0)
    return al_error_set(err, 0, "the GitLab test forge wrote no port; see %s", log);
  return 0;
}

/* The broker in its GitLab mode: the Maintainer's token, the one project. */
static int start_broker(al_demo *d, const al_demo_files *files, const char *token, al_error *err)
{
  char bconf[PATH_MAX + 16], blog[PATH_MAX + 16], state[PATH_MAX + 8];
  snprintf(bconf, sizeof bconf, "%s/broker.yaml", d->secret);
  snprintf(d->socket, sizeof d->socket, "%s/broker.sock", d->secret);
  snprintf(blog, sizeof blog, "%s/broker.log", d->secret);
  snprintf(state, sizeof state, "%s/broker", d->secret);
  al_autofree char *bc =
      al_strdup_printf("gitlab: {token_file: %s}\n"
                       "api:\n  url: https://127.0.0.1:%d/api/v4\n  ca_file: %s\n  retries: 2\n"
                       "repositories: [" GL_PROJECT "]\n"
                       "lease:\n  ttl: 5m\n"
                       "state_dir: %s\n",
                       token, d->https_port, d->ca, state);
  if (al_write_file(bconf, bc, strlen(bc), 0600, err) < 0)
    return -1;
  const char *const argv[] = {files->airlock_net, "broker",  "-c", bconf,
                              "--socket",         d->socket, NULL};
  struct stat st;
  if (al_demo_spawn(d, argv, blog) >= 0)
    for (int i = 0; i < 250; i++) {
      if (stat(d->socket, &st) == 0 && S_ISSOCK(st.st_mode))
        break;
      usleep(20000);
    }
  if (stat(d->socket, &st) < 0 || !S_ISSOCK(st.st_mode)) {
    snprintf(d->log, sizeof d->log, "%s", blog);
    return al_error_set(err, 0, "the broker did not start:");
  }
  return 0;
}

int al_demo_gitlab_setup(al_demo *d, const al_demo_files *files, const char *tls, al_error *err)
{
  char log[PATH_MAX + 16], token[PATH_MAX + 16], repos[PATH_MAX + 8], fixture[PATH_MAX + 24];
  snprintf(log, sizeof log, "%s/setup.log", d->secret);
  snprintf(token, sizeof token, "%s/gitlab.token", d->secret);
  snprintf(repos, sizeof repos, "%s/repos", d->secret);
  snprintf(fixture, sizeof fixture, "%s/gitlab-fixture.json", d->secret);
  d->gitlab_project_id = GL_PROJECT_ID;
  const char *const ca_argv[] = {files->ca_script, tls, "gitlab.test", NULL};
  if (al_demo_run_script(ca_argv, log) < 0) {
    snprintf(d->log, sizeof d->log, "%s", log);
    return al_error_set(err, 0, "making the test CA failed (openssl):");
  }
  snprintf(d->ca, sizeof d->ca, "%s/ca.crt", tls);
  chmod(tls, 0755);
  chmod(d->ca, 0644);
  /* 24 bytes (48 hex): the test forge keeps at most 63 */
  if (al_random_hex(d->gitlab_token, 24, err) < 0)
    return -1;
  al_autofree char *line = al_strdup_printf("%s\n", d->gitlab_token);
  if (al_write_file(token, line, strlen(line), 0600, err) < 0)
    return -1;
  al_autofree char *src = NULL, *title = NULL, *body = NULL;
  al_autofree char *src2 = NULL, *title2 = NULL, *body2 = NULL;
  if (tally_from_fixture(files->fixture, 1, &src, &title, &body) < 0 ||
      tally_from_fixture(files->fixture, 2, &src2, &title2, &body2) < 0)
    return al_error_set(err, 0, "%s: no acme/tally#1 and #2 (with its source) to put on GitLab",
                        files->fixture);
  const char *const titles[2] = {title, title2}, *const bodies[2] = {body, body2};
  if (make_repo(d, src, repos, err) < 0 || write_fixture(fixture, titles, bodies, err) < 0 ||
      start_forge(d, files, tls, fixture, token, repos, err) < 0 ||
      start_broker(d, files, token, err) < 0)
    return -1;
  snprintf(d->policy, sizeof d->policy, "%s/airlock.yaml", d->dir);
  al_autofree char *pol = al_strdup_printf(
      "version: 1\n"
      "network:\n"
      "  allow:\n"
      "    - {host: gitlab.test, port: %d, tls: true}\n"
      "  pin:\n"
      "    - {host: gitlab.test, address: 127.0.0.1}\n"
      "filesystem:\n  workspace_size: 256MiB\n  tmp_size: 128MiB\n"
      "process:\n  limits: {memory: 1GiB, pids: 512, wall: 2m}\n"
      "credentials:\n  broker: %s\n"
      "  git: {repo: " GL_PROJECT ", permissions: {contents: write, pull_requests: write}}\n"
      "  ticket: {repo: " GL_PROJECT ", permissions: {issues: write}}\n"
      "  ttl: 5m\n"
      "forge:\n  kind: gitlab\n  api_url: https://gitlab.test:%d/api/v4\n"
      "  git_url: https://gitlab.test:%d\n  ca_file: %s\n",
      d->https_port, d->socket, d->https_port, d->https_port, d->ca);
  return al_write_file(d->policy, pol, strlen(pol), 0644, err);
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
  size_t len = sz * n;
  char **buf = ud;
  size_t old = *buf ? strlen(*buf) : 0;
  if (old + len > (8u << 20))
    return 0;
  *buf = al_xrealloc(*buf, old + len + 1);
  memcpy(*buf + old, p, len);
  (*buf)[old + len] = '\0';
  return len;
}

json_t *al_demo_gitlab_get(al_demo *d, const char *path)
{
  CURL *c = curl_easy_init();
  if (!c)
    return NULL;
  char url[512], hdr[128];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/api/v4%s", d->https_port, path);
  snprintf(hdr, sizeof hdr, "PRIVATE-TOKEN: %s", d->gitlab_token);
  struct curl_slist *h = curl_slist_append(NULL, hdr);
  char *body = NULL;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_CAINFO, d->ca);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  curl_slist_free_all(h);
  json_t *j = rc == CURLE_OK && status == 200 && body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  return j;
}

const char *al_demo_gitlab_main_sha(al_demo *d, char *buf, size_t n)
{
  char path[96];
  snprintf(path, sizeof path, "/projects/%lld/repository/branches/main", d->gitlab_project_id);
  json_t *b = al_demo_gitlab_get(d, path);
  const char *sha = json_string_value(json_object_get(json_object_get(b, "commit"), "id"));
  snprintf(buf, n, "%s", sha ? sha : "?");
  json_decref(b);
  return buf;
}
