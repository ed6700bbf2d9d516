#!/usr/bin/env bash
# The GitLab test forge and fixtures checked against GitLab's own published
# descriptions (issue #30 item 6), as forge-schema.sh checks the GitHub
# forge against GitHub's:
# - the GitLab webhook payloads airlock's tests send (tests/unit/gitlab-webhooks/)
#   against GitLab's documented Issue Hook and Note Hook examples
#   (tests/gitlab-forge/webhook_examples.py, reading the verbatim excerpt
#   tests/gitlab-forge/fixtures/webhook_events.excerpt.md): every field
#   airlock reads is in GitLab's example with the same type, no invented
#   fields, no field typed otherwise;
# - the GitLab test forge's answers for the routes airlock uses, captured here,
#   against GitLab's OpenAPI 2.0 description (the vendored subset
#   tests/gitlab-forge/fixtures/gitlab-openapi-v2.subset.json, checked by
#   tests/gitlab-forge/openapi_subset.py): the operation exists, the query
#   parameters airlock sends are documented, the status is documented, a
#   documented array is an array, a body validates against the definition
#   where one is vendored (protected branches, the tree). A route the subset
#   lacks is a TAP SKIP.
# Positive controls show each kind of check fails on a broken payload.
. "$(dirname "$0")/lib.sh"
SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { skip "python3 not installed"; done_testing; exit 0; }
command -v jq >/dev/null || { skip "jq not installed"; done_testing; exit 0; }
W=$T_TMP

# --- webhooks: the fixtures against GitLab's examples ---
WH=$SRC/tests/gitlab-forge/webhook_examples.py
MD=$SRC/tests/gitlab-forge/fixtures/webhook_events.excerpt.md
WC=$SRC/src/lib/serve/webhook_gitlab.c
# wh EVENT FIXTURE [LABEL]: the checker's lines as TAP
wh() {
  python3 "$WH" "$MD" "$WC" "$1" "$2" >"$W/wh.out" 2>&1
  while IFS= read -r line; do
    case $line in
    "ok "*) ok "GitLab's webhook example: ${line#ok }" ;;
    "not ok "*) fail "GitLab's webhook example: ${line#not ok }" ;;
    *) diag "$line" ;;
    esac
  done <"$W/wh.out"
  grep -q '^ok \|^not ok ' "$W/wh.out" || { fail "the webhook checker ran on $2"; sed 's/^/#   /' "$W/wh.out"; }
}
wh "Issue Hook" "$SRC/tests/unit/gitlab-webhooks/issue-label-added.json"
wh "Note Hook" "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json"

# positive controls: a field airlock reads typed otherwise, an invented
# field, a read field missing, and a parser reading an unlisted field
jq '.project.id = "42"' "$SRC/tests/unit/gitlab-webhooks/issue-label-added.json" >"$W/bad-type.json"
out=$(python3 "$WH" "$MD" "$WC" "Issue Hook" "$W/bad-type.json" 2>&1)
like "control: project.id as a string is refused" "$out" 'not ok .*`project\.id` \(airlock reads it\): string in the fixture, integer in GitLab'
jq '.object_attributes.is_trigger = true' "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" >"$W/bad-extra.json"
out=$(python3 "$WH" "$MD" "$WC" "Note Hook" "$W/bad-extra.json" 2>&1)
like "control: a field GitLab does not send is refused" "$out" "not ok .*not in GitLab's example: object_attributes\.is_trigger"
jq 'del(.issue.iid)' "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" >"$W/bad-missing.json"
out=$(python3 "$WH" "$MD" "$WC" "Note Hook" "$W/bad-missing.json" 2>&1)
like "control: a read field missing from the fixture is refused" "$out" 'not ok .*`issue\.iid` \(airlock reads it\): not in the fixture'
sed 's/"iid": 17,/"number": 17,/' "$MD" >"$W/bad.md"
out=$(python3 "$WH" "$W/bad.md" "$WC" "Note Hook" "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" 2>&1)
like "control: a read field GitLab's example lacks is refused" "$out" "not ok .*\`issue\.iid\` \(airlock reads it\): not in GitLab's Note Hook example"
sed 's/"object_attributes.note"/"object_attributes.body"/' "$WC" >"$W/bad.c"
out=$(python3 "$WH" "$MD" "$W/bad.c" "Note Hook" "$SRC/tests/unit/gitlab-webhooks/note-on-issue.json" 2>&1)
like "control: a field the parser reads but READS does not list is refused" "$out" 'not ok webhook_gitlab.c reads only fields listed in READS: not listed: object_attributes.body'

# --- REST: the test forge's answers against GitLab's OpenAPI description ---
FORGE=${GITLAB_FORGE:-}
[ -n "$FORGE" ] && [ -x "$FORGE" ] || { skip "airlock-gitlab-forge not built (GITLAB_FORGE unset)"; done_testing; exit 0; }
command -v curl >/dev/null || { skip "curl not installed"; done_testing; exit 0; }
command -v git >/dev/null || { skip "git not installed"; done_testing; exit 0; }
OA=$SRC/tests/gitlab-forge/openapi_subset.py
SUB=$SRC/tests/gitlab-forge/fixtures/gitlab-openapi-v2.subset.json
ok "GitLab's OpenAPI description: the vendored subset of $(jq -r '._source.file + " at " + ._source.commit[0:12]' "$SUB") ($(jq '.paths | length' "$SUB") paths)"
D=$W/gl
mkdir -p "$D"
umask 077
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=$D GIT_TERMINAL_PROMPT=0
BARE=$D/repos/acme/tools/tally.git
{ git init -q --bare -b main "$BARE" && git init -q -b main "$D/seed" && echo one >"$D/seed/a.txt" &&
  git -C "$D/seed" add a.txt && git -C "$D/seed" -c user.name=t -c user.email=t@test commit -qm one &&
  git -C "$D/seed" checkout -q -b airlock/7-schema && echo two >>"$D/seed/a.txt" && echo new >"$D/seed/b.txt" &&
  git -C "$D/seed" add -A && git -C "$D/seed" -c user.name=t -c user.email=t@test commit -qm two &&
  git -C "$D/seed" push -q "$BARE" main airlock/7-schema; } >"$D/git.out" 2>&1 || { fail "the project's repository"; sed 's/^/#   /' "$D/git.out"; }
"$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$D/token" \
  --ports-file "$D/ports.json" --repos "$D/repos" >"$D/forge.log" 2>&1 &
FPID=$!
on_exit "kill $FPID"
for _ in $(seq 1 100); do [ -s "$D/ports.json" ] && break; kill -0 $FPID 2>/dev/null || break; sleep 0.1; done
PORT=$(jq -r .http "$D/ports.json" 2>/dev/null)
[ -n "$PORT" ] && [ "$PORT" != null ] || { fail "the GitLab test forge started"; sed 's/^/# /' "$D/forge.log"; done_testing; exit 1; }
API=http://127.0.0.1:$PORT
printf 'PRIVATE-TOKEN: %s\n' "$(cat "$D/token")" >"$D/adm.h"

: >"$D/cases.jsonl"
n=0
# cap NAME METHOD ROUTE HEADERFILE URLPATH [BODY] [PARAMS_JSON]: one answer into a case
cap() {
  local name=$1 m=$2 route=$3 h=$4 path=$5 body=${6:-} params=${7:-[]}
  n=$((n + 1))
  local args=(curl -sS --max-time 30 -o "$D/b$n" -w '%{http_code}' -X "$m" -H @"$h")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  local st
  st=$("${args[@]}" "$API$path")
  jq -nc --arg name "$name" --arg m "$(tr A-Z a-z <<<"$m")" --arg r "$route" --argjson st "$st" \
    --arg b "$D/b$n" --argjson p "$params" --argjson nobody "$([ -s "$D/b$n" ] && echo false || echo true)" \
    '{name: $name, method: $m, route: $r, status: $st, params: $p} + (if $nobody then {} else {body: $b} end)' >>"$D/cases.jsonl"
}
P=/api/v4/projects/{id}
TOM=$(date -u -d tomorrow +%Y-%m-%d)
cap "POST project access token (201)" POST "$P/access_tokens" "$D/adm.h" /api/v4/projects/42/access_tokens \
  "{\"name\":\"airlock-run\",\"scopes\":[\"api\",\"read_repository\",\"write_repository\"],\"access_level\":30,\"expires_at\":\"$TOM\"}"
printf 'PRIVATE-TOKEN: %s\n' "$(jq -r .token "$D/b$n")" >"$D/run.h"
TID=$(jq -r .id "$D/b$n")
cap "GET project access tokens" GET "$P/access_tokens" "$D/adm.h" /api/v4/projects/42/access_tokens
cap "GET a project" GET "$P" "$D/run.h" /api/v4/projects/42
cap "GET a project by its encoded path" GET "$P" "$D/run.h" /api/v4/projects/acme%2Ftools%2Ftally
cap "GET branches" GET "$P/repository/branches" "$D/run.h" '/api/v4/projects/42/repository/branches?per_page=100' '' '["per_page"]'
cap "GET a branch" GET "$P/repository/branches/{branch}" "$D/run.h" /api/v4/projects/42/repository/branches/main
cap "GET an unknown branch (404)" GET "$P/repository/branches/{branch}" "$D/run.h" /api/v4/projects/42/repository/branches/no-such-branch
cap "GET protected branches" GET "$P/protected_branches" "$D/run.h" '/api/v4/projects/42/protected_branches?per_page=100' '' '["per_page"]'
cap "GET approval settings" GET "$P/approvals" "$D/adm.h" /api/v4/projects/42/approvals
cap "GET approval rules" GET "$P/approval_rules" "$D/run.h" '/api/v4/projects/42/approval_rules?per_page=100' '' '["per_page"]'
cap "GET push rule" GET "$P/push_rule" "$D/run.h" /api/v4/projects/42/push_rule
cap "GET a member (inherited too)" GET "$P/members/all/{user_id}" "$D/adm.h" /api/v4/projects/42/members/all/12
cap "GET variables" GET "$P/variables" "$D/adm.h" '/api/v4/projects/42/variables?per_page=100' '' '["per_page"]'
cap "GET deploy tokens" GET "$P/deploy_tokens" "$D/adm.h" '/api/v4/projects/42/deploy_tokens?per_page=100' '' '["per_page"]'
cap "GET users by username" GET /api/v4/users "$D/adm.h" '/api/v4/users?username=dev.one' '' '["username"]'
cap "GET a repository file the fixture lacks (404)" GET "$P/repository/files/{file_path}" "$D/run.h" '/api/v4/projects/42/repository/files/a.txt?ref=main' '' '["ref"]'
cap "GET the tree" GET "$P/repository/tree" "$D/run.h" '/api/v4/projects/42/repository/tree?recursive=true&ref=main&pagination=keyset&per_page=100' '' '["recursive","ref","pagination","per_page"]'
SHA=$(jq -r '.[0].id' "$D/b$n")
cap "GET a blob" GET "$P/repository/blobs/{sha}" "$D/run.h" "/api/v4/projects/42/repository/blobs/$SHA"
cap "GET an issue" GET "$P/issues/{issue_iid}" "$D/run.h" /api/v4/projects/42/issues/7
cap "POST an issue note (201)" POST "$P/issues/{issue_iid}/notes" "$D/run.h" /api/v4/projects/42/issues/7/notes '{"body":"working on it"}'
cap "GET issue notes" GET "$P/issues/{issue_iid}/notes" "$D/run.h" '/api/v4/projects/42/issues/7/notes?sort=asc&order_by=created_at&per_page=100' '' '["sort","order_by","per_page"]'
MR='{"source_branch":"airlock/7-schema","target_branch":"main","title":"Draft: tally: count empty lines","description":"by airlock","remove_source_branch":true}'
cap "POST a merge request (201)" POST "$P/merge_requests" "$D/run.h" /api/v4/projects/42/merge_requests "$MR"
IID=$(jq -r .iid "$D/b$n")
cap "POST the same merge request again (409)" POST "$P/merge_requests" "$D/run.h" /api/v4/projects/42/merge_requests "$MR"
cap "GET merge requests by source branch" GET "$P/merge_requests" "$D/run.h" '/api/v4/projects/42/merge_requests?state=all&source_branch=airlock%2F7-schema&per_page=100' '' '["state","source_branch","per_page"]'
cap "GET a merge request" GET "$P/merge_requests/{merge_request_iid}" "$D/run.h" "/api/v4/projects/42/merge_requests/$IID"
cap "GET an unknown merge request (404)" GET "$P/merge_requests/{merge_request_iid}" "$D/run.h" /api/v4/projects/42/merge_requests/999
cap "GET merge request diffs" GET "$P/merge_requests/{merge_request_iid}/diffs" "$D/run.h" "/api/v4/projects/42/merge_requests/$IID/diffs?per_page=100" '' '["per_page"]'
cap "GET merge request commits" GET "$P/merge_requests/{merge_request_iid}/commits" "$D/run.h" "/api/v4/projects/42/merge_requests/$IID/commits?per_page=100" '' '["per_page"]'
cap "POST a merge request note (201)" POST "$P/merge_requests/{merge_request_iid}/notes" "$D/run.h" "/api/v4/projects/42/merge_requests/$IID/notes" '{"body":"notes"}'
cap "GET merge request notes" GET "$P/merge_requests/{merge_request_iid}/notes" "$D/run.h" "/api/v4/projects/42/merge_requests/$IID/notes?sort=asc&order_by=created_at&per_page=100" '' '["sort","order_by","per_page"]'
cap "GET merge request discussions" GET "$P/merge_requests/{merge_request_iid}/discussions" "$D/run.h" "/api/v4/projects/42/merge_requests/$IID/discussions?per_page=100" '' '["per_page"]'
cap "GET personal_access_tokens/self" GET /api/v4/personal_access_tokens/self "$D/run.h" /api/v4/personal_access_tokens/self
cap "DELETE a project access token (204)" DELETE "$P/access_tokens/{token_id}" "$D/adm.h" "/api/v4/projects/42/access_tokens/$TID"
cap "DELETE it again (400)" DELETE "$P/access_tokens/{token_id}" "$D/adm.h" "/api/v4/projects/42/access_tokens/$TID"
cap "GET personal_access_tokens/self, revoked (401)" GET /api/v4/personal_access_tokens/self "$D/run.h" /api/v4/personal_access_tokens/self
cap "POST a second project access token (201)" POST "$P/access_tokens" "$D/adm.h" /api/v4/projects/42/access_tokens \
  "{\"name\":\"airlock-self\",\"scopes\":[\"api\"],\"access_level\":30,\"expires_at\":\"$TOM\"}"
printf 'PRIVATE-TOKEN: %s\n' "$(jq -r .token "$D/b$n")" >"$D/self.h"
cap "DELETE personal_access_tokens/self (204)" DELETE /api/v4/personal_access_tokens/self "$D/self.h" /api/v4/personal_access_tokens/self

python3 "$OA" check "$SUB" "$D/cases.jsonl" >"$D/check.out" 2>&1
# A gap of GitLab's description, not of the forge: it documents no query
# parameter for a merge request's commits, where airlock asks per_page=100
# (GitLab's REST docs page the list). Reported as TODO (an expected failure).
QUIRK="GET merge request commits: query parameter \`per_page\`"
while IFS= read -r line; do
  case $line in
  "not ok $QUIRK"*)
    _t_n=$((_t_n + 1))
    echo "not ok $_t_n - matches GitLab's description: ${line#not ok } # TODO GitLab's v2 description lists no page parameters for MR commits"
    ;;
  "ok "*) ok "matches GitLab's description: ${line#ok }" ;;
  "not ok "*) fail "matches GitLab's description: ${line#not ok }" ;;
  "skip "*) skip "${line#skip }" ;;
  *) diag "$line" ;;
  esac
done <"$D/check.out"
is "every captured answer was checked or skipped" "$(grep -c '^\(not \)\?ok \|^skip ' "$D/check.out")" "$n"

# positive controls: the checker refuses an undocumented parameter, status,
# method, and a list answered as an object
jq -c 'select(.name == "GET a merge request") | .name = "undocumented parameter" | .params = ["no_such_param"]' "$D/cases.jsonl" >"$D/bad.jsonl"
jq -c 'select(.name == "POST a merge request (201)") | .name = "undocumented status" | .status = 200' "$D/cases.jsonl" >>"$D/bad.jsonl"
jq -c 'select(.name == "GET a merge request") | .name = "undocumented method" | .method = "patch"' "$D/cases.jsonl" >>"$D/bad.jsonl"
jq '.[0]' "$(jq -r 'select(.name == "GET project access tokens") | .body' "$D/cases.jsonl")" >"$D/one-token.json"
jq -c --arg b "$D/one-token.json" 'select(.name == "GET project access tokens") | .name = "list as an object" | .body = $b' "$D/cases.jsonl" >>"$D/bad.jsonl"
PB=$(jq -r 'select(.name == "GET protected branches") | .body' "$D/cases.jsonl")
jq '.[0].allow_force_push = "false"' "$PB" >"$D/pb-type.json"
jq '.[0].push_access_levels[0].role = "nobody"' "$PB" >"$D/pb-extra.json"
jq -c --arg b "$D/pb-type.json" 'select(.name == "GET protected branches") | .name = "a mistyped field" | .body = $b' "$D/cases.jsonl" >>"$D/bad.jsonl"
jq -c --arg b "$D/pb-extra.json" 'select(.name == "GET protected branches") | .name = "an invented field" | .body = $b' "$D/cases.jsonl" >>"$D/bad.jsonl"
out=$(python3 "$OA" check "$SUB" "$D/bad.jsonl" 2>&1)
like "control: an undocumented query parameter is refused" "$out" 'not ok undocumented parameter: query parameter `no_such_param` is not documented'
like "control: an undocumented status is refused" "$out" 'not ok undocumented status: status 200 is not a documented answer'
like "control: an undocumented method is refused" "$out" 'not ok undocumented method: no operation PATCH'
like "control: a list answered as an object is refused" "$out" 'not ok list as an object: GitLab documents a JSON array; the answer is dict'
like "control: a field typed otherwise than GitLab's definition is refused" "$out" 'not ok a mistyped field: \(body\)/0/allow_force_push: str where GitLab documents boolean'
like "control: a field GitLab's definition lacks is refused" "$out" 'not ok an invented field: \(body\)/0/push_access_levels/0: field\(s\) GitLab does not document: role'
[ -n "${GITLAB_SCHEMA_KEEP:-}" ] && cp -r "$D" "$GITLAB_SCHEMA_KEEP"
done_testing
