"""Backend tests: zero retry waits, fake keys that must never be written anywhere, a local fake server."""

from __future__ import annotations

from collections.abc import Iterator

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
