/* The ETag cache of etags.h: a jansson array of entries behind a mutex. */
#include "forge/etags.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define FILE_MAX (8u << 20)

struct al_etags {
  pthread_mutex_t lock;
  char *file, *api, *repo, *prefix; /* prefix: "/repos/owner/name" */
  json_t *entries;                  /* [{path, etag, body, next?}], oldest first */
  bool dirty;
  unsigned reused, stored;
};

static bool printable(const char *s, size_t n, bool space_ok)
{
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c > 0x7e || (!space_ok && c == ' '))
      return false;
  }
  return true;
}

/* A quoted entity-tag (RFC 9110 §8.8.3), optionally weak. */
static bool etag_ok(const char *t)
{
  size_t n = t ? strlen(t) : 0;
  if (n < 2 || n > 200 || !printable(t, n, false))
    return false;
  if (!strncmp(t, "W/", 2)) {
    t += 2;
    n -= 2;
  }
  return n >= 2 && t[0] == '"' && t[n - 1] == '"' && !memchr(t + 1, '"', n - 2);
}

static bool path_ok(const al_etags *e, const char *p)
{
  if (!p)
    return false;
  size_t n = strlen(p), k = strlen(e->prefix);
  return n <= 1024 && !strncmp(p, e->prefix, k) && (p[k] == '\0' || p[k] == '/' || p[k] == '?') &&
         printable(p, n, false) && !strstr(p, "/../");
}

/* Why the loaded document breaks a rule, or NULL. */
static const char *check_doc(const al_etags *e, json_t *d)
{
  if (!json_is_object(d))
    return "not a JSON object";
  if (json_integer_value(json_object_get(d, "version")) != 1)
    return "version is not 1";
  const char *api = json_string_value(json_object_get(d, "api"));
  const char *repo = json_string_value(json_object_get(d, "repo"));
  if (!api || !repo || strcmp(repo, e->repo) != 0)
    return "api or repo missing, or another repository's";
  if (strcmp(api, e->api) != 0)
    return ""; /* another API URL on the same host (a test forge's new port): stale */
  json_t *en = json_object_get(d, "entries");
  if (!json_is_array(en) || json_array_size(en) > AL_ETAGS_MAX)
    return "entries is not an array of at most 128";
  size_t i;
  json_t *o;
  json_array_foreach(en, i, o)
  {
    json_t *b = json_object_get(o, "body"), *nx = json_object_get(o, "next");
    if (!json_is_object(o) || json_object_size(o) > 4 ||
        !path_ok(e, json_string_value(json_object_get(o, "path"))) ||
        !etag_ok(json_string_value(json_object_get(o, "etag"))) || !json_is_string(b) ||
        json_string_length(b) > AL_ETAGS_BODY_MAX ||
        (nx && (!json_is_string(nx) || !path_ok(e, json_string_value(nx)))))
      return "an entry breaks the rules (path under the repository, quoted ETag, body of "
             "at most 1 MiB)";
  }
  return NULL;
}

static void load(al_etags *e)
{
  int fd = open(e->file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT)
      al_warn("ETag cache %s: %s; reading without it", e->file, strerror(errno));
    return;
  }
  struct stat st;
  const char *why = NULL;
  char *buf = NULL;
  if (fstat(fd, &st) < 0)
    why = strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != geteuid() || (st.st_mode & 022))
    why = "not owned by this user, or writable by others";
  else if ((size_t)st.st_size > FILE_MAX)
    why = "over 8 MiB";
  if (!why) {
    buf = al_xmalloc((size_t)st.st_size + 1);
    ssize_t n = read(fd, buf, (size_t)st.st_size);
    if (n != st.st_size)
      why = "short read";
    else {
      json_error_t je;
      json_t *d = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &je);
      why = d ? check_doc(e, d) : "not JSON";
      if (!why) {
        json_decref(e->entries);
        e->entries = json_incref(json_object_get(d, "entries"));
      }
      json_decref(d);
    }
  }
  free(buf);
  close(fd);
  if (why && *why)
    al_warn("ETag cache %s ignored: %s (the reads go without it)", e->file, why);
}

int al_etags_open(const char *file, const char *api_base, const char *repo, al_etags **out,
                  al_error *err)
{
  *out = NULL;
  if (!file || !api_base || !repo || !strchr(repo, '/'))
    return al_error_set(err, EINVAL, "ETag cache: a file, an API base and owner/name are needed");
  al_etags *e = al_xcalloc(1, sizeof *e);
  pthread_mutex_init(&e->lock, NULL);
  e->file = al_xstrdup(file);
  e->api = al_xstrdup(api_base);
  e->repo = al_xstrdup(repo);
  e->prefix = al_strdup_printf("/repos/%s", repo);
  e->entries = json_array();
  load(e);
  *out = e;
  return 0;
}

int al_etags_save(al_etags *e, al_error *err)
{
  pthread_mutex_lock(&e->lock);
  if (!e->dirty) {
    pthread_mutex_unlock(&e->lock);
    return 0;
  }
  json_t *d = json_pack("{s:i, s:s, s:s, s:O}", "version", 1, "api", e->api, "repo", e->repo,
                        "entries", e->entries);
  char *s = d ? json_dumps(d, JSON_COMPACT) : NULL;
  json_decref(d);
  e->dirty = false;
  pthread_mutex_unlock(&e->lock);
  if (!s)
    return al_error_set(err, ENOMEM, "ETag cache %s", e->file);
  al_autofree char *tmp = al_strdup_printf("%s.%d.tmp", e->file, (int)getpid());
  int r = al_write_file(tmp, s, strlen(s), 0600, err);
  free(s);
  if (r < 0)
    return al_error_wrap(err, "ETag cache");
  if (rename(tmp, e->file) < 0) {
    int en = errno;
    unlink(tmp);
    return al_make_error(err, en, "ETag cache %s", e->file);
  }
  return 0;
}

void al_etags_free(al_etags *e)
{
  if (!e)
    return;
  json_decref(e->entries);
  free(e->file);
  free(e->api);
  free(e->repo);
  free(e->prefix);
  pthread_mutex_destroy(&e->lock);
  free(e);
}

char *al_etags_if_none_match(al_etags *e, const char *path)
{
  char *v = NULL;
  pthread_mutex_lock(&e->lock);
  size_t i;
  json_t *o;
  json_array_foreach(e->entries, i, o)
  {
    if (strcmp(json_string_value(json_object_get(o, "path")), path) != 0)
      continue;
    const char *t = json_string_value(json_object_get(o, "etag"));
    char *n = v ? al_strdup_printf("%s, %s", v, t) : al_xstrdup(t);
    free(v);
    v = n;
  }
  pthread_mutex_unlock(&e->lock);
  return v;
}

bool al_etags_hit(al_etags *e, const char *path, const char *etag, char **body, size_t *len,
                  char **next)
{
  bool hit = false;
  pthread_mutex_lock(&e->lock);
  json_t *found = NULL, *o;
  size_t i, n = 0;
  json_array_foreach(e->entries, i, o)
  {
    if (strcmp(json_string_value(json_object_get(o, "path")), path) != 0)
      continue;
    n++;
    if (!etag || !strcmp(json_string_value(json_object_get(o, "etag")), etag))
      found = o;
  }
  if (found && (etag || n == 1)) {
    json_t *b = json_object_get(found, "body");
    *len = json_string_length(b);
    *body = al_xmalloc(*len + 1);
    memcpy(*body, json_string_value(b), *len + 1);
    const char *nx = json_string_value(json_object_get(found, "next"));
    *next = nx ? al_xstrdup(nx) : NULL;
    e->reused++;
    hit = true;
  }
  pthread_mutex_unlock(&e->lock);
  return hit;
}

void al_etags_store(al_etags *e, const char *path, const char *etag, const char *body, size_t len,
                    const char *next)
{
  if (!path_ok(e, path) || !etag_ok(etag) || len > AL_ETAGS_BODY_MAX || (next && !path_ok(e, next)))
    return;
  json_t *b = json_stringn(body, len);
  if (!b)
    return; /* not UTF-8: not an API answer we keep */
  pthread_mutex_lock(&e->lock);
  size_t same = 0, first = (size_t)-1;
  for (size_t i = json_array_size(e->entries); i-- > 0;) {
    json_t *o = json_array_get(e->entries, i);
    if (strcmp(json_string_value(json_object_get(o, "path")), path) != 0)
      continue;
    if (!strcmp(json_string_value(json_object_get(o, "etag")), etag)) {
      json_array_remove(e->entries, i);
      continue;
    }
    same++;
    first = i;
  }
  if (same >= AL_ETAGS_PER_PATH && first != (size_t)-1)
    json_array_remove(e->entries, first);
  while (json_array_size(e->entries) >= AL_ETAGS_MAX)
    json_array_remove(e->entries, 0);
  json_t *o = json_pack("{s:s, s:s, s:o}", "path", path, "etag", etag, "body", b);
  if (o && next)
    json_object_set_new(o, "next", json_string(next));
  if (o) {
    json_array_append_new(e->entries, o);
    e->dirty = true;
    e->stored++;
  }
  pthread_mutex_unlock(&e->lock);
}

void al_etags_stats(const al_etags *e, unsigned *reused, unsigned *stored)
{
  *reused = e->reused;
  *stored = e->stored;
}
