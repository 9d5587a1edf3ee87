"""Backend tests: zero retry waits, fake keys that must never be written anywhere, a local fake server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer
from llmkeys import GEMINI_KEY, OPENAI_KEY


@pytest.fixture(autouse=True)
def fast_retry_waits(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Zero every tenacity wait (in this process and in CLI subprocesses) and set fake keys."""
    monkeypatch.setenv("DIMOBENCH_RETRY_WAIT_SCALE", "0")
    if "runapi" in request.keywords:
        return  # live tests keep the real environment
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    for var in ("GOOGLE_API_KEY", "OPENAI_BASE_URL", "DIMOBENCH_BASE_URL", "DIMOBENCH_GENERATOR"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture(scope="session")
def offline_suite(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """Make (once per length) a 1-persona, 1-drift offline suite of ``turns`` turns through the CLI."""
    made: dict[int, Path] = {}

    def make(turns: int) -> Path:
        if turns not in made:
            out = tmp_path_factory.mktemp("suites") / f"offline-{turns}"
            r = subprocess.run([sys.executable, "-m", "dimobench", "generate", "--personas", "1", "--turns",
                                str(turns), "--drifts", "1", "--no-verify", "--out", str(out)],
                               capture_output=True, text=True, timeout=180)
            assert r.returncode == 0, r.stderr
            made[turns] = out
        return made[turns]

    return make
