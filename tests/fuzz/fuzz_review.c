/* libFuzzer target: the review's readers of what the agent wrote
 * (issue #16): the secret scanner over every view and decoding, the
 * catalogue's path folding and matching, the link finder, and the notes'
 * Markdown with the input as a file name, a symlink target and a URL —
 * which must never give a line the notes did not write (a heading, an
 * HTML comment, a table row: checked here). The first line of the input
 * is a path, the rest its contents. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/redact.h"
#include <jansson.h>

#include "review/catalogue.h"
#include "review/notes.h"
#include "review/secrets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count(const al_secret_hit *h, void *ctx)
{
  size_t *n = ctx;
  if (!h->kind || !h->encoding || strncmp(h->fp, "sha256:", 7) != 0)
    abort();
  (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static al_secret_known k = {.len = 40, .prefix = "ghs_", .name = "git token"};
  if (!k.fp[0])
    al_secret_fingerprint("ghs_0123456789012345678901234567890123456", k.fp);
  size_t n = 0;
  bool trunc;
  size_t r = al_secret_scan((const char *)data, size, &k, 1, count, &n, &trunc);
  if (r != n)
    abort();
  const uint8_t *nl = memchr(data, '\n', size);
  size_t pl = nl ? (size_t)(nl - data) : size;
  char *path = malloc(pl + 1);
  memcpy(path, data, pl);
  path[pl] = '\0';
  al_review_catalogue_match(path);
  if (nl)
    al_review_content_match(path, (const char *)nl + 1, size - pl - 1);
  char out[64];
  al_review_fold_path(path, out, sizeof out);
  /* the notes with untrusted text in every place it can appear */
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  json_t *links = json_array();
  al_review_find_links(text, "the pull request body", links);
  al_review_name_issue(text);
  json_t *name = json_string(text);
  if (!name)
    name = json_string(path);
  if (name) {
    json_t *rec = json_pack(
        "{s:s, s:{s:[{s:O, s:s, s:s, s:s}], s:[{s:O, s:s, s:O}], s:[{s:s, s:O, s:s, s:s, s:s, "
        "s:b}], s:o, s:[{s:s, s:O, s:O, s:I}], s:{s:i}, s:[O]}}",
        "run_id", "0123456789abcdef", "review", "runs_outside_sandbox", "file", name, "family",
        "ci", "why", "w", "match", "path", "kinds", "file", name, "kind", "symlink", "target", name,
        "secrets", "where", "the diff of", "file", name, "kind", "github-token", "encoding",
        "plain", "fingerprint", "sha256:000000000000", "run_token", 0, "links", links, "blocked",
        "by", "proxy", "target", name, "reason", name, "count", (json_int_t)1, "read", "files", 1,
        "could_not_read", name);
    links = NULL;
    if (rec) {
      char *md = al_review_notes_markdown(rec, NULL);
      for (const char *l = md; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t ll = e ? (size_t)(e - l) : strlen(l);
        if ((l[0] == '#' && strncmp(l, "## airlock review notes", 23) && strncmp(l, "### ", 4)) ||
            (l[0] == '|') || (strncmp(l, "<!--", 4) == 0 && l != md))
          abort(); /* a line the notes did not write */
        if (l[0] == '#' && strncmp(l, "### ", 4) == 0 && memchr(l, '`', ll))
          abort(); /* our headings hold no untrusted text */
        l += ll + (e ? 1 : 0);
      }
      free(md);
      json_decref(rec);
    }
    json_decref(name);
  }
  json_decref(links);
  free(text);
  free(path);
  return 0;
}
