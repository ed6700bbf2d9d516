"""Shared helpers for airlock's bundled agents (the contract: docs/agents.md).

Everything comes from the environment airlock sets inside the sandbox; the
tokens are only ever sent in HTTP headers, never put on a command line, in a
URL or in .git/config (git gets them through the credential helper that
airlock configures with GIT_CONFIG_* variables).
"""
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

ENV = os.environ


def need(name):
    v = ENV.get(name)
    if not v:
        sys.exit(f"agent: {name} is not set (is this running under `airlock ticket`?)")
    return v


def log(msg):
    print(f"agent: {msg}", file=sys.stderr, flush=True)


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


def api(method, path, body=None, token_var="AIRLOCK_TICKET_TOKEN"):
    """One REST call through the egress proxy (urllib honours HTTPS_PROXY)."""
    url = need("AIRLOCK_API_URL").rstrip("/") + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": "Bearer " + need(token_var),
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "airlock-agent",
        "Content-Type": "application/json",
    })
    ctx = ssl.create_default_context(cafile=ENV.get("SSL_CERT_FILE") or None)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            raw = r.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raise ApiError(e.code, e.read().decode(errors="replace")) from None


def git(*args, cwd=None, check=True, capture=False):
    r = subprocess.run(["git", *args], cwd=cwd, text=True,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None)
    if check and r.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed ({r.returncode}): {(r.stderr or '').strip()[:500]}")
    return r


def result(**kw):
    """The one line the supervisor reads back (untrusted, shape-checked)."""
    print("AIRLOCK_RESULT " + json.dumps(kw), flush=True)
