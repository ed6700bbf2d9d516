/* Test-only broker client for tests/integration/broker.sh.
 *
 * usage: broker-lease-exec SOCKET REPO MODE [CMD ARGS...]
 * Opens a lease (git + ticket tokens on REPO; TTL from $AL_TEST_TTL_MS),
 * prints "git FP" and "ticket FP", runs CMD (if any) with the tokens in
 * its environment as AL_GIT_TOKEN / AL_TICKET_TOKEN (never on a command
 * line), then ends the lease the MODE's way:
 *   release  al_lease_release(wait): prints "confirmed yes|no"
 *   close    closes the connection without a word
 *   crash    abort() (core dumps off)
 *   hold     waits forever (the test SIGKILLs it)
 *   ttl      waits for the broker's TTL notice, then releases (prints "expired")
 * With $AL_TEST_SECRET=NAME the lease also asks for the broker's static
 * secret NAME: prints "secret FP" and gives CMD its value as AL_SECRET.
 * Exit: CMD's status, or 1 when the lease failed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker/client.h"

int main(int argc, char **argv)
{
  if (argc < 4) {
    fprintf(stderr, "usage: broker-lease-exec SOCKET REPO MODE [CMD...]\n");
    return 2;
  }
  const char *mode = argv[3];
  const char *ttl = getenv("AL_TEST_TTL_MS");
  const char *secret = getenv("AL_TEST_SECRET");
  const char *const secrets[] = {secret};
  al_lease_request rq = {.git_repo = argv[2],
                         .ticket_repo = argv[2],
                         .secrets = secret ? secrets : NULL,
                         .n_secrets = secret ? 1 : 0,
                         .ttl_ms = ttl ? strtoull(ttl, NULL, 10) : 0};
  al_error err = {0};
  al_lease *l;
  if (al_lease_open(argv[1], &rq, &l, &err) < 0) {
    fprintf(stderr, "lease: %s\n", err.msg);
    return 1;
  }
  printf("git %s\nticket %s\n", al_lease_fingerprint(l, AL_ROLE_GIT),
         al_lease_fingerprint(l, AL_ROLE_TICKET));
  if (secret)
    printf("secret %s\n", al_lease_secret_fingerprint(l, secret));
  fflush(stdout);
  int status = 0;
  if (argc > 4) {
    /* Copy the tokens out before fork(2): the lease keeps them in
     * MADV_WIPEONFORK memory, which a child sees as zeros. */
    char *git = strdup(al_lease_token(l, AL_ROLE_GIT));
    char *tkt = strdup(al_lease_token(l, AL_ROLE_TICKET));
    char *sec = secret ? strdup(al_lease_secret(l, secret)) : NULL;
    pid_t pid = fork();
    if (pid == 0) {
      setenv("AL_GIT_TOKEN", git, 1);
      setenv("AL_TICKET_TOKEN", tkt, 1);
      if (sec)
        setenv("AL_SECRET", sec, 1);
      execvp(argv[4], argv + 4);
      _exit(127);
    }
    explicit_bzero(git, strlen(git));
    explicit_bzero(tkt, strlen(tkt));
    free(git);
    free(tkt);
    if (sec) {
      explicit_bzero(sec, strlen(sec));
      free(sec);
    }
    int ws;
    waitpid(pid, &ws, 0);
    status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
  }
  if (!strcmp(mode, "close")) {
    al_lease_free(l);
  } else if (!strcmp(mode, "crash")) {
    struct rlimit r = {0, 0};
    setrlimit(RLIMIT_CORE, &r);
    abort();
  } else if (!strcmp(mode, "hold")) {
    for (;;)
      pause();
  } else {
    if (!strcmp(mode, "ttl")) {
      struct pollfd p = {.fd = al_lease_fd(l), .events = POLLIN};
      while (poll(&p, 1, -1) >= 0 && al_lease_poll(l, &err) == 0)
        ;
      printf("expired\n");
    }
    al_lease_result res;
    int r = al_lease_release(l, true, &res, &err);
    printf("confirmed %s reason %s\n", r == 0 && res.n == 2 ? "yes" : "no", res.reason);
    if (r < 0)
      fprintf(stderr, "release: %s\n", err.msg);
  }
  return status;
}
