"""Stage 1: personas with a profile, 4-8 traits from distinct topics, and the people they mention (catalog v3: a
fixed circle of friends too, ``profile["friends"]``)."""

from __future__ import annotations

import random
from collections.abc import Callable

from pydantic import BaseModel

from dimobench.catalog import FEMALE_RELATIONS, MALE_RELATIONS, Catalog, barred_words, relation_gender
from dimobench.generate.config import GenerateConfig
from dimobench.suite.plan import clashing
from dimobench.suite.schema import Entity, Persona, State, Trait

NAME = "personas"
VERSION = "1"
TEXT_RULES_VERSION = "3"
"""Catalog v3 suites since session 28 (:func:`dimobench.generate.pipeline.stage_versions`): no two names a
persona uses look alike (:func:`confusable`) (2); no two initial states that clash (3, session 31)."""
READS: tuple[str, ...] = ()
WRITES = ("personas.jsonl",)
CONFIG_FIELDS = ("seed", "personas", "traits")
"""Config fields that change this stage's output (its fingerprint covers them and its upstream)."""

GENDERED = FEMALE_RELATIONS | MALE_RELATIONS
PEOPLE = (5, 7)
"""How many people a persona of a v3 catalog mentions (3-5 until session 21: in a 350-turn dialogue each of them
showed four or five of the user's six traits, a nephew who retiled, knocked through walls, saved, wore retro and
ate vegan: blind reads of seeds 2231 and 2251)."""
REDRAWS = 50
"""Trait sets drawn again for one persona (catalog v3) before a set no occupation fits is a catalog error."""
STUDENT_AGES = (22, 29)
"""Ages of a persona whose occupation is tagged ``student`` (catalogs with ``text_rules`` v3)."""


class Output(BaseModel):
    """Stage 1's result: the drawn personas."""

    personas: list[Persona]


def run(cfg: GenerateConfig, inputs: Catalog, rng: random.Random) -> Output:
    """Draw ``cfg.personas`` personas from the catalog; names and topics never repeat inside a persona."""
    catalog = inputs
    first_names = rng.sample(catalog.first_names, len(catalog.first_names))
    last_names = rng.sample(catalog.last_names, cfg.personas)
    used_first: set[str] = set()
    # Names carry no gender in the catalog, so gendered relations ("my sister Tom") are left out.
    neutral = [r for r in catalog.relations if not set(r.replace("-", " ").split()) & GENDERED]
    v3 = catalog.text_rules == "v3"
    personas = []
    for i in range(cfg.personas):
        first = _take(first_names, used_first)
        traits = _draw_traits(catalog, cfg.traits, rng)
        for _ in range(REDRAWS if v3 else 0):
            if _occupations_for(catalog, traits):
                break
            # traits no occupation fits together (a desk job and night shifts): drawn again
            traits = _draw_traits(catalog, cfg.traits, rng)
        if v3 and catalog.clashes:
            traits = _apart(catalog, traits, rng)
        if v3:
            profile = _fitting_profile(catalog, rng, traits)
            # names unique inside the persona (as its friends'): a suite-wide pool would run out with more people
            entities = _gendered_entities(catalog, rng, rng.sample(first_names, len(first_names)), {first}, traits,
                                          int(str(profile["age"])))
            if catalog.friend_circle:
                fewest, most = catalog.friend_circle
                # unique inside the persona only: a suite of many personas must not run out of names
                taken = {first, *(e.name for e in entities)}
                wanted = rng.randint(fewest, most)
                pool = rng.sample(first_names, len(first_names))
                anyone = _of_gender(catalog, None)
                profile["friends"] = [_take(pool, taken, _fits(anyone, set(taken))) for _ in range(wanted)]
            background = _background(catalog, traits, rng)
            if background:
                profile["background"] = background
        else:
            relations = rng.sample(neutral, rng.randint(3, 5))
            entities = [Entity(entity_id=f"e{j + 1}", name=_take(first_names, used_first), relation=rel)
                        for j, rel in enumerate(relations)]
            profile = {
                "age": rng.randint(22, 68),
                "occupation": rng.choice(catalog.occupations),
                "city": rng.choice(catalog.cities),
            }
        personas.append(Persona(persona_id=f"p{i + 1:02d}", name=f"{first} {last_names[i]}", profile=profile,
                                traits=traits, entities=entities))
    return Output(personas=personas)


def _background(catalog: Catalog, traits: list[Trait], rng: random.Random) -> dict[str, str]:
    """A state of each ``background`` trait the persona does not hold (:attr:`TraitEntry.background`), among those
    whose ``excludes`` bar the fewest texts of the states of the traits it holds: a night worker's cues ("a
    forty-minute drive home") are not starved by a background that says no car when one that drives fits."""
    held = {t.trait_id for t in traits}
    texts = [text for t in traits for st in catalog.trait(t.trait_id).states
             for text in [*(x for a in st.acts for x in (*a.context, *(e.user for e in a.asks),
                                                          *(r for e in a.asks for r in e.replies()))),
                          *(x for c in st.cues for x in (c.user, c.assistant))]]
    out: dict[str, str] = {}
    for tp in catalog.topics:
        for tr in tp.traits:
            if not tr.background or tr.trait_id in held:
                continue
            clashes = {}
            for st in tr.states:
                barred = barred_words(frozenset(st.excludes))
                clashes[st.state_id] = 0 if barred is None else barred.count(texts)
            fewest = min(clashes.values())
            out[tr.trait_id] = rng.choice([sid for sid, n in clashes.items() if n == fewest])
    return out


def _draw_traits(catalog: Catalog, n: int, rng: random.Random) -> list[Trait]:
    """``n`` traits from distinct topics, each in a random initial state."""
    traits = []
    for tp in rng.sample(catalog.topics, n):
        entry = rng.choice(tp.traits)
        traits.append(Trait(
            trait_id=entry.trait_id, topic=tp.topic,
            states=[State(state_id=s.state_id, description=s.description) for s in entry.states],
            initial_state=rng.choice(entry.states).state_id,
        ))
    return traits


def _apart(catalog: Catalog, traits: list[Trait], rng: random.Random) -> list[Trait]:
    """The traits with initial states no two of which clash (:attr:`Catalog.clashes`: the blind read of seed 2747
    met a night-shift sleeper with a freelance business, then a daytime office job): a trait whose state clashes
    with one drawn before it is drawn again among its states that clash with none."""
    clash = clashing(catalog)
    out: list[Trait] = []
    for tr in traits:
        held = {(t.trait_id, t.initial_state) for t in out}
        if clash.get((tr.trait_id, tr.initial_state), set()) & held:
            fits = [s.state_id for s in tr.states if not clash.get((tr.trait_id, s.state_id), set()) & held]
            if fits:
                tr = tr.model_copy(update={"initial_state": rng.choice(fits)})
        out.append(tr)
    return out


def _needs(catalog: Catalog, traits: list[Trait]) -> tuple[set[str], int]:
    """The occupation tags the traits require and the youngest age they allow."""
    needed = {tag for tr in traits for tag in catalog.trait(tr.trait_id).requires}
    return needed, max([22, *(catalog.trait(tr.trait_id).min_age for tr in traits)])


def _occupations_for(catalog: Catalog, traits: list[Trait]) -> list[str]:
    """Occupations whose tags hold every tag the traits require, students only if the traits allow their age."""
    needed, youngest = _needs(catalog, traits)
    return [o for o in catalog.occupations if needed <= set(catalog.occupation_tags.get(o, ()))
            and not (youngest > STUDENT_AGES[1] and "student" in catalog.occupation_tags.get(o, ()))]


def _gendered_entities(catalog: Catalog, rng: random.Random, pool: list[str], used: set[str], traits: list[Trait],
                       age: int) -> list[Entity]:
    """:data:`PEOPLE` people the persona knows; a gendered relation ("my sister") gets a name of that gender, and no
    relation is one a trait excludes (``excludes_relations``) or one the persona is too old to have
    (``relation_max_age``)."""
    ids = [tr.trait_id for tr in traits]
    fits = [r for r in catalog.relations if catalog.relation_fits(r, ids, age)]
    relations = rng.sample(fits, min(len(fits), rng.randint(*PEOPLE)))
    entities = []
    for j, rel in enumerate(relations):
        name = _take(pool, used, _fits(_of_gender(catalog, relation_gender(rel)), set(used)))
        entities.append(Entity(entity_id=f"e{j + 1}", name=name, relation=rel))
    return entities


def confusable(a: str, b: str) -> bool:
    """Whether two first names look alike to a reader: the same, one letter apart ("Leila", "Laila"; "Sara",
    "Yara") or the same first three letters ("Felipe", "Felix"). A persona's people never do (blind read of seed
    2547: a partner Leila beside a friend Laila)."""
    a, b = a.lower(), b.lower()
    if a[:3] == b[:3]:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def _fits(gendered: Callable[[str], bool], used: set[str]) -> Callable[[str], bool]:
    """A name of the wanted gender that looks like none of ``used`` (a copy: :func:`_take` adds to its set)."""
    return lambda name: gendered(name) and not any(confusable(name, u) for u in used)


def _of_gender(catalog: Catalog, gender: str | None) -> Callable[[str], bool]:
    return lambda name: gender is None or catalog.genders.get(name) == gender


def _fitting_profile(catalog: Catalog, rng: random.Random, traits: list[Trait]) -> dict[str, object]:
    """Age, occupation and city such that the occupation's tags hold every tag the traits require, the age is at
    least every trait's ``min_age``, and a student's age is a student's (the compatibility table:
    ``occupation_tags`` x ``TraitEntry.requires`` and ``min_age``)."""
    needed, youngest = _needs(catalog, traits)
    fits = _occupations_for(catalog, traits)
    if not fits:
        raise ValueError(f"no occupation in the catalog has the tags {sorted(needed)}")
    occupation = rng.choice(fits)
    student = "student" in catalog.occupation_tags.get(occupation, ())
    age = rng.randint(max(youngest, STUDENT_AGES[0]), STUDENT_AGES[1]) if student else rng.randint(youngest, 68)
    return {"age": age, "occupation": occupation, "city": rng.choice(catalog.home_cities or catalog.cities)}


def _take(pool: list[str], used: set[str], ok: Callable[[str], bool] = lambda _: True) -> str:
    for name in pool:
        if name not in used and ok(name):
            used.add(name)
            return name
    raise ValueError("the catalog has too few first names for this many personas")
