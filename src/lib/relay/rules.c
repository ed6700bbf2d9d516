/* The engine behind the relay's rule tables (rules.h): a strict JSON read
 * of the body, then one walk over it applying the vendor's table. */
#include "relay/rules.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

const al_relay_ruleset *al_relay_ruleset_find(const char *vendor)
{
  if (!vendor)
    return NULL;
  if (strcmp(vendor, "anthropic") == 0)
    return &al_relay_rules_anthropic;
  if (strcmp(vendor, "openai") == 0)
    return &al_relay_rules_openai;
  return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

const al_relay_ruleset *al_relay_ruleset_for(const char *vendor, const char *path)
{
  if (ends_with(path, "/responses") || ends_with(path, "/chat/completions"))
    return &al_relay_rules_openai;
  if (ends_with(path, "/messages") || ends_with(path, "/messages/count_tokens"))
    return &al_relay_rules_anthropic;
  return al_relay_ruleset_find(vendor);
}

/* `pattern` (trailing `*`: prefix) matches s exactly, case-sensitively. */
static bool match(const char *pattern, const char *s)
{
  size_t n = strlen(pattern);
  if (n && pattern[n - 1] == '*')
    return strncmp(pattern, s, n - 1) == 0;
  return strcmp(pattern, s) == 0;
}

static bool match_icase(const char *pattern, const char *s)
{
  size_t n = strlen(pattern);
  if (n && pattern[n - 1] == '*')
    return strncasecmp(pattern, s, n - 1) == 0;
  return strcasecmp(pattern, s) == 0;
}

static bool listed(const char *const *list, const char *s)
{
  for (; list && *list; list++)
    if (strcmp(*list, s) == 0)
      return true;
  return false;
}

/* The deepest nesting of [ and { outside strings, scanning at most len
 * bytes; stops counting past limit. Cheap, and keeps jansson's recursive
 * parser (and our walk) off deep inputs on the relay's small thread stacks. */
static size_t json_depth(const char *p, size_t len, size_t limit)
{
  size_t depth = 0, max = 0;
  bool in_str = false, esc = false;
  for (size_t i = 0; i < len; i++) {
    char ch = p[i];
    if (in_str) {
      if (esc)
        esc = false;
      else if (ch == '\\')
        esc = true;
      else if (ch == '"')
        in_str = false;
      continue;
    }
    if (ch == '"')
      in_str = true;
    else if (ch == '[' || ch == '{') {
      if (++depth > max)
        max = depth;
      if (max > limit)
        return max;
    } else if ((ch == ']' || ch == '}') && depth)
      depth--;
  }
  return max;
}

struct walk {
  const al_relay_ruleset *rs;
  const char *const *allowed;
  char *why;
  size_t whylen;
  char *feature;
  size_t featlen;
  int status;
};

static void refuse(struct walk *w, int status, const char *feat, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void refuse(struct walk *w, int status, const char *feat, const char *fmt, ...)
{
  if (w->status)
    return; /* the first reason wins */
  w->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->why, w->whylen, fmt, ap);
  va_end(ap);
  if (w->feature && w->featlen)
    snprintf(w->feature, w->featlen, "%s", feat ? feat : "");
}

/* Printable, short form of an untrusted string for a message. */
static void quote(const char *s, char *out, size_t outlen)
{
  size_t n = 0;
  for (; s && *s && n + 2 < outlen && n < 64; s++) {
    bool plain = (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f && *s != '`';
    if (plain)
      out[n++] = *s;
    else
      out[n++] = '?';
  }
  out[n] = '\0';
}

static json_t *member_path(json_t *o, const char *path)
{
  char part[64];
  const char *p = path;
  while (o && *p) {
    size_t n = strcspn(p, ".");
    if (n >= sizeof part)
      return NULL;
    memcpy(part, p, n);
    part[n] = '\0';
    o = json_is_object(o) ? json_object_get(o, part) : NULL;
    p += n + (p[n] == '.');
  }
  return o;
}

static bool fires(json_t *v, const char *except_prefix)
{
  if (!v || json_is_null(v))
    return false;
  if (!except_prefix)
    return true;
  const char *s = json_string_value(v);
  return !s || strncasecmp(s, except_prefix, strlen(except_prefix)) != 0;
}

static void check_object_rules(struct walk *w, json_t *o, const char *where)
{
  const char *type = json_string_value(json_object_get(o, "type"));
  if (!type)
    return;
  for (size_t i = 0; i < w->rs->n_rules && !w->status; i++) {
    const al_relay_rule *r = &w->rs->rules[i];
    if (r->kind != AL_RULE_OBJECT || !match(r->match, type) || listed(w->allowed, r->feature))
      continue;
    if (fires(member_path(o, r->field), r->except_prefix))
      refuse(w, 403, r->feature,
             "%s: a `%s` object with `%s` at %s: %s (allow it with relay.allow: [%s])",
             w->rs->vendor, type, r->field, where, r->why, r->feature);
  }
}

/* Members that carry the client's own data, never instructions to the
 * vendor: a tool's JSON schema and a tool call's arguments. */
static bool opaque_member(json_t *parent, const char *key)
{
  if (strcmp(key, "input_schema") == 0 || strcmp(key, "parameters") == 0)
    return true;
  const char *type = json_string_value(json_object_get(parent, "type"));
  return strcmp(key, "input") == 0 && type && strstr(type, "tool_use");
}

/* A top-level member a rule already judged and the policy allows (e.g.
 * `mcp_servers` with relay.allow: [mcp]): its insides are the feature's. */
static bool allowed_top_key(const struct walk *w, const char *key)
{
  for (size_t i = 0; i < w->rs->n_rules; i++)
    if (w->rs->rules[i].kind == AL_RULE_TOP_KEY && strcmp(w->rs->rules[i].match, key) == 0 &&
        listed(w->allowed, w->rs->rules[i].feature))
      return true;
  return false;
}

static void walk(struct walk *w, json_t *v, char *where, size_t wlen, size_t depth)
{
  if (w->status || depth > AL_RELAY_BODY_MAX_DEPTH)
    return;
  size_t base = strlen(where);
  if (json_is_object(v)) {
    check_object_rules(w, v, where);
    const char *k;
    json_t *m;
    json_object_foreach(v, k, m)
    {
      if (w->status)
        break;
      if (opaque_member(v, k) || (depth == 0 && allowed_top_key(w, k)))
        continue;
      char q[72];
      quote(k, q, sizeof q);
      snprintf(where + base, wlen - base, ".%s", q);
      walk(w, m, where, wlen, depth + 1);
      where[base] = '\0';
    }
  } else if (json_is_array(v)) {
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m)
    {
      if (w->status)
        break;
      snprintf(where + base, wlen - base, "[%zu]", i);
      walk(w, m, where, wlen, depth + 1);
      where[base] = '\0';
    }
  }
}

static void check_tools(struct walk *w, json_t *tools, int level)
{
  size_t i;
  json_t *t;
  json_array_foreach(tools, i, t)
  {
    json_t *tv = json_is_object(t) ? json_object_get(t, "type") : NULL;
    if (!tv || json_is_null(tv))
      continue; /* a custom tool: the client executes it */
    const char *type = json_string_value(tv);
    char q[72];
    if (!type || !type[0]) {
      refuse(w, 400, NULL, "%s: tools[%zu].type must be a non-empty string", w->rs->vendor, i);
      return;
    }
    bool client = false;
    for (const char *const *c = w->rs->client_tools; c && *c && !client; c++)
      client = match(*c, type);
    if (client)
      continue;
    bool group = false;
    for (const char *const *g = w->rs->group_tools; g && *g && !group; g++)
      group = match(*g, type);
    json_t *inner = json_object_get(t, "tools");
    if (group && level == 0 && json_is_array(inner)) {
      check_tools(w, inner, level + 1); /* its members, like top-level tools */
      if (w->status)
        return;
      continue;
    }
    const al_relay_rule *hit = NULL;
    for (size_t k = 0; k < w->rs->n_rules && !hit; k++)
      if (w->rs->rules[k].kind == AL_RULE_TOOL_TYPE && match(w->rs->rules[k].match, type))
        hit = &w->rs->rules[k];
    quote(type, q, sizeof q);
    if (hit && !listed(w->allowed, hit->feature)) {
      refuse(w, 403, hit->feature,
             "%s: tools[%zu] is the server-side tool `%s`: %s (allow it with relay.allow: [%s])",
             w->rs->vendor, i, q, hit->why, hit->feature);
      return;
    }
    if (!hit && !listed(w->allowed, type)) {
      refuse(w, 403, q,
             "%s: tools[%zu] has type `%s`, which is not a client-executed tool type the relay "
             "knows; a tool the vendor runs is refused unless relay.allow names it: [%s]",
             w->rs->vendor, i, q, q);
      return;
    }
  }
}

int al_relay_check_body(const al_relay_ruleset *rs, const char *const *allowed, const char *body,
                        size_t len, char *why, size_t whylen, char *feature, size_t featlen)
{
  struct walk w = {rs, allowed, why, whylen, feature, featlen, 0};
  if (whylen)
    why[0] = '\0';
  if (feature && featlen)
    feature[0] = '\0';
  if (len == 0)
    return 0;
  if (json_depth(body, len, AL_RELAY_BODY_MAX_DEPTH) > AL_RELAY_BODY_MAX_DEPTH) {
    refuse(&w, 400, NULL, "request body nested deeper than %d levels", AL_RELAY_BODY_MAX_DEPTH);
    return w.status;
  }
  json_error_t je;
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    refuse(&w, 400, NULL, "request body is not JSON the relay can check: %.120s (byte %d)", je.text,
           je.position);
    return w.status;
  }
  if (!json_is_object(root)) {
    json_decref(root);
    refuse(&w, 400, NULL, "request body must be a JSON object");
    return w.status;
  }
  for (size_t i = 0; i < rs->n_rules && !w.status; i++) {
    const al_relay_rule *r = &rs->rules[i];
    if (r->kind != AL_RULE_TOP_KEY || listed(allowed, r->feature))
      continue;
    json_t *v = json_object_get(root, r->match);
    if (v && !json_is_null(v) && !json_is_false(v))
      refuse(&w, 403, r->feature, "%s: `%s` in the request: %s (allow it with relay.allow: [%s])",
             rs->vendor, r->match, r->why, r->feature);
  }
  json_t *tools = json_object_get(root, "tools");
  if (!w.status && tools && !json_is_null(tools)) {
    if (!json_is_array(tools))
      refuse(&w, 400, NULL, "%s: `tools` must be an array", rs->vendor);
    else
      check_tools(&w, tools, 0);
  }
  char where[512] = "body";
  if (!w.status)
    walk(&w, root, where, sizeof where, 0);
  json_decref(root);
  return w.status;
}

static bool json_ws(char ch)
{
  return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int al_relay_apply_defaults(const al_relay_ruleset *rs, const char *const *allowed,
                            const char *path, const char *body, size_t len, char **out,
                            size_t *out_len, char *set, size_t setlen, char *why, size_t whylen,
                            char *feature, size_t featlen)
{
  *out = NULL;
  *out_len = 0;
  if (setlen)
    set[0] = '\0';
  if (whylen)
    why[0] = '\0';
  if (feature && featlen)
    feature[0] = '\0';
  if (len == 0 || !rs->n_defaults)
    return 0;
  json_t *root = NULL;
  char add[256] = "";
  size_t addn = 0;
  int status = 0;
  for (size_t i = 0; i < rs->n_defaults && !status; i++) {
    const al_relay_default *d = &rs->defaults[i];
    if (!ends_with(path, d->path_suffix) || listed(allowed, d->feature))
      continue;
    if (!root)
      root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(root)) {
      status = 400; /* al_relay_check_body refuses it first */
      snprintf(why, whylen, "request body must be a JSON object");
      break;
    }
    json_t *v = json_object_get(root, d->member);
    if (json_is_null(v)) {
      status = 403;
      snprintf(why, whylen,
               "%s: `%s: null` in the request leaves it to the vendor's default: %s (send "
               "`\"%s\": %s`, or allow it with relay.allow: [%s])",
               rs->vendor, d->member, d->why, d->member, d->json, d->feature);
      if (feature && featlen)
        snprintf(feature, featlen, "%s", d->feature);
      break;
    }
    if (v)
      continue; /* present: al_relay_check_body judged it */
    int n = snprintf(add + addn, sizeof add - addn, "\"%s\":%s,", d->member, d->json);
    if (n < 0 || (size_t)n >= sizeof add - addn)
      break;
    addn += (size_t)n;
    size_t sl = strlen(set);
    snprintf(set + sl, setlen - sl, "%s%s=%s", sl ? "," : "", d->member, d->json);
  }
  json_decref(root);
  if (status || addn == 0)
    return status;
  /* after the '{' (the first byte that is not JSON whitespace, RFC 8259
   * §2); no trailing comma when the object is empty */
  size_t brace = 0;
  while (brace < len && json_ws(body[brace]))
    brace++;
  size_t next = brace + 1;
  while (next < len && json_ws(body[next]))
    next++;
  if (next < len && body[next] == '}')
    addn--; /* drop the last comma */
  char *nb = al_xmalloc(len + addn);
  memcpy(nb, body, brace + 1);
  memcpy(nb + brace + 1, add, addn);
  memcpy(nb + brace + 1 + addn, body + brace + 1, len - brace - 1);
  *out = nb;
  *out_len = len + addn;
  return 0;
}

bool al_relay_header_allowed(const al_relay_ruleset *rs, const char *const *extra, const char *name)
{
  for (const char *const *h = rs->headers; h && *h; h++)
    if (match_icase(*h, name))
      return true;
  for (const char *const *h = extra; h && *h; h++)
    if (strcasecmp(*h, name) == 0)
      return true;
  return false;
}

static void append(char *out, size_t outlen, const char *s, size_t n)
{
  size_t have = strlen(out);
  if (have + n + 2 > outlen)
    return;
  if (have)
    out[have++] = ',';
  memcpy(out + have, s, n);
  out[have + n] = '\0';
}

int al_relay_filter_betas(const al_relay_ruleset *rs, const char *const *allowed,
                          const char *const *extra, const char *value, char *out, size_t outlen,
                          char *dropped, size_t droplen, char *why, size_t whylen)
{
  out[0] = dropped[0] = why[0] = '\0';
  const char *p = value;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    if (!*p)
      break;
    size_t n = strcspn(p, ", \t");
    char tok[128];
    if (n >= sizeof tok) {
      snprintf(why, whylen, "anthropic-beta: a value longer than %zu bytes", sizeof tok - 1);
      return 400;
    }
    memcpy(tok, p, n);
    tok[n] = '\0';
    for (size_t i = 0; i < n; i++)
      if (!(tok[i] >= 'a' && tok[i] <= 'z') && !(tok[i] >= '0' && tok[i] <= '9') && tok[i] != '-' &&
          tok[i] != '_' && tok[i] != '.') {
        char q[72];
        quote(tok, q, sizeof q);
        snprintf(why, whylen, "anthropic-beta: `%s` is not a beta name ([a-z0-9._-])", q);
        return 400;
      }
    p += n;
    const al_relay_beta *b = NULL;
    for (size_t i = 0; i < rs->n_betas && !b; i++)
      if (match(rs->betas[i].value, tok))
        b = &rs->betas[i];
    if (listed(extra, tok) || (b && (!b->feature || listed(allowed, b->feature)))) {
      append(out, outlen, tok, n);
    } else if (b) {
      snprintf(why, whylen,
               "anthropic-beta `%s` turns on `%s`, a feature the vendor runs for the agent "
               "(allow it with relay.allow: [%s])",
               tok, b->feature, b->feature);
      return 403;
    } else {
      append(dropped, droplen, tok, n);
    }
  }
  return 0;
}
