"""The oracle: current states for every question, superseded ones too when the question is about the past."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dimobench import embed
from dimobench.evaluate.systems.oracle import PAST_SCORE, OracleMemory
from dimobench.suite.load import load_suite


@pytest.fixture
def minilm() -> Iterator[None]:
    # the oracle ranks with the process-wide embedder; other tests leave it on the hashing fallback
    before = embed._DEFAULT[0]
    embed.set_default_backend("minilm")
    yield
    embed.set_default_backend(before)


def test_past_question_gets_the_superseded_state_within_k(small_suite: Path, minilm: None) -> None:
    suite = load_suite(small_suite)
    oracle = OracleMemory()
    oracle.bind_suite(suite)
    checked = 0
    for schedule in suite.schedules:
        plan = oracle.plans[schedule.persona_id]
        k = 4
        assert len(plan.persona.traits) + len(schedule.drifts) > k  # more states than k: ranking decides
        oracle.reset(schedule.persona_id)
        for drift in schedule.drifts:
            oracle.observe({"turn": drift.change_point_turn + 20})
            trait = drift.trait_id
            old = plan.description(trait, drift.from_state)
            now = plan.description(trait, plan.state_at(trait, drift.change_point_turn + 20))
            label = trait.replace("_", " ")
            past = oracle.recall(f"Before things shifted, what was the user's {label} like?", k)
            assert any(str(it["text"]).startswith(old) and it["score"] == PAST_SCORE for it in past)
            assert any(str(it["text"]).startswith(now) and it["score"] == 1.0 for it in past)
            current = oracle.recall(f"What is the user's {label} like at the moment?", k)
            assert not any(it["score"] == PAST_SCORE for it in current)
            checked += 1
    assert checked >= 3
