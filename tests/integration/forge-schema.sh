#!/bin/bash
# The test forge's answers, for every route airlock calls, validated against
# GitHub's own OpenAPI description (npm package @octokit/openapi, installed
# here into the test's temp dir) with tests/forge-emulator/schema_check.py:
# the operation exists, the query parameters airlock sends are documented,
# the status is a documented answer, the body validates against its schema,
# lists document a Link header (issue #21). Skipped with the reason when
# AIRLOCK_SKIP_NPM is set or npm cannot install the package. A positive
# control shows the checker catches a body that breaks the schema.
. "$(dirname "$0")/lib.sh"
SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FORGE=${AIRLOCK_FORGE:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ]; then
  skip "airlock-forge not built (AIRLOCK_FORGE unset)"; done_testing; exit 0
fi
for t in git curl openssl jq python3; do
  command -v "$t" >/dev/null || { skip "$t not installed"; done_testing; exit 0; }
done
python3 -c 'import jsonschema, referencing' 2>/dev/null || { skip "python3-jsonschema (with referencing) not installed"; done_testing; exit 0; }
W=$T_TMP
# FORGE_OPENAPI_SPEC: an api.github.com.json already at hand (no npm)
if [ -n "${FORGE_OPENAPI_SPEC:-}" ] && [ -s "$FORGE_OPENAPI_SPEC" ]; then
  mkdir -p "$W/npm/node_modules/@octokit/openapi/generated"
  ln -s "$FORGE_OPENAPI_SPEC" "$W/npm/node_modules/@octokit/openapi/generated/api.github.com.json"
  echo '{"version": "(given)"}' >"$W/npm/node_modules/@octokit/openapi/package.json"
elif [ -n "${AIRLOCK_SKIP_NPM:-}" ]; then
  skip "GitHub's OpenAPI description from npm: AIRLOCK_SKIP_NPM is set"; done_testing; exit 0
elif ! command -v npm >/dev/null; then
  skip "GitHub's OpenAPI description from npm: npm not installed"; done_testing; exit 0
elif ! (mkdir -p "$W/npm" && cd "$W/npm" && timeout 300 npm install --no-audit --no-fund --loglevel=error @octokit/openapi >../npm.out 2>&1); then
  skip "GitHub's OpenAPI description from npm: npm install failed ($(tail -1 "$W/npm.out"))"; done_testing; exit 0
fi
SPEC=$W/npm/node_modules/@octokit/openapi/generated/api.github.com.json
[ -s "$SPEC" ] || { fail "the package holds generated/api.github.com.json"; done_testing; exit 1; }
ok "@octokit/openapi $(jq -r .version "$W/npm/node_modules/@octokit/openapi/package.json") installed (OpenAPI $(head -c 200 "$SPEC" | grep -o '"openapi": *"[^"]*"' | cut -d'"' -f4))"

umask 077
"$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null
"$SRC/scripts/make-app-key.sh" "$W/keys" app >/dev/null
"$FORGE" --fixture "$SRC/tests/forge-emulator/fixtures/sample.json" --data "$W/data" \
  --tls-dir "$W/tls" --key "1001=$W/keys/app.pub.pem" --key "1002=$W/keys/app.pub.pem" \
  --ports-file "$W/ports.json" >"$W/forge.out" 2>"$W/forge.err" &
FORGE_PID=$!
on_exit "kill $FORGE_PID"
for _ in $(seq 1 200); do [ -s "$W/ports.json" ] && break; sleep 0.05; done
P=$(jq -r .https "$W/ports.json")
ADMIN=http://127.0.0.1:$(jq -r .admin "$W/ports.json")
API=https://api.forge.test:$P
CURL=(curl -sS --max-time 30 --cacert "$W/tls/ca.crt" --resolve "api.forge.test:$P:127.0.0.1" --resolve "forge.test:$P:127.0.0.1")
jwt() { printf 'Authorization: Bearer %s\n' "$(JWT_NOW=$(curl -s "$ADMIN/clock" | jq -r .now) "$SRC/scripts/forge-jwt.sh" "$W/keys/app.pem" "$1")" >"$2"; }
jwt 1001 "$W/jwt.h"
jwt 1002 "$W/jwt2.h"

: >"$W/cases.jsonl"
n=0
# cap NAME METHOD ROUTE HEADERFILE URLPATH [BODY] [PARAMS_JSON] [LIST]: one answer into a case
cap() {
  local name=$1 m=$2 route=$3 h=$4 path=$5 body=${6:-} params=${7:-[]} list=${8:-false}
  n=$((n + 1))
  local args=("${CURL[@]}" -o "$W/b$n" -D "$W/h$n" -w '%{http_code}' -X "$m" -H @"$h")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  local st
  st=$("${args[@]}" "$API$path")
  jq -nc --arg name "$name" --arg m "$(tr A-Z a-z <<<"$m")" --arg r "$route" --argjson st "$st" \
    --arg b "$W/b$n" --argjson p "$params" --argjson l "$list" --argjson nobody "$([ -s "$W/b$n" ] && echo false || echo true)" \
    '{name: $name, method: $m, route: $r, status: $st, params: $p, list: $l} + (if $nobody then {} else {body: $b} end)' >>"$W/cases.jsonl"
}
tok_of() { jq -r .token "$W/b$n"; }

cap "GET /app" GET /app "$W/jwt.h" /app
cap "GET /app/installations" GET /app/installations "$W/jwt.h" /app/installations '' '[]' true
cap "GET /repos/{o}/{r}/installation" GET '/repos/{owner}/{repo}/installation' "$W/jwt.h" /repos/acme/widget/installation
cap "POST access_tokens (201)" POST '/app/installations/{installation_id}/access_tokens' "$W/jwt.h" \
  /app/installations/2001/access_tokens '{"repositories":["widget"],"permissions":{"contents":"write","pull_requests":"write","issues":"write"}}'
printf 'Authorization: token %s\n' "$(tok_of)" >"$W/bot.h"
cap "POST access_tokens, app 2 (201)" POST '/app/installations/{installation_id}/access_tokens' "$W/jwt2.h" \
  /app/installations/2002/access_tokens '{"repositories":["widget"],"permissions":{"administration":"write","contents":"write","workflows":"write"}}'
printf 'Authorization: token %s\n' "$(tok_of)" >"$W/adm.h"
cap "POST access_tokens refused (422)" POST '/app/installations/{installation_id}/access_tokens' "$W/jwt.h" \
  /app/installations/2001/access_tokens '{"permissions":{"administration":"write"}}'
cap "GET /installation/repositories" GET /installation/repositories "$W/bot.h" '/installation/repositories?per_page=1' '' '["per_page"]' true
cap "GET /repos/{o}/{r}" GET '/repos/{owner}/{repo}' "$W/bot.h" /repos/acme/widget
cap "GET /repos/{o}/{r} (404)" GET '/repos/{owner}/{repo}' "$W/bot.h" /repos/acme/secret
cap "GET /repos/{o}/{r}/branches/{b}" GET '/repos/{owner}/{repo}/branches/{branch}' "$W/bot.h" /repos/acme/widget/branches/main
cap "GET branch protection" GET '/repos/{owner}/{repo}/branches/{branch}/protection' "$W/adm.h" /repos/acme/widget/branches/main/protection
cap "GET branch protection (404 Branch not protected)" GET '/repos/{owner}/{repo}/branches/{branch}/protection' "$W/adm.h" /repos/acme/widget/branches/release/protection
cap "GET rules for a branch" GET '/repos/{owner}/{repo}/rules/branches/{branch}' "$W/bot.h" '/repos/acme/widget/rules/branches/release?per_page=100' '' '["per_page"]' true
cap "GET rulesets" GET '/repos/{owner}/{repo}/rulesets' "$W/bot.h" '/repos/acme/widget/rulesets?includes_parents=true&per_page=100' '' '["includes_parents","per_page"]' true
cap "GET a ruleset (bypass_actors hidden)" GET '/repos/{owner}/{repo}/rulesets/{ruleset_id}' "$W/bot.h" '/repos/acme/widget/rulesets/42?includes_parents=true' '' '["includes_parents"]'
cap "GET a ruleset (administration: write)" GET '/repos/{owner}/{repo}/rulesets/{ruleset_id}' "$W/adm.h" '/repos/acme/widget/rulesets/42?includes_parents=true' '' '["includes_parents"]'
cap "GET contents (a file)" GET '/repos/{owner}/{repo}/contents/{path}' "$W/bot.h" '/repos/acme/widget/contents/README.md?ref=main' '' '["ref"]'
# the audit's ci.* reads (issue #26): the workflows directory and a file in
# it, the Actions settings, the environments (one with required reviewers)
cap "GET contents (a directory)" GET '/repos/{owner}/{repo}/contents/{path}' "$W/bot.h" '/repos/acme/widget/contents/.github/workflows?ref=main' '' '["ref"]'
cap "GET contents (a workflow file)" GET '/repos/{owner}/{repo}/contents/{path}' "$W/bot.h" '/repos/acme/widget/contents/.github/workflows/ci.yml?ref=main' '' '["ref"]'
cap "POST access_tokens, app 2, Actions: read (201)" POST '/app/installations/{installation_id}/access_tokens' "$W/jwt2.h" \
  /app/installations/2002/access_tokens '{"repositories":["widget"],"permissions":{"administration":"read","actions":"read"}}'
printf 'Authorization: token %s\n' "$(tok_of)" >"$W/act.h"
cap "GET Actions permissions" GET '/repos/{owner}/{repo}/actions/permissions' "$W/act.h" /repos/acme/widget/actions/permissions
cap "GET default workflow permissions" GET '/repos/{owner}/{repo}/actions/permissions/workflow' "$W/act.h" /repos/acme/widget/actions/permissions/workflow
cap "GET environments" GET '/repos/{owner}/{repo}/environments' "$W/act.h" '/repos/acme/widget/environments?per_page=100' '' '["per_page"]'
cap "GET an issue" GET '/repos/{owner}/{repo}/issues/{issue_number}' "$W/bot.h" /repos/acme/widget/issues/1
cap "POST an issue comment (201)" POST '/repos/{owner}/{repo}/issues/{issue_number}/comments' "$W/bot.h" /repos/acme/widget/issues/1/comments '{"body":"hello"}'
cap "GET issue comments" GET '/repos/{owner}/{repo}/issues/{issue_number}/comments' "$W/bot.h" '/repos/acme/widget/issues/1/comments?per_page=100' '' '["per_page"]' true

# a branch with a modified, an added, a renamed and a binary file, and its PR
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false
export GIT_SSL_CAINFO="$W/tls/ca.crt" GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@forge.test
export GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@forge.test
g() { env GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=http.curloptResolve "GIT_CONFIG_VALUE_0=forge.test:$P:127.0.0.1" \
  GIT_CONFIG_KEY_1=http.extraHeader "GIT_CONFIG_VALUE_1=Authorization: Basic $(printf 'x-access-token:%s' "$(sed 's/^Authorization: token //' "$W/bot.h")" | base64 -w0)" git "$@"; }
{ g clone -q "https://forge.test:$P/acme/widget.git" "$W/wc" && cd "$W/wc" && git checkout -q -b airlock/1-schema &&
  f=$(git ls-files | grep -v '^\.github/' | head -1) && echo more >>"$f" && echo new >new.txt && printf '\0\1bin' >b.bin &&
  g2=$(git ls-files | grep -v '^\.github/' | sed -n 2p) && { [ -z "$g2" ] || git mv "$g2" "renamed-$(basename "$g2")"; } &&
  git add -A && git commit -qm schema && g push -q origin airlock/1-schema; } >"$W/push.out" 2>&1 || { fail "push a branch"; sed 's/^/#   /' "$W/push.out"; }
cd "$W" || exit 1
cap "POST a pull request (201)" POST '/repos/{owner}/{repo}/pulls' "$W/bot.h" /repos/acme/widget/pulls '{"title":"schema","head":"airlock/1-schema","base":"main","body":"b"}'
PR=$(jq -r .number "$W/b$n")
cap "POST a pull request again (422)" POST '/repos/{owner}/{repo}/pulls' "$W/bot.h" /repos/acme/widget/pulls '{"title":"schema","head":"airlock/1-schema","base":"main"}'
cap "GET pulls by head" GET '/repos/{owner}/{repo}/pulls' "$W/bot.h" '/repos/acme/widget/pulls?state=all&head=acme:airlock/1-schema&per_page=100' '' '["state","head","per_page"]' true
cap "GET a pull request" GET '/repos/{owner}/{repo}/pulls/{pull_number}' "$W/bot.h" "/repos/acme/widget/pulls/$PR"
cap "GET pull request files" GET '/repos/{owner}/{repo}/pulls/{pull_number}/files' "$W/bot.h" "/repos/acme/widget/pulls/$PR/files?per_page=100" '' '["per_page"]' true
cap "POST a review (COMMENT)" POST '/repos/{owner}/{repo}/pulls/{pull_number}/reviews' "$W/bot.h" "/repos/acme/widget/pulls/$PR/reviews" '{"event":"COMMENT","body":"notes"}'
cap "GET reviews" GET '/repos/{owner}/{repo}/pulls/{pull_number}/reviews' "$W/bot.h" "/repos/acme/widget/pulls/$PR/reviews?per_page=100" '' '["per_page"]' true
cap "GET comments of the PR" GET '/repos/{owner}/{repo}/issues/{issue_number}/comments' "$W/bot.h" "/repos/acme/widget/issues/$PR/comments?per_page=100" '' '["per_page"]' true
curl -sS -X POST -H 'Content-Type: application/json' --data-binary '{"from":"acme/old-widget","to":"acme/widget"}' "$ADMIN/renames" >/dev/null
cap "GET a renamed repository (301)" GET '/repos/{owner}/{repo}' "$W/bot.h" /repos/acme/old-widget
cap "DELETE /installation/token (204)" DELETE /installation/token "$W/bot.h" /installation/token

python3 "$SRC/tests/forge-emulator/schema_check.py" "$SPEC" "$W/cases.jsonl" >"$W/check.out" 2>&1
# A known flaw of GitHub's description, not of the forge: the inline schema
# of GET /app/installations has `account: allOf [simple-user, enterprise]`
# (a user AND an enterprise at once), where the `installation` schema of
# every other route says anyOf. Reported as TODO (an expected failure).
QUIRK="GET /app/installations: "
while IFS= read -r line; do
  case $line in
  "not ok $QUIRK"*"first at 0/account"*)
    _t_n=$((_t_n + 1))
    echo "not ok $_t_n - matches GitHub's description: ${line#not ok } # TODO GitHub's own schema says allOf [simple-user, enterprise] for this account"
    ;;
  "ok "*) ok "matches GitHub's description: ${line#ok }" ;;
  "not ok "*) fail "matches GitHub's description: ${line#not ok }" ;;
  *) diag "$line" ;;
  esac
done <"$W/check.out"
is "every captured answer was checked" "$(grep -c '^\(not \)\?ok ' "$W/check.out")" "$n"

# positive control: the checker notices a body that breaks the schema
jq 'map(del(.sha))' "$W/b$(grep -n '"GET pull request files"' "$W/cases.jsonl" | cut -d: -f1)" >"$W/bad-files.json"
jq -c --arg b "$W/bad-files.json" 'select(.name == "GET pull request files") | .name = "broken files" | .body = $b' "$W/cases.jsonl" >"$W/bad.jsonl"
jq -c 'select(.name == "GET /repos/{o}/{r}") | .name = "undocumented parameter" | .params = ["no_such_param"]' "$W/cases.jsonl" >>"$W/bad.jsonl"
out=$(python3 "$SRC/tests/forge-emulator/schema_check.py" "$SPEC" "$W/bad.jsonl" 2>&1)
like "positive control: a files list without the required sha is refused" "$out" "not ok broken files: .*'sha' is a required property"
[ -n "${FORGE_SCHEMA_KEEP:-}" ] && cp -r "$W" "$FORGE_SCHEMA_KEEP"
like "positive control: an undocumented query parameter is refused" "$out" 'not ok undocumented parameter: query parameter `no_such_param` is not documented'
done_testing
