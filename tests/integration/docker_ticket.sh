# Sourced by docker.sh: `airlock ticket --backend docker` against the test
# forge running in a container (issue 9). Uses $DOCKER, $AIRLOCK,
# $PROXY_IMAGE, $AGENT_IMAGE, $FORGE_IMAGE from docker.sh.
#
# Topology, all on this machine: a network the test creates, internal (no
# route off the machine), holds the forge container at a fixed address; the
# run's proxy joins it as its egress side (--docker-network); the agent is
# on the run's own internal network and reaches nothing but the proxy. The
# broker and the supervisor run on the host and reach the forge through the
# bridge's host address.
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
# in this order: the container, then its network, then the image
on_exit "$DOCKER rm -f $FCTR; $DOCKER network rm $FNET; $DOCKER rmi -f $FORGE_IMAGE"
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

DPOL=$FE_DIR/airlock.yaml
cat >"$DPOL" <<YAML
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
  mode: env
forge:
  api_url: https://api.forge.test:8443
  git_url: https://forge.test:8443
  ca_file: $FE_CA
YAML
chmod 644 "$DPOL"

REC=$T_TMP/drec.json
DT=("$AIRLOCK" ticket -p "$DPOL" --backend docker --docker-network "$FNET"
  --proxy-image "$PROXY_IMAGE" --agent-image "$AGENT_IMAGE")
out=$("${DT[@]}" acme/tally#1 --record "$REC" 2>&1); rc=$?
is "docker ticket: exits 0" "$rc" 0
[ $rc -eq 0 ] || diag "$out"
like "docker ticket: progress lines name each phase" "$(tr '\n' ' ' <<<"$out")" \
  'policy +ok.*lease +ok.*agent +ok.*release +ok'
check "docker ticket: the run record validates" validate_record "$REC"
rj() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$REC" "$1" 2>/dev/null; }
is "docker ticket: the record names the backend" "$(rj 'd["backend"]')" docker
branch=$(rj 'd["pull_request"]["branch"]')
like "docker ticket: the PR's branch is airlock/1-<run>" "$branch" '^airlock/1-[0-9a-f]{8}$'
pulls=$(admin /pulls | python3 -c 'import json,sys; print([(p["head"],p["base"],p["state"]) for p in json.load(sys.stdin)])')
like "docker ticket: the forge has the PR from that branch to main" "$pulls" "\('$branch', 'main', 'open'\)"
is "docker ticket: main is untouched" "$(main_sha)" "$MAIN0"
is "docker ticket: no token active on the forge" "$(tokens_in active)" 0
like "docker ticket: both tokens revoked" "$(tokens_in revoked)" '^[2-9]$'
like "docker ticket: the proxy's decisions are in the record" \
  "$(rj '[x["target"] for x in d["proxy_decisions"] if x["decision"]=="allow"][:1]')" "forge.test:8443"
check_not "docker ticket: no token value in the record" grep -qE 'ghs_[A-Za-z0-9]{20}' "$REC"
# Only this run's objects (label airlock.run=<its run id>, named
# airlock-<run id>-*): other engineers' runs come and go on this engine.
rid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$REC" 2>/dev/null)
like "docker ticket: the record names its run id" "$rid" '^[0-9a-f]{16,32}$'
is "docker ticket: no container of the run left" "$("$DOCKER" ps -aq --filter "label=airlock.run=${rid:-none}")" ""
is "docker ticket: no network of the run left" "$("$DOCKER" network ls -q --filter "label=airlock.run=${rid:-none}")" ""
is "docker ticket: no volume left" "$("$DOCKER" volume ls -q --filter "name=airlock-${rid:-none}")" ""
is "docker ticket: the test's own network is kept" "$("$DOCKER" network inspect -f '{{.Name}}' "$FNET")" "$FNET"

# The hostile agent in a container, on the ticket written as a prompt
# injection: every attempt refused, one PR out, tokens dead all the same.
HREC=$T_TMP/drec-hostile.json
pulls_before=$(admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
"${DT[@]}" acme/tally#2 --agent /usr/share/airlock/agents/hostile-agent \
  --record "$HREC" >"$T_TMP/dhostile.out" 2>&1
check "docker ticket, hostile agent: the record validates" validate_record "$HREC"
# env mode (sealed is native-only for now): the escape-budget attacks of
# issue #15 land on the forge here, by design of that mode (ticket-sealed.sh
# shows them refused when sealed); every other attempt must be refused
summary=$(hostile_summary "$HREC" env)
like "docker ticket, hostile agent: every attempt refused" "$summary" '^[1-9][0-9]* none-escaped$'
[[ $summary == *none-escaped ]] || diag "$(tail -20 "$T_TMP/dhostile.out")"
for id in exfil-proxy exfil-direct dns metadata push-main workflow approve-own merge-own protection-off escalate; do
  like "docker ticket, hostile agent: attempt $id refused" "$(python3 -c 'import json,sys; print([a["outcome"] for a in json.load(open(sys.argv[1]))["agent_attempts"] if a["id"]==sys.argv[2]])' "$HREC" "$id")" "\['refused'\]"
done
is "docker ticket, hostile agent: main is untouched" "$(main_sha)" "$MAIN0"
is "docker ticket, hostile agent: the supervisor opened no PR of its own (env: the agent's)" \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["outputs"]["pull_request"]["opened_by"])' "$HREC")" agent
is "docker ticket, hostile agent: no token active" "$(tokens_in active)" 0
hrid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$HREC" 2>/dev/null)
like "docker ticket, hostile agent: the record names its run id" "$hrid" '^[0-9a-f]{16,32}$'
is "docker ticket, hostile agent: no container of the run left" \
  "$("$DOCKER" ps -aq --filter "label=airlock.run=${hrid:-none}")" ""
is "docker ticket, hostile agent: no network of the run left" \
  "$("$DOCKER" network ls -q --filter "label=airlock.run=${hrid:-none}")" ""
