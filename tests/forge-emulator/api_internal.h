/* What the REST route files share (api.c owns the helpers; api_review.c
 * and any later route file use them). Call with g_forge.lock held. */
#ifndef FORGE_API_INTERNAL_H
#define FORGE_API_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "forge.h"

/* One request being answered: the path split into segments, who is
 * asking, the parsed JSON body. */
struct ctx {
  struct forge_req *rq;
  struct forge_resp *resp;
  struct forge_auth au;
  char *seg[16];
  size_t nseg;
  json_t *body; /* parsed JSON body or NULL */
};

/* 404 for a repository the token cannot see, 403 when it lacks perm at
 * level (1 read, 2 write); fills resp and returns false when refused. */
bool forge_api_authorize(struct ctx *c, json_t *repo, const char *perm, int level, const char *doc);
/* The stored pull request num, or NULL with a 404 in resp. */
json_t *forge_api_find_pull(struct ctx *c, json_t *repo, long long num, const char *doc);
/* Tip of a branch (malloc'd hex) or NULL. */
char *forge_api_branch_sha(json_t *repo, const char *branch);
/* A GitHub user object for login (new reference). */
json_t *forge_api_user(const char *login);
/* "slug[bot]" of the token's app, into buf. */
const char *forge_api_actor(struct ctx *c, char *buf, size_t n);
/* Base64 in 60-character lines, as the contents API sends (malloc'd). */
char *forge_api_b64_lines(const unsigned char *data, size_t len);
/* Parse the JSON body into c->body; 400 "Problems parsing JSON" if not. */
bool forge_api_parse_body(struct ctx *c, bool allow_empty, const char *doc);
/* ISO 8601 string of forge time t (new reference). */
json_t *forge_api_iso(long long t);

/* api_review.c: the routes a reviewer's tools read (pullfiles.c: the files) */
void forge_h_pull_commits(struct ctx *c, json_t *repo, long long num);
void forge_h_pull_review_comments(struct ctx *c, json_t *repo, long long num);
void forge_h_git_tree(struct ctx *c, json_t *repo, const char *sha);
void forge_h_git_blob(struct ctx *c, json_t *repo, const char *sha);

/* api_actions.c: Actions settings and environments (the audit's ci.* reads) */
void forge_h_actions_permissions(struct ctx *c, json_t *repo);
void forge_h_workflow_permissions(struct ctx *c, json_t *repo);
void forge_h_environments(struct ctx *c, json_t *repo);

/* The REST issue / pull request objects and the stored-record lookup
 * (api.c), for graphql.c. */
json_t *forge_api_issue_obj(json_t *repo, json_t *is, bool is_pull);
json_t *forge_api_pull_obj(json_t *repo, json_t *pr);
json_t *forge_api_find_in(json_t *arr, const char *full, const char *numkey, long long num);
/* graphql.c: POST /graphql, the queries gh sends for issue/pr/repo view */
void forge_graphql(struct ctx *c);

#endif
