#!/usr/bin/env python3
"""Raw client for the forge gateway tests (issue #15): CONNECT through the
egress proxy, TLS with the run CA, then exactly the bytes given, so hostile
framing reaches the gateway unchanged.

  gwclient.py PROXY_PORT HOST PORT CA [--sni NAME] [--alpn P,..] [--wait-100]
              [--half-close] [--body-after FILE] < request-bytes

Prints one line per response: "STATUS <code> <X-Airlock-Deny or ->", then
"CLOSED" when the server closed the connection, or "OPEN" when it was still
open after the responses stopped (1 s of silence). --wait-100: send stdin,
wait for a response; if it is "100 Continue" send --body-after's bytes.
--half-close: shut the write side after sending. A TLS failure prints
"TLS-FAILED <reason>" and exits 0 (the test decides)."""
import argparse
import os
import socket
import ssl
import sys


def connect(a):
    s = socket.create_connection(("127.0.0.1", a.proxy), timeout=10)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (
        a.host.encode(), a.port, a.host.encode(), a.port))
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            print("CONNECT-FAILED closed")
            sys.exit(0)
        head += c
    if not head.startswith(b"HTTP/1.1 200"):
        print("CONNECT-FAILED " + head.split(b"\r\n")[0].decode(errors="replace"))
        sys.exit(0)
    ctx = ssl.create_default_context(cafile=a.ca)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if a.alpn:
        ctx.set_alpn_protocols(a.alpn.split(","))
    sni = a.sni if a.sni is not None else a.host
    if a.sni is not None:
        ctx.check_hostname = False
    try:
        return ctx.wrap_socket(s, server_hostname=sni)
    except (ssl.SSLError, OSError) as e:
        print("TLS-FAILED %s" % (getattr(e, "reason", None) or e))
        sys.exit(0)


def read_responses(t, out, limit=16):
    """Parse responses off t; print their status; return on silence/close."""
    buf = b""
    t.settimeout(1.0)
    n = 0
    while n < limit:
        while b"\r\n\r\n" not in buf:
            try:
                c = t.recv(65536)
            except (socket.timeout, TimeoutError):
                out.append("OPEN")
                return buf
            except (ssl.SSLError, OSError):
                c = b""
            if not c:
                out.append("CLOSED")
                return buf
            buf += c
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode(errors="replace").split("\r\n")
        code = lines[0].split(" ")[1]
        deny = "-"
        cl = 0
        chunked = False
        for l in lines[1:]:
            k, _, v = l.partition(":")
            if k.lower() == "x-airlock-deny":
                deny = v.strip()
            if k.lower() == "content-length":
                cl = int(v.strip())
            if k.lower() == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        out.append("STATUS %s %s" % (code, deny))
        n += 1
        if code.startswith("1"):
            return buf
        if chunked:
            while not buf.endswith(b"0\r\n\r\n"):
                try:
                    c = t.recv(65536)
                except (socket.timeout, TimeoutError, ssl.SSLError, OSError):
                    c = b""
                if not c:
                    out.append("CLOSED")
                    return buf
                buf += c
            buf = b""
        else:
            while len(buf) < cl:
                try:
                    c = t.recv(65536)
                except (socket.timeout, TimeoutError, ssl.SSLError, OSError):
                    c = b""
                if not c:
                    out.append("CLOSED")
                    return buf
                buf += c
            buf = buf[cl:]
    return buf


def main():
    p = argparse.ArgumentParser()
    p.add_argument("proxy", type=int)
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("ca")
    p.add_argument("--sni")
    p.add_argument("--alpn")
    p.add_argument("--wait-100", action="store_true")
    p.add_argument("--body-after")
    p.add_argument("--half-close", action="store_true")
    a = p.parse_args()
    data = sys.stdin.buffer.read()
    t = connect(a)
    print("ALPN %s" % (t.selected_alpn_protocol() or "-"))
    try:
        t.sendall(data)
    except (ssl.SSLError, OSError):
        pass
    if a.half_close:
        # TLS has no half-close; shutting the TCP write side is what a
        # client that half-closes does (on a dup: SSLSocket.shutdown would
        # drop the TLS state and the answer could not be read)
        raw = socket.socket(fileno=os.dup(t.fileno()))
        raw.shutdown(socket.SHUT_WR)
        raw.close()
    out = []
    read_responses(t, out)
    if a.wait_100 and out and out[0].startswith("STATUS 100") and a.body_after:
        t.sendall(open(a.body_after, "rb").read())
        read_responses(t, out)
    print("\n".join(out))


if __name__ == "__main__":
    main()
