"""LoCoMo importer: a small sample in the documented format, and the real locomo10.json when it is present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dimobench.importers import import_benchmark
from dimobench.importers.locomo import ADVERSARIAL_GOLD, load, split_evidence
from dimobench.suite.load import load_suite
from dimobench.suite.validate import validate_suite
from tests.helpers.importer_sources import LOCOMO_REAL, locomo_sample, write_json


def test_small_sample_converts_every_field(tmp_path: Path) -> None:
    src = write_json(tmp_path / "locomo.json", locomo_sample())
    m = import_benchmark("locomo", src, tmp_path / "out")
    assert validate_suite(tmp_path / "out") == []
    s = load_suite(tmp_path / "out")
    assert m.status == "imported" and m.config["source"] == "locomo" and m.config["path"] == "locomo.json"
    assert m.config["licence"] == "CC BY-NC 4.0"
    t = [x.model_dump() for x in s.dialogues]
    # session_1 comes first although its key comes later; the stray session_3 date adds no session
    assert [(x["turn"], x["session"], x["source_id"], x["speaker"]) for x in t] == [
        (1, 1, "D1:1", "Ana"), (2, 1, "D1:2", "Ben"), (3, 2, "D2:1", "Ana"), (4, 2, "D2:2", "Ben")]
    assert t[0]["timestamp"] == "2023-05-08T13:56:00" and t[2]["timestamp"] == "2023-06-09T10:05:00"
    assert all(x["assistant"] == "" for x in t) and t[0]["user"] == "I started pottery classes."
    assert t[3]["image_caption"] == "a photo of a garden"
    p = s.personas[0]
    assert p.persona_id == "conv-1" and p.name == "Ana and Ben" and p.traits == [] and p.entities == []
    assert p.profile["source"] == "locomo"
    qa = {q.question: q.model_dump() for q in s.qa}
    assert len(qa) == 6 and all(q["ask_turn"] == 4 and q["options"] == [] for q in qa.values())
    assert qa["When did Ben run a marathon?"]["answer"] == "2022"
    assert qa["When did Ben run a marathon?"]["source_type"] == "temporal"
    assert qa["What are Ana's hobbies and pets?"]["evidence_turns"] == [1, 3]
    assert qa["What are Ana's hobbies and pets?"]["source_type"] == "multi-hop"
    assert qa["Would Ben enjoy a race?"]["evidence_turns"] == [1, 2, 4]  # "D1:2 D2:2" split, "D:1:1" repaired
    adv = qa["What did Ben adopt?"]
    assert adv["answer"] == ADVERSARIAL_GOLD and adv["distractors"] == ["a cat"]
    assert adv["answer_index"] is None
    assert adv["source_type"] == "adversarial" and adv["evidence_turns"] == [3]
    both = qa["Is Miso Ben's cat?"]
    assert both["answer"] == "No" and both["distractors"] == ["Yes"] and both["evidence_turns"] == []
    assert {q["source_type"] for q in qa.values()} == {"multi-hop", "temporal", "open-domain", "single-hop",
                                                        "adversarial"}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["dropped_evidence"] == [
        {"qa_id": "conv-1-q0005", "source_id": "D", "reason": "malformed id, not D<session>:<turn>"},
        {"qa_id": "conv-1-q0005", "source_id": "D9:9", "reason": "no turn with this dia_id"}]
    assert manifest["repaired_evidence"] == [{"qa_id": "conv-1-q0004", "source_id": "D:1:1", "as": "D1:1"}]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "CC BY-NC 4.0" in card and "snap-research/LoCoMo" in card and "D9:9" in card


def test_split_evidence_handles_the_odd_separators() -> None:
    assert split_evidence(["D8:6; D9:17", "D9:1 D4:4 D4:6", "D1:2,D1:3", " D5:5 "]) == [
        "D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D1:2", "D1:3", "D5:5"]


def test_import_is_byte_identical_on_rerun(tmp_path: Path) -> None:
    src = write_json(tmp_path / "locomo.json", locomo_sample())
    import_benchmark("locomo", src, tmp_path / "a")
    import_benchmark("locomo", src, tmp_path / "b")
    for name in ("manifest.json", "dialogues.jsonl", "qa.jsonl", "personas.jsonl", "README.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.skipif(not LOCOMO_REAL.is_file(), reason="../shared/data/locomo10.json is not available")
def test_real_locomo10(tmp_path: Path) -> None:
    m = import_benchmark("locomo", LOCOMO_REAL, tmp_path / "l")
    assert validate_suite(tmp_path / "l") == []
    c = m.counts
    assert (c["personas"], c["turns"], c["qa"], c["sessions"]) == (10, 5882, 1986, 272)
    assert c["by_source_type"] == {"adversarial": 446, "multi-hop": 282, "open-domain": 96, "single-hop": 841,
                                   "temporal": 321}
    man = json.loads((tmp_path / "l" / "manifest.json").read_text())
    dropped = {(d["qa_id"], d["source_id"]) for d in man["dropped_evidence"]}
    assert dropped == {("conv-42-q0059", "D10:19"), ("conv-42-q0089", "D"), ("conv-47-q0039", "D4:36")}
    assert {r["source_id"] for r in man["repaired_evidence"]} == {"D:11:26", "D30:05"}
    imp = load(LOCOMO_REAL)
    # every QA kept; nothing lost: resolved + dropped covers every evidence token of the file
    tokens = sum(len(split_evidence(q.source_evidence)) for q in imp.qa)  # type: ignore[attr-defined]
    resolved = sum(len(set(q.evidence_turns)) for q in imp.qa)
    assert resolved + len(imp.dropped_evidence) + 1 == tokens  # one QA lists the same id twice
    first = imp.turns[0]
    assert (first.source_id, first.timestamp, first.speaker) == ("D1:1", "2023-05-08T13:56:00", "Caroline")
    conv26 = [t for t in imp.turns if t.persona_id == "conv-26"]
    assert max(t.session for t in conv26) == 19  # 35 date keys but 19 sessions
    assert sum(isinstance(q.answer, str) for q in imp.qa) == 1986
    assert sum(q.source_type == "adversarial" and q.answer == ADVERSARIAL_GOLD for q in imp.qa) == 444
