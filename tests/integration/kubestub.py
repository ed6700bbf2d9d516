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
judged, another writer takes the lease (so that PUT meets a 409)."""
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
        body = json.dumps(obj).encode()
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
        code, obj = self.api(method)
        with lock:
            log.append({"who": who, "method": method, "status": code})
        self.reply(code, obj)

    def api(self, method):
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

    def stub(self, method):
        with lock:
            if method == "GET" and self.path == "/_stub/state":
                return self.reply(200, {"lease": list(leases.values()), "log": log})
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
