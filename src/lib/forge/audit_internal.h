/* What the files of `airlock audit` share (audit.c: the driver and the
 * report; audit_gather.c: the reads; audit_judge.c: the verdicts): the
 * state of one run and the helpers that fill a criterion. Not installed;
 * see audit.h for the public contract. */
#ifndef AL_FORGE_AUDIT_INTERNAL_H
#define AL_FORGE_AUDIT_INTERNAL_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>

#include "forge/appconfig.h"
#include "forge/app.h"
#include "forge/audit.h"
#include "forge/ghapi.h"

#define DEFAULT_API "https://api.github.com"

/* ---- a growing string ------------------------------------------------- */

struct sb {
  char *s;
  size_t len, cap;
};

/* Append printf-style text (aborts on out of memory, as al_xrealloc). */
__attribute__((format(printf, 2, 3))) void au_sb_add(struct sb *b, const char *fmt, ...);
/* Append one part, "; " between parts (a part is cut at 1 KiB). */
__attribute__((format(printf, 2, 3))) void au_sb_part(struct sb *b, const char *fmt, ...);
/* The text (malloc'd, "" when empty); b is reset. */
char *au_sb_take(struct sb *b);

/* ---- state of one run ------------------------------------------------- */

enum layer_state { L_ABSENT = 0, L_PRESENT = 1, L_UNKNOWN = 2 };

struct ctx {
  const al_audit_opts *o;
  al_audit_report *rep;
  al_ghapi *api;
  const char *tok;     /* the read token */
  bool tok_is_bot;     /* minted for the App: current_user_can_bypass speaks for the bot */
  const char *bot_tok; /* the grant's metadata: read token of the run's App, or NULL */
  char bot_fp[20];     /* its fingerprint */
  char *repo_path;     /* "/repos/owner/repo" */
  char *branch_esc;

  /* the App */
  const al_broker_config *cfg; /* the broker's config (owned_cfg or the caller's) */
  al_broker_config *owned_cfg;
  bool inst_known;
  json_t *inst_perms; /* the installation's permissions object */

  /* classic protection */
  enum layer_state classic;
  char classic_why[320];
  json_t *classic_json;

  /* rules for the branch */
  bool rules_known;
  char rules_why[320];
  json_t *rules; /* array */

  /* rulesets */
  bool rs_list_known;
  char rs_list_why[320];
  json_t *rs_list;   /* summaries */
  json_t *rs_detail; /* "id" -> detail object, or a string: why it is not visible */

  /* the bot's own view: "id" -> current_user_can_bypass, asked with a
   * token of the run's App (tok_is_bot: the read token itself) */
  json_t *bot_view;
  bool bot_known;
  char bot_why[320];

  unsigned from; /* AL_AUDIT_FROM_* of the criterion being judged (set() takes it) */

  /* CODEOWNERS */
  enum layer_state co; /* absent: no file; present: co_text; unknown: co_why */
  char co_path[32];
  char co_why[320];
  char *co_text;
  size_t co_len;

  /* CI (audit_ci.c): what the ci.* criteria rest on */
  int visibility; /* al_wf_visibility, from GET /repos/{o}/{r} */
  bool actions_known, actions_disabled;
  char actions_why[320];
  int default_perms; /* al_wf_level */
  bool can_approve;
  char perms_why[320];
  bool wf_known; /* the workflows directory was listed (404: none) */
  char wf_why[320];
  struct au_wf_file *wf; /* the files: path, text or why */
  size_t n_wf;
  bool env_known;
  char env_why[320];
  struct au_env *env;
  size_t n_env;
};

struct au_wf_file {
  char *path;
  char *text; /* NULL: why */
  size_t len;
  char *why;
};

struct au_env {
  char *name;
  bool reviewers;
};

/* a, or b when a is NULL */
const char *au_str_or(const char *a, const char *b);
/* "HTTP 403: Resource not accessible by integration" into out[n] */
void au_why_status(char *out, size_t n, const al_ghapi_resp *r);
/* -1 with err (EACCES) when r is a 401 (the whole audit cannot run), else 0 */
int au_check_401(const al_ghapi_resp *r, const char *what, al_error *err);
/* Criterion id gets status st, the evidence taken from ev, fix unless it
 * passed, and the layers c->from it rests on (then cleared). */
void au_set(struct ctx *c, al_audit_id id, al_audit_status st, struct sb *ev, const char *fix);

/* ---- reads (audit_gather.c) ------------------------------------------- */

/* The repository, classic protection, rules, rulesets and CODEOWNERS. */
int au_gather_all(struct ctx *c, al_error *err);
/* current_user_can_bypass per ruleset, asked as the run's App: with the
 * read token when c->tok_is_bot, else with c->bot_tok (the grant's metadata:
 * read token); neither: unknown, with the reason. */
int au_gather_bot_view(struct ctx *c, al_error *err);
/* The installation's level ("read", "write", ...) of permission name, or NULL. */
const char *au_perm_level(json_t *perms, const char *name);
/* The key of a ruleset id in c->rs_detail / c->bot_view ("123"). */
void au_rs_key(char *k, size_t n, json_t *id);
/* A new object whose keys are the ids (au_rs_key) of the rulesets with rules
 * on the audited branch, from the effective rules (c->rules); values true.
 * The caller owns it. */
json_t *au_branch_ruleset_ids(struct ctx *c);

/* ---- CI (audit_ci.c) -------------------------------------------------- */

/* The workflows of the audited branch, the Actions settings and the
 * environments (the repository's visibility comes from gather_repo). */
int au_gather_ci(struct ctx *c, al_error *err);
/* The ci.* criteria from what au_gather_ci read. */
void au_judge_ci(struct ctx *c);
void au_ci_free(struct ctx *c);

/* ---- the App's key (audit_key.c) ------------------------------------- */

/* al_audit_run with opts.broker_config: the key is loaded, the App's facts
 * read and the read tokens minted in a short-lived child (as the broker's
 * audit grant makes them), which hands them over a pipe and exits; the
 * audit then runs here with that grant, and the minted tokens are revoked
 * at the end on every path (", revoked" or "; REVOCATION FAILED" appended
 * to out->credentials and out->as_app). opts already checked. */
int au_run_keyed(const al_audit_opts *o, al_audit_report *out, al_error *err);

/* ---- verdicts (audit_judge.c) ----------------------------------------- */

/* Judge every criterion from what was read. */
void au_judge_all(struct ctx *c);

/* holds and the counts from r->c[0..n_crit) (audit.c; the GitLab audit too). */
void au_tally(al_audit_report *r);

#endif
