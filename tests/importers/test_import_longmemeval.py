"""LongMemEval importer on a small file in the documented format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dimobench.errors import InputError
from dimobench.importers import import_benchmark
from dimobench.importers.longmemeval import load
from dimobench.suite.load import load_suite
from dimobench.suite.validate import validate_suite
from tests.helpers.importer_sources import longmemeval_items, write_json


def test_haystacks_sessions_and_evidence(tmp_path: Path) -> None:
    src = write_json(tmp_path / "longmemeval_s_cleaned.json", longmemeval_items())
    m = import_benchmark("longmemeval", src, tmp_path / "out")
    assert validate_suite(tmp_path / "out") == []
    s = load_suite(tmp_path / "out")
    # q1 and q2_abs share an identical haystack: one persona; q3 has its own
    assert [p.persona_id for p in s.personas] == ["q1", "q3"]
    assert s.personas[0].profile["question_ids"] == ["q1", "q2_abs"]
    assert m.counts["turns"] == 4 + 3 and m.counts["sessions"] == 4
    t = [x.model_dump() for x in s.turns_of("q1")]
    assert [(x["turn"], x["session"], x["speaker"], x["source_id"]) for x in t] == [
        (1, 1, "user", "s_a:0"), (2, 1, "assistant", "s_a:1"), (3, 2, "user", "answer_1:0"),
        (4, 2, "assistant", "answer_1:1")]
    assert t[0]["timestamp"] == "2023-05-20T09:00:00" and t[2]["source_session_id"] == "answer_1"
    assert all(x["assistant"] == "" and "has_answer" not in x for x in t)
    qa = {q.qa_id: q.model_dump() for q in s.qa}
    assert qa["q1"]["evidence_turns"] == [3] and qa["q1"]["ask_turn"] == 4
    assert qa["q1"]["source_type"] == "single-session-user"
    assert qa["q1"]["question_date"] == "2023-05-30T21:56:00"
    assert qa["q2_abs"]["abstention"] is True and qa["q1"]["abstention"] is False
    assert qa["q3"]["answer"] == "1" and qa["q3"]["options"] == [] and qa["q3"]["answer_index"] is None
    # answer_2 has no has_answer turn: the whole session is evidence, and that is recorded
    assert qa["q3"]["evidence_turns"] == [1, 2] and qa["q3"]["ask_turn"] == 3
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["session_level_evidence"] == [{"qa_id": "q3", "source_session_id": "answer_2"}]
    assert man["dropped_evidence"] == [{"qa_id": "q2_abs", "source_id": "ghost",
                                        "reason": "answer session not in the haystack"}]
    assert man["counts"]["by_source_type"] == {"knowledge-update": 1, "single-session-user": 1,
                                               "temporal-reasoning": 1}


@pytest.mark.parametrize("mutate,where", [
    (lambda d: d[0].pop("haystack_dates"), "[0].haystack_dates: missing"),
    (lambda d: d[1]["haystack_dates"].pop(), "[1]: haystack_session_ids (2), haystack_dates (1)"),
    (lambda d: d[2].__setitem__("question_date", "someday"), "[2].question_date: cannot read date"),
    (lambda d: d[0]["haystack_sessions"][0][1].pop("content"),
     "[0].haystack_sessions[0][1].content: missing"),
])
def test_malformed_items_are_located(tmp_path: Path, mutate: object, where: str) -> None:
    data = longmemeval_items()
    mutate(data)  # type: ignore[operator]
    src = write_json(tmp_path / "lme.json", data)
    with pytest.raises(InputError) as exc:
        load(src)
    assert where in str(exc.value) and str(src) in str(exc.value)
