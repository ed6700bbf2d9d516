#!/usr/bin/env python3
"""Client side of the proxy tests: raw request heads and hand-made TLS
first flights, talking only to a proxy on 127.0.0.1.

  proxyclient.py raw PORT REQUEST      REQUEST with Python escapes (\\r\\n, \\x00)
      prints "<status> <X-Airlock-Deny or ->" or "closed"
  proxyclient.py tls PORT TARGET MODE CAFILE
      CONNECT TARGET, then one of MODE:
        sni=NAME      ClientHello with SNI NAME, full handshake, GET /
        frag=NAME     the same, ClientHello in three TCP segments
        nosni         ClientHello without server_name
        ech=NAME      ClientHello with SNI NAME and an ECH extension
        plain         "GET / HTTP/1.1" instead of TLS
      prints "https <status>" when a response came back through the tunnel,
      "closed" when the proxy cut the tunnel, "connect <status> <deny>" when
      the CONNECT itself was refused
  proxyclient.py slow PORT             slowloris: one byte per second; prints
      the status and the seconds until the proxy answered
  proxyclient.py flood PORT N OTHER    open N connections at once, send a
      CONNECT on each, print "<n 200> <n 503 conn-limit> <n other>" and the
      answer to one CONNECT on port OTHER made while they are all open
"""
import os
import select
import socket
import ssl
import struct
import sys
import time

HOST = "127.0.0.1"
TARGET = os.environ.get("ALLOWED_TARGET", "allowed.test:443")


def read_head(s, timeout=5.0):
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
    except (socket.timeout, ConnectionResetError):
        pass
    return buf


def status_of(head):
    if not head:
        return "closed"
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    status = parts[1].decode() if len(parts) > 1 else "?"
    deny = "-"
    for l in lines[1:]:
        if l.lower().startswith(b"x-airlock-deny:"):
            deny = l.split(b":", 1)[1].strip().decode()
    return "%s %s" % (status, deny)


def raw(port, req):
    data = req.encode("utf-8").decode("unicode_escape").encode("latin-1")
    s = socket.create_connection((HOST, port))
    s.sendall(data)
    head = read_head(s)
    print(status_of(head))
    # an answer must never carry an address
    if b"127.0.0.1" in head or b"169.254" in head or b"10.0.0.1" in head:
        print("LEAK")


def client_hello(sni, ech=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    if ech:
        hello = add_extension(hello, 0xFE0D, b"\x00" * 32)
    return hello


def add_extension(rec, etype, body):
    """Append an extension to a one-record ClientHello, fixing the lengths."""
    hs = bytearray(rec[5:])
    p = 4 + 2 + 32
    p += 1 + hs[p]
    p += 2 + struct.unpack("!H", hs[p:p + 2])[0]
    p += 1 + hs[p]
    ext_len = struct.unpack("!H", hs[p:p + 2])[0]
    ext = struct.pack("!HH", etype, len(body)) + body
    hs[p:p + 2] = struct.pack("!H", ext_len + len(ext))
    hs += ext
    mlen = len(hs) - 4
    hs[1:4] = struct.pack("!I", mlen)[1:]
    return rec[:3] + struct.pack("!H", len(hs)) + bytes(hs)


def tunnel(port, target):
    s = socket.create_connection((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    head = read_head(s)
    return s, head


def tls(port, target, mode, cafile):
    s, head = tunnel(port, target)
    st = status_of(head)
    if not st.startswith("200"):
        print("connect " + st)
        return
    name = mode.split("=", 1)[1] if "=" in mode else None
    if mode == "plain":
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    elif mode == "nosni":
        s.sendall(client_hello(None))
    elif mode.startswith("ech="):
        s.sendall(client_hello(name, ech=True))
    else:
        return handshake(s, name, cafile, fragment=mode.startswith("frag="))
    s.settimeout(5)
    try:
        d = s.recv(100)
    except (socket.timeout, ConnectionResetError):
        d = b""
    print("closed" if not d else "got-bytes")


def handshake(s, name, cafile, fragment):
    ctx = ssl.create_default_context(cafile=cafile)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=name)
    first = True
    s.settimeout(5)
    while True:
        try:
            obj.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            done = False
        except ssl.SSLError as e:
            print("tls-error %s" % e.reason)
            return
        data = out.read()
        if data:
            if first and fragment:
                cut = [0, 3, len(data) // 2, len(data)]  # inside the record header, then mid-message
                for i in range(3):
                    s.sendall(data[cut[i]:cut[i + 1]])
                    time.sleep(0.2)
            else:
                s.sendall(data)
            first = False
        if done:
            break
        try:
            d = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            d = b""
        if not d:
            print("closed")
            return
        inc.write(d)
    obj.write(b"GET / HTTP/1.0\r\n\r\n")
    s.sendall(out.read())
    resp = b""
    while True:
        try:
            d = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not d:
            break
        inc.write(d)
        try:
            while True:
                chunk = obj.read(65536)
                if not chunk:
                    break
                resp += chunk
        except (ssl.SSLWantReadError, ssl.SSLZeroReturnError, ssl.SSLEOFError):
            pass
        if b"\r\n" in resp:
            break
    line = resp.split(b"\r\n", 1)[0].split(b" ")
    print("https %s" % (line[1].decode() if len(line) > 1 else "?"))


def slow(port):
    s = socket.create_connection((HOST, port))
    s.settimeout(0.05)
    t0 = time.time()
    req = ("CONNECT %s HTTP/1.1\r\n" % TARGET).encode()
    for i, ch in enumerate(req + b"X" * 100):
        try:
            s.send(bytes([ch]))
        except OSError:
            break
        try:
            d = s.recv(4096)
            if d or True:
                if d:
                    print("%s %.1f" % (status_of(d), time.time() - t0))
                    return
                print("closed %.1f" % (time.time() - t0))
                return
        except socket.timeout:
            pass
        time.sleep(1)
    print("no-answer")


def flood(port, n, other):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection((HOST, port)))
        except OSError:
            break
    for s in socks:
        try:
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n" % TARGET).encode())
        except OSError:
            pass
    ok = lim = bad = 0
    for s in socks:
        st = status_of(read_head(s, 10))
        if st.startswith("200"):
            ok += 1
        elif st == "503 conn-limit":
            lim += 1
        else:
            bad += 1
    o = socket.create_connection((HOST, other))
    o.sendall(("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n" % TARGET).encode())
    print("%d %d %d %s" % (ok, lim, bad, status_of(read_head(o))))
    o.close()
    for s in socks:
        s.close()


def hold(port, target):
    """Open a tunnel, print its status and our local port, keep it open
    until stdin closes or 60 s pass (issue #19: a tunnel open at SIGTERM)."""
    s, head = tunnel(port, target)
    print(status_of(head), s.getsockname()[1], flush=True)
    select.select([sys.stdin, s], [], [], 60)
    s.close()


def fin(port, target, half):
    """Through a tunnel: GET /index.html with Connection: close (and with
    `half`, our FIN right behind the request), then read to EOF (10 s at
    most). Prints the status line, whether the body arrived, and "eof" or
    "timeout" (issue #19: a short read after a FIN, bytes sent with the FIN)."""
    s, head = tunnel(port, target)
    if not status_of(head).startswith("200"):
        print("connect " + status_of(head))
        return
    s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    if half:
        s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    got, end = b"", "eof"
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except (socket.timeout, ConnectionResetError):
        end = "timeout"
    line = got.split(b"\r\n", 1)[0].decode(errors="replace")
    print(line, "body" if got.endswith(b"hello-plain\n") else "no-body", end)


def eager(port, target):
    """CONNECT, the payload and our FIN at once, without waiting for the
    200; print what came after the 200 head, or "timeout" (10 s)."""
    s = socket.create_connection((HOST, port))
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nhello" % (target, target)).encode())
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except (socket.timeout, ConnectionResetError):
        print("timeout")
        return
    head, _, body = got.partition(b"\r\n\r\n")
    print(status_of(head + b"\r\n\r\n"), body.decode(errors="replace").strip())


def eof_origin(portfile):
    """An origin that reads each connection to EOF, then answers "got N"
    (the bytes it read) and closes: it answers only once the client's FIN
    came through the tunnel."""
    ls = socket.socket()
    ls.bind((HOST, 0))
    ls.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    while True:
        c, _ = ls.accept()
        c.settimeout(30)
        n = 0
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                n += len(d)
            c.sendall(b"got %d\n" % n)
        except OSError:
            pass
        c.close()


def main():
    cmd = sys.argv[1]
    if cmd == "raw":
        raw(int(sys.argv[2]), sys.argv[3])
    elif cmd == "tls":
        tls(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "slow":
        slow(int(sys.argv[2]))
    elif cmd == "fin":
        fin(int(sys.argv[2]), sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "half")
    elif cmd == "eager":
        eager(int(sys.argv[2]), sys.argv[3])
    elif cmd == "eof-origin":
        eof_origin(sys.argv[2])
    elif cmd == "hold":
        hold(int(sys.argv[2]), sys.argv[3])
    elif cmd == "flood":
        flood(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))


if __name__ == "__main__":
    main()
