#!/bin/bash
# The reviewer's view (issue #16): a hostile pull request with every case of
# the issue's "Why" (review-agent plant), its notes in the run record, in
# the terminal summary and on the PR itself (read back from the forge); then
# the same PR without the tokens (review-agent clean): the secret scan's
# negative control. review_check.py lists every check.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "review tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
A=$T_TMP/agent
mkdir -p "$A"; chmod 755 "$A"
cp "$AIRLOCK_SRC/tests/integration/review-agent" "$AIRLOCK_SRC/examples/agents/agentlib.py" "$A/"
chmod 755 "$A/review-agent"; chmod 644 "$A/agentlib.py"
sed -i 's|sys.path.insert(0, "/opt/airlock-agents")|sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))|' "$A/review-agent"

run_case() { # MODE TICKET
  local rec=$T_TMP/rec-$1.json
  "$AIRLOCK" ticket "acme/tally#$2" -p "$FE_POLICY" --agent "$A/review-agent" --record "$rec" -- "$1" \
    >"$T_TMP/out-$1.txt" 2>&1
  echo $? >"$T_TMP/rc-$1"
  admin /comments >"$T_TMP/comments-$1.json"
  python3 "$AIRLOCK_SRC/tests/integration/review_check.py" "$1" "$rec" "$T_TMP/comments-$1.json" \
    "$T_TMP/out-$1.txt" >"$T_TMP/check-$1.txt" 2>&1 || echo "FAIL review_check.py ran	$(tail -3 "$T_TMP/check-$1.txt")" >>"$T_TMP/check-$1.txt"
  while IFS= read -r line; do
    case $line in
      PASS\ *) ok "[$1] ${line#PASS }" ;;
      FAIL\ *) fail "[$1] ${line%%$'\t'*}"; diag "${line#*$'\t'}" ;;
      *) diag "$line" ;;
    esac
  done <"$T_TMP/check-$1.txt"
}

run_case plant 1
like "[plant] the run reached the review" "$(cat "$T_TMP/out-plant.txt")" 'review +warn'
grep -q '^FAIL' "$T_TMP/check-plant.txt" && sed 's/^/#   /' "$T_TMP/out-plant.txt" | tail -80
check "[plant] the record validates" validate_record "$T_TMP/rec-plant.json"
if grep -qE 'gh[pousr]_[A-Za-z0-9]{30,}' "$T_TMP/rec-plant.json" "$T_TMP/out-plant.txt"; then
  fail "[plant] no token value in the record or the summary"
else ok "[plant] no token value in the record or the summary"; fi
is "[plant] no token is active after the run (the review's lease too)" "$(tokens_in active)" 0

run_case clean 2
check "[clean] the record validates" validate_record "$T_TMP/rec-clean.json"
is "[clean] no token is active after the run" "$(tokens_in active)" 0
done_testing
