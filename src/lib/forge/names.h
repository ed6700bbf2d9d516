/* The forge's names, one rule each: an OWNER/REPO, a login, an API URL and
 * a permission (name and level). Every component that takes one of these
 * from a user, a config, a policy, a socket or the forge checks it here.
 *
 * Sources (GitHub's own rules, as its sign-up and "Create a repository"
 * forms state them and its REST API returns them):
 *  - a login (user or organization) is 1 to 39 of [A-Za-z0-9-] and does
 *    not start with '-' (sign-up also forbids a trailing '-' and "--",
 *    but older accounts have them and the forge still returns them, so
 *    they are accepted); an Enterprise Managed User's login ends in
 *    "_SHORTCODE" ([A-Za-z0-9]+), within the same 39; an App's bot user
 *    adds "[bot]" (docs.github.com "Username considerations for external
 *    authentication": "Usernames must not exceed 39 characters", only
 *    alphanumerics and dashes; "About Enterprise Managed Users");
 *  - a repository name is 1 to 100 of [A-Za-z0-9._-] (GitHub replaces
 *    every other character with '-'), never "." or ".."; a leading dot is
 *    allowed (OWNER/.github is the organization's defaults repository);
 *  - OWNER/REPO is a login (without "[bot]") and a repository name, so at
 *    most 39 + 1 + 100 = 140 bytes (AL_REPO_MAX - 1).
 * Permission names and levels follow the REST page "Create an installation
 * access token for an app" (body parameter `permissions`). */
#ifndef AL_FORGE_NAMES_H
#define AL_FORGE_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* Longest OWNER/REPO plus its NUL (39 + 1 + 100 + 1). */
#define AL_REPO_MAX 141
/* Longest login plus its NUL: 39 and "[bot]". */
#define AL_LOGIN_MAX 45

/* Check an "OWNER/REPO" name against the rules above. Returns 0, or -1
 * with a static reason in *why (never NULL). */
int al_repo_name_check(const char *repo, const char **why);

/* Check a login (the rules above); "[bot]" at its end only when allow_bot
 * (a webhook's sender may be an App's bot, a repository owner never is).
 * Returns 0 or -1 with a static reason in *why. */
int al_login_check(const char *login, bool allow_bot, const char **why);

/* Check that an API URL is acceptable: scheme://host[:port][/prefix],
 * https, or http only when the host is a loopback literal (127.0.0.0/8,
 * ::1) or "localhost"; no user, query, fragment or white space. Returns 0
 * or -1 with a static reason in *why. */
int al_api_url_check(const char *url, const char **why);

/* GitLab's names (docs.gitlab.com "Reserved project and group names" and
 * the path rules GitLab's sign-up and "Create a project" forms state: a
 * path piece is 1 to 100 of [A-Za-z0-9._-], not starting with `-` or `.`;
 * a project or group path does not end in `.git`). A project's full path
 * is GROUP[/SUB...]/PROJECT, 2 to 20 pieces, at most 255 bytes: 0 with
 * the count in *pieces, or -1 (*pieces 0) with a static reason in *why.
 * The webhook's project.path_with_namespace and the gateway's project are
 * checked here. */
int al_gitlab_path_check(const char *path, size_t *pieces, const char **why);

/* Either forge's repository: OWNER/REPO (al_repo_name_check) or a GitLab
 * project's full path (al_gitlab_path_check). For what carries a
 * repository before the forge's kind is known (a lease request, a policy
 * role as it is read); the kind's own rule is checked where it is known.
 * 0, or -1 with the GitHub rule's reason in *why. */
int al_forge_repo_check(const char *repo, const char **why);

/* A GitLab username: one path piece (above, `.git` allowed) not ending in
 * `.`. 0, or -1 with a static reason in *why. */
int al_gitlab_username_check(const char *name, const char **why);

/* The forge kinds airlock has a driver for (forge/forge.h): the policy's
 * `forge.kind` (default github). A second forge adds its name here, its
 * value to the enum and its driver to forge/forge.c's table. */
typedef enum al_forge_kind { AL_FORGE_GITHUB = 0, AL_FORGE_GITLAB = 1 } al_forge_kind;
/* "github", "gitlab"; NULL-terminated, indexed by al_forge_kind. */
extern const char *const al_forge_kind_names[];

#define AL_PERM_NAME_MAX 48

/* One forge permission: a GitHub App permission name ([a-z_]{1,47}) and
 * its level, read (false) or write (true). The one permission type of the
 * broker's config, a lease, and the policy's credential roles. */
typedef struct al_perm {
  char name[AL_PERM_NAME_MAX];
  bool write;
} al_perm;

typedef struct al_perm_set {
  al_perm items[16];
  size_t n;
} al_perm_set;

/* "read" or "write". */
const char *al_perm_level(const al_perm *p);

/* True for permissions airlock never grants, whatever a config, a policy
 * or a client says: administration, workflows, actions, secrets and the
 * other permissions that change who may merge, run code or read secrets. */
bool al_perm_never_granted(const char *name);

/* Find a permission by name in a set, or NULL. */
const al_perm *al_perm_find(const al_perm_set *s, const char *name);

/* Validate a permission name ([a-z_]{1,47}, not never granted) and level
 * ("read"/"write"). Returns 0 with *write set, or -1 with a static reason
 * in *why. */
int al_perm_check(const char *name, const char *level, bool *write, const char **why);

#endif
