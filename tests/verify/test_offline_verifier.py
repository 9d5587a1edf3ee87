"""Behaviour of ``verify_suite``: clean suites pass, planted defects are caught, hand edits are re-judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dimobench.errors import InputError
from dimobench.suite.io import sha256_file
from dimobench.suite.schema import CriterionResult
from dimobench.verify import verify_suite
from dimobench.verify.calibrate import calibrate
from dimobench.verify.criteria import CRITERIA
from dimobench.verify.verdicts import item_verdict


def _qa(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "qa.jsonl").read_text().splitlines()]


def test_clean_suite_is_accepted_and_manifest_updated(suite_copy: Path) -> None:
    result = verify_suite(suite_copy)
    accept = sum(v.verdict == "ACCEPT" for v in result.verdicts) / len(result.verdicts)
    assert accept >= 0.97
    assert len(result.verdicts) == len(_qa(suite_copy))
    assert all(set(v.criteria) == set(CRITERIA) for v in result.verdicts)
    manifest = json.loads((suite_copy / "manifest.json").read_text())
    assert manifest["config"]["backends"]["verifier"] == "offline"
    assert manifest["files"]["verdicts.jsonl"] == sha256_file(suite_copy / "verdicts.jsonl")
    assert sum(manifest["counts"]["verdicts"].values()) == len(result.verdicts)
    first = json.loads((suite_copy / "verdicts.jsonl").read_text().splitlines()[0])
    assert set(first) >= {"qa_id", "verdict", "criteria", "verifier"}
    assert first["verifier"]["provider"] == "offline" and first["verifier"]["model"] == result.embedder


def test_calibration_catches_planted_defects(verify_base: Path) -> None:
    report = calibrate(verify_base, per_defect=8, seed=1)
    assert report["caught_rate"] >= 0.95
    per_criterion = report["per_criterion"]
    assert set(per_criterion) == set(CRITERIA)
    for name, row in per_criterion.items():
        assert row["caught_rate"] >= 0.9, (name, report["per_defect"])
    assert report["false_reject_rate"] <= 0.03


def test_hand_edit_is_rejudged_with_warnings(suite_copy: Path) -> None:
    items = _qa(suite_copy)
    bad = items[5]
    bad["evidence_turns"] = [bad["ask_turn"] + 1]
    (suite_copy / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in items))
    (suite_copy / "verdicts.jsonl").write_text("")
    result = verify_suite(suite_copy)
    verdict = next(v for v in result.verdicts if v.qa_id == bad["qa_id"])
    assert verdict.verdict != "ACCEPT"
    assert verdict.criteria["supported"].verdict == "REJECT"
    assert any("qa.jsonl changed" in w for w in result.warnings)
    assert any("after the question" in w for w in result.warnings)


def test_unreadable_record_stops_with_location(suite_copy: Path) -> None:
    with (suite_copy / "qa.jsonl").open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(InputError) as err:
        verify_suite(suite_copy)
    assert "qa.jsonl:" in str(err.value)


def test_only_runs_the_named_criteria(suite_copy: Path) -> None:
    result = verify_suite(suite_copy, only=["implicit", "supported"])
    assert all(list(v.criteria) == ["supported", "implicit"] for v in result.verdicts)


@pytest.mark.parametrize(("verdicts", "expected"), [
    ({"a": ("ACCEPT", False), "b": ("ACCEPT", False)}, "ACCEPT"),
    ({"a": ("UNSCORED", False), "b": ("ACCEPT", False)}, "REVISE"),
    ({"a": ("REJECT", True), "b": ("ACCEPT", False)}, "REVISE"),
    ({"a": ("REJECT", True), "b": ("REJECT", False)}, "REJECT"),
])
def test_item_verdict(verdicts: dict[str, tuple[str, bool]], expected: str) -> None:
    results = {k: CriterionResult(verdict=v, explanation="x", fixable=f) for k, (v, f) in verdicts.items()}
    assert item_verdict(results) == expected


def test_a_reply_that_sums_up_the_user_fails_implicit_for_the_items_it_is_evidence_of(suite_copy: Path) -> None:
    # a system observes the assistant's replies too: "since you've taken up ..." gives away what the cue only shows
    items = _qa(suite_copy)
    rows = [json.loads(line) for line in (suite_copy / "dialogues.jsonl").read_text().splitlines()]
    cue = next(r for r in rows if r["annotation"] and r["annotation"]["kind"] == "cue"
               and any(r["turn"] in q["evidence_turns"] and q["persona_id"] == r["persona_id"] for q in items))
    cue["assistant"] += " Since you've taken up this new routine, keep it going!"
    (suite_copy / "dialogues.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = verify_suite(suite_copy, only=["implicit"])
    hit = {q["qa_id"] for q in items if q["persona_id"] == cue["persona_id"] and cue["turn"] in q["evidence_turns"]}
    for v in result.verdicts:
        summed = "sums up the user" in v.criteria["implicit"].explanation
        assert summed == (v.qa_id in hit), v.qa_id
        if summed:
            assert v.criteria["implicit"].verdict == "REJECT"
