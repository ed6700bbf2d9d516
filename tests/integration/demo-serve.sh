#!/bin/bash
# `airlock demo --serve` as a new user runs it (issue #29 item 7; the recipe
# docs/serve.md starts with): the demo's forge and broker with airlock serve
# between them; a label on the forge, the signed webhook, one PR. Then
# nothing of it is left: no directory, no process.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { skip "the demo's sandbox runs as root here (demo.sh covers the user mode of airlock demo)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
D=$T_TMP/tmp; mkdir -p "$D"
(cd "$T_TMP" && TMPDIR=$D timeout 900 "$AIRLOCK" demo --serve) >"$T_TMP/out" 2>&1; rc=$?
is "airlock demo --serve exits 0" "$rc" 0
out=$(cat "$T_TMP/out")
[ $rc -eq 0 ] || diag "$(tail -40 "$T_TMP/out")"
like "it names serve's webhook URL" "$out" 'airlock serve: webhook http://127\.0\.0\.1:[0-9]+/webhook'
like "… and its status page" "$out" 'status page http://127\.0\.0\.1:[0-9]+/'
like "… and the command that labels an issue" "$out" "curl -s -X POST -d '\{\"repo\":\"acme/tally\",\"number\":1,\"label\":\"airlock\",\"user\":\"alice\"\}' http://127\.0\.0\.1:[0-9]+/hooks/label"
like "serve answered the forge's signed webhook 202" "$out" "webhook was answered 202"
like "the run succeeded" "$out" 'run 1 +succeeded'
like "the trigger check asked the forge for alice's permission" "$out" '  check +alice has permission `admin`'
like "the PR is shown" "$out" 'PR +https://forge\.test:[0-9]+/acme/tally/pull/[0-9]+'
is "nothing left in its TMPDIR" "$(ls -A "$D")" ""
is "no process of the demo is left" "$(pgrep -f -- "$D/" | grep -vx "$$" | wc -l)" 0
done_testing
