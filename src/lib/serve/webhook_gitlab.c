/* GitLab webhook authentication and parsing: see webhook_gitlab.h. */
#include "serve/webhook_gitlab.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/names.h"
#include "serve/webhook_json.h"

int al_gl_webhook_verify_token(const void *secret, size_t secret_len, const char *header,
                               al_error *err)
{
  if (!header)
    return al_error_set(err, EACCES, "X-Gitlab-Token missing (every delivery carries the secret)");
  if (secret_len == 0 || secret_len > 4096)
    return al_error_set(err, EACCES, "no usable webhook secret");
  /* digests of both: equal lengths, so neither the header's length nor the
   * place of a first difference shows in the time taken */
  unsigned char a[32], b[32];
  unsigned int al = 0, bl = 0;
  if (!EVP_Digest(secret, secret_len, a, &al, EVP_sha256(), NULL) ||
      !EVP_Digest(header, strlen(header), b, &bl, EVP_sha256(), NULL) || al != 32 || bl != 32)
    return al_error_set(err, EIO, "SHA-256 failed");
  int diff = CRYPTO_memcmp(a, b, 32);
  OPENSSL_cleanse(a, sizeof a);
  OPENSSL_cleanse(b, sizeof b);
  if (diff != 0)
    return al_error_set(err, EACCES, "X-Gitlab-Token is not the webhook secret");
  return 0;
}

/* Strict base64 (RFC 4648 §4, padded): the decoded length, or -1. */
static int b64_decode(const char *s, size_t n, unsigned char *out, size_t cap)
{
  if (n == 0 || n % 4 != 0 || n / 4 * 3 > cap + 2)
    return -1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool pad = c == '=' && i >= n - 2 && (i == n - 1 || s[n - 1] == '=');
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
          c == '/' || pad))
      return -1;
  }
  unsigned char tmp[512];
  if (n / 4 * 3 > sizeof tmp)
    return -1;
  int dl = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)n);
  if (dl < 0)
    return -1;
  if (s[n - 1] == '=')
    dl--;
  if (s[n - 2] == '=')
    dl--;
  if ((size_t)dl > cap) {
    OPENSSL_cleanse(tmp, sizeof tmp);
    return -1;
  }
  memcpy(out, tmp, (size_t)dl);
  OPENSSL_cleanse(tmp, sizeof tmp);
  return dl;
}

int al_gl_webhook_signing_key(const char *token, unsigned char key[64], size_t *key_len,
                              al_error *err)
{
  *key_len = 0;
  if (!token || strncmp(token, "whsec_", 6) != 0)
    return al_error_set(err, EINVAL, "webhook signing token: expected whsec_<base64>");
  int n = b64_decode(token + 6, strlen(token + 6), key, 64);
  if (n < 16)
    return al_error_set(err, EINVAL,
                        "webhook signing token: the part after whsec_ is not base64 of 16 to 64 "
                        "bytes");
  *key_len = (size_t)n;
  return 0;
}

static bool id_ok(const char *s)
{
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 128)
    return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '.')
      return false;
  return true;
}

int al_gl_webhook_verify_signed(const unsigned char *key, size_t key_len, const char *id,
                                const char *ts, const char *sig, const void *body, size_t len,
                                int64_t now, int64_t tolerance_s, al_error *err)
{
  if (!id_ok(id))
    return al_error_set(err, EACCES, "webhook-id missing or not 1-128 printable bytes");
  size_t tl = ts ? strlen(ts) : 0;
  if (tl == 0 || tl > 12)
    return al_error_set(err, EACCES, "webhook-timestamp missing or not Unix seconds");
  int64_t t = 0;
  for (size_t i = 0; i < tl; i++) {
    if (ts[i] < '0' || ts[i] > '9')
      return al_error_set(err, EACCES, "webhook-timestamp: expected decimal Unix seconds");
    t = t * 10 + (ts[i] - '0');
  }
  if (t < now - tolerance_s || t > now + tolerance_s)
    return al_error_set(err, EACCES,
                        "webhook-timestamp is %lld s away from this host's clock (at most %lld)",
                        (long long)(t > now ? t - now : now - t), (long long)tolerance_s);
  if (!sig || !*sig)
    return al_error_set(err, EACCES, "webhook-signature missing");
  if (key_len == 0 || key_len > 64)
    return al_error_set(err, EACCES, "no usable webhook signing key");
  /* the signed content: id "." ts "." body (Standard Webhooks) */
  size_t il = strlen(id), cl = il + 1 + tl + 1 + len;
  unsigned char *content = malloc(cl + 1);
  if (!content)
    return al_error_set(err, ENOMEM, "out of memory");
  snprintf((char *)content, il + tl + 3, "%s.%s.", id, ts);
  if (len)
    memcpy(content + il + 2 + tl, body, len);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  bool ok = HMAC(EVP_sha256(), key, (int)key_len, content, cl, mac, &ml) && ml == 32;
  free(content);
  if (!ok)
    return al_error_set(err, EIO, "HMAC-SHA256 failed");
  int entries = 0, match = 0;
  for (const char *p = sig; *p;) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    const char *e = strchr(p, ' ');
    size_t el = e ? (size_t)(e - p) : strlen(p);
    if (++entries > 8) {
      OPENSSL_cleanse(mac, sizeof mac);
      return al_error_set(err, EACCES, "webhook-signature: more than 8 entries");
    }
    if (el > 3 && memcmp(p, "v1,", 3) == 0) {
      unsigned char want[34];
      int wl = b64_decode(p + 3, el - 3, want, sizeof want);
      if (wl == 32)
        match |= CRYPTO_memcmp(want, mac, 32) == 0;
    }
    p += el;
  }
  OPENSSL_cleanse(mac, sizeof mac);
  if (entries == 0)
    return al_error_set(err, EACCES, "webhook-signature missing");
  if (!match)
    return al_error_set(err, EACCES,
                        "webhook-signature: no v1 entry matches the body (signing token, "
                        "webhook-id and webhook-timestamp)");
  return 0;
}

bool al_gl_webhook_uuid_ok(const char *s)
{
  if (!s || strlen(s) != 36)
    return false;
  for (size_t i = 0; i < 36; i++) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-')
        return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

/* ---- the payload ---- */

static int ignore(al_gl_webhook_event *out, const char *why)
{
  out->kind = AL_WEBHOOK_IGNORE;
  snprintf(out->why, sizeof out->why, "%s", why);
  return 0;
}

/* Whether the JSON array of label objects holds one titled label. */
static int has_label(json_t *arr, const char *path, const char *label, bool *out, al_error *err)
{
  *out = false;
  if (!json_is_array(arr))
    return al_error_set(err, EINVAL, "%s: expected an array of labels", path);
  if (json_array_size(arr) > 1000)
    return al_error_set(err, EINVAL, "%s: more than 1000 labels", path);
  size_t i;
  json_t *l;
  json_array_foreach(arr, i, l)
  {
    const char *t;
    if (al_wh_json_string(l, "title", path, 255, &t, err) < 0)
      return -1;
    if (strcmp(t, label) == 0)
      *out = true;
  }
  return 0;
}

int al_gl_webhook_parse(const char *event, const char *body, size_t len, const char *label,
                        const char *command, al_gl_webhook_event *out, al_error *err)
{
  memset(out, 0, sizeof *out);
  size_t el = event ? strlen(event) : 0;
  if (el == 0 || el > 64)
    return al_error_set(err, EINVAL, "X-Gitlab-Event missing or longer than 64 bytes");
  for (size_t i = 0; i < el; i++)
    if (!((event[i] >= 'a' && event[i] <= 'z') || (event[i] >= 'A' && event[i] <= 'Z') ||
          event[i] == ' '))
      return al_error_set(err, EINVAL, "X-Gitlab-Event: expected letters and spaces");
  snprintf(out->event, sizeof out->event, "%s", event);
  bool issue_hook = strcmp(event, "Issue Hook") == 0, note_hook = strcmp(event, "Note Hook") == 0;
  if (!issue_hook && !note_hook)
    return ignore(out, "not a trigger event (Issue Hook, Note Hook)");
  json_error_t je;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!j)
    return al_error_set(err, EINVAL, "body: not JSON (%s at byte %d)", je.text, je.position);
  int ret = -1;
  const char *s;
  long long v;
  if (!json_is_object(j)) {
    al_error_set(err, EINVAL, "body: expected a JSON object");
    goto out;
  }
  if (al_wh_json_string(j, "object_kind", "object_kind", 32, &s, err) < 0)
    goto out;
  if (strcmp(s, issue_hook ? "issue" : "note") != 0) {
    al_error_set(err, EINVAL, "object_kind `%s` does not agree with X-Gitlab-Event `%s`", s, event);
    goto out;
  }
  json_t *project = json_object_get(j, "project");
  if (al_wh_json_string(project, "path_with_namespace", "project.path_with_namespace", 255, &s,
                        err) < 0)
    goto out;
  const char *why;
  size_t pieces;
  if (al_gitlab_path_check(s, &pieces, &why) < 0) {
    al_error_set(err, EINVAL, "project.path_with_namespace: %s", why);
    goto out;
  }
  snprintf(out->project, sizeof out->project, "%s", s);
  if (al_wh_json_int(project, "id", "project.id", INT64_MAX / 2, &out->project_id, err) < 0)
    goto out;
  json_t *user = json_object_get(j, "user");
  if (al_wh_json_string(user, "username", "user.username", 255, &s, err) < 0)
    goto out;
  if (al_gitlab_username_check(s, &why) < 0) {
    al_error_set(err, EINVAL, "user.username: %s", why);
    goto out;
  }
  snprintf(out->sender, sizeof out->sender, "%s", s);
  json_t *attrs = json_object_get(j, "object_attributes");
  if (!json_is_object(attrs)) {
    al_error_set(err, EINVAL, "object_attributes: expected an object");
    goto out;
  }
  if (issue_hook) {
    if (al_wh_json_int(attrs, "iid", "object_attributes.iid", 2147483647, &v, err) < 0)
      goto out;
    out->number = (unsigned long)v;
    if (al_wh_json_string(attrs, "action", "object_attributes.action", 32, &s, err) < 0)
      goto out;
    if (strcmp(s, "update") != 0 && strcmp(s, "open") != 0) {
      ret = ignore(out, "Issue Hook: only a label added (action update or open) triggers");
      goto out;
    }
    json_t *ch = json_object_get(json_object_get(j, "changes"), "labels");
    if (!ch) {
      ret = ignore(out, "Issue Hook: no label changed");
      goto out;
    }
    bool now_has, had;
    if (has_label(json_object_get(ch, "current"), "changes.labels.current", label, &now_has, err) <
            0 ||
        has_label(json_object_get(ch, "previous"), "changes.labels.previous", label, &had, err) < 0)
      goto out;
    if (!now_has || had) {
      ret = ignore(out, "Issue Hook: the trigger label was not added by this change");
      goto out;
    }
  } else {
    if (al_wh_json_string(attrs, "noteable_type", "object_attributes.noteable_type", 32, &s, err) <
        0)
      goto out;
    if (strcmp(s, "Issue") != 0) {
      ret = ignore(out, "Note Hook: a note on something other than an issue");
      goto out;
    }
    json_t *act = json_object_get(attrs, "action");
    if (act) {
      if (al_wh_json_string(attrs, "action", "object_attributes.action", 32, &s, err) < 0)
        goto out;
      if (strcmp(s, "create") != 0) {
        ret = ignore(out, "Note Hook: only a new note (action create) triggers");
        goto out;
      }
    }
    if (al_wh_json_int(json_object_get(j, "issue"), "iid", "issue.iid", 2147483647, &v, err) < 0)
      goto out;
    out->number = (unsigned long)v;
    if (al_wh_json_string(attrs, "note", "object_attributes.note", 1 << 20, &s, err) < 0)
      goto out;
    if (!al_wh_command_matches(s, command)) {
      ret = ignore(out, "Note Hook: not the trigger command");
      goto out;
    }
  }
  out->kind = AL_WEBHOOK_RUN;
  ret = 0;
out:
  json_decref(j);
  return ret;
}
