/* Lease client: see client.h. */
#include "broker/client.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker/proto.h"
#include "common/secmem.h"
#include "common/redact.h"
#include "common/util.h"

struct lease_token {
  bool present;
  char *value; /* secret memory */
  char fp[20];
  char repo[201];
  char perms[256];
  char expires_at[32];
};

struct lease_secret {
  char name[AL_SECRET_NAME_MAX];
  char *value; /* secret memory */
  char fp[20];
};

struct al_lease {
  int fd;
  struct lease_secret secrets[AL_PROTO_SECRETS_MAX];
  size_t n_secrets;
  char id[40];
  uint64_t ttl_ms;
  uint64_t granted_ms; /* al_now_ms() when the grant was read */
  char expires_at[32];
  bool ended;
  char buf[AL_PROTO_LINE_MAX];
  size_t len;
  struct lease_token tokens[AL_ROLE_COUNT];
  al_ghapi_counts requests; /* the grant's "requests" */
};

static void lease_destroy(al_lease *l)
{
  if (!l)
    return;
  if (l->fd >= 0)
    close(l->fd);
  for (int i = 0; i < AL_ROLE_COUNT; i++) {
    if (l->tokens[i].value) {
      al_redact_unregister(l->tokens[i].value);
      al_secret_free(l->tokens[i].value);
    }
  }
  for (size_t i = 0; i < l->n_secrets; i++) {
    if (l->secrets[i].value) {
      al_redact_unregister(l->secrets[i].value);
      al_secret_free(l->secrets[i].value);
    }
  }
  explicit_bzero(l, sizeof *l);
  free(l);
}

/* Read one line into a json object, waiting up to timeout_ms (-1: no wait
 * beyond what is buffered... 0 means poll once). Returns 1 with *msg, 0 on
 * timeout, -1 with err (EOF is ECONNRESET). */
static int read_msg(al_lease *l, int timeout_ms, json_t **msg, al_error *err)
{
  uint64_t deadline = al_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    char *nl = memchr(l->buf, '\n', l->len);
    if (nl) {
      size_t n = (size_t)(nl - l->buf);
      json_error_t je;
      json_t *j = json_loadb(l->buf, n, JSON_REJECT_DUPLICATES, &je);
      size_t rest = l->len - n - 1;
      memmove(l->buf, nl + 1, rest);
      explicit_bzero(l->buf + rest, l->len - rest);
      l->len = rest;
      if (!j || !json_is_object(j) || !json_is_string(json_object_get(j, "type"))) {
        json_decref(j);
        return al_make_error(err, EPROTO, "broker: malformed message");
      }
      *msg = j;
      return 1;
    }
    if (l->len == sizeof l->buf)
      return al_make_error(err, EPROTO, "broker: message too long");
    int64_t left = (int64_t)deadline - (int64_t)al_now_ms();
    struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
    int pr = poll(&pfd, 1, left > 0 ? (int)left : 0);
    if (pr < 0) {
      if (errno == EINTR)
        continue;
      return al_make_error(err, errno, "broker: poll");
    }
    if (pr == 0)
      return 0;
    ssize_t r = recv(l->fd, l->buf + l->len, sizeof l->buf - l->len, 0);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      return al_make_error(err, errno, "broker: recv");
    }
    if (r == 0)
      return al_make_error(err, ECONNRESET, "broker closed the connection");
    l->len += (size_t)r;
  }
}

static int error_from_msg_what(json_t *msg, const char *what, al_error *err)
{
  const char *code = json_string_value(json_object_get(msg, "code"));
  const char *m = json_string_value(json_object_get(msg, "message"));
  int e = EIO;
  if (code && strcmp(code, "forbidden") == 0)
    e = EACCES;
  else if (code && strcmp(code, "bad_request") == 0)
    e = EINVAL;
  else if (code && strcmp(code, "busy") == 0)
    e = EBUSY;
  al_make_error(err, 0, "broker refused the %s (%s): %s", what, code ? code : "?", m ? m : "?");
  if (err)
    err->code = e;
  return -1;
}

static int error_from_msg(json_t *msg, al_error *err)
{
  return error_from_msg_what(msg, "lease", err);
}

#define UNREACHABLE_MSG "connecting to the broker at `"
#define SOCKET_PATH_MSG "broker socket `"

bool al_broker_unreachable(const al_error *err)
{
  return err && (strncmp(err->msg, UNREACHABLE_MSG, strlen(UNREACHABLE_MSG)) == 0 ||
                 strncmp(err->msg, SOCKET_PATH_MSG, strlen(SOCKET_PATH_MSG)) == 0);
}

/* A connected stream socket to the broker (SOCK_CLOEXEC), or -1 with err. */
static int broker_connect(const char *socket_path, al_error *err)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(socket_path) >= sizeof sa.sun_path)
    return al_make_error(err, ENAMETOOLONG, SOCKET_PATH_MSG "%s`", socket_path);
  strcpy(sa.sun_path, socket_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return al_make_error(err, errno, "socket");
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    int e = errno;
    close(fd);
    return al_make_error(err, e, UNREACHABLE_MSG "%s`", socket_path);
  }
  return fd;
}

static int add_token_req(al_proto_lease_req *req, al_role role, const char *repo, const char *perms,
                         al_error *err)
{
  if (!repo)
    return 0;
  al_proto_token_req *t = &req->tokens[req->n_tokens++];
  t->role = role;
  const char *why = "longer than the broker protocol allows";
  if (al_forge_repo_check(repo, &why) < 0 || strlen(repo) >= sizeof t->repo)
    return al_error_set(err, EINVAL, "%s repository `%.200s`: %s", al_role_name(role), repo, why);
  snprintf(t->repo, sizeof t->repo, "%s", repo);
  if (perms) {
    if (al_perm_set_parse(perms, &t->perms, err) < 0)
      return al_error_wrap(err, "%s permissions", al_role_name(role));
    t->has_perms = true;
  }
  return 0;
}

/* A broker answer's "requests" {sent, not_modified, app, rejected}
 * (untrusted: non-negative integers only, else zero). */
static void parse_requests(json_t *msg, al_ghapi_counts *out)
{
  json_t *q = json_object_get(msg, "requests");
  json_t *v[4] = {json_object_get(q, "sent"), json_object_get(q, "not_modified"),
                  json_object_get(q, "app"), json_object_get(q, "rejected")};
  uint64_t *f[4] = {&out->sent, &out->not_modified, &out->app, &out->rejected};
  for (int i = 0; i < 4; i++)
    *f[i] = json_is_integer(v[i]) && json_integer_value(v[i]) >= 0
                ? (uint64_t)json_integer_value(v[i])
                : 0;
}

void al_lease_requests(const al_lease *l, al_ghapi_counts *out)
{
  *out = l->requests;
}

/* The lease's own fields of a grant: id, TTL, expiry. */
static int parse_grant_head(al_lease *l, json_t *msg, al_error *err)
{
  const char *id = json_string_value(json_object_get(msg, "lease"));
  json_t *ttl = json_object_get(msg, "ttl_ms");
  const char *exp = json_string_value(json_object_get(msg, "expires_at"));
  if (!id || strlen(id) >= sizeof l->id || !json_is_integer(ttl) || json_integer_value(ttl) < 0 ||
      !exp || strlen(exp) >= sizeof l->expires_at || !json_is_array(json_object_get(msg, "tokens")))
    return al_make_error(err, EPROTO, "broker: malformed lease answer");
  snprintf(l->id, sizeof l->id, "%s", id);
  l->ttl_ms = (uint64_t)json_integer_value(ttl);
  l->granted_ms = al_now_ms();
  snprintf(l->expires_at, sizeof l->expires_at, "%s", exp);
  parse_requests(msg, &l->requests);
  return 0;
}

/* One token of a grant into t (its value into secret memory, wiped from o). */
static int parse_token(struct lease_token *t, json_t *o, al_error *err)
{
  json_t *jv = json_object_get(o, "token");
  const char *val = json_string_value(jv);
  const char *fp = json_string_value(json_object_get(o, "fingerprint"));
  const char *repo = json_string_value(json_object_get(o, "repo"));
  const char *texp = json_string_value(json_object_get(o, "expires_at"));
  json_t *perms = json_object_get(o, "permissions");
  if (!val || !fp || !repo || !texp || !json_is_object(perms) || t->present ||
      strlen(repo) >= 201 || strlen(texp) >= 32)
    return al_make_error(err, EPROTO, "broker: malformed token in the lease answer");
  t->present = true;
  t->value = al_secret_dupn(val, json_string_length(jv));
  explicit_bzero((char *)val, json_string_length(jv));
  if (!t->value)
    return al_make_error(err, errno, "secret memory");
  al_redact_register(t->value);
  al_secret_fingerprint(t->value, t->fp);
  if (strcmp(t->fp, fp) != 0)
    return al_make_error(err, EPROTO, "broker: token fingerprint mismatch");
  snprintf(t->repo, sizeof t->repo, "%s", repo);
  snprintf(t->expires_at, sizeof t->expires_at, "%s", texp);
  const char *k;
  json_t *v;
  size_t off = 0;
  json_object_foreach(perms, k, v)
  {
    int n = snprintf(t->perms + off, sizeof t->perms - off, "%s%s:%s", off ? "," : "", k,
                     json_string_value(v) ? json_string_value(v) : "?");
    if (n < 0 || (size_t)n >= sizeof t->perms - off)
      break;
    off += (size_t)n;
  }
  return 0;
}

static int parse_grant(al_lease *l, json_t *msg, al_error *err)
{
  if (parse_grant_head(l, msg, err) < 0)
    return -1;
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(msg, "tokens"), i, o)
  {
    const char *role = json_string_value(json_object_get(o, "role"));
    al_role r;
    if (!role || al_role_parse(role, &r) < 0)
      return al_make_error(err, EPROTO, "broker: malformed token in the lease answer");
    if (parse_token(&l->tokens[r], o, err) < 0)
      return -1;
  }
  return 0;
}

/* The "secrets" object of a lease answer: exactly the names asked for. */
static int parse_secrets(al_lease *l, json_t *msg, const al_proto_lease_req *req, al_error *err)
{
  json_t *secs = json_object_get(msg, "secrets");
  if (req->n_secrets == 0) {
    if (secs)
      return al_make_error(err, EPROTO, "broker: secrets in the lease answer that were not asked");
    return 0;
  }
  if (!json_is_object(secs) || json_object_size(secs) != req->n_secrets)
    return al_make_error(err, EPROTO, "broker: the lease answer lacks the secrets asked for");
  for (size_t i = 0; i < req->n_secrets; i++) {
    json_t *o = json_object_get(secs, req->secrets[i]);
    json_t *jv = json_object_get(o, "value");
    const char *val = json_string_value(jv);
    const char *fp = json_string_value(json_object_get(o, "fingerprint"));
    if (!val || !fp || strlen(val) != json_string_length(jv) || !val[0])
      return al_make_error(err, EPROTO, "broker: malformed secret `%s` in the lease answer",
                           req->secrets[i]);
    struct lease_secret *ls = &l->secrets[l->n_secrets++];
    snprintf(ls->name, sizeof ls->name, "%s", req->secrets[i]);
    ls->value = al_secret_dupn(val, json_string_length(jv));
    explicit_bzero((char *)val, json_string_length(jv));
    if (!ls->value)
      return al_make_error(err, errno, "secret memory");
    al_redact_register(ls->value);
    al_secret_fingerprint(ls->value, ls->fp);
    if (strcmp(ls->fp, fp) != 0)
      return al_make_error(err, EPROTO, "broker: secret `%s` fingerprint mismatch", ls->name);
  }
  return 0;
}

/* Wipe every token value jansson holds in msg before freeing it. */
static void wipe_msg(json_t *msg)
{
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(msg, "tokens"), i, o)
  {
    json_t *v = json_object_get(o, "token");
    if (json_is_string(v))
      explicit_bzero((char *)json_string_value(v), json_string_length(v));
  }
  const char *k;
  json_object_foreach(json_object_get(msg, "secrets"), k, o)
  {
    json_t *v = json_object_get(o, "value");
    if (json_is_string(v))
      explicit_bzero((char *)json_string_value(v), json_string_length(v));
  }
  json_t *rt = json_object_get(msg, "read_token");
  if (json_is_string(rt))
    explicit_bzero((char *)json_string_value(rt), json_string_length(rt));
  json_decref(msg);
}

int al_lease_open(const char *socket_path, const al_lease_request *rq, al_lease **out,
                  al_error *err)
{
  al_proto_lease_req req;
  memset(&req, 0, sizeof req);
  req.ttl_ms = rq->ttl_ms;
  if (add_token_req(&req, AL_ROLE_GIT, rq->git_repo, rq->git_permissions, err) < 0 ||
      add_token_req(&req, AL_ROLE_TICKET, rq->ticket_repo, rq->ticket_permissions, err) < 0)
    return -1;
  if (req.n_tokens == 0)
    return al_error_set(err, EINVAL, "a lease needs a git or a ticket repository");
  if (rq->n_secrets > AL_PROTO_SECRETS_MAX)
    return al_error_set(err, EINVAL, "a lease carries at most %d secrets", AL_PROTO_SECRETS_MAX);
  for (size_t i = 0; i < rq->n_secrets; i++) {
    const char *why;
    if (al_secret_name_check(rq->secrets[i], &why) < 0)
      return al_error_set(err, EINVAL, "secret `%s`: %s", rq->secrets[i], why);
    for (size_t j = 0; j < i; j++)
      if (strcmp(rq->secrets[j], rq->secrets[i]) == 0)
        return al_error_set(err, EINVAL, "secret `%s` asked twice", rq->secrets[i]);
    snprintf(req.secrets[req.n_secrets++], AL_SECRET_NAME_MAX, "%s", rq->secrets[i]);
  }

  al_lease *l = al_xcalloc(1, sizeof *l);
  l->fd = broker_connect(socket_path, err);
  if (l->fd < 0)
    goto fail;
  json_t *m = al_proto_lease_req_to_json(&req);
  size_t len;
  char *line = al_proto_line(m, &len);
  json_decref(m);
  int w = al_write_all(l->fd, line, len);
  free(line);
  if (w < 0) {
    al_make_error(err, -w, "sending the lease request");
    goto fail;
  }
  json_t *msg = NULL;
  int r = read_msg(l, rq->timeout_ms > 0 ? rq->timeout_ms : 60000, &msg, err);
  if (r == 0) {
    al_make_error(err, ETIMEDOUT, "no answer from the broker");
    goto fail;
  }
  if (r < 0)
    goto fail;
  const char *type = json_string_value(json_object_get(msg, "type"));
  if (strcmp(type, "error") == 0) {
    error_from_msg(msg, err);
    json_decref(msg);
    goto fail;
  }
  if (strcmp(type, "lease") != 0) {
    json_decref(msg);
    al_make_error(err, EPROTO, "broker: unexpected `%s` answer", type);
    goto fail;
  }
  r = parse_grant(l, msg, err);
  if (r == 0)
    r = parse_secrets(l, msg, &req, err);
  wipe_msg(msg);
  if (r < 0)
    goto fail;
  for (size_t i = 0; i < req.n_tokens; i++)
    if (!l->tokens[req.tokens[i].role].present) {
      al_make_error(err, EPROTO, "broker: no %s token in the lease",
                    al_role_name(req.tokens[i].role));
      goto fail;
    }
  *out = l;
  return 0;
fail:
  lease_destroy(l); /* closing the connection revokes anything granted */
  return -1;
}

const char *al_lease_secret(const al_lease *l, const char *name)
{
  for (size_t i = 0; i < l->n_secrets; i++)
    if (strcmp(l->secrets[i].name, name) == 0)
      return l->secrets[i].value;
  return NULL;
}

const char *al_lease_secret_fingerprint(const al_lease *l, const char *name)
{
  for (size_t i = 0; i < l->n_secrets; i++)
    if (strcmp(l->secrets[i].name, name) == 0)
      return l->secrets[i].fp;
  return NULL;
}

void al_lease_secret_wipe(al_lease *l, const char *name)
{
  for (size_t i = 0; i < l->n_secrets; i++)
    if (strcmp(l->secrets[i].name, name) == 0 && l->secrets[i].value) {
      al_redact_unregister(l->secrets[i].value);
      al_secret_free(l->secrets[i].value);
      l->secrets[i].value = NULL;
    }
}

const char *al_lease_token(const al_lease *l, al_role role)
{
  return (unsigned)role < AL_ROLE_COUNT && l->tokens[role].present ? l->tokens[role].value : NULL;
}

const char *al_lease_fingerprint(const al_lease *l, al_role role)
{
  return (unsigned)role < AL_ROLE_COUNT && l->tokens[role].present ? l->tokens[role].fp : NULL;
}

const char *al_lease_repo(const al_lease *l, al_role role)
{
  return (unsigned)role < AL_ROLE_COUNT && l->tokens[role].present ? l->tokens[role].repo : NULL;
}

const char *al_lease_permissions(const al_lease *l, al_role role)
{
  return (unsigned)role < AL_ROLE_COUNT && l->tokens[role].present ? l->tokens[role].perms : NULL;
}

const char *al_lease_token_expires_at(const al_lease *l, al_role role)
{
  return (unsigned)role < AL_ROLE_COUNT && l->tokens[role].present ? l->tokens[role].expires_at
                                                                   : NULL;
}

const char *al_lease_id(const al_lease *l)
{
  return l->id;
}

uint64_t al_lease_ttl_ms(const al_lease *l)
{
  return l->ttl_ms;
}

uint64_t al_lease_end_ms(const al_lease *l)
{
  return l->ttl_ms ? l->granted_ms + l->ttl_ms : UINT64_MAX; /* 0: no TTL was granted */
}

const char *al_lease_expires_at(const al_lease *l)
{
  return l->expires_at;
}

int al_lease_fd(const al_lease *l)
{
  return l->fd;
}

static void fill_result(json_t *msg, al_lease_result *res)
{
  if (!res)
    return;
  res->answered = true;
  parse_requests(msg, &res->requests);
  snprintf(res->reason, sizeof res->reason, "%s",
           json_string_value(json_object_get(msg, "reason")) ?: "?");
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(msg, "tokens"), i, o)
  {
    if (res->n == AL_ROLE_COUNT)
      break;
    al_role r = AL_ROLE_GIT;
    const char *role = json_string_value(json_object_get(o, "role"));
    if (!role || al_role_parse(role, &r) < 0)
      continue;
    res->tokens[res->n].role = r;
    snprintf(res->tokens[res->n].fingerprint, 20, "%s",
             json_string_value(json_object_get(o, "fingerprint")) ?: "");
    res->tokens[res->n].revoked = json_is_true(json_object_get(o, "revoked"));
    res->tokens[res->n].confirmed = json_is_true(json_object_get(o, "confirmed"));
    snprintf(res->tokens[res->n].error, sizeof res->tokens[res->n].error, "%s",
             json_string_value(json_object_get(o, "error")) ?: "");
    res->n++;
  }
}

int al_lease_poll(al_lease *l, al_error *err)
{
  if (l->ended)
    return 1;
  for (;;) {
    json_t *msg = NULL;
    int r = read_msg(l, 0, &msg, err);
    if (r == 0)
      return 0;
    if (r < 0) {
      if (err && err->code == ECONNRESET) {
        l->ended = true;
        return 1;
      }
      return -1;
    }
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (!type)
      type = "";
    if (strcmp(type, "expired") == 0 || strcmp(type, "revoked") == 0 || strcmp(type, "error") == 0)
      l->ended = true;
    json_decref(msg);
    if (l->ended)
      return 1;
  }
}

/* Send "release" and wait for the broker's "revoked" (up to 60 s), filling
 * *res. Keeps l. Returns 0 when every token was confirmed, -1 with err. */
static int release_wait(al_lease *l, al_lease_result *res, al_error *err)
{
  int ret = -1;
  static const char rel[] = "{\"type\":\"release\"}\n";
  if (!l->ended) {
    /* MSG_NOSIGNAL: a dead broker is EPIPE here, never SIGPIPE */
    ssize_t w;
    do
      w = send(l->fd, rel, sizeof rel - 1, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w < 0 && errno != EPIPE && errno != ECONNRESET) {
      al_make_error(err, errno, "sending release to the broker");
      goto out;
    }
  }
  uint64_t deadline = al_now_ms() + 60000;
  for (;;) {
    int64_t left = (int64_t)deadline - (int64_t)al_now_ms();
    if (left <= 0) {
      al_make_error(err, ETIMEDOUT, "no revocation answer from the broker");
      goto out;
    }
    json_t *msg = NULL;
    int r = read_msg(l, (int)left, &msg, err);
    if (r <= 0) {
      if (r == 0)
        al_make_error(err, ETIMEDOUT, "no revocation answer from the broker");
      goto out;
    }
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (!type) {
      json_decref(msg); /* not a message we know: keep waiting */
      continue;
    }
    if (strcmp(type, "revoked") == 0) {
      al_lease_result tmp;
      memset(&tmp, 0, sizeof tmp);
      fill_result(msg, res ? res : &tmp);
      al_lease_result *rr = res ? res : &tmp;
      json_decref(msg);
      ret = 0;
      for (size_t i = 0; i < rr->n; i++)
        if (!rr->tokens[i].confirmed) {
          ret = al_make_error(err, EIO, "broker: token %s not confirmed revoked: %s",
                              rr->tokens[i].fingerprint, rr->tokens[i].error);
          break;
        }
      goto out;
    }
    if (strcmp(type, "error") == 0) {
      error_from_msg(msg, err);
      json_decref(msg);
      goto out;
    }
    json_decref(msg); /* "expired", "pong": keep waiting */
  }
out:
  l->ended = true;
  return ret;
}

/* The expiry and who revoked, for each token of res the broker named. */
static void result_fill_tokens(const al_lease *l, al_lease_result *res)
{
  for (size_t i = 0; i < res->n; i++) {
    const struct lease_token *t = &l->tokens[res->tokens[i].role];
    snprintf(res->tokens[i].expires_at, sizeof res->tokens[i].expires_at, "%s", t->expires_at);
    snprintf(res->tokens[i].revoked_by, sizeof res->tokens[i].revoked_by, "broker");
  }
}

int al_lease_release(al_lease *l, bool wait, al_lease_result *res, al_error *err)
{
  if (res)
    memset(res, 0, sizeof *res);
  if (!wait) {
    lease_destroy(l);
    return 0;
  }
  al_lease_result tmp;
  memset(&tmp, 0, sizeof tmp);
  al_lease_result *rr = res ? res : &tmp;
  int ret = release_wait(l, rr, err);
  result_fill_tokens(l, rr);
  lease_destroy(l);
  return ret;
}

int al_lease_release_or(al_lease *l, al_lease_fallback fb, void *ctx, al_lease_result *res,
                        char *broker_err, size_t broker_err_n, al_error *err)
{
  memset(res, 0, sizeof *res);
  if (broker_err_n)
    broker_err[0] = '\0';
  al_error be = {0};
  int br = release_wait(l, res, &be);
  result_fill_tokens(l, res);
  if (br < 0 && broker_err_n)
    snprintf(broker_err, broker_err_n, "%s", be.msg);
  /* Every token the lease holds and the broker did not confirm dead. */
  int ret = 0;
  for (int role = 0; role < AL_ROLE_COUNT; role++) {
    struct lease_token *t = &l->tokens[role];
    if (!t->present)
      continue;
    size_t k = res->n;
    for (size_t i = 0; i < res->n; i++)
      if (res->tokens[i].role == (al_role)role)
        k = i;
    if (k == res->n) { /* the broker never answered for it */
      if (res->n == AL_ROLE_COUNT)
        continue;
      res->n++;
      memset(&res->tokens[k], 0, sizeof res->tokens[k]);
      res->tokens[k].role = (al_role)role;
      snprintf(res->tokens[k].fingerprint, sizeof res->tokens[k].fingerprint, "%s", t->fp);
      snprintf(res->tokens[k].expires_at, sizeof res->tokens[k].expires_at, "%s", t->expires_at);
    }
    if (res->tokens[k].revoked && res->tokens[k].confirmed)
      continue;
    if (fb && t->value) {
      bool rv = false, cf = false;
      char e[256] = "";
      fb(ctx, (al_role)role, t->value, &rv, &cf, e, sizeof e);
      res->tokens[k].revoked = rv;
      res->tokens[k].confirmed = cf;
      snprintf(res->tokens[k].revoked_by, sizeof res->tokens[k].revoked_by, "supervisor");
      if (rv && cf)
        snprintf(res->tokens[k].error, sizeof res->tokens[k].error,
                 "the broker did not confirm; revoked by the supervisor");
      else
        snprintf(res->tokens[k].error, sizeof res->tokens[k].error, "%s", e);
    }
    if (!(res->tokens[k].revoked && res->tokens[k].confirmed) && ret == 0)
      ret = al_make_error(err, EIO, "token %s (expires %s) not confirmed dead: %s",
                          res->tokens[k].fingerprint, res->tokens[k].expires_at,
                          res->tokens[k].error[0] ? res->tokens[k].error : be.msg);
  }
  lease_destroy(l);
  return ret;
}

void al_lease_free(al_lease *l)
{
  lease_destroy(l);
}

/* An audit lease keeps its read token in the git slot and the run's App's
 * metadata: read token in the ticket slot (both minted as git tokens); the
 * token file's token, which the lease does not revoke, in a secret slot. */
#define AUDIT_READ_SLOT AL_ROLE_GIT
#define AUDIT_BOT_SLOT AL_ROLE_TICKET
#define AUDIT_FILE_SECRET "audit_token_file"

static int parse_audit_grant(al_lease *l, json_t *msg, al_error *err)
{
  if (parse_grant_head(l, msg, err) < 0)
    return -1;
  json_t *a = json_object_get(msg, "audit");
  const char *rfp = json_string_value(json_object_get(a, "read_fingerprint"));
  const char *bfp = json_string_value(json_object_get(a, "bot_fingerprint"));
  if (!json_is_object(a) || !rfp || !json_is_string(json_object_get(a, "api")) ||
      !json_is_object(json_object_get(a, "app")) ||
      !json_is_string(json_object_get(a, "credentials")))
    return al_make_error(err, EPROTO, "broker: malformed audit grant");
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(msg, "tokens"), i, o)
  {
    const char *fp = json_string_value(json_object_get(o, "fingerprint"));
    int slot = fp && strcmp(fp, rfp) == 0          ? AUDIT_READ_SLOT
               : fp && bfp && strcmp(fp, bfp) == 0 ? AUDIT_BOT_SLOT
                                                   : -1;
    if (slot < 0)
      return al_make_error(err, EPROTO, "broker: a token in the audit grant that is not its");
    if (parse_token(&l->tokens[slot], o, err) < 0)
      return -1;
  }
  json_t *rt = json_object_get(msg, "read_token");
  if (rt) {
    const char *val = json_string_value(rt);
    if (!val || !val[0] || strlen(val) != json_string_length(rt) ||
        l->tokens[AUDIT_READ_SLOT].present)
      return al_make_error(err, EPROTO, "broker: malformed read token in the audit grant");
    struct lease_secret *ls = &l->secrets[l->n_secrets++];
    snprintf(ls->name, sizeof ls->name, "%s", AUDIT_FILE_SECRET);
    ls->value = al_secret_dupn(val, json_string_length(rt));
    if (!ls->value)
      return al_make_error(err, errno, "secret memory");
    al_redact_register(ls->value);
    al_secret_fingerprint(ls->value, ls->fp);
    if (strcmp(ls->fp, rfp) != 0)
      return al_make_error(err, EPROTO, "broker: read token fingerprint mismatch");
  }
  if (!al_audit_lease_read_token(l) || (bfp && !l->tokens[AUDIT_BOT_SLOT].present))
    return al_make_error(err, EPROTO, "broker: the audit grant lacks its tokens");
  return 0;
}

int al_audit_lease_open(const char *socket_path, const char *repo, const char *branch,
                        const char *run_prefix, al_lease **out, json_t **grant, al_error *err)
{
  *out = NULL;
  *grant = NULL;
  al_proto_audit_req req;
  memset(&req, 0, sizeof req);
  const char *why = "longer than the broker protocol allows";
  if (!repo || al_forge_repo_check(repo, &why) < 0 || strlen(repo) >= sizeof req.repo)
    return al_error_set(err, EINVAL, "audit: repository `%s`: %s", repo ? repo : "",
                        repo ? why : "missing");
  snprintf(req.repo, sizeof req.repo, "%s", repo);
  if (branch) {
    if (!*branch || strlen(branch) >= sizeof req.branch)
      return al_error_set(err, EINVAL, "audit: bad branch name");
    snprintf(req.branch, sizeof req.branch, "%s", branch);
  }
  if (run_prefix) {
    if (!*run_prefix || strlen(run_prefix) >= sizeof req.run_prefix)
      return al_error_set(err, EINVAL, "audit: bad run branch prefix");
    snprintf(req.run_prefix, sizeof req.run_prefix, "%s", run_prefix);
  }
  al_lease *l = al_xcalloc(1, sizeof *l);
  l->fd = al_broker_request(socket_path, al_proto_audit_req_to_json(&req), "audit", err);
  if (l->fd < 0)
    goto fail;
  json_t *msg = NULL;
  int r = read_msg(l, 60000, &msg, err);
  if (r == 0) {
    al_make_error(err, ETIMEDOUT, "no audit answer from the broker");
    goto fail;
  }
  if (r < 0)
    goto fail;
  const char *type = json_string_value(json_object_get(msg, "type"));
  if (strcmp(type, "error") == 0) {
    error_from_msg_what(msg, "audit", err);
    json_decref(msg);
    goto fail;
  }
  if (strcmp(type, "audit_grant") != 0) {
    json_decref(msg);
    al_make_error(err, EPROTO, "broker: unexpected `%s` answer to an audit", type);
    goto fail;
  }
  r = parse_audit_grant(l, msg, err);
  if (r == 0)
    *grant = json_incref(json_object_get(msg, "audit"));
  wipe_msg(msg);
  if (r < 0)
    goto fail;
  *out = l;
  return 0;
fail:
  lease_destroy(l); /* closing the connection revokes anything granted */
  return -1;
}

const char *al_audit_lease_read_token(const al_lease *l)
{
  const char *f = al_lease_secret(l, AUDIT_FILE_SECRET);
  return f ? f : l->tokens[AUDIT_READ_SLOT].value;
}

const char *al_audit_lease_bot_token(const al_lease *l)
{
  return l->tokens[AUDIT_BOT_SLOT].value;
}

int al_broker_request(const char *socket_path, json_t *msg, const char *what, al_error *err)
{
  int fd = broker_connect(socket_path, err);
  if (fd < 0) {
    json_decref(msg);
    return -1;
  }
  size_t len;
  char *line = al_proto_line(msg, &len);
  json_decref(msg);
  int w = al_write_all(fd, line, len);
  free(line);
  if (w < 0) {
    close(fd);
    return al_make_error(err, -w, "sending the %s request", what);
  }
  return fd;
}

int al_broker_error_answer(json_t *msg, const char *what, al_error *err)
{
  return error_from_msg_what(msg, what, err);
}
