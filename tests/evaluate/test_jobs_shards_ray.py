"""``evaluate`` at scale: ``--jobs N``, ``--shard i/n`` + ``merge`` and ``--executor ray`` all write the report a
single run writes (latency aside), a ``--jobs 2`` run killed with SIGKILL resumes to it, and ``merge`` refuses
folders that are not the finished shards of one evaluation in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dimobench.evaluate.api import EvalConfig, evaluate
from tests.evaluate.test_units_resume_and_suite_checks import figures, units
from tests.helpers.cli import run_cli

CHEAP = ["full", "recency", "bm25", "none", "oracle"]
FAST = ["--no-plots", "--bootstrap", "200", "--embedding", "hashing"]


def _cfg(suite: Path, **extra: object) -> EvalConfig:
    return EvalConfig(suites=[suite], systems=CHEAP, bootstrap=200, plots=False, embedding="hashing",
                      **extra)  # type: ignore[arg-type]


def _answers(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("answers-*.jsonl"))}


@pytest.fixture(scope="module")
def one_run(small_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("one") / "out"
    evaluate(_cfg(small_suite, jobs=1), out)
    return out


def test_jobs_2_and_three_merged_shards_equal_one_run(small_suite: Path, one_run: Path, tmp_path: Path) -> None:
    evaluate(_cfg(small_suite, jobs=2), tmp_path / "jobs2")
    assert figures(tmp_path / "jobs2") == figures(one_run)
    assert _answers(tmp_path / "jobs2") == _answers(one_run)
    shards = [tmp_path / f"shard{i}" for i in (1, 2, 3)]
    owed = []
    for i, folder in enumerate(shards, 1):
        rep = evaluate(_cfg(small_suite, jobs=2 if i == 2 else 1, shard=f"{i}/3"), folder)
        assert rep.systems == {} and rep.config["status"] == "partial"
        assert not (folder / "report.json").exists()  # a shard writes units, never a report
        owed.append(set(units(folder)))
    assert sum(map(len, owed)) == len(units(one_run)) and set().union(*owed) == set(units(one_run))
    r = run_cli("merge", *map(str, reversed(shards)), "--out", str(tmp_path / "merged"))
    assert r.returncode == 0, r.stderr
    assert figures(tmp_path / "merged") == figures(one_run)
    assert _answers(tmp_path / "merged") == _answers(one_run)


def test_executor_ray_equals_the_local_executor(small_suite: Path, one_run: Path, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        evaluate(_cfg(small_suite, executor="ray"), tmp_path / "ray")
    finally:
        ray.shutdown()
    assert figures(tmp_path / "ray") == figures(one_run)
    assert _answers(tmp_path / "ray") == _answers(one_run)


def _shard(suite: Path, out: Path, spec: str, *extra: str) -> None:
    r = run_cli("evaluate", str(suite), "--system", "recency", "--out", str(out), "--shard", spec, "--jobs", "1",
                *FAST, *extra)
    assert r.returncode == 0, r.stderr


def _refused(*args: str) -> str:
    r = run_cli("merge", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_merge_refuses_missing_duplicate_and_foreign_shards(small_suite: Path, tmp_path: Path,
                                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.helpers.suites import generate

    a, b = tmp_path / "a", tmp_path / "b"
    _shard(small_suite, a, "1/2")
    _shard(small_suite, b, "2/2")
    k3, other = tmp_path / "k3", tmp_path / "other"
    _shard(small_suite, k3, "2/2", "--k", "3")
    other_suite = generate(tmp_path_factory.mktemp("suites") / "other", turns=300, drifts=2, personas=3, seed=12)
    _shard(other_suite, other, "2/2")
    out = str(tmp_path / "merged")
    assert "shard(s) 2/2 missing" in _refused(str(a), "--out", out)
    assert f"{a}: shard 1/2 given twice" in _refused(str(a), str(a), "--out", out)
    assert f"{k3}: not a shard of the same evaluation" in (line := _refused(str(a), str(k3), "--out", out))
    assert "(differs in k)" in line
    line = _refused(str(a), str(other), "--out", out)
    assert str(other) in line and "suite" in line
    assert f"{tmp_path}: not a shard" in _refused(str(tmp_path), "--out", out)
    (b / ".dimobench" / "units" / "recency").rename(tmp_path / "gone")  # a shard that lost its units
    assert f"{b}: shard 2/2 is unfinished" in _refused(str(a), str(b), "--out", out)
    assert not (tmp_path / "merged" / "report.json").exists()


def test_kill_9_during_jobs_2_then_resume_redoes_at_most_one_unit_per_worker(small_suite: Path, one_run: Path,
                                                                           tmp_path: Path) -> None:
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "dimobench", "evaluate", str(small_suite), *[x for s in CHEAP for x in
                                                                            ("--system", s)],
           "--out", str(out), *FAST, "--jobs", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and len(units(out)) < 4:
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1.5)  # the orphaned workers notice their parent is gone and end within 0.2 s
    saved = units(out)
    time.sleep(0.5)
    assert units(out) == saved, "an orphaned worker kept writing units"
    total = 3 * len(CHEAP)
    assert 4 <= len(saved) < total
    # workers take units in plan order (system-major): all that had started by the kill lie in the first
    # len(saved) + 2 of them, so at most one unit per worker was lost
    personas = [json.loads(x)["persona_id"] for x in (small_suite / "personas.jsonl").read_text().splitlines()]
    plan = [f"{s}/{small_suite.name}/{p}.json" for s in CHEAP for p in personas]
    assert set(saved) <= set(plan[:len(saved) + 2])
    assert not (out / "report.json").exists()
    r = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    after = units(out)
    assert all(after[u] == t for u, t in saved.items())  # nothing finished before the kill was replayed
    assert len(after) == total
    assert figures(out) == figures(one_run)
    assert _answers(out) == _answers(one_run)


def test_bad_shard_and_executor_are_one_line(small_suite: Path, tmp_path: Path) -> None:
    for args, expected in ((["--shard", "4/3"], "--shard '4/3'"), (["--shard", "x"], "--shard 'x'"),
                           (["--executor", "dask"], "--executor")):
        r = run_cli("evaluate", str(small_suite), "--system", "none", "--out", str(tmp_path / "o"), *FAST, *args)
        assert r.returncode == 2 and expected in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_executor_ray_without_ray_names_the_extra(small_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    code = ("import sys; sys.modules['ray'] = None; from dimobench.cli.app import main; "
            f"sys.argv = ['dimobench', 'evaluate', {str(small_suite)!r}, '--system', 'none', '--out', {str(out)!r}, "
            "'--executor', 'ray']; main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and 'pip install "dimobench[ray]"' in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not out.exists()
