#!/usr/bin/env python3
"""The docker backend's cost per run, side by side in one run with the anchor,
a hardened `docker run --rm` of the same image on an internal network:

  docker          docker run --rm --read-only --cap-drop ALL ... IMAGE true
                  (on an internal network: the anchor of issue #19)
  docker-none     the same with --network none (what the backend's one
                  container uses since issue #19: loopback only)
  airlock         airlock run --backend docker -- true        (no network:
                  one container, airlock-shim as PID 1)
  airlock+proxy   airlock run --backend docker -p POLICY -- true  (the same
                  container, the listener handed to the proxy on the host)

Usage: bench/docker_backend.py [--airlock PATH] [--runs N] [--compare NAME=PATH]...
                               [--markdown]
With AIRLOCK_DEBUG_TIMING=1 in the environment, airlock logs the time of
each Engine API call (the per-call profile in bench/README.md).
Needs a Docker engine and the images of scripts/docker-images.sh (tags from
PROXY_IMAGE / AGENT_IMAGE, default airlock-*:local). Every network is
internal; nothing is pulled. Rounds are interleaved so noise hits every
candidate alike; prints medians, p90 and ratios against docker.
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

POLICY = """version: 1
network:
  allow: [{host: forge.test, port: 8443}]
  pin: [{host: forge.test, address: 127.0.0.1}]
  resolver: 127.0.0.1:9
filesystem: {workspace_size: 64MiB, tmp_size: 32MiB}
process:
  limits: {memory: 256MiB, pids: 64, wall: 1m, nofile: 1024}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlock", default=os.environ.get("AIRLOCK", "build/src/cli/airlock"))
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=PATH",
                    help="another airlock binary (airlock-net beside it) to measure too")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    proxy = os.environ.get("PROXY_IMAGE", "airlock-proxy:local")
    agent = os.environ.get("AGENT_IMAGE", "airlock-agent:local")
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        sys.exit("docker_backend: no Docker engine answers `docker info`")
    for img in (proxy, agent):
        if subprocess.run(["docker", "image", "inspect", img], capture_output=True).returncode:
            sys.exit(f"docker_backend: no image {img} (scripts/docker-images.sh)")
    net = "airlock-bench-internal-%d" % os.getpid()
    load0 = os.getloadavg()
    subprocess.run(["docker", "network", "create", "--internal", net], capture_output=True)
    pol = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    pol.write(POLICY)
    pol.close()
    os.chmod(pol.name, 0o644)
    cands = [
        ("docker", ["docker", "run", "--rm", "--pull", "never", "--network", net, "--read-only",
                    "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user",
                    "1000:1000", "--tmpfs", "/tmp", agent, "true"]),
        ("docker-none", ["docker", "run", "--rm", "--pull", "never", "--network", "none",
                         "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                         "--user", "1000:1000", "--tmpfs", "/tmp", agent, "true"]),
    ]
    for cname, path in [("airlock", a.airlock)] + [tuple(c.split("=", 1)) for c in a.compare]:
        common = [path, "run", "--backend", "docker", "--docker-egress-internal",
                  "--proxy-image", proxy, "--agent-image", agent]
        cands.append((cname, common + ["--", "true"]))
        cands.append((cname + "+proxy", common + ["-p", pol.name, "--", "true"]))
    times = {n: [] for n, _ in cands}
    try:
        for _ in range(a.runs):
            for name, cmd in cands:
                t0 = time.perf_counter_ns()
                r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
                dt = (time.perf_counter_ns() - t0) / 1e6
                if r.returncode != 0:
                    sys.exit(f"{name} failed with {r.returncode}: {r.stderr.decode()[-300:]}")
                times[name].append(dt)
    finally:
        os.unlink(pol.name)
        subprocess.run(["docker", "network", "rm", net], capture_output=True)
    load1 = os.getloadavg()
    base = statistics.median(times["docker"])
    rows = []
    for name, _ in cands:
        t = sorted(times[name])
        med = statistics.median(t)
        rows.append((name, len(t), med, t[max(0, int(len(t) * 0.9) - 1)], med / base))
    if a.markdown:
        print("| command | runs | median ms | p90 ms | vs docker run |")
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]:.0f} | {r[3]:.0f} | {r[4]:.2f}x |")
    else:
        for r in rows:
            print(f"{r[0]:14s} runs={r[1]:3d} median={r[2]:8.0f}ms p90={r[3]:8.0f}ms "
                  f"vs-docker={r[4]:.2f}x")
    print(f"\nload average {load0[0]:.2f} before, {load1[0]:.2f} after ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
