"""What each turn's text must convey, and the shape an LLM writer returns an exchange in.

The spec of a turn (cue of a state, filler, chatter, entity confounder, temporal decoy) follows from the latent
plan and the packaged catalog. Generation's LLM rewrite writes every turn to its spec; the LLM verifier checks
rendered turns against the same spec and re-renders those that fail, so both read it from here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from dimobench.catalog import EXPLICIT_CHANGE, NAMES_THE_USER, Catalog, content_words
from dimobench.suite.schema import Persona, Turn

WRITER_TEMPERATURE = 0.7
"""Temperature of every text-writing call (generation's rewrite and verification's re-render)."""


class ExchangeText(BaseModel):
    """One exchange as an LLM writer returns it."""

    user: str
    assistant: str


def fallback_bio(p: Persona) -> str:
    """The bio used when no LLM wrote one: age, occupation and city."""
    return f"{p.name} is {p.profile.get('age')}, works as {p.profile.get('occupation')} and lives in " \
           f"{p.profile.get('city')}."


def state_words(catalog: Catalog, trait_id: str | None) -> set[str]:
    """Content words of every state description of the trait (words a question may not use)."""
    if trait_id is None:
        return set()
    return set().union(*(content_words(s.description) for s in catalog.trait(trait_id).states))


def turn_spec(catalog: Catalog, persona: Persona, t: Turn) -> dict[str, Any]:
    """The instruction, example text and forbidden words for rewriting turn ``t``."""
    ann = t.annotation
    kind = ann.kind if ann else "filler"
    spec: dict[str, Any] = {"kind": kind, "example_user": t.user, "example_assistant": t.assistant, "avoid": [],
                            "forbidden": []}
    if kind == "filler" or ann is None or ann.trait_id is None:
        spec["instruction"] = "Everyday small talk or a practical request with nothing personal about tastes or habits."
        return spec
    topic = catalog.topic_of(ann.trait_id).topic
    trait = next((tr for tr in persona.traits if tr.trait_id == ann.trait_id), None)
    desc = next((s.description for s in trait.states if s.state_id == ann.state_id), "") if trait else ""
    if kind == "cue":
        spec["instruction"] = (f"Topic: {topic}. Through something the user does, plans or asks for, show that "
                               f"this holds for them now: {desc}")
        spec["avoid"] = sorted({ann.state_id.replace("_", " ")} if ann.state_id else set())
        spec["forbidden"] = spec["avoid"]
    elif kind == "chatter":
        spec["instruction"] = (f"Topic: {topic}. The user talks about this topic in general, the news, or other "
                               "people; nothing about their own habits or preferences.")
    elif kind == "entity":
        ent = next((e for e in persona.entities if e.entity_id == ann.entity_id), None)
        who = f"{ent.name}, their {ent.relation}" if ent else "someone they know"
        spec["instruction"] = (f"Topic: {topic}. The user tells about {who}, for whom this holds: {desc}. It is "
                               f"about {ent.name if ent else 'that person'}, not about the user.")
    elif kind == "decoy":
        spec["instruction"] = (f"Topic: {topic}. The user recalls their own distant past, years ago, when this "
                               f"held for them: {desc}. Clearly about back then, saying nothing about now.")
    return spec


def local_problems(spec: dict[str, Any], user: str, assistant: str = "") -> list[str]:
    """The generator's own rules: a cue never names its state or announces a change; no reply, of any turn, sums
    up the user's tastes or a change in them (:data:`NAMES_THE_USER`)."""
    summed = NAMES_THE_USER.search(assistant)
    out = [f"the reply sums up the user ({summed.group(0)})"] if summed else []
    if spec["kind"] != "cue":
        return out
    said = f" {user.lower()} "
    return ([f"names its state ({w})" for w in spec["forbidden"] if w.lower() in said]
            + [f"announces a change ({w.strip()})" for w in EXPLICIT_CHANGE if w in said] + out)


def exchange_problems(spec: dict[str, Any], user: str, assistant: str) -> list[str]:
    """What an LLM writer's exchange breaks: :func:`local_problems`, or an empty side (such a reply is retried)."""
    bad = local_problems(spec, user, assistant)
    if not user.strip() or not assistant.strip():
        bad.append("empty text")
    return bad
