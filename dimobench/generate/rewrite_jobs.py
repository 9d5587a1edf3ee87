"""What the LLM generator is asked: one request per persona bio, per dialogue session and per batch of questions.

The latent plan and the offline rendering come first (stages 1-5); these requests only rewrite text. Each
turn's spec (cue of a state, filler, chatter, entity confounder, temporal decoy) goes into the prompt with the
offline text as an example of the idea and the words it must not use. Questions: the catalog's options are
kept (they are built so that length and position give nothing away, with the stale and confounder options
in known places) and only the question is rephrased, under the same no-state-words rule as the catalog.
Replies carry text only, in arrays of fixed length; ids, turns, timestamps and counts stay the plan's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, Field, create_model

from dimobench import prompts
from dimobench.backends.base import Message, Request
from dimobench.backends.jobs import Job
from dimobench.catalog import EXPLICIT_CHANGE, Catalog, content_words, relation_gender
from dimobench.rng import derive_seed
from dimobench.suite.schema import Persona, QAItem, Turn
from dimobench.suite.textspec import WRITER_TEMPERATURE, ExchangeText, exchange_problems, state_words, turn_spec

PROMPTS = ("generator/system", "generator/bio", "generator/session", "generator/questions")
QUESTION_BATCH = 8


class PersonaBio(BaseModel):
    """The reply to the bio prompt: a short third-person biography of one persona."""

    bio: str = Field(description="2-3 sentences, third person")


@lru_cache(maxsize=32)
def session_model(n: int) -> type[BaseModel]:
    """``{"turns": [{user, assistant}] * n}``: exactly ``n`` exchanges."""
    return create_model("SessionTurns", turns=(Annotated[list[ExchangeText], Field(min_length=n, max_length=n)],
                                               ...))


@lru_cache(maxsize=16)
def questions_model(n: int) -> type[BaseModel]:
    """``{"questions": [str] * n}``."""
    return create_model("Questions", questions=(Annotated[list[str], Field(min_length=n, max_length=n)], ...))


def _request(seed: int, item: str, user: prompts.Rendered, model: type[BaseModel], check: Any = None) -> Request:
    system = prompts.render("generator/system")
    return Request(messages=[Message(role="system", content=system.text), Message(role="user", content=user.text)],
                   response_model=model, temperature=WRITER_TEMPERATURE,
                   seed=derive_seed(seed, "llm", item) % (2 ** 31), item=item, check=check)


def bio_jobs(seed: int, personas: list[Persona]) -> list[Job]:
    """One LLM job per persona: a short bio from its profile and the people it knows."""
    jobs = []
    for p in personas:
        people = [{"name": e.name, "relation": e.relation} for e in p.entities]
        text = prompts.render("generator/bio", name=p.name, age=p.profile.get("age"),
                              occupation=p.profile.get("occupation"), city=p.profile.get("city"), people=people)
        jobs.append(Job(f"{p.persona_id}/bio", "bio", _request(seed, f"{p.persona_id}/bio", text, PersonaBio), [p]))
    return jobs


def session_jobs(seed: int, catalog: Catalog, personas: list[Persona], turns: list[Turn],
                 bios: dict[str, str]) -> list[Job]:
    """One LLM job per persona session: write its exchanges, checked so no cue names its state or a change."""
    by_id = {p.persona_id: p for p in personas}
    groups: dict[tuple[str, int], list[Turn]] = {}
    for t in turns:
        groups.setdefault((t.persona_id, t.session), []).append(t)
    jobs = []
    for (pid, session), group in groups.items():
        persona = by_id[pid]
        specs = [turn_spec(catalog, persona, t) for t in group]
        text = prompts.render("generator/session", name=persona.name.split()[0], bio=bios[pid],
                              facts=_facts(catalog, persona), people=_people(catalog, persona),
                              turns=specs, avoid_always=[p.strip() for p in EXPLICIT_CHANGE])
        item = f"{pid}/session-{session:04d}"
        jobs.append(Job(item, "session", _request(seed, item, text, session_model(len(group)),
                                                  _SessionCheck(specs)), group))
    return jobs


def _facts(catalog: Catalog, persona: Persona) -> dict[str, object]:
    city = str(persona.profile.get("city", ""))
    return {"age": persona.profile.get("age"), "occupation": persona.profile.get("occupation"), "city": city,
            "currency": catalog.currencies.get(city, "").strip()}


def _people(catalog: Catalog, persona: Persona) -> list[dict[str, str]]:
    """The people a persona knows, with pronouns where the relation or the catalog records a gender."""
    out = []
    for e in persona.entities:
        gender = relation_gender(e.relation) or catalog.genders.get(e.name, "")
        out.append({"name": e.name, "relation": e.relation,
                    "pronouns": {"f": "she/her", "m": "he/him"}.get(gender, "")})
    return out


def question_jobs(seed: int, catalog: Catalog, personas: list[Persona], qa: list[QAItem]) -> list[Job]:
    """LLM jobs that reword each persona's questions, a batch at a time, without their traits' state words."""
    by_id = {p.persona_id: p for p in personas}
    per_persona: dict[str, list[QAItem]] = {}
    for q in qa:
        per_persona.setdefault(q.persona_id, []).append(q)
    jobs = []
    for pid, items in per_persona.items():
        for i in range(0, len(items), QUESTION_BATCH):
            batch = items[i:i + QUESTION_BATCH]
            banned = [sorted(state_words(catalog, q.trait_id)) for q in batch]
            text = prompts.render("generator/questions", name=by_id[pid].name.split()[0], items=[
                {"question": q.question, "options": q.options, "avoid": b} for q, b in zip(batch, banned)])
            item = f"{pid}/qa-{batch[0].qa_id.rsplit('-', 1)[-1]}"
            jobs.append(Job(item, "questions", _request(seed, item, text, questions_model(len(batch)),
                                                        _QuestionCheck([set(b) for b in banned])), batch))
    return jobs


class _SessionCheck:
    """A cue may not name its state or announce a change (the catalog's rule for cues), and no reply may sum up
    the user (:func:`~dimobench.suite.textspec.local_problems`, the rule the LLM verifier's re-render keeps too)."""

    def __init__(self, specs: list[dict[str, Any]]) -> None:
        self.specs = specs

    def __call__(self, parsed: Any) -> None:
        for i, (ex, spec) in enumerate(zip(parsed.turns, self.specs, strict=True)):
            bad = exchange_problems(spec, ex.user, ex.assistant)
            if bad:
                raise ValueError(f"exchange {i + 1}: {', '.join(bad)}")


class _QuestionCheck:
    """A question may not use any state word of its trait (the catalog's rule for questions)."""

    def __init__(self, banned: list[set[str]]) -> None:
        self.banned = banned

    def __call__(self, parsed: Any) -> None:
        for i, (q, banned) in enumerate(zip(parsed.questions, self.banned, strict=True)):
            leaked = content_words(q) & banned
            if leaked or not q.strip():
                raise ValueError(f"question {i + 1}: empty or uses state words {sorted(leaked)}")
