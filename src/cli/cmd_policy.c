/* airlock policy check FILE: validate a policy, print its canonical form
 * and SHA-256. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "policy/policy.h"

int cmd_policy(int argc, char **argv)
{
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: airlock policy check FILE\n       airlock policy default\n\n"
           "check: validate FILE, print its canonical form (JSON) and its SHA-256.\n"
           "default: print the embedded default policy in canonical form.\n");
    return 0;
  }
  al_error err = {0};
  al_policy *p = NULL;
  int r;
  if (argc == 3 && strcmp(argv[1], "check") == 0)
    r = al_policy_load_file(argv[2], &p, &err);
  else if (argc == 2 && strcmp(argv[1], "default") == 0)
    r = al_policy_default(&p, &err);
  else {
    fprintf(stderr, "usage: airlock policy check FILE | airlock policy default\n");
    return 2;
  }
  if (r < 0) {
    fprintf(stderr, "airlock policy: %s\n", err.msg);
    return 1;
  }
  char *canon = al_policy_canonical(p);
  printf("%s\nsha256: %s\n", canon, al_policy_sha256(p));
  free(canon);
  al_policy_free(p);
  return 0;
}
