/* yamlwalk: the table-driven walker of yamlwalk.h over libfyaml nodes. */
#include "common/yamlwalk.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#undef al_yw_fail

/* Only blanks in buf[0..len)? buf need not be NUL-terminated (the fuzz targets). */
static bool all_blank(const char *buf, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r' && buf[i] != '\n')
      return false;
  return true;
}

/* Offset of the first byte of buf[0..len) that is not well-formed UTF-8
 * (RFC 3629 §4: no overlong forms, no surrogates, nothing above U+10FFFF),
 * or len. YAML 1.2 §5.2 streams are Unicode; libfyaml 0.8 loops forever on
 * some invalid bytes after a `%` directive (found by tests/fuzz/fuzz_policy). */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    size_t n = c < 0x80             ? 1
               : (c & 0xe0) == 0xc0 ? 2
               : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4
                                    : 0;
    if (n == 0 || c == 0xc0 || c == 0xc1 || c > 0xf4 || len - i < n)
      return i;
    for (size_t k = 1; k < n; k++)
      if ((s[i + k] & 0xc0) != 0x80)
        return i;
    if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0) ||
        (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))
      return i;
    i += n;
  }
  return len;
}

/* The 1-based line of byte off of buf. */
static size_t line_of(const char *buf, size_t off)
{
  size_t line = 1;
  for (size_t i = 0; i < off; i++)
    line += buf[i] == '\n';
  return line;
}

int al_yw_open(al_yw *w, const char *buf, size_t len, size_t max, const char *empty)
{
  w->doc = NULL;
  w->fyp = NULL;
  w->diag = NULL;
  if (len > max)
    return al_make_error(w->err, EFBIG, "%s: larger than %zu bytes", w->name, max);
  size_t bad = utf8_invalid_at((const unsigned char *)buf, len);
  if (bad < len)
    return al_error_set(w->err, EINVAL, "%s:%zu: not valid UTF-8 at byte %zu (YAML 1.2 §5.2)",
                        w->name, line_of(buf, bad), bad);
  const char *nul = memchr(buf, '\0', len);
  if (nul)
    return al_error_set(w->err, EINVAL, "%s:%zu: contains a NUL byte", w->name,
                        line_of(buf, (size_t)(nul - buf)));
  struct fy_diag_cfg dcfg;
  fy_diag_cfg_default(&dcfg);
  dcfg.fp = NULL;
  dcfg.output_fn = NULL;
  dcfg.colorize = false;
  dcfg.level = FYET_ERROR;
  w->diag = fy_diag_create(&dcfg);
  if (!w->diag)
    return al_make_error(w->err, ENOMEM, "%s: libfyaml diagnostics", w->name);
  fy_diag_set_collect_errors(w->diag, true);
  struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_JSON_NONE, .diag = w->diag};
  /* Parse as a stream: a second document would be silently ignored by a
   * single-document load, and a reader of the file could then believe a
   * different configuration than the one in force. */
  w->fyp = fy_parser_create(&cfg);
  if (!w->fyp) {
    al_yw_close(w);
    return al_make_error(w->err, ENOMEM, "%s: libfyaml parser", w->name);
  }
  if (fy_parser_set_string(w->fyp, buf, len) == 0)
    w->doc = fy_parse_load_document(w->fyp);
  if (w->doc) {
    struct fy_document *extra = fy_parse_load_document(w->fyp);
    if (extra) {
      fy_parse_document_destroy(w->fyp, extra);
      al_yw_close(w);
      return al_error_set(w->err, EINVAL,
                          "%s: more than one YAML document (`---`): this file is exactly one",
                          w->name);
    }
    if (fy_document_root(w->doc))
      return 0;
    al_yw_close(w);
    return al_error_set(w->err, EINVAL, "%s:1:1: %s", w->name, empty);
  }
  void *it = NULL;
  struct fy_diag_error *de = fy_diag_errors_iterate(w->diag, &it);
  int line = de ? de->line + 1 : 0, col = de ? de->column + 1 : 0;
  if (de && de->fyt) {
    const struct fy_mark *mk = fy_token_start_mark(de->fyt);
    if (mk) {
      line = mk->line + 1;
      col = mk->column + 1;
    }
  }
  if (de)
    al_error_set(w->err, EINVAL, "%s:%d:%d: not valid YAML: %s", w->name, line, col,
                 de->msg ? de->msg : "parse error");
  else if (all_blank(buf, len))
    al_error_set(w->err, EINVAL, "%s:1:1: %s", w->name, empty);
  else
    al_error_set(w->err, EINVAL, "%s:1:1: not valid YAML", w->name);
  al_yw_close(w);
  return -1;
}

void al_yw_close(al_yw *w)
{
  if (w->doc && w->fyp)
    fy_parse_document_destroy(w->fyp, w->doc);
  else if (w->doc)
    fy_document_destroy(w->doc);
  if (w->fyp)
    fy_parser_destroy(w->fyp);
  if (w->diag)
    fy_diag_destroy(w->diag);
  w->doc = NULL;
  w->fyp = NULL;
  w->diag = NULL;
}

void al_yw_pos(struct fy_node *n, int *line, int *col)
{
  *line = 0;
  *col = 0;
  struct fy_token *t = n ? fy_node_get_scalar_token(n) : NULL;
  const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
  if (m) {
    *line = m->line + 1;
    *col = m->column + 1;
  }
}

/* A collection has no token of its own: point at its first key or item. */
static struct fy_node *first_inside(struct fy_node *n)
{
  void *it = NULL;
  if (n && fy_node_is_mapping(n)) {
    struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);
    return p ? fy_node_pair_key(p) : NULL;
  }
  if (n && fy_node_is_sequence(n))
    return fy_node_sequence_iterate(n, &it);
  return NULL;
}

__attribute__((format(printf, 4, 0))) static char *
vmessage(al_yw *w, struct fy_node *at, const char *path, const char *fmt, va_list ap)
{
  char rule[768];
  vsnprintf(rule, sizeof rule, fmt, ap);
  int line, col;
  al_yw_pos(at, &line, &col);
  if (line == 0) /* a collection: where its first key or item is */
    al_yw_pos(first_inside(at), &line, &col);
  if (line > 0)
    return al_strdup_printf("%s:%d:%d: %s: %s", w->name, line, col, path, rule);
  return al_strdup_printf("%s: %s: %s", w->name, path, rule);
}

int al_yw_fail(al_yw *w, struct fy_node *at, const char *path, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  al_autofree char *m = vmessage(w, at, path, fmt, ap);
  va_end(ap);
  return al_error_set(w->err, EINVAL, "%s", m);
}
#define al_yw_fail(...) (al_yw_fail(__VA_ARGS__), -1)

char *al_yw_message(al_yw *w, struct fy_node *at, const char *path, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *m = vmessage(w, at, path, fmt, ap);
  va_end(ap);
  return m;
}

struct fy_node *al_yw_at(const al_yw_kv *kv)
{
  if (!kv->key || (kv->val && fy_node_is_scalar(kv->val) && fy_node_get_scalar_token(kv->val)))
    return kv->val;
  return kv->key;
}

int al_yw_plain(al_yw *w, struct fy_node *n, struct fy_node *at, const char *path)
{
  if (!n || !(w->flags & AL_YW_STRICT))
    return 0;
  if (fy_node_get_scalar_token(n) || !at)
    at = n;
  if (fy_node_is_alias(n) || (w->doc && fy_document_lookup_anchor_by_node(w->doc, n)))
    return al_yw_fail(w, at, path, "anchors and aliases are not allowed here");
  size_t tl = 0;
  if (fy_node_get_tag(n, &tl) && tl > 0)
    return al_yw_fail(w, at, path, "tags are not allowed here");
  return 0;
}

int al_yw_str(al_yw *w, const al_yw_kv *kv, char **out)
{
  if (al_yw_plain(w, kv->val, kv->key, kv->path) < 0)
    return -1;
  if (!kv->val || !fy_node_is_scalar(kv->val) || fy_node_is_alias(kv->val))
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must be a string");
  size_t len = 0;
  const char *s = fy_node_get_scalar(kv->val, &len);
  if (!s)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must be a string");
  if (memchr(s, '\0', len))
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must not contain a NUL byte");
  if (len > AL_YW_MAX_STR)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "longer than %d bytes", AL_YW_MAX_STR);
  if (w->flags & AL_YW_NO_CTRL)
    for (size_t i = 0; i < len; i++)
      if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
        return al_yw_fail(w, al_yw_at(kv), kv->path, "contains a control character");
  char *r = al_xmalloc(len + 1);
  memcpy(r, s, len);
  r[len] = '\0';
  free(*out);
  *out = r;
  return 0;
}

static bool is_plain(const al_yw_kv *kv)
{
  return fy_node_get_style(kv->val) == FYNS_PLAIN;
}

/* Strict decimal, the one number rule (al_parse_decimal): the whole string. */
static bool parse_decimal(const char *s, uint64_t *out)
{
  const char *p = s;
  return al_parse_decimal(&p, out) == 0 && *p == '\0';
}

int al_yw_uint(al_yw *w, const al_yw_kv *kv, uint64_t min, uint64_t max, bool quoted, uint64_t *out)
{
  al_autofree char *s = NULL;
  if (al_yw_str(w, kv, &s) < 0)
    return -1;
  if (!quoted && kv->val && !is_plain(kv))
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must be a number, not a quoted string");
  uint64_t v = 0;
  if (!parse_decimal(s, &v))
    return al_yw_fail(w, al_yw_at(kv), kv->path,
                      "must be a whole number in decimal (no sign, no leading zero), got `%.64s`",
                      s);
  if (v < min || v > max)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must be between %llu and %llu",
                      (unsigned long long)min, (unsigned long long)max);
  *out = v;
  return 0;
}

int al_yw_seq(al_yw *w, const al_yw_kv *kv, size_t max, size_t *count)
{
  if (al_yw_plain(w, kv->val, kv->key, kv->path) < 0)
    return -1;
  if (!kv->val || !fy_node_is_sequence(kv->val))
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must be a list");
  int n = fy_node_sequence_item_count(kv->val);
  *count = n > 0 ? (size_t)n : 0;
  if (*count > max)
    return al_yw_fail(w, kv->key ? kv->key : kv->val, kv->path, "more than %zu entries", max);
  return 0;
}

bool al_yw_next(const al_yw_kv *seq, void **it, size_t *i, al_yw_kv *item, char *buf, size_t buflen)
{
  struct fy_node *n = fy_node_sequence_iterate(seq->val, it);
  if (!n)
    return false;
  if (item->val) /* not the first call: the next index */
    (*i)++;
  snprintf(buf, buflen, "%s[%zu]", seq->path, *i);
  item->key = NULL; /* messages point at the element itself (or its first key) */
  item->val = n;
  item->path = buf;
  return true;
}

/* 60000 -> "1m", 3600000 -> "1h", 1500 -> "1500ms": the largest exact unit. */
static const char *fmt_duration(uint64_t ms, char *buf, size_t len)
{
  static const struct {
    uint64_t mult;
    const char *unit;
  } u[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
  for (size_t i = 0; i < AL_ARRAY_SIZE(u); i++)
    if (ms && ms % u[i].mult == 0) {
      snprintf(buf, len, "%llu%s", (unsigned long long)(ms / u[i].mult), u[i].unit);
      return buf;
    }
  snprintf(buf, len, "%llums", (unsigned long long)ms);
  return buf;
}

/* 268435456 -> "256MiB": the largest exact binary unit, else bytes. */
static const char *fmt_size(uint64_t b, char *buf, size_t len)
{
  static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
  int u = -1;
  while (u < 3 && b && b % 1024 == 0) {
    b /= 1024;
    u++;
  }
  snprintf(buf, len, "%llu%s", (unsigned long long)b, u < 0 ? " bytes" : unit[u]);
  return buf;
}

static void store_uint(void *p, unsigned width, uint64_t v)
{
  switch (width) {
  case 1: {
    uint8_t x = (uint8_t)v;
    memcpy(p, &x, 1);
    break;
  }
  case 2: {
    uint16_t x = (uint16_t)v;
    memcpy(p, &x, 2);
    break;
  }
  case 4: {
    uint32_t x = (uint32_t)v;
    memcpy(p, &x, 4);
    break;
  }
  default:
    memcpy(p, &v, 8);
    break;
  }
}

static uint64_t width_max(unsigned width)
{
  return width == 1 ? UINT8_MAX : width == 2 ? UINT16_MAX : width == 4 ? UINT32_MAX : UINT64_MAX;
}

/* The scalar of kv (text s, position kv) into the field's slot. */
static int scalar_value(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, const char *s,
                        bool plain, void *obj)
{
  char *slot = (char *)obj + f->off;
  const char *why = NULL;
  uint64_t v = 0;
  struct fy_node *at = al_yw_at(kv);
  switch (f->type) {
  case AL_YW_STR: {
    size_t len = strlen(s), max = f->max ? f->max : AL_YW_MAX_STR;
    if (len < f->min)
      return al_yw_fail(w, at, kv->path,
                        f->min == 1 ? "must not be empty" : "must be at least %llu bytes",
                        (unsigned long long)f->min);
    if (len > max)
      return al_yw_fail(w, at, kv->path, "longer than %zu bytes", max);
    char **dst = (char **)(void *)slot;
    free(*dst);
    *dst = al_xstrdup(s);
    return 0;
  }
  case AL_YW_UINT: {
    if (!plain && !(f->flags & AL_YW_QUOTED))
      return al_yw_fail(w, at, kv->path, "must be a number, not a quoted string");
    if (!parse_decimal(s, &v))
      return al_yw_fail(w, at, kv->path,
                        "must be a whole number in decimal (no sign, no leading zero), got `%.64s`",
                        s);
    uint64_t max = f->max ? f->max : width_max(f->width);
    if (v < f->min || v > max) {
      if (f->rule)
        return al_yw_fail(w, at, kv->path, "%s, got `%.64s`", f->rule, s);
      return al_yw_fail(w, at, kv->path, "must be between %llu and %llu",
                        (unsigned long long)f->min, (unsigned long long)max);
    }
    store_uint(slot, f->width, v);
    return 0;
  }
  case AL_YW_BOOL:
    if (!plain)
      return al_yw_fail(w, at, kv->path, "must be true or false, not a quoted string");
    if (strcmp(s, "true") == 0)
      *(bool *)(void *)slot = true;
    else if (strcmp(s, "false") == 0)
      *(bool *)(void *)slot = false;
    else
      return al_yw_fail(w, at, kv->path, "must be true or false, got `%.64s`", s);
    return 0;
  case AL_YW_ENUM: {
    size_t n = 0;
    for (; f->choices[n]; n++)
      if (strcmp(s, f->choices[n]) == 0) {
        store_uint(slot, f->width, n);
        return 0;
      }
    if (f->rule)
      return al_yw_fail(w, at, kv->path, "%s, got `%.64s`", f->rule, s);
    char list[512] = "";
    for (size_t i = 0; i < n; i++) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s`%s`",
               i == 0       ? ""
               : i + 1 == n ? " or "
                            : ", ",
               f->choices[i]);
    }
    return al_yw_fail(w, at, kv->path, "must be %s%s, got `%.64s`", n > 2 ? "one of " : "", list,
                      s);
  }
  case AL_YW_SIZE:
    if (al_parse_size(s, &v, &why) < 0)
      return al_yw_fail(w, at, kv->path, "%s, got `%.64s`", why, s);
    if (v < f->min)
      return al_yw_fail(w, at, kv->path, "must be at least %llu bytes", (unsigned long long)f->min);
    if (f->max && v > f->max) {
      char hi[32];
      return al_yw_fail(w, at, kv->path, "must be at most %s", fmt_size(f->max, hi, sizeof hi));
    }
    memcpy(slot, &v, sizeof v);
    return 0;
  case AL_YW_DURATION:
    if (f->min == 0 && strcmp(s, "0") == 0)
      v = 0;
    else if (al_parse_duration_ms(s, &v, &why) < 0)
      return al_yw_fail(w, at, kv->path, "%s, got `%.64s`", why, s);
    if (v < f->min || (f->max && v > f->max)) {
      char lo[32], hi[32];
      if (f->min == 0)
        return al_yw_fail(w, at, kv->path, "must be at most %s, got `%.64s`",
                          fmt_duration(f->max, hi, sizeof hi), s);
      return al_yw_fail(w, at, kv->path, "must be between %s and %s, got `%.64s`",
                        fmt_duration(f->min, lo, sizeof lo),
                        f->max ? fmt_duration(f->max, hi, sizeof hi) : "any", s);
    }
    memcpy(slot, &v, sizeof v);
    return 0;
  default:
    return al_yw_fail(w, at, kv->path, "internal: no scalar form");
  }
}

static int list_value(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  size_t max = f->max ? f->max : AL_YW_MAX_LIST, count = 0;
  if (al_yw_seq(w, kv, max, &count) < 0)
    return -1;
  if (count < f->min)
    return al_yw_fail(w, kv->key ? kv->key : kv->val, kv->path, "needs at least %llu entr%s",
                      (unsigned long long)f->min, f->min == 1 ? "y" : "ies");
  char *base;
  size_t *n = (size_t *)(void *)((char *)obj + f->off_n);
  if (f->flags & AL_YW_INLINE) {
    base = (char *)obj + f->off;
  } else {
    char **arr = (char **)(void *)((char *)obj + f->off);
    if (*arr) /* given again (a default): replace */
      al_yw_free(&(al_yw_map){f, 1, NULL}, obj);
    *arr = al_xcalloc(count ? count : 1, f->item_size);
    base = *arr;
  }
  *n = 0;
  void *it = NULL;
  size_t i = 0;
  char path[256];
  al_yw_kv item = {0};
  while (al_yw_next(kv, &it, &i, &item, path, sizeof path)) {
    if (*n >= count) /* the sequence grew under us: cannot happen */
      break;
    void *elem = base + *n * f->item_size;
    (*n)++;
    if (al_yw_value(w, f->item, &item, elem) < 0)
      return -1;
    if (f->check && f->check(w, f, &item, obj) < 0)
      return -1;
  }
  return 0;
}

int al_yw_value(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  switch (f->type) {
  case AL_YW_CUSTOM:
    return f->parse(w, f, kv, obj);
  case AL_YW_MAP:
    if (al_yw_walk(w, kv, f->map, (char *)obj + f->off) < 0)
      return -1;
    break;
  case AL_YW_LIST:
    return list_value(w, f, kv, obj); /* check runs per element */
  default: {
    al_autofree char *s = NULL;
    if (al_yw_str(w, kv, &s) < 0)
      return -1;
    if (scalar_value(w, f, kv, s, is_plain(kv), obj) < 0)
      return -1;
    break;
  }
  }
  return f->check ? f->check(w, f, kv, obj) : 0;
}

int al_yw_each(al_yw *w, const al_yw_kv *kv, const char *what, size_t max, al_yw_each_fn fn,
               void *obj)
{
  if (al_yw_plain(w, kv->val, kv->key, kv->path) < 0)
    return -1;
  if (!kv->val || !fy_node_is_mapping(kv->val))
    return al_yw_fail(w, al_yw_at(kv), kv->path, "must be a mapping%s%s", what ? " of " : "",
                      what ? what : "");
  int count = fy_node_mapping_item_count(kv->val);
  if (count > 0 && (size_t)count > max)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "more than %zu entries", max);
  void *it = NULL;
  struct fy_node_pair *pair;
  while ((pair = fy_node_mapping_iterate(kv->val, &it)) != NULL) {
    struct fy_node *k = fy_node_pair_key(pair);
    al_yw_kv kkv = {k, k, kv->path};
    al_autofree char *name = NULL;
    if (al_yw_str(w, &kkv, &name) < 0)
      return -1;
    char path[256];
    snprintf(path, sizeof path, "%s%s%.64s", kv->path, kv->path[0] ? "." : "", name);
    /* a name given twice: libfyaml refuses most while parsing; again here */
    void *it2 = NULL;
    struct fy_node_pair *prev;
    while ((prev = fy_node_mapping_iterate(kv->val, &it2)) != NULL && prev != pair) {
      size_t pl = 0;
      const char *ps = fy_node_get_scalar(fy_node_pair_key(prev), &pl);
      if (ps && pl == strlen(name) && memcmp(ps, name, pl) == 0)
        return al_yw_fail(w, k, path, "given twice");
    }
    al_yw_kv vkv = {k, fy_node_pair_value(pair), path};
    if (fn(w, name, k, &vkv, obj) < 0)
      return -1;
  }
  return 0;
}

const al_yw_field *al_yw_find(const al_yw_map *map, const char *key, size_t klen)
{
  for (size_t i = 0; i < map->n; i++)
    if (strlen(map->fields[i].key) == klen && memcmp(map->fields[i].key, key, klen) == 0)
      return &map->fields[i];
  return NULL;
}

int al_yw_walk(al_yw *w, const al_yw_kv *kv, const al_yw_map *map, void *obj)
{
  struct fy_node *node = kv->val;
  if (al_yw_plain(w, node, kv->key, kv->path) < 0)
    return -1;
  if (!node || !fy_node_is_mapping(node))
    return al_yw_fail(w, al_yw_at(kv), kv->path[0] ? kv->path : "(document)", "must be a mapping");
  bool seen[AL_YW_MAX_FIELDS] = {false};
  void *it = NULL;
  struct fy_node_pair *pair;
  while ((pair = fy_node_mapping_iterate(node, &it)) != NULL) {
    struct fy_node *k = fy_node_pair_key(pair);
    struct fy_node *v = fy_node_pair_value(pair);
    if (al_yw_plain(w, k, k, kv->path) < 0)
      return -1;
    size_t klen = 0;
    const char *ks = (k && fy_node_is_scalar(k)) ? fy_node_get_scalar(k, &klen) : NULL;
    if (!ks)
      return al_yw_fail(w, k ? k : al_yw_at(kv), kv->path[0] ? kv->path : "(document)",
                        "keys must be strings");
    char sub[256];
    snprintf(sub, sizeof sub, "%s%s%.*s", kv->path, kv->path[0] ? "." : "",
             (int)(klen > 64 ? 64 : klen), ks);
    const al_yw_field *f = al_yw_find(map, ks, klen);
    if (!f) {
      char list[512] = "";
      for (size_t i = 0; i < map->n; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", map->fields[i].key);
      }
      return al_yw_fail(w, k, sub, "unknown key (allowed here: %s)", list);
    }
    size_t idx = (size_t)(f - map->fields);
    if (idx < AL_YW_MAX_FIELDS) {
      if (seen[idx])
        return al_yw_fail(w, k, sub, "given twice");
      seen[idx] = true;
    }
    size_t vl = 0;
    /* `key:` and nothing after it: a null scalar without a token */
    if (v == NULL || (fy_node_is_scalar(v) && !fy_node_is_alias(v) &&
                      (fy_node_get_scalar(v, &vl) == NULL || !fy_node_get_scalar_token(v))))
      return al_yw_fail(w, k, sub, "has no value");
    al_yw_kv sk = {k, v, sub};
    if (al_yw_value(w, f, &sk, obj) < 0)
      return -1;
  }
  for (size_t i = 0; i < map->n && i < AL_YW_MAX_FIELDS; i++)
    if ((map->fields[i].flags & AL_YW_REQUIRED) && !seen[i]) {
      char sub[256];
      snprintf(sub, sizeof sub, "%s%s%s", kv->path, kv->path[0] ? "." : "", map->fields[i].key);
      /* the mapping's first key: a list element's kv->key is the list's */
      struct fy_node *at = first_inside(node) ? first_inside(node) : kv->key;
      if (map->fields[i].doc)
        return al_yw_fail(w, at, sub, "required (%s)", map->fields[i].doc);
      return al_yw_fail(w, at, sub, "required");
    }
  if (map->done && map->done(w, kv, obj, seen) < 0)
    return -1;
  return 0;
}

int al_yw_defaults(al_yw *w, const al_yw_map *map, void *obj)
{
  for (size_t i = 0; i < map->n; i++) {
    const al_yw_field *f = &map->fields[i];
    if (f->type == AL_YW_MAP) {
      if (al_yw_defaults(w, f->map, (char *)obj + f->off) < 0)
        return -1;
      continue;
    }
    if (!f->def)
      continue;
    al_yw_kv kv = {NULL, NULL, f->key};
    if (scalar_value(w, f, &kv, f->def, true, obj) < 0)
      return -1;
  }
  return 0;
}

void al_yw_free(const al_yw_map *map, void *obj)
{
  for (size_t i = 0; i < map->n; i++) {
    const al_yw_field *f = &map->fields[i];
    char *slot = (char *)obj + f->off;
    if (f->type == AL_YW_STR) {
      char **p = (char **)(void *)slot;
      free(*p);
      *p = NULL;
    } else if (f->type == AL_YW_MAP) {
      al_yw_free(f->map, slot);
    } else if (f->type == AL_YW_LIST) {
      size_t *n = (size_t *)(void *)((char *)obj + f->off_n);
      char *base = (f->flags & AL_YW_INLINE) ? slot : *(char **)(void *)slot;
      /* the element at *n may be half read when a walk stopped on it */
      for (size_t k = 0; base && k < *n; k++)
        al_yw_free(&(al_yw_map){f->item, 1, NULL}, base + k * f->item_size);
      if (!(f->flags & AL_YW_INLINE)) {
        free(base);
        *(char **)(void *)slot = NULL;
      }
      *n = 0;
    }
  }
}

void al_yw_doc(FILE *out, const al_yw_map *map, const char *prefix)
{
  static const char *const tn[] = {"string",   "number",  "boolean", "enum",  "size",
                                   "duration", "mapping", "list",    "custom"};
  for (size_t i = 0; i < map->n; i++) {
    const al_yw_field *f = &map->fields[i];
    al_autofree char *key =
        prefix && prefix[0] ? al_strdup_printf("%s.%s", prefix, f->key) : al_xstrdup(f->key);
    if (f->type == AL_YW_MAP) {
      al_yw_doc(out, f->map, key);
      continue;
    }
    char choices[256] = "";
    for (size_t k = 0; f->type == AL_YW_ENUM && f->choices[k]; k++) {
      size_t l = strlen(choices);
      snprintf(choices + l, sizeof choices - l, "%s%s", k ? "|" : ": ", f->choices[k]);
    }
    fprintf(out, "| `%s` | %s%s | %s | %s |\n", key, f->shape ? f->shape : tn[f->type], choices,
            (f->flags & AL_YW_REQUIRED) ? "required" : (f->def ? f->def : "—"),
            f->doc ? f->doc : "");
  }
}
