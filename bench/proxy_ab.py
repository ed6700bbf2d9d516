#!/usr/bin/env python3
"""A/B of airlock proxy builds, interleaved round by round (issue #19).

  bench/proxy_ab.py ROUNDS N NAME=PATH [NAME=PATH...] [--squid] [--thr]

Each NAME=PATH is an airlock binary run as its own proxy (the policy of
bench/proxy.py); every round measures each of them, Squid with --squid,
and direct, in a rotating order: N new tunnels with tunnelgen (50 at a
time), or with --thr one 1 GiB transfer each (curl). Prints per candidate
the median and every round, and the proxy's CPU (utime+stime of its
process group) per tunnel in us or per GiB in s, with the load average.
Reuses bench/proxy.py's servers and clean-up (127.0.0.1 only)."""
import os, sys, tempfile, shutil, subprocess, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxy as P  # noqa: E402

def main():
    rounds = int(sys.argv[1]); n = int(sys.argv[2])
    builds = [a.split("=", 1) for a in sys.argv[3:] if "=" in a]
    squid = "--squid" in sys.argv; thr = "--thr" in sys.argv
    tmp = tempfile.mkdtemp(prefix="tunnel-ab-")
    try:
        gen = os.path.join(tmp, "tunnelgen")
        subprocess.run(["cc", "-O2", "-o", gen, os.path.join(P.HERE, "tunnelgen.c")], check=True)
        www = P.make_www(tmp, (1 << 30) if thr else 4096)
        origin, idle = P.free_port(), P.free_port()
        P.start_nginx(tmp, www, origin)
        ports, pids = {}, {}
        for name, path in builds:
            ports[name] = P.free_port()
            pids[name] = P.start_airlock(tmp, os.path.abspath(path), ports[name], origin, idle, name=name).pid
        cands = [b[0] for b in builds]
        if squid:
            ports["squid"] = P.free_port(); pids["squid"] = P.start_squid(tmp, ports["squid"], [origin, idle]).pid
            cands.append("squid")
        cands.append("direct")
        res = {c: [] for c in cands}; cpu = {c: [] for c in cands}; loads = []
        for i in range(rounds):
            for c in P.rotate(cands, i):
                tgt = ("127.0.0.1" if c in ("squid", "direct") else "origin.test") + f":{origin}"
                c0 = P.group_cpu_s(pids[c]) if c in pids else 0
                if thr:
                    sp, size, code = P.curl_throughput(ports.get(c), f"http://{tgt}/big")
                    res[c].append(sp / 1e9)
                    cpu[c].append((P.group_cpu_s(pids[c]) - c0) if c in pids else 0)
                else:
                    dt, ok = P.gen_rate(gen, ports.get(c), tgt, n)
                    assert ok == n, (c, ok)
                    res[c].append(n / dt)
                    cpu[c].append(((P.group_cpu_s(pids[c]) - c0) / n * 1e6) if c in pids else 0)
            loads.append(os.getloadavg()[0])
        unit = "GB/s" if thr else "tunnels/s"
        cu = "CPU-s/GiB" if thr else "CPU us/tunnel"
        print(f"rounds {rounds}, load {min(loads):.1f}-{max(loads):.1f}")
        for c in cands:
            print(f"{c:12s} median {statistics.median(res[c]):8.2f} {unit}  [{', '.join(f'{x:.0f}' if not thr else f'{x:.2f}' for x in res[c])}]  {cu} median {statistics.median(cpu[c]):.2f}")
    finally:
        P.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)

main()
