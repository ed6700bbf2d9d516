#!/bin/bash
# `airlock demo` and `airlock demo --hostile`, as a new user would run them
# (issue #6: both run in CI). Each must end with the PR made, main
# untouched, both tokens dead; the hostile one with every attempt refused.
. "$(dirname "$0")/lib.sh"
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
ensure_test_user
# Only what this test's demos leave counts: other runs may be on the machine.
demo_dirs() { ls -d /tmp/airlock-demo.* 2>/dev/null | sort; }
# (this build's binaries only: other worktrees run demos and forges too)
demo_pids() { { pgrep -f "^$AIRLOCK_FORGE --fixture .*examples/demo"; pgrep -f "^$(dirname "$AIRLOCK")/airlock-net broker -c /tmp/airlock-demo"; } 2>/dev/null | sort; }
run_demo() { # MODE(root|user) ARGS...
  local mode=$1; shift
  local pre=()
  [ "$mode" = user ] && pre=(as_user env HOME="$T_TMP/home-user")
  mkdir -p "$T_TMP/home-user"; chown "$T_USER" "$T_TMP/home-user" 2>/dev/null
  DIRS_BEFORE=$(demo_dirs); PIDS_BEFORE=$(demo_pids)
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
  run_demo $mode --hostile; rc=$?
  out=$(cat "$T_TMP/demo.out")
  is "[$mode] airlock demo --hostile exits 0" "$rc" 0
  [ $rc -eq 0 ] || sed 's/^/#   /' "$T_TMP/demo.out" | tail -40
  like "[$mode] hostile: the summary says only a PR got out" "$out" 'all that got out is one pull request'
  bad=$(grep -E '^  succeeded' "$T_TMP/demo.out" | grep -v 'open a pull request' || true)
  is "[$mode] hostile: no attempt but the PR succeeded" "$bad" ""
  like "[$mode] hostile: push to main refused with GH006" "$out" 'GH006'
  like "[$mode] hostile: the proxy refused evil.example" "$out" 'Tunnel connection failed: 403'
  # its own directory, named in its output (other demos may run meanwhile)
  mine=$(grep -oE '/tmp/airlock-demo\.[A-Za-z0-9]+' "$T_TMP/demo.out" | head -1)
  like "[$mode] control: the demo named its temporary directory" "$mine" '^/tmp/airlock-demo\.'
  [ -n "$mine" ] && [ -e "$mine" ] && leftover=1 || leftover=0
  is "[$mode] the demo removed its temporary directory" "$leftover" 0
  left=$(comm -13 <(echo "$PIDS_BEFORE") <(demo_pids) | grep . || true)
  is "[$mode] no forge or broker of this demo left running" "$left" ""
done
done_testing
