/* The forge gateway's per-run CA. See ca.h. */
#include "gateway/ca.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ssl_error(al_error *err, const char *what)
{
  char buf[256];
  unsigned long e = ERR_get_error();
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return al_error_set(err, EIO, "gateway CA: %s: %s", what, e ? buf : "failed");
}

static EVP_PKEY *p256_key(void)
{
  return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

static bool is_ip(const char *h)
{
  unsigned char b[16];
  return inet_pton(AF_INET, h, b) == 1 || inet_pton(AF_INET6, h, b) == 1;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
  if (!ext)
    return -1;
  int r = X509_add_ext(cert, ext, -1) ? 0 : -1;
  X509_EXTENSION_free(ext);
  return r;
}

static X509 *new_cert(EVP_PKEY *key, const char *cn, uint64_t valid_ms)
{
  X509 *c = X509_new();
  unsigned char serial[16];
  if (!c || RAND_bytes(serial, sizeof serial) != 1)
    goto fail;
  serial[0] &= 0x7f; /* positive */
  BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
  if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c))) {
    BN_free(bn);
    goto fail;
  }
  BN_free(bn);
  if (!X509_set_version(c, 2) || !X509_gmtime_adj(X509_getm_notBefore(c), -300) ||
      !X509_gmtime_adj(X509_getm_notAfter(c), (long)(valid_ms / 1000)) || !X509_set_pubkey(c, key))
    goto fail;
  X509_NAME *name = X509_get_subject_name(c);
  if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"airlock", -1, -1,
                                  0) ||
      !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0))
    goto fail;
  return c;
fail:
  X509_free(c);
  return NULL;
}

int al_gw_ca_make(al_gw_ca *ca, const char *const *hosts, size_t n, uint64_t lifetime_ms,
                  const char *run_id, al_error *err)
{
  memset(ca, 0, sizeof *ca);
  if (n == 0 || n > AL_GW_CA_MAX_HOSTS)
    return al_error_set(err, EINVAL, "gateway CA: %zu hosts (1..%d)", n, AL_GW_CA_MAX_HOSTS);
  uint64_t valid = lifetime_ms + AL_GW_CA_MARGIN_MS;
  if (valid > 400ull * 24 * 3600 * 1000)
    valid = 400ull * 24 * 3600 * 1000;
  char cn[128], nc[1400] = "critical";
  snprintf(cn, sizeof cn, "airlock run CA %.64s", run_id ? run_id : "");
  size_t ncl = strlen(nc);
  for (size_t i = 0; i < n; i++) {
    bool dup = false;
    for (size_t k = 0; k < i; k++)
      dup |= strcmp(hosts[k], hosts[i]) == 0;
    if (dup)
      continue;
    if (strlen(hosts[i]) >= 256 || strchr(hosts[i], ','))
      return al_error_set(err, EINVAL, "gateway CA: host `%s`", hosts[i]);
    if (is_ip(hosts[i]))
      ncl += (size_t)snprintf(nc + ncl, sizeof nc - ncl, ",permitted;IP:%s/%s", hosts[i],
                              strchr(hosts[i], ':') ? "FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF"
                                                    : "255.255.255.255");
    else
      ncl += (size_t)snprintf(nc + ncl, sizeof nc - ncl, ",permitted;DNS:%s", hosts[i]);
    snprintf(ca->leaf[ca->n++].host, sizeof ca->leaf[0].host, "%s", hosts[i]);
  }
  if (ncl >= sizeof nc)
    return al_error_set(err, EINVAL, "gateway CA: host names too long");

  ca->ca_key = p256_key();
  ca->leaf_key = p256_key();
  if (!ca->ca_key || !ca->leaf_key)
    goto ssl_fail;
  ca->ca = new_cert(ca->ca_key, cn, valid);
  if (!ca->ca || !X509_set_issuer_name(ca->ca, X509_get_subject_name(ca->ca)) ||
      add_ext(ca->ca, ca->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
      add_ext(ca->ca, ca->ca, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
      add_ext(ca->ca, ca->ca, NID_subject_key_identifier, "hash") < 0 ||
      add_ext(ca->ca, ca->ca, NID_name_constraints, nc) < 0 ||
      !X509_sign(ca->ca, ca->ca_key, EVP_sha256()))
    goto ssl_fail;
  for (size_t i = 0; i < ca->n; i++) {
    const char *h = ca->leaf[i].host;
    char san[300];
    snprintf(san, sizeof san, "%s:%s", is_ip(h) ? "IP" : "DNS", h);
    /* The CN is not a host name (it has spaces): OpenSSL checks a
     * host-like CN against DNS name constraints, which an IP leaf fails. */
    char lcn[300];
    snprintf(lcn, sizeof lcn, "airlock gateway %s", h);
    X509 *c = new_cert(ca->leaf_key, lcn, valid);
    ca->leaf[i].cert = c;
    if (!c || !X509_set_issuer_name(c, X509_get_subject_name(ca->ca)) ||
        add_ext(c, ca->ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(c, ca->ca, NID_key_usage, "critical,digitalSignature") < 0 ||
        add_ext(c, ca->ca, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(c, ca->ca, NID_subject_alt_name, san) < 0 ||
        add_ext(c, ca->ca, NID_authority_key_identifier, "keyid:always") < 0 ||
        !X509_sign(c, ca->ca_key, EVP_sha256()))
      goto ssl_fail;
  }
  BIO *b = BIO_new(BIO_s_mem());
  if (!b || !PEM_write_bio_X509(b, ca->ca)) {
    BIO_free(b);
    goto ssl_fail;
  }
  char *p;
  long pl = BIO_get_mem_data(b, &p);
  ca->ca_pem = malloc((size_t)pl + 1);
  if (ca->ca_pem) {
    memcpy(ca->ca_pem, p, (size_t)pl);
    ca->ca_pem[pl] = '\0';
  }
  BIO_free(b);
  if (!ca->ca_pem) {
    al_gw_ca_free(ca);
    return al_error_set(err, ENOMEM, "gateway CA: out of memory");
  }
  return 0;
ssl_fail:
  ssl_error(err, "make the run CA");
  al_gw_ca_free(ca);
  return -1;
}

X509 *al_gw_ca_leaf(const al_gw_ca *ca, const char *host)
{
  for (size_t i = 0; i < ca->n; i++)
    if (strcmp(ca->leaf[i].host, host) == 0)
      return ca->leaf[i].cert;
  return NULL;
}

void al_gw_ca_free(al_gw_ca *ca)
{
  EVP_PKEY_free(ca->ca_key);
  EVP_PKEY_free(ca->leaf_key);
  X509_free(ca->ca);
  for (size_t i = 0; i < ca->n; i++)
    X509_free(ca->leaf[i].cert);
  free(ca->ca_pem);
  memset(ca, 0, sizeof *ca);
}
