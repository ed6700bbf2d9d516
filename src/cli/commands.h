/* One function per `airlock` verb, each in its own cmd_*.c file. argv[0] is
 * the verb. Each returns the process exit status. */
#ifndef AL_CLI_COMMANDS_H
#define AL_CLI_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_proxy(int argc, char **argv);
#ifdef AIRLOCK_NET_BINARY
int cmd_broker(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_ticket(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_relay(int argc, char **argv);
int cmd_serve(int argc, char **argv);
#endif
int cmd_token(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_gc(int argc, char **argv);

#endif
