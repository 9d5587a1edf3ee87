"""AMemGym importer: users with periods, sessions and per-period gold answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from dimobench.errors import InputError
from dimobench.importers import import_benchmark
from dimobench.importers.amemgym import load
from dimobench.suite.load import load_suite
from dimobench.suite.validate import validate_suite
from tests.helpers.importer_sources import amemgym_users, write_json


def test_periods_become_questions_with_gold_and_stale(tmp_path: Path) -> None:
    src = write_json(tmp_path / "data.json", amemgym_users())
    m = import_benchmark("amemgym", src, tmp_path / "out")
    assert validate_suite(tmp_path / "out") == []
    s = load_suite(tmp_path / "out")
    assert s.personas[0].name == "Lee" and s.personas[0].profile["uuid"] == "abc"
    t = s.turns_of("u1")
    assert [(x.turn, x.session, x.speaker, x.source_id) for x in t][:3] == [
        (1, 1, "user", "p0.s0:0"), (2, 1, "assistant", "p0.s0:1"), (3, 2, "user", "p0.s1:0")]
    assert t[0].timestamp == "2025-01-05T10:00:00" and t[4].timestamp == "2025-02-03T09:30:00"
    assert m.counts["qa"] == 2 and m.counts["sessions"] == 3
    q0, q1 = s.qa
    assert (q0.qa_id, q0.ask_turn, q0.answer_index, q0.stale_index) == ("u1-p00-q000", 4, 0, None)
    assert (q1.qa_id, q1.ask_turn, q1.answer_index, q1.stale_index) == ("u1-p01-q000", 6, 1, 0)
    assert q1.answer == "A vegan cafe in Oslo" and q1.period == 1  # type: ignore[attr-defined]
    assert q0.evidence_turns == [1, 3] and q1.evidence_turns == [3, 5]  # latest exposure of each variable
    assert q0.source_type is None


def test_no_matching_choice_is_an_error(tmp_path: Path) -> None:
    data = amemgym_users()
    data[0]["periods"][1]["state"]["diet"] = "carnivore"
    src = write_json(tmp_path / "data.json", data)
    with pytest.raises(InputError, match=r"\[0\]\.qas\[0\]\.answer_choices: no answer choice matches"):
        load(src)


def test_missing_state_variable_is_an_error(tmp_path: Path) -> None:
    data = amemgym_users()
    del data[0]["periods"][0]["state"]["city"]
    with pytest.raises(InputError, match="required_info"):
        load(write_json(tmp_path / "data.json", data))
