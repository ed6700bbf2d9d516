#!/usr/bin/env python3
"""A tiny fake of the GitHub App token endpoints, for the broker's error-path
tests (tests/integration/broker.sh). Plain HTTP on loopback only.

usage: fakegh.py PORTFILE STATEFILE MODE
MODE: ok | 422 | 401 | 500 (always 5xx) | flaky (one 502, then ok) | badjson |
      broad (grants more than asked)
Writes the chosen port to PORTFILE; appends one JSON line per request to
STATEFILE: {"method","path","status","token_sha256"?}. Token values are
never written, only their SHA-256."""
import hashlib, http.server, json, os, secrets, string, sys, time

portfile, statefile, mode = sys.argv[1], sys.argv[2], sys.argv[3]
tokens = {}  # sha256 -> {"revoked": bool}
flaky_left = [1]


def sha(t):
    return hashlib.sha256(t.encode()).hexdigest()


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        rec = {"method": self.command, "path": self.path, "status": status}
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ghs_"):
            rec["token_sha256"] = sha(auth[7:])
        with open(statefile, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def _token(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return None
        t = tokens.get(sha(auth[7:]))
        return None if t is None or t["revoked"] else auth[7:]

    def do_GET(self):
        if self.path.endswith("/installation") and self.path.startswith("/repos/"):
            if mode == "401":
                return self._send(401, {"message": "A JSON web token could not be decoded"})
            return self._send(200, {"id": 7, "account": {"login": "acme"}})
        if self.path.startswith("/installation/repositories"):
            if self._token() is None:
                return self._send(401, {"message": "Bad credentials"})
            return self._send(200, {"total_count": 1, "repositories": []})
        return self._send(404, {"message": "Not Found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        if not self.path.endswith("/access_tokens"):
            return self._send(404, {"message": "Not Found"})
        if mode == "500" or (mode == "flaky" and flaky_left[0] > 0):
            flaky_left[0] -= 1
            return self._send(502, {"message": "Server Error"})
        if mode == "422":
            return self._send(422, {"message": "The permissions requested are not granted to this installation."})
        if mode == "badjson":
            self.send_response(201)
            self.end_headers()
            self.wfile.write(b"{not json")
            return
        tok = "ghs_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40 + secrets.randbelow(30)))
        tokens[sha(tok)] = {"revoked": False}
        perms = dict(body.get("permissions", {}))
        if mode == "broad":
            perms["administration"] = "write"
        exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        name = (body.get("repositories") or ["widgets"])[0]
        return self._send(201, {"token": tok, "expires_at": exp, "permissions": perms,
                                "repository_selection": "selected",
                                "repositories": [{"id": 42, "full_name": "acme/" + name}]})

    def do_DELETE(self):
        if self.path != "/installation/token":
            return self._send(404, {"message": "Not Found"})
        t = self._token()
        if t is None:
            return self._send(401, {"message": "Bad credentials"})
        tokens[sha(t)]["revoked"] = True
        return self._send(204)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
