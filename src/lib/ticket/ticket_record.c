/* The PR the run is judged by, and the run record on disk. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>
#include <signal.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "ticket/ticket_internal.h"
#include "common/owned.h"
#include "common/exitcodes.h"
#include "common/redact.h"
#include "common/util.h"
#include "runs/runs.h"

/* The PR the record and the operator are pointed at is the one the forge
 * has from the run's branch (found by the review phase), never just what
 * the agent claims: an agent could name a human's PR or another run's. */
void tk_verify_pr(struct ticket *t, al_ticket_outcome *res)
{
  json_t *rep = json_object_get(t->rec, "pull_request_reported");
  const char *reported = rep ? json_string_value(json_object_get(rep, "url")) : NULL;
  json_t *found = json_object_get(json_object_get(t->rec, "review"), "pull_request");
  const char *by = "review";
  if (!json_is_object(found)) {
    /* a driver without the review's reads: the outputs read it back
     * (ticket_outputs.c read_back) */
    found = json_object_get(json_object_get(json_object_get(t->rec, "outputs"), "pull_request"),
                            "read_back");
    by = "outputs";
  }
  const char *url = found ? json_string_value(json_object_get(found, "url")) : NULL;
  json_t *o = json_pack("{s:s, s:b}", "branch", t->branch, "verified", url != NULL);
  if (url)
    json_object_set_new(o, "read_by", json_string(by));
  json_object_set_new(o, "url", url ? json_string(url) : json_null());
  json_object_set_new(o, "reported_by_agent", reported ? json_string(reported) : json_null());
  if (url && reported && strcmp(url, reported) != 0)
    json_object_set_new(o, "mismatch", json_true());
  res->pr_verified = url && strlen(url) < sizeof res->pr_url;
  if (res->pr_verified)
    snprintf(res->pr_url, sizeof res->pr_url, "%s", url);
  else
    res->pr_url[0] = '\0';
  res->pr_reported[0] = '\0';
  if (reported && (!url || strcmp(url, reported) != 0))
    snprintf(res->pr_reported, sizeof res->pr_reported, "%s", reported);
  json_object_set_new(t->rec, "pull_request", o);
  json_object_del(t->rec, "pull_request_reported");
}

int tk_exit_code(const struct ticket *t, const al_ticket_outcome *res, int rc)
{
  if (t->interrupted)
    return AL_EXIT_SIGNAL + (t->signo ? t->signo : SIGINT);
  if (t->security_refusal)
    return AL_EXIT_SECURITY;
  if (t->timed_out)
    return AL_EXIT_TIMEOUT;
  if (rc < 0)
    return AL_EXIT_FAILED;
  return res->pr_verified ? AL_EXIT_OK : AL_EXIT_NO_CHANGES;
}

/* mkdir -p of the directories above path (0700 for the ones made). */
static int make_parents(const char *path, al_error *err)
{
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir)
    return 0;
  *slash = '\0';
  for (char *q = dir + 1;; q++) {
    bool end = *q == '\0';
    if (*q == '/' || end) {
      *q = '\0';
      if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return al_make_error(err, errno, "the directory `%s` cannot be created", dir);
      struct stat st;
      if (stat(dir, &st) < 0)
        return al_make_error(err, errno, "`%s`", dir);
      if (!S_ISDIR(st.st_mode))
        return al_make_error(err, ENOTDIR, "`%s`", dir);
      if (end)
        break;
      *q = '/';
    }
  }
  return 0;
}

int tk_record_path(const struct ticket *t, char *path, size_t n, al_error *err)
{
  if (t->o->record_path) {
    if ((size_t)snprintf(path, n, "%s", t->o->record_path) >= n)
      return al_error_set(err, ENAMETOOLONG, "run record `%.200s...`: the path is too long",
                          t->o->record_path);
    return 0;
  }
  char dir[3800];
  if (al_runs_default_dir(dir, sizeof dir, false, err) < 0) /* made by tk_check_record */
    return -1;
  snprintf(path, n, "%s/%s.json", dir, t->run_id);
  return 0;
}

int tk_check_record(struct ticket *t, size_t room, al_error *err)
{
  char path[4096];
  if (tk_record_path(t, path, sizeof path, err) < 0)
    return -1;
  al_error e = {0};
  if (make_parents(path, &e) < 0)
    return al_error_set(err, e.code, "run record `%s` cannot be written: %s%s", path, e.msg,
                        t->o->record_path ? ""
                                          : " (the default place is $XDG_STATE_HOME/airlock/runs, "
                                            "else $HOME/.local/state/airlock/runs: set one to a "
                                            "directory this user may write, or give --record "
                                            "FILE)");
  /* the record file itself, when it is there: opened for writing without
   * truncating it (when it is not, the probe below is made where it will
   * be; no empty record is left for `airlock runs` to find meanwhile) */
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno != ENOENT)
    return al_make_error(err, errno, "run record `%s` cannot be written", path);
  if (fd >= 0)
    close(fd);
  /* room: a probe file beside it, written whole, then removed */
  char probe[4200];
  snprintf(probe, sizeof probe, "%s.probe-%s", path, t->run_id);
  fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return al_make_error(err, errno, "run record `%s`: a probe file cannot be made beside it",
                         path);
  static const char zeros[16384];
  int r = 0;
  for (size_t done = 0; done < room && r == 0; done += sizeof zeros)
    r = al_write_all(fd, zeros, sizeof zeros);
  if (r == 0 && fsync(fd) < 0)
    r = -errno;
  close(fd);
  unlink(probe);
  if (r < 0)
    return al_make_error(err, -r, "run record `%s`: no room for it (a probe of %zu KiB)", path,
                         room / 1024);
  return 0;
}

int tk_write_record(struct ticket *t, al_ticket_outcome *res, al_error *err)
{
  json_t *phases = json_array();
  for (size_t i = 0; i < t->nphases; i++)
    json_array_append_new(phases, json_pack("{s:s, s:I, s:s, s:s*}", "name", t->phases[i].name,
                                            "ms", (json_int_t)t->phases[i].ms, "status",
                                            t->phases[i].status, "detail", t->phases[i].detail));
  json_object_set_new(t->rec, "phases", phases);
  json_object_set_new(t->rec, "requests", tk_requests_json(t));
  json_object_set_new(t->rec, "duration_ms", json_integer((json_int_t)(al_now_ms() - t->t0)));
  json_object_set_new(t->rec, "interrupted", json_boolean(t->interrupted));
  if (t->interrupted && t->signo)
    json_object_set_new(t->rec, "signal", json_string(al_signal_name(t->signo)));
  char *text = json_dumps(t->rec, JSON_INDENT(2) | JSON_SORT_KEYS);
  if (!text)
    return al_make_error(err, ENOMEM, "run record");
  /* Belt and braces: nothing token-shaped ever reaches the disk. */
  al_autofree char *clean = al_redact(text);
  free(text);

  char path[4096];
  if (tk_record_path(t, path, sizeof path, err) < 0)
    return -1;
  al_error pe = {0};
  (void)make_parents(path, &pe); /* made by tk_check_record unless the run stopped before it */
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return al_make_error(err, errno, "run record `%s`", path);
  int r = al_write_all(fd, clean, strlen(clean));
  if (r == 0)
    r = al_write_all(fd, "\n", 1);
  if (r == 0 && fsync(fd) < 0)
    r = -errno;
  if (close(fd) < 0 && r == 0)
    r = -errno;
  if (r < 0)
    return al_make_error(err, -r, "write run record `%s`", path);
  { /* the hash the review notes carry: of the file's bytes */
    al_autofree char *bytes = al_strdup_printf("%s\n", clean);
    al_sha256_hex(bytes, strlen(bytes), t->record_sha256);
  }
  snprintf(res->record_path, sizeof res->record_path, "%s", path);
  if (t->o->json)
    printf("%s\n", clean);
  return 0;
}
