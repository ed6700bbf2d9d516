#!/usr/bin/env python3
"""A raw HTTP/1.1 client for the model relay's tests (runs inside the sandbox).

usage: relayclient.py [options] METHOD TARGET
  --addr HOST:PORT   where to connect (default 127.0.0.1:8080)
  --json TEXT        request body (Content-Length framed)
  --size N           a JSON body of about N bytes
  --chunked          send the body with the chunked transfer coding
  --header 'K: V'    extra header (repeatable)
  --buffered         negative control: read the whole response before timing it
  --repeat N         do it N times, one line each
  --tls CAFILE       speak TLS (for calling the fake API directly, in the bench)
  --host NAME        TLS server name / Host header

Prints one JSON line per request: status, a few headers, the raw body's first
4 KiB, t_sent (before connecting), t_first_byte, t_first_event (when the first SSE `data:` line
arrived), t_end (all wall-clock time.time(), comparable with the fake API's
log) and SSE event count.
"""
import json
import socket
import ssl
import sys
import time

args = sys.argv[1:]
addr, body, headers, buffered, repeat, chunked, cafile, host = "127.0.0.1:8080", None, [], False, 1, False, None, None
pos = []
while args:
    a = args.pop(0)
    if a == "--addr":
        addr = args.pop(0)
    elif a == "--json":
        body = args.pop(0).encode()
    elif a == "--size":
        n = int(args.pop(0))
        body = json.dumps({"model": "big", "pad": "x" * max(0, n - 30)}).encode()
    elif a == "--header":
        headers.append(args.pop(0))
    elif a == "--buffered":
        buffered = True
    elif a == "--chunked":
        chunked = True
    elif a == "--repeat":
        repeat = int(args.pop(0))
    elif a == "--tls":
        cafile = args.pop(0)
    elif a == "--host":
        host = args.pop(0)
    else:
        pos.append(a)
method, target = pos
h, p = addr.rsplit(":", 1)
CTX = ssl.create_default_context(cafile=cafile) if cafile else None


def once():
    t_sent = time.time()  # before connecting: both paths pay their connection set-up
    s = socket.create_connection((h, int(p)), timeout=60)
    if cafile:
        s = CTX.wrap_socket(s, server_hostname=host)
    req = f"{method} {target} HTTP/1.1\r\nHost: {host or addr}\r\n"
    for x in headers:
        req += x + "\r\n"
    if body is not None:
        req += "Content-Type: application/json\r\n"
        if chunked:
            req += "Transfer-Encoding: chunked\r\n"
        else:
            req += f"Content-Length: {len(body)}\r\n"
    req += "Connection: close\r\n\r\n"
    data = req.encode()
    if body is not None:
        if chunked:
            half = len(body) // 2
            for part in (body[:half], body[half:]):
                data += b"%x\r\n%s\r\n" % (len(part), part)
            data += b"0\r\n\r\n"
        else:
            data += body
    s.sendall(data)
    buf = b""
    t_first = t_event = None
    while True:
        try:
            d = s.recv(65536)
        except (ConnectionResetError, ssl.SSLError):
            break
        if not d:
            break
        if t_first is None:
            t_first = time.time()
        buf += d
        if t_event is None and not buffered and b"\r\n\r\n" in buf and b"data:" in buf.split(b"\r\n\r\n", 1)[1]:
            t_event = time.time()
    t_end = time.time()
    if buffered and b"data:" in buf:
        t_event = t_end
    s.close()
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    hd = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hd[k.strip().lower()] = v.strip()
    print(json.dumps({"status": status, "headers": hd, "body": rest[:4096].decode("latin-1"),
                      "t_sent": t_sent, "t_first_byte": t_first, "t_first_event": t_event,
                      "t_end": t_end, "events": rest.count(b"data:")}), flush=True)


for _ in range(repeat):
    once()
