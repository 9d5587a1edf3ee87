"""``dimobench evaluate --agents``: the precomem system with LLM sub-agents, end to end against the local fake
server (real processes), and the one-line errors for a bad or keyless ``--agents``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.llmkeys import GEMINI_KEY, OPENAI_KEY, assert_no_key_anywhere

pytestmark = pytest.mark.usefixtures("fast_retry_waits")


def base_url(srv: FakeLLMServer, provider: str) -> str:
    return srv.url + ("/v1" if provider == "openai" else "")


@pytest.fixture(scope="module")
def suite(offline_suite: Callable[[int], Path]) -> Path:
    """1 persona x 60 turns, 1 drift, offline."""
    return offline_suite(60)


def evaluate_cmd(suite: Path, out: Path, cache: Path, *extra: str,
                 systems: tuple[str, ...] = ("precomem",)) -> list[str]:
    return [sys.executable, "-m", "dimobench", "evaluate", str(suite), *[x for s in systems for x in ("--system", s)],
            "--embedding", "hashing", "--no-plots", "--bootstrap", "20", "--cache-dir", str(cache), "--out", str(out),
            *extra]


def n_turns(suite: Path) -> int:
    return sum(1 for ln in (suite / "dialogues.jsonl").read_text().splitlines() if ln.strip())


def run_cli(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.parametrize("provider,systems", [("openai", ("precomem", "precomem:no_correct")),
                                              ("gemini", ("precomem",))])
def test_evaluate_precomem_with_llm_agents_end_to_end(provider: str, systems: tuple[str, ...], suite: Path,
                                                      tmp_path: Path) -> None:
    spec = f"{provider}/agents"
    with FakeLLMServer() as srv:
        extra = ("--agents", spec, "--base-url", base_url(srv, provider))
        r = run_cli(evaluate_cmd(suite, tmp_path / "a", tmp_path / "cache", *extra, systems=systems))
        assert r.returncode == 0, r.stderr
        calls = srv.count
        assert calls > n_turns(suite), "an extractor call per user turn, and target calls"
        r2 = run_cli(evaluate_cmd(suite, tmp_path / "b", tmp_path / "cache", *extra, systems=systems))
        assert r2.returncode == 0, r2.stderr
        assert srv.count == calls, "a warm cache must make zero calls"
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    agents = report["config"]["precomem_agents"]
    assert agents["spec"] == spec and agents["fallback"] == "rule" and agents["temperature"] == 0
    assert set(agents["prompts"]) == {"precomem/system", "precomem/extract", "precomem/support", "precomem/correct"}
    assert "base_url" not in json.dumps(report["config"])
    for system in systems:
        memory = report["suites"][suite.name][system]["memory"]
        assert memory and all(m["agents_fallbacks"] == 0 for m in memory)
        name = f"answers-{system.replace(':', '_')}.jsonl"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert_no_key_anywhere(tmp_path)
    for text in (r.stdout, r.stderr, r2.stdout, r2.stderr):
        assert OPENAI_KEY not in text and GEMINI_KEY not in text


@pytest.mark.parametrize("extra,needle", [
    (["--agents", "mistral/x"], "unknown provider"),
    (["--agents", "offline"], "rules"),
])
def test_bad_agents_option_is_one_line_exit_2(extra: list[str], needle: str, suite: Path, tmp_path: Path) -> None:
    r = run_cli(evaluate_cmd(suite, tmp_path / "o", tmp_path / "cache", *extra))
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_missing_key_for_agents_is_one_line_exit_2(suite: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    r = run_cli(evaluate_cmd(suite, tmp_path / "o", tmp_path / "cache", "--agents", "openai/test"))
    assert r.returncode == 2 and "OPENAI_API_KEY" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
