/* The libraries the core binary opens on first use (common/lazylib.h) and
 * the built-in default policy built as data (policy.c al_policy_default):
 *
 * - the default equals the parsed policy file `version: 1` (canonical
 *   form and hash); control: a file that changes one default differs;
 * - building it loads no YAML parser; control: parsing a file does load
 *   libfyaml, and the same check (dlopen RTLD_NOLOAD) then sees it;
 * - jansson likewise: not loaded by the default policy, loaded by the
 *   first JSON call (the canonical form), through common/lazyjansson.c;
 * - c-ares is loaded by its first call, not before (same check).
 * This test binary links none of them (meson.build: headers only). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/lazycares.h"
#include "common/lazyfyaml.h"
#include "policy/policy.h"

static bool loaded(const char *soname)
{
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h)
    dlclose(h); /* drops only the reference NOLOAD took */
  return h != NULL;
}

static al_policy *parse(const char *text)
{
  al_policy *p = NULL;
  al_error err = {0};
  int r = al_policy_load_buffer("<test>", text, strlen(text), &p, &err);
  if (r < 0)
    fail_msg("%s", err.msg);
  return p;
}

static void test_default_is_data(void **state)
{
  (void)state;
  /* runs first: nothing in this process has touched libfyaml or jansson */
  assert_false(loaded(AL_FYAML_SONAME));
  assert_false(loaded("libjansson.so.4"));
  al_policy *def = NULL;
  al_error err = {0};
  assert_int_equal(al_policy_default(&def, &err), 0);
  assert_false(loaded(AL_FYAML_SONAME));
  assert_false(loaded("libjansson.so.4"));
  assert_string_equal(def->source, "<default>");
  assert_false(def->network.present);

  al_policy *file = parse("version: 1\n");
  assert_true(loaded(AL_FYAML_SONAME)); /* control: the check sees a loaded library */
  char *a = al_policy_canonical(def), *b = al_policy_canonical(file);
  assert_true(loaded("libjansson.so.4")); /* the first JSON call loaded it */
  assert_string_equal(a, b);
  assert_string_equal(al_policy_sha256(def), al_policy_sha256(file));
  /* the fields the sandbox reads, one by one (not all are in the hash) */
  assert_int_equal(def->process.user, file->process.user);
  assert_int_equal(def->process.limits.memory, file->process.limits.memory);
  assert_int_equal(def->process.limits.pids, file->process.limits.pids);
  assert_int_equal(def->process.limits.nofile, file->process.limits.nofile);
  assert_int_equal(def->process.limits.wall_ms, file->process.limits.wall_ms);
  assert_int_equal(def->filesystem.workspace_size, file->filesystem.workspace_size);
  assert_int_equal(def->filesystem.tmp_size, file->filesystem.tmp_size);
  assert_int_equal(def->process.n_env_pass, file->process.n_env_pass);

  /* control: one changed default is seen by the same comparison */
  al_policy *other = parse("version: 1\nprocess: {user: 1001}\n");
  char *c = al_policy_canonical(other);
  assert_string_not_equal(a, c);
  free(a);
  free(b);
  free(c);
  al_policy_free(def);
  al_policy_free(file);
  al_policy_free(other);
}

static void test_cares_on_first_use(void **state)
{
  (void)state;
  assert_false(loaded(AL_CARES_SONAME));
  /* any call loads it; this one has no side effect */
  const char *s = ares_strerror(ARES_ENOTFOUND);
  assert_non_null(s);
  assert_true(loaded(AL_CARES_SONAME));
  assert_ptr_equal(al_cares(), al_cares()); /* loaded once */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_is_data),
      cmocka_unit_test(test_cares_on_first_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
