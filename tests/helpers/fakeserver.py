"""A real HTTP server on 127.0.0.1 speaking OpenAI chat completions and Gemini generateContent.

Replies are built from the request's JSON schema: every string gets deterministic text derived from the
prompt (a hash of the messages and the field's path), every array gets exactly ``minItems`` entries. Faults
are planted on chosen request numbers (1-based, counted over both endpoints):

- ``429``: rate limited, with ``Retry-After`` (``retry_after`` seconds);
- ``400``: the request refused (as some servers refuse a ``response_format`` they do not know);
- ``500``: a server error;
- ``truncated``: a 200 whose JSON text is cut in half;
- ``missing``: a 200 whose JSON lacks the first required field;
- ``garbage``: a 200 whose HTTP body is not JSON at all.

The OpenAI Batch API is there too: ``POST /v1/files`` (multipart upload), ``POST /v1/batches``,
``GET /v1/batches/{id}`` (``validating``, then ``in_progress``, then ``batch_final`` once it has been polled
``batch_polls`` times), ``POST /v1/batches/{id}/cancel`` and ``GET /v1/files/{id}/content``. Its output is
built by running each input line's body through the same reply builder as a synchronous call, with faults
planted per ``custom_id`` (``batch_faults``): ``error`` (the line goes to the error file with a 500),
``truncated`` and ``missing`` as above. Batch endpoints are not counted in ``count`` nor numbered for
``faults``; they are listed in ``batch_log``.

``enum``/``const`` strings get one of their allowed values, integers with ``minimum``/``maximum`` stay in
range and numbers lie within theirs (else in [0, 1]) (all chosen by the same hash).
``bodies``, when given, are chat-completion response bodies served as they are, one per chat request in order
(recorded replies of real servers: fenced, prose-wrapped, cut at ``max_tokens``); once they run out, replies
are filled from the schema again. A request without a JSON schema (``--json-mode prompt`` or
``json_object``) is filled from the schema given in its prompt when ``ignore_schema`` is off, else answered
with prose around a fenced object, as a model without structured output tends to do.

``reply(model, prompt, schema)``, when given, may return the reply value itself (e.g. a chosen option);
``prompt`` is every message's text joined by newlines, and None falls back to the filled reply. Planted faults
apply to chosen replies too.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import default as email_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = ("okay", "sure", "thanks", "right", "alright", "indeed", "honestly", "anyway", "yes", "fine")
"""The few English words replies use (a test checks none is a state word of the catalog)."""

GEMINI_PATH = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")
BATCH_PATH = re.compile(r"^(?:/v1)?/(files|batches)(?:/([^/]+))?(?:/(content|cancel))?/?$")


class FakeLLMServer:
    """Start with ``with FakeLLMServer(faults={3: "429"}) as srv:``; ``srv.url`` is the base URL."""

    def __init__(self, faults: dict[int, str] | None = None, delay: float = 0.0, retry_after: float = 0.0,
                 reply: Callable[[str, str, dict[str, Any]], Any] | None = None, batch_polls: int = 3,
                 batch_faults: dict[str, str] | None = None, batch_final: str = "completed",
                 bodies: list[dict[str, Any]] | None = None, ignore_schema: bool = False) -> None:
        self.faults = dict(faults or {})
        self.bodies = list(bodies or [])
        self.ignore_schema = ignore_schema
        """Act like a server without structured output: ``response_format`` is dropped before answering."""
        self.batch_polls = batch_polls
        """A batch reaches ``batch_final`` on its ``batch_polls``-th retrieve (set it high to hold batches)."""
        self.batch_faults = dict(batch_faults or {})
        self.batch_final = batch_final
        self.files: dict[str, dict[str, Any]] = {}
        """Uploaded and generated files: ``{id: {"purpose", "filename", "data": bytes}}``."""
        self.batches: dict[str, dict[str, Any]] = {}
        """Batches by id: the batch object plus ``_polls`` and ``_lines`` (the parsed input lines)."""
        self.batch_log: list[dict[str, Any]] = []
        """Every Batch API request: method, path, headers (lower-cased names)."""
        self.reply = reply
        self.delay = delay
        self.retry_after = retry_after
        self.count = 0
        self.requests: list[dict[str, Any]] = []
        """Every request: path, headers (lower-cased names) and parsed body."""
        self._lock = threading.Lock()
        self._bodies_lock = threading.Lock()  # apart from _lock: batch replies are made while _lock is held
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

    @property
    def batches_created(self) -> int:
        return sum(1 for r in self.batch_log if r["method"] == "POST" and r["path"].rstrip("/").endswith("/batches"))

    def batch_input_bodies(self) -> list[dict[str, Any]]:
        """The ``body`` of every line of every submitted batch, in submission order."""
        return [ln["body"] for b in self.batches.values() for ln in b["_lines"]]

    def batch_route(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        """Answer one Batch API request (status, JSON or JSONL body)."""
        m = BATCH_PATH.match(path.split("?")[0])
        assert m is not None
        kind, ident, action = m.groups()
        with self._lock:
            self.batch_log.append({"method": method, "path": path, "headers": headers})
            if kind == "files" and method == "POST" and ident is None:
                return 200, json.dumps(self._upload(headers.get("content-type", ""), raw)).encode()
            if kind == "files" and method == "GET" and action == "content" and ident in self.files:
                return 200, self.files[ident]["data"]
            if kind == "batches" and method == "POST" and ident is None:
                return 200, json.dumps(self._create(json.loads(raw or b"{}"))).encode()
            if kind == "batches" and ident in self.batches and method == "GET" and action is None:
                return 200, json.dumps(self._poll(ident)).encode()
            if kind == "batches" and ident in self.batches and method == "POST" and action == "cancel":
                self.batches[ident]["status"] = "cancelled"
                return 200, json.dumps(_public(self.batches[ident])).encode()
        return 404, json.dumps({"error": {"code": 404, "message": f"no such object {path}",
                                          "type": "invalid_request_error"}}).encode()

    def _upload(self, content_type: str, raw: bytes) -> dict[str, Any]:
        msg = BytesParser(policy=email_policy).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        fields: dict[str, Any] = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True))
        filename, data = fields["file"]
        purpose = fields["purpose"][1].decode()
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = {"purpose": purpose, "filename": filename, "data": data}
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0, "filename": filename,
                "purpose": purpose, "status": "processed"}

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        source = self.files[body["input_file_id"]]
        lines = [json.loads(ln) for ln in source["data"].decode().splitlines() if ln.strip()]
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
            "input_file_id": body["input_file_id"], "completion_window": body["completion_window"],
            "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": 0,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"), "_polls": 0, "_lines": lines}
        return _public(self.batches[batch_id])

    def _poll(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return _public(batch)
        batch["_polls"] += 1
        if batch["_polls"] < self.batch_polls:
            batch["status"] = "validating" if batch["_polls"] == 1 else "in_progress"
            return _public(batch)
        batch["status"] = self.batch_final
        if self.batch_final == "failed":
            batch["errors"] = {"object": "list", "data": [{"code": "token_limit_exceeded", "message": "too big",
                                                           "line": None, "param": None}]}
            return _public(batch)
        done, failed = [], []
        for line in batch["_lines"][: None if self.batch_final == "completed" else len(batch["_lines"]) // 2]:
            fault = self.batch_faults.get(line["custom_id"])
            if fault == "error":
                err = {"error": {"message": "boom", "type": "server_error", "code": None}}
                failed.append({"id": f"batch_req_{line['custom_id']}", "custom_id": line["custom_id"],
                               "response": {"status_code": 500, "request_id": "req", "body": err}, "error": None})
                continue
            done.append({"id": f"batch_req_{line['custom_id']}", "custom_id": line["custom_id"],
                         "response": {"status_code": 200, "request_id": "req",
                                      "body": chat_reply(self, line["body"], fault)}, "error": None})
        for key, rows in (("output_file_id", done), ("error_file_id", failed)):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                self.files[file_id] = {"purpose": "batch_output", "filename": f"{batch_id}.jsonl", "data": data}
                batch[key] = file_id
        batch["request_counts"] = {"total": len(batch["_lines"]), "completed": len(done), "failed": len(failed)}
        return _public(batch)


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def chat_reply(srv: FakeLLMServer, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
    """The chat completion a request ``body`` gets (synchronously or as a batch line)."""
    with srv._bodies_lock:
        if srv.bodies:
            return srv.bodies.pop(0)
    messages = task_messages(body.get("messages", []))
    body = {**body, "messages": messages}
    prompt = json.dumps(messages, sort_keys=True)
    fmt = {} if srv.ignore_schema else body.get("response_format") or {}
    if fmt.get("type") != "json_schema":
        return _unstructured_reply(srv, body, prompt, fmt.get("type") == "json_object")
    schema = fmt["json_schema"]["schema"]
    chosen = srv.reply(str(body.get("model")), "\n".join(str(m.get("content", ""))
                                                         for m in body.get("messages", [])),
                       schema) if srv.reply else None
    text = _reply_text(schema, prompt, fault, chosen)
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                      "total_tokens": (len(prompt) + len(text)) // 4}}


FEEDBACK_START = "Your reply above could not be used"
"""How dimobench's retry-with-feedback turn starts (``prompts/backend/fix_reply.j2``)."""


def task_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without a trailing retry-with-feedback pair (the bad reply and the note on it).

    Replies are a function of the task, not of the retry: a run whose faults were retried then ends with the
    same bytes as a run without faults, which is what the fault tests compare.
    """
    if (len(messages) >= 2 and messages[-2].get("role") == "assistant"
            and str(messages[-1].get("content", "")).startswith(FEEDBACK_START)):
        return messages[:-2]
    return messages


def _prompt_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a prompt carries (``--json-mode prompt``): the last ``{`` ... ``}`` block of the system turn."""
    for m in body.get("messages", []):
        text = str(m.get("content", ""))
        if m.get("role") == "system" and "JSON Schema" in text:
            start = text.find("{", text.find("JSON Schema"))
            try:
                return dict(json.JSONDecoder().raw_decode(text, start)[0])
            except ValueError:
                return None
    return None


def _unstructured_reply(srv: FakeLLMServer, body: dict[str, Any], prompt: str, bare: bool) -> dict[str, Any]:
    """A reply without server-side structured output: the schema is read from the prompt (probe: none, so the
    model cannot know the constant), and the object comes bare (``json_object``) or fenced inside prose."""
    schema = _prompt_schema(body)
    if schema is None:
        text = "Hello! How can I help you today?"
    else:
        value = json.dumps(fill(schema, hashlib.sha256(prompt.encode()).hexdigest()))
        fenced = f"Sure! Here it is:\n```json\n{value}\n```\nHope this helps."
        text = value if bare and not srv.ignore_schema else fenced
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                      "total_tokens": (len(prompt) + len(text)) // 4}}


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
    if kind == "number":  # within minimum/maximum when given, else in [0, 1]
        frac = int(hashlib.sha256(f"{seed}{path}".encode()).hexdigest()[:4], 16) / 0xFFFF
        lo, hi = float(schema.get("minimum", 0.0)), float(schema.get("maximum", 1.0))
        return round(lo + (hi - lo) * frac, 4)
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

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without this, Nagle's algorithm holds the body back
            # until the client's delayed ACK (~40 ms a call)
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if BATCH_PATH.match(self.path.split("?")[0]):
                status, data = srv.batch_route("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, b"")
                return self._send(status, data)
            self._send(404, json.dumps({"error": {"code": 404, "message": f"no route {self.path}"}}).encode())

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if BATCH_PATH.match(self.path.split("?")[0]):  # the Batch API: not counted, never faulted by number
                status, data = srv.batch_route("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                                               raw)
                return self._send(status, data)
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
            if fault == "400":  # what some servers answer to a response_format they do not know
                err = {"error": {"code": 400, "message": "response_format is not supported", "type": "invalid_request"}}
                return self._send(400, json.dumps(err).encode())
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
            self._send(200, json.dumps(chat_reply(srv, body, fault)).encode())

        def _gemini(self, model: str, body: dict[str, Any], fault: str | None) -> None:
            contents = body.get("contents", [])
            if (len(contents) >= 2 and contents[-2].get("role") == "model"
                    and str((contents[-1].get("parts") or [{}])[0].get("text", "")).startswith(FEEDBACK_START)):
                body = {**body, "contents": contents[:-2]}  # as task_messages: the reply ignores the retry
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

