#!/usr/bin/env python3
"""A fake model API over HTTPS, for the model relay's tests (issue #10).

usage: fakemodel.py CERT KEY PORTFILE LOGFILE [--delay SECONDS] [--tokens IN,OUT]

Listens on 127.0.0.1 (port 0: the kernel picks; written to PORTFILE).
Answers
  POST /v1/messages          Anthropic Messages: JSON, or SSE when "stream": true
  POST /v1/chat/completions  OpenAI Chat Completions: JSON, or SSE with a final usage chunk
  POST /v1/responses         OpenAI Responses: JSON, or SSE ending in response.completed
  anything else              404
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
args = sys.argv[5:]
while args:
    a = args.pop(0)
    if a == "--delay":
        DELAY = float(args.pop(0))
    elif a == "--tokens":
        TOK_IN, TOK_OUT = (int(x) for x in args.pop(0).split(","))
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
        log({"t": time.time(), "method": self.command, "path": self.path,
             "headers": sorted(k.lower() for k in self.headers.keys()),
             "creds": creds, "host": self.headers.get("host"), "body_len": len(body),
             "accept_encoding": self.headers.get("accept-encoding"),
             # not secrets: what the relay's header rules let through (issue #17)
             "org": self.headers.get("openai-organization"),
             "project": self.headers.get("openai-project"),
             "beta": self.headers.get("anthropic-beta")})
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        if self.command != "POST" or path not in ("/v1/messages", "/v1/chat/completions", "/v1/responses"):
            self.send_json(404, {"error": {"type": "not_found", "message": "fake: no such route"}})
            return
        model = req.get("model", "fake-model")
        if model == "slow":  # for the relay's first-byte timeout
            time.sleep(3)
        if req.get("stream"):
            self.stream(path, model)
        else:
            self.send_json(200, self.whole(path, model))

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
