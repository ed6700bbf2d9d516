#!/bin/bash
# `airlock demo` and `airlock demo --hostile`, as a new user would run them
# (issue #6: both run in CI). Each must end with the PR made, main
# untouched, both tokens dead; the hostile one with every attempt refused.
. "$(dirname "$0")/lib.sh"
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
ensure_test_user
# Only what this test's demos leave counts: other demos may be running on
# the machine. Each demo gets its own TMPDIR under T_TMP, so its directory
# and its forge and broker (whose command lines name that directory) are
# found by that path alone.
demo_tmp() { echo "$T_TMP/tmp-$1"; }
demo_dirs() { ls -d "$(demo_tmp "$1")"/airlock-demo.* 2>/dev/null; }
demo_pids() { pgrep -f -- "$(demo_tmp "$1")/" 2>/dev/null | grep -vx "$$" || true; }
mkdir -p "$(demo_tmp root)" "$(demo_tmp user)" "$T_TMP/home-user"
chown "$T_USER" "$(demo_tmp user)" "$T_TMP/home-user" 2>/dev/null
run_demo() { # MODE(root|user) ARGS...
  local mode=$1; shift
  local pre=(env TMPDIR="$(demo_tmp root)")
  [ "$mode" = user ] && pre=(as_user env HOME="$T_TMP/home-user" TMPDIR="$(demo_tmp user)")
  local start=$(date +%s%N)
  (cd "$T_TMP" && "${pre[@]}" "$AIRLOCK" demo "$@") >"$T_TMP/demo.out" 2>&1
  local rc=$?
  diag "[$mode] airlock demo $* took $(( ($(date +%s%N) - start) / 1000000 )) ms"
  return $rc
}
modes="root user"
if is_asan_build; then
  # the preflight's probe process is airlock's own ASan binary: see probe.sh
  skip "[user] demo: ASan build — without a cgroup the preflight's res.memory cannot hold; the normal build covers this"
  modes=root
fi
for mode in $modes; do
  run_demo $mode; rc=$?
  out=$(cat "$T_TMP/demo.out")
  is "[$mode] airlock demo exits 0" "$rc" 0
  [ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/demo.out" | tail -30
  like "[$mode] demo made a pull request" "$out" 'made +the pull request https://forge.test:[0-9]+/acme/tally/pull/[0-9]+'
  like "[$mode] demo: main untouched" "$out" 'held +main is untouched'
  like "[$mode] demo: tokens dead" "$out" 'held +both tokens revoked and confirmed dead'
  like "[$mode] demo: the preflight passed" "$out" 'preflight +ok'
  like "[$mode] demo: the audit line names each WARN criterion" "$out" 'audit +ok .* holds; [1-9][0-9]* WARN: [a-z]+\.[a-z.-]+'
  like "[$mode] demo: sealed by default, the supervisor opened the PR" "$out" 'held +the pull request was opened by the supervisor'
  run_demo $mode --hostile; rc=$?
  out=$(cat "$T_TMP/demo.out")
  is "[$mode] airlock demo --hostile exits 0" "$rc" 0
  [ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/demo.out" | tail -40
  like "[$mode] hostile: the agent's claims carry the gutter, airlock's verdict does not" "$(tr '\n' '~' <"$T_TMP/demo.out")" "in its own words[^~]*~~agent│ (refused|succeeded|untried|kept) .*~~Judged by airlock from outside[^~]*~~  made "
  is "[$mode] hostile: the notes count each file once, however many families it matches" "$(sed -n 's/.*review notes for the human.*: \([0-9]*\) file(s) that run outside.*/\1/p' "$T_TMP/demo.out")" "$(sed -n 's/^ *runs later [a-z]* *\([^:]*\):.*/\1/p' "$T_TMP/demo.out" | sort -u | wc -l)"
  like "[$mode] hostile: the summary says only a PR got out" "$out" 'all that got out is one pull request'
  bad=$(grep -E '^agent│ succeeded' "$T_TMP/demo.out" | grep -v 'open a pull request' || true)
  is "[$mode] hostile: no attempt but the PR succeeded" "$bad" ""
  # sealed by default (issue #15): airlock's gateway refuses, not the forge
  like "[$mode] hostile: push to main refused by airlock's gateway" "$(grep -A1 'push straight to main' "$T_TMP/demo.out" | tr '\n' ' ')" '^agent│ refused +push straight to main +agent│ +remote: airlock: push-other-branch: only refs/heads/airlock/'
  like "[$mode] hostile: the gateway's refusals are listed by reason" "$out" 'the forge gateway decided [0-9]+ request\(s\) and refused [1-9][0-9]* \(.*push-other-branch [0-9]'
  like "[$mode] hostile: no real token in the sandbox" "$out" 'held +credentials sealed: no real token anywhere in the sandbox \(cred.run-tokens blocked\)'
  like "[$mode] hostile: the one PR was opened by the supervisor" "$out" 'held +the pull request was opened by the supervisor'
  # the demo's forge has no earlier run: that attempt is not a refusal
  like "[$mode] hostile: an attempt with nothing to try it on says untried, not refused" "$(grep "earlier run's open PR branch" "$T_TMP/demo.out")" '^agent│ untried +add a commit to an earlier run'
  like "[$mode] hostile: the proxy refused evil.example" "$out" 'Tunnel connection failed: 403'
  like "[$mode] hostile: the declared PR text was made inert (issue #26)" "$out" 'held +the PR text the agent declared was made inert before it was posted: [1-9][0-9]* mention\(s\), [1-9][0-9]* closing keyword\(s\), [1-9][0-9]* image\(s\), [1-9][0-9]* HTML tag\(s\), [1-9][0-9]* outside link'
  like "[$mode] hostile: the base branch's CI cannot act for the agent (issue #26)" "$out" 'held +CI: no workflow of the base branch runs .* \(audit: ([1-9]) of \1 ci\.\* criteria PASS'
  is "[$mode] the demo removed its temporary directory" "$(demo_dirs $mode)" ""
  is "[$mode] no forge or broker of this demo left running" "$(demo_pids $mode)" ""
done

# An agent that fails is the agent's failure, not a breach: exit 1, said
# so, and nothing reported as not holding.
run_demo root --agent /bin/false; rc=$?
out=$(cat "$T_TMP/demo.out")
is "[false] demo --agent /bin/false exits 1" "$rc" 1
like "[false] it says the agent did not finish and nothing got out" "$out" '^The agent did not finish the ticket, and nothing got out'
like "[false] 0 pull requests is held (nothing got out)" "$out" '^  held +0 pull request\(s\) on the forge: nothing got out'
is "[false] no line says something did not hold, or CHECK/BROKEN" "$(grep -cE 'Something did not hold|^  (CHECK|BROKEN) ' "$T_TMP/demo.out")" 0

# Every exit path cleans up (issue #14 row 6). Positive control first:
# with --keep the directory is there, under this test's TMPDIR, so an
# empty TMPDIR afterwards means removed, not "made elsewhere".
run_demo root --keep; rc=$?
is "[keep] airlock demo --keep exits 0" "$rc" 0
kept=$(demo_dirs root)
like "[keep] control: the demo's directory is under this test's TMPDIR" "$kept" "^$(demo_tmp root)/airlock-demo\\.[A-Za-z0-9]{6}\$"
like "[keep] control: it holds the App keys" "$(ls "$kept/secret/keys" 2>/dev/null)" 'app\.pem'
rm -rf "$kept"

# `airlock demo | head -3`, stdout and stderr both into the pipe: once head
# exits every write is EPIPE; the demo must still tear down.
( cd "$T_TMP" && env TMPDIR="$(demo_tmp root)" "$AIRLOCK" demo 2>&1 | head -3 >"$T_TMP/head.out" )
is "[head] head got its three lines" "$(wc -l <"$T_TMP/head.out" | tr -d ' ')" 3
for _ in $(seq 1 100); do [ -z "$(demo_pids root)" ] && break; sleep 0.1; done
is "[head] airlock demo | head -3 removed its directory (secret/keys included)" "$(demo_dirs root)" ""
is "[head] no forge or broker of that demo left running" "$(demo_pids root)" ""

# Ctrl-C: SIGINT to the demo's whole process group, as a terminal sends
# it, once the ticket has started.
setsid env TMPDIR="$(demo_tmp root)" "$AIRLOCK" demo >"$T_TMP/int.out" 2>&1 &
dpid=$!
for _ in $(seq 1 300); do grep -q 'airlock ticket: lease' "$T_TMP/int.out" && break; sleep 0.05; done
kill -INT -- "-$dpid" 2>/dev/null
wait "$dpid"; rc=$?
is "[sigint] an interrupted demo exits 130" "$rc" 130
[ "$rc" = 130 ] || sed 's/^/#   /' "$T_TMP/int.out" | tail -20
for _ in $(seq 1 100); do [ -z "$(demo_pids root)" ] && break; sleep 0.1; done
is "[sigint] the interrupted demo removed its directory" "$(demo_dirs root)" ""
is "[sigint] no forge or broker of that demo left running" "$(demo_pids root)" ""
is "[sigint] the summary says interrupted, and no line says BROKEN or CHECK" "$(grep -cE 'Something did not hold|^  (CHECK|BROKEN) ' "$T_TMP/int.out")/$(grep -c '^Interrupted (SIGINT) before the run finished' "$T_TMP/int.out")" 0/1
[ "$(grep -cE '^  (CHECK|BROKEN) ' "$T_TMP/int.out")" = 0 ] || sed 's/^/#   /' "$T_TMP/int.out" | tail -24

# Ctrl-C before the lease (during the policy/preflight/audit phases): no
# token was leased, so none is reported BROKEN (a new user saw "BROKEN
# both tokens revoked" for a run interrupted in its audit)
setsid env TMPDIR="$(demo_tmp root)" "$AIRLOCK" demo --hostile >"$T_TMP/int2.out" 2>&1 &
dpid=$!
for _ in $(seq 1 300); do grep -q 'airlock ticket: policy' "$T_TMP/int2.out" && break; sleep 0.05; done
kill -INT -- "-$dpid" 2>/dev/null
wait "$dpid"; rc=$?
is "[sigint-early] the interrupted hostile demo exits 130" "$rc" 130
out=$(cat "$T_TMP/int2.out")
if grep -qE '^  none +no token was leased' <<<"$out"; then
  ok "[sigint-early] stopped before the lease: says no token was leased"
else
  like "[sigint-early] stopped after the lease: the tokens were revoked" "$out" '^  held +both tokens revoked and confirmed dead'
fi
is "[sigint-early] no line says BROKEN or CHECK, or that something did not hold" "$(grep -cE 'Something did not hold|^  (CHECK|BROKEN) ' "$T_TMP/int2.out")" 0
[ "$(grep -cE '^  (CHECK|BROKEN) ' "$T_TMP/int2.out")" = 0 ] || sed 's/^/#   /' "$T_TMP/int2.out" | tail -20
for _ in $(seq 1 100); do [ -z "$(demo_pids root)" ] && break; sleep 0.1; done
is "[sigint-early] no forge or broker of that demo left running" "$(demo_pids root)" ""

# A run record that cannot be written stops the run before the agent:
# the demo says so and where records go, and reports nothing as BROKEN
: >"$T_TMP/not-a-dir"
(cd "$T_TMP" && env TMPDIR="$(demo_tmp root)" XDG_STATE_HOME="$T_TMP/not-a-dir" "$AIRLOCK" demo --hostile) >"$T_TMP/norec.out" 2>&1; rc=$?
out=$(cat "$T_TMP/norec.out")
is "[no-record] the demo exits 1" "$rc" 1
like "[no-record] the error says where records go and how to move them" "$out" 'cannot be written: .*set one to a directory this user may write, or give --record FILE'
like "[no-record] the summary says the agent never ran" "$out" '^The run stopped before the agent ran, and nothing got out'
like "[no-record] no token was leased" "$out" '^  none +no token was leased'
is "[no-record] no line says BROKEN or CHECK, and no run record path is claimed" "$(grep -cE '^  (CHECK|BROKEN) |run record: /' "$T_TMP/norec.out")" 0
is "[no-record] no forge or broker of that demo left running" "$(demo_pids root)" ""
# --ticket jira|linear (issue #31): the ticket on the Jira or Linear double,
# the code on the test forge; one PR, one comment on the ticket (the
# record's and the double's own state, written as it stops), the vendor
# credential kept out, the gateway's decisions for both hosts
for kind in jira linear; do
  rm -rf "$(demo_tmp root)"/airlock-demo.*
  run_demo root --ticket "$kind" --keep; rc=$?
  out=$(cat "$T_TMP/demo.out")
  is "[$kind] airlock demo --ticket $kind exits 0" "$rc" 0
  [ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/demo.out" | tail -30
  like "[$kind] a pull request was made" "$out" 'made +the pull request https://forge.test:[0-9]+/acme/tally/pull/[0-9]+'
  like "[$kind] one comment on the ticket, its URL from the record" "$out" "held +one comment on $kind ticket [A-Z]+-[0-9]+: https?://"
  like "[$kind] the vendor credential never entered the sandbox" "$out" "held +the $kind credential never entered the sandbox: cred.run-tokens blocked"
  like "[$kind] the gateway's decisions for both hosts" "$out" "held +the gateway's decisions per host: .*$kind.test [1-9]"
  is "[$kind] no line says CHECK, BROKEN or MISSING" "$(grep -cE '^  (CHECK|BROKEN|MISSING) ' "$T_TMP/demo.out")" 0
  recf=$(sed -n 's/^  run record: //p' "$T_TMP/demo.out")
  hosts=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(" ".join(sorted({d["host"] for d in r.get("gateway_decisions",[]) if d.get("event")=="request"})))' "$recf" 2>&1)
  like "[$kind] the record's gateway_decisions: the forge host" "$hosts" "forge.test"
  like "[$kind] ... and the ticket host" "$hosts" "$kind.test"
  is "[$kind] the record's comment is on the ticket" "$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["outputs"]["ticket_comment"]; print(c["system"], "error" in c)' "$recf" 2>&1)" "$kind False"
  dir=$(demo_dirs root | head -1)
  st=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(len(s["comments"]), s["comments"][0][:6], s["auth_refused"])' "$dir/secret/ticket.state.json" 2>&1)
  is "[$kind] the double took one comment, the PR's link, and refused no credential" "$st" "1 Opened 0"
  tok=$(cat "$dir/secret/ticket.token" 2>/dev/null)
  if [ -n "$tok" ] && ! grep -rqF -- "$tok" "$recf" "$T_TMP/demo.out"; then ok "[$kind] the vendor token's value is in neither the record nor the output"
  else fail "[$kind] the vendor token's value is in the record or the output (or no token file)"; fi
  rm -rf "$dir"
done
run_demo root --ticket nope; rc=$?
is "[--ticket nope] a usage error (exit 2)" "$rc" 2
like "[--ticket nope] says what --ticket takes" "$(cat "$T_TMP/demo.out")" "--ticket .nope.: jira or linear"
done_testing
