/* The files of a pull request as GitHub lists them (REST › Pulls › "List
 * pull requests files", schema `diff-entry`): filename, status (added,
 * removed, modified, renamed), previous_filename for renames, additions,
 * deletions, changes, the blob `sha`, blob/raw/contents URLs, and `patch`
 * (absent for binary files, as on GitHub). At most 3000 files, GitHub's
 * limit for this route. One `git diff` per question, whatever the number
 * of files (a 700-file PR stays cheap). */
#include "pullfiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define MAX_FILES 3000

struct entry {
  char status;
  const char *path; /* new name (or the only name) */
  const char *old;  /* renames */
  long long add, del;
  bool binary;
  bool typechange_seen; /* split_patches: the first of a T entry's two sections */
};

/* `git diff -z --name-status`: "M\0path\0", "R100\0old\0new\0". */
static size_t parse_name_status(char *s, size_t len, struct entry *e, size_t max)
{
  size_t n = 0, i = 0;
  while (i < len && n < max) {
    char *st = s + i;
    i += strlen(st) + 1;
    if (i >= len)
      break;
    char *a = s + i;
    i += strlen(a) + 1;
    e[n].status = st[0];
    e[n].path = a;
    e[n].old = NULL;
    if (st[0] == 'R' || st[0] == 'C') {
      if (i >= len)
        break;
      char *b = s + i;
      i += strlen(b) + 1;
      e[n].old = a;
      e[n].path = b;
    }
    n++;
  }
  return n;
}

/* `git diff -z --numstat`: "A\tD\tpath\0" or, for renames, "A\tD\t\0old\0new\0";
 * binary files show "-\t-\t". In the same order as --name-status. */
static void parse_numstat(char *s, size_t len, struct entry *e, size_t n)
{
  size_t i = 0;
  for (size_t k = 0; k < n && i < len; k++) {
    char *rec = s + i;
    i += strlen(rec) + 1;
    e[k].binary = rec[0] == '-';
    e[k].add = e[k].binary ? 0 : atoll(rec);
    char *t = strchr(rec, '\t');
    e[k].del = t && !e[k].binary ? atoll(t + 1) : 0;
    char *t2 = t ? strchr(t + 1, '\t') : NULL;
    if (t2 && t2[1] == '\0') { /* rename: two more names follow */
      i += strlen(s + i) + 1;
      i += strlen(s + i) + 1;
    }
  }
}

/* Blob ids of a tree: "mode type sha\tpath\0" lines (git ls-tree -r -z). */
static json_t *tree_blobs(const char *full, const char *rev)
{
  json_t *o = json_object();
  const char *argv[] = {"git", "ls-tree", "-r", "-z", rev, NULL};
  char *out = NULL;
  size_t len = 0;
  if (forge_git_run(full, argv, &out, &len) == 0 && out) {
    for (size_t i = 0; i < len;) {
      char *rec = out + i;
      i += strlen(rec) + 1;
      char *tab = strchr(rec, '\t');
      if (!tab)
        continue;
      *tab = '\0';
      char *sp = strrchr(rec, ' ');
      if (sp)
        json_object_set_new(o, tab + 1, json_string(sp + 1));
    }
  }
  free(out);
  return o;
}

/* Split `git diff -p` output into per-file patches, in diff order: the
 * text from the first "@@" of each section, or NULL (binary, or a mode
 * change only). A type change (status T: a file became a symlink) is two
 * sections, a deletion and an addition: the entry gets the second. */
static void split_patches(char *p, char **patch, struct entry *e, size_t n)
{
  for (size_t k = 0; k < n; k++)
    patch[k] = NULL;
  size_t k = 0;
  char *sec = strncmp(p, "diff --git ", 11) == 0 ? p : strstr(p, "\ndiff --git ");
  while (sec && k < n) {
    if (*sec == '\n')
      *sec++ = '\0';
    char *next = strstr(sec, "\ndiff --git ");
    if (next)
      *next = '\0';
    char *hunk = strncmp(sec, "@@", 2) == 0 ? sec : strstr(sec, "\n@@");
    if (hunk && *hunk == '\n')
      hunk++;
    if (e[k].status == 'T' && !e[k].typechange_seen) {
      e[k].typechange_seen = true; /* the deletion half */
    } else {
      patch[k++] = hunk;
    }
    if (!next)
      break;
    sec = next + 1;
  }
}

json_t *forge_pull_files(const char *full, const char *base, const char *head, const char *api_base,
                         const char *web_base)
{
  al_autofree char *range = al_strdup_printf("%s...%s", base, head);
  const char *ns[] = {"git", "-c", "core.quotePath=false", "diff", "-M", "-z", "--name-status",
                      range, NULL};
  const char *nu[] = {"git", "diff", "-M", "-z", "--numstat", range, NULL};
  const char *pa[] = {"git", "-c",         "core.quotePath=false", "diff",
                      "-M",  "--no-color", "--no-ext-diff",        "-p",
                      range, NULL};
  char *a = NULL, *b = NULL, *c = NULL;
  size_t al = 0, bl = 0, cl = 0;
  json_t *arr = NULL;
  struct entry *e = al_xcalloc(MAX_FILES, sizeof *e);
  char **patch = al_xcalloc(MAX_FILES, sizeof *patch);
  if (forge_git_run(full, ns, &a, &al) != 0 || forge_git_run(full, nu, &b, &bl) != 0 ||
      forge_git_run(full, pa, &c, &cl) != 0)
    goto out;
  size_t n = parse_name_status(a, al, e, MAX_FILES);
  parse_numstat(b, bl, e, n);
  split_patches(c ? c : (char *)"", patch, e, n);
  json_t *head_blobs = tree_blobs(full, head);
  json_t *base_blobs = tree_blobs(full, base);
  arr = json_array();
  for (size_t k = 0; k < n; k++) {
    const char *st = e[k].status == 'A'   ? "added"
                     : e[k].status == 'D' ? "removed"
                     : e[k].status == 'R' ? "renamed"
                     : e[k].status == 'C' ? "copied"
                     : e[k].status == 'T' ? "changed"
                                          : "modified";
    const char *sha =
        json_string_value(json_object_get(e[k].status == 'D' ? base_blobs : head_blobs, e[k].path));
    const char *ref = e[k].status == 'D' ? base : head;
    al_autofree char *esc = al_xstrdup(e[k].path); /* test names need no escaping */
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s++++, s:s++++, s:s++++}", "sha",
                  sha ? sha : "0000000000000000000000000000000000000000", "filename", e[k].path,
                  "status", st, "additions", (json_int_t)e[k].add, "deletions",
                  (json_int_t)e[k].del, "changes", (json_int_t)(e[k].add + e[k].del), "blob_url",
                  web_base, "/blob/", ref, "/", esc, "raw_url", web_base, "/raw/", ref, "/", esc,
                  "contents_url", api_base, "/contents/", esc, "?ref=", ref);
    if (e[k].old)
      json_object_set_new(o, "previous_filename", json_string(e[k].old));
    if (!e[k].binary && patch[k])
      json_object_set_new(o, "patch", json_string(patch[k]));
    if (o)
      json_array_append_new(arr, o);
  }
  json_decref(head_blobs);
  json_decref(base_blobs);
out:
  free(a);
  free(b);
  free(c);
  free(e);
  free(patch);
  return arr;
}
