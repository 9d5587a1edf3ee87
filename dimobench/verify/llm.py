"""Stage 6 with an LLM verifier (``--verifier openai/...`` or ``gemini/...``): one call per QA item.

Each item goes to the verifier model with the ground truth the simulator holds for it (the trait's states,
its history up to the ask turn, the state the gold must show), the question, options and gold, the evidence
turns' text and the trait's confounder turns so far (prompt ``verifier/item``). The reply is a JSON-schema
object with one ``{explanation, verdict, fixable}`` per criterion (text, an enum and a bool: ids and counts
come from the suite), validated with pydantic and mapped to the same ``verdicts.jsonl`` records and manifest
update the offline verifier writes; ``verifier`` names the provider, model and prompt hash.

A suite whose text an LLM wrote first has its rendered turns checked against their specs and the failing ones
re-rendered by the generator (:mod:`dimobench.verify.llm_turns`), so the items are judged on the final text.

Robustness is generation's: retries in the backend, a call that still fails is recorded (its item's criteria
are UNSCORED, never a pass) and the run goes on; replies are cached by content, so a rerun makes no call and
writes the same bytes. Every finished call is also journaled in ``.dimobench/verify-journal/``, which
``resume=True`` keeps (a killed run then repeats only the calls that were in flight, whatever the shared
cache holds) and a clean finish removes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from dimobench import prompts
from dimobench.backends.base import ChatLLM, Message, Request
from dimobench.backends.jobs import STATE_DIR, Job, RunLog, last_event, run_jobs
from dimobench.backends.usage import Ledger
from dimobench.rng import derive_seed
from dimobench.suite.io import atomic_write_text
from dimobench.suite.load import Suite, load_suite
from dimobench.suite.plan import LatentPlan
from dimobench.suite.schema import CriterionResult, QAItem, Trait, Turn, VerdictRecord, VerifierInfo
from dimobench.verify.verdicts import VerifyResult, check_criteria, item_verdict, stale_warnings, write_results

VERSION = "llm-1"
PROMPTS = ("verifier/system", "verifier/item")
TEMPERATURE = 0.0
"""Judging is not creative; temperature 0 with a seed also makes every reply cacheable."""
JOURNAL = "verify-journal"
FAILURES = "verify-failures.jsonl"
MAX_EVIDENCE = 8
MAX_CONFOUNDERS = 8
CONFOUNDER_KINDS = ("entity", "decoy", "chatter")


class CriterionJudgement(BaseModel):
    """The verifier's reply for one criterion (explanation first, so the model reasons before it decides)."""

    explanation: str = Field(description="One or two sentences: why, naming the turns or options concerned.")
    verdict: Literal["ACCEPT", "REJECT", "CANNOT_TELL"] = Field(
        description="ACCEPT if the criterion holds, REJECT if not, CANNOT_TELL if the prompt is not enough.")
    fixable: bool = Field(description="For REJECT: true when rewording the question or options alone fixes it.")


@lru_cache(maxsize=64)
def judgement_model(names: tuple[str, ...]) -> type[BaseModel]:
    """``{criterion: CriterionJudgement}`` for exactly the criteria asked (``--only`` narrows the schema)."""
    return create_model("ItemJudgement", **{n: (CriterionJudgement, ...) for n in names})  # type: ignore[call-overload]


class LLMVerifyResult(VerifyResult):
    """A verification run with an LLM verifier: the offline result plus calls, failures and turn checks."""

    run: dict[str, Any] = {}
    """Calls, cache hits, tokens and estimated cost per role (the ``verify`` event of the run log)."""
    failures: list[dict[str, str]] = []
    """``{item, error}`` for every call that failed after its retries (items stay UNSCORED)."""
    turns: list[dict[str, Any]] = []
    """One record per rendered turn checked (LLM-rendered suites only), see ``llm_turns``."""


class Calls:
    """Runs job batches on the shared thread pool, counting, logging and recording failures."""

    def __init__(self, log: Any, concurrency: int) -> None:
        self.log, self.concurrency = log, concurrency
        self.failures: list[dict[str, str]] = []

    def run(self, jobs: list[Job], llm: ChatLLM, ledger: Ledger) -> dict[str, Any]:
        """Parsed replies by job item; failed jobs are missing and listed in ``failures``."""
        return run_jobs(jobs, llm, ledger, self.log, self.failures, self.concurrency)


class _NoLog:
    """``write=False`` runs leave no trace in the suite."""

    def write(self, event: dict[str, Any]) -> None:
        pass


def verify_suite_llm(path: str | Path, verifier: str, only: list[str] | None = None, write: bool = True, *,
                     base_url: str | None = None, cache_dir: str | Path | None = None, concurrency: int = 8,
                     timeout: float = 120.0, resume: bool = False, generator: str | None = None,
                     rerender: bool = True, llm: ChatLLM | None = None,
                     generator_llm: ChatLLM | None = None) -> LLMVerifyResult:
    """Verify the suite at ``path`` with an LLM verifier; see the module docstring.

    Args:
        path: suite directory.
        verifier: ``openai``, ``openai/MODEL``, ``gemini`` or ``gemini/MODEL``.
        only: criteria to run (default all six).
        write: False to judge without touching the suite.
        base_url, cache_dir, timeout: as for generation (``--base-url``, ``--cache-dir``).
        concurrency: calls in flight at once.
        resume: keep the journal of an interrupted run instead of starting a fresh one.
        generator: backend that re-renders unfaithful turns (default: the suite's own generator).
        rerender: False to check rendered turns without re-rendering any.
        llm, generator_llm: ready backends instead of resolving ``verifier`` and ``generator`` (tests).

    Raises ``BackendError`` (one line) when a backend cannot be used, before anything is called or written.
    """
    from dimobench.verify import llm_turns

    names = check_criteria(only)
    root = Path(path)
    suite = load_suite(root)
    state = root / STATE_DIR
    rendered_by = rendered_with(suite)
    llm, generator_llm = _backends(verifier, generator, rendered_by if rerender else None, llm, generator_llm,
                                   base_url=base_url, cache_dir=Path(cache_dir) if cache_dir else None,
                                   timeout=timeout)
    if write:
        llm, generator_llm = _journaled(state, resume, llm, generator_llm)
    calls = Calls(RunLog(state) if write else _NoLog(), concurrency)
    seed = suite.manifest.config.get("seed", 0)
    seed = seed if isinstance(seed, int) else 0
    ledgers = {"verifier": Ledger(llm.spec), "generator": Ledger(generator_llm.spec if generator_llm else "")}

    dialogues = suite.dialogues
    turn_records: list[dict[str, Any]] = []
    if rendered_by:  # turns first, so the items are judged on the text the suite ends with
        dialogues, turn_records = llm_turns.check_and_rerender(suite, seed, llm, generator_llm, calls, ledgers,
                                                               _read_records(state / llm_turns.RECORDS))
    info = verifier_info(llm.spec, names)
    jobs = item_jobs(suite, dialogues, seed, names)
    replies = calls.run(jobs, llm, ledgers["verifier"])
    errors = {f["item"]: f["error"] for f in calls.failures}
    verdicts = [to_verdict(q, replies.get(q.qa_id), errors.get(q.qa_id, "no reply"), names, info)
                for q in suite.qa]
    run = {"event": "verify", **_summary(ledgers, llm.spec, generator_llm), "prompt_hash": info.prompt_hash,
           "items": len(jobs), "failures": len(calls.failures),
           "unverified": sum(llm_turns.RERENDER not in f["item"] for f in calls.failures),
           "turns": llm_turns.summary(turn_records)}
    if write:
        extra: dict[str, dict[str, object]] = {"config": {"verifier_prompts": prompts.prompt_hashes(*PROMPTS)},
                                               "counts": {}}
        if rendered_by:
            extra["config"]["verifier_prompts"] = prompts.prompt_hashes(*PROMPTS, *llm_turns.PROMPTS)
            extra["counts"]["faithfulness"] = run["turns"]
            _write_lines(state / llm_turns.RECORDS, turn_records)
        write_results(root, suite, verdicts, llm.spec, extra=extra,
                      dialogues=dialogues if dialogues is not suite.dialogues else None)
        _write_lines(state / FAILURES, calls.failures)
        calls.log.write(run)
        if not calls.failures:  # a clean finish: nothing left to resume
            shutil.rmtree(state / JOURNAL, ignore_errors=True)
    warnings = stale_warnings(suite) + late_evidence(suite.qa)
    return LLMVerifyResult(path=root, verdicts=verdicts, warnings=warnings, run=run, failures=calls.failures,
                           turns=turn_records)


def _backends(verifier: str, generator: str | None, rendered_by: str | None, llm: ChatLLM | None,
              generator_llm: ChatLLM | None, **options: Any) -> tuple[ChatLLM, ChatLLM | None]:
    """The verifier and, for re-rendering an LLM-written suite, the generator; a missing key or SDK fails here,
    before anything is called or written."""
    from dimobench.backends import normalize_spec, resolve_backend
    from dimobench.errors import BackendError, ConfigError

    if llm is None:
        llm = resolve_backend(normalize_spec(verifier, "--verifier"), **options)  # type: ignore[assignment]
    gen_spec = normalize_spec(generator, "--generator") if generator else rendered_by
    if rendered_by and generator_llm is None and gen_spec:
        if gen_spec == "offline":
            raise ConfigError("--generator offline cannot re-render turns: name an LLM, or use --no-rerender")
        try:
            generator_llm = resolve_backend(gen_spec, **options)  # type: ignore[assignment]
        except BackendError as exc:
            raise BackendError(f"{exc} (needed to re-render turns of this {rendered_by} suite; --no-rerender only "
                               "checks them)") from None
    assert llm is not None
    return llm, (generator_llm if rendered_by else None)


def _write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def rendered_with(suite: Suite) -> str | None:
    """The LLM that wrote the suite's text (``config.backends.generator``), None for offline or imported text."""
    backends = suite.manifest.config.get("backends")
    spec = backends.get("generator") if isinstance(backends, dict) else None
    if suite.manifest.status == "imported" or not isinstance(spec, str) or spec in ("", "offline"):
        return None
    return spec


def verifier_info(spec: str, names: list[str]) -> VerifierInfo:
    """Provider, model, and a hash of the verifier version, prompt files and criteria asked."""
    provider, _, model = spec.partition("/")
    text = json.dumps({"version": VERSION, "prompts": prompts.prompt_hashes(*PROMPTS), "criteria": names},
                      sort_keys=True)
    return VerifierInfo(provider=provider, model=model, prompt_hash=hashlib.sha256(text.encode()).hexdigest()[:16])


def late_evidence(items: list[QAItem]) -> list[str]:
    """The offline verifier's warning for evidence cited after the question."""
    out = []
    for q in items:
        late = [n for n in q.evidence_turns if n > q.ask_turn]
        if late:
            out.append(f"{q.qa_id}: evidence turn(s) {late} come after the question (turn {q.ask_turn})")
    return out


def item_jobs(suite: Suite, dialogues: list[Turn], seed: int, names: list[str]) -> list[Job]:
    """One request per QA item, in ``qa.jsonl`` order."""
    schedules = {s.persona_id: s for s in suite.schedules}
    plans = {p.persona_id: LatentPlan(p, schedules[p.persona_id]) for p in suite.personas
             if p.persona_id in schedules}
    firsts = {p.persona_id: p.name.split()[0] for p in suite.personas}
    turns: dict[str, dict[int, Turn]] = {}
    for t in dialogues:
        turns.setdefault(t.persona_id, {})[t.turn] = t
    system = prompts.render("verifier/system")
    model = judgement_model(tuple(names))
    jobs = []
    for q in suite.qa:
        text = prompts.render("verifier/item", **item_variables(q, plans.get(q.persona_id),
                                                                 turns.get(q.persona_id, {}),
                                                                 firsts.get(q.persona_id, "the user"), names))
        request = Request(messages=[Message(role="system", content=system.text),
                                    Message(role="user", content=text.text)],
                          response_model=model, temperature=TEMPERATURE, item=q.qa_id, max_tokens=2048,
                          seed=derive_seed(seed, "verify", q.qa_id) % (2 ** 31))
        jobs.append(Job(q.qa_id, "verify", request, [q]))
    return jobs


def item_variables(q: QAItem, plan: LatentPlan | None, turns: dict[int, Turn], name: str,
                   names: list[str]) -> dict[str, Any]:
    """What ``verifier/item`` shows about one item: plan facts, question, options, evidence, confounders."""
    trait: Trait | None = None
    if plan is not None and q.trait_id:
        trait = next((t for t in plan.persona.traits if t.trait_id == q.trait_id), None)
    states, history, truth = [], {}, None
    if plan is not None and trait is not None:
        states = [{"state_id": s.state_id, "description": s.description} for s in trait.states]
        changes = [{"from_state": d.from_state, "to_state": d.to_state, "onset_turn": d.onset_turn,
                    "change_point_turn": d.change_point_turn, "done": d.change_point_turn < q.ask_turn}
                   for d in plan.schedule.drifts if d.trait_id == trait.trait_id and d.onset_turn <= q.ask_turn]
        history = {"initial": trait.initial_state, "changes": changes}
        if q.qa_type == "temporal":
            last = plan.last_change(trait.trait_id, q.ask_turn)
            state = last.from_state if last else None
        else:
            state = plan.state_at(trait.trait_id, q.ask_turn)
        if state is not None:
            truth = {"state_id": state, "description": plan.description(trait.trait_id, state),
                     "earlier": q.qa_type == "temporal"}
    marks = {q.answer_index: "gold", q.stale_index: "stale: held earlier, wrong now",
             q.confounder_index: "confounder: what a confounder turn suggested"}
    options = [{"index": i, "text": o, "marks": [m for idx, m in marks.items() if idx == i]}
               for i, o in enumerate(q.options)]
    evidence = []
    for n in q.evidence_turns[:MAX_EVIDENCE]:
        t = turns.get(n)
        note = "no such turn" if t is None else ("after the question" if n > q.ask_turn else "")
        evidence.append({"turn": n, "note": note, "kind": t.annotation.kind if t and t.annotation else "",
                         "user": t.user if t else "", "assistant": t.assistant if t else ""})
    entities = {e.entity_id: f"{e.name}, their {e.relation}" for e in plan.persona.entities} if plan else {}
    confounders = [{"turn": t.turn, "kind": t.annotation.kind, "user": t.user,
                    "entity": entities.get(t.annotation.entity_id or "", "")}
                   for n, t in sorted(turns.items()) if n <= q.ask_turn and t.annotation is not None
                   and t.annotation.kind in CONFOUNDER_KINDS and t.annotation.trait_id == q.trait_id]
    return {"name": name, "qa_type": q.qa_type or "unknown", "ask_turn": q.ask_turn,
            "topic": trait.topic if trait else "", "states": states, "history": history, "truth": truth,
            "question": q.question, "options": options, "answer": q.answer, "evidence": evidence,
            "confounders": confounders[-MAX_CONFOUNDERS:], "criteria": names}


def to_verdict(q: QAItem, reply: Any, error: str, names: list[str], info: VerifierInfo) -> VerdictRecord:
    """Map a validated reply to a verdict record; no reply (the call failed) makes every criterion UNSCORED."""
    results: dict[str, CriterionResult] = {}
    for n in names:
        if reply is None:
            results[n] = CriterionResult(verdict="UNSCORED", explanation=f"verifier call failed: {error}")
            continue
        j: CriterionJudgement = getattr(reply, n)
        text = j.explanation.strip() or "(no explanation given)"
        if j.verdict == "ACCEPT":
            results[n] = CriterionResult(verdict="ACCEPT", explanation=text)
        elif j.verdict == "REJECT":
            results[n] = CriterionResult(verdict="REJECT", explanation=text, fixable=j.fixable)
        else:
            results[n] = CriterionResult(verdict="UNSCORED", explanation=f"the verifier could not tell: {text}")
    return VerdictRecord(qa_id=q.qa_id, verdict=item_verdict(results),
                         criteria=results, verifier=info)


def _journaled(state: Path, keep: bool, llm: ChatLLM, generator: ChatLLM | None
               ) -> tuple[ChatLLM, ChatLLM | None]:
    """Wrap both backends in this suite's journal of finished calls (cleared first unless ``keep``)."""
    from dimobench.backends.cache import CachedLLM, ReplyCache

    if not keep:
        shutil.rmtree(state / JOURNAL, ignore_errors=True)
    journal = ReplyCache(state / JOURNAL)
    return CachedLLM(llm, journal), (CachedLLM(generator, journal) if generator is not None else None)


def _summary(ledgers: dict[str, Ledger], spec: str, generator: ChatLLM | None) -> dict[str, Any]:
    out = ledgers["verifier"].summary()
    out.pop("generator", None)
    out = {"verifier": spec, **out}
    if generator is not None:
        gen = ledgers["generator"].summary()
        out["rerender"] = gen
    return out


def _read_records(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except (OSError, ValueError):  # none yet, or damaged: the turns are simply checked afresh
        return []


def last_verify_run(out: str | Path) -> dict[str, Any] | None:
    """The latest LLM verification's totals and failures from ``out/.dimobench/`` (None if there was none)."""
    return last_event(out, "verify", failures=FAILURES)
