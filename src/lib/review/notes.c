/* The review notes rendered: see review/notes.h. The record's review
 * section (ticket_review.c) is the one source; the Markdown and the
 * terminal lines are two views of it. */
#include "review/notes.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/redact.h"
#include "common/term.h"
#include "common/util.h"
#include "review/catalogue.h"

#define NOTES_MAX 60000

char *al_review_escape(const char *s, size_t max)
{
  if (!s)
    s = "";
  size_t n = strlen(s), bs = 0;
  for (size_t i = 0; i < n; i++)
    bs += s[i] == '\\';
  /* a real backslash doubled first, so `\x1b` in a name never reads as
   * an escaped ESC */
  char *dbl = al_xmalloc(n + bs + 1);
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    dbl[o++] = s[i];
    if (s[i] == '\\')
      dbl[o++] = '\\';
  }
  dbl[o] = '\0';
  char *out = al_term_escape_line(dbl);
  free(dbl);
  size_t ol = strlen(out);
  if (max && ol > max) {
    size_t cut = max;
    while (cut > 0 && ((unsigned char)out[cut] & 0xc0) == 0x80) /* not mid-UTF-8 */
      cut--;
    memcpy(out + cut, "...", 4);
  }
  return out;
}

const char *al_review_name_issue(const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  bool ctl = false, bidi = false, invis = false, bad = false;
  for (size_t i = 0; i < n;) {
    size_t l;
    long cp = al_utf8_decode(p + i, n - i, &l);
    if (cp < 0 || cp == 0xfffd)
      bad = true;
    else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
      ctl = true;
    else if (cp == 0x61c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
             (cp >= 0x2066 && cp <= 0x2069))
      bidi = true;
    else if (cp == 0xad || (cp >= 0x200b && cp <= 0x200d) || (cp >= 0x2060 && cp <= 0x2064) ||
             cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe007f))
      invis = true;
    i += l;
  }
  if (ctl)
    return "its name holds control characters (shown escaped)";
  if (bidi)
    return "its name holds bidirectional controls: it may display as another name (shown "
           "escaped)";
  if (invis)
    return "its name holds invisible characters: it may look like another name (shown escaped)";
  if (bad)
    return "its name holds bytes that are not UTF-8 (the forge shows U+FFFD)";
  for (const char *c = s; *c;) { /* a component with leading or trailing spaces */
    const char *e = strchr(c, '/');
    size_t cl = e ? (size_t)(e - c) : strlen(c);
    if (cl && (c[0] == ' ' || c[cl - 1] == ' '))
      return "its name has leading or trailing spaces";
    c += cl + (e ? 1 : 0);
  }
  return NULL;
}

char *al_review_md_code(const char *s)
{
  size_t longest = 0, run = 0, n = strlen(s);
  for (size_t i = 0; i < n; i++) {
    run = s[i] == '`' ? run + 1 : 0;
    if (run > longest)
      longest = run;
  }
  size_t f = longest + 1;
  bool pad = n == 0 || s[0] == '`' || s[n - 1] == '`' || s[0] == ' ' || s[n - 1] == ' ';
  char *out = al_xmalloc(2 * f + n + 3);
  size_t o = 0;
  memset(out + o, '`', f);
  o += f;
  if (pad)
    out[o++] = ' ';
  memcpy(out + o, s, n);
  o += n;
  if (pad)
    out[o++] = ' ';
  memset(out + o, '`', f);
  o += f;
  out[o] = '\0';
  return out;
}

static bool url_char(unsigned char c)
{
  return c > 0x20 && c != 0x7f && !strchr("<>\"'`)]}|\\", c);
}

/* Whether the URL at off in text is fetched when the page is shown: the
 * target of a Markdown image `![..](`, or an attribute of an HTML media
 * tag. */
static bool is_image(const char *text, size_t off)
{
  if (off >= 2 && text[off - 1] == '(' && text[off - 2] == ']') {
    /* find the matching `![` on the same line */
    for (size_t j = off - 2; j > 0 && text[j] != '\n'; j--)
      if (text[j - 1] == '!' && text[j] == '[')
        return true;
  }
  size_t from = off > 400 ? off - 400 : 0;
  for (size_t j = off; j > from; j--) {
    if (text[j - 1] == '>')
      return false;
    if (text[j - 1] == '<') {
      static const char *const tags[] = {"img", "video", "audio",  "source", "picture", "image",
                                         "svg", "input", "object", "embed",  "iframe"};
      for (size_t t = 0; t < AL_ARRAY_SIZE(tags); t++) {
        size_t tl = strlen(tags[t]);
        if (strncasecmp(text + j, tags[t], tl) == 0)
          return true;
      }
      return false;
    }
  }
  return false;
}

size_t al_review_find_links(const char *text, const char *where, json_t *links)
{
  if (!text)
    return 0;
  size_t added = 0, n = strlen(text);
  for (size_t i = 0; i < n && added < 200; i++) {
    size_t start = i;
    bool proto_rel = text[i] == '/' && text[i + 1] == '/' && i > 0 &&
                     strchr("(\"'=", text[i - 1]) != NULL; /* `src="//evil.example/x"` */
    if (!(strncasecmp(text + i, "https://", 8) == 0 || strncasecmp(text + i, "http://", 7) == 0 ||
          strncasecmp(text + i, "ftp://", 6) == 0 || strncasecmp(text + i, "data:image", 10) == 0 ||
          proto_rel))
      continue;
    size_t e = i;
    while (e < n && url_char((unsigned char)text[e]))
      e++;
    if (e - start < 8)
      continue;
    al_autofree char *raw = al_xmalloc(e - start + 1);
    memcpy(raw, text + start, e - start);
    raw[e - start] = '\0';
    al_autofree char *url = al_review_escape(raw, 300);
    json_array_append_new(links, json_pack("{s:s, s:s, s:b}", "where", where, "url", url, "image",
                                           is_image(text, start)));
    added++;
    i = e;
  }
  return added;
}

/* ---- Markdown ---- */

struct md {
  char *s;
  size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void put(struct md *m, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *t = NULL;
  if (vasprintf(&t, fmt, ap) < 0)
    abort();
  va_end(ap);
  size_t l = strlen(t);
  if (m->len + l + 1 > m->cap) {
    m->cap = (m->len + l + 1) * 2;
    m->s = al_xrealloc(m->s, m->cap);
  }
  memcpy(m->s + m->len, t, l + 1);
  m->len += l;
  free(t);
}

/* An untrusted string as a code span (escaped first). */
static char *code(const char *s)
{
  al_autofree char *e = al_review_escape(s ? s : "", 300);
  return al_review_md_code(e);
}

static const char *str(json_t *o, const char *k)
{
  const char *v = json_string_value(json_object_get(o, k));
  return v ? v : "";
}

/* "the diff of `x`", "the pull request body", ... for a secret or link. */
static char *where_md(json_t *item)
{
  const char *w = str(item, "where");
  const char *f = json_string_value(json_object_get(item, "file"));
  if (!f)
    return al_xstrdup(w);
  al_autofree char *c = code(f);
  return al_strdup_printf("%s %s", w, c);
}

static void section_files(struct md *m, json_t *outside, size_t cap)
{
  size_t nf;
  const al_review_family *fam = al_review_families(&nf);
  put(m, "\n### Runs outside the sandbox later (%zu)\n", json_array_size(outside));
  if (!json_array_size(outside))
    put(m, "\nNo changed file is in the catalogue (docs/review.md).\n");
  for (size_t f = 0; f < nf; f++) {
    size_t shown = 0, total = 0, i;
    json_t *v;
    json_array_foreach(outside, i, v) total += strcmp(str(v, "family"), fam[f].id) == 0;
    if (!total)
      continue;
    put(m, "\n**%s** (%zu)\n\n", fam[f].title, total);
    json_array_foreach(outside, i, v)
    {
      if (strcmp(str(v, "family"), fam[f].id) != 0)
        continue;
      if (shown++ == cap) {
        put(m, "- ... and %zu more (see the run record)\n", total - cap);
        break;
      }
      al_autofree char *c = code(str(v, "file"));
      const char *how = str(v, "match");
      put(m, "- %s: %s%s\n", c, str(v, "why"),
          !strcmp(how, "content")         ? " (from its content)"
          : !strcmp(how, "previous name") ? " (its name before the rename)"
                                          : "");
    }
  }
}

static void section_kinds(struct md *m, json_t *kinds, size_t cap)
{
  put(m, "\n### File kinds and modes (%zu)\n\n", json_array_size(kinds));
  if (!json_array_size(kinds))
    put(m, "No symlink, gitlink, executable, binary, renamed or oddly named file.\n");
  size_t i;
  json_t *v;
  json_array_foreach(kinds, i, v)
  {
    if (i == cap) {
      put(m, "- ... and %zu more (see the run record)\n", json_array_size(kinds) - cap);
      break;
    }
    al_autofree char *c = code(str(v, "file"));
    const char *target = json_string_value(json_object_get(v, "target"));
    const char *detail = json_string_value(json_object_get(v, "detail"));
    put(m, "- %s: **%s**", c, str(v, "kind"));
    if (detail)
      put(m, ": %s", detail); /* ours: never agent text */
    if (target) {
      al_autofree char *t = code(target);
      put(m, " %s", t);
    }
    put(m, "\n");
  }
}

static void section_secrets(struct md *m, json_t *secrets, size_t cap)
{
  put(m, "\n### Secrets (%zu)\n\n", json_array_size(secrets));
  if (!json_array_size(secrets))
    put(m, "No token or credential found in what was read (the places are listed below).\n");
  size_t i;
  json_t *v;
  json_array_foreach(secrets, i, v)
  {
    if (i == cap) {
      put(m, "- ... and %zu more (see the run record)\n", json_array_size(secrets) - cap);
      break;
    }
    al_autofree char *w = where_md(v);
    const char *tok = json_string_value(json_object_get(v, "token"));
    put(m, "- **%s** in %s (%s), fingerprint `%s`%s%s%s\n", str(v, "kind"), w, str(v, "encoding"),
        str(v, "fingerprint"), tok ? ": **this run's " : "", tok ? tok : "",
        tok ? ", revoked after the run**" : "");
  }
}

static void section_links(struct md *m, json_t *links, size_t cap)
{
  if (!json_array_size(links))
    return;
  put(m,
      "\n### Links and images (%zu)\n\nImages load when the page is viewed and links when "
      "clicked: both can carry data out.\n\n",
      json_array_size(links));
  size_t i;
  json_t *v;
  json_array_foreach(links, i, v)
  {
    if (i == cap) {
      put(m, "- ... and %zu more (see the run record)\n", json_array_size(links) - cap);
      break;
    }
    al_autofree char *w = where_md(v);
    al_autofree char *u = al_review_md_code(str(v, "url")); /* escaped already */
    put(m, "- %s in %s: %s\n", json_is_true(json_object_get(v, "image")) ? "**image**" : "link", w,
        u);
  }
}

/* Commit messages with closing keywords: GitHub closes the issues they
 * name when the PR is merged into the default branch, and no rewriting
 * reaches a commit (issue #26). */
static void section_keywords(struct md *m, json_t *kw, size_t cap)
{
  if (!json_array_size(kw))
    return;
  put(m,
      "\n### Closing keywords in commit messages (%zu)\n\nMerging this pull request into the "
      "default branch closes the issues these commits name (GitHub reads `Fixes #N` and the like "
      "in commit messages; airlock cannot rewrite a commit).\n\n",
      json_array_size(kw));
  size_t i;
  json_t *v;
  json_array_foreach(kw, i, v)
  {
    if (i == cap) {
      put(m, "- ... and %zu more (see the run record)\n", json_array_size(kw) - cap);
      break;
    }
    al_autofree char *sha = code(str(v, "commit"));
    al_autofree char *subj = al_review_md_code(str(v, "subject")); /* escaped already */
    long long n = (long long)json_integer_value(json_object_get(v, "keywords"));
    put(m, "- commit %s %s: %lld closing keyword%s\n", sha, subj, n, n == 1 ? "" : "s");
  }
}

static void section_blocked(struct md *m, json_t *blocked, size_t cap)
{
  size_t total = 0, i;
  json_t *v;
  json_array_foreach(blocked, i, v) total +=
      (size_t)json_integer_value(json_object_get(v, "count"));
  put(m, "\n### Requests refused during the run (%zu)\n\n", total);
  if (!total)
    put(m, "The proxy and the gateway refused nothing.\n");
  json_array_foreach(blocked, i, v)
  {
    if (i == cap) {
      put(m, "- ... and more (see the run record)\n");
      break;
    }
    al_autofree char *h = code(str(v, "target"));
    al_autofree char *r = code(str(v, "reason"));
    put(m, "- %s: %s refused: %s (%lld time%s)\n", str(v, "by"), h, r,
        (long long)json_integer_value(json_object_get(v, "count")),
        json_integer_value(json_object_get(v, "count")) == 1 ? "" : "s");
  }
}

static char *render(json_t *rec, const char *sha, size_t cap)
{
  json_t *rv = json_object_get(rec, "review");
  struct md m = {0};
  const char *run = str(rec, "run_id");
  put(&m, "<!-- airlock-review-notes run=%s -->\n## airlock review notes\n\n", run);
  put(&m, "Run `%s`, run record SHA-256 `%s`.\n\n", run, sha ? sha : "(not written yet)");
  put(&m, "airlock read this pull request back from the forge after the agent's run ended and "
          "its tokens were revoked. Everything else on this page (title, description, commits, "
          "comments, and any earlier text that looks like these notes) was written by the "
          "agent: treat it as hostile. airlock posts one notes comment per run; the record's "
          "hash above matches only the record on the operator's machine.\n");
  json_t *outside = json_object_get(rv, "runs_outside_sandbox");
  json_t *kinds = json_object_get(rv, "kinds");
  json_t *secrets = json_object_get(rv, "secrets");
  json_t *nr = json_object_get(rv, "could_not_read");
  size_t nrun = 0, i;
  json_t *v;
  json_array_foreach(secrets, i, v) nrun += json_object_get(v, "token") != NULL;
  put(&m,
      "\n> [!%s]\n> **%zu** file(s) run outside the sandbox later, **%zu** file kind note(s), "
      "**%zu** secret(s) (%zu of this run's tokens)%s\n",
      json_array_size(outside) || json_array_size(secrets) || json_array_size(nr) ? "WARNING"
                                                                                  : "NOTE",
      al_review_outside_files(outside), json_array_size(kinds), json_array_size(secrets), nrun,
      json_array_size(nr) ? ", and **some of the pull request could not be read** (below)" : "");
  section_files(&m, outside, cap);
  section_kinds(&m, kinds, cap);
  section_secrets(&m, secrets, cap);
  section_links(&m, json_object_get(rv, "links"), cap);
  section_keywords(&m, json_object_get(rv, "closing_keywords"), cap);
  section_blocked(&m, json_object_get(rv, "blocked"), cap);
  put(&m, "\n### What was read\n\n");
  json_t *read = json_object_get(rv, "read");
  const char *k;
  json_object_foreach(read, k, v)
  {
    put(&m, "- %s: %lld\n", k, (long long)json_integer_value(v));
  }
  if (json_array_size(nr)) {
    put(&m, "\n### Could not read (%zu)\n\nThese notes are incomplete for:\n\n",
        json_array_size(nr));
    json_array_foreach(nr, i, v)
    {
      al_autofree char *e = al_review_escape(json_string_value(v), 400);
      al_autofree char *c = al_review_md_code(e);
      put(&m, "- %s\n", c);
    }
  }
  return m.s;
}

char *al_review_notes_markdown(json_t *rec, const char *record_sha256)
{
  static const size_t caps[] = {200, 50, 10, 2};
  char *s = NULL;
  for (size_t i = 0; i < AL_ARRAY_SIZE(caps); i++) {
    free(s);
    s = render(rec, record_sha256, caps[i]);
    if (strlen(s) <= NOTES_MAX)
      break;
  }
  if (strlen(s) > NOTES_MAX) /* still too long (huge counts of blocked hosts): cut, say so */
    memcpy(s + NOTES_MAX - 40, "\n\n(cut: see the run record)\n", 29);
  /* a token-shaped string in a name or a URL is shown as its fingerprint,
   * as in the record (redact.h) */
  char *clean = al_redact(s);
  free(s);
  return clean;
}

/* ---- terminal ---- */

static const char *g_suffix = ""; /* al_review_print_summary's, for line() */

static void line(FILE *out, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void line(FILE *out, const char *prefix, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *t = NULL;
  if (vasprintf(&t, fmt, ap) < 0)
    abort();
  va_end(ap);
  char *esc = al_term_escape_line(t); /* belt and braces: names are escaped already */
  char *clean = al_redact(esc);       /* and never a token on the terminal */
  fprintf(out, "%s%s%s\n", prefix, clean, g_suffix);
  free(clean);
  free(esc);
  free(t);
}

void al_review_print_summary(json_t *review, FILE *out, const char *prefix, const char *suffix,
                             size_t max_items)
{
  json_t *rv = review;
  g_suffix = suffix ? suffix : "";
  if (!max_items)
    max_items = 50;
  static const struct {
    const char *key, *label;
  } secs[] = {{"runs_outside_sandbox", "runs later"},
              {"kinds", "file kind"},
              {"secrets", "secret"},
              {"links", "link"},
              {"closing_keywords", "closes"},
              {"blocked", "refused"},
              {"could_not_read", "NOT READ"}};
  for (size_t s = 0; s < AL_ARRAY_SIZE(secs); s++) {
    json_t *arr = json_object_get(rv, secs[s].key);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
      if (i == max_items) {
        line(out, prefix, "%-10s ... and %zu more (see the run record)", secs[s].label,
             json_array_size(arr) - max_items);
        break;
      }
      if (json_is_string(v)) {
        al_autofree char *e = al_review_escape(json_string_value(v), 300);
        line(out, prefix, "%-10s %s", secs[s].label, e);
        continue;
      }
      al_autofree char *file = al_review_escape(str(v, "file"), 200);
      if (s == 0) {
        line(out, prefix, "%-10s %-11s %s: %s", secs[s].label, str(v, "family"), file,
             str(v, "why"));
      } else if (s == 1) {
        al_autofree char *t =
            json_object_get(v, "target") ? al_review_escape(str(v, "target"), 200) : al_xstrdup("");
        line(out, prefix, "%-10s %-11s %s%s%s%s%s", secs[s].label, str(v, "kind"), file,
             json_object_get(v, "detail") ? ": " : "", str(v, "detail"), t[0] ? " " : "", t);
      } else if (s == 2) {
        const char *tok = json_string_value(json_object_get(v, "token"));
        line(out, prefix, "%-10s %-11s in %s%s%s (%s) %s%s%s", secs[s].label, str(v, "kind"),
             str(v, "where"), file[0] ? " " : "", file, str(v, "encoding"), str(v, "fingerprint"),
             tok ? " THIS RUN'S " : "", tok ? tok : "");
      } else if (s == 3) {
        line(out, prefix, "%-10s %-11s in %s%s%s: %s", secs[s].label,
             json_is_true(json_object_get(v, "image")) ? "image" : "link", str(v, "where"),
             file[0] ? " " : "", file, str(v, "url"));
      } else if (s == 4) {
        al_autofree char *sha = al_review_escape(str(v, "commit"), 0);
        line(out, prefix, "%-10s commit %.12s %s: %lld closing keyword(s), acted on at merge",
             secs[s].label, sha, str(v, "subject"),
             (long long)json_integer_value(json_object_get(v, "keywords")));
      } else {
        al_autofree char *tg = al_review_escape(str(v, "target"), 200);
        al_autofree char *why = al_review_escape(str(v, "reason"), 200);
        line(out, prefix, "%-10s %-11s %s: %s (x%lld)", secs[s].label, str(v, "by"), tg, why,
             (long long)json_integer_value(json_object_get(v, "count")));
      }
    }
  }
}

size_t al_review_outside_files(json_t *outside)
{
  json_t *seen = json_object();
  size_t i;
  json_t *v;
  json_array_foreach(outside, i, v)
  {
    const char *f = json_string_value(json_object_get(v, "file"));
    al_autofree char *k = al_review_escape(f ? f : "", 0); /* a valid UTF-8 key */
    json_object_set_new(seen, k, json_true());
  }
  size_t n = json_object_size(seen);
  json_decref(seen);
  return n;
}
