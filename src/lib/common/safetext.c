/* Safe text: see safetext.h. Seven passes, each a whole-buffer rewrite from
 * one buffer to the next, so that each rule reads the output of the one
 * before and none can undo another: what a pass inserts (`&lt;`, `&amp;`,
 * `[:]`, `[.]`, `/[/]`, `!\[`, U+200B) holds no `<`, no `@` before a
 * letter, no `![`, no `://` no keyword and no `/` before a letter. */
#include "common/safetext.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define ZWSP "\xe2\x80\x8b" /* U+200B ZERO WIDTH SPACE */
#define FFFD "\xef\xbf\xbd" /* U+FFFD REPLACEMENT CHARACTER */
#define KEYWORD_WINDOW 300  /* non-blank ASCII bytes a reference may be after a keyword */
/* the notes where the agent's text was cut (a title's, a body's) */
#define CUT_TITLE "(cut by airlock)"
#define CUT_BODY "*airlock cut the agent's text here: %zu of its %zu bytes shown.*"

struct buf {
  char *s;
  size_t len, cap;
};

static void put(struct buf *b, const char *p, size_t n)
{
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2 + 64;
    b->s = al_xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, p, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
  put(b, s, strlen(s));
}
static void putc_(struct buf *b, char c)
{
  put(b, &c, 1);
}

/* ASCII only: the forge's rules are ASCII, and no locale may change them. */
static bool is_alpha(unsigned char c)
{
  return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}
static bool is_digit(unsigned char c)
{
  return c >= '0' && c <= '9';
}
static bool is_alnum(unsigned char c)
{
  return is_alpha(c) || is_digit(c);
}
static unsigned char lower(unsigned char c)
{
  return is_alpha(c) ? (unsigned char)(c | 0x20) : c;
}
static bool is_blank(unsigned char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- 1. bytes ---- */

static bool is_bidi(long cp)
{
  return cp == 0x61c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

static void pass_bytes(const char *in, size_t n, bool one_line, struct buf *o,
                       struct al_safetext_counts *c)
{
  const unsigned char *p = (const unsigned char *)in;
  for (size_t i = 0; i < n;) {
    size_t l;
    long cp = al_utf8_decode(p + i, n - i, &l);
    if (cp < 0 || is_bidi(cp)) {
      puts_(o, FFFD);
      c->controls++;
    } else if (cp == '\r') {
      put(o, one_line ? " " : "\n", 1);
      if (i + 1 < n && p[i + 1] == '\n')
        l = 2; /* CR LF is one line ending */
    } else if (cp == '\n' || cp == '\t') {
      put(o, one_line ? " " : in + i, 1);
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) {
      putc_(o, ' ');
      c->controls++;
    } else {
      put(o, in + i, l);
    }
    i += l;
  }
}

/* ---- 2. HTML and entities ---- */

static void pass_html(const char *s, size_t n, struct buf *o, struct al_safetext_counts *c)
{
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '<') {
      puts_(o, "&lt;");
      c->html++;
    } else if (ch == '&' && i + 1 < n && (s[i + 1] == '#' || is_alnum((unsigned char)s[i + 1]))) {
      puts_(o, "&amp;");
      c->entities++;
    } else {
      putc_(o, (char)ch);
    }
  }
}

/* ---- 3. links ---- */

/* A byte that ends a URL's authority (WHATWG URL: the path, query and
 * fragment starts, and what Markdown or prose puts around a URL). Bytes
 * of 0x80 and up stay in it: a host with them is never a forge host. */
static bool ends_authority(unsigned char ch)
{
  return ch <= 0x20 || ch == 0x7f || strchr("/?#\\<>\"'`()[]{}|", ch) != NULL;
}

static size_t authority_end(const char *s, size_t n, size_t i)
{
  while (i < n && !ends_authority((unsigned char)s[i]))
    i++;
  return i;
}

/* Whether s[a..e) is HOST or HOST:PORT with HOST one of the forge hosts. */
static bool forge_authority(const char *s, size_t a, size_t e, const char *const *hosts)
{
  size_t h = a;
  while (h < e && (is_alnum((unsigned char)s[h]) || s[h] == '.' || s[h] == '-'))
    h++;
  if (h == a)
    return false;
  if (h < e) {
    if (s[h] != ':' || h + 1 == e)
      return false;
    for (size_t q = h + 1; q < e; q++)
      if (!is_digit((unsigned char)s[q]))
        return false;
  }
  for (const char *const *f = hosts; f && *f; f++) {
    size_t fl = strlen(*f);
    if (fl != h - a)
      continue;
    size_t k = 0;
    while (k < fl && lower((unsigned char)s[a + k]) == lower((unsigned char)(*f)[k]))
      k++;
    if (k == fl)
      return true;
  }
  return false;
}

/* Whether s[i..] is http:// or https:// with a forge authority, and
 * nothing a URL parser could read another host from after it (a `\`).
 * *end: the end of the authority. */
static bool forge_url_at(const char *s, size_t n, size_t i, const char *const *hosts, size_t *end)
{
  size_t k = i;
  static const char *const schemes[] = {"https://", "http://"};
  size_t sl = 0;
  for (size_t q = 0; q < AL_ARRAY_SIZE(schemes) && !sl; q++) {
    size_t L = strlen(schemes[q]), m = 0;
    while (m < L && k + m < n && lower((unsigned char)s[k + m]) == (unsigned char)schemes[q][m])
      m++;
    if (m == L)
      sl = L;
  }
  if (!sl)
    return false;
  size_t a = k + sl, e = authority_end(s, n, a);
  if (!forge_authority(s, a, e, hosts))
    return false;
  if (e < n && s[e] == '\\')
    return false;
  *end = e;
  return true;
}

/* Copy s[a..e) with every `.` as `[.]` and `:` as `[:]` (an authority
 * the scan skips holds no scheme's colon either). */
static void put_defanged(struct buf *o, const char *s, size_t a, size_t e)
{
  for (size_t q = a; q < e; q++) {
    if (s[q] == '.')
      puts_(o, "[.]");
    else if (s[q] == ':')
      puts_(o, "[:]");
    else
      putc_(o, s[q]);
  }
}

/* Schemes defanged whatever follows their colon (a browser reads
 * `http:evil.example` as http://evil.example/ from another scheme's page;
 * mailto: opens a mail with the agent's text). */
static bool always_scheme(const char *s, size_t l)
{
  static const char *const names[] = {"http",   "https", "ftp", "ftps",
                                      "mailto", "file",  "ws",  "wss"};
  for (size_t q = 0; q < AL_ARRAY_SIZE(names); q++) {
    if (strlen(names[q]) != l)
      continue;
    size_t k = 0;
    while (k < l && lower((unsigned char)s[k]) == (unsigned char)names[q][k])
      k++;
    if (k == l)
      return true;
  }
  return false;
}

static void pass_links(const char *s, size_t n, const char *const *hosts, struct buf *o,
                       struct al_safetext_counts *c)
{
  for (size_t i = 0; i < n;) {
    unsigned char ch = (unsigned char)s[i];
    unsigned char prev = i ? (unsigned char)s[i - 1] : ' ';
    /* scheme: read back from the colon over letters, as GFM's autolink
     * does (cmark-gfm autolink.c): "1https://x" links "https://x" */
    if (ch == ':') {
      size_t sa = i;
      while (sa > 0 && i - sa < 32 && is_alpha((unsigned char)s[sa - 1]))
        sa--;
      bool slash = i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '\\');
      size_t end;
      if (sa < i && forge_url_at(s, n, sa, hosts, &end)) {
        put(o, s + i, end - i); /* the forge's own: stays */
        i = end;
        continue;
      }
      if (slash || (sa < i && always_scheme(s + sa, i - sa))) {
        puts_(o, "[:]");
        size_t q = i + 1;
        while (q < n && (s[q] == '/' || s[q] == '\\'))
          putc_(o, s[q++]);
        size_t ae = authority_end(s, n, q);
        put_defanged(o, s, q, ae);
        c->links++;
        i = ae;
        continue;
      }
    }
    /* //host or \\host after a non-word character */
    if ((ch == '/' || ch == '\\') && i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '\\') &&
        !is_alnum(prev) && prev != ':' && prev != '/' && prev != '\\') {
      size_t q = i;
      while (q < n && (s[q] == '/' || s[q] == '\\'))
        q++;
      if (q < n && !ends_authority((unsigned char)s[q])) {
        putc_(o, s[i]);
        putc_(o, '[');
        put(o, s + i + 1, q - i - 1);
        putc_(o, ']');
        size_t ae = authority_end(s, n, q);
        put_defanged(o, s, q, ae);
        c->links++;
        i = ae;
        continue;
      }
      put(o, s + i, q - i);
      i = q;
      continue;
    }
    /* www. (GFM §6.9: an extended www autolink) */
    if ((ch | 0x20) == 'w' && !is_alnum(prev) && i + 4 <= n &&
        lower((unsigned char)s[i + 1]) == 'w' && lower((unsigned char)s[i + 2]) == 'w' &&
        s[i + 3] == '.') {
      size_t ae = authority_end(s, n, i);
      if (forge_authority(s, i, ae, hosts)) {
        put(o, s + i, ae - i);
      } else {
        put_defanged(o, s, i, ae);
        c->links++;
      }
      i = ae;
      continue;
    }
    putc_(o, (char)ch);
    i++;
  }
}

/* ---- 4. images ---- */

/* Whether s[i..] ("![") is `![alt](http(s)://FORGE/path)` exactly. */
static bool forge_image(const char *s, size_t n, size_t i, const char *const *hosts)
{
  size_t q = i + 2;
  while (q < n && q - i < 260 && s[q] != ']' && s[q] != '[' && s[q] != '\n' && s[q] != '\\')
    q++;
  if (q + 1 >= n || s[q] != ']' || s[q + 1] != '(')
    return false;
  size_t end;
  if (!forge_url_at(s, n, q + 2, hosts, &end))
    return false;
  if (end >= n || s[end] != '/')
    return false;
  for (q = end; q < n && q - end < 2048; q++) {
    unsigned char ch = (unsigned char)s[q];
    if (ch == ')')
      return true;
    if (ch <= 0x20 || ch >= 0x7f || strchr("(<>\"'\\`", ch))
      return false;
  }
  return false;
}

static void pass_images(const char *s, size_t n, const char *const *hosts, struct buf *o,
                        struct al_safetext_counts *c)
{
  for (size_t i = 0; i < n; i++) {
    putc_(o, s[i]);
    if (s[i] == '!' && i + 1 < n && s[i + 1] == '[' && !forge_image(s, n, i, hosts)) {
      putc_(o, '\\');
      c->images++;
    }
  }
}

/* ---- 5. mentions ---- */

static void pass_mentions(const char *s, size_t n, struct buf *o, struct al_safetext_counts *c)
{
  for (size_t i = 0; i < n; i++) {
    putc_(o, s[i]);
    if (s[i] == '@' && i + 1 < n && is_alnum((unsigned char)s[i + 1])) {
      puts_(o, ZWSP);
      c->mentions++;
    }
  }
}

/* ---- 6. closing keywords ---- */

static bool md_markup(unsigned char ch)
{
  return ch == '*' || ch == '_' || ch == '~' || ch == '`' || ch == '\\';
}

/* The keyword at k[0..n) (the skeleton), as a word that no letter or digit
 * follows: its length, else 0. */
static size_t keyword_at(const char *k, size_t n)
{
  static const char *const kw[] = {"closes", "closed",   "close",    "fixes",  "fixed",
                                   "fix",    "resolves", "resolved", "resolve"};
  for (size_t w = 0; w < AL_ARRAY_SIZE(kw); w++) {
    size_t l = strlen(kw[w]), j = 0;
    while (j < l && j < n && lower((unsigned char)k[j]) == (unsigned char)kw[w][j])
      j++;
    if (j == l && (l == n || !is_alnum((unsigned char)k[l])))
      return l;
  }
  return 0;
}

/* Whether something at k[i..] may be a reference to an issue or a PR. */
static bool ref_at(const char *k, size_t n, size_t i)
{
  unsigned char ch = (unsigned char)k[i];
  if (ch == '#')
    return i + 1 < n && is_digit((unsigned char)k[i + 1]);
  if ((ch | 0x20) == 'g')
    return i + 3 < n && lower((unsigned char)k[i + 1]) == 'h' && k[i + 2] == '-' &&
           is_digit((unsigned char)k[i + 3]);
  if (ch == ':')
    return i + 2 < n && k[i + 1] == '/' && k[i + 2] == '/';
  if (ch == '/') {
    static const char *const paths[] = {"/issues/", "/pull/", "/pulls/"};
    for (size_t q = 0; q < AL_ARRAY_SIZE(paths); q++) {
      size_t L = strlen(paths[q]), m = 0;
      while (m < L && i + m < n && lower((unsigned char)k[i + m]) == (unsigned char)paths[q][m])
        m++;
      if (m == L)
        return true;
    }
  }
  return false;
}

/* Marks in hit[] (original positions) the first letter of every keyword
 * of s[0..n) with a reference after it; returns how many. Read on the
 * skeleton (s without Markdown's *_~`\ bytes: `Fix**es** #2` shows as
 * "Fixes #2"), in O(n): next_ref[j] is the first reference at or after j
 * of the skeleton, counted[j] the non-blank ASCII bytes before j. */
static size_t find_keywords(const char *s, size_t n, bool *hit)
{
  char *k = al_xmalloc(n + 1);
  size_t *at = al_xmalloc((n + 1) * sizeof *at);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!md_markup((unsigned char)s[i])) {
      at[m] = i;
      k[m++] = s[i];
    }
  size_t *next_ref = al_xmalloc((m + 1) * sizeof *next_ref);
  size_t *counted = al_xmalloc((m + 1) * sizeof *counted);
  next_ref[m] = m;
  for (size_t j = m; j-- > 0;)
    next_ref[j] = ref_at(k, m, j) ? j : next_ref[j + 1];
  counted[0] = 0;
  for (size_t j = 0; j < m; j++) {
    unsigned char ch = (unsigned char)k[j];
    counted[j + 1] = counted[j] + (ch < 0x80 && !is_blank(ch));
  }
  size_t hits = 0;
  for (size_t j = 0; j < m; j++) {
    /* a word start in the text as written: `x~Fixes #2` shows the `~`,
     * a boundary, though the skeleton reads "xFixes" */
    if ((at[j] > 0 && is_alnum((unsigned char)s[at[j] - 1])) || !is_alpha((unsigned char)k[j]))
      continue;
    size_t kl = keyword_at(k + j, m - j);
    if (!kl)
      continue;
    size_t r = next_ref[j + kl];
    if (r < m && counted[r] - counted[j + kl] <= KEYWORD_WINDOW) {
      hit[at[j]] = true;
      hits++;
    }
    j += kl - 1;
  }
  free(k);
  free(at);
  free(next_ref);
  free(counted);
  return hits;
}

size_t al_safetext_closing_keywords(const char *s, size_t n)
{
  bool *hit = al_xcalloc(n + 1, sizeof *hit);
  size_t h = find_keywords(s, n, hit);
  free(hit);
  return h;
}

static void pass_keywords(const char *s, size_t n, struct buf *o, struct al_safetext_counts *c)
{
  bool *hit = al_xcalloc(n + 1, sizeof *hit);
  c->keywords += find_keywords(s, n, hit);
  for (size_t i = 0; i < n; i++) {
    putc_(o, s[i]);
    if (hit[i])
      puts_(o, ZWSP); /* after the first letter: `F\u200bixes` is no keyword */
  }
  free(hit);
}

/* ---- 7. quick actions (GitLab) ---- */

/* GitLab runs a line of a description or a note that starts with `/` and a
 * command name (`/merge`, `/approve`, `/close`, `/assign @x`, ...; GitLab
 * docs "GitLab quick actions") as that command when the text is posted.
 * Context-free, as the other rules: a `/` followed by an ASCII letter with
 * only blanks and `>` before it on its line (a quote, which GitLab does not
 * read, is counted too: broader than GitLab) gets a U+200B after it, so no
 * line starts with a command, whatever the command table of the server. */
static void pass_quick_actions(const char *s, size_t n, struct buf *o, struct al_safetext_counts *c)
{
  bool line_start = true; /* only blanks and `>` since the last LF */
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    putc_(o, (char)ch);
    if (ch == '/' && line_start && i + 1 < n && is_alpha((unsigned char)s[i + 1])) {
      puts_(o, ZWSP);
      c->quick_actions++;
    }
    if (ch == '\n')
      line_start = true;
    else if (ch != ' ' && ch != '\t' && ch != '>')
      line_start = false;
  }
}

/* ---- the whole ---- */

/* The seven passes over in[0..n): malloc'd, *ol its length. */
static char *rewrite(const char *in, size_t n, const struct al_safetext_opts *opts, size_t *ol,
                     struct al_safetext_counts *c)
{
  struct buf a = {0}, b = {0};
  puts_(&a, "");
  pass_bytes(in, n, opts->one_line, &a, c);
  puts_(&b, "");
  pass_html(a.s, a.len, &b, c);
  a.len = 0;
  pass_links(b.s, b.len, opts->forge_hosts, &a, c);
  b.len = 0;
  pass_images(a.s, a.len, opts->forge_hosts, &b, c);
  a.len = 0;
  pass_mentions(b.s, b.len, &a, c);
  b.len = 0;
  pass_keywords(a.s, a.len, &b, c);
  a.len = 0;
  pass_quick_actions(b.s, b.len, &a, c);
  free(b.s);
  *ol = a.len;
  return a.s;
}

/* s quoted: "> " before every line, trailing blank lines dropped. */
static char *quote(const char *s, size_t n, size_t *ol)
{
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  struct buf o = {0};
  puts_(&o, "");
  if (n) {
    puts_(&o, "> ");
    for (size_t i = 0; i < n; i++) {
      putc_(&o, s[i]);
      if (s[i] == '\n')
        puts_(&o, "> ");
    }
  }
  *ol = o.len;
  return o.s;
}

int al_safetext_render(const char *in, size_t len, const struct al_safetext_opts *opts, char **out,
                       al_error *err)
{
  *out = NULL;
  if (!opts)
    return al_error_set(err, EINVAL, "safe text: no options");
  if (!in)
    len = 0;
  size_t cap = opts->max_len ? opts->max_len : AL_SAFETEXT_MAX;
  if (cap > AL_SAFETEXT_MAX)
    return al_error_set(err, EINVAL, "safe text: a cap of %zu bytes is over %d", cap,
                        AL_SAFETEXT_MAX);
  const char *header = opts->header ? opts->header : opts->one_line ? "" : AL_SAFETEXT_HEADER;
  const char *footer = opts->footer ? opts->footer : "";
  const char *sep = opts->one_line ? " " : "\n\n";
  /* the note where the text was cut, with room for its two numbers */
  size_t note_max = opts->one_line ? sizeof CUT_TITLE : sizeof CUT_BODY + 40;
  size_t fixed = strlen(header) + strlen(footer) + 2 * strlen(sep) + note_max;
  if (fixed > cap)
    return al_error_set(err, EINVAL,
                        "safe text: airlock's header and footer (%zu bytes) do not fit the cap "
                        "of %zu bytes",
                        fixed, cap);
  size_t budget = cap - fixed;
  struct al_safetext_counts c = {0};
  size_t n = len;
  char *body = NULL;
  size_t bl = 0;
  for (int round = 0;; round++) {
    memset(&c, 0, sizeof c);
    size_t rl;
    al_autofree char *r = rewrite(in, n, opts, &rl, &c);
    free(body);
    body = opts->one_line ? al_xstrdup(r) : quote(r, rl, &bl);
    if (opts->one_line)
      bl = rl;
    if (bl <= budget)
      break;
    /* too long: rewrite a shorter prefix of the input (never cut the
     * output: a cut forge URL could name another host) */
    size_t next = round < 8 ? (size_t)((double)n * (double)budget / (double)bl * 0.95) : 0;
    if (next >= n)
      next = n ? n - 1 : 0;
    while (next > 0 && ((unsigned char)in[next] & 0xc0) == 0x80)
      next--;
    n = next;
  }
  c.in_len = len;
  c.shown_len = n;
  c.truncated = n < len;
  struct buf o = {0};
  puts_(&o, "");
  if (*header) {
    puts_(&o, header);
    if (bl || c.truncated || *footer)
      puts_(&o, sep);
  }
  put(&o, body, bl);
  free(body);
  if (c.truncated) {
    char note[sizeof CUT_BODY + 40];
    if (opts->one_line)
      snprintf(note, sizeof note, "%s", CUT_TITLE);
    else
      snprintf(note, sizeof note, CUT_BODY, n, len);
    if (bl)
      puts_(&o, sep);
    puts_(&o, note);
  }
  if (*footer) {
    if (bl || c.truncated)
      puts_(&o, sep);
    puts_(&o, footer);
  }
  if (opts->counts)
    *opts->counts = c;
  *out = o.s;
  return 0;
}
