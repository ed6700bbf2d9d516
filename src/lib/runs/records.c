/* Finding, reading and listing run records, and removing old ones (runs.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runs/runs.h"
#include "common/util.h"

int al_runs_default_dir(char *out, size_t n, bool create, al_error *err)
{
  const char *state = getenv("XDG_STATE_HOME");
  const char *home = getenv("HOME");
  int w;
  if (state && state[0] == '/')
    w = snprintf(out, n, "%s/airlock/runs", state);
  else
    w = snprintf(out, n, "%s/.local/state/airlock/runs", home && home[0] == '/' ? home : "/tmp");
  if (w < 0 || (size_t)w >= n)
    return al_error_set(err, ENAMETOOLONG, "the run record directory: path too long");
  if (create) {
    for (char *q = out + 1; *q; q++)
      if (*q == '/') {
        *q = '\0';
        (void)mkdir(out, 0700);
        *q = '/';
      }
    (void)mkdir(out, 0700);
  }
  return 0;
}

static bool is_lower_hex(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* 1 to `max` decimal digits at *s, moved past them. */
static bool digits(const char **s, size_t max)
{
  size_t n = strspn(*s, "0123456789");
  *s += n;
  return n >= 1 && n <= max;
}

/* "<16 hex>.json": a record named by its run id */
static bool is_id_name(const char *name)
{
  return strlen(name) == AL_RUN_ID_LEN + 5 && is_lower_hex(name, AL_RUN_ID_LEN) &&
         strcmp(name + AL_RUN_ID_LEN, ".json") == 0;
}

bool al_runs_is_record_name(const char *name)
{
  if (is_id_name(name))
    return true;
  /* airlock serve's records/ROW-ATTEMPT.json (serve.c) */
  const char *p = name;
  return digits(&p, 19) && *p++ == '-' && digits(&p, 9) && strcmp(p, ".json") == 0;
}

/* The checks of al_run_record_loadat on an open file. */
static int load_fd(int fd, const char *name, json_t **out, struct stat *st_out, al_error *err)
{
  struct stat st;
  if (fstat(fd, &st) < 0)
    return al_make_error(err, errno, "`%s`", name);
  if (!S_ISREG(st.st_mode))
    return al_error_set(err, EINVAL, "`%s`: not a regular file", name);
  if ((uint64_t)st.st_size > AL_RUN_RECORD_MAX)
    return al_error_set(err, EFBIG, "`%s`: %lld bytes, a run record has at most %u", name,
                        (long long)st.st_size, AL_RUN_RECORD_MAX);
  size_t len = (size_t)st.st_size;
  al_autofree char *buf = al_xmalloc(len + 1);
  ssize_t got = al_read_all(fd, buf, len);
  if (got < 0)
    return al_make_error(err, errno, "reading `%s`", name);
  json_error_t je;
  json_t *j = json_loadb(buf, (size_t)got, JSON_REJECT_DUPLICATES, &je);
  if (!j)
    return al_error_set(err, EINVAL, "`%s`: not JSON (line %d: %.120s)", name, je.line, je.text);
  const char *schema = json_string_value(json_object_get(j, "schema"));
  const char *id = json_string_value(json_object_get(j, "run_id"));
  const char *why = NULL;
  if (!json_is_object(j))
    why = "not a JSON object";
  else if (!schema || strcmp(schema, AL_RUN_SCHEMA) != 0)
    why = "no \"schema\": \"" AL_RUN_SCHEMA "\"";
  else if (!id || strlen(id) != AL_RUN_ID_LEN || !is_lower_hex(id, AL_RUN_ID_LEN))
    why = "no \"run_id\" of 16 lower-case hex digits";
  if (why) {
    json_decref(j);
    return al_error_set(err, EINVAL, "`%s`: not a run record (%s)", name, why);
  }
  if (st_out)
    *st_out = st;
  *out = j;
  return 0;
}

int al_run_record_loadat(int dirfd, const char *name, json_t **out, struct stat *st_out,
                         al_error *err)
{
  *out = NULL;
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return errno == ELOOP ? al_error_set(err, ELOOP, "`%s`: a symlink, not a run record", name)
                          : al_make_error(err, errno, "`%s`", name);
  int r = load_fd(fd, name, out, st_out, err);
  close(fd);
  return r;
}

static int entry_cmp(const void *a, const void *b)
{
  const al_run_entry *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec)
    return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec)
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
  return -strcmp(x->name, y->name);
}

/* The record names of dir with their mtimes (lstat: a symlink is listed
 * with its own time and refused when read). A missing dir is empty. */
static int scan(const char *dir, int *dirfd_out, al_run_entry **out, size_t *n, al_error *err)
{
  *out = NULL;
  *n = 0;
  *dirfd_out = -1;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return errno == ENOENT ? 0 : al_make_error(err, errno, "run record directory `%s`", dir);
  DIR *d = fdopendir(dup(dfd));
  if (!d) {
    close(dfd);
    return al_make_error(err, errno, "run record directory `%s`", dir);
  }
  size_t cap = 0;
  al_run_entry *v = NULL;
  const struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!al_runs_is_record_name(de->d_name))
      continue;
    struct stat st;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue; /* gone meanwhile */
    if (*n == cap) {
      cap = cap ? cap * 2 : 64;
      v = al_xrealloc(v, cap * sizeof *v);
    }
    al_run_entry *e = &v[(*n)++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", de->d_name);
    e->mtime = st.st_mtim;
  }
  closedir(d);
  if (*n > 1)
    qsort(v, *n, sizeof *v, entry_cmp);
  *out = v;
  *dirfd_out = dfd;
  return 0;
}

int al_runs_list(const char *dir, al_run_entry **out, size_t *n, al_error *err)
{
  int dfd;
  if (scan(dir, &dfd, out, n, err) < 0)
    return -1;
  for (size_t i = 0; i < *n; i++) {
    al_run_entry *e = &(*out)[i];
    json_t *rec = NULL;
    al_error le = {0};
    if (al_run_record_loadat(dfd, e->name, &rec, NULL, &le) < 0) {
      snprintf(e->problem, sizeof e->problem, "%s", le.msg);
      continue;
    }
    al_run_summarize(rec, &e->sum);
    json_decref(rec);
    e->ok = true;
  }
  if (dfd >= 0)
    close(dfd);
  return 0;
}

static bool run_is_path(const char *run, size_t n)
{
  return strchr(run, '/') || (n > 5 && strcmp(run + n - 5, ".json") == 0);
}

int al_runs_ref_check(const char *run, al_error *err)
{
  size_t n = strlen(run);
  if (run_is_path(run, n) || (n >= 4 && n <= AL_RUN_ID_LEN && is_lower_hex(run, n)))
    return 0;
  return al_error_set(err, EINVAL,
                      "run `%s`: expected a run id (16 lower-case hex digits), a unique "
                      "prefix of one (at least 4), or a path to a record (holding a `/` or "
                      "ending in `.json`)",
                      run);
}

int al_runs_resolve(const char *dir, const char *run, char **path_out, al_error *err)
{
  *path_out = NULL;
  size_t n = strlen(run);
  if (run_is_path(run, n)) {
    struct stat st;
    if (stat(run, &st) < 0)
      return al_make_error(err, errno, "run `%s`", run);
    *path_out = al_xstrdup(run);
    return 0;
  }
  if (al_runs_ref_check(run, err) < 0)
    return -1;
  int dfd;
  al_run_entry *v = NULL;
  size_t nv = 0;
  if (scan(dir, &dfd, &v, &nv, err) < 0)
    return -1;
  if (dfd >= 0)
    close(dfd);
  const char *found = NULL;
  size_t matches = 0;
  char some[128] = "";
  for (size_t i = 0; i < nv; i++)
    if (strncmp(v[i].name, run, n) == 0) {
      if (matches++ == 0)
        found = v[i].name;
      size_t l = strlen(some);
      if (matches <= 4 && l + AL_RUN_ID_LEN + 3 < sizeof some)
        snprintf(some + l, sizeof some - l, "%s%.*s", l ? ", " : "", AL_RUN_ID_LEN, v[i].name);
    }
  if (matches == 0) {
    free(v);
    v = NULL;
    /* serve's records are named by queue row (ROW-ATTEMPT.json): the id
     * `airlock runs` lists for them is the one inside, so look there */
    if (al_runs_list(dir, &v, &nv, err) < 0)
      return -1;
    for (size_t i = 0; i < nv; i++)
      if (v[i].ok && !is_id_name(v[i].name) && strncmp(v[i].sum.id, run, n) == 0) {
        if (matches++ == 0)
          found = v[i].name;
        size_t l = strlen(some);
        if (matches <= 4 && l + AL_RUN_ID_LEN + 3 < sizeof some)
          snprintf(some + l, sizeof some - l, "%s%s", l ? ", " : "", v[i].sum.id);
      }
  }
  int r = 0;
  if (matches == 0)
    r = al_error_set(err, ENOENT, "run `%s`: no record with that id in `%s`", run, dir);
  else if (matches > 1)
    r = al_error_set(err, EINVAL, "run `%s`: %zu records start with it (%s%s); give more digits",
                     run, matches, some, matches > 4 ? ", ..." : "");
  else
    *path_out = al_strdup_printf("%s/%s", dir, found);
  free(v);
  return r;
}

int al_runs_gc(const char *dir, const al_runs_gc_opts *o, al_runs_gc_report report, void *ctx,
               al_runs_gc_result *res, al_error *err)
{
  memset(res, 0, sizeof *res);
  if (!o->has_keep && !o->has_older_than)
    return al_error_set(err, EINVAL, "gc needs --keep N, --older-than D or both");
  int dfd;
  al_run_entry *v = NULL;
  size_t nv = 0;
  if (scan(dir, &dfd, &v, &nv, err) < 0)
    return -1;
  int rc = 0;
  size_t rank = 0; /* among the readable records, newest first */
  for (size_t i = 0; i < nv; i++) {
    json_t *rec = NULL;
    struct stat st;
    al_error le = {0};
    if (al_run_record_loadat(dfd, v[i].name, &rec, &st, &le) < 0) {
      res->not_records++;
      report(ctx, "not a run record", v[i].name, le.msg);
      continue;
    }
    json_decref(rec);
    size_t my_rank = rank++;
    bool beyond_keep = !o->has_keep || my_rank >= o->keep;
    double age_ms = ((double)o->now - (double)st.st_mtim.tv_sec) * 1000.0;
    bool old = !o->has_older_than || age_ms > (double)o->older_than_ms;
    char why[128];
    if (!beyond_keep || !old) {
      snprintf(why, sizeof why, "%s", !beyond_keep ? "among the newest to keep" : "not old enough");
      res->kept++;
      report(ctx, "keep", v[i].name, why);
      continue;
    }
    snprintf(why, sizeof why, "record %zu by age, written %.0f h ago", my_rank + 1,
             age_ms / 3600000.0);
    if (!o->dry_run) {
      /* the file removed is the one just checked, not one put in its
       * place meanwhile */
      struct stat now;
      if (fstatat(dfd, v[i].name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev ||
          now.st_ino != st.st_ino) {
        res->not_records++;
        report(ctx, "not a run record", v[i].name, "replaced while gc read it");
        continue;
      }
      if (unlinkat(dfd, v[i].name, 0) < 0) {
        rc = al_make_error(err, errno, "remove `%s/%s`", dir, v[i].name);
        report(ctx, "keep", v[i].name, err->msg);
        res->kept++;
        continue;
      }
    }
    res->removed++;
    report(ctx, o->dry_run ? "would remove" : "remove", v[i].name, why);
  }
  if (dfd >= 0)
    close(dfd);
  free(v);
  return rc;
}
