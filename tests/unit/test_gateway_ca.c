/* Unit test for the forge gateway's per-run CA (issue #15): the leaves it
 * makes verify for their host; a leaf for any other host, signed with the
 * same CA key, fails verification because of the name constraints
 * (X509_V_ERR_PERMITTED_VIOLATION). Positive control: the same foreign leaf
 * verifies under a CA that differs only by having no name constraints, so
 * the check is what refuses it. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "gateway/ca.h"

static const char *const hosts[] = {"api.forge.test", "forge.test", "127.0.0.1"};

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
  assert_non_null(ext);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return 0;
}

/* A leaf for `san` ("DNS:x" / "IP:a") signed by (issuer, key). */
static X509 *leaf(X509 *issuer, EVP_PKEY *key, EVP_PKEY *leaf_key, const char *san)
{
  X509 *c = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(c), 7);
  X509_set_version(c, 2);
  X509_gmtime_adj(X509_getm_notBefore(c), -60);
  X509_gmtime_adj(X509_getm_notAfter(c), 3600);
  X509_set_pubkey(c, leaf_key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                             (const unsigned char *)"x", -1, -1, 0);
  X509_set_issuer_name(c, X509_get_subject_name(issuer));
  add_ext(c, issuer, NID_subject_alt_name, san);
  add_ext(c, issuer, NID_ext_key_usage, "serverAuth");
  assert_true(X509_sign(c, key, EVP_sha256()) > 0);
  return c;
}

/* Verify c under root for host (name or IP); returns the verify error. */
static int verify(X509 *root, X509 *c, const char *host, bool ip)
{
  X509_STORE *st = X509_STORE_new();
  X509_STORE_add_cert(st, root);
  X509_STORE_CTX *ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, st, c, NULL);
  X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
  if (ip)
    X509_VERIFY_PARAM_set1_ip_asc(vp, host);
  else
    X509_VERIFY_PARAM_set1_host(vp, host, 0);
  int ok = X509_verify_cert(ctx);
  int e = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(st);
  return e;
}

static void test_constraints(void **state)
{
  al_gw_ca ca;
  al_error err;
  (void)state;
  assert_int_equal(al_gw_ca_make(&ca, hosts, 3, 3600 * 1000, "unit", &err), 0);
  assert_non_null(strstr(ca.ca_pem, "BEGIN CERTIFICATE"));
  assert_null(strstr(ca.ca_pem, "PRIVATE"));
  /* the gateway's own leaves */
  assert_int_equal(verify(ca.ca, al_gw_ca_leaf(&ca, "forge.test"), "forge.test", false), X509_V_OK);
  assert_int_equal(verify(ca.ca, al_gw_ca_leaf(&ca, "api.forge.test"), "api.forge.test", false),
                   X509_V_OK);
  assert_int_equal(verify(ca.ca, al_gw_ca_leaf(&ca, "127.0.0.1"), "127.0.0.1", true), X509_V_OK);
  /* a leaf is for its host only */
  assert_int_not_equal(verify(ca.ca, al_gw_ca_leaf(&ca, "forge.test"), "api.forge.test", false),
                       X509_V_OK);
  /* a leaf for another host, signed by the run CA's own key */
  EVP_PKEY *lk = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
  X509 *evil = leaf(ca.ca, ca.ca_key, lk, "DNS:github.com");
  assert_int_equal(verify(ca.ca, evil, "github.com", false), X509_V_ERR_PERMITTED_VIOLATION);
  X509 *evil_ip = leaf(ca.ca, ca.ca_key, lk, "IP:10.0.0.1");
  assert_int_equal(verify(ca.ca, evil_ip, "10.0.0.1", true), X509_V_ERR_PERMITTED_VIOLATION);
  X509 *suffix = leaf(ca.ca, ca.ca_key, lk, "DNS:evilforge.test");
  assert_int_equal(verify(ca.ca, suffix, "evilforge.test", false), X509_V_ERR_PERMITTED_VIOLATION);

  /* positive control: the same CA shape without name constraints accepts it */
  X509 *open = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(open), 9);
  X509_set_version(open, 2);
  X509_gmtime_adj(X509_getm_notBefore(open), -60);
  X509_gmtime_adj(X509_getm_notAfter(open), 3600);
  X509_set_pubkey(open, ca.ca_key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(open), "CN", MBSTRING_ASC,
                             (const unsigned char *)"open", -1, -1, 0);
  X509_set_issuer_name(open, X509_get_subject_name(open));
  add_ext(open, open, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_ext(open, open, NID_key_usage, "critical,keyCertSign,cRLSign");
  assert_true(X509_sign(open, ca.ca_key, EVP_sha256()) > 0);
  X509 *evil2 = leaf(open, ca.ca_key, lk, "DNS:github.com");
  assert_int_equal(verify(open, evil2, "github.com", false), X509_V_OK);

  /* the extensions the design names */
  BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(ca.ca, NID_basic_constraints, NULL, NULL);
  assert_non_null(bc);
  assert_true(bc->ca);
  BASIC_CONSTRAINTS_free(bc);
  assert_true(X509_get_key_usage(ca.ca) & KU_KEY_CERT_SIGN);
  assert_int_equal(X509_get_ext_by_NID(ca.ca, NID_name_constraints, -1) >= 0, 1);
  assert_int_equal(EVP_PKEY_get_base_id(ca.ca_key), EVP_PKEY_EC);
  /* validity: lifetime + margin, not much more */
  int days, secs;
  ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(ca.ca));
  long s = (long)days * 86400 + secs;
  assert_true(s > 3600 + 3500 && s <= 3600 + 3600 + 5);

  X509_free(evil);
  X509_free(evil_ip);
  X509_free(suffix);
  X509_free(evil2);
  X509_free(open);
  EVP_PKEY_free(lk);
  al_gw_ca_free(&ca);
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_constraints)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
