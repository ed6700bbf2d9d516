/* jansson (JSON: records, the broker's protocol, the probes' reports) for
 * the core binary, opened on first use (common/lazylib.h says why and how):
 * `airlock run -- CMD` writes no JSON.
 *
 * Unlike c-ares and libfyaml, the call sites keep including <jansson.h>:
 * this file defines, under jansson's own names, the functions airlock calls
 * (and those <jansson.h>'s inline helpers and iteration macros call), each
 * forwarding to the library's function through a pointer of that function's
 * type. Every definition is checked by the compiler against the prototype
 * in <jansson.h> (a mismatch is "conflicting types"). A jansson function
 * not defined here is a link error, never a silent direct call: the core
 * binary does not link libjansson.
 *
 * Why same-name definitions are safe here: libjansson.so.4 calls none of
 * its own exported functions through its PLT (no JUMP_SLOT or GLOB_DAT
 * relocation against a json_* symbol: `readelf -rW`), so these definitions
 * never stand in for jansson's internal calls; and each pointer comes from
 * dlsym(3) on the library's own handle, which searches that library and
 * its dependencies, never this executable (load() checks it). */
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/lazylib.h"

#define AL_JANSSON_SONAME "libjansson.so.4"

#define AL_JANSSON_FUNCS(X)                                                                        \
  X(json_object)                                                                                   \
  X(json_array)                                                                                    \
  X(json_string)                                                                                   \
  X(json_stringn)                                                                                  \
  X(json_integer)                                                                                  \
  X(json_real)                                                                                     \
  X(json_true)                                                                                     \
  X(json_false)                                                                                    \
  X(json_null)                                                                                     \
  X(json_delete)                                                                                   \
  X(json_object_size)                                                                              \
  X(json_object_get)                                                                               \
  X(json_object_set_new)                                                                           \
  X(json_object_setn_new)                                                                          \
  X(json_object_set_new_nocheck)                                                                   \
  X(json_object_setn_new_nocheck)                                                                  \
  X(json_object_del)                                                                               \
  X(json_object_update)                                                                            \
  X(json_object_update_existing)                                                                   \
  X(json_object_update_missing)                                                                    \
  X(json_object_iter)                                                                              \
  X(json_object_iter_at)                                                                           \
  X(json_object_key_to_iter)                                                                       \
  X(json_object_iter_next)                                                                         \
  X(json_object_iter_key)                                                                          \
  X(json_object_iter_key_len)                                                                      \
  X(json_object_iter_value)                                                                        \
  X(json_object_iter_set_new)                                                                      \
  X(json_array_size)                                                                               \
  X(json_array_get)                                                                                \
  X(json_array_set_new)                                                                            \
  X(json_array_append_new)                                                                         \
  X(json_array_insert_new)                                                                         \
  X(json_array_remove)                                                                             \
  X(json_array_clear)                                                                              \
  X(json_string_value)                                                                             \
  X(json_string_length)                                                                            \
  X(json_integer_value)                                                                            \
  X(json_real_value)                                                                               \
  X(json_number_value)                                                                             \
  X(json_equal)                                                                                    \
  X(json_vpack_ex)                                                                                 \
  X(json_vunpack_ex)                                                                               \
  X(json_vsprintf)                                                                                 \
  X(json_loads)                                                                                    \
  X(json_loadb)                                                                                    \
  X(json_load_file)                                                                                \
  X(json_dumps)                                                                                    \
  X(json_dumpf)

/* One pointer per function, of the function's own type. */
static struct {
/* NOLINTNEXTLINE(bugprone-macro-parentheses): f is a name, declared as a member */
#define AL_JANSSON_FIELD(f) __typeof__(&(f)) f;
  AL_JANSSON_FUNCS(AL_JANSSON_FIELD)
#undef AL_JANSSON_FIELD
} g_api;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
  void *h = al_lazylib_open(AL_JANSSON_SONAME, "jansson, the JSON library");
/* NOLINTNEXTLINE(bugprone-macro-parentheses): f is a name, the member of the same name */
#define AL_JANSSON_LOAD(f)                                                                         \
  g_api.f = (__typeof__(&(f)))al_lazylib_sym(h, AL_JANSSON_SONAME, #f);                            \
  if ((void *)g_api.f == (void *)&(f)) {                                                           \
    fprintf(stderr, "airlock: %s resolved %s to airlock's own forwarder\n", AL_JANSSON_SONAME,     \
            #f);                                                                                   \
    abort();                                                                                       \
  }
  AL_JANSSON_FUNCS(AL_JANSSON_LOAD)
#undef AL_JANSSON_LOAD
  // cppcheck-suppress resourceLeak ; the library stays loaded until exit, on purpose
}

#define API() (pthread_once(&g_once, load), &g_api)

/* Value constructors (jansson "Value"/"Object"/"Array" API pages). */
json_t *json_object(void)
{
  return API()->json_object();
}
json_t *json_array(void)
{
  return API()->json_array();
}
json_t *json_string(const char *value)
{
  return API()->json_string(value);
}
json_t *json_stringn(const char *value, size_t len)
{
  return API()->json_stringn(value, len);
}
json_t *json_integer(json_int_t value)
{
  return API()->json_integer(value);
}
json_t *json_real(double value)
{
  return API()->json_real(value);
}
json_t *json_true(void)
{
  return API()->json_true();
}
json_t *json_false(void)
{
  return API()->json_false();
}
json_t *json_null(void)
{
  return API()->json_null();
}
void json_delete(json_t *json)
{
  API()->json_delete(json);
}

/* Objects. */
size_t json_object_size(const json_t *object)
{
  return API()->json_object_size(object);
}
json_t *json_object_get(const json_t *object, const char *key)
{
  return API()->json_object_get(object, key);
}
int json_object_set_new(json_t *object, const char *key, json_t *value)
{
  return API()->json_object_set_new(object, key, value);
}
int json_object_setn_new(json_t *object, const char *key, size_t key_len, json_t *value)
{
  return API()->json_object_setn_new(object, key, key_len, value);
}
int json_object_set_new_nocheck(json_t *object, const char *key, json_t *value)
{
  return API()->json_object_set_new_nocheck(object, key, value);
}
int json_object_setn_new_nocheck(json_t *object, const char *key, size_t key_len, json_t *value)
{
  return API()->json_object_setn_new_nocheck(object, key, key_len, value);
}
int json_object_del(json_t *object, const char *key)
{
  return API()->json_object_del(object, key);
}
int json_object_update(json_t *object, json_t *other)
{
  return API()->json_object_update(object, other);
}
int json_object_update_existing(json_t *object, json_t *other)
{
  return API()->json_object_update_existing(object, other);
}
int json_object_update_missing(json_t *object, json_t *other)
{
  return API()->json_object_update_missing(object, other);
}
void *json_object_iter(json_t *object)
{
  return API()->json_object_iter(object);
}
void *json_object_iter_at(json_t *object, const char *key)
{
  return API()->json_object_iter_at(object, key);
}
void *json_object_key_to_iter(const char *key)
{
  return API()->json_object_key_to_iter(key);
}
void *json_object_iter_next(json_t *object, void *iter)
{
  return API()->json_object_iter_next(object, iter);
}
const char *json_object_iter_key(void *iter)
{
  return API()->json_object_iter_key(iter);
}
size_t json_object_iter_key_len(void *iter)
{
  return API()->json_object_iter_key_len(iter);
}
json_t *json_object_iter_value(void *iter)
{
  return API()->json_object_iter_value(iter);
}
int json_object_iter_set_new(json_t *object, void *iter, json_t *value)
{
  return API()->json_object_iter_set_new(object, iter, value);
}

/* Arrays. */
size_t json_array_size(const json_t *array)
{
  return API()->json_array_size(array);
}
json_t *json_array_get(const json_t *array, size_t index)
{
  return API()->json_array_get(array, index);
}
int json_array_set_new(json_t *array, size_t index, json_t *value)
{
  return API()->json_array_set_new(array, index, value);
}
int json_array_append_new(json_t *array, json_t *value)
{
  return API()->json_array_append_new(array, value);
}
int json_array_insert_new(json_t *array, size_t index, json_t *value)
{
  return API()->json_array_insert_new(array, index, value);
}
int json_array_remove(json_t *array, size_t index)
{
  return API()->json_array_remove(array, index);
}
int json_array_clear(json_t *array)
{
  return API()->json_array_clear(array);
}

/* Scalars, equality. */
const char *json_string_value(const json_t *string)
{
  return API()->json_string_value(string);
}
size_t json_string_length(const json_t *string)
{
  return API()->json_string_length(string);
}
json_int_t json_integer_value(const json_t *integer)
{
  return API()->json_integer_value(integer);
}
double json_real_value(const json_t *real)
{
  return API()->json_real_value(real);
}
double json_number_value(const json_t *json)
{
  return API()->json_number_value(json);
}
int json_equal(const json_t *value1, const json_t *value2)
{
  return API()->json_equal(value1, value2);
}

/* Building and parsing values (the variadic ones through their va_list
 * forms, as jansson's own json_pack does). */
json_t *json_vpack_ex(json_error_t *error, size_t flags, const char *fmt, va_list ap)
{
  return API()->json_vpack_ex(error, flags, fmt, ap);
}
json_t *json_pack(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  json_t *v = API()->json_vpack_ex(NULL, 0, fmt, ap);
  va_end(ap);
  return v;
}
json_t *json_pack_ex(json_error_t *error, size_t flags, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  json_t *v = API()->json_vpack_ex(error, flags, fmt, ap);
  va_end(ap);
  return v;
}
int json_vunpack_ex(json_t *root, json_error_t *error, size_t flags, const char *fmt, va_list ap)
{
  return API()->json_vunpack_ex(root, error, flags, fmt, ap);
}
int json_unpack(json_t *root, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int r = API()->json_vunpack_ex(root, NULL, 0, fmt, ap);
  va_end(ap);
  return r;
}
int json_unpack_ex(json_t *root, json_error_t *error, size_t flags, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int r = API()->json_vunpack_ex(root, error, flags, fmt, ap);
  va_end(ap);
  return r;
}
json_t *json_vsprintf(const char *fmt, va_list ap)
{
  return API()->json_vsprintf(fmt, ap);
}
json_t *json_sprintf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  json_t *v = API()->json_vsprintf(fmt, ap);
  va_end(ap);
  return v;
}

/* Decoding and encoding (jansson "Encoding"/"Decoding" API pages). */
json_t *json_loads(const char *input, size_t flags, json_error_t *error)
{
  return API()->json_loads(input, flags, error);
}
json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
  return API()->json_loadb(buffer, buflen, flags, error);
}
json_t *json_load_file(const char *path, size_t flags, json_error_t *error)
{
  return API()->json_load_file(path, flags, error);
}
char *json_dumps(const json_t *json, size_t flags)
{
  return API()->json_dumps(json, flags);
}
int json_dumpf(const json_t *json, FILE *output, size_t flags)
{
  return API()->json_dumpf(json, output, flags);
}
