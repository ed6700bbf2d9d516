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
# the planted tokens must be the run's real ones: env mode (docs/policy.md)
POL=$T_TMP/review.yaml
sed 's/^credentials:$/credentials:\n  mode: env/' "$FE_POLICY" >"$POL"; chmod 644 "$POL"
grep -q '^  mode: env$' "$POL" || fail "the review policy asks for env mode"
A=$T_TMP/agent
mkdir -p "$A"; chmod 755 "$A"
cp "$AIRLOCK_SRC/tests/integration/review-agent" "$AIRLOCK_SRC/examples/agents/agentlib.py" "$A/"
chmod 755 "$A/review-agent"; chmod 644 "$A/agentlib.py"
sed -i 's|sys.path.insert(0, "/opt/airlock-agents")|sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))|' "$A/review-agent"

run_case() { # MODE TICKET [LABEL]
  local l=${3:-$1}
  local rec=$T_TMP/rec-$l.json
  "$AIRLOCK" ticket "acme/tally#$2" -p "$POL" --agent "$A/review-agent" --record "$rec" -- "$1" \
    >"$T_TMP/out-$l.txt" 2>&1
  echo $? >"$T_TMP/rc-$l"
  admin /comments >"$T_TMP/comments-$l.json"
  python3 "$AIRLOCK_SRC/tests/integration/review_check.py" "$1" "$rec" "$T_TMP/comments-$l.json" \
    "$T_TMP/out-$l.txt" >"$T_TMP/check-$l.txt" 2>&1 || echo "FAIL review_check.py ran	$(tail -3 "$T_TMP/check-$l.txt")" >>"$T_TMP/check-$l.txt"
  while IFS= read -r line; do
    case $line in
      PASS\ *) ok "[$l] ${line#PASS }" ;;
      FAIL\ *) fail "[$l] ${line%%$'\t'*}"; diag "${line#*$'\t'}" ;;
      *) diag "$line" ;;
    esac
  done <"$T_TMP/check-$l.txt"
}
admin_post() { curl -s --noproxy '*' -X POST -d "$2" "http://127.0.0.1:$FE_ADMIN$1"; }

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

# --- the new stateless installation tokens (JWT-shaped ghs_, ~500
# characters, dots inside): the same plant, every place, every encoding ---
like "[jwt] the forge mints JWT-shaped tokens" "$(admin_post /settings '{"token_format":"jwt"}')" '"token_format": *"jwt"'
run_case plant 1 jwt
like "[jwt] the run's tokens were JWT-shaped (over 200 characters)" \
  "$(python3 -c 'import re,sys; print(min(int(n) for n in re.findall(r"LEN (?:git|ticket) ([0-9]+)", open(sys.argv[1]).read())))' "$T_TMP/out-jwt.txt" 2>/dev/null || echo 0)" '^[2-9][0-9][0-9]$'
admin_post /settings '{"token_format":"classic"}' >/dev/null

# --- what cannot be read is said, never "0 files" (forge faults on the
# review's GETs only: the agent's writes are POSTs) ---
R=$T_TMP/rec-fault.json
admin_post /faults '{"faults":[{"path":"/repos/acme/tally/pulls/*","method":"GET","status":403,"message":"Resource not accessible by integration"},{"path":"/repos/acme/tally/git/*","method":"GET","status":404,"message":"Not Found"}]}' >/dev/null
"$AIRLOCK" ticket acme/tally#2 -p "$POL" --agent "$A/review-agent" --record "$R" -- clean >"$T_TMP/out-fault.txt" 2>&1
admin_post /faults '{"faults":[]}' >/dev/null
rv() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$R" "$1"; }
is "[fault] the review phase fails when the PR's files cannot be read" \
  "$(rv '[p["status"] for p in r["phases"] if p["name"]=="review"]')" "['failed']"
nr=$(rv '"\n".join(r["review"]["could_not_read"])')
for what in "the pull request's files" "the pull request's commits" "the pull request's reviews" \
  "the pull request's review comments" "the head commit's tree" "the base commit's tree"; do
  like "[fault] could not read $what: said, with the forge's answer" "$nr" "could not read $what: .*(403|404)"
done
out=$(cat "$T_TMP/out-fault.txt")
like "[fault] the summary says NOT READ, with the reason" "$out" "NOT READ +could not read the pull request's files"
like "[fault] the phase line says it could not read everything" "$out" "review +failed .*COULD NOT READ"
admin /comments >"$T_TMP/comments-fault.json"
notes=$(python3 -c 'import json,sys; rid=json.load(open(sys.argv[1]))["run_id"]; print([c["body"] for c in json.load(open(sys.argv[2])) if c["body"].startswith("<!-- airlock-review-notes run=%s " % rid)][0])' "$R" "$T_TMP/comments-fault.json")
like "[fault] the notes on the PR have a Could not read section" "$notes" "### Could not read \([1-9]"
like "[fault] ... and say the notes are incomplete" "$notes" "some of the pull request could not be read"
check "[fault] the record validates" validate_record "$R"
is "[fault] no token is active after the run" "$(tokens_in active)" 0

# --- a 429 without Retry-After on the review's reads (issue #27 item 5:
# the review backed off 60+120+240 s, past its lease, and posted no notes).
# GitHub asks for a minute, then longer; the review's forge client now has
# a deadline inside the review lease, so the second wait is refused at once
# and the notes are still posted. Control: the same fault with Retry-After
# 1 is waited out and the tree is read (the fault is on the review's path).
R=$T_TMP/rec-429ok.json
admin_post /faults '{"faults":[{"path":"/repos/acme/tally/git/trees/*","method":"GET","status":429,"retry_after":1,"times":1}]}' >/dev/null
"$AIRLOCK" ticket acme/tally#2 -p "$POL" --agent "$A/review-agent" --record "$R" -- clean >"$T_TMP/out-429ok.txt" 2>&1
hits=$(admin /faults | python3 -c 'import json,sys; print(sum(f.get("hits",0) for f in json.load(sys.stdin)))')
admin_post /faults '{"faults":[]}' >/dev/null
is "[429 control] the fault was met by the review's tree read" "$hits" 1
check_not "[429 control] with Retry-After 1 the trees were read" grep -q "could not read the head commit's tree" <(rv '"\n".join(r["review"]["could_not_read"])')
R=$T_TMP/rec-429.json
admin_post /faults '{"faults":[{"path":"/repos/acme/tally/git/trees/*","method":"GET","status":429,"times":2}]}' >/dev/null
"$AIRLOCK" ticket acme/tally#2 -p "$POL" --agent "$A/review-agent" --record "$R" -- clean >"$T_TMP/out-429.txt" 2>&1
admin_post /faults '{"faults":[]}' >/dev/null
nr=$(rv '"\n".join(r["review"]["could_not_read"])')
like "[429] the head tree is not read, and the reason is the deadline inside the lease" "$nr" "could not read the head commit's tree: .*does not fit in the [0-9]+s left before the deadline"
admin /comments >"$T_TMP/comments-429.json"
notes=$(python3 -c 'import json,sys; rid=json.load(open(sys.argv[1]))["run_id"]; print([c["body"] for c in json.load(open(sys.argv[2])) if c["body"].startswith("<!-- airlock-review-notes run=%s " % rid)][0])' "$R" "$T_TMP/comments-429.json" 2>/dev/null)
like "[429] the notes are still posted on the PR, with a Could not read section" "$notes" "### Could not read \([1-9]"
check "[429] the record validates" validate_record "$R"
is "[429] no token is active after the run" "$(tokens_in active)" 0
done_testing
