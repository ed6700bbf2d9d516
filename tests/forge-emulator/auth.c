/* Authentication: installation tokens (by SHA-256) and GitHub App JWTs
 * (RS256). Follows docs.github.com "Generating a JSON Web Token (JWT) for a
 * GitHub App" and "Authenticating as a GitHub App installation". */
#include "forge.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "behave.h"
#include "common/util.h"

long long forge_now(void)
{
  return (long long)time(NULL) + __atomic_load_n(&g_forge.clock_offset, __ATOMIC_SEQ_CST);
}

void forge_iso8601(long long t, char out[32])
{
  time_t tt = (time_t)t;
  struct tm tm;
  gmtime_r(&tt, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int forge_perm_level(const char *s)
{
  if (!s)
    return 0;
  if (!strcmp(s, "read"))
    return 1;
  if (!strcmp(s, "write"))
    return 2;
  if (!strcmp(s, "admin"))
    return 3;
  return 0;
}

int forge_new_token_value(char *out, size_t out_size)
{
  static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char rnd[96];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
    return -1;
  /* GitHub documents that token lengths may change; vary 36..76. */
  size_t n = 36 + rnd[0] % 41;
  if (out_size < n + 5)
    return -1;
  memcpy(out, "ghs_", 4);
  for (size_t i = 0; i < n; i++)
    out[4 + i] = alnum[rnd[1 + i] % 62];
  out[4 + n] = '\0';
  return 0;
}

const char *forge_token_state(json_t *tok)
{
  /* A revocation takes effect at revoke_effective_ms (settings
   * revoke_delay_ms: the stateless tokens' propagation delay). */
  if (json_integer_value(json_object_get(tok, "revoked_at")) > 0 &&
      forge_mono_ms() >= json_integer_value(json_object_get(tok, "revoke_effective_ms")))
    return "revoked";
  if (forge_now() >= json_integer_value(json_object_get(tok, "expires_at")))
    return "expired";
  return "active";
}

bool forge_token_has_repo(json_t *tok, const char *full_name)
{
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(tok, "repositories"), i, v)
  {
    if (!strcasecmp(json_string_value(v), full_name))
      return true;
  }
  return false;
}

int forge_base64url_decode(const char *in, size_t len, unsigned char **out, size_t *out_len)
{
  if (len > (1u << 20))
    return -1;
  size_t padded = (len + 3) / 4 * 4;
  char *buf = al_xmalloc(padded + 1);
  for (size_t i = 0; i < len; i++) {
    char c = in[i];
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
    else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      free(buf);
      return -1;
    }
    buf[i] = c;
  }
  size_t pad = padded - len;
  if (pad == 3) {
    free(buf);
    return -1;
  }
  for (size_t i = len; i < padded; i++)
    buf[i] = '=';
  buf[padded] = '\0';
  unsigned char *dec = al_xmalloc(padded / 4 * 3 + 1);
  int n = EVP_DecodeBlock(dec, (unsigned char *)buf, (int)padded);
  free(buf);
  if (n < 0 || (size_t)n < pad) {
    free(dec);
    return -1;
  }
  *out_len = (size_t)n - pad;
  dec[*out_len] = '\0';
  *out = dec;
  return 0;
}

static void bad(struct forge_auth *out, const char *msg)
{
  out->kind = AUTH_BAD;
  out->status = 401;
  out->message = msg;
}

/* Verify an app JWT. Messages are GitHub's. */
static void verify_jwt(const char *jwt, struct forge_auth *out)
{
  static const char undecodable[] = "A JSON web token could not be decoded";
  const char *d1 = strchr(jwt, '.');
  const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  if (!d1 || !d2 || strchr(d2 + 1, '.'))
    return bad(out, undecodable);
  unsigned char *hdr = NULL, *pl = NULL, *sig = NULL;
  size_t hdr_len, pl_len, sig_len;
  json_t *h = NULL, *p = NULL;
  if (forge_base64url_decode(jwt, (size_t)(d1 - jwt), &hdr, &hdr_len) < 0 ||
      forge_base64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &pl, &pl_len) < 0 ||
      forge_base64url_decode(d2 + 1, strlen(d2 + 1), &sig, &sig_len) < 0) {
    bad(out, undecodable);
    goto done;
  }
  h = json_loadb((char *)hdr, hdr_len, JSON_REJECT_DUPLICATES, NULL);
  p = json_loadb((char *)pl, pl_len, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(h) || !json_is_object(p) || !json_is_string(json_object_get(h, "alg")) ||
      strcmp(json_string_value(json_object_get(h, "alg")), "RS256") != 0) {
    bad(out, undecodable);
    goto done;
  }
  json_t *iss = json_object_get(p, "iss");
  struct forge_app *app = NULL;
  char issbuf[64];
  if (json_is_integer(iss)) {
    app = forge_app_by_id(json_integer_value(iss));
  } else if (json_is_string(iss)) {
    app = forge_app_by_iss(json_string_value(iss));
  } else {
    (void)issbuf;
  }
  if (!app || !app->key) {
    bad(out, undecodable);
    goto done;
  }
  /* Signature over "header.payload". */
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, app->key) == 1 &&
           EVP_DigestVerify(ctx, sig, sig_len, (const unsigned char *)jwt, (size_t)(d2 - jwt)) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    bad(out, undecodable);
    goto done;
  }
  json_t *iat = json_object_get(p, "iat"), *exp = json_object_get(p, "exp");
  long long now = forge_now();
  if (!json_is_integer(iat) || json_integer_value(iat) > now + 60) {
    bad(out, "'Issued at' claim ('iat') must be an Integer representing the time that the "
             "assertion was issued.");
    goto done;
  }
  if (!json_is_integer(exp) || json_integer_value(exp) <= now) {
    bad(out, "'Expiration time' claim ('exp') must be a numeric value representing the future "
             "time at which the assertion expires.");
    goto done;
  }
  if (json_integer_value(exp) > now + 600 ||
      json_integer_value(exp) - json_integer_value(iat) > 660) {
    bad(out, "'Expiration time' claim ('exp') is too far in the future.");
    goto done;
  }
  out->kind = AUTH_JWT;
  out->app = app;
done:
  json_decref(h);
  json_decref(p);
  free(hdr);
  free(pl);
  free(sig);
}

static void lookup_token(const char *value, struct forge_auth *out)
{
  char hex[65];
  al_sha256_hex(value, strlen(value), hex);
  size_t i;
  json_t *t;
  json_array_foreach(g_forge.tokens, i, t)
  {
    if (!strcmp(json_string_value(json_object_get(t, "sha256")), hex)) {
      if (strcmp(forge_token_state(t), "active") != 0)
        return bad(out, "Bad credentials");
      out->kind = AUTH_TOKEN;
      out->token = t;
      out->app = forge_app_by_id(json_integer_value(json_object_get(t, "app_id")));
      return;
    }
  }
  bad(out, "Bad credentials");
}

void forge_authenticate(const char *authorization, struct forge_auth *out)
{
  memset(out, 0, sizeof *out);
  out->kind = AUTH_NONE;
  if (!authorization || !*authorization)
    return;
  const char *sp = strchr(authorization, ' ');
  if (!sp)
    return bad(out, "Bad credentials");
  size_t schemelen = (size_t)(sp - authorization);
  const char *cred = sp + 1;
  while (*cred == ' ')
    cred++;
  if (strlen(cred) > 8192)
    return bad(out, "Bad credentials");
  if (schemelen == 5 && !strncasecmp(authorization, "basic", 5)) {
    unsigned char *dec = NULL;
    size_t dlen = 0;
    /* Standard base64: translate to url alphabet then decode. */
    char *tmp = al_xstrdup(cred);
    size_t n = strlen(tmp);
    while (n > 0 && tmp[n - 1] == '=')
      tmp[--n] = '\0';
    for (size_t i = 0; i < n; i++) {
      if (tmp[i] == '+')
        tmp[i] = '-';
      else if (tmp[i] == '/')
        tmp[i] = '_';
    }
    int r = forge_base64url_decode(tmp, n, &dec, &dlen);
    free(tmp);
    if (r < 0 || memchr(dec, '\0', dlen)) {
      free(dec);
      return bad(out, "Bad credentials");
    }
    char *colon = strchr((char *)dec, ':');
    if (!colon) {
      free(dec);
      return bad(out, "Bad credentials");
    }
    lookup_token(colon + 1, out);
    OPENSSL_cleanse(dec, dlen);
    free(dec);
    return;
  }
  if ((schemelen == 5 && !strncasecmp(authorization, "token", 5)) ||
      (schemelen == 6 && !strncasecmp(authorization, "bearer", 6))) {
    if (!strncmp(cred, "ghs_", 4))
      return lookup_token(cred, out);
    if (strchr(cred, '.'))
      return verify_jwt(cred, out);
    return bad(out, "Bad credentials");
  }
  bad(out, "Bad credentials");
}
