#!/bin/bash
# Sealed credentials (issue #15): every attack on the escape budget, first
# against the forge's own protection (credentials.mode: env, the positive
# control: each attack really lands on the test forge), then under
# `credentials.mode: sealed`, where airlock's gateway must refuse each one
# with its reason in the run record. Plus: real git (protocol v0 and v2)
# through `airlock ticket`, API reads the way gh/curl make them, no real
# token anywhere in the sandbox (cred.run-tokens, with its env-mode
# control), and exactly one PR, made by the supervisor.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "ticket tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
AGENTS=$AIRLOCK_SRC/examples/agents
MAIN0=$(main_sha)
rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
npulls() { admin /pulls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# policy_mode FILE MODE: the test policy with credentials.mode MODE and the
# hostile agent's own token passed in (process.secret_env: a token-like
# name in env_pass is refused, issue 27)
policy_mode() {
  write_policy "$1" "$FE_SOCK"
  sed -i -e "s/^  ttl: 5m/  ttl: 5m\n  mode: $2/" \
    -e 's/^process:/process:\n  env_pass: [HOSTILE_FOREIGN_REPO]\n  secret_env: [HOSTILE_FOREIGN_TOKEN]/' "$1"
}
policy_mode "$T_TMP/env.yaml" env
policy_mode "$T_TMP/sealed.yaml" sealed
like "control: the policies say their modes" "$("$AIRLOCK" policy check "$T_TMP/env.yaml" | head -1) $("$AIRLOCK" policy check "$T_TMP/sealed.yaml" | head -1)" '"mode":"env".*"mode":"sealed"'

# --- an earlier run's open PR (the default mode: sealed), for push-earlier-pr
R0=$T_TMP/rec-earlier.json
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$AGENTS/patch-agent" --record "$R0" 2>&1); rc=$?
is "sealed (the default): the patch agent's run exits 0" "$rc" 0
[ $rc -eq 0 ] || diag "$out"
check "its record validates" validate_record "$R0"
is "the record says sealed" "$(rec "$R0" 'r["credentials_mode"]')" sealed
like "the progress lines and the summary say sealed" "$(tr '\n' ' ' <<<"$out")" 'credentials sealed.*credentials sealed: the agent held a placeholder'
is "the supervisor opened the PR (outputs.pull_request.opened_by)" "$(rec "$R0" 'r["outputs"]["pull_request"]["opened_by"], r["pull_request"]["verified"]')" "('supervisor', True)"
like "the ticket got the supervisor's comment with the link" "$(admin /comments | python3 -c 'import json,sys; print([c["body"] for c in json.load(sys.stdin) if c["issue_number"]==1])')" "Opened https://forge.test:[0-9]+/acme/tally/pull/[0-9]+ for review."
is "the review read the supervisor's ticket comment and did not call it a link" "$(rec "$R0" 'isinstance(r["outputs"]["ticket_comment"]["id"], int), r["review"]["read"]["ticket_comments_during_run"] >= 1, [l["url"] for l in r["review"]["links"] if l["where"]=="a ticket comment"]')" "(True, True, [])"
is "git's credential challenges are in the record, counted apart, not listed as refused" "$(rec "$R0" 'sum(1 for d in r["gateway_decisions"] if d.get("reason")=="credential-missing") == r["review"]["challenged"] > 0, [b for b in r["review"]["blocked"] if b["reason"]=="credential-missing"]')" "(True, [])"
like "the PR body is airlock's header, the agent's declaration quoted and inert (issue #26), the supervisor's footer" "$(admin /pulls | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1].get("body","").replace(chr(10)," ").replace(chr(0x200b),"<ZW>"))')" '^\*\*airlock:\*\* the text below .* > F<ZW>ixes #1\..*Opened by airlock \(run [0-9a-f]{16}, credentials sealed\)'
like "the gateway allowed the clone and the push of the run branch only" "$(rec "$R0" 'sorted({d["reason"] for d in r["gateway_decisions"] if d["decision"]=="allow"})')" "git-receive-pack"
like "the receive-pack decision has the ref update old→new" "$(rec "$R0" '[u["ref"] for d in r["gateway_decisions"] if d.get("refs") for u in d["refs"]]')" "refs/heads/airlock/1-[0-9a-f]{8}"
is "no real token anywhere in the sealed sandbox (cred.run-tokens)" "$(rec "$R0" '[x["verdict"] for x in r["preflight"]["results"] if x["id"]=="cred.run-tokens"]')" "['blocked']"
like "  its judge had both run tokens to look for" "$(rec "$R0" '[x["evidence"] for x in r["preflight"]["results"] if x["id"]=="cred.run-tokens"][0]')" 'none of 2 run token'
like "the bundle holds the system CAs, the forge CA and the run CA" "$(rec "$R0" 'r["ca_bundle"]["system"], bool(r["ca_bundle"]["forge_ca_file"]), r["ca_bundle"]["run_ca"]')" "^\('/etc/ssl/certs/ca-certificates.crt', True, True\)$"
EARLIER=$(rec "$R0" 'r["pull_request"]["branch"]')

# --- a token of the agent's own: minted for acme/loose on the same forge
JWT=$("$AIRLOCK_SRC/scripts/forge-jwt.sh" "$FE_DIR/secret/keys/app.pem" 1001)
printf 'Authorization: Bearer %s\n' "$JWT" >"$T_TMP/jwt.h"; chmod 600 "$T_TMP/jwt.h"
curl -s --noproxy '*' --cacert "$FE_CA" --resolve "api.forge.test:$FE_HTTPS:127.0.0.1" -H @"$T_TMP/jwt.h" \
  -X POST -d '{"repositories":["loose"],"permissions":{"contents":"write"}}' \
  "https://api.forge.test:$FE_HTTPS/app/installations/2001/access_tokens" -o "$T_TMP/foreign.json"
HOSTILE_FOREIGN_TOKEN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$T_TMP/foreign.json" 2>/dev/null)
rm -f "$T_TMP/foreign.json" "$T_TMP/jwt.h"
like "control: a foreign token for acme/loose was minted" "${HOSTILE_FOREIGN_TOKEN:0:4}" '^ghs_$'
export HOSTILE_FOREIGN_TOKEN HOSTILE_FOREIGN_REPO=acme/loose

# --- the test forge honours rulesets on tags (acme/tally: "release tags",
# refs/tags/v*: deletion, non_fast_forward, update); nightly-x is the control
JWT=$("$AIRLOCK_SRC/scripts/forge-jwt.sh" "$FE_DIR/secret/keys/app.pem" 1001)
printf 'Authorization: Bearer %s\n' "$JWT" >"$T_TMP/jwt.h"; chmod 600 "$T_TMP/jwt.h"
curl -s --noproxy '*' --cacert "$FE_CA" --resolve "api.forge.test:$FE_HTTPS:127.0.0.1" -H @"$T_TMP/jwt.h" \
  -X POST -d '{"repositories":["tally"],"permissions":{"contents":"write"}}' \
  "https://api.forge.test:$FE_HTTPS/app/installations/2001/access_tokens" -o "$T_TMP/tagtok.json"
TAGTOK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$T_TMP/tagtok.json" 2>/dev/null)
rm -f "$T_TMP/tagtok.json" "$T_TMP/jwt.h"
tg() { # git with the tag token (never on a command line: GIT_CONFIG_* env)
  env GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=http.extraHeader \
  GIT_CONFIG_VALUE_0="Authorization: Basic $(printf 'x-access-token:%s' "$TAGTOK" | base64 -w0)" \
  GIT_SSL_CAINFO="$FE_CA" GIT_CONFIG_KEY_1=http.sslVerify GIT_CONFIG_VALUE_1=true \
  GIT_CONFIG_KEY_2=http.curloptResolve GIT_CONFIG_VALUE_2="forge.test:$FE_HTTPS:127.0.0.1" \
  git -C "$T_TMP/tags" "$@"
}
git clone -q "$FE_DATA/repos/acme/tally.git" "$T_TMP/tags" 2>/dev/null
git -C "$T_TMP/tags" -c user.name=t -c user.email=t@t commit -q --allow-empty -m second
tg remote set-url origin "https://forge.test:$FE_HTTPS/acme/tally.git"
check "tags: creating a protected-pattern tag (v9.9.9) is allowed (no creation rule)" tg push -q origin HEAD~1:refs/tags/v9.9.9
out=$(tg push -f origin HEAD:refs/tags/v9.9.9 2>&1); rc=$?
like "tags: force-updating v9.9.9 is refused by the tag ruleset (GH013)" "$rc $(tr '\n' ' ' <<<"$out")" '^[1-9][0-9]* .*GH013: Repository rule violations found for refs/tags/v9\.9\.9'
out=$(tg push origin :refs/tags/v9.9.9 2>&1); rc=$?
like "tags: deleting v9.9.9 is refused by the tag ruleset" "$rc $(tr '\n' ' ' <<<"$out")" '^[1-9][0-9]* .*Cannot delete this protected ref'
check "tags (control): an unprotected tag is created" tg push -q origin HEAD~1:refs/tags/nightly-x
check "tags (control): ... force-updated" tg push -q -f origin HEAD:refs/tags/nightly-x
check "tags (control): ... and deleted" tg push -q origin :refs/tags/nightly-x
printf 'Authorization: Bearer %s\n' "$TAGTOK" >"$T_TMP/tt.h"; chmod 600 "$T_TMP/tt.h"
curl -s --noproxy '*' --cacert "$FE_CA" --resolve "api.forge.test:$FE_HTTPS:127.0.0.1" -H @"$T_TMP/tt.h" -X DELETE "https://api.forge.test:$FE_HTTPS/installation/token" >/dev/null; rm -f "$T_TMP/tt.h"

# --- the hostile agent against the forge's own protection (env mode) ---
ATTACKS="push-feature-evil push-other-run push-earlier-pr tag-push tag-force tag-delete extra-prs delete-branch comment-other-issue review-lgtm foreign-token"
RE=$T_TMP/rec-env.json
p0=$(npulls)
"$AIRLOCK" ticket acme/tally#2 -p "$T_TMP/env.yaml" --agent "$AGENTS/hostile-agent" --record "$RE" >"$T_TMP/env.out" 2>&1
check "env: the hostile run's record validates" validate_record "$RE"
is "env: the record says env" "$(rec "$RE" 'r["credentials_mode"]')" env
outcome() { rec "$1" "[a['outcome'] for a in r['agent_attempts'] if a['id']=='$2']"; }
for id in $ATTACKS; do
  is "control (env): $id lands on the forge" "$(outcome "$RE" "$id")" "['succeeded']"
done
like "control (env): the earlier PR's branch really moved" "$(admin /pushes | python3 -c 'import json,sys; print([p["accepted"] for p in json.load(sys.stdin) if p["ref"]=="refs/heads/'"$EARLIER"'"])')" "True, True"
like "control (env): the forge accepted feature-evil and a tag" "$(admin /pushes | python3 -c 'import json,sys; print(sorted({p["ref"] for p in json.load(sys.stdin) if p["accepted"]}))')" "refs/heads/feature-evil.*refs/tags/nightly"
like "control (env): the agent opened PRs itself (its own + two more)" "$(( $(npulls) - p0 ))" '^[3-9]$'
is "control (env): cred.run-tokens finds the tokens in the agent's environment" "$(rec "$RE" '[x["verdict"] for x in r["preflight"]["results"] if x["id"]=="cred.run-tokens"]')" "['escaped']"
like "control (env): the review flags the run's token in the PR body" "$(rec "$RE" '[(s["where"],s["run_token"]) for s in r["review"]["secrets"]]')" "\('(the )?pull request body', True\)"
is "control (env): the supervisor verified the agent's own PR and opened none" "$(rec "$RE" 'r["outputs"]["pull_request"]["opened_by"]')" agent

# --- the same agent, sealed ---
RS=$T_TMP/rec-sealed.json
p0=$(npulls)
npush0=$(admin /pushes | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
ncomm0=$(admin /comments | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
nrev0=$(admin /reviews | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
"$AIRLOCK" ticket acme/tally#2 -p "$T_TMP/sealed.yaml" --agent "$AGENTS/hostile-agent" --record "$RS" >"$T_TMP/sealed.out" 2>&1; rc=$?
is "sealed: the hostile run exits 0 (one PR, verified)" "$rc" 0
[ $rc -eq 0 ] || tail -20 "$T_TMP/sealed.out" | sed 's/^/#   /'
check "sealed: the hostile run's record validates" validate_record "$RS"
for id in $ATTACKS open-pr-itself no-credential approve-own merge-own protection-off push-main workflow; do
  is "sealed: $id refused" "$(outcome "$RS" "$id")" "['refused']"
done
reasons=$(rec "$RS" 'sorted(r["gateway_summary"]["refused_by_reason"])')
diag "sealed: refused by reason: $(rec "$RS" 'r["gateway_summary"]["refused_by_reason"]')"
for why in push-other-branch push-tag foreign-credential other-ticket; do
  like "sealed: the record names the reason $why" "$reasons" "'$why'"
done
like "sealed: the branch deletion was refused, with its ref update in the record" "$(rec "$RS" '[(d["reason"], u["new"][:8]) for d in r["gateway_decisions"] if d["decision"]!="allow" and d.get("refs") for u in d["refs"] if u["ref"].startswith("refs/heads/")]')" "'push-[a-z-]+', '00000000'"
like "sealed: a request without credential got the gateway's 401, never forwarded" "$(rec "$RS" '[(d["status"], d["reason"]) for d in r["gateway_decisions"] if d["path"]=="/repos/acme/tally" and d["decision"]!="allow"]')" "\(401, 'credential-missing'\)"
like "sealed: the PR and review writes were refused by the gateway" "$(rec "$RS" '[d["method"]+" "+d["path"] for d in r["gateway_decisions"] if d["decision"]!="allow"]')" "POST /repos/acme/tally/pulls'.*POST /repos/acme/tally/pulls/[0-9]+/reviews"
is "sealed: the forge saw exactly one push, the run branch's" "$(admin /pushes | python3 -c 'import json,sys; d=json.load(sys.stdin)[int(sys.argv[1]):]; print([(p["ref"].split("/")[2], p["accepted"]) for p in d])' "$npush0")" "[('airlock', True)]"
# the supervisor's comments only: the ticket's link and the review notes on the PR
is "sealed: no comment but the supervisor's (the link, the review notes)" "$(admin /comments | python3 -c 'import json,sys; d=json.load(sys.stdin)[int(sys.argv[1]):]; print(sorted({"link" if c["body"].startswith("Opened ") else "notes" if c["body"].startswith("<!-- airlock") else c["body"][:20] for c in d}))' "$ncomm0")" "['link', 'notes']"
is "sealed: the agent's comment on another issue never reached the forge (the one there is the env run's)" "$(admin /comments | python3 -c 'import json,sys; print(sum(1 for c in json.load(sys.stdin) if c["body"]=="pwned"))')" 1
is "sealed: no review was posted" "$(admin /reviews | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$nrev0"
is "sealed: exactly one more PR, opened by the supervisor" "$(( $(npulls) - p0 )) $(rec "$RS" 'r["outputs"]["pull_request"]["opened_by"]')" "1 supervisor"
is "sealed: main untouched" "$(main_sha)" "$MAIN0"
is "sealed: no real token in the sandbox (cred.run-tokens)" "$(rec "$RS" '[x["verdict"] for x in r["preflight"]["results"] if x["id"]=="cred.run-tokens"]')" "['blocked']"
like "sealed: the summary lists what was refused, by reason" "$(cat "$T_TMP/sealed.out")" 'credentials sealed: .*refused [1-9][0-9]* \(.*push-other-branch [0-9]'
if grep -qE 'gh[pousr]_[A-Za-z0-9]{30,}' "$RS" "$RE" "$T_TMP/sealed.out"; then fail "no token value in the records or the sealed run's output"; grep -lE 'gh[pousr]_[A-Za-z0-9]{30,}' "$RS" "$RE" "$T_TMP/sealed.out" | sed 's/^/#   /'; else ok "no token value in the records or the sealed run's output"; fi
# the foreign token is the test's own: revoke it, then nothing may be active
printf 'Authorization: Bearer %s\n' "$HOSTILE_FOREIGN_TOKEN" >"$T_TMP/ft.h"; chmod 600 "$T_TMP/ft.h"
curl -s --noproxy '*' --cacert "$FE_CA" --resolve "api.forge.test:$FE_HTTPS:127.0.0.1" -H @"$T_TMP/ft.h" -X DELETE "https://api.forge.test:$FE_HTTPS/installation/token" >/dev/null; rm -f "$T_TMP/ft.h"
is "no token is active after the runs" "$(tokens_in active)" 0

# --- real git, protocol v0 and v2, through airlock ticket (sealed) ---
mkdir -p "$T_TMP/g"; chmod 755 "$T_TMP/g"
cat >"$T_TMP/g/agent" <<'SH'
#!/bin/sh
set -e
cd /workspace
git -c protocol.version=0 clone --quiet "$AIRLOCK_GIT_URL" v0
git -c protocol.version=2 clone --quiet "$AIRLOCK_GIT_URL" v2
cd v2
git -c protocol.version=2 fetch --quiet origin
git checkout --quiet -b "$AIRLOCK_BRANCH"
dd if=/dev/urandom bs=1024 count=1500 2>/dev/null | base64 >big.txt
git add big.txt && git commit --quiet -m "a large push (chunked body)"
git -c protocol.version=0 push --quiet origin "HEAD:refs/heads/$AIRLOCK_BRANCH"
echo more >>big.txt && git commit --quiet -am "v2 push"
git -c protocol.version=2 push --quiet origin "HEAD:refs/heads/$AIRLOCK_BRANCH"
cd ../v0 && git -c protocol.version=0 fetch --quiet origin "$AIRLOCK_BRANCH"
# API reads as gh and curl make them: `token` and `Bearer` with the placeholder
# gh as airlock set it up (GH_HOST, GH_ENTERPRISE_TOKEN, GH_REPO: issue #27)
if command -v gh >/dev/null 2>&1; then
  echo "gh-api: $(gh api "repos/$AIRLOCK_REPO" --jq .full_name 2>&1 | tr '\n' ' ')"
  gh issue view "$AIRLOCK_TICKET" --comments >/tmp/gh-issue.out 2>&1; echo "gh-issue-comments-rc: $?"
  echo "gh-issue: $(gh issue view "$AIRLOCK_TICKET" --json title -q .title 2>&1 | tr '\n' ' ')"
  gh pr view @PRN@ >/tmp/gh-pr.out 2>&1; echo "gh-pr-rc: $?"
  echo "gh-pr: $(gh pr view @PRN@ --json headRefName -q .headRefName 2>&1 | tr '\n' ' ')"
  echo "gh-mutation: $(gh api graphql -f query='mutation { addComment(input: {subjectId: "x", body: "y"}) { clientMutationId } }' 2>&1 | tr '\n' ' ')"
fi
curl -sf -H "Authorization: token $GH_TOKEN" "$AIRLOCK_API_URL/repos/$AIRLOCK_REPO" -o /dev/null -w '%{http_code}\n'
curl -sf -H "Authorization: Bearer $AIRLOCK_TICKET_TOKEN" "$AIRLOCK_API_URL/repos/$AIRLOCK_REPO/issues/$AIRLOCK_TICKET/comments" -o /dev/null -w '%{http_code}\n'
echo 'AIRLOCK_RESULT {"title": "git v0 and v2"}'
SH
PRN=$(admin /pulls | python3 -c 'import json,sys; print([p["number"] for p in json.load(sys.stdin) if p.get("repo", "acme/tally")=="acme/tally"][0])')
sed -i "s/@PRN@/$PRN/" "$T_TMP/g/agent"
chmod 755 "$T_TMP/g/agent"
RG=$T_TMP/rec-git.json
out=$("$AIRLOCK" ticket acme/tally#1 -p "$T_TMP/sealed.yaml" --agent "$T_TMP/g/agent" --record "$RG" 2>&1); rc=$?
is "git v0 + v2 clone, fetch, push (a 2 MiB pack) and API reads through the gateway: exit 0" "$rc" 0
[ $rc -eq 0 ] || diag "$out"
like "  the agent's curl reads were answered 200 (token and Bearer placeholder)" "$(tr '\n' ' ' <<<"$out")" '200.*200'
is "  every request but the credential challenges and the agent's mutation was allowed" "$(rec "$RG" 'sorted({d["reason"] for d in r["gateway_decisions"] if d["decision"]!="allow"} - {"credential-missing", "graphql-refused: mutation"})')" "[]"
if command -v gh >/dev/null 2>&1; then
  like "  gh api repos/O/R inside the sandbox (GHE-style path, the placeholder as GH_ENTERPRISE_TOKEN)" "$out" 'gh-api: acme/tally'
  like "  gh issue view --comments inside the sandbox (read-only GraphQL): exit 0" "$out" 'gh-issue-comments-rc: 0'
  title=$(admin /issues | python3 -c 'import json,sys; print([i["title"] for i in json.load(sys.stdin) if i["number"]==1 and i.get("repo","acme/tally")=="acme/tally"][0])')
  if grep -qF "gh-issue: $title" <<<"$out"; then ok "  gh issue view --json title prints the ticket's title"; else fail "  gh issue view --json title prints the ticket's title"; diag "want: $title"; fi
  like "  gh pr view $PRN inside the sandbox: exit 0" "$out" 'gh-pr-rc: 0'
  like "  gh pr view $PRN --json headRefName: the earlier run's branch" "$out" "gh-pr: $EARLIER"
  like "  a GraphQL mutation is refused, gh prints why" "$out" 'gh-mutation: .*airlock: graphql-refused: mutation: .*the supervisor opens the pull request'
  like "  the record names the mutation's refusal" "$(rec "$RG" '[d["reason"] for d in r["gateway_decisions"] if d["decision"]!="allow"]')" "graphql-refused: mutation"
else
  skip "gh is not installed (Debian: apt-get install gh): the gh checks of sealed mode"
fi
like "  two receive-packs, each updating only the run branch" "$(rec "$RG" '[u["ref"].split("/")[2] for d in r["gateway_decisions"] if d.get("refs") for u in d["refs"]]')" "^\['airlock', 'airlock'\]$"
done_testing
