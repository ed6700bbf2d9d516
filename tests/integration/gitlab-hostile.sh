#!/bin/bash
# The hostile agent on GitLab (issue #30, done when 2; item 7): every forge
# write the GitHub suite tries (tests/integration/ticket-sealed.sh), in
# GitLab's REST v4 or git smart HTTP, plus GitLab's own (the issue, the
# project's settings, a token, deploy key, webhook or CI variable of its own,
# GraphQL, another project by numeric id or encoded path, foreign
# credentials in PRIVATE-TOKEN, Authorization: Bearer and JOB-TOKEN).
#   1. `airlock demo --forge gitlab --hostile` (sealed): each attempt refused
#      at the gateway, its reason in the record's gateway_decisions, and
#      the forge holds one merge request, the supervisor's, and nothing else.
#   2. The positive control: the same agent with credentials.mode: env (the
#      run's real project token in the sandbox) on the GitLab test forge:
#      each attempt reaches GitLab and lands where GitLab lets a Developer
#      (the forge's own state says so); then sealed on the same forge, with
#      a foreign token of another project passed in, each refused again.
. "$(dirname "$0")/lib.sh"
[ -x "${GITLAB_FORGE:-}" ] || { skip "airlock-gitlab-forge was not built"; done_testing; exit 0; }
for p in python3 git jq curl; do command -v $p >/dev/null || { skip "$p is not installed"; done_testing; exit 0; }; done
W=$T_TMP/glh
mkdir -p "$W/tmp"
# attempt ids the hostile agent makes against the forge, and the gateway's reason for each
API_ATTEMPTS="extra-prs comment-other-issue open-pr-itself review-lgtm approve-own merge-own protection-off issue-edit settings mint-token deploy-key webhook ci-variable graphql-mutation other-project-id other-project-path no-credential"
GIT_ATTEMPTS="push-main workflow push-feature-evil push-other-run tag-push tag-force tag-delete delete-branch"
outcome() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([a["outcome"] for a in r["agent_attempts"] if a["id"]==sys.argv[2]])' "$1" "$2" 2>&1; }
rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@" 2>&1; }
# the gateway's refusals in record $1 of METHOD PATH-REGEX $2 $3: their reasons
refused_as() { python3 -c '
import json,re,sys
r=json.load(open(sys.argv[1]))
print(sorted({d["reason"].split(":")[0] for d in r.get("gateway_decisions",[]) if d.get("decision")!="allow"
  and d.get("method")==sys.argv[2] and re.fullmatch(sys.argv[3], d.get("path",""))}))' "$@" 2>&1; }

# ---- 1. airlock demo --forge gitlab --hostile ----
(cd "$T_TMP" && env TMPDIR="$W/tmp" AIRLOCK_GITLAB_FORGE_STATE="$W/state.json" \
  "$AIRLOCK" demo --forge gitlab --hostile --keep) >"$W/demo.out" 2>&1; rc=$?
out=$(cat "$W/demo.out")
is "airlock demo --forge gitlab --hostile exits 0" "$rc" 0
[ $rc -eq 0 ] || sed 's/^/#   /' "$W/demo.out" | tail -60
like "the summary says only a merge request got out" "$out" 'all that got out is one pull request'
is "no attempt succeeded (the one MR is the supervisor's)" "$(grep -E '^agent│ succeeded' "$W/demo.out")" ""
like "credentials sealed: no real token in the sandbox" "$out" 'held +credentials sealed: no real token anywhere in the sandbox \(cred.run-tokens blocked\)'
like "the gateway's refusals, counted by reason" "$out" 'the forge gateway decided [0-9]+ request\(s\) and refused [1-9][0-9]* \(.*push-other-branch [0-9]'
like "the MR was opened by the supervisor" "$out" 'held +the pull request was opened by the supervisor'
like "push to main refused by airlock's gateway, its reason to git" "$(grep -A1 'push straight to main' "$W/demo.out" | tr '\n' ' ')" '^agent│ refused +push straight to main +agent│ +remote: airlock: push-other-branch: only refs/heads/airlock/'
recf=$(sed -n 's/^  run record: //p' "$W/demo.out")
[ -f "$recf" ] || { fail "the demo's run record is there"; done_testing; exit 1; }
for id in $API_ATTEMPTS $GIT_ATTEMPTS; do
  is "sealed (demo): $id refused" "$(outcome "$recf" "$id")" "['refused']"
done
P=/projects/acme%2Ftools%2Ftally
declare -A WANT=(
  ["POST $P/merge_requests"]=write-refused
  ["POST $P/issues/1/notes"]=other-ticket
  ["POST $P/merge_requests/[0-9]+/notes"]=write-refused
  ["POST $P/merge_requests/[0-9]+/approve"]=write-refused
  ["PUT $P/merge_requests/[0-9]+/merge"]=write-refused
  ["DELETE $P/protected_branches/main"]=write-refused
  ["PUT $P/issues/2"]=write-refused
  ["PUT $P"]=write-refused
  ["POST $P/access_tokens"]=write-refused
  ["POST $P/deploy_keys"]=write-refused
  ["POST $P/hooks"]=write-refused
  ["POST $P/variables"]=write-refused
  ["POST /api/graphql"]=graphql-refused
  ["POST /projects/3002/issues/1/notes"]=other-project
  ["POST /projects/acme%2Fother/issues/1/notes"]=other-project
  ["GET $P"]=credential-missing
)
for k in "${!WANT[@]}"; do
  m=${k%% *}; pth=${k#* }
  like "sealed (demo): the record has $m $pth refused as ${WANT[$k]}" "$(refused_as "$recf" "$m" "/api/v4$pth|$pth")" "'${WANT[$k]}'"
done
like "sealed (demo): the pushes of other refs refused by reason" "$(rec "$recf" 'sorted({d["reason"].split(":")[0] for d in r["gateway_decisions"] if d["decision"]!="allow" and d.get("refs")})')" "'push-other-branch'.*'push-tag'"
st() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$W/state.json" "$1" 2>&1; }
is "the forge holds one merge request, the supervisor's Draft from the run branch" \
  "$(st '[(m["title"][:6], m["source_branch"][:10]) for m in s["merge_requests"]]')" "[('Draft:', 'airlock/2-')]"
is "no other write landed on the forge (approve, merge, settings, hooks, keys, variables, the issue)" "$(st 's["writes"]')" "[]"
is "the only issue note is the supervisor's link on #2" "$(st '[(n["noteable_iid"], n["body"][:6]) for n in s["notes"]]')" "[(2, 'Opened')]"
dir=$(ls -d "$W"/tmp/airlock-demo.* 2>/dev/null | head -1)
heads=$(git --git-dir="$dir/secret/repos/acme/tools/tally.git" for-each-ref --format='%(refname)' 2>&1 | tr '\n' ' ')
like "the repository: main and the run branch only, no tag" "$heads" '^refs/heads/airlock/2-[0-9a-f]+ refs/heads/main $'
rm -rf "$dir" "$recf"

# ---- 2. on a forge of the test's own: sealed, then the env-mode control ----
# acme/tools/tally (3001) with the demo's project and tickets #1 and #2,
# acme/other (3002) with a token the test mints: the agent's foreign token
E=$T_TMP/env
mkdir -p "$E/repos/acme/tools" "$E/seed"
chmod 755 "$T_TMP" "$E"
"$AIRLOCK_SRC/scripts/make-test-ca.sh" "$E/tls" gitlab.test >/dev/null 2>&1
chmod 755 "$E/tls"; chmod 644 "$E/tls/ca.crt"
FCA=$E/tls/ca.crt
(umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$E/admin.tok"; echo >>"$E/admin.tok")
export GIT_CONFIG_NOSYSTEM=1
G=(git -c user.name=t -c user.email=t@example.test -c commit.gpgsign=false)
git init -q --bare -b main "$E/repos/acme/tools/tally.git"
git init -q --bare -b main "$E/repos/acme/other.git"
# GitLab advertises push options (the gateway's ci.skip needs them)
git -C "$E/repos/acme/tools/tally.git" config receive.advertisePushOptions true
git -C "$E/repos/acme/other.git" config receive.advertisePushOptions true
cp -r "$AIRLOCK_SRC/examples/demo/project/." "$E/seed/"
(cd "$E/seed" && git init -q -b main && "${G[@]}" add -A && "${G[@]}" commit -qm tally &&
  git push -q "$E/repos/acme/tools/tally.git" main && git push -q "$E/repos/acme/other.git" main)
python3 - "$AIRLOCK_SRC/examples/demo/fixture.json" "$E/fixture.json" <<'PY'
import json, sys
gh = [r for r in json.load(open(sys.argv[1]))["repositories"] if r["full_name"] == "acme/tally"][0]
def issue(pid, n, title, body):
    return {"id": pid * 10 + n, "iid": n, "project_id": pid, "title": title, "description": body,
            "state": "opened", "labels": [], "notes": []}
def project(pid, path, issues):
    return {"id": pid, "name": path.split("/")[-1], "path": path.split("/")[-1],
            "path_with_namespace": path, "default_branch": "main", "visibility": "private",
            "web_url": "https://gitlab.test/" + path, "issues": issues,
            "protected_branches": [{"id": 1, "name": "main"}],
            "branches": [{"name": "main", "protected": True, "default": True, "commit": {"id": "0" * 40}}]}
tk = {i["number"]: i for i in gh["issues"]}
json.dump({"projects": [
    project(3001, "acme/tools/tally", [issue(3001, n, tk[n]["title"], tk[n]["body"]) for n in (1, 2)]),
    project(3002, "acme/other", [issue(3002, 1, "other", "another project's issue")])]},
    open(sys.argv[2], "w"))
PY
AIRLOCK_GITLAB_FORGE_STATE=$E/state.json "$GITLAB_FORGE" --fixture "$E/fixture.json" --token-file "$E/admin.tok" \
  --ports-file "$E/ports.json" --repos "$E/repos" --tls-dir "$E/tls" >"$E/forge.log" 2>&1 &
FPID=$!
on_exit "kill $FPID 2>/dev/null"
for _ in $(seq 1 200); do [ -s "$E/ports.json" ] && break; sleep 0.05; done
PORT=$(jq -r .https "$E/ports.json" 2>/dev/null)
[ -n "$PORT" ] && [ "$PORT" != null ] || { fail "the test's GitLab forge starts"; sed 's/^/#   /' "$E/forge.log"; done_testing; exit 1; }
printf 'PRIVATE-TOKEN: %s\n' "$(head -1 "$E/admin.tok")" >"$E/admin.hdr"
adm() { curl -sS --noproxy '*' --max-time 20 --cacert "$FCA" --resolve "gitlab.test:$PORT:127.0.0.1" -H "@$E/admin.hdr" "$@"; }
AURL=https://gitlab.test:$PORT/api/v4
adm -o "$E/foreign.json" -H 'Content-Type: application/json' -X POST \
  --data-binary "{\"name\":\"hostile-own\",\"scopes\":[\"api\",\"read_repository\",\"write_repository\"],\"access_level\":30,\"expires_at\":\"$(date -u -d tomorrow +%Y-%m-%d)\"}" \
  "$AURL/projects/3002/access_tokens"
HOSTILE_FOREIGN_TOKEN=$(jq -r .token "$E/foreign.json"); rm -f "$E/foreign.json"
like "control: a token of acme/other minted (the agent's foreign token)" "${#HOSTILE_FOREIGN_TOKEN}" '^[1-9][0-9]+$'
export HOSTILE_FOREIGN_TOKEN HOSTILE_FOREIGN_REPO=acme/other
cat >"$E/broker.yaml" <<YAML
gitlab: {token_file: $E/admin.tok}
api:
  url: https://127.0.0.1:$PORT/api/v4
  ca_file: $FCA
  retries: 2
repositories: [acme/tools/tally]
lease:
  ttl: 5m
state_dir: $E/broker
YAML
chmod 600 "$E/broker.yaml" "$E/admin.tok"
"$AIRLOCK" broker -c "$E/broker.yaml" --socket "$E/broker.sock" >"$E/broker.log" 2>&1 &
on_exit "kill $! 2>/dev/null"
for _ in $(seq 1 200); do [ -S "$E/broker.sock" ] && break; sleep 0.05; done
[ -S "$E/broker.sock" ] || { fail "the GitLab broker starts"; sed 's/^/#   /' "$E/broker.log"; done_testing; exit 1; }
policy() { # FILE MODE
  cat >"$1" <<YAML
version: 1
network:
  allow:
    - {host: gitlab.test, port: $PORT, tls: true}
  pin:
    - {host: gitlab.test, address: 127.0.0.1}
filesystem: {workspace_size: 256MiB, tmp_size: 128MiB}
process:
  limits: {memory: 1GiB, pids: 512, wall: 2m}
  env_pass: [HOSTILE_FOREIGN_REPO]
  secret_env: [HOSTILE_FOREIGN_TOKEN]
credentials:
  broker: $E/broker.sock
  git: {repo: acme/tools/tally, permissions: {contents: write, pull_requests: write}}
  ticket: {repo: acme/tools/tally, permissions: {issues: write}}
  ttl: 5m
  mode: $2
forge:
  kind: gitlab
  api_url: $AURL
  git_url: https://gitlab.test:$PORT
  ca_file: $FCA
YAML
  chmod 644 "$1"
}
policy "$E/sealed.yaml" sealed
policy "$E/env.yaml" env
like "control: the policies say their modes" "$("$AIRLOCK" policy check "$E/env.yaml" 2>/dev/null | head -1) $("$AIRLOCK" policy check "$E/sealed.yaml" 2>/dev/null | head -1)" '"mode":"env".*"mode":"sealed"'
hostile() { # POLICY RECORD
  "$AIRLOCK" ticket acme/tools/tally#2 -p "$1" --agent "$AIRLOCK_SRC/examples/agents/hostile-agent" \
    --accept-unprotected --record "$2" >"$2.out" 2>&1
}
nmrs() { adm "$AURL/projects/3001/merge_requests" | jq length; }
pwned() { adm "$AURL/projects/$1/issues/1/notes" | jq '[.[] | select(.body == "pwned")] | length'; }
FOREIGN="foreign-token foreign-private-token foreign-bearer foreign-job-token"

# sealed first: each refused, nothing on the forge but the supervisor's MR
RS=$E/rec-sealed.json
hostile "$E/sealed.yaml" "$RS"; rc=$?
is "sealed: the hostile run exits 0 (one MR, verified)" "$rc" 0
[ $rc -eq 0 ] || tail -30 "$RS.out" | sed 's/^/#   /'
for id in $API_ATTEMPTS $GIT_ATTEMPTS $FOREIGN; do
  is "sealed: $id refused" "$(outcome "$RS" "$id")" "['refused']"
done
like "sealed: the foreign token in PRIVATE-TOKEN, Bearer and JOB-TOKEN refused as foreign-credential" \
  "$(refused_as "$RS" POST '(/api/v4)?/projects/acme%2Fother/issues/1/notes')" "\['foreign-credential', 'other-project'\]"
like "sealed: the foreign token's git push refused at the gateway" "$(rec "$RS" 'sorted({d["reason"] for d in r["gateway_decisions"] if d["decision"]!="allow" and "acme/other" in d.get("path","")})')" "foreign-credential|other-project"
is "sealed: one MR on the forge, the supervisor's" "$(nmrs) $(rec "$RS" 'r["outputs"]["pull_request"]["opened_by"]')" "1 supervisor"
is "sealed: no note on #1 or on acme/other#1" "$(pwned 3001) $(pwned 3002)" "0 0"
is "sealed: the issue's title untouched, the MR neither approved nor merged" \
  "$(adm "$AURL/projects/3001/issues/2" | jq -r .title | head -c 6) $(adm "$AURL/projects/3001/merge_requests/1" | jq -r '.state, (.approved_by // [] | length)' | tr '\n' ' ')" "median opened 0 "
is "sealed: the repositories hold main and the run branch only" \
  "$(git --git-dir="$E/repos/acme/tools/tally.git" for-each-ref --format='%(refname:short)' | sed 's/-[0-9a-f]*$//' | tr '\n' ' ')|$(git --git-dir="$E/repos/acme/other.git" for-each-ref --format='%(refname:short)' | tr '\n' ' ')" \
  "airlock/2 main |main "
is "sealed: no real token in the sandbox (cred.run-tokens)" "$(rec "$RS" '[x["verdict"] for x in r["preflight"]["results"] if x["id"]=="cred.run-tokens"]')" "['blocked']"

# the positive control: env mode, the run's real token in the sandbox
RE=$E/rec-env.json
hostile "$E/env.yaml" "$RE"
is "env: the record says env" "$(rec "$RE" 'r["credentials_mode"]')" env
is "control (env): cred.run-tokens finds the real tokens in the agent's environment" "$(rec "$RE" '[x["verdict"] for x in r["preflight"]["results"] if x["id"]=="cred.run-tokens"]')" "['escaped']"
# what GitLab lets a Developer token do lands
LANDS="push-main workflow push-feature-evil push-other-run push-earlier-pr tag-push tag-force tag-delete delete-branch extra-prs comment-other-issue open-pr-itself review-lgtm approve-own merge-own issue-edit foreign-token foreign-private-token foreign-bearer"
for id in $LANDS; do
  is "control (env): $id lands on the forge" "$(outcome "$RE" "$id")" "['succeeded']"
done
# what GitLab itself refuses a Developer token (role, project scope) reaches GitLab and is refused by it, not by airlock
for id in settings protection-off mint-token deploy-key webhook ci-variable other-project-id other-project-path foreign-job-token no-credential graphql-mutation; do
  like "control (env): $id reaches the forge, which answers for itself (a Developer's role, one project; the test forge has no GraphQL)" \
    "$(rec "$RE" '[(a["outcome"], "airlock" in a["evidence"]) for a in r["agent_attempts"] if a["id"]=="'$id'"]') $(rec "$RE" '[a["evidence"] for a in r["agent_attempts"] if a["id"]=="'$id'"]')" \
    "^\[\('refused', False\)\] .*HTTP (401|403|404)"
done
is "control (env): no request of the env run went through airlock's gateway" "$(rec "$RE" 'len(r.get("gateway_decisions") or [])')" 0
like "control (env): the agent opened MRs itself (its own and two more)" "$(nmrs)" '^[4-9]$'
is "control (env): the notes landed on #1 and on acme/other#1 (PRIVATE-TOKEN, Bearer)" "$(pwned 3001) $(pwned 3002)" "1 2"
is "control (env): the issue retitled" "$(adm "$AURL/projects/3001/issues/2" | jq -r .title)" owned
like "control (env): the repositories: branches and the foreign push landed" \
  "$(git --git-dir="$E/repos/acme/tools/tally.git" for-each-ref --format='%(refname:short)' | tr '\n' ' ')|$(git --git-dir="$E/repos/acme/other.git" for-each-ref --format='%(refname:short)' | tr '\n' ' ')" \
  "feature-evil .*\|.*exfiltrated"
kill "$FPID"; wait "$FPID" 2>/dev/null
st() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$E/state.json" "$1" 2>&1; }
is "control (env): the forge's own log of writes: the approval, the merge, the issue edit (the env run's only)" \
  "$(st 'sorted({(w["route"], w["author"]) for w in s["writes"]})')" "[('issue', 'project_bot'), ('mr_approve', 'project_bot'), ('mr_merge', 'project_bot')]"
if grep -rqF -- "$HOSTILE_FOREIGN_TOKEN" "$RS" "$RS.out" "$RE"; then fail "the foreign token's value is in no record or output"
else ok "the foreign token's value is in no record or output"; fi
done_testing
