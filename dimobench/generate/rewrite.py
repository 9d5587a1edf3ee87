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
from pathlib import Path
from typing import Any

from dimobench import prompts
from dimobench.backends.base import ChatLLM
from dimobench.backends.batch import BatchOptions
from dimobench.backends.jobs import RunLog, run_jobs
from dimobench.backends.usage import Ledger, cost_usd
from dimobench.catalog import Catalog
from dimobench.generate import rewrite_jobs
from dimobench.suite.io import atomic_write_text
from dimobench.suite.schema import Persona, QAItem, Turn
from dimobench.suite.textspec import fallback_bio

NAME = "llm_render"
"""The stage name in manifests and fingerprints (kept from format v1 so existing suites still resume)."""
VERSION = "1"
FAILURES = "failures.jsonl"
OUTPUT_TOKENS = {"bio": 120, "session": 70, "questions": 30}
"""Rough output tokens per bio, per exchange and per question, for estimates."""


def fingerprint(spec: str, upstream: str) -> str:
    """Fingerprint of the LLM rendering: its version, the generator, the upstream fingerprint and the prompt hashes."""
    payload = json.dumps({"stage": NAME, "version": VERSION, "generator": spec, "upstream": upstream,
                          "prompts": prompts.prompt_hashes(*rewrite_jobs.PROMPTS)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def rewrite_text(seed: int, catalog: Catalog, personas: list[Persona], turns: list[Turn], qa: list[QAItem],
           llm: ChatLLM, state: Path, concurrency: int = 8, batch: BatchOptions | None = None) -> dict[str, Any]:
    """Rewrite the text of ``personas``, ``turns`` and ``qa``; return the new lists, failures and totals.

    ``batch`` sends cache misses through the provider's batch API (default: the enclosing ``batching`` block's).
    """
    ledger = Ledger(llm.spec)
    log = RunLog(state)
    failures: list[dict[str, str]] = []
    bios_jobs = rewrite_jobs.bio_jobs(seed, personas)
    got = run_jobs(bios_jobs, llm, ledger, log, failures, concurrency, batch)
    bios = {p.persona_id: (got[j.item].bio if j.item in got else fallback_bio(p))
            for p, j in zip(personas, bios_jobs)}
    rest = (rewrite_jobs.session_jobs(seed, catalog, personas, turns, bios)
            + rewrite_jobs.question_jobs(seed, catalog, personas, qa))
    got.update(run_jobs(rest, llm, ledger, log, failures, concurrency, batch))

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


def estimate(seed: int, catalog: Catalog, personas: list[Persona], turns: list[Turn], qa: list[QAItem],
             spec: str, cached: Any, batch: bool = False) -> dict[str, Any]:
    """Calls the render would make and their estimated cost; ``cached(request)`` returns a cached reply or None.

    Session prompts depend on the bios: a cached bio is used as is, a missing one is stood in for by the
    offline fallback (those sessions count as calls to make).
    """
    bios_jobs = rewrite_jobs.bio_jobs(seed, personas)
    hits = {j.item: cached(j.request) for j in bios_jobs}
    bios = {p.persona_id: hits[j.item].bio if hits[j.item] is not None else fallback_bio(p)
            for p, j in zip(personas, bios_jobs)}
    jobs = bios_jobs + rewrite_jobs.session_jobs(seed, catalog, personas, turns, bios) \
        + rewrite_jobs.question_jobs(seed, catalog, personas, qa)
    todo = [j for j in jobs if cached(j.request) is None]
    tokens_in = sum(len(m.content) for j in todo for m in j.request.messages) // 4
    tokens_out = sum(OUTPUT_TOKENS[j.kind] * max(1, len(j.targets) if j.kind != "bio" else 1) for j in todo)
    return {"generator": spec, "jobs": len(jobs), "calls": len(todo), "cached": len(jobs) - len(todo),
            "input_tokens": tokens_in, "output_tokens": tokens_out,
            "cost_usd_estimate": cost_usd(spec, tokens_in, tokens_out, batch=batch)}
