"""PersonaMem importer: questions CSV + shared-context JSONL in the documented v1 format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dimobench.errors import InputError
from dimobench.importers import import_benchmark
from dimobench.importers.personamem import ALIASES, TYPES, canonical_type, load
from dimobench.suite.load import load_suite
from dimobench.suite.validate import validate_suite
from tests.helpers.importer_sources import personamem_files


def test_contexts_questions_and_options(tmp_path: Path) -> None:
    q = personamem_files(tmp_path)
    m = import_benchmark("personamem", q, tmp_path / "out")  # contexts found beside the CSV
    assert validate_suite(tmp_path / "out") == []
    s = load_suite(tmp_path / "out")
    assert m.config["path"] == ["questions_32k.csv", "shared_contexts_32k.jsonl"]
    assert [p.persona_id for p in s.personas] == ["ctx1"] and s.personas[0].profile["persona_ids"] == ["7"]
    t = s.turns_of("ctx1")
    assert [(x.turn, x.session, x.speaker) for x in t] == [
        (1, 1, "system"), (2, 1, "user"), (3, 1, "assistant"), (4, 2, "system"), (5, 2, "user"),
        (6, 2, "assistant")]
    assert t[1].source_id == "ctx1:1" and t[0].timestamp == ""
    qa = {x.qa_id: x.model_dump() for x in s.qa}
    assert qa["pq1"]["ask_turn"] == 3 and qa["pq2"]["ask_turn"] == 6
    assert qa["pq1"]["options"] == ["Spicy curry", "A mild risotto", "Hot wings", "Chili"]
    assert (qa["pq1"]["answer_index"], qa["pq1"]["answer"]) == (0, "Spicy curry")
    assert (qa["pq2"]["answer_index"], qa["pq2"]["answer"]) == (1, "A mild risotto")  # repr()-style list
    assert qa["pq1"]["source_type"] == "recall_user_shared_facts"
    assert qa["pq1"]["source_question_type"] == "recalling_facts_mentioned_by_the_user"
    assert qa["pq2"]["source_type"] == "acknowledge_latest_user_preferences"
    assert qa["pq1"]["evidence_turns"] == [] and qa["pq1"]["topic"] == "foodRecommendation"
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["unused_contexts"] == ["ctx_unused"] and man["unknown_question_types"] == []


def test_alias_table_covers_documented_spellings() -> None:
    for raw in ("recalling_facts_mentioned_by_the_user", "generalizing_to_new_scenarios",
                "track_full_preference_updates", "acknowledge_latest_preferences", "Suggest-New-Ideas"):
        assert canonical_type(raw) in TYPES
    assert set(ALIASES.values()) <= set(TYPES) and all(canonical_type(t) == t for t in TYPES)


def _row(**kw: str) -> dict[str, str]:
    base = {"persona_id": "7", "question_id": "x1", "question_type": "suggest_new_ideas",
            "user_question_or_message": "Q?", "correct_answer": "(a)",
            "all_options": json.dumps(["(a) one", "(b) two"]), "shared_context_id": "ctx1",
            "end_index_in_shared_context": "2"}
    return base | kw


@pytest.mark.parametrize("row,where", [
    (_row(shared_context_id="nope"), ":2: shared_context_id: unknown shared context 'nope'"),
    (_row(end_index_in_shared_context="99"), ":2: end_index_in_shared_context:"),
    (_row(correct_answer="(e)"), ":2: correct_answer: '(e)' names none of the 2 options"),
    (_row(all_options="not a list"), ":2: all_options: expected a list of option strings"),
])
def test_bad_rows_are_located(tmp_path: Path, row: dict[str, str], where: str) -> None:
    q = personamem_files(tmp_path, rows=[row])
    with pytest.raises(InputError) as exc:
        load(q)
    assert f"{q}{where}" in str(exc.value)


def test_missing_contexts_file_is_named(tmp_path: Path) -> None:
    q = personamem_files(tmp_path)
    (tmp_path / "shared_contexts_32k.jsonl").unlink()
    with pytest.raises(InputError, match="shared_contexts_32k.jsonl: no such file"):
        load(q)
