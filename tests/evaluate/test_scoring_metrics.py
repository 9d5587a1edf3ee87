"""Metric functions on hand-made answer sets with known results."""

from __future__ import annotations

import pytest

from dimobench.evaluate import scoring as sc


def row(turn: int, correct: bool | None, chosen: int = 0, stale: int | None = None, conf: int | None = None,
        trait: str = "t1", persona: str = "p1", qa_type: str = "current_state", phase: str = "stable") -> dict:
    return {"ask_turn": turn, "correct": correct, "chosen": chosen, "stale_index": stale,
            "confounder_index": conf, "trait_id": trait, "persona_id": persona, "qa_type": qa_type, "phase": phase}


def test_accuracy_and_groups() -> None:
    rows = [row(1, True), row(2, False, qa_type="temporal"), row(3, True, qa_type="temporal"), row(4, None)]
    assert sc.accuracy(rows) == pytest.approx(2 / 3)
    assert sc.accuracy([]) is None
    assert sc.accuracy_by(rows, "qa_type") == {"current_state": 1.0, "temporal": 0.5}


def test_stale_and_confounder_rates() -> None:
    rows = [row(1, False, chosen=2, stale=2), row(2, True, chosen=0, stale=2), row(3, False, chosen=1, conf=1),
            row(4, True, chosen=0, conf=3), row(5, True)]
    assert sc.stale_rate(rows) == 0.5
    assert sc.confounder_rate(rows) == 0.5
    assert sc.stale_rate([row(1, True)]) is None


def test_windows_and_plateau() -> None:
    rows = [row(5, True), row(60, False), row(70, True), row(95, True)]
    wins = sc.window_accuracy(rows, 50, 100)
    assert [(w["start"], w["end"], w["n"], w["accuracy"]) for w in wins] == [(1, 50, 1, 1.0), (51, 100, 3, 2 / 3)]
    assert sc.plateau(rows, 100) == 1.0  # only turn 95 is in the last 20%
    assert sc.window_accuracy([], 50, 120)[-1] == {"start": 101, "end": 120, "n": 0, "accuracy": None}


def test_recovery_turns() -> None:
    # change at 100; plateau (turns > 240 of 300) is 1.0; window 101-150 at 0.5, 151-200 at 1.0 -> 100 turns
    rows = [row(120, True), row(130, False), row(160, True), row(170, True), row(250, True), row(290, True)]
    cps = [{"persona_id": "p1", "trait_id": "t1", "turn": 100, "next_turn": 300}]
    assert sc.recovery_turns(rows, cps, 300, window=50) == [100]
    never = [row(120, False), row(160, False), row(250, True)]
    assert sc.recovery_turns(never, [{**cps[0], "next_turn": 240}], 300, window=50) == [None]


def test_normalized_edge_cases() -> None:
    assert sc.normalized(0.6, 0.3, 0.9) == pytest.approx(0.5)
    assert sc.normalized(0.6, None, 0.9) is None
    assert sc.normalized(0.6, 0.5, 0.5) is None


def test_bootstrap_intervals_are_seeded_and_contain_the_mean() -> None:
    hits = [True] * 30 + [False] * 10
    a = sc.bootstrap_rate_ci(hits, 500, seed=3)
    assert a == sc.bootstrap_rate_ci(hits, 500, seed=3)
    assert a is not None and a[0] <= 0.75 <= a[1]
    assert sc.bootstrap_rate_ci([True], 500) is None
    rows = [row(i, i % 4 != 0) for i in range(40)]
    ci = sc.bootstrap_ci(rows, sc.accuracy, 200, seed=1)
    assert ci is not None and ci[0] <= 0.75 <= ci[1]


def test_paired_bootstrap() -> None:
    a = [True, False, False, True, False] * 8
    b = [True, True, False, True, True] * 8
    res = sc.paired_bootstrap(a, b, 500, seed=0)
    assert res["diff"] == pytest.approx(0.4) and res["n"] == 40
    assert 0 < res["lo"] <= 0.4 <= res["hi"]
    with pytest.raises(ValueError):
        sc.paired_bootstrap([True], [True, False])
    assert sc.percentile([1.0, 2.0, 3.0], 50) == 2.0 and sc.percentile([], 50) is None
