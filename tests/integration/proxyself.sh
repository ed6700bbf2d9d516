#!/bin/bash
# The egress proxy against an origin that speaks for it and against a dial
# back into itself (issue #26 item 5). Standalone `airlock proxy` with two
# listeners (two runs) on loopback, inside a fresh network namespace
# (unshare -rn) when it can.
#  - a plain-HTTP (`tls: false`) origin answers with X-Airlock-Deny and
#    other X-Airlock-* fields, on a 100 Continue and on the final answer:
#    the client must not see them (it would take the origin's word for
#    airlock's decision). Controls: the same answer read directly from the
#    origin has them; the proxy's own refusal still carries X-Airlock-Deny;
#    the origin's other fields arrive.
#  - a pinned name that resolves to one of the proxy's own listeners (its
#    own, the other run's, a wildcard listener reached through 127.0.0.2) is
#    refused `self-connect`, CONNECT and plain alike, as smokescreen refuses
#    it. Control: a pin to 127.0.0.1 on the origin's port is dialled.
if [ -z "${AL_PROXY_NETNS:-}" ] && unshare -rn true 2>/dev/null; then
  export AL_PROXY_NETNS=1
  exec unshare -rn "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
[ -n "${AL_PROXY_NETNS:-}" ] && ip link set lo up 2>/dev/null
for tool in python3 curl; do
  command -v $tool >/dev/null || { skip "proxyself needs $tool"; done_testing; exit; }
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
cd "$T_TMP" || exit 1

# an origin that claims airlock's words: X-Airlock-* on a 100 and on the 200
OP=$(free_port)
cat >origin.py <<'PY'
import socket, sys, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(16)
def serve(c):
    c.settimeout(10)
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            d = c.recv(4096)
            if not d:
                return
            head += d
        if b"expect: 100-continue" in head.lower():
            c.sendall(b"HTTP/1.1 100 Continue\r\nX-Airlock-Deny: from-origin-100\r\n\r\n")
        if head.startswith(b"GET /fold "):
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Origin: a\r\n X-Airlock-Deny: folded\r\n"
                      b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            return
        body = b"origin-body\n"
        c.sendall(b"HTTP/1.1 200 OK\r\nX-Airlock-Deny: not-allowed\r\nx-airlock-decision: deny\r\n"
                  b"X-Airlock: 1\r\nX-Origin: kept\r\nContent-Length: %d\r\n"
                  b"Connection: close\r\n\r\n" % len(body) + body)
    finally:
        c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 origin.py "$OP" >/dev/null 2>&1 &
on_exit "kill $!"

PORT=$(free_port)
PORT2=$(free_port)
WILD=$(free_port)
cat >policy.yaml <<YAML
version: 1
network:
  allow:
    - {host: origin.self.test, port: $OP, tls: false}
    - {host: me.self.test, port: $PORT, tls: false}
    - {host: other.self.test, port: $PORT2, tls: false}
    - {host: wild.self.test, port: $WILD, tls: false}
  pin:
    - {host: origin.self.test, address: 127.0.0.1}
    - {host: me.self.test, address: 127.0.0.1}
    - {host: other.self.test, address: 127.0.0.1}
    - {host: wild.self.test, address: 127.0.0.2}
  timeouts: {head: 3s, connect: 3s, idle: 30s, tunnel: 1h}
YAML
LISTEN=(--listen "127.0.0.1:$PORT" --listen "127.0.0.1:$PORT2")
# a wildcard listener only inside our own network namespace
[ -n "${AL_PROXY_NETNS:-}" ] && LISTEN+=(--listen "0.0.0.0:$WILD")
"$AIRLOCK" proxy -p policy.yaml "${LISTEN[@]}" --log audit.log 2>proxy.err &
on_exit "kill $! 2>/dev/null"
if ! wait_port "$PORT" || ! wait_port "$OP"; then
  fail "proxy and origin start"; sed 's/^/#   /' proxy.err; done_testing; exit 1
fi
ok "proxy and origin start"
PX=(curl -sS --max-time 10 --proxy "http://127.0.0.1:$PORT" -D headers -o body)

# ---- X-Airlock-* from an origin ----
curl -sS --max-time 10 -D direct.h -o /dev/null "http://127.0.0.1:$OP/"
like "control: read directly, the origin's answer claims X-Airlock-Deny" "$(cat direct.h)" 'X-Airlock-Deny: not-allowed'
"${PX[@]}" "http://origin.self.test:$OP/" 2>curl.err
like "through the proxy: the origin's 200 arrives" "$(head -1 headers)" '^HTTP/1.1 200'
is "  its body too" "$(cat body)" origin-body
check_not "  with no X-Airlock-* field of the origin's" grep -qi '^x-airlock' headers
like "  the origin's other fields are kept" "$(cat headers)" 'X-Origin: kept'
"${PX[@]}" -H 'Expect: 100-continue' --data-binary 'x=1' "http://origin.self.test:$OP/" 2>curl.err
like "a POST with Expect: the 200 after the origin's 100" "$(grep '^HTTP' headers | tr -d '\r' | tr '\n' ' ')" 'HTTP/1.1 100 Continue HTTP/1.1 200'
check_not "  no X-Airlock-* on either head" grep -qi '^x-airlock' headers
curl -sS --max-time 10 -D direct.h -o /dev/null "http://127.0.0.1:$OP/fold" 2>/dev/null
like "control: read directly, /fold folds an X-Airlock-Deny into the line before it" "$(cat direct.h)" ' X-Airlock-Deny: folded'
"${PX[@]}" "http://origin.self.test:$OP/fold" 2>curl.err
like "an origin head with obs-fold: 502 from the proxy" "$(head -1 headers)" '^HTTP/1.1 502'
like "  X-Airlock-Deny: origin-bad-head" "$(cat headers)" 'X-Airlock-Deny: origin-bad-head'
check_not "  the folded line never reached the client" grep -q 'folded' headers
"${PX[@]}" "http://nope.self.test:$OP/" 2>curl.err
like "control: the proxy's own refusal still says X-Airlock-Deny" "$(cat headers)" 'X-Airlock-Deny: not-allowed'

# ---- a dial back into the proxy ----
"${PX[@]}" "http://me.self.test:$PORT/" 2>curl.err
like "a pin onto this very listener (plain): 403" "$(head -1 headers)" '^HTTP/1.1 403'
like "  X-Airlock-Deny: self-connect" "$(cat headers)" 'X-Airlock-Deny: self-connect'
code=$(curl -sS --max-time 10 --proxy "http://127.0.0.1:$PORT" -o /dev/null -w '%{http_connect}' "https://me.self.test:$PORT/" 2>/dev/null)
is "a CONNECT onto this very listener: 403" "$code" 403
"${PX[@]}" "http://other.self.test:$PORT2/" 2>curl.err
like "a pin onto the other run's listener: refused self-connect" "$(cat headers)" 'X-Airlock-Deny: self-connect'
if [ -n "${AL_PROXY_NETNS:-}" ]; then
  "${PX[@]}" "http://wild.self.test:$WILD/" 2>curl.err
  like "a pin to 127.0.0.2 onto the 0.0.0.0 listener: refused self-connect" "$(cat headers)" 'X-Airlock-Deny: self-connect'
else
  skip "wildcard listener: no private network namespace (unshare -rn)"
fi
is "  the decision lines say self-connect" \
  "$(python3 -c 'import json,sys; print(sum(1 for l in open("audit.log") if json.loads(l).get("reason") == "self-connect"))')" \
  "$([ -n "${AL_PROXY_NETNS:-}" ] && echo 4 || echo 3)"
"${PX[@]}" "http://origin.self.test:$OP/" 2>curl.err
like "control: a pin to 127.0.0.1 on another port is dialled" "$(head -1 headers)" '^HTTP/1.1 200'
done_testing
