"""A real HTTP server on 127.0.0.1 speaking OpenAI chat completions and Gemini generateContent.

Replies are built from the request's JSON schema: every string gets deterministic text derived from the
prompt (a hash of the messages and the field's path), every array gets exactly ``minItems`` entries. Faults
are planted on chosen request numbers (1-based, counted over both endpoints):

- ``429``: rate limited, with ``Retry-After`` (``retry_after`` seconds);
- ``500``: a server error;
- ``truncated``: a 200 whose JSON text is cut in half;
- ``missing``: a 200 whose JSON lacks the first required field;
- ``garbage``: a 200 whose HTTP body is not JSON at all.

``enum``/``const`` strings get one of their allowed values and integers with ``minimum``/``maximum`` stay in
range (both chosen by the same hash). ``reply(model, prompt, schema)``, when given, may return the reply value
itself (e.g. a chosen option); ``prompt`` is every message's text joined by newlines, and None falls back to
the filled reply. Planted faults apply to chosen replies too.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = ("okay", "sure", "thanks", "right", "alright", "indeed", "honestly", "anyway", "yes", "fine")
"""The few English words replies use (a test checks none is a state word of the catalog)."""

GEMINI_PATH = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")


class FakeLLMServer:
    """Start with ``with FakeLLMServer(faults={3: "429"}) as srv:``; ``srv.url`` is the base URL."""

    def __init__(self, faults: dict[int, str] | None = None, delay: float = 0.0, retry_after: float = 0.0,
                 reply: Callable[[str, str, dict[str, Any]], Any] | None = None) -> None:
        self.faults = dict(faults or {})
        self.reply = reply
        self.delay = delay
        self.retry_after = retry_after
        self.count = 0
        self.requests: list[dict[str, Any]] = []
        """Every request: path, headers (lower-cased names) and parsed body."""
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def next_number(self, record: dict[str, Any]) -> int:
        with self._lock:
            self.count += 1
            self.requests.append(record)
            return self.count


def fill(schema: dict[str, Any], seed: str, path: str = "") -> Any:
    """A value valid against ``schema`` (the strict subset dimobench sends), deterministic in ``seed``."""
    kind = schema.get("type")
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        h = hashlib.sha256(f"{seed}|{path}".encode()).hexdigest()
        return schema["enum"][int(h[:4], 16) % len(schema["enum"])]
    if kind == "object":
        return {k: fill(v, seed, f"{path}.{k}") for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        n = schema.get("minItems", 1)
        return [fill(schema["items"], seed, f"{path}[{i}]") for i in range(n)]
    if kind == "integer":
        value = int(hashlib.sha256(f"{seed}{path}".encode()).hexdigest()[:4], 16)
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and hi is not None:
            return int(lo) + value % (int(hi) - int(lo) + 1)
        return value
    if kind == "boolean":
        return True
    h = hashlib.sha256(f"{seed}|{path}".encode()).hexdigest()
    a, b = WORDS[int(h[:2], 16) % len(WORDS)], WORDS[int(h[2:4], 16) % len(WORDS)]
    return f"{a.capitalize()}, {b} {h[4:12]} {h[12:16]}."


def _reply_text(schema: dict[str, Any], prompt: str, fault: str | None, chosen: Any = None) -> str:
    value = fill(schema, hashlib.sha256(prompt.encode()).hexdigest()) if chosen is None else chosen
    if fault == "missing" and isinstance(value, dict) and value:
        value.pop(next(iter(value)))
    text = json.dumps(value)
    return text[: len(text) // 2] if fault == "truncated" else text


def _handler(srv: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            record = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
            n = srv.next_number(record)
            if srv.delay:
                time.sleep(srv.delay)
            fault = srv.faults.get(n)
            if fault == "429":
                err = {"error": {"code": 429, "message": "rate limited", "status": "RESOURCE_EXHAUSTED",
                                 "type": "rate_limit"}}
                return self._send(429, json.dumps(err).encode(), {"Retry-After": str(srv.retry_after)})
            if fault == "500":
                err = {"error": {"code": 500, "message": "boom", "status": "INTERNAL", "type": "server_error"}}
                return self._send(500, json.dumps(err).encode())
            if fault == "garbage":
                return self._send(200, b"<html>not json")
            if self.path.rstrip("/").endswith("/chat/completions"):
                return self._openai(body, fault)
            m = GEMINI_PATH.match(self.path.split("?")[0])
            if m:
                return self._gemini(m.group(1), body, fault)
            self._send(404, json.dumps({"error": {"code": 404, "message": f"no route {self.path}"}}).encode())

        def _openai(self, body: dict[str, Any], fault: str | None) -> None:
            prompt = json.dumps(body.get("messages", []), sort_keys=True)
            schema = body["response_format"]["json_schema"]["schema"]
            chosen = srv.reply(str(body.get("model")), "\n".join(str(m.get("content", ""))
                                                                 for m in body.get("messages", [])),
                               schema) if srv.reply else None
            text = _reply_text(schema, prompt, fault, chosen)
            reply = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model"),
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                               "total_tokens": (len(prompt) + len(text)) // 4}}
            self._send(200, json.dumps(reply).encode())

        def _gemini(self, model: str, body: dict[str, Any], fault: str | None) -> None:
            prompt = json.dumps([body.get("systemInstruction"), body.get("contents")], sort_keys=True)
            config = body.get("generationConfig", {})
            schema = config.get("responseJsonSchema") or config.get("response_json_schema")
            chosen = srv.reply(model, "\n".join(p.get("text", "") for c in [body.get("systemInstruction") or {},
                                                                          *body.get("contents", [])]
                                                 for p in c.get("parts", [])), schema) if srv.reply else None
            text = _reply_text(schema, prompt, fault, chosen)
            reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                     "finishReason": "STOP", "index": 0}],
                     "usageMetadata": {"promptTokenCount": len(prompt) // 4, "candidatesTokenCount": len(text) // 4,
                                       "totalTokenCount": (len(prompt) + len(text)) // 4},
                     "modelVersion": model}
            self._send(200, json.dumps(reply).encode())

    return Handler
