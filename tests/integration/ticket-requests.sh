#!/bin/bash
# Forge requests per ticket (issue #33 item 1): the run record's request
# counts (every process: the supervisor, the broker, the gateway) against
# the test forge's own request log (--request-log), which sees every
# request whoever sent it. A changed count on either side fails it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "ticket tests need root (the forge's data dir, the sandbox)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
FE_REQUEST_LOG=$T_TMP/requests.jsonl
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
CHECK="$AIRLOCK_SRC/tests/integration/reqcheck.py"

# run_ticket LABEL: the bundled agent on acme/tally#1; the forge's log of
# this run alone (after the broker revoked every token) in log-LABEL.jsonl
run_ticket() {
  local l=$1 n0
  n0=$(wc -l <"$FE_REQUEST_LOG")
  "$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --record "$T_TMP/rec-$l.json" >"$T_TMP/out-$l.txt" 2>&1
  echo $? >"$T_TMP/rc-$l"
  # the review lease is closed after the record: wait for its revocation
  for _ in $(seq 100); do [ "$(tokens_in active)" = 0 ] && break; sleep 0.1; done
  tail -n +$((n0 + 1)) "$FE_REQUEST_LOG" >"$T_TMP/log-$l.jsonl"
}
# compare LABEL: every check of reqcheck.py holds
compare() {
  local l=$1 res
  res=$(python3 "$CHECK" "$T_TMP/rec-$l.json" "$T_TMP/log-$l.jsonl" 2>&1)
  diag "$l: $(tail -1 <<<"$res")"
  if grep -q MISMATCH <<<"$res" || ! grep -q '^counted=' <<<"$res"; then
    fail "$l: the record's requests match the forge's log"; diag "$(grep -v '^ok' <<<"$res")"
  else
    ok "$l: the record's requests match the forge's log (per process, 304s, App, git, counted)"
  fi
  sed -n 's/^counted=\([0-9]*\).*/\1/p' <<<"$res" >"$T_TMP/counted-$l"
}

run_ticket first
is "first: exits 0" "$(cat "$T_TMP/rc-first")" 0
[ "$(cat "$T_TMP/rc-first")" = 0 ] || diag "$(tail -20 "$T_TMP/out-first.txt")"
check "first: the record validates" validate_record "$T_TMP/rec-first.json"
compare first; c1=$(cat "$T_TMP/counted-first")
diag "first run: $c1 counted requests"

# control: the comparison sees a miscount (one request dropped from the log)
python3 - "$T_TMP/log-first.jsonl" "$T_TMP/log-drop.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
# drop the broker's first request (inside the record's span)
i = next(i for i, l in enumerate(lines) if '"airlock-broker/' in l)
open(sys.argv[2], "w").write("\n".join(lines[:i] + lines[i + 1:]) + "\n")
PY
like "control: a request missing from the log is a mismatch" \
  "$(python3 "$CHECK" "$T_TMP/rec-first.json" "$T_TMP/log-drop.jsonl")" "MISMATCH broker.sent"
done_testing
