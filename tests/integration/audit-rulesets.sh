#!/bin/bash
# `airlock audit` on rulesets as GitHub shows them to a read-only caller
# (issue #21): bypass_actors hidden (shown only with Administration: write),
# current_user_can_bypass asked as the run's App, organisation rulesets in
# the effective rules, tag rulesets judged rule by rule, a secondary rate
# limit and a renamed repository. The forge (fixtures/audit.json) is changed
# through its admin listener (POST /rulesets, /faults, /renames); every
# failing case has its passing twin (positive control). Tokens never appear
# on a command line: a 0600 file, read into AIRLOCK_AUDIT_TOKEN.
. "$(dirname "$0")/lib.sh"
SRC=${AIRLOCK_SRC:?}
FORGE=${AIRLOCK_FORGE:-}
if [ -z "$FORGE" ] || [ ! -x "$FORGE" ]; then
  skip "airlock-forge not built (-Dforge=false)"
  done_testing
  exit 0
fi
for p in openssl curl jq; do
  command -v $p >/dev/null || { skip "$p missing"; done_testing; exit 0; }
done
[ -x "$(dirname "$AIRLOCK")/airlock-net" ] || { skip "airlock-net not built beside $AIRLOCK"; done_testing; exit 0; }
unset GITHUB_TOKEN AIRLOCK_AUDIT_TOKEN

umask 077
W=$T_TMP
FIX=$SRC/tests/forge-emulator/fixtures/audit.json
sh "$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null 2>&1
sh "$SRC/scripts/make-app-key.sh" "$W/keys" >/dev/null
"$FORGE" --fixture "$FIX" --data "$W/forge" --tls-dir "$W/tls" --port 0 --admin-port 0 \
  --ports-file "$W/ports.json" --key 1001="$W/keys/app.pub.pem" >"$W/forge.log" 2>&1 &
FORGE_PID=$!
on_exit "kill $FORGE_PID"
for _ in $(seq 600); do [ -s "$W/ports.json" ] && break; sleep 0.1; done
[ -s "$W/ports.json" ] || { fail "forge starts"; done_testing; exit 1; }
API="https://127.0.0.1:$(jq -r .https "$W/ports.json")"
ADMIN="http://127.0.0.1:$(jq -r .admin "$W/ports.json")"
CA=$W/tls/ca.crt
export CURL_CA_BUNDLE=$CA GIT_SSL_CAINFO=$CA
admin() { curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' --data-binary "$2" "$ADMIN$1"; }
forge_now() { curl -s "$ADMIN/clock" | jq -r .now; }

cat >"$W/broker.yaml" <<EOF
app: {id: 1001, private_key: $W/keys/app.pem}
api: {url: "$API", ca_file: $CA, retries: 1, timeout: 5s, max_rate_limit_wait: 2s}
repositories: [acme/ruleset-only]
EOF

# The read-only audit credential: administration/contents/metadata READ on
# the repositories (no write anywhere), as an operator would give it.
printf 'Authorization: Bearer %s\n' "$(JWT_NOW=$(forge_now) "$SRC/scripts/forge-jwt.sh" "$W/keys/app.pem" 1001)" >"$W/jwt.h"
curl -sS --cacert "$CA" -H @"$W/jwt.h" -H 'Content-Type: application/json' -X POST \
  --data-binary '{"repositories":["ruleset-only","noprot","pass"],"permissions":{"administration":"read","contents":"read"}}' \
  "$API/app/installations/2001/access_tokens" | jq -r .token >"$W/ro.tok"
[ -s "$W/ro.tok" ] && ok "a read-only audit token" || fail "a read-only audit token"
# the forge hides bypass_actors from it (as GitHub)
printf 'Authorization: Bearer %s\n' "$(cat "$W/ro.tok")" >"$W/ro.h"
is "forge: bypass_actors hidden from the read-only token" \
  "$(curl -sS --cacert "$CA" -H @"$W/ro.h" "$API/repos/acme/ruleset-only/rulesets/60" | jq -r 'has("bypass_actors")')" false

audit() { # NAME REPO [ARGS...]: JSON in $W/NAME.json; prints the exit status
  local n=$1; shift
  AIRLOCK_AUDIT_TOKEN=$(cat "$W/ro.tok") "$AIRLOCK" audit --json "$@" >"$W/$n.json" 2>"$W/$n.err"
  echo $?
}
status_of() { jq -r --arg id "$2" '.criteria[] | select(.id == $id) | .status' "$W/$1.json"; }
evidence_of() { jq -r --arg id "$2" '.criteria[] | select(.id == $id) | .evidence' "$W/$1.json"; }
from_of() { jq -r --arg id "$2" '.criteria[] | select(.id == $id) | .evidence_from | join(" | ")' "$W/$1.json"; }
notpass() { jq -r '[.criteria[] | select(.status != "PASS" and .status != "WARN") | "\(.id)=\(.status)"] | join(" ")' "$W/$1.json"; }
ruleset60() { # BYPASS_ACTORS_JSON: ruleset 60 of acme/ruleset-only with these bypass actors
  admin /rulesets "$(jq -c --argjson ba "$1" '.repositories[] | select(.full_name == "acme/ruleset-only")
    | {repo: .full_name, ruleset: (.rulesets[] | select(.id == 60) | .bypass_actors = $ba)}' "$FIX")" >/dev/null
}

# ---- 1. hidden bypass_actors: the bot's own answer decides -----------------
is "hidden bypass list, the App cannot bypass: the audit holds (exit 0)" \
  "$(audit ro acme/ruleset-only -c "$W/broker.yaml")" 0
is "  nothing fails or is unknown" "$(notpass ro)" ""
is "  bot.no_bypass PASS" "$(status_of ro bot.no_bypass)" PASS
like "  ... from current_user_can_bypass asked as the App" "$(evidence_of ro bot.no_bypass)" \
  'ruleset 60 \(main protection, Repository\): current_user_can_bypass = never, asked as the App \(its bypass list is hidden'
like "  the report names that read in evidence_from" "$(from_of ro bot.no_bypass)" 'asked as the run.s App'
like "  and how it asked (a metadata-only App token, revoked)" "$(jq -r .as_app "$W/ro.json")" \
  '^installation token sha256:[0-9a-f]{12} of the run.s App \(metadata: read\), revoked$'
is "  admins.enforced: a WARN (GitHub hides the human bypass list)" "$(status_of ro admins.enforced)" WARN
like "  ... naming the permission that would show it" "$(evidence_of ro admins.enforced)" 'shown only with Administration: write on the repository'
like "  the read-only credential is what read the rest" "$(jq -r .credentials "$W/ro.json")" '^token from AIRLOCK_AUDIT_TOKEN'

ruleset60 '[{"actor_id":1001,"actor_type":"Integration","bypass_mode":"always"}]'
is "positive control: the App on the (hidden) bypass list: exit 1" "$(audit ro-always acme/ruleset-only -c "$W/broker.yaml")" 1
is "  fails on exactly bot.no_bypass" "$(notpass ro-always)" "bot.no_bypass=FAIL"
like "  ... because the App itself says always" "$(evidence_of ro-always bot.no_bypass)" 'current_user_can_bypass = always, asked as the App'
ruleset60 '[{"actor_id":1001,"actor_type":"Integration","bypass_mode":"pull_request"}]'
audit ro-pr acme/ruleset-only -c "$W/broker.yaml" >/dev/null
is "bypass_mode pull_request (pull_requests_only): FAIL" "$(status_of ro-pr bot.no_bypass)" FAIL
like "  ... says pull_requests_only" "$(evidence_of ro-pr bot.no_bypass)" 'current_user_can_bypass = pull_requests_only'
ruleset60 '[{"actor_id":1001,"actor_type":"Integration","bypass_mode":"exempt"}]'
audit ro-ex acme/ruleset-only -c "$W/broker.yaml" >/dev/null
is "bypass_mode exempt: FAIL" "$(status_of ro-ex bot.no_bypass)" FAIL
like "  ... says exempt" "$(evidence_of ro-ex bot.no_bypass)" 'current_user_can_bypass = exempt'
ruleset60 '[{"actor_id":4242,"actor_type":"Integration","bypass_mode":"always"}]'
audit ro-other acme/ruleset-only -c "$W/broker.yaml" >/dev/null
is "another App on the bypass list, not ours: PASS" "$(status_of ro-other bot.no_bypass)" PASS
ruleset60 '[]'

# Without the run's App the bot's own answer cannot be asked: UNKNOWN, with
# the permission that would reveal the list instead.
rc=$(audit noapp acme/ruleset-only --api "$API" --cacert "$CA" --app airlock-bot --app-id 1001)
is "no App config, hidden bypass list: bot.no_bypass UNKNOWN (never a pass)" "$(status_of noapp bot.no_bypass)" UNKNOWN
like "  ... names the permission that would show the list" "$(evidence_of noapp bot.no_bypass)" 'shown only with Administration: write on the repository'
like "  ... and says why the App was not asked" "$(evidence_of noapp bot.no_bypass)" 'no broker config'

# ---- 2. organisation rulesets, in the effective rules ------------------------
admin /rulesets '{"org":"acme","ruleset":{"id":900,"name":"org main","target":"branch","enforcement":"active",
  "conditions":{"ref_name":{"include":["~DEFAULT_BRANCH"],"exclude":[]},"repository_name":{"include":["ruleset-*"],"exclude":[]}},
  "rules":[{"type":"non_fast_forward"}],
  "bypass_actors":[{"actor_id":1001,"actor_type":"Integration","bypass_mode":"always"}]}}' >/dev/null
is "forge: the org ruleset is in the branch's rules" \
  "$(curl -sS --cacert "$CA" -H @"$W/ro.h" "$API/repos/acme/ruleset-only/rules/branches/main" | jq -r '[.[]|select(.ruleset_id==900)|.ruleset_source_type]|unique|join(",")')" Organization
is "an organisation ruleset the App can bypass: exit 1" "$(audit org acme/ruleset-only -c "$W/broker.yaml")" 1
is "  fails on exactly bot.no_bypass" "$(notpass org)" "bot.no_bypass=FAIL"
like "  ... names the organisation ruleset" "$(evidence_of org bot.no_bypass)" 'ruleset 900 \(org main, Organization\): current_user_can_bypass = always'
admin /rulesets '{"org":"acme","ruleset":{"id":900,"name":"org main","target":"branch","enforcement":"active",
  "conditions":{"ref_name":{"include":["~DEFAULT_BRANCH"],"exclude":[]},"repository_name":{"include":["ruleset-*"],"exclude":[]}},
  "rules":[{"type":"non_fast_forward"}],"bypass_actors":[]}}' >/dev/null
is "positive control: the same org ruleset without the App: exit 0" "$(audit org-ok acme/ruleset-only -c "$W/broker.yaml")" 0
admin /rulesets '{"org":"acme","delete":900}' >/dev/null

# An org ruleset alone protects a repository without any rule of its own.
is "acme/noprot without org rules: branch.protected FAIL" "$(audit np0 acme/noprot -c "$W/broker.yaml"; status_of np0 branch.protected)" "$(printf '1\nFAIL')"
admin /rulesets "$(jq -c '{org: "acme", ruleset: ((.repositories[] | select(.full_name == "acme/ruleset-only") | .rulesets[] | select(.id == 60))
  + {id: 901, name: "org protection", conditions: {ref_name: {include: ["~DEFAULT_BRANCH"], exclude: []}, repository_name: {include: ["noprot"], exclude: []}}})}' "$FIX")" >/dev/null
is "acme/noprot with an org ruleset: the audit holds (exit 0)" "$(audit np1 acme/noprot -c "$W/broker.yaml")" 0
like "  reviews.approvals rests on the org ruleset" "$(evidence_of np1 reviews.approvals)" 'ruleset 901: pull_request, required_approving_review_count = 1'
admin /rulesets '{"org":"acme","delete":901}' >/dev/null

# ---- 3. tag rulesets: creation, update AND deletion --------------------------
is "tag ruleset with creation+update+deletion, App cannot bypass: PASS" "$(status_of ro tags.protected)" PASS
like "  evidence lists each rule" "$(evidence_of ro tags.protected)" 'creation restricted, update restricted, deletion restricted; the App cannot bypass it'
tag50() { admin /rulesets "$(jq -c --argjson rules "$1" --argjson ba "$2" '.repositories[] | select(.full_name == "acme/ruleset-only")
  | {repo: .full_name, ruleset: (.rulesets[] | select(.id == 50) | .rules = $rules | .bypass_actors = $ba)}' "$FIX")" >/dev/null; }
tag50 '[{"type":"creation"},{"type":"deletion"}]' '[]'
audit tag-noupd acme/ruleset-only -c "$W/broker.yaml" >/dev/null
is "a tag ruleset without update: WARN" "$(status_of tag-noupd tags.protected)" WARN
like "  ... says exactly which rule is missing" "$(evidence_of tag-noupd tags.protected)" 'creation restricted, update NOT restricted, deletion restricted'
tag50 '[{"type":"creation"},{"type":"update"},{"type":"deletion"}]' '[{"actor_id":1001,"actor_type":"Integration","bypass_mode":"always"}]'
audit tag-byp acme/ruleset-only -c "$W/broker.yaml" >/dev/null
is "a tag ruleset the App can bypass: WARN" "$(status_of tag-byp tags.protected)" WARN
like "  ... says the App can bypass it" "$(evidence_of tag-byp tags.protected)" 'the App CAN bypass it'
tag50 '[{"type":"creation"},{"type":"update"},{"type":"deletion"}]' '[]'

# ---- 4. a secondary rate limit is said, not "does not exist" ---------------
admin /faults '{"faults":[{"path":"/repos/acme/ruleset-only","status":429}]}' >/dev/null
rc=$(audit rl acme/ruleset-only -c "$W/broker.yaml")
is "429 without Retry-After: the audit cannot run (exit 2)" "$rc" 2
like "  says rate limited, and GitHub's minute" "$(cat "$W/rl.err")" 'rate limited \(HTTP 429: You have exceeded a secondary rate limit.*GitHub asks to wait 60s'
if grep -q 'does not exist' "$W/rl.err"; then fail "  never 'does not exist'"; else ok "  never 'does not exist'"; fi
admin /faults '{"faults":[]}' >/dev/null

# ---- 5. a renamed repository: followed under the API base, and said ---------
admin /renames '{"from":"acme/old-rules","to":"acme/ruleset-only"}' >/dev/null
rc=$(audit moved acme/old-rules --api "$API" --cacert "$CA" --app airlock-bot --app-id 1001)
is "renamed repository: the reads follow the 301 (branch.protected PASS)" "$(status_of moved branch.protected)" PASS
like "  the report says it was redirected" "$(jq -r .redirected "$W/moved.json")" 'GET /repos/acme/old-rules answered 301 .*/repositories/4004'

active=$(curl -s "$ADMIN/tokens" | jq '[.[] | select(.state == "active")] | length')
is "every token the audit minted was revoked (only the test's read-only token remains)" "$active" 1
done_testing
