"""Faithfulness of LLM-rendered text: check every rendered turn against its spec, re-render the ones that fail.

Runs first in an LLM verification of a suite whose text an LLM wrote (``config.backends.generator`` is not
``offline``), so the QA items are then judged on the final text. Cue turns and confounder turns (chatter,
entity, decoy) are checked; filler carries no spec worth checking.

Where the spec comes from: the suite does not store the instruction each turn was rendered from, but all
it is made of is there: the turn's ``annotation`` (kind, trait, state, entity), the persona (state
descriptions, people) and the packaged catalog (the trait's topic). ``dimobench.suite.textspec.turn_spec`` rebuilds the
generator's instruction from them, so nothing had to be added to the suite format.

A turn passes when the verifier (prompt ``verifier/turn``, reply :class:`TurnCheck`) says it follows its spec,
uses no state words and has the right subject (a confounder must not read as the user's own change), a cue
names neither its state nor a change, and its reply does not sum up the user (the generator's own rules,
:func:`~dimobench.suite.textspec.local_problems`, checked here too). A failing turn is
re-rendered by the generator backend (prompt ``verifier/rerender``, reply ``ExchangeText``) and
checked again, up to :data:`MAX_RERENDERS` times; the first version that passes replaces it, and a turn that
never passes keeps its original text. Every request depends only on text and spec, so a rerun on the output
is answered from the cache and changes nothing. What happened to each turn goes to
``.dimobench/faithfulness.jsonl``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from dimobench import prompts
from dimobench.backends.base import ChatLLM, Message, Request
from dimobench.backends.jobs import Job
from dimobench.catalog import EXPLICIT_CHANGE, suite_catalog
from dimobench.rng import derive_seed
from dimobench.suite.load import Suite
from dimobench.suite.schema import Turn
from dimobench.suite.textspec import (
    WRITER_TEMPERATURE,
    ExchangeText,
    exchange_problems,
    fallback_bio,
    local_problems,
    turn_spec,
)

if TYPE_CHECKING:
    from dimobench.backends.usage import Ledger
    from dimobench.verify.llm import Calls

PROMPTS = ("verifier/turn", "verifier/rerender", "generator/system")
RECORDS = "faithfulness.jsonl"
RERENDER = "/rerender-"
"""Marks re-render jobs in failure records: a failed re-render leaves the turn as it was, verified."""
MAX_RERENDERS = 2
CHECKED = ("cue", "chatter", "entity", "decoy")
AVOID_ALWAYS = [p.strip() for p in EXPLICIT_CHANGE]


class TurnCheck(BaseModel):
    """The verifier's reading of one rendered turn (bools phrased so that true is good)."""

    explanation: str = Field(description="One sentence: what the user's message shows and what is wrong, if anything.")
    follows_spec: bool = Field(description="The user's message does what the specification asks.")
    no_state_words: bool = Field(description="The user's message neither names the state nor announces a change.")
    right_subject: bool = Field(description="A cue is about the user now; a confounder (chatter, entity, decoy) "
                                            "does not read as the user's own current state or a change in it.")


@dataclass
class _Work:
    """One checked turn as it goes through check, re-render and check again."""

    turn: Turn
    spec: dict[str, Any]
    text: tuple[str, str]
    """The latest candidate (the original text at first)."""
    first: TurnCheck | None = None
    ok: bool | None = None
    """None: the last check call failed, so the turn could not be judged."""
    problem: str = ""
    first_problem: str = ""
    attempts: int = 0
    adopted: tuple[str, str] | None = None

    @property
    def key(self) -> str:
        return f"{self.turn.persona_id}/turn-{self.turn.turn:04d}"


class _RerenderCheck:
    """A re-rendered cue that breaks the rule is retried like invalid JSON (``Request.check``)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    def __call__(self, parsed: Any) -> None:
        bad = exchange_problems(self.spec, parsed.user, parsed.assistant)
        if bad:
            raise ValueError(", ".join(bad))


def check_and_rerender(suite: Suite, seed: int, verifier: ChatLLM, generator: ChatLLM | None, calls: Calls,
                       ledgers: dict[str, Ledger], previous: list[dict[str, Any]] | None = None
                       ) -> tuple[list[Turn], list[dict[str, Any]]]:
    """The suite's turns with unfaithful ones re-rendered where that worked, and one record per checked turn.

    ``previous`` are the records of an earlier run on this suite: a turn whose text is still what that run
    re-rendered keeps its record, so verifying a verified suite again changes nothing.
    """
    catalog = suite_catalog(suite.manifest.config)
    personas = {p.persona_id: p for p in suite.personas}
    work: list[_Work] = []
    for t in suite.dialogues:
        a = t.annotation
        if a is None or a.kind not in CHECKED or not a.trait_id or t.persona_id not in personas:
            continue
        try:
            spec = turn_spec(catalog, personas[t.persona_id], t)
        except (KeyError, StopIteration):  # a trait the catalog does not know: no spec to check against
            continue
        work.append(_Work(t, spec, (t.user, t.assistant)))
    _check(work, 0, seed, suite, verifier, calls, ledgers["verifier"])
    for attempt in range(1, MAX_RERENDERS + 1):
        failing = [w for w in work if w.ok is False]
        if not failing or generator is None:
            break
        jobs = [_rerender_job(w, attempt, seed, suite) for w in failing]
        got = calls.run(jobs, generator, ledgers["generator"])
        fresh = []
        for w in failing:
            reply = got.get(f"{w.key}{RERENDER}{attempt}")
            w.attempts = attempt
            if reply is not None:
                w.text = (reply.user.strip(), reply.assistant.strip())
                fresh.append(w)
        _check(fresh, attempt, seed, suite, verifier, calls, ledgers["verifier"])
        for w in fresh:
            if w.ok:
                w.adopted = w.text
    new = {(w.turn.persona_id, w.turn.turn): w.adopted for w in work if w.adopted is not None}
    turns = [t.model_copy(update={"user": new[(t.persona_id, t.turn)][0],
                                  "assistant": new[(t.persona_id, t.turn)][1]})
             if (t.persona_id, t.turn) in new else t for t in suite.dialogues]
    before = {(r["persona_id"], r["turn"]): r for r in previous or [] if r.get("outcome") == "rerendered"}
    records = []
    for w in work:
        record = _record(w)
        old = before.get((w.turn.persona_id, w.turn.turn))
        if record["outcome"] == "faithful" and old and old.get("rendered") == {"user": w.turn.user,
                                                                               "assistant": w.turn.assistant}:
            record = old
        records.append(record)
    return (turns if new else suite.dialogues), records


def _check(work: list[_Work], attempt: int, seed: int, suite: Suite, verifier: ChatLLM, calls: Calls,
           ledger: Ledger) -> None:
    names = {p.persona_id: p.name.split()[0] for p in suite.personas}
    system = prompts.render("verifier/system")
    jobs = []
    for w in work:
        text = prompts.render("verifier/turn", name=names[w.turn.persona_id], turn=w.turn.turn,
                              kind=w.spec["kind"], instruction=w.spec["instruction"], avoid=w.spec["avoid"],
                              avoid_always=AVOID_ALWAYS, user=w.text[0], assistant=w.text[1])
        item = f"{w.key}/check-{attempt}"
        jobs.append(Job(item, "check", Request(
            messages=[Message(role="system", content=system.text), Message(role="user", content=text.text)],
            response_model=TurnCheck, temperature=0.0, max_tokens=512, item=item,
            seed=derive_seed(seed, "verify-turn", w.turn.persona_id, w.turn.turn) % (2 ** 31)), [w.turn]))
    got = calls.run(jobs, verifier, ledger)
    for w, job in zip(work, jobs, strict=True):
        reply: TurnCheck | None = got.get(job.item)
        if reply is None:
            w.ok, w.problem = None, next((f["error"] for f in calls.failures if f["item"] == job.item), "")
            w.first_problem = w.first_problem or w.problem
            continue
        bad = local_problems(w.spec, w.text[0], w.text[1])
        verdicts = {"does not follow its spec": reply.follows_spec, "uses state words": reply.no_state_words,
                    "has the wrong subject": reply.right_subject}
        bad += [what for what, good in verdicts.items() if not good]
        w.ok = not bad
        w.problem = "; ".join(bad) + (f" ({reply.explanation.strip()})" if bad and reply.explanation.strip() else "")
        if attempt == 0:
            w.first, w.first_problem = reply, w.problem


def _rerender_job(w: _Work, attempt: int, seed: int, suite: Suite) -> Job:
    persona = next(p for p in suite.personas if p.persona_id == w.turn.persona_id)
    system = prompts.render("generator/system")
    text = prompts.render("verifier/rerender", name=persona.name.split()[0],
                          bio=persona.profile.get("bio") or fallback_bio(persona),
                          people=[{"name": e.name, "relation": e.relation} for e in persona.entities],
                          kind=w.spec["kind"], instruction=w.spec["instruction"], avoid=w.spec["avoid"],
                          avoid_always=AVOID_ALWAYS, user=w.text[0], assistant=w.text[1], problem=w.problem)
    item = f"{w.key}{RERENDER}{attempt}"
    request = Request(messages=[Message(role="system", content=system.text), Message(role="user", content=text.text)],
                      response_model=ExchangeText, temperature=WRITER_TEMPERATURE, item=item,
                      seed=derive_seed(seed, "rerender", w.turn.persona_id, w.turn.turn, attempt) % (2 ** 31),
                      max_tokens=512, check=_RerenderCheck(w.spec))
    return Job(item, "rerender", request, [w.turn])


def _record(w: _Work) -> dict[str, Any]:
    """What happened to one turn; deterministic (no times), so a rerun writes the same bytes."""
    if w.adopted is not None:
        outcome = "rerendered"
    elif w.ok is None:
        outcome = "unchecked"
    else:
        outcome = "faithful" if w.ok else "unfixed"
    out: dict[str, Any] = {"persona_id": w.turn.persona_id, "turn": w.turn.turn, "kind": w.spec["kind"],
                           "outcome": outcome, "attempts": w.attempts}
    if w.first is not None:
        out["explanation"] = w.first.explanation
    if outcome != "faithful":
        out["problem"] = w.first_problem
    if outcome in ("unfixed", "unchecked") and w.problem != w.first_problem:
        out["last_problem"] = w.problem
    if w.adopted is not None:
        out["replaced"] = {"user": w.turn.user, "assistant": w.turn.assistant}
        out["rendered"] = {"user": w.adopted[0], "assistant": w.adopted[1]}
    return out


def summary(records: list[dict[str, Any]]) -> dict[str, int]:
    """Turns checked and how many were faithful, re-rendered, left unfixed or could not be checked."""
    out = {"checked": len(records), "faithful": 0, "rerendered": 0, "unfixed": 0, "unchecked": 0}
    for r in records:
        out[r["outcome"]] += 1
    return out
