#!/bin/bash
# `airlock run` with a network section: the listener inside the sandbox's
# netns, the egress proxy outside it, the proxy variables, the decisions
# log, and the proxy process's own confinement and lifetime.
. "$(dirname "$0")/lib.sh"
python3 -m http.server 0 --bind 127.0.0.1 >"$T_TMP/origin.log" 2>&1 &
ORIGIN=$!; on_exit "kill $ORIGIN"
for _ in $(seq 50); do PORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T_TMP/origin.log" | head -1); [ -n "$PORT" ] && break; sleep 0.1; done
POL=$T_TMP/net.yaml
cat >"$POL" <<YAML
version: 1
network:
  allow:
    - {host: web.test, port: $PORT, tls: false}
  pin: [{host: web.test, address: 127.0.0.1}]
YAML
chmod 644 "$POL"

code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")
is "control: the origin answers on the host's loopback" "$code" 200
out=$("$AIRLOCK" run -q -p "$POL" --log "$T_TMP/decisions.jsonl" -- sh -c '
  curl -s -o /dev/null -w "allowed=%{http_code}\n" http://web.test:'"$PORT"'/
  curl -s -o /dev/null -w "denied=%{http_code}\n" http://evil.test:'"$PORT"'/
  curl -s --noproxy "*" -o /dev/null -w "direct=%{http_code}\n" --max-time 3 http://127.0.0.1:'"$PORT"'/ || echo direct=refused
  echo "proxy=$HTTPS_PROXY"' 2>&1)
like "the allowed pair is reachable through the proxy" "$out" 'allowed=200'
like "another host is refused by the proxy with 403" "$out" 'denied=403'
like "bypassing the proxy does not reach the host's loopback" "$out" 'direct=(000|refused)'
like "HTTPS_PROXY points at the in-sandbox listener" "$out" 'proxy=http://127.0.0.1:3128'
dec=$(cat "$T_TMP/decisions.jsonl")
like "--log holds an allow decision for web.test" "$dec" '"host":"web.test".*"decision":"allow"'
like "--log holds the deny with its reason" "$dec" '"host":"evil.test".*"decision":"deny","reason":"not-allowed"'
if grep -q '"address":"127.0.0.1:'"$PORT"'"' <<<"$(grep evil.test <<<"$dec")"; then fail "a denied request never shows a dialled address"; else ok "a denied request never shows a dialled address"; fi

# no network section: nothing listens, no proxy runs
out=$("$AIRLOCK" run -q -- sh -c 'curl -s -o /dev/null -w "%{http_code}" --max-time 3 http://127.0.0.1:3128/ || echo refused; env | grep -ci proxy' 2>&1)
like "without a network section nothing listens on 3128" "$out" '^(000)?refused'
like "without a network section no proxy variables" "$out" '0$'

# the proxy process: confined, and gone with its supervisor
"$AIRLOCK" run -q -p "$POL" -- sleep 6161 &
sup=$!
ppid=""
for _ in $(seq 50); do
  for p in $(pgrep -x airlock-proxy); do tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | grep -q "sleep 6161" && ppid=$p; done
  [ -n "$ppid" ] && break; sleep 0.1
done
if [ -n "$ppid" ]; then
  st=$(cat /proc/$ppid/status)
  sst=$(cat /proc/$sup/status)
  like "control: the supervisor itself is not under seccomp" "$(grep Seccomp: <<<"$sst")" $'Seccomp:\t0'
  like "the proxy runs under seccomp" "$(grep Seccomp: <<<"$st")" $'Seccomp:\t2'
  like "the proxy has no_new_privs" "$st" $'NoNewPrivs:\t1'
  like "the proxy has no effective capabilities" "$(grep CapEff <<<"$st")" 'CapEff:\s+0000000000000000'
  if [ "$(id -u)" = 0 ]; then
    like "as root, the proxy runs as nobody" "$(grep ^Uid: <<<"$st")" $'Uid:\t65534'
  fi
else
  fail "the proxy process was found"
fi
kill -KILL $sup; wait $sup 2>/dev/null
gone=1
for _ in $(seq 30); do pgrep -f "sleep 6161" >/dev/null || { gone=0; break; }; sleep 0.1; done
is "after SIGKILL of the supervisor, neither the proxy nor the sandbox remains" "$gone" 0
done_testing
