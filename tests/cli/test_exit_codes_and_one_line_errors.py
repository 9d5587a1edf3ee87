"""The CLI as users run it: a real process, exit codes, one-line errors, nothing written on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli


def test_generate_then_validate(tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = run_cli("generate", "--turns", "120", "--personas", "2", "--seed", "3", "--out", str(out), "--no-verify")
    assert r.returncode == 0, r.stderr
    assert "2 personas x 120 turns" in r.stderr and "96 questions" in r.stderr
    r = run_cli("validate", str(out))
    assert r.returncode == 0 and "valid" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--turns", "0"], "--turns must be at least"),
    (["--turns", "100", "--drifts", "3"], "--drifts 3 is too many for --turns 100"),
    (["--qa", "-1"], "--qa must be 0 or more"),
    (["--preset", "huge"], "unknown preset"),
])
def test_bad_generate_options_fail_in_one_line_and_write_nothing(tmp_path: Path, args: list[str],
                                                                  message: str) -> None:
    out = tmp_path / "s"
    r = run_cli("generate", *args, "--out", str(out))
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_existing_out_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "s"
    assert run_cli("generate", "--turns", "60", "--personas", "1", "--out", str(out)).returncode == 0
    before = (out / "qa.jsonl").read_bytes()
    r = run_cli("generate", "--turns", "60", "--personas", "1", "--seed", "2", "--out", str(out))
    assert r.returncode == 2 and "exists and is not empty" in r.stderr
    assert (out / "qa.jsonl").read_bytes() == before
    r = run_cli("generate", "--turns", "60", "--personas", "1", "--seed", "2", "--out", str(out), "--force")
    assert r.returncode == 0 and (out / "qa.jsonl").read_bytes() != before
    keep = tmp_path / "notes"
    keep.mkdir()
    (keep / "thesis.txt").write_text("precious")
    r = run_cli("generate", "--turns", "60", "--personas", "1", "--out", str(keep), "--force")
    assert r.returncode == 2 and (keep / "thesis.txt").exists()


def test_validate_reports_every_problem_and_exits_2(small_suite: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(small_suite, bad)
    lines = (bad / "qa.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["answer_index"] = "zero"
    lines[0] = json.dumps(rec)
    lines[1] = lines[1][:40]
    (bad / "qa.jsonl").write_text("\n".join(lines) + "\n")
    r = run_cli("validate", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "qa.jsonl:1: answer_index:" in r.stderr and "qa.jsonl:2: json:" in r.stderr


def test_validate_on_a_missing_directory(tmp_path: Path) -> None:
    r = run_cli("validate", str(tmp_path / "nope"))
    assert r.returncode == 2 and "manifest.json" in r.stderr and "no such directory" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_schema_exports_every_record(tmp_path: Path) -> None:
    r = run_cli("schema", "--out", str(tmp_path))
    assert r.returncode == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "qa.schema.json" in names and "dialogues.schema.json" in names and "manifest.schema.json" in names
    qa = json.loads((tmp_path / "qa.schema.json").read_text())
    assert {"qa_id", "ask_turn", "options", "answer_index", "stale_index"} <= set(qa["properties"])


def test_help_does_not_import_torch() -> None:
    code = "import sys; from dimobench.cli.app import app; print('torch' in sys.modules, 'pandas' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "False False"


def test_two_processes_with_different_hash_seeds_write_the_same_bytes(tmp_path: Path) -> None:
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"s{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        r = subprocess.run([sys.executable, "-m", "dimobench", "generate", "--turns", "200", "--drifts", "2",
                            "--personas", "2", "--seed", "5", "--out", str(out)],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append({f.name: f.read_bytes() for f in sorted(out.iterdir()) if f.is_file()})
    assert outs[0] == outs[1]
    assert "verdicts.jsonl" in outs[0]  # stage 6 runs unless --no-verify, and is deterministic too
