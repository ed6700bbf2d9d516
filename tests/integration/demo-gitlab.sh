#!/bin/bash
# `airlock demo --forge gitlab` (issue #30, done when 1): the demo's ticket on
# the GitLab test forge (airlock-gitlab-forge), the broker in its GitLab mode.
# It must end with one Draft merge request the supervisor opened, the run's
# two project access tokens revoked and answering 401, and no real token in
# the sandbox, the record or the output. The forge's own view comes from the
# state it writes as it stops (AIRLOCK_GITLAB_FORGE_STATE: its merge
# requests, each token's revocation and what a request with it gets) and the
# values it minted (AIRLOCK_GITLAB_FORGE_TOKENS): the test's, not the demo's.
. "$(dirname "$0")/lib.sh"
[ -x "${GITLAB_FORGE:-}" ] || { skip "airlock-gitlab-forge was not built"; done_testing; exit 0; }
for p in python3 git; do command -v $p >/dev/null || { skip "$p is not installed"; done_testing; exit 0; }; done
W=$T_TMP/dgl
mkdir -p "$W/tmp"
run_demo() { # ARGS...
  (cd "$T_TMP" && env TMPDIR="$W/tmp" AIRLOCK_GITLAB_FORGE_TOKENS="$W/minted" \
    AIRLOCK_GITLAB_FORGE_STATE="$W/state.json" "$AIRLOCK" demo "$@") >"$W/demo.out" 2>&1
}
run_demo --forge gitlab --keep; rc=$?
out=$(cat "$W/demo.out")
is "airlock demo --forge gitlab exits 0" "$rc" 0
[ $rc -eq 0 ] || sed 's/^/#   /' "$W/demo.out" | tail -40
like "it made a merge request on the GitLab forge" "$out" 'made +the pull request http://gitlab.test/acme/tools/tally/-/merge_requests/1'
like "... a Draft that removes its branch" "$out" 'held +the merge request is a Draft that removes its branch'
like "... opened by the supervisor" "$out" 'held +the pull request was opened by the supervisor'
like "the tokens: revoked and confirmed dead (the record's word)" "$out" 'held +both tokens revoked and confirmed dead \(401\)'
like "no real token in the sandbox (cred.run-tokens)" "$out" 'held +credentials sealed: no real token anywhere in the sandbox \(cred.run-tokens blocked\)'
like "the gateway ran with the GitLab project's id" "$out" 'gateway +ok .*GitLab project id 3001'
like "the GitLab audit ran before the lease and holds" "$out" 'audit +ok .*the escape budget of acme/tools/tally \(branch main\) holds'
like "... and the summary says so" "$out" 'held +the GitLab audit: the escape budget holds'
like "the review notes are posted on the MR, a note's anchor on its page" "$out" 'notes +ok .*review notes posted on the pull request: http://gitlab.test/acme/tools/tally/-/merge_requests/1#note_[0-9]+'
is "no line says CHECK, BROKEN or MISSING" "$(grep -cE '^  (CHECK|BROKEN|MISSING) ' "$W/demo.out")" 0

recf=$(sed -n 's/^  run record: //p' "$W/demo.out")
dir=$(ls -d "$W"/tmp/airlock-demo.* 2>/dev/null | head -1)
[ -f "$recf" ] && [ -d "$dir" ] || { fail "the record and the kept directory are there"; done_testing; exit 1; }
rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$recf" "$1" 2>&1; }
is "the record: forge.kind gitlab, a project in a subgroup, its id 3001" "$(rec 'json.loads(r["policy"]["canonical"])["forge"]["kind"], r["ticket"]["repo"], r["forge_project_id"]')" "('gitlab', 'acme/tools/tally', 3001)"
is "the record: the supervisor compared the CI definition (base vs run branch trees) before opening the MR: unchanged" \
  "$(rec 'r["outputs"]["ci_definition"]')" "{'changed': False}"
is "the record: not unprotected; the audit holds, GitLab's report, its read token revoked" \
  "$(rec 'r["unprotected"], r["audit"]["holds"], r["audit"]["report"]["forge"], r["audit"]["report"]["credentials"].endswith(", revoked")')" "(False, True, 'gitlab', True)"
is "the record: both tokens revoked, each 401 confirmed" \
  "$(rec 'r["revocation"]["all_dead"], [(t["role"], t["revoked"], t["confirmed_401"]) for t in r["revocation"]["tokens"]]')" \
  "(True, [('git', True, True), ('ticket', True, True)])"
is "the record: the MR verified (read back by the review, forge/gitlab_review.c)" \
  "$(rec 'r["pull_request"]["verified"], r["pull_request"]["read_by"]')" "(True, 'review')"
is "the record: the review read the MR's files and commits" \
  "$(rec 'r["review"]["read"]["files"] > 0, r["review"]["read"]["commits"] > 0, r["review"]["could_not_read"]')" "(True, True, [])"
is "the record: the issue got the note with the MR's link" "$(rec 'r["outputs"]["ticket_comment"]["body"][:6], "error" in r["outputs"]["ticket_comment"]')" "('Opened', False)"

# the forge's own state, written as it stopped
st() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$W/state.json" "$1" 2>&1; }
is "the forge holds one merge request" "$(st 'len(s["merge_requests"])')" 1
is "... a Draft into main from the run's branch, removing it, by the project's bot (the run's token)" \
  "$(st '[(m["draft"], m["title"][:6], m["target_branch"], m["source_branch"][:9], m["force_remove_source_branch"], m["author"]["username"]) for m in s["merge_requests"]]')" \
  "[(True, 'Draft:', 'main', 'airlock/1', True, 'project_bot')]"
is "the broker minted five project access tokens: the audit's, the run's lease and the review's (git and ticket each)" \
  "$(st 'sorted(t["name"] for t in s["tokens"] if t["project_id"] == 3001)')" "['airlock-audit', 'airlock-git', 'airlock-git', 'airlock-ticket', 'airlock-ticket']"
# control: the probe sees a live token (the Maintainer's, never revoked)
is "control: the Maintainer's token still answers 200" "$(st '[t["answers"] for t in s["tokens"] if t["name"] == "maintainer"]')" "[200]"
n=0
while read -r v; do
  [ -n "$v" ] || continue
  n=$((n + 1))
  h=$(printf '%s' "$v" | sha256sum | cut -d' ' -f1)
  is "minted token $n: revoked on the forge and answering 401" \
    "$(st "[(t['revoked'], t['answers']) for t in s['tokens'] if t['value_sha256'] == '$h']")" "[(True, 401)]"
  if grep -rqF -- "$v" "$recf" "$W/demo.out"; then fail "minted token $n: its value is in the record or the output"
  else ok "minted token $n: its value is in neither the record nor the output"; fi
  # what the sandbox could read: the demo's shared directory (not secret/)
  hit=$(grep -rlF --exclude-dir=secret -- "$v" "$dir" 2>/dev/null | head -1)
  is "minted token $n: in no file of the sandbox's view (the demo's shared directory)" "$hit" ""
done <"$W/minted"
is "five tokens were minted (the loop above saw each)" "$n" 5
mt=$(cat "$dir/secret/gitlab.token" 2>/dev/null)
if [ -n "$mt" ] && ! grep -rqF -- "$mt" "$recf" "$W/demo.out"; then ok "the Maintainer's token is in neither the record nor the output"
else fail "the Maintainer's token is in the record or the output (or no token file)"; fi
# control for the cleanup below: a run with its MR keeps its branch
like "control: the run branch stays on the forge beside its MR" \
  "$(git --git-dir="$dir/secret/repos/acme/tools/tally.git" for-each-ref --format='%(refname)' refs/heads/ | tr '\n' ' ')" 'refs/heads/airlock/1-[0-9a-f]+ refs/heads/main'
rm -rf "$dir" "$recf"

# a run that pushes but gets no MR (the forge fails every MR creation: a
# test fault) deletes its branch at the end (DELETE .../repository/branches)
rm -f "$W/minted" "$W/state.json"
(cd "$T_TMP" && env TMPDIR="$W/tmp" AIRLOCK_GITLAB_FORGE_FAIL_MR=1 AIRLOCK_GITLAB_FORGE_STATE="$W/state.json" \
  "$AIRLOCK" demo --forge gitlab --keep) >"$W/demo.out" 2>&1; rc=$?
is "[no MR] the demo fails (exit 1)" "$rc" 1
recf=$(sed -n 's/^  run record: //p' "$W/demo.out")
dir=$(ls -d "$W"/tmp/airlock-demo.* 2>/dev/null | head -1)
is "[no MR] the record: the outputs failed on the forge's 500, the branch deleted" \
  "$(rec '"HTTP 500" in r["outputs"]["error"], r["branch_cleanup"]["status"], r["branch_cleanup"]["branch"][:9]')" "(True, 'deleted', 'airlock/1')"
is "[no MR] only main is left on the forge" \
  "$(git --git-dir="$dir/secret/repos/acme/tools/tally.git" for-each-ref --format='%(refname)' refs/heads/ | tr '\n' ' ')" "refs/heads/main "
is "[no MR] the forge holds no merge request" "$(st 'len(s["merge_requests"])')" 0
is "[no MR] every token it minted answers 401" "$(st 'sorted({t["answers"] for t in s["tokens"] if t["project_id"] == 3001})')" "[401]"
rm -rf "$dir" "$recf"

# usage
# (--forge gitlab --hostile: tests/integration/gitlab-hostile.sh)
run_demo --forge gitlab --serve; rc=$?
is "--forge gitlab --serve is a usage error (not built yet)" "$rc" 2
like "... saying so" "$(cat "$W/demo.out")" '--forge gitlab runs the bundled agents on a GitLab issue'
run_demo --forge nope; rc=$?
like "--forge nope is a usage error" "$rc/$(cat "$W/demo.out")" "^2/airlock demo: --forge .nope.: github or gitlab"
done_testing
