#!/usr/bin/env python3
"""The measuring half of bench/issue33.sh items 2 and 4 (run that script: it
starts the test forge and broker and passes their paths here).

Item 2: the demo ticket, --levels RUNS times one after the other. airlock's
own time per ticket = the record's duration_ms minus its agent phase (what
the ticket costs that the agent does not); also the sum of the non-agent
phases and each phase's p50. Target <= 120 ms p50.

Item 4: for each N in --levels, N `airlock ticket`s started at once (issues
acme/tally#1..#N), each must exit 0 with its PR verified on the forge.
Measured per ticket: wall; airlock's own CPU = user+sys of the ticket's
whole process tree (wait4(2): supervisor, egress proxy, gateway, sandbox
pid 1, every child it reaped) minus the agent's own (the wrapper's `times`
line: the patch-agent and its git/python children), plus the broker's CPU
over the level (/proc/PID/stat) divided by N (its share). PSS: every 0.2 s
the sum of proc(5) smaps_rollup Pss over the ticket's processes outside the
sandbox (those in this script's pid namespace: supervisor, proxy, gateway
helpers), the peak per run; plus the broker's PSS / N. Target CPU <= 60 ms.
"""
import argparse, json, os, statistics, subprocess, sys, time

TICK = os.sysconf("SC_CLK_TCK")


def die(msg):
    sys.exit(f"issue33: {msg}")


def p50(v):
    return statistics.median(v) if v else float("nan")


def check_record(path, rc, err, what):
    if rc != 0:
        die(f"{what} exited {rc}: {err[-600:]}")
    try:
        r = json.load(open(path))
    except (OSError, ValueError) as e:
        die(f"{what}: no record at {path}: {e}")
    pr = r.get("pull_request") or {}
    if not pr.get("verified") or not pr.get("url"):
        die(f"{what}: no verified PR in the record: {json.dumps(pr)[:300]}")
    return r


def agent_ms(err, what):
    """The agent's own CPU ms: the second line of `times` after the marker
    (the shell's children: user and system, as 0m0.123s)."""
    lines = err.splitlines()
    for k, line in enumerate(lines):
        if line.rstrip().endswith("ISSUE33-AGENT-TIMES") and k + 2 < len(lines):
            tot = 0.0
            for f in lines[k + 2].split()[-2:]:
                m, s = f.rstrip("s").split("m")
                tot += int(m.split()[-1].lstrip("│")) * 60 + float(s)
            return tot * 1000
    die(f"{what}: the agent wrapper's times lines are missing from stderr")


def ticket_cmd(a, n, rec):
    return [a.airlock, "ticket", f"acme/tally#{n}", "-p", a.policy, "--agent", a.agent, "-q",
            "--record", rec]


def item2(a):
    runs = int(a.levels)
    own, summed, phases = [], [], {}
    for i in range(runs):
        rec = os.path.join(a.dir, f"r2-{i}.json")
        p = subprocess.run(ticket_cmd(a, 1, rec), capture_output=True, text=True)
        r = check_record(rec, p.returncode, p.stderr, f"run {i + 1} of acme/tally#1")
        ag = sum(ph["ms"] for ph in r["phases"] if ph["name"] == "agent")
        own.append(r["duration_ms"] - ag)
        summed.append(sum(ph["ms"] for ph in r["phases"] if ph["name"] != "agent"))
        for ph in r["phases"]:
            phases.setdefault(ph["name"], []).append(ph["ms"])
    m = p50(own)
    print(f"\nairlock's own time per ticket (duration_ms - agent phase), p50 of {runs}: {m:.0f} ms "
          f"(sum of the non-agent phases {p50(summed):.0f} ms); target <= 120 ms: "
          f"{'met' if m <= 120 else 'NOT met'}")
    print("phases, p50 ms: " + ", ".join(f"{k} {p50(v):.0f}" for k, v in
                                          sorted(phases.items(), key=lambda kv: -p50(kv[1]))))


def cpu_ms(pid):
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) * 1000 / TICK


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(pid):
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return seen


MYNS = os.readlink("/proc/self/ns/pid")


def outside_sandbox(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/pid") == MYNS
    except OSError:
        return False


def item4(a):
    rows = []
    for n in [int(x) for x in a.levels.split(",")]:
        b0 = cpu_ms(a.broker_pid)
        procs, t0 = {}, time.monotonic()
        for i in range(1, n + 1):
            rec = os.path.join(a.dir, f"r4-{n}-{i}.json")
            errf = open(os.path.join(a.dir, f"r4-{n}-{i}.err"), "w+")
            p = subprocess.Popen(ticket_cmd(a, i, rec), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=errf)
            procs[p.pid] = dict(p=p, i=i, rec=rec, errf=errf, peak=0, start=time.monotonic())
        left, bpss, done = set(procs), 0, {}
        while left:
            for pid in list(left):
                r = os.wait4(pid, os.WNOHANG)
                if r[0] == pid:
                    left.discard(pid)
                    done[pid] = (os.waitstatus_to_exitcode(r[1]),
                                 (r[2].ru_utime + r[2].ru_stime) * 1000, time.monotonic())
                    continue
                k = sum(pss_kib(q) for q in tree(pid) if outside_sandbox(q))
                procs[pid]["peak"] = max(procs[pid]["peak"], k)
            bpss = max(bpss, pss_kib(a.broker_pid))
            time.sleep(0.2)
        wall = time.monotonic() - t0
        bshare = (cpu_ms(a.broker_pid) - b0) / n
        own, walls, pss, agents = [], [], [], []
        for pid, d in procs.items():
            rc, tree_cpu, t1 = done[pid]
            d["errf"].seek(0)
            err = d["errf"].read()
            d["errf"].close()
            what = f"acme/tally#{d['i']} (N={n})"
            check_record(d["rec"], rc, err, what)
            ag = agent_ms(err, what)
            if not 0 < ag < tree_cpu:
                die(f"{what}: the agent's CPU {ag:.1f} ms is not within its tree's {tree_cpu:.1f} ms")
            agents.append(ag)
            own.append(tree_cpu - ag + bshare)
            walls.append((t1 - d["start"]) * 1000)
            pss.append(d["peak"] / 1024 + bpss / 1024 / n)
        rows.append((n, wall, p50(walls), p50(own), min(own), max(own), p50(pss), bshare, p50(agents)))
        print(f"N={n}: {n}/{n} PRs verified, wall {wall:.1f} s, per-ticket wall p50 "
              f"{p50(walls):.0f} ms, airlock's own CPU per ticket p50 {p50(own):.1f} ms "
              f"(broker share {bshare:.1f}; the agent's own {p50(agents):.0f} ms, not counted), per-run PSS p50 {p50(pss):.2f} MiB", flush=True)
    print("\n| concurrent tickets | PRs | wall s | per-ticket wall p50 ms | airlock's own CPU per "
          "ticket p50 ms (min–max) | of it the broker's share ms | the agent's CPU p50 ms (not counted) | airlock's PSS per run p50 MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[0]}/{r[0]} | {r[1]:.1f} | {r[2]:.0f} | {r[3]:.1f} ({r[4]:.1f}–{r[5]:.1f}) "
              f"| {r[7]:.1f} | {r[8]:.0f} | {r[6]:.2f} |")
    worst = max(r[3] for r in rows)
    print(f"\ntarget airlock's own CPU per ticket <= 60 ms: worst level's p50 {worst:.1f} ms: "
          f"{'met' if worst <= 60 else 'NOT met'} at N={a.levels}")


def main():
    ap = argparse.ArgumentParser()
    for o in ("--item", "--levels", "--airlock", "--policy", "--agent", "--dir"):
        ap.add_argument(o, required=True)
    ap.add_argument("--broker-pid", type=int, required=True)
    a = ap.parse_args()
    item2(a) if a.item == "2" else item4(a)


if __name__ == "__main__":
    main()
