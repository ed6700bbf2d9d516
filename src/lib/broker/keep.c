/* The broker's outstanding tokens in the kernel keyring: see keep.h. */
#include "broker/keep.h"

#include <errno.h>
#include <keyutils.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/secmem.h"
#include "common/log.h"
#include "common/util.h"

#define KEEP_PAYLOAD_MAX 4096

struct al_keep {
  key_serial_t ring;
  char where[160];
};

int al_keep_open(const char *identity, al_keep **out, al_error *err)
{
  *out = NULL;
  char hex[65], name[64];
  al_sha256_hex(identity, strlen(identity), hex);
  snprintf(name, sizeof name, "airlock-broker:%.16s", hex);
  /* The persistent keyring, linked into our process keyring so that we
   * possess it (and so everything found through it) while we run. */
  const char *base = "persistent keyring";
  key_serial_t parent = (key_serial_t)keyctl_get_persistent((uid_t)-1, KEY_SPEC_PROCESS_KEYRING);
  if (parent < 0) {
    if (errno != EOPNOTSUPP && errno != ENOSYS) /* ENOTSUP is EOPNOTSUPP on Linux */
      return al_make_error(err, errno, "keyctl_get_persistent");
    base = "user keyring";
    parent = KEY_SPEC_USER_KEYRING;
    /* possess the user keyring's contents through our process keyring */
    if (keyctl_link(KEY_SPEC_USER_KEYRING, KEY_SPEC_PROCESS_KEYRING) < 0)
      return al_make_error(err, errno, "keyctl_link the user keyring");
  }
  key_serial_t ring = (key_serial_t)keyctl_search(parent, "keyring", name, 0);
  if (ring < 0) {
    ring = add_key("keyring", name, NULL, 0, parent);
    if (ring < 0)
      return al_make_error(err, errno, "add_key keyring `%s`", name);
  }
  keyctl_setperm(ring, KEY_POS_ALL);
  al_keep *k = al_xcalloc(1, sizeof *k);
  k->ring = ring;
  snprintf(k->where, sizeof k->where, "%s of uid %u: %s", base, (unsigned)getuid(), name);
  *out = k;
  return 0;
}

void al_keep_close(al_keep *k)
{
  free(k);
}

const char *al_keep_where(const al_keep *k)
{
  return k->where;
}

/* Payload: "airlock-keep/1\nROLE\nREPO\nEXPIRES_EPOCH\nEXPIRES_ISO\nINSTALLATION\nVALUE". */
int al_keep_put(al_keep *k, const al_token *t, al_error *err)
{
  if (!t->value || strchr(t->repo, '\n') || strchr(t->expires_at_str, '\n'))
    return al_error_set(err, EINVAL, "token %s: nothing to keep", t->fp);
  static const char zeros[KEEP_PAYLOAD_MAX];
  size_t cap = KEEP_PAYLOAD_MAX;
  char *buf = al_secret_dupn(zeros, cap - 1);
  if (!buf)
    return al_make_error(err, errno, "secret memory");
  int n = snprintf(buf, cap, "airlock-keep/1\n%s\n%s\n%lld\n%s\n%lld\n%s", al_role_name(t->role),
                   t->repo, (long long)t->expires_at, t->expires_at_str,
                   (long long)t->installation_id, t->value);
  if (n < 0 || (size_t)n >= cap) {
    al_secret_free(buf);
    return al_make_error(err, EOVERFLOW, "token %s: too long to keep", t->fp);
  }
  key_serial_t key = add_key("user", t->fp, buf, (size_t)n, k->ring);
  int e = errno;
  al_secret_free(buf);
  if (key < 0)
    return al_make_error(err, e, "add_key `%s` to %s", t->fp, k->where);
  keyctl_setperm(key, KEY_POS_ALL);
  time_t now = time(NULL);
  if (t->expires_at > now)
    keyctl_set_timeout(key, (unsigned)(t->expires_at - now));
  return 0;
}

void al_keep_drop(al_keep *k, const char *fp)
{
  key_serial_t key = (key_serial_t)keyctl_search(k->ring, "user", fp, 0);
  if (key < 0)
    return;
  keyctl_unlink(key, k->ring);
  keyctl_invalidate(key);
}

/* One payload into t; -1 when it does not parse. */
static int parse_payload(char *p, size_t len, const char *fp, al_token *t)
{
  memset(t, 0, sizeof *t);
  char *f[7];
  size_t nf = 0;
  char *s = p, *end = p + len;
  while (nf < 6) {
    char *nl = memchr(s, '\n', (size_t)(end - s));
    if (!nl)
      return -1;
    *nl = '\0';
    f[nf++] = s;
    s = nl + 1;
  }
  f[6] = s; /* the value: to the end (NUL-terminated by the caller) */
  if (strcmp(f[0], "airlock-keep/1") != 0 || al_role_parse(f[1], &t->role) < 0 ||
      strlen(f[2]) >= sizeof t->repo || strlen(f[4]) >= sizeof t->expires_at_str ||
      strlen(fp) >= sizeof t->fp || !f[6][0] || strlen(f[6]) > 512)
    return -1;
  for (const char *c = f[6]; *c; c++)
    if (*c <= ' ' || *c > '~')
      return -1;
  char *e1 = NULL, *e2 = NULL;
  long long exp = strtoll(f[3], &e1, 10), inst = strtoll(f[5], &e2, 10);
  if (!e1 || *e1 || !e2 || *e2)
    return -1;
  t->value = al_secret_dupn(f[6], strlen(f[6]));
  if (!t->value)
    return -1;
  snprintf(t->repo, sizeof t->repo, "%s", f[2]);
  snprintf(t->expires_at_str, sizeof t->expires_at_str, "%s", f[4]);
  snprintf(t->fp, sizeof t->fp, "%s", fp);
  t->expires_at = (time_t)exp;
  t->installation_id = inst;
  return 0;
}

int al_keep_load(al_keep *k, al_token **out, al_error *err)
{
  *out = NULL;
  void *list = NULL;
  long sz = keyctl_read_alloc(k->ring, &list);
  if (sz < 0)
    return al_make_error(err, errno, "read %s", k->where);
  size_t n = (size_t)sz / sizeof(key_serial_t);
  key_serial_t *keys = list;
  al_token *toks = al_xcalloc(n ? n : 1, sizeof *toks);
  size_t got = 0;
  for (size_t i = 0; i < n; i++) {
    char *desc = NULL;
    if (keyctl_describe_alloc(keys[i], &desc) < 0)
      continue; /* expired or gone meanwhile */
    /* "type;uid;gid;perm;description" */
    char *name = strrchr(desc, ';');
    bool user_key = strncmp(desc, "user;", 5) == 0;
    void *payload = NULL;
    long plen = user_key && name ? keyctl_read_alloc(keys[i], &payload) : -1;
    if (plen < 0 || plen > KEEP_PAYLOAD_MAX ||
        parse_payload(payload, (size_t)plen, name + 1, &toks[got]) < 0) {
      al_warn("%s: key %d (%s) is not a kept token; dropped", k->where, (int)keys[i],
              name ? name + 1 : "?");
      keyctl_unlink(keys[i], k->ring);
    } else {
      got++;
    }
    if (payload) {
      OPENSSL_cleanse(payload, (size_t)(plen > 0 ? plen : 0));
      free(payload);
    }
    free(desc);
  }
  free(list);
  *out = toks;
  return (int)got;
}
