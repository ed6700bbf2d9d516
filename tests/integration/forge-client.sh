#!/bin/bash
# The one forge client (src/lib/forge/ghapi.h, driven by ghapi-call) against
# the test forge made faithful (tests/forge-emulator/behave.c, pullfiles.c):
# pagination by Link with per_page, a 700-file pull request, a non-200 page
# and a page over the size cap (explicitly incomplete, never "0 files"),
# secondary and primary rate limits, a renamed repository's 301, and
# /pulls/N/files with patch, sha and renames (TAP, issue #21).
# Tokens never appear on a command line: ghapi-call reads them on stdin,
# curl from 0600 header files.
. "$(dirname "$0")/lib.sh"

SRC=${AIRLOCK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FORGE=${AIRLOCK_FORGE:-}
CALL=${GHAPI_CALL:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ] || [ -z "$CALL" ] || [ ! -x "$CALL" ]; then
  skip "airlock-forge or ghapi-call not built (AIRLOCK_FORGE, GHAPI_CALL)"
  done_testing
  exit
fi
for t in git curl openssl jq; do
  command -v "$t" >/dev/null || { skip "$t not installed"; done_testing; exit; }
done

umask 077
W=$T_TMP
"$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null
"$SRC/scripts/make-app-key.sh" "$W/keys" app >/dev/null
"$FORGE" --fixture "$SRC/tests/forge-emulator/fixtures/sample.json" --data "$W/data" \
  --tls-dir "$W/tls" --key "1001=$W/keys/app.pub.pem" --key "1002=$W/keys/app.pub.pem" \
  --ports-file "$W/ports.json" >"$W/forge.out" 2>"$W/forge.err" &
FORGE_PID=$!
on_exit "kill $FORGE_PID"
for _ in $(seq 1 200); do [ -s "$W/ports.json" ] && break; sleep 0.05; done
[ -s "$W/ports.json" ] || { fail "forge starts"; sed 's/^/#   /' "$W/forge.err"; done_testing; exit 1; }
P=$(jq -r .https "$W/ports.json")
ADMIN=http://127.0.0.1:$(jq -r .admin "$W/ports.json")
API=https://api.forge.test:$P
GITURL=https://forge.test:$P
CURL=(curl -sS --max-time 30 --cacert "$W/tls/ca.crt" --resolve "api.forge.test:$P:127.0.0.1")
admin() { curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' --data-binary "$2" "$ADMIN$1"; }
forge_now() { curl -s "$ADMIN/clock" | jq -r .now; }

# mint INSTALLATION BODY OUT: the token value into OUT (0600), via an app JWT
mint() {
  printf 'Authorization: Bearer %s\n' "$(JWT_NOW=$(forge_now) "$SRC/scripts/forge-jwt.sh" "$W/keys/app.pem" "$3")" >"$W/jwt.h"
  "${CURL[@]}" -H @"$W/jwt.h" -H 'Content-Type: application/json' -X POST --data-binary "$2" \
    "$API/app/installations/$1/access_tokens" | jq -r .token >"$4"
}
mint 2001 '{"repositories":["other"],"permissions":{"contents":"write","pull_requests":"write"}}' 1001 "$W/bot.tok"
mint 2002 '{"repositories":["other"],"permissions":{"contents":"write","workflows":"write","pull_requests":"write"}}' 1002 "$W/admin.tok"
printf 'Authorization: token %s\n' "$(cat "$W/bot.tok")" >"$W/bot.h"
# call [ghapi-call options] METHOD PATH: the client, as the bot
call() { "$CALL" --ca "$W/tls/ca.crt" --resolve "api.forge.test:$P:127.0.0.1" --token-stdin \
  "${@:1:$#-2}" "$API" "${@: -2:1}" "${@: -1}" <"$W/bot.tok"; }

# ---- a 700-file pull request with the workflow file sorted last ----------
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false
export GIT_SSL_CAINFO="$W/tls/ca.crt" GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@forge.test
export GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@forge.test
g() {
  env GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=http.curloptResolve "GIT_CONFIG_VALUE_0=forge.test:$P:127.0.0.1" \
    GIT_CONFIG_KEY_1=http.extraHeader \
    "GIT_CONFIG_VALUE_1=Authorization: Basic $(printf 'x-access-token:%s' "$(cat "$W/admin.tok")" | base64 -w0)" \
    git "$@"
}
g clone -q "$GITURL/acme/other.git" "$W/wc" || fail "clone acme/other"
(
  cd "$W/wc" && git checkout -q -b airlock/big &&
    mkdir -p .fill .github/workflows &&
    for i in $(seq -w 0 696); do printf 'line %s\n' "$i" >".fill/$i.txt"; done &&
    printf '\0\1\2binary\0' >.fill/blob.bin &&
    git mv README.md .fill/zz-readme.md &&
    printf 'on: push\njobs: {}\n' >.github/workflows/ci.yml &&
    git add -A && git commit -qm "700 files" && g push -q origin airlock/big
) >"$W/push.out" 2>&1 || { fail "push a 700-file branch"; sed 's/^/#   /' "$W/push.out"; }

out=$(call --body '{"title":"big","head":"airlock/big","base":"main","body":"700 files"}' POST /repos/acme/other/pulls)
is "POST with a JSON body (al_ghapi_request): 201" "$(jq -r .status <<<"$out")" 201
N=$(jq -r .json.number <<<"$out")
FILES=/repos/acme/other/pulls/$N/files

out=$(call --list 0 GET "$FILES")
is "list: complete" "$(jq -r .list_status <<<"$out")" complete
is "list: all 700 files" "$(jq -r .items <<<"$out")" 700
is "list: 7 pages of 100 (per_page=100 added)" "$(jq -r .pages <<<"$out")" 7
is "list: the workflow file, sorted last, is there" "$(jq -r '.names[-1]' <<<"$out")" .github/workflows/ci.yml
is "list: rc 0 only when complete" "$(jq -r .rc <<<"$out")" 0
out=$(call --list 650 GET "$FILES")
is "list capped by the caller: says capped, not complete" "$(jq -r .list_status <<<"$out")" capped
is "list capped: rc -1 (fails closed)" "$(jq -r .rc <<<"$out")" -1
like "list capped: the reason names the cap" "$(jq -r .why <<<"$out")" 'cap of 650'

# the forge as GitHub: per_page default 30, max 100, Link with rel="next"
"${CURL[@]}" -D "$W/h1" -o "$W/b1" -H @"$W/bot.h" "$API$FILES"
is "forge: default page is 30 items" "$(jq length "$W/b1")" 30
like "forge: Link rel=next to page 2" "$(grep -i '^link:' "$W/h1")" "<$API$FILES\\?page=2>; rel=\"next\""
like "forge: Link rel=last is page 24" "$(grep -i '^link:' "$W/h1")" 'page=24>; rel="last"'
"${CURL[@]}" -D "$W/h2" -o "$W/b2" -H @"$W/bot.h" "$API$FILES?per_page=500&page=7"
is "forge: per_page capped at 100 (page 7 holds the last 100)" "$(jq length "$W/b2")" 100
like "forge: the last page links back, not forward" "$(grep -i '^link:' "$W/h2")" 'rel="prev"'
if grep -qi 'rel="next"' "$W/h2"; then fail "forge: no next on the last page"; else ok "forge: no next on the last page"; fi
like "forge: x-ratelimit-* headers on every answer" "$(grep -i '^x-ratelimit-remaining' "$W/h2")" '[0-9]'

# the file entries as GitHub's diff-entry (every page, through curl)
for pg in 1 2 3 4 5 6 7; do "${CURL[@]}" -o "$W/p$pg.json" -H @"$W/bot.h" "$API$FILES?per_page=100&page=$pg"; done
jq -s add "$W"/p[1-7].json >"$W/all.json"
is "files: the 7 pages hold the 700 entries" "$(jq length "$W/all.json")" 700
wf=$(jq -c '.[]|select(.filename==".github/workflows/ci.yml")' "$W/all.json")
like "files: patch for a text file (hunk header)" "$(jq -r .patch <<<"$wf")" '^@@ -0,0 \+1,2 @@'
like "files: patch for a text file (the added line)" "$(jq -r .patch <<<"$wf")" '^\+on: push'
like "files: sha is the blob id" "$(jq -r .sha <<<"$wf")" '^[0-9a-f]{40}$'
is "files: the blob id is git's" "$(jq -r .sha <<<"$wf")" "$(git -C "$W/wc" rev-parse airlock/big:.github/workflows/ci.yml)"
is "files: blob_url, raw_url, contents_url present" "$(jq -r '[has("blob_url"),has("raw_url"),has("contents_url")]|all' <<<"$wf")" true
bin=$(jq -c '.[]|select(.filename==".fill/blob.bin")' "$W/all.json")
is "files: a binary file is listed" "$(jq -r .status <<<"$bin")" added
is "files: no patch for a binary file (as GitHub)" "$(jq -r 'has("patch")' <<<"$bin")" false
ren=$(jq -c '.[]|select(.filename==".fill/zz-readme.md")' "$W/all.json")
is "files: a rename is status renamed" "$(jq -r .status <<<"$ren")" renamed
is "files: with previous_filename" "$(jq -r .previous_filename <<<"$ren")" README.md
is "files: no remove+add pair for the rename" "$(jq -r '[.[]|select(.filename=="README.md")]|length' "$W/all.json")" 0

# ---- a non-200 page and a page over the size cap: incomplete, never "0 files"
admin /faults "{\"faults\":[{\"path\":\"$FILES\",\"page\":3,\"status\":404,\"message\":\"Not Found\"}]}" >/dev/null
out=$(call --list 0 GET "$FILES")
is "non-200 page: list status HTTP error" "$(jq -r .list_status <<<"$out")" "HTTP error"
is "non-200 page: rc -1" "$(jq -r .rc <<<"$out")" -1
is "non-200 page: the 200 items read are kept, and said" "$(jq -r .items <<<"$out")" 200
like "non-200 page: the reason names the page and the class" "$(jq -r .why <<<"$out")" 'page 3: not found \(HTTP 404'
like "non-200 page: says incomplete" "$(jq -r .why <<<"$out")" 'incomplete \(200 item'
admin /faults "{\"faults\":[{\"path\":\"$FILES\",\"page\":2,\"pad_bytes\":5000000}]}" >/dev/null
out=$(call --list 0 GET "$FILES")
is "page over the 4 MiB cap: list status page too big" "$(jq -r .list_status <<<"$out")" "page too big"
is "page over the cap: 100 items kept" "$(jq -r .items <<<"$out")" 100
like "page over the cap: the reason" "$(jq -r .why <<<"$out")" 'page 2: .*over 4194304 bytes'
admin /faults '{"faults":[]}' >/dev/null
out=$(call --list 0 GET "$FILES")
is "positive control: without the faults the list is complete again" "$(jq -r .list_status,.items <<<"$out" | tr '\n' ' ')" "complete 700 "

# ---- rate limits --------------------------------------------------------
admin /faults '{"faults":[{"path":"/repos/acme/other","status":429,"times":1}]}' >/dev/null
out=$(call --deadline-ms 3000 GET /repos/acme/other)
is "429 without Retry-After, short deadline: classified rate limited" "$(jq -r .class <<<"$out")" "rate limited"
like "429: never reported as not found" "$(jq -r .class,.message <<<"$out" | tr '\n' ' ')" 'rate limited You have exceeded a secondary rate limit'
like "429: the note says GitHub asks for at least a minute" "$(jq -r .note <<<"$out")" 'secondary rate limit without Retry-After: GitHub asks to wait 60s'
like "429: the note says why it was not retried, without contradicting itself" "$(jq -r .note <<<"$out")" \
  'GitHub asks to wait 60s, which does not fit in the [0-2]s left before the deadline; not retried$'
is "429: not retried early (the fault was hit once)" "$(curl -s "$ADMIN/faults" | jq '.[0].hits')" 1
admin /faults '{"faults":[{"path":"/repos/acme/other","status":429,"times":1}]}' >/dev/null
out=$(call --secondary-ms 1000 --deadline-ms 20000 GET /repos/acme/other)
is "429 without Retry-After within the deadline: waited, then 200" "$(jq -r .status,.rate_waits <<<"$out" | tr '\n' ' ')" "200 1 "
admin /faults '{"faults":[{"path":"/repos/acme/other","status":403,"retry_after":1,"times":1}]}' >/dev/null
out=$(call --deadline-ms 20000 GET /repos/acme/other)
is "403 secondary limit with Retry-After: 1: waited, then 200" "$(jq -r .status,.rate_waits <<<"$out" | tr '\n' ' ')" "200 1 "
admin /faults '{"faults":[{"path":"/repos/acme/other","status":403,"primary":true,"reset_in":1,"times":1}]}' >/dev/null
out=$(call --deadline-ms 20000 GET /repos/acme/other)
is "primary limit (remaining 0): waited until the reset, then 200" "$(jq -r .status,.rate_waits <<<"$out" | tr '\n' ' ')" "200 1 "
admin /faults '{"faults":[{"path":"/repos/acme/other","status":403,"message":"Resource not accessible by integration","times":1}]}' >/dev/null
out=$(call --deadline-ms 20000 GET /repos/acme/other)
is "a plain 403 is forbidden, not a rate limit (no wait)" "$(jq -r .class,.rate_waits <<<"$out" | tr '\n' ' ')" "forbidden 0 "
admin /faults '{"faults":[]}' >/dev/null

# ---- a renamed repository: 301 under the API base, followed and reported
admin /renames '{"from":"acme/old-other","to":"acme/other"}' >/dev/null
"${CURL[@]}" -D "$W/h3" -o /dev/null -H @"$W/bot.h" "$API/repos/acme/old-other"
like "forge: the old name answers 301 to /repositories/{id}" "$(grep -i '^location:' "$W/h3")" "$API/repositories/3002"
out=$(call GET /repos/acme/old-other)
is "301: followed to the repository" "$(jq -r .status,.json.full_name <<<"$out" | tr '\n' ' ')" "200 acme/other "
is "301: reported (moved_status)" "$(jq -r .moved_status <<<"$out")" 301
is "301: reported (moved_to)" "$(jq -r .moved_to <<<"$out")" /repositories/3002
out=$(call --list 0 GET "/repos/acme/old-other/pulls/$N/files")
is "301 on a list: every page read through the new location" "$(jq -r .list_status,.items,.moved_status <<<"$out" | tr '\n' ' ')" "complete 700 301 "

# ---- tag rulesets enforced on push ------------------------------------------
tagpush() { (cd "$W/wc" && g push -q origin "$@") >"$W/tag.out" 2>&1; }
(cd "$W/wc" && git tag v9.9 HEAD && git tag v9.8 HEAD~0 && git tag x1 HEAD) >/dev/null 2>&1
tagpush refs/tags/v9.8 && ok "control: a tag pushed before any tag ruleset" || fail "control: a tag pushed before any tag ruleset"
admin /rulesets '{"repo":"acme/other","ruleset":{"id":77,"name":"release tags","target":"tag","enforcement":"active",
  "conditions":{"ref_name":{"include":["refs/tags/v*"],"exclude":[]}},
  "rules":[{"type":"creation"},{"type":"update"},{"type":"deletion"}],"bypass_actors":[]}}' >/dev/null
if tagpush refs/tags/v9.9; then fail "tag ruleset: creating refs/tags/v9.9 is refused"; else ok "tag ruleset: creating refs/tags/v9.9 is refused"; fi
like "  with GitHub's GH013 message" "$(cat "$W/tag.out")" 'GH013: Repository rule violations found for refs/tags/v9.9'
like "  ... and the rule" "$(cat "$W/tag.out")" 'Cannot create ref due to creations being restricted'
if tagpush :refs/tags/v9.8; then fail "tag ruleset: deleting refs/tags/v9.8 is refused"; else ok "tag ruleset: deleting refs/tags/v9.8 is refused"; fi
like "  deletion message" "$(cat "$W/tag.out")" 'Cannot delete this protected ref'
if tagpush -f "HEAD~1:refs/tags/v9.8"; then fail "tag ruleset: moving refs/tags/v9.8 is refused"; else ok "tag ruleset: moving refs/tags/v9.8 is refused"; fi
tagpush refs/tags/x1 && ok "positive control: a tag outside refs/tags/v* is accepted" || fail "positive control: a tag outside refs/tags/v* is accepted"
admin /rulesets '{"repo":"acme/other","ruleset":{"id":77,"name":"release tags","target":"tag","enforcement":"active",
  "conditions":{"ref_name":{"include":["refs/tags/v*"],"exclude":[]}},
  "rules":[{"type":"creation"},{"type":"update"},{"type":"deletion"}],
  "bypass_actors":[{"actor_id":1002,"actor_type":"Integration","bypass_mode":"always"}]}}' >/dev/null
tagpush refs/tags/v9.9 && ok "positive control: the same push by an App on the bypass list is accepted" || fail "positive control: the same push by an App on the bypass list is accepted"

done_testing
