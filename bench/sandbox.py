#!/usr/bin/env python3
"""Sandbox start-up: `airlock run -- /bin/true` under the full default policy,
side by side in one run with bubblewrap, raw unshare, plain /bin/true and,
where a Docker engine answers, `docker run` on an internal network.

Usage: bench/sandbox.py [--airlock PATH] [--runs N] [--markdown]
Prints medians, p90 and ratios against bwrap. Commands are interleaved
round by round so machine noise hits every candidate alike.
"""
import argparse, os, shutil, statistics, subprocess, sys, time

def candidates(airlock, docker_image):
    c = [("true", ["/bin/true"])]
    c.append(("unshare", ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid",
                          "--ipc", "--uts", "--fork", "/bin/true"]))
    if shutil.which("bwrap"):
        c.append(("bwrap", ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr",
                            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
                            "--tmpfs", "/tmp", "--cap-drop", "ALL", "--die-with-parent",
                            "--new-session", "/usr/bin/true"]))
    c.append(("airlock", [airlock, "run", "-q", "--", "/bin/true"]))
    if docker_image:
        c.append(("docker", ["docker", "run", "--rm", "--pull", "never", "--network", "airlock-bench-internal",
                             "--read-only", "--cap-drop", "ALL", "--security-opt",
                             "no-new-privileges", "--user", "1000:1000", "--tmpfs", "/tmp",
                             docker_image, "true"]))
    return c

def docker_ready():
    if not shutil.which("docker"):
        return None
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return None
    img = "airlock-bench-true:latest"
    if subprocess.run(["docker", "image", "inspect", img], capture_output=True).returncode != 0:
        # a tiny image from a local tarball: /usr/bin/true and its libraries
        tar = subprocess.run(["sh", "-c", "cd / && tar -ch usr/bin/true lib64/ld-linux-x86-64.so.2 "
                              "lib/x86_64-linux-gnu/libc.so.6 2>/dev/null"], capture_output=True).stdout
        subprocess.run(["docker", "import", "-", img], input=tar, capture_output=True, check=True)
    subprocess.run(["docker", "network", "create", "--internal", "airlock-bench-internal"],
                   capture_output=True)
    return img

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlock", default=os.environ.get("AIRLOCK", "build/src/cli/airlock"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--docker-runs", type=int, default=20)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    img = docker_ready()
    cands = candidates(a.airlock, img)
    times = {n: [] for n, _ in cands}
    for i in range(a.runs):
        for name, cmd in cands:
            if name == "docker" and i >= a.docker_runs:
                continue
            t0 = time.perf_counter_ns()
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            dt = (time.perf_counter_ns() - t0) / 1e6
            if r.returncode != 0:
                sys.exit(f"{name} failed with {r.returncode}: {' '.join(cmd)}")
            times[name].append(dt)
    base = statistics.median(times["bwrap"]) if times.get("bwrap") else None
    rows = []
    for name, _ in cands:
        t = sorted(times[name])
        med = statistics.median(t)
        p90 = t[int(len(t) * 0.9) - 1]
        ratio = f"{med / base:.2f}x" if base else "-"
        rows.append((name, len(t), med, p90, ratio))
    if a.markdown:
        print("| command | runs | median ms | p90 ms | vs bwrap |")
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]} |")
    else:
        for r in rows:
            print(f"{r[0]:10s} runs={r[1]:4d} median={r[2]:8.2f}ms p90={r[3]:8.2f}ms vs-bwrap={r[4]}")
    if img is None:
        print("\ndocker: not measured (no Docker engine answers `docker info`)")
    elif "docker" in times:
        print(f"\nairlock is {statistics.median(times['docker']) / statistics.median(times['airlock']):.0f}x faster than docker run")

if __name__ == "__main__":
    main()
