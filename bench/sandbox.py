#!/usr/bin/env python3
"""Sandbox start-up: `airlock run -- /bin/true` under the full default policy,
and with a network policy (the egress proxy started, its listener handed
over), side by side in one run with bubblewrap, raw unshare, plain /bin/true
and, where a Docker engine answers, `docker run` on an internal network.

Usage: bench/sandbox.py [--airlock PATH] [--runs N] [--net-runs N]
                        [--docker-runs N] [--compare NAME=PATH]... [--markdown]
                        [--targets]

Prints medians, p90, the CPU time of the whole process tree (user + system,
from wait4(2)) and ratios against bwrap, with the load average before and
after. Commands are interleaved round by round so machine noise hits every
candidate alike. --compare adds another airlock binary (both its rows), e.g.
an older build, to measure one change. Runs unattended; everything it makes
(a policy file, a Docker network, the tiny image if it imported it) is
removed at the end, also on Ctrl-C.
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

BWRAP = ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr",
         "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
         "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
         "--tmpfs", "/tmp", "--cap-drop", "ALL", "--die-with-parent",
         "--new-session", "/usr/bin/true"]

# A two-host network policy: the proxy starts and gets the listener; nothing
# is dialled (the command is /bin/true), and the pins keep it on loopback.
NET_POLICY = """version: 1
network:
  allow:
    - {host: a.test, port: 8443}
    - {host: b.test, port: 8443}
  pin:
    - {host: a.test, address: 127.0.0.1}
    - {host: b.test, address: 127.0.0.1}
"""

DOCKER_NET = "airlock-bench-internal-%d" % os.getpid()


def candidates(airlocks, net_policy, docker_image):
    c = [("true", ["/bin/true"], None)]
    c.append(("unshare", ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid",
                          "--ipc", "--uts", "--fork", "/bin/true"], None))
    if shutil.which("bwrap"):
        c.append(("bwrap", BWRAP, None))
    for name, path in airlocks:
        c.append((name, [path, "run", "-q", "--", "/bin/true"], None))
    for name, path in airlocks:
        c.append((name + "+net", [path, "run", "-q", "-p", net_policy, "--", "/bin/true"], "net"))
    if docker_image:
        c.append(("docker", ["docker", "run", "--rm", "--pull", "never", "--network", DOCKER_NET,
                             "--read-only", "--cap-drop", "ALL", "--security-opt",
                             "no-new-privileges", "--user", "1000:1000", "--tmpfs", "/tmp",
                             docker_image, "true"], "docker"))
    return c


MADE_IMAGE = []  # the image this run imported (removed at the end)


def docker_ready():
    if not shutil.which("docker"):
        return None
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return None
    img = "airlock-bench-true:latest"
    if subprocess.run(["docker", "image", "inspect", img], capture_output=True).returncode != 0:
        MADE_IMAGE.append(img)
        # a tiny image from a local tarball: /usr/bin/true and its libraries
        tar = subprocess.run(["sh", "-c", "cd / && tar -ch usr/bin/true lib64/ld-linux-x86-64.so.2 "
                              "lib/x86_64-linux-gnu/libc.so.6 2>/dev/null"], capture_output=True).stdout
        subprocess.run(["docker", "import", "-", img], input=tar, capture_output=True, check=True)
    subprocess.run(["docker", "network", "create", "--internal", DOCKER_NET], capture_output=True,
                   check=True)
    return img


def run_once(cmd):
    """Wall ms and CPU ms (user+sys of the whole tree, wait4) of one run."""
    t0 = time.perf_counter_ns()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = (time.perf_counter_ns() - t0) / 1e6
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {' '.join(cmd)}: {err[-300:]}")
    return dt, (ru.ru_utime + ru.ru_stime) * 1000


def p90(t):
    t = sorted(t)
    return t[max(0, int(len(t) * 0.9) - 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlock", default=os.environ.get("AIRLOCK", "build/src/cli/airlock"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--net-runs", type=int, default=50, help="rounds with the network policy")
    ap.add_argument("--docker-runs", type=int, default=20)
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=PATH",
                    help="another airlock binary to measure beside --airlock")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--targets", action="store_true",
                    help="print issue #33 item 3's targets (CPU and network-policy wall vs bwrap)")
    a = ap.parse_args()
    if a.targets and not shutil.which("bwrap"):
        sys.exit("sandbox: --targets needs bwrap (the anchor) on PATH")
    airlocks = [("airlock", a.airlock)]
    for c in a.compare:
        name, _, path = c.partition("=")
        if not path:
            sys.exit("--compare wants NAME=PATH")
        airlocks.append((name, path))
    load0 = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="airlock-bench-")
    os.chmod(tmp, 0o755)
    pol = os.path.join(tmp, "net.yaml")
    with open(pol, "w") as f:
        f.write(NET_POLICY)
    os.chmod(pol, 0o644)
    img = None
    try:
        img = docker_ready() if a.docker_runs > 0 else None
        cands = [c for c in candidates(airlocks, pol, img)
                 if not (c[2] == "net" and a.net_runs <= 0)]
        wall = {n: [] for n, _, _ in cands}
        cpu = {n: [] for n, _, _ in cands}
        for i in range(a.runs):
            for name, cmd, kind in cands:
                if kind == "docker" and i >= a.docker_runs:
                    continue
                if kind == "net" and i >= a.net_runs:
                    continue
                try:
                    w, c = run_once(cmd)
                except RuntimeError as e:
                    sys.exit(f"{name} failed: {e}")
                wall[name].append(w)
                cpu[name].append(c)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if img:
            subprocess.run(["docker", "network", "rm", DOCKER_NET], capture_output=True)
        for i in MADE_IMAGE:
            subprocess.run(["docker", "rmi", i], capture_output=True)
    load1 = os.getloadavg()
    base = statistics.median(wall["bwrap"]) if wall.get("bwrap") else None
    cbase = statistics.median(cpu["bwrap"]) if cpu.get("bwrap") else None
    rows = []
    for name, _, _ in cands:
        t = wall[name]
        med = statistics.median(t)
        ratio = f"{med / base:.2f}x" if base else "-"
        cmed = statistics.median(cpu[name])
        cratio = f"{cmed / cbase:.2f}x" if cbase else "-"
        rows.append((name, len(t), med, p90(t), cmed, ratio, cratio))
    loads = f"load average {load0[0]:.2f} before, {load1[0]:.2f} after ({os.cpu_count()} CPUs)"
    if a.markdown:
        print("| command | runs | median ms | p90 ms | CPU ms (median) | vs bwrap | CPU vs bwrap |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]} | {r[6]} |")
        print(f"\n{loads}")
    else:
        for r in rows:
            print(f"{r[0]:14s} runs={r[1]:4d} median={r[2]:8.2f}ms p90={r[3]:8.2f}ms "
                  f"cpu={r[4]:7.2f}ms vs-bwrap={r[5]} cpu-vs-bwrap={r[6]}")
        print(loads)
    if base and cbase and a.targets:
        # issue #33 item 3: medians of the interleaved rounds, ratios of medians
        c = statistics.median(cpu["airlock"]) / cbase
        print(f"\ntarget CPU per start <= 1.5x bwrap: airlock {statistics.median(cpu['airlock']):.2f} ms "
              f"against bwrap {cbase:.2f} ms = {c:.2f}x: {'met' if c <= 1.5 else 'NOT met'}")
        if wall.get("airlock+net"):
            w = statistics.median(wall["airlock+net"]) / base
            print(f"target start with a network policy <= 1.1x bwrap's wall: "
                  f"{statistics.median(wall['airlock+net']):.2f} ms against {base:.2f} ms = {w:.2f}x: "
                  f"{'met' if w <= 1.1 else 'NOT met'} (its CPU {statistics.median(cpu['airlock+net']):.2f} ms, "
                  f"{statistics.median(cpu['airlock+net']) / cbase:.2f}x)")
    if img is None:
        print("\ndocker: not measured (no Docker engine answers `docker info`, or --docker-runs 0)")
    elif wall.get("docker"):
        print(f"\nairlock is {statistics.median(wall['docker']) / statistics.median(wall['airlock']):.0f}x "
              "faster than docker run")


if __name__ == "__main__":
    main()
