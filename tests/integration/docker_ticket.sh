# Sourced by docker.sh: `airlock ticket --backend docker` against the test
# forge running in a container (issue 9). Uses $DOCKER, $AIRLOCK,
# $PROXY_IMAGE, $AGENT_IMAGE, $FORGE_IMAGE from docker.sh.
#
# Topology, all on this machine: a network the test creates, internal (no
# route off the machine), holds the forge container at a fixed address; the
# broker, the supervisor and the run's egress proxy run on the host and
# reach the forge through the bridge's host address; the agent's container
# has no network but loopback and the proxy's listener there.
. "$AIRLOCK_SRC/tests/integration/forgeenv.sh"
if [ "$(id -u)" != 0 ] || [ -z "${FORGE_IMAGE:-}" ] ||
  ! "$DOCKER" image inspect "$FORGE_IMAGE" >/dev/null 2>&1; then
  skip "docker ticket: needs root and the test forge image (build with -Dforge=true)"
  return 0
fi

# A subnet no route of this host uses: the forge gets .10 on it.
FNET=altest-forge$$ FIP=
for n in $(seq 200 240); do
  ip -4 route | grep -q "^10\.213\.$n\." && continue
  if "$DOCKER" network create --internal --subnet "10.213.$n.0/24" --label "airlock.test=$$" \
    "$FNET" >/dev/null 2>&1; then FIP=10.213.$n.10; break; fi
done
if [ -z "$FIP" ]; then fail "docker ticket: could not create the forge's internal network"; return 0; fi
FCTR=altest-forge$$
# in this order: the container, then its network, then the image, by its
# id: docker.sh's earlier cleanup only untags an image a container still uses
FORGE_ID=$("$DOCKER" image inspect -f '{{.Id}}' "$FORGE_IMAGE")
on_exit "$DOCKER rm -f $FCTR; $DOCKER network rm $FNET; $DOCKER rmi -f $FORGE_IMAGE $FORGE_ID"
is "the forge's network is internal" "$("$DOCKER" network inspect -f '{{.Internal}}' "$FNET")" true

FE_DIR=$T_TMP/dfe
mkdir -p "$FE_DIR/secret"
chmod 755 "$FE_DIR"; chmod 700 "$FE_DIR/secret"
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$FE_DIR/tls" api.forge.test forge.test "IP:$FIP" >/dev/null 2>&1
"$AIRLOCK_SRC/scripts/make-app-key.sh" "$FE_DIR/secret/keys" app >/dev/null 2>&1
"$AIRLOCK_SRC/scripts/make-app-key.sh" "$FE_DIR/secret/keys" auditor >/dev/null 2>&1
chmod 755 "$FE_DIR/tls"; chmod 644 "$FE_DIR/tls/ca.crt"
FE_CA=$FE_DIR/tls/ca.crt
# --userns=host: the forge reads the test's key files as root (the daemon
# may run with userns-remap); it is the test's server, not the sandbox.
"$DOCKER" run -d --pull never --userns=host --name "$FCTR" --label "airlock.test=$$" --network "$FNET" --ip "$FIP" \
  --tmpfs /data:size=256m --tmpfs /tmp:size=64m \
  -v "$FE_DIR/tls:/tls:ro" -v "$FE_DIR/secret/keys:/keys:ro" \
  -v "$AIRLOCK_SRC/examples/demo:/demo:ro" \
  "$FORGE_IMAGE" --fixture /demo/fixture.json --data /data --tls-dir /tls --bind 0.0.0.0 \
  --port 8443 --admin-port 8080 --key 1001=/keys/app.pub.pem --key 1002=/keys/auditor.pub.pem \
  >/dev/null
FE_ADMIN_URL=http://$FIP:8080
admin() { curl -s --noproxy '*' -m 10 "$FE_ADMIN_URL$1"; }
for _ in $(seq 100); do admin /tokens >/dev/null && break; sleep 0.1; done
like "the test forge runs in a container on the internal network" \
  "$("$DOCKER" inspect -f '{{.State.Running}} {{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "$FCTR")" \
  "^true $FNET $"
MAIN0=$(main_sha 2>/dev/null)
like "control: the host reaches the forge's admin API; main has a commit" "$MAIN0" '^[0-9a-f]{40}$'
if ! [[ $MAIN0 =~ ^[0-9a-f]{40}$ ]]; then
  diag "$("$DOCKER" logs "$FCTR" 2>&1 | tail -5)"
  return 0
fi

FE_SOCK=$FE_DIR/secret/broker.sock
write_broker_config "https://$FIP:8443" "acme/tally"
check "the broker starts (it reaches the forge in its container)" broker_start

# dpolicy FILE MODE: the run's policy; MODE "" is the default (sealed)
dpolicy() {
  cat >"$1" <<YAML
version: 1
network:
  allow:
    - {host: api.forge.test, port: 8443, tls: true}
    - {host: forge.test, port: 8443, tls: true}
  pin:
    - {host: api.forge.test, address: $FIP}
    - {host: forge.test, address: $FIP}
filesystem: {workspace_size: 256MiB, tmp_size: 128MiB}
process:
  limits: {memory: 1GiB, pids: 256, wall: 3m}
credentials:
  broker: $FE_SOCK
  git: {repo: acme/tally, permissions: {contents: write, pull_requests: write}}
  ticket: {repo: acme/tally, permissions: {issues: write}}
  ttl: 5m
${2:+  mode: $2}
forge:
  api_url: https://api.forge.test:8443
  git_url: https://forge.test:8443
  ca_file: $FE_CA
YAML
  chmod 644 "$1"
}
DPOL=$FE_DIR/airlock.yaml DPOL_ENV=$FE_DIR/airlock-env.yaml
dpolicy "$DPOL" ""
dpolicy "$DPOL_ENV" env
like "docker ticket: the default policy is sealed, the control's env" \
  "$("$AIRLOCK" policy check "$DPOL" | head -1) $("$AIRLOCK" policy check "$DPOL_ENV" | head -1)" '"mode":"sealed".*"mode":"env"'

# left_of RUN_ID: the containers, networks and volumes with that run's label
# (other engineers' runs on this engine are theirs: never counted here)
left_of() {
  [ -n "$1" ] || { echo "no run id"; return; }
  echo "$("$DOCKER" ps -aq --filter "label=airlock.run=$1")" \
    "$("$DOCKER" network ls -q --filter "label=airlock.run=$1")" \
    "$("$DOCKER" volume ls -q --filter "label=airlock.run=$1")" | tr -s ' ' | sed 's/^ *//; s/ *$//'
}
REC=$T_TMP/drec.json
# the supervisor's temporary files (the gateway's socket) go under $DTMP
DTMP=$T_TMP/dtmp; mkdir -p "$DTMP"
DT=(env TMPDIR="$DTMP" "$AIRLOCK" ticket --backend docker --agent-image "$AGENT_IMAGE")
# While the run goes on, everything the engine keeps of its containers
# (configuration, environment, logs) is copied out, to look for tokens.
INSP=$T_TMP/dinspect
watch_engine() {
  : >"$INSP"
  while [ -e "$T_TMP/watching" ]; do
    for c in $("$DOCKER" ps -q --filter label=airlock.run 2>/dev/null); do
      "$DOCKER" inspect "$c" >>"$INSP" 2>/dev/null
      "$DOCKER" logs "$c" >>"$INSP" 2>&1
    done
    sleep 0.5
  done
}
touch "$T_TMP/watching"; watch_engine & WPID=$!
"${DT[@]}" -p "$DPOL" acme/tally#1 --record "$REC" >"$T_TMP/d1.out" 2>&1; rc=$?
out=$(cat "$T_TMP/d1.out")
rm -f "$T_TMP/watching"; wait "$WPID"
is "docker ticket (sealed): exits 0" "$rc" 0
[ $rc -eq 0 ] || diag "$out"
like "docker ticket: progress lines name each phase" "$(tr '\n' ' ' <<<"$out")" \
  'policy +ok.*lease +ok.*gateway +ok.*agent +ok.*release +ok'
check "docker ticket: the run record validates" validate_record "$REC"
rj() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "${RJ:-$REC}" "$1" 2>/dev/null; }
is "docker ticket: the record names the backend and the mode" "$(rj 'd["backend"], d["credentials_mode"]')" "('docker', 'sealed')"
branch=$(rj 'd["pull_request"]["branch"]')
like "docker ticket: the PR's branch is airlock/1-<run>" "$branch" '^airlock/1-[0-9a-f]{8}$'
pulls=$(admin /pulls | python3 -c 'import json,sys; print([(p["head"],p["base"],p["state"]) for p in json.load(sys.stdin)])')
like "docker ticket: the forge has the PR from that branch to main" "$pulls" "\('$branch', 'main', 'open'\)"
is "docker ticket: the supervisor opened it" "$(rj 'd["outputs"]["pull_request"]["opened_by"]')" supervisor
like "docker ticket: the gateway let the push of the run branch through, with its ref update" \
  "$(rj '[(x["decision"], u["ref"]) for x in d["gateway_decisions"] if "receive-pack" in x.get("path","") and x.get("refs") for u in x["refs"]]')" \
  "\('allow', 'refs/heads/$branch'\)"
like "docker ticket: the clone went through the gateway" \
  "$(rj '[x["decision"] for x in d["gateway_decisions"] if x.get("path","").endswith("git-upload-pack")]')" "'allow'"
like "docker ticket: the proxy handed the forge CONNECTs to the gateway" \
  "$(rj '[x.get("event") for x in d["proxy_decisions"] if x.get("target","").startswith("forge.test")]')" "handoff"
is "docker ticket: no real token in the container (cred.run-tokens)" \
  "$(rj '[x["verdict"] for x in d["preflight"]["results"] if x["id"]=="cred.run-tokens"]')" "['blocked']"
is "docker ticket: main is untouched" "$(main_sha)" "$MAIN0"
is "docker ticket: no token active on the forge" "$(tokens_in active)" 0
like "docker ticket: both tokens revoked" "$(tokens_in revoked)" '^[2-9]$'
check_not "docker ticket: no token value in the record" grep -qE 'gh[pousr]_[A-Za-z0-9]{20}' "$REC"
# the engine's copy: the watcher saw the run's agent container (its config
# names the agent and the placeholder's variable), and no token in any of it
like "docker ticket: the watcher captured the agent container's configuration" \
  "$(grep -c "airlock-$(rj 'd["run_id"]')-agent" "$INSP")" '^[1-9]'
# the egress proxy (and with it the gateway's hand-off) runs on the host:
# the run's one container is its agent's
is "docker ticket: the run made one container, the agent's" \
  "$(grep -o "\"Name\": \"/airlock-$(rj 'd["run_id"]')-[a-z]*\"" "$INSP" | sort -u | sed 's/.*-//; s/"//')" agent
check_not "docker ticket: no token in any container's configuration, env or log (docker inspect, logs)" \
  grep -qE 'gh[pousr]_[A-Za-z0-9]{20}' "$INSP"
gwpid=$(rj 'd["gateway"]["pid"]')
like "docker ticket: the record names the gateway's pid" "$gwpid" '^[0-9]+$'
check_not "docker ticket: the gateway process is gone" kill -0 "$gwpid"
is "docker ticket: nothing of the run left in its TMPDIR (the hand-off socket)" "$(ls -A "$DTMP")" ""
is "docker ticket: no container, network or volume of the run left" "$(left_of "$(rj 'd["run_id"]')")" ""

# The hostile agent in a container, on the ticket written as a prompt
# injection. First the control, env mode: the escape-budget attacks of
# issue #15 land on the forge (the forge's own protection is all there
# is); every other attempt is refused.
ATTACKS="push-feature-evil push-other-run push-earlier-pr tag-push tag-force tag-delete extra-prs delete-branch comment-other-issue review-lgtm"
outcome() { python3 -c 'import json,sys; print([a["outcome"] for a in json.load(open(sys.argv[1]))["agent_attempts"] if a["id"]==sys.argv[2]])' "$1" "$2"; }
HREC=$T_TMP/drec-hostile.json
"${DT[@]}" -p "$DPOL_ENV" acme/tally#2 --agent /usr/share/airlock/agents/hostile-agent \
  --record "$HREC" >"$T_TMP/dhostile.out" 2>&1
check "docker ticket, hostile agent (env): the record validates" validate_record "$HREC"
summary=$(hostile_summary "$HREC" env)
like "docker ticket, hostile agent (env): every attempt but the escape-budget ones refused" "$summary" '^[1-9][0-9]* none-escaped$'
[[ $summary == *none-escaped ]] || diag "$(tail -20 "$T_TMP/dhostile.out")"
for id in $ATTACKS; do
  is "control (docker, env): $id lands on the forge" "$(outcome "$HREC" "$id")" "['succeeded']"
done
like "control (docker, env): the forge accepted the off-branch push feature-evil" \
  "$(admin /pushes | python3 -c 'import json,sys; print(sorted({p["ref"] for p in json.load(sys.stdin) if p["accepted"]}))')" "refs/heads/feature-evil"
for id in exfil-proxy exfil-direct dns metadata push-main workflow approve-own merge-own protection-off escalate; do
  is "docker ticket, hostile agent (env): attempt $id refused" "$(outcome "$HREC" "$id")" "['refused']"
done
is "docker ticket, hostile agent (env): the agent's own PR, verified" \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["outputs"]["pull_request"]["opened_by"])' "$HREC")" agent

# The same agent, sealed (the default): airlock's gateway refuses each
# attack, with its reason in the record.
SREC=$T_TMP/drec-sealed.json
npush0=$(admin /pushes | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
p0=$(admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
"${DT[@]}" -p "$DPOL" acme/tally#2 --agent /usr/share/airlock/agents/hostile-agent \
  --record "$SREC" >"$T_TMP/dsealed.out" 2>&1; rc=$?
is "docker ticket, hostile agent (sealed): exits 0 (one PR, verified)" "$rc" 0
[ $rc -eq 0 ] || diag "$(tail -20 "$T_TMP/dsealed.out")"
check "docker ticket, hostile agent (sealed): the record validates" validate_record "$SREC"
like "docker ticket, hostile agent (sealed): nothing escaped" "$(hostile_summary "$SREC")" '^[1-9][0-9]* none-escaped$'
for id in $ATTACKS open-pr-itself push-main workflow approve-own merge-own protection-off; do
  is "docker ticket, hostile agent (sealed): $id refused" "$(outcome "$SREC" "$id")" "['refused']"
done
reasons=$(RJ=$SREC rj 'sorted(d["gateway_summary"]["refused_by_reason"])')
for why in push-other-branch push-tag other-ticket; do
  like "docker ticket, hostile agent (sealed): the record names the reason $why" "$reasons" "'$why'"
done
like "docker ticket, hostile agent (sealed): the off-branch push is in the record, refused" \
  "$(RJ=$SREC rj '[(x["reason"], u["ref"]) for x in d["gateway_decisions"] if x["decision"]!="allow" and x.get("refs") for u in x["refs"]]')" \
  "\('push-other-branch', 'refs/heads/feature-evil'\)"
is "docker ticket, hostile agent (sealed): the forge saw one push, the run branch's" \
  "$(admin /pushes | python3 -c 'import json,sys; d=json.load(sys.stdin)[int(sys.argv[1]):]; print([(p["ref"].split("/")[2], p["accepted"]) for p in d])' "$npush0")" "[('airlock', True)]"
is "docker ticket, hostile agent (sealed): one more PR, opened by the supervisor" \
  "$(( $(admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') - p0 )) $(RJ=$SREC rj 'd["outputs"]["pull_request"]["opened_by"]')" "1 supervisor"
like "docker ticket, hostile agent (sealed): the summary lists what was refused" \
  "$(cat "$T_TMP/dsealed.out")" 'credentials sealed: .*refused [1-9][0-9]* \(.*push-other-branch [0-9]'
is "docker ticket, hostile agent: main is untouched" "$(main_sha)" "$MAIN0"
is "docker ticket, hostile agent: no token active" "$(tokens_in active)" 0
is "docker ticket, hostile agent: no hand-off socket left" "$(ls -A "$DTMP")" ""
is "docker ticket, hostile agent (env): no container, network or volume of the run left" \
  "$(left_of "$(RJ=$HREC rj 'd["run_id"]')")" ""
is "docker ticket, hostile agent (sealed): no container, network or volume of the run left" \
  "$(left_of "$(RJ=$SREC rj 'd["run_id"]')")" ""

# A signal in the middle of a sealed run: the agent (a sleep) is running in
# its container, the gateway beside the supervisor. SIGINT ends the run
# cleanly: no container, network, socket, proxy or gateway process left, the
# tokens revoked. SIGKILL (airlock cannot clean up): the gateway and the
# proxy die with it all the same (PDEATHSIG); what is left is what
# docs/docker.md lists (the stopped container).
# run_of_ours: the run id of our sleeping run (its container binds the
# hand-off socket from under $DTMP), once its agent container runs; "" after
# 60 s
run_of_ours() {
  local c rid
  for _ in $(seq 120); do
    for c in $("$DOCKER" ps -q --filter label=airlock.run 2>/dev/null); do
      if "$DOCKER" inspect -f '{{join .HostConfig.Binds " "}}' "$c" 2>/dev/null | grep -qF "$DTMP/"; then
        rid=$("$DOCKER" inspect -f '{{index .Config.Labels "airlock.run"}}' "$c")
        if [ "$("$DOCKER" inspect -f '{{.State.Running}}' "airlock-$rid-agent" 2>/dev/null)" = true ]; then
          echo "$rid"; return 0
        fi
      fi
    done
    sleep 0.5
  done
}
for sig in INT KILL; do
  IREC=$T_TMP/drec-$sig.json
  "${DT[@]}" -p "$DPOL" acme/tally#1 --agent /bin/sleep --record "$IREC" -- 300 >"$T_TMP/d$sig.out" 2>&1 &
  IPID=$!
  rid=$(run_of_ours)
  like "SIG$sig: the sealed run's agent container is running" "$rid" '^[0-9a-f]{16}$'
  gw=$(ps -o pid=,comm= --ppid "$IPID" | awk '$2=="airlock-gateway"{print $1}')
  like "SIG$sig: control: its gateway process runs beside the supervisor" "$gw" '^[0-9]+$'
  # The agent's container runs before its shim hands the listener over; the
  # proxy is forked on the host and the socket removed after that (a slow
  # build, ASan, takes seconds): both are waited for, 60 s at most.
  px=
  for _ in $(seq 600); do
    px=$(ps -o pid=,comm= --ppid "$IPID" | awk '$2=="airlock-proxy"{print $1}')
    [ -n "$px" ] && [ -z "$(ls -A "$DTMP")" ] && break
    sleep 0.1
  done
  like "SIG$sig: control: its egress proxy runs beside the supervisor, on the host" "$px" '^[0-9]+$'
  is "SIG$sig: no hand-off socket on the host while the agent runs" "$(ls -A "$DTMP")" ""
  kill -"$sig" "$IPID"; { wait "$IPID"; } 2>/dev/null; rc=$?
  gone=no
  for _ in $(seq 100); do [ -n "$gw" ] && ! kill -0 "$gw" 2>/dev/null && { gone=yes; break; }; sleep 0.1; done
  is "SIG$sig: the gateway process is gone" "$gone" yes
  gone=no
  for _ in $(seq 100); do [ -n "$px" ] && ! kill -0 "$px" 2>/dev/null && { gone=yes; break; }; sleep 0.1; done
  is "SIG$sig: the proxy process is gone" "$gone" yes
  if [ "$sig" = INT ]; then
    is "SIGINT: the run exits 130" "$rc" 130
    [ "$rc" = 130 ] || diag "$(tail -5 "$T_TMP/dINT.out")"
    is "SIGINT: no container of the run left" "$("$DOCKER" ps -aq --filter "label=airlock.run=$rid")" ""
    is "SIGINT: no network of the run left" "$("$DOCKER" network ls -q --filter "label=airlock.run=$rid")" ""
    is "SIGINT: nothing of the run left in its TMPDIR" "$(ls -A "$DTMP")" ""
    is "SIGINT: no token active" "$(tokens_in active)" 0
  else
    # what docs/docker.md says to remove by hand after a SIGKILL
    "$DOCKER" ps -aq --filter "label=airlock.run=$rid" | xargs -r "$DOCKER" rm -f -v >/dev/null 2>&1
    "$DOCKER" network ls -q --filter "label=airlock.run=$rid" | xargs -r "$DOCKER" network rm >/dev/null 2>&1
    "$DOCKER" volume ls -q --filter "label=airlock.run=$rid" | xargs -r "$DOCKER" volume rm >/dev/null 2>&1
    is "SIGKILL: nothing of the run left in its TMPDIR" "$(ls -A "$DTMP")" ""
  fi
done
