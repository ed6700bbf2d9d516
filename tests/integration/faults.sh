#!/bin/bash
# Issue #14: nothing lost, nothing left alive. Every way a run can end, the
# broker's own death included, ends with the tokens confirmed dead (401
# from the forge, seen by a process holding the token), and whatever this
# test started is gone. Every process, socket and directory here is this
# test's own (under T_TMP, found by path or by the pid we started).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/forgeenv.sh"
[ -x "${AIRLOCK_FORGE:-}" ] || { skip "airlock-forge was not built"; done_testing; exit 0; }
EXEC=${BROKER_LEASE_EXEC:?}
for p in curl python3 openssl; do
  command -v $p >/dev/null || { skip "$p missing"; done_testing; exit 0; }
done
forge_env_start || { fail "the test forge and broker start"; done_testing; exit 1; }
API="https://127.0.0.1:$FE_HTTPS"
token_state() { admin /tokens | python3 -c '
import json,sys
st=[t["state"] for t in json.load(sys.stdin) if t["fingerprint"]==sys.argv[1]]
print(st[0] if st else "none")' "$1"; }

# watch.sh OUT: a holder of the git token that asks the forge with it every
# 0.1 s and appends the HTTP status to OUT, until it sees 401 (at most 60 s).
# The token goes to curl on stdin (-K -), never on a command line.
cat >"$T_TMP/watch.sh" <<SH
#!/bin/sh
out=\$1
( i=0
  while [ \$i -lt 600 ]; do
    c=\$(printf 'header = "Authorization: Bearer %s"\n' "\$AL_GIT_TOKEN" |
      curl -s -K - --noproxy '*' --cacert "$FE_CA" -o /dev/null -w '%{http_code}' "$API/installation/repositories")
    echo "\$c" >>"\$out"
    [ "\$c" = 401 ] && exit 0
    i=\$((i + 1)); sleep 0.1
  done ) </dev/null >/dev/null 2>&1 &
echo \$! >"\$out.pid"
SH
chmod 755 "$T_TMP/watch.sh"
last_code() { tail -n1 "$1" 2>/dev/null; }
wait_code() { # OUT CODE SECONDS
  local i
  for i in $(seq $(($3 * 10))); do [ "$(last_code "$1")" = "$2" ] && return 0; sleep 0.1; done
  return 1
}

# A broker of our own for the crash cases: its own config, socket, state.
B_DIR=$T_TMP/b
mkdir -p "$B_DIR"; chmod 700 "$B_DIR"
sed "s#state_dir: .*#state_dir: $B_DIR/state#" "$FE_DIR/secret/broker.yaml" >"$B_DIR/broker.yaml"
B_SOCK=$B_DIR/broker.sock
b_start() { # LOG -> B_PID
  "$AIRLOCK_NET" broker -c "$B_DIR/broker.yaml" --socket "$B_SOCK" >>"$1" 2>&1 &
  B_PID=$!
  on_exit "kill -9 $B_PID"
  local i
  for i in $(seq 100); do
    [ -S "$B_SOCK" ] && grep -q 'broker ready' "$1" && return 0
    kill -0 $B_PID 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# ---- row 1 (b): SIGKILL the broker mid-lease; a restarted broker revokes ----
check "[crash] our broker starts" b_start "$B_DIR/b1.log"
"$EXEC" "$B_SOCK" acme/tally hold "$T_TMP/watch.sh" "$T_TMP/w1" >"$T_TMP/hold1.out" 2>&1 &
HOLD=$!
on_exit "kill -9 $HOLD"
for _ in $(seq 100); do grep -q '^ticket' "$T_TMP/hold1.out" && break; sleep 0.05; done
on_exit "kill -9 \$(cat $T_TMP/w1.pid)"
fp=$(awk '$1=="git"{print $2}' "$T_TMP/hold1.out")
fp2=$(awk '$1=="ticket"{print $2}' "$T_TMP/hold1.out")
check "[crash] the holder's git token works (200)" wait_code "$T_TMP/w1" 200 10
kill -9 $B_PID; wait $B_PID 2>/dev/null
sleep 0.5
is "[crash] control: with the broker SIGKILLed, the token still works" "$(last_code "$T_TMP/w1")" 200
is "[crash] control: the forge says the ticket token is active" "$(token_state "$fp2")" active
check "[crash] a restarted broker (same config and socket) starts" b_start "$B_DIR/b2.log"
check "[crash] the restarted broker revokes the git token: the holder gets 401 within 10 s" \
  wait_code "$T_TMP/w1" 401 10
for _ in $(seq 100); do [ "$(token_state "$fp2")" = revoked ] && break; sleep 0.1; done
is "[crash] ... and the ticket token (forge: revoked)" "$(token_state "$fp2")" revoked
is "[crash] the forge: the git token is revoked" "$(token_state "$fp")" revoked
like "[crash] the restarted broker says it found them in the keyring" "$(cat "$B_DIR/b2.log")" \
  "2 token\\(s\\) minted by an earlier run of this broker were never confirmed dead"
like "[crash] ... and confirmed each 401" "$(cat "$B_DIR/b2.log")" "token $fp2 revoked, 401 confirmed"
if grep -qE 'gh[suo]_[A-Za-z0-9]{20}' "$B_DIR"/b*.log; then fail "[crash] a broker log holds a token"; else ok "[crash] no broker log holds a token"; fi
kill -9 $HOLD 2>/dev/null; wait $HOLD 2>/dev/null
kill -TERM $B_PID; wait $B_PID
is "[crash] the restarted broker stops cleanly (exit 0: nothing unconfirmed)" "$?" 0
check "[crash] a third start finds nothing left to revoke" b_start "$B_DIR/b3.log"
if grep -q 'earlier run' "$B_DIR/b3.log"; then fail "[crash] the keyring was emptied as tokens died"; else ok "[crash] the keyring was emptied as tokens died"; fi
kill -TERM $B_PID; wait $B_PID

# ---- row 5: a stopping broker never deletes a newer broker's socket ----------
check "[socket] broker A starts" b_start "$B_DIR/sa.log"
A_PID=$B_PID
rm -f "$B_SOCK" # A keeps listening on its (now nameless) socket
check "[socket] broker B starts on the same path" b_start "$B_DIR/sb.log"
kill -TERM $A_PID; wait $A_PID
if [ -S "$B_SOCK" ]; then ok "[socket] A's exit left B's socket in place"; else fail "[socket] A's exit left B's socket in place"; fi
like "[socket] A says why it left it" "$(cat "$B_DIR/sa.log")" "another broker's socket now; left in place"
out=$("$AIRLOCK" token lease --repo acme/tally --socket "$B_SOCK" </dev/null 2>&1)
like "[socket] B still answers leases on that path" "$out" 'revoked=yes confirmed=yes'
kill -TERM $B_PID; wait $B_PID
if [ -e "$B_SOCK" ]; then fail "[socket] B, stopping, removes its own socket"; else ok "[socket] B, stopping, removes its own socket"; fi

done_testing
