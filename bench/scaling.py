#!/usr/bin/env python3
"""How airlock's cost grows with concurrent runs: 1, 4 and 16 `airlock run`s
started at once, without a network and with a network policy (one egress
proxy per run).

For each level N and round, N runs are spawned back to back; each command is
`sh -c 'echo up; read x || :'`, so it reports that it is running and then holds
its sandbox open until its stdin closes. Measured:

  start p50 / p90   spawn of `airlock run` until its command's "up" line
                    arrives (every run of every round of that level)
  supervisor        PSS of the `airlock run` process (proc(5) smaps_rollup)
  sandbox           PSS of what runs in the sandbox: pid 1 (airlock-init)
                    and the command (sh)
  proxy             PSS of the run's egress proxy (airlock-proxy), with a
                    network policy

PSS shares each shared page among the processes mapping it, so N runs' PSS
add up to what the N runs cost together. Memory is taken once every run of
the round is up; medians over all runs. Then every run's stdin is closed and
each must exit 0 within 30 s; a run still there is killed with its process
group, and the script fails.

Usage: bench/scaling.py [--airlock PATH] [--levels 1,4,16] [--rounds N]
                        [--markdown]
Needs root for PSS of the sandbox's processes (they run as other uids).
Talks to no network; the policy's hosts are pinned to 127.0.0.1 and never
dialled. Nothing is left behind: the policy file is removed, every process
is reaped (airlock removes its own cgroups).
"""
import argparse, os, select, signal, statistics, subprocess, sys, tempfile, time

# the same two-host policy as the sandbox benchmark
from sandbox import NET_POLICY  # noqa: E402  (bench/ is sys.path[0])

HOLD = ["sh", "-c", "echo up; read x || :"]


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def tree(pid):
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += children(p)
    return seen


def measure(pid):
    """(supervisor, sandbox, proxy) PSS in KiB for one run's process tree."""
    sup = pss_kib(pid) or 0
    sandbox = proxy = 0
    for p in tree(pid)[1:]:
        k = pss_kib(p) or 0
        if comm(p) == "airlock-proxy":
            proxy += k
        elif comm(p) in ("airlock-relay",):
            continue
        else:
            sandbox += k  # pid 1 (a clone of the supervisor) and the command
    return sup, sandbox, proxy


def one_round(airlock, n, policy):
    cmd = [airlock, "run", "-q"] + (["-p", policy] if policy else []) + ["--"] + HOLD
    procs, t0, up = [], {}, {}
    try:
        for _ in range(n):
            t = time.perf_counter()
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            procs.append(p)
            t0[p.stdout.fileno()] = (p, t)
        deadline = time.monotonic() + 60
        while len(up) < n and time.monotonic() < deadline:
            r, _, _ = select.select([fd for fd in t0 if fd not in up], [], [], 1.0)
            now = time.perf_counter()
            for fd in r:
                line = os.read(fd, 64)
                if not line.startswith(b"up"):
                    raise RuntimeError(f"a run ended before its command started: {line!r}")
                up[fd] = (now - t0[fd][1]) * 1000
        if len(up) < n:
            raise RuntimeError(f"only {len(up)} of {n} runs started within 60 s")
        mem = [measure(p.pid) for p in procs]
        for p in procs:
            p.stdin.close()
        for p in procs:
            if p.wait(timeout=30) != 0:
                raise RuntimeError(f"a run exited {p.returncode}")
        return list(up.values()), mem
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
            for s in (p.stdin, p.stdout):
                if s and not s.closed:
                    s.close()


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v))) - 1))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlock", default=os.environ.get("AIRLOCK", "build/src/cli/airlock"))
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("scaling: not root: the sandbox's PSS is unreadable and shows as 0", file=sys.stderr)
    levels = [int(x) for x in a.levels.split(",")]
    load0 = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="airlock-scaling-")
    os.chmod(tmp, 0o755)
    pol = os.path.join(tmp, "net.yaml")
    with open(pol, "w") as f:
        f.write(NET_POLICY)
    os.chmod(pol, 0o644)
    rows = []
    try:
        for n in levels:
            for mode, policy in (("no network", None), ("network + proxy", pol)):
                lat, mem = [], []
                for _ in range(a.rounds):
                    l, m = one_round(a.airlock, n, policy)
                    lat += l
                    mem += m
                rows.append((n, mode, len(lat), statistics.median(lat), pct(lat, 0.9),
                             statistics.median(x[0] for x in mem) / 1024,
                             statistics.median(x[1] for x in mem) / 1024,
                             statistics.median(x[2] for x in mem) / 1024 if policy else None))
    except RuntimeError as e:
        sys.exit(f"scaling: {e}")
    finally:
        os.unlink(pol)
        os.rmdir(tmp)
    load1 = os.getloadavg()
    loads = f"load average {load0[0]:.2f} before, {load1[0]:.2f} after ({os.cpu_count()} CPUs)"
    if a.markdown:
        print("| concurrent runs | policy | runs measured | start p50 ms | start p90 ms | "
              "supervisor PSS MiB | sandbox PSS MiB | proxy PSS MiB |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            px = f"{r[7]:.2f}" if r[7] is not None else "-"
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | {r[5]:.2f} | "
                  f"{r[6]:.2f} | {px} |")
        print(f"\n{loads}")
    else:
        for r in rows:
            px = f"{r[7]:.2f}" if r[7] is not None else "-"
            print(f"n={r[0]:3d} {r[1]:16s} runs={r[2]:4d} p50={r[3]:7.1f}ms p90={r[4]:7.1f}ms "
                  f"supervisor={r[5]:.2f}MiB sandbox={r[6]:.2f}MiB proxy={px}MiB")
        print(loads)


if __name__ == "__main__":
    main()
