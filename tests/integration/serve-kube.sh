#!/bin/bash
# airlock serve with runs.runner: kubernetes (issue #32, docs/scale.md):
# each run as the objects of `airlock render kubernetes --run-id`, created,
# watched and deleted by the leader's `airlock serve kube-run` child
# against kubestub.py (a test double of the API endpoints used, on
# loopback: not an API server). Checked: an env-mode ticket's objects are
# created, its Job watched to its end, airlock's probe log collected (never
# the agent's), every object deleted, and the run ends with what the forge
# shows (no PR: no token is delivered into the pod, and the record says
# so); a sealed policy is refused before the broker is asked for anything
# or any object exists; a pod lost with its node and a cluster that does
# not enforce NetworkPolicy end the run failed with the reason; a leader
# killed mid-Job: the standby adopts the Job (409) and no second Job is
# made; no token value in any object sent or stored; every object sent
# validates against the Kubernetes schemas (npm kubernetes-models), with a
# control.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
. "$(dirname "$0")/serveenv.sh"
[ "$(id -u)" = 0 ] || { skip "serve tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
serve_env_start 2 2 || { fail "forge + broker + serve environment"; done_testing; exit 1; }
kill "$SV_PID"; wait "$SV_PID" 2>/dev/null   # the suite's single daemon: not used here

K=$T_TMP/kube
mkdir -p "$K/sa-a" "$K/sa-b"
chmod 700 "$K"
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$K/tls" >/dev/null 2>&1 || { fail "test CA"; done_testing; exit 1; }
rand() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
TA=$(rand) TB=$(rand)
printf 'serve-a %s\nserve-b %s\n' "$TA" "$TB" >"$K/tokens"
printf '%s\n' "$TA" >"$K/sa-a/token"; printf '%s\n' "$TB" >"$K/sa-b/token"
for d in sa-a sa-b; do printf 'airlock\n' >"$K/$d/namespace"; chmod 600 "$K/$d/token"; done
python3 "$AIRLOCK_SRC/tests/integration/kubestub.py" "$K/tls/server.crt" "$K/tls/server.key" "$K/tokens" "$K/port" 2>"$K/stub.err" &
STUB=$!
on_exit "kill $STUB"
for _ in $(seq 100); do [ -s "$K/port" ] && break; sleep 0.05; done
KPORT=$(cat "$K/port")
stub() { curl -s --noproxy '*' --max-time 10 --cacert "$K/tls/ca.crt" "https://127.0.0.1:$KPORT$@"; }
mode() { stub /_stub/jobs -X POST -d "{\"mode\":\"$1\"}" >/dev/null; }
state() { stub /_stub/state >"$K/state.json"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { local n=$1; shift; for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done; return 1; }
row() { python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("select "+sys.argv[3]+" from runs where id=?", (int(sys.argv[2]),)).fetchone(); print(r[0] if r else "")' "$SV_DIR/state/queue.db" "$1" "$2"; }
row_is() { [ "$(row "$1" state)" = "$2" ]; }
row_done() { case $(row "$1" state) in queued|running|"") return 1 ;; esac; }
record() { row "$1" record; }
rfield() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v := (v.get(k) if isinstance(v, dict) else None) for k in sys.argv[2].split(".")]; print(json.dumps(v) if isinstance(v,(bool,type(None),list,dict)) else v)' "$(record "$1")" "$2"; }

# The env-mode policy (credentials.mode: env) of acme/tally; acme/flaky's
# is sealed (the default) and names a broker socket that does not exist:
# a sealed run refused before any broker is asked cannot notice.
sed 's/^credentials:$/credentials:\n  mode: env/' "$FE_POLICY" >"$K/env.yaml"
chmod 644 "$K/env.yaml"
grep -q '^  mode: env' "$K/env.yaml" || fail "the env policy"

# kube_config FILE IDENTITY SA-DIR STATUS-PORT [election lines]
kube_config() {
  cat >"$1" <<YAML
version: 1
listen:
  webhook: ""
  status: 127.0.0.1:$4
broker: $FE_SOCK
state_dir: $SV_DIR/state
runs:
  max_concurrent: 2
  runner: kubernetes
  retries: 0
election:
  identity: $2
  api: https://127.0.0.1:$KPORT
  token_file: $K/$3/token
  ca_file: $K/tls/ca.crt
${5:-}
repositories:
  - {repo: acme/tally, policy: $K/env.yaml}
  - {repo: acme/flaky, policy: $SV_DIR/flaky.yaml}
YAML
}
start_daemon() { # NAME CONFIG: sets PID_<NAME>
  "$AIRLOCK_NET" serve -c "$2" >>"$K/$1.log" 2>&1 &
  eval "PID_$1=$!"
  on_exit "kill $!"
}
enqueue() { "$AIRLOCK" serve enqueue -c "$K/a.yaml" "$1" 2>>"$K/enq.err"; }

# Config: runner is an enum of the walker, with the rule named.
kube_config "$K/bad.yaml" serve-a sa-a 1
sed -i 's/runner: kubernetes/runner: k8s/' "$K/bad.yaml"
like "runs.runner: an unknown runner is refused with the rule" "$("$AIRLOCK_NET" serve -c "$K/bad.yaml" 2>&1)" 'runs.runner: must be `local` or `kubernetes`, got `k8s`'

sed 's/runner: k8s/runner: kubernetes\n  backend: docker/' "$K/bad.yaml" >"$K/bad2.yaml"
like "runs.backend: docker with runner: kubernetes is refused with the rule" "$("$AIRLOCK_NET" serve -c "$K/bad2.yaml" 2>&1)" 'runs.backend: docker applies to runs.runner: local only'
kr_out=$("$AIRLOCK_NET" serve kube-run -c "$K/bad2.yaml" 2>&1); kr_rc=$?
is "serve kube-run without its options: exit 2" "$kr_rc" 2
like "… naming what it needs" "$kr_out" 'kube-run: -c, --row, --instance, -p, --record and one TARGET'

PA=$(free_port) PB=$(free_port)
kube_config "$K/a.yaml" serve-a sa-a "$PA"
start_daemon a "$K/a.yaml"

# 1. an env-mode ticket: the run's objects, the Job to its end, deleted
mode complete
id1=$(enqueue acme/tally#1)
check "ticket 1 ends" wait_for 600 row_done "$id1"
is "ticket 1: failed (no PR: the pod got no token)" "$(row "$id1" state)" failed
like "… the reason says why" "$(row "$id1" reason)" 'no open PR from airlock/1-.*delivers no token into the pod'
RUN1=$(rfield "$id1" run_id)
like "the record's run id is the row's" "$RUN1" "^s[0-9a-f]{8}-$id1\$"
is "the record: runner kubernetes" "$(rfield "$id1" runner)" kubernetes
is "the record: the Job succeeded" "$(rfield "$id1" job.phase)" succeeded
is "the record: the Job was deleted" "$(rfield "$id1" job.deleted)" true
is "the record: created, not adopted" "$(rfield "$id1" job.adopted)" false
is "the record: airlock's probe verdict collected" "$(rfield "$id1" job.probe)" "airlock probe: only the proxy answers; the agent may start"
check_not "the agent's log was not collected" grep -q "must never be collected" "$(record "$id1")"
is "the record: credentials not delivered, and says so" "$(rfield "$id1" credentials.delivered)" false
state
check "the stub saw each object of the run created once, then deleted" python3 - "$K/state.json" "$RUN1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); run = sys.argv[2]
posts = [q for q in s["requests"] if q["method"] == "POST" and (q["body"] or {}).get("metadata", {}).get("name", "").endswith(run)]
kinds = sorted(q["body"]["kind"] for q in posts)
assert kinds == ["ConfigMap", "Deployment", "Job", "NetworkPolicy", "NetworkPolicy", "NetworkPolicy", "Service"], kinds
assert all(q["body"].get("kind") != "Namespace" for q in s["requests"] if q["body"]), "a Namespace was sent"
assert any("watch=1" in q["path"] and "resourceVersion=" in q["path"] and run in q["path"] for q in s["requests"])
assert any(q["path"].endswith("/log?container=netpol-probe&limitBytes=1048576") for q in s["requests"])
assert not any("container=agent" in q["path"] for q in s["requests"]), "the agent's log was read"
left = [o["metadata"]["name"] for o in s["objects"] + s["jobs"] if o["metadata"]["name"].endswith(run)]
assert not left, left
dels = [q for q in s["requests"] if q["method"] == "DELETE" and q["path"].split("?")[0].endswith(run)]
assert len(dels) == 7 and all(q["body"]["propagationPolicy"] == "Background" for q in dels), dels
PY

# 2. a sealed policy: refused, nothing asked of the broker, no object
nreq0=$(stub /_stub/state | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["requests"]))')
id2=$(enqueue acme/flaky#1)
check "sealed: the run ends" wait_for 600 row_done "$id2"
is "sealed: refused" "$(row "$id2" state)" refused
like "sealed: the reason names sealed and the broker" "$(row "$id2" reason)" 'cannot run a sealed policy.*before any token left the broker'
is "sealed: the record says refused" "$(rfield "$id2" refused)" true
is "sealed: no object in the record" "$(rfield "$id2" objects)" "[]"
is "sealed: no API request since the enqueue" "$(stub /_stub/state | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["requests"]))')" "$nreq0"
check_not "sealed: the policy's broker socket was never needed (it does not exist)" test -e "$SV_DIR/no-broker-here.sock"

# 3. the node dies: the pod is lost, the Job fails; the run fails with the reason
mode fail
id3=$(enqueue acme/tally#2)
check "node lost: the run ends" wait_for 600 row_done "$id3"
is "node lost: failed" "$(row "$id3" state)" failed
like "node lost: the reason is the Job's and its pod's" "$(row "$id3" reason)" 'the Job failed: BackoffLimitExceeded: .*its pod: Failed \(NodeLost\)'
is "node lost: the record has the pod's reason" "$(rfield "$id3" job.pod_reason)" NodeLost
is "node lost: the Job was deleted" "$(rfield "$id3" job.deleted)" true

# 4. a CNI that does not enforce NetworkPolicy: the probe fails the Job
mode netpol-open
id4=$(enqueue acme/tally#3)
check "open network: the run ends" wait_for 600 row_done "$id4"
is "open network: failed" "$(row "$id4" state)" failed
like "open network: the probe's verdict is the reason" "$(row "$id4" reason)" 'NetworkPolicy is NOT enforced'

# 4b. the watch's resourceVersion is too old (410 Gone): relisted, the run ends
mode gone
id4b=$(enqueue acme/tally#5)
check "410 Gone: the run ends" wait_for 600 row_done "$id4b"
is "410 Gone: the Job still succeeded" "$(rfield "$id4b" job.phase)" succeeded
check "410 Gone: the runner relisted" test "$(rfield "$id4b" job.relists)" -ge 1

# 4c. the caps hold for Jobs as for processes: runs.max_concurrent 2, three
# tickets, their Jobs held running: two Jobs, the third row queued
run_of() { stub /_stub/state | python3 -c 'import json,re,sys; m=[j["metadata"]["name"][len("airlock-agent-"):] for j in json.load(sys.stdin)["jobs"] if re.fullmatch(r"airlock-agent-s[0-9a-f]{8}-"+sys.argv[1], j["metadata"]["name"])]; print(m[0] if m else ""); sys.exit(0 if m else 1)' "$1"; }
njobs() { stub /_stub/state | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))'; }
mode hold
c1=$(enqueue acme/tally#6) c2=$(enqueue acme/tally#7) c3=$(enqueue acme/tally#8)
check "caps: two Jobs run" wait_for 300 sh -c "[ \$(curl -s --noproxy '*' --cacert $K/tls/ca.crt https://127.0.0.1:$KPORT/_stub/state | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"jobs\"]))') -ge 2 ]"
sleep 1   # a few scheduler ticks (250 ms each) for a third start, if the cap let it
is "caps: still two Jobs, no third" "$(njobs)" 2
is "caps: the third row waits, queued" "$(row "$c3" state)" queued
for c in "$c1" "$c2"; do stub /_stub/jobs -X POST -d "{\"finish\": \"airlock-agent-$(run_of "$c")\"}" >/dev/null; done
check "caps: the third starts when a slot frees" wait_for 300 run_of "$c3"
stub /_stub/jobs -X POST -d "{\"finish\": \"airlock-agent-$(run_of "$c3")\"}" >/dev/null
check "caps: the third ends" wait_for 600 row_done "$c3"
is "caps: all three Jobs succeeded" "$(rfield "$c1" job.phase) $(rfield "$c2" job.phase) $(rfield "$c3" job.phase)" "succeeded succeeded succeeded"
eval "kill -TERM \$PID_a; wait \$PID_a 2>/dev/null"

# 5. two replicas with an election; the leader killed mid-Job: the standby
# adopts the Job (409 AlreadyExists), no second Job
kube_config "$K/a.yaml" serve-a sa-a "$PA" "  lease: airlock-serve
  namespace: airlock
  duration: 4s
  renew_deadline: 3s
  retry: 300ms"
kube_config "$K/b.yaml" serve-b sa-b "$PB" "  lease: airlock-serve
  duration: 4s
  renew_deadline: 3s
  retry: 300ms"
holder() { stub /_stub/state | python3 -c 'import json,sys; l=json.load(sys.stdin)["lease"]; print(l[0]["spec"]["holderIdentity"] if l else "(none)")'; }
holder_is() { [ "$(holder)" = "$1" ]; }
start_daemon a "$K/a.yaml"
check "serve-a leads" wait_for 100 holder_is serve-a
start_daemon b "$K/b.yaml"
mode hold
id5=$(enqueue acme/tally#4)
check "ticket 4's Job exists (held running)" wait_for 300 run_of "$id5"
RUN5=$(run_of "$id5")
check "… under serve-a" grep -q "\"event\":\"run_started\".*\"run\":$id5[,}]" "$K/a.log"
kill -KILL "$PID_a"
check "serve-b takes the Lease" wait_for 300 holder_is serve-b
posts() { stub /_stub/state | python3 -c 'import json,sys; print(sum(1 for q in json.load(sys.stdin)["requests"] if q["method"]=="POST" and (q["body"] or {}).get("kind")=="Job" and q["body"]["metadata"]["name"]==sys.argv[1]))' "airlock-agent-$1"; }
check "serve-b's attempt POSTs the Job again (and meets 409)" wait_for 300 sh -c "[ \$(curl -s --noproxy '*' --cacert $K/tls/ca.crt https://127.0.0.1:$KPORT/_stub/state | python3 -c 'import json,sys; print(sum(1 for q in json.load(sys.stdin)[\"requests\"] if q[\"method\"]==\"POST\" and (q[\"body\"] or {}).get(\"kind\")==\"Job\" and q[\"body\"][\"metadata\"][\"name\"]==\"airlock-agent-$RUN5\"))') -ge 2 ]"
stub /_stub/jobs -X POST -d "{\"finish\": \"airlock-agent-$RUN5\", \"how\": \"complete\"}" >/dev/null
check "ticket 4 ends under serve-b" wait_for 600 row_done "$id5"
is "adopted: the record says so" "$(rfield "$id5" job.adopted)" true
is "adopted: each other object met 409 and was adopted, then deleted" "$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["objects"]; print(len(o), sorted({(x["created"], x["deleted"]) for x in o}))' "$(record "$id5")")" "6 [('adopted', True)]"
is "adopted: the Job succeeded and was deleted" "$(rfield "$id5" job.phase) $(rfield "$id5" job.deleted)" "succeeded true"
state
check "one Job was made for ticket 4 (a 201), the second POST was 409" python3 - "$K/state.json" "$RUN5" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); run = sys.argv[2]
# the stub's log has the status of each request, in order; POSTs of Jobs are
# the requests with a Job body
reqs = [q for q in s["requests"] if q["method"] == "POST" and (q["body"] or {}).get("kind") == "Job" and q["body"]["metadata"]["name"] == "airlock-agent-" + run]
assert len(reqs) == 2, len(reqs)
# every Job any attempt of the row sent has the one name (no second Job)
names = {q["body"]["metadata"]["name"] for q in s["requests"] if q["method"] == "POST" and (q["body"] or {}).get("kind") == "Job" and q["body"]["metadata"]["name"].endswith("-" + run.split("-")[-1])}
assert names == {"airlock-agent-" + run}, names
assert not any(j["metadata"]["name"].endswith(run) for j in s["jobs"] + s["objects"]), "left behind"
PY
is "ticket 4 was started by serve-a once and by serve-b once (the adopting attempt)" "$(grep -c "\"event\":\"run_started\".*\"run\":$id5[,}]" "$K/a.log") $(grep -c "\"event\":\"run_started\".*\"run\":$id5[,}]" "$K/b.log")" "1 1"
eval "kill -TERM \$PID_b; wait \$PID_b 2>/dev/null"

# 6. no token in any object: every object sent (each request's body) and
# every object the stub stores, read back, holds neither the API's bearer
# tokens, nor a string of a forge token's shape (ghs_...), nor any word
# whose SHA-256 is the fingerprint of a token the forge minted (the
# trigger checks' tokens, minted and revoked inside the broker)
state
admin /tokens >"$K/forge-tokens.json"
cat >"$K/tokscan.py" <<'PY'
import hashlib, json, re, sys
s = json.load(open(sys.argv[1]))
fps = {t["fingerprint"][len("sha256:"):] for t in json.load(open(sys.argv[2]))}
api = set(sys.argv[3:])
blob = json.dumps([q["body"] for q in s["requests"] if q["body"]] + s["objects"] + s["jobs"] + s["pods"])
hits = [x for x in api if x in blob]
hits += re.findall(r"ghs_[A-Za-z0-9]{20,}", blob)
hits += [w for w in set(re.findall(r"[A-Za-z0-9_.-]{20,}", blob)) if hashlib.sha256(w.encode()).hexdigest()[:12] in fps]
print(f"{len(fps)} forge tokens, {len(api)} API tokens, {len(blob)} bytes scanned, {len(hits)} found")
sys.exit(1 if hits else 0)
PY
python3 "$K/tokscan.py" "$K/state.json" "$K/forge-tokens.json" "$TA" "$TB" >"$K/tokscan.out" 2>&1
is "no token in any object sent or stored ($(cat "$K/tokscan.out"))" "$?" 0
check "the forge minted tokens during the test (the scan had something to find)" test "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$K/forge-tokens.json")" -ge 1
python3 - "$K/state.json" "$K/state-bad.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
j = [q for q in s["requests"] if (q["body"] or {}).get("kind") == "Job"][0]["body"]
j["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "AIRLOCK_GIT_TOKEN", "value": "ghs_" + "A1" * 20})
json.dump(s, open(sys.argv[2], "w"))
PY
check_not "control: the scan finds a token put into a Job's env" python3 "$K/tokscan.py" "$K/state-bad.json" "$K/forge-tokens.json" "$TA" "$TB"
check_not "no token value in a daemon log" grep -qF -e "$TA" -e "$TB" "$K/a.log" "$K/b.log"

# 7. every object sent validates against the Kubernetes schemas
python3 - "$K/state.json" "$K/sent.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
json.dump([q["body"] for q in s["requests"] if q["method"] == "POST" and q["body"]], open(sys.argv[2], "w"))
PY
if [ -n "${AIRLOCK_SKIP_NPM:-}" ]; then
  skip "kubernetes-models from npm: AIRLOCK_SKIP_NPM is set"
elif ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  skip "kubernetes-models from npm: npm or node not installed"
elif ! (mkdir -p "$K/km" && cd "$K/km" && timeout 300 npm install --no-audit --no-fund --loglevel=error kubernetes-models@5 ajv@8 ajv-formats@3 >../km.out 2>&1); then
  skip "kubernetes-models from npm: npm install failed or the registry is unreachable ($(tail -1 "$K/km.out"))"
else
  cp "$AIRLOCK_SRC/tests/integration/k8s_validate.mjs" "$K/km/"
  n=0
  while read -r line; do
    case $line in ok*) n=$((n + 1)) ;; "not ok"*) fail "schema: ${line#not ok - }" ;; esac
  done < <(cd "$K/km" && node k8s_validate.mjs ../sent.json)
  check "every object serve sent validates ($n objects)" test "$n" -ge 28
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); j=[o for o in d if o["kind"]=="Job"][0]; j["spec"]["backoffLimit"]="zero"; json.dump([j], open(sys.argv[2],"w"))' "$K/sent.json" "$K/bad.json"
  check_not "control: the validator rejects a Job with a string backoffLimit" sh -c "cd '$K/km' && node k8s_validate.mjs ../bad.json"
fi
done_testing
