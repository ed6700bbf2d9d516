/* GitHub Actions filter patterns against sets of branch names: see
 * wfglob.h. A pattern compiles to a list of atoms (a set of bytes and how
 * often it repeats); its positions are NFA states. The subject (one name,
 * or the run branches) is compiled the same way. The judge explores the
 * product of the two subset automata breadth-first, over classes of bytes
 * that no atom tells apart, so the work is bounded by the number of
 * distinct (subject states, pattern states) pairs, capped at MAX_NODES. */
#include "forge/wfglob.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define WORDS 8                /* bitsets of 512 positions */
#define MAX_SLOTS (WORDS * 64) /* positions in all patterns together, and in the subject */
#define MAX_NODES 4096         /* product states explored before giving up */

enum { Q_ONE, Q_OPT, Q_MANY };

struct atom {
  uint64_t set[4]; /* the bytes it takes */
  unsigned char q; /* Q_* */
  bool wild;       /* `*` or `**`: nothing may quantify it */
  bool quantified; /* already carries `?` or `+` */
};

struct nfa {
  struct atom *a; /* every atom of every part, parts back to back */
  size_t n;       /* atoms */
  size_t cap;
  /* parts (patterns): atoms [start[k], start[k] + len[k]); a part's
   * positions are start[k] + k .. start[k] + k + len[k] (one more than its
   * atoms): slot = position + part index */
  size_t start[AL_WFG_MAX_PATTERNS + 1], len[AL_WFG_MAX_PATTERNS + 1];
  bool neg[AL_WFG_MAX_PATTERNS + 1];
  size_t parts;
  size_t slots;
};

typedef struct {
  uint64_t w[WORDS];
} bits;

static void set_add(uint64_t *s, unsigned c)
{
  s[c >> 6] |= 1ull << (c & 63);
}
static bool set_has(const uint64_t *s, unsigned c)
{
  return (s[c >> 6] >> (c & 63)) & 1u;
}
static void bit_set(bits *b, size_t i)
{
  b->w[i >> 6] |= 1ull << (i & 63);
}
static bool bit_has(const bits *b, size_t i)
{
  return (b->w[i >> 6] >> (i & 63)) & 1u;
}
static bool bits_empty(const bits *b)
{
  for (size_t i = 0; i < WORDS; i++)
    if (b->w[i])
      return false;
  return true;
}

static struct atom *push_atom(struct nfa *m)
{
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 64;
    m->a = al_xrealloc(m->a, m->cap * sizeof *m->a);
  }
  struct atom *a = &m->a[m->n++];
  memset(a, 0, sizeof *a);
  a->q = Q_ONE;
  return a;
}

static void atom_lit(struct nfa *m, unsigned char c)
{
  set_add(push_atom(m)->set, c);
}

static void atom_range(struct atom *a, unsigned lo, unsigned hi)
{
  for (unsigned c = lo; c <= hi; c++)
    set_add(a->set, c);
}

static void atom_any(struct nfa *m, bool slash)
{
  struct atom *a = push_atom(m);
  atom_range(a, 1, 255);
  if (!slash)
    a->set[0] &= ~(1ull << '/');
  a->q = Q_MANY;
  a->wild = true;
}

static bool same_class(unsigned char a, unsigned char b)
{
  return (isdigit(a) && isdigit(b)) || (islower(a) && islower(b)) || (isupper(a) && isupper(b));
}

/* `[...]` at p (p[0] == '['): the atom, *end after `]`. */
static int parse_class(struct nfa *m, const char *p, const char **end, char *why, size_t whyn)
{
  struct atom *a = push_atom(m);
  const char *q = p + 1;
  bool any = false;
  while (*q && *q != ']') {
    unsigned char lo = (unsigned char)*q;
    if (!isalnum(lo) || lo > 127) {
      snprintf(why, whyn, "`[...]` may hold only letters, digits and ranges (found `%c`)",
               isprint(lo) ? lo : '?');
      return -1;
    }
    if (q[1] == '-' && q[2] && q[2] != ']') {
      unsigned char hi = (unsigned char)q[2];
      if (!same_class(lo, hi) || hi < lo) {
        snprintf(why, whyn, "range `%c-%c` is not within a-z, A-Z or 0-9", lo,
                 isprint(hi) ? hi : '?');
        return -1;
      }
      atom_range(a, lo, hi);
      q += 3;
    } else {
      set_add(a->set, lo);
      q++;
    }
    any = true;
  }
  if (*q != ']') {
    snprintf(why, whyn, "`[` without a closing `]`");
    return -1;
  }
  if (!any) {
    snprintf(why, whyn, "empty `[]`");
    return -1;
  }
  *end = q + 1;
  return 0;
}

/* One pattern as a part of m. qmode 0: `?` quantifies the preceding
 * character (the current docs); 1: `?` is one optional character other
 * than `/` (the older wording). */
static int compile_pattern(struct nfa *m, const char *pat, int qmode, char *why, size_t whyn)
{
  size_t k = m->parts;
  m->start[k] = m->n;
  m->neg[k] = pat[0] == '!';
  const char *p = pat + (m->neg[k] ? 1 : 0);
  while (*p) {
    unsigned char c = (unsigned char)*p;
    struct atom *prev = m->n > m->start[k] ? &m->a[m->n - 1] : NULL;
    if (c == '*') {
      bool two = p[1] == '*';
      atom_any(m, two);
      p += two ? 2 : 1;
    } else if (c == '?' && qmode == 1) {
      struct atom *a = push_atom(m);
      atom_range(a, 1, 255);
      a->set[0] &= ~(1ull << '/');
      a->q = Q_OPT;
      a->quantified = true;
      p++;
    } else if (c == '?' || c == '+') {
      if (!prev || prev->wild || prev->quantified) {
        snprintf(why, whyn, "`%c` with nothing to repeat (it follows %s)", c,
                 !prev        ? "the start of the pattern"
                 : prev->wild ? "`*`"
                              : "`?` or `+`");
        return -1;
      }
      if (c == '?') {
        prev->q = Q_OPT;
        prev->quantified = true;
      } else {
        struct atom copy = *prev;
        struct atom *a = push_atom(m);
        *a = copy;
        a->q = Q_MANY;
        a->quantified = true;
      }
      p++;
    } else if (c == '[') {
      if (parse_class(m, p, &p, why, whyn) < 0)
        return -1;
    } else if (c == '\\') {
      if (!p[1]) {
        snprintf(why, whyn, "`\\` at the end of the pattern");
        return -1;
      }
      atom_lit(m, (unsigned char)p[1]);
      p += 2;
    } else {
      atom_lit(m, c);
      p++;
    }
  }
  m->len[k] = m->n - m->start[k];
  m->parts++;
  m->slots += m->len[k] + 1;
  if (m->slots > MAX_SLOTS) {
    snprintf(why, whyn, "the patterns are too long together (more than %d positions)", MAX_SLOTS);
    return -1;
  }
  return 0;
}

/* The subject as a one-part automaton. */
static int compile_subject(struct nfa *m, const al_wfg_subject *s, char *why, size_t whyn)
{
  m->start[0] = 0;
  const char *lit = s->name ? s->name : s->run_prefix;
  if (!lit || strlen(lit) > 300) {
    snprintf(why, whyn, "no subject name");
    return -1;
  }
  for (const char *p = lit; *p; p++)
    atom_lit(m, (unsigned char)*p);
  if (!s->name) {
    atom_range(push_atom(m), '0', '9');
    struct atom *more = push_atom(m);
    atom_range(more, '0', '9');
    more->q = Q_MANY;
    atom_lit(m, '-');
    for (int i = 0; i < 8; i++) {
      struct atom *h = push_atom(m);
      atom_range(h, '0', '9');
      atom_range(h, 'a', 'f');
    }
  }
  m->len[0] = m->n;
  m->parts = 1;
  m->slots = m->n + 1;
  return 0;
}

/* The positions reachable from b without reading (an optional or repeated
 * atom may be skipped). Positions within a part increase, so one pass in
 * order is enough. */
static void closure(const struct nfa *m, bits *b)
{
  for (size_t k = 0; k < m->parts; k++) {
    size_t base = m->start[k] + k;
    for (size_t i = 0; i < m->len[k]; i++)
      if (bit_has(b, base + i) && m->a[m->start[k] + i].q != Q_ONE)
        bit_set(b, base + i + 1);
  }
}

static void step(const struct nfa *m, const bits *from, unsigned char c, bits *to)
{
  memset(to, 0, sizeof *to);
  for (size_t k = 0; k < m->parts; k++) {
    size_t base = m->start[k] + k;
    for (size_t i = 0; i < m->len[k]; i++) {
      if (!bit_has(from, base + i))
        continue;
      const struct atom *a = &m->a[m->start[k] + i];
      if (!set_has(a->set, c))
        continue;
      bit_set(to, a->q == Q_MANY ? base + i : base + i + 1);
    }
  }
  closure(m, to);
}

static void start_state(const struct nfa *m, bits *b)
{
  memset(b, 0, sizeof *b);
  for (size_t k = 0; k < m->parts; k++)
    bit_set(b, m->start[k] + k);
  closure(m, b);
}

static bool accepts(const struct nfa *m, const bits *b, size_t k)
{
  return bit_has(b, m->start[k] + k + m->len[k]);
}

/* Selected: the last pattern that matches is positive. */
static bool selected(const struct nfa *pm, const bits *p)
{
  bool sel = false;
  for (size_t k = 0; k < pm->parts; k++)
    if (accepts(pm, p, k))
      sel = !pm->neg[k];
  return sel;
}

struct node {
  bits s, p;
  int parent;
  unsigned char c;
};

struct search {
  struct node *nodes;
  size_t n;
  int *table; /* open addressing, 2 * MAX_NODES slots, -1 empty */
};

static uint64_t node_hash(const bits *s, const bits *p)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < WORDS; i++) {
    h = (h ^ s->w[i]) * 1099511628211ull;
    h = (h ^ p->w[i]) * 1099511628211ull;
  }
  return h;
}

/* Add (s, p) unless seen; -1 when the bound is reached, 0 otherwise. */
static int visit(struct search *x, const bits *s, const bits *p, int parent, unsigned char c)
{
  size_t tn = 2 * MAX_NODES;
  size_t h = (size_t)(node_hash(s, p) % tn);
  while (x->table[h] >= 0) {
    const struct node *o = &x->nodes[x->table[h]];
    if (!memcmp(&o->s, s, sizeof *s) && !memcmp(&o->p, p, sizeof *p))
      return 0;
    h = (h + 1) % tn;
  }
  if (x->n >= MAX_NODES)
    return -1;
  struct node *nd = &x->nodes[x->n];
  nd->s = *s;
  nd->p = *p;
  nd->parent = parent;
  nd->c = c;
  x->table[h] = (int)x->n++;
  return 0;
}

static void example(const struct search *x, int i, char *out, size_t n)
{
  char rev[512];
  size_t len = 0;
  while (i > 0 && len < sizeof rev) {
    rev[len++] = (char)x->nodes[i].c;
    i = x->nodes[i].parent;
  }
  size_t o = 0;
  while (len > 0 && o + 1 < n)
    out[o++] = rev[--len];
  out[o] = '\0';
}

/* Byte classes no atom of either automaton tells apart: reps[] gets one
 * byte per class. */
static size_t byte_classes(const struct nfa *a, const struct nfa *b, unsigned char *reps)
{
  int cls[256];
  for (int c = 0; c < 256; c++)
    cls[c] = c == 0 ? -1 : 0;
  int ncls = 1;
  const struct nfa *ms[2] = {a, b};
  for (int w = 0; w < 2; w++) {
    for (size_t i = 0; i < ms[w]->n; i++) {
      int map[2 * 256];
      for (int j = 0; j < 2 * 256; j++)
        map[j] = -1;
      int next = 0;
      for (int c = 1; c < 256; c++) {
        int key = cls[c] * 2 + (set_has(ms[w]->a[i].set, (unsigned)c) ? 1 : 0);
        if (map[key] < 0)
          map[key] = next++;
        cls[c] = map[key];
      }
      ncls = next;
    }
  }
  size_t n = 0;
  for (int k = 0; k < ncls; k++)
    for (int c = 1; c < 256; c++)
      if (cls[c] == k) {
        reps[n++] = (unsigned char)c;
        break;
      }
  return n;
}

static int judge_once(const char *const *pats, size_t n, const al_wfg_subject *subj, int qmode,
                      al_wfg_result *res, char *why, size_t whyn)
{
  struct nfa pm = {0}, sm = {0};
  struct search x = {0};
  int ret = -1;
  memset(res, 0, sizeof *res);
  for (size_t k = 0; k < n; k++) {
    char w[160];
    if (compile_pattern(&pm, pats[k], qmode, w, sizeof w) < 0) {
      snprintf(why, whyn, "pattern `%.80s`: %s", pats[k], w);
      goto out;
    }
  }
  if (compile_subject(&sm, subj, why, whyn) < 0)
    goto out;
  unsigned char reps[256];
  size_t nreps = byte_classes(&sm, &pm, reps);
  x.nodes = al_xcalloc(MAX_NODES, sizeof *x.nodes);
  x.table = al_xmalloc(2 * MAX_NODES * sizeof *x.table);
  for (size_t i = 0; i < 2 * MAX_NODES; i++)
    x.table[i] = -1;
  bits s0, p0;
  start_state(&sm, &s0);
  start_state(&pm, &p0);
  visit(&x, &s0, &p0, -1, 0);
  for (size_t i = 0; i < x.n; i++) {
    struct node cur = x.nodes[i];
    if (accepts(&sm, &cur.s, 0)) {
      bool sel = selected(&pm, &cur.p);
      if (sel && !res->some_selected) {
        res->some_selected = true;
        example(&x, (int)i, res->selected_example, sizeof res->selected_example);
      } else if (!sel && !res->some_unselected) {
        res->some_unselected = true;
        example(&x, (int)i, res->unselected_example, sizeof res->unselected_example);
      }
      if (res->some_selected && res->some_unselected)
        break;
    }
    for (size_t r = 0; r < nreps; r++) {
      bits s1, p1;
      step(&sm, &cur.s, reps[r], &s1);
      if (bits_empty(&s1))
        continue;
      step(&pm, &cur.p, reps[r], &p1);
      if (visit(&x, &s1, &p1, (int)i, reps[r]) < 0) {
        snprintf(why, whyn, "the patterns are too complex to judge (more than %d states)",
                 MAX_NODES);
        goto out;
      }
    }
  }
  ret = 0;
out:
  free(pm.a);
  free(sm.a);
  free(x.nodes);
  free(x.table);
  return ret;
}

static bool has_question(const char *p)
{
  for (; *p; p++) {
    if (*p == '\\' && p[1]) {
      p++;
      continue;
    }
    if (*p == '?')
      return true;
  }
  return false;
}

int al_wfg_judge(const char *const *pats, size_t n, const al_wfg_subject *subject,
                 al_wfg_result *res, char *why, size_t whyn)
{
  memset(res, 0, sizeof *res);
  if (n > AL_WFG_MAX_PATTERNS) {
    snprintf(why, whyn, "more than %d patterns", AL_WFG_MAX_PATTERNS);
    return -1;
  }
  bool q = false;
  for (size_t k = 0; k < n; k++) {
    if (strlen(pats[k]) > AL_WFG_MAX_PATTERN_LEN) {
      snprintf(why, whyn, "a pattern longer than %d bytes", AL_WFG_MAX_PATTERN_LEN);
      return -1;
    }
    q = q || has_question(pats[k]);
  }
  if (judge_once(pats, n, subject, 0, res, why, whyn) < 0)
    return -1;
  if (!q)
    return 0;
  al_wfg_result other;
  char w2[200];
  if (judge_once(pats, n, subject, 1, &other, w2, sizeof w2) < 0)
    return 0; /* the older reading does not even parse: the current one stands */
  if (other.some_selected != res->some_selected || other.some_unselected != res->some_unselected) {
    snprintf(why, whyn,
             "the answer depends on how `?` is read (GitHub's docs have said both \"zero or one "
             "of the preceding character\" and \"zero or one character\"): escape it or avoid it");
    return -1;
  }
  return 0;
}
