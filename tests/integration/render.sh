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
# The checker's new checks can fail: a narrower except list, no user namespace.
sed '/- 198.18.0.0\/15/d' k8s.yaml >narrow-k8s.yaml
check_not "checker rejects a proxy NetworkPolicy missing 198.18.0.0/15" python3 "$CHECK" kubernetes narrow-k8s.yaml $WS $TMP $WALL $MEM
sed 's/hostUsers: false/hostUsers: true/' k8s.yaml >hostusers-k8s.yaml
check_not "checker rejects hostUsers: true" python3 "$CHECK" kubernetes hostusers-k8s.yaml $WS $TMP $WALL $MEM

# Per run: names, a RuntimeClass, no probe.
"$AIRLOCK" render kubernetes -p pol.yaml --run-id r7f3a --runtime-class gvisor -o run.yaml 2>/dev/null
check "--run-id names every run object" python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] != "Namespace"]
assert all(d["metadata"]["name"].endswith("-r7f3a") for d in docs), [d["metadata"]["name"] for d in docs]
pods = [d["spec"]["template"]["spec"] for d in docs if d["kind"] in ("Job", "Deployment")]
assert len(pods) == 2 and all(p.get("runtimeClassName") == "gvisor" for p in pods), pods
' run.yaml
check_not "a run id that is not a DNS label is refused" "$AIRLOCK" render kubernetes -p pol.yaml --run-id "Bad_ID"
"$AIRLOCK" render kubernetes -p pol.yaml --no-probe --host-users -o np.yaml 2>/dev/null
check "--no-probe --host-users: no init container, no hostUsers" python3 -c '
import sys, yaml
job = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Job")
p = job["spec"]["template"]["spec"]
assert "initContainers" not in p and "hostUsers" not in p, p
' np.yaml

"$AIRLOCK" render cluster -o cluster1.yaml 2>/dev/null
is "render cluster exits 0" "$?" 0
"$AIRLOCK" render cluster --replicas 3 --jobs --namespace ops -o cluster3.yaml 2>/dev/null
is "render cluster --replicas 3 --jobs exits 0" "$?" 0
"$AIRLOCK" render kubernetes -p pol.yaml --agent-sandbox --run-id sb1 --runtime-class kata -o sb.yaml 2>/dev/null
is "render kubernetes --agent-sandbox exits 0" "$?" 0

# Every object against the Kubernetes API schemas (kubernetes-models, npm).
if [ -n "${AIRLOCK_SKIP_NPM:-}" ]; then
  skip "kubernetes-models from npm: AIRLOCK_SKIP_NPM is set"
elif ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  skip "kubernetes-models from npm: npm or node not installed"
elif ! (mkdir -p km && cd km && timeout 300 npm install --no-audit --no-fund --loglevel=error kubernetes-models@5 ajv@8 ajv-formats@3 >../km.out 2>&1); then
  skip "kubernetes-models from npm: npm install failed or the registry is unreachable ($(tail -1 km.out))"
else
  cp "$AIRLOCK_SRC/tests/integration/k8s_validate.mjs" km/
  for f in k8s.yaml run.yaml np.yaml rd.yaml; do
    [ -s "$f" ] || "$AIRLOCK" render kubernetes -p pol.yaml --seccomp-profile runtime-default -o "$f" 2>/dev/null
    python3 -c 'import json,sys,yaml; json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d], open(sys.argv[2], "w"))' "$f" "$f.json"
    while read -r line; do
      case $line in "ok - # SKIP"*) skip "$f: ${line#ok - # SKIP }" ;; ok*) ok "schema: $f: ${line#ok - }" ;; "not ok"*) fail "schema: $f: ${line#not ok - }" ;; esac
    done < <(cd km && node k8s_validate.mjs "../$f.json")
  done
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for o in d:
    if o["kind"] == "Job":
        o["spec"]["backoffLimit"] = "zero"
        o["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsUser"] = "root"
json.dump(d, open(sys.argv[2], "w"))' k8s.yaml.json bad.json
  check_not "control: the validator rejects a Job with a string backoffLimit and runAsUser" sh -c 'cd km && node k8s_validate.mjs ../bad.json'
  # The service side (render cluster) against the same schemas.
  for f in cluster1.yaml cluster3.yaml; do
    python3 -c 'import json,sys,yaml; json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d], open(sys.argv[2], "w"))' "$f" "$f.json"
    while read -r line; do
      case $line in ok*) ok "schema: $f: ${line#ok - }" ;; "not ok"*) fail "schema: $f: ${line#not ok - }" ;; esac
    done < <(cd km && node k8s_validate.mjs "../$f.json")
  done
  # agent-sandbox: the vendored CRDs' openAPIV3Schema with ajv (README in
  # agent-sandbox/), the pod spec with kubernetes-models; the other objects
  # of the same output with kubernetes-models.
  cp "$AIRLOCK_SRC/tests/integration/sandbox_validate.mjs" km/
  python3 -c 'import json,sys,yaml; json.dump([d for f in sys.argv[2:] for d in yaml.safe_load_all(open(f)) if d], open(sys.argv[1], "w"))' \
    crds.json "$AIRLOCK_SRC"/tests/integration/agent-sandbox/*.yaml
  python3 -c '
import json, sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
json.dump([d for d in ds if "agents.x-k8s.io" in d["apiVersion"]], open(sys.argv[2], "w"))
json.dump([d for d in ds if "agents.x-k8s.io" not in d["apiVersion"]], open(sys.argv[3], "w"))' sb.yaml sb-crd.json sb-core.json
  while read -r line; do
    case $line in ok*) ok "schema: sb.yaml: ${line#ok - }" ;; "not ok"*) fail "schema: sb.yaml: ${line#not ok - }" ;; esac
  done < <(cd km && node sandbox_validate.mjs ../crds.json ../sb-crd.json; node k8s_validate.mjs ../sb-core.json)
  # Controls: each layer of the validator can fail.
  python3 -c '
import copy, json, sys
d = json.load(open(sys.argv[1]))
t = next(o for o in d if o["kind"] == "SandboxTemplate"); c = next(o for o in d if o["kind"] == "SandboxClaim")
bad1 = copy.deepcopy(c); bad1["spec"]["lifecycle"]["shutdownPolicy"] = "Sometimes"
bad2 = copy.deepcopy(c); bad2["spec"]["lifecycle"]["shutdownTime"] = "tomorrow"
bad3 = copy.deepcopy(t); del bad3["spec"]["podTemplate"]
bad4 = copy.deepcopy(t); bad4["spec"]["networkPolicy"]["egress"][0]["ports"][0]["endPort"] = "x"
bad5 = copy.deepcopy(t); bad5["spec"]["podTemplate"]["spec"]["containers"][0]["securityContext"]["runAsUser"] = "root"
for i, b in enumerate((bad1, bad2, bad3, bad4, bad5), 1):
    json.dump([b], open(f"sb-bad{i}.json", "w"))' sb-crd.json
  bad_what=("" "a claim with shutdownPolicy Sometimes (enum)" "a claim with shutdownTime tomorrow (date-time)"
    "a template without podTemplate (required)" "a template with a string endPort (int32)"
    "a template whose pod spec has a string runAsUser (core/v1)")
  for i in 1 2 3 4 5; do
    what=${bad_what[$i]}
    check_not "control: the agent-sandbox validator rejects $what" sh -c "cd km && node sandbox_validate.mjs ../crds.json ../sb-bad$i.json"
  done
fi

. "$AIRLOCK_SRC/tests/integration/render_cluster.sh"

"$AIRLOCK" render kubernetes -p pol.yaml --seccomp-profile runtime-default >rd.yaml 2>/dev/null
check "--seccomp-profile runtime-default gives RuntimeDefault" grep -q 'seccompProfile: {type: RuntimeDefault}' rd.yaml
check_not "an absolute Localhost profile path is refused" "$AIRLOCK" render kubernetes -p pol.yaml --seccomp-profile /etc/x.json
printf 'version: 1\nfilesystem:\n  image: "bad image\\n"\n' >badimg.yaml
check_not "policy: an image reference with spaces is refused" "$AIRLOCK" policy check badimg.yaml

# A policy with a model relay. Compose: the relay as two services, as in
# the native run: `relay` (the key by name only) on the internal network and
# on airlock-relay; `relay-proxy`, its own egress allowing the model API
# only, on airlock-relay and egress; the agent never on airlock-relay (a
# relay sharing the agent's proxy would open the model API to the agent).
# Kubernetes: not rendered, and both the output and stderr say so.
cat >relay.yaml <<'P'
version: 1
network:
  allow: [{host: api.github.com, port: 443}]
relay:
  upstream: https://api.anthropic.com
  key_file: /etc/airlock/model.key
P
"$AIRLOCK" render compose -p relay.yaml -o relay-compose.yaml 2>/dev/null
is "render compose with a relay exits 0" "$?" 0
while read -r line; do
  case $line in ok*) ok "relay compose: ${line#ok - }" ;; "not ok"*) fail "relay compose: ${line#not ok - }" ;; esac
done < <(python3 - relay-compose.yaml <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
s, n = d["services"], d["networks"]
def check(desc, cond, got=None):
    print(("ok - " if cond else "not ok - ") + desc + ("" if cond or got is None else f" (got {got!r})"))
r, rp, a = s.get("relay", {}), s.get("relay-proxy", {}), s["agent"]
check("services proxy, relay-proxy, relay, agent", set(s) == {"proxy", "relay-proxy", "relay", "agent"}, list(s))
check("airlock-relay network is internal", n.get("airlock-relay", {}).get("internal") is True)
check("relay on the internal network and airlock-relay only", sorted(r.get("networks", [])) == ["airlock-internal", "airlock-relay"], r.get("networks"))
check("relay-proxy on airlock-relay and egress only", sorted(rp.get("networks", [])) == ["airlock-egress", "airlock-relay"], rp.get("networks"))
check("the agent is not on airlock-relay", a.get("networks") == ["airlock-internal"], a.get("networks"))
check("relay-proxy serves the relay's egress", "--relay-egress" in rp.get("command", []), rp.get("command"))
check("relay goes out through relay-proxy", r.get("command", [])[-2:] == ["--proxy", "relay-proxy:3128"], r.get("command"))
check("the relay's key by name only", r.get("environment") == ["AIRLOCK_RELAY_KEY"], r.get("environment"))
for name, v in (("relay", r), ("relay-proxy", rp)):
    check(name + " hardened (read_only, cap_drop ALL, uid 65534, no-new-privileges)",
          v.get("read_only") is True and v.get("cap_drop") == ["ALL"] and v.get("user") == "65534:65534"
          and "no-new-privileges:true" in v.get("security_opt", []))
env = a.get("environment", [])
check("the agent's model URLs point at the relay", "ANTHROPIC_BASE_URL=http://relay:8080" in env and "OPENAI_BASE_URL=http://relay:8080/v1" in env, env)
check("the agent's API keys are placeholders", "ANTHROPIC_API_KEY=airlock-relay-injects-the-key" in env, env)
check("the agent reaches the relay without the proxy", "NO_PROXY=relay" in env, env)
PY
)
check_not "relay compose: the key file's path is not in it" grep -q '/etc/airlock/model.key' relay-compose.yaml
"$AIRLOCK" render kubernetes -p relay.yaml -o relay-kubernetes.yaml 2>relay-kubernetes.err
check "render kubernetes with a relay: the output says it is not rendered" grep -q "NOT RENDERED: the policy's \`relay\` section" relay-kubernetes.yaml
check "render kubernetes with a relay: stderr says so" grep -q "relay.*not rendered" relay-kubernetes.err
if command -v docker-compose >/dev/null 2>&1; then
  check "relay compose: docker-compose config accepts it" docker-compose -f relay-compose.yaml config -q
fi

# `airlock proxy --relay-egress` (the relay-proxy service): the model API
# host is the only destination; the network section's hosts are refused.
# The upstream is pinned to a canary on loopback (nothing leaves).
cport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); s.settimeout(20)
try:
    while True: c, _ = s.accept(); c.close()
except Exception: pass' "$cport" &
canary=$!
on_exit "kill $canary"
cat >relay-egress.yaml <<P
version: 1
network:
  allow: [{host: api.github.com, port: 443}]
relay:
  upstream: https://model.test:$cport
  key_file: /etc/airlock/model.key
  pin: 127.0.0.1
P
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$AIRLOCK" proxy -p relay-egress.yaml --relay-egress --listen "127.0.0.1:$pport" --no-confine >/dev/null 2>relay-egress.err &
rpx=$!
on_exit "kill $rpx"
for _ in $(seq 50); do python3 "$AIRLOCK_SRC/tests/integration/proxyclient.py" raw "$pport" 'X' >/dev/null 2>&1 && break; sleep 0.1; done
like "--relay-egress: CONNECT to the model API host is allowed" \
  "$(python3 "$AIRLOCK_SRC/tests/integration/proxyclient.py" raw "$pport" "CONNECT model.test:$cport HTTP/1.1\\r\\nHost: model.test:$cport\\r\\n\\r\\n")" "^200"
like "--relay-egress: CONNECT to the network section's host is refused" \
  "$(python3 "$AIRLOCK_SRC/tests/integration/proxyclient.py" raw "$pport" 'CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n')" "^403"
kill $rpx 2>/dev/null
# credentials.mode: sealed is not rendered (the forge gateway runs only under
# `airlock ticket`): render fails closed, naming the field and why, and
# writes nothing; --env-credentials accepts env mode and gives the old
# output (a header note saying what is carried instead, a warning on
# stderr). Control: the same policy in env mode renders without the flag,
# with neither the note nor the warning.
for mode in sealed env; do
  cat >cred-$mode.yaml <<P
version: 1
network:
  allow:
    - {host: api.github.com, port: 443}
    - {host: github.com, port: 443}
filesystem: {workspace_size: 64MiB, tmp_size: 32MiB}
process:
  limits: {memory: 512MiB, pids: 128, wall: 5m}
credentials:
  broker: /run/airlock/broker.sock
  git: {repo: acme/tally, permissions: {contents: write}}
  ticket: {repo: acme/tally, permissions: {issues: write}}
  mode: $mode
forge:
  api_url: https://api.github.com
  git_url: https://github.com
P
done
mkdir -p cred-refused
for r in compose kubernetes; do
  (cd cred-refused && "$AIRLOCK" render $r -p ../cred-sealed.yaml -o out.yaml --seccomp-out sc.json 2>../cred-refused-$r.err)
  is "render $r, sealed without --env-credentials: exit 2 (refused)" "$?" 2
  like "render $r, sealed: the error names credentials.mode and says why" "$(cat cred-refused-$r.err)" \
    "render $r: the policy's credentials.mode is sealed.*forge gateway.*only under .airlock ticket.*real tokens.*--env-credentials"
  is "render $r, sealed: nothing written (no manifest, no profile)" "$(ls -A cred-refused)" ""
  # the policy without a mode is sealed too (the default)
  grep -v '^  mode:' cred-sealed.yaml >cred-default.yaml
  "$AIRLOCK" render $r -p cred-default.yaml >/dev/null 2>&1
  is "render $r, no credentials.mode (sealed by default): refused" "$?" 2
done
for mode in sealed env; do
  flag=; [ $mode = sealed ] && flag=--env-credentials
  "$AIRLOCK" render compose -p cred-$mode.yaml -o cred-$mode-compose.yaml $flag 2>cred-$mode-compose.err
  is "render compose ($mode credentials${flag:+, $flag}) exits 0" "$?" 0
  "$AIRLOCK" render kubernetes -p cred-$mode.yaml -o cred-$mode-k8s.yaml $flag 2>cred-$mode-k8s.err
  is "render kubernetes ($mode credentials${flag:+, $flag}) exits 0" "$?" 0
done
"$AIRLOCK" render compose -p cred-env.yaml -o cred-env-flag.yaml --env-credentials 2>/dev/null
check "env policy: --env-credentials changes nothing" cmp cred-env-flag.yaml cred-env-compose.yaml
for r in compose k8s; do
  hdr=$(sed -n '/^[^#]/q;p' cred-sealed-$r.yaml | tr '\n' ' ')
  like "$r, sealed + --env-credentials: the header says sealed mode is not rendered" "$hdr" 'NOT RENDERED: credentials.mode: sealed'
  like "$r, sealed + --env-credentials: the header says what is carried instead (env mode, the real tokens)" "$hdr" 'env mode instead.*AIRLOCK_GIT_TOKEN and AIRLOCK_TICKET_TOKEN \(the real tokens\)'
  like "$r, sealed + --env-credentials: the header lists what is not covered" "$hdr" 'Not covered: the gateway beside the proxy.*run CA.*placeholders.*supervisor'
  like "$r, sealed + --env-credentials: render warns on stderr" "$(cat cred-sealed-$r.err)" 'warning: credentials.mode: sealed is not rendered'
  check_not "$r, env (control): no sealed note" grep -q 'credentials.mode: sealed' cred-env-$r.yaml
  check_not "$r, env (control): no warning" grep -q 'sealed is not rendered' cred-env-$r.err
done
# a profile that cannot be written names where its path came from (a new
# user gave -o only and was told of a file they never named)
out=$("$AIRLOCK" render compose -p pol.yaml -o "$T_TMP/no-such-dir/c.yml" 2>&1); rc=$?
like "compose -o into a missing directory: exit 1, the profile's path and that it is beside -o" "$rc/$out" \
  "^1/airlock render: the seccomp profile beside -o \(--seccomp-out FILE writes it elsewhere\): open \`$T_TMP/no-such-dir/airlock-seccomp.json\`"
out=$("$AIRLOCK" render compose -p pol.yaml -o "$T_TMP/c-ok.yml" --seccomp-out "$T_TMP/no-such-dir/s.json" 2>&1); rc=$?
like "control: with --seccomp-out the option is named" "$rc/$out" "^1/airlock render: --seccomp-out: open"
rm -f "$T_TMP/c-ok.yml"
done_testing
