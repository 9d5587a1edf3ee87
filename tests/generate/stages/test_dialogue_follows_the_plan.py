"""Dialogue and confounders: cues follow the plan, the transition ramps, confounders never change the truth."""

from __future__ import annotations

from pathlib import Path

from dimobench.suite.load import load_suite
from dimobench.suite.plan import LatentPlan


def test_cues_follow_the_latent_plan_and_the_transition_ramps(xl_suite: Path) -> None:
    suite = load_suite(xl_suite)
    early: list[bool] = []
    late: list[bool] = []
    for persona, sched in zip(suite.personas, suite.schedules):
        plan = LatentPlan(persona, sched)
        turns = suite.turns_of(persona.persona_id)
        for d in sched.drifts:
            cues = [t for t in turns if t.annotation and t.annotation.kind == "cue"
                    and t.annotation.trait_id == d.trait_id]
            trans = [t for t in cues if d.onset_turn <= t.turn <= d.change_point_turn]
            assert len(trans) >= 5
            half = (d.onset_turn + d.change_point_turn) / 2
            early += [t.annotation.state_id == d.to_state for t in trans if t.turn <= half]
            late += [t.annotation.state_id == d.to_state for t in trans if t.turn > half]
            post = [t for t in cues if d.change_point_turn < t.turn <= d.settle_turn]
            assert post and all(t.annotation.state_id == d.to_state for t in post)
        for t in turns:
            a = t.annotation
            if a.kind == "cue" and not any(d.onset_turn <= t.turn <= d.change_point_turn
                                           and d.trait_id == a.trait_id for d in sched.drifts):
                assert a.state_id == plan.state_at(a.trait_id, t.turn)
    # gradual, not a switch: both states appear in each half, the new one more often later
    assert 0.1 < sum(early) / len(early) < sum(late) / len(late) < 0.95


def test_confounders_show_states_the_user_is_not_in(small_suite: Path) -> None:
    suite = load_suite(small_suite)
    kinds: dict[str, int] = {}
    for persona, sched in zip(suite.personas, suite.schedules):
        plan = LatentPlan(persona, sched)
        names = {e.entity_id: e.name for e in persona.entities}
        for t in suite.turns_of(persona.persona_id):
            a = t.annotation
            kinds[a.kind] = kinds.get(a.kind, 0) + 1
            if a.kind in ("entity", "decoy"):
                assert a.state_id != plan.state_at(a.trait_id, t.turn)
            if a.kind == "entity":
                assert names[a.entity_id] in t.user
    assert {"cue", "filler", "chatter", "entity", "decoy"} <= set(kinds)
    total = sum(kinds.values())
    assert 0.1 < (kinds["chatter"] + kinds["entity"] + kinds["decoy"]) / total < 0.25


def test_sessions_and_timestamps_advance(small_suite: Path) -> None:
    suite = load_suite(small_suite)
    for p in suite.personas:
        turns = suite.turns_of(p.persona_id)
        stamps = [t.timestamp for t in turns]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        sessions = [t.session for t in turns]
        assert sessions == sorted(sessions) and sessions[0] == 1
        sizes = [sessions.count(s) for s in set(sessions)]
        assert max(sizes) <= 12


def test_user_turns_are_distinct_and_fully_rendered(xl_suite: Path) -> None:
    suite = load_suite(xl_suite)
    for p in suite.personas:
        users = [t.user for t in suite.turns_of(p.persona_id)]
        assert len(set(users)) / len(users) >= 0.97
        assert not [u for u in users if "{" in u or "}" in u]
