"""``dimobench import`` as users run it: a real process; bad input exits 2 in one line and writes nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.importer_sources import amemgym_users, locomo_sample, longmemeval_items, personamem_files, write_json


def assert_one_line_failure(r: subprocess.CompletedProcess[str], message: str, out: Path) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert message in r.stderr, r.stderr
    assert not out.exists()


def test_import_then_validate_each_source(tmp_path: Path) -> None:
    sources = {
        "locomo": write_json(tmp_path / "locomo.json", locomo_sample()),
        "longmemeval": write_json(tmp_path / "lme.json", longmemeval_items()),
        "personamem": personamem_files(tmp_path),
        "amemgym": write_json(tmp_path / "amemgym.json", amemgym_users()),
    }
    for name, src in sources.items():
        out = tmp_path / f"suite-{name}"
        r = run_cli("import", name, str(src), "--out", str(out))
        assert r.returncode == 0, r.stderr
        assert f"imported {name}" in r.stderr
        v = run_cli("validate", str(out))
        assert v.returncode == 0 and "valid" in v.stdout, v.stderr
        assert json.loads((out / "manifest.json").read_text())["status"] == "imported"


def _bad_json(tmp: Path) -> Path:
    p = tmp / "bad.json"
    p.write_text('[\n  {"sample_id": "conv-1",\n  oops}\n]\n')
    return p


def _no_text(tmp: Path) -> Path:
    data = locomo_sample()
    del data[0]["conversation"]["session_1"][1]["text"]
    return write_json(tmp / "l.json", data)


def _bad_date(tmp: Path) -> Path:
    data = locomo_sample()
    data[0]["conversation"]["session_2_date_time"] = "sometime in spring"
    return write_json(tmp / "l.json", data)


CASES = {
    "invalid-json": ("locomo", _bad_json, "bad.json:3: not valid JSON"),
    "missing-field": ("locomo", _no_text, "l.json: [0].conversation.session_1[1].text: missing"),
    "bad-date": ("locomo", _bad_date, "[0].conversation.session_2_date_time: cannot read date"),
    "missing-file": ("locomo", lambda t: t / "nope.json", "nope.json: no such file"),
    "wrong-shape": ("longmemeval", lambda t: write_json(t / "x.json", {"a": 1}),
                    "expected a non-empty JSON list"),
    "amemgym-field": ("amemgym", lambda t: write_json(t / "x.json", [{"id": "u"}]), "[0].periods: missing"),
    "personamem-header": ("personamem", lambda t: write_json(t / "questions_1k.csv", "x"),
                          "header: missing column(s)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_in_one_line_and_writes_nothing(tmp_path: Path, case: str) -> None:
    source, make, message = CASES[case]
    if source == "personamem":
        (tmp_path / "shared_contexts_1k.jsonl").write_text('{"c": [{"role": "user", "content": "hi"}]}\n')
    src = make(tmp_path)
    out = tmp_path / "out"
    assert_one_line_failure(run_cli("import", source, str(src), "--out", str(out)), message, out)


def test_unknown_source_is_a_usage_error(tmp_path: Path) -> None:
    r = run_cli("import", "mystery", str(tmp_path / "x.json"), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and not (tmp_path / "out").exists()


def test_existing_out_needs_force(tmp_path: Path) -> None:
    src = write_json(tmp_path / "locomo.json", locomo_sample())
    out = tmp_path / "out"
    assert run_cli("import", "locomo", str(src), "--out", str(out)).returncode == 0
    before = (out / "qa.jsonl").read_bytes()
    r = run_cli("import", "locomo", str(src), "--out", str(out))
    assert r.returncode == 2 and "exists and is not empty" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert (out / "qa.jsonl").read_bytes() == before
    assert run_cli("import", "locomo", str(src), "--out", str(out), "--force").returncode == 0
    keep = tmp_path / "notes"
    keep.mkdir()
    (keep / "thesis.txt").write_text("precious")
    r = run_cli("import", "locomo", str(src), "--out", str(keep), "--force")
    assert r.returncode == 2 and (keep / "thesis.txt").exists()


def test_bad_input_with_force_keeps_the_old_suite(tmp_path: Path) -> None:
    src = write_json(tmp_path / "locomo.json", locomo_sample())
    out = tmp_path / "out"
    assert run_cli("import", "locomo", str(src), "--out", str(out)).returncode == 0
    before = (out / "manifest.json").read_bytes()
    r = run_cli("import", "locomo", str(_bad_json(tmp_path)), "--out", str(out), "--force")
    assert r.returncode == 2 and (out / "manifest.json").read_bytes() == before
