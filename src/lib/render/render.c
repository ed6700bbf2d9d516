/* airlock render compose: the original Docker design (docs/design.md) from the policy.
 * Compose Specification: https://docs.docker.com/reference/compose-file/
 * (services, networks `internal`, tmpfs, security_opt, volumes). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "render/internal.h"
#include "render/render.h"

const char *const al_render_agent_env_names[] = {
    "AIRLOCK_GIT_TOKEN", "AIRLOCK_TICKET_TOKEN", "AIRLOCK_RUN_ID",
    "AIRLOCK_REPO",      "AIRLOCK_TICKET",       "AIRLOCK_GIT_URL",
    "AIRLOCK_BRANCH",    "AIRLOCK_BASE_BRANCH",  NULL};

void rd_quote(FILE *f, const char *s)
{
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20 || *p >= 0x7f)
      fprintf(f, "\\x%02x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

size_t rd_ports(const al_policy *p, uint16_t *ports, size_t max)
{
  size_t n = 0;
  for (size_t i = 0; i < p->network.n_allow; i++) {
    uint16_t v = p->network.allow[i].port;
    size_t j = 0;
    while (j < n && ports[j] < v)
      j++;
    if (j < n && ports[j] == v)
      continue;
    if (n == max)
      break;
    memmove(ports + j + 1, ports + j, (n - j) * sizeof *ports);
    ports[j] = v;
    n++;
  }
  return n;
}

static const char *agent_image(const al_policy *p, const al_render_opts *o)
{
  if (o->agent_image)
    return o->agent_image;
  return p->filesystem.image ? p->filesystem.image : AL_RENDER_AGENT_IMAGE;
}

static void compose_hardening(FILE *f)
{
  fputs("    read_only: true\n"
        "    cap_drop: [ALL]\n"
        "    privileged: false\n"
        "    ipc: private\n"
        "    init: true\n",
        f);
}

static void compose_agent(FILE *f, const al_policy *p, const al_render_opts *o)
{
  const al_policy_limits *l = &p->process.limits;
  bool net = p->network.present;
  fputs("  agent:\n    image: ", f);
  rd_quote(f, agent_image(p, o));
  fputs("\n", f);
  if (net && p->relay.present)
    fputs("    depends_on: [proxy, relay]\n", f);
  else if (net)
    fputs("    depends_on: [proxy]\n", f);
  if (net)
    fputs("    networks: [airlock-internal]\n"
          "    # The embedded resolver (127.0.0.11) still answers service names on\n"
          "    # airlock-internal, but forwards every other name to 127.0.0.1 inside\n"
          "    # the agent, where nothing answers: no DNS to the outside.\n"
          "    dns: [\"127.0.0.1\"]\n"
          "    dns_search: [\".\"]\n",
          f);
  else
    fputs("    network_mode: none\n", f);
  fprintf(f, "    hostname: sandbox\n    user: \"%u:%u\"\n    working_dir: /workspace\n",
          p->process.user, p->process.user);
  compose_hardening(f);
  fputs("    security_opt:\n      - \"no-new-privileges:true\"\n      - ", f);
  char *so = al_strdup_printf("seccomp=%s", o->seccomp_path);
  rd_quote(f, so);
  free(so);
  fputs("\n", f);
  /* Writable: only these two, in memory, gone with the container. */
  fprintf(f,
          "    tmpfs:\n"
          "      - \"/tmp:size=%llu,mode=1777,exec,nosuid,nodev\"\n"
          "      - \"/workspace:size=%llu,mode=0700,uid=%u,gid=%u,exec,nosuid,nodev\"\n",
          (unsigned long long)p->filesystem.tmp_size,
          (unsigned long long)p->filesystem.workspace_size, p->process.user, p->process.user);
  fprintf(f, "    mem_limit: %llu\n    memswap_limit: %llu\n    pids_limit: %u\n",
          (unsigned long long)l->memory, (unsigned long long)l->memory, l->pids);
  if (l->cpu_milli)
    fprintf(f, "    cpus: %u.%03u\n", l->cpu_milli / 1000, l->cpu_milli % 1000);
  fprintf(f, "    ulimits:\n      nofile: {soft: %u, hard: %u}\n      core: {soft: 0, hard: 0}\n",
          l->nofile, l->nofile);
  fputs("    stop_grace_period: 5s\n"
        "    logging: {driver: none}\n",
        f);
  fprintf(f, "    labels:\n      airlock.dev/wall-seconds: \"%llu\"\n",
          (unsigned long long)((l->wall_ms + 999) / 1000));
  /* Values of the names-only entries come from the invoker's environment
   * at `docker compose run` time; nothing secret is in this file. */
  fputs("    environment:\n", f);
  if (net) {
    static const char *const pv[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
    for (size_t i = 0; i < AL_ARRAY_SIZE(pv); i++)
      fprintf(f, "      - \"%s=http://proxy:%d\"\n", pv[i], AL_RENDER_PROXY_PORT);
    if (p->relay.present)
      fputs("      - \"NO_PROXY=relay\"\n      - \"no_proxy=relay\"\n", f);
    else
      fputs("      - \"NO_PROXY=\"\n      - \"no_proxy=\"\n", f);
  }
  if (p->relay.present) {
    /* the same variables the native relay gives the agent (relay/launch.c),
     * pointing at the relay service; the key stays in the relay */
    fprintf(f,
            "      - \"ANTHROPIC_BASE_URL=http://relay:%d\"\n"
            "      - \"OPENAI_BASE_URL=http://relay:%d/v1\"\n"
            "      - \"ANTHROPIC_API_KEY=airlock-relay-injects-the-key\"\n"
            "      - \"OPENAI_API_KEY=airlock-relay-injects-the-key\"\n"
            "      - \"AIRLOCK_MODEL_RELAY=http://relay:%d\"\n",
            AL_RENDER_RELAY_PORT, AL_RENDER_RELAY_PORT, AL_RENDER_RELAY_PORT);
  }
  fputs("      - ", f);
  char *api = al_strdup_printf("AIRLOCK_API_URL=%s", p->forge.api_url);
  rd_quote(f, api);
  free(api);
  fputs("\n", f);
  for (size_t i = 0; al_render_agent_env_names[i]; i++)
    fprintf(f, "      - %s\n", al_render_agent_env_names[i]);
  for (size_t i = 0; i < p->process.n_env_pass; i++) {
    fputs("      - ", f);
    rd_quote(f, p->process.env_pass[i]);
    fputs("\n", f);
  }
  if (p->forge.ca_file) {
    fputs("    # forge.ca_file: no host volumes; bake the CA into the agent image at ", f);
    fputs("the same path\n", f);
  }
}

/* The policy file, read-only, as the one volume of a service. */
static void compose_policy_volume(FILE *f, const al_render_opts *o)
{
  fputs("    volumes:\n"
        "      - type: bind\n"
        "        source: ",
        f);
  rd_quote(f, o->policy_path);
  fprintf(f, "\n        target: %s\n        read_only: true\n", AL_RENDER_POLICY_TARGET);
}

/* The model relay (policy `relay`) as two services, as in the native run:
 * `relay` (holds the key, serves plain HTTP to the agent on the internal
 * network) and `relay-proxy`, its own egress listener that allows the model
 * API host only, on a third internal network the agent is not on. A relay
 * sharing the agent's proxy would open the model API to the agent itself
 * (with a key of its own). */
static void compose_relay(FILE *f, const al_policy *p, const al_render_opts *o)
{
  const char *img = o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE;
  fputs("  relay-proxy:\n    image: ", f);
  rd_quote(f, img);
  fprintf(f,
          "\n"
          "    command: [\"proxy\", \"-p\", \"%s\", \"--relay-egress\", \"--listen\", "
          "\"0.0.0.0:%d\"]\n"
          "    networks: [airlock-relay, airlock-egress]\n"
          "    user: \"65534:65534\"\n",
          AL_RENDER_POLICY_TARGET, AL_RENDER_PROXY_PORT);
  compose_hardening(f);
  fputs("    security_opt: [\"no-new-privileges:true\"]\n", f);
  compose_policy_volume(f, o);
  fputs("    tmpfs: [\"/tmp:size=16777216,mode=1777\"]\n", f);
  fputs("  relay:\n    image: ", f);
  rd_quote(f, img);
  fprintf(f,
          "\n"
          "    command: [\"relay\", \"-p\", \"%s\", \"--listen\", \"0.0.0.0:%d\", \"--proxy\", "
          "\"relay-proxy:%d\"]\n"
          "    depends_on: [relay-proxy]\n"
          "    networks: [airlock-internal, airlock-relay]\n"
          "    user: \"65534:65534\"\n",
          AL_RENDER_POLICY_TARGET, AL_RENDER_RELAY_PORT, AL_RENDER_PROXY_PORT);
  compose_hardening(f);
  fputs("    security_opt: [\"no-new-privileges:true\"]\n"
        "    logging: {driver: none}\n",
        f);
  compose_policy_volume(f, o);
  fputs("    tmpfs: [\"/tmp:size=16777216,mode=1777\"]\n"
        "    # The model key, by name only: export it in the shell that runs\n"
        "    # `docker compose up`; the relay wipes it from its environment.\n"
        "    environment:\n"
        "      - AIRLOCK_RELAY_KEY\n",
        f);
  bool ca = false;
  for (size_t i = 0; i < p->relay.n_upstreams; i++)
    ca = ca || p->relay.upstreams[i].ca_file;
  if (ca)
    fputs("    # relay ca_file: no host paths but the policy; bake the CA into the image\n", f);
}

static void compose_proxy(FILE *f, const al_policy *p, const al_render_opts *o)
{
  fputs("  proxy:\n    image: ", f);
  rd_quote(f, o->proxy_image ? o->proxy_image : AL_RENDER_PROXY_IMAGE);
  fprintf(f,
          "\n"
          "    command: [\"proxy\", \"-p\", \"%s\", \"--listen\", \"0.0.0.0:%d\"]\n"
          "    networks: [airlock-internal, airlock-egress]\n"
          "    user: \"65534:65534\"\n",
          AL_RENDER_POLICY_TARGET, AL_RENDER_PROXY_PORT);
  compose_hardening(f);
  /* The policy reaches the proxy as one read-only file (a bind mount: the
   * Compose v1 tool ignores `configs`, and v2 turns them into binds anyway).
   * The agent gets no host path at all. */
  fputs("    security_opt: [\"no-new-privileges:true\"]\n"
        "    # The proxy holds no secret; it reads the policy and nothing else.\n",
        f);
  compose_policy_volume(f, o);
  fputs("    tmpfs: [\"/tmp:size=16777216,mode=1777\"]\n", f);
  (void)p;
}

void rd_sealed_note(FILE *f, const al_policy *p, const char *what)
{
  if (!p->credentials.present || p->credentials.mode != AL_CRED_SEALED)
    return;
  fprintf(f,
          "# NOT RENDERED: credentials.mode: sealed. The forge gateway (it holds the\n"
          "# run's tokens and the run CA's key, terminates the agent's TLS to the\n"
          "# forge hosts and decides every request, docs/gateway.md) runs only as a\n"
          "# child of `airlock ticket` (native, or --backend docker: docs/docker.md).\n"
          "# %s env mode instead: the agent's container gets\n"
          "# AIRLOCK_GIT_TOKEN and AIRLOCK_TICKET_TOKEN (the real tokens), and the\n"
          "# proxy tunnels the forge hosts without reading them, so the escape budget\n"
          "# rests on the forge's own protection (branch rules, token permissions).\n"
          "# Not covered: the gateway beside the proxy with a socket shared with the\n"
          "# proxy alone, the run CA in the agent's CA bundle, the placeholders in\n"
          "# the agent's environment, the one PR opened by the supervisor.\n",
          what);
}

int al_render_check_credentials(const al_policy *p, const al_render_opts *o, const char *what,
                                al_error *err)
{
  if (!p->credentials.present || p->credentials.mode != AL_CRED_SEALED || o->env_credentials)
    return 0;
  return al_error_set(err, EPERM,
                      "%s: the policy's credentials.mode is sealed (the default), which this "
                      "rendering cannot keep: the forge gateway that holds the tokens outside "
                      "the agent runs only under `airlock ticket` (native or --backend docker), "
                      "so the agent's container would get the real tokens (env mode). Use "
                      "`airlock ticket` for sealed runs, set credentials.mode: env in the policy, "
                      "or pass --env-credentials to render env mode anyway",
                      what);
}

int al_render_compose(const al_policy *p, const al_render_opts *o, char **out, al_error *err)
{
  *out = NULL;
  if (al_render_check_credentials(p, o, "render compose", err) < 0)
    return -1;
  if (!o->seccomp_path || o->seccomp_path[0] != '/')
    return al_make_error(err, EINVAL, "render compose: the seccomp profile path must be absolute");
  bool net = p->network.present;
  if (net && (!o->policy_path || o->policy_path[0] != '/'))
    return al_make_error(err, EINVAL, "render compose: the policy path must be absolute");
  size_t len = 0;
  FILE *f = open_memstream(out, &len);
  if (!f)
    return al_make_error(err, errno, "open_memstream");
  fputs("# Generated by `airlock render compose` from ", f);
  rd_quote(f, p->source ? p->source : "<default>");
  fprintf(f, " (policy sha256 %s).\n", al_policy_sha256((al_policy *)p));
  rd_sealed_note(f, p, "This Compose file carries");
  fputs("# The original design (docs/design.md): the agent sits on an internal-only bridge with no "
        "route\n"
        "# out; its one way out is the allowlist proxy, which alone also sits on the\n"
        "# egress network. Tokens are listed by name only: export them in the shell\n"
        "# that runs `docker compose run agent ...`, never write them here. Docker\n"
        "# keeps a container's environment in its config.v2.json on the engine's\n"
        "# disk while the container exists: use short-lived tokens and remove the\n"
        "# container after the run (`airlock run|ticket --backend docker` passes\n"
        "# them on stdin instead; docs/docker.md).\n",
        f);
  fprintf(f,
          "#\n"
          "# Run this only on a Docker daemon with user namespaces remapped\n"
          "# (daemon.json: {\"userns-remap\": \"default\"}): without it, uid %u in the\n"
          "# containers is uid %u on the host.\n"
          "# Wall-clock limit (process.limits.wall): %llu s. Compose cannot enforce it;\n"
          "# run the agent as `timeout -s KILL %llu docker compose run --rm agent ...`\n"
          "# (the label airlock.dev/wall-seconds says it for tooling).\n"
          "# The agent's and the relay's output is not logged by Docker (logging:\n"
          "# none): a token or the model key it prints never reaches a json-file log;\n"
          "# `docker compose run` still shows it on your terminal.\n"
          "# Host services answer on the bridges' gateway addresses: a service on the\n"
          "# host bound to 0.0.0.0 (or to the bridge) is reachable from these\n"
          "# containers, internal networks included. Bind host services to loopback,\n"
          "# or use the Docker backend (`--backend docker`), whose agent has a\n"
          "# loopback-only network namespace (docs/docker.md): the hardened path.\n",
          p->process.user, p->process.user,
          (unsigned long long)((p->process.limits.wall_ms + 999) / 1000),
          (unsigned long long)((p->process.limits.wall_ms + 999) / 1000));
  fputs("services:\n", f);
  if (net)
    compose_proxy(f, p, o);
  if (net && p->relay.present)
    compose_relay(f, p, o);
  compose_agent(f, p, o);
  if (net) {
    fputs("networks:\n"
          "  airlock-internal:\n"
          "    driver: bridge\n"
          "    internal: true\n"
          "  airlock-egress:\n"
          "    driver: bridge\n",
          f);
    if (o->egress_internal)
      fputs("    internal: true   # --egress-internal: a test, nothing leaves the machine\n", f);
    if (p->relay.present)
      fputs("  airlock-relay:\n"
            "    driver: bridge\n"
            "    internal: true\n",
            f);
  }
  if (fclose(f) != 0) {
    free(*out);
    *out = NULL;
    return al_make_error(err, ENOMEM, "render compose: out of memory");
  }
  return 0;
}
