"""The LLM branch of generation: rewrite the offline suite's text with the generator backend.

Runs after stages 1-5 (whose plan and labels it never touches): first one bio per persona, then every
dialogue session and every batch of questions, on a bounded thread pool. Results are applied in plan order,
so the bytes depend only on the replies, and the reply cache makes a rerun or a ``--resume`` after a kill
repeat no finished call. A call that still fails after its retries is recorded, its item keeps the offline
text, and the suite is marked ``partial``. Token and cost totals go to ``.dimobench/run.log.jsonl``.

Inside :func:`dimobench.backends.batch.batching` (``--batch``), each group of calls first sends its cache
misses as one OpenAI batch; what the batch answers is cached, and the rest goes through the same calls.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dimobench import llm_jobs, prompts
from dimobench.backends import batch as batch_api
from dimobench.backends.base import ChatLLM, redact
from dimobench.backends.batch import BatchOptions
from dimobench.backends.usage import Ledger, cost_usd
from dimobench.catalog import Catalog
from dimobench.jsonl import atomic_write_text
from dimobench.schema import Persona, QAItem, Turn

NAME = "llm_render"
VERSION = "1"
RUN_LOG = "run.log.jsonl"
FAILURES = "failures.jsonl"
OUTPUT_TOKENS = {"bio": 120, "session": 70, "questions": 30}
"""Rough output tokens per bio, per exchange and per question, for estimates."""


def fingerprint(spec: str, upstream: str) -> str:
    payload = json.dumps({"stage": NAME, "version": VERSION, "generator": spec, "upstream": upstream,
                          "prompts": prompts.prompt_hashes(*llm_jobs.PROMPTS)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class RunLog:
    """Appends one JSON line per event to ``.dimobench/run.log.jsonl`` (flushed each time; wall clock allowed)."""

    def __init__(self, state: Path) -> None:
        self.path = state / RUN_LOG
        self._lock = threading.Lock()

    def write(self, event: dict[str, Any]) -> None:
        line = redact(json.dumps({"time": round(time.time(), 3), **event}, ensure_ascii=False)) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()


def render(seed: int, catalog: Catalog, personas: list[Persona], turns: list[Turn], qa: list[QAItem],
           llm: ChatLLM, state: Path, concurrency: int = 8, batch: BatchOptions | None = None) -> dict[str, Any]:
    """Rewrite the text of ``personas``, ``turns`` and ``qa``; return the new lists, failures and totals.

    ``batch`` sends cache misses through the provider's batch API (default: the enclosing ``batching`` block's).
    """
    ledger = Ledger(llm.spec)
    log = RunLog(state)
    failures: list[dict[str, str]] = []
    bios_jobs = llm_jobs.bio_jobs(seed, personas)
    got = _run(bios_jobs, llm, ledger, log, failures, concurrency, batch)
    bios = {p.persona_id: (got[j.item].bio if j.item in got else llm_jobs.fallback_bio(p))
            for p, j in zip(personas, bios_jobs)}
    rest = (llm_jobs.session_jobs(seed, catalog, personas, turns, bios)
            + llm_jobs.question_jobs(seed, catalog, personas, qa))
    got.update(_run(rest, llm, ledger, log, failures, concurrency, batch))

    new_personas = [p.model_copy(update={"profile": {**p.profile, "bio": bios[p.persona_id]}})
                    if f"{p.persona_id}/bio" in got else p for p in personas]
    new_text: dict[tuple[str, int], tuple[str, str]] = {}
    new_questions: dict[str, str] = {}
    for job in rest:
        if job.item not in got:
            continue
        if job.kind == "session":
            for t, ex in zip(job.targets, got[job.item].turns, strict=True):
                new_text[(t.persona_id, t.turn)] = (ex.user.strip(), ex.assistant.strip())
        else:
            for q, text in zip(job.targets, got[job.item].questions, strict=True):
                new_questions[q.qa_id] = text.strip()
    new_turns = [t.model_copy(update=dict(zip(("user", "assistant"), new_text[(t.persona_id, t.turn)])))
                 if (t.persona_id, t.turn) in new_text else t for t in turns]
    new_qa = [q.model_copy(update={"question": new_questions[q.qa_id]}) if q.qa_id in new_questions else q
              for q in qa]
    atomic_write_text(state / FAILURES, "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in failures))
    summary = {"event": "generate", **ledger.summary(), "jobs": len(bios_jobs) + len(rest)}
    log.write(summary)
    return {"personas": new_personas, "turns": new_turns, "qa": new_qa, "failures": failures, "summary": summary}


def _run(jobs: list[llm_jobs.Job], llm: ChatLLM, ledger: Ledger, log: RunLog, failures: list[dict[str, str]],
         concurrency: int, batch: BatchOptions | None = None) -> dict[str, Any]:
    """Parsed replies by job item (failed jobs are left out and listed in ``failures``), in plan order."""
    options = batch if batch is not None else batch_api.current()
    answered = batch_api.collect(jobs, llm, ledger, log, options) if options is not None and jobs else {}

    def one(job: llm_jobs.Job) -> tuple[str, Any]:
        try:
            resp = llm.complete(job.request)
        except Exception as exc:  # recorded, never fatal: the item keeps its offline text
            msg = redact(str(exc))
            ledger.record(cached=False, attempts=0, failed=True)
            log.write({"event": "call", "item": job.item, "ok": False, "error": msg})
            return job.item, exc
        ledger.record(cached=resp.cached, attempts=resp.attempts, input_tokens=resp.usage.input_tokens,
                      output_tokens=resp.usage.output_tokens)
        if not resp.cached:
            log.write({"event": "call", "item": job.item, "ok": True, "attempts": resp.attempts,
                       **resp.usage.model_dump()})
        return job.item, resp.parsed

    out: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for item, result in pool.map(one, [j for j in jobs if j.item not in answered]):  # map keeps plan order
            if isinstance(result, Exception):
                failures.append({"item": item, "error": redact(str(result))})
            else:
                out[item] = result
    return {j.item: answered.get(j.item, out.get(j.item)) for j in jobs if j.item in answered or j.item in out}


def estimate(seed: int, catalog: Catalog, personas: list[Persona], turns: list[Turn], qa: list[QAItem],
             spec: str, cached: Any, batch: bool = False) -> dict[str, Any]:
    """Calls the render would make and their estimated cost; ``cached(request)`` returns a cached reply or None.

    Session prompts depend on the bios: a cached bio is used as is, a missing one is stood in for by the
    offline fallback (those sessions count as calls to make).
    """
    bios_jobs = llm_jobs.bio_jobs(seed, personas)
    hits = {j.item: cached(j.request) for j in bios_jobs}
    bios = {p.persona_id: hits[j.item].bio if hits[j.item] is not None else llm_jobs.fallback_bio(p)
            for p, j in zip(personas, bios_jobs)}
    jobs = bios_jobs + llm_jobs.session_jobs(seed, catalog, personas, turns, bios) \
        + llm_jobs.question_jobs(seed, catalog, personas, qa)
    todo = [j for j in jobs if cached(j.request) is None]
    tokens_in = sum(len(m.content) for j in todo for m in j.request.messages) // 4
    tokens_out = sum(OUTPUT_TOKENS[j.kind] * max(1, len(j.targets) if j.kind != "bio" else 1) for j in todo)
    return {"generator": spec, "jobs": len(jobs), "calls": len(todo), "cached": len(jobs) - len(todo),
            "input_tokens": tokens_in, "output_tokens": tokens_out,
            "cost_usd_estimate": cost_usd(spec, tokens_in, tokens_out, batch=batch)}


VERIFY_OUTPUT_TOKENS = {"verify": 330, "check": 60}
"""Rough output tokens of one item judgement (six criteria) and of one turn check, for estimates."""


class _Uncached:
    """A backend that has nothing to say: behind the reply cache it answers only what the cache holds."""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def complete(self, request: Any) -> Any:
        from dimobench.errors import BackendError

        raise BackendError("not in the cache")


class _Recorder:
    """Stands in for :class:`dimobench.verify.llm.Calls`: records the jobs, answers none."""

    def __init__(self) -> None:
        self.jobs: list[llm_jobs.Job] = []
        self.failures: list[dict[str, str]] = []

    def run(self, jobs: list[llm_jobs.Job], llm: Any, ledger: Any) -> dict[str, Any]:
        self.jobs.extend(jobs)
        return {}


def estimate_verify(seed: int, catalog: Catalog, personas: list[Persona], schedules: list[Any], turns: list[Turn],
                    qa: list[QAItem], generator: str, verifier: str, cache: Any, scratch: Path,
                    batch: bool = False) -> dict[str, Any]:
    """The stage-6 calls an LLM verifier would make after this generation, built as the verifier builds them.

    One call per QA item (:func:`dimobench.verify.llm.item_jobs`) and, when an LLM writes the text, one check
    per rendered cue or confounder turn (:func:`dimobench.verify.llm_turns.check_and_rerender`); turns that fail
    their check add up to ``rerenders_max`` re-renders and as many re-checks, which depend on the replies and
    are not counted. The requests carry the final text: when the reply cache holds every generation reply it is
    rebuilt from there (in ``scratch``) and cached verifier replies are counted; otherwise the offline text
    stands in for sizes and every call counts as one to make (``exact`` is False).
    """
    from dimobench.backends.cache import CachedLLM, ReplyCache, cache_key, cacheable
    from dimobench.schema import Manifest
    from dimobench.suite import Suite
    from dimobench.verify import llm as verify_llm
    from dimobench.verify import llm_turns
    from dimobench.verify.runner import check_criteria

    exact = True
    if generator != "offline":
        got = render(seed, catalog, personas, turns, qa, CachedLLM(_Uncached(generator), cache), scratch,  # type: ignore[arg-type]
                     batch=None)
        exact = not got["failures"]
        if exact:
            personas, turns, qa = got["personas"], got["turns"], got["qa"]
    suite = Suite(scratch, Manifest.model_construct(config={"seed": seed}), personas, schedules, turns, qa)
    items = verify_llm.item_jobs(suite, turns, seed, check_criteria(None))
    recorder = _Recorder()
    if generator != "offline":
        llm_turns.check_and_rerender(suite, seed, None, None, recorder,  # type: ignore[arg-type]
                                     {"verifier": Ledger(verifier), "generator": Ledger(generator)})
    jobs = items + recorder.jobs
    provider, _, model = verifier.partition("/")
    store: ReplyCache = cache

    def hit(request: Any) -> bool:
        return exact and cacheable(request) and store.get(cache_key(provider, model, request)) is not None

    todo = [j for j in jobs if not hit(j.request)]
    tokens_in = sum(len(m.content) for j in todo for m in j.request.messages) // 4
    tokens_out = sum(VERIFY_OUTPUT_TOKENS.get(j.kind, 60) for j in todo)
    return {"verifier": verifier, "jobs": len(jobs), "items": len(items), "turn_checks": len(recorder.jobs),
            "calls": len(todo), "cached": len(jobs) - len(todo), "exact": exact,
            "rerenders_max": llm_turns.MAX_RERENDERS * len(recorder.jobs), "input_tokens": tokens_in,
            "output_tokens": tokens_out, "cost_usd_estimate": cost_usd(verifier, tokens_in, tokens_out, batch=batch),
            "batch": batch and provider in batch_api.PROVIDERS}
