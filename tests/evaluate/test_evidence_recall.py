"""evidence_recall: the formula, k cut-off, skipped questions and per-type means."""

from __future__ import annotations

import pytest

from dimobench.evaluate.evidence import evidence_recall


def rec(evidence: list[int], recalled: list[list[int]], kind: str | None = "single-hop") -> dict[str, object]:
    return {"evidence_turns": evidence, "source_type": kind, "recalled_source_turns": recalled}


def test_formula_and_k_cutoff() -> None:
    records = [
        rec([3, 7], [[3], [9], [7]]),  # 7 only at rank 3
        rec([5], [[1, 5]], "temporal"),
        rec([2, 4, 6], [], "multi-hop"),  # nothing recalled
    ]
    r2 = evidence_recall(records, 2)
    assert r2["k"] == 2 and r2["questions"] == 3 and r2["skipped"] == 0
    assert r2["value"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert r2["by_type"] == {"multi-hop": 0.0, "single-hop": 0.5, "temporal": 1.0}
    assert evidence_recall(records, 3)["by_type"]["single-hop"] == 1.0


def test_questions_without_evidence_are_skipped_and_counted() -> None:
    r = evidence_recall([rec([], [[1]]), rec([1, 1], [[1]], None)], 5)
    assert r == {"k": 5, "value": 1.0, "by_type": {"none": 1.0}, "questions": 1, "skipped": 1}
    assert evidence_recall([rec([], [])], 1)["value"] is None


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError):
        evidence_recall([], 0)
