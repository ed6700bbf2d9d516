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
# the ETag cache goes beside this test's run records, not the user's
export XDG_STATE_HOME=$T_TMP/state
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

like "first: airlock show prints the counted requests and the rest" \
  "$("$AIRLOCK" show "$T_TMP/rec-first.json" 2>&1)" \
  "forge requests: $c1 counted \\([0-9]+ sent: [0-9]+ answered 304, [0-9]+ with the App's JWT, 5 git, [0-9]+ refused credentials\\)"

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

# --- a second run of the same repository: the audit's reads are conditional
# on the first run's ETags (the cache beside the run records) ---
run_ticket second
is "second: exits 0" "$(cat "$T_TMP/rc-second")" 0
compare second; c2=$(cat "$T_TMP/counted-second")
run_ticket third
is "third (the cache now holds the second's answers): exits 0" "$(cat "$T_TMP/rc-third")" 0
compare third; c3=$(cat "$T_TMP/counted-third")
nm3=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"]["not_modified"])' "$T_TMP/rec-third.json")
diag "second run: $c2 counted, third: $c3 counted, $nm3 answered 304"
like "third: the audit's reads were answered 304 (the cache was used)" "$nm3" '^([1-9][0-9]*)$'
ok_le() { if [ "$2" -le "$3" ]; then ok "$1 ($2 <= $3)"; else fail "$1 ($2 > $3)"; fi; }
ok_le "third: at most 20 counted forge requests for the demo ticket" "$c3" 20
same=$(python3 -c 'import json,sys
a=json.load(open(sys.argv[1]))["audit"]["report"]; b=json.load(open(sys.argv[2]))["audit"]["report"]
s=lambda r: [(c["id"], c["status"], c.get("evidence")) for c in r["criteria"]]
print("same" if s(a)==s(b) else "differ")' "$T_TMP/rec-second.json" "$T_TMP/rec-third.json")
is "third: the audit saw what the second saw (the kept answers are the forge's)" "$same" same

# --- the cache never hides a change: weaken protection between two runs ---
ws=$(curl -s --noproxy '*' -X POST "http://127.0.0.1:$FE_ADMIN/protection" --data-binary \
  '{"repo":"acme/tally","branch":"main","set":{"required_pull_request_reviews":{"required_approving_review_count":0}}}' \
  -o /dev/null -w '%{http_code}')
is "control: the forge's protection of main is weakened" "$ws" 200
run_ticket weak
is "weakened: the run is refused (exit 4): the audit saw the change" "$(cat "$T_TMP/rc-weak")" 4
like "weakened: ... because approvals no longer hold" "$(cat "$T_TMP/out-weak.txt")" 'reviews\.approvals'
prot=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
  e=json.loads(l)
  if e["path"].endswith("/branches/main/protection"): print(e["status"], e["conditional"])' "$T_TMP/log-weak.jsonl")
is "weakened: the protection read was conditional and answered 200 (a new body), not 304" "$prot" "200 True"

# --- the cache file is hostile input: one writable by others is not used ---
curl -s --noproxy '*' -X POST "http://127.0.0.1:$FE_ADMIN/protection" -o /dev/null --data-binary \
  '{"repo":"acme/tally","branch":"main","set":{"required_pull_request_reviews":{"required_approving_review_count":1,"require_code_owner_reviews":true,"dismiss_stale_reviews":true,"require_last_push_approval":true,"bypass_pull_request_allowances":{"users":[],"teams":[],"apps":[]}}}}'
cache=$(ls "$XDG_STATE_HOME"/airlock/etags/*-acme+tally.json 2>/dev/null | head -1)
check "the cache is beside the run records, one file for the forge and acme/tally" test -f "$cache"
is "the cache file is 0600" "$(stat -c %a "$cache")" 600
chmod 666 "$cache"
run_ticket hostile
is "hostile cache (writable by others): the run still exits 0 (protection restored)" "$(cat "$T_TMP/rc-hostile")" 0
like "hostile cache: the warning names the file and the rule" "$(cat "$T_TMP/out-hostile.txt")" 'ETag cache .*acme\+tally.json ignored: not owned by this user, or writable by others'
prot=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
  e=json.loads(l)
  if e["path"].endswith("/branches/main/protection"): print(e["status"], e["conditional"])' "$T_TMP/log-hostile.jsonl")
is "hostile cache: the protection read was not conditional" "$prot" "200 False"
compare hostile
done_testing
