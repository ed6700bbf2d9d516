/* `airlock audit --config`: the App's key in a process of its own. A
 * short-lived child (fork) loads the key (and the audit App's, when the
 * config names one), reads what the App's JWT shows of the App and its
 * installation (forge/app.h al_gh_app_facts) and mints the read tokens the
 * broker mints for an audit grant (broker/broker_jobs.c job_audit), hands
 * them to the parent over a pipe as one JSON object, wipes them and exits.
 * The parent never loads a key: it runs the audit's reads and checks with
 * that grant (audit.c, opts.grant) and revokes the minted tokens at the end,
 * on every path, as the broker does when an audit's lease ends. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/redact.h"
#include "common/secmem.h"
#include "common/util.h"
#include "forge/app.h"
#include "forge/appconfig.h"
#include "forge/audit_internal.h"
#include "forge/jwt.h"

#define ANSWER_MAX (256 * 1024) /* the answer: the App's facts and two tokens */
#define TOKEN_MAX 1024
/* The installation's permissions object as the forge sent it goes into the
 * answer: capped here, before anything is minted, so a hostile forge cannot
 * push the answer past ANSWER_MAX (GitHub has ~50 permission names). */
#define PERMS_KEYS_MAX 128
#define PERMS_BYTES_MAX (16 * 1024)

/* What the key's process handed over (tokens in secret memory). */
struct keyed {
  json_t *answer; /* its answer, the token strings wiped */
  char *read_tok; /* NULL: the caller's token reads */
  char read_fp[20];
  bool read_minted; /* minted here (revoke it), not audit.token_file's */
  char *bot_tok;    /* the run's App's metadata: read token, unless token_is_bot */
  char bot_fp[20];
};

static void wipe_json_str(json_t *v)
{
  if (json_is_string(v))
    explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

static void wipe_answer(json_t *a)
{
  wipe_json_str(json_object_get(a, "read_token"));
  wipe_json_str(json_object_get(a, "bot_token"));
  json_decref(a);
}

/* ---- the child: the key ------------------------------------------------ */

/* The read token from the audit App (administration: read, contents: read). */
static int mint_audit_app(const al_broker_config *cfg, al_broker_config *view, const char *repo,
                          EVP_PKEY **key, al_gh **gh, al_token *t, char *cred, size_t credsz,
                          al_error *err)
{
  /* the broker's API settings with the audit App's identity (*gh keeps view) */
  *view = *cfg;
  view->app_id = cfg->audit_app_id;
  view->client_id = cfg->audit_client_id;
  view->private_key_path = cfg->audit_key_path;
  const char *aid = view->app_id ? view->app_id : view->client_id;
  if (al_app_key_load(view->private_key_path, key, err) < 0)
    return al_error_wrap(err, "the audit App's key (audit.app.private_key)");
  al_perm_set ps;
  al_audit_app_perms(&ps); /* the manifest of the audit App asks for the same (manifest.c) */
  if (al_gh_new(view, *key, gh, err) < 0)
    return -1;
  if (al_gh_mint(*gh, AL_ROLE_GIT, repo, &ps, t, err) < 0)
    return al_error_wrap(err, "minting a read-only token from the audit App %s", aid);
  char pf[256];
  al_perm_set_format(&t->perms, pf, sizeof pf);
  snprintf(cred, credsz,
           "installation token %s (%s) minted by the audit App %s; the App's JWT for the "
           "installation",
           t->fp, pf, aid);
  return 0;
}

/* The read token from the run's App: administration and contents read
 * where the installation holds them, metadata read implied. */
static int mint_reader(al_gh *gh, const char *repo, json_t *inst_perms, al_token *t, char *cred,
                       size_t credsz, al_error *err)
{
  al_perm_set ps = {0};
  static const char *const want[] = {"administration", "contents"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(want); i++) {
    if (!au_perm_level(inst_perms, want[i]))
      continue;
    snprintf(ps.items[ps.n].name, AL_PERM_NAME_MAX, "%s", want[i]);
    ps.items[ps.n].write = false;
    ps.n++;
  }
  if (al_gh_mint(gh, AL_ROLE_GIT, repo, &ps, t, err) < 0)
    return al_error_wrap(err, "minting a read-only installation token for the audit");
  char pf[256];
  al_perm_set_format(&t->perms, pf, sizeof pf);
  snprintf(cred, credsz, "installation token %s (%s) minted by the App for the audit", t->fp, pf);
  return 0;
}

static void revoke_quietly(al_gh *gh, al_token *t)
{
  bool confirmed = false;
  al_error e = {0};
  if (t->value && (al_gh_revoke(gh, t, &confirmed, &e) < 0 || !confirmed))
    al_warn("revoking the audit's token %s: %s", t->fp, e.msg);
  al_token_clear(t);
}

/* The grant, as job_audit makes it: 0 once the answer is written to wfd,
 * or -1 with err (what was minted is revoked, also when the write fails). need_reader false: the
 * caller reads with its own token and needs only the App's facts and its metadata: read token. */
static int child_grant(int wfd, const al_broker_config *cfg, const char *repo, bool need_reader,
                       al_error *err)
{
  EVP_PKEY *key = NULL, *akey = NULL;
  al_gh *gh = NULL, *agh = NULL;
  al_app_facts f = {0};
  al_token rd = {0}, bot = {0};
  char *file_tok = NULL;
  al_broker_config aview;
  char cred[256] = "";
  bool is_bot = false;
  int ret = -1;
  if (al_app_key_load(cfg->private_key_path, &key, err) < 0 || al_gh_new(cfg, key, &gh, err) < 0 ||
      al_gh_app_facts(gh, repo, &f, err) < 0)
    goto out;
  char *pdump = json_dumps(f.permissions, JSON_COMPACT);
  size_t pbytes = pdump ? strlen(pdump) : 0;
  free(pdump);
  if (!json_is_object(f.permissions) || json_object_size(f.permissions) > PERMS_KEYS_MAX ||
      pbytes > PERMS_BYTES_MAX) {
    al_error_set(err, EPROTO,
                 "the forge's installation `permissions` object has %zu keys (%zu bytes): "
                 "over the %d keys or %d bytes an audit takes",
                 json_object_size(f.permissions), pbytes, PERMS_KEYS_MAX, PERMS_BYTES_MAX);
    goto out;
  }
  if (need_reader && cfg->audit_key_path) {
    if (mint_audit_app(cfg, &aview, repo, &akey, &agh, &rd, cred, sizeof cred, err) < 0)
      goto out;
  } else if (need_reader && cfg->audit_token_file) {
    /* The operator's read-only admin token, handed on, never revoked. */
    if (al_broker_audit_token_load(cfg->audit_token_file, &file_tok, err) < 0)
      goto out;
    char fp[20];
    al_secret_fingerprint(file_tok, fp);
    snprintf(cred, sizeof cred,
             "the broker's audit token %s (audit.token_file); the App's JWT for the "
             "installation",
             fp);
  } else if (need_reader) {
    if (mint_reader(gh, repo, f.permissions, &rd, cred, sizeof cred, err) < 0)
      goto out;
    is_bot = true;
  }
  if (!is_bot) {
    al_perm_set meta = {.n = 1};
    snprintf(meta.items[0].name, AL_PERM_NAME_MAX, "metadata");
    if (al_gh_mint(gh, AL_ROLE_GIT, repo, &meta, &bot, err) < 0) {
      al_error_wrap(err, "minting a metadata: read token of the run's App (to ask "
                         "current_user_can_bypass as the App)");
      goto out;
    }
  }
  json_t *answer = json_pack(
      "{s:s, s:I, s:I, s:O, s:s, s:b, s:b, s:s?, s:s?}", "slug", f.slug, "id", (json_int_t)f.app_id,
      "installation_id", (json_int_t)f.installation_id, "permissions", f.permissions, "credentials",
      cred, "token_is_bot", is_bot, "read_minted", rd.value != NULL, "read_token",
      rd.value ? rd.value : file_tok, "bot_token", bot.value);
  char *s = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
  wipe_answer(answer);
  if (!s) {
    al_make_error(err, ENOMEM, "the audit's grant");
    goto out;
  }
  /* The parent stops reading at ANSWER_MAX and closes the pipe: the write
   * fails (EPIPE, SIGPIPE ignored) and what was minted is revoked below. */
  int w = al_write_all(wfd, s, strlen(s));
  int werr = errno;
  al_wipe_str(s);
  free(s);
  if (w < 0) {
    al_make_error(err, werr, "handing the audit's grant to the parent");
    al_warn("%s: revoking what was minted", err->msg);
    goto out;
  }
  ret = 0;
out:
  if (ret < 0) {
    revoke_quietly(agh ? agh : gh, &rd);
    revoke_quietly(gh, &bot);
  }
  al_token_clear(&rd);
  al_token_clear(&bot);
  al_secret_free(file_tok);
  al_app_facts_free(&f);
  al_gh_free(agh);
  al_gh_free(gh);
  EVP_PKEY_free(akey);
  EVP_PKEY_free(key);
  return ret;
}

/* The child's whole life: the grant (or the error) down the pipe, then
 * every copy wiped; it never returns. */
__attribute__((noreturn)) static void child_main(int wfd, const al_broker_config *cfg,
                                                 const char *repo, bool need_reader)
{
  al_error err = {0};
  signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error to handle, not a death */
  if (child_grant(wfd, cfg, repo, need_reader, &err) == 0) {
    close(wfd);
    _exit(0);
  }
  json_t *a = json_pack("{s:s, s:i}", "error", err.msg, "code", err.code);
  char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
  if (s)
    al_write_all(wfd, s, strlen(s)); /* the parent may be gone: nothing minted lives */
  free(s);
  json_decref(a);
  close(wfd);
  _exit(1);
}

/* ---- the parent: the grant --------------------------------------------- */

static int take_token(json_t *a, const char *name, char **out, char fp[20], al_error *err)
{
  json_t *v = json_object_get(a, name);
  if (!v || json_is_null(v))
    return 0;
  const char *s = json_string_value(v);
  if (!s || !*s || strlen(s) != json_string_length(v) || json_string_length(v) > TOKEN_MAX)
    return al_error_set(err, EPROTO, "the App key's process: malformed `%s` in its answer", name);
  *out = al_secret_dupn(s, json_string_length(v));
  explicit_bzero((char *)s, json_string_length(v));
  if (!*out)
    return al_make_error(err, errno, "secret memory");
  al_redact_register(*out);
  al_secret_fingerprint(*out, fp);
  return 0;
}

/* The child's answer into k (tokens first, so that what was minted can be
 * revoked whatever else is wrong), checked field by field. */
static int parse_answer(json_t *a, bool need_reader, struct keyed *k, al_error *err)
{
  if (!json_is_object(a))
    return al_error_set(err, EPROTO, "the App key's process: its answer is not a JSON object");
  json_t *e = json_object_get(a, "error");
  if (e) {
    const char *msg = json_string_value(e);
    json_t *code = json_object_get(a, "code");
    if (!msg || !json_is_integer(code))
      return al_error_set(err, EPROTO, "the App key's process: malformed error in its answer");
    return al_error_set(err, (int)json_integer_value(code), "%s", msg);
  }
  k->answer = json_incref(a);
  /* every token present is taken (and so revoked) before anything is refused */
  al_error e2 = {0};
  int r1 = take_token(a, "read_token", &k->read_tok, k->read_fp, err);
  int r2 = take_token(a, "bot_token", &k->bot_tok, k->bot_fp, r1 < 0 ? &e2 : err);
  json_t *minted = json_object_get(a, "read_minted");
  json_t *is_bot = json_object_get(a, "token_is_bot");
  k->read_minted = json_is_true(minted) && k->read_tok;
  if (r1 < 0 || r2 < 0)
    return -1;
  const char *slug = json_string_value(json_object_get(a, "slug"));
  const char *cred = json_string_value(json_object_get(a, "credentials"));
  json_t *id = json_object_get(a, "id"), *inst = json_object_get(a, "installation_id");
  if (!json_is_boolean(minted) || !json_is_boolean(is_bot) || !slug ||
      strlen(slug) >= sizeof(((al_audit_report *)NULL)->app_slug) || !cred ||
      strlen(cred) >= sizeof(((al_audit_report *)NULL)->credentials) || !json_is_integer(id) ||
      !json_is_integer(inst) || !json_is_object(json_object_get(a, "permissions")) ||
      (need_reader != (k->read_tok != NULL)) || (json_is_true(is_bot) != (k->bot_tok == NULL)) ||
      (json_is_true(minted) && !k->read_tok))
    return al_error_set(err, EPROTO, "the App key's process: malformed answer");
  return 0;
}

/* Fork the key's process, read its answer to the end, reap it. */
static int key_process(const al_broker_config *cfg, const char *repo, bool need_reader,
                       struct keyed *k, al_error *err)
{
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return al_make_error(err, errno, "pipe");
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return al_make_error(err, e, "fork (the App key's process)");
  }
  if (pid == 0) {
    close(p[0]);
    child_main(p[1], cfg, repo, need_reader);
  }
  close(p[1]);
  char *buf = al_xmalloc(ANSWER_MAX);
  size_t n = 0;
  int rerr = 0;
  while (n < ANSWER_MAX) {
    ssize_t r = read(p[0], buf + n, ANSWER_MAX - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      rerr = r < 0 ? errno : 0;
      break;
    }
    n += (size_t)r;
  }
  close(p[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  json_t *a = rerr == 0 && n < ANSWER_MAX ? json_loadb(buf, n, JSON_REJECT_DUPLICATES, NULL) : NULL;
  explicit_bzero(buf, n);
  free(buf);
  int r = parse_answer(a, need_reader, k, err);
  wipe_answer(a);
  if (r == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
    r = al_error_set(err, EPROTO, "the App key's process (pid %d) did not end cleanly (status %d)",
                     (int)pid, st);
  if (r < 0 && rerr)
    al_make_error(err, rerr, "reading the App key's process's answer");
  return r;
}

/* Revoke one token the key's process minted; ", revoked" or "; REVOCATION
 * FAILED" after note (when given). */
static void revoke_one(al_gh *gh, const char *value, const char *fp, const char *what, char *note,
                       size_t notesz)
{
  al_token t = {.value = (char *)value}; /* al_gh_revoke only reads it */
  snprintf(t.fp, sizeof t.fp, "%s", fp);
  bool confirmed = false;
  al_error e = {0};
  bool dead = gh && al_gh_revoke(gh, &t, &confirmed, &e) == 0 && confirmed;
  if (!dead)
    al_warn("revoking the audit's %s %s: %s", what, fp, gh ? e.msg : "no client");
  if (note) {
    size_t l = strlen(note);
    snprintf(note + l, notesz - l, "%s", dead ? ", revoked" : "; REVOCATION FAILED");
  }
}

static void keyed_end(struct keyed *k, const al_broker_config *cfg, al_audit_report *out, bool ran)
{
  al_gh *gh = NULL;
  al_error e = {0};
  /* DELETE /installation/token is sent with the token itself: no key here. */
  if ((k->read_minted || k->bot_tok) && al_gh_new(cfg, NULL, &gh, &e) < 0)
    al_warn("the client that revokes the audit's tokens: %s", e.msg);
  if (k->read_minted)
    revoke_one(gh, k->read_tok, k->read_fp, "token", ran ? out->credentials : NULL,
               sizeof out->credentials);
  if (k->bot_tok)
    revoke_one(gh, k->bot_tok, k->bot_fp, "App token", ran ? out->as_app : NULL,
               sizeof out->as_app);
  al_gh_free(gh);
  if (k->read_tok) {
    al_redact_unregister(k->read_tok);
    al_secret_free(k->read_tok);
  }
  if (k->bot_tok) {
    al_redact_unregister(k->bot_tok);
    al_secret_free(k->bot_tok);
  }
  json_decref(k->answer);
  memset(k, 0, sizeof *k);
}

int au_run_keyed(const al_audit_opts *o, al_audit_report *out, al_error *err)
{
  al_broker_config *cfg = NULL;
  if (al_broker_config_load_file(o->broker_config, &cfg, err) < 0)
    return -1;
  if (o->api_url) {
    free(cfg->api_url);
    cfg->api_url = al_xstrdup(o->api_url);
  }
  if (o->ca_file) {
    free(cfg->ca_file);
    cfg->ca_file = al_xstrdup(o->ca_file);
  }
  struct keyed k = {0};
  int r = key_process(cfg, o->repo, o->token == NULL, &k, err);
  bool ran = false;
  if (r == 0) {
    json_t *a = k.answer;
    char cred[256];
    if (o->token)
      snprintf(cred, sizeof cred, "token from %s; the App's JWT for the installation",
               o->token_source ? o->token_source : "the caller");
    else
      snprintf(cred, sizeof cred, "%s", json_string_value(json_object_get(a, "credentials")));
    al_audit_grant g = {
        .api_url = cfg->api_url,
        .ca_file = cfg->ca_file,
        .max_rate_wait_ms = cfg->max_rate_wait_ms,
        .app_slug = json_string_value(json_object_get(a, "slug")),
        .app_id = json_integer_value(json_object_get(a, "id")),
        .installation_id = json_integer_value(json_object_get(a, "installation_id")),
        .inst_permissions = json_object_get(a, "permissions"),
        .token = o->token ? o->token : k.read_tok,
        .credentials = cred,
        .token_is_bot = !o->token && json_is_true(json_object_get(a, "token_is_bot")),
        .bot_token = k.bot_tok,
        .bot_fp = k.bot_fp,
    };
    memcpy(g.roles, cfg->roles, sizeof g.roles);
    al_audit_opts go = *o;
    go.broker_config = go.token = go.token_source = go.api_url = go.ca_file = NULL;
    go.grant = &g;
    r = al_audit_run(&go, out, err);
    ran = r == 0;
  }
  keyed_end(&k, cfg, out, ran);
  al_broker_config_free(cfg);
  return r;
}
