"""Damaged files a rerun reads: resume state in ``.dimobench/``, the run log, and annotator sheets.

Each must stop the command with one ``dimobench: error:`` line naming the file (exit 2): resuming on top of
damaged state could mix two runs, and a silent rerun hides that something wrote over the folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dimobench.backends.jobs import STATE_DIR, last_event
from dimobench.errors import InputError
from tests.helpers.cli import run_cli


def _one_line(r: subprocess.CompletedProcess[str], start: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"dimobench: error: {start}"), r.stderr


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("state") / "g"
    r = run_cli("generate", "--personas", "1", "--turns", "60", "--drifts", "1", "--no-verify", "--no-audit",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def _tamper_output(path: Path) -> None:
    data = json.loads(path.read_text())
    data["output"] = {"schedules": 5}
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("damage,message", [
    (lambda p: p.write_bytes(b"\xff\xfe garbage"), ":1: damaged run state, not UTF-8 (byte 0xff at column 1)"),
    (lambda p: p.write_text('{"fingerprint": "x", "output": '), ":1: damaged run state, not valid JSON"),
    (lambda p: p.write_text("[1, 2]"), ": damaged run state, not a JSON object"),
    (lambda p: p.write_text('{"fingerprint": NaN}'), ":1: damaged run state, NaN is not valid JSON"),
    (_tamper_output, ": output.schedules: damaged run state, input should be a valid list"),
])
def test_generate_resume_on_damaged_state_is_one_line(generated: Path, tmp_path: Path, damage, message: str  # type: ignore[no-untyped-def]
                                                      ) -> None:
    out = tmp_path / "g"
    shutil.copytree(generated, out)
    record = out / STATE_DIR / "drift.json"
    damage(record)
    r = run_cli("generate", "--personas", "1", "--turns", "60", "--drifts", "1", "--no-verify", "--no-audit",
                "--out", str(out), "--resume")
    _one_line(r, f"{record}{message}")
    assert "delete it to redo that step, or use --force" in r.stderr


def test_the_run_log_skips_a_cut_last_line_but_names_a_damaged_one(tmp_path: Path) -> None:
    state = tmp_path / STATE_DIR
    state.mkdir()
    log = state / "run.log.jsonl"
    good = json.dumps({"event": "generate", "calls": 3}) + "\n"
    log.write_text(good + '{"event": "generate", "ca')  # a kill during an append
    assert last_event(tmp_path, "generate") == {"event": "generate", "calls": 3}
    log.write_bytes(good.encode() + b'{"event": "gen\xffrate"}\n' + good.encode())
    with pytest.raises(InputError, match=r"run\.log\.jsonl:2: damaged run log, not UTF-8 \(byte 0xff at column 15\)"):
        last_event(tmp_path, "generate")
    log.write_text(good + "[1e999]\n")
    with pytest.raises(InputError, match=r"run\.log\.jsonl:2: damaged run log, number 1e999 is out of range"):
        last_event(tmp_path, "generate")


def test_review_score_given_a_directory_or_bad_bytes_is_one_line(generated: Path, tmp_path: Path) -> None:
    out = tmp_path / "rv"
    r = run_cli("review", "sample", str(generated), "--out", str(out))
    assert r.returncode == 0, r.stderr
    _one_line(run_cli("review", "score", str(out), str(out / "sheet_a.csv")), f"{out}: is a directory, not a file")
    bad = out / "sheet_b.csv"
    lines = bad.read_bytes().split(b"\n")
    lines[2] = lines[2][:5] + b"\x96" + lines[2][5:]  # a cp1252 dash, as Excel saves "CSV" without UTF-8
    bad.write_bytes(b"\n".join(lines))
    _one_line(run_cli("review", "score", str(out / "sheet_a.csv"), str(bad), "--out", str(tmp_path / "a.json")),
              f"{bad}:3: not UTF-8 (byte 0x96 at column 6); save the sheet as CSV UTF-8")
    assert not (tmp_path / "a.json").exists()
