#!/usr/bin/env python3
"""A fake model API over HTTPS, for the model relay's tests (issue #10).

usage: fakemodel.py CERT KEY PORTFILE LOGFILE [--delay SECONDS] [--tokens IN,OUT]
                    [--script COMMAND]

Listens on 127.0.0.1 (port 0: the kernel picks; written to PORTFILE).
Answers
  POST /v1/messages          Anthropic Messages: JSON, or SSE when "stream": true
  POST /v1/chat/completions  OpenAI Chat Completions: JSON, or SSE with a final usage chunk
  POST /v1/responses         OpenAI Responses: JSON, or SSE ending in response.completed
  anything else              404
With --script COMMAND it plays a coding agent's model (issue #17): a
request that offers tools and carries no tool result yet is answered with
one call of the client's shell tool running COMMAND (Anthropic: tool_use
of `Bash`; OpenAI Responses: a function_call of `shell_command`,
`exec_command` or `shell`, or a local_shell_call, whichever the request
offers); the request that carries its result is answered with a final
text that repeats the result's `AIRLOCK_RESULT ...` line. Requests without
tools (titles, quota checks) get the plain answer. Streaming (SSE) and
JSON answers both follow the vendors' event shapes.
Every request is one JSON line in LOGFILE: time, method, path, the names
of the headers received, and for each credential header the SHA-256 of its
value (never the value). Every SSE event written is a line too
({"event": NAME, "t": time-written}), so a test can compare when the last
event was produced with when the first one arrived. Never binds anything
but loopback.
"""
import hashlib
import json
import socket
import socketserver
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

CERT, KEY, PORTFILE, LOGFILE = sys.argv[1:5]
DELAY = 0.0
TOK_IN, TOK_OUT = 25, 7
SCRIPT = None
args = sys.argv[5:]
while args:
    a = args.pop(0)
    if a == "--delay":
        DELAY = float(args.pop(0))
    elif a == "--tokens":
        TOK_IN, TOK_OUT = (int(x) for x in args.pop(0).split(","))
    elif a == "--script":
        SCRIPT = args.pop(0)
CRED = ("authorization", "x-api-key", "api-key", "cookie", "proxy-authorization")
lock = threading.Lock()


def log(obj):
    with lock, open(LOGFILE, "a") as f:
        f.write(json.dumps(obj) + "\n")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        # no Nagle: each SSE event leaves when written (else the first event
        # waits ~40 ms for the delayed ACK of the response head)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def do_GET(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def handle_any(self):
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n) if n else b""
        creds = {}
        for k, v in self.headers.items():
            if k.lower() in CRED:
                val = v[7:] if k.lower() == "authorization" and v.startswith("Bearer ") else v
                creds[k.lower()] = hashlib.sha256(val.encode()).hexdigest()
        path = self.path.split("?")[0]
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        if not isinstance(req, dict):
            req = {}
        log({"t": time.time(), "method": self.command, "path": self.path,
             "headers": sorted(k.lower() for k in self.headers.keys()),
             "creds": creds, "host": self.headers.get("host"), "body_len": len(body),
             "accept_encoding": self.headers.get("accept-encoding"),
             # not secrets: what the relay's header rules let through (issue #17)
             "org": self.headers.get("openai-organization"),
             "project": self.headers.get("openai-project"),
             "beta": self.headers.get("anthropic-beta"),
             # what the relay forces (issue #26 item 6): the body's `store`
             "store": req.get("store", "absent")})
        if self.command != "POST" or path not in ("/v1/messages", "/v1/chat/completions", "/v1/responses"):
            self.send_json(404, {"error": {"type": "not_found", "message": "fake: no such route"}})
            return
        model = req.get("model", "fake-model")
        if model == "slow":  # for the relay's first-byte timeout
            time.sleep(3)
        if SCRIPT and req.get("tools") and path in ("/v1/messages", "/v1/responses"):
            plan = script_step(path, req)
            log({"script": plan[0], "path": path})
            if path == "/v1/messages":
                self.anthropic_turn(req, model, plan)
            else:
                self.responses_turn(req, model, plan)
            return
        if req.get("stream"):
            self.stream(path, model)
        else:
            self.send_json(200, self.whole(path, model))

    def sse(self, events):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for name, data in events:
            b = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
            b = b.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def anthropic_turn(self, req, model, plan):
        kind, arg = plan
        usage = {"input_tokens": TOK_IN, "output_tokens": TOK_OUT}
        if kind == "call":
            names = [t.get("name") for t in req.get("tools", [])]
            name = "Bash" if "Bash" in names else names[0]
            block = {"type": "tool_use", "id": "toolu_fake1", "name": name,
                     "input": {"command": arg, "description": "work the ticket and run the tests"}}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": arg}
            stop = "end_turn"
        msg = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not req.get("stream"):
            self.send_json(200, msg)
            return
        start = dict(msg, content=[], stop_reason=None, usage={"input_tokens": TOK_IN, "output_tokens": 1})
        if block["type"] == "tool_use":
            first = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            first = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        self.sse([("message_start", {"type": "message_start", "message": start}),
                  ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": first}),
                  ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": TOK_OUT}}),
                  ("message_stop", {"type": "message_stop"})])

    def responses_turn(self, req, model, plan):
        kind, arg = plan
        if kind == "call":
            tools = req.get("tools", [])
            fn = {t.get("name"): t for t in tools if t.get("type") == "function"}
            if "shell_command" in fn:
                item = {"type": "function_call", "name": "shell_command",
                        "arguments": json.dumps({"command": arg})}
            elif "exec_command" in fn:
                item = {"type": "function_call", "name": "exec_command",
                        "arguments": json.dumps({"cmd": arg})}
            elif "shell" in fn:
                item = {"type": "function_call", "name": "shell",
                        "arguments": json.dumps({"command": ["bash", "-lc", arg]})}
            else:
                item = {"type": "local_shell_call", "status": "completed",
                        "action": {"type": "exec", "command": ["bash", "-lc", arg], "env": {}}}
            item.update({"id": "fc_fake1", "call_id": "call_fake1", "status": "completed"})
        else:
            item = {"type": "message", "id": "msg_fake1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": arg, "annotations": []}]}
        usage = {"input_tokens": TOK_IN, "output_tokens": TOK_OUT, "total_tokens": TOK_IN + TOK_OUT,
                 "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens_details": {"reasoning_tokens": 0}}
        resp = {"id": "resp_fake", "object": "response", "created_at": int(time.time()),
                "model": model, "status": "completed", "output": [item], "usage": usage}
        if not req.get("stream"):
            self.send_json(200, resp)
            return
        events = [("response.created", {"type": "response.created",
                                        "response": dict(resp, status="in_progress", output=[])}),
                  ("response.output_item.added", {"type": "response.output_item.added",
                                                  "output_index": 0, "item": item})]
        if item["type"] == "message":
            events.append(("response.output_text.delta", {"type": "response.output_text.delta",
                                                          "item_id": item["id"], "output_index": 0,
                                                          "content_index": 0, "delta": arg}))
        events += [("response.output_item.done", {"type": "response.output_item.done",
                                                  "output_index": 0, "item": item}),
                   ("response.completed", {"type": "response.completed", "response": resp})]
        self.sse(events)

    def send_json(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def whole(self, path, model):
        text = "Hello from the fake model API."
        if path == "/v1/messages":
            return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": TOK_IN, "output_tokens": TOK_OUT}}
        if path == "/v1/chat/completions":
            return {"id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": TOK_IN, "completion_tokens": TOK_OUT,
                              "total_tokens": TOK_IN + TOK_OUT}}
        return {"id": "resp_fake", "object": "response", "model": model, "status": "completed",
                "output": [{"type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": text}]}],
                "usage": {"input_tokens": TOK_IN, "output_tokens": TOK_OUT,
                          "total_tokens": TOK_IN + TOK_OUT}}

    def events(self, path, model):
        words = ["Hello", " from", " the", " fake", " model", " API."]
        if path == "/v1/messages":
            yield "message_start", {"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": TOK_IN, "output_tokens": 1}}}
            yield "content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "text", "text": ""}}
            for w in words:
                yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta", "text": w}}
            yield "content_block_stop", {"type": "content_block_stop", "index": 0}
            yield "message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                    "usage": {"output_tokens": TOK_OUT}}
            yield "message_stop", {"type": "message_stop"}
        elif path == "/v1/chat/completions":
            for w in words:
                yield None, {"id": "c", "object": "chat.completion.chunk", "model": model,
                             "choices": [{"index": 0, "delta": {"content": w}}]}
            yield None, {"id": "c", "object": "chat.completion.chunk", "model": model,
                         "choices": [], "usage": {"prompt_tokens": TOK_IN,
                                                  "completion_tokens": TOK_OUT}}
            yield None, "[DONE]"
        else:
            for w in words:
                yield "response.output_text.delta", {"type": "response.output_text.delta",
                                                     "delta": w}
            yield "response.completed", {"type": "response.completed", "response": {
                "id": "resp_fake", "status": "completed",
                "usage": {"input_tokens": TOK_IN, "output_tokens": TOK_OUT}}}

    def stream(self, path, model):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        first = True
        for name, data in self.events(path, model):
            if not first and DELAY:
                time.sleep(DELAY)
            first = False
            payload = data if isinstance(data, str) else json.dumps(data)
            ev = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            b = ev.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
            self.wfile.flush()
            log({"event": name or "data", "t": time.time()})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _texts(v):
    """Every string inside a tool result (they nest in lists and blocks)."""
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _texts(x)
    elif isinstance(v, dict):
        for k in ("text", "output", "content"):
            if k in v:
                yield from _texts(v[k])


def script_step(path, req):
    """("call", COMMAND) until the request carries the tool's result, then
    ("final", TEXT) repeating its AIRLOCK_RESULT line."""
    results = []
    if path == "/v1/messages":
        for m in req.get("messages", []):
            if isinstance(m.get("content"), list):
                results += [b for b in m["content"] if b.get("type") == "tool_result"]
    else:
        items = req.get("input") if isinstance(req.get("input"), list) else []
        results = [i for i in items if isinstance(i, dict) and
                   i.get("type") in ("function_call_output", "local_shell_call_output",
                                     "custom_tool_call_output")]
    if not results:
        return ("call", SCRIPT)
    line, seen = "", []
    for t in _texts(results):
        for ln in t.splitlines():
            if "AIRLOCK_RESULT {" in ln:
                line = ln[ln.index("AIRLOCK_RESULT {"):]
            elif ln.startswith("KEYHUNT "):  # the tests' key hunt: reported back to them
                seen.append(ln)
    return ("final", "The tests pass and the branch is pushed.\n" + "".join(x + "\n" for x in seen) +
            (line or "AIRLOCK_RESULT {}"))


class S(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = S(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402

os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
