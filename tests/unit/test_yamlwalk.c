/* Unit tests of the table-driven YAML walker (src/lib/common/yamlwalk.c):
 * each rule with a document that breaks it (the message names file, line,
 * column, key path and rule) and one that keeps it (the control). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "common/yamlwalk.h"

struct item {
  char *name;
  uint64_t n;
};

struct obj {
  uint32_t version;
  char *s;
  uint32_t u;
  bool b;
  int e;
  uint64_t size;
  uint64_t dur;
  struct {
    uint16_t port;
    char *host;
  } sub;
  char **names;
  size_t n_names;
  struct item items[2];
  size_t n_items;
  struct item *dyn;
  size_t n_dyn;
  int custom_calls;
  bool done_ran;
};

#define O(f) offsetof(struct obj, f)

static int name_check(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  const struct obj *o = obj;
  if (strcmp(o->names[o->n_names - 1], "bad") == 0)
    return al_yw_fail(w, al_yw_at(kv), kv->path, "`bad` is not a name");
  return 0;
}

static int custom_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  struct obj *o = obj;
  uint64_t v;
  if (al_yw_uint(w, kv, 0, 9, false, &v) < 0)
    return -1;
  o->custom_calls++;
  return 0;
}

/* al_yw_each: names the caller checks; here, any but `bad`, counted. */
static int each_pair(al_yw *w, const char *name, struct fy_node *key, const al_yw_kv *val,
                     void *obj)
{
  struct obj *o = obj;
  if (strcmp(name, "bad") == 0)
    return al_yw_fail(w, key, val->path, "`bad` is not a name");
  char *s = NULL;
  if (al_yw_str(w, val, &s) < 0)
    return -1;
  free(s);
  o->custom_calls++;
  return 0;
}

static int each_parse(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj)
{
  (void)f;
  return al_yw_each(w, kv, "NAME: text", 2, each_pair, obj);
}

static int sub_done(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen)
{
  (void)obj;
  if (seen[1] && !seen[0])
    return al_yw_fail(w, kv->key, kv->path, "host needs port");
  return 0;
}

static const char *const letters[] = {"a", "b", "c", NULL};

static const al_yw_field sub_fields[] = {
    {.key = "port",
     .type = AL_YW_UINT,
     .off = offsetof(struct obj, sub.port) - O(sub),
     .width = 2,
     .min = 1,
     .max = 65535},
    {.key = "host", .type = AL_YW_STR, .off = offsetof(struct obj, sub.host) - O(sub)},
};
static const al_yw_map sub_map = {sub_fields, 2, sub_done};

static const al_yw_field item_fields[] = {
    {.key = "name",
     .type = AL_YW_STR,
     .flags = AL_YW_REQUIRED,
     .off = offsetof(struct item, name),
     .doc = "the item's name"},
    {.key = "n", .type = AL_YW_UINT, .off = offsetof(struct item, n), .max = 5},
};
static const al_yw_map item_map = {item_fields, 2, NULL};
static const al_yw_field item_item = {.type = AL_YW_MAP, .map = &item_map};
static const al_yw_field str_item = {.type = AL_YW_STR};

static const al_yw_field top_fields[] = {
    {.key = "version",
     .type = AL_YW_UINT,
     .flags = AL_YW_REQUIRED,
     .off = O(version),
     .width = 4,
     .min = 1,
     .max = 1,
     .rule = "only version 1",
     .doc = "write `version: 1`"},
    {.key = "s", .type = AL_YW_STR, .off = O(s), .min = 1, .max = 8, .def = "dflt"},
    {.key = "u", .type = AL_YW_UINT, .off = O(u), .width = 4, .min = 1, .max = 100, .def = "7"},
    {.key = "b", .type = AL_YW_BOOL, .off = O(b), .def = "true"},
    {.key = "e",
     .type = AL_YW_ENUM,
     .off = O(e),
     .width = sizeof(int),
     .choices = letters,
     .def = "b"},
    {.key = "size", .type = AL_YW_SIZE, .off = O(size), .min = 1024, .max = 1 << 20},
    {.key = "dur", .type = AL_YW_DURATION, .off = O(dur), .min = 1000, .max = 60000},
    {.key = "sub", .type = AL_YW_MAP, .off = O(sub), .map = &sub_map},
    {.key = "names",
     .type = AL_YW_LIST,
     .off = O(names),
     .off_n = O(n_names),
     .max = 3,
     .item = &str_item,
     .item_size = sizeof(char *),
     .check = name_check},
    {.key = "items",
     .type = AL_YW_LIST,
     .flags = AL_YW_INLINE,
     .off = O(items),
     .off_n = O(n_items),
     .max = 2,
     .item = &item_item,
     .item_size = sizeof(struct item)},
    {.key = "dyn",
     .type = AL_YW_LIST,
     .off = O(dyn),
     .off_n = O(n_dyn),
     .min = 1,
     .item = &item_item,
     .item_size = sizeof(struct item)},
    {.key = "custom", .type = AL_YW_CUSTOM, .parse = custom_parse},
    {.key = "each", .type = AL_YW_CUSTOM, .parse = each_parse},
};
static const al_yw_map top_map = {top_fields, AL_ARRAY_SIZE(top_fields), NULL};

/* Parse text (duplicate keys let through, so the walker's own check is
 * what refuses them) and walk it; the message, if any, into msg. */
static int walk_text(const char *text, unsigned flags, struct obj *o, char *msg, size_t n)
{
  struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_ALLOW_DUPLICATE_KEYS};
  struct fy_document *doc = fy_document_build_from_string(&cfg, text, strlen(text));
  assert_non_null(doc);
  al_error err = {0};
  al_yw w = {.name = "t.yaml", .err = &err, .doc = doc, .flags = flags};
  memset(o, 0, sizeof *o);
  int r = al_yw_defaults(&w, &top_map, o);
  assert_int_equal(r, 0);
  al_yw_kv kv = {NULL, fy_document_root(doc), ""};
  r = al_yw_walk(&w, &kv, &top_map, o);
  snprintf(msg, n, "%s", r < 0 ? err.msg : "");
  if (r < 0)
    assert_int_equal(err.code, EINVAL);
  fy_document_destroy(doc);
  return r;
}

static void obj_free(struct obj *o)
{
  al_yw_free(&top_map, o);
}

/* A failing document's message, checked, and the object freed. */
static void refuses(const char *text, unsigned flags, const char *want)
{
  struct obj o;
  char msg[1024];
  int r = walk_text(text, flags, &o, msg, sizeof msg);
  if (r == 0 || !strstr(msg, want))
    fail_msg("document:\n%s\nwanted /%s/, got rc %d /%s/", text, want, r, msg);
  obj_free(&o);
}

static void accepts(const char *text, unsigned flags)
{
  struct obj o;
  char msg[1024];
  if (walk_text(text, flags, &o, msg, sizeof msg) != 0)
    fail_msg("document:\n%s\nrefused: %s", text, msg);
  obj_free(&o);
}

static void test_values_stored(void **state)
{
  (void)state;
  struct obj o;
  char msg[1024];
  int r = walk_text("version: 1\ns: hello\nu: 100\nb: false\ne: c\nsize: 2KiB\ndur: 1m\n"
                    "sub: {port: 443, host: h}\nnames: [x, y]\n"
                    "items: [{name: i0, n: 5}, {name: i1}]\ndyn: [{name: d}]\ncustom: 3\n",
                    0, &o, msg, sizeof msg);
  assert_int_equal(r, 0);
  assert_int_equal(o.version, 1);
  assert_string_equal(o.s, "hello");
  assert_int_equal(o.u, 100);
  assert_false(o.b);
  assert_int_equal(o.e, 2);
  assert_int_equal(o.size, 2048);
  assert_int_equal(o.dur, 60000);
  assert_int_equal(o.sub.port, 443);
  assert_string_equal(o.sub.host, "h");
  assert_int_equal(o.n_names, 2);
  assert_string_equal(o.names[1], "y");
  assert_int_equal(o.n_items, 2);
  assert_string_equal(o.items[0].name, "i0");
  assert_int_equal(o.items[0].n, 5);
  assert_int_equal(o.n_dyn, 1);
  assert_string_equal(o.dyn[0].name, "d");
  assert_int_equal(o.custom_calls, 1);
  obj_free(&o);
  assert_null(o.s);
  assert_null(o.names);
  assert_int_equal(o.n_items, 0);
}

static void test_defaults(void **state)
{
  (void)state;
  struct obj o;
  char msg[1024];
  assert_int_equal(walk_text("version: 1\n", 0, &o, msg, sizeof msg), 0);
  assert_string_equal(o.s, "dflt");
  assert_int_equal(o.u, 7);
  assert_true(o.b);
  assert_int_equal(o.e, 1);
  obj_free(&o);
}

static void test_unknown_key(void **state)
{
  (void)state;
  refuses("version: 1\ncolour: red\n", 0,
          "t.yaml:2:1: colour: unknown key (allowed here: version, s, u, b, e, size");
  refuses("version: 1\nsub: {port: 1, hots: x}\n", 0, "t.yaml:2:16: sub.hots: unknown key");
  accepts("version: 1\nsub: {port: 1, host: x}\n", 0);
}

static void test_duplicate_key(void **state)
{
  (void)state;
  refuses("version: 1\nu: 3\nu: 4\n", 0, "t.yaml:3:1: u: given twice");
  refuses("version: 1\nsub: {port: 1, port: 2}\n", 0, "t.yaml:2:16: sub.port: given twice");
  accepts("version: 1\nu: 3\n", 0);
}

static void test_no_value(void **state)
{
  (void)state;
  refuses("version: 1\ns:\n", 0, "t.yaml:2:1: s: has no value");
  accepts("version: 1\ns: x\n", 0);
}

static void test_keys_are_strings(void **state)
{
  (void)state;
  refuses("version: 1\n[a]: x\n", 0, "keys must be strings");
  refuses("[1, 2]\n", 0, "t.yaml:1:2: (document): must be a mapping");
}

static void test_types(void **state)
{
  (void)state;
  refuses("version: 1\ns: {a: b}\n", 0, "t.yaml:2:1: s: must be a string");
  refuses("version: 1\nsub: 5\n", 0, "t.yaml:2:6: sub: must be a mapping");
  refuses("version: 1\nnames: x\n", 0, "t.yaml:2:8: names: must be a list");
  refuses("version: 1\nu: \"5\"\n", 0, "t.yaml:2:5: u: must be a number, not a quoted string");
  refuses("version: 1\nu: 05\n", 0,
          "u: must be a whole number in decimal (no sign, no leading "
          "zero), got `05`");
  refuses("version: 1\nu: -5\n", 0, "got `-5`");
  refuses("version: 1\nb: yes\n", 0, "t.yaml:2:4: b: must be true or false, got `yes`");
  refuses("version: 1\nb: 'true'\n", 0, "b: must be true or false, not a quoted string");
  accepts("version: 1\ns: '5'\nu: 5\nb: true\nsub: {}\nnames: []\n", 0);
}

static void test_ranges(void **state)
{
  (void)state;
  refuses("version: 1\nu: 0\n", 0, "t.yaml:2:4: u: must be between 1 and 100");
  refuses("version: 1\nu: 101\n", 0, "u: must be between 1 and 100");
  refuses("version: 2\n", 0, "t.yaml:1:10: version: only version 1, got `2`");
  refuses("version: 1\nsub: {port: 65536}\n", 0, "sub.port: must be between 1 and 65535");
  refuses("version: 1\ns: ''\n", 0, "s: must not be empty");
  refuses("version: 1\ns: ninechars\n", 0, "s: longer than 8 bytes");
  refuses("version: 1\nsize: 1000\n", 0, "size: must be at least 1024 bytes");
  refuses("version: 1\nsize: 2MiB\n", 0, "size: must be at most 1MiB");
  refuses("version: 1\nsize: 2XB\n", 0, "size: ");
  refuses("version: 1\ndur: 500ms\n", 0, "dur: must be between 1s and 1m, got `500ms`");
  refuses("version: 1\ndur: 60\n", 0, "dur: a duration needs a unit");
  refuses("version: 1\nitems: [{name: a, n: 6}]\n", 0, "items[0].n: must be between 0 and 5");
  accepts("version: 1\nu: 1\nsize: 1KiB\ndur: 1s\ns: eightchr\nsub: {port: 65535}\n", 0);
  accepts("version: 1\nu: 100\nsize: 1MiB\ndur: 60s\n", 0);
}

static void test_enum(void **state)
{
  (void)state;
  refuses("version: 1\ne: d\n", 0, "t.yaml:2:4: e: must be one of `a`, `b` or `c`, got `d`");
  accepts("version: 1\ne: a\n", 0);
}

static void test_required(void **state)
{
  (void)state;
  refuses("u: 3\n", 0, "t.yaml:1:1: version: required (write `version: 1`)");
  refuses("version: 1\nitems: [{n: 1}]\n", 0,
          "t.yaml:2:10: items[0].name: required (the item's name)");
  accepts("version: 1\nitems: [{name: a}]\n", 0);
}

static void test_lists(void **state)
{
  (void)state;
  refuses("version: 1\nnames: [a, b, c, d]\n", 0, "t.yaml:2:1: names: more than 3 entries");
  refuses("version: 1\nnames: [a, bad]\n", 0, "t.yaml:2:12: names[1]: `bad` is not a name");
  refuses("version: 1\nitems: [{name: a}, {name: b}, {name: c}]\n", 0, "more than 2 entries");
  refuses("version: 1\ndyn: []\n", 0, "t.yaml:2:1: dyn: needs at least 1 entry");
  refuses("version: 1\nnames: [[x]]\n", 0, "names[0]: must be a string");
  accepts("version: 1\nnames: [a, b, c]\nitems: [{name: a}, {name: b}]\ndyn: [{name: a}]\n", 0);
}

static void test_done_hook(void **state)
{
  (void)state;
  refuses("version: 1\nsub: {host: x}\n", 0, "t.yaml:2:1: sub: host needs port");
  accepts("version: 1\nsub: {port: 1, host: x}\n", 0);
}

static void test_custom(void **state)
{
  (void)state;
  refuses("version: 1\ncustom: 10\n", 0, "t.yaml:2:9: custom: must be between 0 and 9");
  accepts("version: 1\ncustom: 9\n", 0);
}

static void test_each(void **state)
{
  (void)state;
  refuses("version: 1\neach: [a]\n", 0, "t.yaml:2:1: each: must be a mapping of NAME: text");
  refuses("version: 1\neach: {a: x, a: y}\n", 0, "t.yaml:2:14: each.a: given twice");
  refuses("version: 1\neach: {a: x, b: y, c: z}\n", 0, "each: more than 2 entries");
  refuses("version: 1\neach: {bad: x}\n", 0, "t.yaml:2:8: each.bad: `bad` is not a name");
  refuses("version: 1\neach: {a: [x]}\n", 0, "each.a: must be a string");
  struct obj o;
  char msg[1024];
  assert_int_equal(walk_text("version: 1\neach: {a: x, b: y}\n", 0, &o, msg, sizeof msg), 0);
  assert_int_equal(o.custom_calls, 2);
  obj_free(&o);
}

static void test_strict(void **state)
{
  (void)state;
  const char *anchor = "version: 1\nsub: &a {port: 1}\n";
  const char *alias = "version: 1\ns: &x abc\nsub: {host: *x}\n";
  const char *tag = "version: 1\ns: !!str abc\n";
  refuses(anchor, AL_YW_STRICT, "t.yaml:2:1: sub: anchors and aliases are not allowed here");
  refuses(alias, AL_YW_STRICT, "anchors and aliases are not allowed here");
  refuses(tag, AL_YW_STRICT, "t.yaml:2:10: s: tags are not allowed here");
  /* the control: the same documents without the flag */
  accepts(anchor, 0);
  accepts(tag, 0);
  accepts("version: 1\ns: abc\n", AL_YW_STRICT);
}

static void test_no_ctrl(void **state)
{
  (void)state;
  const char *ctl = "version: 1\ns: \"a\\tb\"\n";
  refuses(ctl, AL_YW_NO_CTRL, "t.yaml:2:5: s: contains a control character");
  accepts(ctl, 0);
}

static void test_doc(void **state)
{
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  al_yw_doc(f, &top_map, "");
  fclose(f);
  assert_non_null(strstr(buf, "| `version` | number | required | write `version: 1` |"));
  assert_non_null(strstr(buf, "| `sub.port` | number | — |"));
  assert_non_null(strstr(buf, "| `e` | enum: a|b|c | b |"));
  free(buf);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values_stored), cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_unknown_key),   cmocka_unit_test(test_duplicate_key),
      cmocka_unit_test(test_no_value),      cmocka_unit_test(test_keys_are_strings),
      cmocka_unit_test(test_types),         cmocka_unit_test(test_ranges),
      cmocka_unit_test(test_enum),          cmocka_unit_test(test_required),
      cmocka_unit_test(test_lists),         cmocka_unit_test(test_done_hook),
      cmocka_unit_test(test_custom),        cmocka_unit_test(test_each),
      cmocka_unit_test(test_strict),        cmocka_unit_test(test_no_ctrl),
      cmocka_unit_test(test_doc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
