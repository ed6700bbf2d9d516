#!/usr/bin/env python3
"""Egress proxy benchmark (issues #3, #19): airlock's proxy beside Squid,
tinyproxy and a minimal splice(2) relay, all on loopback, in one run.

  1. throughput: 1 GiB through a CONNECT tunnel (curl -p -x), and direct;
     splice-floor (bench/splicerelay.c) is the least a relay can do: the
     second TCP hop and the splice calls, nothing else
  2. new-tunnel rate: N small requests, one new tunnel each, 50 at a time
     (curl -Z, as in ../shared/bench-anchors.md, and bench/tunnelgen.c, a
     small C load generator, so that curl is not the bottleneck)
  3. RSS of one fresh proxy as idle tunnels are added (0, 100, 1000, 5000,
     then as many as RLIMIT_NOFILE allows), airlock and Squid

airlock runs twice: with its default workers (one event loop per CPU) and
with --workers 1. Every figure carries the 1-minute load average.

Usage: bench/proxy.py [--airlock PATH] [--runs N] [--size BYTES] [--small N]
                      [--idle N] [--idle-steps 0,100,...] [--no-curl]
                      [--nice N] [--keep]

Prints markdown tables and the issue's targets on stdout, progress on
stderr. Every server (nginx origin, Squid, tinyproxy, the airlock proxies,
the splice relay, an idle origin) is started here in its own process group
on 127.0.0.1, with its configuration in a temporary directory, and stopped
at the end, also on failure or Ctrl-C (a watchdog kills them if this script
is SIGKILLed). Candidates are interleaved round by round so that machine
noise hits each alike; medians and ratios are printed. Every loop and every
wait is bounded. Needs: nginx (nginx-light), squid, tinyproxy, curl, cc. A
missing Squid or tinyproxy is reported and skipped.
"""
import argparse
import os
import resource
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1 << 30
PROCS = []  # (name, Popen) of everything we started
PGFILE = None  # process groups, one a line, for the watchdog


# ---------------------------------------------------------------- processes

def log(msg):
    print(msg, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def start(name, argv, tmp, port=None):
    out = open(os.path.join(tmp, name + ".out"), "wb")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, preexec_fn=child_setup)
    PROCS.append((name, p))
    if PGFILE:
        with open(PGFILE, "a") as f:
            f.write(f"{p.pid}\n")
    if port and not wait_port(port, p):
        out.flush()
        with open(os.path.join(tmp, name + ".out"), errors="replace") as f:
            tail = f.read()[-2000:]
        raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port}:\n{tail}")
    return p


def stop(name, p):
    """SIGTERM the process group we created, SIGKILL after 5 s. Only while
    the leader is not reaped (so its id cannot have been reused)."""
    if p.returncode is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(p.pid, signal.SIGKILL)  # stragglers in the group (workers)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        log(f"warning: {name} (pid {p.pid}) did not die")


def stop_all():
    while PROCS:
        stop(*PROCS.pop())


def child_setup():
    """In each server: die with the benchmark even if it is SIGKILLed
    (PR_SET_PDEATHSIG), and the highest descriptor limit we may have."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    raise_nofile()


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1 << 20
    for h in (want, hard):  # the hard limit only rises with CAP_SYS_RESOURCE
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))
            return
        except (ValueError, OSError):
            continue


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


TCK = os.sysconf("SC_CLK_TCK")


def group_cpu_s(pgid):
    """utime+stime in seconds summed over the process group (all threads).
    On a machine shared with other work this is steadier than wall time."""
    tot = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            if int(st[2]) == pgid:
                tot += int(st[11]) + int(st[12])
        except (OSError, ValueError, IndexError):
            continue
    return tot / TCK


def group_rss_kib(pgid):
    """VmRSS summed over the process group (Squid may fork helpers)."""
    tot = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            if int(st.rsplit(")", 1)[1].split()[2]) == pgid:
                tot += rss_kib(int(d))
        except (OSError, ValueError, IndexError):
            continue
    return tot


# ------------------------------------------------------------------ servers

def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def make_www(tmp, size):
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    chunk = bytes(1 << 20)
    with open(os.path.join(www, "big"), "wb") as f:  # real zeros, not a sparse file
        left = size
        while left > 0:
            n = min(left, len(chunk))
            f.write(chunk[:n])
            left -= n
    write(os.path.join(www, "small"), "ok\n")
    return www


def start_nginx(tmp, www, port):
    conf = os.path.join(tmp, "nginx.conf")
    write(conf, f"""
user root;
worker_processes auto;
worker_rlimit_nofile 20000;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx.err warn;
events {{ worker_connections 8192; }}
http {{
  sendfile on;
  access_log off;
  keepalive_requests 100000;
  client_body_temp_path {tmp}/nginx-body;
  proxy_temp_path {tmp}/nginx-proxy;
  fastcgi_temp_path {tmp}/nginx-fcgi;
  uwsgi_temp_path {tmp}/nginx-uwsgi;
  scgi_temp_path {tmp}/nginx-scgi;
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    root {www};
  }}
}}
""")
    return start("nginx", ["nginx", "-c", conf, "-g", "daemon off;"], tmp, port)


def start_squid(tmp, port, origin_ports):
    d = os.path.join(tmp, "squid")
    os.makedirs(d)
    os.chmod(d, 0o777)
    conf = os.path.join(d, "squid.conf")
    write(conf, f"""
http_port 127.0.0.1:{port}
acl localhost_src src 127.0.0.1
acl target_ports port {' '.join(map(str, origin_ports))}
acl CONNECT method CONNECT
http_access allow CONNECT localhost_src target_ports
http_access deny all
cache deny all
access_log none
cache_store_log none
cache_log {d}/cache.log
pid_filename {d}/squid.pid
coredump_dir {d}
workers 1
max_filedescriptors 20000
pinger_enable off
shutdown_lifetime 0 seconds
visible_hostname bench.invalid
dns_nameservers 127.0.0.1
""")
    # -N: no daemon, the master is the one worker
    return start("squid", ["squid", "-N", "-f", conf], tmp, port)


def start_tinyproxy(tmp, port, origin_port):
    conf = os.path.join(tmp, "tinyproxy.conf")
    write(conf, f"""
Port {port}
Listen 127.0.0.1
MaxClients 2000
Allow 127.0.0.1
ConnectPort {origin_port}
LogLevel Critical
Timeout 600
PidFile "{tmp}/tinyproxy.pid"
""")
    return start("tinyproxy", ["tinyproxy", "-d", "-c", conf], tmp, port)


def start_airlock(tmp, airlock, port, origin_port, idle_port, name="airlock", workers=None):
    pol = os.path.join(tmp, "policy.yaml")
    # Both names are pinned to loopback (the only way the proxy ever dials
    # loopback); the resolver is never asked. tls: false turns the SNI gate
    # off: plain HTTP inside the CONNECT tunnel.
    write(pol, f"""version: 1
network:
  allow:
    - {{host: origin.test, port: {origin_port}, tls: false}}
    - {{host: idle.test, port: {idle_port}, tls: false}}
  pin:
    - {{host: origin.test, address: 127.0.0.1}}
    - {{host: idle.test, address: 127.0.0.1}}
  resolver: 127.0.0.1:9
  max_connections: 100000
  timeouts: {{head: 10s, connect: 10s, idle: 1h, tunnel: 1h}}
""")
    argv = [airlock, "proxy", "-p", pol, "--listen", f"127.0.0.1:{port}",
            "--log", os.path.join(tmp, name + ".audit"), "--max-conns", "100000"]
    if workers:
        argv += ["--workers", str(workers)]
    return start(name, argv, tmp, port)


def start_floor(tmp, port):
    """bench/splicerelay.c: a minimal blocking splice(2) CONNECT relay, the
    floor for one bulk tunnel (the second TCP hop and nothing else)."""
    exe = os.path.join(tmp, "splicerelay")
    subprocess.run(["cc", "-O2", "-pthread", "-o", exe, os.path.join(HERE, "splicerelay.c")],
                   check=True)
    return start("splice-floor", [exe, str(port)], tmp, port)


def watchdog(parent, pgfile):
    """Hidden mode: if the benchmark dies without cleaning up (SIGKILL),
    SIGKILL the process groups it started (nginx workers, Squid after it
    changed user, which clears PR_SET_PDEATHSIG). Ends with its parent, or
    after 2 hours; the benchmark stops it on a normal exit."""
    end = time.monotonic() + 7200
    while os.getppid() == parent and time.monotonic() < end:
        time.sleep(0.5)
    if os.getppid() == parent:
        return
    try:
        with open(pgfile) as f:
            groups = [int(x) for x in f.read().split()]
    except OSError:
        return
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass


def idle_origin(port):
    """Hidden mode: accept connections on 127.0.0.1:PORT and hold them,
    never reading or writing, until SIGTERM (or an hour)."""
    raise_nofile()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(4096)
    held = []
    end = time.monotonic() + 3600
    while time.monotonic() < end:
        ls.settimeout(1.0)
        try:
            c, _ = ls.accept()
            held.append(c)
        except socket.timeout:
            continue
        except OSError:
            time.sleep(0.1)


# --------------------------------------------------------------- measuring

def curl_throughput(proxy_port, url):
    cmd = ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download} %{size_download} %{http_code}",
           "--max-time", "120"]
    if proxy_port:
        cmd += ["-p", "-x", f"http://127.0.0.1:{proxy_port}"]
    r = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=150)
    speed, size, code = r.stdout.split()
    return float(speed), int(size), code


def curl_rate(proxy_port, url, n):
    cmd = ["curl", "-s", "-Z", "--parallel-max", "50", "-H", "Connection: close",
           "-o", "/dev/null", "-w", "%{http_code}\n", "--max-time", "30"]
    if proxy_port:
        cmd += ["-p", "-x", f"http://127.0.0.1:{proxy_port}"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd + [f"{url}?[1-{n}]"], capture_output=True, text=True, timeout=300)
    dt = time.perf_counter() - t0
    ok = r.stdout.split().count("200")
    return dt, ok


def gen_rate(gen, proxy_port, target, n):
    cmd = [gen, str(proxy_port or 0), target, "/small", str(n), "50"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    # "<seconds> <ok> <failed>"
    parts = r.stdout.split()
    if r.returncode != 0 or len(parts) != 3:
        raise RuntimeError(f"tunnelgen failed: {r.stdout} {r.stderr}")
    return float(parts[0]), int(parts[1])


def open_idle_tunnels(proxy_port, target, n, deadline_s=180.0, inflight=200):
    """Open n CONNECT tunnels to `target` through the proxy and keep them.
    Returns the list of sockets whose CONNECT got 200."""
    sel = selectors.DefaultSelector()
    done, pending, started, failed = [], {}, 0, 0
    req = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()
    end = time.monotonic() + deadline_s
    while (len(done) + failed < n) and time.monotonic() < end:
        while started < n and len(pending) < inflight:
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", proxy_port))
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                failed += 1
                started += 1
                continue
            pending[s] = b""
            sel.register(s, selectors.EVENT_WRITE)
            started += 1
        for key, ev in sel.select(timeout=1.0):
            s = key.fileobj
            try:
                if ev & selectors.EVENT_WRITE:
                    s.send(req)
                    sel.modify(s, selectors.EVENT_READ)
                    continue
                d = s.recv(4096)
            except OSError:
                d = b""
            if d:
                pending[s] += d
                if b"\r\n\r\n" not in pending[s]:
                    continue
            sel.unregister(s)
            head = pending.pop(s)
            if head.split(b" ", 2)[1:2] == [b"200"]:
                done.append(s)
            else:
                failed += 1
                s.close()
    for s in list(pending):
        sel.unregister(s)
        s.close()
    sel.close()
    return done, failed


def med(xs):
    return statistics.median(xs) if xs else float("nan")


# -------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--airlock", default=os.environ.get("AIRLOCK", "build-bench/src/cli/airlock"))
    ap.add_argument("--runs", type=int, default=5, help="rounds per measurement (default 5)")
    ap.add_argument("--size", type=int, default=GIB, help="bytes of the big file (default 1 GiB)")
    ap.add_argument("--small", type=int, default=4000, help="requests per rate run (default 4000)")
    ap.add_argument("--idle", type=int, default=10000,
                    help="most idle tunnels (default 10000, or what RLIMIT_NOFILE allows)")
    ap.add_argument("--idle-steps", default="0,100,1000,5000",
                    help="tunnel counts at which RSS is read (default 0,100,1000,5000; --idle is the last)")
    ap.add_argument("--no-curl", action="store_true",
                    help="new-tunnel rate with tunnelgen only (curl -Z is the anchors' client, slower)")
    ap.add_argument("--markdown", action="store_true", help="(always markdown now; kept for old commands)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--nice", type=int, default=0,
                    help="run everything (servers and clients alike) at this nice value; a "
                         "negative one (root) shields the run from other load on the machine")
    ap.add_argument("--idle-origin", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--watchdog", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.idle_steps = [int(x) for x in a.idle_steps.split(",") if x.strip()]
    if a.idle_origin:
        return idle_origin(a.idle_origin)
    if a.watchdog:
        return watchdog(int(a.watchdog[0]), a.watchdog[1])
    for tool in ("nginx", "curl", "cc"):
        if not shutil.which(tool):
            sys.exit(f"bench/proxy.py needs {tool}")
    airlock = os.path.abspath(a.airlock)
    if not os.access(airlock, os.X_OK):
        sys.exit(f"no airlock binary at {airlock} (--airlock)")
    raise_nofile()
    if a.nice:
        os.nice(a.nice)  # inherited by every server and client started below

    tmp = tempfile.mkdtemp(prefix="airlock-bench-proxy-")
    global PGFILE
    PGFILE = os.path.join(tmp, "groups")
    wd = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--watchdog",
                           str(os.getpid()), PGFILE], stdin=subprocess.DEVNULL,
                          start_new_session=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        run(a, airlock, tmp)
    finally:
        stop_all()
        wd.kill()
        wd.wait()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"kept {tmp}")


def load1():
    return os.getloadavg()[0]


def rotate(xs, i):
    return xs[i % len(xs):] + xs[:i % len(xs)]


AIRLOCKS = ("airlock", "airlock-1w")


def run(a, airlock, tmp):
    gen = os.path.join(tmp, "tunnelgen")
    subprocess.run(["cc", "-O2", "-o", gen, os.path.join(HERE, "tunnelgen.c")], check=True)
    log(f"writing a {a.size} byte file of zeros ...")
    www = make_www(tmp, a.size)
    origin, idle = free_port(), free_port()
    names = ("airlock", "airlock-1w", "splice-floor", "squid", "tinyproxy")
    ports = {k: free_port() for k in names}
    start_nginx(tmp, www, origin)
    # airlock: its default (one worker per CPU); airlock-1w: one event loop
    pids = {"airlock": start_airlock(tmp, airlock, ports["airlock"], origin, idle).pid,
            "airlock-1w": start_airlock(tmp, airlock, ports["airlock-1w"], origin, idle,
                                        name="airlock-1w", workers=1).pid,
            "splice-floor": start_floor(tmp, ports["splice-floor"]).pid}
    cands = ["direct", "splice-floor", "airlock", "airlock-1w"]
    for name, fn in (("squid", lambda: start_squid(tmp, ports["squid"], [origin, idle])),
                     ("tinyproxy", lambda: start_tinyproxy(tmp, ports["tinyproxy"], origin))):
        if shutil.which(name):
            pids[name] = fn().pid
            cands.append(name)
        else:
            log(f"{name}: not installed, skipped")
    rate_cands = [c for c in cands if c != "splice-floor"]  # a thread per tunnel: not a floor there
    cpu = {k: [] for k in ("thr", "curl", "gen")}  # per-candidate proxy CPU per unit
    loads = {k: {c: [] for c in cands} for k in ("thr", "rate")}

    def cpu_of(c):
        return group_cpu_s(pids[c]) if c in pids else 0.0

    def target(c):  # what the client asks for: airlock resolves its pinned test name itself
        host = "origin.test" if c in AIRLOCKS else "127.0.0.1"
        return f"{host}:{origin}"

    # 1. throughput
    thr = {c: [] for c in cands}
    curl_throughput(None, f"http://127.0.0.1:{origin}/big")  # warm the page cache
    for i in range(a.runs):
        for c in rotate(cands, i):
            c0 = cpu_of(c)
            speed, size, code = curl_throughput(ports.get(c) if c != "direct" else None,
                                                f"http://{target(c)}/big")
            if code != "200" or size != a.size:
                raise RuntimeError(f"throughput via {c}: HTTP {code}, {size} bytes")
            thr[c].append(speed)
            loads["thr"][c].append(load1())
            cpu["thr"].append((c, (cpu_of(c) - c0) / (a.size / GIB)))
        log(f"throughput round {i + 1}/{a.runs} (load {load1():.1f}): " +
            ", ".join(f"{c} {thr[c][-1] / 1e9:.2f}" for c in cands) + " GB/s")

    # 2. new-tunnel rate, curl and tunnelgen
    rate = {(t, c): [] for t in ("curl", "gen") for c in rate_cands}
    for i in range(a.runs):
        for c in rotate(rate_cands, i):
            pp = ports.get(c) if c != "direct" else None
            c0 = cpu_of(c)
            if not a.no_curl:
                dt, ok = curl_rate(pp, f"http://{target(c)}/small", a.small)
                if ok != a.small:
                    raise RuntimeError(f"curl rate via {c}: {ok}/{a.small} answered 200")
                rate[("curl", c)].append(dt)
            c1 = cpu_of(c)
            dt, ok = gen_rate(gen, pp, target(c), a.small)
            if ok != a.small:
                raise RuntimeError(f"tunnelgen via {c}: {ok}/{a.small} answered 200")
            rate[("gen", c)].append(dt)
            loads["rate"][c].append(load1())
            if not a.no_curl:
                cpu["curl"].append((c, (c1 - c0) / a.small * 1e6))
            cpu["gen"].append((c, (cpu_of(c) - c1) / a.small * 1e6))
        log(f"rate round {i + 1}/{a.runs} (load {load1():.1f}): " +
            ", ".join((f"{c} {rate[('gen', c)][-1]:.2f}" if a.no_curl else
                       f"{c} {rate[('curl', c)][-1]:.2f}/{rate[('gen', c)][-1]:.2f}")
                      for c in rate_cands) + (" s (tunnelgen)" if a.no_curl else " s (curl/tunnelgen)"))
    for c in ("airlock-1w", "splice-floor"):  # not needed below: give the CPU back
        stop(*[x for x in PROCS if x[0] == c][0])
        PROCS[:] = [x for x in PROCS if x[0] != c]

    # 3. idle tunnels: RSS of a fresh airlock proxy (and of Squid) as tunnels
    # are added, against an origin that accepts and holds them
    start("idle-origin", [sys.executable, os.path.abspath(__file__), "--idle-origin", str(idle)],
          tmp, idle)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    n_idle = min(a.idle, (hard - 64) // 2)  # the proxy holds 2 sockets per tunnel
    idle_res = {}
    for c in [c for c in ("airlock", "squid") if c in cands]:
        if c == "airlock":  # a fresh instance, nothing allocated by the runs above
            name = "airlock-idle"
            port = free_port()
            p = start_airlock(tmp, airlock, port, origin, idle, name=name)
        else:
            name = "squid"
            stop(*[x for x in PROCS if x[0] == "squid"][0])
            PROCS[:] = [x for x in PROCS if x[0] != "squid"]
            port = free_port()
            shutil.rmtree(os.path.join(tmp, "squid"))
            p = start_squid(tmp, port, [origin, idle])
        time.sleep(0.5)
        # Squid keeps ~100 descriptors in reserve and stops accepting near its limit
        top = n_idle if c == "airlock" else min(n_idle, 9000)
        steps = sorted({x for x in a.idle_steps + [top] if x <= top})
        held, rows = [], []
        for n in steps:
            if n > len(held):
                socks, failed = open_idle_tunnels(
                    port, f"{'idle.test' if c == 'airlock' else '127.0.0.1'}:{idle}",
                    n - len(held), deadline_s=120.0)
                held += socks
                if failed:
                    log(f"idle {c}: {failed} tunnels failed on the way to {n}")
            time.sleep(1.0)
            rows.append((len(held), group_rss_kib(p.pid), load1()))
            log(f"idle {c}: {len(held)} tunnels, RSS {rows[-1][1]} KiB")
        idle_res[c] = rows
        for s_ in held:
            s_.close()
        stop(name, p)
        PROCS[:] = [x for x in PROCS if x[1] is not p]

    report(a, cands, rate_cands, thr, rate, idle_res, n_idle, hard, cpu, loads)


def cpu_med(cpu, kind, c):
    return med([v for k, v in cpu[kind] if k == c])


def lrange(xs):
    return f"{min(xs):.1f}–{max(xs):.1f}" if xs else "-"


def report(a, cands, rate_cands, thr, rate, idle_res, n_idle, hard, cpu, loads):
    d = med(thr["direct"])
    fl = med(thr["splice-floor"])
    sq_c = med(rate[("curl", "squid")]) if "squid" in cands and not a.no_curl else None
    sq_g = med(rate[("gen", "squid")]) if "squid" in cands else None
    out = [f"Machine: {os.cpu_count()} CPUs, kernel {os.uname().release}; "
           f"airlock = default workers (one per CPU), airlock-1w = --workers 1; "
           f"splice-floor = bench/splicerelay.c. Load = 1-minute load average, min–max over "
           f"the rounds of that row.", "",
           f"Throughput, {a.size / GIB:g} GiB through one CONNECT tunnel (curl), median of {a.runs}:",
           "", "| path | median GB/s | min–max GB/s | vs direct | vs splice floor | proxy CPU s per GiB | load |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for c in cands:
        m = med(thr[c])
        lo, hi = min(thr[c]) / 1e9, max(thr[c]) / 1e9
        pc = f"{cpu_med(cpu, 'thr', c):.2f}" if c != "direct" else "-"
        vf = f"{100 * m / fl:.0f} %" if c != "direct" else "-"
        out.append(f"| {c} | {m / 1e9:.2f} | {lo:.2f}–{hi:.2f} | {100 * m / d:.0f} % | {vf} | {pc} | "
                   f"{lrange(loads['thr'][c])} |")
    out += ["", f"New tunnels: {a.small} small requests, one new tunnel each, 50 in parallel, "
            f"median wall time of {a.runs}:", ""]
    if a.no_curl:
        out += ["| path | tunnelgen s | tunnels/s | rate vs Squid | proxy CPU µs per tunnel | load |",
                "|---|---:|---:|---:|---:|---:|"]
    else:
        out += ["| path | curl -Z s | curl tunnels/s | tunnelgen s | tunnelgen tunnels/s | rate vs Squid (curl / tunnelgen) | proxy CPU µs per tunnel (curl / tunnelgen) | load |",
                "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in rate_cands:
        tg = med(rate[("gen", c)])
        ld = lrange(loads["rate"][c])
        if a.no_curl:
            vs = f"{sq_g / tg:.2f}x" if sq_g else "-"
            pc = f"{cpu_med(cpu, 'gen', c):.0f}" if c != "direct" else "-"
            out.append(f"| {c} | {tg:.2f} | {a.small / tg:.0f} | {vs} | {pc} | {ld} |")
            continue
        tc = med(rate[("curl", c)])
        vs = f"{sq_c / tc:.2f}x / {sq_g / tg:.2f}x" if sq_c else "-"
        pc = (f"{cpu_med(cpu, 'curl', c):.0f} / {cpu_med(cpu, 'gen', c):.0f}" if c != "direct" else "-")
        out.append(f"| {c} | {tc:.2f} | {a.small / tc:.0f} | {tg:.2f} | {a.small / tg:.0f} | {vs} | {pc} | {ld} |")
    out += ["", f"Idle tunnels: RSS of one fresh proxy process as idle CONNECT tunnels are added "
            f"(the RLIMIT_NOFILE hard limit {hard} allows {n_idle} at two sockets per tunnel; "
            "Squid at most 9,000):", "",
            "| proxy | tunnels open | RSS | added since 0 | per tunnel since 0 | load |",
            "|---|---:|---:|---:|---:|---:|"]
    for c, rows in idle_res.items():
        n0, r0, _ = rows[0]
        for n, rss, ld in rows:
            per = f"{(rss - r0) / (n - n0):.2f} KiB" if n > n0 else "-"
            out.append(f"| {c} | {n} | {rss / 1024:.1f} MiB | {(rss - r0) / 1024:.1f} MiB | {per} | {ld:.1f} |")
    print("\n".join(out))
    # the targets of issue #19
    al = med(thr["airlock"])
    print(f"\ntarget one bulk tunnel >= 80 % of direct: {'met' if al >= 0.8 * d else 'MISSED'} "
          f"({100 * al / d:.0f} % of direct, {100 * al / fl:.0f} % of the splice floor, "
          f"which is {100 * fl / d:.0f} % of direct)")
    cg = cpu_med(cpu, "thr", "airlock")
    print(f"target <= 0.3 CPU-s per GiB: {'met' if cg <= 0.3 else 'MISSED'} ({cg:.2f}; "
          f"splice floor {cpu_med(cpu, 'thr', 'splice-floor'):.2f})")
    if sq_g:
        r_g = sq_g / med(rate[("gen", "airlock")])
        extra = f", curl {sq_c / med(rate[('curl', 'airlock')]):.2f}x" if sq_c else ""
        print(f"target new-tunnel rate >= 2x Squid (wall time): tunnelgen {r_g:.2f}x{extra}: "
              f"{'met' if r_g >= 2 else 'MISSED'}")
    if "airlock" in idle_res:
        rows = idle_res["airlock"]
        (n0, r0, _), (n, rss, _) = rows[0], rows[-1]
        per = (rss - r0) / max(n - n0, 1)
        print(f"target <= 3 KiB per idle tunnel: {'met' if per <= 3 else 'MISSED'} "
              f"({per:.2f} KiB at {n} tunnels)")


if __name__ == "__main__":
    sys.exit(main())
