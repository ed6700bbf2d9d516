#!/usr/bin/env python3
"""Forge gateway benchmark (issue #15): git clone and push of a repository
with a >= 200 MiB pack, and API call latency with keep-alive, each three
ways in one run, interleaved round by round:

  direct   git / the client talk TLS to the test forge on loopback
  tunnel   through the egress proxy's plain CONNECT tunnel (real token)
  gateway  through the proxy's hand-off to the forge gateway (placeholder):
           TLS terminated, every request parsed, rebuilt and re-encrypted

Usage: bench/gateway.py [--build DIR] [--size MIB] [--rounds N] [--api N]
                        [--markdown] [--keep]

Everything runs on 127.0.0.1 from a temporary directory: airlock-forge with
the demo fixture and a test CA, the gateway-harness (proxy + gateway), git.
Tokens are minted from the forge with a test App key and passed to git in
the environment (GIT_CONFIG_*), never on a command line. Every wait is
bounded; every process started here is stopped at the end. Not a test:
nothing fails when a number moves. Targets: gateway >= 80 % of the tunnel's
git rate; <= 2 ms median added per API call after the first.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
PROCS = []
BRANCH = "airlock/1-bench"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def start(name, argv, **kw):
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    PROCS.append((name, p))
    return p


def stop_all():
    for _, p in reversed(PROCS):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for _, p in reversed(PROCS):
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def wait_file(path, proc, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def run(argv, env=None, cwd=None, timeout=900):
    r = subprocess.run(argv, env=env, cwd=cwd, timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv[:3]), r.stderr.decode(errors="replace")[-800:]))
    return r.stdout


class Setup:
    def __init__(self, a, w):
        self.w = w
        forge = os.path.join(a.build, "tests/forge-emulator/airlock-forge")
        harness = os.path.join(a.build, "tests/integration/gateway-harness")
        for f in (forge, harness):
            if not os.access(f, os.X_OK):
                sys.exit("not built: %s (ninja -C %s)" % (f, a.build))
        run([os.path.join(SRC, "scripts/make-test-ca.sh"), w + "/tls"])
        run([os.path.join(SRC, "scripts/make-app-key.sh"), w + "/keys", "app"])
        self.fca = w + "/tls/ca.crt"
        fp = start("forge", [forge, "--fixture", os.path.join(SRC, "examples/demo/fixture.json"),
                             "--data", w + "/data", "--tls-dir", w + "/tls",
                             "--key", "1001=%s/keys/app.pub.pem" % w,
                             "--key", "1002=%s/keys/app.pub.pem" % w,
                             "--ports-file", w + "/ports.json"],
                   stdout=subprocess.DEVNULL, stderr=open(w + "/forge.err", "w"))
        if not wait_file(w + "/ports.json", fp):
            sys.exit("forge did not start: " + open(w + "/forge.err").read())
        ports = json.load(open(w + "/ports.json"))
        self.port = ports["https"]
        self.admin = ports["admin"]
        now = json.load(urllib.request.urlopen("http://127.0.0.1:%d/clock" % self.admin))["now"]
        jwt = run([os.path.join(SRC, "scripts/forge-jwt.sh"), w + "/keys/app.pem", "1001"],
                  env=dict(os.environ, JWT_NOW=str(now))).decode().strip()
        self.git_token = self.mint(jwt, {"repositories": ["tally"],
                                         "permissions": {"contents": "write"}})
        self.ticket_token = self.mint(jwt, {"repositories": ["tally"],
                                            "permissions": {"issues": "write"}})
        with open(w + "/policy.yaml", "w") as f:
            f.write("""version: 1
network:
  allow:
    - {host: api.forge.test, port: %(p)d, tls: true}
    - {host: forge.test, port: %(p)d, tls: true}
  pin:
    - {host: api.forge.test, address: 127.0.0.1}
    - {host: forge.test, address: 127.0.0.1}
forge:
  api_url: https://api.forge.test:%(p)d
  git_url: https://forge.test:%(p)d
  ca_file: %(ca)s
""" % {"p": self.port, "ca": self.fca})
        os.makedirs(w + "/h")
        hp = start("harness", [harness, "-p", w + "/policy.yaml", "--repo", "acme/tally",
                               "--ticket", "1", "--branch", BRANCH, "--run-id", "bench",
                               "--dir", w + "/h"],
                   stdin=subprocess.PIPE, stderr=open(w + "/harness.err", "w"))
        hp.stdin.write(("%s\n%s\n" % (self.git_token, self.ticket_token)).encode())
        hp.stdin.close()
        if not wait_file(w + "/h/ports.json", hp):
            sys.exit("harness did not start: " + open(w + "/harness.err").read())
        hports = json.load(open(w + "/h/ports.json"))
        self.gw, self.tun = hports["gateway"], hports["tunnel"]
        self.ph = open(w + "/h/placeholder").read().strip()
        self.run_ca = w + "/h/ca.pem"

    def mint(self, jwt, body):
        ctx = ssl.create_default_context(cafile=self.fca)
        req = urllib.request.Request(
            "https://127.0.0.1:%d/app/installations/2001/access_tokens" % self.port,
            data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": "Bearer " + jwt, "Host": "api.forge.test"})
        ctx.check_hostname = False
        return json.load(urllib.request.urlopen(req, context=ctx))["token"]

    def git_env(self, mode):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("GIT_") and "proxy" not in k.lower()}
        env.update(HOME=self.w + "/home", GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
        basic = base64.b64encode(("x-access-token:" + self.git_token).encode()).decode()
        if mode == "gateway":
            cred = self.w + "/cred"
            with open(cred, "w") as f:
                f.write("#!/bin/sh\necho username=x-access-token\necho password=%s\n" % self.ph)
            os.chmod(cred, 0o700)
            kv = [("http.proxy", "http://127.0.0.1:%d" % self.gw), ("http.sslCAInfo", self.run_ca),
                  ("credential.helper", cred)]
        elif mode == "tunnel":
            kv = [("http.proxy", "http://127.0.0.1:%d" % self.tun), ("http.sslCAInfo", self.fca),
                  ("http.extraHeader", "Authorization: Basic " + basic)]
        else:
            kv = [("http.curloptResolve", "forge.test:%d:127.0.0.1" % self.port),
                  ("http.sslCAInfo", self.fca), ("http.extraHeader", "Authorization: Basic " + basic)]
        kv.append(("http.postBuffer", "1048576"))
        env["GIT_CONFIG_COUNT"] = str(len(kv))
        for i, (k, v) in enumerate(kv):
            env["GIT_CONFIG_KEY_%d" % i] = k
            env["GIT_CONFIG_VALUE_%d" % i] = v
        return env


def make_repo(s, mib):
    repo = s.w + "/src"
    os.makedirs(s.w + "/home", exist_ok=True)
    env = s.git_env("direct")
    run(["git", "init", "-q", "-b", "main", repo], env=env)
    with open(repo + "/blob.bin", "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
    run(["git", "-C", repo, "add", "blob.bin"], env=env)
    run(["git", "-C", repo, "-c", "user.name=b", "-c", "user.email=b@example.test", "commit",
         "-qm", "big"], env=env)
    return repo


def git_url(s):
    return "https://forge.test:%d/acme/tally.git" % s.port


def push(s, repo, mode):
    # the branch is deleted first (directly), so every push sends the whole pack
    run(["git", "-C", repo, "push", "-q", git_url(s), ":refs/heads/" + BRANCH], env=s.git_env("direct"))
    t = time.monotonic()
    run(["git", "-C", repo, "push", "-q", git_url(s), "HEAD:refs/heads/" + BRANCH], env=s.git_env(mode))
    return time.monotonic() - t


def clone(s, mode):
    d = s.w + "/clone-" + mode
    shutil.rmtree(d, ignore_errors=True)
    t = time.monotonic()
    run(["git", "clone", "-q", "--bare", "-b", BRANCH, git_url(s), d], env=s.git_env(mode))
    el = time.monotonic() - t
    shutil.rmtree(d, ignore_errors=True)
    return el


def api_latencies(s, mode, n):
    """n keep-alive GETs of /repos/acme/tally on one connection; seconds each."""
    if mode == "direct":
        raw = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        ca, tok = s.fca, s.git_token
    else:
        raw = socket.create_connection(("127.0.0.1", s.gw if mode == "gateway" else s.tun),
                                       timeout=30)
        raw.sendall(b"CONNECT api.forge.test:%d HTTP/1.1\r\nHost: api.forge.test:%d\r\n\r\n"
                    % (s.port, s.port))
        h = b""
        while b"\r\n\r\n" not in h:
            c = raw.recv(1)
            if not c:
                raise RuntimeError("CONNECT refused")
            h += c
        ca = s.run_ca if mode == "gateway" else s.fca
        tok = s.ph if mode == "gateway" else s.git_token
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["http/1.1"])
    t = ctx.wrap_socket(raw, server_hostname="api.forge.test")
    req = ("GET /repos/acme/tally HTTP/1.1\r\nHost: api.forge.test:%d\r\n"
           "Authorization: token %s\r\nUser-Agent: bench\r\n\r\n" % (s.port, tok)).encode()
    out = []
    buf = b""
    for _ in range(n):
        t0 = time.perf_counter()
        t.sendall(req)
        while b"\r\n\r\n" not in buf:
            buf += t.recv(65536)
        head, buf = buf.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("%s: %s" % (mode, head[:80]))
        cl = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                cl = int(v)
        while len(buf) < cl:
            buf += t.recv(65536)
        buf = buf[cl:]
        out.append(time.perf_counter() - t0)
    t.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--size", type=int, default=210, help="MiB of random data in the pack")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--api", type=int, default=200, help="API calls per connection")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    w = tempfile.mkdtemp(prefix="airlock-bench-gw.")
    os.chmod(w, 0o700)
    modes = ["direct", "tunnel", "gateway"]
    try:
        s = Setup(a, w)
        log("building a %d MiB repository" % a.size)
        repo = make_repo(s, a.size)
        pack = a.size << 20
        res = {(op, m): [] for op in ("push", "clone") for m in modes}
        for r in range(a.rounds):
            for m in modes:
                res[("push", m)].append(push(s, repo, m))
                log("round %d push %-7s %.2f s" % (r + 1, m, res[("push", m)][-1]))
            for m in modes:
                res[("clone", m)].append(clone(s, m))
                log("round %d clone %-7s %.2f s" % (r + 1, m, res[("clone", m)][-1]))
        lat = {m: [] for m in modes}
        for r in range(a.rounds):
            for m in modes:
                lat[m] += api_latencies(s, m, a.api)[1:]  # after the first
        rows = []
        for op in ("push", "clone"):
            tun = statistics.median(res[(op, "tunnel")])
            for m in modes:
                med = statistics.median(res[(op, m)])
                rows.append((op, m, med, pack / med / (1 << 20), tun / med))
        print("| git | path | median s | MiB/s | vs tunnel |" if a.markdown else
              "git     path     median_s  MiB/s  vs_tunnel")
        if a.markdown:
            print("|---|---|---:|---:|---:|")
        for op, m, med, rate, rel in rows:
            print(("| %s | %s | %.2f | %.1f | %.0f %% |" if a.markdown else
                   "%-7s %-8s %8.2f %6.1f %8.0f %%") % (op, m, med, rate, rel * 100))
        print()
        d = statistics.median(lat["direct"]) * 1000
        print("| API GET (keep-alive) | median ms | p90 ms | added vs direct |" if a.markdown else
              "api     median_ms  p90_ms  added_vs_direct_ms")
        if a.markdown:
            print("|---|---:|---:|---:|")
        for m in modes:
            xs = sorted(lat[m])
            med = statistics.median(xs) * 1000
            p90 = xs[int(len(xs) * 0.9)] * 1000
            print(("| %s | %.2f | %.2f | %+.2f |" if a.markdown else "%-7s %9.2f %7.2f %+10.2f")
                  % (m, med, p90, med - d))
    finally:
        stop_all()
        if a.keep:
            log("kept " + w)
        else:
            shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    main()
