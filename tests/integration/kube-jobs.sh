#!/bin/bash
# A run as a Kubernetes Job (issue #32, src/lib/kube/jobs.c) against
# kubestub.py, a test double of the batch/v1 Job, Pod list, pod log and
# watch endpoints on loopback (not an API server: docs/scale.md says what
# was not run against one). The Job is the one `airlock render kubernetes
# --run-id` renders. Checked: create, watch to the end, the supervisor's
# log (never the agent's), delete with propagationPolicy Background on
# every path; a 410 Gone watch relists; a node's death fails the run with
# the reason; a Job that never ends is deleted at the deadline; a standby
# adopts the Job a dead leader created (409) without a second one; a
# malformed or foreign watch event is refused; the token is asked for;
# every Job sent validates against the Kubernetes schemas (npm), with a
# control.
. "$(dirname "$0")/lib.sh"
[ -x "${KUBE_JOB:-}" ] || { skip "kube-job was not built"; done_testing; exit 0; }
python3 -c 'import yaml' 2>/dev/null || { skip "python3 yaml module missing"; done_testing; exit 0; }
K=$T_TMP/kube
mkdir -p "$K"
chmod 700 "$K"
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$K/tls" >/dev/null 2>&1 || { fail "test CA"; done_testing; exit 1; }
rand() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
TOK=$(rand)
printf 'runner %s\n' "$TOK" >"$K/tokens"
printf '%s\n' "$TOK" >"$K/token"; rand >"$K/bad-token"; chmod 600 "$K/token" "$K/bad-token"
python3 "$AIRLOCK_SRC/tests/integration/kubestub.py" "$K/tls/server.crt" "$K/tls/server.key" "$K/tokens" "$K/port" 2>"$K/stub.err" &
STUB=$!
on_exit "kill $STUB"
for _ in $(seq 100); do [ -s "$K/port" ] && break; sleep 0.05; done
API=https://127.0.0.1:$(cat "$K/port")
stub() { curl -s --noproxy '*' --max-time 10 --cacert "$K/tls/ca.crt" "$API$1" "${@:2}"; }
mode() { stub /_stub/jobs -X POST -d "{\"mode\":\"$1\"}" >/dev/null; }
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(bool,type(None))) else v)' "$@"; }
state() { stub /_stub/state >"$K/state.json"; }
# The Job of `airlock render kubernetes --run-id`, rendered once; each case
# gets a copy named airlock-agent-ID in namespace airlock.
cat >"$K/pol.yaml" <<'P'
version: 1
network:
  allow:
    - {host: api.github.com, port: 443}
filesystem: {workspace_size: 1GiB, tmp_size: 256MiB, image: "airlock-agent:local"}
process:
  limits: {memory: 2GiB, pids: 256, wall: 45m, nofile: 1024}
P
"$AIRLOCK" render kubernetes -p "$K/pol.yaml" --run-id kj -o "$K/render.yaml" 2>"$K/render.err"
is "render kubernetes --run-id gives the objects" "$?" 0
python3 - "$K/render.yaml" "$K/job.json" <<'PY'
import json, sys, yaml
job = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Job")
job["metadata"].setdefault("namespace", "airlock")
json.dump(job, open(sys.argv[2], "w"))
PY
check "the rendered objects hold a Job" test -s "$K/job.json"
job_json() { # ID OUT: the rendered Job under the name airlock-agent-ID
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["metadata"]["name"]="airlock-agent-"+sys.argv[2]; json.dump(j, open(sys.argv[3], "w"))' "$K/job.json" "$1" "$2"
}
NS=airlock
run() { # ID TIMEOUT_MS [TOKEN_FILE [CONTAINER]]
  "$KUBE_JOB" "$API" "${3:-$K/token}" "$K/tls/ca.crt" "$NS" "$K/$1.json" "${4:-supervisor}" "$2" >"$K/$1.out" 2>"$K/$1.stderr"
}

# 1. a ticket's Job, to its end
job_json kj-ok "$K/kj-ok.json"
NS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["namespace"])' "$K/kj-ok.json")
mode complete
run kj-ok 30000
is "the runner ran (exit 0)" "$?" 0
is "rc 0" "$(field "$K/kj-ok.out" rc)" 0
is "the Job succeeded" "$(field "$K/kj-ok.out" phase)" succeeded
check "the log read is the supervisor's" grep -q '"run_record\\":\\"from the supervisor' "$K/kj-ok.out"
check_not "the agent's log line was not collected" grep -q "must never be collected" "$K/kj-ok.out"
is "the Job was deleted" "$(field "$K/kj-ok.out" deleted)" true
job_json kj-agent "$K/kj-agent.json"
run kj-agent 30000 "$K/token" agent
check "control: asked for the agent container, the runner would get the agent's line" grep -q "must never be collected" "$K/kj-agent.out"
state
check "the stub saw one create, a watch, a log read of container=supervisor and a delete" python3 - "$K/state.json" kj-ok <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); n = sys.argv[2]
r = [q for q in s["requests"] if n in q["path"] or n in (q["body"] or {}).get("metadata", {}).get("name", "")]
m = [(q["method"], q["path"].split("?")[0].rsplit("/", 1)[-1]) for q in r]
assert sum(1 for q in r if q["method"] == "POST") == 1, m
assert any("watch=1" in q["path"] and "resourceVersion=" in q["path"] for q in r), m
assert any(q["path"].endswith("/log?container=supervisor&limitBytes=1048576") for q in s["requests"]), m
d = [q for q in r if q["method"] == "DELETE"]
assert len(d) == 1 and d[0]["body"]["propagationPolicy"] == "Background", d
assert not any(j["metadata"]["name"] == n for j in s["jobs"]), "the Job is still there"
PY

# 2. the watch's resourceVersion is too old: 410, relist, watch again
job_json kj-gone "$K/kj-gone.json"
mode gone
run kj-gone 30000
is "410 Gone: the Job still ends" "$(field "$K/kj-gone.out" phase)" succeeded
check "410 Gone: the runner relisted once" test "$(field "$K/kj-gone.out" relists)" -ge 1

# 3. the node dies: the Job fails, with the reason
job_json kj-fail "$K/kj-fail.json"
mode fail
run kj-fail 30000
is "node lost: the Job failed" "$(field "$K/kj-fail.out" phase)" failed
is "node lost: the reason is the Job's" "$(field "$K/kj-fail.out" reason)" BackoffLimitExceeded
is "node lost: the Job was deleted" "$(field "$K/kj-fail.out" deleted)" true

# 4. a Job that never ends: deleted at the deadline
job_json kj-never "$K/kj-never.json"
mode never
run kj-never 2500
check "never ends: rc -1 with the deadline's reason" grep -q 'did not end within 2500 ms' "$K/kj-never.out"
is "never ends: timed_out" "$(field "$K/kj-never.out" timed_out)" true
is "never ends: the Job was deleted anyway" "$(field "$K/kj-never.out" deleted)" true
state
check_not "never ends: no Job left in the stub" grep -q 'kj-never' <(python3 -c 'import json,sys; [print(json.dumps(j["metadata"])) for j in json.load(open(sys.argv[1]))["jobs"]]' "$K/state.json")

# 5. the leader died after creating the Job: the standby adopts it (409), no second Job
job_json kj-adopt "$K/kj-adopt.json"
mode complete
stub /_stub/jobs -X POST --data-binary "{\"precreate\": $(cat "$K/kj-adopt.json")}" >/dev/null
run kj-adopt 30000
is "adopted: the run ends" "$(field "$K/kj-adopt.out" phase)" succeeded
is "adopted: the runner says it adopted" "$(field "$K/kj-adopt.out" adopted)" true
state
is "adopted: one POST, answered 409, and no second Job" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(sum(1 for q in s["requests"] if q["method"]=="POST" and "kj-adopt" in (q["body"] or {}).get("metadata",{}).get("name","")))' "$K/state.json")" 1

# 6. hostile watch streams: refused with the rule, the Job deleted
job_json kj-garbage "$K/kj-garbage.json"
mode garbage
run kj-garbage 30000
check "a watch line that is not JSON: refused" grep -q 'watch event: not JSON' "$K/kj-garbage.out"
is "not JSON: the Job was deleted" "$(field "$K/kj-garbage.out" deleted)" true
job_json kj-other "$K/kj-other.json"
mode other
run kj-other 30000
check "an event for another Job: refused" grep -q 'sent an event for `someone-else`' "$K/kj-other.out"
is "another Job: the Job was deleted" "$(field "$K/kj-other.out" deleted)" true

# 7. the token: a wrong one is refused by the API and nothing is created
job_json kj-tok "$K/kj-tok.json"
mode complete
run kj-tok 30000 "$K/bad-token"
check "a wrong token: HTTP 401 named" grep -q 'HTTP 401' "$K/kj-tok.out"
state
check_not "a wrong token: no Job created" grep -q 'kj-tok' <(python3 -c 'import json,sys; [print(json.dumps(j["metadata"]["name"])) for j in json.load(open(sys.argv[1]))["jobs"]]' "$K/state.json")

# 8. what the runner sent validates against the Kubernetes schemas
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
  check "every Job the runner created validates ($n objects)" test "$n" -ge 6
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d[0]["spec"]["backoffLimit"]="zero"; json.dump(d[:1], open(sys.argv[2],"w"))' "$K/sent.json" "$K/bad.json"
  check_not "control: the validator rejects a Job with a string backoffLimit" sh -c "cd '$K/km' && node k8s_validate.mjs ../bad.json"
fi
done_testing
