/* The review's secret scanner: credentials in what the agent wrote (a
 * diff, a blob, a commit message, a PR or ticket comment), whatever the
 * encoding. A parser of untrusted bytes (fuzz: tests/fuzz/fuzz_secret_scan.c).
 *
 * It looks for
 *   - the token formats of the forges airlock supports and their neighbours:
 *     GitHub `ghp_ gho_ ghu_ ghs_ ghr_` + 36 or more of [A-Za-z0-9_.-] (the
 *     JWT-shaped installation tokens included, no upper bound) and
 *     `github_pat_` + 22 or more of [A-Za-z0-9_] ("About authentication to
 *     GitHub" § GitHub's token formats); GitLab `glpat- gldt- glrt- glptt-
 *     glcbt- glft- glsoat- glimt- glagent- gloas-` and `GR1348941` runner
 *     tokens ("GitLab token overview" § Token prefixes); Bitbucket `ATBB`;
 *   - generic credentials: PEM private keys (RFC 7468 §2 labels ending in
 *     PRIVATE KEY, and PGP private key blocks), AWS access key ids (`AKIA`,
 *     `ASIA`, + 16 of [A-Z0-9]), Slack `xox?-`, Stripe `sk_live_`/`rk_live_`,
 *     Google `AIza`, npm `npm_`, PyPI `pypi-`, OpenAI/Anthropic-style `sk-`,
 *     three-part JWTs, and `password|secret|token|api_key... = VALUE` where
 *     VALUE has 16+ characters: letters, digits, 10+ distinct;
 * in these views of the text, each forward and reversed:
 *   plain; "split" (quotes, whitespace, `+`, `,` and `\` removed, which
 *   joins a token cut across string literals or diff lines); %XX-decoded;
 *   base64 (standard and URL-safe, any padding, any of 4 alignments) and
 *   hex (16+ bytes) runs decoded once.
 * For the run's own tokens (known[]), it needs no token: only each token's
 * fingerprint, length and type prefix ("ghs_"). At every occurrence of the
 * prefix in any view it fingerprints exactly that many bytes, so a token
 * glued to other characters is still recognised. */
#ifndef AL_REVIEW_SECRETS_H
#define AL_REVIEW_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

/* A secret the scan recognises by fingerprint. len 0 / prefix "": match
 * only pattern-shaped hits whose fingerprint equals fp. */
typedef struct al_secret_known {
  char fp[20];      /* "sha256:" + 12 hex (redact.h al_secret_fingerprint) */
  size_t len;       /* the token's length in bytes, 0 if unknown */
  char prefix[16];  /* its public type prefix, e.g. "ghs_" ("" if unknown) */
  const char *name; /* e.g. "git token" (borrowed, for the caller) */
} al_secret_known;

/* One finding. Never holds the secret: only its fingerprint. */
typedef struct al_secret_hit {
  const char *kind;     /* "github-token", "github-pat", "gitlab-token", "private-key", ... */
  const char *encoding; /* "plain", "split", "url", "base64", "hex", + " reversed" forms */
  char fp[20];          /* fingerprint of the secret as decoded */
  int known;            /* index into known[], or -1 */
} al_secret_hit;

/* Called once per distinct (fingerprint) finding, in the order found. */
typedef void (*al_secret_cb)(const al_secret_hit *hit, void *ctx);

/* Scan len bytes of buf (any bytes; NULs allowed). Returns the number of
 * distinct findings reported. Memory: O(len); inputs over 16 MiB are
 * scanned in their first 16 MiB only (*truncated set true, may be NULL).
 * Thread-safe, no allocation visible to the caller; decoded copies of the
 * input are wiped before they are freed. */
size_t al_secret_scan(const char *buf, size_t len, const al_secret_known *known, size_t nknown,
                      al_secret_cb cb, void *ctx, bool *truncated);

#endif
