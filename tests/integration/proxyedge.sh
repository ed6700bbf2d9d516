#!/bin/bash
# The egress proxy against hostile pacing and hostile strings (issue #19:
# the edge-triggered reads that stop at a short read, the decision lines
# serialised by hand, the close lines batched). Standalone `airlock proxy`
# on loopback, a plain-HTTP and a TLS origin pinned to 127.0.0.1, inside a
# fresh network namespace (unshare -rn) when it can.
#  - pacing: a head byte by byte, a head in two pieces with the request
#    after it, the request pipelined with the head, then a FIN right after
#    it; a ClientHello pipelined with the head or byte by byte. Each must
#    get the origin's answer, none may stall. Controls: a head that never
#    ends gets a 408, a request that never ends gets the 200 and no body
#    (so the client tells a forwarded request from a stalled one).
#  - strings: targets and SNI names with quotes, backslashes, control
#    bytes, NUL, bytes >= 0x80 (invalid and overlong UTF-8), very long;
#    every line of the log stays one JSON object and names the input as
#    docs/run-record.md says (the \xNN form). Control: the checker refuses
#    a line that is not JSON and a line that is two objects.
if [ -z "${AL_PROXY_NETNS:-}" ] && unshare -rn true 2>/dev/null; then
  export AL_PROXY_NETNS=1
  exec unshare -rn "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PE="$HERE/proxyedge.py"
[ -n "${AL_PROXY_NETNS:-}" ] && ip link set lo up 2>/dev/null

for tool in python3 openssl; do
  command -v $tool >/dev/null || { skip "proxyedge needs $tool"; done_testing; exit; }
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }

cd "$T_TMP"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=edge-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=tls.edge.test 2>/dev/null
printf 'subjectAltName=DNS:tls.edge.test\n' >ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf 2>/dev/null
TP=$(free_port)
PP=$(free_port)
openssl s_server -quiet -accept 127.0.0.1:$TP -cert srv.pem -key srv.key -www >/dev/null 2>&1 &
on_exit "kill $!"
mkdir www && echo hello-plain >www/index.html
(cd www && exec python3 -m http.server --bind 127.0.0.1 $PP) >/dev/null 2>&1 &
on_exit "kill $!"

cat >policy.yaml <<YAML
version: 1
network:
  allow:
    - {host: plain.edge.test, port: $PP, tls: false}
    - {host: tls.edge.test, port: $TP, tls: true}
  pin:
    - {host: plain.edge.test, address: 127.0.0.1}
    - {host: tls.edge.test, address: 127.0.0.1}
  max_connections: 50
  timeouts: {head: 3s, connect: 3s, idle: 30s, tunnel: 1h}
YAML
PORT=$(free_port)
"$AIRLOCK" proxy -p policy.yaml --listen 127.0.0.1:$PORT --log audit.log 2>proxy.err &
PXPID=$!
on_exit "kill $PXPID 2>/dev/null"
if ! wait_port $PORT || ! wait_port $TP || ! wait_port $PP; then
  fail "proxy and origins start"
  cat proxy.err
  done_testing
  exit 1
fi
ok "proxy and origins start"

# ---- pacing ----
PT=plain.edge.test:$PP
is "control: a head that never ends gets no 200" "$(python3 "$PE" pace $PORT $PT nohead)" \
  "HTTP/1.1 408 Request Timeout"
is "control: a request that never ends gets no body" "$(python3 "$PE" pace $PORT $PT nobody)" \
  "200 no-body"
is "control: a whole head, then the request" "$(python3 "$PE" pace $PORT $PT whole)" "200 hello-plain"
is "a head sent byte by byte" "$(python3 "$PE" pace $PORT $PT bytewise)" "200 hello-plain"
is "a head in two pieces, the request with the second" "$(python3 "$PE" pace $PORT $PT split)" \
  "200 hello-plain"
is "the request pipelined with the head" "$(python3 "$PE" pace $PORT $PT pipelined)" "200 hello-plain"
is "the request pipelined with the head, then a FIN" "$(python3 "$PE" pace $PORT $PT fin)" \
  "200 hello-plain"
TT=tls.edge.test:$TP
is "a ClientHello pipelined with the head" "$(python3 "$PE" tlspipe $PORT $TT ca.pem pipelined)" \
  "handshake-ok"
is "a ClientHello byte by byte after the head" "$(python3 "$PE" tlspipe $PORT $TT ca.pem bytewise)" \
  "handshake-ok"

# ---- strings ----
# check_target DESC HEXBYTES REASON [raw]: CONNECT HEXBYTES as the target;
# the last line of the log gives REASON and names the target as
# px_escape_raw does (with "raw": a head refused before its target is
# read, for a byte no request line may hold, logs the reason only)
check_target() {
  local want got
  want="$(python3 "$PE" escape "$2") $3"
  [ "${4:-}" = raw ] && want="None $3"
  python3 "$PE" send $PORT "$(hex 'CONNECT ')$2$(hex $' HTTP/1.1\r\nHost: x\r\n\r\n')" >/dev/null
  for _ in $(seq 40); do
    got=$(tail -n 1 audit.log | python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print(j.get("target"), j.get("reason"))' 2>&1)
    [ "$got" = "$want" ] && break
    sleep 0.05
  done
  is "$1: the log names the target and the reason" "$got" "$want"
  [ "$got" = "$want" ] || diag "last line: $(tail -n 1 audit.log | head -c 400)"
}
check_target "quote and backslash" "$(hex 'a"b\c",{"x":1}:443')" bad-target
check_target "a forged object in the target" "$(hex '","event":"open","x":"\\"}:443')" bad-target
check_target "a bare CR before a forged line" "$(hex 'a')0d$(hex '{"event":"open"}:443')" bare-cr raw
check_target "control bytes and DEL" "$(hex 'h')01021b7f$(hex ':443')" ctl-in-head raw
check_target "invalid and overlong UTF-8" "ff$(hex x)c0ae$(hex x)e9$(hex x)eda080f4908080$(hex ':443')" \
  non-ascii-in-head raw
check_target "a very long target" "$(python3 -c 'print("41"*5000 + "223a343433")')" bad-target

# a token-shaped target is redacted in the hand-made line (redact.c scans
# only the bytes a token can start with); control: one byte short is not
# token-shaped and is logged as sent
redacted() {
  local n0; n0=$(wc -l <audit.log)
  python3 "$PE" send $PORT "$(hex "CONNECT $1 HTTP/1.1"$'\r\nHost: x\r\n\r\n')" >/dev/null
  for _ in $(seq 60); do [ "$(wc -l <audit.log)" -gt "$n0" ] && break; sleep 0.05; done
  sed -n "$((n0 + 1))p" audit.log | python3 -c 'import json,sys; print(json.loads(sys.stdin.read()).get("target"))'
}
TOK=ghp_$(printf 'A1b2C3d4%.0s' 1 2 3 4 5)
like "a ghp_ token in the target is redacted" "$(redacted "$TOK:443")" '^\[REDACTED sha256:[0-9a-f]{12}\]:443$'
like "a github_pat_ token after a 'g' is redacted" "$(redacted "ggithub_pat_${TOK:4:24}:443")" \
  '^g\[REDACTED sha256:[0-9a-f]{12}\]:443$'
is "control: one byte short of a token is logged as sent" "$(redacted "${TOK:0:39}:443")" "${TOK:0:39}:443"

# SNI names the parser lets through (printable ASCII): '"' and '\'
for name in 'a"b.test' 'a\b.test' '","event":"open' 'tls.edge.test\'; do
  python3 "$PE" sni $PORT $TT "$(hex "$name")" >/dev/null
  got=""
  for _ in $(seq 40); do
    got=$(tail -n 1 audit.log | python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print(j.get("sni"), j.get("reason"))' 2>&1)
    [ "${got% *}" = "$name" ] && break
    sleep 0.05
  done
  is "SNI $name: logged as sent, refused" "$got" "$name sni-malformed"
done

is "every line of the log is one JSON decision object" "$(python3 "$PE" logcheck audit.log)" \
  "$(wc -l <audit.log) lines"
printf '{"event":"open"}{"event":"x"}\n' >bad1.log
like "control: the checker refuses two objects on a line" "$(python3 "$PE" logcheck bad1.log)" "not JSON"
printf '{"event":"open","target":"a\001"}\n' >bad2.log
like "control: the checker refuses a raw control byte" "$(python3 "$PE" logcheck bad2.log)" "not JSON"

kill -TERM $PXPID
wait $PXPID
is "SIGTERM stops the proxy with status 0" "$?" "0"
like "the summary is the last line" "$(tail -n 1 audit.log)" '"event":"summary"'
is "after the summary the log is still all JSON" "$(python3 "$PE" logcheck audit.log)" \
  "$(wc -l <audit.log) lines"
check_not "no sanitizer report" grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' proxy.err
done_testing
