"""Hostile suite files: strict JSON, strict UTF-8, strict integers, and a manifest that must match its files.

Every case edits a copy of a real generated suite; ``validate`` must name file, line and field, and the
commands that load a suite (evaluate, verify, review sample) must fail in one line with exit 2.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from dimobench import strictjson
from dimobench.errors import InputError
from dimobench.suite.io import sha256_file
from dimobench.suite.load import load_suite
from dimobench.suite.validate import validate_suite
from tests.helpers.cli import run_cli


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".dimobench"))
    return dst


def _edit_line(suite: Path, file: str, line: int, edit: Callable[[bytes], bytes]) -> None:
    lines = (suite / file).read_bytes().split(b"\n")
    lines[line - 1] = edit(lines[line - 1])
    (suite / file).write_bytes(b"\n".join(lines))


def _set_field(field: str, raw: str) -> Callable[[bytes], bytes]:
    """Replace ``field``'s value on a line by the raw JSON text ``raw`` (which json.dumps could not write)."""
    def edit(line: bytes) -> bytes:
        rec = json.loads(line)
        rec[field] = "@@VALUE@@"
        return json.dumps(rec).replace('"@@VALUE@@"', raw).encode()
    return edit


def _rehash(suite: Path) -> None:
    """Make the manifest's hashes match again, so only the record problem is left to find."""
    m = json.loads((suite / "manifest.json").read_text())
    m["files"] = {name: sha256_file(suite / name) for name in m["files"]}
    (suite / "manifest.json").write_text(json.dumps(m, indent=2))


@pytest.mark.parametrize("raw,expect", [
    ('"2"', "qa.jsonl:3: answer_index: input should be a valid integer"),
    ("2.0", "qa.jsonl:3: answer_index: input should be a valid integer"),
    ("true", "qa.jsonl:3: answer_index: input should be a valid integer"),
    ("NaN", "qa.jsonl:3: json: NaN is not valid JSON"),
    ("-Infinity", "qa.jsonl:3: json: -Infinity is not valid JSON"),
    ("1e999", "qa.jsonl:3: json: number 1e999 is out of range"),
    ("9" * 5000, "qa.jsonl:3: json: integer with 5000 digits is too large"),
    ("[" * 100_000 + "]" * 100_000, "qa.jsonl:3: json: JSON nested deeper than 64 levels"),
])
def test_lax_or_hostile_numbers_are_located(small_suite: Path, tmp_path: Path, raw: str, expect: str) -> None:
    bad = _copy(small_suite, tmp_path / "bad")
    _edit_line(bad, "qa.jsonl", 3, _set_field("answer_index", raw))
    _rehash(bad)
    problems = validate_suite(bad)
    assert any(p.startswith(expect) for p in problems), problems
    with pytest.raises(InputError, match=r"qa\.jsonl:3: "):
        load_suite(bad)


def test_strict_ints_everywhere_a_turn_is_counted(small_suite: Path, tmp_path: Path) -> None:
    bad = _copy(small_suite, tmp_path / "bad")
    _edit_line(bad, "dialogues.jsonl", 5, _set_field("turn", '"5"'))
    _edit_line(bad, "qa.jsonl", 2, _set_field("evidence_turns", "[1.0]"))
    _edit_line(bad, "schedules.jsonl", 1, lambda b: b.replace(b'"onset_turn": ', b'"onset_turn": 1.5, "x": ', 1))
    _rehash(bad)
    problems = validate_suite(bad)
    assert any(p.startswith("dialogues.jsonl:5: turn: input should be a valid integer") for p in problems)
    assert any(p.startswith("qa.jsonl:2: evidence_turns.0: input should be a valid integer") for p in problems)
    assert any(p.startswith("schedules.jsonl:1: drifts.0.onset_turn:") for p in problems), problems


def test_invalid_utf8_is_a_located_problem_and_one_line_in_every_command(small_suite: Path,
                                                                         tmp_path: Path) -> None:
    bad = _copy(small_suite, tmp_path / "bad")
    _edit_line(bad, "qa.jsonl", 4, lambda b: b.replace(b'"question": "', b'"question": "ab\xff', 1))
    col = (bad / "qa.jsonl").read_bytes().split(b"\n")[3].index(b"\xff") + 1  # ASCII before it: bytes = chars
    problems = validate_suite(bad)
    assert f"qa.jsonl:4: encoding: not UTF-8 (byte 0xff at column {col})" in problems, problems
    for args in (["validate", str(bad)], ["evaluate", str(bad), "--out", str(tmp_path / "ev")],
                 ["verify", str(bad)], ["review", "sample", str(bad), "--out", str(tmp_path / "rv")]):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr, r.stderr
        if args[0] != "validate":  # validate lists every problem, then one summary line
            assert r.stderr.strip().splitlines() == [
                f"dimobench: error: {bad}/qa.jsonl:4: not UTF-8 (byte 0xff at column {col})"], r.stderr
        else:
            assert f"{bad}/qa.jsonl:4: encoding: not UTF-8" in r.stderr


@pytest.mark.parametrize("file", ["manifest.json", "personas.jsonl"])
def test_bad_utf8_in_the_manifest_or_a_record_file_never_tracebacks(small_suite: Path, tmp_path: Path,
                                                                     file: str) -> None:
    bad = _copy(small_suite, tmp_path / "bad")
    (bad / file).write_bytes(b'\n\xc3\x28\n')
    problems = validate_suite(bad)
    assert any(p.startswith(f"{file}:2: encoding: not UTF-8 (byte 0xc3 at column 1)") for p in problems), problems
    with pytest.raises(InputError, match=rf"{file}:2: not UTF-8"):
        load_suite(bad)


def test_a_directory_or_unreadable_file_in_place_of_a_record_file(small_suite: Path, tmp_path: Path) -> None:
    bad = _copy(small_suite, tmp_path / "bad")
    (bad / "qa.jsonl").unlink()
    (bad / "qa.jsonl").mkdir()
    problems = validate_suite(bad)
    assert "qa.jsonl:-: file: is a directory, not a file" in problems, problems
    r = run_cli("evaluate", str(bad), "--out", str(tmp_path / "ev"))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"dimobench: error: {bad}/qa.jsonl: is a directory, not a file"], r.stderr


def test_manifest_must_match_its_files(small_suite: Path, tmp_path: Path) -> None:
    bad = _copy(small_suite, tmp_path / "bad")
    m = json.loads((bad / "manifest.json").read_text())
    m["files"]["verdicts.jsonl"] = "0" * 64  # listed, absent
    m["files"]["../escape.jsonl"] = "0" * 64
    m["counts"]["qa"] += 1
    (bad / "manifest.json").write_text(json.dumps(m, indent=2))
    _edit_line(bad, "dialogues.jsonl", 2, lambda b: b.replace(b'"user": "', b'"user": "edited ', 1))
    r = run_cli("validate", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert f"{bad}/manifest.json:-: files.verdicts.jsonl: lists verdicts.jsonl but the file is missing" in lines
    assert f"{bad}/manifest.json:-: files.dialogues.jsonl: sha256 does not match the file (edited after " \
           "writing?)" in lines
    assert f"{bad}/manifest.json:-: files.../escape.jsonl: not a file name inside the suite" in lines
    assert any(ln.startswith(f"{bad}/manifest.json:-: counts.qa: says {m['counts']['qa']}") for ln in lines)
    assert lines[-1] == f"dimobench: error: 4 problem(s) in {bad}", lines


def test_an_unlisted_record_file_and_orphan_verdicts(small_suite: Path, tmp_path: Path) -> None:
    bad = _copy(small_suite, tmp_path / "bad")
    verdict = {"qa_id": "nope", "verdict": "ACCEPT", "criteria": {},
               "verifier": {"provider": "x", "model": "y", "prompt_hash": None}}
    (bad / "verdicts.jsonl").write_text(json.dumps(verdict) + "\n" + json.dumps(verdict) + "\n")
    problems = validate_suite(bad)
    assert "manifest.json:-: files: verdicts.jsonl is not listed (its sha256 is unknown)" in problems
    assert "verdicts.jsonl:1: qa_id: unknown question 'nope'" in problems
    assert "verdicts.jsonl:2: qa_id: duplicate verdict for 'nope'" in problems


def test_multiple_choice_needs_two_options(small_suite: Path, tmp_path: Path) -> None:
    bad = _copy(small_suite, tmp_path / "bad")

    def one_option(line: bytes) -> bytes:
        rec = json.loads(line)
        rec.update(options=[rec["answer"]], answer_index=0, stale_index=None, confounder_index=None)
        return json.dumps(rec).encode()
    _edit_line(bad, "qa.jsonl", 6, one_option)
    _rehash(bad)
    assert "qa.jsonl:6: options: a multiple-choice question needs at least 2 options" in validate_suite(bad)


def test_a_generated_suite_and_the_shared_example_stay_valid(small_suite: Path) -> None:
    assert validate_suite(small_suite) == []


def test_non_suite_paths_are_one_problem(tmp_path: Path, small_suite: Path) -> None:
    assert validate_suite(tmp_path / "absent") == [f"manifest.json:-: suite: no such directory {tmp_path}/absent"]
    assert len(validate_suite(small_suite / "qa.jsonl")) == 1


def test_jsonl_splits_on_newline_only(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes('\ufeff{"a": "one\u2028two\u2029three\x85four"}\r\n\n{"b": 1}\n'.encode())
    assert [(n, v) for n, v in strictjson.jsonl(p)] == [(1, {"a": "one\u2028two\u2029three\x85four"}),
                                                         (3, {"b": 1})]


def test_dumps_writes_strict_json() -> None:
    text = strictjson.dumps({"score": math.nan, "ci": [-math.inf, 0.5, (math.inf, 1)], "n": 3})
    assert json.loads(text) == {"score": None, "ci": [None, 0.5, [None, 1]], "n": 3}
    assert strictjson.loads(text) == json.loads(text)
    with pytest.raises(InputError, match=r"report\.json:2: NaN is not valid JSON"):
        strictjson.loads('{"a": 1,\n "b": NaN}', "report.json")
    with pytest.raises(InputError, match="lone surrogate"):
        strictjson.loads('["\\ud800"]', "x.json")
    assert strictjson.loads('["\\ud83d\\ude00"]') == ["\U0001F600"]
