/* A test-only driver of forge/gitlab.c against airlock-gitlab-forge
 * (gitlab-forge.sh): mint the run's token, use it, open the Draft MR,
 * revoke and confirm the 401. The control: a revocation aimed at another
 * token id leaves the run's token alive, and the confirmation must say so.
 * usage: gitlab-driver API_URL ADMIN_TOKEN_FILE PROJECT BRANCH
 * Prints one "key value" line per fact; never a token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forge/ghapi.h"
#include "forge/gitlab.h"

int main(int argc, char **argv)
{
  if (argc != 5) {
    fprintf(stderr, "usage: gitlab-driver API_URL ADMIN_TOKEN_FILE PROJECT BRANCH\n");
    return 2;
  }
  char admin[256] = "";
  FILE *f = fopen(argv[2], "r");
  if (!f || !fgets(admin, sizeof admin, f)) {
    fprintf(stderr, "gitlab-driver: %s unreadable\n", argv[2]);
    return 2;
  }
  fclose(f);
  admin[strcspn(admin, "\r\n")] = '\0';
  al_error err = {0};
  al_ghapi *c = NULL;
  al_ghapi_opts o = {.timeout_ms = 20000, .retries = AL_GHAPI_NO_RETRY, .wipe_bodies = true};
  if (al_ghapi_open(argv[1], &o, &c, &err) < 0) {
    fprintf(stderr, "gitlab-driver: %s\n", err.msg);
    return 1;
  }
  const char *project = argv[3], *branch = argv[4];
  char exp[11];
  al_gl_expiry_tomorrow(time(NULL), exp);
  static const char *const scopes[] = {"api", "read_repository", "write_repository", NULL};
  al_gl_token t;
  if (al_gl_token_mint(c, admin, project, "airlock-run", scopes, 30, exp, &t, &err) < 0) {
    printf("mint-error %s\n", err.msg);
    return 1;
  }
  printf("minted %s level=%d tomorrow=%d\n", t.id > 0 ? "yes" : "no", t.access_level,
         strcmp(t.expires_at, exp) == 0);
  al_ghapi_resp r = {0};
  char pe[600], path[700];
  (void)al_gl_project_escape(project, pe, sizeof pe, &err);
  snprintf(path, sizeof path, "/projects/%s", pe);
  if (al_ghapi_get(c, path, t.value, &r, &err) == 0)
    printf("read %ld\n", r.status);
  al_ghapi_resp_free(&r);
  long long iid = 0;
  char web[512] = "";
  if (al_gl_mr_open(c, t.value, project, branch, "main", "tally: count empty lines", "by airlock",
                    true, &iid, web, sizeof web, &err) == 0)
    printf("mr %lld\n", iid);
  else
    printf("mr-error %s\n", err.msg);
  /* the control: revoke another id; the run's token still answers */
  al_gl_token wrong = t;
  wrong.id = t.id + 999;
  bool confirmed = false;
  int rc = al_gl_token_revoke(c, admin, project, &wrong, &confirmed, &err);
  printf("control-revoke rc=%d confirmed=%d\n", rc, confirmed);
  if (rc < 0)
    printf("control-error %s\n", err.msg);
  al_gl_token_wipe(&wrong);
  rc = al_gl_token_revoke(c, admin, project, &t, &confirmed, &err);
  printf("revoke rc=%d confirmed=%d\n", rc, confirmed);
  if (al_ghapi_get(c, path, t.value, &r, &err) == 0)
    printf("after %ld\n", r.status);
  al_ghapi_resp_free(&r);
  al_gl_token_wipe(&t);
  al_ghapi_free(c);
  return 0;
}
