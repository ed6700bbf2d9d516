#!/usr/bin/env bash
# The GitLab test forge (issue #30 item 6): projects by id and encoded
# path, per-project access tokens minted with scopes and expiry, used,
# revoked and then 401, a Draft merge request with remove_source_branch.
# Every refusal beside its control (the same request that passes).
. "$(dirname "$0")/lib.sh"
FORGE=${GITLAB_FORGE:?GITLAB_FORGE is set by meson}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v curl >/dev/null || { skip "curl is not installed"; done_testing; exit 0; }
command -v jq >/dev/null || { skip "jq is not installed"; done_testing; exit 0; }

D=$T_TMP/gl
mkdir -p "$D"
umask 077
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token"
# the project's bare repository, one commit on main
export GIT_CONFIG_NOSYSTEM=1 HOME=$D GIT_TERMINAL_PROMPT=0
git init -q --bare -b main "$D/repos/acme/tools/tally.git"
git init -q -b main "$D/seed"
echo one >"$D/seed/a.txt"
git -C "$D/seed" add a.txt
git -C "$D/seed" -c user.name=t -c user.email=t@test commit -qm one
git -C "$D/seed" push -q "$D/repos/acme/tools/tally.git" main
"$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$D/token" \
  --ports-file "$D/ports.json" --repos "$D/repos" >"$D/forge.log" 2>&1 &
FPID=$!
on_exit "kill $FPID"
for _ in $(seq 1 100); do [ -s "$D/ports.json" ] && break; kill -0 $FPID 2>/dev/null || break; sleep 0.1; done
PORT=$(jq -r .http "$D/ports.json" 2>/dev/null)
[ -n "$PORT" ] && [ "$PORT" != null ] || { fail "the forge started"; sed 's/^/# /' "$D/forge.log"; done_testing; exit 1; }
API=http://127.0.0.1:$PORT/api/v4

# curl with a header file (no token on a command line): req TOKENFILE METHOD PATH [JSON]
req() {
  local tf=$1 m=$2 p=$3 body=${4:-}
  printf 'PRIVATE-TOKEN: %s\n' "$(cat "$tf")" >"$D/h"
  if [ -n "$body" ]; then
    curl -s -o "$D/out" -w '%{http_code}' -X "$m" -H @"$D/h" -H 'Content-Type: application/json' \
      --data-binary "$body" "$API$p"
  else
    curl -s -o "$D/out" -w '%{http_code}' -X "$m" -H @"$D/h" "$API$p"
  fi
}
bearer() {
  printf 'Authorization: Bearer %s\n' "$(cat "$1")" >"$D/h"
  curl -s -o "$D/out" -w '%{http_code}' -H @"$D/h" "$API$2"
}
printf 'glpat-not-a-token-of-this-forge\n' >"$D/bad"

is "the Maintainer reads the project by id" "$(req "$D/token" GET /projects/42)" 200
is "... by its encoded full path, any case" "$(req "$D/token" GET /projects/ACME%2Ftools%2FTally)" 200
is "... the answer is the project" "$(jq -r .path_with_namespace "$D/out")" acme/tools/tally
is "an unknown token is 401 (control: the Maintainer's above)" "$(req "$D/bad" GET /projects/42)" 401
is "no token is 401" "$(curl -s -o /dev/null -w '%{http_code}' "$API/projects/42")" 401

TOM=$(date -u -d tomorrow +%Y-%m-%d)
YEST=$(date -u -d yesterday +%Y-%m-%d)
mint() { req "$D/token" POST /projects/42/access_tokens "$1"; }
is "a token without expires_at is refused" \
  "$(mint '{"name":"airlock-run","scopes":["read_repository"],"access_level":30}')" 400
is "a token expiring yesterday is refused" \
  "$(mint "{\"name\":\"airlock-run\",\"scopes\":[\"api\"],\"access_level\":30,\"expires_at\":\"$YEST\"}")" 400
is "an unknown scope is refused" \
  "$(mint "{\"name\":\"airlock-run\",\"scopes\":[\"sudo\"],\"access_level\":30,\"expires_at\":\"$TOM\"}")" 400
is "the run's token: api + repository scopes, Developer, expires tomorrow (control)" \
  "$(mint "{\"name\":\"airlock-run\",\"scopes\":[\"api\",\"read_repository\",\"write_repository\"],\"access_level\":30,\"expires_at\":\"$TOM\"}")" 201
jq -r .token "$D/out" >"$D/run"
TID=$(jq -r .id "$D/out")
is "... its expiry and level as asked" "$(jq -r '.expires_at + " " + (.access_level|tostring)' "$D/out")" "$TOM 30"
is "a project token cannot mint another" \
  "$(req "$D/run" POST /projects/42/access_tokens "{\"name\":\"x\",\"scopes\":[\"api\"],\"expires_at\":\"$TOM\"}")" 403

is "the run's token reads its project" "$(req "$D/run" GET /projects/acme%2Ftools%2Ftally)" 200
is "... and through Authorization: Bearer" "$(bearer "$D/run" /projects/42/issues/7)" 200
is "... but not another project (404, as GitLab)" "$(req "$D/run" GET /projects/43)" 404
is "... nor by that one's path" "$(req "$D/run" GET /projects/acme%2Fother)" 404
is "the Maintainer reads project 43 (control)" "$(req "$D/token" GET /projects/43)" 200
is "protected branches of the fixture" "$(req "$D/run" GET /projects/42/protected_branches)" 200
is "... push No one" "$(jq -r '.[0].push_access_levels[0].access_level' "$D/out")" 0
is "approval rules" "$(req "$D/run" GET /projects/42/approval_rules)" 200
is "push rule" "$(req "$D/run" GET /projects/42/push_rule)" 200
is "... branch_name_regex" "$(jq -r .branch_name_regex "$D/out")" '^(main|airlock/.*)$'

is "a note on the issue" "$(req "$D/run" POST /projects/42/issues/7/notes '{"body":"working on it"}')" 201
is "a note without body is refused" "$(req "$D/run" POST /projects/42/issues/7/notes '{}')" 400
is "a note on an unknown issue is 404" "$(req "$D/run" POST /projects/42/issues/8/notes '{"body":"x"}')" 404

MR='{"source_branch":"airlock/7-ab12","target_branch":"main","title":"Draft: tally: count empty lines","description":"by airlock","remove_source_branch":true}'
is "the Draft merge request" "$(req "$D/run" POST /projects/42/merge_requests "$MR")" 201
is "... is a draft that removes its branch" "$(jq -r '"\(.draft) \(.force_remove_source_branch) \(.iid)"' "$D/out")" "true true 1"
is "a second open MR of the branch is 409" "$(req "$D/run" POST /projects/42/merge_requests "$MR")" 409
is "auto-merge on creation is refused" "$(req "$D/run" POST /projects/42/merge_requests \
  '{"source_branch":"airlock/7-cd","target_branch":"main","title":"x","merge_when_pipeline_succeeds":true}')" 400
is "the run's MR listed by source_branch" "$(req "$D/run" GET '/projects/42/merge_requests?source_branch=airlock%2F7-ab12')" 200
is "... one" "$(jq -r length "$D/out")" 1

# git smart HTTP with project tokens: the password read from a file by a
# credential helper, never on a command line
gitc() { local tf=$1; shift; git -c credential.helper= -c "credential.helper=!f() { echo username=oauth2; echo password=\$(cat $tf); }; f" "$@"; }
GURL=http://127.0.0.1:$PORT/acme/tools/tally.git
mint "{\"name\":\"git\",\"scopes\":[\"read_repository\",\"write_repository\"],\"access_level\":30,\"expires_at\":\"$TOM\"}" >/dev/null
jq -r .token "$D/out" >"$D/gtok"; GTID=$(jq -r .id "$D/out")
mint "{\"name\":\"ro\",\"scopes\":[\"read_repository\"],\"access_level\":30,\"expires_at\":\"$TOM\"}" >/dev/null
jq -r .token "$D/out" >"$D/rotok"
check "git clone over smart HTTP with the project token" gitc "$D/gtok" clone -q "$GURL" "$D/clone"
echo two >"$D/clone/b.txt"
git -C "$D/clone" add b.txt && git -C "$D/clone" -c user.name=t -c user.email=t@test commit -qm two
check "git push of the run branch with write_repository (control)" \
  gitc "$D/gtok" -C "$D/clone" push -q origin HEAD:refs/heads/airlock/7-ab12
is "... the branch is on the forge" "$(git -C "$D/repos/acme/tools/tally.git" rev-parse airlock/7-ab12)" "$(git -C "$D/clone" rev-parse HEAD)"
OUT=$(gitc "$D/rotok" -C "$D/clone" push -q origin HEAD:refs/heads/airlock/7-ro 2>&1) && fail "git push with read_repository only is refused" || like "git push with read_repository only is refused (403)" "$OUT" "403|not allowed"
check "... while its clone works (control)" gitc "$D/rotok" clone -q "$GURL" "$D/clone-ro"
check_not "git clone without a credential is refused" git -c credential.helper= clone -q "$GURL" "$D/clone-none"
is "the git token revoked" "$(req "$D/token" DELETE "/projects/42/access_tokens/$GTID")" 204
OUT=$(gitc "$D/gtok" -C "$D/clone" push -q origin HEAD:refs/heads/airlock/7-cd 2>&1) && fail "... then git push is refused" || like "... then git push is refused (401)" "$OUT" "Authentication failed|401"
check_not "... and git fetch" gitc "$D/gtok" -C "$D/clone" fetch -q origin

# "Delete repository branch": the run branch goes (204), main is refused
is "the single branch route reads the pushed branch from git" "$(req "$D/run" GET /projects/42/repository/branches/airlock%2F7-ab12)" 200
is "deleting the default (protected) branch is refused (403)" "$(req "$D/run" DELETE /projects/42/repository/branches/main)" 403
is "deleting the run branch: 204" "$(req "$D/run" DELETE /projects/42/repository/branches/airlock%2F7-ab12)" 204
check_not "... and it is gone from git" git -C "$D/repos/acme/tools/tally.git" rev-parse --verify --quiet refs/heads/airlock/7-ab12
is "... a second delete is 404" "$(req "$D/run" DELETE /projects/42/repository/branches/airlock%2F7-ab12)" 404
check "control: main is still there" git -C "$D/repos/acme/tools/tally.git" rev-parse --verify --quiet refs/heads/main
is "the token is alive before revocation (control)" "$(req "$D/run" GET /personal_access_tokens/self)" 200
is "the run's token revoked" "$(req "$D/token" DELETE "/projects/42/access_tokens/$TID")" 204
is "... then 401 on self" "$(req "$D/run" GET /personal_access_tokens/self)" 401
is "... and on the project" "$(req "$D/run" GET /projects/42)" 401
is "... and through Bearer" "$(bearer "$D/run" /projects/42)" 401
is "a second revocation is 400" "$(req "$D/token" DELETE "/projects/42/access_tokens/$TID")" 400
is "the Maintainer's token still works (control)" "$(req "$D/token" GET /projects/42)" 200
# forge/gitlab.c, the driver's token life, against this forge
if [ -n "${GITLAB_DRIVER:-}" ]; then
  "$GITLAB_DRIVER" "$API" "$D/token" acme/tools/tally airlock/7-ef34 >"$D/drv" 2>&1
  DRV=$(cat "$D/drv")
  like "the driver mints a Developer token expiring tomorrow" "$DRV" 'minted yes level=30 tomorrow=1'
  like "... which reads the project" "$DRV" 'read 200'
  like "... and opens the Draft MR" "$DRV" 'mr [0-9]+'
  like "control: a revocation of another id leaves it alive, and the confirmation says so" \
    "$DRV" 'control-revoke rc=-1 confirmed=0'
  like "... the message names the live token" "$DRV" 'still answers HTTP 200'
  like "the revocation is confirmed by the 401" "$DRV" 'revoke rc=0 confirmed=1'
  like "... and the token is 401 afterwards" "$DRV" 'after 401'
  MRS=$(req "$D/token" GET '/projects/42/merge_requests?source_branch=airlock%2F7-ef34'; jq -r '.[0] | "\(.draft) \(.force_remove_source_branch) \(.title)"' "$D/out")
  is "the driver's MR is a Draft that removes its branch" "$MRS" "200true true Draft: tally: count empty lines"
else
  skip "GITLAB_DRIVER not built"
fi
# the bootstrap token file: a 64-hex token is used whole (it was cut at 63
# bytes and then refused), a first line past the buffer is refused by name
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token64"
"$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$D/token64" \
  --ports-file "$D/ports64.json" --repos "$D/repos" >"$D/forge64.log" 2>&1 &
F64=$!
on_exit "kill $F64"
for _ in $(seq 1 100); do [ -s "$D/ports64.json" ] && break; kill -0 $F64 2>/dev/null || break; sleep 0.1; done
P64=$(jq -r .http "$D/ports64.json" 2>/dev/null)
printf 'PRIVATE-TOKEN: %s\n' "$(cat "$D/token64")" >"$D/h64"
is "a 64-hex Maintainer token is read whole (the project answers 200 to it)" \
  "$(curl -s -o /dev/null -w '%{http_code}' -H @"$D/h64" "http://127.0.0.1:$P64/api/v4/projects/42")" 200
printf 'PRIVATE-TOKEN: %s\n' "$(head -c 63 "$D/token64")" >"$D/h63"
is "control: its first 63 bytes are 401" \
  "$(curl -s -o /dev/null -w '%{http_code}' -H @"$D/h63" "http://127.0.0.1:$P64/api/v4/projects/42")" 401
head -c 200 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$D/token400"
OUT=$(timeout 20 "$FORGE" --fixture "$SRC/tests/gitlab-forge/fixtures/sample.json" --token-file "$D/token400" \
  --ports-file "$D/ports400.json" --repos "$D/repos" 2>&1); RC=$?
is "a 400-byte token line is refused (exit 2)" "$RC" 2
like "... naming the file and the rule" "$OUT" "token file .*token400: its first line is over 254 bytes"
if grep -qF "$(cat "$D/token")" "$D/forge.log"; then fail "the forge's log holds no token"; else ok "the forge's log holds no token"; fi
done_testing
