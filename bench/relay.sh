#!/bin/bash
# Benchmark of the model relay (issue #10): added latency per request and
# time to the first streamed event, through the relay (agent inside
# `airlock run` -> relay sandbox -> egress proxy -> TLS) against calling the
# same local fake model API directly (new TLS connection per call in both
# cases: the relay does not pool upstream connections). Medians of N calls,
# both paths in one run. Usage: bench/relay.sh [N]   (AIRLOCK=path/to/airlock)
set -eu
N=${1:-50}
SRC=$(cd "$(dirname "$0")/.." && pwd)
AIRLOCK=${AIRLOCK:-$SRC/build/src/cli/airlock}
T=$(mktemp -d /tmp/airlock-bench-relay.XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
cd "$T"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=api.model.test 2>/dev/null
printf 'subjectAltName=DNS:api.model.test\n' >ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 1 -extfile ext.cnf 2>/dev/null
chmod 644 ca.pem
mkdir -m 700 secret && (umask 077 && printf 'sk-bench-%s\n' "$(openssl rand -hex 16)" >secret/model.key)
python3 "$SRC/tests/integration/fakemodel.py" srv.pem srv.key fake.port fake.log --delay 0.02 >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -s fake.port ] && break; sleep 0.1; done
FP=$(cat fake.port)
mkdir -m 755 pub && cp "$SRC/tests/integration/relayclient.py" pub/rc.py && chmod 644 pub/rc.py
cat >policy.yaml <<YAML
version: 1
filesystem: {ro_paths: [$T/pub]}
relay:
  upstream: https://api.model.test:$FP
  key_file: $T/secret/model.key
  ca_file: $T/ca.pem
  pin: 127.0.0.1
  budget: {requests: 0}
YAML
BODY='{"model":"bench","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
SBODY='{"model":"bench","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
DIRECT=(python3 pub/rc.py --addr 127.0.0.1:$FP --tls ca.pem --host api.model.test --repeat "$N")
"${DIRECT[@]}" --json "$BODY" POST /v1/messages >direct.json
"${DIRECT[@]}" --json "$SBODY" POST /v1/messages >direct-stream.json
# inside the sandbox, one airlock run per pass (stdout carries the timings)
for pass in "relay.json:$BODY" "relay-stream.json:$SBODY"; do
  "$AIRLOCK" run -q -p policy.yaml --relay-log relay.log -- \
    python3 "$T/pub/rc.py" --repeat "$N" --json "${pass#*:}" POST /v1/messages >"${pass%%:*}" 2>>relay.err ||
    { cat relay.err; exit 1; }
done
python3 - "$N" <<'PY'
import json, statistics, sys
def load(f):
    return [json.loads(l) for l in open(f) if l.startswith("{")]
def med(rows, key):
    v = [ (r[key] - r["t_sent"]) * 1000 for r in rows if r.get(key) and r["status"] == 200]
    return statistics.median(v), len(v)
d, r = load("direct.json"), load("relay.json")
ds, rs = load("direct-stream.json"), load("relay-stream.json")
dl, dn = med(d, "t_end"); rl, rn = med(r, "t_end")
dt, _ = med(ds, "t_first_event"); rt, rtn = med(rs, "t_first_event")
dfb, _ = med(d, "t_first_byte"); rfb, _ = med(r, "t_first_byte")
print(f"calls per path: direct {dn}, relay {rn} (stream {rtn}) of {sys.argv[1]}")
print(f"{'':34s}{'direct':>10s}{'relay':>10s}{'added':>10s}")
print(f"{'request latency (median, ms)':34s}{dl:10.2f}{rl:10.2f}{rl-dl:10.2f}")
print(f"{'first byte, non-streamed (ms)':34s}{dfb:10.2f}{rfb:10.2f}{rfb-dfb:10.2f}")
print(f"{'first SSE event, streamed (ms)':34s}{dt:10.2f}{rt:10.2f}{rt-dt:10.2f}")
PY
