/* The GitLab driver's reads of a merge request for the review notes
 * (forge/forge.h al_forge_ops.pr_for_review .. pr_comment; the table is
 * gitlab_ops.c's al_forge_gitlab, these are its entries). Same contracts,
 * shapes and errors as forge.h says; GitLab REST v4, the project by its
 * URL-encoded full path, the merge request's iid as the number. Each
 * function names the docs.gitlab.com page it follows (gitlab_review.c). */
#ifndef AL_FORGE_GITLAB_REVIEW_H
#define AL_FORGE_GITLAB_REVIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "forge/ghapi.h"

int al_gl_pr_for_review(al_ghapi *c, const char *tok, const char *repo, const char *branch,
                        json_t **pr, al_error *err);
int al_gl_pr_files(al_ghapi *c, const char *tok, const char *repo, long long number, size_t max,
                   json_t **files, al_error *err);
int al_gl_tree(al_ghapi *c, const char *tok, const char *repo, const char *sha, json_t **tree,
               bool *truncated, al_error *err);
int al_gl_blob(al_ghapi *c, const char *tok, const char *repo, const char *sha, size_t max,
               char **out, size_t *len, al_error *err);
int al_gl_pr_commits(al_ghapi *c, const char *tok, const char *repo, long long number, size_t max,
                     json_t **commits, al_error *err);
int al_gl_pr_texts(al_ghapi *c, const char *tok, const char *repo, long long number, int kind,
                   size_t max, json_t **items, al_error *err);
int al_gl_pr_comment(al_ghapi *c, const char *tok, const char *repo, long long number,
                     const char *body, json_t **comment, al_error *err);

#endif
