/* The broker's GitHub REST client: mint and revoke installation tokens.
 *
 * Endpoints (GitHub REST API, version 2022-11-28):
 *   GET    /repos/{owner}/{repo}/installation      "Get a repository installation
 *                                                    for the authenticated app" (app JWT)
 *   POST   /app/installations/{id}/access_tokens   "Create an installation access
 *                                                    token for an app" (app JWT)
 *   DELETE /installation/token                     "Revoke an installation access
 *                                                    token" (the token itself): 204
 *   GET    /installation/repositories              "List repositories accessible to
 *                                                    the app installation": used to
 *                                                    confirm a revoked token gets 401
 *
 * Every call goes through the one forge client (forge/ghapi.h): its
 * headers, redirects (under the API base only), rate-limit rules and
 * retries; here with api.retries retries (5xx and network errors, POST
 * included: minting is safe to retry), api.max_rate_limit_wait as the wait
 * budget of one call, a body cap of 1 MiB, and every body wiped. Nothing
 * here logs a token: messages carry the token's fingerprint only.
 *
 * Thread-safe: one al_gh is shared by the broker's worker threads. */
#ifndef AL_BROKER_GITHUB_H
#define AL_BROKER_GITHUB_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <time.h>

#include "forge/appconfig.h"
#include "common/error.h"

typedef struct al_gh al_gh;

/* One minted installation token. `value` lives in secret memory
 * (secmem.h) and is wiped by al_token_clear(). */
typedef struct al_token {
  al_role role;
  char *value;               /* the token, or NULL once cleared */
  char fp[20];               /* "sha256:" + 12 hex of the value */
  char repo[201];            /* "owner/repo" as requested */
  long long repo_id;         /* from the response, 0 when not reported */
  long long installation_id; /* GitHub: the installation; GitLab: the project access token's id */
  al_perm_set perms;         /* as granted by the API */
  time_t expires_at;         /* seconds since the epoch */
  char expires_at_str[32];   /* as the API wrote it (ISO 8601) */
} al_token;

/* The new client keeps pointers to cfg and key (both must outlive it). */
int al_gh_new(const al_broker_config *cfg, EVP_PKEY *key, al_gh **out, al_error *err);
void al_gh_free(al_gh *gh);

/* Mint a token for `role` on `repo` ("owner/repo") with exactly `perms`
 * (already checked against the role's maximum by the caller). Validates
 * the response: token charset and length, expires_at in the future, the
 * granted permissions no broader than asked (metadata: read aside), the
 * repositories exactly the one asked for. A response that fails validation
 * after a token was issued gets that token revoked before returning.
 * On success *out is filled (clear it with al_token_clear()). */
int al_gh_mint(al_gh *gh, al_role role, const char *repo, const al_perm_set *perms, al_token *out,
               al_error *err);

/* A GitLab broker (gitlab.token_file), not a GitHub App's. */
bool al_gh_is_gitlab(const al_gh *gh);

/* GitLab: the audit's read token on repo (a project's full path), minted
 * like a run's (POST /projects/:id/access_tokens, expiring tomorrow,
 * checked on the answer) as `airlock-audit` with scope read_api at
 * Maintainer (40), the role forge/audit_gitlab.h needs to read protected
 * branches, variables and deploy tokens; revoked like a run's
 * (al_gh_revoke). *out as al_gh_mint's. -1 with err (EINVAL for a GitHub
 * broker). */
int al_gh_mint_gl_audit(al_gh *gh, const char *repo, al_token *out, al_error *err);

/* What the App's JWT shows of the App and of its installation on one
 * repository, for the escape-budget audit (forge/audit.h, which runs in a
 * process without the key: the broker reads these for it). */
typedef struct al_app_facts {
  char slug[128];
  long long app_id;
  long long installation_id;
  json_t *permissions; /* the installation's `permissions` object, as GitHub sent it (owned) */
} al_app_facts;

/* GET /app (Apps › "Get the authenticated app": slug, id) and GET
 * /repos/{o}/{r}/installation (Apps › "Get a repository installation for
 * the authenticated app": id, permissions), both with the App's JWT. On
 * success (0) *out is filled (free it with al_app_facts_free). Errors: the
 * API unreachable; EACCES (GET /app: HTTP 401); ENOENT (the App is not
 * installed on repo: 404); EPROTO (another status, or an answer without
 * those fields). The messages are the ones `airlock audit` reports. */
int al_gh_app_facts(al_gh *gh, const char *repo, al_app_facts *out, al_error *err);
void al_app_facts_free(al_app_facts *f);

/* How long al_gh_revoke keeps checking that a revoked token is dead. */
#define AL_GH_REVOKE_CONFIRM_MS 10000u

/* Revoke t with DELETE /installation/token (204, or 401 = already dead),
 * then confirm with GET /installation/repositories that the token gets 401.
 * GitHub documents no propagation time, so a token that still works is
 * checked again with a short backoff (250 ms doubling to 4 s; the DELETE
 * sent once more after the second check) for up to
 * AL_GH_REVOKE_CONFIRM_MS before it is declared alive. *confirmed is true
 * only when the 401 was seen. Returns 0 when revoked and confirmed, -1
 * with err otherwise. Does not clear t. */
int al_gh_revoke(al_gh *gh, const al_token *t, bool *confirmed, al_error *err);

/* Wipe the token value (OPENSSL_cleanse) and reset the struct. */
void al_token_clear(al_token *t);

/* "contents:write,pull_requests:write" into out. */
void al_perm_set_format(const al_perm_set *s, char *out, size_t outsz);

/* Parse "YYYY-MM-DDTHH:MM:SSZ" (UTC). Returns 0 or -1. */
int al_parse_iso8601(const char *s, time_t *out);

#endif
