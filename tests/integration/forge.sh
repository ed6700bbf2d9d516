#!/bin/bash
# airlock-forge, driven by curl and git as a client would (TAP).
# Tokens never appear on a command line: curl reads headers from 0600 files
# in the test's temp dir (-H @file), git gets them through GIT_CONFIG_* env.
. "$(dirname "$0")/lib.sh"

SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FORGE=${AIRLOCK_FORGE:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ]; then
  skip "airlock-forge not built (AIRLOCK_FORGE unset)"
  done_testing
  exit
fi
for t in git curl openssl jq; do
  if ! command -v "$t" >/dev/null; then
    skip "$t not installed"
    done_testing
    exit
  fi
done

umask 077
W=$T_TMP
"$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null
"$SRC/scripts/make-app-key.sh" "$W/keys" app >/dev/null
"$SRC/scripts/make-app-key.sh" "$W/keys" other >/dev/null

# ---- start the forge (port 0, ports file) ----
start_ns=$(date +%s%N)
"$FORGE" --fixture "$SRC/tests/forge-emulator/fixtures/sample.json" --data "$W/data" \
  --tls-dir "$W/tls" --key "1001=$W/keys/app.pub.pem" --key "1002=$W/keys/app.pub.pem" \
  --ports-file "$W/ports.json" >"$W/forge.out" 2>"$W/forge.err" &
FORGE_PID=$!
on_exit "kill $FORGE_PID"
for _ in $(seq 1 100); do [ -s "$W/ports.json" ] && break; sleep 0.02; done
start_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
if [ ! -s "$W/ports.json" ]; then
  fail "forge starts"; sed 's/^/#   /' "$W/forge.err"; done_testing; exit 1
fi
ok "forge starts from the sample fixture"
diag "startup took ${start_ms} ms"
# (no timing assertion: the machine is shared; the time is a diagnostic only)
P=$(jq -r .https "$W/ports.json")
ADMIN=http://127.0.0.1:$(jq -r .admin "$W/ports.json")
like "CA path printed" "$(cat "$W/forge.out")" "CA certificate .*/ca.crt"
API=https://api.forge.test:$P
GITURL=https://forge.test:$P
CURL=(curl -sS --max-time 20 --cacert "$W/tls/ca.crt" --resolve "api.forge.test:$P:127.0.0.1"
  --resolve "forge.test:$P:127.0.0.1")

# api METHOD PATH HEADERFILE [BODY]: prints the status; body in $W/body
api() {
  local m=$1 p=$2 h=$3 b=${4-}
  local args=("${CURL[@]}" -o "$W/body" -w '%{http_code}' -X "$m")
  [ -n "$h" ] && args+=(-H "@$h")
  [ -n "$b" ] && args+=(-H 'Content-Type: application/json' --data-binary "$b")
  "${args[@]}" "$API$p"
}
msg() { jq -r '.message // empty' "$W/body" 2>/dev/null; }
forge_now() { curl -s "$ADMIN/clock" | jq -r .now; }
# jwt FILE KEY ISS [IAT_OFF] [EXP_OFF]: a header file with an app JWT (forge clock)
jwt() {
  local f=$1; shift
  printf 'Authorization: Bearer %s\n' "$(JWT_NOW=$(forge_now) "$SRC/scripts/forge-jwt.sh" "$@")" >"$f"
}
# mint OUT INSTALLATION BODY [JWTFILE]: status; token header in OUT.tok
mint() {
  local code
  code=$(api POST "/app/installations/$2/access_tokens" "${4:-$W/jwt}" "$3")
  if [ "$code" = 201 ]; then
    printf 'Authorization: token %s\n' "$(jq -r .token "$W/body")" >"$1.tok"
  fi
  echo "$code"
}
tokval() { sed 's/^Authorization: token //' "$1"; }

# ---- JWT ----
jwt "$W/jwt" "$W/keys/app.pem" 1001
is "GET /app with JWT" "$(api GET /app "$W/jwt")" 200
is "app slug" "$(jq -r .slug "$W/body")" airlock-bot
jwt "$W/jwt.cid" "$W/keys/app.pem" Iv1.forgetest000001
is "JWT with iss = client id" "$(api GET /app "$W/jwt.cid")" 200
jwt "$W/jwt.far" "$W/keys/app.pem" 1001 -60 1200
is "JWT exp > 10 min ahead: 401" "$(api GET /app "$W/jwt.far")" 401
like "  message" "$(msg)" "too far in the future"
jwt "$W/jwt.fut" "$W/keys/app.pem" 1001 120 500
is "JWT iat in the future: 401" "$(api GET /app "$W/jwt.fut")" 401
jwt "$W/jwt.old" "$W/keys/app.pem" 1001 -900 -300
is "expired JWT: 401" "$(api GET /app "$W/jwt.old")" 401
jwt "$W/jwt.wrongkey" "$W/keys/other.pem" 1001
is "JWT signed by another key: 401" "$(api GET /app "$W/jwt.wrongkey")" 401
like "  message" "$(msg)" "could not be decoded"
is "no auth on /app: 401" "$(api GET /app "")" 401
is "GET /repos/acme/widget/installation" "$(api GET /repos/acme/widget/installation "$W/jwt")" 200
is "  installation id" "$(jq -r .id "$W/body")" 2001
is "repo installation for a repo the app is not on: 404" \
  "$(api GET /repos/acme/secret/installation "$W/jwt")" 404
is "GET /app/installations/2001" "$(api GET /app/installations/2001 "$W/jwt")" 200
is "  installation permissions" "$(jq -c .permissions.contents "$W/body")" '"write"'
is "another app's installation: 404" "$(api GET /app/installations/2002 "$W/jwt")" 404

# ---- minting ----
is "mint scoped token" "$(mint "$W/git" 2001 '{"repositories":["widget"],"permissions":{"contents":"write","pull_requests":"write"}}')" 201
like "  ghs_ prefix" "$(tokval "$W/git.tok" | cut -c1-4)" '^ghs_$'
is "  repositories" "$(jq -c '[.repositories[].full_name]' "$W/body")" '["acme/widget"]'
is "  permissions (metadata added)" "$(jq -c '.permissions|to_entries|map(.key)|sort' "$W/body")" '["contents","metadata","pull_requests"]'
like "  expires_at" "$(jq -r .expires_at "$W/body")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$'
exp_s=$(date -d "$(jq -r .expires_at "$W/body")" +%s)
now_s=$(forge_now)
if [ $((exp_s - now_s)) -gt 3590 ] && [ $((exp_s - now_s)) -le 3600 ]; then ok "  expires in 1 hour"; else fail "  expires in 1 hour ($((exp_s - now_s)) s)"; fi
is "mint a permission not granted: 422" "$(mint "$W/bad" 2001 '{"permissions":{"administration":"read"}}')" 422
is "  message" "$(msg)" "The permissions requested are not granted to this installation."
is "mint a higher level than granted: 422" "$(mint "$W/bad" 2001 '{"permissions":{"metadata":"write"}}')" 422
is "mint a repository outside the installation: 422" "$(mint "$W/bad" 2001 '{"repositories":["secret"]}')" 422
is "  message" "$(msg)" "There is at least one repository that does not exist or is not accessible to the parent installation."
is "mint by repository_ids" "$(mint "$W/byid" 2001 '{"repository_ids":[3002],"permissions":{"contents":"read"}}')" 201
is "  scoped to acme/other" "$(jq -c '[.repositories[].full_name]' "$W/body")" '["acme/other"]'
is "mint with broken JSON: 400" "$(mint "$W/bad" 2001 '{"permissions":')" 400
is "  message" "$(msg)" "Problems parsing JSON"
is "mint with an installation token instead of a JWT: 401" "$(api POST /app/installations/2001/access_tokens "$W/git.tok" '{}')" 401
lens=""
for i in 1 2 3 4 5 6; do
  mint "$W/len$i" 2001 '{"permissions":{"contents":"read"}}' >/dev/null
  lens="$lens $(tokval "$W/len$i.tok" | tr -d '\n' | wc -c)"
done
distinct=$(echo "$lens" | tr ' ' '\n' | sed '/^$/d' | sort -u | wc -l)
if [ "$distinct" -gt 1 ]; then ok "token lengths vary ($lens)"; else fail "token lengths vary ($lens)"; fi

# ---- authorization by scope ----
is "token reads its repository" "$(api GET /repos/acme/widget "$W/git.tok")" 200
is "token on a repository outside its scope: 404" "$(api GET /repos/acme/other "$W/git.tok")" 404
is "token without issues permission: 403" "$(api GET /repos/acme/widget/issues/1 "$W/git.tok")" 403
is "  message" "$(msg)" "Resource not accessible by integration"
is "anonymous on a private repository: 404" "$(api GET /repos/acme/widget "")" 404
is "garbage token: 401" "$(printf 'Authorization: token ghs_%s\n' nonsensenonsensenonsensenonsense1234 >"$W/junk.h"; api GET /repos/acme/widget "$W/junk.h")" 401
is "  message" "$(msg)" "Bad credentials"
curl -s "$ADMIN/tokens" >"$W/admin.json"
if grep -qF "$(tokval "$W/git.tok")" "$W/admin.json"; then fail "admin view never shows token values"; else ok "admin view never shows token values"; fi
fp=sha256:$(tokval "$W/git.tok" | tr -d '\n' | sha256sum | cut -c1-12)
is "admin lists the token by fingerprint, active" "$(jq -r --arg f "$fp" '.[]|select(.fingerprint==$f).state' "$W/admin.json")" active

# ---- git smart HTTP ----
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false
export GIT_SSL_CAINFO="$W/tls/ca.crt" GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@forge.test
export GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@forge.test
unset SSH_ASKPASS
# g TOKENHEADERFILE git-args...: git with the token as a Basic extraHeader (env, not argv)
g() {
  local h=$1; shift
  local cfg=(GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=http.curloptResolve
    "GIT_CONFIG_VALUE_0=forge.test:$P:127.0.0.1" GIT_CONFIG_KEY_1=http.extraHeader)
  if [ -n "$h" ]; then
    cfg+=("GIT_CONFIG_VALUE_1=Authorization: Basic $(printf 'x-access-token:%s' "$(tokval "$h")" | base64 -w0)")
  else
    cfg+=("GIT_CONFIG_VALUE_1=X-Nothing: 1")
  fi
  env "${cfg[@]}" git "$@"
}
refs() { curl -s "$ADMIN/refs?repo=acme/widget"; }
main_before=$(refs | jq -r '."refs/heads/main"')

check "clone with a contents token" g "$W/git.tok" clone -q "$GITURL/acme/widget.git" "$W/wc"
check "  CODEOWNERS came with it" test -f "$W/wc/.github/CODEOWNERS"
check_not "clone of a repository outside the token's scope" g "$W/git.tok" clone -q "$GITURL/acme/other.git" "$W/wc-other"
check_not "clone without credentials" g "" clone -q "$GITURL/acme/widget.git" "$W/wc-anon"
check_not "clone with a garbage token" g "$W/junk.h" clone -q "$GITURL/acme/widget.git" "$W/wc-junk"
check "read-only token can fetch" g "$W/len1.tok" clone -q "$GITURL/acme/widget.git" "$W/wc-ro"

cd "$W/wc" || exit 1
git checkout -q -b airlock/1-run
echo "hello" >>README.md
git commit -qam "say hello"
check "push an airlock/ branch" g "$W/git.tok" push -q origin airlock/1-run
(cd "$W/wc-ro" && git checkout -q -b airlock/ro && echo x >>README.md && git commit -qam ro)
out=$(cd "$W/wc-ro" && g "$W/len1.tok" push origin airlock/ro 2>&1); rc=$?
if [ $rc -ne 0 ]; then ok "push with contents:read refused"; else fail "push with contents:read refused"; fi
like "  403 permission message" "$out" "denied|403"

out=$(g "$W/git.tok" push origin HEAD:main 2>&1); rc=$?
if [ $rc -ne 0 ]; then ok "push to protected main refused"; else fail "push to protected main refused"; fi
like "  GH006 message" "$out" "GH006: Protected branch update failed for refs/heads/main"
is "  main untouched" "$(refs | jq -r '."refs/heads/main"')" "$main_before"
out=$(g "$W/git.tok" push origin :release 2>&1); rc=$?
if [ $rc -ne 0 ]; then ok "deleting the ruleset-protected branch refused"; else fail "deleting the ruleset-protected branch refused"; fi
like "  GH013 message" "$out" "GH013: Repository rule violations found for refs/heads/release"
git commit -q --amend -m "say hello (amended)"
check "force push to the unprotected airlock/ branch" g "$W/git.tok" push -q -f origin airlock/1-run
is "push log records the refusal" "$(curl -s "$ADMIN/pushes" | jq -r '[.[]|select(.ref=="refs/heads/main")][0].accepted')" false

git checkout -q -b airlock/wf
echo "# changed" >>.github/workflows/ci.yml
git commit -qam "touch workflow"
out=$(g "$W/git.tok" push origin airlock/wf 2>&1); rc=$?
if [ $rc -ne 0 ]; then ok "workflow change without workflows permission refused"; else fail "workflow change without workflows permission refused"; fi
like "  message" "$out" "without .workflows. permission"
jwt "$W/jwt2" "$W/keys/app.pem" 1002
is "mint a workflows token (app 2)" "$(mint "$W/wf" 2002 '{"repositories":["widget"],"permissions":{"contents":"write","workflows":"write"}}' "$W/jwt2")" 201
check "  same push with workflows:write accepted (positive control)" g "$W/wf.tok" push -q origin airlock/wf
git checkout -q airlock/1-run

# ---- issues, pulls, reviews, merge ----
is "mint a ticket token" "$(mint "$W/tk" 2001 '{"repositories":["widget"],"permissions":{"issues":"write"}}')" 201
is "get issue #1" "$(api GET /repos/acme/widget/issues/1 "$W/tk.tok")" 200
is "  title" "$(jq -r .title "$W/body")" "Greeting should say hello"
is "comment on the issue" "$(api POST /repos/acme/widget/issues/1/comments "$W/tk.tok" '{"body":"working on it"}')" 201
is "  comment author is the bot" "$(jq -r .user.login "$W/body")" "airlock-bot[bot]"
is "list comments" "$(api GET /repos/acme/widget/issues/1/comments "$W/tk.tok"; echo; jq -r '.[0].body' "$W/body")" "$(printf '200\nworking on it')"
is "comment without body: 422" "$(api POST /repos/acme/widget/issues/1/comments "$W/tk.tok" '{"nobody":1}')" 422
is "ticket token cannot open a PR: 403" "$(api POST /repos/acme/widget/pulls "$W/tk.tok" '{"title":"t","head":"airlock/1-run","base":"main"}')" 403
is "PR with a missing head branch: 422" "$(api POST /repos/acme/widget/pulls "$W/git.tok" '{"title":"t","head":"nope","base":"main"}')" 422
is "  field" "$(jq -r '.errors[0].field' "$W/body")" head
is "open a PR" "$(api POST /repos/acme/widget/pulls "$W/git.tok" '{"title":"Say hello","head":"airlock/1-run","base":"main","body":"Fixes #1"}')" 201
PR=$(jq -r .number "$W/body")
is "  author is the bot" "$(jq -r .user.login "$W/body")" "airlock-bot[bot]"
is "second PR for the same head: 422" "$(api POST /repos/acme/widget/pulls "$W/git.tok" '{"title":"again","head":"airlock/1-run","base":"main"}')" 422
is "list PRs" "$(api GET /repos/acme/widget/pulls "$W/git.tok"; echo; jq -r 'length' "$W/body")" "$(printf '200\n1')"
is "list PRs by head OWNER:BRANCH" "$(api GET "/repos/acme/widget/pulls?head=acme:airlock/1-run" "$W/git.tok"; echo; jq -r 'length' "$W/body")" "$(printf '200\n1')"
is "list PRs by another head: none" "$(api GET "/repos/acme/widget/pulls?head=acme:other" "$W/git.tok"; echo; jq -r 'length' "$W/body")" "$(printf '200\n0')"
is "list PRs by another owner's head: none" "$(api GET "/repos/acme/widget/pulls?head=evil:airlock/1-run" "$W/git.tok"; echo; jq -r 'length' "$W/body")" "$(printf '200\n0')"
is "list PRs by base" "$(api GET "/repos/acme/widget/pulls?base=release" "$W/git.tok"; echo; jq -r 'length' "$W/body")" "$(printf '200\n0')"
is "PR files" "$(api GET "/repos/acme/widget/pulls/$PR/files" "$W/git.tok"; echo; jq -r '.[0].filename' "$W/body")" "$(printf '200\nREADME.md')"
is "self-approval refused: 422" "$(api POST "/repos/acme/widget/pulls/$PR/reviews" "$W/git.tok" '{"event":"APPROVE"}')" 422
like "  message" "$(jq -r '.errors[0]' "$W/body")" "Can not approve your own pull request"
is "merge without approval refused: 405" "$(api PUT "/repos/acme/widget/pulls/$PR/merge" "$W/git.tok" '{}')" 405
like "  message" "$(msg)" "At least 1 approving review is required"
curl -s -X POST -d "{\"repo\":\"acme/widget\",\"number\":$PR,\"user\":\"bob\",\"event\":\"APPROVE\"}" "$ADMIN/reviews" >/dev/null
is "approval by a non-owner: code owner still required (405)" "$(api PUT "/repos/acme/widget/pulls/$PR/merge" "$W/git.tok" '{}')" 405
like "  message" "$(msg)" "code owner review from @alice"
curl -s -X POST -d "{\"repo\":\"acme/widget\",\"number\":$PR,\"user\":\"alice\",\"event\":\"APPROVE\"}" "$ADMIN/reviews" >/dev/null
is "merge after code-owner approval (positive control)" "$(api PUT "/repos/acme/widget/pulls/$PR/merge" "$W/git.tok" '{}')" 200
is "  merged" "$(jq -r .merged "$W/body")" true
is "  main moved to the merge commit" "$(refs | jq -r '."refs/heads/main"')" "$(jq -r .sha "$W/body")"

# ---- branch protection, rulesets, contents ----
is "protection needs administration: 403" "$(api GET /repos/acme/widget/branches/main/protection "$W/git.tok")" 403
is "mint an admin token (app 2)" "$(mint "$W/adm" 2002 '{"repositories":["widget"],"permissions":{"administration":"write"}}' "$W/jwt2")" 201
is "classic protection of main" "$(api GET /repos/acme/widget/branches/main/protection "$W/adm.tok")" 200
is "  required approving reviews" "$(jq -r .required_pull_request_reviews.required_approving_review_count "$W/body")" 1
is "  code owners, stale dismissal, last push" "$(jq -c '.required_pull_request_reviews|[.require_code_owner_reviews,.dismiss_stale_reviews,.require_last_push_approval]' "$W/body")" '[true,true,true]'
is "  force pushes, deletions, enforce_admins" "$(jq -c '[.allow_force_pushes.enabled,.allow_deletions.enabled,.enforce_admins.enabled]' "$W/body")" '[false,false,true]'
is "ruleset-only branch: classic endpoint 404" "$(api GET /repos/acme/widget/branches/release/protection "$W/adm.tok")" 404
is "  message" "$(msg)" "Branch not protected"
is "rules for the ruleset branch" "$(api GET /repos/acme/widget/rules/branches/release "$W/git.tok"; echo; jq -c '[.[].type]|sort' "$W/body")" "$(printf '200\n["deletion","non_fast_forward","pull_request"]')"
is "no rules for an airlock/ branch" "$(api GET /repos/acme/widget/rules/branches/airlock/1-run "$W/git.tok"; echo; jq -r length "$W/body")" "$(printf '200\n0')"
is "rulesets list" "$(api GET /repos/acme/widget/rulesets "$W/git.tok"; echo; jq -r '.[0].id' "$W/body")" "$(printf '200\n42')"
# bypass_actors only for a caller who can edit the ruleset (as GitHub)
is "ruleset: bypass_actors hidden from a read-only token" "$(api GET /repos/acme/widget/rulesets/42 "$W/git.tok"; echo; jq -r 'has("bypass_actors")' "$W/body")" "$(printf '200\nfalse')"
is "ruleset: current_user_can_bypass for the caller's App" "$(jq -r .current_user_can_bypass "$W/body")" never
is "ruleset with bypass_actors (administration: write)" "$(api GET /repos/acme/widget/rulesets/42 "$W/adm.tok"; echo; jq -r '.bypass_actors[0].actor_type' "$W/body")" "$(printf '200\nOrganizationAdmin')"
is "PUT classic protection" "$(api PUT /repos/acme/widget/branches/release/protection "$W/adm.tok" '{"required_status_checks":null,"enforce_admins":true,"required_pull_request_reviews":{"required_approving_review_count":2},"restrictions":null,"allow_force_pushes":false}')" 200
is "  now visible on the classic endpoint" "$(api GET /repos/acme/widget/branches/release/protection "$W/adm.tok"; echo; jq -r .required_pull_request_reviews.required_approving_review_count "$W/body")" "$(printf '200\n2')"
is "PUT with a missing field: 422" "$(api PUT /repos/acme/widget/branches/release/protection "$W/adm.tok" '{"enforce_admins":true}')" 422
is "PUT without administration: 403" "$(api PUT /repos/acme/widget/branches/main/protection "$W/git.tok" '{}')" 403
is "CODEOWNERS through the contents API" "$(api GET /repos/acme/widget/contents/.github/CODEOWNERS "$W/git.tok"; echo; jq -r .content "$W/body" | base64 -d | grep -c '@alice')" "$(printf '200\n1')"

# ---- revocation and expiry ----
is "revoke: 204" "$(api DELETE /installation/token "$W/git.tok")" 204
is "revoked token: 401" "$(api GET /repos/acme/widget "$W/git.tok")" 401
is "  message" "$(msg)" "Bad credentials"
check_not "revoked token cannot fetch" g "$W/git.tok" ls-remote "$GITURL/acme/widget.git"
is "admin shows it revoked" "$(curl -s "$ADMIN/tokens" | jq -r --arg f "$fp" '.[]|select(.fingerprint==$f).state')" revoked
is "live token before the clock moves" "$(api GET /repos/acme/widget/issues/1 "$W/tk.tok")" 200
curl -s -X POST -d '{"advance":3601}' "$ADMIN/clock" >/dev/null
is "expired token: 401" "$(api GET /repos/acme/widget/issues/1 "$W/tk.tok")" 401
check_not "expired token cannot fetch" g "$W/tk.tok" ls-remote "$GITURL/acme/widget.git"
fp2=sha256:$(tokval "$W/tk.tok" | tr -d '\n' | sha256sum | cut -c1-12)
is "admin shows it expired" "$(curl -s "$ADMIN/tokens" | jq -r --arg f "$fp2" '.[]|select(.fingerprint==$f).state')" expired
is "old JWT is now expired too" "$(api GET /app "$W/jwt")" 401
jwt "$W/jwt3" "$W/keys/app.pem" 1001
is "fresh JWT on the moved clock works" "$(api GET /app "$W/jwt3")" 200

# ---- hostile input ----
head -c 2000000 /dev/zero | tr '\0' 'a' >"$W/big"
is "2 MB body: 413" "$("${CURL[@]}" -o /dev/null -w '%{http_code}' -H "@$W/jwt3" --data-binary "@$W/big" "$API/app/installations/2001/access_tokens")" 413
is "JSON array body: 400" "$(mint "$W/bad" 2001 '[1,2,3]' "$W/jwt3")" 400
is "wrong types: 422" "$(mint "$W/bad" 2001 '{"repositories":"widget"}' "$W/jwt3")" 422
printf 'Authorization: Bearer a.b.c\n' >"$W/junkjwt"
is "junk JWT: 401" "$(api GET /app "$W/junkjwt")" 401
check "forge still alive" kill -0 "$FORGE_PID"

done_testing
