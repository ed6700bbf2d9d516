/* The forge's names, one rule each (names.h gives the rules and their
 * sources). Pure: no I/O. */
#include "forge/names.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

const char *const al_forge_kind_names[] = {"github", "gitlab", NULL};

static bool login_char(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

/* s[0..n) is a login without "[bot]": at most 39 bytes in all, an
 * Enterprise Managed User's "_SHORTCODE" included. */
static bool login_ok(const char *s, size_t n)
{
  if (n == 0 || n > 39 || s[0] == '-')
    return false;
  const char *us = memchr(s, '_', n);
  size_t base = us ? (size_t)(us - s) : n;
  if (base == 0 || (us && base + 1 == n))
    return false;
  for (size_t i = 0; i < base; i++)
    if (!login_char(s[i]))
      return false;
  for (size_t i = base + 1; i < n; i++) /* the shortcode: [A-Za-z0-9]+ */
    if (!isalnum((unsigned char)s[i]))
      return false;
  return true;
}

int al_login_check(const char *login, bool allow_bot, const char **why)
{
  size_t n = strlen(login);
  if (allow_bot && n > 5 && strcmp(login + n - 5, "[bot]") == 0)
    n -= 5;
  if (!login_ok(login, n)) {
    *why = "a login is 1 to 39 of [A-Za-z0-9-], not starting with `-` (an Enterprise "
           "Managed User's ends in _SHORTCODE)";
    return -1;
  }
  return 0;
}

int al_repo_name_check(const char *repo, const char **why)
{
  const char *slash = strchr(repo, '/');
  if (!slash || slash == repo || !slash[1] || strchr(slash + 1, '/')) {
    *why = "a repository is OWNER/REPO: one `/`, neither part empty";
    return -1;
  }
  if (!login_ok(repo, (size_t)(slash - repo))) {
    *why = "a repository is OWNER/REPO, OWNER a login: 1 to 39 of [A-Za-z0-9-], not starting "
           "with `-`";
    return -1;
  }
  const char *name = slash + 1;
  size_t nl = strlen(name);
  bool ok = nl <= 100 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
  for (size_t i = 0; ok && i < nl; i++)
    ok = isalnum((unsigned char)name[i]) || name[i] == '.' || name[i] == '_' || name[i] == '-';
  if (!ok) {
    *why = "a repository is OWNER/REPO, REPO 1 to 100 of [A-Za-z0-9._-], not `.` or `..`";
    return -1;
  }
  return 0;
}

/* A GitLab path piece s[0..n) (names.h). */
static bool gl_piece_ok(const char *s, size_t n, bool dot_git_ok)
{
  if (n == 0 || n > 100 || s[0] == '-' || s[0] == '.')
    return false;
  if (!dot_git_ok && n >= 4 && strncasecmp(s + n - 4, ".git", 4) == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  }
  return true;
}

int al_gitlab_path_check(const char *path, size_t *pieces, const char **why)
{
  size_t n = strlen(path), segs = 0;
  *pieces = 0;
  *why = "a GitLab project is a full path GROUP[/SUB...]/PROJECT: 2 to 20 pieces of 1 to 100 of "
         "[A-Za-z0-9._-], none starting with `-` or `.` or ending in `.git`, at most 255 bytes";
  if (n == 0 || n > 255)
    return -1;
  for (const char *s = path;;) {
    const char *e = strchr(s, '/');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    if (!gl_piece_ok(s, l, false))
      return -1;
    segs++;
    if (!e)
      break;
    s = e + 1;
  }
  if (segs < 2 || segs > 20)
    return -1;
  *pieces = segs;
  return 0;
}

int al_forge_repo_check(const char *repo, const char **why)
{
  size_t pieces;
  const char *glwhy;
  if (al_repo_name_check(repo, why) == 0 || al_gitlab_path_check(repo, &pieces, &glwhy) == 0)
    return 0;
  return -1;
}

int al_gitlab_username_check(const char *name, const char **why)
{
  size_t n = strlen(name);
  if (!gl_piece_ok(name, n, true) || name[n - 1] == '.') {
    *why = "a GitLab username is 1 to 100 of [A-Za-z0-9._-], not starting with `-` or `.`, not "
           "ending in `.`";
    return -1;
  }
  return 0;
}

const char *al_perm_level(const al_perm *p)
{
  return p->write ? "write" : "read";
}

/* Permissions that would let a prompt-injected agent run code outside the
 * sandbox (workflows, actions), change the review rules that hold its pull
 * request (administration, rulesets, members), or read secrets. */
static const char *const never_granted[] = {
    "administration",
    "workflows",
    "actions",
    "secrets",
    "organization_administration",
    "organization_secrets",
    "dependabot_secrets",
    "codespaces_secrets",
    "environments",
    "repository_hooks",
    "organization_hooks",
    "members",
    "organization_custom_roles",
    "repository_custom_properties",
    "organization_self_hosted_runners",
    "security_events",
    "secret_scanning_alerts",
    "single_file",
    "emails",
    "organization_personal_access_tokens",
    "organization_personal_access_token_requests",
};

bool al_perm_never_granted(const char *name)
{
  for (size_t i = 0; i < AL_ARRAY_SIZE(never_granted); i++)
    if (strcmp(name, never_granted[i]) == 0)
      return true;
  return false;
}

const al_perm *al_perm_find(const al_perm_set *s, const char *name)
{
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->items[i].name, name) == 0)
      return &s->items[i];
  return NULL;
}

int al_perm_check(const char *name, const char *level, bool *write, const char **why)
{
  size_t n = strlen(name);
  if (n == 0 || n >= AL_PERM_NAME_MAX) {
    *why = "a permission name is 1 to 47 characters of [a-z_]";
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (!(islower((unsigned char)name[i]) || name[i] == '_')) {
      *why = "a permission name is 1 to 47 characters of [a-z_]";
      return -1;
    }
  if (al_perm_never_granted(name)) {
    *why = "this permission is never granted by the broker";
    return -1;
  }
  if (strcmp(level, "read") == 0)
    *write = false;
  else if (strcmp(level, "write") == 0)
    *write = true;
  else {
    *why = "a permission level is `read` or `write`";
    return -1;
  }
  return 0;
}

int al_api_url_check(const char *url, const char **why)
{
  const char *host;
  bool https;
  if (strncmp(url, "https://", 8) == 0) {
    https = true;
    host = url + 8;
  } else if (strncmp(url, "http://", 7) == 0) {
    https = false;
    host = url + 7;
  } else {
    *why = "the API URL must start with https://";
    return -1;
  }
  size_t hl;
  char hostbuf[256];
  if (*host == '[') {
    const char *end = strchr(host, ']');
    if (!end) {
      *why = "unterminated IPv6 literal in the API URL";
      return -1;
    }
    hl = (size_t)(end - host - 1);
    host++;
  } else {
    hl = strcspn(host, ":/?#");
  }
  if (hl == 0 || hl >= sizeof hostbuf || strchr(url, '@') || strchr(url, '?') || strchr(url, '#') ||
      strpbrk(url, " \t\r\n")) {
    *why = "the API URL needs a host and no user, query or fragment";
    return -1;
  }
  memcpy(hostbuf, host, hl);
  hostbuf[hl] = '\0';
  if (https)
    return 0;
  struct in_addr a4;
  struct in6_addr a6;
  if (strcmp(hostbuf, "localhost") == 0 ||
      (inet_pton(AF_INET, hostbuf, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) ||
      (inet_pton(AF_INET6, hostbuf, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)))
    return 0;
  *why = "the API URL must use https unless its host is a loopback address";
  return -1;
}
