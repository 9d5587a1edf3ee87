"""End to end on a small suite: CLI run, outside system via module:Class, failures, compare."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dimobench.cli.app import app
from tests.helpers.suites import generate

OUTSIDE = """
class EchoMemory:
    '''Keeps every user turn; recall returns the latest k (an outside system for the tests).'''
    def reset(self, persona_id):
        self.items = []
    def observe(self, turn):
        assert set(turn) == {"turn", "session", "timestamp", "user", "assistant"}, sorted(turn)
        self.items.append({"text": turn.user, "score": 1.0, "source_turns": [turn["turn"]]})
    def recall(self, query, k):
        return self.items[-k:][::-1]
    def stats(self):
        return {"raw_items": len(self.items)}

class Broken(EchoMemory):
    def observe(self, turn):
        if turn["turn"] == 7:
            raise RuntimeError("disk full")
        super().observe(turn)
"""


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("suites") / "tiny", turns=120, personas=2, seed=1)


def _run(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(app, args)


def test_evaluate_end_to_end_with_outside_system(tiny_suite: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "outside_mem.py").write_text(textwrap.dedent(OUTSIDE))
    out = tmp_path / "res"
    res = _run(["evaluate", str(tiny_suite), "--system", "none", "--system", "oracle", "--system", "full",
                "--system", "outside_mem:EchoMemory", "--embedding", "hashing", "--bootstrap", "100",
                "--out", str(out)], tmp_path, monkeypatch)
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    systems = report["systems"]
    assert set(systems) == {"none", "oracle", "full", "outside_mem:EchoMemory"}
    for fig in systems.values():
        assert 0 <= fig["overall"] <= 1 and len(fig["overall_ci"]) == 2
        assert set(fig["latency_ms"]) == {"observe_p50", "observe_p95", "recall_p50", "recall_p95"}
        assert isinstance(fig["recovery_turns"], list)
    assert systems["none"]["normalized"] == 0.0 and systems["oracle"]["normalized"] == 1.0
    assert systems["oracle"]["overall"] > systems["none"]["overall"]
    assert report["config"]["k"] == 10 and report["config"]["answerer"]["embedding"] == "hashing"
    rows = [json.loads(x) for x in (out / "answers-outside_mem_EchoMemory.jsonl").read_text().splitlines()]
    assert rows and {"question", "options", "chosen", "correct", "recalled"} <= set(rows[0])
    assert (out / "report.md").read_text().startswith("# dimobench evaluation")
    assert (out / "accuracy-tiny.png").stat().st_size > 0 and (out / "memory-tiny.png").is_file()
    # compare a report with itself: zero difference for every system
    res = _run(["compare", str(out / "report.json"), str(out)], tmp_path, monkeypatch)
    assert res.exit_code == 0, res.output
    assert "full: A" in res.output and "diff +0.0" in res.output


def test_failure_names_system_and_turn_and_keeps_finished(tiny_suite: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "outside_mem.py").write_text(textwrap.dedent(OUTSIDE))
    out = tmp_path / "res"
    res = _run(["evaluate", str(tiny_suite), "--system", "none", "--system", "outside_mem:Broken",
                "--embedding", "hashing", "--bootstrap", "0", "--no-plots", "--out", str(out)], tmp_path,
               monkeypatch)
    assert res.exit_code == 2
    line = res.output.strip().splitlines()[-1]
    assert "outside_mem:Broken" in line and "turn 7" in line and "disk full" in line
    report = json.loads((out / "report.json").read_text())
    assert list(report["systems"]) == ["none"] and report["config"]["status"] == "partial"


@pytest.mark.parametrize("system, needle", [("nope_mod:X", "cannot import"), ("bogus", "unknown system")])
def test_bad_system_exits_2(tiny_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str,
                            needle: str) -> None:
    res = _run(["evaluate", str(tiny_suite), "--system", system, "--out", str(tmp_path / "o")], tmp_path,
               monkeypatch)
    assert res.exit_code == 2 and needle in res.output and "Traceback" not in res.output


def test_compare_needs_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "report.json").write_text(json.dumps({"config": {"answers": {"x": "answers-x.jsonl"}}}))
    res = _run(["compare", str(tmp_path), str(tmp_path)], tmp_path, monkeypatch)
    assert res.exit_code == 2 and "answers for 'x' missing" in res.output
