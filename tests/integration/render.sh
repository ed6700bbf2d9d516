#!/bin/bash
# airlock render compose|kubernetes (issue 9): every field of the seed's
# design is checked by parsing the output (render_check.py), a mutated
# output must fail the same checks (the checker can fail), and the Compose
# file passes `docker compose config` / `docker-compose config` when found.
. "$(dirname "$0")/lib.sh"
CHECK="$AIRLOCK_SRC/tests/integration/render_check.py"
if ! python3 -c 'import yaml' 2>/dev/null; then
  skip "python3 yaml module missing (apt-get install python3-yaml)"; done_testing; exit $?
fi
cd "$T_TMP"
cat >pol.yaml <<'P'
version: 1
network:
  allow:
    - {host: api.github.com, port: 443}
    - {host: github.com, port: 443}
filesystem:
  workspace_size: 1GiB
  tmp_size: 256MiB
  image: airlock-agent:local
process:
  env_pass: [LANG]
  limits: {memory: 2GiB, pids: 256, wall: 45m, nofile: 1024}
P
WS=1073741824 TMP=268435456 WALL=2700 MEM=2147483648

"$AIRLOCK" render compose -p pol.yaml -o compose.yaml 2>err.txt
is "render compose exits 0" "$?" 0
check "seccomp profile written beside the Compose file" test -s airlock-seccomp.json
check "seccomp profile is JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' airlock-seccomp.json
while read -r line; do
  case $line in ok*) ok "compose: ${line#ok - }" ;; "not ok"*) fail "compose: ${line#not ok - }" ;; esac
done < <(python3 "$CHECK" compose compose.yaml "$T_TMP/airlock-seccomp.json" $WS $TMP $WALL)

# Positive control: the checker must catch a weakened file.
sed 's/internal: true/internal: false/; s/cap_drop: \[ALL\]/cap_drop: []/' compose.yaml >weak.yaml
check_not "checker rejects a Compose file without internal: true / cap_drop" \
  python3 "$CHECK" compose weak.yaml "$T_TMP/airlock-seccomp.json" $WS $TMP $WALL

export AIRLOCK_GIT_TOKEN=ghs_rendertestsecret000000000000000000
"$AIRLOCK" render compose -p pol.yaml >stdout.yaml 2>/dev/null
check_not "no token value in the output even when set in the environment" grep -q rendertestsecret stdout.yaml compose.yaml
unset AIRLOCK_GIT_TOKEN

if docker compose version >/dev/null 2>&1; then
  check "docker compose config accepts the file" docker compose -f compose.yaml config -q
else
  skip "docker compose (v2 plugin) not installed: Debian 12 has no docker-compose-plugin"
fi
if command -v docker-compose >/dev/null 2>&1; then
  check "docker-compose (v1) config accepts the file" docker-compose -f compose.yaml config -q
else
  skip "docker-compose (v1) not installed"
fi

# No network section: no proxy, no networks, network_mode none.
printf 'version: 1\n' >nonet.yaml
"$AIRLOCK" render compose -p nonet.yaml -o nonet-compose.yaml 2>/dev/null
check "no-network policy: agent has network_mode none and there is no proxy" python3 -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
assert d["services"]["agent"]["network_mode"] == "none", d
assert "proxy" not in d["services"] and "networks" not in d
' nonet-compose.yaml

"$AIRLOCK" render kubernetes -p pol.yaml -o k8s.yaml --seccomp-out k8s-seccomp.json 2>/dev/null
is "render kubernetes exits 0" "$?" 0
check "kubernetes: profile JSON identical to the compose one" cmp k8s-seccomp.json airlock-seccomp.json
while read -r line; do
  case $line in ok*) ok "kubernetes: ${line#ok - }" ;; "not ok"*) fail "kubernetes: ${line#not ok - }" ;; esac
done < <(python3 "$CHECK" kubernetes k8s.yaml $WS $TMP $WALL $MEM)
sed 's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/; s/automountServiceAccountToken: false/automountServiceAccountToken: true/' k8s.yaml >weak-k8s.yaml
check_not "checker rejects manifests with a writable root / mounted SA token" \
  python3 "$CHECK" kubernetes weak-k8s.yaml $WS $TMP $WALL $MEM
"$AIRLOCK" render kubernetes -p pol.yaml --seccomp-profile runtime-default >rd.yaml 2>/dev/null
check "--seccomp-profile runtime-default gives RuntimeDefault" grep -q 'seccompProfile: {type: RuntimeDefault}' rd.yaml
check_not "an absolute Localhost profile path is refused" "$AIRLOCK" render kubernetes -p pol.yaml --seccomp-profile /etc/x.json
printf 'version: 1\nfilesystem:\n  image: "bad image\\n"\n' >badimg.yaml
check_not "policy: an image reference with spaces is refused" "$AIRLOCK" policy check badimg.yaml

# A policy with a model relay: the relay is not rendered, and both the
# output and stderr say so (a relay on the shared proxy would open the model
# API to the agent).
cat >relay.yaml <<'P'
version: 1
network:
  allow: [{host: api.github.com, port: 443}]
relay:
  upstream: https://api.anthropic.com
  key_file: /etc/airlock/model.key
P
for kind in compose kubernetes; do
  "$AIRLOCK" render $kind -p relay.yaml -o relay-$kind.yaml 2>relay-$kind.err
  check "render $kind with a relay: the output says it is not rendered" grep -q "NOT RENDERED: the policy's \`relay\` section" relay-$kind.yaml
  check "render $kind with a relay: stderr says so" grep -q "relay.*not rendered" relay-$kind.err
  check_not "render $kind with a relay: no relay service in it" grep -qE '^  relay:|name: airlock-relay' relay-$kind.yaml
done
done_testing
