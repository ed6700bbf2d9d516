/* The agent container's create request (docker_request.c), inside run/:
 * what docker.c sends the engine to make the one container of a run. */
#ifndef AL_RUN_DOCKER_REQUEST_H
#define AL_RUN_DOCKER_REQUEST_H

#include <jansson.h>

#include "common/error.h"
#include "run/docker.h"

/* In the agent container: the shim (PID 1, bound read-only from the host)
 * and the supervisor's hand-off socket (with a network section). */
#define SHIM_TARGET "/.airlock/shim"
#define DOOR_TARGET "/.airlock/handoff.sock"

/* Adds an empty read-only tmpfs to tmpfs (path -> options) for each VOLUME
 * of image that the run does not mount already (docker.c asks the engine).
 * 0, or -1 with err. */
typedef int (*al_docker_volumes_fn)(void *ctx, const char *image, json_t *tmpfs, al_error *err);

/* The POST /containers/create body of the agent container for o: the
 * hardened HostConfig (unless o->control_unhardened), the shim's copy at
 * shim_path and (with a network section) the hand-off socket at door_path
 * bound in, the policy's sizes and limits, the proxy's variables, the
 * shim's command line with its --deadline (the limit plus a grace), the
 * /bin/sh prologue and o->argv, labelled with rid. volumes(volumes_ctx, ...)
 * is called once with the image. *spec_out gets the spec (the caller's);
 * *stdin_data the secrets for the agent's stdin, or NULL without o->env (the
 * caller wipes and frees it, also on failure). 0, or -1 with err (EINVAL: a
 * bad variable, file name or argument; E2BIG: a file too big). */
int al_docker_agent_spec(const al_docker_opts *o, const char *rid, const char *shim_path,
                         const char *door_path, al_docker_volumes_fn volumes, void *volumes_ctx,
                         json_t **spec_out, char **stdin_data, al_error *err);

#endif
