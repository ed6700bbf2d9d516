#!/usr/bin/env python3
"""Hostile pacing and hostile strings against the egress proxy (issue #19).

  proxyedge.py pace PORT TARGET MODE   a tunnel to a plain-HTTP origin whose
      head comes as MODE says; prints "200 <body>" when the origin's answer
      comes through, "stall" when nothing does within 4 s, else what it got.
      MODE: whole | bytewise | pipelined | split | fin; controls: nohead
      (the head never ends: the proxy answers 408 at its head timeout),
      nobody (the request after the head never ends: "200 no-body")
  proxyedge.py tlspipe PORT TARGET CAFILE MODE   the ClientHello sent
      together with the CONNECT head (MODE pipelined) or byte by byte right
      after it (MODE bytewise); prints "handshake-ok" or what went wrong
  proxyedge.py send PORT HEXBYTES   send raw bytes (hex), print the status
  proxyedge.py sni PORT TARGET SNIHEX   a ClientHello naming SNIHEX (hex)
  proxyedge.py logcheck LOG   every line is one JSON object (prints the count)
  proxyedge.py escape HEXBYTES   the target as the log must name it
"""
import hashlib
import json
import socket
import ssl
import sys
import time

HOST = "127.0.0.1"
GET = b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n"


def read_all(s, deadline=4.0):
    s.settimeout(0.2)
    data = b""
    end = time.time() + deadline
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            break
        if not d:
            break
        data += d
        if b"hello-plain" in data:
            break
    return data


def report(data):
    if not data:
        print("stall")
        return
    first = data.split(b"\r\n", 1)[0].decode("latin-1")
    if not first.startswith("HTTP/1.1 200"):
        print(first)
        return
    print("200 hello-plain" if b"hello-plain" in data else "200 no-body")


def conn():
    s = socket.create_connection((HOST, int(sys.argv[2])))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def pace(target, mode):
    head = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode()
    s = conn()
    if mode == "whole":
        s.sendall(head)
        time.sleep(0.2)
        s.sendall(GET)
    elif mode == "bytewise":
        for i in range(len(head)):
            s.sendall(head[i:i + 1])
            time.sleep(0.002)
        time.sleep(0.2)
        s.sendall(GET)
    elif mode == "pipelined":
        s.sendall(head + GET)
    elif mode == "split":
        s.sendall(head[:-3])
        time.sleep(0.1)
        s.sendall(head[-3:] + GET)
    elif mode == "fin":
        s.sendall(head + GET)
        s.shutdown(socket.SHUT_WR)
    elif mode == "nobody":
        s.sendall(head + GET[:-2])
    elif mode == "nohead":
        s.sendall(head[:-2])
    report(read_all(s, 6.0 if mode == "nohead" else 4.0))


def tlspipe(target, cafile, mode):
    ctx = ssl.create_default_context(cafile=cafile)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=target.rsplit(":", 1)[0])
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    head = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode()
    s = conn()
    if mode == "pipelined":
        s.sendall(head + hello)
    else:
        s.sendall(head)
        for i in range(len(hello)):
            s.sendall(hello[i:i + 1])
            time.sleep(0.001)
    s.settimeout(4)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                print("closed before 200")
                return
            buf += d
    except socket.timeout:
        print("stall")
        return
    first, rest = buf.split(b"\r\n\r\n", 1)
    if not first.startswith(b"HTTP/1.1 200"):
        print(first.split(b"\r\n")[0].decode("latin-1"))
        return
    if rest:
        inc.write(rest)
    for _ in range(20):
        try:
            obj.do_handshake()
            print("handshake-ok")
            return
        except ssl.SSLWantReadError:
            d = out.read()
            if d:
                s.sendall(d)
            try:
                r = s.recv(65536)
            except socket.timeout:
                print("stall")
                return
            if not r:
                print("closed")
                return
            inc.write(r)
        except ssl.SSLError as e:
            print("tls-error " + e.reason if e.reason else "tls-error")
            return
    print("no handshake")


def status(s):
    s.settimeout(4)
    buf = b""
    try:
        while b"\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
    except (socket.timeout, ConnectionResetError):
        pass
    line = buf.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ", 2)
    return " ".join(parts[1:]) if len(parts) > 1 else (line or "closed")


def send(hexbytes):
    s = conn()
    s.sendall(bytes.fromhex(hexbytes))
    print(status(s))


def sni(target, snihex):
    """A ClientHello with server_name SNIHEX, after a CONNECT to TARGET."""
    name = bytes.fromhex(snihex)
    sn = b"\x00" + len(name).to_bytes(2, "big") + name
    sn = len(sn).to_bytes(2, "big") + sn
    exts = b"\x00\x00" + len(sn).to_bytes(2, "big") + sn
    body = b"\x03\x03" + b"\x11" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += len(exts).to_bytes(2, "big") + exts
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    rec = b"\x16\x03\x01" + len(hs).to_bytes(2, "big") + hs
    s = conn()
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    st = status(s)
    if not st.startswith("200"):
        print("connect " + st)
        return
    s.sendall(rec)
    s.settimeout(4)
    try:
        d = s.recv(100)
    except (socket.timeout, ConnectionResetError):
        d = b""
    print("closed" if not d else "got-bytes")


def logcheck(path):
    n = 0
    with open(path, "rb") as f:
        for raw in f:
            n += 1
            if not raw.endswith(b"\n"):
                print("line %d: no newline" % n)
                return
            try:
                j = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                print("line %d: not JSON (%s): %r" % (n, e, raw[:200]))
                return
            if not isinstance(j, dict) or "event" not in j:
                print("line %d: not a decision object: %r" % (n, raw[:200]))
                return
    print("%d lines" % n)


def escape(hexbytes):
    """proxy/stats.c px_escape_raw: \\xNN but printable ASCII, 256 bytes."""
    b = bytes.fromhex(hexbytes)
    out = "".join(chr(c) if 0x20 <= c < 0x7F and c != 0x5C else "\\x%02x" % c for c in b[:256])
    if len(b) > 256:
        out += "...(%d bytes, sha256:%s)" % (len(b), hashlib.sha256(b).hexdigest()[:12])
    print(out)


def main():
    cmd = sys.argv[1]
    if cmd == "pace":
        pace(sys.argv[3], sys.argv[4])
    elif cmd == "tlspipe":
        tlspipe(sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "send":
        send(sys.argv[3])
    elif cmd == "sni":
        sni(sys.argv[3], sys.argv[4])
    elif cmd == "logcheck":
        logcheck(sys.argv[2])
    elif cmd == "escape":
        escape(sys.argv[2])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
