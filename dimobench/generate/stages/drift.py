"""Stage 2: drift schedules, the latent plan every label derives from.

Each persona's timeline is cut into one segment per drift. Inside segment j, drift j starts its transition
at a random point between 35% and 50% of the segment, changes state at the end of the transition (the
change point) and settles after a post-change stretch. Phases tile the timeline: stable before the first
onset, then transition, post_change and maintenance (until the next onset or the end). Traits are split into
drifting and stable ones; stable traits never change and carry the ``stability`` questions. A state the catalog
marks ``settled`` (a partner and young kids) is never a drift's start or end: a persona holding one keeps that
trait stable, and no drift leads into one.
"""

from __future__ import annotations

import random

from pydantic import BaseModel

from dimobench.catalog import Catalog
from dimobench.errors import ConfigError
from dimobench.generate.config import GenerateConfig
from dimobench.suite.plan import clashing
from dimobench.suite.schema import Drift, Persona, PhaseSpan, Schedule

NAME = "drift"
VERSION = "1"
TEXT_RULES_VERSION = "2"
"""The version with a catalog of text rules v3: no drift into a state that clashes with one another trait holds
then (2, session 31, :attr:`dimobench.catalog.Catalog.clashes`)."""
READS = ("personas.jsonl",)
WRITES = ("schedules.jsonl",)
CONFIG_FIELDS = ("seed", "turns", "drifts", "transition_frac", "post_change_frac")
"""Config fields that change this stage's output (its fingerprint covers them and its upstream)."""

STABLE_TRAITS_MIN = 2
"""At least this many traits per persona never drift, so ``stability`` questions always have a target."""


class Inputs(BaseModel):
    """What stage 2 reads: the personas from stage 1, and the catalog for its ``settled`` states (None: none)."""

    personas: list[Persona]
    catalog: Catalog | None = None


class Output(BaseModel):
    """Stage 2's result: one drift schedule (drifts and phase spans) per persona."""

    schedules: list[Schedule]


def run(cfg: GenerateConfig, inputs: Inputs, rng: random.Random) -> Output:
    """Plan ``cfg.drifts`` non-overlapping drifts per persona."""
    settled = set() if inputs.catalog is None else {
        (tr.trait_id, st.state_id) for tp in inputs.catalog.topics for tr in tp.traits for st in tr.states
        if st.settled}
    clash = {} if inputs.catalog is None else clashing(inputs.catalog)
    return Output(schedules=[_schedule(cfg, p, rng, settled, clash) for p in inputs.personas])


def _schedule(cfg: GenerateConfig, persona: Persona, rng: random.Random, settled: set[tuple[str, str]],
              clash: dict[tuple[str, str], set[tuple[str, str]]]) -> Schedule:
    n_stable = max(STABLE_TRAITS_MIN, len(persona.traits) // 3)
    # without settled states this is every trait, in order, so catalogs without them keep their schedules
    movable = [t for t in persona.traits if (t.trait_id, t.initial_state) not in settled
               and any((t.trait_id, s.state_id) not in settled for s in t.states if s.state_id != t.initial_state)]
    drifting = rng.sample(movable, min(len(persona.traits) - n_stable, len(movable)))
    if cfg.drifts and not drifting:
        raise ConfigError(f"persona {persona.persona_id}: no trait can drift (each is in a settled state or has "
                          "only settled states to go to); mark fewer states settled in the catalog")
    current = {t.trait_id: t.initial_state for t in persona.traits}
    drifts: list[Drift] = []
    seg = cfg.turns / cfg.drifts if cfg.drifts else cfg.turns
    for j in range(cfg.drifts):
        start, end = round(j * seg) + 1, round((j + 1) * seg)
        length = end - start + 1
        trait = rng.choice(drifting)
        options = [s.state_id for s in trait.states if s.state_id != current[trait.trait_id]
                   and (trait.trait_id, s.state_id) not in settled]
        # not into a state another trait's current one rules out (a night-shift sleeper into a daytime office)
        held = {(tid, st) for tid, st in current.items() if tid != trait.trait_id}
        to_state = rng.choice([s for s in options if not clash.get((trait.trait_id, s), set()) & held] or options)
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
