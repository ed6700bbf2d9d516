# A local forge + broker + ticket policy for tests, like `airlock demo` sets
# up: the demo fixture (acme/tally protected, acme/loose not), the run's
# App 1001 and the read-only audit App 1002 the broker mints the audit's tokens from. Source after lib.sh, then call `forge_env_start`. Sets:
#   FE_DIR FE_HTTPS FE_ADMIN FE_CA FE_SOCK FE_POLICY FE_DATA AIRLOCK_NET
# and registers cleanup with on_exit. Needs AIRLOCK, AIRLOCK_FORGE, AIRLOCK_SRC.
# With FE_REQUEST_LOG=FILE set, the forge logs every request it answers there
# (tests/forge-emulator/README.md, --request-log). FE_FIXTURE=FILE: another
# fixture (its "source" paths relative to FILE), e.g. more issues.
AIRLOCK_NET=$(dirname "$AIRLOCK")/airlock-net

forge_env_start() {
  FE_DIR=$T_TMP/fe
  mkdir -p "$FE_DIR/secret"
  chmod 755 "$FE_DIR"; chmod 700 "$FE_DIR/secret"
  "$AIRLOCK_SRC/scripts/make-test-ca.sh" "$FE_DIR/tls" >/dev/null 2>&1 || return 1
  "$AIRLOCK_SRC/scripts/make-app-key.sh" "$FE_DIR/secret/keys" app >/dev/null 2>&1 || return 1
  # the audit App (1002): administration: read + contents: read, used only
  # by the broker to audit before a lease, never leased
  "$AIRLOCK_SRC/scripts/make-app-key.sh" "$FE_DIR/secret/keys" auditor >/dev/null 2>&1 || return 1
  chmod 755 "$FE_DIR/tls"; chmod 644 "$FE_DIR/tls/ca.crt"
  FE_CA=$FE_DIR/tls/ca.crt
  FE_DATA=$FE_DIR/secret/forge
  "$AIRLOCK_FORGE" --fixture "${FE_FIXTURE:-$AIRLOCK_SRC/examples/demo/fixture.json}" --data "$FE_DATA" \
    --tls-dir "$FE_DIR/tls" --key "1001=$FE_DIR/secret/keys/app.pub.pem" \
    --key "1002=$FE_DIR/secret/keys/auditor.pub.pem" \
    --ports-file "$FE_DIR/secret/ports.json" ${FE_REQUEST_LOG:+--request-log "$FE_REQUEST_LOG"} \
    >"$FE_DIR/secret/forge.log" 2>&1 &
  FE_FORGE_PID=$!
  on_exit "kill $FE_FORGE_PID"
  for _ in $(seq 100); do [ -s "$FE_DIR/secret/ports.json" ] && break; sleep 0.05; done
  FE_HTTPS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["https"])' "$FE_DIR/secret/ports.json") || return 1
  FE_ADMIN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin"])' "$FE_DIR/secret/ports.json") || return 1
  FE_SOCK=$FE_DIR/secret/broker.sock
  write_broker_config "https://127.0.0.1:$FE_HTTPS" "acme/tally, acme/loose"
  broker_start
  FE_POLICY=$FE_DIR/airlock.yaml
  write_policy "$FE_POLICY" "$FE_SOCK"
  write_push_agent
}

# $FE_PUSH_AGENT: the smallest agent that honours the contract
# (docs/agents.md): clone, commit one file, push $AIRLOCK_BRANCH, declare
# the PR's title. The supervisor opens the PR from the branch; an agent
# that pushes nothing gets no PR and a non-zero exit.
write_push_agent() {
  mkdir -p "$FE_DIR/push"; chmod 755 "$FE_DIR/push"
  FE_PUSH_AGENT=$FE_DIR/push/agent
  cat >"$FE_PUSH_AGENT" <<'SH'
#!/bin/sh
set -e
cd /workspace
git clone --quiet "$AIRLOCK_GIT_URL" repo
cd repo
git checkout --quiet -b "$AIRLOCK_BRANCH"
echo "run $AIRLOCK_RUN_ID" >"NOTE-$AIRLOCK_RUN_ID"
git add . && git commit --quiet -m "note"
git push --quiet origin "HEAD:refs/heads/$AIRLOCK_BRANCH"
echo 'AIRLOCK_RESULT {"title": "a note from the push agent"}'
SH
  chmod 755 "$FE_PUSH_AGENT"
}

# write_broker_config API_URL "REPO, REPO...": the run's App 1001, the
# audit App 1002, the forge's CA, into $FE_DIR/secret/broker.yaml
write_broker_config() {
  cat >"$FE_DIR/secret/broker.yaml" <<YAML
app:
  id: 1001
  private_key: $FE_DIR/secret/keys/app.pem
api:
  url: $1
  ca_file: $FE_CA
  retries: 2
repositories: [$2]
roles:
  git: {contents: write, pull_requests: write}
  ticket: {issues: write}
lease:
  ttl: 5m
state_dir: $FE_DIR/secret/broker
audit:
  app: {id: 1002, private_key: $FE_DIR/secret/keys/auditor.pem}
YAML
}

# hostile_summary RECORD [env]: "<n attempts> none-escaped" or "<n>
# escaped:ID,..." (opening the PR and keeping a token inside are what
# airlock allows; with `env`, also what credentials.mode: env leaves to the
# forge's own protection: the escape-budget attacks of issue #15)
hostile_summary() {
  python3 - "$1" "${2:-}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
allowed = {"open-pr", "keep-token"}
if sys.argv[2] == "env":
    allowed |= {"open-pr-itself", "push-feature-evil", "push-other-run", "push-earlier-pr",
                "tag-push", "tag-force", "tag-delete", "extra-prs", "delete-branch",
                "comment-other-issue", "review-lgtm", "foreign-token"}
att = r.get("agent_attempts", [])
bad = [a["id"] for a in att if a["outcome"] == "succeeded" and a["id"] not in allowed]
print(len(att), "escaped:" + ",".join(bad) if bad else "none-escaped")
PY
}

broker_start() {
  "$AIRLOCK_NET" broker -c "$FE_DIR/secret/broker.yaml" --socket "$FE_SOCK" \
    >>"$FE_DIR/secret/broker.log" 2>&1 &
  FE_BROKER_PID=$!
  on_exit "kill $FE_BROKER_PID"
  for _ in $(seq 100); do [ -S "$FE_SOCK" ] && break; sleep 0.05; done
  [ -S "$FE_SOCK" ]
}

# write_policy FILE SOCKET [WALL [REPO]]  (REPO: default acme/tally)
write_policy() {
  local repo=${4:-acme/tally}
  cat >"$1" <<YAML
version: 1
network:
  allow:
    - {host: api.forge.test, port: $FE_HTTPS, tls: true}
    - {host: forge.test, port: $FE_HTTPS, tls: true}
  pin:
    - {host: api.forge.test, address: 127.0.0.1}
    - {host: forge.test, address: 127.0.0.1}
filesystem: {workspace_size: 256MiB, tmp_size: 128MiB}
process:
  limits: {memory: 1GiB, pids: 256, wall: ${3:-2m}}
credentials:
  broker: $2
  git: {repo: $repo, permissions: {contents: write, pull_requests: write}}
  ticket: {repo: $repo, permissions: {issues: write}}
  ttl: 5m
forge:
  api_url: https://api.forge.test:$FE_HTTPS
  git_url: https://forge.test:$FE_HTTPS
  ca_file: $FE_CA
YAML
  chmod 644 "$1"
}

admin() { curl -s --noproxy '*' "http://127.0.0.1:$FE_ADMIN$1"; }
# number of tokens in a state: active | revoked | expired
tokens_in() { admin /tokens | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("tokens",d) if isinstance(d,dict) else d; print(sum(1 for t in d if t.get("state")==sys.argv[1]))' "$1"; }
main_sha() { admin "/refs?repo=${1:-acme/tally}" | python3 -c '
import json,sys
d=json.load(sys.stdin)
refs=d.get("refs",d) if isinstance(d,dict) else d
if isinstance(refs,dict): print(refs.get("refs/heads/main",""))
else: print(next((r.get("sha") for r in refs if r.get("ref")=="refs/heads/main"),""))'; }
validate_record() { /usr/bin/python3 - "$1" "$AIRLOCK_SRC/docs/run-record.schema.json" <<'PY'
import json, sys, jsonschema
rec, schema = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
jsonschema.validate(rec, schema)
PY
}
