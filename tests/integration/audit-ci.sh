#!/bin/bash
# `airlock audit`'s ci.* criteria (issue #26) through the real binary and
# airlock-forge, fixture tests/forge-emulator/fixtures/audit-ci.json: the
# forge serves each repository's workflow files through the contents API,
# its Actions settings and its environments. Every repository FAILs (or is
# UNKNOWN) on exactly the ci.* criteria its workflow breaks, naming the
# file; each has a control beside it, the same repository with the
# smallest remedy applied, which passes (the probe notices, the remedy
# stops it). Tokens sit in 0600 files, never on a command line.
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
if [ ! -x "$(dirname "$AIRLOCK")/airlock-net" ]; then
  skip "airlock-net not built beside $AIRLOCK"
  done_testing
  exit 0
fi
unset GITHUB_TOKEN AIRLOCK_AUDIT_TOKEN
umask 077
W=$T_TMP
FIX=$SRC/tests/forge-emulator/fixtures/audit-ci.json

# ---- the fixture: each remedy differs from its case in the workflow only ----
src_of() { jq -r --arg r "$1" '.repositories[] | select(.full_name == $r) | .source' "$FIX"; }
wf_diff() { # CASE FIXED: the lines that differ between their workflow directories
  diff -r "$SRC/tests/forge-emulator/fixtures/$(src_of "$1")/.github" \
    "$SRC/tests/forge-emulator/fixtures/$(src_of "$2")/.github" | grep -c '^[<>]'
}
for pair in secret:secret-fixed oidc:oidc-fixed private-pr:private-pr-fixed; do
  a=ci/${pair%%:*} b=ci/${pair##*:}
  n=$(wf_diff "$a" "$b")
  if [ "$n" -ge 1 ] && [ "$n" -le 12 ]; then ok "fixture: $b is $a with a small remedy ($n lines)"
  else fail "fixture: $b is $a with a small remedy ($n lines)"; fi
done
is "fixture: public-pr is private-pr made public" "$(jq -c '[.repositories[] | select(.full_name == "ci/private-pr" or .full_name == "ci/public-pr") | {source, private}]' "$FIX")" \
  '[{"source":"ci-pr-readonly","private":true},{"source":"ci-pr-readonly","private":false}]'

# ---- the forge --------------------------------------------------------------
sh "$SRC/scripts/make-test-ca.sh" "$W/tls" >/dev/null 2>&1
sh "$SRC/scripts/make-app-key.sh" "$W/keys" >/dev/null
"$FORGE" --fixture "$FIX" --data "$W/forge" --tls-dir "$W/tls" --port 0 --admin-port 0 \
  --ports-file "$W/ports.json" --key 1001="$W/keys/app.pub.pem" >"$W/forge.log" 2>&1 &
FORGE_PID=$!
on_exit "kill $FORGE_PID"
for _ in $(seq 600); do [ -s "$W/ports.json" ] && break; sleep 0.1; done
if [ ! -s "$W/ports.json" ]; then
  fail "forge starts from audit-ci.json"; sed 's/^/#   /' "$W/forge.log"; done_testing; exit 1
fi
ok "forge starts from audit-ci.json"
API="https://127.0.0.1:$(jq -r .https "$W/ports.json")"
CA=$W/tls/ca.crt
export CURL_CA_BUNDLE=$CA GIT_SSL_CAINFO=$CA
cat >"$W/broker.yaml" <<EOB
app: {id: 1001, private_key: $W/keys/app.pem}
api: {url: "$API", ca_file: $CA, retries: 1, timeout: 5s}
repositories: [ci/secret]
EOB

audit() { # NAME REPO [ARGS...]: JSON in $W/NAME.json; prints the exit status
  local n=$1; shift
  "$AIRLOCK" audit --json "$@" -c "$W/broker.yaml" >"$W/$n.json" 2>"$W/$n.err"
  echo $?
}
notpass() { jq -r '[.criteria[] | select(.status != "PASS" and .status != "WARN") | "\(.id)=\(.status)"] | join(" ")' "$W/$1.json"; }
ev() { jq -r --arg id "$2" '.criteria[] | select(.id == $id) | .evidence' "$W/$1.json"; }
fix() { jq -r --arg id "$2" '.criteria[] | select(.id == $id) | .fix // ""' "$W/$1.json"; }
from() { jq -r --arg id "$2" '.criteria[] | select(.id == $id) | .evidence_from | join("|")' "$W/$1.json"; }
expect() { # NAME REPO WANT_EXIT WANT_NOTPASS
  local rc
  rc=$(audit "$1" "$2")
  is "$2: exit $3" "$rc" "$3"
  is "$2: does not hold on exactly: ${4:-nothing}" "$(notpass "$1")" "$4"
  if [ "$rc" = 2 ]; then sed 's/^/#   /' "$W/$1.err"; fi
}

# ---- Done when: push+pull_request with a secret; its remedy ------------------
expect secret ci/secret 1 "ci.no_secrets=FAIL"
like "ci/secret: names the file, the trigger, the job and the secret" "$(ev secret ci.no_secrets)" \
  '\.github/workflows/ci\.yml: on push \(every branch\), job `test`: `secrets\.DEPLOY_TOKEN`'
like "ci/secret: the pull request trigger too" "$(ev secret ci.no_secrets)" \
  'ci\.yml: on pull_request into main \(every base branch\), job `test`'
like "ci/secret: the fix is the smallest remedy" "$(fix secret ci.no_secrets)" \
  "branches-ignore: \['airlock/\*\*'\].*startsWith\(github\.head_ref, 'airlock/'\)"
like "ci/secret: the evidence names its reads" "$(from secret ci.no_secrets)" 'contents/\.github/workflows'
expect secretfix ci/secret-fixed 0 ""
like "ci/secret-fixed: says why nothing fires" "$(ev secretfix ci.no_secrets)" \
  "branches-ignore \['airlock/\*\*'\] excludes every run branch"

# ---- Done when: an OIDC deploy on every branch; its remedy -------------------
expect oidc ci/oidc 1 "ci.no_oidc=FAIL"
like "ci/oidc: names the file, the filter and the permission" "$(ev oidc ci.no_oidc)" \
  '\.github/workflows/deploy\.yml: on push \(branches \[.\*\*.\] selects airlock/[0-9]+-[0-9a-f]{8}\), job `deploy`: the workflow.s permissions: id-token: write'
expect oidcfix ci/oidc-fixed 0 ""
like "ci/oidc-fixed: main only selects no run branch" "$(ev oidcfix ci.no_oidc)" "branches \['main'\] selects no run branch"

# ---- Done when: a read-only PR workflow in a private repository --------------
expect priv ci/private-pr 1 "ci.private_quiet=FAIL"
like "ci/private-pr: names the file and says private" "$(ev priv ci.private_quiet)" \
  '\.github/workflows/ci\.yml: on pull_request into main .*, job `test`: runs in a private or internal repository'
like "ci/private-pr: rests on the repository's visibility" "$(from priv ci.private_quiet)" 'GET /repos/\{o\}/\{r\}: visibility'
expect pub ci/public-pr 0 ""
like "ci/public-pr (control: the same workflow, public): passes as public" "$(ev pub ci.private_quiet)" '^a public repository'
expect privfix ci/private-pr-fixed 0 ""

# ---- Done when: pull_request_target that checks out the PR head --------------
expect prt ci/prt 1 "ci.no_secrets=FAIL ci.read_only_token=FAIL ci.base_context=FAIL"
like "ci/prt: names the file and what brings the head in" "$(ev prt ci.base_context)" \
  '\.github/workflows/ci\.yml: on pull_request_target into main .*job `preview`: runs with the base.s context but takes the run.s `github\.event\.pull_request\.head`'
like "ci/prt: a write token by default" "$(ev prt ci.read_only_token)" 'pull_request_target gets a read/write GITHUB_TOKEN'
expect prtfix ci/prt-fixed 0 ""
like "ci/prt-fixed: the environment's reviewers gate it" "$(ev prtfix ci.base_context)" 'every job is guarded, waits on a reviewed environment'
# the same environment without reviewers is no gate (its secrets count)
expect prtnorev ci/prt-noreviewers 1 "ci.no_secrets=FAIL ci.read_only_token=FAIL ci.base_context=FAIL"
like "ci/prt-noreviewers: the environment's secrets" "$(ev prtnorev ci.no_secrets)" 'environment `pr-review` \(no required reviewers\)'

# ---- Done when: CI only on main and by hand passes ---------------------------
expect main ci/main-only 0 ""
like "ci/main-only: private, secrets, self-hosted, write default: nothing fires" "$(ev main ci.private_quiet)" \
  "push: branches \['main'\] selects no run branch; workflow_dispatch: by hand"

# ---- never a silent pass -------------------------------------------------------
expect broken ci/broken 1 "ci.no_secrets=UNKNOWN ci.no_oidc=UNKNOWN ci.read_only_token=UNKNOWN ci.hosted_runners=UNKNOWN ci.private_quiet=UNKNOWN ci.base_context=UNKNOWN"
like "ci/broken: says the file does not parse" "$(ev broken ci.no_secrets)" '\.github/workflows/ci\.yml does not parse'
# Actions disabled: the same workflow as ci/secret runs nowhere
expect off ci/actions-off 0 ""
like "ci/actions-off: says Actions is disabled" "$(ev off ci.no_secrets)" 'GitHub Actions is disabled'

# ---- the run prefix is the policy's ---------------------------------------------
expect pfx ci/prefix 1 "ci.no_secrets=FAIL"
rc=$(audit pfx2 ci/prefix --run-prefix bot/)
is "ci/prefix with --run-prefix bot/: exit 0 (control)" "$rc" 0
is "  the report names the prefix" "$(jq -r .run_prefix "$W/pfx2.json")" bot/
is "a bad --run-prefix is refused: exit 2" "$(audit badpfx ci/secret --run-prefix 'x')" 2

# ---- the text report -------------------------------------------------------------
"$AIRLOCK" audit ci/secret -c "$W/broker.yaml" >"$W/secret.txt" 2>&1
like "text report: the ci.no_secrets line" "$(grep -E '^FAIL +ci\.no_secrets' "$W/secret.txt")" 'no workflow gives the run.s code a secret'
like "text report: its fix" "$(grep -A3 -E '^FAIL +ci\.no_secrets' "$W/secret.txt" | grep 'fix:')" "branches-ignore"
done_testing
