"""``--batch``: answer an LLM run's cache misses through the OpenAI Batch API instead of one call each.

Each group of jobs the run hands to :func:`dimobench.generate.rewrite._run` (generation: the bios, then sessions and
questions, whose prompts need the bios; verification: each round of checks) becomes one batch. Requests no
cache layer answers are written as JSONL batch input, one line per distinct request with ``custom_id`` the
job's item and ``body`` exactly what :meth:`OpenAIBackend.body` sends synchronously; the file is uploaded
(``files.create(purpose="batch")``) and submitted (``batches.create``, 24 h window, ``/v1/chat/completions``).
The batch id and the ``custom_id`` -> cache-key map are written atomically to
``<out>/.dimobench/batches/<name>.json`` before anything waits. The batch is then polled until it ends, its
output and error files are downloaded, and every line is validated with the same pydantic model and content
check as a synchronous reply; the good ones are stored in every cache layer under the key a synchronous call
uses, so a later synchronous run makes no call and writes the same bytes. Lines that failed or did not
validate are left out: the caller then makes them synchronously under the usual retry policy and records
what still fails.

A run killed or interrupted while it waits, or started with ``wait=False`` (``--no-wait``, which raises
:class:`BatchPending` once the batch is submitted), leaves its record; the next run (``--resume``) takes a
pending record whose requests cover what it still needs and polls that batch instead of submitting another.
A batch that fails as a whole (the provider rejected it) is a :class:`BackendError`; an expired or cancelled
one gives what it finished and the rest is made synchronously.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tenacity

from dimobench.backends.base import Usage, check_reply, parse_reply
from dimobench.backends.cache import CachedLLM, cacheable
from dimobench.backends.wire import redact
from dimobench.errors import BackendError, ConfigError, DimobenchError
from dimobench.suite.io import atomic_write_text

BATCH_DIR = "batches"
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
TERMINAL = ("completed", "failed", "expired", "cancelled")
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
"""The Batch API's limits on one input file."""
PROVIDERS = ("openai",)


@dataclass
class BatchOptions:
    """How batches are waited for."""

    wait: bool = True
    """False: submit, then raise :class:`BatchPending` instead of waiting (``--no-wait``)."""
    poll_s: float = 30.0
    """Seconds between two status checks."""
    progress: Callable[[str], None] | None = None
    """Called with a one-line status whenever it changes."""


class BatchPending(DimobenchError):
    """A batch is submitted or still running and the caller asked not to wait; ``--resume`` collects it."""

    def __init__(self, message: str, batch_id: str) -> None:
        super().__init__(message)
        self.batch_id = batch_id


_CURRENT: ContextVar[BatchOptions | None] = ContextVar("dimobench_batch", default=None)


@contextmanager
def batching(options: BatchOptions | None = None) -> Iterator[BatchOptions]:
    """Within this block, LLM runs send their cache misses as batches (for backends that support it)."""
    opts = options or BatchOptions()
    token = _CURRENT.set(opts)
    try:
        yield opts
    finally:
        _CURRENT.reset(token)


def current() -> BatchOptions | None:
    """The options of the enclosing :func:`batching` block, None outside one."""
    return _CURRENT.get()


def check_provider(spec: str, flag: str = "--generator") -> None:
    """Raise ``ConfigError`` unless ``spec`` names a provider with a batch API."""
    provider = spec.partition("/")[0]
    if provider not in PROVIDERS:
        raise ConfigError(f"--batch needs an openai/<model> {flag.lstrip('-')} (the OpenAI Batch API); "
                          f"{flag} is {spec}")


def collect(jobs: list[Any], llm: Any, ledger: Any, log: Any, options: BatchOptions) -> dict[str, Any]:
    """Answer the cache misses among ``jobs`` through one batch; return the validated replies by job item.

    Replies are stored in every cache layer of ``llm`` and counted in ``ledger`` as batch calls. Jobs left
    out (cached already, or whose line failed) are the caller's to make. Returns ``{}`` when ``llm`` has no
    batch API or ``log`` no run directory to keep the record in.
    """
    layers, backend = _layers(llm)
    path = getattr(log, "path", None)
    if backend is None or not layers or path is None:
        return {}
    pending: dict[str, list[Any]] = {}
    for job in jobs:
        if cacheable(job.request) and not any(layer.is_cached(job.request) for layer in layers):
            pending.setdefault(layers[0].key(job.request), []).append(job)
    if not pending:
        return {}
    folder = Path(path).parent / BATCH_DIR
    record = _find(folder, set(pending))
    batch = _retrieve(backend, record["batch_id"]) if record else None
    if record is not None and batch is None:  # unknown to this server (another --base-url?): never ask again
        _save(folder, {**record, "status": "not_found", "collected": True})
    if batch is None:
        record = _submit(backend, pending, folder, log)
        batch = _retrieve(backend, record["batch_id"])
        if batch is None:
            raise BackendError(f"{backend.spec}: batch {record['batch_id']} was created but cannot be retrieved")
    assert record is not None
    batch = _wait(backend, batch, record, options)
    if batch.status == "failed":  # rejected as a whole: report it; a rerun submits a new one
        _save(folder, {**record, "status": "failed", "collected": True})
        errors = "; ".join(f"{e.code}: {e.message}" for e in (batch.errors.data or [])) if batch.errors else ""
        raise BackendError(redact(f"{backend.spec}: batch {batch.id} failed ({errors or 'no reason given'}); "
                                  "rerun to submit a new one, or run without --batch"))
    lines = _download(backend, batch.output_file_id) + _download(backend, batch.error_file_id)
    got = _store(lines, record, pending, layers, ledger, log)
    _save(folder, {**record, "status": batch.status, "collected": True})
    log.write({"event": "batch", "batch_id": record["batch_id"], "status": batch.status,
               "requests": len(record["requests"]), "ok": len(got), "retried_sync": len(pending) - len(got)})
    return {job.item: parsed for key, parsed in got.items() for job in pending[key]}


def _layers(llm: Any) -> tuple[list[CachedLLM], Any]:
    """The cache layers around ``llm``'s backend (outermost first) and the backend, if it has a batch API."""
    layers = []
    while isinstance(llm, CachedLLM):
        layers.append(llm)
        llm = llm.inner
    ok = getattr(llm, "provider", None) in PROVIDERS and hasattr(llm, "body") and hasattr(llm, "client")
    return layers, (llm if ok else None)


def _find(folder: Path, keys: set[str]) -> dict[str, Any] | None:
    """The newest uncollected record whose requests cover ``keys``."""
    records = []
    for f in folder.glob("*.json"):
        try:
            records.append((f.stat().st_mtime, json.loads(f.read_text(encoding="utf-8"))))
        except (OSError, ValueError):
            continue  # a damaged record: its batch is simply not reused
    for _, rec in sorted(records, key=lambda r: r[0], reverse=True):
        if not rec.get("collected") and rec.get("batch_id") and keys <= set(rec.get("requests", {}).values()):
            return rec
    return None


def _save(folder: Path, record: dict[str, Any]) -> None:
    atomic_write_text(folder / f"{record['name']}.json", json.dumps(record, indent=1, sort_keys=True) + "\n")


def _submit(backend: Any, pending: dict[str, list[Any]], folder: Path, log: Any) -> dict[str, Any]:
    requests: dict[str, str] = {}
    lines = []
    for key, group in pending.items():
        custom_id = group[0].item if group[0].item not in requests else key
        requests[custom_id] = key
        lines.append(json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT,
                                 "body": backend.body(group[0].request)}, ensure_ascii=False))
    data = "".join(ln + "\n" for ln in lines)
    if len(lines) > MAX_REQUESTS or len(data.encode()) > MAX_BYTES:
        raise BackendError(f"{backend.spec}: a batch of {len(lines)} request(s), {len(data.encode())} bytes, is over "
                           f"the Batch API's limits ({MAX_REQUESTS} requests, {MAX_BYTES} bytes): run without --batch")
    name = "batch-" + hashlib.sha256("\n".join(sorted(pending)).encode()).hexdigest()[:16]
    atomic_write_text(folder / f"{name}.input.jsonl", data)
    uploaded = _call(backend, backend.client.files.create, file=(f"dimobench-{name}.jsonl", data.encode(),
                                                                 "application/jsonl"), purpose="batch")
    batch = _call(backend, backend.client.batches.create, input_file_id=uploaded.id, endpoint=ENDPOINT,
                  completion_window=COMPLETION_WINDOW, metadata={"created_by": "dimobench", "name": name})
    record = {"name": name, "batch_id": batch.id, "input_file_id": uploaded.id, "endpoint": ENDPOINT,
              "generator": backend.spec, "requests": requests, "submitted_at": round(time.time(), 3),
              "status": batch.status, "collected": False}
    _save(folder, record)
    log.write({"event": "batch_submitted", "batch_id": batch.id, "name": name, "requests": len(requests)})
    return record


def _wait(backend: Any, batch: Any, record: dict[str, Any], options: BatchOptions) -> Any:
    said = ""
    while batch.status not in TERMINAL:
        counts = batch.request_counts
        done = f", {counts.completed + counts.failed}/{counts.total} done" if counts and counts.total else ""
        line = f"batch {batch.id} ({len(record['requests'])} request(s)): {batch.status}{done}"
        if options.progress is not None and line != said:
            options.progress(line)
        said = line
        if not options.wait:
            raise BatchPending(f"{line}; run the same command with --resume to collect it", batch.id)
        time.sleep(max(0.0, options.poll_s))
        batch = _retrieve(backend, batch.id)
        if batch is None:
            raise BackendError(f"{backend.spec}: batch {record['batch_id']} disappeared while it was polled")
    return batch


def _store(lines: list[dict[str, Any]], record: dict[str, Any], pending: dict[str, list[Any]],
           layers: list[CachedLLM], ledger: Any, log: Any) -> dict[str, Any]:
    """Validate each output line; store and count the good ones. Returns parsed replies by cache key."""
    got: dict[str, Any] = {}
    for line in lines:
        key = record["requests"].get(str(line.get("custom_id")))
        if key is None or key not in pending or key in got:
            continue
        job = pending[key][0]
        try:
            text, usage = _line_reply(line)
        except Exception as exc:  # an error line, not billed; retried synchronously by the caller
            log.write({"event": "call", "item": job.item, "ok": False, "batch_id": record["batch_id"],
                       "error": redact(str(exc))})
            continue
        try:
            parsed = check_reply(job.request, parse_reply(text, job.request.response_model), text or "")
        except Exception as exc:  # a reply that was billed but cannot be used: retried synchronously
            ledger.bill(usage.input_tokens, usage.output_tokens, batch=True)
            log.write({"event": "call", "item": job.item, "ok": False, "batch_id": record["batch_id"],
                       "error": redact(str(exc)), **usage.model_dump()})
            continue
        entry = {"provider": layers[0].provider, "model": layers[0].model, "text": text,
                 "usage": usage.model_dump()}
        for layer in reversed(layers):
            layer.cache.put(key, entry)
        got[key] = parsed
        ledger.record(cached=False, attempts=1, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                      batch=True)
        for _ in pending[key][1:]:  # the same request twice in one run: the others are answered by the first
            ledger.record(cached=True, attempts=0)
        log.write({"event": "call", "item": job.item, "ok": True, "attempts": 1, "batch_id": record["batch_id"],
                   **usage.model_dump()})
    return got


def _line_reply(line: dict[str, Any]) -> tuple[str | None, Usage]:
    """The reply text and usage of one output line; raises for an error line or an unusable body."""
    from openai.types.chat import ChatCompletion

    from dimobench.backends.openai import completion_text

    response = line.get("response") or {}
    error = line.get("error") or (response.get("body") or {}).get("error")
    if error or response.get("status_code") != 200:
        detail = error.get("message") if isinstance(error, dict) else error
        raise BackendError(f"batch line failed ({response.get('status_code')}): {str(detail)[:200]}")
    return completion_text(ChatCompletion.model_validate(response.get("body")))


def _download(backend: Any, file_id: str | None) -> list[dict[str, Any]]:
    if not file_id:
        return []
    try:
        content = _call(backend, backend.client.files.content, file_id)
    except _NotFound:  # expired (output files are kept for a limited time): its requests are made synchronously
        return []
    out = []
    for raw in content.text.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # its request is made synchronously
        if isinstance(line, dict):
            out.append(line)
    return out


class _NotFound(BackendError):
    pass


def _retrieve(backend: Any, batch_id: str) -> Any:
    """The batch's current state; None when the server does not know it (then a new one is submitted)."""
    try:
        return _call(backend, backend.client.batches.retrieve, batch_id)
    except _NotFound:
        return None


def _call(backend: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """One SDK call under the backend's retry policy; a final failure is a one-line ``BackendError``."""
    def attempt() -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if isinstance(exc, backend._openai.NotFoundError):
                raise _NotFound(f"not found (404; does this server have the Batch API?): "
                                f"{str(exc).replace(chr(10), ' ')[:300]}") from None
            raise backend._translate(exc) from None

    retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(backend.max_attempts), wait=backend._wait,
                                 retry=tenacity.retry_if_exception(backend.should_retry), reraise=True)
    try:
        return retrying(attempt)
    except _NotFound as exc:
        raise _NotFound(redact(f"{backend.spec}: batch API: {exc}")) from None
    except BackendError as exc:
        raise BackendError(redact(f"{backend.spec}: batch API: {exc}")) from None


__all__ = ["BatchOptions", "BatchPending", "batching", "check_provider", "collect", "current"]
