#!/usr/bin/env python3
"""A test double of the few Kubernetes API endpoints `airlock serve`'s
leader election uses: coordination.k8s.io/v1 Lease GET, POST (create), PUT
(update) under /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME],
over HTTPS on loopback, with the API's rules as documented (API Concepts,
"Resource versions"; Lease v1): bearer token required (401), POST of an
existing name is 409 AlreadyExists, PUT whose metadata.resourceVersion is
not the current one is 409 Conflict, every write gets a new
resourceVersion. Only these rules: it is not a Kubernetes API server.

usage: kubestub.py CERT KEY TOKENS PORTFILE
  TOKENS: lines "NAME TOKEN"; each request is logged under the NAME of its token.
Test-only endpoints (no token): GET /_stub/state -> {"lease", "log"};
POST /_stub/set {"holder", "duration"} writes the lease as another writer
would; POST /_stub/steal-next-put {"holder"}: before the next PUT is
judged, another writer takes the lease (so that PUT meets a 409).

Jobs (issue #32, `kube/jobs.c`): batch/v1 Jobs POST/GET/DELETE and watch
(?watch=1&fieldSelector=metadata.name=N&resourceVersion=RV: the events
after RV, one JSON object per line, until the Job ends or timeoutSeconds;
an ERROR event with a 410 Status when RV is older than the stub's oldest
kept event), core/v1 pods list by labelSelector batch.kubernetes.io/
job-name=N and pods/NAME/log?container=C. Each created Job gets one pod
whose containers `supervisor` and `agent` log different lines; the Job
then runs on its own: active after 0.2 s, ended after 0.5 s, as the mode
set by POST /_stub/jobs {"mode": ...} says: "complete", "fail" (the node
dies: pod Failed, reason NodeLost; Job Failed, BackoffLimitExceeded),
"never" (stays active), "gone" (the first watch of each Job meets 410),
"garbage" (the watch sends a line that is not JSON), "other" (the watch
sends an event for another Job). POST /_stub/jobs {"precreate": JOB}
stores a Job as another leader would have, already Complete. GET
/_stub/state's "jobs" and "requests" (method, path, body) show what the
runner did.

A run's other objects (issue #32, `runs.runner: kubernetes`): v1
ConfigMap and Service, apps/v1 Deployment, networking.k8s.io/v1
NetworkPolicy POST (409 AlreadyExists for a second one; 400 for a body of
another kind or namespace), GET and DELETE, stored as sent ("objects" and
"deleted" in /_stub/state). A pod's logs follow its Job's template: the
`netpol-probe` init container logs the probe's verdict, every other
container the agent's line (and `supervisor` as before). Modes "hold"
(the Job stays active until POST /_stub/jobs {"finish": NAME, "how":
"complete"|"fail"}: a leader can be killed mid-Job) and "netpol-open" (a
cluster that does not enforce NetworkPolicy: the probe reports what it
reached and the Job fails)."""
import json, ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

cert, key, tokens_file, portfile = sys.argv[1:5]
tokens = {}
for line in open(tokens_file):
    if line.strip():
        name, tok = line.split()
        tokens[tok] = name
lock = threading.Lock()
leases = {}  # (ns, name) -> object
log = []
rv = [100]
steal = [None]
PREFIX = "/apis/coordination.k8s.io/v1/namespaces/"
JOBS = "/apis/batch/v1/namespaces/"
PODS = "/api/v1/namespaces/"
jobs = {}  # (ns, name) -> Job object
objects = {}  # (plural, ns, name) -> ConfigMap, Service, Deployment, NetworkPolicy
deleted = []  # {"kind", "name", "body"} of each generic object deleted
held = {}  # (ns, name) -> threading.Event: mode "hold" Jobs wait for /_stub/jobs {"finish"}
finish_how = {}  # (ns, name) -> "complete" | "fail"
GENERIC = [("/api/v1/namespaces/", "configmaps", "v1", "ConfigMap"),
           ("/api/v1/namespaces/", "services", "v1", "Service"),
           ("/apis/apps/v1/namespaces/", "deployments", "apps/v1", "Deployment"),
           ("/apis/networking.k8s.io/v1/namespaces/", "networkpolicies", "networking.k8s.io/v1", "NetworkPolicy")]


def generic_kind(path):
    p = path.split("?")[0]
    for g in GENERIC:
        if p.startswith(g[0]):
            parts = p[len(g[0]):].split("/")
            if len(parts) in (2, 3) and parts[1] == g[1]:
                return g
    return None
pods = {}  # (ns, name) -> {"pod": Pod, "logs": {container: text}}
events = []  # (rv as int, ns, name, event dict)
requests = []  # {"method", "path", "body"} of every /apis/batch and /api/v1 request
job_mode = ["complete"]
watched = set()  # (ns, name) of Jobs whose first watch met 410 in mode "gone"
cond = threading.Condition(lock)


def now():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def status(code, reason, msg):
    return code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                  "message": msg, "code": code}


def new_rv():
    rv[0] += 1
    return str(rv[0])


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, code, obj):
        if code is None:
            return  # the handler answered itself (a watch stream)
        body = obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def handle_any(self, method):
        if self.path.startswith("/_stub/"):
            return self.stub(method)
        auth = self.headers.get("Authorization", "")
        who = tokens.get(auth[7:]) if auth.startswith("Bearer ") else None
        if not who:
            return self.reply(*status(401, "Unauthorized", "no valid bearer token"))
        r = self.api(method)
        code, obj = r if r is not None else (None, None)
        with lock:
            log.append({"who": who, "method": method, "status": code})
        self.reply(code, obj)

    def api(self, method):
        kind = generic_kind(self.path)
        if kind:
            return self.objects_api(method, kind)
        if self.path.startswith(JOBS) or self.path.startswith(PODS):
            return self.jobs_api(method)
        if not self.path.startswith(PREFIX):
            return status(404, "NotFound", "not served by this stub")
        parts = self.path[len(PREFIX):].split("/")
        if len(parts) not in (2, 3) or parts[1] != "leases":
            return status(404, "NotFound", "not served by this stub")
        ns, name = parts[0], parts[2] if len(parts) == 3 else None
        with lock:
            if method == "GET" and name:
                o = leases.get((ns, name))
                return (200, o) if o else status(404, "NotFound", f'leases "{name}" not found')
            if method == "POST" and not name:
                o = self.body()
                name = o.get("metadata", {}).get("name")
                if o.get("kind") != "Lease" or not name:
                    return status(400, "BadRequest", "not a Lease")
                if (ns, name) in leases:
                    return status(409, "AlreadyExists", f'leases "{name}" already exists')
                o["metadata"]["resourceVersion"] = new_rv()
                leases[(ns, name)] = o
                return 201, o
            if method == "PUT" and name:
                o = self.body()
                cur = leases.get((ns, name))
                if not cur:
                    return status(404, "NotFound", f'leases "{name}" not found')
                if steal[0] is not None:
                    cur["spec"].update(holderIdentity=steal[0], renewTime=now(), leaseDurationSeconds=3600)
                    cur["metadata"]["resourceVersion"] = new_rv()
                    steal[0] = None
                if o.get("metadata", {}).get("resourceVersion") != cur["metadata"]["resourceVersion"]:
                    return status(409, "Conflict", "the object has been modified; please apply your "
                                  "changes to the latest version and try again")
                o["metadata"]["resourceVersion"] = new_rv()
                leases[(ns, name)] = o
                return 200, o
        return status(405, "MethodNotAllowed", method)

    def jobs_api(self, method):
        from urllib.parse import urlsplit, parse_qs
        u = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        body = None
        if method in ("POST", "DELETE", "PUT"):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return status(400, "BadRequest", "the body is not JSON")
        with lock:
            requests.append({"method": method, "path": self.path, "body": body})
        if u.path.startswith(JOBS):
            parts = u.path[len(JOBS):].split("/")
            ns = parts[0]
            if len(parts) == 2 and parts[1] == "jobs" and method == "GET" and q.get("watch") in ("1", "true"):
                return self.watch(ns, q)
            if len(parts) == 2 and parts[1] == "jobs" and method == "POST":
                return job_create(ns, body)
            if len(parts) == 3 and parts[1] == "jobs":
                with lock:
                    o = jobs.get((ns, parts[2]))
                    if method == "GET":
                        return (200, o) if o else status(404, "NotFound", f'jobs.batch "{parts[2]}" not found')
                    if method == "DELETE":
                        if not o:
                            return status(404, "NotFound", f'jobs.batch "{parts[2]}" not found')
                        del jobs[(ns, parts[2])]
                        for k in [k for k, v in pods.items() if k[0] == ns and
                                  v["pod"]["metadata"]["labels"].get("batch.kubernetes.io/job-name") == parts[2]]:
                            del pods[k]
                        ev = {"type": "DELETED", "object": o}
                        events.append((int(new_rv()), ns, parts[2], ev))
                        cond.notify_all()
                        return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
            return status(404, "NotFound", "not served by this stub")
        parts = u.path[len(PODS):].split("/")
        ns = parts[0]
        with lock:
            if len(parts) == 2 and parts[1] == "pods" and method == "GET":
                sel = q.get("labelSelector", "")
                k, _, v = sel.partition("=")
                items = [p["pod"] for (pns, _), p in pods.items() if pns == ns and
                         p["pod"]["metadata"]["labels"].get(k) == v]
                return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv[0])},
                             "items": items}
            if len(parts) == 4 and parts[1] == "pods" and parts[3] == "log" and method == "GET":
                p = pods.get((ns, parts[2]))
                if not p:
                    return status(404, "NotFound", f'pods "{parts[2]}" not found')
                c = q.get("container")
                if c not in p["logs"]:
                    return status(400, "BadRequest", f"container {c} is not valid for pod {parts[2]}")
                return 200, p["logs"][c]
        return status(404, "NotFound", "not served by this stub")

    def objects_api(self, method, kind):
        from urllib.parse import urlsplit
        u = urlsplit(self.path)
        prefix, plural, api_version, kname = kind
        parts = u.path[len(prefix):].split("/")  # NS, plural[, name]
        ns = parts[0]
        body = None
        if method in ("POST", "DELETE", "PUT"):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return status(400, "BadRequest", "the body is not JSON")
        with lock:
            requests.append({"method": method, "path": self.path, "body": body})
            if len(parts) == 2 and method == "POST":
                if not isinstance(body, dict) or body.get("kind") != kname or body.get("apiVersion") != api_version:
                    return status(400, "BadRequest", f"not a {api_version} {kname}")
                name = (body.get("metadata") or {}).get("name")
                if not name:
                    return status(422, "Invalid", "metadata.name: Required value")
                if (body.get("metadata") or {}).get("namespace", ns) != ns:
                    return status(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
                if (plural, ns, name) in objects:
                    return status(409, "AlreadyExists", f'{plural} "{name}" already exists')
                o = json.loads(json.dumps(body))
                o["metadata"].update(namespace=ns, uid=f"uid-{plural}-{name}", resourceVersion=new_rv())
                objects[(plural, ns, name)] = o
                return 201, o
            if len(parts) == 3:
                o = objects.get((plural, ns, parts[2]))
                if not o:
                    return status(404, "NotFound", f'{plural} "{parts[2]}" not found')
                if method == "GET":
                    return 200, o
                if method == "DELETE":
                    del objects[(plural, ns, parts[2])]
                    deleted.append({"kind": kname, "name": parts[2], "body": body})
                    return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        return status(405, "MethodNotAllowed", method)

    def watch(self, ns, q):
        sel = q.get("fieldSelector", "")
        name = sel[len("metadata.name="):] if sel.startswith("metadata.name=") else None
        since = int(q.get("resourceVersion") or 0)
        deadline = time.time() + min(int(q.get("timeoutSeconds") or 30), 30)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        mode = job_mode[0]

        def line(o):
            self.wfile.write(((o if isinstance(o, str) else json.dumps(o)) + "\n").encode())
            self.wfile.flush()

        with lock:
            first = (ns, name) not in watched
            watched.add((ns, name))
        if mode == "gone" and first:
            line({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                              "message": "too old resource version: %d" % since,
                                              "reason": "Expired", "code": 410}})
            return None
        if mode == "garbage":
            line("{this is not json")
            return None
        if mode == "other":
            line({"type": "MODIFIED", "object": {"kind": "Job", "apiVersion": "batch/v1",
                  "metadata": {"name": "someone-else", "resourceVersion": "1"}, "status": {}}})
            return None
        try:
            while True:
                with lock:
                    todo = [e for (r, ens, en, e) in events if r > since and ens == ns and en == name]
                    if todo:
                        since = max(r for (r, ens, en, e) in events if ens == ns and en == name)
                    else:
                        left = deadline - time.time()
                        if left <= 0:
                            return None
                        cond.wait(timeout=min(left, 0.5))
                        continue
                for e in todo:
                    line(e)
                    if e["type"] == "DELETED" or any(c.get("status") == "True" for c in
                                                     e["object"].get("status", {}).get("conditions", [])):
                        return None
        except (BrokenPipeError, ConnectionResetError):
            return None

    def stub(self, method):
        with lock:
            if method == "POST" and self.path == "/_stub/jobs":
                b = self.body()
                if "mode" in b:
                    job_mode[0] = b["mode"]
                if "finish" in b:  # a held Job ends now, as b["how"] says
                    for (ns, n), ev in held.items():
                        if n == b["finish"]:
                            finish_how[(ns, n)] = b.get("how", "complete")
                            ev.set()
                if "precreate" in b:
                    o = b["precreate"]
                    ns = o["metadata"]["namespace"]
                    o["metadata"]["resourceVersion"] = new_rv()
                    o["metadata"]["uid"] = "pre-" + o["metadata"]["name"]
                    o["status"] = {"succeeded": 1, "conditions": [
                        {"type": "Complete", "status": "True", "reason": "Completed"}]}
                    jobs[(ns, o["metadata"]["name"])] = o
                    make_pod(ns, o["metadata"]["name"], "Succeeded")
                return self.reply(200, {"ok": True})
            if method == "GET" and self.path == "/_stub/state":
                return self.reply(200, {"lease": list(leases.values()), "log": log,
                                        "objects": list(objects.values()), "deleted": deleted,
                                        "jobs": list(jobs.values()), "requests": requests,
                                        "pods": [p["pod"] for p in pods.values()]})
            if method == "POST" and self.path == "/_stub/set":
                b = self.body()
                for o in leases.values():
                    o["spec"].update(holderIdentity=b["holder"], renewTime=now(),
                                     leaseDurationSeconds=b.get("duration", 3600))
                    o["metadata"]["resourceVersion"] = new_rv()
                return self.reply(200, {"ok": True})
            if method == "POST" and self.path == "/_stub/steal-next-put":
                steal[0] = self.body()["holder"]
                return self.reply(200, {"ok": True})
        self.reply(404, {})

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_DELETE(self):
        self.handle_any("DELETE")


def make_pod(ns, job, phase, spec=None, mode=None):
    name = job + "-" + ("%05x" % (int(rv[0]) & 0xfffff))
    pod = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": name, "namespace": ns, "creationTimestamp": now()[:19] + "Z",
                        "labels": {"batch.kubernetes.io/job-name": job, "job-name": job}},
           "status": {"phase": phase}}
    pods[(ns, name)] = {"pod": pod, "logs": {
        "supervisor": '{"run_record":"from the supervisor","job":"%s"}\n' % job,
        "agent": "agent: this line must never be collected\n"}}
    # the containers the Job's pod template names: an agent container logs
    # the line that must never be collected; airlock's netpol-probe logs its
    # verdict (on a cluster that does not enforce NetworkPolicy, mode
    # "netpol-open": it reached what it must not)
    tmpl = ((spec or {}).get("template") or {}).get("spec") or {}
    for c in (tmpl.get("initContainers") or []) + (tmpl.get("containers") or []):
        if c.get("name") == "netpol-probe":
            pods[(ns, name)]["logs"]["netpol-probe"] = (
                "airlock probe: NetworkPolicy is NOT enforced: the agent pod reached the Kubernetes API, "
                "the cloud metadata service; refusing to run\n" if mode == "netpol-open" else
                "airlock probe: only the proxy answers; the agent may start\n")
        elif c.get("name") not in pods[(ns, name)]["logs"]:
            pods[(ns, name)]["logs"][c.get("name")] = "agent: this line must never be collected\n"
    return name


def job_event(ns, name, kind):
    o = jobs.get((ns, name))
    if not o:
        return
    o["metadata"]["resourceVersion"] = new_rv()
    events.append((int(o["metadata"]["resourceVersion"]), ns, name,
                   {"type": kind, "object": json.loads(json.dumps(o))}))
    cond.notify_all()


def job_life(ns, name, mode):
    time.sleep(0.2)
    with lock:
        o = jobs.get((ns, name))
        if not o:
            return
        o["status"] = {"active": 1, "startTime": now()[:19] + "Z"}
        for p in pods.values():
            if p["pod"]["metadata"]["labels"]["job-name"] == name:
                p["pod"]["status"]["phase"] = "Running"
        job_event(ns, name, "MODIFIED")
    if mode == "never":
        return
    if mode == "hold":
        with lock:
            ev = held.setdefault((ns, name), threading.Event())
        ev.wait()
        mode = "fail" if finish_how.get((ns, name)) == "fail" else "complete"
    if mode == "netpol-open":
        mode = "fail"
    time.sleep(0.3)
    with lock:
        o = jobs.get((ns, name))
        if not o:
            return
        if mode == "fail":
            o["status"] = {"failed": 1, "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": "Job has reached the specified backoff limit"}]}
            for p in pods.values():
                if p["pod"]["metadata"]["labels"]["job-name"] == name:
                    p["pod"]["status"].update(phase="Failed", reason="NodeLost")
        else:
            o["status"] = {"succeeded": 1, "conditions": [
                {"type": "Complete", "status": "True", "reason": "Completed"}]}
            for p in pods.values():
                if p["pod"]["metadata"]["labels"]["job-name"] == name:
                    p["pod"]["status"]["phase"] = "Succeeded"
        job_event(ns, name, "MODIFIED")


def job_create(ns, o):
    if not isinstance(o, dict) or o.get("kind") != "Job" or o.get("apiVersion") != "batch/v1":
        return status(400, "BadRequest", "not a batch/v1 Job")
    name = (o.get("metadata") or {}).get("name")
    if not name:
        return status(422, "Invalid", "metadata.name: Required value")
    with lock:
        if (ns, name) in jobs:
            return status(409, "AlreadyExists", f'jobs.batch "{name}" already exists')
        o = json.loads(json.dumps(o))
        o["metadata"].update(namespace=ns, uid="uid-" + name, creationTimestamp=now()[:19] + "Z")
        o["status"] = {}
        jobs[(ns, name)] = o
        job_event(ns, name, "ADDED")
        mode = job_mode[0]
        if mode == "hold":
            held[(ns, name)] = threading.Event()
        make_pod(ns, name, "Pending", o.get("spec"), mode)
        created = json.loads(json.dumps(o))
    threading.Thread(target=job_life, args=(ns, name, mode), daemon=True).start()
    return 201, created


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
# the TLS handshake in each connection's thread, with a timeout: a client
# frozen mid-handshake (SIGSTOP) must not stop the accept loop
srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
H.timeout = 10
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
