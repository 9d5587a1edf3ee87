"""``evaluate`` as a run people leave unattended: it refuses bad suites up front, keeps finished units, and a run
killed with SIGKILL at any point resumes to the same report a clean run writes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

FAST = ["--no-plots", "--bootstrap", "200", "--embedding", "hashing"]
SYSTEMS = ["--system", "full", "--system", "recency"]


def evaluate_cmd(suite: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "dimobench", "evaluate", str(suite), *SYSTEMS, "--out", str(out), *FAST, *extra]


def figures(out: Path) -> dict[str, object]:
    """report.json without the wall-clock latencies (they differ between any two runs)."""
    report = json.loads((out / "report.json").read_text())

    def strip(obj: object) -> object:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if k != "latency_ms"}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj

    return strip(report)  # type: ignore[return-value]


def units(out: Path) -> dict[str, int]:
    """Finished unit files and their mtimes (read while a run may be wiping the folder: a vanished one is absent)."""
    root = out / ".dimobench" / "units"
    found: dict[str, int] = {}
    try:
        for p in root.rglob("*.json"):
            found[str(p.relative_to(root))] = p.stat().st_mtime_ns
    except FileNotFoundError:
        return units(out) if root.is_dir() else {}
    return found


def kill_after(cmd: list[str], out: Path, n_units: int) -> None:
    """Start ``cmd`` and SIGKILL it once ``n_units`` more units than before exist; with 0, once it has wiped
    the folder (``--force``) and is inside its first unit."""
    start = len(units(out))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300

    def reached() -> bool:
        if n_units == 0:
            return not (out / "report.json").exists() and not units(out)
        return len(units(out)) >= start + n_units

    while time.time() < deadline and proc.poll() is None and not reached():
        time.sleep(0.005)
    if n_units == 0:
        time.sleep(0.3)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_kill_9_at_three_points_then_resume_gives_the_clean_report(small_suite: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    r = subprocess.run(evaluate_cmd(small_suite, clean), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    total = len(units(clean))
    assert total == 6  # 2 systems x 3 personas
    out = tmp_path / "killed"
    shutil.copytree(clean, out)  # an earlier complete evaluation sits in the folder ...
    kill_after(evaluate_cmd(small_suite, out, "--force"), out, 0)
    assert not (out / "report.json").exists()  # ... and never beside a killed run's answers
    for n in (2, 2):
        before = units(out)
        kill_after(evaluate_cmd(small_suite, out, "--resume"), out, n)
        after = units(out)
        assert all(after[u] == t for u, t in before.items())  # finished units were reused, not replayed
        assert not (out / "report.json").exists()
    before = units(out)
    r = subprocess.run(evaluate_cmd(small_suite, out, "--resume"), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    after = units(out)
    assert all(after[u] == t for u, t in before.items())
    assert len(after) == total
    assert figures(out) == figures(clean)
    assert (out / "answers-full.jsonl").read_bytes() == (clean / "answers-full.jsonl").read_bytes()
    personas = [json.loads(x)["persona_id"] for x in (small_suite / "personas.jsonl").read_text().splitlines()]
    covered = json.loads((out / "report.json").read_text())["config"]["units"]
    assert covered == {s: {small_suite.name: personas} for s in ("full", "recency")}


def test_resume_with_other_settings_is_refused(small_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    kill_after(evaluate_cmd(small_suite, out), out, 1)
    r = subprocess.run([*evaluate_cmd(small_suite, out, "--resume"), "--k", "3"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 2 and "other settings (k)" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_an_existing_evaluation_is_not_overwritten_without_force(small_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert run_cli("evaluate", str(small_suite), "--system", "none", "--out", str(out), *FAST).returncode == 0
    before = (out / "report.json").read_bytes()
    r = run_cli("evaluate", str(small_suite), "--system", "full", "--out", str(out), *FAST)
    assert r.returncode == 2 and "--force" in r.stderr and "--resume" in r.stderr
    assert (out / "report.json").read_bytes() == before
    r = run_cli("compare", str(out), str(out), "--bootstrap", "0")  # 0 resamples: the difference, no interval
    assert r.returncode == 0 and "diff +0.0" in r.stdout and "[" not in r.stdout, r.stderr


def _broken(small_suite: Path, tmp_path: Path, how: str) -> Path:
    bad = tmp_path / f"bad-{how}"
    shutil.copytree(small_suite, bad, ignore=shutil.ignore_patterns(".dimobench"))
    qa_path = bad / "qa.jsonl"
    rows = [json.loads(line) for line in qa_path.read_text().splitlines() if line.strip()]
    if how == "hash":
        rows[0]["question"] += " (edited)"
        qa_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return bad
    if how == "index":
        rows[0]["answer_index"] = 7
    elif how == "duplicate":
        rows[1]["qa_id"] = rows[0]["qa_id"]
    elif how == "one_option":
        rows[0]["options"] = rows[0]["options"][:1]
        rows[0]["answer_index"] = 0
        for key in ("stale_index", "confounder_index"):
            rows[0][key] = None
    qa_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from dimobench.suite.io import sha256_file

    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["files"]["qa.jsonl"] = sha256_file(qa_path)  # hashes fixed up: only the content is wrong
    (bad / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return bad


@pytest.mark.parametrize("how", ["hash", "index", "duplicate", "one_option"])
def test_evaluate_refuses_a_suite_validate_rejects_before_any_turn(small_suite: Path, tmp_path: Path,
                                                                  how: str) -> None:
    bad = _broken(small_suite, tmp_path, how)
    out = tmp_path / "o"
    r = run_cli("evaluate", str(bad), "--system", "oracle", "--out", str(out), *FAST)
    assert r.returncode == 2, r.stderr
    assert "not a valid suite" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()


NAN_SYSTEM = '''
class NanStats:
    def reset(self, persona_id):
        self.items = []
    def observe(self, turn):
        self.items.append({"text": turn.user, "score": 1.0})
    def recall(self, query, k):
        return self.items[-k:]
    def stats(self):
        return {"items": float("nan"), "bytes": float("inf"), "raw_items": len(self.items)}
'''


def test_answers_and_report_are_strict_json_whatever_a_system_reports(small_suite: Path, tmp_path: Path) -> None:
    (tmp_path / "nanmem.py").write_text(NAN_SYSTEM)
    out = tmp_path / "o"
    r = run_cli("evaluate", str(small_suite), "--system", "nanmem:NanStats", "--out", str(out), *FAST, cwd=tmp_path)
    assert r.returncode == 0, r.stderr

    def refuse(name: str) -> None:
        raise AssertionError(f"bare {name} in strict JSON output")

    for path in [out / "report.json", *out.glob("answers-*.jsonl")]:
        text = path.read_text()
        docs = [text] if path.suffix == ".json" else [x for x in text.splitlines() if x.strip()]
        for doc in docs:
            json.loads(doc, parse_constant=refuse)


def test_resume_after_a_variant_changed_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A built-in variant's settings live in code: a resume after they changed must not reuse the old answers.
    from dimobench.api import EvalConfig
    from dimobench.errors import ResumeConflict
    from dimobench.evaluate.api import evaluate
    from dimobench.evaluate.systems import precomem_system
    from tests.helpers.suites import generate

    suite = generate(tmp_path / "tiny", turns=120, drifts=1, personas=1, seed=5)
    cfg = EvalConfig(suites=[suite], systems=["precomem:aging"], plots=False, bootstrap=200, embedding="hashing",
                     jobs=1)
    out = tmp_path / "o"
    evaluate(cfg, out)
    recorded = json.loads((out / "report.json").read_text())["config"]["precomem_configs"]["precomem:aging"]
    assert recorded["event_half_life"] == precomem_system.ABLATIONS["aging"]["event_half_life"]
    evaluate(cfg, out, resume=True)  # same settings: resumes
    monkeypatch.setitem(precomem_system.ABLATIONS, "aging", {**precomem_system.ABLATIONS["aging"],
                                                             "event_half_life": 99.0})
    with pytest.raises(ResumeConflict, match="precomem_configs"):
        evaluate(cfg, out, resume=True)


def test_resume_after_the_verifier_was_retrained_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The shipped cross-encoder changes answers as a setting does: its sha256 is part of what a resume must match.
    from dimobench.api import EvalConfig
    from dimobench.errors import ResumeConflict
    from dimobench.evaluate.api import evaluate
    from precomem import nli
    from tests.helpers.suites import generate

    suite = generate(tmp_path / "tiny", turns=120, drifts=1, personas=1, seed=5)
    cfg = EvalConfig(suites=[suite], systems=["precomem"], plots=False, bootstrap=200, embedding="hashing", jobs=1)
    out = tmp_path / "o"
    evaluate(cfg, out)
    recorded = json.loads((out / "report.json").read_text())["config"]["precomem_models"]
    assert recorded == nli.model_digests() and len(recorded["nli_cross_encoder"]) == 64
    monkeypatch.setitem(nli._DIGESTS, "nli_cross_encoder", "0" * 64)  # as if the file had been retrained
    with pytest.raises(ResumeConflict, match="precomem_models"):
        evaluate(cfg, out, resume=True)


def test_resume_after_the_code_changed_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An edited engine or baseline changes answers under the same version number: the sources' digest is part of
    # what a resume must match.
    from dimobench.api import EvalConfig
    from dimobench.errors import ResumeConflict
    from dimobench.evaluate import api
    from tests.helpers.suites import generate

    suite = generate(tmp_path / "tiny", turns=120, drifts=1, personas=1, seed=5)
    cfg = EvalConfig(suites=[suite], systems=["precomem", "full"], plots=False, bootstrap=200, embedding="hashing",
                     jobs=1)
    out = tmp_path / "o"
    evaluate = api.evaluate
    evaluate(cfg, out)
    recorded = json.loads((out / "report.json").read_text())["config"]["code"]
    assert recorded == api.code_digest() and len(recorded) == 64
    evaluate(cfg, out, resume=True)  # same code: resumes
    monkeypatch.setattr(api, "_CODE", ["0" * 64])  # as if a source file had been edited since
    with pytest.raises(ResumeConflict, match=r"\(code\)"):
        evaluate(cfg, out, resume=True)
