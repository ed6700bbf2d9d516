/* Unit tests for forge/appconfig.c, forge/jwt.c and broker/proto.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "forge/appconfig.h"
#include "forge/jwt.h"
#include "broker/check.h"
#include "broker/proto.h"
#include "common/secmem.h"

static int load(const char *yaml, al_broker_config **c, al_error *err)
{
  return al_broker_config_load_buffer("t.yaml", yaml, strlen(yaml), c, err);
}

static void test_config_ok(void **state)
{
  (void)state;
  al_broker_config *c = NULL;
  al_error err = {0};
  int r = load("app: {client_id: Iv1.abc, private_key: /k.pem}\n"
               "repositories: [acme/widget]\n"
               "roles: {git: {contents: write}}\n"
               "lease: {ttl: 5m}\n",
               &c, &err);
  assert_int_equal(r, 0);
  assert_string_equal(c->client_id, "Iv1.abc");
  assert_null(c->app_id);
  assert_string_equal(c->api_url, "https://api.github.com");
  assert_int_equal(c->default_ttl_ms, 300000);
  assert_int_equal(c->roles[AL_ROLE_GIT].n, 1);
  assert_int_equal(c->roles[AL_ROLE_TICKET].n, 1); /* default: issues write */
  assert_true(al_broker_config_repo_allowed(c, "ACME/Widget"));
  assert_false(al_broker_config_repo_allowed(c, "acme/other"));
  al_broker_config_free(c);
}

static void expect_error(const char *yaml, const char *want)
{
  al_broker_config *c = NULL;
  al_error err = {0};
  assert_int_equal(load(yaml, &c, &err), -1);
  if (!strstr(err.msg, want))
    fail_msg("error `%s` lacks `%s`", err.msg, want);
}

static void test_config_errors(void **state)
{
  (void)state;
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\nextra: 1\n",
               "t.yaml:3:1: extra: unknown key");
  expect_error("app: {id: 1, private_key: /k, colour: x}\nrepositories: [a/b]\n",
               "t.yaml:1:31: app.colour: unknown key (allowed here: id, client_id, private_key)");
  expect_error("app: {id: 1, client_id: x, private_key: /k}\nrepositories: [a/b]\n",
               "exactly one of");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\n"
               "roles: {git: {workflows: write}}\n",
               "never granted");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\n"
               "roles: {git: {contents: admin}}\n",
               "`read` or `write`");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\n"
               "api: {url: http://example.com}\n",
               "https unless");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [../b]\n", "OWNER/REPO");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\nlease: {ttl: 2h}\n",
               "lease.ttl");
}

static void test_url_check(void **state)
{
  (void)state;
  const char *why;
  assert_int_equal(al_api_url_check("https://ghe.example.com/api/v3", &why), 0);
  assert_int_equal(al_api_url_check("http://127.0.0.1:8080", &why), 0);
  assert_int_equal(al_api_url_check("http://[::1]:8080", &why), 0);
  assert_int_equal(al_api_url_check("http://localhost", &why), 0);
  assert_int_equal(al_api_url_check("http://10.0.0.1", &why), -1);
  assert_int_equal(al_api_url_check("http://127.0.0.1.evil.com", &why), -1);
  assert_int_equal(al_api_url_check("https://user@host", &why), -1);
  assert_int_equal(al_api_url_check("ftp://host", &why), -1);
}

static void test_jwt(void **state)
{
  (void)state;
  EVP_PKEY *key = EVP_RSA_gen(2048);
  assert_non_null(key);
  char *jwt = NULL;
  al_error err = {0};
  assert_int_equal(al_app_jwt(key, "1001", true, 1700000000, &jwt, &err), 0);
  char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  if (!d1 || !d2)
    fail_msg("not a compact JWT");
  /* decode the payload (base64url -> base64) */
  size_t pl = (size_t)(d2 - d1 - 1);
  assert_true(pl > 0 && pl < 400);
  char b64[512] = {0};
  snprintf(b64, sizeof b64, "%.*s", (int)pl, d1 + 1);
  for (size_t i = 0; i < pl; i++)
    b64[i] = b64[i] == '-' ? '+' : b64[i] == '_' ? '/' : b64[i];
  while (pl % 4)
    b64[pl++] = '=';
  unsigned char dec[512] = {0};
  int dl = EVP_DecodeBlock(dec, (unsigned char *)b64, (int)pl);
  assert_true(dl > 0);
  json_t *p = json_loads((char *)dec, JSON_DISABLE_EOF_CHECK, NULL);
  assert_non_null(p);
  assert_int_equal(json_integer_value(json_object_get(p, "iat")), 1700000000 - 60);
  assert_true(json_integer_value(json_object_get(p, "exp")) -
                  json_integer_value(json_object_get(p, "iat")) <=
              600);
  assert_int_equal(json_integer_value(json_object_get(p, "iss")), 1001);
  json_decref(p);
  /* verify the RS256 signature over header.payload */
  size_t sl = strlen(d2 + 1);
  assert_true(sl < 1000);
  char sb64[1024] = {0};
  snprintf(sb64, sizeof sb64, "%s", d2 + 1);
  for (size_t i = 0; i < sl; i++)
    sb64[i] = sb64[i] == '-' ? '+' : sb64[i] == '_' ? '/' : sb64[i];
  while (sl % 4)
    sb64[sl++] = '=';
  unsigned char sig[512];
  int sigl = EVP_DecodeBlock(sig, (unsigned char *)sb64, (int)sl);
  while (sigl > 256)
    sigl--; /* DecodeBlock counts padding bytes */
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
  assert_int_equal(
      EVP_DigestVerify(ctx, sig, (size_t)sigl, (unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
  /* a changed byte fails (negative control) */
  jwt[3] ^= 1;
  assert_int_not_equal(
      EVP_DigestVerify(ctx, sig, (size_t)sigl, (unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
  EVP_MD_CTX_free(ctx);
  free(jwt);
  EVP_PKEY_free(key);
}

static void test_key_file_checks(void **state)
{
  (void)state;
  char dir[] = "/tmp/al-key-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[64];
  snprintf(path, sizeof path, "%s/k.pem", dir);
  EVP_PKEY *key = EVP_RSA_gen(2048);
  FILE *f = fopen(path, "w");
  PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
  fclose(f);
  EVP_PKEY_free(key);
  EVP_PKEY *k2 = NULL;
  al_error err = {0};
  chmod(path, 0640);
  assert_int_equal(al_app_key_load(path, &k2, &err), -1);
  assert_non_null(strstr(err.msg, "mode 0640"));
  chmod(path, 0600);
  assert_int_equal(al_app_key_load(path, &k2, &err), 0); /* positive control */
  EVP_PKEY_free(k2);
  char link[80];
  snprintf(link, sizeof link, "%s/link.pem", dir);
  assert_int_equal(symlink(path, link), 0);
  assert_int_equal(al_app_key_load(link, &k2, &err), -1); /* O_NOFOLLOW */
  unlink(link);
  unlink(path);
  rmdir(dir);
}

static void test_proto(void **state)
{
  (void)state;
  al_proto_lease_req req = {0}, back;
  al_error err = {0};
  req.n_tokens = 2;
  req.tokens[0].role = AL_ROLE_GIT;
  strcpy(req.tokens[0].repo, "acme/widget");
  req.tokens[1].role = AL_ROLE_TICKET;
  strcpy(req.tokens[1].repo, "acme/widget");
  assert_int_equal(al_perm_set_parse("issues:write", &req.tokens[1].perms, &err), 0);
  req.tokens[1].has_perms = true;
  req.ttl_ms = 60000;
  json_t *j = al_proto_lease_req_to_json(&req);
  assert_int_equal(al_proto_lease_req_from_json(j, &back, &err), 0);
  json_decref(j);
  assert_int_equal(back.n_tokens, 2);
  assert_int_equal(back.ttl_ms, 60000);
  assert_true(back.tokens[1].has_perms);
  assert_false(back.tokens[0].has_perms);

  const char *bad[] = {
      "{\"type\":\"lease\",\"version\":1,\"tokens\":[{\"role\":\"git\",\"repo\":\"a/b\","
      "\"permissions\":{\"administration\":\"write\"}}]}",
      "{\"type\":\"lease\",\"version\":1,\"tokens\":[{\"role\":\"git\",\"repo\":\"a/b\"},"
      "{\"role\":\"git\",\"repo\":\"a/b\"}]}",
      "{\"type\":\"lease\",\"version\":1,\"tokens\":[{\"role\":\"root\",\"repo\":\"a/b\"}]}",
      "{\"type\":\"lease\",\"version\":1,\"extra\":1,\"tokens\":[{\"role\":\"git\",\"repo\":\"a/"
      "b\"}]}",
      "{\"type\":\"lease\",\"version\":2,\"tokens\":[{\"role\":\"git\",\"repo\":\"a/b\"}]}",
      "{\"type\":\"lease\",\"version\":1,\"tokens\":[{\"role\":\"git\",\"repo\":\"a/../b\"}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *m = json_loads(bad[i], 0, NULL);
    assert_non_null(m);
    assert_int_equal(al_proto_lease_req_from_json(m, &back, &err), -1);
    json_decref(m);
  }
  al_perm_set s;
  assert_int_equal(al_perm_set_parse("secrets:read", &s, &err), -1);
  assert_int_equal(al_perm_set_parse("contents=write,pull_requests:read", &s, &err), 0);
  assert_int_equal(s.n, 2);
}

static void test_audit_config(void **state)
{
  (void)state;
  al_broker_config *c = NULL;
  al_error err = {0};
  assert_int_equal(load("app: {id: 1, private_key: /k}\nrepositories: [a/b]\n"
                        "audit: {app: {id: 2, private_key: /a.pem}}\n",
                        &c, &err),
                   0);
  assert_string_equal(c->audit_app_id, "2");
  assert_string_equal(c->audit_key_path, "/a.pem");
  assert_null(c->audit_token_file);
  al_broker_config_free(c);
  assert_int_equal(load("app: {id: 1, private_key: /k}\nrepositories: [a/b]\n"
                        "audit: {token_file: /t}\n",
                        &c, &err),
                   0);
  assert_string_equal(c->audit_token_file, "/t");
  assert_null(c->audit_key_path);
  al_broker_config_free(c);
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\n"
               "audit: {token_file: /t, app: {id: 2, private_key: /a}}\n",
               "audit: set exactly one of `token_file` and `app`");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\naudit: {}\n", "exactly one of");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\naudit: {token: x}\n",
               "t.yaml:3:9: audit.token: unknown key (allowed here: token_file, app)");
  expect_error("app: {id: 1, private_key: /k}\nrepositories: [a/b]\n"
               "audit: {app: {id: 2}}\n",
               "audit.app.private_key: required (the App's PEM key)");
}

static void test_audit_token_file(void **state)
{
  (void)state;
  char dir[] = "/tmp/al-atok-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[64];
  snprintf(path, sizeof path, "%s/t", dir);
  FILE *f = fopen(path, "w");
  fputs("  ghs_0123456789abcdefABCDEF0123456789abcd\n", f);
  fclose(f);
  char *tok = NULL;
  al_error err = {0};
  chmod(path, 0640);
  assert_int_equal(al_broker_audit_token_load(path, &tok, &err), -1);
  assert_non_null(strstr(err.msg, "group or others"));
  assert_null(strstr(err.msg, "ghs_")); /* never the value */
  chmod(path, 0600);
  assert_int_equal(al_broker_audit_token_load(path, &tok, &err), 0); /* positive control */
  assert_string_equal(tok, "ghs_0123456789abcdefABCDEF0123456789abcd");
  al_secret_free(tok);
  f = fopen(path, "w");
  fputs("ghs_abc def\n", f); /* two words */
  fclose(f);
  assert_int_equal(al_broker_audit_token_load(path, &tok, &err), -1);
  assert_null(strstr(err.msg, "ghs_"));
  char link[80];
  snprintf(link, sizeof link, "%s/link", dir);
  assert_int_equal(symlink(path, link), 0);
  assert_int_equal(al_broker_audit_token_load(link, &tok, &err), -1); /* O_NOFOLLOW */
  unlink(link);
  unlink(path);
  rmdir(dir);
}

static void test_proto_audit(void **state)
{
  (void)state;
  al_proto_audit_req req = {0}, back;
  al_error err = {0};
  strcpy(req.repo, "acme/widget");
  strcpy(req.branch, "release/1.x");
  strcpy(req.run_prefix, "bot/runs/");
  json_t *j = al_proto_audit_req_to_json(&req);
  assert_int_equal(al_proto_audit_req_from_json(j, &back, &err), 0);
  json_decref(j);
  assert_string_equal(back.repo, "acme/widget");
  assert_string_equal(back.branch, "release/1.x");
  assert_string_equal(back.run_prefix, "bot/runs/");
  const char *bad[] = {
      "{\"type\":\"audit\",\"version\":1}",
      "{\"type\":\"audit\",\"version\":2,\"repo\":\"a/b\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/../b\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"token\":\"x\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"branch\":\"../x\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"branch\":\"a b\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"branch\":\"-x\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"branch\":\"\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"branch\":\"x\\u0000y\"}",
      /* the run prefix of the ci.* criteria: the policy's branch_prefix rule */
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"run_prefix\":\"airlock\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"run_prefix\":\"/x/\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"run_prefix\":\"a*/\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"run_prefix\":\"a/../\"}",
      "{\"type\":\"audit\",\"version\":1,\"repo\":\"a/b\",\"run_prefix\":7}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *m = json_loads(bad[i], JSON_ALLOW_NUL, NULL);
    assert_non_null(m);
    if (al_proto_audit_req_from_json(m, &back, &err) != -1)
      fail_msg("accepted: %s", bad[i]);
    json_decref(m);
  }
}

static void test_secrets_config(void **state)
{
  (void)state;
  al_broker_config *c = NULL;
  al_error err = {0};
  assert_int_equal(load("app: {id: 1, private_key: /k}\nrepositories: [acme/tally, acme/other]\n"
                        "secrets: {model_key: {file: /m.key, repositories: [acme/tally]}}\n",
                        &c, &err),
                   0);
  assert_int_equal(c->n_secrets, 1);
  const al_broker_secret *s = al_broker_config_secret(c, "model_key");
  assert_non_null(s);
  assert_string_equal(s->file, "/m.key");
  assert_null(s->value); /* read by al_broker_secrets_load(), not by the parser */
  assert_true(al_broker_secret_repo_allowed(s, "ACME/tally"));
  assert_false(al_broker_secret_repo_allowed(s, "acme/other"));
  assert_null(al_broker_config_secret(c, "other"));
  al_broker_config_free(c);
  const char *base = "app: {id: 1, private_key: /k}\nrepositories: [acme/tally]\n";
  struct {
    const char *yaml, *want;
  } bad[] = {
      {"secrets: {model_key: {repositories: [acme/tally]}}\n",
       "t.yaml:3:23: secrets.model_key.file: required (a 0600 file holding the value)"},
      {"secrets: {model_key: {file: /m}}\n",
       "secrets.model_key.repositories: required (the OWNER/REPO whose leases may carry it)"},
      {"secrets: {model_key: {file: /m, repositories: []}}\n",
       "secrets.model_key.repositories: needs at least 1 entry"},
      {"secrets: {model_key: {file: /m, repositories: [acme/tally], mode: x}}\n",
       "secrets.model_key.mode: unknown key (allowed here: file, repositories)"},
      {"secrets: {Model-Key: {file: /m, repositories: [acme/tally]}}\n",
       "secret's name is 1 to 63 characters"},
      {"secrets: {model_key: {file: /m, repositories: [acme/nope]}}\n",
       "secrets.model_key.repositories: `acme/nope` is not in `repositories`"},
      {"secrets: {model_key: {file: /m, repositories: [a/../b]}}\n", "OWNER/REPO"},
      {"secrets: [model_key]\n", "secrets: must be a mapping"},
      {"secrets: {model_key: /m}\n", "secrets.model_key: must be a mapping"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char y[512];
    snprintf(y, sizeof y, "%s%s", base, bad[i].yaml);
    expect_error(y, bad[i].want);
  }
}

static void test_secrets_load(void **state)
{
  (void)state;
  char dir[] = "/tmp/al-sec-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[64], yaml[512];
  snprintf(path, sizeof path, "%s/m", dir);
  FILE *f = fopen(path, "w");
  fputs("sk-ant-test-0123456789\n", f);
  fclose(f);
  snprintf(yaml, sizeof yaml,
           "app: {id: 1, private_key: /k}\nrepositories: [acme/tally]\n"
           "secrets: {model_key: {file: %s, repositories: [acme/tally]}}\n",
           path);
  al_broker_config *c = NULL;
  al_error err = {0};
  assert_int_equal(load(yaml, &c, &err), 0);
  chmod(path, 0644);
  assert_int_equal(al_broker_secrets_load(c, &err), -1);
  assert_int_equal(err.code, EPERM);
  assert_non_null(strstr(err.msg, "secrets.model_key.file"));
  assert_null(strstr(err.msg, "sk-ant")); /* never the value */
  chmod(path, 0600);
  assert_int_equal(al_broker_secrets_load(c, &err), 0); /* positive control */
  const al_broker_secret *s = al_broker_config_secret(c, "model_key");
  assert_string_equal(s->value, "sk-ant-test-0123456789");
  assert_int_equal(strncmp(s->fp, "sha256:", 7), 0);
  al_broker_config_free(c);
  f = fopen(path, "w");
  fputs("sk-ant two words\n", f);
  fclose(f);
  assert_int_equal(load(yaml, &c, &err), 0);
  assert_int_equal(al_broker_secrets_load(c, &err), -1);
  assert_int_equal(err.code, EINVAL);
  assert_null(strstr(err.msg, "sk-ant"));
  al_broker_config_free(c);
  unlink(path);
  rmdir(dir);
}

static void test_proto_secrets(void **state)
{
  (void)state;
  al_proto_lease_req req = {0}, back;
  al_error err = {0};
  req.n_tokens = 1;
  req.tokens[0].role = AL_ROLE_GIT;
  strcpy(req.tokens[0].repo, "acme/tally");
  req.n_secrets = 1;
  strcpy(req.secrets[0], "model_key");
  json_t *j = al_proto_lease_req_to_json(&req);
  assert_int_equal(al_proto_lease_req_from_json(j, &back, &err), 0);
  json_decref(j);
  assert_int_equal(back.n_secrets, 1);
  assert_string_equal(back.secrets[0], "model_key");
  /* no secrets: none asked, and no "secrets" field on the wire */
  req.n_secrets = 0;
  j = al_proto_lease_req_to_json(&req);
  assert_null(json_object_get(j, "secrets"));
  json_decref(j);
  const char *pre =
      "{\"type\":\"lease\",\"version\":1,\"tokens\":[{\"role\":\"git\",\"repo\":\"a/b\"}],";
  struct {
    const char *tail, *want;
  } bad[] = {
      {"\"secrets\":\"model_key\"}", "`secrets` must list 1 to 8"},
      {"\"secrets\":[]}", "`secrets` must list 1 to 8"},
      {"\"secrets\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]}", "must list 1 to 8"},
      {"\"secrets\":[\"Model\"]}", "secrets[0]: expected a name of [a-z0-9_]"},
      {"\"secrets\":[\"model_key\",\"\"]}", "secrets[1]: expected a name"},
      {"\"secrets\":[1]}", "secrets[0]: expected a name"},
      {"\"secrets\":[\"m\\u0000x\"]}", "secrets[0]: expected a name"},
      {"\"secrets\":[\"model_key\",\"model_key\"]}", "secret `model_key` asked twice"},
      {"\"secret\":[\"model_key\"]}", "lease: unknown field `secret`"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s", pre, bad[i].tail);
    json_t *m = json_loads(buf, JSON_ALLOW_NUL, NULL);
    assert_non_null(m);
    if (al_proto_lease_req_from_json(m, &back, &err) != -1)
      fail_msg("accepted: %s", buf);
    if (!strstr(err.msg, bad[i].want))
      fail_msg("error `%s` lacks `%s`", err.msg, bad[i].want);
    json_decref(m);
  }
}

/* The trigger-check request (broker/check_proto.c): each bad field is named.
 * The non-string `user` is the fuzz_webhook reproducer of CI stop 35 (the
 * message once formatted an unset reason). */
static void test_proto_check(void **state)
{
  (void)state;
  al_error err = {0};
  al_proto_check_req back;
  json_t *ok = json_loads(
      "{\"type\":\"check\",\"version\":1,\"repo\":\"a/b\",\"ticket\":7,\"user\":\"octo-cat\"}", 0,
      NULL);
  assert_non_null(ok);
  assert_int_equal(al_proto_check_req_from_json(ok, &back, &err), 0);
  assert_string_equal(back.repo, "a/b");
  assert_int_equal(back.ticket, 7);
  assert_string_equal(back.user, "octo-cat");
  json_decref(ok);
  static const struct {
    const char *json, *want;
  } bad[] = {
      {"{\"type\":\"check\",\"version\":1,\"repo\":\"a/b\",\"ticket\":1,\"user\":666}",
       "`user` must be a string"},
      {"{\"type\":\"check\",\"version\":1,\"repo\":\"a/b\",\"ticket\":1,\"user\":null}",
       "`user` must be a string"},
      {"{\"type\":\"check\",\"version\":1,\"repo\":\"a/b\",\"ticket\":1,\"user\":\"a\\u0000b\"}",
       "`user` must be a string"},
      {"{\"type\":\"check\",\"version\":1,\"repo\":\"a/b\",\"ticket\":1,\"user\":\"-x\"}",
       "`user` is not a GitHub login"},
      {"{\"type\":\"check\",\"version\":1,\"repo\":7,\"ticket\":1}", "`repo` must be OWNER/REPO"},
      {"{\"type\":\"check\",\"version\":1,\"repo\":\"a/b\",\"ticket\":0}", "`ticket` must be"},
      {"{\"type\":\"check\",\"version\":2,\"repo\":\"a/b\",\"ticket\":1}", "protocol version"},
      {"{\"type\":\"check\",\"version\":1,\"repo\":\"a/b\",\"ticket\":1,\"x\":1}",
       "unknown field `x`"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *m = json_loads(bad[i].json, JSON_ALLOW_NUL, NULL);
    assert_non_null(m);
    if (al_proto_check_req_from_json(m, &back, &err) != -1)
      fail_msg("accepted: %s", bad[i].json);
    if (!strstr(err.msg, bad[i].want))
      fail_msg("error `%s` lacks `%s`", err.msg, bad[i].want);
    json_decref(m);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_ok),       cmocka_unit_test(test_config_errors),
      cmocka_unit_test(test_url_check),       cmocka_unit_test(test_jwt),
      cmocka_unit_test(test_key_file_checks), cmocka_unit_test(test_proto),
      cmocka_unit_test(test_audit_config),    cmocka_unit_test(test_audit_token_file),
      cmocka_unit_test(test_proto_audit),     cmocka_unit_test(test_secrets_config),
      cmocka_unit_test(test_secrets_load),    cmocka_unit_test(test_proto_secrets),
      cmocka_unit_test(test_proto_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
