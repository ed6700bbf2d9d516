#!/usr/bin/env python3
"""A scripted model API over HTTPS that answers with raw, possibly hostile,
response heads: the model relay's response-head parser under test (issue #28).

usage: rawmodel.py CERT KEY PORTFILE LOGFILE

Listens on 127.0.0.1 (port 0: the kernel picks; written to PORTFILE). Each
connection: reads one request (head + Content-Length body), takes the case
name from the body's JSON "model", writes CASES[name] byte for byte and
closes. Every request is one JSON line in LOGFILE ({"case": name}). Never
binds anything but loopback.
"""
import json
import socket
import ssl
import sys
import threading

CERT, KEY, PORTFILE, LOGFILE = sys.argv[1:5]
OK = b"HTTP/1.1 200 OK\r\n"
TAIL = b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\nok"
CASES = {
    # well formed: the controls
    "good": OK + TAIL,
    # 80 empty field values with CRLF: valid (RFC 9110 §5.5), and each one
    # grew by a byte in the old rewrite ("x:" -> "x: "): past hl+64
    "empty_values": OK + b"x:\r\n" * 80 + TAIL,
    # a 1xx interim response (103 Early Hints) before the final one
    "interim": b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" + OK + TAIL,
    # the overflow of issue #28: 3-byte bare-LF lines rewritten as 5 bytes
    "bare_lf": OK + b"x:\n" * 40 + TAIL,
    "two_cl": OK + b"Content-Length: 2\r\n" + TAIL,
    "cl_sign": OK + b"Content-Type: application/json\r\nContent-Length: +2\r\n\r\nok",
    "cl_huge": OK + b"Content-Length: 18446744073709551618\r\n\r\nok",
    "cl_list": OK + b"Content-Length: 2, 2\r\n\r\nok",
    "te_not_last": OK + b"Transfer-Encoding: chunked, gzip\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "te_lookalike": OK + b"Transfer-Encoding: xchunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "te_gzip": OK + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "cl_and_te": OK + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "obs_fold": OK + b"X-A: b\r\n c\r\n" + TAIL,
    "space_colon": OK + b"Content-Length : 2\r\n\r\nok",
    "no_colon": OK + b"garbage\r\n" + TAIL,
    "bare_cr": OK + b"X-A: b\rc\r\n" + TAIL,
    "nul": OK + b"X-A: b\x00c\r\n" + TAIL,
    "status_4": b"HTTP/1.1 2000 OK\r\n" + TAIL,
    "status_600": b"HTTP/1.1 600 Odd\r\n" + TAIL,
    "version": b"HTTP/2 200 OK\r\n" + TAIL,
    "upgrade_101": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
}
lock = threading.Lock()


def log(obj):
    with lock, open(LOGFILE, "a") as f:
        f.write(json.dumps(obj) + "\n")


def serve(conn):
    try:
        conn.settimeout(20)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return
            body += chunk
        try:
            case = json.loads(body.decode()).get("model", "good")
        except ValueError:
            case = "good"
        log({"case": case})
        conn.sendall(CASES.get(case, CASES["good"]))
    except (OSError, ssl.SSLError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    import os

    os.rename(PORTFILE + ".tmp", PORTFILE)
    while True:
        raw, _ = srv.accept()
        try:
            conn = ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
