/* The trigger check's messages and its client side: see check.h. */
#include "broker/check.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/client.h"
#include "forge/appconfig.h"
#include "forge/names.h"
#include "broker/proto.h"
#include "common/util.h"

/* A repository: GitHub's OWNER/REPO or a GitLab project's full path
 * (GROUP[/SUB...]/PROJECT); which one the broker's forge takes is its
 * lease rules' (the repositories it may lease). */
static bool repo_ok(const char *repo)
{
  const char *why;
  size_t pieces;
  return al_repo_name_check(repo, &why) == 0 || al_gitlab_path_check(repo, &pieces, &why) == 0;
}

/* A user: a GitHub login (an App's bot included) or a GitLab username;
 * the broker's forge driver asks about it by that name. */
static bool user_ok(const char *user, const char **why)
{
  const char *w2;
  return al_login_check(user, true, why) == 0 || al_gitlab_username_check(user, &w2) == 0;
}

json_t *al_proto_check_req_to_json(const al_proto_check_req *req)
{
  json_t *m = json_pack("{s:s, s:i, s:s, s:I}", "type", "check", "version", AL_PROTO_VERSION,
                        "repo", req->repo, "ticket", (json_int_t)req->ticket);
  if (req->user[0])
    json_object_set_new(m, "user", json_string(req->user));
  return m;
}

int al_proto_check_req_from_json(json_t *msg, al_proto_check_req *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  const char *k;
  json_t *v;
  json_object_foreach(msg, k, v)
  {
    if (strcmp(k, "type") && strcmp(k, "version") && strcmp(k, "repo") && strcmp(k, "ticket") &&
        strcmp(k, "user"))
      return al_error_set(err, EINVAL, "check: unknown field `%s`", k);
  }
  json_t *ver = json_object_get(msg, "version");
  if (!json_is_integer(ver) || json_integer_value(ver) != AL_PROTO_VERSION)
    return al_error_set(err, EINVAL, "check: protocol version %d expected", AL_PROTO_VERSION);
  const char *repo = json_string_value(json_object_get(msg, "repo"));
  const char *why;
  if (!repo || strlen(repo) >= sizeof out->repo || !repo_ok(repo))
    return al_error_set(err, EINVAL, "check: `repo` must be OWNER/REPO or a GitLab project path");
  snprintf(out->repo, sizeof out->repo, "%s", repo);
  json_t *t = json_object_get(msg, "ticket");
  if (!json_is_integer(t) || json_integer_value(t) < 1 || json_integer_value(t) > 2147483647)
    return al_error_set(err, EINVAL, "check: `ticket` must be 1 to 2147483647");
  out->ticket = (unsigned long)json_integer_value(t);
  json_t *u = json_object_get(msg, "user");
  if (u) {
    const char *us = json_string_value(u);
    if (!us || strlen(us) != json_string_length(u))
      return al_error_set(err, EINVAL, "check: `user` must be a string without NUL bytes");
    if (!user_ok(us, &why) || strlen(us) >= sizeof out->user)
      return al_error_set(err, EINVAL, "check: `user` is not a GitHub login or GitLab username: %s",
                          why);
    snprintf(out->user, sizeof out->user, "%s", us);
  }
  return 0;
}

/* Read one answer line (at most AL_PROTO_LINE_MAX) within timeout_ms.
 * Returns the parsed object (new reference) or NULL with err. */
static json_t *read_answer(int fd, int timeout_ms, al_error *err)
{
  char buf[AL_PROTO_LINE_MAX] = "";
  size_t n = 0;
  uint64_t deadline = al_now_ms() + (uint64_t)timeout_ms;
  while (n == 0 || !memchr(buf, '\n', n)) {
    if (n == sizeof buf) {
      al_make_error(err, EPROTO, "broker: check answer too long");
      return NULL;
    }
    int64_t left = (int64_t)deadline - (int64_t)al_now_ms();
    if (left <= 0) {
      al_make_error(err, ETIMEDOUT, "no check answer from the broker");
      return NULL;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int pr = poll(&pfd, 1, (int)left);
    if (pr <= 0) {
      if (pr < 0 && errno != EINTR) {
        al_make_error(err, errno, "broker: poll");
        return NULL;
      }
      continue;
    }
    ssize_t r = recv(fd, buf + n, sizeof buf - n, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (r <= 0) {
      al_make_error(err, r < 0 ? errno : ECONNRESET,
                    "the broker closed the connection without a check answer");
      return NULL;
    }
    n += (size_t)r;
  }
  char *nl = memchr(buf, '\n', n);
  json_t *m = json_loadb(buf, (size_t)(nl - buf), JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(m)) {
    json_decref(m);
    al_make_error(err, EPROTO, "broker: malformed check answer");
    return NULL;
  }
  return m;
}

int al_broker_check(const char *socket_path, const char *repo, unsigned long ticket,
                    const char *user, al_check_result *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  al_proto_check_req req = {.ticket = ticket};
  const char *why;
  if (!repo || strlen(repo) >= sizeof req.repo || !repo_ok(repo))
    return al_error_set(err, EINVAL,
                        "check: repository `%s`: not OWNER/REPO or a GitLab project path",
                        repo ? repo : "");
  snprintf(req.repo, sizeof req.repo, "%s", repo);
  if (user) {
    if (!user_ok(user, &why))
      return al_error_set(err, EINVAL, "check: `%s` is not a GitHub login or GitLab username: %s",
                          user, why);
    if (strlen(user) >= sizeof req.user)
      return al_error_set(err, EINVAL, "check: login `%.40s...` is longer than %zu bytes", user,
                          sizeof req.user - 1);
    snprintf(req.user, sizeof req.user, "%s", user);
  }
  int fd = al_broker_request(socket_path, al_proto_check_req_to_json(&req), "check", err);
  if (fd < 0)
    return -1;
  json_t *a = read_answer(fd, 60000, err);
  close(fd);
  if (!a)
    return -1;
  int ret = -1;
  const char *type = json_string_value(json_object_get(a, "type"));
  const char *rr = json_string_value(json_object_get(a, "repo"));
  json_t *prs = json_object_get(a, "open_prs");
  if (type && !strcmp(type, "error")) {
    al_broker_error_answer(a, "check", err);
  } else if (!type || strcmp(type, "check") || !rr || strcasecmp(rr, repo) ||
             json_integer_value(json_object_get(a, "ticket")) != (json_int_t)ticket ||
             !json_is_array(prs)) {
    al_make_error(err, EPROTO, "broker: malformed check answer");
  } else {
    const char *p = json_string_value(json_object_get(a, "permission"));
    const char *rn = json_string_value(json_object_get(a, "role_name"));
    snprintf(out->permission, sizeof out->permission, "%s", p ? p : "");
    snprintf(out->role_name, sizeof out->role_name, "%s", rn ? rn : "");
    out->may_trigger = p && (!strcmp(p, "write") || !strcmp(p, "admin"));
    size_t i;
    json_t *v;
    json_array_foreach(prs, i, v)
    {
      if (out->n_open_prs < AL_CHECK_PRS_MAX) {
        const char *h = json_string_value(json_object_get(v, "head"));
        const char *u = json_string_value(json_object_get(v, "url"));
        out->open_prs[out->n_open_prs].number = json_integer_value(json_object_get(v, "number"));
        snprintf(out->open_prs[out->n_open_prs].head, 256, "%s", h ? h : "");
        snprintf(out->open_prs[out->n_open_prs].url, 512, "%s", u ? u : "");
      }
      out->n_open_prs++;
    }
    ret = 0;
  }
  json_decref(a);
  return ret;
}
