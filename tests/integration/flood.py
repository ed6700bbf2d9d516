#!/usr/bin/env python3
"""flood.py N DENIED_HOST [ALLOWED_HOST:PORT [tls]]: through the sandbox's
egress proxy (127.0.0.1:3128), N CONNECTs to DENIED_HOST:443 (each
refused), then one CONNECT to ALLOWED_HOST:PORT (with "tls": a TLS
handshake in the tunnel, SNI = ALLOWED_HOST, so the proxy's SNI gate
passes it), then closed. Prints "denied=N allowed=STATUS". Several
connections at a time, to be quick."""
import socket, ssl, sys
from concurrent.futures import ThreadPoolExecutor

n, denied_host = int(sys.argv[1]), sys.argv[2]
allowed = sys.argv[3] if len(sys.argv) > 3 else None
tls = len(sys.argv) > 4 and sys.argv[4] == "tls"

def connect(target, handshake=False):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    try:
        s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
        line = s.recv(200).split(b"\r\n")[0].decode(errors="replace")
        code = line.split(" ")[1] if " " in line else "?"
        if code == "200" and handshake:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            ctx.wrap_socket(s, server_hostname=target.rsplit(":", 1)[0]).close()
        return code
    except OSError:
        return "?"
    finally:
        s.close()

with ThreadPoolExecutor(8) as ex:
    codes = list(ex.map(connect, ["%s:443" % denied_host] * n))
print("denied=%d" % sum(1 for c in codes if c == "403"), end=" ")
print("allowed=%s" % (connect(allowed, tls) if allowed else "-"))
