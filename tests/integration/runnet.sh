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

# the stop (issue #19): the supervisor waits for the proxy by event, not by
# a poll interval; what the proxy decided just before the command exited is
# still in the log, the summary after it, and no process is left. Marker:
# the log's path, which is on the proxy's command line (a fork of airlock).
LAST=$T_TMP/last-$$.jsonl
out=$("$AIRLOCK" run -q -p "$POL" --log "$LAST" -- sh -c '
  curl -s -o /dev/null -w "allowed=%{http_code}\n" http://web.test:'"$PORT"'/
  curl -s -o /dev/null -w "last=%{http_code}\n" http://last.test:'"$PORT"'/' 2>&1)
like "stop: the last request was decided (403) just before the command exited" "$out" 'last=403'
like "stop: the deny made just before exit is in the log" "$(grep '"last.test"' "$LAST")" '"decision":"deny","reason":"not-allowed"'
like "stop: the allowed tunnel's end is in the log" "$(grep '"event":"close"' "$LAST")" '"host":"web.test"'
like "stop: the summary is the last line, with exact counts" "$(tail -n 1 "$LAST")" '^\{"connections":2,"allowed":1,"denied":1,.*"event":"summary"'
if pgrep -f "$LAST" >/dev/null; then fail "stop: no process of the run is left once airlock run returned"; else ok "stop: no process of the run is left once airlock run returned"; fi
# control: a proxy that is killed instead of stopped writes no summary,
# and the process check above finds a running proxy by the same marker
KLOG=$T_TMP/killed-$$.jsonl
"$AIRLOCK" run -q -p "$POL" --log "$KLOG" -- sh -c 'curl -s -o /dev/null http://last.test:'"$PORT"'/; sleep 6262' >/dev/null 2>&1 &
ksup=$!
for _ in $(seq 100); do grep -q '"last.test"' "$KLOG" 2>/dev/null && break; sleep 0.1; done
found=$(pgrep -x airlock-proxy | while read -r p; do tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | grep -qF "$KLOG" && echo yes; done)
is "control: the marker finds the proxy of a running run" "$found" yes
kill -KILL $ksup; wait $ksup 2>/dev/null
for _ in $(seq 30); do pgrep -f "$KLOG" >/dev/null || break; sleep 0.1; done
like "control: the killed run's deny was logged when it was made" "$(cat "$KLOG")" '"host":"last.test".*"decision":"deny"'
if grep -q '"event":"summary"' "$KLOG"; then fail "control: a killed proxy leaves no summary"; else ok "control: a killed proxy leaves no summary"; fi

# egress budget: a discard server on the host's loopback, a 64 KiB budget
python3 -c '
import socket, threading, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
def drain(c):
    try:
        while c.recv(65536): pass
    except OSError: pass
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=drain, args=(c,), daemon=True).start()
' >"$T_TMP/sink.port" &
SINK=$!; on_exit "kill $SINK"
for _ in $(seq 50); do [ -s "$T_TMP/sink.port" ] && break; sleep 0.1; done
SPORT=$(cat "$T_TMP/sink.port")
cat >"$T_TMP/budget.yaml" <<YAML
version: 1
network:
  allow: [{host: sink.test, port: $SPORT, tls: false}]
  pin: [{host: sink.test, address: 127.0.0.1}]
  egress_budget: 64KiB
YAML
chmod 644 "$T_TMP/budget.yaml"
cat >"$T_TMP/budget.py" <<'PY'
import socket, sys, time
port = sys.argv[1]
def tunnel():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(f"CONNECT sink.test:{port} HTTP/1.1\r\nHost: sink.test:{port}\r\n\r\n".encode())
    return s, s.recv(4096).decode(errors="replace")
s, head = tunnel()
print("first:", head.split("\r\n")[0])
sent, t0 = 0, time.time()
try:
    while sent < 4 << 20 and time.time() - t0 < 15:
        s.sendall(b"x" * 16384); sent += 16384
    # the kernel may have buffered it all: the proxy's answer is the close
    s.settimeout(10)
    data = s.recv(1)
    print("cut: yes after %d bytes in %.1fs (closed)" % (sent, time.time() - t0) if data == b"" else "cut: no")
except OSError as e:
    print("cut: yes after %d bytes in %.1fs" % (sent, time.time() - t0))
s2, head2 = tunnel()
print("second:", " ".join(head2.split()))
PY
chmod 644 "$T_TMP/budget.py"
out=$("$AIRLOCK" run -q -p "$T_TMP/budget.yaml" --log "$T_TMP/budget.jsonl" --env SPORT="$SPORT" -- sh -c "python3 - \$SPORT < /dev/stdin" <"$T_TMP/budget.py" 2>&1)
like "control: the first tunnel opens" "$out" 'first: HTTP/1.1 200'
like "a tunnel still sending when the egress budget is spent is cut, promptly" "$out" 'cut: yes after [0-9]+ bytes in [0-9]\.'
like "a new request after the budget is refused with 403 egress-budget and a readable body" "$out" 'second: HTTP/1.1 403 .*X-Airlock-Deny: egress-budget.*airlock: denied \(egress-budget\)'
like "the log names the budget" "$(cat "$T_TMP/budget.jsonl")" '"reason":"egress-budget"'

# a huge target is logged capped, with its length and hash
big=$(head -c 3000 /dev/zero | tr '\0' 'a')
"$AIRLOCK" run -q -p "$POL" --log "$T_TMP/big.jsonl" -- sh -c "curl -s -o /dev/null http://web.test:$PORT/$big" >/dev/null 2>&1
line=$(grep -c . "$T_TMP/big.jsonl")
len=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$T_TMP/big.jsonl")
like "a 3000-byte target is logged as a capped prefix with its length and hash" "$(cat "$T_TMP/big.jsonl")" '\.\.\.\([0-9]+ bytes, sha256:[0-9a-f]{12}\)'
[ "${len:-99999}" -lt 2000 ] && ok "each audit line stays small ($len bytes)" || fail "each audit line stays small ($len bytes)"

# the standalone proxy (Docker/Kubernetes deployments) confines itself too
if [ "$(id -u)" = 0 ]; then
  for mode in confined unconfined; do
    extra=(); [ $mode = unconfined ] && extra=(--no-confine)
    "$AIRLOCK" proxy -p "$POL" --listen 127.0.0.1:0 "${extra[@]}" >"$T_TMP/sp.out" 2>&1 &
    sp=$!
    for _ in $(seq 50); do grep -q "listening" "$T_TMP/sp.out" && break; sleep 0.1; done
    sleep 0.2
    st=$(cat /proc/$sp/status 2>/dev/null)
    kill $sp; wait $sp 2>/dev/null
    if [ $mode = confined ]; then
      like "standalone proxy: runs as nobody once listening" "$(grep ^Uid: <<<"$st")" $'Uid:\t65534'
      like "standalone proxy: under seccomp" "$(grep Seccomp: <<<"$st")" $'Seccomp:\t2'
    else
      like "control: with --no-confine the standalone proxy keeps root" "$(grep ^Uid: <<<"$st")" $'Uid:\t0'
    fi
  done
fi

# no network section: nothing listens, no proxy runs
out=$("$AIRLOCK" run -q -- sh -c 'curl -s -o /dev/null -w "%{http_code}" --max-time 3 http://127.0.0.1:3128/ || echo refused; env | grep -ci proxy' 2>&1)
like "without a network section nothing listens on 3128" "$out" '^(000)?refused'
like "without a network section no proxy variables" "$out" '0$'

# the proxy process: confined, and gone with its supervisor. Its worker
# threads (one per CPU) start with the first connection (issue #19), after
# the confinement: each is checked. The command waits on a FIFO for that.
mkfifo "$T_TMP/go"
"$AIRLOCK" run -q -p "$POL" -- sh -c 'read x; curl -s -o /dev/null http://web.test:'"$PORT"'/; echo done; exec sleep 6161' <"$T_TMP/go" >"$T_TMP/go.out" 2>&1 &
sup=$!
exec 7>"$T_TMP/go"
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
  like "an idle proxy runs one thread" "$(grep ^Threads: <<<"$st")" $'Threads:\t1$'
  want=$(nproc); [ "$want" -gt 8 ] && want=8
  echo go >&7
  for _ in $(seq 100); do grep -q done "$T_TMP/go.out" && break; sleep 0.1; done
  nt=$(sed -n 's/^Threads:\t//p' /proc/$ppid/status)
  is "after the first connection the proxy runs one worker per CPU" "$nt" "$want"
  bad=""
  for t in /proc/$ppid/task/*; do
    ts=$(cat "$t/status" 2>/dev/null) || continue
    grep -q $'Seccomp:\t2' <<<"$ts" && grep -q $'NoNewPrivs:\t1' <<<"$ts" &&
      grep -qE 'CapEff:\s+0000000000000000' <<<"$ts" || bad="$bad ${t##*/}"
    [ "$(id -u)" = 0 ] && ! grep -q $'^Uid:\t65534' <<<"$ts" && bad="$bad ${t##*/}(uid)"
  done
  is "every worker thread is confined like the proxy (seccomp, no_new_privs, no caps, nobody)" "$bad" ""
else
  fail "the proxy process was found"
fi
exec 7>&-
kill -KILL $sup; wait $sup 2>/dev/null
gone=1
for _ in $(seq 30); do pgrep -f "sleep 6161" >/dev/null || { gone=0; break; }; sleep 0.1; done
is "after SIGKILL of the supervisor, neither the proxy nor the sandbox remains" "$gone" 0
done_testing
