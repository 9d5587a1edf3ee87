"""Stage 5: questions, with gold answers taken from the latent plan (DESIGN.md section 3).

How an item is built (ask turns, type weights, the four options) is :mod:`dimobench.suite.questions`, which
verification's repair and defect planting share; this stage runs it once per persona.
"""

from __future__ import annotations

import random

from pydantic import BaseModel

from dimobench.catalog import Catalog
from dimobench.generate.config import GenerateConfig
from dimobench.generate.parallel import per_persona_stream
from dimobench.suite.evidence import EvidenceIndex
from dimobench.suite.plan import LatentPlan, turns_by_persona
from dimobench.suite.questions import QuestionMaker
from dimobench.suite.schema import Persona, QAItem, Schedule, Turn

NAME = "qa"
VERSION = "1"
RULES_VERSION = "3"
"""The version under the validity rules or catalog v3 (:func:`dimobench.generate.pipeline.stage_versions`):
no option the user said on another subject; a persona's less-offered texts first (2); one question per trait at
one turn (3, session 31)."""
READS = ("personas.jsonl", "schedules.jsonl", "dialogues.jsonl")
WRITES = ("qa.jsonl",)
CONFIG_FIELDS = ("seed", "qa", "turns", "generator", "qa_rules")
"""Config fields that change this stage's output (its fingerprint covers them and its upstream)."""


class Inputs(BaseModel):
    """What stage 5 reads: the catalog, personas, schedules and the final turns (confounders included)."""

    catalog: Catalog
    personas: list[Persona]
    schedules: list[Schedule]
    turns: list[Turn]


class Output(BaseModel):
    """Stage 5's result: every persona's questions with their gold answers."""

    qa: list[QAItem]


def run(cfg: GenerateConfig, inputs: Inputs, rng: random.Random, workers: int = 1) -> Output:
    """One :class:`QuestionMaker` per persona, each on its own random stream (``workers``: processes writing
    personas at once, :func:`~dimobench.generate.parallel.per_persona_stream`; the bytes are the same)."""
    made = per_persona_stream(_persona, (cfg, inputs, turns_by_persona(inputs.turns)), rng, len(inputs.personas),
                              workers)
    return Output(qa=[item for items in made for item in items])


def _persona(shared: tuple[GenerateConfig, Inputs, dict[str, list[Turn]]], i: int, prng: random.Random
             ) -> list[QAItem]:
    cfg, inputs, by_persona = shared
    persona, schedule = inputs.personas[i], inputs.schedules[i]
    index = EvidenceIndex.build(by_persona[persona.persona_id])
    maker = QuestionMaker(inputs.catalog, LatentPlan(persona, schedule), index, prng, rules=cfg.qa_rules)
    return maker.make_all(cfg.qa_per_persona, cfg.turns)
