"""The harness: replay each persona's turns in order, ask each question right after its ask_turn, record answers.

A system sees only the public turn fields (``turn``, ``session``, ``timestamp``, ``user``, ``assistant``) and
the question text; annotations and gold fields stay benchmark-side. Every system is answered by the same
answerer with the same k. A failure inside a system becomes one :class:`SystemFailure` line naming the system,
persona, turn and call.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from dimobench.evaluate.answerer import OfflineAnswerer
from dimobench.evaluate.protocol import Recalled, SystemFailure, normalise_items, public_turn
from dimobench.suite.load import Suite

if TYPE_CHECKING:
    from dimobench.evaluate.llm_answerer import LLMAnswerer

ProgressFn = Callable[[str, str, str, int, int], None]
"""progress(system, suite, persona, turn, turns done in this system/suite)."""


@dataclass
class SystemRun:
    """Everything one system produced on one suite."""

    system: str
    suite: str
    answers: list[dict[str, Any]] = field(default_factory=list)
    observe_ms: list[float] = field(default_factory=list)
    recall_ms: list[float] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    """stats() samples: {persona_id, turn, **stats} every ``stats_every`` turns and at each persona's end."""
    k: int = 10
    """Items asked of recall per question."""


def safe_name(system: str) -> str:
    """A file-name-safe form of a system name (``precomem:no_profile`` -> ``precomem_no_profile``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", system).strip("_") or "system"


def _call(system_name: str, where: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except SystemFailure:
        raise
    except Exception as exc:
        msg = str(exc).splitlines()[0] if str(exc) else ""
        raise SystemFailure(f"system {system_name!r} failed in {where}: {type(exc).__name__}: {msg}") from exc


def _plain_stats(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(v, (int, float, str, bool)) or v is None}


UnitFn = Callable[[str], "SystemRun | None"]
"""reuse(persona_id): a unit finished by an earlier run, or None."""
KeepFn = Callable[[str, "SystemRun"], "SystemRun"]
"""keep(persona_id, unit): store a finished unit; returns it as it will be read back."""


def run_system(system_name: str, system: Any, suite: Suite, suite_key: str, answerer: OfflineAnswerer | Any,
               k: int, stats_every: int = 10, progress: ProgressFn | None = None,
               reuse: UnitFn | None = None, keep: KeepFn | None = None) -> SystemRun:
    """Evaluate one system on one suite (every persona, in suite order).

    Each persona is a unit: ``reuse`` may hand back one finished earlier (it is not replayed), ``keep`` stores
    each one replayed here as soon as it is done. An answerer with ``choose_batch`` (the LLM answerer) gets
    each persona's questions, with the items recalled at their ask turns, once that persona's replay is done;
    rows keep question order either way.
    """
    run = SystemRun(system_name, suite_key, k=k)
    if hasattr(system, "bind_suite") and getattr(system, "needs_latent_plan", False):
        system.bind_suite(suite)  # only the built-in oracle reads the latent plan
    _bind_answerer(answerer, suite)
    questions: dict[str, dict[int, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for q in suite.qa:
        questions[q.persona_id][q.ask_turn].append(q)
    done = 0
    for persona in suite.personas:
        pid = persona.persona_id
        part = reuse(pid) if reuse is not None else None
        if part is None:
            part = _run_persona(system_name, system, suite, suite_key, pid, questions.get(pid, {}), answerer, k,
                                stats_every, progress, done)
            if keep is not None:
                part = keep(pid, part)
        elif progress is not None:
            for turn in suite.turns_of(pid):
                progress(system_name, suite_key, pid, turn.turn, done + 1)
        done += len(suite.turns_of(pid))
        for name in ("answers", "observe_ms", "recall_ms", "memory"):
            getattr(run, name).extend(getattr(part, name))
    return run


def run_persona(system_name: str, system: Any, suite: Suite, suite_key: str, pid: str, answerer: Any, k: int,
                stats_every: int = 10, progress: ProgressFn | None = None) -> SystemRun:
    """Replay one persona (one unit) on its own, as :func:`run_system` would inside its loop."""
    if hasattr(system, "bind_suite") and getattr(system, "needs_latent_plan", False):
        system.bind_suite(suite)
    _bind_answerer(answerer, suite)
    pending: dict[int, list[Any]] = defaultdict(list)
    for q in suite.qa:
        if q.persona_id == pid:
            pending[q.ask_turn].append(q)
    return _run_persona(system_name, system, suite, suite_key, pid, pending, answerer, k, stats_every, progress, 0)


def _bind_answerer(answerer: Any, suite: Suite) -> None:
    """An answerer that reads items through the suite's catalog (``gloss``) learns which suite it answers for;
    it never sees the plan, the gold or the question's trait."""
    bind = getattr(answerer, "bind_suite", None)
    if callable(bind):
        bind(suite)


def _run_persona(system_name: str, system: Any, suite: Suite, suite_key: str, pid: str,
                 pending: dict[int, list[Any]], answerer: Any, k: int, stats_every: int,
                 progress: ProgressFn | None, done: int) -> SystemRun:
    """Replay one persona from ``reset`` to its last turn: one unit."""
    run = SystemRun(system_name, suite_key, k=k)
    has_answer = callable(getattr(system, "answer", None))
    has_stats = callable(getattr(system, "stats", None))
    batch = callable(getattr(answerer, "choose_batch", None))  # LLM answerers: after the persona's replay
    deferred: list[tuple[int, Any, list[Recalled]]] = []
    turns = suite.turns_of(pid)
    _call(system_name, f"reset at persona {pid}", system.reset, pid)
    last_turn = turns[-1].turn if turns else 0
    for i, turn in enumerate(turns):
        where = f"persona {pid} turn {turn.turn}"
        t0 = time.perf_counter()
        _call(system_name, f"observe at {where}", system.observe, public_turn(turn))
        run.observe_ms.append((time.perf_counter() - t0) * 1000)
        asked = list(pending.get(turn.turn, []))
        if i == len(turns) - 1:  # questions past the last turn are asked at the end
            asked += [q for t, qs in pending.items() if t > last_turn for q in qs]
        for q in asked:
            if batch and not (has_answer and q.options):
                items = _recall(system_name, system, q, k, run, where)
                deferred.append((len(run.answers), q, items))
                run.answers.append({})  # filled in once the persona's replay is done
            else:
                run.answers.append(_ask(system_name, system, q, answerer, k, has_answer, run, where))
        if has_stats and (turn.turn % stats_every == 0 or i == len(turns) - 1):
            stats = _plain_stats(_call(system_name, f"stats at {where}", system.stats))
            run.memory.append({"persona_id": pid, "turn": turn.turn, **stats})
        if progress is not None:
            progress(system_name, suite_key, pid, turn.turn, done + i + 1)
    if deferred:  # recall results are fixed by now, so the answers may run concurrently, in question order
        # only an answerer with choose_batch defers questions (``batch`` above), i.e. the LLM answerer
        choices = cast("LLMAnswerer", answerer).choose_batch([(q, items) for _, q, items in deferred])
        for (pos, q, items), choice in zip(deferred, choices, strict=True):
            run.answers[pos] = _row(run, system_name, q, choice.index, choice.support, choice.mode, items,
                                    choice.extra, choice.correct)
    return run


def _recall(system_name: str, system: Any, q: Any, k: int, run: SystemRun, where: str) -> list[Recalled]:
    t0 = time.perf_counter()
    raw = _call(system_name, f"recall at {where} ({q.qa_id})", system.recall, q.question, k)
    run.recall_ms.append((time.perf_counter() - t0) * 1000)
    try:
        return normalise_items(raw, k)
    except ValueError as exc:
        raise SystemFailure(f"system {system_name!r} returned a bad recall at {where} ({q.qa_id}): {exc}") from None


def _ask(system_name: str, system: Any, q: Any, answerer: Any, k: int, has_answer: bool,
         run: SystemRun, where: str) -> dict[str, Any]:
    items = _recall(system_name, system, q, k, run, where)
    support: list[Any] = []
    mode = "system"
    if has_answer and q.options:
        chosen = _call(system_name, f"answer at {where} ({q.qa_id})", system.answer, q.question, list(q.options))
        if not isinstance(chosen, int) or isinstance(chosen, bool) or not 0 <= chosen < len(q.options):
            raise SystemFailure(f"system {system_name!r} answered {chosen!r} at {where} ({q.qa_id}): "
                                f"expected an option index 0..{len(q.options) - 1}")
    else:
        choice = answerer.choose(q.question, list(q.options), items)
        chosen, support, mode = choice.index, choice.support, choice.mode
    return _row(run, system_name, q, chosen, support, mode, items)


def _row(run: SystemRun, system_name: str, q: Any, chosen: int | None, support: list[Any], mode: str,
         items: list[Recalled], extra: dict[str, Any] | None = None, correct: bool | None = None) -> dict[str, Any]:
    """One answers.jsonl row; ``extra`` (LLM answerer fields) goes last, ``correct`` overrides when given."""
    if correct is None:
        correct = (chosen == q.answer_index) if q.answer_index is not None and q.options else None
    return {
        "suite": run.suite, "system": system_name, "qa_id": q.qa_id, "persona_id": q.persona_id,
        "ask_turn": q.ask_turn, "qa_type": q.qa_type, "phase": q.phase, "trait_id": q.trait_id,
        "drift_id": q.drift_id, "question": q.question, "options": list(q.options), "chosen": chosen,
        "answer_index": q.answer_index, "correct": correct, "stale_index": q.stale_index,
        "confounder_index": q.confounder_index, "mode": mode, "support": support,
        "evidence_turns": list(q.evidence_turns), "source_type": q.source_type,
        "recalled": [{"text": it.text, "score": round(it.score, 6), "source_turns": it.source_turns}
                     for it in items],
        **(extra or {}),
    }
