#!/bin/bash
# The transparent path (issue #27 item 3): clients that ignore HTTPS_PROXY
# (curl --noproxy '*', Node's fetch) reach the allowed names through the
# sandbox's /etc/hosts and the proxy's listeners on 127.0.0.2, decided by
# SNI or Host exactly as a CONNECT would be, and nothing else. Origins: a
# TLS stub (openssl s_server, a test CA) and a plain-HTTP stub on the
# host's loopback, reached through pins; the proxy's resolver is a DNS
# stub this test runs (nothing is ever asked of another resolver).
# Positive control: the same clients with `network.transparent: false`
# cannot reach the allowed hosts.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in python3 openssl curl; do
  command -v $tool >/dev/null || { skip "transparent path tests need $tool"; done_testing; exit; }
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }

cd "$T_TMP"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=airlock-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=allowed.test 2>/dev/null
printf 'subjectAltName=DNS:allowed.test,DNS:denied.test\n' > ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf 2>/dev/null
TP=$(free_port)
openssl s_server -quiet -accept 127.0.0.1:$TP -cert srv.pem -key srv.key -www >/dev/null 2>&1 &
on_exit "kill $!"
PP=$(free_port)
mkdir www && echo hello-plain > www/index.html
(cd www && exec python3 -m http.server --bind 127.0.0.1 $PP) >/dev/null 2>&1 &
on_exit "kill $!"
python3 "$HERE/dnsstub.py" dns.port dns.log >/dev/null 2>&1 &
on_exit "kill $!"
for _ in $(seq 50); do [ -s dns.port ] && break; sleep 0.1; done
DNSP=$(cat dns.port)
wait_port $TP && wait_port $PP || { fail "the stub origins did not start"; done_testing; exit; }

policy() { # FILE TRANSPARENT
  cat >"$1" <<YAML
version: 1
network:
  allow:
    - {host: allowed.test, port: $TP, tls: true}
    - {host: plain.allowed.test, port: $PP, tls: false}
  pin:
    - {host: allowed.test, address: 127.0.0.1}
    - {host: plain.allowed.test, address: 127.0.0.1}
  resolver: 127.0.0.1:$DNSP
  transparent: $2
YAML
  chmod 644 "$1"
}
policy on.yaml true
policy off.yaml false

code=$(curl -s --noproxy '*' --cacert ca.pem --resolve allowed.test:$TP:127.0.0.1 -o /dev/null -w '%{http_code}' "https://allowed.test:$TP/")
is "control: the TLS stub answers on the host's loopback" "$code" 200

CA=$(cat ca.pem)
# the clients, each printing NAME=RESULT; the CA is written from the script
CLIENTS='printf "%s\n" "$CA" >/tmp/ca.pem
  echo "hosts=$(getent hosts allowed.test | cut -f1 -d" ")"
  curl -s --noproxy "*" --cacert /tmp/ca.pem -m 10 -o /dev/null -w "curl_tls=%{http_code}\n" https://allowed.test:'$TP'/ || echo curl_tls=failed
  curl -s --noproxy "*" -m 10 -o /tmp/plain -w "curl_plain=%{http_code}\n" http://plain.allowed.test:'$PP'/ || echo curl_plain=failed
  echo "plain_body=$(cat /tmp/plain 2>/dev/null)"
  # a disallowed name sent to the transparent listener itself: by SNI, by Host
  curl -s --noproxy "*" --cacert /tmp/ca.pem -m 10 --resolve denied.test:'$TP':127.0.0.2 -o /dev/null -w "sni_denied=%{http_code}\n" https://denied.test:'$TP'/ || echo sni_denied=refused
  curl -s --noproxy "*" -m 10 -H "Host: denied.test:'$PP'" -o /dev/null -w "host_denied=%{http_code}\n" http://plain.allowed.test:'$PP'/ || echo host_denied=failed
  # plain HTTP to a TLS entry, a CONNECT on the transparent port: refused
  curl -s --noproxy "*" -m 10 -o /dev/null -w "plain_to_tls=%{http_code}\n" http://allowed.test:'$TP'/ || echo plain_to_tls=failed
  curl -s --noproxy "*" -m 10 -o /dev/null -w "denied_name=%{http_code}\n" https://denied.test:'$TP'/ || echo denied_name=unresolved
  if command -v node >/dev/null; then
    NODE_EXTRA_CA_CERTS=/tmp/ca.pem node -e "
      const get = (n, u) => fetch(u).then(r => r.text().then(b => console.log(n + \"=\" + r.status)))
        .catch(e => console.log(n + \"=error:\" + ((e.cause && e.cause.code) || e.message)));
      get(\"node_tls\", \"https://allowed.test:'$TP'/\")
        .then(() => get(\"node_plain\", \"http://plain.allowed.test:'$PP'/\"))
        .then(() => get(\"node_denied\", \"https://denied.test:'$TP'/\"));"
  else
    echo node=absent
  fi'

out_off=$(CA=$CA "$AIRLOCK" run -q -p off.yaml -e CA --log off.jsonl -- sh -c "$CLIENTS" 2>&1)
out=$(CA=$CA "$AIRLOCK" run -q -p on.yaml -e CA --log on.jsonl -- sh -c "$CLIENTS" 2>&1)
diag "transparent off:" "$out_off" "transparent on:" "$out"

# positive control: without the transparent path the bare clients fail
like "control (transparent: false): curl --noproxy cannot reach the allowed TLS host" "$out_off" 'curl_tls=(000|failed)'
like "control (transparent: false): nor the allowed plain-HTTP host" "$out_off" 'curl_plain=(000|failed)'
like "control (transparent: false): the allowed names do not resolve in the sandbox" "$out_off" 'hosts=
'
# with it
like "the allowed names resolve to 127.0.0.2 through the sandbox's /etc/hosts" "$out" 'hosts=127.0.0.2'
like "curl --noproxy reaches the allowed TLS host (verified with the test CA)" "$out" 'curl_tls=200'
like "curl --noproxy reaches the allowed plain-HTTP host" "$out" 'curl_plain=200'
like "the plain-HTTP answer is the origin's" "$out" 'plain_body=hello-plain'
like "a disallowed SNI on the transparent listener is refused (connection closed)" "$out" 'sni_denied=(000|refused)'
like "a disallowed Host on the transparent listener is refused with 403" "$out" 'host_denied=403'
like "plain HTTP to a tls: true entry is refused with 403" "$out" 'plain_to_tls=403'
like "a disallowed name does not resolve in the sandbox" "$out" 'denied_name=(000|unresolved)'
if grep -q node=absent <<<"$out"; then
  skip "Node's fetch: node is not installed"
else
  like "control (transparent: false): Node's fetch cannot reach the allowed host" "$out_off" 'node_tls=error'
  like "Node's fetch reaches the allowed TLS host" "$out" 'node_tls=200'
  like "Node's fetch reaches the allowed plain-HTTP host" "$out" 'node_plain=200'
  like "Node's fetch of a disallowed host fails" "$out" 'node_denied=error'
fi

dec=$(cat on.jsonl)
like "the log: the TLS allow, via the transparent path, by SNI" "$dec" '"host":"allowed.test","port":'$TP',"address":"127.0.0.1:'$TP'","sni":"allowed.test","via":"transparent","decision":"allow"'
like "the log: the plain-HTTP allow, via the transparent path" "$dec" '"host":"plain.allowed.test","port":'$PP',.*"via":"transparent","decision":"allow"'
like "the log: the SNI refusal is not-allowed" "$dec" '"host":"denied.test","port":'$TP',"address":null,"sni":"denied.test","via":"transparent","decision":"deny","reason":"not-allowed"'
like "the log: the Host refusal is not-allowed" "$dec" '"host":"denied.test","port":'$PP',"address":null,"sni":null,"via":"transparent","decision":"deny","reason":"not-allowed"'
like "the log: plain HTTP to the TLS entry is tls-required" "$dec" '"host":"allowed.test",.*"via":"transparent","decision":"deny","reason":"tls-required"'
if grep -q 'denied.test' dns.log 2>/dev/null; then fail "no name the policy does not allow is ever resolved"; else ok "no name the policy does not allow is ever resolved"; fi
done_testing
