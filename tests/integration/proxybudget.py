#!/usr/bin/env python3
"""The egress budget across proxy workers (issue #19), for proxy.sh.

  proxybudget.py AIRLOCK DIR BUDGET TUNNELS BYTES WORKERS

Starts a sink on 127.0.0.1 that counts every byte it receives, writes a
policy allowing it (pinned, tls: false) with `egress_budget: BUDGET`, starts
`AIRLOCK proxy --workers WORKERS` on 127.0.0.1 with it, then opens TUNNELS
CONNECT tunnels at once, each sending BYTES as fast as it can, from as many
threads. Prints "<bytes the sink received> <tunnels that got 200>" once
every sink connection has ended (or after 30 s), then stops the proxy.
Everything is bounded and local; the proxy is stopped on every path.
"""
import os
import socket
import subprocess
import sys
import threading
import time


def main():
    airlock, d, budget, tunnels, nbytes, workers = sys.argv[1:7]
    tunnels, nbytes = int(tunnels), int(nbytes)
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(256)
    sport = sink.getsockname()[1]
    got = [0]
    lock = threading.Lock()
    drains = []

    def drain(c):
        c.settimeout(30)
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                with lock:
                    got[0] += len(b)
        except OSError:
            pass
        c.close()

    def accept():
        while True:
            try:
                c, _ = sink.accept()
            except OSError:
                return
            t = threading.Thread(target=drain, args=(c,), daemon=True)
            t.start()
            drains.append(t)

    threading.Thread(target=accept, daemon=True).start()
    pol = os.path.join(d, "budget-%s.yaml" % budget)
    with open(pol, "w") as f:
        f.write(f"""version: 1
network:
  allow: [{{host: sink.test, port: {sport}, tls: false}}]
  pin: [{{host: sink.test, address: 127.0.0.1}}]
  egress_budget: {budget}
  max_connections: 200
""")
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    pport = ls.getsockname()[1]
    ls.close()
    px = subprocess.Popen([airlock, "proxy", "-p", pol, "--listen", f"127.0.0.1:{pport}",
                           "--workers", workers, "--log", os.path.join(d, "budget.log")],
                          stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "budget.err"), "a"))
    try:
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", pport), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        opened = [0]
        go = threading.Event()

        def client():
            try:
                s = socket.create_connection(("127.0.0.1", pport), timeout=10)
                s.sendall(f"CONNECT sink.test:{sport} HTTP/1.1\r\nHost: sink.test\r\n\r\n".encode())
                head = b""
                while b"\r\n\r\n" not in head:
                    b = s.recv(4096)
                    if not b:
                        return
                    head += b
                if b" 200 " not in head.split(b"\r\n")[0] + b" ":
                    return
                with lock:
                    opened[0] += 1
                go.wait(10)
                chunk = b"x" * 16384
                left = nbytes
                while left > 0:
                    s.sendall(chunk[:min(left, len(chunk))])
                    left -= min(left, len(chunk))
                s.shutdown(socket.SHUT_WR)
                s.settimeout(15)
                while s.recv(65536):
                    pass
                s.close()
            except OSError:
                pass

        cs = [threading.Thread(target=client, daemon=True) for _ in range(tunnels)]
        for t in cs:
            t.start()
        time.sleep(0.5)  # every tunnel open before any byte is spent
        go.set()
        end = time.monotonic() + 30
        for t in cs:
            t.join(max(0.1, end - time.monotonic()))
        for t in list(drains):
            t.join(max(0.1, end - time.monotonic()))
        with lock:
            print(got[0], opened[0])
    finally:
        px.terminate()
        try:
            px.wait(10)
        except subprocess.TimeoutExpired:
            px.kill()
            px.wait()
        sink.close()


if __name__ == "__main__":
    main()
