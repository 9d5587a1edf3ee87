"""Stage 1: personas with a profile, 4-8 traits from distinct topics, and the people they mention."""

from __future__ import annotations

import random

from pydantic import BaseModel

from dimobench.catalog import Catalog
from dimobench.generate.config import GenerateConfig
from dimobench.suite.schema import Entity, Persona, State, Trait

NAME = "personas"
VERSION = "1"
READS: tuple[str, ...] = ()
WRITES = ("personas.jsonl",)
CONFIG_FIELDS = ("seed", "personas", "traits")
"""Config fields that change this stage's output (its fingerprint covers them and its upstream)."""

GENDERED = frozenset("""brother sister mum mom dad father mother uncle aunt grandfather grandmother grandma grandpa
son daughter husband wife niece nephew stepbrother stepsister boyfriend girlfriend""".split())


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
    personas = []
    for i in range(cfg.personas):
        first = _take(first_names, used_first)
        topics = rng.sample(catalog.topics, cfg.traits)
        traits = []
        for tp in topics:
            entry = rng.choice(tp.traits)
            traits.append(Trait(
                trait_id=entry.trait_id, topic=tp.topic,
                states=[State(state_id=s.state_id, description=s.description) for s in entry.states],
                initial_state=rng.choice(entry.states).state_id,
            ))
        relations = rng.sample(neutral, rng.randint(3, 5))
        entities = [Entity(entity_id=f"e{j + 1}", name=_take(first_names, used_first), relation=rel)
                    for j, rel in enumerate(relations)]
        profile: dict[str, object] = {
            "age": rng.randint(22, 68),
            "occupation": rng.choice(catalog.occupations),
            "city": rng.choice(catalog.cities),
        }
        personas.append(Persona(persona_id=f"p{i + 1:02d}", name=f"{first} {last_names[i]}", profile=profile,
                                traits=traits, entities=entities))
    return Output(personas=personas)


def _take(pool: list[str], used: set[str]) -> str:
    for name in pool:
        if name not in used:
            used.add(name)
            return name
    raise ValueError("the catalog has too few first names for this many personas")
