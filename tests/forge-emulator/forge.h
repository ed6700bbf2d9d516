/* airlock-forge: a local GitHub-compatible test host.
 *
 * One process serves the REST API (api host), git smart HTTP (git host) and
 * an admin listener for tests. State lives in memory (jansson values) behind
 * one mutex; bare repositories and the push log live under the data dir.
 * It is a TEST HOST: see README.md for what it emulates and what it does not. */
#ifndef FORGE_H
#define FORGE_H

#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define FORGE_API_BODY_MAX (1u << 20)   /* 1 MiB for REST bodies */
#define FORGE_GIT_BODY_MAX (256u << 20) /* 256 MiB for a push pack */
#define FORGE_CGI_OUT_MAX (512u << 20)  /* 512 MiB for a clone pack */
#define FORGE_TOKEN_TTL_S 3600          /* installation tokens: 1 hour */
#define FORGE_DOCS "https://docs.github.com/rest"

struct forge_app {
  long long id;
  char *client_id;
  char *slug;
  char *name;
  char *owner;
  json_t *permissions; /* the app's requested permissions */
  EVP_PKEY *key;       /* RSA public key for RS256 */
};

struct forge {
  pthread_mutex_t lock;
  char *data_dir;  /* owns repos/ and pushes.jsonl */
  char *repos_dir; /* GIT_PROJECT_ROOT */
  char *push_log;  /* JSON lines written by the pre-receive hook */
  char *self_exe;  /* absolute path of this binary (the hook) */
  const char *api_host;
  const char *git_host;
  char *base_url; /* https://api_host[:port] for url fields */
  char *git_base_url;
  long long clock_offset; /* seconds added to the wall clock */

  struct forge_app *apps;
  size_t n_apps;
  json_t *users;         /* [{login,id}] */
  json_t *installations; /* [{id, app_id, account, repository_selection, repositories[],
                            permissions}] */
  json_t *repos; /* [{id, full_name, owner, name, default_branch, private, protection{}, rulesets[],
                    collaborators[], next_number}] */
  json_t *issues;   /* [{repo, number, ...}] */
  json_t *comments; /* [{id, repo, issue_number, ...}] */
  json_t *pulls;    /* [{repo, number, ...}] */
  json_t *reviews;  /* [{id, repo, pull_number, user, state, ...}] */
  json_t *tokens; /* [{id, sha256, app_id, installation_id, permissions, repositories[], created_at,
                     expires_at, revoked_at}] */
  long long next_id; /* ids for comments, reviews, tokens, pulls */
};

extern struct forge g_forge;

/* ---- time ---- */
/* The forge clock: wall clock + the offset tests move through the admin API. */
long long forge_now(void);
/* ISO 8601 UTC "YYYY-MM-DDTHH:MM:SSZ" into out (at least 21 bytes). */
void forge_iso8601(long long t, char out[32]);

/* ---- fixture (fixture.c) ---- */
/* Load the fixture JSON at path, apply --key overrides (keys[i] = "APPID=PATH"),
 * create the bare repositories under g_forge.repos_dir. Clear errors name
 * the field. Returns 0 or -1 with err filled. */
int forge_load_fixture(const char *path, char **keys, size_t n_keys, al_error *err);

/* ---- lookups (fixture.c) ---- */
struct forge_app *forge_app_by_id(long long id);
struct forge_app *forge_app_by_iss(const char *iss);
json_t *forge_repo(const char *owner, const char *name);
json_t *forge_installation(long long id);
/* The installation of app on repo full_name, or NULL. */
json_t *forge_installation_for_repo(struct forge_app *app, const char *full_name);
json_t *forge_user(const char *login);

/* ---- auth (auth.c) ---- */
enum forge_auth_kind { AUTH_NONE, AUTH_TOKEN, AUTH_JWT, AUTH_BAD };
struct forge_auth {
  enum forge_auth_kind kind;
  json_t *token;         /* borrowed, AUTH_TOKEN */
  struct forge_app *app; /* AUTH_JWT and AUTH_TOKEN */
  int status;            /* AUTH_BAD: 401 */
  const char *message;   /* AUTH_BAD: GitHub's message */
};
/* Parse an Authorization header value ("token X", "Bearer X", "Basic b64").
 * A JWT (three dot-separated parts) is verified: RS256 with the app key,
 * iat at most 60 s in the future, exp in the future and at most 600 s
 * ahead (docs: "Generating a JSON Web Token (JWT) for a GitHub App").
 * An installation token is looked up by SHA-256; revoked or expired → AUTH_BAD.
 * Call with g_forge.lock held. */
void forge_authenticate(const char *authorization, struct forge_auth *out);
/* Mint a token value "ghs_" + 36..76 base62 chars into out (>= 96 bytes). */
int forge_new_token_value(char *out, size_t out_size);
/* "active" / "revoked" / "expired". */
const char *forge_token_state(json_t *tok);
/* Permission level compare: 0 none, 1 read, 2 write, 3 admin. */
int forge_perm_level(const char *s);
/* True when the token's repositories include full_name. */
bool forge_token_has_repo(json_t *tok, const char *full_name);
int forge_base64url_decode(const char *in, size_t len, unsigned char **out, size_t *out_len);

/* ---- HTTP glue (http.c) ---- */
struct forge_req {
  const char *method;
  const char *path;  /* without query */
  const char *query; /* may be NULL */
  const char *host;  /* Host header without port */
  const char *authorization;
  const char *content_type;
  const char *content_encoding;
  const char *git_protocol;
  const char *body;
  size_t body_len;
  void *conn; /* struct MHD_Connection * */
};
struct forge_resp {
  int status;
  char *body; /* malloc'd */
  size_t body_len;
  const char *content_type;
  json_t *headers; /* {name: value} extra headers, may be NULL */
};
/* Fill resp with a JSON body (steals j). */
void forge_resp_json(struct forge_resp *resp, int status, json_t *j);
/* GitHub error body {"message", "documentation_url", "status"}. */
void forge_resp_error(struct forge_resp *resp, int status, const char *message, const char *doc);
void forge_resp_text(struct forge_resp *resp, int status, const char *text);
/* Value of query parameter name (malloc'd, URL-decoded) or NULL. */
char *forge_query_param(const char *query, const char *name);

/* ---- request log and conditional GETs (reqlog.c) ---- */
/* Open --request-log FILE for appending (0644). -1 with err naming it. */
int forge_reqlog_open(const char *path, al_error *err);
/* A REST GET answered 200 gets ETag: "SHA-256 of the body"; when inm (the
 * If-None-Match header, or NULL) names it, resp becomes 304 with no body
 * and true is returned. Anything else is left alone (false). */
bool forge_etag_apply(const struct forge_req *rq, struct forge_resp *resp, const char *inm);
/* One JSON line for the request answered (no-op without --request-log):
 * method, path, query, kind, status, conditional, not_modified, the kind
 * of credential (never its value), the User-Agent. Thread-safe. */
void forge_reqlog_write(const struct forge_req *rq, const struct forge_resp *resp, bool is_git,
                        bool conditional, bool not_modified, long long remaining, const char *ua);
/* The forge-wide REST budget (reqlog.c): a request with a token not
 * answered 304 or 401 uses one of 5,000; x-ratelimit-remaining/-used are
 * set to match. Returns the remaining answered (-1 for git). */
long long forge_ratelimit_apply(const struct forge_req *rq, struct forge_resp *resp, bool is_git,
                                bool not_modified);

/* ---- routes ---- */
void forge_api_handle(struct forge_req *rq, struct forge_resp *resp);   /* api.c */
void forge_admin_handle(struct forge_req *rq, struct forge_resp *resp); /* admin.c */
/* Whether path is a git smart-HTTP path (/o/r(.git)/info/refs etc.). */
bool forge_git_path(const char *path);
void forge_git_handle(struct forge_req *rq, struct forge_resp *resp); /* git.c */

/* Create a pull request review as login (api.c). req holds {event, body}.
 * Fills resp (200 with the review, or GitHub's 422). Returns the stored
 * review (borrowed) or NULL. Lock held. Follows "REST API endpoints for pull
 * request reviews" (create a review). */
json_t *forge_create_review(json_t *repo, json_t *pr, const char *login, json_t *req,
                            struct forge_resp *resp);

/* ---- webhooks (webhooks.c) ---- */
/* Deliveries go to url (http://IPV4:PORT/PATH; NULL: no webhooks), signed
 * with the secret in secret_file when given. Returns 0 or -1 with err. */
int forge_webhooks_config(const char *url, const char *secret_file, al_error *err);
/* The admin routes under /hooks/ (label, comment, deliveries): true when
 * rq was one of them (resp filled). Takes g_forge.lock itself. */
bool forge_webhooks_admin(struct forge_req *rq, struct forge_resp *resp);

/* ---- git helpers (git.c) ---- */
/* Run git with argv (argv[0] = "git") in the bare repo of full_name, capturing
 * stdout (malloc'd, NUL-terminated) when out != NULL; with out_len == NULL
 * trailing newlines are stripped (text), else the bytes are exact. Returns
 * the exit status (0 success) or -1 on spawn failure. stdin from /dev/null. */
int forge_git_run(const char *full_name, const char *const *argv, char **out, size_t *out_len);
/* The pre-receive hook entry point (argv[0] basename "pre-receive"). */
int forge_hook_main(void);
/* Branch rules the hook enforces for repo (a JSON object per protected branch
 * pattern), serialised into the hook's environment. Lock held. */
/* repo needs "protection", "rulesets", "default_branch". The result has
 * booleans classic, ruleset, pr_classic, pr_ruleset, nonff_*, del_*,
 * restricted_classic, update_ruleset, create_ruleset, bypass_ruleset and
 * required_approvals / code_owner_reviews / last_push_approval. app may be
 * NULL (no bypass). Caller owns the result. */
json_t *forge_branch_rules(json_t *repo, const char *branch, struct forge_app *app);

#endif
