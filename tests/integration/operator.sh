#!/bin/bash
# The operator's view of `airlock ticket` (issue #18), each row of its "Why"
# as written: the agent cannot print airlock's lines (a spoofing agent), the
# exit status means a verified PR, -q hides progress only, a usage error
# writes nothing, and the advice given for a broker that cannot be reached
# leads somewhere.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ "$(id -u)" = 0 ] || { skip "ticket tests need root (the forge's data dir and the sandbox as root)"; done_testing; exit 0; }
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
forge_env_start || { fail "forge + broker environment"; done_testing; exit 1; }
ok "forge on $FE_HTTPS, broker on its socket"
G='agent│ '

# --- 1. An agent can print airlock's lines ---
# The spoofing agent does the real job (the bundled patch-agent opens a PR),
# then prints airlock's own summary lines, a bidi override and a line split
# across two writes, on stdout and on stderr.
A=$T_TMP/spoof; mkdir -p "$A"; chmod 755 "$A"
cp "$AIRLOCK_SRC/examples/agents/patch-agent" "$AIRLOCK_SRC/examples/agents/agentlib.py" "$A/"
cat >"$A/agent" <<'SH'
#!/bin/sh
"$(dirname "$0")/patch-agent"; rc=$?
printf 'airlock ticket: review    ok          3 ms  0 file(s) that run outside the sandbox\n'
printf 'airlock: all checks passed\n' >&2
printf 'airlock ticket: pull request https://forge.test/acme/tally/pull/999 \342\200\256 gnissap\n'
printf 'half a ' >&2; sleep 0.3; printf 'line, then\r\033[1Kairlock: overwritten\n' >&2
printf 'no newline at the end'
exit $rc
SH
chmod 755 "$A/agent"
raw=$(cd "$A" && sh -c 'sed -n "/^printf/p" agent | sh' 2>&1)
like "control: the spoofing agent's raw output has airlock's line at column 0" "$raw" '^airlock ticket: review    ok'
if printf '%s' "$raw" | grep -q $'\xe2\x80\xae'; then ok "control: the raw output holds U+202E"; else fail "control: the raw output holds U+202E"; fi
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$A/agent" --record "$T_TMP/rec-spoof.json" 2>&1); rc=$?
is "the spoofing agent's run still made its PR (exit 0)" "$rc" 0
[ $rc -eq 0 ] || diag "$out"
bad=$(grep -E 'all checks passed|pull/999|ok          3 ms  0 file|overwritten|no newline at the end' <<<"$out" | grep -v "^$G" || true)
is "every fake line is visibly the agent's (starts with the gutter)" "$bad" ""
like "the fake summary is shown behind the gutter" "$out" "${G}airlock ticket: review    ok"
like "stderr relayed live goes through the gutter too" "$out" "${G}airlock: all checks passed"
like "a line split across two writes is one line behind the gutter, CR escaped" "$out" "${G}half a line, then\\\\x0d\\\\x1b\\[1Kairlock: overwritten"
if printf '%s' "$out" | grep -q $'\xe2\x80\xae'; then fail "U+202E never reaches the operator raw"; else ok "U+202E never reaches the operator raw"; fi
like "U+202E is shown escaped" "$out" '\\u202e gnissap'
if grep -qx "${G}no newline at the end" <<<"$out"; then ok "an unterminated last line is ended (airlock's next line starts at column 0)"; else fail "an unterminated last line is ended (airlock's next line starts at column 0)"; fi
last=$(tail -n 3 <<<"$out")
if grep -vq '^airlock ticket: ' <<<"$last"; then fail "airlock's summary comes after the agent's output"; diag "$last"; else ok "airlock's summary comes after the agent's output"; fi
like "the summary's PR is the verified one, not the agent's claim" "$out" '^airlock ticket: pull request https://forge.test:[0-9]+/acme/tally/pull/[0-9]+: (opened by the (supervisor|agent), )?verified on the forge'

# --- 2. Exit 0 without a PR ---
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent /usr/bin/true --record "$T_TMP/rec-true.json" 2>&1); rc=$?
is "an agent that exits 0 and opens no PR → exit 3, not 0" "$rc" 3
like "… and the summary says no PR came from this run" "$out" 'no pull request from this run.s branch on the forge'
like "control: the record says the agent exited 0" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["agent"]["exit_status"], r["pull_request"]["verified"] if "pull_request" in r else None)' "$T_TMP/rec-true.json")" '^0 (False|None)$'

# --- 5. ticket -q hides airlock's progress only ---
Q=$T_TMP/quiet; mkdir -p "$Q"; chmod 755 "$Q"
printf '#!/bin/sh\necho HELLO-FROM-THE-AGENT\n' >"$Q/agent"; chmod 755 "$Q/agent"
out=$("$AIRLOCK" ticket acme/tally#1 -q -p "$FE_POLICY" --agent "$Q/agent" --record "$T_TMP/rec-q.json" 2>&1)
like "ticket -q still shows the agent's stdout" "$out" "${G}HELLO-FROM-THE-AGENT"
if grep -qE 'policy +ok|lease +ok' <<<"$out"; then fail "ticket -q shows no progress lines"; else ok "ticket -q shows no progress lines"; fi
out=$("$AIRLOCK" ticket acme/tally#1 -p "$FE_POLICY" --agent "$Q/agent" --record "$T_TMP/rec-q2.json" 2>&1)
like "control: without -q the progress lines are there" "$out" 'policy +ok'

# --- 6. ticket without -p ---
out=$("$AIRLOCK" ticket acme/tally#1 --agent /usr/bin/true --record "$T_TMP/rec-nop.json" 2>&1); rc=$?
is "ticket without -p exits 2" "$rc" 2
like "… saying what to pass" "$out" '^airlock ticket: a ticket run needs a policy: -p FILE'
like "… with the usage line" "$out" 'usage: airlock ticket OWNER/REPO#N -p POLICY'
[ -e "$T_TMP/rec-nop.json" ] && fail "ticket without -p writes no run record" || ok "ticket without -p writes no run record"

# --- 3. Advice that works: a broker this user cannot reach ---
ensure_test_user
if id "$T_USER" >/dev/null 2>&1; then
  U=$T_TMP/unpriv; mkdir -p "$U"; chmod 755 "$U"
  write_policy "$U/airlock.yaml" "$FE_SOCK"   # the socket is in a 0700 directory of root's
  cp "$Q/agent" "$U/agent"
  # the record where this user may write it (else the run stops on that first: issue #26)
  mkdir -p "$U/rec"; chown "$T_USER" "$U/rec"
  out=$(cd "$U" && as_user "$AIRLOCK" ticket acme/tally#1 -p "$U/airlock.yaml" --agent "$U/agent" --record "$U/rec/rec.json" 2>&1); rc=$?
  like "unprivileged, broker out of reach: refused (exit 1)" "$rc" '^1$'
  if grep -q -- '--accept-unprotected' <<<"$out"; then
    # the advice is given: it must lead somewhere else than the same failure
    out2=$(cd "$U" && as_user "$AIRLOCK" ticket acme/tally#1 -p "$U/airlock.yaml" --accept-unprotected --agent "$U/agent" --record "$U/rec/rec2.json" 2>&1)
    if grep -q 'Permission denied\|connecting to the broker' <<<"$out2"; then fail "advice: --accept-unprotected is not offered when it fails the same way"; diag "$out2"; else ok "advice: --accept-unprotected leads past the broker"; fi
  else
    ok "advice: --accept-unprotected is not offered when the broker cannot be reached"
  fi
  like "the message says what to do about the socket instead" "$out" 'may not connect to the broker.s socket'
else
  skip "no unprivileged test user"; skip "no unprivileged test user"; skip "no unprivileged test user"
fi
is "no token is active after all of it" "$(tokens_in active)" 0
done_testing
