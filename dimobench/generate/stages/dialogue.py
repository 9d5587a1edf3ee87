"""Stage 3: dialogue. Each turn gets a spec (cue or filler) from the plan, then the renderer writes it.

Cue turns show one trait's state through behaviour. During a transition the share of cues showing the new
state ramps linearly from 10% to 90% while the latent state is still the old one; post_change cues all show the
new state; maintenance has fewer cues. The drifting trait gets four times the cue weight of the others while
its drift is active (ACTIVE_DRIFT_WEIGHT), so the change is visible without drowning the stable traits. A
state written as composed ``acts`` (catalog v3) is shown by composed turns, and a catalog with
``filler_acts`` composes most of its fillers too; the first :data:`TRIAL_CUES` cues of a drift's new state
open as a first try (``trial_leads``), so the change begins hesitantly; about as many other cues open so too
(:data:`TRIAL_DECOY_SHARE`), so a lead alone marks no change. In catalog v3 a cue whose state has nothing new to
tell now (every context told, or the untold ones out of season or barred) becomes a filler, except a drift's
forced cues and first tries, and sessions start at hours that fit the persona's sleep (:data:`SLEEP_TRAIT`).
"""

from __future__ import annotations

import random

from pydantic import BaseModel

from dimobench.catalog import Catalog
from dimobench.generate.clock import SESSION_HOURS, SLEEP_HOURS, Clock
from dimobench.generate.config import GenerateConfig
from dimobench.generate.parallel import per_persona_stream
from dimobench.generate.persona_slots import city_slot, friends_of
from dimobench.generate.text import Renderer
from dimobench.suite.plan import LatentPlan
from dimobench.suite.schema import Annotation, Drift, Persona, Schedule, Turn

NAME = "dialogue"
VERSION = "1"
RULES_VERSION = "3"
"""The version under the validity rules or catalog v3 (:func:`dimobench.generate.pipeline.stage_versions`):
the persona's own city fills {city} under the validity rules and catalog v3 alike (2); the renderer of sessions
26-27 draws the least recently used contexts and asks and reopens a spent turn behind one lead, a trial turn's
own (3), so ``--resume`` with an unchanged v3 catalog reruns the dialogue stage."""
TEXT_RULES_VERSION = "10"
"""The version with a catalog of text rules v3: elderflowers picked only in May and June (4, session 28,
:data:`dimobench.catalog.SEASONAL`, whose words only v3 text rules read); picnics in the warm months, a Wimbledon
ballot's result in spring, no camping at a festival in the cold months (5, session 29); a state the persona came
to by a drift told without years of history (6, session 29, :data:`dimobench.catalog.LONG_HELD`), and a
``{clock}`` that happened earlier today no later than the turn's own time; the acts of one
:attr:`dimobench.catalog.Act.group` told once between them, and Record Store Day only in the months before it (7,
session 30); a past "this {weekday}" a day already past, a past "this {month}" not in its first days, no old dog
for a new owner (8, session 31); sessions at hours the persona's sleep allows, no present "this evening" at
23:38, a cue with nothing new to tell turned filler, trial leads on other cues too (9, session 32); those other
cues' leads fit a habit held for years (10, session 33)."""
READS = ("personas.jsonl", "schedules.jsonl")
WRITES = ("dialogues.jsonl",)
CONFIG_FIELDS = ("seed", "turns", "cue_rate", "maintenance_cue_rate", "generator", "qa_rules")
"""Config fields that change this stage's output (its fingerprint covers them and its upstream)."""

ACTIVE_DRIFT_WEIGHT = 4.0
COMPOSED_FILLER_SHARE = 0.9
"""Share of fillers composed from ``filler_acts`` where the catalog has them (the fixed ones repeat across seeds)."""
TRIAL_CUES = 2
"""The first cues of a drift's new state open with one of the catalog's ``trial_leads`` (catalog v3)."""
FORCED_EVERY = 5
"""While a drift is active every fifth turn is a cue of its trait, so short transitions are never empty."""
TRIAL_DECOY_SHARE = 0.015
"""Catalog v3: the share of the other cues that open with a trial lead too (a new thing tried within a habit), about
as many as the drifts' first tries, so a lead marks no change (the blind read of seed 2811 found each drift's onset
by its "Small experiment:")."""
SLEEP_TRAIT = "sleep_schedule"
"""The trait whose state sets the hours sessions start in (:data:`dimobench.generate.clock.SLEEP_HOURS`)."""


class Inputs(BaseModel):
    """What stage 3 reads: the catalog, and every persona with its drift schedule."""

    catalog: Catalog
    personas: list[Persona]
    schedules: list[Schedule]


class Output(BaseModel):
    """Stage 3's result: every persona's turns, each a cue or a filler."""

    turns: list[Turn]
    used_user: dict[str, list[str]]
    """Per persona, user texts already used (stage 4 keeps confounders distinct from them)."""


def run(cfg: GenerateConfig, inputs: Inputs, rng: random.Random, workers: int = 1) -> Output:
    """Write ``cfg.turns`` turns per persona, each a cue or a filler as the latent plan and the cue rates decide
    (``workers``: processes writing personas at once, :func:`~dimobench.generate.parallel.per_persona_stream`)."""
    made = per_persona_stream(_persona, (cfg, inputs), rng, len(inputs.personas), workers)
    return Output(turns=[t for turns, _ in made for t in turns],
                  used_user={p.persona_id: used for p, (_, used) in zip(inputs.personas, made, strict=True)})


def _persona(shared: tuple[GenerateConfig, Inputs], i: int, prng: random.Random) -> tuple[list[Turn], list[str]]:
    """One persona's turns, and the user texts it said."""
    cfg, inputs = shared
    persona, schedule = inputs.personas[i], inputs.schedules[i]
    turns: list[Turn] = []
    plan = LatentPlan(persona, schedule)
    renderer = Renderer(inputs.catalog, prng, persona.name.split()[0],
                        {persona.name.split()[0], *(e.name for e in persona.entities)},
                        city_slot(persona, cfg.qa_rules, inputs.catalog), friends_of(persona))
    clock = Clock(prng)
    tried: dict[str, int] = {}
    initial = {tr.trait_id: tr.initial_state for tr in persona.traits}
    v3 = inputs.catalog.text_rules == "v3"
    sleeps = v3 and SLEEP_TRAIT in initial
    for t in range(1, cfg.turns + 1):
        session, ts = clock.tick(SLEEP_HOURS.get(plan.state_at(SLEEP_TRAIT, t), SESSION_HOURS) if sleeps
                                 else SESSION_HOURS)
        renderer.at(ts)
        spec = _spec(cfg, plan, t, prng)
        renderer.barred = plan.barred(inputs.catalog, t, spec[0] if spec else None)
        if spec is None:
            user, assistant = _filler(inputs.catalog, renderer, prng)
            ann = Annotation(kind="filler")
        else:
            trait_id, state_id = spec
            state = next(s for s in inputs.catalog.trait(trait_id).states if s.state_id == state_id)
            key = f"cue:{trait_id}:{state_id}"
            drift = plan.active_drift(t)
            trial = (drift is not None and drift.trait_id == trait_id and drift.to_state == state_id
                     and t <= drift.change_point_turn and tried.get(drift.drift_id, 0) < TRIAL_CUES
                     and bool(inputs.catalog.trial_leads) and bool(state.acts))
            leads = inputs.catalog.trial_leads
            if trial and drift is not None:
                tried[drift.drift_id] = tried.get(drift.drift_id, 0) + 1
            elif v3 and inputs.catalog.trial_leads and state.acts and (drift is None or drift.trait_id != trait_id):
                trial = prng.random() < TRIAL_DECOY_SHARE
                # a twist on a habit the user may have held for years: no "Never done this before." (the blind
                # read of seed 2891 took one on a long-held state for a change)
                leads = inputs.catalog.habit_trial_leads or leads
            # a state the persona came to by a drift has no years of history yet (v3 catalogs only)
            new_to_it = v3 and state_id != initial[trait_id]
            forced = _forced(drift, t) and drift is not None and drift.trait_id == trait_id
            may_rest = v3 and bool(state.acts) and not trial and not forced
            made = (renderer.render_untold_act(key, state.acts, state.parts, state.fixed_parts, new_to_it)
                    if may_rest else None)
            if made is None and may_rest:
                # nothing new to tell of this state now (blind read of seed 2811: a new state's few stories
                # told two and three times within twenty turns): the user talks of something else, which
                # says nothing the cued state bars either
                renderer.barred = plan.barred(inputs.catalog, t)
                user, assistant = _filler(inputs.catalog, renderer, prng)
                ann = Annotation(kind="filler")
            else:
                user, assistant = made or (renderer.render_act(key, state.acts, state.parts,
                                                               leads if trial else None, state.fixed_parts,
                                                               new_to_it)
                                           if state.acts else renderer.render(key, state.cues))
                ann = Annotation(kind="cue", trait_id=trait_id, state_id=state_id)
        turns.append(Turn(persona_id=persona.persona_id, turn=t, session=session, timestamp=ts, user=user,
                          assistant=assistant, annotation=ann))
    return turns, sorted(renderer.used_user)


def _filler(catalog: Catalog, renderer: Renderer, rng: random.Random) -> tuple[str, str]:
    """A fixed filler, or where the catalog has composed fillers, a composed one for :data:`COMPOSED_FILLER_SHARE`:
    one of an act the persona has told nothing of while there is one (a preset persona never runs out), else a
    context of an act told before in other words (an XL persona, after some 250 composed fillers)."""
    if catalog.filler_acts and rng.random() < COMPOSED_FILLER_SHARE:
        return (renderer.render_fresh_act("filler_act", catalog.filler_acts)
                or renderer.render_act("filler_act", catalog.filler_acts))
    return renderer.render("filler", catalog.filler)


def _forced(drift: Drift | None, t: int) -> bool:
    """Whether turn ``t`` is a cue the active ``drift`` forces on its trait (every :data:`FORCED_EVERY` turns from
    its onset; such a cue is told even with nothing new to tell)."""
    return drift is not None and (t - drift.onset_turn) % FORCED_EVERY == 0


def _spec(cfg: GenerateConfig, plan: LatentPlan, t: int, rng: random.Random) -> tuple[str, str] | None:
    """(trait, state) for a cue turn, or None for filler."""
    phase = plan.phase_at(t)
    rate = cfg.maintenance_cue_rate if phase == "maintenance" else cfg.cue_rate
    drift = plan.active_drift(t)
    forced = _forced(drift, t)
    if not forced and rng.random() >= rate:
        return None
    traits = [tr.trait_id for tr in plan.persona.traits]
    weights = [ACTIVE_DRIFT_WEIGHT if drift and tid == drift.trait_id else 1.0 for tid in traits]
    trait_id = drift.trait_id if forced and drift else rng.choices(traits, weights)[0]
    if drift and trait_id == drift.trait_id and t <= drift.change_point_turn:
        span = max(1, drift.change_point_turn - drift.onset_turn)
        p_new = 0.1 + 0.8 * (t - drift.onset_turn) / span
        return trait_id, drift.to_state if rng.random() < p_new else drift.from_state
    return trait_id, plan.state_at(trait_id, t)
