"""The one call loop every LLM role shares: jobs, the metered call, and the run log.

Generation's rewrite, the LLM verifier and its turn re-renders all hand a list of :class:`Job` to
:func:`run_jobs`: replies come back in plan order on a bounded thread pool, every call is metered into a
:class:`~dimobench.backends.usage.Ledger`, a call that still fails after its retries is recorded (never
raised), and, inside :func:`dimobench.backends.batch.batching`, cache misses first go out as one batch.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dimobench import strictjson
from dimobench.backends import batch as batch_api
from dimobench.backends import progress
from dimobench.backends.base import CallFailed, ChatLLM, Request
from dimobench.backends.batch import BatchOptions
from dimobench.backends.limits import RunAborted
from dimobench.backends.usage import Ledger
from dimobench.backends.wire import redact
from dimobench.errors import InputError
from dimobench.suite.outdir import STATE_DIR  # one name for the run-state folder (stage outputs, run log, failures)

RUN_LOG = "run.log.jsonl"


@dataclass
class Job:
    """One request and where its reply goes."""

    item: str
    """``p01/bio``, ``p01/session-0003``, ``p01/qa-0001`` (first question of the batch)."""
    kind: str
    request: Request
    targets: list[Any]
    """The turns (session) or questions (batch) the reply rewrites; the persona for a bio."""


class RunLog:
    """Appends one JSON line per event to ``.dimobench/run.log.jsonl`` (flushed each time; wall clock allowed)."""

    def __init__(self, state: Path) -> None:
        self.path = state / RUN_LOG
        self._lock = threading.Lock()

    def write(self, event: dict[str, Any]) -> None:
        """Append ``event`` with the time, keys redacted."""
        line = redact(json.dumps({"time": round(time.time(), 3), **event}, ensure_ascii=False)) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()


def read_state(path: Path) -> Any | None:
    """A run-state record (``.dimobench/<stage>.json``) read for ``--resume``; None when there is none yet.

    A damaged one (not UTF-8, not strict JSON, not an object) is an ``InputError`` naming it: resuming on top
    of it could mix runs, so the user decides (delete the file to redo that step, or start over with --force).
    """
    if not path.exists():
        return None
    try:
        data = strictjson.loads(strictjson.read_text(path), path)
    except InputError as exc:
        raise InputError(f"damaged run state, {exc.message} (delete it to redo that step, or use --force)",
                         path, exc.line) from None
    if not isinstance(data, dict):
        raise InputError("damaged run state, not a JSON object (delete it to redo that step, or use --force)",
                         path)
    return data


def _records(path: Path) -> list[dict[str, Any]]:
    """The objects of a run-state JSON Lines file; a damaged line is an ``InputError`` naming file and line.

    A last line without its newline is what a kill during an append leaves: it is skipped, not an error.
    """
    out = []
    cut = strictjson.read_bytes(path).rsplit(b"\n", 1)[-1] != b""
    lines = list(strictjson.jsonl(path))
    for i, (n, value) in enumerate(lines):
        if isinstance(value, InputError) and cut and i == len(lines) - 1:
            break
        if isinstance(value, InputError):
            raise InputError(f"damaged run log, {value.message} (delete the line or the file)", path, n)
        out.append(value)
    return out


def last_event(out: str | Path, event: str, failures: str | None = None) -> dict[str, Any] | None:
    """The latest ``event`` record of ``out/.dimobench/run.log.jsonl`` (None without one).

    With ``failures`` (a file name in the same folder), its records are attached as ``failed_items``.
    """
    state = Path(out) / STATE_DIR
    if not (state / RUN_LOG).exists():
        return None
    record = next((r for r in reversed(_records(state / RUN_LOG)) if r.get("event") == event), None)
    if record is None or failures is None:
        return record
    fails = state / failures
    record["failed_items"] = _records(fails) if fails.exists() else []
    return record


def run_jobs(jobs: list[Job], llm: ChatLLM, ledger: Ledger, log: RunLog, failures: list[dict[str, str]],
             concurrency: int, batch: BatchOptions | None = None) -> dict[str, Any]:
    """Parsed replies by job item (failed jobs are left out and listed in ``failures``), in plan order."""
    options = batch if batch is not None else batch_api.current()
    answered = batch_api.collect(jobs, llm, ledger, log, options) if options is not None and jobs else {}

    def one(job: Job) -> tuple[str, Any]:
        try:
            resp = ledger.call(llm, job.request)
        except RunAborted:  # no server, or the run's time is up: the run ends here, not just this job
            raise
        except Exception as exc:  # recorded, never fatal: the caller decides what a missing reply means
            spent = {"attempts": exc.attempts, **exc.usage.model_dump()} if isinstance(exc, CallFailed) else {}
            log.write({"event": "call", "item": job.item, "ok": False, "error": redact(str(exc)), **spent})
            return job.item, exc
        if not resp.cached:
            log.write({"event": "call", "item": job.item, "ok": True, "attempts": resp.attempts,
                       **resp.usage.model_dump()})
        return job.item, resp.parsed

    tracker = progress.current()
    if tracker is not None:
        tracker.plan(sum(1 for j in jobs if j.item not in answered))
    out: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for item, result in pool.map(one, [j for j in jobs if j.item not in answered]):  # map keeps plan order
            if isinstance(result, Exception):
                failures.append({"item": item, "error": redact(str(result))})
            else:
                out[item] = result
    return {j.item: answered.get(j.item, out.get(j.item)) for j in jobs if j.item in answered or j.item in out}
