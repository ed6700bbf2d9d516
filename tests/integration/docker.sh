#!/bin/bash
# The seed's Docker design on a real engine (issue 9): the rendered Compose
# file is brought up and attacked from inside the agent; then the docker
# backend of `airlock run`. Every network the test creates is internal
# (the egress network is made internal too), so nothing can route off the
# machine. Needs a running dockerd (skip otherwise); images are built from
# this host's files by scripts/docker-images.sh (no registry, no pull).
. "$(dirname "$0")/lib.sh"
DOCKER=${DOCKER:-docker}
if ! command -v "$DOCKER" >/dev/null 2>&1 || ! "$DOCKER" info >/dev/null 2>&1; then
  skip "no Docker engine (install docker.io and start dockerd)"; done_testing; exit $?
fi
if [ "$(id -u)" != 0 ] && ! [ -w /var/run/docker.sock ]; then
  skip "no access to /var/run/docker.sock"; done_testing; exit $?
fi
PROJ=altest$$
PROXY_IMAGE=airlock-proxy:test$$ AGENT_IMAGE=airlock-agent:test$$ FORGE_IMAGE=airlock-forge:test$$
export PROXY_IMAGE AGENT_IMAGE FORGE_IMAGE
on_exit "$DOCKER rmi -f $PROXY_IMAGE $AGENT_IMAGE $FORGE_IMAGE"
check "images built from the host's files (docker import, no pull)" \
  "$AIRLOCK_SRC/scripts/docker-images.sh" "$AIRLOCK_BUILD"

cd "$T_TMP"
cat >pol.yaml <<'P'
version: 1
network:
  allow:
    - {host: forge.test, port: 8443}
  pin: [{host: forge.test, address: 127.0.0.1}]
filesystem:
  workspace_size: 64MiB
  tmp_size: 32MiB
process:
  limits: {memory: 512MiB, pids: 128, wall: 5m, nofile: 1024}
P
chmod 644 pol.yaml

# ---- 1. the rendered Compose design ----
COMPOSE=()
if "$DOCKER" compose version >/dev/null 2>&1; then COMPOSE=("$DOCKER" compose)
elif command -v docker-compose >/dev/null 2>&1; then COMPOSE=(docker-compose); fi
if [ ${#COMPOSE[@]} -eq 0 ]; then
  skip "no docker compose / docker-compose: the rendered design is not run"
else
  # tests: the egress network is internal too (nothing leaves the machine)
  "$AIRLOCK" render compose -p pol.yaml -o compose.yaml --proxy-image "$PROXY_IMAGE" \
    --agent-image "$AGENT_IMAGE" --egress-internal 2>/dev/null
  DC=("${COMPOSE[@]}" -p "$PROJ" -f compose.yaml)
  on_exit "${DC[*]} down -v --remove-orphans"
  out=$("${DC[@]}" run --rm agent sh -c '
    id -u; id -g
    grep -E "^(CapEff|CapBnd|CapPrm|NoNewPrivs|Seccomp):" /proc/self/status
    touch /etc/x 2>/dev/null && echo ROOT-WRITABLE
    touch /workspace/a /tmp/b && echo RW-OK
    [ -e /var/run/docker.sock ] && echo DOCKER-SOCK
    getent hosts proxy >/dev/null && echo PROXY-RESOLVES
    getent hosts example.com && echo OUTSIDE-RESOLVES
    setarch linux32 /bin/sh -c : 2>/dev/null && echo PERSONALITY-ALLOWED
    echo END' 2>"$T_TMP/dc.err")
  like "agent ran to the end" "$out" "END"
  like "agent uid/gid 1000" "$(echo "$out" | head -2 | tr '\n' ' ')" "^1000 1000 $"
  like "agent has no capabilities" "$out" "CapEff:[[:space:]]+0000000000000000"
  like "agent bounding set empty" "$out" "CapBnd:[[:space:]]+0000000000000000"
  like "agent no_new_privs" "$out" "NoNewPrivs:[[:space:]]+1"
  like "agent under seccomp filter mode" "$out" "Seccomp:[[:space:]]+2"
  check_not "root filesystem read-only" grep -q ROOT-WRITABLE <<<"$out"
  like "/workspace and /tmp writable" "$out" "RW-OK"
  check_not "no docker socket inside" grep -q DOCKER-SOCK <<<"$out"
  # positive control of the DNS check: the embedded resolver is there and
  # answers names on the internal network...
  like "embedded resolver answers the proxy's name" "$out" "PROXY-RESOLVES"
  # ...but forwards nothing outside (dns: [127.0.0.1] in the agent).
  check_not "outside names do not resolve inside the agent" grep -q OUTSIDE-RESOLVES <<<"$out"
  # airlock's profile (not Docker's default) is loaded: personality(PER_LINUX32)
  # is refused by ours and allowed by Docker's default profile.
  check_not "personality(PER_LINUX32) refused (airlock's seccomp profile)" grep -q PERSONALITY-ALLOWED <<<"$out"
  ctl=$("$DOCKER" run --rm --pull never --network none "$AGENT_IMAGE" sh -c 'setarch linux32 /bin/sh -c : && echo PERSONALITY-ALLOWED' 2>&1)
  like "positive control: Docker's default profile allows it" "$ctl" "PERSONALITY-ALLOWED"
  nets=$("$DOCKER" network ls -q --filter "label=com.docker.compose.project=$PROJ")
  for n in $nets; do
    is "network $("$DOCKER" network inspect -f '{{.Name}}' "$n") is internal" \
      "$("$DOCKER" network inspect -f '{{.Internal}}' "$n")" true
  done
  pip=$("$DOCKER" ps -q --filter "label=com.docker.compose.project=$PROJ" --filter "label=com.docker.compose.service=proxy")
  like "the proxy service runs" "$pip" "."
  # through the proxy, a host outside the allowlist is refused by the proxy
  out=$("${DC[@]}" run --rm agent sh -c 'curl -sS -o /dev/null -w "%{http_code}" https://denied.test/ 2>&1; echo; curl -sS --noproxy "*" -m 3 http://1.1.1.1/ 2>&1 | head -1' 2>/dev/null)
  like "CONNECT to a host off the allowlist answered 403 by the proxy" "$out" "403"
  like "a direct connection (no proxy) has no route" "$out" "(unreachable|timed out|Failed to connect|Could not connect)"
  "${DC[@]}" down -v --remove-orphans >/dev/null 2>&1
  is "after down: no container of the run" "$("$DOCKER" ps -aq --filter "label=com.docker.compose.project=$PROJ")" ""
  is "after down: no network of the run" "$("$DOCKER" network ls -q --filter "label=com.docker.compose.project=$PROJ")" ""
  is "after down: no volume of the run" "$("$DOCKER" volume ls -q --filter "label=com.docker.compose.project=$PROJ")" ""
fi

# ---- 2. airlock run --backend docker ----
if [ -n "${AIRLOCK_BUILD:-}" ] && [ -x "$AIRLOCK_BUILD/src/cli/airlock-net" ] &&
  "$AIRLOCK" run --help 2>&1 | grep -q -- '--backend'; then
  . "$AIRLOCK_SRC/tests/integration/docker_backend.sh"
  . "$AIRLOCK_SRC/tests/integration/docker_probe.sh"
  . "$AIRLOCK_SRC/tests/integration/docker_ticket.sh"
else
  skip "airlock run --backend docker not built"
fi
done_testing
