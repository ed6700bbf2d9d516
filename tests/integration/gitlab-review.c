/* A test-only caller of the GitLab driver's review reads (forge.h
 * pr_for_review .. pr_comment, forge/gitlab_review.c) against
 * airlock-gitlab-forge (gitlab-review.sh). The token comes from the
 * environment (AL_GIT_TOKEN), never a command line.
 * usage: gitlab-review API_URL PROJECT OP ARGS...
 *   pr BRANCH | files IID MAX | tree SHA | blob SHA MAX | commits IID MAX |
 *   texts IID comments|reviews|review_comments MAX | comment IID BODY
 * Prints one JSON object: {"rc", "errno" (a name: EPROTO, EFBIG, EINVAL,
 * ... or its number), "err", "out"} (blob: "out" the bytes as hex, "len";
 * tree: "truncated"). Never a token. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/forge.h"
#include "forge/ghapi.h"

static const char *errname(int e)
{
  static char b[16];
  switch (e) {
  case 0:
    return "";
  case EPROTO:
    return "EPROTO";
  case EFBIG:
    return "EFBIG";
  case EINVAL:
    return "EINVAL";
  case ENOENT:
    return "ENOENT";
  default:
    snprintf(b, sizeof b, "%d", e);
    return b;
  }
}

int main(int argc, char **argv)
{
  if (argc < 5) {
    fprintf(stderr, "usage: gitlab-review API_URL PROJECT OP ARGS...\n");
    return 2;
  }
  const char *tok = getenv("AL_GIT_TOKEN");
  if (!tok) {
    fprintf(stderr, "gitlab-review: AL_GIT_TOKEN is unset\n");
    return 2;
  }
  const al_forge_ops *ops = al_forge_ops_of(AL_FORGE_GITLAB);
  al_error err = {0};
  al_ghapi *c = NULL;
  al_ghapi_opts o = {.timeout_ms = 20000, .retries = AL_GHAPI_NO_RETRY};
  if (al_ghapi_open(argv[1], &o, &c, &err) < 0) {
    fprintf(stderr, "gitlab-review: %s\n", err.msg);
    return 1;
  }
  const char *repo = argv[2], *op = argv[3];
  int rc = -1;
  json_t *out = NULL, *res = json_object();
  if (!strcmp(op, "pr")) {
    rc = ops->pr_for_review(c, tok, repo, argv[4], &out, &err);
  } else if (!strcmp(op, "files") && argc == 6) {
    rc = ops->pr_files(c, tok, repo, atoll(argv[4]), strtoul(argv[5], NULL, 10), &out, &err);
  } else if (!strcmp(op, "tree")) {
    bool truncated = false;
    rc = ops->tree(c, tok, repo, argv[4], &out, &truncated, &err);
    json_object_set_new(res, "truncated", json_boolean(truncated));
  } else if (!strcmp(op, "blob") && argc == 6) {
    char *b = NULL;
    size_t len = 0;
    rc = ops->blob(c, tok, repo, argv[4], strtoul(argv[5], NULL, 10), &b, &len, &err);
    if (b) {
      char *hex = calloc(1, 2 * len + 1);
      for (size_t i = 0; hex && i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)b[i]);
      out = json_string(hex ? hex : "");
      free(hex);
      free(b);
    }
    json_object_set_new(res, "len", json_integer((json_int_t)len));
  } else if (!strcmp(op, "commits") && argc == 6) {
    rc = ops->pr_commits(c, tok, repo, atoll(argv[4]), strtoul(argv[5], NULL, 10), &out, &err);
  } else if (!strcmp(op, "texts") && argc == 7) {
    int kind = !strcmp(argv[5], "comments")  ? AL_FORGE_PR_COMMENTS
               : !strcmp(argv[5], "reviews") ? AL_FORGE_PR_REVIEWS
                                             : AL_FORGE_PR_REVIEW_COMMENTS;
    rc = ops->pr_texts(c, tok, repo, atoll(argv[4]), kind, strtoul(argv[6], NULL, 10), &out, &err);
  } else if (!strcmp(op, "comment") && argc == 6) {
    rc = ops->pr_comment(c, tok, repo, atoll(argv[4]), argv[5], &out, &err);
  } else {
    fprintf(stderr, "gitlab-review: unknown op or arguments: %s\n", op);
    al_ghapi_free(c);
    return 2;
  }
  json_object_set_new(res, "rc", json_integer(rc));
  json_object_set_new(res, "errno", json_string(rc < 0 ? errname(err.code) : ""));
  json_object_set_new(res, "err", json_string(rc < 0 ? err.msg : ""));
  json_object_set_new(res, "out", out ? out : json_null());
  char *s = json_dumps(res, JSON_COMPACT);
  printf("%s\n", s ? s : "{}");
  free(s);
  json_decref(res);
  al_ghapi_free(c);
  return 0;
}
