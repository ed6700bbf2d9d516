#!/usr/bin/env python3
"""Checks of `airlock render cluster` and `render kubernetes --agent-sandbox`
output, by parsing it (render.sh runs them; a mutated file must fail them).
usage: render_cluster_check.py cluster FILE REPLICAS JOBS NAMESPACE
       render_cluster_check.py sandbox FILE DEADLINE RUNTIMECLASS
Prints one TAP-like line per check ("ok - ..." / "not ok - ..."); exit 1 when any fails."""
import sys
import yaml

failed = 0


def check(desc, cond, got=None):
    global failed
    if not cond:
        failed += 1
    print(("ok - " if cond else "not ok - ") + desc + ("" if cond or got is None else f" (got {got!r})"))


def mounts(c):
    return {m["name"] for m in c.get("volumeMounts", [])}


def hardened(c):
    s = c.get("securityContext", {})
    return (s.get("runAsNonRoot") is True and s.get("readOnlyRootFilesystem") is True
            and s.get("allowPrivilegeEscalation") is False and s.get("capabilities", {}).get("drop") == ["ALL"]
            and s.get("privileged") is False)


def cluster(path, replicas, jobs, ns):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = sorted(d["kind"] for d in docs)
    check("kinds: SA, Role, RoleBinding, Deployment, PVC, 2 Services, NetworkPolicy",
          kinds == sorted(["ServiceAccount", "Role", "RoleBinding", "Deployment", "PersistentVolumeClaim",
                           "Service", "Service", "NetworkPolicy"]), kinds)
    check("no Secret is rendered (values are the operator's)", "Secret" not in kinds)
    check(f"every object in namespace {ns}", all(d["metadata"].get("namespace") == ns for d in docs))
    role = next(d for d in docs if d["kind"] == "Role")
    rules = role["rules"]
    lease_rules = [r for r in rules if r["apiGroups"] == ["coordination.k8s.io"]]
    check("Role: leases create, get/update only on the Lease airlock-serve",
          len(lease_rules) == 2 and all(r["resources"] == ["leases"] for r in lease_rules)
          and any(r["verbs"] == ["create"] and "resourceNames" not in r for r in lease_rules)
          and any(sorted(r["verbs"]) == ["get", "update"] and r.get("resourceNames") == ["airlock-serve"]
                  for r in lease_rules), lease_rules)
    others = [r for r in rules if r not in lease_rules]
    check("Role: no wildcard verb or resource", all("*" not in r["verbs"] and "*" not in r["resources"] for r in rules))
    check("Role: never secrets (the App key is the broker's, tokens never go through a Secret)",
          all("secrets" not in r["resources"] for r in rules))
    if jobs:
        res = {x for r in others for x in r["resources"]}
        check("--jobs: Role adds jobs and pods/attach", {"jobs", "pods/attach"} <= res, sorted(res))
    else:
        check("no --jobs: the Role is the Lease only", others == [], others)
    rb = next(d for d in docs if d["kind"] == "RoleBinding")
    check("RoleBinding: the Role to the ServiceAccount",
          rb["roleRef"]["name"] == role["metadata"]["name"] and rb["subjects"][0]["name"] == "airlock-serve"
          and rb["subjects"][0]["namespace"] == ns)
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")
    check("ServiceAccount: automountServiceAccountToken false", sa.get("automountServiceAccountToken") is False)
    dep = next(d for d in docs if d["kind"] == "Deployment")
    spec = dep["spec"]
    pod = spec["template"]["spec"]
    check(f"replicas {replicas}", spec["replicas"] == replicas, spec["replicas"])
    if replicas == 1:
        check("one replica: strategy Recreate", spec.get("strategy", {}).get("type") == "Recreate", spec.get("strategy"))
    else:
        aff = pod.get("affinity", {}).get("podAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", [])
        check("several replicas: required on one node (SQLite WAL on the RWO volume)",
              any(t.get("topologyKey") == "kubernetes.io/hostname" for t in aff), aff)
        check("several replicas: no surge", spec.get("strategy", {}).get("rollingUpdate", {}).get("maxSurge") == 0)
    check("pod: hostUsers false, no automounted token, RuntimeDefault seccomp",
          pod.get("hostUsers") is False and pod.get("automountServiceAccountToken") is False
          and pod["securityContext"].get("seccompProfile", {}).get("type") == "RuntimeDefault"
          and pod["securityContext"].get("runAsNonRoot") is True)
    cs = {c["name"]: c for c in pod["containers"]}
    check("containers serve and broker", sorted(cs) == ["broker", "serve"], sorted(cs))
    serve, broker = cs.get("serve", {}), cs.get("broker", {})
    vols = {v["name"]: v for v in pod["volumes"]}
    key_vols = {n for n, v in vols.items() if v.get("secret", {}).get("secretName") == "airlock-app-key"}
    check("the App key Secret is a volume", len(key_vols) == 1, key_vols)
    check("the App key is mounted into the broker", key_vols <= mounts(broker))
    check("the App key is NOT mounted into serve", not (key_vols & mounts(serve)), mounts(serve))
    tok_vols = {n for n, v in vols.items()
                if any("serviceAccountToken" in s for s in v.get("projected", {}).get("sources", []))}
    check("the API token is projected, expiring, into serve only",
          len(tok_vols) == 1 and tok_vols <= mounts(serve) and not (tok_vols & mounts(broker)), tok_vols)
    sock = {n for n, v in vols.items() if v.get("emptyDir", {}).get("medium") == "Memory"}
    check("the lease socket is an in-memory emptyDir both containers mount",
          any(n in mounts(serve) and n in mounts(broker) for n in sock), sock)
    check("the broker's args put its socket on that volume",
          "/run/airlock/broker.sock" in broker.get("args", []) and
          any(m["mountPath"] == "/run/airlock" for m in broker.get("volumeMounts", [])))
    check("both containers hardened (non-root, read-only root, no escalation, drop ALL)",
          hardened(serve) and hardened(broker))
    check("serve and broker run as different uids",
          serve["securityContext"]["runAsUser"] != broker["securityContext"]["runAsUser"])
    check("no container has an env value (no secret in the spec)",
          all("value" not in e for c in cs.values() for e in c.get("env", [])))
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    check("state on a ReadWriteOnce claim", pvc["spec"]["accessModes"] == ["ReadWriteOnce"])
    np = next(d for d in docs if d["kind"] == "NetworkPolicy")
    eg_ports = sorted(p["port"] for r in np["spec"]["egress"] for p in r.get("ports", []))
    check("NetworkPolicy: egress only 443/6443 and DNS", eg_ports == [53, 53, 443, 6443], eg_ports)


def sandbox(path, deadline, rc):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = [d["kind"] for d in docs]
    check("no Job: a SandboxTemplate and a SandboxClaim instead",
          "Job" not in kinds and kinds.count("SandboxTemplate") == 1 and kinds.count("SandboxClaim") == 1, kinds)
    t = next((d for d in docs if d["kind"] == "SandboxTemplate"), {})
    c = next((d for d in docs if d["kind"] == "SandboxClaim"), {})
    check("names at most 63 characters (the CRD's CEL rule)", all(len(d["metadata"]["name"]) <= 63 for d in docs))
    pt = t.get("spec", {}).get("podTemplate", {})
    p = pt.get("spec", {})
    check(f"pod: runtimeClassName {rc}", p.get("runtimeClassName") == rc, p.get("runtimeClassName"))
    check("pod: hostUsers false, no token, dnsPolicy None, restartPolicy Never",
          p.get("hostUsers") is False and p.get("automountServiceAccountToken") is False
          and p.get("dnsPolicy") == "None" and p.get("restartPolicy") == "Never")
    check(f"pod: activeDeadlineSeconds {deadline}", p.get("activeDeadlineSeconds") == deadline,
          p.get("activeDeadlineSeconds"))
    check("pod: the fail-closed netpol-probe init container",
          [i["name"] for i in p.get("initContainers", [])] == ["netpol-probe"])
    check("pod: every container hardened", all(hardened(x) for x in p.get("containers", []) + p.get("initContainers", [])))
    labels = pt.get("metadata", {}).get("labels", {})
    ap = next(d for d in docs if d["kind"] == "NetworkPolicy" and "agent-policy" in d["metadata"]["name"])
    sel = ap["spec"]["podSelector"]["matchLabels"]
    check("the run's agent NetworkPolicy selects the sandbox's pod labels",
          all(labels.get(k) == v for k, v in sel.items()), (sel, labels))
    tnp = t.get("spec", {}).get("networkPolicy", {})
    eg = tnp.get("egress", [])
    check("the template's networkPolicy: no ingress, egress only to the run's proxy on 3128",
          tnp.get("ingress") == [] and len(eg) == 1 and [x["port"] for x in eg[0]["ports"]] == [3128]
          and eg[0]["to"][0]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") == "proxy")
    cs = c.get("spec", {})
    check("the claim refers to the template", cs.get("sandboxTemplateRef", {}).get("name") == t["metadata"]["name"])
    check("the claim is deleted at its shutdownTime",
          cs.get("lifecycle", {}).get("shutdownPolicy") == "Delete" and cs.get("lifecycle", {}).get("shutdownTime"))


if sys.argv[1] == "cluster":
    cluster(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5])
else:
    sandbox(sys.argv[2], int(sys.argv[3]), sys.argv[4])
sys.exit(1 if failed else 0)
