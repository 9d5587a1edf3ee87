"""Shared fixtures: isolate caches and home from the user's, generate small suites once per session, and the LLM
test environment (fake keys, zero retry waits, the local fake server) for every folder with LLM tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.fakeserver import FakeLLMServer
from tests.helpers.llmkeys import GEMINI_KEY, OPENAI_KEY
from tests.helpers.suites import generate, generate_with_cli

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runapi", action="store_true", help="run live-API tests (marked runapi; need a key)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="live API: pass --runapi")
    for item in items if not config.getoption("--runapi") else ():
        if "runapi" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def _onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX export cache for the session: content-keyed, so sharing it is safe, and a per-test one would
    write ~110 MB per test that loads the models."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, _onnx_cache: Path) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("DIMOBENCH_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg-cache"))
    monkeypatch.setenv("PRECOMEM_ONNX_CACHE", str(_onnx_cache))
    monkeypatch.delenv("DIMOBENCH_CATALOG", raising=False)


@pytest.fixture(scope="session")
def small_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 personas x 300 turns, 2 drifts each: every phase, type and confounder kind appears."""
    return generate(tmp_path_factory.mktemp("suites") / "small", turns=300, drifts=2, personas=3, seed=11)


@pytest.fixture(scope="session")
def xl_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DiMoBench-XL shape: 5 x 1,050 turns, 3 drifts, 2,100 QA (about 2 s offline)."""
    return generate(tmp_path_factory.mktemp("suites") / "xl", turns=1050, drifts=3, seed=7)


@pytest.fixture(scope="session")
def offline_suite(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """Make (once per length) a 1-persona, 1-drift offline suite of ``turns`` turns through the CLI."""
    made: dict[int, Path] = {}

    def make(turns: int) -> Path:
        if turns not in made:
            made[turns] = generate_with_cli(tmp_path_factory.mktemp("suites") / f"offline-{turns}", turns)
        return made[turns]

    return make


@pytest.fixture
def fast_retry_waits(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Zero every tenacity wait (in this process and in CLI subprocesses) and set fake keys.

    Not autouse: ``tests/backends`` turns it on for every test there, the LLM test modules elsewhere with
    ``pytestmark = pytest.mark.usefixtures("fast_retry_waits")``.
    """
    monkeypatch.setenv("DIMOBENCH_RETRY_WAIT_SCALE", "0")
    if "runapi" in request.keywords:
        return  # live tests keep the real environment
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    for var in ("GOOGLE_API_KEY", "OPENAI_BASE_URL", "DIMOBENCH_BASE_URL", "DIMOBENCH_GENERATOR"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """The local fake LLM server (replies filled from each request's schema, no faults)."""
    with FakeLLMServer() as srv:
        yield srv
