/* Where `airlock render` puts the files the manifests refer to. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "render/render.h"
#include "sandbox/syscalls.h"

char *al_render_absolute(const char *path)
{
  if (path[0] == '/')
    return al_xstrdup(path);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    return NULL;
  return al_strdup_printf("%s/%s", cwd, path);
}

int al_render_seccomp_target(bool compose, const char *out_path, const char *seccomp_out,
                             char **path, bool *write, al_error *err)
{
  *path = NULL;
  *write = seccomp_out || (compose && out_path && strcmp(out_path, "-") != 0);
  if (compose && !seccomp_out) {
    const char *slash = out_path ? strrchr(out_path, '/') : NULL;
    al_autofree char *rel =
        slash ? al_strdup_printf("%.*s/airlock-seccomp.json", (int)(slash - out_path), out_path)
              : al_xstrdup("airlock-seccomp.json");
    *path = al_render_absolute(rel);
  } else if (seccomp_out) {
    *path = al_render_absolute(seccomp_out);
  } else {
    return 0;
  }
  if (!*path)
    return al_make_error(err, errno, "getcwd");
  return 0;
}

int al_render_files(const al_render_files_opts *f, al_render_opts *ro, char **text,
                    al_render_notes *notes, al_error *err)
{
  *text = NULL;
  memset(notes, 0, sizeof *notes);
  notes->status = 2;
  notes->usage = true;
  al_policy *policy = NULL;
  if (al_policy_load_or_default(f->policy_path, &policy, err) < 0)
    return -1;
  al_autofree char *policy_abs = f->policy_path ? al_render_absolute(f->policy_path) : NULL;
  al_autofree char *policy_text = NULL;
  al_autofree char *profile = NULL;
  al_autofree char *seccomp_abs = NULL;
  bool write_seccomp = false;
  int r = -1;
  notes->usage = false;
  /* fail closed before anything is written: sealed needs --env-credentials */
  if ((f->policy_path && al_read_file(f->policy_path, 1 << 20, &policy_text, NULL, err) < 0) ||
      al_render_check_credentials(policy, ro, f->compose ? "render compose" : "render kubernetes",
                                  err) < 0)
    goto out;
  notes->status = 1;
  if (al_seccomp_profile_json(&profile, err) < 0 ||
      al_render_seccomp_target(f->compose, f->out_path, f->seccomp_out, &seccomp_abs,
                               &write_seccomp, err) < 0)
    goto out;
  if (seccomp_abs && !write_seccomp) {
    snprintf(notes->seccomp_not_written, sizeof notes->seccomp_not_written, "%s", seccomp_abs);
  } else if (seccomp_abs) {
    if (al_write_file(seccomp_abs, profile, strlen(profile), 0644, err) < 0) {
      /* a new user gave -o FILE only: name where this path came from */
      al_error_wrap(err, f->seccomp_out ? "--seccomp-out"
                                        : "the seccomp profile beside -o (--seccomp-out FILE "
                                          "writes it elsewhere)");
      goto out;
    }
    snprintf(notes->seccomp_written, sizeof notes->seccomp_written, "%s", seccomp_abs);
  }
  ro->policy_path = policy_abs;
  ro->policy_text = policy_text;
  ro->seccomp_path = f->compose ? seccomp_abs : f->seccomp_profile;
  notes->sealed_as_env = policy->credentials.present && policy->credentials.mode == AL_CRED_SEALED;
  notes->relay_not_rendered = policy->relay.present && !f->compose;
  notes->status = 2;
  notes->usage = true;
  r = f->compose ? al_render_compose(policy, ro, text, err)
                 : al_render_kubernetes(policy, ro, text, err);
  ro->policy_path = ro->policy_text = ro->seccomp_path = NULL;
out:
  al_policy_free(policy);
  return r;
}
