"""Stage 4: confounders replace filler turns; they never change the latent state.

Three kinds (DESIGN.md section 3):
- ``chatter``: the topic's keywords, about other people or the world, not the user;
- ``entity``: a named person the user knows showing a state the user is *not* in now (before a change point
  often the upcoming state, which baits premature correction; after it often the old one, which baits
  old-memory pull); in catalog v3 any state, the user's own included, so a mention carries no answer;
- ``decoy``: the user recalling their own distant past in a state they are not in now (catalog v3: a state
  they never hold in the suite's span, so the recollection cannot contradict the timeline, and one such past
  per trait, so that remembering what the user left behind rules out one option at most).
Stable traits get their share, so ``stability`` questions always follow confounders that suggest a change.
"""

from __future__ import annotations

import random
from collections import Counter

from pydantic import BaseModel

from dimobench.catalog import Catalog, in_season
from dimobench.generate.config import GenerateConfig
from dimobench.generate.parallel import per_persona_stream
from dimobench.generate.persona_slots import city_slot, friends_of
from dimobench.generate.text import Renderer, habit_of
from dimobench.suite.plan import LatentPlan, turns_by_persona
from dimobench.suite.schema import Annotation, Entity, Persona, Schedule, Turn

NAME = "confounders"
VERSION = "1"
RULES_VERSION = "2"
"""The version under the validity rules or catalog v3 (:func:`dimobench.generate.pipeline.stage_versions`):
the persona's own city fills {city} under the validity rules and catalog v3 alike."""
TEXT_RULES_VERSION = "6"
"""The version with a catalog of text rules v3: a persona tells each distant past once, and none that a trait it
holds also shows (3, session 29); a persona has one distant past per trait, and a habit with a seasonal word is
told only in its season (4, session 30); chatter tells a past day of this week or month only once it has gone
by, a distant past is recalled at most :data:`PAST_TELLINGS` times and never of a trait that changes in the
span, a habit is told of one person only, and at most :data:`PERSON_TELLINGS` things of one person (5, session
31); a trait's distant past is not recalled again within :data:`PAST_GAP` turns (6, session 33)."""
READS = ("personas.jsonl", "schedules.jsonl", "dialogues.jsonl")
WRITES = ("dialogues.jsonl",)
CONFIG_FIELDS = ("seed", "confounder_rate", "generator", "qa_rules")
"""Config fields that change this stage's output (its fingerprint covers them and its upstream)."""

KIND_WEIGHTS = {"chatter": 0.4, "entity": 0.4, "decoy": 0.2}
PAST_TELLINGS = 2
"""Times a persona recalls the distant past of one trait (catalog v3)."""
PAST_GAP = 60
"""Turns between two recalls of one trait's distant past (catalog v3; the blind read of seed 2871 met them on
consecutive turns, a tic rather than a memory)."""
PERSON_TELLINGS = 4
"""Things a persona tells of one person it knows (catalog v3)."""
TRAIT_TELLINGS = 2
"""Things a persona tells of one trait of one person it knows (catalog v3)."""


class Inputs(BaseModel):
    """What stage 4 reads: the catalog, personas, schedules, stage 3's turns and the user texts it used."""

    catalog: Catalog
    personas: list[Persona]
    schedules: list[Schedule]
    turns: list[Turn]
    used_user: dict[str, list[str]]


class Output(BaseModel):
    """Stage 4's result: every persona's turns, some fillers now confounders."""

    turns: list[Turn]


def run(cfg: GenerateConfig, inputs: Inputs, rng: random.Random, workers: int = 1) -> Output:
    """Replace a ``cfg.confounder_rate`` share of each persona's turns, drawn from its fillers, with confounders
    (``workers``: processes writing personas at once, :func:`~dimobench.generate.parallel.per_persona_stream`)."""
    made = per_persona_stream(_persona, (cfg, inputs, turns_by_persona(inputs.turns)), rng, len(inputs.personas),
                              workers)
    return Output(turns=[t for turns in made for t in turns])


def _persona(shared: tuple[GenerateConfig, Inputs, dict[str, list[Turn]]], k: int, prng: random.Random
             ) -> list[Turn]:
    cfg, inputs, by_persona = shared
    persona, schedule = inputs.personas[k], inputs.schedules[k]
    plan = LatentPlan(persona, schedule)
    first = persona.name.split()[0]
    renderer = Renderer(inputs.catalog, prng, first, {first, *(e.name for e in persona.entities)},
                        city_slot(persona, cfg.qa_rules, inputs.catalog), friends_of(persona))
    renderer.used_user = set(inputs.used_user.get(persona.persona_id, ()))
    turns = [t.model_copy() for t in by_persona[persona.persona_id]]
    fillers = [i for i, t in enumerate(turns) if t.annotation and t.annotation.kind == "filler"]
    n = min(len(fillers), round(cfg.confounder_rate * len(turns)))
    shown_as: dict[tuple[str, str], str] = {}  # (entity, trait) -> the state that person was shown in
    told: set[tuple[str, str]] = set()  # (entity, habit) already told of that person
    pasts: dict[str, tuple[str, int]] = {}  # trait -> the one state its distant past shows, when last recalled
    for i in sorted(prng.sample(fillers, n)):
        kind = prng.choices(list(KIND_WEIGHTS), list(KIND_WEIGHTS.values()))[0]
        renderer.at(turns[i].timestamp)
        made = _confounder(kind, turns[i].turn, plan, inputs.catalog, renderer, prng, shown_as, told, pasts)
        if made is not None:
            user, assistant, ann = made
            turns[i] = turns[i].model_copy(update={"user": user, "assistant": assistant, "annotation": ann})
    return turns


def _confounder(kind: str, t: int, plan: LatentPlan, catalog: Catalog, renderer: Renderer,
                rng: random.Random, shown_as: dict[tuple[str, str], str],
                told: set[tuple[str, str]], pasts: dict[str, tuple[str, int]]
                ) -> tuple[str, str, Annotation] | None:
    traits = [tr.trait_id for tr in plan.persona.traits]
    drift = plan.active_drift(t)
    weights = [2.0 if (drift and tid == drift.trait_id) or tid in plan.stable_traits else 1.0 for tid in traits]
    said = {h for _, h in told}
    if kind == "decoy" and catalog.text_rules == "v3":
        # a distant past is recalled at most PAST_TELLINGS times: "years ago I soldiered on through illness" in
        # five wordings in one dialogue (the blind read of seed 2731) is a tic, not a memory
        recalled = {tid: _times_told("", st.habits, told) for tid, (past, _) in pasts.items()
                    for st in catalog.trait(tid).states if st.state_id == past}
        # and none of a trait that changes in the span: "years ago I ..." would be a second state held before the
        # change a temporal question asks about (the blind read of seed 2747)
        changing = plan.drifting_traits
        weights = [0.0 if recalled.get(tid, 0) >= PAST_TELLINGS or tid in changing
                   or (tid in pasts and t - pasts[tid][1] < PAST_GAP) else w
                   for tid, w in zip(traits, weights, strict=True)]
        if not any(weights):
            return None
    trait_id = rng.choices(traits, weights)[0]
    entry = catalog.trait(trait_id)
    if kind == "chatter":
        topic = catalog.topic_of(trait_id)
        user, assistant = renderer.render(f"chatter:{topic.topic_id}", topic.chatter)
        return user, assistant, Annotation(kind="chatter", trait_id=trait_id)
    now = plan.state_at(trait_id, t)
    others = [s for s in entry.states if s.state_id != now]
    if kind == "decoy" and catalog.text_rules == "v3":
        # "Years ago I ..." must not name a state the user holds inside the suite's span (the timeline would
        # contradict it); where every state is held, the turn stays a filler.
        held = plan.held_states(trait_id)
        # nor a state whose options a state of another of the persona's traits also supports (conflicts.json):
        # "years ago I hand-made objects at a workbench" beside this week's dovetailed table (the blind read of
        # seed 2637). Any state of those traits, held or not: barring only the held ones left the distant past
        # unlike every answer and like some wrong options, which `past_inverse` read (0.36 on seed 2671)
        own = {(t.trait_id, st.state_id) for t in plan.persona.traits if t.trait_id != trait_id
               for st in catalog.trait(t.trait_id).states}
        never = [s for s in entry.states if s.state_id not in held
                 and not any(tuple(c) in own for o in (*s.answers, *s.recommendations)
                             for c in catalog.conflicts.get(o, ()))]
        if not never or entry.min_age:
            # a trait with a minimum age is bound to a stage of life ("eased gradually into semi-retirement"
            # years ago at 43: blind read of seed 2041), so no distant past of it is told
            return None
        # One distant past per trait: a persona who recalled three abandoned ways of learning answered every
        # question on it by elimination (`dimobench audit`'s past_inverse: 0.442 on XL seed 2636), and no one
        # has three former lives of one habit. The held states never change, so the first pick stays in `never`.
        if trait_id not in pasts:
            pasts[trait_id] = (rng.choice(never).state_id, -PAST_GAP)  # not recalled yet
        shown = next(s for s in never if s.state_id == pasts[trait_id][0])
    elif kind == "decoy":
        change = plan.last_change(trait_id, t)
        # A drifted trait's decoy recalls the state it left; a stable trait's recalls a distant past.
        shown = next(s for s in entry.states if s.state_id == change.from_state) if change else rng.choice(others)
    else:
        upcoming = drift.to_state if drift and drift.trait_id == trait_id and t <= drift.change_point_turn else None
        pick = [s for s in others if s.state_id == upcoming]
        # catalog v3: other people hold the user's own state too, so an option a confounder mentions is not
        # thereby wrong (the inverse of the recent-mention shortcut reads that off otherwise)
        pool = entry.states if catalog.text_rules == "v3" else others
        shown = pick[0] if pick and rng.random() < 0.6 else rng.choice(pool)
    if kind == "decoy":
        habits = shown.habits
        if catalog.text_rules == "v3":
            # a distant past is told once ("back then I wore smart tailored suits" twice in five minutes: the
            # blind read of seed 2627); the user's own habits are told as ("", habit)
            habits = [h for h in shown.habits if h not in said and _in_season(h, renderer)]
            if not habits:
                return None
        habit = rng.choice(habits)
        told.add(("", habit))
        if trait_id in pasts:
            pasts[trait_id] = (shown.state_id, t)
        user, assistant = renderer.render("decoy", catalog.decoy, habit=habit_of(habit, catalog, None))
        return user, assistant, Annotation(kind="decoy", trait_id=trait_id, state_id=shown.state_id)
    if catalog.text_rules != "v3":
        habit = rng.choice(shown.habits)
        ent = rng.choice(plan.persona.entities)
    else:
        # One person keeps one state of a trait (blind read of seed 1911: an old school friend coding, then
        # feeding a cat, walking a hound, and the cat again), and one thing about a person is news once (seed
        # 2071: a line about a relative told again word for word): someone shown in this state with something
        # left to tell, else someone not yet shown in any (of those, someone shown in the fewest traits so far:
        # blind read of seed 2111, a cousin who had every habit the user's traits offer), else someone shown in
        # another state keeps theirs; when nobody has anything left, the turn stays a filler.
        by_id = {st.state_id: st for st in entry.states}
        # and a person is not a running commentary: at most PERSON_TELLINGS things about one person and
        # TRAIT_TELLINGS about one of their traits (the blind read of seed 2747: a landlord six times, an aunt's
        # check-ups three times)
        tellings = Counter(who for who, _ in told)

        def untold(e: Entity) -> list[str]:
            state = by_id[shown_as.get((e.entity_id, trait_id), shown.state_id)]
            told_of = _times_told(e.entity_id, state.habits, told)
            if tellings[e.entity_id] >= PERSON_TELLINGS or told_of >= TRAIT_TELLINGS:
                return []
            # and in season: "my niece took a picnic to the park" is not news in January (season_clash, seed 2676)
            # a habit is told of one person only: "my stepbrother glanced at email briefings and abandoned most
            # partway" beside the user's own distant past in the same words (the blind read of seed 2731)
            return [h for h in state.habits if h not in said and _in_season(h, renderer)]

        people = [e for e in plan.persona.entities if untold(e)]
        same = [e for e in people if shown_as.get((e.entity_id, trait_id)) == shown.state_id]
        free = [e for e in people if (e.entity_id, trait_id) not in shown_as]
        if free:
            shown_in = {e.entity_id: sum(1 for eid, _ in shown_as if eid == e.entity_id) for e in free}
            fewest = min(shown_in.values())
            free = [e for e in free if shown_in[e.entity_id] == fewest]
        if not people:
            return None
        ent = rng.choice(same or free or people)
        shown = by_id[shown_as.setdefault((ent.entity_id, trait_id), shown.state_id)]
        habit = rng.choice(untold(ent))
        told.add((ent.entity_id, habit))
    user, assistant = renderer.render("entity", catalog.entity, habit=habit_of(habit, catalog, ent.name),
                                      entity=ent.name, relation=ent.relation)
    return user, assistant, Annotation(kind="entity", trait_id=trait_id, state_id=shown.state_id,
                                       entity_id=ent.entity_id)


def _in_season(habit: str, renderer: Renderer) -> bool:
    """Whether ``habit`` fits the month the renderer writes in (any, where it keeps no month)."""
    return renderer.month is None or in_season(habit, renderer.month)


def _times_told(who: str, habits: list[str], told: set[tuple[str, str]]) -> int:
    """How many of one state's ``habits`` were told of ``who`` ("" for the user's own distant past)."""
    return sum((who, h) in told for h in habits)
