"""The output-folder rule as users meet it: nothing of theirs is touched, one writer at a time, honest status."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

GEN = ["generate", "--turns", "60", "--personas", "1", "--no-verify", "--no-audit"]


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with its content hash (directories as 'dir')."""
    return {str(p.relative_to(folder)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}


def web_extension(folder: Path) -> Path:
    """A folder a user cares about that happens to hold a manifest.json and a .dimobench/ entry."""
    (folder / "src").mkdir(parents=True)
    (folder / "manifest.json").write_text('{"manifest_version": 3, "name": "my extension"}\n')
    (folder / "background.js").write_text("chrome.runtime.onInstalled.addListener(() => {});\n")
    (folder / "src" / "popup.html").write_text("<p>hi</p>\n")
    (folder / ".dimobench").mkdir()
    (folder / "notes.txt").write_text("thesis notes\n")
    return folder


def one_line_exit_2(r: subprocess.CompletedProcess[str], needle: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr, r.stderr


def test_force_never_touches_a_folder_dimobench_did_not_write(small_suite: Path, tmp_path: Path) -> None:
    target = web_extension(tmp_path / "ext")
    before = snapshot(target)
    locomo = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    commands = [
        [*GEN, "--out", str(target), "--force"],
        [*GEN, "--out", str(target), "--resume"],
        ["evaluate", str(small_suite), "--system", "none", "--out", str(target), "--force"],
        ["review", "sample", str(small_suite), "--out", str(target), "--force"],
        ["audit", str(small_suite), "--out", str(target)],
        ["verify", str(small_suite), "--calibrate", "--calibrate-out", str(target)],
        ["schema", "--out", str(target)],
    ]
    sample = next(iter(sorted(locomo.rglob("locomo*.json"))), None)
    if sample is not None:
        commands.append(["import", "locomo", str(sample), "--out", str(target), "--force"])
    for cmd in commands:
        one_line_exit_2(run_cli(*cmd), "was not written by dimobench")
        assert snapshot(target) == before, cmd
    empty_marker = tmp_path / "only-state"
    (empty_marker / ".dimobench").mkdir(parents=True)
    (empty_marker / "notes.txt").write_text("mine\n")
    one_line_exit_2(run_cli(*GEN, "--out", str(empty_marker), "--force"), "was not written by dimobench")
    assert (empty_marker / "notes.txt").read_text() == "mine\n"


def test_force_replaces_only_an_output_of_the_same_kind(small_suite: Path, tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    assert run_cli("evaluate", str(small_suite), "--system", "none", "--out", str(ev), "--no-plots",
                   "--bootstrap", "0", "--embedding", "hashing").returncode == 0
    one_line_exit_2(run_cli(*GEN, "--out", str(ev), "--force"), "holds a dimobench evaluation, not a suite")
    assert (ev / "report.json").is_file()
    suite = tmp_path / "s"
    assert run_cli(*GEN, "--out", str(suite)).returncode == 0
    (suite / "leftover.txt").write_text("from the old run\n")
    assert run_cli(*GEN, "--seed", "4", "--out", str(suite), "--force").returncode == 0
    assert not (suite / "leftover.txt").exists() and (suite / ".dimobench" / "owner.json").is_file()


def test_symlinks_files_and_folders_inside_a_suite_are_refused(small_suite: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    one_line_exit_2(run_cli(*GEN, "--out", str(link)), "is a symlink")
    assert not any(real.iterdir())
    afile = tmp_path / "afile"
    afile.write_text("x")
    one_line_exit_2(run_cli(*GEN, "--out", str(afile)), "is not a directory")
    suite = tmp_path / "s"
    assert run_cli(*GEN, "--out", str(suite)).returncode == 0
    inside = suite / "eval"
    one_line_exit_2(run_cli("evaluate", str(suite), "--system", "none", "--out", str(inside)), "is inside")
    assert not inside.exists()


def test_read_only_out_is_one_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root ignores directory modes; sysfs refuses new folders even to root
        target = Path("/sys") / f"dimobench-test-{os.getpid()}"
        if not Path("/sys").is_dir() or os.access("/sys", os.W_OK) and _can_mkdir(target):
            pytest.skip("no folder here that refuses root")
        one_line_exit_2(run_cli(*GEN, "--out", str(target / "s")), "cannot create --out")
        return
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        one_line_exit_2(run_cli(*GEN, "--out", str(parent / "s")), "cannot create --out")
    finally:
        parent.chmod(0o700)


def _can_mkdir(path: Path) -> bool:
    try:
        path.mkdir()
    except OSError:
        return False
    path.rmdir()
    return True


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dimobench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("force", [False, True])
def test_two_writers_to_one_out_one_wins_the_other_exits_2_at_once(tmp_path: Path, force: bool) -> None:
    out = tmp_path / "s"
    if force:
        assert run_cli(*GEN, "--out", str(out)).returncode == 0
    flags = ["--force"] if force else []
    first = _start(["generate", "--turns", "900", "--personas", "3", "--no-verify", "--no-audit", "--seed", "3",
                    "--out", str(out), *flags])
    lock = out / ".dimobench" / "owner.json"
    deadline = time.time() + 60
    while time.time() < deadline and first.poll() is None:  # the first writer has claimed the folder
        if lock.is_file() and (not force or not (out / "qa.jsonl").exists()):
            break
        time.sleep(0.01)
    assert first.poll() is None, "the first writer ended before the second started; make it longer"
    t0 = time.perf_counter()
    second = run_cli(*GEN, "--seed", "5", "--out", str(out), *flags)
    waited = time.perf_counter() - t0
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    one_line_exit_2(second, "in use by another dimobench run")
    assert waited < 5, waited  # the lock is tried before any work (about 0.5 s of it is Python starting)
    manifest = (out / "manifest.json").read_text()
    assert '"seed": 3' in manifest  # the winner's suite, whole


def test_a_kill_during_verification_leaves_an_incomplete_suite_that_validate_rejects(tmp_path: Path) -> None:
    out = tmp_path / "s"
    proc = _start(["generate", "--turns", "600", "--personas", "2", "--seed", "9", "--out", str(out)])
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not (out / "manifest.json").is_file():
        time.sleep(0.01)
    assert proc.poll() is None, "generation ended before stage 6 could be interrupted"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert '"status": "incomplete"' in (out / "manifest.json").read_text()
    r = run_cli("validate", str(out))
    assert r.returncode == 2 and "status: incomplete" in r.stderr, r.stderr
    r = run_cli("generate", "--turns", "600", "--personas", "2", "--seed", "9", "--out", str(out), "--resume")
    assert r.returncode == 0, r.stderr
    assert '"status": "complete"' in (out / "manifest.json").read_text() and (out / "verdicts.jsonl").is_file()
    assert run_cli("validate", str(out)).returncode == 0


def test_resume_keeps_human_verdicts_in_the_manifest(tmp_path: Path) -> None:
    import json

    out = tmp_path / "s"
    assert run_cli(*GEN, "--out", str(out)).returncode == 0
    qa_ids = [json.loads(line)["qa_id"] for line in (out / "qa.jsonl").read_text().splitlines()[:3]]
    (out / "human_verdicts.jsonl").write_text("".join(
        json.dumps({"qa_id": q, "verdict": "ACCEPT"}) + "\n" for q in qa_ids))
    data = json.loads((out / "manifest.json").read_text())
    data["files"]["human_verdicts.jsonl"] = hashlib.sha256((out / "human_verdicts.jsonl").read_bytes()).hexdigest()
    data["counts"]["human_verdicts"] = {"ACCEPT": 3, "REVISE": 0, "REJECT": 0}
    (out / "manifest.json").write_text(json.dumps(data, indent=2) + "\n")
    assert run_cli(*GEN, "--out", str(out), "--resume").returncode == 0
    data = json.loads((out / "manifest.json").read_text())
    assert "human_verdicts.jsonl" in data["files"] and data["counts"]["human_verdicts"]["ACCEPT"] == 3
    shutil.rmtree(out)


def test_a_hostile_marker_or_manifest_above_out_is_no_traceback(tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "manifest.json").write_text("[" * 100_000)  # not a suite: writing below it is fine
    r = run_cli(*GEN, "--out", str(deep / "s"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    odd = tmp_path / "odd"
    (odd / ".dimobench").mkdir(parents=True)
    (odd / ".dimobench" / "owner.json").write_text("[" * 3_000)
    (odd / "mine.txt").write_text("keep\n")
    one_line_exit_2(run_cli(*GEN, "--out", str(odd), "--force"), "was not written by dimobench")
    assert (odd / "mine.txt").read_text() == "keep\n"
