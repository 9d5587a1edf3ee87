"""Suite format v1: round trip, determinism, hashes, and validate's file:line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dimobench.api import generate_suite, load_suite, validate_suite
from dimobench.generate.config import make_config
from dimobench.suite.io import sha256_file, write_jsonl

SHARED_EXAMPLE = Path(__file__).resolve().parents[3] / "shared" / "examples" / "suite-v1"
FILES = ("manifest.json", "personas.jsonl", "schedules.jsonl", "dialogues.jsonl", "qa.jsonl")


def _bytes(d: Path) -> dict[str, bytes]:
    return {f: (d / f).read_bytes() for f in FILES}


def test_same_seed_same_bytes_other_seed_other_suite(tmp_path: Path) -> None:
    cfg = dict(turns=240, drifts=2, personas=2)
    generate_suite(make_config(seed=4, **cfg), tmp_path / "a")
    generate_suite(make_config(seed=4, **cfg), tmp_path / "b")
    generate_suite(make_config(seed=5, **cfg), tmp_path / "c")
    assert _bytes(tmp_path / "a") == _bytes(tmp_path / "b")
    a, c = _bytes(tmp_path / "a"), _bytes(tmp_path / "c")
    assert a["personas.jsonl"] != c["personas.jsonl"] and a["dialogues.jsonl"] != c["dialogues.jsonl"]
    text = b"".join(a.values()).decode()
    assert str(tmp_path) not in text and "/tmp" not in text


def test_resume_keeps_stages_and_gives_the_same_bytes(tmp_path: Path) -> None:
    cfg = make_config(turns=240, drifts=2, personas=2, seed=9)
    generate_suite(cfg, tmp_path / "a")
    first = _bytes(tmp_path / "a")
    seen: list[tuple[str, str]] = []
    (tmp_path / "a" / "qa.jsonl").unlink()  # a crash after stage records were written
    generate_suite(cfg, tmp_path / "a", resume=True, progress=lambda s, w: seen.append((s, w)))
    assert _bytes(tmp_path / "a") == first
    assert ("personas", "kept (fingerprint matches)") in seen
    seen.clear()
    generate_suite(cfg.model_copy(update={"confounder_rate": 0.2}), tmp_path / "a", resume=True,
                   progress=lambda s, w: seen.append((s, w)))
    assert ("dialogue", "kept (fingerprint matches)") in seen and ("confounders", "running") in seen
    assert ("qa", "running") in seen


def test_round_trip_through_load_and_frames(small_suite: Path, tmp_path: Path) -> None:
    suite = load_suite(small_suite)
    assert len(suite.qa_frame()) == len(suite.qa)
    frame = suite.turns_frame()
    assert {"persona_id", "turn", "user", "annotation_kind"} <= set(frame.columns)
    write_jsonl(tmp_path / "qa.jsonl", suite.qa)
    assert (tmp_path / "qa.jsonl").read_bytes() == (small_suite / "qa.jsonl").read_bytes()
    manifest = json.loads((small_suite / "manifest.json").read_text())
    assert manifest["format"] == "dimobench-suite" and manifest["format_version"] == 1
    for name, digest in manifest["files"].items():
        assert sha256_file(small_suite / name) == digest
    assert set(manifest["stages"]) == {"personas", "drift", "dialogue", "confounders", "qa"}
    card = (small_suite / "README.md").read_text()
    assert "canary" in card.lower() and "Licence" in card


def test_the_shared_hand_written_example_is_valid() -> None:
    if not SHARED_EXAMPLE.is_dir():
        pytest.skip("../shared is not beside this checkout")
    assert validate_suite(SHARED_EXAMPLE) == []


def _corrupt(src: Path, dst: Path, file: str, line: int, edit) -> None:  # type: ignore[no-untyped-def]
    shutil.copytree(src, dst)
    lines = (dst / file).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line - 1] = edit(lines[line - 1])
    (dst / file).write_text("".join(lines), encoding="utf-8")


def _edit_json(fn):  # type: ignore[no-untyped-def]
    def edit(line: str) -> str:
        rec = json.loads(line)
        fn(rec)
        return json.dumps(rec) + "\n"
    return edit


@pytest.mark.parametrize("file,line,edit,expect", [
    ("qa.jsonl", 3, lambda s: s[: len(s) // 2] + "\n", "qa.jsonl:3: json: not valid JSON"),
    ("qa.jsonl", 4, _edit_json(lambda r: r.pop("question")), "qa.jsonl:4: question: field required"),
    ("dialogues.jsonl", 7, _edit_json(lambda r: r.update(turn="seven")), "dialogues.jsonl:7: turn:"),
    ("qa.jsonl", 2, _edit_json(lambda r: r.update(evidence_turns=[99999])),
     "qa.jsonl:2: evidence_turns: turn 99999 does not exist"),
    ("qa.jsonl", 5, _edit_json(lambda r: r.update(qa_id="p01-q0001")), "qa.jsonl:5: qa_id: duplicate id"),
    ("personas.jsonl", 2, _edit_json(lambda r: r.update(persona_id="p01")), "personas.jsonl:2: persona_id: duplicate"),
])
def test_validate_names_file_line_and_field(small_suite: Path, tmp_path: Path, file, line, edit, expect) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad"
    _corrupt(small_suite, bad, file, line, edit)
    problems = validate_suite(bad)
    assert any(p.startswith(expect) for p in problems), problems
    assert validate_suite(small_suite) == []
