#!/usr/bin/env python3
"""Check `airlock render` output field by field (TAP lines on stdout).

usage: render_check.py compose FILE SECCOMP_JSON WS_BYTES TMP_BYTES WALL_S
       render_check.py kubernetes FILE WS_BYTES TMP_BYTES WALL_S MEM_BYTES
Every check prints "ok"/"not ok"; the exit status is 1 if any failed.
"""
import json
import sys

import yaml

failed = 0


def check(desc, cond, got=None):
    global failed
    if cond:
        print("ok - " + desc)
    else:
        failed += 1
        print("not ok - " + desc + ("" if got is None else "  # got: %r" % (got,)))


def tmpfs_opts(entries, path):
    for e in entries:
        p, _, o = e.partition(":")
        if p == path:
            return dict((kv.split("=", 1) + [""])[:2] for kv in o.split(","))
    return None


def compose(path, seccomp, ws, tmp, wall):
    doc = yaml.safe_load(open(path))
    svc = doc["services"]
    nets = doc["networks"]
    check("two networks: airlock-internal and airlock-egress", set(nets) == {"airlock-internal", "airlock-egress"}, list(nets))
    check("airlock-internal is internal: true", nets["airlock-internal"].get("internal") is True)
    check("airlock-egress is not internal", not nets["airlock-egress"].get("internal"))
    a, p = svc["agent"], svc["proxy"]
    check("agent only on the internal network", a.get("networks") == ["airlock-internal"], a.get("networks"))
    check("proxy on both networks", sorted(p.get("networks", [])) == ["airlock-egress", "airlock-internal"])
    check("proxy runs `airlock proxy --listen 0.0.0.0:3128`",
          p["command"][0] == "proxy" and "--listen" in p["command"] and "0.0.0.0:3128" in p["command"])
    check("agent read_only", a.get("read_only") is True)
    check("agent cap_drop ALL, no cap_add", a.get("cap_drop") == ["ALL"] and "cap_add" not in a)
    check("agent user 1000:1000", a.get("user") == "1000:1000", a.get("user"))
    so = a.get("security_opt", [])
    check("agent no-new-privileges:true", "no-new-privileges:true" in so, so)
    sc = [s for s in so if s.startswith("seccomp=")]
    check("agent seccomp= the generated profile", sc == ["seccomp=" + seccomp], so)
    t = tmpfs_opts(a.get("tmpfs", []), "/tmp")
    w = tmpfs_opts(a.get("tmpfs", []), "/workspace")
    check("tmpfs /tmp with the policy's size", t is not None and t.get("size") == str(tmp), t)
    check("tmpfs /workspace with the policy's size", w is not None and w.get("size") == str(ws), w)
    check("no volumes on the agent", "volumes" not in a)
    check("no privileged / pid / network_mode host", not a.get("privileged") and a.get("pid") is None and a.get("network_mode") is None)
    env = a.get("environment", [])
    names_only = [e for e in env if "=" not in e]
    check("token variables by name only", "AIRLOCK_GIT_TOKEN" in names_only and "AIRLOCK_TICKET_TOKEN" in names_only, env)
    check("no value for any *TOKEN* variable", not any("TOKEN" in e.split("=")[0] and "=" in e for e in env), env)
    check("HTTPS_PROXY points at the proxy service", "HTTPS_PROXY=http://proxy:3128" in env, env)
    check("DNS hardening: dns: [127.0.0.1]", a.get("dns") == ["127.0.0.1"], a.get("dns"))
    check("proxy hardened too (read_only, cap_drop ALL, not root)",
          p.get("read_only") is True and p.get("cap_drop") == ["ALL"] and p.get("user") == "65534:65534")
    vols = p.get("volumes", [])
    check("proxy's only volume is the policy, read-only",
          len(vols) == 1 and vols[0].get("read_only") is True and vols[0]["target"] == "/etc/airlock/policy.yaml", vols)
    prof = json.load(open(seccomp))
    names = {n for s in prof["syscalls"] if s["action"] == "SCMP_ACT_ERRNO" for n in s["names"]}
    check("seccomp profile: an allow-list whose default is ENOSYS (38), native arch only",
          prof["defaultAction"] == "SCMP_ACT_ERRNO" and prof.get("defaultErrnoRet") == 38
          and len(prof["architectures"]) == 1)
    allowed = {n for s in prof["syscalls"] if s["action"] == "SCMP_ACT_ALLOW" and not s.get("args")
               for n in s["names"]}
    check("seccomp profile allows read, execve, openat outright", {"read", "execve", "openat"} <= allowed)
    check("seccomp profile allows none of mount, unshare, clone, socket outright",
          not ({"mount", "unshare", "clone", "socket"} & allowed))
    for n in ("mount", "unshare", "setns", "ptrace", "bpf", "keyctl", "userfaultfd", "io_uring_setup",
              "open_by_handle_at", "perf_event_open", "clone3", "clone", "ioctl", "socket"):
        check("seccomp profile denies " + n, n in names)
    c3 = [s for s in prof["syscalls"] if s["names"] == ["clone3"]]
    check("clone3 returns ENOSYS (38)", c3 and c3[0]["errnoRet"] == 38, c3)
    check("agent output not logged by Docker (logging: none)", a.get("logging") == {"driver": "none"}, a.get("logging"))
    check("the wall-clock limit is rendered", a.get("labels", {}).get("airlock.dev/wall-seconds") == str(wall), a.get("labels"))
    head = open(path).read().split("services:")[0]
    check("the file says the daemon needs userns-remap", "userns-remap" in head)
    check("the file says the wall-clock limit and how to enforce it", ("%d s" % wall) in head and "timeout -s KILL" in head)
    check("the file warns that host services answer on the bridge gateway", "gateway" in head and "--backend docker" in head)


def kubernetes(path, ws, tmp, wall, mem):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    by = {}
    for d in docs:
        by.setdefault(d["kind"], []).append(d)
    job = by["Job"][0]
    js = job["spec"]
    pod = js["template"]["spec"]
    c = pod["containers"][0]
    psc, csc = pod["securityContext"], c["securityContext"]
    check("Job activeDeadlineSeconds = policy wall + the probe's 60 s", js.get("activeDeadlineSeconds") == wall + 60, js.get("activeDeadlineSeconds"))
    check("Job ttlSecondsAfterFinished set", isinstance(js.get("ttlSecondsAfterFinished"), int))
    check("agent pod in a user namespace (hostUsers: false)", pod.get("hostUsers") is False, pod.get("hostUsers"))
    run = job["metadata"]["labels"].get("airlock.dev/run")
    check("per-run names: the Job is airlock-agent-<run>", run and job["metadata"]["name"] == "airlock-agent-" + run, job["metadata"])
    inits = pod.get("initContainers", [])
    check("a network probe runs first in the agent's own pod", len(inits) == 1 and inits[0]["command"][:2] == ["python3", "-c"], inits)
    if inits:
        pr = inits[0]["command"][2]
        check("the probe refuses when it reaches the API, metadata, kubelet or the internet",
              all(x in pr for x in ("KUBERNETES_SERVICE_HOST", "169.254.169.254", "10250", "1.1.1.1", "sys.exit(1)")))
        check("the probe container is hardened like the agent", inits[0]["securityContext"].get("readOnlyRootFilesystem") is True
              and inits[0]["securityContext"].get("capabilities") == {"drop": ["ALL"]})
    check("Job backoffLimit 0, restartPolicy Never", js.get("backoffLimit") == 0 and pod.get("restartPolicy") == "Never")
    check("runAsNonRoot", psc.get("runAsNonRoot") is True and csc.get("runAsNonRoot") is True)
    check("runAsUser 1000", psc.get("runAsUser") == 1000 and csc.get("runAsUser") == 1000)
    check("readOnlyRootFilesystem", csc.get("readOnlyRootFilesystem") is True)
    check("allowPrivilegeEscalation false", csc.get("allowPrivilegeEscalation") is False)
    check("capabilities drop ALL, no add", csc.get("capabilities") == {"drop": ["ALL"]}, csc.get("capabilities"))
    sp = psc.get("seccompProfile", {})
    check("seccompProfile Localhost with the generated profile",
          sp.get("type") == "Localhost" and sp.get("localhostProfile") == "airlock/seccomp.json", sp)
    check("automountServiceAccountToken false", pod.get("automountServiceAccountToken") is False)
    check("no hostNetwork/hostPID/hostIPC", not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC"))
    check("no DNS: dnsPolicy None, nameserver 127.0.0.1",
          pod.get("dnsPolicy") == "None" and pod["dnsConfig"]["nameservers"] == ["127.0.0.1"])
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    check("only /workspace and /tmp mounted", set(mounts) == {"/workspace", "/tmp"}, mounts)
    check("no hostPath volume", not any("hostPath" in v for v in vols.values()))

    def q(s):
        units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
        s = str(s)
        return int(s[:-2]) * units[s[-2:]] if s[-2:] in units else int(s)

    for mp, want in (("/workspace", ws), ("/tmp", tmp)):
        ed = vols[mounts[mp]].get("emptyDir", {})
        check("%s emptyDir medium Memory sizeLimit %d" % (mp, want),
              ed.get("medium") == "Memory" and q(ed.get("sizeLimit")) == want, ed)
    check("memory limit = policy", q(c["resources"]["limits"]["memory"]) == mem)
    envs = c["env"]
    check("no token value in the manifests", not any("TOKEN" in e["name"] and "value" in e for e in envs))
    tok = [e for e in envs if e["name"] == "AIRLOCK_GIT_TOKEN"]
    check("git token from a Secret by key", tok and "secretKeyRef" in tok[0].get("valueFrom", {}), tok)
    check("Secret object not rendered", "Secret" not in by)
    check("the tokens Secret is per run", tok and tok[0]["valueFrom"]["secretKeyRef"]["name"] == "airlock-run-tokens-" + run, tok)
    nps = {n["metadata"]["name"].rsplit("-" + run, 1)[0]: n["spec"] for n in by["NetworkPolicy"]}
    check("every object of the run carries its run label",
          all(d["metadata"].get("labels", {}).get("airlock.dev/run") == run for d in docs if d["kind"] != "Namespace"))
    ag = nps["airlock-agent-policy"]
    check("the agent policy selects this run's pods only", ag["podSelector"]["matchLabels"].get("airlock.dev/run") == run)
    check("agent NetworkPolicy has Egress type", "Egress" in ag["policyTypes"])
    eg = ag["egress"]
    check("agent egress: exactly one rule, to the proxy pods, TCP 3128",
          len(eg) == 1 and eg[0]["to"][0]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "proxy"
          and eg[0]["ports"] == [{"protocol": "TCP", "port": 3128}], eg)
    check("agent egress: no DNS port", not any(p.get("port") == 53 for r in eg for p in r.get("ports", [])))
    dd = nps["airlock-default-deny"]
    check("default deny for the namespace", dd["podSelector"] == {} and set(dd["policyTypes"]) == {"Ingress", "Egress"})
    pp = nps["airlock-proxy-policy"]
    check("proxy has its own egress policy", "Egress" in pp["policyTypes"] and pp.get("egress"))
    blocks = [b["ipBlock"] for r in pp["egress"] for b in r.get("to", []) if "ipBlock" in b]
    check("proxy egress excludes private/metadata ranges",
          any("169.254.0.0/16" in b.get("except", []) and "10.0.0.0/8" in b.get("except", []) for b in blocks), blocks)
    import ipaddress
    def allowed(a):
        a = ipaddress.ip_address(a)
        for b in blocks:
            net = ipaddress.ip_network(b["cidr"])
            if a.version == net.version and a in net and not any(a in ipaddress.ip_network(x) for x in b.get("except", [])):
                return True
        return False
    # every one of these is refused by the proxy's address guard (net/addr.c)
    refused = ["10.1.2.3", "169.254.169.254", "100.100.100.200", "198.18.0.1", "198.19.255.1", "192.0.0.8",
               "168.63.129.16", "192.88.99.1", "203.0.113.9", "240.0.0.1", "64:ff9b::a9fe:a9fe",
               "64:ff9b:1::1", "2002:a9fe:a9fe::1", "2001::1", "2001:db8::1", "fd00:ec2::254", "fe80::1",
               "::ffff:10.0.0.1", "::1", "100::1", "3fff::1", "5f00::1"]
    leak = [a for a in refused if allowed(a)]
    check("the NetworkPolicy refuses every range the proxy's guard refuses", not leak, leak)
    check("control: public addresses are allowed (the check can pass)", allowed("140.82.112.3") and allowed("2606:50c0:8000::153"))
    dep = by["Deployment"][0]
    check("proxy Deployment runs `airlock proxy`", dep["spec"]["template"]["spec"]["containers"][0]["args"][0] == "proxy")
    dsc = dep["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    check("proxy container hardened", dsc.get("readOnlyRootFilesystem") is True and dsc.get("capabilities") == {"drop": ["ALL"]}
          and dsc.get("allowPrivilegeEscalation") is False)
    svc = by["Service"][0]
    check("proxy Service on 3128", svc["spec"]["ports"][0]["port"] == 3128)
    cm = by["ConfigMap"][0]
    check("policy in a ConfigMap", "policy.yaml" in cm["data"] and "version" in cm["data"]["policy.yaml"])


if sys.argv[1] == "compose":
    compose(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
else:
    kubernetes(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
sys.exit(1 if failed else 0)
