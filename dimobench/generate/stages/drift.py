"""Stage 2: drift schedules, the latent plan every label derives from.

Each persona's timeline is cut into one segment per drift. Inside segment j, drift j starts its transition
at a random point between 35% and 50% of the segment, changes state at the end of the transition (the
change point) and settles after a post-change stretch. Phases tile the timeline: stable before the first
onset, then transition, post_change and maintenance (until the next onset or the end). Traits are split into
drifting and stable ones; stable traits never change and carry the ``stability`` questions.
"""

from __future__ import annotations

import random

from pydantic import BaseModel

from dimobench.generate.config import GenerateConfig
from dimobench.suite.schema import Drift, Persona, PhaseSpan, Schedule

NAME = "drift"
VERSION = "1"
READS = ("personas.jsonl",)
WRITES = ("schedules.jsonl",)
CONFIG_FIELDS = ("seed", "turns", "drifts", "transition_frac", "post_change_frac")
"""Config fields that change this stage's output (its fingerprint covers them and its upstream)."""

STABLE_TRAITS_MIN = 2
"""At least this many traits per persona never drift, so ``stability`` questions always have a target."""


class Inputs(BaseModel):
    """What stage 2 reads: the personas from stage 1."""

    personas: list[Persona]


class Output(BaseModel):
    """Stage 2's result: one drift schedule (drifts and phase spans) per persona."""

    schedules: list[Schedule]


def run(cfg: GenerateConfig, inputs: Inputs, rng: random.Random) -> Output:
    """Plan ``cfg.drifts`` non-overlapping drifts per persona."""
    return Output(schedules=[_schedule(cfg, p, rng) for p in inputs.personas])


def _schedule(cfg: GenerateConfig, persona: Persona, rng: random.Random) -> Schedule:
    n_stable = max(STABLE_TRAITS_MIN, len(persona.traits) // 3)
    drifting = rng.sample(persona.traits, len(persona.traits) - n_stable)
    current = {t.trait_id: t.initial_state for t in persona.traits}
    drifts: list[Drift] = []
    seg = cfg.turns / cfg.drifts if cfg.drifts else cfg.turns
    for j in range(cfg.drifts):
        start, end = round(j * seg) + 1, round((j + 1) * seg)
        length = end - start + 1
        trait = rng.choice(drifting)
        to_state = rng.choice([s.state_id for s in trait.states if s.state_id != current[trait.trait_id]])
        onset = start + round(length * rng.uniform(0.35, 0.5))
        change = onset + max(6, round(length * cfg.transition_frac)) - 1
        settle = min(end - 1, change + max(4, round(length * cfg.post_change_frac)))
        drifts.append(Drift(drift_id=f"d{j + 1}", trait_id=trait.trait_id, from_state=current[trait.trait_id],
                            to_state=to_state, onset_turn=onset, change_point_turn=change, settle_turn=settle))
        current[trait.trait_id] = to_state
    return Schedule(persona_id=persona.persona_id, drifts=drifts, phases=phase_spans(drifts, cfg.turns))


def phase_spans(drifts: list[Drift], turns: int) -> list[PhaseSpan]:
    """Tile turns 1..``turns`` with phases; every turn falls in exactly one span."""
    if not drifts:
        return [PhaseSpan(start_turn=1, end_turn=turns, phase="stable", drift_id=None)]
    spans = [PhaseSpan(start_turn=1, end_turn=drifts[0].onset_turn - 1, phase="stable",
                       drift_id=drifts[0].drift_id)]
    for i, d in enumerate(drifts):
        spans.append(PhaseSpan(start_turn=d.onset_turn, end_turn=d.change_point_turn, phase="transition",
                               drift_id=d.drift_id))
        spans.append(PhaseSpan(start_turn=d.change_point_turn + 1, end_turn=d.settle_turn, phase="post_change",
                               drift_id=d.drift_id))
        last = drifts[i + 1].onset_turn - 1 if i + 1 < len(drifts) else turns
        spans.append(PhaseSpan(start_turn=d.settle_turn + 1, end_turn=last, phase="maintenance",
                               drift_id=d.drift_id))
    return [s for s in spans if s.end_turn >= s.start_turn]
