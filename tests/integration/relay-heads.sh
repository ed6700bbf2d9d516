#!/bin/bash
# The model relay's two HTTP head parsers (issue #28): `airlock relay` alone
# on loopback, in front of a scripted TLS upstream (rawmodel.py) that
# answers with raw response heads. The old rewrite of the response head
# overflowed its heap buffer (a heap-buffer-overflow WRITE under ASan: the
# relay died); framing it read loosely (a second, signed or huge
# Content-Length, "chunked" found anywhere in Transfer-Encoding) now fails
# the call with a 502 naming the rule, and the relay keeps serving. The
# agent's request head is held to the same rules (CRLF only, no obs-fold,
# one Content-Length, token names, chunked only as the final coding).
# Controls: a well-formed head, 80 empty field values (valid, and the
# case that overflowed with CRLF line ends), a 103 before the final answer.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in python3 openssl; do
  command -v $tool >/dev/null || { skip "relay head tests need $tool"; done_testing; exit; }
done
cd "$T_TMP" || exit 1
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=airlock-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=api.model.test 2>/dev/null
printf 'subjectAltName=DNS:api.model.test\n' >ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf 2>/dev/null
python3 "$HERE/rawmodel.py" srv.pem srv.key up.port up.log >up.err 2>&1 &
on_exit "kill $!"
for _ in $(seq 100); do [ -s up.port ] && break; sleep 0.1; done
UP=$(cat up.port 2>/dev/null)
[ -n "$UP" ] && ok "scripted model API listens on 127.0.0.1:$UP" || { fail "scripted model API starts"; done_testing; exit 1; }
cat >p.yaml <<YAML
version: 1
relay:
  upstream: https://api.model.test:$UP
  key_file: $T_TMP/k
  ca_file: $T_TMP/ca.pem
  pin: 127.0.0.1
YAML
# The relay listens on a socket bound here (port 0) and handed over as an fd:
# no port to guess.
python3 - "$AIRLOCK" <<'PY' >relay.out 2>relay.err &
import os, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open("relay.port.tmp", "w").write(str(s.getsockname()[1])); os.rename("relay.port.tmp", "relay.port")
os.set_inheritable(s.fileno(), True)
os.environ["AIRLOCK_RELAY_KEY"] = "sk-test-" + "k" * 20
os.execv(sys.argv[1], [sys.argv[1], "relay", "-p", "p.yaml", "--listen-fd", str(s.fileno()), "--log", "relay.log"])
PY
RPID=$!
on_exit "kill $RPID"
for _ in $(seq 100); do [ -s relay.port ] && break; sleep 0.1; done
RP=$(cat relay.port 2>/dev/null)
[ -n "$RP" ] && ok "airlock relay listens on 127.0.0.1:$RP" || { fail "airlock relay starts"; done_testing; exit 1; }

# send: one spec per stdin line, RAW (a python bytes literal) or MODEL:NAME
# (a well-formed call whose body names a scripted case); prints one line per
# spec, "STATUS XHEADERS BODY" of the relay's answer, or "none" when it never
# answered (closed, or 10 s without a byte). One python for many calls.
send() {
  python3 -c '
import ast, json, socket, sys
port = int(sys.argv[1])
for spec in sys.stdin.read().splitlines():
    if spec.startswith("MODEL:"):
        body = json.dumps({"model": spec[6:], "max_tokens": 1}).encode()
        raw = (b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
    else:
        raw = ast.literal_eval(spec)
    data = b""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(raw)
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
    except OSError:
        pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    if not data or not lines[0].startswith(b"HTTP/1."):
        print("none")
    else:
        xs = sum(1 for l in lines[1:] if l.lower().startswith(b"x:"))
        print(lines[0].split(b" ")[1].decode(), xs, body[:40].decode("latin-1").replace("\n", " "))
' "$RP"
}
reason() { grep "\"model\":\"$1\"" relay.log | tail -1; }

# --- 1. the upstream's response head ----------------------------------------
RCASES="bare_lf|bare-lf
two_cl|duplicate-content-length
cl_sign|bad-content-length
cl_huge|bad-content-length
cl_list|bad-content-length
te_not_last|bad-transfer-encoding
te_lookalike|bad-transfer-encoding
te_gzip|transfer coding other than chunked
cl_and_te|cl-and-te
obs_fold|obs-fold
space_colon|space-before-colon
no_colon|bad-header-name
bare_cr|bare-cr
nul|nul-in-head
status_4|bad-status-line
status_600|bad-status-line
version|bad-status-line
upgrade_101|101"
mapfile -t got < <({ printf 'MODEL:%s\n' good empty_values interim; cut -d'|' -f1 <<<"$RCASES" | sed 's/^/MODEL:/'; echo MODEL:good; } | send)
is "control: a well-formed response is relayed" "${got[0]}" "200 0 ok"
is "80 empty field values (valid; each grew a byte in the old rewrite) are relayed whole" "${got[1]}" "200 80 ok"
is "a 103 interim response is skipped, the final 200 relayed" "${got[2]}" "200 0 ok"
i=3
while IFS='|' read -r case why; do
  like "response head $case: 502 to the agent" "${got[$i]}" '^502 '
  like "response head $case: logged as malformed, $why" "$(reason "$case")" \
    "\"reason\":\"[^\"]*$why.*\"status\":502.*\"upstream_failure\":\"malformed\""
  i=$((i + 1))
done <<<"$RCASES"
is "the relay is still serving after every hostile head (it did not crash)" "${got[$i]}" "200 0 ok"
kill -0 "$RPID" 2>/dev/null && ok "the relay process is alive" || { fail "the relay process is alive"; diag "$(grep -m3 -E "ERROR: AddressSanitizer|WRITE of size|#[0-9] .* in " relay.err)"; }

# --- 2. the agent's request head --------------------------------------------
n0=$(grep -c '"case"' up.log)
QCASES='bare_lf|b"POST /v1/messages HTTP/1.1\nHost: r\nContent-Length: 2\n\n{}"
mixed_lf|b"POST /v1/messages HTTP/1.1\r\nHost: r\nContent-Length: 2\r\n\r\n{}"
obs_fold|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nX-A: b\r\n c\r\nContent-Length: 2\r\n\r\n{}"
two_cl|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"
cl_list|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nContent-Length: 2, 2\r\n\r\n{}"
space_colon|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nContent-Length : 2\r\n\r\n{}"
bad_name|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nX(a): 1\r\nContent-Length: 2\r\n\r\n{}"
te_not_last|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
te_lookalike|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
bare_cr|b"POST /v1/messages HTTP/1.1\r\nHost: r\rX: 1\r\nContent-Length: 2\r\n\r\n{}"
nul|b"POST /v1/messages HTTP/1.1\r\nHost: r\x00\r\nContent-Length: 2\r\n\r\n{}"
two_hosts|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nHost: evil.example\r\nContent-Length: 2\r\n\r\n{}"
chunk_sign|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\n{}\r\n0\r\n\r\n"
chunk_0x|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n"
chunk_nocrlf|b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n"'
GOOD='b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nContent-Length: 16\r\n\r\n{\"model\":\"good\"}"'
GOODC='b"POST /v1/messages HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"model\":\"good\"}\r\n0\r\n\r\n"'
mapfile -t got < <({ echo "$GOOD"; echo "$GOODC"; cut -d'|' -f2- <<<"$QCASES"; } | send)
is "control: a well-formed raw request is relayed" "${got[0]}" "200 0 ok"
is "control: a well-formed chunked request is relayed" "${got[1]}" "200 0 ok"
i=2
while IFS='|' read -r name _; do
  like "request head $name: 400 at once" "${got[$i]}" '^400 '
  i=$((i + 1))
done <<<"$QCASES"
is "no refused request reached the upstream (the controls did)" "$(( $(grep -c '"case"' up.log) - n0 ))" 2
like "request-head refusals name the rule in the log" "$(grep -c '"reason":"malformed request head (' relay.log)" '^12$'
like "chunked bodies that break RFC 9112 §7.1 are refused" "$(grep -c '"reason":"malformed request body"' relay.log)" '^3$'
done_testing
