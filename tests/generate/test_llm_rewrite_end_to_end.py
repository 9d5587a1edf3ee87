"""``dimobench generate`` with an LLM generator, end to end against the local fake server (real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.interrupt import kill_halfway
from tests.helpers.llmkeys import OPENAI_KEY, assert_no_key_anywhere

pytestmark = pytest.mark.usefixtures("fast_retry_waits")

SMALL = ["--personas", "1", "--turns", "120", "--drifts", "1", "--no-verify"]


def args(provider: str, srv: FakeLLMServer, out: Path, cache: Path, *extra: str) -> list[str]:
    spec = {"openai": "openai/gpt-test", "gemini": "gemini/gemini-test"}[provider]
    base = srv.url + ("/v1" if provider == "openai" else "")
    return [sys.executable, "-m", "dimobench", "generate", "--generator", spec, "--base-url", base, "--out", str(out),
            "--cache-dir", str(cache), *SMALL, *extra]


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={**os.environ, "COLUMNS": "200"})


def suite_bytes(out: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(out.iterdir()) if f.is_file()}


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_generate_validate_rerun_from_cache_and_no_key_written(provider: str, server: FakeLLMServer,
                                                               tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    r = run(args(provider, server, tmp_path / "a", cache))
    assert r.returncode == 0, r.stderr
    calls = server.count
    assert calls >= 10 and f"{calls} call(s), 0 from cache" in r.stderr
    v = run([sys.executable, "-m", "dimobench", "validate", str(tmp_path / "a")])
    assert v.returncode == 0, v.stderr
    turns = [json.loads(ln) for ln in (tmp_path / "a" / "dialogues.jsonl").read_text().splitlines()]
    assert len(turns) == 120 and all(t["user"] and t["assistant"] for t in turns)
    persona = json.loads((tmp_path / "a" / "personas.jsonl").read_text())
    assert persona["profile"]["bio"]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "llm_render" in manifest["stages"]
    assert manifest["config"]["backends"]["generator"].startswith(provider + "/")
    # offline references would teach attacks on text the LLM did not write: its audit stays leave-one-persona-out
    assert manifest["audit"]["train"] == "leave-one-persona-out"
    log = (tmp_path / "a" / ".dimobench" / "run.log.jsonl").read_text().splitlines()
    assert json.loads(log[-1])["calls"] == calls and json.loads(log[-1])["input_tokens"] > 0

    r2 = run(args(provider, server, tmp_path / "b", cache))
    assert r2.returncode == 0, r2.stderr
    assert server.count == calls, "a warm cache must make zero calls"
    assert suite_bytes(tmp_path / "a") == suite_bytes(tmp_path / "b")
    assert_no_key_anywhere(tmp_path, texts=(r.stdout, r.stderr, r2.stdout, r2.stderr))


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_killed_run_resumes_to_the_same_bytes_repeating_only_calls_in_flight(provider: str,
                                                                             tmp_path: Path) -> None:
    concurrency = 2
    with FakeLLMServer() as srv:
        r = run(args(provider, srv, tmp_path / "ref", tmp_path / "cache-ref"))
        assert r.returncode == 0, r.stderr
        total = srv.count
    with FakeLLMServer(delay=0.1) as srv:
        cmd = args(provider, srv, tmp_path / "s", tmp_path / "cache", "--concurrency", str(concurrency))
        before = kill_halfway(cmd, srv, total)
        cached = sum(1 for ln in (tmp_path / "cache" / "llm-replies.jsonl").read_bytes().splitlines() if ln.strip())
        assert 0 < cached < total and before - cached <= concurrency
        srv.delay = 0
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert srv.count - before == total - cached  # only what was not finished (in flight included)
    assert suite_bytes(tmp_path / "s") == suite_bytes(tmp_path / "ref")
    assert_no_key_anywhere(tmp_path, texts=(r.stderr,))


def test_calls_failing_after_retries_make_a_partial_suite_and_resume_completes(tmp_path: Path) -> None:
    with FakeLLMServer(faults=dict.fromkeys(range(1, 6), "500")) as srv:  # the bio call fails 5 times
        cmd = args("openai", srv, tmp_path / "s", tmp_path / "cache", "--concurrency", "1")
        r = run(cmd)
        assert r.returncode == 1, r.stderr
        assert "1 LLM item(s) could not be made" in r.stderr and "p01/bio" in r.stderr
        assert "Traceback" not in r.stderr
        assert json.loads((tmp_path / "s" / "manifest.json").read_text())["status"] == "partial"
        fails = (tmp_path / "s" / ".dimobench" / "failures.jsonl").read_text().splitlines()
        assert [json.loads(f)["item"] for f in fails] == ["p01/bio"]
        assert "server error 500" in fails[0] and OPENAI_KEY not in fails[0]
        r = run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
        assert json.loads((tmp_path / "s" / "manifest.json").read_text())["status"] == "complete"
        assert (tmp_path / "s" / ".dimobench" / "failures.jsonl").read_text() == ""


def test_faults_inside_a_run_are_retried_transparently(tmp_path: Path) -> None:
    faults = {2: "429", 4: "500", 6: "truncated", 8: "missing", 10: "garbage"}
    with FakeLLMServer(faults=faults, retry_after=1) as srv:
        r = run(args("openai", srv, tmp_path / "s", tmp_path / "cache", "--concurrency", "1"))
        assert r.returncode == 0, r.stderr
    with FakeLLMServer() as srv:
        r = run(args("openai", srv, tmp_path / "ref", tmp_path / "cache-ref"))
    assert suite_bytes(tmp_path / "s") == suite_bytes(tmp_path / "ref")


def test_dry_run_counts_calls_and_spends_nothing(server: FakeLLMServer, tmp_path: Path) -> None:
    r = run(args("openai", server, tmp_path / "s", tmp_path / "cache", "--dry-run"))
    assert r.returncode == 0, r.stderr
    assert "LLM call(s) to make (0 of" in r.stdout and server.count == 0 and not (tmp_path / "s").exists()
    r = run([sys.executable, "-m", "dimobench", "generate", "--generator", "openai", "--out", str(tmp_path / "x"),
             "--dry-run", *SMALL])
    assert "with openai/gpt-4o" in r.stdout and "estimated cost $" in r.stdout


@pytest.mark.parametrize("generator,var", [("openai", "OPENAI_API_KEY"), ("gemini/gemini-2.5-flash", "GEMINI_API_KEY")])
def test_missing_key_is_one_line_exit_2_and_nothing_written(generator: str, var: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(var)
    out = tmp_path / "s"
    r = run([sys.executable, "-m", "dimobench", "generate", "--generator", generator, "--out", str(out), *SMALL])
    assert r.returncode == 2 and var in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()
