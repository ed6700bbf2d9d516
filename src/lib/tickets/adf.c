/* Atlassian Document Format, flattened and built. See adf.h. */
#include "tickets/adf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

typedef struct flat {
  char *buf;
  size_t len, cap;
  size_t nodes;
  bool over;
} flat;

static void put(flat *f, const char *s, size_t n)
{
  if (f->over || n == 0)
    return;
  if (f->len + n > AL_ADF_TEXT_MAX) {
    f->over = true;
    return;
  }
  if (f->len + n + 1 > f->cap) {
    size_t cap = f->cap ? f->cap : 256;
    while (cap < f->len + n + 1)
      cap *= 2;
    char *nb = realloc(f->buf, cap);
    if (!nb)
      abort();
    f->buf = nb;
    f->cap = cap;
  }
  memcpy(f->buf + f->len, s, n);
  f->len += n;
  f->buf[f->len] = '\0';
}

static void puts_(flat *f, const char *s)
{
  put(f, s, strlen(s));
}

/* End the current block: a blank line after text, nothing at the start. */
static void block_break(flat *f)
{
  if (f->len == 0 || (f->len >= 2 && memcmp(f->buf + f->len - 2, "- ", 2) == 0))
    return; /* at the start, or right after a list item's dash */
  if (f->buf[f->len - 1] != '\n')
    puts_(f, "\n");
  if (f->len < 2 || f->buf[f->len - 2] != '\n')
    puts_(f, "\n");
}

static bool is_block(const char *type)
{
  static const char *const blocks[] = {"paragraph",    "heading",     "blockquote", "codeBlock",
                                       "panel",        "rule",        "table",      "tableRow",
                                       "mediaGroup",   "mediaSingle", "expand",     "nestedExpand",
                                       "decisionList", "taskList"};
  for (size_t i = 0; i < AL_ARRAY_SIZE(blocks); i++)
    if (strcmp(type, blocks[i]) == 0)
      return true;
  return false;
}

static int walk(flat *f, const json_t *node, unsigned depth, al_error *err);

static int walk_content(flat *f, const json_t *node, unsigned depth, al_error *err)
{
  const json_t *content = json_object_get(node, "content");
  if (!content)
    return 0;
  if (!json_is_array(content))
    return al_error_set(err, EINVAL, "ADF: `content` must be an array");
  size_t i;
  const json_t *child;
  json_array_foreach(content, i, child)
  {
    if (walk(f, child, depth + 1, err) < 0)
      return -1;
  }
  return 0;
}

static const char *attr_text(const json_t *node, const char *name)
{
  const json_t *attrs = json_object_get(node, "attrs");
  const json_t *v = json_is_object(attrs) ? json_object_get(attrs, name) : NULL;
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static int walk(flat *f, const json_t *node, unsigned depth, al_error *err)
{
  if (depth > AL_ADF_DEPTH_MAX)
    return al_error_set(err, EINVAL, "ADF: nested deeper than %d", AL_ADF_DEPTH_MAX);
  if (++f->nodes > AL_ADF_NODES_MAX)
    return al_error_set(err, EINVAL, "ADF: more than %d nodes", AL_ADF_NODES_MAX);
  if (!json_is_object(node))
    return al_error_set(err, EINVAL, "ADF: a node must be an object");
  const json_t *jt = json_object_get(node, "type");
  if (!json_is_string(jt))
    return al_error_set(err, EINVAL, "ADF: a node's `type` must be a string");
  const char *type = json_string_value(jt);
  if (strcmp(type, "text") == 0) {
    const json_t *t = json_object_get(node, "text");
    if (!json_is_string(t))
      return al_error_set(err, EINVAL, "ADF: a text node's `text` must be a string");
    put(f, json_string_value(t), json_string_length(t));
  } else if (strcmp(type, "hardBreak") == 0) {
    puts_(f, "\n");
  } else if (strcmp(type, "mention") == 0 || strcmp(type, "emoji") == 0 ||
             strcmp(type, "status") == 0 || strcmp(type, "date") == 0) {
    const char *s = attr_text(node, "text");
    puts_(f, s ? s : "");
  } else if (strcmp(type, "inlineCard") == 0 || strcmp(type, "blockCard") == 0) {
    const char *s = attr_text(node, "url");
    puts_(f, s ? s : "");
  } else if (strcmp(type, "listItem") == 0 || strcmp(type, "taskItem") == 0) {
    if (f->len && f->buf[f->len - 1] != '\n')
      puts_(f, "\n");
    puts_(f, "- ");
    if (walk_content(f, node, depth, err) < 0)
      return -1;
    if (f->len && f->buf[f->len - 1] != '\n')
      puts_(f, "\n");
  } else {
    bool block =
        is_block(type) || strcmp(type, "bulletList") == 0 || strcmp(type, "orderedList") == 0;
    if (block)
      block_break(f);
    if (walk_content(f, node, depth, err) < 0)
      return -1;
    if (block)
      block_break(f);
  }
  if (f->over)
    return al_error_set(err, EFBIG, "ADF: text longer than %d bytes", AL_ADF_TEXT_MAX);
  return 0;
}

int al_adf_to_text(const json_t *doc, char **out, al_error *err)
{
  *out = NULL;
  flat f = {0};
  if (!doc || json_is_null(doc)) {
    *out = al_xstrdup("");
    return 0;
  }
  const json_t *t = json_is_object(doc) ? json_object_get(doc, "type") : NULL;
  if (!json_is_string(t) || strcmp(json_string_value(t), "doc") != 0)
    return al_error_set(err, EINVAL, "ADF: the document must be an object with \"type\": \"doc\"");
  f.nodes = 0;
  if (walk_content(&f, doc, 0, err) < 0) {
    free(f.buf);
    return -1;
  }
  /* no trailing blank lines */
  while (f.len && f.buf[f.len - 1] == '\n')
    f.buf[--f.len] = '\0';
  *out = f.buf ? f.buf : al_xstrdup("");
  return 0;
}

static json_t *text_node(const char *s, size_t n)
{
  return json_pack("{s:s, s:s%}", "type", "text", "text", s, n);
}

json_t *al_adf_from_text(const char *text)
{
  json_t *content = json_array();
  json_t *para = NULL;
  const char *p = text ? text : "";
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n == 0) {
      para = NULL; /* a blank line ends the paragraph */
    } else {
      if (!para) {
        para = json_pack("{s:s, s:[]}", "type", "paragraph", "content");
        json_array_append_new(content, para);
      } else {
        json_array_append_new(json_object_get(para, "content"),
                              json_pack("{s:s}", "type", "hardBreak"));
      }
      json_array_append_new(json_object_get(para, "content"), text_node(p, n));
    }
    p += n + (nl ? 1 : 0);
  }
  return json_pack("{s:i, s:s, s:o}", "version", 1, "type", "doc", "content", content);
}
