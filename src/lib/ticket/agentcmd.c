/* The agent's command line of `airlock ticket` (ticket/ticket.h). */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "ticket/ticket.h"

void al_ticket_agent_command(al_ticket_opts *o, al_ticket_agent_cmd *cmd, char *const *args,
                             size_t nargs, bool docker)
{
  cmd->argv = al_xcalloc(nargs + 2, sizeof(char *));
  cmd->argv[0] = cmd->path;
  for (size_t i = 0; i < nargs; i++)
    cmd->argv[i + 1] = args[i];
  if (!o->agent_preset)
    o->agent_argv = cmd->argv;
  /* The agent's own directory is bound read-only when it lives outside the
   * sandbox's view of the host (/usr). */
  cmd->ro[0] = cmd->ro[1] = NULL;
  if (!docker && cmd->path[0] == '/' && strncmp(cmd->path, "/usr/", 5) != 0) {
    snprintf(cmd->dir, sizeof cmd->dir, "%s", cmd->path);
    cmd->ro[0] = dirname(cmd->dir);
  }
  o->extra_ro_paths = cmd->ro;
}
