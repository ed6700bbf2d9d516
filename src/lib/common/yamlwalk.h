/* yamlwalk: one table-driven walker over libfyaml's document tree, for
 * every YAML file airlock reads (the policy, the broker's config, the
 * service's config).
 *
 * A mapping is described by a table of fields (al_yw_field): the key, the
 * type of its value, whether it is required, where the value goes (an
 * offset in the object being filled) and the rule's bounds. al_yw_walk()
 * walks one mapping node against its table and refuses, with
 * "FILE:LINE:COL: PATH: rule":
 *   - a key the table does not list ("unknown key (allowed here: ...)"),
 *   - a key given twice ("given twice"; libfyaml refuses most duplicates
 *     while parsing, the walker checks again),
 *   - a key without a value ("has no value"),
 *   - a value of the wrong type ("must be a mapping", "must be a list",
 *     "must be a number, not a quoted string", "must be true or false"),
 *   - a value out of range ("must be between 1 and 65535"), or not one of
 *     an enum's names,
 *   - with AL_YW_STRICT, any anchor, alias or tag (no billion laughs, no
 *     type games),
 *   - a required key that is missing ("required (doc)"),
 * and calls the field's `check` (or, for AL_YW_CUSTOM, `parse`) for the
 * rules a table cannot say. LINE:COL is the value's when it is a scalar,
 * else its key's; PATH is the dotted key path ("network.allow[2].port").
 *
 * The YAML spec followed is YAML 1.2.2 (https://yaml.org/spec/1.2.2/):
 * numbers are plain scalars in decimal; `"443"` is a string (§10.3.2). */
#ifndef AL_YAMLWALK_H
#define AL_YAMLWALK_H

#include "common/lazyfyaml.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

/* Walker flags (al_yw.flags). */
enum {
  AL_YW_STRICT = 1u << 0,  /* refuse anchors, aliases and tags anywhere */
  AL_YW_NO_CTRL = 1u << 1, /* refuse control characters (< 0x20, 0x7f) in every string */
};

/* One walk: the file's name for messages, where errors go, the document
 * (anchor lookups) and a pointer for the caller's callbacks. */
typedef struct al_yw {
  const char *name; /* "airlock.yaml", "<stdin>" */
  al_error *err;    /* filled on failure (code EINVAL); may be NULL */
  struct fy_document *doc;
  unsigned flags;        /* AL_YW_* */
  void *user;            /* the caller's, untouched by the walker */
  struct fy_parser *fyp; /* al_yw_open's, for al_yw_close */
  struct fy_diag *diag;
} al_yw;

/* Parse buf[0..len) (need not be NUL-terminated) as exactly one YAML
 * document into w->doc, for w->name and w->err set by the caller. Refused
 * with "FILE:LINE[:COL]: rule" and EINVAL: more than max bytes (EFBIG),
 * bytes that are not UTF-8 (YAML 1.2.2 §5.2; libfyaml 0.8 can loop
 * forever on some), a NUL byte, a syntax error (libfyaml's message, which
 * includes duplicate keys), a second document (`---`), and an empty
 * document (`empty` says what the file needs, "empty policy (at least
 * `version: 1`)"). On success release with al_yw_close(). */
int al_yw_open(al_yw *w, const char *buf, size_t len, size_t max, const char *empty);

/* Release what al_yw_open made; w->doc is NULL after it. Idempotent. */
void al_yw_close(al_yw *w);

/* A value being read: its key node (NULL at the document root and for a
 * list's elements), its value node and its dotted path ("" at the root,
 * "PATH[i]" for an element). */
typedef struct al_yw_kv {
  struct fy_node *key;
  struct fy_node *val;
  const char *path;
} al_yw_kv;

typedef enum al_yw_type {
  AL_YW_STR,      /* char * at off (the old value is freed); length min..max (0,0: up to 4096) */
  AL_YW_UINT,     /* plain decimal, no sign, no leading zero, min..max; `width` bytes at off */
  AL_YW_BOOL,     /* plain true or false; bool at off */
  AL_YW_ENUM,     /* one of `choices` (NULL-terminated); its index, `width` bytes at off */
  AL_YW_SIZE,     /* al_parse_size ("2GiB"), bytes min..max (max 0: no upper bound); uint64_t */
  AL_YW_DURATION, /* al_parse_duration_ms ("30s"; "0" when min is 0), ms min..max; uint64_t */
  AL_YW_MAP,      /* a mapping walked with `map`; its object is obj + off */
  AL_YW_LIST,     /* a sequence of `min`..`max` (0: 1024) elements, each read with `item`; see
                     below for where they go */
  AL_YW_CUSTOM,   /* `parse` reads the value, whatever its shape */
} al_yw_type;

/* Field flags. */
enum {
  AL_YW_REQUIRED = 1u << 0, /* the key must be present: "PATH: required (doc)" */
  AL_YW_QUOTED = 1u << 1,   /* AL_YW_UINT: a quoted number ("12345") is accepted too */
  AL_YW_INLINE = 1u << 2,   /* AL_YW_LIST: the array is inline at off with room for `max` */
};

typedef struct al_yw_field al_yw_field;
typedef struct al_yw_map al_yw_map;

/* A field's own rule, after the walker stored the value (`obj` is the
 * object the field belongs to), or for AL_YW_CUSTOM the whole reading of
 * the value. Returns 0, or -1 with w->err filled (al_yw_fail). */
typedef int (*al_yw_fn)(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj);

/* One key of a mapping.
 *
 * AL_YW_LIST: the elements are `item_size` bytes each, in an array the
 * walker allocates (calloc, the sequence's length) and stores as a pointer
 * at off, or, with AL_YW_INLINE, in the array at off itself; the count
 * (size_t) is at off_n and is bumped before an element is read, so a half-
 * read element is there for the owner's free. Each element is read with
 * `item` (a field whose off is relative to the element, key unused); then
 * `check` runs with kv naming the element ("repositories[3]") and obj the
 * object holding the list (the element is the last of the array). */
struct al_yw_field {
  const char *key;
  al_yw_type type;
  unsigned flags;             /* AL_YW_REQUIRED, AL_YW_QUOTED, AL_YW_INLINE */
  size_t off;                 /* where the value goes, from the start of obj */
  size_t off_n;               /* AL_YW_LIST: the size_t count */
  unsigned width;             /* AL_YW_UINT, AL_YW_ENUM: 1, 2, 4 or 8 bytes (0: 8) */
  uint64_t min, max;          /* bounds, in the type's unit (see al_yw_type) */
  const char *const *choices; /* AL_YW_ENUM */
  const al_yw_map *map;       /* AL_YW_MAP */
  const al_yw_field *item;    /* AL_YW_LIST */
  size_t item_size;           /* AL_YW_LIST */
  al_yw_fn check;             /* extra rule after storing (any type), or NULL */
  al_yw_fn parse;             /* AL_YW_CUSTOM */
  const char *rule;  /* replaces the range / choice message ("only version 1 is understood") */
  const char *def;   /* default as the file would write it (al_yw_defaults), or NULL */
  const char *shape; /* the type's name in al_yw_doc ("path", "ADDR:PORT"), or NULL */
  const char *doc;   /* one line for the docs and the "required" message */
};

/* A mapping's table. `done` (may be NULL) runs after every key was read,
 * with kv naming the mapping and seen[i] true for the fields present: for
 * rules across keys ("set exactly one of `id` and `client_id`"). */
struct al_yw_map {
  const al_yw_field *fields;
  size_t n;
  int (*done)(al_yw *w, const al_yw_kv *kv, void *obj, const bool *seen);
};

#define AL_YW_MAX_FIELDS 64 /* fields of one table */
#define AL_YW_MAX_LIST 1024 /* elements of one list when the field sets no max */
#define AL_YW_MAX_STR 4096  /* bytes of one string when the field sets no max */

/* Walk the mapping kv->val against `map`, filling obj. Every rule listed
 * at the top of this file; errors "FILE:LINE:COL: PATH: rule" with code
 * EINVAL (ENOMEM is not possible: allocation failure aborts, al_xmalloc).
 * What was stored before an error stays in obj for its owner to free. */
int al_yw_walk(al_yw *w, const al_yw_kv *kv, const al_yw_map *map, void *obj);

/* Read one value kv->val with field f into obj (the object f belongs to):
 * what al_yw_walk does for each key, for callers that pick the field
 * themselves. Errors as al_yw_walk. */
int al_yw_value(al_yw *w, const al_yw_field *f, const al_yw_kv *kv, void *obj);

/* A mapping whose keys are names the caller checks (permissions, secrets),
 * not a fixed table: fn runs for each pair with the name (NUL-free, at most
 * AL_YW_MAX_STR bytes), its key node (for positions) and the value's kv
 * (path "PATH.name", the name cut at 64 bytes). Refused before fn: what
 * al_yw_plain refuses, a value that is not a mapping ("must be a mapping
 * of <what>", or "must be a mapping" when what is NULL), more than max
 * pairs, a key that is not a string, and a name given twice. */
typedef int (*al_yw_each_fn)(al_yw *w, const char *name, struct fy_node *key, const al_yw_kv *val,
                             void *obj);
int al_yw_each(al_yw *w, const al_yw_kv *kv, const char *what, size_t max, al_yw_each_fn fn,
               void *obj);

/* The field of `map` named key (klen bytes), or NULL. */
const al_yw_field *al_yw_find(const al_yw_map *map, const char *key, size_t klen);

/* Apply every field's `def` text to obj, as if the file had written it
 * (no positions in messages); recurses into AL_YW_MAP fields. Returns 0,
 * or -1 for a table whose default breaks its own rule. */
int al_yw_defaults(al_yw *w, const al_yw_map *map, void *obj);

/* Free what the walker stored in obj for `map`: AL_YW_STR strings,
 * AL_YW_LIST arrays and their elements, AL_YW_MAP objects (recursively).
 * AL_YW_CUSTOM values are the owner's to free. Pointers are reset. */
void al_yw_free(const al_yw_map *map, void *obj);

/* Print the table as Markdown rows "| `key` | type | default | doc |",
 * with sub-tables' keys as "prefix.key". */
void al_yw_doc(FILE *out, const al_yw_map *map, const char *prefix);

/* ---- building blocks for `check` and `parse` callbacks ---- */

/* Fill w->err with "FILE:LINE:COL: PATH: rule" (at the position of node
 * `at`; "FILE: PATH: rule" when it has none) and code EINVAL. Returns -1. */
int al_yw_fail(al_yw *w, struct fy_node *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* al_yw_fail() is always -1; say so where the static analyzer can see it. */
#define al_yw_fail(...) (al_yw_fail(__VA_ARGS__), -1)

/* The same text, returned (malloc'd) instead of raised: for warnings. */
char *al_yw_message(al_yw *w, struct fy_node *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The node messages about kv point at: its value when that is a scalar,
 * else its key (mappings and sequences carry no token of their own). */
struct fy_node *al_yw_at(const al_yw_kv *kv);

/* 1-based line and column of a scalar node's token; 0, 0 when none. */
void al_yw_pos(struct fy_node *n, int *line, int *col);

/* Refuse anchors, aliases and tags on n when the walk is AL_YW_STRICT
 * (`at`: where to point when n has no token). Returns 0 or -1. */
int al_yw_plain(al_yw *w, struct fy_node *n, struct fy_node *at, const char *path);

/* A scalar's text (malloc'd into *out; the old *out is freed): no NUL, at
 * most AL_YW_MAX_STR bytes, no control character under AL_YW_NO_CTRL. */
int al_yw_str(al_yw *w, const al_yw_kv *kv, char **out);

/* A plain decimal whole number in min..max. `quoted`: accept "123" too. */
int al_yw_uint(al_yw *w, const al_yw_kv *kv, uint64_t min, uint64_t max, bool quoted,
               uint64_t *out);

/* Check kv->val is a sequence of at most max elements; *count is its length. */
int al_yw_seq(al_yw *w, const al_yw_kv *kv, size_t max, size_t *count);

/* Iterate a sequence: *item gets the next element's kv (path written into
 * buf, "PATH[i]"), returns false at the end. *it starts NULL, *i at 0
 * and *item zeroed. */
bool al_yw_next(const al_yw_kv *seq, void **it, size_t *i, al_yw_kv *item, char *buf,
                size_t buflen);

#endif
